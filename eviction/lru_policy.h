// LruPolicy: least-recently-used with optional mid-point insertion.
//
// Two lists under one lock: hot (above the insertion point) and cold
// (below). With insertion point k > 0, new items enter at the head of cold,
// and cold is kept at size/2^k by moving items across the boundary, so a
// one-pass scan of new keys only churns the bottom 1/2^k of the list. With
// k = 0 everything lives in hot (classic LRU). A hit promotes to the head of
// hot, at most once per refresh interval per item, through the queue below;
// it never waits for the lock: LRU order is approximate by design.
//
// The refresh interval adapts (CacheLib's lruRefreshRatio idea, bounded the
// other way): it is min(refreshMs, ratio x eviction age), where the eviction
// age is the idle time of the last item evicted. A cache whose items live
// 50 ms between last move and eviction refreshes a hit after 5 ms (ratio
// 0.1), so hot items are kept; a cache whose tail is an hour old refreshes
// at most once per refreshMs, so hits rarely take the lock. A hit younger
// than the interval is in the top of the list already (relative to the
// tail's age), and moving it would not change what is evicted next.
//
// A hit does not move the item itself: it claims the refresh on the hook
// (one CAS of the time bits, so other hits within the interval stop there)
// and appends the ref to a small ring of pending moves. Whoever takes the
// list lock next applies the ring first, in order, a batch whose cache
// misses overlap: the background evictor on its look at the class, an
// eviction, a removal. So with a background evictor the hit path takes no
// lock, and without one the moves are paid in batches. A move whose item
// left the list since (its hook says so) is skipped. A hit appends only
// while its item is pinned (or claimed), and a slab that leaves the class
// applies the ring first, once nothing in it is pinned (releaseSlab), so a
// ref in the ring always means a slot of this class. A hit that finds the
// ring full applies it, if the lock is free (else that refresh is skipped,
// as a busy lock skipped it before); where a background worker applies the
// ring too, only its oldest 32 moves, and queues its own behind the rest.
// With a refresh interval of 0 (exact LRU) add() applies the ring too, so
// the order is exactly that of the calls; with an interval, a pending move
// may land above an item added after it (LRU order is approximate then
// anyway).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "../common/adaptive_mutex.h"
#include "eviction_policy.h"
#include "intrusive_list.h"

namespace tiercache {

class LruPolicy final : public EvictionPolicy {
 public:
  LruPolicy(const HookResolver& resolver, uint32_t insertionPoint, uint32_t refreshMs, double refreshRatio = 0.0);

  // The interval in force now (ms).
  uint32_t refreshIntervalMs() const { return interval_.load(std::memory_order_relaxed); }
  // Hits buffered and not yet applied (racy outside the lock: for tests).
  uint32_t pendingAccesses() const {
    return pendingTail_.load(std::memory_order_relaxed) - pendingHead_.load(std::memory_order_relaxed);
  }

  void add(RefWord ref) override;
  void addBatch(const RefWord* refs, size_t n) override;
  bool remove(RefWord ref) override;
  void removeBatch(const RefWord* refs, size_t n) override;
  bool addAndRemove(RefWord newRef, RefWord oldRef) override;
  // The new item keeps the old one's place and move time, moved to the head
  // only as a hit would be (after the refresh interval).
  bool replace(RefWord newRef, RefWord oldRef) override;
  size_t evict(size_t want, size_t maxScan, EvictionVisitor& visitor) override;
  // byBackgroundWorker: from now on a hit that finds the ring full applies
  // only its oldest kHitApply moves (the worker applies the rest).
  void applyPendingAccesses(bool byBackgroundWorker) override;
  void backgroundWorkerStopped() override { backgroundApplies_.store(false, std::memory_order_relaxed); }
  size_t size() const override;
  const char* name() const override { return "lru"; }
  bool forEach(void (*fn)(RefWord, void*), void* ctx) const override;
  // The hook's stamp: the insertion or the last refresh, which an access
  // makes at most once per refresh interval (exact while the interval is
  // 0), as memcached's item time; modulo 2^29 ms (6.2 days).
  int64_t idleMs(const EvictionHook& hook) const override;

 private:
  void onAccess(RefWord ref, EvictionHook& hook) override;
  // False when the ring is full.
  bool appendPending(RefWord ref);
  // Moves the ring's oldest `most` refs (all by default) to the head of
  // hot, in order.
  void applyPendingLocked(uint32_t most = kPending);
  void moveToHeadLocked(RefWord ref);
  void rebalanceLocked();
  void addLocked(RefWord ref);
  bool removeLocked(RefWord ref);
  void noteEvictionAge(uint32_t idleMs);
  IntrusiveList& listOf(uint32_t meta) { return (meta & EvictionHook::kHot) ? hot_ : cold_; }

  const uint32_t insertionPoint_;
  const uint32_t refreshMs_;
  const double refreshRatio_;
  std::atomic<uint32_t> interval_;
  mutable AdaptiveMutex lock_;
  IntrusiveList hot_;
  IntrusiveList cold_;

  // The ring of pending moves: hits claim an index (pendingTail_) and store
  // their ref there; the lock holder takes refs up to the tail it read and
  // advances pendingHead_. A slot holds kNullRef when empty.
  static constexpr uint32_t kPending = 256;
  static constexpr uint32_t kHitApply = 32;  // see applyPendingAccesses
  std::atomic<bool> backgroundApplies_{false};
  std::unique_ptr<std::atomic<RefWord>[]> pending_;
  alignas(64) std::atomic<uint32_t> pendingTail_{0};
  alignas(64) std::atomic<uint32_t> pendingHead_{0};
};

}  // namespace tiercache
