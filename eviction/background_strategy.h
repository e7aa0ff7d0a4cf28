// Strategies that size a background eviction batch for one allocation class.
//
// All arithmetic is signed 64-bit and clamped: a batch is never negative,
// never wraps, and never exceeds max_batch (the Intel CacheLib fork computed
// `max(0UL, a - b)` on unsigned values, which wraps instead of clamping).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tiercache {

// What a strategy sees of one (tier, pool, class).
struct ClassUsage {
  int64_t capacity = 0;   // slots in the class's slabs
  int64_t free = 0;       // free + never-used slots
  bool canGrow = false;   // the pool may still hand this class a new slab
  int64_t consumed = 0;   // slots allocated since the evictor last looked
};

class EvictionStrategy {
 public:
  virtual ~EvictionStrategy() = default;
  // Items to evict from the class now; 0 when it needs nothing.
  virtual size_t batchFor(const ClassUsage& usage) const = 0;
  virtual const char* name() const = 0;
};

// Evicts when free space falls below `lowPercent` of the class, enough to
// bring it back to `highPercent` or to cover what the class consumed since
// the last look (whichever is more: a class that consumes fast gets ahead),
// in [minBatch, maxBatch].
class FreeThresholdStrategy final : public EvictionStrategy {
 public:
  FreeThresholdStrategy(double lowPercent, double highPercent, size_t minBatch, size_t maxBatch);
  size_t batchFor(const ClassUsage& usage) const override;
  const char* name() const override { return "free-threshold"; }

 private:
  double low_, high_;
  int64_t minBatch_, maxBatch_;
};

// Keeps `keepFree` free slots in every class, at most maxBatch per run.
class KeepFreeStrategy final : public EvictionStrategy {
 public:
  KeepFreeStrategy(size_t keepFree, size_t maxBatch);
  size_t batchFor(const ClassUsage& usage) const override;
  const char* name() const override { return "keep-free"; }

 private:
  int64_t keepFree_, maxBatch_;
};

}  // namespace tiercache
