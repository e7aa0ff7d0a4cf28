#include "frequency_sketch.h"

#include <algorithm>
#include <bit>

namespace tiercache {

namespace {
// Distinct odd multipliers: one independent-enough index per row.
constexpr uint64_t kSeeds[4] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull,
                                0xD6E8FEB86659FD93ull};
uint64_t mix(uint64_t h, uint64_t seed) {
  h *= seed;
  return h ^ (h >> 29);
}
}  // namespace

FrequencySketch::FrequencySketch(size_t capacity, size_t sampleFactor)
    : capacity_(std::max<size_t>(capacity, 16)),
      words_(std::bit_ceil(capacity_) / 2),
      doorWords_(std::max<size_t>(1, std::bit_ceil(capacity_) / 64)),
      sampleSize_(std::max<size_t>(1, sampleFactor) * capacity_),
      table_(new std::atomic<uint64_t>[words_]),
      door_(new std::atomic<uint64_t>[doorWords_]) {
  for (size_t i = 0; i < words_; ++i) table_[i].store(0, std::memory_order_relaxed);
  for (size_t i = 0; i < doorWords_; ++i) door_[i].store(0, std::memory_order_relaxed);
}

size_t FrequencySketch::counterIndex(uint64_t hash, int row) const {
  return static_cast<size_t>(mix(hash, kSeeds[row]) & (words_ * 16 - 1));
}

void FrequencySketch::increment(uint64_t hash) {
  // Doorkeeper: two bits; a key is "seen" when both are set.
  const size_t doorBits = doorWords_ * 64;
  const size_t b1 = static_cast<size_t>(hash) & (doorBits - 1);
  const size_t b2 = static_cast<size_t>(hash >> 32) & (doorBits - 1);
  const uint64_t m1 = uint64_t{1} << (b1 & 63), m2 = uint64_t{1} << (b2 & 63);
  const bool seen = (door_[b1 >> 6].load(std::memory_order_relaxed) & m1) &&
                    (door_[b2 >> 6].load(std::memory_order_relaxed) & m2);
  if (!seen) {
    door_[b1 >> 6].fetch_or(m1, std::memory_order_relaxed);
    door_[b2 >> 6].fetch_or(m2, std::memory_order_relaxed);
  } else {
    for (int row = 0; row < 4; ++row) {
      const size_t idx = counterIndex(hash, row);
      std::atomic<uint64_t>& w = table_[idx >> 4];
      const int shift = static_cast<int>(idx & 15) * 4;
      uint64_t v = w.load(std::memory_order_relaxed);
      while (((v >> shift) & 15) != 15 &&
             !w.compare_exchange_weak(v, v + (uint64_t{1} << shift), std::memory_order_relaxed)) {
      }
    }
  }
  if (additions_.fetch_add(1, std::memory_order_relaxed) + 1 == sampleSize_) halve();
}

uint32_t FrequencySketch::estimate(uint64_t hash) const {
  uint32_t best = 15;
  for (int row = 0; row < 4; ++row) {
    const size_t idx = counterIndex(hash, row);
    const uint64_t v = table_[idx >> 4].load(std::memory_order_relaxed);
    best = std::min<uint32_t>(best, static_cast<uint32_t>((v >> ((idx & 15) * 4)) & 15));
  }
  const size_t doorBits = doorWords_ * 64;
  const size_t b1 = static_cast<size_t>(hash) & (doorBits - 1);
  const size_t b2 = static_cast<size_t>(hash >> 32) & (doorBits - 1);
  const bool seen = (door_[b1 >> 6].load(std::memory_order_relaxed) >> (b1 & 63) & 1) &&
                    (door_[b2 >> 6].load(std::memory_order_relaxed) >> (b2 & 63) & 1);
  return best + (seen ? 1 : 0);
}

void FrequencySketch::halve() {
  for (size_t i = 0; i < words_; ++i) {
    uint64_t v = table_[i].load(std::memory_order_relaxed);
    while (!table_[i].compare_exchange_weak(v, (v >> 1) & 0x7777777777777777ull, std::memory_order_relaxed)) {
    }
  }
  for (size_t i = 0; i < doorWords_; ++i) door_[i].store(0, std::memory_order_relaxed);
  // Counting restarts at half the sample: the halved counts still weigh.
  additions_.fetch_sub(sampleSize_ / 2, std::memory_order_relaxed);
  resets_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tiercache
