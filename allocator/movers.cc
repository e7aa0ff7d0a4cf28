// Moving items between tiers: demotion on eviction, promotion of hot items,
// and the movers' side of the background workers. See docs/design.md,
// "Movers".
#include "movers.h"

#include <chrono>
#include <cstring>

#include "access_index.h"
#include "cache_persistence.h"
#include "item.h"
#include "slab_allocator.h"

namespace tiercache {

namespace {

// Candidates one policy-lock hold may look at (pinned ones are skipped).
constexpr size_t kEvictionMaxScan = 64;
// Items claimed per policy-lock hold: a batch never holds the lock longer.
constexpr size_t kEvictionChunk = 8;
// Evictions an allocation tries before it fails (every candidate pinned).
constexpr int kEvictionAttempts = 4;
// A class that could use another's idle slab checks for one this often.
constexpr uint32_t kRebalanceCheckMs = 10;

// Claims unpinned items for a move (kMoving) at the cold end of a policy.
class MoveClaimVisitor final : public EvictionVisitor {
 public:
  explicit MoveClaimVisitor(const SlabTable& table) : table_(table) {}
  Verdict visit(uint32_t ref) override {
    if (!table_.item(CompressedRef(ref))->tryMarkMoving(false)) return Verdict::kSkip;
    victims[count++] = CompressedRef(ref);
    return Verdict::kTake;
  }
  CompressedRef victims[kEvictionChunk];
  size_t count = 0;

 private:
  const SlabTable& table_;
};

}  // namespace

// ---- promotion queue and rate limiter ----

bool PromotionQueue::push(std::string_view key) {
  std::lock_guard<std::mutex> g(mu_);
  if (keys_.size() >= capacity_) return false;
  keys_.emplace_back(key);
  return true;
}

void PromotionQueue::popBatch(size_t n, std::vector<std::string>& out) {
  std::lock_guard<std::mutex> g(mu_);
  while (n-- > 0 && !keys_.empty()) {
    out.push_back(std::move(keys_.front()));
    keys_.pop_front();
  }
}

RateLimiter::RateLimiter(uint32_t maxPerSec) : max_(maxPerSec), windowStart_(coarseNowMs()) {}

bool RateLimiter::tryAcquire() {
  if (max_ == 0) return true;
  const uint32_t now = coarseNowMs();
  uint32_t start = windowStart_.load(std::memory_order_relaxed);
  if (now - start >= 1000 && windowStart_.compare_exchange_strong(start, now, std::memory_order_relaxed)) {
    count_.store(0, std::memory_order_relaxed);
  }
  return count_.fetch_add(1, std::memory_order_relaxed) < max_;
}

// ---- life cycle ----

Movers::Movers(const MoverParts& parts)
    : config_(parts.config),
      table_(parts.table),
      allocs_(parts.allocs),
      index_(parts.index),
      hash_(parts.hash),
      persistence_(parts.persistence),
      queue_(parts.config.promotion.queue_size),
      limiter_(parts.config.promotion.max_per_sec) {
  const BackgroundEvictionConfig& be = config_.background_eviction;
  if (be.enabled) {
    for (uint32_t i = 0; i < be.threads; ++i) {
      std::unique_ptr<EvictionStrategy> strategy;
      if (be.strategy == EvictorStrategyKind::kKeepFree) {
        strategy = std::make_unique<KeepFreeStrategy>(be.keep_free, be.max_batch);
      } else {
        strategy = std::make_unique<FreeThresholdStrategy>(be.low_watermark, be.high_watermark, be.min_batch,
                                                           be.max_batch);
      }
      evictors_.push_back(std::make_unique<BackgroundEvictor>(*this, std::move(strategy), i, be.threads,
                                                              std::chrono::milliseconds(be.interval_ms)));
    }
  }
  const PromotionConfig& pc = config_.promotion;
  if (pc.enabled && pc.background && allocs_.size() > 1) {
    promoter_ = std::make_unique<BackgroundPromoter>(*this, pc.max_batch, std::chrono::milliseconds(pc.interval_ms));
  }
}

Movers::~Movers() { stop(); }

void Movers::start() {
  for (auto& e : evictors_) e->start();
  if (promoter_) promoter_->start();
}

void Movers::stop() {
  for (auto& e : evictors_) e->stop();
  if (promoter_) promoter_->stop();
}

// ---- eviction and demotion ----

CompressedRef Movers::obtainSlot(uint32_t tier, uint32_t pool, uint32_t classId) {
  return obtainSlotIn(tier, pool, classId, false);
}

CompressedRef Movers::obtainSlotIn(uint32_t tier, uint32_t pool, uint32_t classId, bool background) {
  SlabAllocator& a = *allocs_[tier];
  AllocationClass& ac = a.cls(pool, classId);
  CompressedRef ref = a.allocateSlot(pool, classId);
  if (ref) return ref;
  if (!background) wakeEvictor(ac);
  ac.counters().slowAllocs.fetch_add(1, std::memory_order_relaxed);
  if (config_.rebalance.enabled) {
    // A class without a slab cannot evict: it must get one. Otherwise look
    // for another class's idle slab now and then (a look locks every class
    // of the pool), not on every miss.
    const bool starving = ac.slabCount() == 0;
    if ((starving || ac.rebalanceCheckDue(kRebalanceCheckMs)) && rebalance(a, pool, classId, !starving)) {
      ref = a.allocateSlot(pool, classId);
      if (ref) return ref;
    }
  }
  for (int i = 0; !ref && i < kEvictionAttempts; ++i) {
    evictInto(ac, 1, &ref, background);
    if (!ref) ref = ac.popFree();  // freed by a reader's release or another thread
  }
  return ref;
}

size_t Movers::evict(AllocationClass& ac, size_t n, bool background) { return evictInto(ac, n, nullptr, background); }

size_t Movers::evictInto(AllocationClass& ac, size_t n, CompressedRef* reuse, bool background) {
  const uint32_t tier = ac.tier();
  const bool demote = config_.demotion.enabled && tier + 1 < allocs_.size();
  size_t done = 0;
  while (done < n) {
    MoveClaimVisitor visitor(table_);
    if (ac.policy().evict(std::min(n - done, kEvictionChunk), kEvictionMaxScan, visitor) == 0) break;
    for (size_t i = 0; i < visitor.count; ++i) {
      const CompressedRef ref = visitor.victims[i];
      Item* item = table_.item(ref);
      bool moved = false;
      if (demote) {
        const CompressedRef dst = obtainSlotIn(tier + 1, ac.pool(), ac.id(), background);
        moved = dst && copyAndSwap(item, ref, dst);
      }
      if (moved) {
        ac.counters().demotions.fetch_add(1, std::memory_order_relaxed);
      } else {
        index_.unlinkExact(ref, hash_(item->key()));  // the last tier, or no room below: drop
      }
      (background ? ac.counters().bgEvictions : ac.counters().evictions).fetch_add(1, std::memory_order_relaxed);
      ++done;
      // A reader that pinned the item during the copy frees it on release.
      if (item->finishMove()) {
        if (reuse && !*reuse) {
          *reuse = ref;
        } else {
          freeOwned(ref);
        }
      }
    }
  }
  return done;
}

bool Movers::copyAndSwap(Item* src, CompressedRef srcRef, CompressedRef dst) {
  Item* copy = table_.item(dst);
  copy->init(src->key(), src->valueSize());
  copy->copyMetaFrom(*src);
  std::memcpy(copy->valueData(), src->valueData(), src->valueSize());
  // Payload durable before replaceExact commits it (persistent tiers only).
  if (table_.persistent(dst)) persistence_.persistPayload(copy, dst);
  const bool swapped = index_.replaceExact(srcRef, dst, copy, hash_(src->key()));
  if (swapped) {
    table_.owner(dst)->policy().add(dst.raw());
  } else {
    counters_.movesAborted.fetch_add(1, std::memory_order_relaxed);
  }
  if (copy->releaseRef()) freeOwned(dst);  // not published: back to the free list
  return swapped;
}

void Movers::freeOwned(CompressedRef ref) { table_.owner(ref)->freeOwned(ref); }

bool Movers::rebalance(SlabAllocator& a, uint32_t pool, uint32_t classId, bool idleOnly) {
  const int donorId = a.pickDonor(pool, classId, idleOnly);
  if (donorId < 0) return false;
  AllocationClass& donor = a.cls(pool, static_cast<uint32_t>(donorId));
  std::vector<CompressedRef> claimed;
  const uint32_t slab = donor.releaseSlab(claimed);
  for (CompressedRef ref : claimed) {
    Item* item = table_.item(ref);
    if (item->state.load(std::memory_order_acquire) & Item::kAccessible) index_.unlinkExact(ref, hash_(item->key()));
  }
  donor.counters().evictions.fetch_add(claimed.size(), std::memory_order_relaxed);
  if (slab == CompressedRef::kNull) {
    for (CompressedRef ref : claimed) donor.pushFree(ref);
    return false;
  }
  a.reassignSlab(slab, pool, classId);
  donor.counters().slabsLost.fetch_add(1, std::memory_order_relaxed);
  a.cls(pool, classId).counters().slabsGained.fetch_add(1, std::memory_order_relaxed);
  counters_.rebalancedSlabs.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// ---- promotion ----

void Movers::noteLowerTierHit(Item* item, CompressedRef ref) {
  // Under durable_sets an item stays in its persistent tier: moving it up
  // would take the only durable copy away (DRAM copies are not built yet).
  if (config_.persistence.durable_sets && table_.persistent(ref)) return;
  if (item->addLowerTierHit() != config_.promotion.hits) return;
  counters_.promotionCandidates.fetch_add(1, std::memory_order_relaxed);
  if (!config_.promotion.background) {
    promote(item, ref);
  } else if (queue_.push(item->key())) {
    promoter_->wake();
  } else {
    counters_.promotionQueueDropped.fetch_add(1, std::memory_order_relaxed);
    item->clearLowerTierHits();
  }
}

bool Movers::promote(Item* item, CompressedRef ref) {
  const uint32_t tier = table_.tierOf(ref);
  if (tier == 0) return false;
  AllocationClass& src = *table_.owner(ref);
  SlabAllocator& upper = *allocs_[tier - 1];
  AllocationClass& up = upper.cls(src.pool(), src.id());

  // Only into free space above the watermark: a promotion that evicted
  // would demote another item, and hot items would ping-pong.
  const bool canGrow = upper.canGrow(src.pool());
  const uint64_t capacity = up.slabCount() * up.slotsPerSlab();
  const uint64_t free = up.freeSlots();
  const bool room = canGrow || (free > 0 && 100.0 * static_cast<double>(free) >=
                                                config_.promotion.upper_free_watermark * static_cast<double>(capacity));
  if (!room) {
    counters_.promotionsNoRoom.fetch_add(1, std::memory_order_relaxed);
    item->clearLowerTierHits();
    return false;
  }
  if (!limiter_.tryAcquire()) {
    counters_.promotionsRateLimited.fetch_add(1, std::memory_order_relaxed);
    item->clearLowerTierHits();
    return false;
  }
  const CompressedRef dst = upper.allocateSlot(src.pool(), src.id());
  if (!dst) {
    counters_.promotionsNoRoom.fetch_add(1, std::memory_order_relaxed);
    item->clearLowerTierHits();
    return false;
  }
  // Out of the lower tier's list first, so no evictor picks it mid-copy; a
  // false here means it is not listed yet (insert in flight) or is being
  // moved by someone else: leave it.
  if (!item->tryMarkMoving(true)) {
    up.pushFree(dst);
    return false;
  }
  if (!src.policy().remove(ref.raw())) {
    if (item->finishMove()) freeOwned(ref);
    up.pushFree(dst);
    return false;
  }
  const bool moved = copyAndSwap(item, ref, dst);
  if (moved) src.counters().promotions.fetch_add(1, std::memory_order_relaxed);
  if (item->finishMove()) freeOwned(ref);
  return moved;
}

// ---- background workers ----

size_t Movers::flatClassIndex(const AllocationClass& ac) const {
  const SlabAllocator& a = *allocs_.front();
  return (static_cast<size_t>(ac.tier()) * a.poolCount() + ac.pool()) * a.classCount() + ac.id();
}

void Movers::wakeEvictor(const AllocationClass& ac) {
  if (!evictors_.empty()) evictors_[flatClassIndex(ac) % evictors_.size()]->wake();
}

size_t Movers::classCount() const {
  const SlabAllocator& a = *allocs_.front();
  return allocs_.size() * a.poolCount() * a.classCount();
}

AllocationClass& Movers::classAt(size_t cls) const {
  const SlabAllocator& first = *allocs_.front();
  const size_t perTier = first.poolCount() * first.classCount();
  SlabAllocator& a = *allocs_[cls / perTier];
  return a.cls(static_cast<uint32_t>(cls % perTier / first.classCount()), static_cast<uint32_t>(cls % first.classCount()));
}

ClassUsage Movers::usage(size_t cls) const {
  const AllocationClass& ac = classAt(cls);
  ClassUsage u;
  // The last tier of several only drops: keeping it partly empty would cost
  // hit ratio and buy nothing, since demotions into it evict as they go (in
  // the background thread when a background evictor is demoting).
  if (allocs_.size() > 1 && ac.tier() + 1 == allocs_.size()) return u;
  u.capacity = static_cast<int64_t>(ac.slabCount() * ac.slotsPerSlab());
  u.free = static_cast<int64_t>(ac.freeSlots());
  u.canGrow = allocs_[ac.tier()]->canGrow(ac.pool());
  return u;
}

size_t Movers::evictBatch(size_t cls, size_t n) { return evictInto(classAt(cls), n, nullptr, true); }

size_t Movers::promoteBatch(size_t n) {
  std::vector<std::string> keys;
  queue_.popBatch(n, keys);
  size_t moved = 0;
  for (const std::string& key : keys) {
    Item* item = nullptr;
    const CompressedRef ref = index_.acquire(key, hash_(key), item);
    if (!ref) continue;
    if (promote(item, ref)) ++moved;
    if (item->releaseRef()) freeOwned(ref);
  }
  return moved;
}

// ---- stats ----

void Movers::addStats(CacheStats& s) const {
  auto addWorker = [](WorkerStats& to, const BackgroundWorkerStats& w) {
    ++to.threads;
    to.runs += w.runs;
    to.traversals += w.traversals;
    to.items += w.items;
    to.busy_nanos += w.busyNanos;
  };
  for (const auto& e : evictors_) addWorker(s.background_evictor, e->stats());
  if (promoter_) addWorker(s.promoter, promoter_->stats());
  s.promotion_candidates = counters_.promotionCandidates.load(std::memory_order_relaxed);
  s.promotions_rate_limited = counters_.promotionsRateLimited.load(std::memory_order_relaxed);
  s.promotions_no_room = counters_.promotionsNoRoom.load(std::memory_order_relaxed);
  s.promotion_queue_dropped = counters_.promotionQueueDropped.load(std::memory_order_relaxed);
  s.moves_aborted = counters_.movesAborted.load(std::memory_order_relaxed);
  s.rebalanced_slabs = counters_.rebalancedSlabs.load(std::memory_order_relaxed);
}

}  // namespace tiercache
