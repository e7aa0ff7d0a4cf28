// AccessIndex: one chained hash table over the items of every tier.
//
// 2^bucketPower buckets of one 40-bit CompressedRef each, packed in 5
// bytes; chains run through the items' chain links (Item::chainLink), so the
// index costs 5 bytes per bucket and nothing per item beyond the header.
// Buckets are guarded by 2^lockPower striped sequence locks (SeqSpinLock;
// stripe = bucket mod stripes, so one lock covers a whole chain). Keys are
// always compared in full: two keys with equal hashes are just two entries
// of one chain.
//
// Invariant: an item is in a chain iff its kAccessible bit is set; both
// change together under the stripe lock, and a chained item carries its
// key's index tag (Item::tagOf). Items in a chain are never freed (freeing
// requires !kAccessible), so a walker holding the stripe lock may read any
// chained item.
//
// Lookups (acquire) take no lock: they walk the chain with atomic loads,
// check after every step that the stripe's sequence number has not moved
// (so every ref they follow was a chain member), pin the item whose tag
// matches (a hazard entry, or a CAS that needs it published; see
// hazard_pins.h), and keep the pin if the number still has not moved and
// the key matches. Anything else (a writer
// came, a claimed item, a tag collision, a thread without a reader slot)
// looks again under the lock. Every bucket and chain store is atomic
// (RefLink). A slot a lookup may still read is never cut for another class
// size while the lookup runs (IndexReaders, waitForReaders).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compressed_ref.h"
#include "dcheck.h"
#include "expiry.h"
#include "hazard_pins.h"
#include "index_readers.h"
#include "item.h"
#include "slab_allocator.h"
#include "spin_lock.h"

namespace tiercache {

// What publishing and unpublishing an item of a persistent tier must make
// durable. Called under the stripe lock, so the durable state of a key
// changes in the same order as the index. A replace commits the new copy
// before it invalidates the old one: a crash in between leaves two
// committed copies of the key, which recovery resolves by their sequence
// numbers (the higher wins), and never none. A removed item is never left
// committed.
class ItemPersistence {
 public:
  virtual void commit(Item* item, CompressedRef ref) = 0;      // payload already persisted
  virtual void invalidate(Item* item, CompressedRef ref) = 0;
  // Fault seam for crash tests: called by a replacing publish after the new
  // copy is committed and before the old one is invalidated.
  virtual void replaceCommitted(std::string_view /*key*/) {}

 protected:
  ~ItemPersistence() = default;
};

// When a conditional publish may link its item (AccessIndex::insertIf).
// A dead item (LiveCheck) under the key counts as absent, and is replaced.
struct InsertCondition {
  enum class Kind { kAlways, kIfAbsent, kIfPresent, kIfToken };
  Kind kind = Kind::kAlways;
  uint64_t token = 0;   // kIfToken: the live item's seq must equal it
  LiveCheck live;
  bool pinOld = false;  // pin the unlinked item (its remove callback reads it)
  // Nonzero: the published item keeps this sequence number instead of
  // taking a new one (a touch keeps the item's CAS token).
  uint64_t keepSeq = 0;
};

struct InsertOutcome {
  bool stored = false;
  bool existed = false;    // a live item had the key
  CompressedRef old;       // the item unlinked by the publish, or null
  bool oldDead = false;    // ... which was expired or flushed
  bool ownedOld = false;   // the caller must free old
  bool pinnedOld = false;  // the caller holds a pin on old and must release it
};

class AccessIndex {
 public:
  using HashFn = uint64_t (*)(std::string_view);

  // What a lookup that pinned an item it then gives up does when its unpin
  // leaves it the owner (Item::releaseRef): the item was unlinked meanwhile
  // and nobody else holds it. Empty: the slot's class frees it
  // (AllocationClass::freeOwned), as Cache::release does.
  using FreeOwned = std::function<void(CompressedRef)>;

  AccessIndex(uint32_t bucketPower, uint32_t lockPower, const SlabTable& table, ItemPersistence* persistence = nullptr,
              FreeOwned freeOwned = {});
  ~AccessIndex();
  AccessIndex(const AccessIndex&) = delete;
  AccessIndex& operator=(const AccessIndex&) = delete;

  // Start-up of a persistent tier: links an item found committed. If its key
  // is already linked, the copy with the higher sequence number stays
  // linked (the one linked first on a tie) and the other is returned,
  // unlinked and unpublished: null when there was no duplicate, `ref`
  // when the new item lost, else the earlier item it displaced.
  CompressedRef insertRecovered(CompressedRef ref, Item* item, uint64_t hash);

  // Finds key and pins it (Item::tryAcquire). Null ref when absent or
  // when the item is being evicted; then *saturated (if given) tells
  // whether the key was present with a refcount that cannot grow. Takes no
  // lock unless a writer holds the stripe (see the top). A found key that
  // is not its chain's head moves there one time in kMoveToFrontEvery (a
  // try-lock; never waits).
  // With `hazard`, a lock-free hit pins by a hazard entry where it can
  // (*hazard set; the refcount is untouched) and *hazard is null when the
  // pin is a count.
  CompressedRef acquire(std::string_view key, uint64_t hash, Item*& item, bool* saturated = nullptr,
                        HazardPins::Entry** hazard = nullptr);
  static constexpr uint32_t kMoveToFrontEvery = 8;
  // Publishes item (held by the caller) under its key. Returns the item it
  // replaced, or null; ownedOld tells whether the caller must free it.
  CompressedRef insertOrReplace(CompressedRef ref, Item* item, uint64_t hash, bool& ownedOld);
  // Publishes item if `cond` holds; on a key match the old item is unlinked
  // as by insertOrReplace (and pinned first if cond.pinOld and it can be).
  InsertOutcome insertIf(CompressedRef ref, Item* item, uint64_t hash, const InsertCondition& cond);
  // A replace without a new slot: if the item under key is published, not
  // persistent, accepted by fits(item, ref), and nobody pins, claims or
  // moves it, claims it (Item::tryMarkExclusive) under the stripe lock, lets
  // write(item, ref) rewrite its value and metadata (and do the policy's
  // access update, which must not block), ends the claim (Item::endRewrite)
  // and returns ref; the item is left unpinned. No reader sees the item half
  // written: a reader's pin (a CAS or a hazard entry) fails while it is
  // claimed, and a pin taken before makes the claim fail (a hazard entry:
  // the claim is given back); movers and evictors claim it by a CAS that
  // fails while it is claimed. Otherwise changes nothing
  // and returns null (absent, or the caller publishes a new item instead).
  // Everything after write()'s stores is plain stores (the claim's end, the
  // unlock), so the value's store misses drain while the caller goes on.
  template <class Fits, class Write>
  CompressedRef rewriteInPlace(std::string_view key, uint64_t hash, Fits&& fits, Write&& write) {
    const uint64_t b = bucketOf(hash);
    std::lock_guard<SeqSpinLock> g(lockFor(b));
    for (RefLink link = bucketLink(b); link.load() != CompressedRef::kNull;) {
      const CompressedRef ref(link.load());
      Item* it = table_.item(ref);
      if (it->hasKey(key)) {
        if (durable(ref) || !fits(*it, ref) || !it->tryMarkExclusive()) return {};
        if (HazardPins::isProtected(it)) {  // a lock-free reader holds it
          it->undoRewriteClaim();
          return {};
        }
        const uint32_t before = it->valueSize();
        write(*it, ref);
        if (it->valueSize() != before) countRequested(ref, int64_t{it->valueSize()} - int64_t{before});
        it->endRewrite();
        toFront(b, link, it, ref);
        return ref;
      }
      link = it->chainLink();
    }
    return {};
  }
  // Unpublishes key. Returns the item, or null; owned as above. With
  // `pinned`, the item is pinned before it is unpublished when it can be
  // (not when a slab release already claimed it): *pinned says so.
  CompressedRef remove(std::string_view key, uint64_t hash, bool& owned, bool* pinned = nullptr);
  // Unpublishes exactly this item if it is still linked (the evictor, which
  // already owns it). Returns whether it was linked.
  bool unlinkExact(CompressedRef ref, uint64_t hash);
  // Swaps a moved item's copy in for the original, if the original is still
  // linked: the copy is published and the original unpublished in one step
  // under the stripe lock, so a reader sees one or the other, never neither.
  bool replaceExact(CompressedRef oldRef, CompressedRef newRef, Item* newItem, uint64_t hash);

  // Batched lookups: prefetch the bucket slot, then (an unchecked read,
  // only a hint) the first item of its chain.
  void prefetchBucket(uint64_t hash) const { __builtin_prefetch(buckets_ + kBucketBytes * bucketOf(hash)); }
  // The same plus the stripe's sequence number, for a lookup a whole server
  // pass away (Cache::prefetchIndex): by then the stripe's line may have
  // left the cache. Not for findMany, whose lookups follow at once: its
  // batches ran slower with the stripe prefetched too, while the server ran
  // slower without it (docs/benchmarks.md has both measurements).
  void prefetchLookup(uint64_t hash) const {
    const uint64_t b = bucketOf(hash);
    prefetchBucket(hash);
    __builtin_prefetch(&stripes_[b & stripeMask_]);
  }
  // The chain head's first maxLines cache lines, no more than its slot holds.
  void prefetchChainHead(uint64_t hash, uint32_t maxLines = 2) const;
  // Walks buckets [begin, end): pins every live item (for iteration), or
  // unlinks and pins every dead one (the reaper; items a slab release has
  // claimed are left to it). Appends (ref, item) pairs; returns the number
  // of items looked at.
  size_t pinLive(uint64_t begin, uint64_t end, const LiveCheck& live, std::vector<std::pair<CompressedRef, Item*>>& out);
  size_t unlinkDead(uint64_t begin, uint64_t end, const LiveCheck& live,
                    std::vector<std::pair<CompressedRef, Item*>>& out);

  // A bucket is one packed 40-bit ref: 5 bytes, not 8 (the index is the
  // cache's largest structure outside the items).
  static constexpr size_t kBucketBytes = CompressedRef::kStoredBytes;
  uint64_t bucketCount() const { return mask_ + 1; }
  uint64_t metadataBytes() const;
  // Grace period: returns once every lookup in flight when it was called
  // has ended. Called with every item of a slab unlinked, before the slab
  // is cut for another class size (see IndexReaders).
  void waitForReaders() const { readers_.waitForReaders(); }
  // Lookups in flight now (racy: tests).
  size_t openReadSections() const { return readers_.openSections(); }
  // Quiescent check: every chained item is published, hashes to its
  // bucket, carries its key's tag, and appears once. Returns the number of
  // entries.
  uint64_t check(HashFn hash, std::string& out) const;

 private:
  // The owner class's requested bytes (AllocationClass::addRequested) move
  // by `bytes` as the index publishes or unpublishes an item of it.
  void countRequested(CompressedRef ref, int64_t bytes) const;
  void countPublished(CompressedRef ref, const Item* it) const {
    countRequested(ref, static_cast<int64_t>(Item::totalSize(it->keySize(), it->valueSize())));
  }
  void countUnpublished(CompressedRef ref, const Item* it) const {
    countRequested(ref, -static_cast<int64_t>(Item::totalSize(it->keySize(), it->valueSize())));
  }
  struct alignas(64) Stripe {
    SeqSpinLock lock;
  };
  enum class Lookup { kHit, kMiss, kRetry };
  // The lock-free lookup (see the top); kRetry: look under the lock.
  Lookup acquireLockFree(std::string_view key, uint64_t hash, Item*& item, CompressedRef& found,
                         HazardPins::Entry** hazard);
  CompressedRef acquireLocked(std::string_view key, uint64_t hash, Item*& item, bool* saturated);
  // Moves ref to the head of bucket b's chain if the stripe lock is free.
  void toFrontIfFree(uint64_t b, CompressedRef ref);
  // Drops a pin this index took and gave up; frees the item if that made
  // this thread its owner.
  void unpin(CompressedRef ref, Item* it) {
    if (it->releaseRef()) freeOwned_(ref);
  }
  uint64_t bucketOf(uint64_t hash) const { return hash & mask_; }
  RefLink bucketLink(uint64_t b) const { return RefLink(buckets_ + kBucketBytes * b); }
  // Every stripe lock is taken through here: check the lock order (no
  // stripe lock under a class lock; see dcheck.h).
  SeqSpinLock& lockFor(uint64_t bucket) const {
    TC_DCHECK(dcheck::classLocksHeldByThisThread() == 0);
    return stripes_[bucket & stripeMask_].lock;
  }
  bool durable(CompressedRef ref) const { return persistence_ && table_.persistent(ref); }
  // Moves a found item (reached through link, stripe lock held) to the
  // head of its chain, so that a key used again is found with one item
  // read: a hot key stops paying for the colder keys chained before it.
  // Writes only when it is not the head already.
  void toFront(uint64_t b, RefLink link, Item* it, CompressedRef ref) {
    const RefLink head = bucketLink(b);
    if (link.sameAs(head)) return;
    link.store(it->chainNext());
    it->setChainNext(head.load());
    head.store(ref.raw());
  }
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
  unsigned char* buckets_;  // huge-page mapping of bucketCount() packed 5-byte refs

  std::unique_ptr<Stripe[]> stripes_;
  const FreeOwned freeOwned_;
  IndexReaders readers_;
};

}  // namespace tiercache
