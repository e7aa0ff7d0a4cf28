// Moving items between tiers: demotion on eviction, promotion of hot items,
// and the movers' side of the background workers. See docs/design.md,
// "Movers".
#include <algorithm>
#include <new>
#include "movers.h"

#include <chrono>
#include <cstring>

#include "access_index.h"
#include "cache_persistence.h"
#include "expiry.h"
#include "flash_tier.h"
#include "item.h"
#include "slab_allocator.h"

namespace tiercache {

namespace {

// Candidates one policy-lock hold may look at beyond the batch (pinned ones
// are skipped).
constexpr size_t kEvictionMaxScan = 64;
// Evictions an allocation tries before it fails (every candidate pinned).
constexpr int kEvictionAttempts = 4;
// An evictor whose full look found nothing to do looks again less and less
// often, down to this (a told class is served at once regardless).
constexpr uint32_t kIdleIntervalMs = 1000;
// Donors a rebalance tries before it gives up (each try scans up to
// AllocationClass::kReleaseTries slabs).
constexpr size_t kRebalanceDonorTries = 4;
// A class that could use another's idle slab checks for one this often.
constexpr uint32_t kRebalanceCheckMs = 10;

}  // namespace

// The verdict for a candidate that could not be claimed. A reader's pin may
// last for seconds: that item leaves the cold end (kRotate), or a few
// long-lived handles on the coldest items would fill every scan window. One
// that another thread is moving or freeing stays put (kSkip).
EvictionVisitor::Verdict unclaimableVerdict(const Item& item) {
  const uint32_t s = item.state.load(std::memory_order_relaxed);
  const bool busy = s & (Item::kMoving | Item::kExclusive | Item::kFreeSlot);
  return (s & Item::kRefMask) && !busy ? EvictionVisitor::Verdict::kRotate : EvictionVisitor::Verdict::kSkip;
}

// One batch of victims of a class, claimed in one policy-lock hold (the
// background evictor's in holds of kClaimChunk).
struct Movers::Batch {
  CompressedRef src[kMaxBatch];
  bool drop[kMaxBatch];        // judged at claim time: drop, do not move
  CompressedRef dst[kMaxBatch];  // lower-tier slot, or null: drop
  uint64_t hash[kMaxBatch];
  bool swapped[kMaxBatch];
  bool dead[kMaxBatch];  // expired or flushed: dropped, reported as expired
  size_t count = 0;
};

// Claims unpinned items for a move (kMoving) at the cold end of a policy.
// visit() is the one place where a claimed item is judged: move it down, or
// drop it (the last tier, no demotion, or an item not worth keeping).
class Movers::ClaimVisitor final : public EvictionVisitor {
 public:
  // live: what counts as dead now; deadOnly: claim dead items only (the
  // first pass of a walk, so dead items go before live ones).
  ClaimVisitor(const SlabTable& table, Batch& batch, bool demote, bool demoteRejected, const LiveCheck& live,
               bool deadOnly)
      : table_(table), batch_(batch), demote_(demote), demoteRejected_(demoteRejected), live_(live),
        deadOnly_(deadOnly) {}
  Verdict visit(RefWord ref) override { return claim(ref, false); }
  // eviction.demote_rejected: what the policy turned away may skip the tier below.
  Verdict visitRejected(RefWord ref) override { return claim(ref, !demoteRejected_); }

 private:
  Verdict claim(RefWord ref, bool dropIt) {
    Item* item = table_.item(CompressedRef(ref));
    // Unclaimed, the answer is a hint: a set may rewrite the item in place
    // (new value, deadline and seq) until the claim below.
    if (deadOnly_ && !live_.dead(*item)) return Verdict::kSkip;
    if (!item->tryMarkMoving(false)) return unclaimableVerdict(*item);
    if (HazardPins::isProtected(item)) {
      // A lock-free reader holds it (hazard_pins.h): pinned, as a count
      // would say. Should a remove have raced into the claim, the item is
      // ours to free: deferred, since the policy lock is held here.
      if (item->finishMove()) table_.owner(CompressedRef(ref))->deferFree(CompressedRef(ref));
      return Verdict::kRotate;
    }
    // A dead item would waste a lower-tier slot: it is dropped, never moved.
    // Judged again under the claim; an item a rewrite revived between the
    // two looks leaves as a live one (the dead-only pass then evicts one
    // live item early: rare, and an eviction is always allowed).
    const bool dead = live_.dead(*item);
    TC_DCHECK(batch_.count < kMaxBatch);  // a policy takes at most what it was asked
    const size_t i = batch_.count++;
    batch_.src[i] = CompressedRef(ref);
    batch_.dead[i] = dead;
    batch_.drop[i] = !demote_ || dropIt || dead;
    return Verdict::kTake;
  }

  const SlabTable& table_;
  Batch& batch_;
  const bool demote_;
  const bool demoteRejected_;
  const LiveCheck& live_;
  const bool deadOnly_;
};


// ---- promotion queue and rate limiter ----

// False when full, or when the key cannot be copied (out of memory): the
// caller then clears the item's hit count, or it could never be promoted.
bool PromotionQueue::push(std::string_view key) {
  std::lock_guard<std::mutex> g(mu_);
  if (keys_.size() >= capacity_) return false;
  try {
    keys_.emplace_back(key);
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

void PromotionQueue::popBatch(size_t n, std::vector<std::string>& out) {
  out.reserve(out.size() + n);  // before popping: a key is never lost between the two
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
      fate_(parts.fate),
      flash_(parts.flash),
      queue_(parts.config.promotion.queue_size),
      limiter_(parts.config.promotion.max_per_sec) {
  const BackgroundEvictionConfig& be = config_.background_eviction;
  consumedMark_ = std::make_unique<std::atomic<uint64_t>[]>(classCount());
  if (be.enabled) {
    // Allocations that leave a class below this tell its evictor at once.
    for (auto& a : allocs_) {
      for (uint32_t p = 0; p < a->poolCount(); ++p) {
        for (uint32_t c = 0; c < a->classCount(); ++c) {
          if (be.strategy == EvictorStrategyKind::kKeepFree) {
            a->cls(p, c).setLowWatermark(0, be.keep_free);
          } else {
            a->cls(p, c).setLowWatermark(be.low_watermark);
          }
        }
      }
    }
    for (uint32_t i = 0; i < be.threads; ++i) {
      std::unique_ptr<EvictionStrategy> strategy;
      if (be.strategy == EvictorStrategyKind::kKeepFree) {
        strategy = std::make_unique<KeepFreeStrategy>(be.keep_free, be.max_batch);
      } else {
        strategy = std::make_unique<FreeThresholdStrategy>(be.low_watermark, be.high_watermark, be.min_batch,
                                                           be.max_batch);
      }
      evictors_.push_back(std::make_unique<BackgroundEvictor>(
          *this, std::move(strategy), i, be.threads, std::chrono::milliseconds(be.interval_ms),
          std::chrono::milliseconds(kIdleIntervalMs), be.yield_to_application, be.available_cores));
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
  // Below the low watermark (or out of slots) with no new slab to come: the
  // evictor of this class is told now, not at its next poll. (popFree
  // computes the watermark only for a class an evictor serves.)
  const bool tellable = !background && served(ac);
  bool low = false;
  CompressedRef ref = ac.popFree(tellable ? &low : nullptr);
  // Replaced items whose free was deferred are this class's first free slots.
  if (!ref) ref = ac.drainDeferred() ? ac.popFree() : ac.popFreeAfterDrains();
  // Urgent (a wake-up now) only when the class is dry even so.
  if (tellable && (low || !ref) && !a.mayGrow(pool)) wakeEvictor(ac, !ref);
  if (ref || (a.growClass(pool, classId) && (ref = ac.popFree()))) return ref;
  ac.counters().slow_allocs.fetch_add(1, std::memory_order_relaxed);
  if (config_.rebalance.enabled) {
    // A class without a slab cannot evict: it must get one. Otherwise look
    // for another class's idle slab now and then (a look locks every class
    // of the pool), not on every miss; under marginal-hits the background
    // rebalancer moves idle slabs too, and a slab it just gave (free until
    // filled) must not be taken back here.
    const bool starving = ac.slabless();
    const bool lookIdle = config_.rebalance.strategy != "marginal-hits" && ac.rebalanceCheckDue(kRebalanceCheckMs);
    if ((starving || lookIdle) && rebalance(a, pool, classId, !starving)) {
      ref = a.allocateSlot(pool, classId);
      if (ref) return ref;
    }
  }
  // The same batch code as the evictor's, with a small batch: one slot comes
  // back here, the rest go to the free list for the next allocations.
  // The batch is at most 1/64 of the class, so a class of few large slots
  // is never emptied to make room for one item. (The slab count is read
  // without the class lock: it sizes a batch.)
  const size_t batch =
      background ? 1 : std::clamp<size_t>(ac.slabCountHint() * ac.slotsPerSlab() / 64, 1, kForegroundBatch);
  for (int i = 0; !ref && i < kEvictionAttempts; ++i) {
    SlotSink sink{&ref, 1, 0};
    evictInto(ac, batch, &sink, background);
    if (!ref) ref = ac.popFree();  // freed by a reader's release or another thread
  }
  return ref;
}

size_t Movers::evict(AllocationClass& ac, size_t n, bool background) { return evictInto(ac, n, nullptr, background); }

size_t Movers::obtainSlots(AllocationClass& lower, size_t n, CompressedRef* out, bool background) {
  SlabAllocator& a = *allocs_[lower.tier()];
  size_t got = a.allocateSlots(lower.pool(), lower.id(), n, out);
  if (got < n && lower.drainDeferred()) got += lower.allocateSlots(n - got, out + got);
  TC_DCHECK(got <= n);  // every n - got below stays positive
  if (got == n) return got;
  if (!background && served(lower)) wakeEvictor(lower, true);
  lower.counters().slow_allocs.fetch_add(1, std::memory_order_relaxed);
  if (config_.rebalance.enabled && lower.slabless() && rebalance(a, lower.pool(), lower.id(), false)) {
    got += a.allocateSlots(lower.pool(), lower.id(), n - got, out + got);
  }
  // Full: evict a batch there first; its freed slots come straight here.
  for (int i = 0; got < n && i < kEvictionAttempts; ++i) {
    SlotSink sink{out + got, n - got, 0};
    evictInto(lower, n - got, &sink, background);
    got += sink.got;
    if (got < n) got += lower.allocateSlots(n - got, out + got);
    TC_DCHECK(got <= n);
    if (sink.got == 0) break;  // nothing evictable (all pinned): drop the rest
  }
  return got;
}

size_t Movers::evictInto(AllocationClass& ac, size_t n, SlotSink* sink, bool background) {
  const uint32_t tier = ac.tier();
  const bool demote = config_.demotion.enabled && tier + 1 < allocs_.size();
  AllocationClass* lower = demote ? &allocs_[tier + 1]->cls(ac.pool(), ac.id()) : nullptr;
  size_t done = 0;
  Batch b;
  // Dead items in the scan window go before live ones (once any item has
  // had a deadline or a flush happened); one clock read per walk.
  bool deadFirst = fate_.deadlinesSeen();
  const LiveCheck live = deadFirst ? fate_.liveCheck() : LiveCheck{};
  while (done < n) {
    // 1. Claim up to a batch at the cold end: one policy-lock hold, or
    //    one per kClaimChunk items for the evictor.
    b.count = 0;
    const size_t want = std::min(n - done, kMaxBatch);
    ClaimVisitor visitor(table_, b, demote, config_.eviction.demote_rejected, live, deadFirst);
    // The evictor claims in short holds: a foreground set adding to this
    // policy waits for at most kClaimChunk claims, not a whole batch. A
    // short chunk means the scan window ran out of claimable items: the
    // batch ends there, as the foreground's single claim does.
    const size_t chunk = background ? kClaimChunk : want;
    size_t ask = 0;
    size_t got = 0;
    do {
      TC_DCHECK(b.count < want);  // want - b.count never wraps
      ask = std::min(want - b.count, chunk);
      got = ac.policy().evict(ask, ask + kEvictionMaxScan, visitor);
      TC_DCHECK(got <= ask);
    } while (got == ask && b.count < want);
    TC_DCHECK(b.count <= want);
    for (size_t i = 0; i < b.count; ++i) {
      // A victim is this class's, and left its policy's list when claimed.
      TC_DCHECK(table_.owner(b.src[i]) == &ac);
      TC_DCHECK(!(table_.item(b.src[i])->hook.meta.load(std::memory_order_relaxed) & EvictionHook::kInList));
    }
    if (b.count == 0) {
      if (!deadFirst) break;
      deadFirst = false;  // no dead item in the window: live ones now
      continue;
    }
    done += moveBatch(ac, lower, b, sink, background);
    TC_DCHECK(done <= n);  // n - done never wraps
  }
  return done;
}

size_t Movers::moveBatch(AllocationClass& ac, AllocationClass* lower, Batch& b, SlotSink* sink, bool background) {
  const size_t k = b.count;
  TC_DCHECK(k > 0 && k <= kMaxBatch);
  // 2. Lower-tier slots for the items to move: one class-lock hold when
  //    there are enough free, else a batch evicted there first.
  size_t moving = 0;
  for (size_t i = 0; i < k; ++i) moving += !b.drop[i];
  CompressedRef slots[kMaxBatch];
  TC_DCHECK(moving == 0 || lower != nullptr);  // only a demoting class moves items
  const size_t got = moving ? obtainSlots(*lower, moving, slots, background) : 0;
  TC_DCHECK(got <= moving);
  size_t next = 0;
  for (size_t i = 0; i < k; ++i) {
    b.dst[i] = CompressedRef();
    if (b.drop[i]) continue;
    if (next < got) {
      TC_DCHECK(table_.owner(slots[next]) == lower);  // the same class one tier down
      b.dst[i] = slots[next++];
    } else {
      b.drop[i] = true;  // no room below (all pinned there): dropped instead
    }
  }

  // 3. Copy, prefetching the next source and destination while copying
  //    this one. A claimed (kMoving) source cannot be rewritten in place,
  //    so a pinned reader and the copy see the same bytes.
  for (size_t i = 0; i < k; ++i) {
    if (i + 1 < k) {
      __builtin_prefetch(table_.item(b.src[i + 1]));
      if (!b.drop[i + 1]) __builtin_prefetch(table_.item(b.dst[i + 1]), 1);
    }
    const Item* src = table_.item(b.src[i]);
    b.hash[i] = hash_(src->key());
    if (b.drop[i]) continue;
    Item* copy = table_.item(b.dst[i]);
    copy->init(src->key(), src->valueSize());
    copy->copyMetaFrom(*src);
    std::memcpy(copy->valueData(), src->valueData(), src->valueSize());
    // Payload durable before replaceExact commits it (persistent tiers only).
    if (table_.persistent(b.dst[i])) persistence_.persistPayload(copy, b.dst[i]);
  }

  // 4. Publish: each copy replaces its source in the index (one stripe lock
  //    each, never with a class or policy lock held); a source removed or
  //    replaced meanwhile is not resurrected. Drops are unlinked.
  RefWord added[kMaxBatch];
  size_t nAdded = 0, moved = 0, aborted = 0;
  for (size_t i = 0; i < k; ++i) {
    if (b.drop[i]) {
      if (!b.dead[i] && demoteToFlash(ac, b.src[i], b.hash[i])) continue;  // still in the cache, on flash
      // Unlinked here, reported here (kMoving keeps the item readable).
      if (index_.unlinkExact(b.src[i], b.hash[i])) fate_.notifyDropped(*table_.item(b.src[i]), b.src[i], b.dead[i]);
      continue;
    }
    b.swapped[i] = index_.replaceExact(b.src[i], b.dst[i], table_.item(b.dst[i]), b.hash[i]);
    if (b.swapped[i]) {
      added[nAdded++] = b.dst[i].raw();
      ++moved;
    } else {
      ++aborted;
    }
  }
  // 5. The copies join the lower tier's policy: one policy-lock hold.
  if (nAdded) lower->policy().addBatch(added, nAdded);

  // 6. Our reference on each copy goes; an unpublished copy (source gone
  //    meanwhile) is ours again and goes back to the lower free list.
  CompressedRef lowerFree[kMaxBatch];
  size_t nLowerFree = 0;
  for (size_t i = 0; i < k; ++i) {
    if (b.drop[i]) continue;
    if (!table_.item(b.dst[i])->releaseRef()) continue;
    if (b.swapped[i]) {
      freeOwned(b.dst[i]);  // published, then removed before we let go: in the list
    } else {
      lowerFree[nLowerFree++] = b.dst[i];
    }
  }
  if (nLowerFree) lower->pushFreeBatch(lowerFree, nLowerFree);

  // 7. The sources end their move; each one nobody pins is ours to free
  //    (they left the policy when claimed): into the caller's sink first,
  //    the rest onto the free list in one class-lock hold. A source a reader
  //    still pins is freed by that reader's release.
  CompressedRef srcFree[kMaxBatch];
  size_t nSrcFree = 0;
  for (size_t i = 0; i < k; ++i) {
    if (!table_.item(b.src[i])->finishMove()) continue;
    TC_DCHECK(!sink || sink->got <= sink->want);
    if (sink && sink->got < sink->want && !HazardPins::isProtected(table_.item(b.src[i]))) {
      sink->out[sink->got++] = b.src[i];
    } else {
      srcFree[nSrcFree++] = b.src[i];
    }
  }
  // The evictor's frees of the insertion tier go to the free list's end
  // (AllocationClass::freeTail_): the application threads fill them.
  ac.pushFreeBatch(srcFree, nSrcFree, background && ac.tier() == 0);

  ClassCounters& c = ac.counters();
  if (moved) c.demotions.fetch_add(moved, std::memory_order_relaxed);
  if (aborted) counters_.moves_aborted.fetch_add(aborted, std::memory_order_relaxed);
  (background ? c.background_evictions : c.evictions).fetch_add(k, std::memory_order_relaxed);
  return k;
}

bool Movers::demoteToFlash(const AllocationClass& ac, CompressedRef ref, uint64_t hash) {
  if (!flash_ || ac.tier() + 1 != allocs_.size()) return false;
  // Claimed (kMoving): nobody rewrites it in place while it is copied out.
  const Item& item = *table_.item(ref);
  const bool hit = (item.state.load(std::memory_order_relaxed) & Item::kHitMask) != 0;
  return flash_->demote(
      hash, item.key(), item.value(), item.flags, item.expiry, hit,
      [&] { return (item.state.load(std::memory_order_acquire) & Item::kAccessible) != 0; },
      [&] { return index_.unlinkExact(ref, hash); });
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
    counters_.moves_aborted.fetch_add(1, std::memory_order_relaxed);
  }
  if (copy->releaseRef()) freeOwned(dst);  // not published: back to the free list
  return swapped;
}

void Movers::freeOwned(CompressedRef ref) { table_.owner(ref)->freeOwned(ref); }

bool Movers::rebalance(SlabAllocator& a, uint32_t pool, uint32_t classId, bool idleOnly) {
  // A donor whose slabs all hold a pin gives nothing now: try the next one
  // rather than failing (issue 9, item 3). Allocations happen before any
  // claim: an exception cannot strand claimed items.
  for (uint32_t donorId : a.pickDonors(pool, classId, idleOnly, kRebalanceDonorTries)) {
    if (moveSlabIn(a, pool, donorId, classId)) return true;
  }
  return false;
}

bool Movers::moveSlab(uint32_t tier, uint32_t pool, uint32_t donor, uint32_t receiver) {
  return moveSlabIn(*allocs_[tier], pool, donor, receiver);
}

bool Movers::moveSlabIn(SlabAllocator& a, uint32_t pool, uint32_t donorId, uint32_t classId) {
  const uint32_t slab = emptySlabOf(a.cls(pool, donorId));
  if (slab == AllocationClass::kNoSlab) return false;
  a.reassignSlab(slab, pool, classId);
  a.cls(pool, classId).counters().slabs_gained.fetch_add(1, std::memory_order_relaxed);
  counters_.rebalanced_slabs.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool Movers::retireSlab(uint32_t tier, uint32_t pool, uint32_t classId) {
  SlabAllocator& a = *allocs_[tier];
  const uint32_t slab = emptySlabOf(a.cls(pool, classId));
  if (slab == AllocationClass::kNoSlab) return false;
  a.retireSlab(slab, pool);
  return true;
}

uint32_t Movers::emptySlabOf(AllocationClass& donor) {
  donor.drainDeferred();  // a deferred item would keep its slab from release
  std::vector<CompressedRef> claimed;
  const uint32_t slab = donor.releaseSlab(claimed);
  if (slab == AllocationClass::kNoSlab) return slab;
  evictClaimed(donor, claimed);
  // Every item of the slab is unlinked now; a lock-free lookup that read
  // one of their refs earlier may still read its header or pin it. The
  // caller cuts the slab anew (or discards it) only after those ended.
  index_.waitForReaders();
  donor.counters().slabs_lost.fetch_add(1, std::memory_order_relaxed);
  return slab;
}

void Movers::evictClaimed(AllocationClass& donor, const std::vector<CompressedRef>& claimed) {
  const uint32_t tier = donor.tier();
  // As eviction does: an item leaves tier i for tier i+1 when it can; a
  // dead one is dropped.
  const bool demote = config_.demotion.enabled && tier + 1 < allocs_.size();
  const LiveCheck live = fate_.deadlinesSeen() ? fate_.liveCheck() : LiveCheck{};
  uint64_t demoted = 0;
  for (CompressedRef ref : claimed) {
    Item* item = table_.item(ref);
    TC_DCHECK(table_.owner(ref) == &donor);  // releaseSlab claims the donor's items only
    TC_DCHECK(item->state.load(std::memory_order_relaxed) & Item::kExclusive);  // claimed, out of the list
    TC_DCHECK(!(item->hook.meta.load(std::memory_order_relaxed) & EvictionHook::kInList));
    const bool dead = live.dead(*item);
    bool moved = false;
    if (demote && !dead && (item->state.load(std::memory_order_acquire) & Item::kAccessible)) {
      const CompressedRef dst = obtainSlotIn(tier + 1, donor.pool(), donor.id(), false);
      moved = dst && copyAndSwap(item, ref, dst);
    }
    if (moved) {
      ++demoted;
      continue;
    }
    // A claimed item cannot be pinned, so a racing remove or replace that
    // unlinked it left the report to us: it is reported here either way.
    index_.unlinkExact(ref, hash_(item->key()));
    fate_.notifyDropped(*item, ref, dead);
  }
  donor.counters().evictions.fetch_add(claimed.size(), std::memory_order_relaxed);
  donor.counters().demotions.fetch_add(demoted, std::memory_order_relaxed);
}

// ---- promotion ----

void Movers::noteLowerTierHit(Item* item, CompressedRef ref) {
  // Under durable_sets an item stays in its persistent tier: moving it up
  // would take the only durable copy away (DRAM copies are not built yet).
  if (config_.persistence.durable_sets && table_.persistent(ref)) return;
  if (item->addLowerTierHit() != config_.promotion.hits) return;
  counters_.promotion_candidates.fetch_add(1, std::memory_order_relaxed);
  if (!config_.promotion.background) {
    promote(item, ref);
  } else if (queue_.push(item->key())) {
    promoter_->wake();
  } else {
    counters_.promotion_queue_dropped.fetch_add(1, std::memory_order_relaxed);
    item->clearLowerTierHits();
  }
}

bool Movers::promote(Item* item, CompressedRef ref) {
  // Every early return clears the hit count: noteLowerTierHit fires only
  // when the count reaches `hits`, so a count left there never fires again.
  const uint32_t tier = table_.tierOf(ref);
  if (tier == 0 || (fate_.deadlinesSeen() && fate_.liveCheck().dead(*item))) {  // dead items are never promoted
    item->clearLowerTierHits();
    return false;
  }
  // Checked again at move time, not only when the key was queued: the key
  // may have been set durably since, into the persistent tier.
  if (config_.persistence.durable_sets && table_.persistent(ref)) {
    item->clearLowerTierHits();
    return false;
  }
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
    counters_.promotions_no_room.fetch_add(1, std::memory_order_relaxed);
    item->clearLowerTierHits();
    return false;
  }
  if (!limiter_.tryAcquire()) {
    counters_.promotions_rate_limited.fetch_add(1, std::memory_order_relaxed);
    item->clearLowerTierHits();
    return false;
  }
  const CompressedRef dst = upper.allocateSlot(src.pool(), src.id());
  if (!dst) {
    counters_.promotions_no_room.fetch_add(1, std::memory_order_relaxed);
    item->clearLowerTierHits();
    return false;
  }
  // Out of the lower tier's list first, so no evictor picks it mid-copy; a
  // false here means it is not listed yet (insert in flight) or is being
  // moved by someone else: leave it.
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

// ---- background workers ----

size_t Movers::flatClassIndex(const AllocationClass& ac) const {
  const SlabAllocator& a = *allocs_.front();
  return (static_cast<size_t>(ac.tier()) * a.poolCount() + ac.pool()) * a.classCount() + ac.id();
}

bool Movers::served(const AllocationClass& ac) const {
  // Background eviction serves the tiers that demote (or a single tier).
  return !evictors_.empty() && (allocs_.size() == 1 || ac.tier() + 1 < allocs_.size());
}

void Movers::wakeEvictor(const AllocationClass& ac, bool urgent) {
  if (evictors_.empty()) return;
  const size_t cls = flatClassIndex(ac);
  BackgroundEvictor& e = *evictors_[cls % evictors_.size()];
  // Standing aside, it would not serve the class: the allocation evicts
  // for itself, and spares itself the wake-up.
  if (!e.yielding()) e.tell(cls, urgent);
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
  AllocationClass& ac = classAt(cls);
  // Each look frees the class's deferred items in one batch (every class,
  // the last tier's too: replaced items there are only freed here or by an
  // allocation that finds no free slot).
  ac.drainDeferred();
  // And applies the hits the class's policy buffered (LRU's pending moves),
  // so that they are this thread's work, not the application's.
  ac.policy().applyPendingAccesses(true);
  ClassUsage u;
  // The last tier of several only drops: keeping it partly empty would cost
  // hit ratio and buy nothing, since demotions into it evict as they go (in
  // the background thread when a background evictor is demoting).
  if (allocs_.size() > 1 && ac.tier() + 1 == allocs_.size()) return u;
  u.capacity = static_cast<int64_t>(ac.slabCount() * ac.slotsPerSlab());
  u.free = static_cast<int64_t>(ac.freeSlots());
  u.canGrow = allocs_[ac.tier()]->mayGrow(ac.pool());
  // Slots taken since the last look (each class has one evictor, so one
  // writer of its mark).
  const uint64_t allocated = ac.allocSuccesses();
  std::atomic<uint64_t>& mark = consumedMark_[cls];
  u.consumed = static_cast<int64_t>(std::min<uint64_t>(allocated - mark.load(std::memory_order_relaxed), 1ull << 40));
  mark.store(allocated, std::memory_order_relaxed);
  return u;
}

size_t Movers::evictBatch(size_t cls, size_t n) { return evictInto(classAt(cls), n, nullptr, true); }

// LRU's hits stop leaving most of a full ring of moves to the evictor's
// looks (which usage() turns back on).
void Movers::standAside(size_t cls) { classAt(cls).policy().backgroundWorkerStopped(); }

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
    to.yielded_runs += w.yields;
  };
  for (const auto& e : evictors_) addWorker(s.background_evictor, e->stats());
  if (promoter_) addWorker(s.promoter, promoter_->stats());
  counters_.copyTo(s);
}

}  // namespace tiercache
