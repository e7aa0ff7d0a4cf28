// FlashTier: the cache's side of its flash store (flash/flash_store.h), the
// level behind the last memory tier. It owns the store and the per-key
// locks that order the three moves of a key between memory and flash:
//
//   demote   (movers, a victim of the last memory tier): the item is
//            written to flash, then unlinked from memory; if the unlink
//            fails (removed or replaced meanwhile) the flash copy is removed.
//   promote  (find, a miss in memory): the value read from flash is
//            published in tier 0 only if the key is still absent there and
//            its flash entry is still the one read; the entry then goes.
//   remove   the key leaves memory and flash together.
//
// Each holds the key's lock (key lock -> index stripe or flash append lock;
// never the other way), so a remove can neither be undone by a promotion
// nor outrun a demotion. A replacing set needs no lock: it publishes in
// memory first and then invalidates the flash entry, and a promotion's
// publish is conditional on the key's absence.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include "../flash/flash_store.h"
#include "cache_stats.h"

namespace tiercache {

class FlashTier {
 public:
  // Throws std::runtime_error when the store cannot be opened.
  FlashTier(const FlashStoreConfig& config, FlashHashFn hash);

  FlashStore& store() { return *store_; }
  std::mutex& keyLock(uint64_t hash) { return locks_[(hash >> 20) & (kLocks - 1)]; }

  // Demotes a claimed victim: stored on flash, then unlink() (the index's
  // unlinkExact of the item). True when the item now lives on flash; false
  // when the store refused it (the caller drops it) or it left meanwhile.
  template <class Unlink>
  bool demote(uint64_t hash, std::string_view key, std::string_view value, uint32_t flags, uint32_t expiry, bool wasHit,
              Unlink&& unlink) {
    std::lock_guard<std::mutex> g(keyLock(hash));
    if (store_->insert(key, value, flags, expiry, wasHit) != FlashStore::InsertResult::kStored) return false;
    if (unlink()) return true;
    store_->remove(key);  // removed or replaced in memory meanwhile: not resurrected
    return false;
  }

  // The store's counters and gauges into s.
  void addStats(CacheStats& s) const;

 private:
  static constexpr size_t kLocks = 1024;
  std::unique_ptr<FlashStore> store_;
  std::unique_ptr<std::mutex[]> locks_;
};

}  // namespace tiercache
