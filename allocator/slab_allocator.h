// Slabs, pools and allocation classes.
//
// SlabTable numbers the slabs of all tiers in one space (tier t owns a
// contiguous range) and turns a CompressedRef into an Item* with one table
// read: base + slot * allocSize. It is the HookResolver the eviction
// policies use.
//
// SlabAllocator serves one tier. Each pool may own up to `quota` of the
// tier's slabs (its share); within a pool, each allocation class owns
// slabs, carves them lazily (so untouched memory costs no RSS) and keeps a
// free list threaded through freed slots. An AllocationClass has one mutex
// for its free list and slabs, and its own eviction policy with its own list
// lock. Lock order: class lock -> policy lock; the index stripe locks are
// never taken while either is held.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "../common/clock.h"
#include "../eviction/eviction_policy.h"
#include "../tiers/memory_tier.h"
#include "../tiers/pool_records.h"
#include "cache_config.h"
#include "cache_stats.h"
#include "compressed_ref.h"
#include "dcheck.h"
#include "hazard_pins.h"
#include "item.h"
#include "sharded_counter.h"

namespace tiercache {

class AllocationClass;

struct SlabInfo {
  std::byte* base = nullptr;
  std::atomic<uint32_t> allocSize{0};          // 0 while the slab is unassigned
  std::atomic<AllocationClass*> owner{nullptr};  // class that owns it
  uint32_t tier = 0;
  bool persistent = false;  // its tier keeps items across restarts
};

class SlabTable final : public HookResolver {
 public:
  SlabTable(uint64_t slabSize, uint32_t slotBits, uint32_t totalSlabs);

  uint64_t slabSize() const { return slabSize_; }
  uint32_t slotBits() const { return slotBits_; }
  uint32_t slabCount() const { return static_cast<uint32_t>(slabs_.size()); }
  SlabInfo& slab(uint32_t id) { return slabs_[id]; }
  const SlabInfo& slab(uint32_t id) const { return slabs_[id]; }

  Item* item(CompressedRef ref) const {
    const SlabInfo& s = slabs_[ref.slab(slotBits_)];
    return reinterpret_cast<Item*>(s.base + static_cast<uint64_t>(ref.slot(slotBits_)) *
                                                 s.allocSize.load(std::memory_order_relaxed));
  }
  AllocationClass* owner(CompressedRef ref) const {
    return slabs_[ref.slab(slotBits_)].owner.load(std::memory_order_relaxed);
  }
  uint32_t tierOf(CompressedRef ref) const { return slabs_[ref.slab(slotBits_)].tier; }
  bool persistent(CompressedRef ref) const { return slabs_[ref.slab(slotBits_)].persistent; }
  CompressedRef makeRef(uint32_t slab, uint32_t slot) const { return CompressedRef::make(slab, slot, slotBits_); }

  EvictionHook& hook(RefWord ref) const override { return item(CompressedRef(ref))->hook; }
  // XXH3 of the item's key with a fixed seed: the same key hashes the same
  // in every tier and across restarts (the ghost and sketch follow keys).
  uint64_t keyHash(RefWord ref) const override;
  // The same hash of a key not (or not yet) in an item.
  static uint64_t stableKeyHash(std::string_view key);

  uint64_t metadataBytes() const { return slabs_.size() * sizeof(SlabInfo); }

 private:
  uint64_t slabSize_;
  uint32_t slotBits_;
  std::vector<SlabInfo> slabs_;
};

// The live counters of a class (rows of the CLASS_*COUNTERS lists in
// cache_stats.h) but the allocation counts, which the allocator's tally
// keeps (AllocationClass::countSuccess); atomic, read by Cache::stats()
// from any thread.
struct ClassCounters {
#define TIERCACHE_ATOMIC_FIELD(name, help) std::atomic<uint64_t> name{0};
  TIERCACHE_CLASS_MOVE_COUNTERS(TIERCACHE_ATOMIC_FIELD)
  TIERCACHE_CLASS_COUNTERS(TIERCACHE_ATOMIC_FIELD)
#undef TIERCACHE_ATOMIC_FIELD
};

class AllocationClass {
 public:
  // tally: the allocator's, where this class counts its allocations in
  // counters tallyAt and tallyAt + 1, and its requested bytes in tallyAt + 2.
  AllocationClass(SlabTable& table, uint32_t tier, uint32_t pool, uint32_t id, uint32_t allocSize,
                  std::unique_ptr<EvictionPolicy> policy, ShardedTally& tally, size_t tallyAt);

  uint32_t tier() const { return tier_; }
  uint32_t pool() const { return pool_; }
  uint32_t id() const { return id_; }
  uint32_t allocSize() const { return allocSize_; }
  uint32_t slotsPerSlab() const { return slotsPerSlab_; }
  EvictionPolicy& policy() { return *policy_; }
  const EvictionPolicy& policy() const { return *policy_; }
  ClassCounters& counters() { return counters_; }
  const ClassCounters& counters() const { return counters_; }
  // Every allocation counts once, as a success or a failure (attempts are
  // their sum): per-thread cells, no locked instruction, one add.
  void countSuccess() { tally_.add(tallyAt_); }
  void countFailure() { tally_.add(tallyAt_ + 1); }
  uint64_t allocSuccesses() const { return tally_.load(tallyAt_); }
  // Bytes (Item::totalSize) of the class's published items, memcached's
  // mem_requested: the index adds an item's size when it publishes it and
  // takes it off when it unpublishes it (AccessIndex), an in-place rewrite
  // by the change. Per-thread cells, no locked instruction; a thread's cell
  // may go "negative" (wraps), the sum does not.
  static constexpr size_t kTallyPerClass = 3;
  void addRequested(int64_t bytes) { tally_.add(tallyAt_ + 2, static_cast<uint64_t>(bytes)); }
  uint64_t requestedBytes() const { return tally_.load(tallyAt_ + 2); }
  struct AllocCounts {
    uint64_t attempts, successes;
  };
  // Both from one read of each counter, so successes <= attempts.
  AllocCounts allocCounts() const {
    const uint64_t ok = allocSuccesses();
    return {ok + tally_.load(tallyAt_ + 1), ok};
  }

  // A free or never-used slot, or null. The slot's Item is uninitialised
  // except for state, which is not kFreeSlot any more. With belowLow, also
  // tells whether the class is left below its low watermark (see
  // setLowWatermark) with a full complement of slabs carved or not.
  CompressedRef popFree(bool* belowLow = nullptr);
  // Up to n slots as popFree gives them, in one lock hold; returns how many
  // were written to out.
  size_t allocateSlots(size_t n, CompressedRef* out);
  // Returns an exclusively owned slot to the free list; or, lock-free, to
  // the class's spare slot when that is empty (see spare_).
  void pushFree(CompressedRef ref);
  // Only the lock-free half of pushFree: true if the spare slot was empty
  // and now holds ref (an item already out of the eviction list); false
  // too while a lock-free reader pins it (the caller defers it).
  bool pushSpare(CompressedRef ref);
  // Only the lock-free half of popFree: the spare slot, or null.
  CompressedRef popSpare() {
    if (spare_.load(std::memory_order_relaxed) == CompressedRef::kNull) return CompressedRef();
    return CompressedRef(spare_.exchange(CompressedRef::kNull, std::memory_order_acquire));
  }
  // Returns n exclusively owned slots (no longer in the eviction list) to
  // the free list in one lock hold: at its head (taken first: the caller's
  // cache still holds them), or with atTail at its end, for slots another
  // thread will fill (see freeTail_).
  // Slots a lock-free reader still pins (hazard_pins.h) are deferred
  // (deferFree) instead, as pushFree and pushSpare do; returns how many
  // went to the free list.
  size_t pushFreeBatch(const CompressedRef* refs, size_t n, bool atTail = false);
  // Free share of the class (percent of its slots), or free slot count,
  // under which popFree reports belowLow; 0 and 0 (the default): never.
  // Set before other threads run.
  void setLowWatermark(double percent, uint64_t slots = 0) {
    lowWatermark_ = percent;
    lowSlots_ = slots;
  }
  // Frees an item the caller owns exclusively (see Item): out of the
  // eviction list if it is still a member, onto the free list. Membership
  // changes only under the list lock, and nobody adds or evicts an owned
  // item, so an item never listed (an insertOrReplace's new item whose
  // contents were copied over the old one) takes no list lock.
  void freeOwned(CompressedRef ref) {
    Item* item = table_.item(ref);
    TC_DCHECK(Item::isOwnedState(item->state.load(std::memory_order_relaxed)));
    if (item->hook.meta.load(std::memory_order_relaxed) & EvictionHook::kInList) policy_->remove(ref.raw());
    pushFree(ref);
  }
  // freeOwned later, in a batch: the item (exclusively owned, kExclusive,
  // maybe still in the eviction list) goes onto a lock-free list through
  // its chain link; drainDeferred() frees everything there with one
  // policy-lock and then one class-lock hold per 16 (never both at once),
  // and an allocation that finds the free list empty drains first. While
  // deferred an item is
  // unclaimable (kExclusive): eviction skips it, slab release skips its slab.
  void deferFree(CompressedRef ref);
  // Frees the deferred items (and moves the spare slot to the free list);
  // returns how many deferred items it freed (one a lock-free reader still
  // pins stays deferred).
  size_t drainDeferred();
  bool hasDeferred() const { return deferredHead_.load(std::memory_order_relaxed) != CompressedRef::kNull; }
  // After popFree and drainDeferred found nothing: waits while another
  // thread's drain still carries slots to the free list, and takes one.
  CompressedRef popFreeAfterDrains();
  // Takes a newly assigned slab (its allocSize and owner already set).
  void addSlab(uint32_t slab);
  // Takes a slab found in a persistent tier at start-up: fully carved; the
  // caller scans its slots and frees or publishes each.
  void adoptSlab(uint32_t slab);

  uint64_t slabCount() const;
  // Lock-free: the class owns no slab (a hint, exact once writers are quiet).
  bool slabless() const { return slabsHint_.load(std::memory_order_relaxed) == 0; }
  // Lock-free slabCount(), as a hint (sizing a batch, not bookkeeping).
  uint64_t slabCountHint() const { return slabsHint_.load(std::memory_order_relaxed); }
  uint64_t freeSlots() const;  // free list + uncarved
  // True at most once per intervalMs across all threads: rate-limits the
  // rebalancer's look for idle slabs from this class's slow path.
  bool rebalanceCheckDue(uint32_t intervalMs) {
    const uint32_t now = coarseNowMs();
    uint32_t last = lastRebalanceCheck_.load(std::memory_order_relaxed);
    return now - last >= intervalMs && lastRebalanceCheck_.compare_exchange_strong(last, now, std::memory_order_relaxed);
  }

  // Slab release for the rebalancer: under the class lock, takes a slab
  // out of service, claiming (kExclusive) every live item in it and
  // removing those from the policy. Slabs are tried most free slots first,
  // at most kReleaseTries of them; a slab holding a pinned or moving item is
  // skipped (its claims, if any, are undone: nothing is evicted for a slab
  // that is not released). On success the claimed refs are appended to
  // `claimed` (the caller demotes or unlinks them) and the slab id is
  // returned; kNoSlab when every slab tried holds a pin (`claimed` unchanged).
  static constexpr size_t kReleaseTries = 8;
  static constexpr uint32_t kNoSlab = UINT32_MAX;
  uint32_t releaseSlab(std::vector<CompressedRef>& claimed);

  // Consistency check on a quiescent cache; appends problems to `out`.
  // `liveItems` receives the number of items found in this class's slabs.
  void check(std::string& out, uint64_t& liveItems) const;

 private:
  uint32_t uncarvedLocked() const;
  CompressedRef popFreeLocked();
  void pushFreeHeadLocked(uint64_t ref);       // state already kFreeSlot
  bool pushSpareUnchecked(CompressedRef ref);  // pushSpare, the hazard check done
  uint32_t carvedLocked(uint32_t slab) const;
  // The spare slot, if any, onto the free list (lock_ held).
  void flushSpareLocked();
  // Gives up claims [from, end) of `claimed` after a pin was found: items
  // still published become claimable again; one unpublished meanwhile (a
  // remove that found it claimed) is ours to free.
  void undoClaimsLocked(std::vector<CompressedRef>& claimed, size_t from);

  SlabTable& table_;
  const uint32_t tier_, pool_, id_, allocSize_, slotsPerSlab_;
  std::unique_ptr<EvictionPolicy> policy_;
  ClassCounters counters_;
  ShardedTally& tally_;
  const size_t tallyAt_;
  std::atomic<uint32_t> lastRebalanceCheck_{0};
  double lowWatermark_ = 0;
  std::atomic<uint32_t> slabsHint_{0};  // slabs_.size(), written under lock_
  uint64_t lowSlots_ = 0;

  mutable ClassMutex lock_;  // counts holders in checked builds (dcheck.h)
  std::vector<uint32_t> slabs_;        // every slab owned
  std::vector<uint32_t> carve_;        // slabs not fully carved; carving the back one
  uint32_t carveNext_ = 0;             // next uncarved slot in carve_.back()
  uint64_t freeHead_ = CompressedRef::kNull;
  // The free list's last slot. The background evictor appends the slots it
  // frees here: it has just read them for the copy, so the next allocation
  // (another thread) would fetch every line of a head slot from the
  // evictor's cache; from the tail a slot is reused only after the free
  // list's length of allocations, when those lines have left it.
  uint64_t freeTail_ = CompressedRef::kNull;
  uint64_t freeCount_ = 0;
  // deferFree's list (pushed with a CAS, taken whole with an exchange, so
  // no ABA); on its own line: writers of other threads push here.
  alignas(64) std::atomic<uint64_t> deferredHead_{CompressedRef::kNull};
  std::atomic<uint32_t> drainsInFlight_{0};
  // One freed slot kept outside the lock: pushFree puts a slot here when it
  // is empty (one CAS) and popFree takes it first (one exchange), so a
  // replacing set, which frees one slot per allocation, takes no class lock
  // in steady state. The slot keeps the state of an owned slot (kExclusive,
  // not kFreeSlot): a slab release sees it as busy and skips its slab, as
  // for a deferred item, so a slot of a released slab is never handed out.
  // Counted by freeSlots() and check(), not by popFree's watermark test (one
  // slot); drainDeferred() and releaseSlab() move it to the free list.
  std::atomic<uint64_t> spare_{CompressedRef::kNull};
};


class SlabAllocator {
 public:
  // Serves slabs [firstSlab, firstSlab + tier.size()/slabSize) of `table`.
  // records: the same tier's pool records (a slab's owner is recorded
  // there before a slot of it is handed out), or null for a volatile tier.
  SlabAllocator(uint32_t tierIndex, MemoryTier& tier, PoolRecords* records, SlabTable& table, uint32_t firstSlab,
                const std::vector<PoolConfig>& pools, const std::vector<uint32_t>& classSizes,
                const EvictionPolicyOptions& policy);

  uint32_t tierIndex() const { return tierIndex_; }
  MemoryTier& tier() { return tier_; }
  const MemoryTier& tier() const { return tier_; }
  uint32_t slabCount() const { return slabCount_; }
  uint32_t slabsUsed() const;
  size_t poolCount() const { return pools_.size(); }
  size_t classCount() const { return classSizes_.size(); }
  const std::vector<uint32_t>& classSizes() const { return classSizes_; }
  size_t allocTallyBytes() const { return allocTally_.bytes(); }
  uint32_t poolQuota(uint32_t pool) const { return pools_[pool]->quota; }
  uint32_t poolSlabs(uint32_t pool) const { return pools_[pool]->owned.load(std::memory_order_relaxed); }
  // The pool may still take an unassigned slab of this tier.
  bool canGrow(uint32_t pool) const { return poolSlabs(pool) < poolQuota(pool) && slabsUsed() < slabLimit(); }

  // Memory limit (Cache::resizeTier): the slabs this tier may have assigned,
  // at most slabCount(). Unassigned slabs past it are out of service (their
  // memory discarded, MemoryTier::discard) until the limit grows again.
  uint32_t slabLimit() const { return limit_.load(std::memory_order_relaxed); }
  // Sets the limit; returns how many assigned slabs are over it, which the
  // caller takes from their classes (AllocationClass::releaseSlab) and
  // hands to retireSlab.
  uint32_t setSlabLimit(uint32_t slabs);
  // A slab a class of `pool` released, its items gone: out of service while
  // the tier is at or over its limit, else back among the unassigned slabs.
  void retireSlab(uint32_t slab, uint32_t pool);

  // Smallest class that holds `bytes`, or -1.
  int classFor(size_t bytes) const;
  AllocationClass& cls(uint32_t pool, uint32_t classId) { return *pools_[pool]->classes[classId]; }
  const AllocationClass& cls(uint32_t pool, uint32_t classId) const { return *pools_[pool]->classes[classId]; }

  // Free list, uncarved space, or a new slab within the pool's quota.
  CompressedRef allocateSlot(uint32_t pool, uint32_t classId);
  // Up to n slots the same way, taking a new slab if the class runs out;
  // returns how many were written to out.
  size_t allocateSlots(uint32_t pool, uint32_t classId, size_t n, CompressedRef* out);
  // Lock-free hint: the pool may still take an unassigned slab of this tier.
  bool mayGrow(uint32_t pool) const {
    const Pool& p = *pools_[pool];
    return p.owned.load(std::memory_order_relaxed) < p.quota && !exhausted_.load(std::memory_order_relaxed);
  }
  // Gives the pool's next unassigned slab to the class; false at quota.
  bool growClass(uint32_t pool, uint32_t classId);
  // Hands a released slab to another class of the same pool.
  void reassignSlab(uint32_t slab, uint32_t pool, uint32_t classId);

  // Start-up of a persistent tier: give slab `slabInTier` back to its class
  // (as its durable record says), then finishRecovery() once.
  void adoptSlab(uint32_t slabInTier, uint32_t pool, uint32_t classId);
  void finishRecovery();
  uint32_t firstSlab() const { return firstSlab_; }

  // Free-slots strategy, best donor first, at most `max` of them: classes of
  // `pool` other than `receiver` whose free slots add up to at least one
  // slab (most free bytes first); then, unless idleOnly, classes with more
  // than one slab (most slabs first); then, unless idleOnly, classes with
  // their only slab (most free bytes first), so that a class without a slab
  // can always get one (issue 9, item 2). The caller tries them in order: a
  // donor whose slabs are all pinned gives nothing.
  std::vector<uint32_t> pickDonors(uint32_t pool, uint32_t receiver, bool idleOnly, size_t max) const;
  // The first of pickDonors, or -1.
  int pickDonor(uint32_t pool, uint32_t receiver, bool idleOnly) const;

  void check(std::string& out, uint64_t& liveItems) const;

 private:
  struct Pool {
    std::string name;
    uint32_t quota = 0;
    std::atomic<uint32_t> owned{0};
    std::vector<std::unique_ptr<AllocationClass>> classes;
  };

  uint32_t tierIndex_;
  MemoryTier& tier_;
  SlabTable& table_;
  uint32_t firstSlab_;
  uint32_t slabCount_;
  std::vector<uint32_t> classSizes_;
  // classFor without a binary search (it runs on every allocation and set):
  // the class of each 8-byte granule of sizes up to 16 KiB.
  static constexpr size_t kClassGranule = 8;
  static constexpr size_t kClassTableBytes = 16384;
  std::vector<uint16_t> classOfGranule_;
  // Every class's allocation counts (AllocationClass::countSuccess).
  ShardedTally allocTally_;
  std::vector<std::unique_ptr<Pool>> pools_;

  PoolRecords* records_ = nullptr;  // non-null: record slab ownership durably

  mutable std::mutex slabLock_;
  std::vector<uint32_t> freeSlabs_;  // unassigned slabs (ids), handed out from the back
  std::vector<uint32_t> retired_;    // unassigned slabs past the limit (ids)
  std::atomic<uint32_t> limit_;      // written under slabLock_
  std::atomic<bool> exhausted_{false};  // freeSlabs_ is empty (slabs never come back)
  std::vector<bool> adopted_;        // during recovery: slabs taken by adoptSlab
};

}  // namespace tiercache
