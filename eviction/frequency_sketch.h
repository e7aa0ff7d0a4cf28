// FrequencySketch: TinyLFU's approximate access counter (Einziger et al.).
//
// A count-min sketch of 4-bit counters (16 per 64-bit word, depth 4) behind
// a doorkeeper (a 2-hash Bloom filter of single bits): the first sighting of
// a key only sets its doorkeeper bits, later ones increment the sketch, and
// the estimate is min(counters) + doorkeeper. After `sampleSize` recorded
// accesses every counter is halved and the doorkeeper cleared (aging), so
// the counts follow recent popularity.
//
// Lock-free: increments are per-word compare-exchange loops that stop at 15;
// the doorkeeper is fetch_or. Halving is done by the one thread whose
// increment crossed the sample size, word by word with compare-exchange;
// increments racing with it may be halved or not, which only blurs an
// estimate by one.
//
// Layout (after Caffeine's): all of a key lives in one 64-byte block, so a
// hit touches one cache line of the sketch, not six: its 4 counters in
// words 0..5 (row r in word r or r + 2) and its 2 doorkeeper bits in words
// 6 and 7 (128 doorkeeper bits per block, for about 16 keys).
//
// Size: for `capacity` items, nextpow2(capacity)/2 words (6 counters and 2
// doorkeeper bits per item, 4 bytes); the sample (accesses
// between halvings) is sampleFactor x capacity (Caffeine: 10).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tiercache {

class FrequencySketch {
 public:
  explicit FrequencySketch(size_t capacity, size_t sampleFactor = 10);

  void increment(uint64_t hash);
  uint32_t estimate(uint64_t hash) const;  // 0..16
  size_t capacity() const { return capacity_; }
  size_t bytes() const { return words_ * sizeof(uint64_t); }
  uint64_t resets() const { return resets_.load(std::memory_order_relaxed); }

 private:
  struct alignas(64) Block {
    std::atomic<uint64_t> words[8];
  };
  // Word (within the block's 8) and nibble shift of row `row`'s counter.
  static void counterOf(uint64_t hash, int row, size_t& word, int& shift);
  size_t blockOf(uint64_t hash) const;
  void halve();

  const size_t capacity_;
  const size_t words_;       // power of two, >= 8
  const uint64_t sampleSize_;
  std::unique_ptr<Block[]> table_;
  std::atomic<uint64_t> additions_{0};
  std::atomic<uint64_t> resets_{0};
};

}  // namespace tiercache
