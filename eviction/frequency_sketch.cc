#include "frequency_sketch.h"

#include <algorithm>
#include <bit>

namespace tiercache {

namespace {
// kSpread: distinct odd multipliers, one independent-enough index per row.
constexpr uint64_t kSeeds[4] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull,
                                0xD6E8FEB86659FD93ull};
uint64_t mix(uint64_t h, uint64_t seed) {
  h *= seed;
  return h ^ (h >> 29);
}
// A full 64-bit finalizer (splitmix64's): callers' hashes may be weak in
// some bits (the simulators' are one multiply), and a block and four row
// places are cut from one value, so every bit must depend on every bit.
uint64_t fmix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

FrequencySketch::FrequencySketch(size_t capacity, size_t sampleFactor, Layout layout)
    : layout_(layout),
      capacity_(std::max<size_t>(capacity, 16)),
      words_(std::bit_ceil(capacity_) / 2),
      doorWords_(std::max<size_t>(1, std::bit_ceil(capacity_) / 64)),
      sampleSize_(std::max<size_t>(1, sampleFactor) * capacity_),
      table_(new Block[words_ / kBlockWords]),
      door_(new std::atomic<uint64_t>[doorWords_]) {
  for (size_t i = 0; i < words_; ++i) counterWord(i).store(0, std::memory_order_relaxed);
  for (size_t i = 0; i < doorWords_; ++i) door_[i].store(0, std::memory_order_relaxed);
}

void FrequencySketch::locate(uint64_t hash, size_t word[4], int shift[4]) const {
  for (int row = 0; row < 4; ++row) {
    const size_t idx = static_cast<size_t>(mix(hash, kSeeds[row]) & (words_ * 16 - 1));
    word[row] = idx >> 4;
    shift[row] = static_cast<int>(idx & 15) * 4;
  }
}

FrequencySketch::Door FrequencySketch::doorOf(uint64_t hash) const {
  const size_t doorBits = doorWords_ * 64;
  const size_t b1 = static_cast<size_t>(hash) & (doorBits - 1);
  const size_t b2 = static_cast<size_t>(hash >> 32) & (doorBits - 1);
  return {b1 >> 6, b2 >> 6, uint64_t{1} << (b1 & 63), uint64_t{1} << (b2 & 63)};
}

bool FrequencySketch::seen(const Door& d) const {
  return (door_[d.w1].load(std::memory_order_relaxed) & d.m1) && (door_[d.w2].load(std::memory_order_relaxed) & d.m2);
}

void FrequencySketch::increment(uint64_t hash) {
  if (layout_ == Layout::kBlocked) {
    incrementBlocked(hash);
  } else {
    incrementSpread(hash);
  }
  if (additions_.fetch_add(1, std::memory_order_relaxed) + 1 == sampleSize_) halve();
}

// The cache's layout, written out: one finalizer, one block, one doorkeeper
// word, no per-row arrays. On the write path an increment or an estimate
// runs once or twice per set, where the generic locate() + doorOf() +
// seen() cost far more instructions per call (callgrind).
void FrequencySketch::incrementBlocked(uint64_t hash) {
  std::atomic<uint64_t>& door = blockedDoorWord(hash);
  const uint64_t doorBits = blockedDoorBits(hash);
  if ((door.load(std::memory_order_relaxed) & doorBits) != doorBits) {
    door.fetch_or(doorBits, std::memory_order_relaxed);  // first sighting: the doorkeeper only
    return;
  }
  const uint64_t z = fmix(hash);
  Block& b = blockOf(z);
  for (int row = 0; row < 4; ++row) {
    const uint32_t bits = static_cast<uint32_t>(z >> (row * 8));  // 1 bit: which word; 4 bits: which counter
    std::atomic<uint64_t>& w = b.w[row * 2 + (bits & 1)];
    const int shift = static_cast<int>((bits >> 1) & 15) * 4;
    uint64_t v = w.load(std::memory_order_relaxed);
    while (((v >> shift) & 15) != 15 && !w.compare_exchange_weak(v, v + (uint64_t{1} << shift), std::memory_order_relaxed)) {
    }
  }
}

uint32_t FrequencySketch::estimateBlocked(uint64_t hash) const {
  const uint64_t z = fmix(hash);
  const Block& b = blockOf(z);
  uint32_t best = 15;
  for (int row = 0; row < 4; ++row) {
    const uint32_t bits = static_cast<uint32_t>(z >> (row * 8));
    const uint64_t v = b.w[row * 2 + (bits & 1)].load(std::memory_order_relaxed);
    best = std::min<uint32_t>(best, static_cast<uint32_t>((v >> (((bits >> 1) & 15) * 4)) & 15));
  }
  const uint64_t doorBits = blockedDoorBits(hash);
  return best + ((blockedDoorWord(hash).load(std::memory_order_relaxed) & doorBits) == doorBits ? 1 : 0);
}

void FrequencySketch::incrementSpread(uint64_t hash) {
  // Doorkeeper: two bits; a key is "seen" when both are set.
  const Door d = doorOf(hash);
  if (!seen(d)) {
    door_[d.w1].fetch_or(d.m1, std::memory_order_relaxed);
    door_[d.w2].fetch_or(d.m2, std::memory_order_relaxed);
    return;
  }
  size_t word[4];
  int shift[4];
  locate(hash, word, shift);
  for (int row = 0; row < 4; ++row) {
    std::atomic<uint64_t>& w = counterWord(word[row]);
    uint64_t v = w.load(std::memory_order_relaxed);
    while (((v >> shift[row]) & 15) != 15 &&
           !w.compare_exchange_weak(v, v + (uint64_t{1} << shift[row]), std::memory_order_relaxed)) {
    }
  }
}

uint32_t FrequencySketch::estimate(uint64_t hash) const {
  if (layout_ == Layout::kBlocked) return estimateBlocked(hash);
  size_t word[4];
  int shift[4];
  locate(hash, word, shift);
  uint32_t best = 15;
  for (int row = 0; row < 4; ++row) {
    const uint64_t v = counterWord(word[row]).load(std::memory_order_relaxed);
    best = std::min<uint32_t>(best, static_cast<uint32_t>((v >> shift[row]) & 15));
  }
  return best + (seen(doorOf(hash)) ? 1 : 0);
}

void FrequencySketch::age() {
  halveCounters();
  resets_.fetch_add(1, std::memory_order_relaxed);
}

void FrequencySketch::halve() {
  halveCounters();
  // Counting restarts at half the sample: the halved counts still weigh.
  additions_.fetch_sub(sampleSize_ / 2, std::memory_order_relaxed);
  resets_.fetch_add(1, std::memory_order_relaxed);
}

void FrequencySketch::halveCounters() {
  for (size_t i = 0; i < words_; ++i) {
    uint64_t v = counterWord(i).load(std::memory_order_relaxed);
    while (!counterWord(i).compare_exchange_weak(v, (v >> 1) & 0x7777777777777777ull, std::memory_order_relaxed)) {
    }
  }
  for (size_t i = 0; i < doorWords_; ++i) door_[i].store(0, std::memory_order_relaxed);
}

}  // namespace tiercache
