#include "access_index.h"

#include <sys/mman.h>

#include <cstring>
#include <mutex>
#include <new>

#include "../tiers/huge_mapping.h"
#include <unordered_set>

namespace tiercache {

namespace {
bool keyEquals(const Item* it, std::string_view key) {
  return it->keySize() == key.size() && std::memcmp(it->keyData(), key.data(), key.size()) == 0;
}
}  // namespace

AccessIndex::AccessIndex(uint32_t bucketPower, uint32_t lockPower, const SlabTable& table,
                         ItemPersistence* persistence)
    : table_(table),
      persistence_(persistence),
      mask_((uint64_t{1} << bucketPower) - 1),
      stripeMask_((uint64_t{1} << std::min(lockPower, bucketPower)) - 1),
      buckets_(static_cast<uint32_t*>(mapHugeAnonymous((mask_ + 1) * sizeof(uint32_t)))),
      stripes_(new Stripe[stripeMask_ + 1]) {
  if (!buckets_) throw std::bad_alloc();
  std::fill_n(buckets_, mask_ + 1, CompressedRef::kNull);
}

AccessIndex::~AccessIndex() { munmap(buckets_, (mask_ + 1) * sizeof(uint32_t)); }

uint64_t AccessIndex::metadataBytes() const {
  return (mask_ + 1) * sizeof(uint32_t) + (stripeMask_ + 1) * sizeof(Stripe);
}

CompressedRef AccessIndex::acquire(std::string_view key, uint64_t hash, Item*& item, bool* saturated) {
  const uint64_t b = bucketOf(hash);
  std::lock_guard<SpinLock> g(lockFor(b));
  for (uint32_t r = buckets_[b]; r != CompressedRef::kNull;) {
    Item* it = table_.item(CompressedRef(r));
    if (keyEquals(it, key)) {
      if (!it->tryAcquire()) {
        if (saturated) *saturated = (it->state.load(std::memory_order_relaxed) & Item::kRefMask) == Item::kRefMask;
        return CompressedRef();
      }
      item = it;
      return CompressedRef(r);
    }
    r = it->hashNext;
  }
  return CompressedRef();
}

CompressedRef AccessIndex::insertOrReplace(CompressedRef ref, Item* item, uint64_t hash, bool& ownedOld) {
  ownedOld = false;
  const std::string_view key = item->key();
  const uint64_t b = bucketOf(hash);
  std::lock_guard<SpinLock> g(lockFor(b));
  item->state.fetch_or(Item::kAccessible, std::memory_order_release);
  for (uint32_t* link = &buckets_[b]; *link != CompressedRef::kNull;) {
    const CompressedRef cur(*link);
    Item* it = table_.item(cur);
    if (keyEquals(it, key)) {
      // Old out before new in: a crash in between loses the key, never
      // leaves two committed items for it.
      invalidateIfDurable(it, cur);
      commitIfDurable(item, ref);
      item->hashNext = it->hashNext;
      *link = ref.raw();
      ownedOld = it->unpublish();
      return cur;
    }
    link = &it->hashNext;
  }
  commitIfDurable(item, ref);
  item->hashNext = buckets_[b];
  buckets_[b] = ref.raw();
  return CompressedRef();
}

bool AccessIndex::insertRecovered(CompressedRef ref, Item* item, uint64_t hash) {
  const std::string_view key = item->key();
  const uint64_t b = bucketOf(hash);
  std::lock_guard<SpinLock> g(lockFor(b));
  for (uint32_t r = buckets_[b]; r != CompressedRef::kNull;) {
    const Item* it = table_.item(CompressedRef(r));
    if (keyEquals(it, key)) return false;
    r = it->hashNext;
  }
  item->state.fetch_or(Item::kAccessible, std::memory_order_release);
  item->hashNext = buckets_[b];
  buckets_[b] = ref.raw();
  return true;
}

CompressedRef AccessIndex::remove(std::string_view key, uint64_t hash, bool& owned) {
  owned = false;
  const uint64_t b = bucketOf(hash);
  std::lock_guard<SpinLock> g(lockFor(b));
  for (uint32_t* link = &buckets_[b]; *link != CompressedRef::kNull;) {
    const CompressedRef cur(*link);
    Item* it = table_.item(cur);
    if (keyEquals(it, key)) {
      invalidateIfDurable(it, cur);
      *link = it->hashNext;
      owned = it->unpublish();
      return cur;
    }
    link = &it->hashNext;
  }
  return CompressedRef();
}

bool AccessIndex::unlinkExact(CompressedRef ref, uint64_t hash) {
  const uint64_t b = bucketOf(hash);
  std::lock_guard<SpinLock> g(lockFor(b));
  for (uint32_t* link = &buckets_[b]; *link != CompressedRef::kNull;) {
    Item* it = table_.item(CompressedRef(*link));
    if (*link == ref.raw()) {
      invalidateIfDurable(it, ref);
      *link = it->hashNext;
      it->state.fetch_and(~Item::kAccessible, std::memory_order_release);
      return true;
    }
    link = &it->hashNext;
  }
  return false;
}

bool AccessIndex::replaceExact(CompressedRef oldRef, CompressedRef newRef, Item* newItem, uint64_t hash) {
  const uint64_t b = bucketOf(hash);
  std::lock_guard<SpinLock> g(lockFor(b));
  for (uint32_t* link = &buckets_[b]; *link != CompressedRef::kNull;) {
    Item* it = table_.item(CompressedRef(*link));
    if (*link == oldRef.raw()) {
      invalidateIfDurable(it, oldRef);
      commitIfDurable(newItem, newRef);
      newItem->hashNext = it->hashNext;
      newItem->state.fetch_or(Item::kAccessible, std::memory_order_release);
      *link = newRef.raw();
      it->state.fetch_and(~Item::kAccessible, std::memory_order_release);
      return true;
    }
    link = &it->hashNext;
  }
  return false;
}

uint64_t AccessIndex::check(HashFn hash, std::string& out) const {
  uint64_t entries = 0;
  std::unordered_set<uint32_t> seen;
  for (uint64_t b = 0; b <= mask_; ++b) {
    std::lock_guard<SpinLock> g(lockFor(b));
    std::unordered_set<std::string_view> keys;
    for (uint32_t r = buckets_[b]; r != CompressedRef::kNull;) {
      const Item* it = table_.item(CompressedRef(r));
      ++entries;
      if (!seen.insert(r).second) {
        out += "index: item linked twice (bucket " + std::to_string(b) + ")\n";
        return entries;
      }
      if (!(it->state.load(std::memory_order_relaxed) & Item::kAccessible)) out += "index: linked item not published\n";
      if (bucketOf(hash(it->key())) != b) out += "index: item in the wrong bucket\n";
      if (!keys.insert(it->key()).second) out += "index: key linked twice\n";
      r = it->hashNext;
    }
  }
  return entries;
}

}  // namespace tiercache
