#include "lru_policy.h"

#include <thread>

namespace tiercache {

namespace {
uint32_t stamp(uint32_t flags) { return flags | (coarseNowMs() & EvictionHook::kTimeMask); }
}  // namespace

LruPolicy::LruPolicy(const HookResolver& resolver, uint32_t insertionPoint, uint32_t refreshMs, double refreshRatio)
    : EvictionPolicy(resolver),
      insertionPoint_(insertionPoint),
      refreshMs_(refreshMs),
      refreshRatio_(refreshRatio),
      interval_(refreshRatio > 0 ? 0 : refreshMs),  // adaptive: exact LRU until the first eviction
      hot_(resolver),
      cold_(resolver),
      pending_(std::make_unique<std::atomic<RefWord>[]>(kPending)) {
  for (uint32_t i = 0; i < kPending; ++i) pending_[i].store(kNullRef, std::memory_order_relaxed);
}

void LruPolicy::add(RefWord ref) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  if (interval_.load(std::memory_order_relaxed) == 0) applyPendingLocked();
  addLocked(ref);
}

void LruPolicy::addLocked(RefWord ref) {
  EvictionHook& h = r_.hook(ref);
  TC_DCHECK(!(h.meta.load(std::memory_order_relaxed) & EvictionHook::kInList));  // added at most once
  if (insertionPoint_ == 0) {
    h.meta.store(stamp(EvictionHook::kInList | EvictionHook::kHot), std::memory_order_relaxed);
    hot_.pushHead(ref);
    return;
  }
  h.meta.store(stamp(EvictionHook::kInList), std::memory_order_relaxed);
  cold_.pushHead(ref);
  rebalanceLocked();
}

void LruPolicy::addBatch(const RefWord* refs, size_t n) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  if (interval_.load(std::memory_order_relaxed) == 0) applyPendingLocked();
  for (size_t i = 0; i < n; ++i) addLocked(refs[i]);
}

bool LruPolicy::remove(RefWord ref) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  applyPendingLocked();
  return removeLocked(ref);
}

void LruPolicy::removeBatch(const RefWord* refs, size_t n) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  applyPendingLocked();
  for (size_t i = 0; i < n; ++i) removeLocked(refs[i]);
}

bool LruPolicy::addAndRemove(RefWord newRef, RefWord oldRef) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  applyPendingLocked();
  addLocked(newRef);
  return removeLocked(oldRef);
}

bool LruPolicy::replace(RefWord newRef, RefWord oldRef) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  applyPendingLocked();
  EvictionHook& o = r_.hook(oldRef);
  const uint32_t meta = o.meta.load(std::memory_order_relaxed);
  if (!(meta & EvictionHook::kInList)) {
    addLocked(newRef);
    return false;
  }
  EvictionHook& n = r_.hook(newRef);
  const uint32_t now = coarseNowMs() & EvictionHook::kTimeMask;
  if (((now - meta) & EvictionHook::kTimeMask) < interval_.load(std::memory_order_relaxed)) {
    listOf(meta).replace(oldRef, newRef);
    n.meta.store(meta, std::memory_order_relaxed);
  } else {
    listOf(meta).unlink(oldRef);
    n.meta.store(EvictionHook::kInList | EvictionHook::kHot | now, std::memory_order_relaxed);
    hot_.pushHead(newRef);
    rebalanceLocked();
  }
  o.meta.store(0, std::memory_order_relaxed);
  return true;
}

bool LruPolicy::removeLocked(RefWord ref) {
  EvictionHook& h = r_.hook(ref);
  const uint32_t meta = h.meta.load(std::memory_order_relaxed);
  if (!(meta & EvictionHook::kInList)) return false;
  listOf(meta).unlink(ref);
  h.meta.store(0, std::memory_order_relaxed);
  rebalanceLocked();
  return true;
}

int64_t LruPolicy::idleMs(const EvictionHook& h) const {
  const uint32_t meta = h.meta.load(std::memory_order_relaxed);
  if (!(meta & EvictionHook::kInList)) return -1;
  return (coarseNowMs() - meta) & EvictionHook::kTimeMask;
}

void LruPolicy::onAccess(RefWord ref, EvictionHook& h) {
  const uint32_t now = coarseNowMs() & EvictionHook::kTimeMask;
  uint32_t seen = h.meta.load(std::memory_order_relaxed);
  // Modular age: an item idle for more than 2^28 ms may look fresh once.
  if (((now - seen) & EvictionHook::kTimeMask) < interval_.load(std::memory_order_relaxed)) return;
  if (!(seen & EvictionHook::kInList)) return;
  // Claim this refresh: with the time moved, the hits that follow within the
  // interval stop above. A changed hook (moved, removed) means no claim.
  if (!h.meta.compare_exchange_strong(seen, (seen & ~EvictionHook::kTimeMask) | now, std::memory_order_relaxed)) {
    return;
  }
  if (appendPending(ref)) return;
  std::unique_lock<AdaptiveMutex> g(lock_, std::try_to_lock);
  if (!g.owns_lock()) return;
  // The ring is full. Where a background worker applies it on its looks,
  // this hit applies only the oldest kHitApply moves and queues its own
  // behind the rest: a get pays for a few moves, not a whole ring (a whole
  // ring was the 1-thread seed's get p99.9 with the evictor on), and
  // the worker does the rest. Without one, nobody else would soon: the hit
  // applies all (32 at a time moved the same work from p99.9 to p99).
  // Order is kept either way: the ring is FIFO.
  if (backgroundApplies_.load(std::memory_order_relaxed)) {
    applyPendingLocked(kHitApply);
    if (appendPending(ref)) return;
  }
  applyPendingLocked();  // refilled by other hits meanwhile
  moveToHeadLocked(ref);
}

bool LruPolicy::appendPending(RefWord ref) {
  uint32_t t = pendingTail_.load(std::memory_order_relaxed);
  do {
    if (t - pendingHead_.load(std::memory_order_acquire) >= kPending) return false;
  } while (!pendingTail_.compare_exchange_weak(t, t + 1, std::memory_order_relaxed, std::memory_order_relaxed));
  pending_[t & (kPending - 1)].store(ref, std::memory_order_release);
  return true;
}

void LruPolicy::applyPendingAccesses(bool byBackgroundWorker) {
  if (byBackgroundWorker && !backgroundApplies_.load(std::memory_order_relaxed)) {
    backgroundApplies_.store(true, std::memory_order_relaxed);
  }
  if (pendingHead_.load(std::memory_order_relaxed) == pendingTail_.load(std::memory_order_relaxed)) return;
  std::lock_guard<AdaptiveMutex> g(lock_);
  applyPendingLocked();
}

void LruPolicy::applyPendingLocked(uint32_t most) {
  uint32_t head = pendingHead_.load(std::memory_order_relaxed);
  uint32_t tail = pendingTail_.load(std::memory_order_acquire);
  if (head == tail) return;
  if (tail - head > most) tail = head + most;
  RefWord refs[kPending];
  size_t n = 0;
  for (; head != tail; ++head) {
    std::atomic<RefWord>& slot = pending_[head & (kPending - 1)];
    RefWord ref;
    // An index claimed but not yet stored: that hit is between two
    // instructions (it holds no lock), so the wait is short.
    while ((ref = slot.exchange(kNullRef, std::memory_order_acquire)) == kNullRef) std::this_thread::yield();
    refs[n++] = ref;
    __builtin_prefetch(&r_.hook(ref));
  }
  pendingHead_.store(head, std::memory_order_release);
  // The neighbours each move relinks, requested together: their misses
  // overlap instead of following one another. Only for items still in the
  // list: one that left it since its hit may have a slot that another
  // thread is filling (Item::init writes the links without this lock).
  for (size_t i = 0; i < n; ++i) {
    const EvictionHook& h = r_.hook(refs[i]);
    if (!(h.meta.load(std::memory_order_relaxed) & EvictionHook::kInList)) continue;
    if (h.prev() != kNullRef) __builtin_prefetch(&r_.hook(h.prev()), 1);
    if (h.next() != kNullRef) __builtin_prefetch(&r_.hook(h.next()), 1);
  }
  for (size_t i = 0; i < n; ++i) moveToHeadLocked(refs[i]);
}

void LruPolicy::moveToHeadLocked(RefWord ref) {
  EvictionHook& h = r_.hook(ref);
  const uint32_t meta = h.meta.load(std::memory_order_relaxed);
  if (!(meta & EvictionHook::kInList)) return;  // left the list since its hit
  listOf(meta).unlink(ref);
  h.meta.store(EvictionHook::kInList | EvictionHook::kHot | (meta & EvictionHook::kTimeMask), std::memory_order_relaxed);
  hot_.pushHead(ref);
  rebalanceLocked();
}

void LruPolicy::rebalanceLocked() {
  if (insertionPoint_ == 0) return;
  const size_t target = (hot_.size() + cold_.size()) >> insertionPoint_;
  // Move the boundary one item at a time: each call changes sizes by at most one.
  while (cold_.size() < target && hot_.size() > 0) {
    const RefWord ref = hot_.tail();
    hot_.unlink(ref);
    r_.hook(ref).meta.fetch_and(~EvictionHook::kHot, std::memory_order_relaxed);
    cold_.pushHead(ref);
  }
  while (cold_.size() > target + 1) {
    const RefWord ref = cold_.head();
    cold_.unlink(ref);
    r_.hook(ref).meta.fetch_or(EvictionHook::kHot, std::memory_order_relaxed);
    hot_.pushTail(ref);  // older than everything in hot
  }
}

size_t LruPolicy::evict(size_t want, size_t maxScan, EvictionVisitor& visitor) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  applyPendingLocked();
  size_t taken = 0;
  size_t scanned = 0;
  for (IntrusiveList* list : {&cold_, &hot_}) {
    RefWord cur = list->tail();
    while (cur != IntrusiveList::kNull && taken < want && scanned < maxScan) {
      const RefWord prev = list->prevOf(cur);
      ++scanned;
      TC_DCHECK(&listOf(r_.hook(cur).meta.load(std::memory_order_relaxed)) == list);  // its meta names its list
      switch (visitor.visit(cur)) {
        case EvictionVisitor::Verdict::kTake: {
          const uint32_t idle = (coarseNowMs() - r_.hook(cur).meta.load(std::memory_order_relaxed)) &
                                EvictionHook::kTimeMask;
          noteTaken(cur, idle);
          noteEvictionAge(idle);
          list->unlink(cur);
          r_.hook(cur).meta.store(0, std::memory_order_relaxed);
          ++taken;
          break;
        }
        case EvictionVisitor::Verdict::kSkip:
          break;
        case EvictionVisitor::Verdict::kRotate:
          // To the head of the hot part: the scan already holds `prev`.
          list->unlink(cur);
          r_.hook(cur).meta.store(stamp(EvictionHook::kInList | EvictionHook::kHot), std::memory_order_relaxed);
          hot_.pushHead(cur);
          break;
        case EvictionVisitor::Verdict::kStop:
          rebalanceLocked();
          return taken;
      }
      cur = prev;
    }
  }
  rebalanceLocked();
  return taken;
}

void LruPolicy::noteEvictionAge(uint32_t idleMs) {
  if (refreshRatio_ <= 0) return;
  const double want = refreshRatio_ * static_cast<double>(idleMs);
  interval_.store(want >= refreshMs_ ? refreshMs_ : static_cast<uint32_t>(want), std::memory_order_relaxed);
}

size_t LruPolicy::size() const {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return hot_.size() + cold_.size();
}

bool LruPolicy::forEach(void (*fn)(RefWord, void*), void* ctx) const {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return hot_.forEach(fn, ctx) && cold_.forEach(fn, ctx);
}

}  // namespace tiercache
