#include "window_tuner.h"

#include <algorithm>

namespace tiercache {

WindowTuner::WindowTuner(std::shared_ptr<WindowSignal> signal, const CacheCounters& counters,
                         std::function<Capacity()> capacity)
    : counters_(counters),
      capacity_(std::move(capacity)),
      signal_(std::move(signal)),
      climber_(signal_->perMille.load(std::memory_order_relaxed)) {
  signal_->perMille.store(climber_.perMille(), std::memory_order_relaxed);  // clamped to the climber's range
}

void WindowTuner::check() {
  std::unique_lock<std::mutex> g(lock_, std::try_to_lock);
  if (!g.owns_lock()) return;
  const uint64_t gets = counters_.gets.load();
  if (sampleLength_ != 0 && gets - sampleGets_ < sampleLength_) return;
  uint64_t hits = 0;
  for (const auto& tier : counters_.tierHits) hits += tier->load();
  const Capacity capacity = capacity_();
  if (sampleLength_ != 0 && capacity.full) {
    // Counters are summed cell by cell while other threads add: a sample's
    // hits may run a little ahead of its gets, never by a whole sample.
    const double ratio = std::min(1.0, double(hits - sampleHits_) / double(gets - sampleGets_));
    signal_->perMille.store(climber_.sample(ratio), std::memory_order_relaxed);
    if (climber_.agingDue()) signal_->agings.fetch_add(1, std::memory_order_relaxed);
  }
  sampleGets_ = gets;
  sampleHits_ = hits;
  sampleLength_ = std::max(kMinSample, kSamplePerSlot * capacity.slots);
}

}  // namespace tiercache
