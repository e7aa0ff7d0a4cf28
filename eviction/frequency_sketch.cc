#include "frequency_sketch.h"

#include <algorithm>
#include <bit>

namespace tiercache {

namespace {
uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  return h;
}
}  // namespace

FrequencySketch::FrequencySketch(size_t capacity, size_t sampleFactor)
    : capacity_(std::max<size_t>(capacity, 16)),
      words_(std::max<size_t>(8, std::bit_ceil(capacity_) / 2)),
      sampleSize_(std::max<size_t>(1, sampleFactor) * capacity_),
      table_(new Block[words_ / 8]) {
  for (size_t b = 0; b < words_ / 8; ++b) {
    for (auto& w : table_[b].words) w.store(0, std::memory_order_relaxed);
  }
}

size_t FrequencySketch::blockOf(uint64_t hash) const { return static_cast<size_t>(hash >> 32) & (words_ / 8 - 1); }

void FrequencySketch::counterOf(uint64_t hash, int row, size_t& word, int& shift) {
  const uint64_t h = mix(hash);
  word = static_cast<size_t>(row) + 2 * ((h >> (32 + row)) & 1);  // words 0..5
  shift = static_cast<int>((h >> (row * 4)) & 15) * 4;
}

void FrequencySketch::increment(uint64_t hash) {
  // Doorkeeper: one bit in each of the block's words 6 and 7; a key is
  // "seen" when both are set.
  Block& b = table_[blockOf(hash)];
  const uint64_t bit6 = uint64_t{1} << (hash & 63), bit7 = uint64_t{1} << ((hash >> 6) & 63);
  const bool seen = (b.words[6].load(std::memory_order_relaxed) & bit6) && (b.words[7].load(std::memory_order_relaxed) & bit7);
  if (!seen) {
    b.words[6].fetch_or(bit6, std::memory_order_relaxed);
    b.words[7].fetch_or(bit7, std::memory_order_relaxed);
  } else {
    for (int row = 0; row < 4; ++row) {
      size_t word;
      int shift;
      counterOf(hash, row, word, shift);
      std::atomic<uint64_t>& w = b.words[word];
      uint64_t v = w.load(std::memory_order_relaxed);
      while (((v >> shift) & 15) != 15 &&
             !w.compare_exchange_weak(v, v + (uint64_t{1} << shift), std::memory_order_relaxed)) {
      }
    }
  }
  if (additions_.fetch_add(1, std::memory_order_relaxed) + 1 == sampleSize_) halve();
}

uint32_t FrequencySketch::estimate(uint64_t hash) const {
  const Block& b = table_[blockOf(hash)];
  uint32_t best = 15;
  for (int row = 0; row < 4; ++row) {
    size_t word;
    int shift;
    counterOf(hash, row, word, shift);
    best = std::min<uint32_t>(best, static_cast<uint32_t>((b.words[word].load(std::memory_order_relaxed) >> shift) & 15));
  }
  const bool seen = (b.words[6].load(std::memory_order_relaxed) >> (hash & 63) & 1) &&
                    (b.words[7].load(std::memory_order_relaxed) >> ((hash >> 6) & 63) & 1);
  return best + (seen ? 1 : 0);
}

void FrequencySketch::halve() {
  for (size_t b = 0; b < words_ / 8; ++b) {
    for (int i = 0; i < 6; ++i) {
      std::atomic<uint64_t>& w = table_[b].words[i];
      uint64_t v = w.load(std::memory_order_relaxed);
      while (!w.compare_exchange_weak(v, (v >> 1) & 0x7777777777777777ull, std::memory_order_relaxed)) {
      }
    }
    table_[b].words[6].store(0, std::memory_order_relaxed);  // the doorkeeper
    table_[b].words[7].store(0, std::memory_order_relaxed);
  }
  // Counting restarts at half the sample: the halved counts still weigh.
  additions_.fetch_sub(sampleSize_ / 2, std::memory_order_relaxed);
  resets_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tiercache
