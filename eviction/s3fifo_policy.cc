#include "s3fifo_policy.h"

#include <algorithm>
#include <bit>

namespace tiercache {

// ---- GhostQueue ----

void GhostQueue::insert(uint64_t hash) {
  if (capacity_ == 0) return;
  const uint32_t fp = fingerprint(hash);
  const size_t mask = table_.size() - 1;
  const size_t home = bucketOf(fp);
  size_t victim = home & mask;
  for (size_t i = 0; i < kProbe; ++i) {
    const size_t slot = (home + i) & mask;
    const Entry& e = table_[slot];
    if (!alive(e) || e.fp == fp) {
      victim = slot;
      break;
    }
    // Otherwise overwrite the oldest entry of the window.
    if (tick_ - e.tick > tick_ - table_[victim].tick) victim = slot;
  }
  table_[victim] = Entry{fp, tick_};
  ++tick_;
  live_ = std::min(live_ + 1, capacity_);
}

bool GhostQueue::take(uint64_t hash) {
  if (live_ == 0) return false;
  const uint32_t fp = fingerprint(hash);
  const size_t mask = table_.size() - 1;
  const size_t home = bucketOf(fp);
  for (size_t i = 0; i < kProbe; ++i) {
    Entry& e = table_[(home + i) & mask];
    if (e.fp == fp && alive(e)) {
      e.fp = 0;
      --live_;
      return true;
    }
  }
  return false;
}

void GhostQueue::reserve(size_t capacity) {
  if (capacity <= capacity_) return;
  // Grow by doubling at least, so a growing class rebuilds O(log n) times.
  capacity = std::max(capacity, capacity_ * 2);
  std::vector<Entry> old;
  old.swap(table_);
  const size_t oldCapacity = capacity_;
  table_.assign(std::bit_ceil(std::max<size_t>(capacity, kProbe)), Entry{});
  capacity_ = capacity;
  // Re-insert live entries oldest first, keeping their relative age: the
  // ticks restart so that the newest old entry is the latest insertion.
  std::vector<Entry> live;
  for (const Entry& e : old) {
    if (e.fp != 0 && tick_ - e.tick <= oldCapacity) live.push_back(e);
  }
  std::sort(live.begin(), live.end(), [&](const Entry& a, const Entry& b) { return tick_ - a.tick > tick_ - b.tick; });
  const uint32_t base = tick_;
  const size_t mask = table_.size() - 1;
  for (const Entry& e : live) {
    const size_t home = bucketOf(e.fp);
    for (size_t i = 0; i < kProbe; ++i) {
      Entry& slot = table_[(home + i) & mask];
      if (slot.fp == 0) {
        slot = Entry{e.fp, base - (tick_ - e.tick)};
        break;
      }
    }
  }
  live_ = std::min(live.size(), capacity_);
}

// ---- S3FifoPolicy ----

namespace {
uint32_t freqOf(uint32_t meta) { return (meta & S3FifoPolicy::kFreqMask) >> S3FifoPolicy::kFreqShift; }
uint32_t nowStamp() { return coarseNowMs() & S3FifoPolicy::kTimeMask; }
}  // namespace

S3FifoPolicy::S3FifoPolicy(const HookResolver& resolver, uint32_t smallPercent)
    : EvictionPolicy(resolver),
      smallPercent_(std::clamp<uint32_t>(smallPercent, 1, 90)),
      small_(resolver),
      main_(resolver) {}

void S3FifoPolicy::add(RefWord ref) {
  // Hashed outside the list lock: the ghost lookup needs it.
  const uint64_t hash = r_.keyHash(ref);
  std::lock_guard<AdaptiveMutex> g(lock_);
  addLocked(ref, hash);
}

// A mover's batch: add() for each ref, hashed before the lock, which is taken once per chunk.
void S3FifoPolicy::addBatch(const RefWord* refs, size_t n) {
  forHashedChunks(refs, n, [&](const RefWord* chunk, const uint64_t* hashes, size_t m) {
    std::lock_guard<AdaptiveMutex> g(lock_);
    for (size_t i = 0; i < m; ++i) addLocked(chunk[i], hashes[i]);
  });
}

bool S3FifoPolicy::addAndRemove(RefWord newRef, RefWord oldRef) {
  const uint64_t hash = r_.keyHash(newRef);
  std::lock_guard<AdaptiveMutex> g(lock_);
  addLocked(newRef, hash);
  return removeLocked(oldRef);
}

bool S3FifoPolicy::replace(RefWord newRef, RefWord oldRef) {
  EvictionHook& o = r_.hook(oldRef);
  {
    std::lock_guard<AdaptiveMutex> g(lock_);
    const uint32_t m = o.meta.load(std::memory_order_relaxed);
    if (m & EvictionHook::kInList) {
      ((m & kMain) ? main_ : small_).replace(oldRef, newRef);
      const uint32_t hit = freqOf(m) < 3 ? m + (1u << kFreqShift) : m;
      r_.hook(newRef).meta.store(hit, std::memory_order_relaxed);
      o.meta.store(0, std::memory_order_relaxed);
      return true;
    }
  }
  add(newRef);  // hashed outside the lock, as add() does
  return false;
}

void S3FifoPolicy::addLocked(RefWord ref, uint64_t hash) {
  EvictionHook& h = r_.hook(ref);
  TC_DCHECK(!(h.meta.load(std::memory_order_relaxed) & EvictionHook::kInList));  // added at most once
  if (ghost_.take(hash)) {
    h.meta.store(EvictionHook::kInList | kMain | nowStamp(), std::memory_order_relaxed);
    main_.pushHead(ref);
  } else {
    h.meta.store(EvictionHook::kInList | nowStamp(), std::memory_order_relaxed);
    small_.pushHead(ref);
  }
}

bool S3FifoPolicy::remove(RefWord ref) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return removeLocked(ref);
}

void S3FifoPolicy::removeBatch(const RefWord* refs, size_t n) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  for (size_t i = 0; i < n; ++i) removeLocked(refs[i]);
}

bool S3FifoPolicy::removeLocked(RefWord ref) {
  EvictionHook& h = r_.hook(ref);
  const uint32_t meta = h.meta.load(std::memory_order_relaxed);
  if (!(meta & EvictionHook::kInList)) return false;
  ((meta & kMain) ? main_ : small_).unlink(ref);
  h.meta.store(0, std::memory_order_relaxed);
  return true;
}

void S3FifoPolicy::onAccess(RefWord /*ref*/, EvictionHook& hook) {
  std::atomic<uint32_t>& meta = hook.meta;
  uint32_t m = meta.load(std::memory_order_relaxed);
  // One attempt: a lost race loses one count, which the policy tolerates.
  // Non-members keep a zero hook (the CAS fails if a remove intervened).
  if ((m & EvictionHook::kInList) && freqOf(m) < 3) {
    meta.compare_exchange_weak(m, m + (1u << kFreqShift), std::memory_order_relaxed);
  }
}

size_t S3FifoPolicy::evict(size_t want, size_t maxScan, EvictionVisitor& visitor) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  size_t taken = 0;
  size_t offered = 0;
  // Reinsertions do not count as scans, but are bounded: each member is
  // reinserted at most 3 times before its frequency reaches 0.
  size_t moves = 0;
  const size_t maxMoves = 4 * (small_.size() + main_.size()) + maxScan;
  ghost_.reserve(main_.size() + small_.size());
  while (taken < want && offered < maxScan && moves < maxMoves) {
    const size_t total = small_.size() + main_.size();
    if (total == 0) break;
    const size_t smallTarget = std::max<size_t>(1, total * smallPercent_ / 100);
    const bool fromSmall = small_.size() > 0 && (small_.size() >= smallTarget || main_.size() == 0);
    IntrusiveList& list = fromSmall ? small_ : main_;
    const RefWord cur = list.tail();
    EvictionHook& h = r_.hook(cur);
    const uint32_t m = h.meta.load(std::memory_order_relaxed);
    TC_DCHECK((m & EvictionHook::kInList) && ((m & kMain) != 0) == !fromSmall);  // its meta names its queue
    const uint32_t freq = freqOf(m);
    if (fromSmall && freq >= kMoveToMainHits) {
      // Earned a place in main, starting again from frequency 0.
      small_.unlink(cur);
      h.meta.store(EvictionHook::kInList | kMain | (m & kTimeMask), std::memory_order_relaxed);
      main_.pushHead(cur);
      ++moves;
      continue;
    }
    if (!fromSmall && freq > 0) {
      main_.unlink(cur);
      h.meta.store((m & ~kFreqMask) | ((freq - 1) << kFreqShift), std::memory_order_relaxed);
      main_.pushHead(cur);
      ++moves;
      continue;
    }
    ++offered;
    const EvictionVisitor::Verdict verdict = fromSmall ? visitor.visitRejected(cur) : visitor.visit(cur);
    if (verdict == EvictionVisitor::Verdict::kStop) break;
    list.unlink(cur);
    if (verdict == EvictionVisitor::Verdict::kSkip || verdict == EvictionVisitor::Verdict::kRotate) {
      // Pinned or busy: back in at the head of its own queue, so the walk moves on.
      list.pushHead(cur);
      ++moves;
      continue;
    }
    noteTaken(cur, (coarseNowMs() - m) & kTimeMask);
    if (fromSmall) ghost_.insert(r_.keyHash(cur));
    h.meta.store(0, std::memory_order_relaxed);
    ++taken;
  }
  return taken;
}

size_t S3FifoPolicy::size() const {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return small_.size() + main_.size();
}

size_t S3FifoPolicy::smallSize() const {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return small_.size();
}

size_t S3FifoPolicy::mainSize() const {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return main_.size();
}

size_t S3FifoPolicy::metadataBytes() const {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return ghost_.bytes();
}

bool S3FifoPolicy::forEach(void (*fn)(RefWord, void*), void* ctx) const {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return small_.forEach(fn, ctx) && main_.forEach(fn, ctx);
}

}  // namespace tiercache
