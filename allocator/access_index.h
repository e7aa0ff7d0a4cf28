// AccessIndex: one chained hash table over the items of every tier.
//
// 2^bucketPower buckets of one 32-bit CompressedRef each; chains run
// through Item::hashNext, so the index costs 4 bytes per bucket and nothing
// per item beyond the header. Buckets are guarded by 2^lockPower striped
// spin locks (stripe = bucket mod stripes, so one lock covers a whole
// chain). Keys are always compared in full: two keys with equal hashes are
// just two entries of one chain.
//
// Invariant: an item is in a chain iff its kAccessible bit is set; both
// change together under the stripe lock. Items in a chain are never freed
// (freeing requires !kAccessible), so a walker holding the stripe lock may
// read any chained item.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "compressed_ref.h"
#include "item.h"
#include "slab_allocator.h"
#include "spin_lock.h"

namespace tiercache {

// What publishing and unpublishing an item of a persistent tier must make
// durable. Called under the stripe lock, so the durable state of a key
// changes in the same order as the index: a crash never leaves a
// replaced or removed item committed, and never two items of one key.
class ItemPersistence {
 public:
  virtual void commit(Item* item, CompressedRef ref) = 0;      // payload already persisted
  virtual void invalidate(Item* item, CompressedRef ref) = 0;

 protected:
  ~ItemPersistence() = default;
};

class AccessIndex {
 public:
  using HashFn = uint64_t (*)(std::string_view);

  AccessIndex(uint32_t bucketPower, uint32_t lockPower, const SlabTable& table,
              ItemPersistence* persistence = nullptr);
  ~AccessIndex();
  AccessIndex(const AccessIndex&) = delete;
  AccessIndex& operator=(const AccessIndex&) = delete;

  // Start-up of a persistent tier: links an item found committed. Returns
  // false (and links nothing) if its key is already linked.
  bool insertRecovered(CompressedRef ref, Item* item, uint64_t hash);

  // Finds key and pins it (Item::tryAcquire). Null ref when absent or
  // when the item is being evicted; then *saturated (if given) tells
  // whether the key was present with a refcount that cannot grow.
  CompressedRef acquire(std::string_view key, uint64_t hash, Item*& item, bool* saturated = nullptr);
  // Publishes item (held by the caller) under its key. Returns the item it
  // replaced, or null; ownedOld tells whether the caller must free it.
  CompressedRef insertOrReplace(CompressedRef ref, Item* item, uint64_t hash, bool& ownedOld);
  // Unpublishes key. Returns the item, or null; owned as above.
  CompressedRef remove(std::string_view key, uint64_t hash, bool& owned);
  // Unpublishes exactly this item if it is still linked (the evictor, which
  // already owns it). Returns whether it was linked.
  bool unlinkExact(CompressedRef ref, uint64_t hash);
  // Swaps a moved item's copy in for the original, if the original is still
  // linked: the copy is published and the original unpublished in one step
  // under the stripe lock, so a reader sees one or the other, never neither.
  bool replaceExact(CompressedRef oldRef, CompressedRef newRef, Item* newItem, uint64_t hash);

  uint64_t bucketCount() const { return mask_ + 1; }
  uint64_t metadataBytes() const;
  // Quiescent check: every chained item is published, hashes to its
  // bucket, and appears once. Returns the number of entries.
  uint64_t check(HashFn hash, std::string& out) const;

 private:
  struct alignas(64) Stripe {
    SpinLock lock;
  };
  uint64_t bucketOf(uint64_t hash) const { return hash & mask_; }
  SpinLock& lockFor(uint64_t bucket) const { return stripes_[bucket & stripeMask_].lock; }
  bool durable(CompressedRef ref) const { return persistence_ && table_.persistent(ref); }
  void commitIfDurable(Item* item, CompressedRef ref) {
    if (durable(ref)) persistence_->commit(item, ref);
  }
  void invalidateIfDurable(Item* item, CompressedRef ref) {
    if (durable(ref)) persistence_->invalidate(item, ref);
  }

  const SlabTable& table_;
  ItemPersistence* const persistence_;
  const uint64_t mask_;
  const uint64_t stripeMask_;
  uint32_t* buckets_;  // huge-page mapping of bucketCount() refs

  std::unique_ptr<Stripe[]> stripes_;
};

}  // namespace tiercache
