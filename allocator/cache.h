// Cache: the public facade. Owns the tiers, the slab allocator, the access
// index and the eviction policies; every method is safe to call from any
// number of threads at once.
//
// Life of an item: allocate() takes a slot from the (tier 0, pool, class)
// that fits header + key + value, evicting that class's coldest unpinned
// item when it has no free slot; the caller fills the value through the
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
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cache_config.h"
#include "cache_stats.h"
#include "handle.h"

namespace tiercache {

class AccessIndex;
class AllocationClass;
class SlabAllocator;
class SlabTable;
class MemoryTier;
class CacheBackground;
class CachePersistence;
struct CacheCounters;
struct MoverState;

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

struct CacheHooks {
  KeyHashFn hash = nullptr;  // nullptr: XXH3
};

class Cache {
 public:
  static constexpr size_t kMaxKeySize = 255;

  explicit Cache(const CacheConfig& config, CacheHooks hooks = {});
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // Copying convenience API. set() returns false when the item cannot be
  // stored (key or value too large, or every candidate slot is pinned).
  bool set(std::string_view key, std::string_view value);
  std::optional<std::string> get(std::string_view key);
  bool remove(std::string_view key);

  // Zero-copy API.
  // Empty handle on a miss. Throws RefcountOverflow when the key's item
  // already has Item::kRefMask (2^20 - 1) live handles (get() too).
  ReadHandle find(std::string_view key);
  // A handle for key with a writable value of valueSize bytes, in the
  // default pool (0) or the given one; empty when it cannot be allocated.
  WriteHandle allocate(std::string_view key, size_t valueSize);
  WriteHandle allocate(PoolId pool, std::string_view key, size_t valueSize);
  // Publish an allocated item; returns true if it replaced an existing key.
  // The handle is consumed. Throws std::invalid_argument for an empty handle
  // or one that another Cache allocated (the handle is then left as it was).
  bool insertOrReplace(WriteHandle&& handle);

  PoolId poolId(std::string_view name) const;  // throws std::out_of_range
  size_t poolCount() const;
  size_t tierCount() const;
  // Largest value that fits with a key of keySize bytes.
  size_t maxValueSize(size_t keySize = 0) const;

  CacheStats stats() const;
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
  friend class CacheBackground;
  friend class CachePersistence;

  void release(Item* item, CompressedRef ref);
  // durable_sets: a slot in the first persistent tier (default pool).
  WriteHandle allocateDurable(std::string_view key, size_t valueSize);
  // A new item in (tier, pool): the class that fits, then obtainSlot.
  WriteHandle allocateIn(uint32_t tier, PoolId pool, std::string_view key, size_t valueSize);
  // Frees an item the caller owns exclusively (see Item): out of its
  // eviction list, onto its class's free list.
  void freeOwned(CompressedRef ref);
  // Moves a slab from another class of the pool to `classId`.
  bool rebalance(SlabAllocator& a, uint32_t pool, uint32_t classId, bool idleOnly);
  // The items of a released slab (claimed, out of their policy): demoted
  // into the next tier while it has room, else unlinked.
  void evictClaimed(AllocationClass& donor, const std::vector<CompressedRef>& claimed);
  // An item meant for `tier` may be stored in a lower tier instead: not
  // when a durable set targets a persistent tier.
  bool maySpillBelow(uint32_t tier) const;
  uint64_t hashKey(std::string_view key) const;

  // ---- moving items between tiers (cache_mover.cc) ----
  // A slot of (tier, pool, class): free, new slab, rebalanced slab, or one
  // freed by evicting (demoting) the class's coldest unpinned item.
  CompressedRef obtainSlot(uint32_t tier, uint32_t pool, uint32_t classId, bool background);
  // Evicts up to n items of the class, a few per policy-lock hold: each is
  // demoted into the next tier (or dropped at the last). A freed slot goes
  // to *reuse if that is non-null and still empty, else to the free list.
  size_t evictFrom(AllocationClass& ac, size_t n, CompressedRef* reuse, bool background);
  // Copies src (marked moving) into the slot dst and swaps the index entry;
  // false if src was removed or replaced meanwhile (dst is then freed).
  bool copyAndSwap(Item* src, CompressedRef srcRef, CompressedRef dst);
  void noteLowerTierHit(Item* item, CompressedRef ref);
  // Moves a pinned item one tier up if the upper class has room; never evicts.
  bool promote(Item* item, CompressedRef ref);
  void wakeEvictor(const AllocationClass& ac);
  size_t flatClassIndex(const AllocationClass& ac) const;
  void startBackgroundWorkers();

  // ---- persistent tiers (cache_persistence.cc) ----
  static uint64_t layoutFingerprint(const CacheConfig& cfg, const TierConfig& tier,
                                    const std::vector<uint32_t>& classSizes);
  // Rebuilds the index and eviction lists from committed items.
  void recoverPersistentTiers();
  // Clean shutdown: optional demotion into the persistent tier, clean flag.
  void closePersistentTiers();
  int firstPersistentTier() const;

  CacheConfig config_;
  CacheHooks hooks_;
  // Next item sequence number (CAS token, commit order); never 0.
  std::atomic<uint64_t> nextSeq_{1};
  std::vector<std::unique_ptr<MemoryTier>> tiers_;
  std::unique_ptr<SlabTable> table_;
  std::vector<std::unique_ptr<SlabAllocator>> allocs_;
  std::unique_ptr<CachePersistence> persistence_;
  std::unique_ptr<AccessIndex> index_;
  std::unique_ptr<CacheCounters> counters_;
  // Last: its threads stop before anything they use is destroyed.
  std::unique_ptr<MoverState> movers_;
};

}  // namespace tiercache
