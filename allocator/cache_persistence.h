// The persistence part's side of an item's life: the commit protocol for
// items of persistent tiers (docs/persistence.md). Not part of the API.
#pragma once

#include <cstdint>
#include <vector>

#include "access_index.h"
#include "compressed_ref.h"

namespace tiercache {

class Cache;
class Item;

// Commit protocol for items of persistent tiers (docs/persistence.md):
// payload persisted first (by the writer, before publishing), then the
// checksum written and persisted here, under the index stripe lock.
class CachePersistence final : public ItemPersistence {
 public:
  // After the tiers are open: reads each persistent tier's commit key.
  explicit CachePersistence(Cache& cache);
  void commit(Item* item, CompressedRef ref) override;
  void invalidate(Item* item, CompressedRef ref) override;
  void replaceCommitted() override;
  // Persists header, key and value of an item about to be published.
  void persistPayload(const Item* item, CompressedRef ref) const;
  // The checksum that marks the item committed at ref: keyed with its
  // tier's commit key and bound to its position in the tier.
  uint32_t checksumAt(const Item* item, CompressedRef ref) const;

 private:
  Cache& cache_;
  std::vector<uint64_t> commitKeys_;  // per tier; 0 for volatile tiers
};

// Checksum of an item's sizes, metadata (expiry, flags, seq), key and
// value, seeded with `seed`; never 0 (0 means "not committed").
uint32_t itemChecksum(const Item* item, uint64_t seed);

}  // namespace tiercache
