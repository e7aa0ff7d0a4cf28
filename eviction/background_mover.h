// Background evictors and the promoter.
//
// They work against BackgroundTarget, a small interface the cache
// implements, so eviction/ never sees items, slabs or tiers: classes are
// numbered 0..classCount()-1 and the cache does the moving.
//
// Each BackgroundEvictor serves the classes i with i % threads == its id.
// It is told: an allocation that leaves a class below its low watermark
// calls tell(class), and the evictor serves the told classes at once, or at
// its next timed run when that is at most kNap away: while the cache
// allocates, the evictor naps kNap (or the interval, if shorter) between
// runs, so the allocating threads rarely pay a thread wake-up (a system
// call); a class that ran dry (urgent) wakes it at once. It also looks at
// all its classes every interval while the cache is in use, and after 64
// looks that found neither work nor allocations less and less
// often (up to idleInterval), so an idle cache costs about one look per
// idleInterval. For each class it asks its strategy for a batch and has the
// cache evict (demote) that many items; the cache takes each lock once per
// sub-batch of a few dozen items, never for a whole batch. Counters are
// atomic: stats() reads them from other threads.
//
// Standing aside (yieldToApplication): while the process (this thread
// included) leaves less than half a core idle (SpareCoreMeter), a run serves no
// class: its work would take a core from an application thread, and an
// allocation that finds no free slot evicts the same batch itself.
// yielding() tells the cache to stop telling it meanwhile (a tell could
// cost the allocating thread a wake-up). It looks again when the meter's
// window ends; two spare windows in a row bring it back.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "background_strategy.h"
#include "../common/periodic_worker.h"
#include "../common/spare_cores.h"

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
  // The evictor of cls stands aside (no spare core) until its next look
  // (usage()): what its looks did for the class, the application's threads
  // must do meanwhile.
  virtual void standAside(size_t cls) = 0;

 protected:
  ~BackgroundTarget() = default;
};

struct BackgroundWorkerStats {
  uint64_t runs = 0;
  uint64_t traversals = 0;      // classes looked at
  uint64_t items = 0;           // items evicted (or promoted)
  uint64_t busyNanos = 0;       // time spent in runs
  uint64_t yields = 0;          // runs that stood aside (no spare core)
};

// The counters every background worker keeps; atomic because stats() reads
// them from other threads.
class WorkerCounters {
 public:
  void recordRun(uint64_t traversals, uint64_t items, std::chrono::steady_clock::time_point start);
  void recordYield() { yields_.fetch_add(1, std::memory_order_relaxed); }
  BackgroundWorkerStats snapshot() const;

 private:
  std::atomic<uint64_t> runs_{0}, traversals_{0}, items_{0}, busyNanos_{0}, yields_{0};
};

class BackgroundEvictor {
 public:
  BackgroundEvictor(BackgroundTarget& target, std::unique_ptr<EvictionStrategy> strategy, size_t id, size_t threads,
                    std::chrono::milliseconds interval,
                    std::chrono::milliseconds idleInterval = std::chrono::milliseconds(1000),
                    bool yieldToApplication = false, double cores = 0);
  void start() { worker_.start(); }
  void stop() { worker_.stop(); }
  void wake() { worker_.wake(); }
  // Class cls (one of this evictor's) is short of free slots: serve it soon
  // (urgent: it has none; wake the thread now).
  void tell(size_t cls, bool urgent = false);
  // The evictor's wait between runs while the cache allocates (or after a
  // run that did work), and how soon a due run makes a tell skip the wake-up.
  static constexpr std::chrono::milliseconds kNap{1};
  BackgroundWorkerStats stats() const { return counters_.snapshot(); }
  // One pass over this evictor's classes (what the thread runs).
  size_t runOnce();
  // It stands aside for want of a spare core (see above): don't tell it.
  bool yielding() const { return yielding_.load(std::memory_order_relaxed); }

 private:
  BackgroundTarget& target_;
  std::unique_ptr<EvictionStrategy> strategy_;
  size_t serve(size_t cls, uint64_t& visited, bool& active);

  const size_t id_, threads_;
  const std::chrono::milliseconds interval_, idleInterval_;
  std::unique_ptr<std::atomic<bool>[]> told_;  // per class of the target
  std::atomic<bool> anyTold_{false};
  // The worker thread's own: current full-look interval, idle looks in a row.
  std::chrono::milliseconds wait_;
  uint32_t idleLooks_ = 0;
  bool busy_ = false;  // the last full look saw allocations, work or tells
  std::chrono::steady_clock::time_point lastFullLook_{};
  // Engaged with yieldToApplication only (the worker thread's own): a
  // cache that never stands aside reads no cgroup files at start.
  std::optional<SpareCoreMeter> spareCores_;
  std::atomic<bool> yielding_{false};
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
