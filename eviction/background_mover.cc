#include "background_mover.h"

#include <algorithm>

namespace tiercache {

void WorkerCounters::recordRun(uint64_t traversals, uint64_t items, std::chrono::steady_clock::time_point start) {
  const auto busy = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
  runs_.fetch_add(1, std::memory_order_relaxed);
  traversals_.fetch_add(traversals, std::memory_order_relaxed);
  items_.fetch_add(items, std::memory_order_relaxed);
  busyNanos_.fetch_add(static_cast<uint64_t>(busy.count()), std::memory_order_relaxed);
}

BackgroundWorkerStats WorkerCounters::snapshot() const {
  BackgroundWorkerStats s;
  s.runs = runs_.load(std::memory_order_relaxed);
  s.traversals = traversals_.load(std::memory_order_relaxed);
  s.items = items_.load(std::memory_order_relaxed);
  s.busyNanos = busyNanos_.load(std::memory_order_relaxed);
  s.yields = yields_.load(std::memory_order_relaxed);
  return s;
}

BackgroundEvictor::BackgroundEvictor(BackgroundTarget& target, std::unique_ptr<EvictionStrategy> strategy, size_t id,
                                     size_t threads, std::chrono::milliseconds interval,
                                     std::chrono::milliseconds idleInterval, bool yieldToApplication, double cores)
    : target_(target),
      strategy_(std::move(strategy)),
      id_(id),
      threads_(threads ? threads : 1),
      interval_(interval),
      idleInterval_(std::max(idleInterval, interval)),
      told_(std::make_unique<std::atomic<bool>[]>(target.classCount())),
      wait_(interval),
      worker_("tc-evict-" + std::to_string(id), interval, [this] { runOnce(); }) {
  if (yieldToApplication) spareCores_.emplace(cores);
}

void BackgroundEvictor::tell(size_t cls, bool urgent) {
  // Hot path of allocations below the watermark: plain loads while a tell
  // is already pending.
  if (!told_[cls].load(std::memory_order_relaxed)) told_[cls].store(true, std::memory_order_relaxed);
  if (!anyTold_.load(std::memory_order_relaxed)) anyTold_.store(true, std::memory_order_release);
  if (urgent) {
    worker_.wake();
  } else {
    worker_.wakeUnlessDue(kNap);
  }
}

namespace {
// Full looks that find nothing before the evictor starts to look less often.
constexpr uint32_t kIdleLooksBeforeBackoff = 64;
}  // namespace

size_t BackgroundEvictor::serve(size_t cls, uint64_t& visited, bool& active) {
  ++visited;
  const ClassUsage u = target_.usage(cls);
  if (u.consumed > 0) active = true;
  const size_t batch = strategy_->batchFor(u);
  return batch > 0 ? target_.evictBatch(cls, batch) : 0;
}

size_t BackgroundEvictor::runOnce() {
  const auto t0 = std::chrono::steady_clock::now();
  if (spareCores_) {
    const bool aside = !spareCores_->spare(t0);
    if (aside != yielding_.load(std::memory_order_relaxed)) {
      yielding_.store(aside, std::memory_order_relaxed);
      if (aside) {
        for (size_t c = id_; c < target_.classCount(); c += threads_) target_.standAside(c);
      }
    }
    if (aside) {
      // Tells that came before the cache saw yielding() stay pending: the
      // first run with a spare core serves them. The verdict changes only
      // when a window ends: waking sooner would cost the busy cores a
      // thread switch for nothing.
      counters_.recordYield();
      worker_.waitNext(std::max(interval_, SpareCoreMeter::kWindow));
      return 0;
    }
  }
  size_t done = 0;
  uint64_t visited = 0;
  const size_t n = target_.classCount();
  const bool told = anyTold_.exchange(false, std::memory_order_acq_rel);
  bool active = false;  // some class allocated since the last look
  if (told) {
    for (size_t c = id_; c < n; c += threads_) {
      if (told_[c].load(std::memory_order_relaxed) && told_[c].exchange(false, std::memory_order_relaxed)) {
        done += serve(c, visited, active);
      }
    }
  }
  if (t0 - lastFullLook_ >= wait_) {
    lastFullLook_ = t0;
    size_t found = 0;
    for (size_t c = id_; c < n; c += threads_) found += serve(c, visited, active);
    done += found;
    // Work, or a cache in use: keep the interval. An idle cache for a
    // while: look again later and later (a tell still gets a run at once).
    busy_ = found || told || active;
    if (busy_) {
      idleLooks_ = 0;
      wait_ = interval_;
    } else if (++idleLooks_ > kIdleLooksBeforeBackoff) {
      wait_ = std::min(wait_ * 2, idleInterval_);
    }
  } else if (told) {
    idleLooks_ = 0;
    wait_ = interval_;
    busy_ = true;
  }
  // While the cache allocates, the evictor naps (kNap) between runs, so a
  // tell finds a run due and costs its thread no wake-up; an idle cache
  // gets the backed-off wait.
  worker_.waitNext(done || busy_ ? std::min(interval_, kNap) : wait_);
  if (visited) counters_.recordRun(visited, done, t0);
  return done;
}

BackgroundPromoter::BackgroundPromoter(BackgroundTarget& target, size_t maxBatch, std::chrono::milliseconds interval)
    : target_(target), maxBatch_(maxBatch ? maxBatch : 1), worker_("tc-promote", interval, [this] { runOnce(); }) {}

size_t BackgroundPromoter::runOnce() {
  const auto t0 = std::chrono::steady_clock::now();
  const size_t done = target_.promoteBatch(maxBatch_);
  counters_.recordRun(1, done, t0);
  return done;
}

}  // namespace tiercache
