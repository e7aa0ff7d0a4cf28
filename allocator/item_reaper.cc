#include "item_reaper.h"

#include <algorithm>

namespace tiercache {

ItemReaper::ItemReaper(uint64_t bucketCount, uint64_t bucketsPerRun, std::chrono::milliseconds interval, SliceFn fn)
    : bucketCount_(bucketCount), bucketsPerRun_(std::max<uint64_t>(1, bucketsPerRun)), fn_(std::move(fn)) {
  worker_ = std::make_unique<PeriodicWorker>("tc-reaper", interval, [this] { runOnce(); });
}

ItemReaper::~ItemReaper() { stop(); }

void ItemReaper::start() { worker_->start(); }
void ItemReaper::stop() { worker_->stop(); }

void ItemReaper::runOnce() {
  std::lock_guard<std::mutex> g(mu_);
  const uint64_t end = std::min(bucketCount_, cursor_ + bucketsPerRun_);
  const Slice s = fn_(cursor_, end);
  cursor_ = end == bucketCount_ ? 0 : end;
  if (cursor_ == 0) counters_.reaper_sweeps.fetch_add(1, std::memory_order_relaxed);
  counters_.reaper_runs.fetch_add(1, std::memory_order_relaxed);
  counters_.reaper_scanned.fetch_add(s.scanned, std::memory_order_relaxed);
  counters_.reaped.fetch_add(s.reaped, std::memory_order_relaxed);
}

void ItemReaper::sweep() {
  const uint64_t runs = (bucketCount_ + bucketsPerRun_ - 1) / bucketsPerRun_ + 1;  // +1: the cursor may be mid-table
  for (uint64_t i = 0; i < runs; ++i) runOnce();
}

}  // namespace tiercache
