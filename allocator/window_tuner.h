// WindowTuner: runs W-TinyLFU's hill climber (eviction/window_climber.h) on
// the cache's own hit ratio and publishes the window share that every
// W-TinyLFU policy of the cache reads at eviction.
//
// A sample is 5 x the cache's slots in gets (at least kMinSample): long
// enough that a sample's hit ratio moves with the window more than with
// noise, short enough to follow a shifting workload. Caffeine's 10 x
// adapted too slowly on recency-biased traces (a sliding working set) and
// 3 x let noise move the window on Zipf at small caches.
//
// The hit ratio comes from the counters the cache keeps anyway (gets, hits
// per tier), so a hit costs nothing more; a miss counts down a thread-local
// and, every kCheckEvery misses of a thread, looks whether the sample is
// over (two sharded-counter sums). One window share for the whole cache:
// the climber judges the cache's hit ratio. Samples start once the cache
// is full: while it fills, the hit ratio rises whatever the window does,
// and the climber would read that as a reason to keep growing it, far past
// what Zipf wants.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "../eviction/window_climber.h"
#include "cache_counters.h"

namespace tiercache {

class WindowTuner {
 public:
  static constexpr uint64_t kSamplePerSlot = 5;
  static constexpr uint64_t kMinSample = 4096;
  static constexpr uint32_t kCheckEvery = 64;

  struct Capacity {
    uint64_t slots = 0;  // items the cache holds when full (slabs move between classes)
    bool full = false;   // no pool of any tier can take another slab
  };
  // signal: what the policies read (EvictionPolicyOptions::wtinylfuWindow),
  // its share where the climber starts; capacity is read at each sample's end.
  WindowTuner(std::shared_ptr<WindowSignal> signal, const CacheCounters& counters, std::function<Capacity()> capacity);

  // A get missed.
  void noteMiss() {
    thread_local uint32_t countdown = kCheckEvery;
    if (--countdown == 0) [[unlikely]] {
      countdown = kCheckEvery;
      check();
    }
  }
  // Ends the sample if it is long enough: one climb. Thread-safe; a call
  // that finds another one climbing returns at once.
  void check();

 private:
  const CacheCounters& counters_;
  const std::function<Capacity()> capacity_;
  const std::shared_ptr<WindowSignal> signal_;
  std::mutex lock_;  // guards what follows
  WindowClimber climber_;
  uint64_t sampleGets_ = 0;  // the counters when the sample began
  uint64_t sampleHits_ = 0;
  uint64_t sampleLength_ = 0;  // gets; 0 until the first check sizes it
};

}  // namespace tiercache
