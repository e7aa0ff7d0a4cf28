#include "lru_policy.h"

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
      cold_(resolver) {}

void LruPolicy::add(uint32_t ref) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  addLocked(ref);
}

void LruPolicy::addLocked(uint32_t ref) {
  EvictionHook& h = r_.hook(ref);
  if (insertionPoint_ == 0) {
    h.meta.store(stamp(EvictionHook::kInList | EvictionHook::kHot), std::memory_order_relaxed);
    hot_.pushHead(ref);
    return;
  }
  h.meta.store(stamp(EvictionHook::kInList), std::memory_order_relaxed);
  cold_.pushHead(ref);
  rebalanceLocked();
}

void LruPolicy::addBatch(const uint32_t* refs, size_t n) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  for (size_t i = 0; i < n; ++i) addLocked(refs[i]);
}

bool LruPolicy::remove(uint32_t ref) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return removeLocked(ref);
}

void LruPolicy::removeBatch(const uint32_t* refs, size_t n) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  for (size_t i = 0; i < n; ++i) removeLocked(refs[i]);
}

bool LruPolicy::addAndRemove(uint32_t newRef, uint32_t oldRef) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  addLocked(newRef);
  return removeLocked(oldRef);
}

bool LruPolicy::replace(uint32_t newRef, uint32_t oldRef) {
  std::lock_guard<AdaptiveMutex> g(lock_);
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

bool LruPolicy::removeLocked(uint32_t ref) {
  EvictionHook& h = r_.hook(ref);
  const uint32_t meta = h.meta.load(std::memory_order_relaxed);
  if (!(meta & EvictionHook::kInList)) return false;
  listOf(meta).unlink(ref);
  h.meta.store(0, std::memory_order_relaxed);
  rebalanceLocked();
  return true;
}

void LruPolicy::onAccess(uint32_t ref, EvictionHook& h) {
  const uint32_t now = coarseNowMs() & EvictionHook::kTimeMask;
  const uint32_t seen = h.meta.load(std::memory_order_relaxed);
  // Modular age: an item idle for more than 2^28 ms may look fresh once.
  if (((now - seen) & EvictionHook::kTimeMask) < interval_.load(std::memory_order_relaxed)) return;
  std::unique_lock<AdaptiveMutex> g(lock_, std::try_to_lock);
  if (!g.owns_lock()) return;
  const uint32_t meta = h.meta.load(std::memory_order_relaxed);
  if (!(meta & EvictionHook::kInList)) return;
  listOf(meta).unlink(ref);
  h.meta.store(EvictionHook::kInList | EvictionHook::kHot | now, std::memory_order_relaxed);
  hot_.pushHead(ref);
  rebalanceLocked();
}

void LruPolicy::rebalanceLocked() {
  if (insertionPoint_ == 0) return;
  const size_t target = (hot_.size() + cold_.size()) >> insertionPoint_;
  // Move the boundary one item at a time: each call changes sizes by at most one.
  while (cold_.size() < target && hot_.size() > 0) {
    const uint32_t ref = hot_.tail();
    hot_.unlink(ref);
    r_.hook(ref).meta.fetch_and(~EvictionHook::kHot, std::memory_order_relaxed);
    cold_.pushHead(ref);
  }
  while (cold_.size() > target + 1) {
    const uint32_t ref = cold_.head();
    cold_.unlink(ref);
    r_.hook(ref).meta.fetch_or(EvictionHook::kHot, std::memory_order_relaxed);
    hot_.pushTail(ref);  // older than everything in hot
  }
}

size_t LruPolicy::evict(size_t want, size_t maxScan, EvictionVisitor& visitor) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  size_t taken = 0;
  size_t scanned = 0;
  for (IntrusiveList* list : {&cold_, &hot_}) {
    uint32_t cur = list->tail();
    while (cur != IntrusiveList::kNull && taken < want && scanned < maxScan) {
      const uint32_t prev = list->prevOf(cur);
      ++scanned;
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

bool LruPolicy::forEach(void (*fn)(uint32_t, void*), void* ctx) const {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return hot_.forEach(fn, ctx) && cold_.forEach(fn, ctx);
}

}  // namespace tiercache
