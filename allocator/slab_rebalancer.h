// The "marginal-hits" slab rebalancer (docs/design.md, "Slab rebalancing by
// marginal hits"): memory follows the hits.
//
// Every (tier, pool, class) keeps an EvictionGhost: the hashes of the keys
// its policy gave up over about the last slab's worth of evictions (sampled,
// in two Bloom-filter generations). A request for a key the class evicted
// that recently -- a miss that leads to an allocation, or a hit in a lower
// tier -- is a hit one more slab in this class would have earned. A
// PeriodicWorker of its own looks at those counts every interval and moves a
// slab from the class of the pool where a slab earns least to the one where
// another would earn most, with hysteresis (a gain ratio and a cooldown) so
// slabs do not ping-pong, at most max_slabs per run. A class that needs a
// slab and has none gets one first.
//
// The hit path is untouched: ghosts are read on the allocation path and on
// lower-tier hits only, written under the policy lock at eviction.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "../eviction/eviction_policy.h"
#include "../common/periodic_worker.h"
#include "cache_config.h"
#include "live_counters.h"

namespace tiercache {

class SlabAllocator;
class SlabTable;

// Keys one class evicted lately: sampled by key hash (so a key is always or
// never sampled), in two generations of a small Bloom filter; a generation
// holds half a slab's worth of evictions, so a key stays findable for
// between half a slab and a slab's worth of evictions after it left.
class EvictionGhost final : public EvictionObserver {
 public:
  EvictionGhost(const SlabTable& table, uint32_t slotsPerSlab);

  // Under the class's policy lock (one writer at a time).
  void evicted(RefWord ref) override;
  // A request for a key not in this class (stable hash, SlabTable::stableKeyHash):
  // counts a ghost hit if the class evicted it lately. Lock-free.
  void noteRequest(uint64_t hash) {
    if (sampled(hash) && contains(hash)) hits_.fetch_add(weight_, std::memory_order_relaxed);
  }
  bool contains(uint64_t hash) const;
  // Ghost hits so far, each sampled one counted as the keys it stands for.
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  size_t metadataBytes() const { return sizeof(*this) + 2 * words_ * sizeof(uint64_t); }

 private:
  // Sampled keys per generation at most: bounds memory and clearing cost.
  static constexpr uint32_t kMaxSampled = 1024;
  bool sampled(uint64_t hash) const { return ((hash >> 40) & sampleMask_) == 0; }
  uint64_t bitA(uint64_t hash) const { return hash & (bits_ - 1); }
  uint64_t bitB(uint64_t hash) const { return (hash >> 20) & (bits_ - 1); }

  const SlabTable& table_;
  uint32_t sampleMask_ = 0;  // sample one key in sampleMask_ + 1
  uint32_t weight_ = 1;      // = sampleMask_ + 1
  uint32_t genSize_ = 1;     // sampled evictions per generation
  uint64_t bits_ = 0;        // bits per generation (power of two)
  uint64_t words_ = 0;       // per generation
  std::unique_ptr<std::atomic<uint64_t>[]> filter_;  // generation g at [g * words_, (g+1) * words_)
  std::atomic<uint32_t> current_{0};
  uint32_t count_ = 0;  // sampled evictions in the current generation (the writer's own)
  std::atomic<uint64_t> hits_{0};
};

struct RebalancerCounters {
  TIERCACHE_LIVE_COUNTERS(TIERCACHE_REBALANCER_COUNTERS)
};

class SlabRebalancer {
 public:
  // Moves one slab of (tier, pool) from class donor to class receiver;
  // false when the donor released none (every slab tried holds a pin).
  using MoveSlabFn = std::function<bool(uint32_t tier, uint32_t pool, uint32_t donor, uint32_t receiver)>;

  // Registers a ghost with every class's policy: construct before other
  // threads use the allocators. The worker starts with start().
  SlabRebalancer(const RebalanceConfig& config, const SlabTable& table,
                 std::vector<std::unique_ptr<SlabAllocator>>& allocs, MoveSlabFn moveSlab);
  ~SlabRebalancer();
  SlabRebalancer(const SlabRebalancer&) = delete;
  SlabRebalancer& operator=(const SlabRebalancer&) = delete;

  void start() { worker_.start(); }
  void stop() { worker_.stop(); }

  // An allocation for a key (a miss, usually): a ghost hit in every tier's
  // class that evicted it lately.
  void noteAllocation(uint32_t pool, uint32_t classId, uint64_t stableHash);
  // A hit in `tier` > 0: a ghost hit in the tiers above that evicted it lately.
  void noteLowerTierHit(uint32_t tier, uint32_t pool, uint32_t classId, uint64_t stableHash);

  // One pass over every (tier, pool); returns the slabs moved. The worker
  // runs it every interval; Cache::rebalanceSlabs may run it besides.
  size_t runOnce();

  uint64_t ghostHits(uint32_t tier, uint32_t pool, uint32_t classId) const;
  const RebalancerCounters& counters() const { return counters_; }
  size_t metadataBytes() const;

  // A move needs the receiver's hits to beat the donor's by this factor.
  static constexpr double kGainRatio = 1.5;
  // ... and at least this many (decayed) ghost hits: noise does not move slabs.
  static constexpr double kMinGain = 4.0;
  // A class that gained a slab gives none for this many runs, and one that
  // lost a slab gets none: no ping-pong on a stable workload.
  static constexpr uint64_t kCooldownRuns = 4;
  // Each run's score is this share of the last one plus the new ghost hits.
  static constexpr double kDecay = 0.5;
  // Ghost hits tell what a class's *next* slab would earn; its last slab
  // earns at least as much. A class that gains a slab at score v remembers v
  // as the floor of its last slab's worth, decaying by this factor per run
  // (half-life about 14 runs): once a working set fits, the ghost falls
  // silent, and the class would otherwise look like the cheapest donor.
  static constexpr double kFloorDecay = 0.95;

 private:
  struct ClassState {  // the run's own
    uint64_t hitsMark = 0, pressureMark = 0, attemptsMark = 0, successMark = 0;
    double score = 0;
    double floor = 0;  // worth of the last slab gained (see kFloorDecay)
    uint64_t lastGain = 0, lastLoss = 0;  // run numbers (0: never)
  };
  size_t flat(uint32_t tier, uint32_t pool, uint32_t classId) const {
    return (static_cast<size_t>(tier) * pools_ + pool) * classes_ + classId;
  }
  size_t runPool(uint32_t tier, uint32_t pool, size_t budget);

  const RebalanceConfig config_;
  std::vector<std::unique_ptr<SlabAllocator>>& allocs_;
  const MoveSlabFn moveSlab_;
  const size_t pools_, classes_;
  std::vector<std::unique_ptr<EvictionGhost>> ghosts_;  // flat index
  std::mutex runMu_;  // one run at a time: the worker's and rebalanceSlabs()
  std::vector<ClassState> state_;                       // flat index, under runMu_
  uint64_t run_ = 0;                                    // under runMu_
  RebalancerCounters counters_;
  PeriodicWorker worker_;  // last: its thread stops before the rest goes
};

}  // namespace tiercache
