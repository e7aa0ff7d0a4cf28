// Cache: the public facade. Owns the parts and wires them: the tiers, a
// slab allocator per tier (with the eviction policies), the access index,
// the movers (eviction, demotion, promotion, background threads) and the
// persistence part. Every method is safe to call from any number of threads
// at once.
//
// Life of an item: allocate() takes a slot from the (tier 0, pool, class)
// that fits header + key + value, having the movers evict (demote) a small
// batch of that class's coldest unpinned items when it has no free slot; the caller fills the value through the
// WriteHandle; insertOrReplace() links it into the index (replacing an older
// item of the same key) and into its class's eviction list. find() returns a
// ReadHandle that pins the item. An item is freed when it is neither in the
// index nor pinned; exactly one thread wins the right to free it (see
// Item::kExclusive).
//
// Lifetime rule: every ReadHandle and WriteHandle must be released (reset
// or destroyed) before the Cache that made it is destroyed. A handle keeps
// a pointer to its cache and releases into it; one that outlives the cache
// would write into freed memory. ~Cache checks for pins still held: with
// assertions on (NDEBUG off: Debug and sanitizer builds) it aborts with a
// message; in release builds it prints a warning and adds the number to
// Cache::pinsOutstandingAtDestruction(), and the late handles must then
// never be released (their release is undefined behaviour).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cache_config.h"
#include "cache_stats.h"
#include "fault_point.h"
#include "handle.h"
#include "item_fate.h"

namespace tiercache {

class AccessIndex;
class AllocationClass;
class SlabAllocator;
class SlabTable;
class MemoryTier;
class CachePersistence;
class Movers;
class SlabRebalancer;
struct CacheCounters;
class ShardedCounter;
struct RecoveryCounters;
class StatsCollector;
class WindowTuner;
struct WindowSignal;
struct FlashItem;
struct FlashLoc;
struct LiveCheck;
struct InsertCondition;
struct InsertOutcome;
class ItemReaper;
class FlashTier;

using PoolId = uint16_t;

// find() of a key whose item already has the most handles its count holds
// (Item::kRefMask, 2^20 - 1, live at once): the key is present, but no
// further handle can be taken until one is released. Thrown rather than
// returning an empty handle, so that a caller never mistakes it for a miss.
class RefcountOverflow : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Hash used by the access index. Replaceable for tests (e.g. one that sends
// every key to one bucket, to prove that keys are compared in full).
using KeyHashFn = uint64_t (*)(std::string_view key);

// Why an item left the cache for good (see RemoveCallback).
enum class RemoveCause {
  kEvicted,   // dropped to make room: from the last tier, or no lower tier had room
  kExpired,   // past its deadline (or flushed), reclaimed by a read, the reaper or an eviction walk
  kRemoved,   // remove()
  kReplaced,  // set/insertOrReplace/compareAndSwap (or add over an expired item: kExpired) stored a new item
};
const char* removeCauseName(RemoveCause cause);

// What a remove callback sees. The views are valid only during the call.
struct RemovedItem {
  std::string_view key;
  std::string_view value;
  uint32_t flags = 0;
  RemoveCause cause = RemoveCause::kRemoved;
};

// Called exactly once for every item that leaves the cache for good; never
// for a move between tiers. It runs on the thread that unlinked the item (an
// application thread in set/remove/find/allocate, a background evictor, or
// the reaper), with no cache lock held, so it may call into the cache. It
// must not throw.
using RemoveCallback = std::function<void(const RemovedItem&)>;

// The expiry clock. A test seam: tests pass a controllable clock; nullptr
// reads std::chrono::system_clock.
using ExpiryClockFn = std::function<std::chrono::system_clock::time_point()>;

struct CacheHooks {
  KeyHashFn hash = nullptr;  // nullptr: XXH3
  RemoveCallback onRemove;   // empty: no callback
  ExpiryClockFn clock;       // test seam; empty: system_clock
  // Test seam for crash tests, nullptr in production: called at each
  // FaultPoint with the item's key (under an index or key lock; the crash
  // test raises SIGKILL there, or races another operation against it).
  void (*faultSeam)(FaultPoint, std::string_view key) = nullptr;
};

// Outcome of compareAndSwap (memcached's cas replies).
enum class CasResult {
  kStored,     // the token matched: the new value is stored
  kExists,     // the key holds another item (the token is stale)
  kNotFound,   // no live item under the key
  kNotStored,  // the new item could not be allocated
};

class Cache final : private ItemFate {
 public:
  static constexpr size_t kMaxKeySize = 255;

  explicit Cache(const CacheConfig& config, CacheHooks hooks = {});
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // Time to live: 0s = never expires. A deadline is kept in whole seconds
  // and rounded up, so an item lives at least its TTL and less than one
  // second more; a negative TTL stores an item that is already expired.
  // TTLs beyond the clock's range (year 2156) mean "never".
  using Ttl = std::chrono::seconds;

  // Copying convenience API. set() returns false when the item cannot be
  // stored (key or value too large, or every candidate slot is pinned).
  bool set(std::string_view key, std::string_view value, Ttl ttl = Ttl::zero(), uint32_t flags = 0);
  // Stores only if no live item has the key (memcached add); false otherwise
  // or when it cannot be stored.
  bool add(std::string_view key, std::string_view value, Ttl ttl = Ttl::zero(), uint32_t flags = 0);
  std::optional<std::string> get(std::string_view key);
  bool remove(std::string_view key);

  // Zero-copy API. Reads never return an expired (or flushed) item.
  // find: empty handle on a miss; throws RefcountOverflow when the key's
  // item already has Item::kRefMask (2^20 - 1) live handles (get() too).
  ReadHandle find(std::string_view key);
  // Like find, but records no access: no policy update, no promotion, no
  // get/hit counted.
  ReadHandle peek(std::string_view key);
  // Like peek, but a key that lives only on flash is brought up into memory
  // first (a read of flash; no get or hit counted): what a read-modify-write
  // (replace, append, incr, cas) must see. peek itself never reads flash.
  ReadHandle peekOrLoad(std::string_view key);
  // Whether key may be cached, answered without reading flash: true for a
  // live item in memory (looked at as peek does, recording nothing), else
  // whether the flash store's index has an entry for the key's tag (which
  // may be another key's). false: the key is certainly not cached.
  bool couldExist(std::string_view key);
  // One handle per key, in order; empty where absent. Hashes every key and
  // prefetches buckets, then items, so the cache misses overlap; the keys
  // that miss memory are read from flash in one batch, in parallel (it
  // blocks until they are done).
  std::vector<ReadHandle> findMany(std::span<const std::string_view> keys);
  // Lookahead for a caller that serves many keys one call at a time (a
  // server worker with many ready connections): prefetchIndex(key) starts
  // loading the key's index bucket and returns a token; prefetchItem(token),
  // called once the other keys' buckets were asked for too, starts loading
  // the item the bucket names (all of it up to 1 KiB: the value is read
  // next), so the next lookups' cache misses overlap instead of following
  // one another. Hints only: no lock, no change, no
  // check (a stale bucket makes the second prefetch useless, not wrong).
  uint64_t prefetchIndex(std::string_view key) const;
  void prefetchItem(uint64_t token) const;
  // Lookups that do not wait for flash. cb(i, handle) runs exactly once for
  // each keys[i] (handle empty on a miss), as find would return it:
  //  - on the calling thread, before the call returns, for every key found
  //    in memory or known absent (every key, without a flash store);
  //  - on the cache's flash completion thread for the keys read from flash
  //    (all of one call's flash keys in one batch, after its inline ones,
  //    so cb never runs on two threads at once for one call).
  // On the completion thread cb may use the cache (find, set, findAsync)
  // but must not destroy it, should not block (it holds up other
  // completions) and must not throw (std::terminate). It may keep the
  // handle, under the usual rule: released before the Cache is destroyed.
  // Keys are copied; cb is moved into the call. The destructor waits for
  // every read in flight and runs its callbacks first. Throws
  // std::invalid_argument for an empty cb, std::logic_error once the
  // destructor has begun (a callback calling it while the cache closes).
  using FindManyCallback = std::function<void(size_t index, ReadHandle handle)>;
  void findManyAsync(std::span<const std::string_view> keys, FindManyCallback cb);
  void findAsync(std::string_view key, std::function<void(ReadHandle handle)> cb);
  // A handle for key with a writable value of valueSize bytes, in the
  // default pool (0) or the given one; empty when it cannot be allocated.
  WriteHandle allocate(std::string_view key, size_t valueSize);
  WriteHandle allocate(PoolId pool, std::string_view key, size_t valueSize);
  WriteHandle allocate(std::string_view key, size_t valueSize, Ttl ttl, uint32_t flags = 0);
  WriteHandle allocate(PoolId pool, std::string_view key, size_t valueSize, Ttl ttl, uint32_t flags = 0);
  // Publish an allocated item; returns true if it replaced an existing key.
  // The handle is consumed. Throws std::invalid_argument for an empty handle
  // or one that another Cache allocated (the handle is then left as it was).
  bool insertOrReplace(WriteHandle&& handle);
  // Publishes only if no live item has the key (add); the handle is
  // consumed either way (dropped when false). Throws for an empty handle.
  bool insert(WriteHandle&& handle);
  // Publishes only if the key's live item has token `casToken`.
  CasResult compareAndSwap(WriteHandle&& handle, uint64_t casToken);
  CasResult compareAndSwap(std::string_view key, uint64_t casToken, std::string_view value, Ttl ttl = Ttl::zero(),
                           uint32_t flags = 0);
  // Gives the key's live item a new TTL (0s = never); false if absent. The
  // item is rewritten (same value and flags) but keeps its CAS token, as
  // memcached's touch does (so ChainedItems' children, bound to the
  // parent's token, stay whole); no remove callback fires for the old copy.
  bool touch(std::string_view key, Ttl ttl);
  // Replaces the value of the key's live item if its CAS token is still
  // `casToken`, keeping its flags and its deadline to the second (memcached's
  // incr/decr and append/prepend leave the TTL alone; a TTL re-derived from
  // the time left would drift by a rounding each time). The new copy gets a
  // new token. kExists: the key holds another item; kNotStored: no room.
  CasResult updateValue(std::string_view key, uint64_t casToken, std::string_view value);
  // memcached flush_all: after `delay`, every item stored before that moment
  // reads as absent (and is reclaimed lazily, or by the reaper). A later
  // flush replaces a pending delayed one (an immediate flush cancels it).
  // With a persistent tier an immediate flush also invalidates the flushed
  // items' commits before it returns, so that a restart cannot recover them
  // (the flush mark itself lives in DRAM).
  void flush(Ttl delay = Ttl::zero());
  // Weakly consistent walk over the live items of every tier: an item that
  // stays in the cache for the whole walk is visited once; items added,
  // removed or moved meanwhile may be missed. fn runs with no cache lock
  // held (the handle pins the item) and may call into the cache.
  void forEachItem(const std::function<void(const ReadHandle&)>& fn);
  // The same walk in steps, for a caller that must not hold its thread for
  // the whole of a large cache (the server's key dump): visits the items of
  // up to `buckets` index buckets from `cursor` (0 to start) and returns the
  // cursor to go on from, kWalkDone once the index is walked.
  static constexpr uint64_t kWalkDone = ~uint64_t{0};
  uint64_t forEachItemFrom(uint64_t cursor, uint64_t buckets, const std::function<void(const ReadHandle&)>& fn);
  // One full sweep of the reaper now, on the caller's thread (the reaper
  // thread does the same a slice per second). Returns the items reclaimed.
  size_t reapExpired();

  PoolId poolId(std::string_view name) const;  // throws std::out_of_range
  size_t poolCount() const;
  size_t tierCount() const;
  // Largest value that fits with a key of keySize bytes.
  size_t maxValueSize(size_t keySize = 0) const;

  CacheStats stats() const;
  // One pass of the marginal-hits slab rebalancer now, besides its own
  // periodic runs (rebalance.strategy "marginal-hits"); returns the slabs
  // moved, 0 when that strategy is off.
  size_t rebalanceSlabs();

  // Memory limit of a tier at run time (memcached's cache_memlimit maps to
  // tier 0). The limit is `bytes` rounded down to whole slabs, between one
  // slab and the tier's size at open (address space and slab table are
  // sized then: a larger limit throws std::invalid_argument naming the tier
  // and both sizes, as does a persistent tier, whose pool file fixes its
  // size). Shrinking takes slabs out of service now: the classes with the
  // most slabs give them up, their items demoted into the next tier while it
  // has room, else evicted (counted as evictions), and their memory
  // discarded. Slabs holding a pinned item are skipped, so the tier may stay
  // over its limit (`reached` false) until a later call; it takes no new
  // slab meanwhile. Growing lets the tier take slabs again as it needs them.
  // Work is bounded by the slabs to release; thread-safe against every
  // other call (one resize at a time).
  struct TierResize {
    uint64_t limitBytes = 0;  // the limit now in force
    uint64_t usedBytes = 0;   // slabs assigned to classes, in bytes
    uint32_t slabsReleased = 0;
    bool reached = false;  // usedBytes <= limitBytes
  };
  TierResize resizeTier(uint32_t tier, uint64_t bytes);
  // The tier's limit in bytes (its size unless resized).
  uint64_t tierLimit(uint32_t tier) const;
  // Pins found by ~Cache of every Cache of this process so far (release
  // builds; Debug builds abort instead). 0 in a correct program.
  static uint64_t pinsOutstandingAtDestruction();
  const CacheConfig& config() const { return config_; }

  // Walks every structure and checks the invariants (index <-> items,
  // free lists, eviction lists, slab ownership, no leaked pins). Meant for
  // tests: no application thread may use the cache meanwhile; background
  // workers are paused for the check. Returns "" when consistent, else a report.
  std::string checkConsistency() const;

 private:
  friend class ReadHandle;
  friend class WriteHandle;
  friend class CacheTestPeer;

  void release(Item* item, CompressedRef ref);
  // ---- lifecycle (cache_lifecycle.cc) ----
  // Seconds on the expiry clock now (see allocator/expiry.h).
  uint32_t nowSeconds() const;
  // The deadline of an item stored now with `ttl` (0 = none); reads no
  // clock for a zero ttl.
  uint32_t deadlineAfter(Ttl ttl) const;
  LiveCheck liveCheck() const final;
  // ItemFate, for the movers.
  bool deadlinesSeen() const final { return deadlinesSeen_.load(std::memory_order_relaxed); }
  void notifyDropped(const Item& item, CompressedRef ref, bool dead) final {
    notifyRemoved(item, ref, dead ? RemoveCause::kExpired : RemoveCause::kEvicted);
  }
  // Expired or flushed: never served, dropped rather than moved.
  bool isExpired(const Item& item) const;
  // Fires the remove callback (if any) for an item the caller unlinked and
  // still pins or owns.
  void notifyRemoved(const Item& item, CompressedRef ref, RemoveCause cause);
  // A copy of the key's live item over that very item (touch, updateValue):
  // `value` null keeps the value, `deadline` null keeps the deadline;
  // keepSeq keeps the CAS token. `token` 0: whichever item is live (a
  // racing writer makes it read again), else only over that token.
  CasResult rewriteLive(std::string_view key, uint64_t token, const std::string_view* value,
                        std::optional<uint32_t> deadline, bool keepSeq);
  // Publishes under a condition; the common path of insert*, CAS and touch.
  InsertOutcome publish(WriteHandle&& handle, const InsertCondition& cond, bool notifyReplaced);
  // The same for a non-empty handle whose key's index hash is known (set and
  // add hash first, to prefetch the bucket while they allocate).
  // flashKeyLocked: the caller holds the key's flash lock (a promotion).
  InsertOutcome publishHashed(WriteHandle&& handle, const InsertCondition& cond, bool notifyReplaced, uint64_t hash,
                              bool flashKeyLocked = false);
  // Unlinks an item found expired by a read (pinned by the caller).
  void dropExpired(Item* item, CompressedRef ref);
  // The reaper's slice: unlinks the dead items of index buckets [begin,
  // end); returns the items looked at, *reaped the ones unlinked.
  size_t reapSome(uint64_t begin, uint64_t end, size_t& reaped);
  // onFlash non-null: a memory miss does not go to flash; *onFlash says
  // whether the flash index may hold the key (the caller reads it later).
  ReadHandle findHashed(std::string_view key, uint64_t hash, bool* onFlash = nullptr);
  // A miss in memory: the key's flash copy, if any, is read, verified and
  // published in tier 0 (cache_flash.cc); empty when absent or lost.
  ReadHandle promoteFromFlash(std::string_view key, uint64_t hash);
  // Before a conditional publish or a rewrite (add, CAS, touch, ...): a key
  // absent from memory but on flash moves up first, so the condition sees it.
  void loadFromFlashIfAbsent(std::string_view key, uint64_t hash);
  // The same for many keys, their device reads in one batch
  // (FlashStore::lookupMany); out[i] gets key i's handle.
  void promoteManyFromFlash(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                            std::span<ReadHandle> out);
  // Publishes a copy read from flash at `at` (promoteFromFlash's second half).
  ReadHandle promoteFound(std::string_view key, uint64_t hash, FlashItem& found, const FlashLoc& at);
  // The slot the copying API (set, add, CAS, touch) writes: durable_sets
  // picks the first persistent tier.
  WriteHandle allocateForSet(std::string_view key, size_t valueSize, Ttl ttl, uint32_t flags, uint64_t hash);
  // set and add: counts the set, allocates (counting a failure) and copies
  // the value in; empty when there was no room. Prefetches the chain head
  // of hash (the key's index hash; the caller prefetched its bucket).
  WriteHandle filledForSet(std::string_view key, std::string_view value, Ttl ttl, uint32_t flags, uint64_t hash);
  // Replaces without a new item: rewrites the key's live item in its slot
  // when that slot is where the new item goes (`target`, its class: so the
  // same tier and pool) and nobody pins or moves it
  // (AccessIndex::rewriteInPlace); bumps `counted` (CacheCounters::
  // setsInPlace or insertsInPlace). False: not done, nothing changed.
  bool rewriteInPlace(std::string_view key, uint64_t hash, AllocationClass& target, std::string_view value,
                      uint32_t expiry, uint32_t flags, ShardedCounter& counted);
  // set's: the target is the class of the new size in tier 0, default pool.
  bool setInPlace(std::string_view key, std::string_view value, Ttl ttl, uint32_t flags, uint64_t hash);
  // insertOrReplace's: the handle's item (unpublished, filled) is copied
  // over the old one in the same class, then released (its slot is freed).
  bool replaceInPlace(WriteHandle& h, uint64_t hash);
  // Frees the slot of a handle that was never published (empties h); cls
  // is its class.
  void discardUnpublished(WriteHandle& h, AllocationClass& cls);
  // Values copied under a stripe lock are kept short: a longer one takes
  // the new-slot path, which copies outside every lock.
  static constexpr size_t kMaxInPlaceValue = 4096;
  // allocate() finds the key's chain head for values this long or longer
  // (see there).
  static constexpr size_t kChainHeadMinValue = 256;
  // prefetchItem's reach: 1 KiB covers the header, key and value of most
  // server gets; a longer value streams in behind the hardware prefetcher.
  static constexpr uint32_t kPrefetchItemLines = 16;
  // In-place sets are off where a replace must leave the old item intact:
  // a persistent tier 0 or durable sets (a crash mid-copy would lose an
  // acknowledged value), and a remove callback (it reads the old value).
  bool inPlaceSets_ = false;
  // durable_sets: a slot in the first persistent tier (default pool).
  WriteHandle allocateDurable(std::string_view key, size_t valueSize, uint64_t hash);
  // A new item in (tier, pool): the class that fits, then obtainSlot.
  // hash: hashKey(key). persistentOnly (durable sets): never in a volatile
  // tier.
  WriteHandle allocateIn(uint32_t tier, PoolId pool, std::string_view key, size_t valueSize, uint64_t hash,
                         bool persistentOnly = false);
  // Frees an item the caller owns exclusively (see Item): out of its
  // eviction list, onto its class's free list.
  void freeOwned(CompressedRef ref);
  // Frees every class's deferred items (a quiescent check, stats).
  void drainDeferredFrees() const;
  // With background eviction on, a replacing set leaves the old item's free
  // (out of its policy, onto the free list) to a batch: the evictor drains
  // every class's deferred frees each run, and an allocation that finds no
  // free slot drains its class first (docs/design.md, "Deferred frees").
  // Not while every evictor stands aside for want of a spare core
  // (Movers::defersFrees): then nothing drains them but allocations that
  // run dry, each of which would pay for all the frees since the last.
  bool deferFrees_ = false;
  bool defersFrees() const;
  // An item meant for `tier` may be stored in a lower tier instead: not
  // when a durable set targets a persistent tier.
  bool maySpillBelow(uint32_t tier) const;
  uint64_t hashKey(std::string_view key) const;


  CacheConfig config_;
  CacheHooks hooks_;
  // Next item sequence number (CAS token, commit order); never 0.
  std::atomic<uint64_t> nextSeq_{1};
  std::vector<std::unique_ptr<MemoryTier>> tiers_;
  std::unique_ptr<SlabTable> table_;
  std::vector<std::unique_ptr<SlabAllocator>> allocs_;
  // The persistence part (cache_persistence.h): commit protocol, recovery, clean shutdown.
  std::unique_ptr<CachePersistence> persistence_;
  std::unique_ptr<AccessIndex> index_;
  std::unique_ptr<CacheCounters> counters_;
  std::shared_ptr<const WindowSignal> windowSignal_;  // W-TinyLFU only: the window share its policies read
  std::unique_ptr<WindowTuner> tuner_;                // W-TinyLFU with the adaptive window only
  std::unique_ptr<RecoveryCounters> recovery_;  // written by CachePersistence::recover()
  // Lifecycle (cache_lifecycle.cc): items with a seq below flushSeq_ were
  // flushed; a delayed flush takes effect at pendingFlushAt_ (expiry-clock
  // seconds, 0 = none); deadlinesSeen_ turns on the eviction walk's search
  // for dead items once any item had a deadline or a flush happened.
  mutable std::atomic<uint64_t> flushSeq_{0};
  mutable std::atomic<uint32_t> pendingFlushAt_{0};
  std::atomic<bool> deadlinesSeen_{false};
  // Set by the destructor: items dropped while closing (demote_on_shutdown)
  // get no callback, like the items that vanish with the cache.
  std::atomic<bool> closing_{false};
  // The flash store behind the last tier (flash_tier.h), if configured;
  // before movers_, which write into it.
  std::unique_ptr<FlashTier> flash_;
  // findManyAsync's queue and flash completion thread (cache_async.cc);
  // with flash_ only. Drained first by the destructor.
  struct AsyncReads;
  std::unique_ptr<AsyncReads> async_;
  void runAsyncReads();
  void stopAsyncReads();
  // Moving items between tiers (allocator/movers.h). Its threads stop
  // before anything they use is destroyed.
  std::unique_ptr<Movers> movers_;
  std::unique_ptr<SlabRebalancer> rebalancer_;  // rebalance.strategy "marginal-hits" only
  std::unique_ptr<ItemReaper> reaper_;
  std::mutex resizeMu_;  // one resizeTier at a time
  // The stats part (stats_collector.h): reads the parts above.
  std::unique_ptr<StatsCollector> stats_;
};

}  // namespace tiercache
