#include "access_index.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>

#include "../common/huge_mapping.h"
#include <unordered_set>

namespace tiercache {

AccessIndex::AccessIndex(uint32_t bucketPower, uint32_t lockPower, const SlabTable& table, ItemPersistence* persistence,
                         FreeOwned freeOwned)
    : table_(table),
      persistence_(persistence),
      mask_((uint64_t{1} << bucketPower) - 1),
      stripeMask_((uint64_t{1} << std::min(lockPower, bucketPower)) - 1),
      buckets_(static_cast<unsigned char*>(mapHugeAnonymous((mask_ + 1) * kBucketBytes))),
      stripes_(new Stripe[stripeMask_ + 1]),
      freeOwned_(freeOwned ? std::move(freeOwned)
                           : FreeOwned([&table](CompressedRef ref) { table.owner(ref)->freeOwned(ref); })) {
  if (!buckets_) throw std::bad_alloc();
  static_assert(CompressedRef::kNull == (uint64_t{1} << (8 * kBucketBytes)) - 1);
  std::memset(buckets_, 0xFF, (mask_ + 1) * kBucketBytes);  // every bucket kNull
}

AccessIndex::~AccessIndex() { munmap(buckets_, (mask_ + 1) * kBucketBytes); }

uint64_t AccessIndex::metadataBytes() const {
  return (mask_ + 1) * kBucketBytes + (stripeMask_ + 1) * sizeof(Stripe) + sizeof(IndexReaders);
}

namespace {
// Checked on the item a publish links: held by the publisher's reference,
// neither published nor claimed nor free.
[[maybe_unused]] bool isUnpublishedAndPinned(uint32_t s) {
  return (s & Item::kRefMask) != 0 && !(s & (Item::kAccessible | Item::kExclusive | Item::kFreeSlot));
}
}  // namespace

CompressedRef AccessIndex::acquire(std::string_view key, uint64_t hash, Item*& item, bool* saturated,
                                   HazardPins::Entry** hazard) {
  // Checked up front: the lock-free walk mostly takes no stripe lock, but
  // may fall back to it (or try it, to move the key to the front).
  TC_DCHECK(dcheck::classLocksHeldByThisThread() == 0);
  if (hazard) *hazard = nullptr;
  CompressedRef found;
  switch (acquireLockFree(key, hash, item, found, hazard)) {
    case Lookup::kHit: return found;
    case Lookup::kMiss: return CompressedRef();
    case Lookup::kRetry: break;
  }
  return acquireLocked(key, hash, item, saturated);
}

AccessIndex::Lookup AccessIndex::acquireLockFree(std::string_view key, uint64_t hash, Item*& item, CompressedRef& found,
                                                 HazardPins::Entry** hazard) {
  const uint64_t b = bucketOf(hash);
  const SeqSpinLock& lock = stripes_[b & stripeMask_].lock;
  const uint8_t tag = Item::tagOf(hash);
  IndexReaders::Section section(readers_);
  if (!section) [[unlikely]]
    return Lookup::kRetry;
  const uint32_t seq = lock.readBegin();
  if (seq & 1) return Lookup::kRetry;  // a writer is in the chain
  uint64_t r = bucketLink(b).load();
  for (uint32_t depth = 0;; ++depth) {
    // Every ref is checked before it is followed: with the number
    // unchanged, r was read from the chain as no writer was changing it, so
    // it names a chained item, whose slab the section keeps in its class
    // (and a torn or stale ref is never resolved).
    if (!lock.unchangedSince(seq)) return Lookup::kRetry;
    if (r == CompressedRef::kNull) return Lookup::kMiss;
    const CompressedRef ref(r);
    Item* it = table_.item(ref);
    if (it->indexTag() == tag) {
      HazardPins::Entry* const h = hazard ? HazardPins::protect(it) : nullptr;
      if (h) {
        // A hazard pin (hazard_pins.h) holds if the item is still published
        // and unclaimed after the entry is set.
        const uint32_t s = it->state.load(std::memory_order_seq_cst);
        if ((s & (Item::kAccessible | Item::kExclusive | Item::kFreeSlot)) != Item::kAccessible) {
          HazardPins::clear(h);
          return Lookup::kRetry;
        }
      } else if (!it->tryAcquirePublished()) {
        return Lookup::kRetry;  // claimed, saturated, or unlinked since
      }
      // Pinned. Number still unchanged: the item was chained (so
      // published) when pinned, and it is this key's if the key matches.
      // The pin makes the key safe to read either way.
      const bool hit = lock.unchangedSince(seq) && it->hasKey(key);
      section.leave();  // before an unpin that may free (locks)
      if (!hit) {
        if (h)
          HazardPins::clear(h);
        else
          unpin(ref, it);
        return Lookup::kRetry;
      }
      if (hazard) *hazard = h;
      if (depth > 0) toFrontIfFree(b, ref);
      item = it;
      found = ref;
      return Lookup::kHit;
    }
    r = it->chainLink().load();
  }
}

void AccessIndex::toFrontIfFree(uint64_t b, CompressedRef ref) {
  // One hit in kMoveToFrontEvery per thread: a hot key still reaches the
  // head after a few uses, and most hits write no shared line.
  static constinit thread_local uint32_t hitsBehindHead = 0;
  if (++hitsBehindHead % kMoveToFrontEvery != 0) return;
  SeqSpinLock& lock = lockFor(b);
  if (!lock.try_lock()) return;
  for (RefLink link = bucketLink(b); link.load() != CompressedRef::kNull;) {
    Item* it = table_.item(CompressedRef(link.load()));
    if (link.load() == ref.raw()) {
      toFront(b, link, it, ref);
      break;
    }
    link = it->chainLink();
  }
  lock.unlock();
}

CompressedRef AccessIndex::acquireLocked(std::string_view key, uint64_t hash, Item*& item, bool* saturated) {
  const uint64_t b = bucketOf(hash);
  std::lock_guard<SeqSpinLock> g(lockFor(b));
  for (RefLink link = bucketLink(b); link.load() != CompressedRef::kNull;) {
    const CompressedRef ref(link.load());
    Item* it = table_.item(ref);
    if (it->hasKey(key)) {
      if (!it->tryAcquire()) {
        if (saturated) *saturated = (it->state.load(std::memory_order_relaxed) & Item::kRefMask) == Item::kRefMask;
        return CompressedRef();
      }
      toFront(b, link, it, ref);
      item = it;
      return ref;
    }
    link = it->chainLink();
  }
  return CompressedRef();
}

CompressedRef AccessIndex::insertOrReplace(CompressedRef ref, Item* item, uint64_t hash, bool& ownedOld) {
  const InsertOutcome out = insertIf(ref, item, hash, InsertCondition{});
  ownedOld = out.ownedOld;
  return out.old;
}

InsertOutcome AccessIndex::insertIf(CompressedRef ref, Item* item, uint64_t hash, const InsertCondition& cond) {
  using Kind = InsertCondition::Kind;
  InsertOutcome out;
  const std::string_view key = item->key();
  // The caller's handle pins the new item, which nothing has published or claimed.
  TC_DCHECK(isUnpublishedAndPinned(item->state.load(std::memory_order_relaxed)));
  const uint64_t b = bucketOf(hash);
  std::lock_guard<SeqSpinLock> g(lockFor(b));
  for (RefLink link = bucketLink(b); link.load() != CompressedRef::kNull;) {
    const CompressedRef cur(link.load());
    Item* it = table_.item(cur);
    if (it->hasKey(key)) {
      out.oldDead = cond.live.dead(*it);
      out.existed = !out.oldDead;
      if ((cond.kind == Kind::kIfAbsent && out.existed) || (cond.kind == Kind::kIfPresent && !out.existed) ||
          (cond.kind == Kind::kIfToken && (!out.existed || it->seq() != cond.token))) {
        return out;
      }
      item->setIndexTag(Item::tagOf(hash));
      item->state.fetch_or(Item::kAccessible, std::memory_order_release);
      // New in before old out: a crash in between leaves both committed,
      // and recovery keeps the higher sequence number; the key is never
      // left without a committed copy.
      commitIfDurable(item, ref);
      if (persistence_) persistence_->replaceCommitted(item->key());
      invalidateIfDurable(it, cur);
      item->setChainNext(it->chainNext());
      link.store(ref.raw());
      out.pinnedOld = cond.pinOld && it->tryAcquire();
      out.ownedOld = it->unpublish();
      countPublished(ref, item);
      countUnpublished(cur, it);
      out.old = cur;
      out.stored = true;
      return out;
    }
    link = it->chainLink();
  }
  if (cond.kind == Kind::kIfPresent || cond.kind == Kind::kIfToken) return out;
  item->setIndexTag(Item::tagOf(hash));
  item->state.fetch_or(Item::kAccessible, std::memory_order_release);
  commitIfDurable(item, ref);
  item->setChainNext(bucketLink(b).load());
  bucketLink(b).store(ref.raw());
  countPublished(ref, item);
  out.stored = true;
  return out;
}

CompressedRef AccessIndex::insertRecovered(CompressedRef ref, Item* item, uint64_t hash) {
  const std::string_view key = item->key();
  const uint64_t b = bucketOf(hash);
  std::lock_guard<SeqSpinLock> g(lockFor(b));
  for (RefLink link = bucketLink(b); link.load() != CompressedRef::kNull;) {
    const CompressedRef cur(link.load());
    Item* it = table_.item(cur);
    if (it->hasKey(key)) {
      // Two committed copies (a crash inside a replace or a move): the
      // commit order decides, never the order of the scan.
      if (item->seq() <= it->seq()) return ref;
      item->setIndexTag(Item::tagOf(hash));
      item->state.fetch_or(Item::kAccessible, std::memory_order_release);
      item->setChainNext(it->chainNext());
      link.store(ref.raw());
      it->state.fetch_and(~Item::kAccessible, std::memory_order_release);
      countPublished(ref, item);
      countUnpublished(cur, it);
      return cur;
    }
    link = it->chainLink();
  }
  item->setIndexTag(Item::tagOf(hash));
  item->state.fetch_or(Item::kAccessible, std::memory_order_release);
  item->setChainNext(bucketLink(b).load());
  bucketLink(b).store(ref.raw());
  countPublished(ref, item);
  return CompressedRef();
}

CompressedRef AccessIndex::remove(std::string_view key, uint64_t hash, bool& owned, bool* pinned) {
  owned = false;
  const uint64_t b = bucketOf(hash);
  std::lock_guard<SeqSpinLock> g(lockFor(b));
  for (RefLink link = bucketLink(b); link.load() != CompressedRef::kNull;) {
    const CompressedRef cur(link.load());
    Item* it = table_.item(cur);
    if (it->hasKey(key)) {
      invalidateIfDurable(it, cur);
      link.store(it->chainNext());
      if (pinned) *pinned = it->tryAcquire();
      owned = it->unpublish();
      countUnpublished(cur, it);
      return cur;
    }
    link = it->chainLink();
  }
  return CompressedRef();
}

bool AccessIndex::unlinkExact(CompressedRef ref, uint64_t hash) {
  const uint64_t b = bucketOf(hash);
  std::lock_guard<SeqSpinLock> g(lockFor(b));
  for (RefLink link = bucketLink(b); link.load() != CompressedRef::kNull;) {
    Item* it = table_.item(CompressedRef(link.load()));
    if (link.load() == ref.raw()) {
      // The caller pins, claims or moves the item, so it outlives the unlink.
      TC_DCHECK(it->state.load(std::memory_order_relaxed) & (Item::kRefMask | Item::kExclusive | Item::kMoving));
      invalidateIfDurable(it, ref);
      link.store(it->chainNext());
      it->state.fetch_and(~Item::kAccessible, std::memory_order_release);
      countUnpublished(ref, it);
      return true;
    }
    link = it->chainLink();
  }
  return false;
}

bool AccessIndex::replaceExact(CompressedRef oldRef, CompressedRef newRef, Item* newItem, uint64_t hash) {
  // The mover pins its copy, which nothing has published yet.
  TC_DCHECK(isUnpublishedAndPinned(newItem->state.load(std::memory_order_relaxed)));
  const uint64_t b = bucketOf(hash);
  std::lock_guard<SeqSpinLock> g(lockFor(b));
  for (RefLink link = bucketLink(b); link.load() != CompressedRef::kNull;) {
    Item* it = table_.item(CompressedRef(link.load()));
    if (link.load() == oldRef.raw()) {
      // Only the mover (kMoving) or the claimer (kExclusive) of the original swaps it.
      TC_DCHECK(it->state.load(std::memory_order_relaxed) & (Item::kMoving | Item::kExclusive));
      // Copy in before original out (both carry the same sequence number):
      // a crash in between keeps one of two identical copies.
      commitIfDurable(newItem, newRef);
      invalidateIfDurable(it, oldRef);
      newItem->setChainNext(it->chainNext());
      newItem->setIndexTag(Item::tagOf(hash));
      newItem->state.fetch_or(Item::kAccessible, std::memory_order_release);
      link.store(newRef.raw());
      it->state.fetch_and(~Item::kAccessible, std::memory_order_release);
      countPublished(newRef, newItem);
      countUnpublished(oldRef, it);
      return true;
    }
    link = it->chainLink();
  }
  return false;
}

// The chain head is read without the stripe lock and without a check: a
// stale or torn ref only makes the prefetch useless (prefetching any
// address is harmless). A torn ref may name a slab id past the table: that
// one is skipped, since resolving it would read past the slab table.
void AccessIndex::prefetchChainHead(uint64_t hash, uint32_t maxLines) const {
  const uint64_t head = bucketLink(bucketOf(hash)).load();
  if (head == CompressedRef::kNull) return;
  if (CompressedRef(head).slab(table_.slotBits()) >= table_.slabCount()) return;
  const CompressedRef ref(head);
  const char* p = reinterpret_cast<const char*>(table_.item(ref));
  const uint32_t size = table_.slab(ref.slab(table_.slotBits())).allocSize.load(std::memory_order_relaxed);
  const uint32_t lines = std::clamp<uint32_t>((size + 63) / 64, 1, maxLines);
  for (uint32_t i = 0; i < lines; ++i) __builtin_prefetch(p + 64 * i);
}

void AccessIndex::countRequested(CompressedRef ref, int64_t bytes) const {
  if (AllocationClass* owner = table_.owner(ref)) owner->addRequested(bytes);
}

size_t AccessIndex::pinLive(uint64_t begin, uint64_t end, const LiveCheck& live,
                            std::vector<std::pair<CompressedRef, Item*>>& out) {
  size_t seen = 0;
  for (uint64_t b = begin; b < end && b <= mask_; ++b) {
    std::lock_guard<SeqSpinLock> g(lockFor(b));
    for (uint64_t r = bucketLink(b).load(); r != CompressedRef::kNull;) {
      Item* it = table_.item(CompressedRef(r));
      ++seen;
      if (!live.dead(*it) && it->tryAcquire()) out.emplace_back(CompressedRef(r), it);
      r = it->chainNext();
    }
  }
  return seen;
}

size_t AccessIndex::unlinkDead(uint64_t begin, uint64_t end, const LiveCheck& live,
                               std::vector<std::pair<CompressedRef, Item*>>& out) {
  size_t seen = 0;
  for (uint64_t b = begin; b < end && b <= mask_; ++b) {
    std::lock_guard<SeqSpinLock> g(lockFor(b));
    for (RefLink link = bucketLink(b); link.load() != CompressedRef::kNull;) {
      const CompressedRef cur(link.load());
      Item* it = table_.item(cur);
      ++seen;
      // A claimed item (slab release) cannot be pinned: its claimer unlinks it.
      if (live.dead(*it) && it->tryAcquire()) {
        invalidateIfDurable(it, cur);
        link.store(it->chainNext());
        it->unpublish();  // pinned: never makes us the owner
        countUnpublished(cur, it);
        out.emplace_back(cur, it);
        continue;
      }
      link = it->chainLink();
    }
  }
  return seen;
}

uint64_t AccessIndex::check(HashFn hash, std::string& out) const {
  uint64_t entries = 0;
  std::unordered_set<uint64_t> seen;
  for (uint64_t b = 0; b <= mask_; ++b) {
    std::lock_guard<SeqSpinLock> g(lockFor(b));
    std::unordered_set<std::string_view> keys;
    for (uint64_t r = bucketLink(b).load(); r != CompressedRef::kNull;) {
      const Item* it = table_.item(CompressedRef(r));
      ++entries;
      if (!seen.insert(r).second) {
        out += "index: item linked twice (bucket " + std::to_string(b) + ")\n";
        return entries;
      }
      if (!(it->state.load(std::memory_order_relaxed) & Item::kAccessible)) out += "index: linked item not published\n";
      const uint64_t h = hash(it->key());
      if (bucketOf(h) != b) out += "index: item in the wrong bucket\n";
      if (it->indexTag() != Item::tagOf(h)) out += "index: linked item has a wrong tag\n";
      if (!keys.insert(it->key()).second) out += "index: key linked twice\n";
      r = it->chainNext();
    }
  }
  return entries;
}

}  // namespace tiercache
