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
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
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
class CachePersistence;
class Movers;
struct CacheCounters;

using PoolId = uint16_t;

// Hash used by the access index. Replaceable for tests (e.g. one that sends
// every key to one bucket, to prove that keys are compared in full).
using KeyHashFn = uint64_t (*)(std::string_view key);

// Points of the persistent commit protocol where a crash test stops the
// process (fault injection; see CacheHooks::faultSeam).
enum class FaultPoint : uint8_t {
  kReplaceNewCommitted,  // a replacing publish: new copy committed, old one not yet invalidated
};

struct CacheHooks {
  KeyHashFn hash = nullptr;  // nullptr: XXH3
  // Test seam for crash tests, nullptr in production: called at each
  // FaultPoint of a persistent tier's commit protocol (under an index lock;
  // the crash test raises SIGKILL there).
  void (*faultSeam)(FaultPoint) = nullptr;
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
  ReadHandle find(std::string_view key);
  // A handle for key with a writable value of valueSize bytes, in the
  // default pool (0) or the given one; empty when it cannot be allocated.
  WriteHandle allocate(std::string_view key, size_t valueSize);
  WriteHandle allocate(PoolId pool, std::string_view key, size_t valueSize);
  // Publish an allocated item; returns true if it replaced an existing key.
  // The handle is consumed. Throws std::invalid_argument for an empty handle.
  bool insertOrReplace(WriteHandle&& handle);

  PoolId poolId(std::string_view name) const;  // throws std::out_of_range
  size_t poolCount() const;
  size_t tierCount() const;
  // Largest value that fits with a key of keySize bytes.
  size_t maxValueSize(size_t keySize = 0) const;

  CacheStats stats() const;
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
  friend class CachePersistence;

  void release(Item* item, CompressedRef ref);
  // durable_sets: a slot in the first persistent tier (default pool).
  WriteHandle allocateDurable(std::string_view key, size_t valueSize);
  // A new item in (tier, pool): the class that fits, then obtainSlot.
  // persistentOnly (durable sets): never in a volatile tier.
  WriteHandle allocateIn(uint32_t tier, PoolId pool, std::string_view key, size_t valueSize,
                         bool persistentOnly = false);
  // Frees an item the caller owns exclusively (see Item): out of its
  // eviction list, onto its class's free list.
  void freeOwned(CompressedRef ref);
  uint64_t hashKey(std::string_view key) const;

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
  // Moving items between tiers (allocator/movers.h). Last: its threads stop
  // before anything they use is destroyed.
  std::unique_ptr<Movers> movers_;
};

}  // namespace tiercache
