// ItemReaper: reclaims expired (and flushed) items in the background.
//
// The allocation path and the eviction walk drop dead items they meet at
// the cold end of a class, but a class that sees no allocations is never
// walked, so its dead items would hold memory for ever. The reaper walks the
// access index instead, which reaches every item of every tier: each run
// looks at the next `bucketsPerRun` buckets from a cursor that wraps, so the
// work per run is bounded (one stripe lock held per bucket, never across
// buckets) and one sweep of the table takes bucketCount / bucketsPerRun runs.
// It owns its worker thread, cursor and counters; what to do with a slice
// is the cache's (a function given at construction).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "../common/periodic_worker.h"
#include "live_counters.h"

namespace tiercache {

// The rows of TIERCACHE_REAPER_COUNTERS (cache_stats.h).
struct ReaperCounters {
  TIERCACHE_LIVE_COUNTERS(TIERCACHE_REAPER_COUNTERS)
};

class ItemReaper {
 public:
  struct Slice {
    size_t scanned = 0;
    size_t reaped = 0;
  };
  // Reclaims the dead items of buckets [begin, end).
  using SliceFn = std::function<Slice(uint64_t begin, uint64_t end)>;

  ItemReaper(uint64_t bucketCount, uint64_t bucketsPerRun, std::chrono::milliseconds interval, SliceFn fn);
  ~ItemReaper();
  ItemReaper(const ItemReaper&) = delete;
  ItemReaper& operator=(const ItemReaper&) = delete;

  void start();
  void stop();
  // One run now, on the caller's thread (tests; also safe beside the worker).
  void runOnce();
  // A full sweep now (tests): as many runs as the table needs.
  void sweep();
  const ReaperCounters& counters() const { return counters_; }

 private:
  const uint64_t bucketCount_;
  const uint64_t bucketsPerRun_;
  const SliceFn fn_;
  std::mutex mu_;  // one run at a time: the cursor is the run's state
  uint64_t cursor_ = 0;
  ReaperCounters counters_;
  std::unique_ptr<PeriodicWorker> worker_;
};

}  // namespace tiercache
