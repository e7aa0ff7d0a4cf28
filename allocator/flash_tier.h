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
// nor outrun a demotion. A replacing set publishes in memory first and then
// invalidates the flash entry under the key's lock (invalidate): a demotion
// of the item it replaced has then either seen the replace and written
// nothing, or written its copy and its tombstone before the set returns.
// Without the lock a set could return while the older copy was being
// written, and a kill -9 before its tombstone would bring it back.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include "../flash/flash_store.h"
#include "cache_stats.h"
#include "fault_point.h"

namespace tiercache {

class FlashTier {
 public:
  using FaultSeam = void (*)(FaultPoint, std::string_view key);
  // Throws std::runtime_error when the store cannot be opened. seam: crash
  // tests only (CacheHooks::faultSeam).
  FlashTier(const FlashStoreConfig& config, FlashHashFn hash, FaultSeam seam = nullptr);

  FlashStore& store() { return *store_; }
  std::mutex& keyLock(uint64_t hash) { return locks_[(hash >> 20) & (kLocks - 1)]; }

  // Demotes a claimed victim: stored on flash, then unlink() (the index's
  // unlinkExact of the item). True when the item now lives on flash; false
  // when the store refused it (the caller drops it) or it left meanwhile.
  // linked(): whether the item is still published (checked first, under the
  // key's lock: a replace or remove that came before wrote no tombstone).
  template <class Linked, class Unlink>
  bool demote(uint64_t hash, std::string_view key, std::string_view value, uint32_t flags, uint32_t expiry, bool wasHit,
              Linked&& linked, Unlink&& unlink) {
    std::lock_guard<std::mutex> g(keyLock(hash));
    if (seam_) seam_(FaultPoint::kDemoteKeyLocked, key);
    if (!linked()) return false;
    if (store_->insert(key, value, flags, expiry, wasHit) != FlashStore::InsertResult::kStored) return false;
    if (seam_) seam_(FaultPoint::kDemoteFlashWritten, key);
    if (unlink()) return true;
    store_->remove(key);  // removed or replaced in memory meanwhile: not resurrected
    return false;
  }

  // Drops key's flash copy after a set published it in memory (see above).
  void invalidate(uint64_t hash, std::string_view key) {
    std::lock_guard<std::mutex> g(keyLock(hash));
    store_->remove(key);
  }

  // The store's counters and gauges into s.
  void addStats(CacheStats& s) const;

 private:
  static constexpr size_t kLocks = 1024;
  std::unique_ptr<FlashStore> store_;
  std::unique_ptr<std::mutex[]> locks_;
  FaultSeam seam_;
};

}  // namespace tiercache
