#include "lru_policy.h"

namespace tiercache {

namespace {
uint32_t stamp(uint32_t flags) { return flags | (coarseNowMs() & EvictionHook::kTimeMask); }
}  // namespace

LruPolicy::LruPolicy(const HookResolver& resolver, uint32_t insertionPoint, uint32_t refreshMs)
    : r_(resolver), insertionPoint_(insertionPoint), refreshMs_(refreshMs), hot_(resolver), cold_(resolver) {}

void LruPolicy::add(uint32_t ref) {
  EvictionHook& h = r_.hook(ref);
  std::lock_guard<std::mutex> g(lock_);
  if (insertionPoint_ == 0) {
    h.meta.store(stamp(EvictionHook::kInList | EvictionHook::kHot), std::memory_order_relaxed);
    hot_.pushHead(ref);
    return;
  }
  h.meta.store(stamp(EvictionHook::kInList), std::memory_order_relaxed);
  cold_.pushHead(ref);
  rebalanceLocked();
}

bool LruPolicy::remove(uint32_t ref) {
  EvictionHook& h = r_.hook(ref);
  std::lock_guard<std::mutex> g(lock_);
  const uint32_t meta = h.meta.load(std::memory_order_relaxed);
  if (!(meta & EvictionHook::kInList)) return false;
  listOf(meta).unlink(ref);
  h.meta.store(0, std::memory_order_relaxed);
  rebalanceLocked();
  return true;
}

void LruPolicy::recordAccess(uint32_t ref) {
  EvictionHook& h = r_.hook(ref);
  const uint32_t now = coarseNowMs() & EvictionHook::kTimeMask;
  const uint32_t seen = h.meta.load(std::memory_order_relaxed);
  // Modular age: an item idle for more than 2^28 ms may look fresh once.
  if (((now - seen) & EvictionHook::kTimeMask) < refreshMs_) return;
  std::unique_lock<std::mutex> g(lock_, std::try_to_lock);
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
  std::lock_guard<std::mutex> g(lock_);
  size_t taken = 0;
  size_t scanned = 0;
  for (IntrusiveList* list : {&cold_, &hot_}) {
    uint32_t cur = list->tail();
    while (cur != IntrusiveList::kNull && taken < want && scanned < maxScan) {
      const uint32_t prev = list->prevOf(cur);
      ++scanned;
      switch (visitor.visit(cur)) {
        case EvictionVisitor::Verdict::kTake:
          list->unlink(cur);
          r_.hook(cur).meta.store(0, std::memory_order_relaxed);
          ++taken;
          break;
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

size_t LruPolicy::size() const {
  std::lock_guard<std::mutex> g(lock_);
  return hot_.size() + cold_.size();
}

bool LruPolicy::forEach(void (*fn)(uint32_t, void*), void* ctx) const {
  std::lock_guard<std::mutex> g(lock_);
  return hot_.forEach(fn, ctx) && cold_.forEach(fn, ctx);
}

}  // namespace tiercache
