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
// Size: for `capacity` items, nextpow2(capacity)/2 words (8 counters per
// item, 4 bytes) + nextpow2(capacity) doorkeeper bits; the sample (accesses
// between halvings) is sampleFactor x capacity (Caffeine: 10).
//
// Layout (kBlocked): a key's four counters are in one 64-byte block (8 words; row r
// picks word 2r or 2r+1 of the block and a counter in it), and its two
// doorkeeper bits in one word, so an increment or an estimate touches two
// cache lines, not five. On the set path of W-TinyLFU (an increment and up
// to two estimates per set) the five-line layout was most of the set's
// cache misses (callgrind's cache simulation). A doorkeeper inside the
// block (Caffeine keeps none) was tried earlier and cost hit ratio on
// Zipf at small caches: too few bits per key.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tiercache {

class FrequencySketch {
 public:
  // kBlocked: the cache's (see Layout above). kSpread: each row's counter
  // anywhere in the table and two doorkeeper words, as a textbook count-min
  // sketch; the reference simulators keep it (bench/policy_sim.cc), where
  // the blocked layout moved the W-TinyLFU simulator's miss ratio
  // (it counts every access in a sketch of 1 x its size).
  enum class Layout { kBlocked, kSpread };
  explicit FrequencySketch(size_t capacity, size_t sampleFactor = 10, Layout layout = Layout::kBlocked);

  void increment(uint64_t hash);
  uint32_t estimate(uint64_t hash) const;  // 0..16
  size_t capacity() const { return capacity_; }
  size_t bytes() const { return (words_ + doorWords_) * sizeof(uint64_t); }
  uint64_t resets() const { return resets_.load(std::memory_order_relaxed); }
  // Halves every counter and clears the doorkeeper now, outside the sample
  // count (the workload changed: old counts should weigh less, sooner).
  void age();

 private:
  void incrementBlocked(uint64_t hash);
  uint32_t estimateBlocked(uint64_t hash) const;
  void incrementSpread(uint64_t hash);
  // kSpread: the word and bit shift of each row's counter of a key.
  void locate(uint64_t hash, size_t word[4], int shift[4]) const;
  // kSpread: a key's two doorkeeper bits (words w1 and w2).
  struct Door {
    size_t w1, w2;
    uint64_t m1, m2;
  };
  Door doorOf(uint64_t hash) const;
  bool seen(const Door& d) const;
  void halve();
  void halveCounters();  // the counters halved, the doorkeeper cleared

  const Layout layout_;
  const size_t capacity_;
  const size_t words_;       // power of two, at least one block (8)
  const size_t doorWords_;   // power of two
  const uint64_t sampleSize_;
  // 64-byte blocks of 8 counter words (aligned new: one block, one line).
  static constexpr size_t kBlockWords = 8;
  struct alignas(64) Block {
    std::atomic<uint64_t> w[kBlockWords];
  };
  std::atomic<uint64_t>& counterWord(size_t i) const { return table_[i / kBlockWords].w[i % kBlockWords]; }
  // kBlocked: a key's block, from z = the finalised hash (rows pick words
  // and counters in it from z's low bytes); its doorkeeper bits come from
  // raw hash bits the counters' places do not use, both in one word.
  Block& blockOf(uint64_t z) const { return table_[static_cast<size_t>(z >> 32) & (words_ / kBlockWords - 1)]; }
  std::atomic<uint64_t>& blockedDoorWord(uint64_t hash) const {
    return door_[static_cast<size_t>(hash >> 12) & (doorWords_ - 1)];
  }
  static uint64_t blockedDoorBits(uint64_t hash) {
    return (uint64_t{1} << (hash & 63)) | (uint64_t{1} << ((hash >> 6) & 63));
  }
  std::unique_ptr<Block[]> table_;
  std::unique_ptr<std::atomic<uint64_t>[]> door_;
  std::atomic<uint64_t> additions_{0};
  std::atomic<uint64_t> resets_{0};
};

}  // namespace tiercache
