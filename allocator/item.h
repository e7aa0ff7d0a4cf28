// Item: the header in front of every cached key and value, inside a slab.
//
// Layout (48 bytes, 4-byte aligned; slots are 8-byte aligned):
//   0  state     atomic u32: refcount (20 bits) | kAccessible | kExclusive | kFreeSlot | kMoving
//                | lower-tier hits (3 bits, for promotion) | kFetched
//   4  hashNext  low 32 bits of the next item's CompressedRef in the index
//                bucket (stripe lock); its high byte is hook.ownerBytes[0]
//   8  hook      EvictionHook: prev, next (40-bit refs), meta (16 bytes,
//                owned by the policy but for ownerBytes); ownerBytes[1] is
//                the index tag, 8 bits of the key's hash (set at publish)
//  24  sizes     key length (8 bits) | value length (24 bits)
//  28  checksum  commit mark of the persistent tier (0 in volatile tiers)
//  32  expiry    deadline in seconds on the cache's expiry clock; 0 = never
//  36  flags     32-bit client flags (memcached's), opaque to the cache
//  40  seq       64-bit sequence number, stored as two u32 halves so the
//                header keeps 4-byte alignment: given when the item is
//                published (never 0), kept across moves between tiers. It is
//                the CAS token and, in a persistent tier, the commit order
//                that decides between two committed copies of one key.
//  48  key bytes, then value bytes
//
// Every field from `sizes` on is written before the item is published and
// changes while it is only in an in-place rewrite (below), which excludes
// every pin and claim; so a pinned or claiming reader may read them without
// synchronisation. The one reader that neither pins nor claims, a policy
// hashing a listed item's key (keyHash), reads only the key, which a rewrite
// keeps; `sizes` (key length beside value length) is read and rewritten as
// a relaxed atomic for it.
//
// Metadata per item = 48 (this header, policy hooks included) + the index's
// 5-byte bucket slot per item at load factor 1: 53 bytes. The 20 bytes over
// the first layout's 28 buy TTLs, client flags, a CAS token / commit order
// that a client cannot forge (memcached's item header is 48-56 bytes) and
// 40-bit references (a cache past 256 GiB; the three links' high bytes).
//
// State machine (every transition is one CAS on `state`, so exactly one
// thread ever wins the right to free an item):
//   free slot  : state == kFreeSlot, the chain link (chainLink()) links the
//                class free list.
//   allocated  : refcount >= 1 (the WriteHandle), not accessible.
//   published  : kAccessible set under the index stripe lock.
//   exclusive  : set only when refcount == 0 and not moving; the setter owns
//                the item: no new handle can be taken (tryAcquire fails) and
//                it alone unlinks, frees or reuses the slot.
//   rewriting  : kExclusive on a published item, taken by a replacing set
//                that holds the item's stripe lock (so no reader can pin it)
//                and rewrites value and metadata in the slot; it ends
//                (endRewrite) published and unpinned, never as a free.
//   moving     : a mover is copying the item to another tier. Readers may
//                still pin it (a rewrite cannot claim it meanwhile); no
//                one may claim it until the mover's finishMove(), which
//                claims it itself if by then it is unpinned and unpublished.
// Claims happen in: the evictor (refcount 0), the last handle release of an
// unpublished item, remove/replace of an unpinned item, and finishMove.
// "Pinned" also means held by a hazard entry (hazard_pins.h), which is not
// in the count: whoever frees, reuses or rewrites a claimed item looks for
// one after the claim and defers or gives up.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "../eviction/eviction_policy.h"
#include "compressed_ref.h"
#include "dcheck.h"

namespace tiercache {

class Item {
 public:
  static constexpr uint32_t kRefMask = (1u << 20) - 1;
  static constexpr uint32_t kAccessible = 1u << 20;
  static constexpr uint32_t kExclusive = 1u << 21;
  static constexpr uint32_t kFreeSlot = 1u << 22;
  static constexpr uint32_t kMoving = 1u << 23;
  static constexpr uint32_t kHitShift = 24;
  static constexpr uint32_t kHitMask = 7u << kHitShift;  // saturating hit count in a lower tier
  // Read by a client since it was stored (memcached's "fetched": the
  // server's mg h). Set by markFetched, kept across moves between tiers,
  // cleared by an in-place rewrite (a new version of the item) and when
  // the slot is reused. Bits 28-31 are free.
  static constexpr uint32_t kFetched = 1u << 27;

  static constexpr uint32_t kMaxKeySize = 255;
  static constexpr uint32_t kMaxValueSize = (1u << 24) - 1;

  std::atomic<uint32_t> state;
  uint32_t hashNext;
  EvictionHook hook;
  uint32_t sizes;
  uint32_t checksum;
  uint32_t expiry;
  uint32_t flags;
  uint32_t seqLo;
  uint32_t seqHi;

  // The next item in the index bucket (or in the class free list), as a
  // 40-bit raw CompressedRef: hashNext and the hook's first owner byte.
  // Atomic (RefLink): lock-free index readers read it.
  RefLink chainLink() { return RefLink(&hashNext, &hook.ownerBytes[0]); }
  uint64_t chainNext() const { return const_cast<Item*>(this)->chainLink().load(); }
  void setChainNext(uint64_t raw) { chainLink().store(raw); }

  // The index tag: 8 bits of the key's hash that the index stores when it
  // publishes the item, so that a lock-free lookup passes an item of
  // another key without pinning it (and reading its key) 255 times in 256.
  // A relaxed atomic byte: a lookup may read it in a slot being reused.
  static uint8_t tagOf(uint64_t hash) { return static_cast<uint8_t>(hash >> 56); }
  uint8_t indexTag() const {
    return std::atomic_ref<uint8_t>(const_cast<uint8_t&>(hook.ownerBytes[1])).load(std::memory_order_relaxed);
  }
  void setIndexTag(uint8_t tag) { std::atomic_ref<uint8_t>(hook.ownerBytes[1]).store(tag, std::memory_order_relaxed); }

  // Prepares a slot owned by the caller as a new item with one reference.
  void init(std::string_view key, uint32_t valueSize) {
    setChainNext(CompressedRef::kNull);
    hook.setPrev(CompressedRef::kNull);
    hook.setNext(CompressedRef::kNull);
    hook.meta.store(0, std::memory_order_relaxed);
    sizesRef().store(static_cast<uint32_t>(key.size()) | (valueSize << 8), std::memory_order_relaxed);
    checksum = 0;
    expiry = 0;
    flags = 0;
    setSeq(0);
    std::memcpy(keyData(), key.data(), key.size());
    state.store(1, std::memory_order_release);
  }

  // seq and expiry decide whether an item is dead (LiveCheck), which an
  // evictor's scan asks before it claims the item, while a set may be
  // rewriting it in place: both are read and written as relaxed atomics
  // (plain moves on x86). A value read unclaimed is a hint; the claimer
  // reads it again.
  uint64_t seq() const {
    return (static_cast<uint64_t>(relaxed(seqHi).load(std::memory_order_relaxed)) << 32) |
           relaxed(seqLo).load(std::memory_order_relaxed);
  }
  void setSeq(uint64_t s) {
    relaxed(seqLo).store(static_cast<uint32_t>(s), std::memory_order_relaxed);
    relaxed(seqHi).store(static_cast<uint32_t>(s >> 32), std::memory_order_relaxed);
  }
  uint32_t deadline() const { return relaxed(expiry).load(std::memory_order_relaxed); }
  void setDeadline(uint32_t d) { relaxed(expiry).store(d, std::memory_order_relaxed); }
  // Copies what a move between tiers keeps: expiry, flags, sequence and
  // the fetched bit (a locked OR only for a fetched item: the copy is not
  // published yet, but a stale lookup's failed CAS may still read it).
  void copyMetaFrom(const Item& src) {
    if (src.fetched()) state.fetch_or(kFetched, std::memory_order_relaxed);
    expiry = src.expiry;
    flags = src.flags;
    seqLo = src.seqLo;
    seqHi = src.seqHi;
  }

  uint32_t keySize() const { return sizesRef().load(std::memory_order_relaxed) & 0xFF; }
  uint32_t valueSize() const { return sizesRef().load(std::memory_order_relaxed) >> 8; }
  // An in-place rewrite's new value length; the key (and its length) stays.
  void setValueSize(uint32_t valueSize) {
    sizesRef().store(keySize() | (valueSize << 8), std::memory_order_relaxed);
  }
  char* keyData() { return reinterpret_cast<char*>(this) + sizeof(Item); }
  const char* keyData() const { return reinterpret_cast<const char*>(this) + sizeof(Item); }
  std::string_view key() const { return {keyData(), keySize()}; }
  char* valueData() { return keyData() + keySize(); }
  const char* valueData() const { return keyData() + keySize(); }
  std::string_view value() const { return {valueData(), valueSize()}; }
  bool hasKey(std::string_view k) const {
    if (keySize() != k.size()) return false;
    // Every chain item a lookup passes is compared: keys of 8 to 16 bytes
    // (most keys) as two overlapping 8-byte words, without a call.
    if (k.size() >= 8 && k.size() <= 16) {
      const size_t tail = k.size() - 8;
      return (word(keyData()) ^ word(k.data())) == 0 && (word(keyData() + tail) ^ word(k.data() + tail)) == 0;
    }
    return std::memcmp(keyData(), k.data(), k.size()) == 0;
  }

  static constexpr size_t totalSize(size_t keySize, size_t valueSize) { return sizeof(Item) + keySize + valueSize; }

  // Takes a reference unless the item is owned exclusively or the count is
  // saturated. Only called while the item is reachable (stripe lock held).
  bool tryAcquire() {
    uint32_t s = state.load(std::memory_order_relaxed);
    do {
      if ((s & (kExclusive | kFreeSlot)) || (s & kRefMask) == kRefMask) return false;
    } while (!state.compare_exchange_weak(s, s + 1, std::memory_order_acquire, std::memory_order_relaxed));
    return true;
  }

  // tryAcquire for a lock-free lookup, which may hold a ref to an item
  // unlinked and reused since: pins only a published item, so a stale
  // lookup never pins an item its allocator still fills (whose only
  // reference its WriteHandle holds: Cache::discardUnpublished). Failing
  // says nothing; the caller looks again under the stripe lock.
  bool tryAcquirePublished() {
    uint32_t s = state.load(std::memory_order_relaxed);
    do {
      if ((s & (kAccessible | kExclusive | kFreeSlot)) != kAccessible || (s & kRefMask) == kRefMask) return false;
    } while (!state.compare_exchange_weak(s, s + 1, std::memory_order_acquire, std::memory_order_relaxed));
    return true;
  }

  // Drops a reference; returns true if the caller now owns the item
  // exclusively (it was the last reference to an unpublished item).
  bool releaseRef() {
    uint32_t s = state.load(std::memory_order_relaxed);
    uint32_t next;
    do {
      TC_DCHECK((s & kRefMask) != 0);  // a release without a reference
      next = s - 1;
      if ((s & kRefMask) == 1 && !(s & (kAccessible | kExclusive | kMoving))) next |= kExclusive;
    } while (!state.compare_exchange_weak(s, next, std::memory_order_acq_rel, std::memory_order_relaxed));
    return (next & kExclusive) && !(s & kExclusive);
  }

  // Clears kAccessible (caller holds the stripe lock and has just unlinked
  // the item); returns true if the caller now owns it exclusively.
  bool unpublish() {
    uint32_t s = state.load(std::memory_order_relaxed);
    uint32_t next;
    do {
      TC_DCHECK(s & kAccessible);  // only a published item is unpublished
      next = s & ~kAccessible;
      if ((s & kRefMask) == 0 && !(s & (kExclusive | kMoving))) next |= kExclusive;
    } while (!state.compare_exchange_weak(s, next, std::memory_order_acq_rel, std::memory_order_relaxed));
    return (next & kExclusive) && !(s & kExclusive);
  }

  // Claims an unpinned item for eviction or slab release.
  bool tryMarkExclusive() {
    uint32_t s = state.load(std::memory_order_relaxed);
    do {
      if ((s & kRefMask) || (s & (kExclusive | kFreeSlot | kMoving))) return false;
    } while (!state.compare_exchange_weak(s, s | kExclusive, std::memory_order_acquire, std::memory_order_relaxed));
    return true;
  }

  // Ends an in-place rewrite (the caller claimed the published item with
  // tryMarkExclusive under its stripe lock, rewrote it and did its policy
  // update): the item is published and unpinned again. A plain release
  // store, not a locked read-modify-write: while the claim lasts nobody
  // else writes `state` (a pin needs the stripe lock the rewriter holds, a
  // pin holder cannot exist since the claim needs refcount 0, and every
  // other claim or move is a CAS that fails on kExclusive). So the store
  // does not wait for the value's store misses to drain, and the caller's
  // next operation starts while they do.
  void endRewrite() {
    const uint32_t s = state.load(std::memory_order_relaxed);
    TC_DCHECK((s & (kExclusive | kAccessible | kRefMask)) == (kExclusive | kAccessible));
    state.store(s & ~(kExclusive | kFetched), std::memory_order_release);  // a new version: not fetched yet
  }

  // Gives back a rewrite's claim before anything was written, because a
  // lock-free reader pins the item (hazard_pins.h). A CAS, unlike
  // endRewrite: that reader may be setting kFetched or a hit bit meanwhile.
  void undoRewriteClaim() {
    TC_DCHECK((state.load(std::memory_order_relaxed) & (kExclusive | kAccessible | kRefMask)) ==
              (kExclusive | kAccessible));
    state.fetch_and(~kExclusive, std::memory_order_release);
  }

  // Starts a move of a published item. Eviction (demotion) requires it
  // unpinned; a promotion may move an item that readers hold.
  bool tryMarkMoving(bool allowPinned) {
    uint32_t s = state.load(std::memory_order_relaxed);
    do {
      if ((s & (kExclusive | kFreeSlot | kMoving)) || !(s & kAccessible)) return false;
      if (!allowPinned && (s & kRefMask)) return false;
    } while (!state.compare_exchange_weak(s, s | kMoving, std::memory_order_acquire, std::memory_order_relaxed));
    return true;
  }

  // Ends a move; returns true if the caller now owns the item (it was
  // unpublished by the move or by a racing remove, and nobody pins it).
  bool finishMove() {
    uint32_t s = state.load(std::memory_order_relaxed);
    uint32_t next;
    do {
      TC_DCHECK(s & kMoving);  // only the mover that set kMoving ends the move
      next = s & ~kMoving;
      if ((s & kRefMask) == 0 && !(s & (kAccessible | kExclusive))) next |= kExclusive;
    } while (!state.compare_exchange_weak(s, next, std::memory_order_acq_rel, std::memory_order_relaxed));
    return (next & kExclusive) && !(s & kExclusive);
  }

  // Counts a hit in a lower tier; returns the new count, or 0 once it is
  // saturated at 7, so that each count is reported to one caller only.
  uint32_t addLowerTierHit() {
    uint32_t s = state.load(std::memory_order_relaxed);
    while ((s & kHitMask) != kHitMask) {
      if (state.compare_exchange_weak(s, s + (1u << kHitShift), std::memory_order_relaxed)) {
        return ((s & kHitMask) >> kHitShift) + 1;
      }
    }
    return 0;
  }
  void clearLowerTierHits() { state.fetch_and(~kHitMask, std::memory_order_relaxed); }

  bool fetched() const { return state.load(std::memory_order_relaxed) & kFetched; }
  // Sets kFetched (caller pins the item); returns whether it was set
  // already. Writes the shared line only the first time, as the CLOCK
  // policy sets its access bit: a hit on a fetched item is one load.
  bool markFetched() {
    if (state.load(std::memory_order_relaxed) & kFetched) return true;
    return state.fetch_or(kFetched, std::memory_order_relaxed) & kFetched;
  }

  // What the one thread allowed to free or reuse the slot sees: claimed,
  // unpinned, unpublished, not being moved (checked where slots are freed).
  static bool isOwnedState(uint32_t s) {
    return (s & kExclusive) && !(s & (kRefMask | kAccessible | kMoving | kFreeSlot));
  }

 private:
  static uint64_t word(const char* p) {
    uint64_t w;
    std::memcpy(&w, p, sizeof w);
    return w;
  }
  static std::atomic_ref<uint32_t> relaxed(const uint32_t& field) {
    return std::atomic_ref<uint32_t>(const_cast<uint32_t&>(field));
  }
  std::atomic_ref<uint32_t> sizesRef() const { return relaxed(sizes); }
};

static_assert(sizeof(Item) == 48, "item header budget is 48 bytes");
static_assert(std::atomic_ref<uint32_t>::is_always_lock_free);
static_assert(alignof(Item) == 4);
static_assert(Item::kMaxKeySize <= 0xFF, "key length has 8 bits");
static_assert(std::atomic<uint32_t>::is_always_lock_free);

}  // namespace tiercache
