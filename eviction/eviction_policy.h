// EvictionPolicy: the order in which one (tier, pool, class) gives up items.
//
// Policies keep intrusive lists threaded through an EvictionHook inside each
// item, addressed by 32-bit refs (never pointers), and reach the hooks
// through a HookResolver that the cache implements: eviction/ knows nothing
// of items, slabs or tiers.
//
// Concurrency contract:
//   - add/remove/evict take the policy's own list lock (one per class).
//   - recordAccess is the hit path: it may skip work under contention and
//     must never block for long (CLOCK and S3-FIFO take no lock at all, one
//     relaxed atomic on the hook; W-TinyLFU adds a sketch count buffered
//     in the thread's own stripe, read_buffer.h, applied under try_lock;
//     LRU queues a move at most once per refresh interval, and applies the
//     queue itself only with try_lock when it is full).
//     It must never wait for a lock: an in-place rewrite calls it holding
//     an index stripe lock (and the item's claim).
//   - A ref is added at most once and removed at most once; remove() of a
//     ref not in the list returns false (membership is the hook's kInList
//     bit, changed only under the list lock).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../common/clock.h"
#include "window_climber.h"

namespace tiercache {

// A member's reference as policies see it: the 40 bits of the cache's
// item reference (allocator/compressed_ref.h) in a 64-bit word. All ones
// (kNullRef) is never a member.
using RefWord = uint64_t;
inline constexpr RefWord kNullRefWord = (RefWord{1} << 40) - 1;

// 16 bytes inside every item. prev/next (40-bit refs, stored as a low word
// and a high byte) are guarded by the list lock; meta is atomic because hits
// update it without the lock. Bit 31 is kInList for every policy; the rest
// is the policy's own (each header says how):
//   LRU    bit 29 kHot (mid-point), bits 0..28 last-move time (ms mod 2^29)
//   CLOCK  bit 30 kAccessed, bits 0..28 insertion time
//   S3-FIFO, W-TinyLFU: see their headers (queue, frequency, time bits).
// ownerBytes are the item's, never touched by a policy (the item keeps the
// high byte of its index chain link there, which fills the header's last
// word instead of adding one).
struct EvictionHook {
  static constexpr uint32_t kInList = 1u << 31;
  static constexpr uint32_t kAccessed = 1u << 30;
  static constexpr uint32_t kHot = 1u << 29;
  static constexpr uint32_t kTimeMask = (1u << 29) - 1;

  uint32_t prevLo;
  uint32_t nextLo;
  std::atomic<uint32_t> meta;
  uint8_t prevHi;
  uint8_t nextHi;
  uint8_t ownerBytes[2];

  RefWord prev() const { return prevLo | (RefWord{prevHi} << 32); }
  RefWord next() const { return nextLo | (RefWord{nextHi} << 32); }
  void setPrev(RefWord r) {
    prevLo = static_cast<uint32_t>(r);
    prevHi = static_cast<uint8_t>(r >> 32);
  }
  void setNext(RefWord r) {
    nextLo = static_cast<uint32_t>(r);
    nextHi = static_cast<uint8_t>(r >> 32);
  }
};
static_assert(sizeof(EvictionHook) == 16);

class HookResolver {
 public:
  virtual EvictionHook& hook(RefWord ref) const = 0;
  // A 64-bit hash of the key of the member `ref` (stable across tiers, so a
  // ghost entry or a sketch count follows a key that is demoted and comes
  // back). Called for pinned or list-locked members only.
  virtual uint64_t keyHash(RefWord ref) const = 0;

 protected:
  ~HookResolver() = default;
};

// Decides, under the list lock, whether a candidate can go. Every policy
// honours every verdict:
//   kTake    the candidate goes: the policy unlinks it (and clears its hook
//            meta) before the lock is released.
//   kSkip    leave it where it is this time (another thread is moving or
//            freeing it; that ends soon).
//   kRotate  it cannot go now and may not for a long time (a reader pins it):
//            the policy moves it to its warm end, as a hit would, so that the
//            next scans do not meet it again at the cold end. Without this a
//            few long-lived handles on the coldest items fill every scan
//            window and block the class (issue 9, item 4).
//   kStop    end the scan.
// kSkip and kRotate count towards maxScan.
class EvictionVisitor {
 public:
  enum class Verdict { kTake, kSkip, kRotate, kStop };
  virtual Verdict visit(RefWord ref) = 0;
  // A candidate the policy turns away rather than ages out: S3-FIFO's small
  // queue evicting an item hit fewer than twice, W-TinyLFU's filter refusing
  // the window's victim. The cache may drop such items instead of demoting
  // them (eviction.demote_rejected); by default they are ordinary victims.
  virtual Verdict visitRejected(RefWord ref) { return visit(ref); }

 protected:
  ~EvictionVisitor() = default;
};

// Ages (ms) of evicted items in power-of-two buckets: relaxed counters
// bumped under the list lock, read by stats at any time.
class EvictionAgeHistogram {
 public:
  static constexpr int kBuckets = 32;
  void record(uint32_t ageMs);
  uint64_t count() const;
  // Upper edge of the bucket holding the median (0 when nothing recorded).
  uint32_t medianMs() const;

 private:
  std::atomic<uint64_t> buckets_[kBuckets] = {};
};

// Told of every item a policy gives up (a kTake), under the policy's list
// lock, so each class's observer has one writer at a time. The marginal-hits
// slab rebalancer uses it to remember what a class evicted lately.
class EvictionObserver {
 public:
  virtual void evicted(RefWord ref) = 0;

 protected:
  ~EvictionObserver() = default;
};

class EvictionPolicy {
 public:
  static constexpr RefWord kNullRef = kNullRefWord;

  explicit EvictionPolicy(const HookResolver& resolver) : r_(resolver) {}
  virtual ~EvictionPolicy() = default;

  // The new item becomes a member (it must not be one).
  virtual void add(RefWord ref) = 0;
  // Adds n refs as add() would, in that order; a policy with a list lock
  // takes it once for the whole batch (the default just loops).
  virtual void addBatch(const RefWord* refs, size_t n) {
    for (size_t i = 0; i < n; ++i) add(refs[i]);
  }
  // Keys a policy hashes before its lock, per chunk of an addBatch.
  static constexpr size_t kHashChunk = 32;
  // Returns false if ref was not a member.
  virtual bool remove(RefWord ref) = 0;
  // Removes n refs as remove() would; a policy with a list lock takes it
  // once for the whole batch (the default just loops).
  virtual void removeBatch(const RefWord* refs, size_t n) {
    for (size_t i = 0; i < n; ++i) remove(refs[i]);
  }
  // add(newRef) and remove(oldRef) as one step (a replacing set whose old
  // item is in the same class): a policy with a list lock takes it once.
  // Returns what remove(oldRef) would.
  virtual bool addAndRemove(RefWord newRef, RefWord oldRef) {
    add(newRef);
    return remove(oldRef);
  }
  // A replacing set (newRef holds a new value for oldRef's key, same class):
  // a policy may let the new item take the old one's place and count the
  // write as a use of the key (CacheLib's MMContainer::replace keeps the
  // place; Caffeine counts an update as an access), so that rewriting a hot
  // key does not make it a newcomer again. Returns what remove(oldRef)
  // would; when oldRef was not a member, newRef is added as add() would.
  // Every policy here keeps the place; the default is addAndRemove.
  virtual bool replace(RefWord newRef, RefWord oldRef) { return addAndRemove(newRef, oldRef); }
  // A hit on ref (a find, a rewrite in place). The second form takes ref's
  // hook from a caller that has the item at hand, so the policy does not
  // resolve it again (a hot path: every find and every set in place).
  void recordAccess(RefWord ref) { onAccess(ref, r_.hook(ref)); }
  void recordAccess(RefWord ref, EvictionHook& hook) { onAccess(ref, hook); }
  // Offers candidates, coldest first, to visitor; a kTake'n ref is unlinked
  // before the lock is released. Stops after `want` takes, `maxScan`
  // candidates or a kStop. Returns the number taken.
  virtual size_t evict(size_t want, size_t maxScan, EvictionVisitor& visitor) = 0;
  // Applies hits the policy buffered instead of taking its lock on the hit
  // path (LRU's pending moves); the background evictor calls it on each
  // look at the class (byBackgroundWorker), so those moves are its work,
  // not the application's.
  virtual void applyPendingAccesses(bool /*byBackgroundWorker*/) {}
  // The background evictor stopped applying them (it stands aside for want
  // of a spare core): the hit path goes back to applying them all itself.
  virtual void backgroundWorkerStopped() {}
  virtual size_t size() const = 0;
  virtual const char* name() const = 0;
  // Walks the list under the lock (for consistency checks): calls fn on
  // every member and returns false if the links are broken.
  virtual bool forEach(void (*fn)(RefWord ref, void* ctx), void* ctx) const = 0;
  // Bytes the policy holds outside the items (ghost queue, sketch).
  virtual size_t metadataBytes() const { return 0; }
  // Milliseconds since the member's last access as the policy recorded it
  // (memcached's "last access", the server's mg l), or -1 when the policy
  // keeps no access time or `hook` is not in its list. Read without the
  // lock (a relaxed load of the hook): the caller pins the item.
  virtual int64_t idleMs(const EvictionHook& /*hook*/) const { return -1; }

  // Ages of the items this policy gave up (time since insertion, or since
  // the last move for LRU): the class's eviction age.
  const EvictionAgeHistogram& evictionAges() const { return ages_; }
  // Set before other threads use the policy; null (the default): none.
  void setEvictionObserver(EvictionObserver* observer) { observer_ = observer; }

 protected:
  // The policy's part of recordAccess; hook is ref's.
  virtual void onAccess(RefWord ref, EvictionHook& hook) = 0;
  // Every policy calls this for each item it gives up, under its list lock.
  void noteTaken(RefWord ref, uint32_t ageMs) {
    ages_.record(ageMs);
    if (observer_) observer_->evicted(ref);
  }
  // An addBatch for a policy that hashes keys outside its lock: hashes up
  // to kHashChunk refs, then calls addChunk(refs, hashes, count), which
  // takes the lock once for them.
  template <class AddChunk>
  void forHashedChunks(const RefWord* refs, size_t n, AddChunk&& addChunk) const {
    uint64_t hashes[kHashChunk];
    for (size_t at = 0; at < n; at += kHashChunk) {
      const size_t m = n - at < kHashChunk ? n - at : kHashChunk;
      for (size_t i = 0; i < m; ++i) hashes[i] = r_.keyHash(refs[at + i]);
      addChunk(refs + at, hashes, m);
    }
  }

  const HookResolver& r_;  // the cache's: hooks and key hashes of refs
  EvictionAgeHistogram ages_;
  EvictionObserver* observer_ = nullptr;
};

struct EvictionPolicyOptions {
  std::string kind = "lru";         // a name in evictionPolicyNames()
  uint32_t lruInsertionPoint = 0;   // 0 = head; k = 1/2^k of the list below
  // LRU: a hit moves an item at most once per min(lruRefreshMs,
  // lruRefreshRatio x the class's eviction age); ratio 0 = fixed interval.
  uint32_t lruRefreshMs = 1000;
  double lruRefreshRatio = 0.0;
  uint32_t s3fifoSmallPercent = 10;     // S3-FIFO: small queue share of the members
  uint32_t wtinylfuWindowPercent = 1;   // W-TinyLFU: window share of the members
  // W-TinyLFU: when set, the window share and the sketch agings, read at
  // every eviction: the cache's WindowClimber moves them
  // (wtinylfuWindowPercent is then only where the share starts). Shared by
  // all the cache's W-TinyLFU policies.
  std::shared_ptr<const WindowSignal> wtinylfuWindow;
};

// One row per policy: the only place a name maps to an implementation.
// Throws std::invalid_argument for an unknown kind, naming the known ones.
std::unique_ptr<EvictionPolicy> makeEvictionPolicy(const EvictionPolicyOptions& options,
                                                   const HookResolver& resolver);
// The registered names, in table order ("lru", "clock", "s3fifo", "wtinylfu").
std::vector<std::string> evictionPolicyNames();

}  // namespace tiercache
