// Moving items between tiers: demotion on eviction, promotion of hot items,
// and the cache's side of the background workers. See docs/design.md,
// "Moving items between tiers".
#include <chrono>
#include <cstring>

#include "access_index.h"
#include "cache.h"
#include "cache_internal.h"
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

// The verdict for a candidate that could not be claimed. A reader's pin may
// last for seconds: that item leaves the cold end (kRotate), or a few
// long-lived handles on the coldest items would fill every scan window. One
// that another thread is moving or freeing stays put (kSkip).
EvictionVisitor::Verdict unclaimableVerdict(const Item& item) {
  const uint32_t s = item.state.load(std::memory_order_relaxed);
  const bool busy = s & (Item::kMoving | Item::kExclusive | Item::kFreeSlot);
  return (s & Item::kRefMask) && !busy ? EvictionVisitor::Verdict::kRotate : EvictionVisitor::Verdict::kSkip;
}

// Claims unpinned items for a move (kMoving) at the cold end of a policy.
class MoveClaimVisitor final : public EvictionVisitor {
 public:
  explicit MoveClaimVisitor(const SlabTable& table) : table_(table) {}
  Verdict visit(uint32_t ref) override {
    Item* item = table_.item(CompressedRef(ref));
    if (!item->tryMarkMoving(false)) return unclaimableVerdict(*item);
    victims[count++] = CompressedRef(ref);
    return Verdict::kTake;
  }
  CompressedRef victims[kEvictionChunk];
  size_t count = 0;

 private:
  const SlabTable& table_;
};

}  // namespace

CompressedRef Cache::obtainSlot(uint32_t tier, uint32_t pool, uint32_t classId, bool background) {
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
    evictFrom(ac, 1, &ref, background);
    if (!ref) ref = ac.popFree();  // freed by a reader's release or another thread
  }
  return ref;
}

size_t Cache::evictFrom(AllocationClass& ac, size_t n, CompressedRef* reuse, bool background) {
  const uint32_t tier = ac.tier();
  const bool demote = config_.demotion.enabled && tier + 1 < allocs_.size();
  size_t done = 0;
  while (done < n) {
    MoveClaimVisitor visitor(*table_);
    if (ac.policy().evict(std::min(n - done, kEvictionChunk), kEvictionMaxScan, visitor) == 0) break;
    for (size_t i = 0; i < visitor.count; ++i) {
      const CompressedRef ref = visitor.victims[i];
      Item* item = table_->item(ref);
      bool moved = false;
      if (demote) {
        const CompressedRef dst = obtainSlot(tier + 1, ac.pool(), ac.id(), background);
        moved = dst && copyAndSwap(item, ref, dst);
      }
      if (moved) {
        ac.counters().demotions.fetch_add(1, std::memory_order_relaxed);
      } else {
        index_->unlinkExact(ref, hashKey(item->key()));  // the last tier, or no room below: drop
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

bool Cache::copyAndSwap(Item* src, CompressedRef srcRef, CompressedRef dst) {
  Item* copy = table_->item(dst);
  copy->init(src->key(), src->valueSize());
  copy->copyMetaFrom(*src);
  std::memcpy(copy->valueData(), src->valueData(), src->valueSize());
  // Payload durable before replaceExact commits it (persistent tiers only).
  if (table_->persistent(dst)) persistence_->persistPayload(copy, dst);
  const bool swapped = index_->replaceExact(srcRef, dst, copy, hashKey(src->key()));
  if (swapped) {
    table_->owner(dst)->policy().add(dst.raw());
  } else {
    counters_->movesAborted.fetch_add(1, std::memory_order_relaxed);
  }
  if (copy->releaseRef()) freeOwned(dst);  // not published: back to the free list
  return swapped;
}

void Cache::noteLowerTierHit(Item* item, CompressedRef ref) {
  // Under durable_sets an item stays in its persistent tier: moving it up
  // would take the only durable copy away (DRAM copies are not built yet).
  if (config_.persistence.durable_sets && table_->persistent(ref)) return;
  if (item->addLowerTierHit() != config_.promotion.hits) return;
  counters_->promotionCandidates.fetch_add(1, std::memory_order_relaxed);
  if (!config_.promotion.background) {
    promote(item, ref);
  } else if (movers_->queue.push(item->key())) {
    movers_->promoter->wake();
  } else {
    counters_->promotionQueueDropped.fetch_add(1, std::memory_order_relaxed);
    item->clearLowerTierHits();
  }
}

bool Cache::promote(Item* item, CompressedRef ref) {
  const uint32_t tier = table_->tierOf(ref);
  if (tier == 0) {
    item->clearLowerTierHits();
    return false;
  }
  AllocationClass& src = *table_->owner(ref);
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
    counters_->promotionsNoRoom.fetch_add(1, std::memory_order_relaxed);
    item->clearLowerTierHits();
    return false;
  }
  if (!movers_->limiter.tryAcquire()) {
    counters_->promotionsRateLimited.fetch_add(1, std::memory_order_relaxed);
    item->clearLowerTierHits();
    return false;
  }
  const CompressedRef dst = upper.allocateSlot(src.pool(), src.id());
  if (!dst) {
    counters_->promotionsNoRoom.fetch_add(1, std::memory_order_relaxed);
    item->clearLowerTierHits();
    return false;
  }
  // Out of the lower tier's list first, so no evictor picks it mid-copy; a
  // false here means it is not listed yet (insert in flight) or is being
  // moved by someone else: leave it.
  // Every early return clears the hit count: noteLowerTierHit fires only
  // when the count reaches `hits`, so a count left there never fires again.
  if (!item->tryMarkMoving(true)) {
    item->clearLowerTierHits();
    up.pushFree(dst);
    return false;
  }
  if (!src.policy().remove(ref.raw())) {
    item->clearLowerTierHits();
    if (item->finishMove()) freeOwned(ref);
    up.pushFree(dst);
    return false;
  }
  const bool moved = copyAndSwap(item, ref, dst);
  if (moved) src.counters().promotions.fetch_add(1, std::memory_order_relaxed);
  if (item->finishMove()) freeOwned(ref);
  return moved;
}

size_t Cache::flatClassIndex(const AllocationClass& ac) const {
  const SlabAllocator& a = *allocs_.front();
  return (static_cast<size_t>(ac.tier()) * a.poolCount() + ac.pool()) * a.classCount() + ac.id();
}

void Cache::wakeEvictor(const AllocationClass& ac) {
  auto& evictors = movers_->evictors;
  if (!evictors.empty()) evictors[flatClassIndex(ac) % evictors.size()]->wake();
}

void Cache::startBackgroundWorkers() {
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
      movers_->evictors.push_back(std::make_unique<BackgroundEvictor>(
          movers_->target, std::move(strategy), i, be.threads, std::chrono::milliseconds(be.interval_ms)));
    }
  }
  const PromotionConfig& pc = config_.promotion;
  if (pc.enabled && pc.background && tiers_.size() > 1) {
    movers_->promoter = std::make_unique<BackgroundPromoter>(movers_->target, pc.max_batch,
                                                             std::chrono::milliseconds(pc.interval_ms));
  }
  for (auto& e : movers_->evictors) e->start();
  if (movers_->promoter) movers_->promoter->start();
}

// ---- the cache as the background workers see it ----

size_t CacheBackground::classCount() const {
  const SlabAllocator& a = *cache_.allocs_.front();
  return cache_.allocs_.size() * a.poolCount() * a.classCount();
}

AllocationClass& CacheBackground::classAt(size_t cls) const {
  const SlabAllocator& first = *cache_.allocs_.front();
  const size_t perTier = first.poolCount() * first.classCount();
  SlabAllocator& a = *cache_.allocs_[cls / perTier];
  return a.cls(static_cast<uint32_t>(cls % perTier / first.classCount()), static_cast<uint32_t>(cls % first.classCount()));
}

ClassUsage CacheBackground::usage(size_t cls) const {
  const AllocationClass& ac = classAt(cls);
  ClassUsage u;
  // The last tier of several only drops: keeping it partly empty would cost
  // hit ratio and buy nothing, since demotions into it evict as they go (in
  // the background thread when a background evictor is demoting).
  if (cache_.allocs_.size() > 1 && ac.tier() + 1 == cache_.allocs_.size()) return u;
  u.capacity = static_cast<int64_t>(ac.slabCount() * ac.slotsPerSlab());
  u.free = static_cast<int64_t>(ac.freeSlots());
  u.canGrow = cache_.allocs_[ac.tier()]->canGrow(ac.pool());
  return u;
}

size_t CacheBackground::evictBatch(size_t cls, size_t n) { return cache_.evictFrom(classAt(cls), n, nullptr, true); }

size_t CacheBackground::promoteBatch(size_t n) {
  std::vector<std::string> keys;
  cache_.movers_->queue.popBatch(n, keys);
  size_t moved = 0;
  for (const std::string& key : keys) {
    Item* item = nullptr;
    const CompressedRef ref = cache_.index_->acquire(key, cache_.hashKey(key), item);
    if (!ref) continue;
    if (cache_.promote(item, ref)) ++moved;
    cache_.release(item, ref);
  }
  return moved;
}

}  // namespace tiercache
