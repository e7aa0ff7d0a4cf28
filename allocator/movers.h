// Movers: everything that moves items between tiers, as one part with its
// own state. It owns the background evictors and the promoter (threads), the
// promotion queue, the promotion rate limiter and the mover counters, and it
// holds the code that evicts (demotes or drops) and promotes items.
//
// It is handed explicit references to what it works on: the config, the
// slab table, the slab allocator of every tier, the access index, the hash
// and the persistence part (payload persisted before a copy is published).
// It reaches nothing else of Cache. Cache owns one Movers, calls it on the
// allocation slow path (obtainSlot), on a lower-tier hit (noteLowerTierHit),
// at shutdown (evict) and for stats; the background threads call it through
// BackgroundTarget, which it implements for eviction/.
//
// Lock order is the allocator's (class lock -> policy lock; no stripe lock
// while either is held); Movers never holds two of them at once.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "../eviction/background_mover.h"
#include "cache_config.h"
#include "cache_stats.h"
#include "compressed_ref.h"
#include "item_fate.h"
#include "live_counters.h"

namespace tiercache {

class AccessIndex;
class AllocationClass;
class CachePersistence;
class FlashTier;
class Item;
class SlabAllocator;
class SlabTable;

// Keys waiting for the promoter. Keys, not refs: a queued ref could be
// freed and its slab re-cut before the promoter gets to it, while a key is
// simply looked up again.
class PromotionQueue {
 public:
  explicit PromotionQueue(size_t capacity) : capacity_(capacity) {}
  bool push(std::string_view key);
  void popBatch(size_t n, std::vector<std::string>& out);

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::deque<std::string> keys_;
};

// At most maxPerSec grants per one-second window, over all threads (0: no limit).
class RateLimiter {
 public:
  explicit RateLimiter(uint32_t maxPerSec);
  bool tryAcquire();

 private:
  const uint32_t max_;
  std::atomic<uint32_t> windowStart_;
  std::atomic<uint32_t> count_{0};
};

// Counters of the movers; atomic, read by stats() from any thread.
// (The rows of TIERCACHE_MOVER_COUNTERS in cache_stats.h.)
struct MoverCounters {
  TIERCACHE_LIVE_COUNTERS(TIERCACHE_MOVER_COUNTERS)
};

using MoverHashFn = uint64_t (*)(std::string_view key);


// What the movers work on; every reference outlives the Movers.
struct MoverParts {
  const CacheConfig& config;
  SlabTable& table;
  std::vector<std::unique_ptr<SlabAllocator>>& allocs;  // one per tier, tier order
  AccessIndex& index;
  MoverHashFn hash;
  CachePersistence& persistence;
  ItemFate& fate;
  FlashTier* flash = nullptr;  // the flash store behind the last tier, if any
};

class Movers final : public BackgroundTarget {
 public:
  explicit Movers(const MoverParts& parts);
  ~Movers();
  Movers(const Movers&) = delete;
  Movers& operator=(const Movers&) = delete;

  // Starts the background threads the config asks for; stop() joins them
  // (the destructor too); start() again resumes them.
  void start();
  void stop();

  // A slot of (tier, pool, class) for a new item: free, new slab, rebalanced
  // slab, or one freed by evicting (demoting) the class's coldest items.
  // Null when every candidate is pinned.
  CompressedRef obtainSlot(uint32_t tier, uint32_t pool, uint32_t classId);
  // Evicts up to n items of the class: each is demoted into the next tier,
  // or dropped at the last. Returns how many left the class.
  size_t evict(AllocationClass& ac, size_t n, bool background);
  // A hit on a pinned item of a lower tier: counts it, and promotes it (now
  // or through the promoter) once it reaches the hit threshold.
  void noteLowerTierHit(Item* item, CompressedRef ref);

  // Moves one slab of (tier, pool) from class donor to class receiver (the
  // marginal-hits rebalancer's move): the slab's items are demoted while the
  // next tier has room, else dropped. False when the donor released none.
  bool moveSlab(uint32_t tier, uint32_t pool, uint32_t donor, uint32_t receiver);
  // Takes one slab of (tier, pool, class) out of service for a memory limit
  // (Cache::resizeTier): its items are demoted or dropped as moveSlab does,
  // then SlabAllocator::retireSlab. False when the class released none.
  bool retireSlab(uint32_t tier, uint32_t pool, uint32_t classId);

  // Whether a background evictor is serving classes (none stands aside for
  // want of a spare core): the cache defers its frees to them only then.
  bool defersFrees() const {
    for (const auto& e : evictors_) {
      if (!e->yielding()) return true;
    }
    return false;
  }

  // Adds the movers' counters and worker figures to s.
  void addStats(CacheStats& s) const;

  // ---- BackgroundTarget (the evictor and promoter threads) ----
  size_t classCount() const override;
  ClassUsage usage(size_t cls) const override;
  size_t evictBatch(size_t cls, size_t n) override;
  size_t promoteBatch(size_t n) override;
  void standAside(size_t cls) override;

 private:
  // Items one batch moves: claimed in one policy-lock hold (the evictor:
  // one per kClaimChunk), given lower slots in one class-lock hold, added
  // below in one policy-lock hold, their slots freed in one class-lock hold.
  static constexpr size_t kMaxBatch = 32;
  // The batch an allocation that found no free slot evicts itself (at
  // most 1/64 of the class).
  static constexpr size_t kForegroundBatch = 8;
  // Claims per policy-lock hold of a background batch (see evictInto).
  static constexpr size_t kClaimChunk = 8;

  struct Batch;
  class ClaimVisitor;
  // Where freed source slots go before the free list: a caller that evicts
  // to get slots takes them without another class-lock hold.
  struct SlotSink {
    CompressedRef* out;
    size_t want;
    size_t got;
  };

  CompressedRef obtainSlotIn(uint32_t tier, uint32_t pool, uint32_t classId, bool background);
  // Up to n slots of a lower-tier class for a batch of copies, evicting a
  // batch there first when it is full; returns how many.
  size_t obtainSlots(AllocationClass& lower, size_t n, CompressedRef* out, bool background);
  size_t evictInto(AllocationClass& ac, size_t n, SlotSink* sink, bool background);
  // Moves (or drops) one claimed batch; returns its size.
  size_t moveBatch(AllocationClass& ac, AllocationClass* lower, Batch& b, SlotSink* sink, bool background);
  bool copyAndSwap(Item* src, CompressedRef srcRef, CompressedRef dst);
  // A claimed live victim of the last memory tier, written to flash and
  // unlinked from memory; false: not kept (no flash, refused, or gone).
  bool demoteToFlash(const AllocationClass& ac, CompressedRef ref, uint64_t hash);
  bool promote(Item* item, CompressedRef ref);
  bool rebalance(SlabAllocator& a, uint32_t pool, uint32_t classId, bool idleOnly);
  bool moveSlabIn(SlabAllocator& a, uint32_t pool, uint32_t donorId, uint32_t classId);
  // The items of a released slab (claimed, out of their policy): demoted
  // into the next tier while it has room, else unlinked.
  void evictClaimed(AllocationClass& donor, const std::vector<CompressedRef>& claimed);
  // One slab of donor emptied (its items demoted or evicted) and taken from
  // it, for a move to another class or a retirement; kNoSlab when every slab
  // tried holds a pin.
  uint32_t emptySlabOf(AllocationClass& donor);
  void freeOwned(CompressedRef ref);
  // The class has a background evictor that keeps it free.
  bool served(const AllocationClass& ac) const;
  // urgent: the class has no free slot (the evictor is woken now, not at
  // its next nap's end).
  void wakeEvictor(const AllocationClass& ac, bool urgent);
  // Flat class numbers run tier-major, then pool, then class.
  size_t flatClassIndex(const AllocationClass& ac) const;
  AllocationClass& classAt(size_t cls) const;

  const CacheConfig& config_;
  SlabTable& table_;
  std::vector<std::unique_ptr<SlabAllocator>>& allocs_;
  AccessIndex& index_;
  const MoverHashFn hash_;
  CachePersistence& persistence_;
  ItemFate& fate_;
  FlashTier* const flash_;

  MoverCounters counters_;
  // Per flat class: alloc_success when its evictor last looked (usage()).
  std::unique_ptr<std::atomic<uint64_t>[]> consumedMark_;
  PromotionQueue queue_;
  RateLimiter limiter_;
  // Last: their threads stop before anything they use is destroyed.
  std::vector<std::unique_ptr<BackgroundEvictor>> evictors_;
  std::unique_ptr<BackgroundPromoter> promoter_;
};

}  // namespace tiercache
