// The cache's read path into its flash store: a miss in memory looks the
// key up on flash and brings a verified copy back into tier 0 (see
// flash_tier.h for the moves of a key between memory and flash).
#include <cstring>

#include "access_index.h"
#include "cache.h"
#include "flash_tier.h"
#include "item.h"

namespace tiercache {

ReadHandle Cache::promoteFromFlash(std::string_view key, uint64_t hash) {
  FlashStore& store = flash_->store();
  if (!store.mayContain(key)) return {};  // most misses: no I/O
  FlashLoc at;
  std::optional<FlashItem> found = store.lookup(key, &at);
  if (!found) return {};
  return promoteFound(key, hash, *found, at);
}

void Cache::loadFromFlashIfAbsent(std::string_view key, uint64_t hash) {
  if (!flash_ || !flash_->store().mayContain(key)) return;
  Item* item = nullptr;
  const CompressedRef ref = index_->acquire(key, hash, item, nullptr);
  if (ref) {
    release(item, ref);
    return;
  }
  promoteFromFlash(key, hash);
}

void Cache::promoteManyFromFlash(std::span<const std::string_view> keys, std::span<const uint64_t> hashes,
                                 std::span<ReadHandle> out) {
  std::vector<std::optional<FlashItem>> found(keys.size());
  std::vector<FlashLoc> at(keys.size());
  flash_->store().lookupMany(keys, found, at);
  for (size_t i = 0; i < keys.size(); ++i) {
    out[i] = found[i] ? promoteFound(keys[i], hashes[i], *found[i], at[i]) : ReadHandle{};
  }
}

ReadHandle Cache::promoteFound(std::string_view key, uint64_t hash, FlashItem& found, const FlashLoc& at) {
  FlashStore& store = flash_->store();
  if (found.expiry != 0 && found.expiry <= nowSeconds()) {
    std::lock_guard<std::mutex> g(flash_->keyLock(hash));
    store.removeIfAt(key, at);
    return {};
  }
  // The slot is taken (and may evict, into flash) before the key's lock.
  WriteHandle h = allocateIn(0, 0, key, found.value.size(), hash);
  if (!h) return {};
  std::memcpy(h.data(), found.value.data(), found.value.size());
  h.item()->expiry = found.expiry;
  h.item()->flags = found.flags;
  {
    std::lock_guard<std::mutex> g(flash_->keyLock(hash));
    // Removed, replaced or demoted anew since the read: that copy was not
    // the key's current one. Otherwise it moves up (tiers are exclusive) if
    // no set has put the key in memory meanwhile.
    if (store.removeIfAt(key, at)) {
      InsertCondition cond;
      cond.kind = InsertCondition::Kind::kIfAbsent;
      publishHashed(std::move(h), cond, false, hash, true);
    }
  }
  // A pin on whatever memory holds now (the copy, or a newer set's item).
  Item* item = nullptr;
  const CompressedRef ref = index_->acquire(key, hash, item, nullptr);
  if (!ref) return {};
  return ReadHandle(this, item, ref);
}

}  // namespace tiercache
