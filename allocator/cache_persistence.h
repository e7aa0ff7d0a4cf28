// The persistence part's side of an item's life: the commit protocol for
// items of persistent tiers (docs/persistence.md). Not part of the API.
#pragma once

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
  explicit CachePersistence(Cache& cache) : cache_(cache) {}
  void commit(Item* item, CompressedRef ref) override;
  void invalidate(Item* item, CompressedRef ref) override;
  // Persists header, key and value of an item about to be published.
  void persistPayload(const Item* item, CompressedRef ref) const;

 private:
  Cache& cache_;
};

// Checksum of an item's sizes, key and value; never 0 (0 means "not committed").
uint32_t itemChecksum(const Item* item);

}  // namespace tiercache
