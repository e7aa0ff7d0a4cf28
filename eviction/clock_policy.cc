#include "clock_policy.h"

namespace tiercache {

void ClockPolicy::add(RefWord ref) {
  EvictionHook& h = r_.hook(ref);
  std::lock_guard<AdaptiveMutex> g(lock_);
  TC_DCHECK(!(h.meta.load(std::memory_order_relaxed) & EvictionHook::kInList));  // added at most once
  h.meta.store(EvictionHook::kInList | (coarseNowMs() & EvictionHook::kTimeMask), std::memory_order_relaxed);
  list_.pushHead(ref);
}

void ClockPolicy::addBatch(const RefWord* refs, size_t n) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  for (size_t i = 0; i < n; ++i) {
    TC_DCHECK(!(r_.hook(refs[i]).meta.load(std::memory_order_relaxed) & EvictionHook::kInList));
    r_.hook(refs[i]).meta.store(EvictionHook::kInList, std::memory_order_relaxed);
    list_.pushHead(refs[i]);
  }
}

bool ClockPolicy::remove(RefWord ref) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return removeLocked(ref);
}

void ClockPolicy::removeBatch(const RefWord* refs, size_t n) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  for (size_t i = 0; i < n; ++i) removeLocked(refs[i]);
}

bool ClockPolicy::removeLocked(RefWord ref) {
  EvictionHook& h = r_.hook(ref);
  if (!(h.meta.load(std::memory_order_relaxed) & EvictionHook::kInList)) return false;
  list_.unlink(ref);
  h.meta.store(0, std::memory_order_relaxed);
  return true;
}

bool ClockPolicy::addAndRemove(RefWord newRef, RefWord oldRef) {
  EvictionHook& h = r_.hook(newRef);
  EvictionHook& o = r_.hook(oldRef);
  std::lock_guard<AdaptiveMutex> g(lock_);
  h.meta.store(EvictionHook::kInList, std::memory_order_relaxed);
  list_.pushHead(newRef);
  if (!(o.meta.load(std::memory_order_relaxed) & EvictionHook::kInList)) return false;
  list_.unlink(oldRef);
  o.meta.store(0, std::memory_order_relaxed);
  return true;
}

bool ClockPolicy::replace(RefWord newRef, RefWord oldRef) {
  EvictionHook& o = r_.hook(oldRef);
  std::lock_guard<AdaptiveMutex> g(lock_);
  const uint32_t m = o.meta.load(std::memory_order_relaxed);
  if (!(m & EvictionHook::kInList)) {
    r_.hook(newRef).meta.store(EvictionHook::kInList, std::memory_order_relaxed);
    list_.pushHead(newRef);
    return false;
  }
  list_.replace(oldRef, newRef);
  r_.hook(newRef).meta.store(m | EvictionHook::kAccessed, std::memory_order_relaxed);
  o.meta.store(0, std::memory_order_relaxed);
  return true;
}

void ClockPolicy::onAccess(RefWord /*ref*/, EvictionHook& hook) {
  std::atomic<uint32_t>& meta = hook.meta;
  const uint32_t m = meta.load(std::memory_order_relaxed);
  // Only members carry the bit: a removed item's hook must stay zero.
  if ((m & EvictionHook::kInList) && !(m & EvictionHook::kAccessed)) {
    meta.fetch_or(EvictionHook::kAccessed, std::memory_order_relaxed);
  }
}

size_t ClockPolicy::evict(size_t want, size_t maxScan, EvictionVisitor& visitor) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  size_t taken = 0;
  size_t scanned = 0;
  RefWord cur = list_.tail();
  while (cur != IntrusiveList::kNull && taken < want && scanned < maxScan) {
    const RefWord prev = list_.prevOf(cur);
    ++scanned;
    EvictionHook& h = r_.hook(cur);
    if (h.meta.load(std::memory_order_relaxed) & EvictionHook::kAccessed) {
      h.meta.fetch_and(~EvictionHook::kAccessed, std::memory_order_relaxed);
      list_.unlink(cur);
      list_.pushHead(cur);
    } else {
      TC_DCHECK(h.meta.load(std::memory_order_relaxed) & EvictionHook::kInList);  // a victim is a member
      const auto verdict = visitor.visit(cur);
      if (verdict == EvictionVisitor::Verdict::kStop) break;
      if (verdict == EvictionVisitor::Verdict::kTake) {
        noteTaken(cur, (coarseNowMs() - h.meta.load(std::memory_order_relaxed)) & EvictionHook::kTimeMask);
        list_.unlink(cur);
        h.meta.store(0, std::memory_order_relaxed);
        ++taken;
      } else if (verdict == EvictionVisitor::Verdict::kRotate) {
        list_.unlink(cur);
        list_.pushHead(cur);
      }
    }
    cur = prev;
  }
  return taken;
}

size_t ClockPolicy::size() const {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return list_.size();
}

bool ClockPolicy::forEach(void (*fn)(RefWord, void*), void* ctx) const {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return list_.forEach(fn, ctx);
}

}  // namespace tiercache
