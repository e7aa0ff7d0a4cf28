// Background evictors and the promoter.
//
// They work against BackgroundTarget, a small interface the cache
// implements, so eviction/ never sees items, slabs or tiers: classes are
// numbered 0..classCount()-1 and the cache does the moving.
//
// Each BackgroundEvictor serves the classes i with i % threads == its id,
// runs every interval (and when woken by an allocation that found no free
// slot), asks its strategy for a batch per class, and has the cache evict
// (demote) that many items. The cache takes its locks a few items at a
// time, never for a whole batch. Counters are atomic: stats() reads them
// from other threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "background_strategy.h"
#include "periodic_worker.h"

namespace tiercache {

class BackgroundTarget {
 public:
  virtual size_t classCount() const = 0;
  virtual ClassUsage usage(size_t cls) const = 0;
  // Evicts or demotes up to n items of the class, leaving their slots
  // free; returns how many.
  virtual size_t evictBatch(size_t cls, size_t n) = 0;
  // Promotes up to n pending candidates; returns how many moved.
  virtual size_t promoteBatch(size_t n) = 0;

 protected:
  ~BackgroundTarget() = default;
};

struct BackgroundWorkerStats {
  uint64_t runs = 0;
  uint64_t traversals = 0;      // classes looked at
  uint64_t items = 0;           // items evicted (or promoted)
  uint64_t busyNanos = 0;       // time spent in runs
};

// The counters every background worker keeps; atomic because stats() reads
// them from other threads.
class WorkerCounters {
 public:
  void recordRun(uint64_t traversals, uint64_t items, std::chrono::steady_clock::time_point start);
  BackgroundWorkerStats snapshot() const;

 private:
  std::atomic<uint64_t> runs_{0}, traversals_{0}, items_{0}, busyNanos_{0};
};

class BackgroundEvictor {
 public:
  BackgroundEvictor(BackgroundTarget& target, std::unique_ptr<EvictionStrategy> strategy, size_t id,
                    size_t threads, std::chrono::milliseconds interval);
  void start() { worker_.start(); }
  void stop() { worker_.stop(); }
  void wake() { worker_.wake(); }
  BackgroundWorkerStats stats() const { return counters_.snapshot(); }
  // One pass over this evictor's classes (what the thread runs).
  size_t runOnce();

 private:
  BackgroundTarget& target_;
  std::unique_ptr<EvictionStrategy> strategy_;
  const size_t id_, threads_;
  WorkerCounters counters_;
  PeriodicWorker worker_;  // last: its thread must stop before the rest goes
};

class BackgroundPromoter {
 public:
  BackgroundPromoter(BackgroundTarget& target, size_t maxBatch, std::chrono::milliseconds interval);
  void start() { worker_.start(); }
  void stop() { worker_.stop(); }
  void wake() { worker_.wake(); }
  BackgroundWorkerStats stats() const { return counters_.snapshot(); }
  size_t runOnce();

 private:
  BackgroundTarget& target_;
  const size_t maxBatch_;
  WorkerCounters counters_;
  PeriodicWorker worker_;
};

}  // namespace tiercache
