// The persistence part: everything about persistent tiers in one place.
// It owns the item commit protocol (docs/persistence.md), recovery at
// start-up and the clean shutdown. It receives what it uses at
// construction: the tiers, the records of the persistent ones (PoolRecords,
// null for volatile tiers; nobody casts), the slab table and the crash-test seam.
// Not part of the API.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "access_index.h"
#include "compressed_ref.h"

namespace tiercache {

class Item;
class MemoryTier;
class Movers;
class PoolRecords;
class SlabAllocator;
class SlabTable;
struct CacheConfig;
struct RecoveryCounters;
struct TierConfig;
enum class FaultPoint : uint8_t;

using PersistenceHashFn = uint64_t (*)(std::string_view key);

struct PersistenceParts {
  const std::vector<std::unique_ptr<MemoryTier>>& tiers;  // tier order
  std::vector<PoolRecords*> records;                       // per tier; null: volatile
  const SlabTable& table;
  void (*faultSeam)(FaultPoint, std::string_view) = nullptr;  // crash tests only
};

// What recovery found that the cache's own state must follow.
struct RecoveredState {
  uint64_t maxSeq = 0;           // highest sequence number seen in a committed slot
  bool anyDeadline = false;      // some recovered item has an expiry
};

class CachePersistence final : public ItemPersistence {
 public:
  // After the tiers are open: reads each persistent tier's commit key.
  explicit CachePersistence(PersistenceParts parts);

  // ---- commit protocol (called by the index and the writers) ----
  // Payload persisted first (by the writer, before publishing), then the
  // checksum written and persisted here, under the index stripe lock.
  void commit(Item* item, CompressedRef ref) override;
  void invalidate(Item* item, CompressedRef ref) override;
  void replaceCommitted(std::string_view key) override;
  // Persists header, key and value of an item about to be published.
  void persistPayload(const Item* item, CompressedRef ref) const;
  // The checksum that marks the item committed at ref: keyed with its
  // tier's commit key and bound to its position in the tier.
  uint32_t checksumAt(const Item* item, CompressedRef ref) const;

  // ---- start and stop ----
  // The first persistent tier, or -1.
  int firstPersistentTier() const;
  // Rebuilds the index and eviction lists from the committed items of every
  // persistent tier (items expired at `now` are dropped), then marks each
  // pool dirty: a crash from here on is detected at the next open.
  RecoveredState recover(std::vector<std::unique_ptr<SlabAllocator>>& allocs, AccessIndex& index,
                         PersistenceHashFn hash, uint32_t now, RecoveryCounters& counters);
  // Clean shutdown: with demoteFirst, what lives above the first persistent
  // tier is demoted into it first (as far as it has room); then every pool
  // is marked clean.
  void close(std::vector<std::unique_ptr<SlabAllocator>>& allocs, Movers& movers, bool demoteFirst);

 private:
  const PersistenceParts p_;
  std::vector<uint64_t> commitKeys_;  // per tier; 0 for volatile tiers
};

// Checksum of an item's sizes, metadata (expiry, flags, seq), key and
// value, seeded with `seed`; never 0 (0 means "not committed").
uint32_t itemChecksum(const Item* item, uint64_t seed);

// Hash of everything that decides where slabs and slots are and what a
// slab record means: a pool written under another layout is refused.
uint64_t layoutFingerprint(const CacheConfig& cfg, const TierConfig& tier, const std::vector<uint32_t>& classSizes);

}  // namespace tiercache
