#include "background_mover.h"

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
  return s;
}

BackgroundEvictor::BackgroundEvictor(BackgroundTarget& target, std::unique_ptr<EvictionStrategy> strategy, size_t id,
                                     size_t threads, std::chrono::milliseconds interval)
    : target_(target),
      strategy_(std::move(strategy)),
      id_(id),
      threads_(threads ? threads : 1),
      worker_("tc-evict-" + std::to_string(id), interval, [this] { runOnce(); }) {}

size_t BackgroundEvictor::runOnce() {
  const auto t0 = std::chrono::steady_clock::now();
  size_t done = 0;
  uint64_t visited = 0;
  const size_t n = target_.classCount();
  for (size_t c = id_; c < n; c += threads_) {
    ++visited;
    const size_t batch = strategy_->batchFor(target_.usage(c));
    if (batch > 0) done += target_.evictBatch(c, batch);
  }
  counters_.recordRun(visited, done, t0);
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
