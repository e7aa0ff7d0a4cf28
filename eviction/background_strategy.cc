#include "background_strategy.h"

#include <algorithm>
#include <cmath>

namespace tiercache {

namespace {
constexpr int64_t kLimit = int64_t{1} << 40;  // far above any class; keeps products exact
int64_t clampCount(size_t v) { return static_cast<int64_t>(std::min<size_t>(v, kLimit)); }
}  // namespace

FreeThresholdStrategy::FreeThresholdStrategy(double lowPercent, double highPercent, size_t minBatch, size_t maxBatch)
    : low_(std::clamp(lowPercent, 0.0, 100.0)),
      high_(std::clamp(std::max(highPercent, lowPercent), 0.0, 100.0)),
      minBatch_(clampCount(minBatch)),
      maxBatch_(std::max(clampCount(maxBatch), clampCount(minBatch))) {}

size_t FreeThresholdStrategy::batchFor(const ClassUsage& u) const {
  // A class that can still grow is not short of memory, and an empty one has nothing to give.
  if (u.canGrow || u.capacity <= 0) return 0;
  const int64_t free = std::clamp<int64_t>(u.free, 0, u.capacity);
  if (100.0 * static_cast<double>(free) >= low_ * static_cast<double>(u.capacity)) return 0;
  const int64_t target = static_cast<int64_t>(std::ceil(high_ * static_cast<double>(u.capacity) / 100.0));
  int64_t want = target - free;  // > 0: free < low <= high
  want = std::max(want, std::clamp<int64_t>(u.consumed, 0, target));
  want = std::clamp(want, minBatch_, maxBatch_);
  want = std::min(want, u.capacity - free);  // cannot evict more items than the class holds
  return want > 0 ? static_cast<size_t>(want) : 0;
}

KeepFreeStrategy::KeepFreeStrategy(size_t keepFree, size_t maxBatch)
    : keepFree_(clampCount(keepFree)), maxBatch_(clampCount(maxBatch)) {}

size_t KeepFreeStrategy::batchFor(const ClassUsage& u) const {
  if (u.canGrow || u.capacity <= 0) return 0;
  const int64_t free = std::clamp<int64_t>(u.free, 0, u.capacity);
  int64_t want = std::min(keepFree_, u.capacity) - free;
  want = std::min({want, maxBatch_, u.capacity - free});
  return want > 0 ? static_cast<size_t>(want) : 0;
}

}  // namespace tiercache
