// Cache internals shared by cache.cc and cache_mover.cc. Not part of the API.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "../eviction/background_mover.h"
#include "../eviction/eviction_policy.h"
#include "access_index.h"
#include "cache.h"
#include "sharded_counter.h"

namespace tiercache {

struct CacheCounters {
  ShardedCounter gets, sets, setFailures, inserts, replaces, removes, allocTooLarge;
  // Handles made and released: their difference is the pins outstanding,
  // exact once no other thread uses the cache (~Cache checks it).
  ShardedCounter handlesOpened, handlesClosed;
  std::atomic<uint64_t> rebalancedSlabs{0};
  std::vector<std::unique_ptr<ShardedCounter>> tierHits;
  uint64_t recoveredItems = 0, discardedItems = 0;  // written once, before any other thread
  double recoverySeconds = 0;
  std::atomic<uint64_t> promotionCandidates{0}, promotionsRateLimited{0}, promotionsNoRoom{0},
      promotionQueueDropped{0}, movesAborted{0};
};

// Keys waiting for the promoter. Keys, not refs: a queued ref could be
// freed and its slab re-cut before the promoter gets to it, while a key is
// simply looked up again.
class PromotionQueue {
 public:
  explicit PromotionQueue(size_t capacity) : capacity_(capacity) {}
  // False when full, or when the key cannot be copied (out of memory): the
  // caller then clears the item's hit count, or it could never be promoted.
  bool push(std::string_view key) {
    std::lock_guard<std::mutex> g(mu_);
    if (keys_.size() >= capacity_) return false;
    try {
      keys_.emplace_back(key);
    } catch (const std::bad_alloc&) {
      return false;
    }
    return true;
  }
  void popBatch(size_t n, std::vector<std::string>& out) {
    out.reserve(out.size() + n);  // before popping: a key is never lost between the two
    std::lock_guard<std::mutex> g(mu_);
    while (n-- > 0 && !keys_.empty()) {
      out.push_back(std::move(keys_.front()));
      keys_.pop_front();
    }
  }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::deque<std::string> keys_;
};

// At most maxPerSec grants per one-second window, over all threads (0: no limit).
class RateLimiter {
 public:
  explicit RateLimiter(uint32_t maxPerSec) : max_(maxPerSec) {}
  bool tryAcquire() {
    if (max_ == 0) return true;
    const uint32_t now = coarseNowMs();
    uint32_t start = windowStart_.load(std::memory_order_relaxed);
    if (now - start >= 1000 && windowStart_.compare_exchange_strong(start, now, std::memory_order_relaxed)) {
      count_.store(0, std::memory_order_relaxed);
    }
    return count_.fetch_add(1, std::memory_order_relaxed) < max_;
  }

 private:
  const uint32_t max_;
  std::atomic<uint32_t> windowStart_{coarseNowMs()};
  std::atomic<uint32_t> count_{0};
};

// Commit protocol for items of persistent tiers (docs/persistence.md):
// payload persisted first (by the writer, before publishing), then the
// checksum written and persisted here, under the index stripe lock.
class CachePersistence final : public ItemPersistence {
 public:
  explicit CachePersistence(Cache& cache) : cache_(cache) {}
  void commit(Item* item, CompressedRef ref) override;
  void invalidate(Item* item, CompressedRef ref) override;
  // Persists header, key and value of an item about to be published.
  void persistPayload(const Item* item, CompressedRef ref) const;

 private:
  Cache& cache_;
};

// Checksum of an item's sizes, key and value; never 0 (0 means "not committed").
uint32_t itemChecksum(const Item* item);

// The cache as the background workers see it.
class CacheBackground final : public BackgroundTarget {
 public:
  explicit CacheBackground(Cache& cache) : cache_(cache) {}
  size_t classCount() const override;
  ClassUsage usage(size_t cls) const override;
  size_t evictBatch(size_t cls, size_t n) override;
  size_t promoteBatch(size_t n) override;

 private:
  // Flat class numbers run tier-major, then pool, then class.
  AllocationClass& classAt(size_t cls) const;

  Cache& cache_;
};

struct MoverState {
  MoverState(Cache& cache, const CacheConfig& cfg)
      : queue(cfg.promotion.queue_size), limiter(cfg.promotion.max_per_sec), target(cache) {}
  ~MoverState() { stop(); }
  void stop() {
    for (auto& e : evictors) e->stop();
    if (promoter) promoter->stop();
  }

  PromotionQueue queue;
  RateLimiter limiter;
  CacheBackground target;
  std::vector<std::unique_ptr<BackgroundEvictor>> evictors;
  std::unique_ptr<BackgroundPromoter> promoter;
};

}  // namespace tiercache
