#include "wtinylfu_policy.h"

#include <algorithm>

namespace tiercache {

namespace {
constexpr size_t kInitialSketch = 1024;
// The sketch holds 2 x the members when made and halves after 16 x its
// capacity accesses: 32 x the members, libCacheSim's sample. On Zipf 0.9
// and 1.0 Caffeine's 10 x (20 x members here) aged frequencies too fast
// and lost to S3-FIFO at 1% caches.
constexpr size_t kSketchPerMember = 2;
constexpr size_t kSampleFactor = 16;
uint32_t segOf(uint32_t meta) { return (meta & WTinyLfuPolicy::kSegMask) >> WTinyLfuPolicy::kSegShift; }
uint32_t nowStamp() { return coarseNowMs() & WTinyLfuPolicy::kTimeMask; }
}  // namespace

WTinyLfuPolicy::WTinyLfuPolicy(const HookResolver& resolver, uint32_t windowPercent,
                               std::shared_ptr<const WindowSignal> signal)
    : EvictionPolicy(resolver),
      windowPercent_(std::clamp<uint32_t>(windowPercent, 1, 90)),
      signal_(std::move(signal)),
      window_(resolver),
      probation_(resolver),
      protected_(resolver) {
  sketches_.push_back(std::make_unique<FrequencySketch>(kInitialSketch, kSampleFactor));
  sketch_.store(sketches_.back().get(), std::memory_order_release);
}

IntrusiveList& WTinyLfuPolicy::listOf(uint32_t meta) {
  switch (segOf(meta)) {
    case kWindow: return window_;
    case kProbation: return probation_;
    default: return protected_;
  }
}

void WTinyLfuPolicy::moveTo(RefWord ref, uint32_t meta, Segment seg, bool head) {
  listOf(meta).unlink(ref);
  // The move clears kAccessed: the second chance is spent.
  const uint32_t next = EvictionHook::kInList | (static_cast<uint32_t>(seg) << kSegShift) | (meta & kTimeMask);
  r_.hook(ref).meta.store(next, std::memory_order_relaxed);
  IntrusiveList& to = listOf(next);
  if (head) to.pushHead(ref); else to.pushTail(ref);
}

size_t WTinyLfuPolicy::windowTarget(size_t members) const {
  const size_t perMille = signal_ ? signal_->perMille.load(std::memory_order_relaxed) : size_t{windowPercent_} * 10;
  return std::max<size_t>(1, members * perMille / 1000);
}

void WTinyLfuPolicy::applyOwnHitsLocked() const {
  FrequencySketch& sketch = *sketch_.load(std::memory_order_relaxed);
  hits_.drainOwn([&](uint64_t hash) { sketch.increment(hash); });
}

void WTinyLfuPolicy::applyAllHitsLocked() const {
  FrequencySketch& sketch = *sketch_.load(std::memory_order_relaxed);
  hits_.drainAll([&](uint64_t hash) { sketch.increment(hash); });
}

void WTinyLfuPolicy::growSketchLocked() {
  const size_t members = window_.size() + probation_.size() + protected_.size();
  if (members <= sketches_.back()->capacity()) return;
  // The hits recorded so far belong to the sketch that was current then.
  applyAllHitsLocked();
  sketches_.push_back(std::make_unique<FrequencySketch>(members * kSketchPerMember, kSampleFactor));
  sketch_.store(sketches_.back().get(), std::memory_order_release);
}

// add, addAndRemove and replace apply the caller's buffered hits before
// their own increment, so that one thread's increments reach the sketch in
// the order of its calls.
void WTinyLfuPolicy::add(RefWord ref) {
  const uint64_t hash = r_.keyHash(ref);
  std::lock_guard<AdaptiveMutex> g(lock_);
  applyOwnHitsLocked();
  sketch_.load(std::memory_order_relaxed)->increment(hash);
  addLocked(ref);
}

// A mover's batch (demotions into this class): add() for each ref, with the
// keys hashed before the lock and the lock taken once per chunk.
void WTinyLfuPolicy::addBatch(const RefWord* refs, size_t n) {
  forHashedChunks(refs, n, [&](const RefWord* chunk, const uint64_t* hashes, size_t m) {
    std::lock_guard<AdaptiveMutex> g(lock_);
    applyOwnHitsLocked();
    for (size_t i = 0; i < m; ++i) {
      sketch_.load(std::memory_order_relaxed)->increment(hashes[i]);  // addLocked may grow the sketch
      addLocked(chunk[i]);
    }
  });
}

bool WTinyLfuPolicy::addAndRemove(RefWord newRef, RefWord oldRef) {
  const uint64_t hash = r_.keyHash(newRef);
  std::lock_guard<AdaptiveMutex> g(lock_);
  applyOwnHitsLocked();
  sketch_.load(std::memory_order_relaxed)->increment(hash);
  addLocked(newRef);
  return removeLocked(oldRef);
}

bool WTinyLfuPolicy::replace(RefWord newRef, RefWord oldRef) {
  bool member = false;
  bool count = true;
  {
    std::lock_guard<AdaptiveMutex> g(lock_);
    applyOwnHitsLocked();
    EvictionHook& o = r_.hook(oldRef);
    const uint32_t m = o.meta.load(std::memory_order_relaxed);
    member = (m & EvictionHook::kInList) != 0;
    if (member) {
      listOf(m).replace(oldRef, newRef);
      o.meta.store(0, std::memory_order_relaxed);
      // Counted once per pass, as recordAccess counts a hit.
      count = !(m & EvictionHook::kAccessed);
      r_.hook(newRef).meta.store(EvictionHook::kInList | EvictionHook::kAccessed | (m & kSegMask) | nowStamp(),
                                 std::memory_order_relaxed);
    } else {
      addLocked(newRef);
    }
  }
  // After the lock: the sketch is lock-free, and the key is the same.
  if (count) sketch_.load(std::memory_order_acquire)->increment(r_.keyHash(newRef));
  return member;
}

void WTinyLfuPolicy::addLocked(RefWord ref) {
  EvictionHook& h = r_.hook(ref);
  TC_DCHECK(!(h.meta.load(std::memory_order_relaxed) & EvictionHook::kInList));  // added at most once
  h.meta.store(EvictionHook::kInList | (kWindow << kSegShift) | nowStamp(), std::memory_order_relaxed);
  window_.pushHead(ref);
  // While the class fills, the window's tail overflows to probation (main
  // has room, so no admission test is due). The slack of one window share
  // keeps a full class's newcomers in the window, where evict() makes them
  // pass the filter: the cache evicts before it adds, so the window of a
  // full class never exceeds its share.
  const size_t total = window_.size() + probation_.size() + protected_.size();
  if (window_.size() > 2 * windowTarget(total)) {
    const RefWord t = window_.tail();
    moveTo(t, r_.hook(t).meta.load(std::memory_order_relaxed), kProbation, true);
  }
  growSketchLocked();
}

bool WTinyLfuPolicy::remove(RefWord ref) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return removeLocked(ref);
}

void WTinyLfuPolicy::removeBatch(const RefWord* refs, size_t n) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  for (size_t i = 0; i < n; ++i) removeLocked(refs[i]);
}

bool WTinyLfuPolicy::removeLocked(RefWord ref) {
  EvictionHook& h = r_.hook(ref);
  const uint32_t meta = h.meta.load(std::memory_order_relaxed);
  if (!(meta & EvictionHook::kInList)) return false;
  listOf(meta).unlink(ref);
  h.meta.store(0, std::memory_order_relaxed);
  return true;
}

void WTinyLfuPolicy::onAccess(RefWord ref, EvictionHook& hook) {
  std::atomic<uint32_t>& meta = hook.meta;
  const uint32_t m = meta.load(std::memory_order_relaxed);
  if (!(m & EvictionHook::kInList)) return;
  // One sketch increment per item per pass: a hit on an item whose bit is
  // already set (hit since the eviction scan last saw it) changes nothing.
  // On Zipf this misses less than counting every hit, since a hot item's
  // count no longer saturates
  // and drowns the window's candidates; and repeated hits cost one load.
  if (m & EvictionHook::kAccessed) return;
  meta.fetch_or(EvictionHook::kAccessed, std::memory_order_relaxed);
  recordHit(r_.keyHash(ref));
}

void WTinyLfuPolicy::recordHit(uint64_t keyHash) {
  switch (hits_.push(keyHash)) {
    case ReadBuffer::Push::kQueued: return;
    case ReadBuffer::Push::kNoStripe:
      // A thread past the buffer's stripes: the sketch is lock-free.
      sketch_.load(std::memory_order_acquire)->increment(keyHash);
      return;
    case ReadBuffer::Push::kFull: {
      // Never wait: a busy lock means another thread is in the policy, and
      // evict() applies every stripe; this one hit is dropped.
      std::unique_lock<AdaptiveMutex> g(lock_, std::try_to_lock);
      if (!g.owns_lock()) {
        droppedHits_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      applyOwnHitsLocked();
      sketch_.load(std::memory_order_relaxed)->increment(keyHash);
      return;
    }
  }
}

uint32_t WTinyLfuPolicy::estimate(RefWord ref) const {
  const uint64_t hash = r_.keyHash(ref);
  std::lock_guard<AdaptiveMutex> g(lock_);
  applyAllHitsLocked();
  return sketch_.load(std::memory_order_relaxed)->estimate(hash);
}

RefWord WTinyLfuPolicy::mainVictimLocked(size_t& moves) {
  const size_t budget = moves + 2 * (probation_.size() + protected_.size()) + 2;
  while (moves < budget) {
    // Keep protected within its share of main; its tail overflows to probation.
    const size_t mainSize = probation_.size() + protected_.size();
    while (protected_.size() > mainSize * kProtectedPercent / 100) {
      const RefWord t = protected_.tail();
      const uint32_t m = r_.hook(t).meta.load(std::memory_order_relaxed);
      if (m & EvictionHook::kAccessed) {
        moveTo(t, m, kProtected, true);  // recently hit: stays protected
      } else {
        moveTo(t, m, kProbation, true);
      }
      ++moves;
    }
    IntrusiveList& from = probation_.size() ? probation_ : protected_;
    const RefWord t = from.tail();
    if (t == IntrusiveList::kNull) return EvictionPolicy::kNullRef;
    const uint32_t m = r_.hook(t).meta.load(std::memory_order_relaxed);
    if (!(m & EvictionHook::kAccessed)) return t;
    moveTo(t, m, kProtected, true);
    ++moves;
  }
  // Everything was hit since the last pass: take the tail anyway.
  return probation_.size() ? probation_.tail() : protected_.tail();
}

size_t WTinyLfuPolicy::evict(size_t want, size_t maxScan, EvictionVisitor& visitor) {
  std::lock_guard<AdaptiveMutex> g(lock_);
  // The sketch decides admissions: every hit buffered so far counts.
  applyAllHitsLocked();
  FrequencySketch& sketch = *sketch_.load(std::memory_order_relaxed);
  if (signal_) {
    const uint32_t agings = signal_->agings.load(std::memory_order_relaxed);
    if (agings != agingsSeen_) {
      agingsSeen_ = agings;
      sketch.age();
    }
  }
  size_t taken = 0;
  size_t offered = 0;
  size_t moves = 0;
  // Main's victim stays the same while the filter turns newcomers away:
  // its key is hashed and estimated once, not once per newcomer.
  RefWord estimated = kNullRef;
  uint32_t victimEstimate = 0;
  const size_t maxMoves = 4 * (window_.size() + probation_.size() + protected_.size()) + maxScan;
  const size_t windowAtStart = window_.size();
  size_t grown = 0;  // main victims taken to let the window grow
  auto offer = [&](RefWord ref, bool rejected) {
    ++offered;
    const uint32_t m = r_.hook(ref).meta.load(std::memory_order_relaxed);
    TC_DCHECK(m & EvictionHook::kInList);  // a victim is a member
    const auto verdict = rejected ? visitor.visitRejected(ref) : visitor.visit(ref);
    if (verdict == EvictionVisitor::Verdict::kTake) {
      noteTaken(ref, (coarseNowMs() - m) & kTimeMask);
      listOf(m).unlink(ref);
      r_.hook(ref).meta.store(0, std::memory_order_relaxed);
      ++taken;
    } else if (verdict == EvictionVisitor::Verdict::kSkip || verdict == EvictionVisitor::Verdict::kRotate) {
      moveTo(ref, m, static_cast<Segment>(segOf(m)), true);  // pinned or busy: out of the way
      ++moves;
    }
    return verdict != EvictionVisitor::Verdict::kStop;
  };
  while (taken < want && offered < maxScan && moves < maxMoves) {
    const size_t total = window_.size() + probation_.size() + protected_.size();
    if (total == 0) break;
    const size_t target = windowTarget(total);
    const size_t mainSize = probation_.size() + protected_.size();
    // An empty window, or one below its share (raised by the climber, or
    // thinned by removals): main gives the victim, and the window grows by
    // the insert that follows. Judged by the window as the batch found it:
    // each window victim of this batch makes room for an insert to come,
    // so the window's own shrinking within the batch is no deficit.
    if (window_.size() == 0 || (windowAtStart + grown < target && mainSize > 0)) {
      const RefWord v = mainVictimLocked(moves);
      if (v != kNullRef) {
        const size_t before = taken;
        if (!offer(v, false)) break;
        grown += taken - before;
        continue;
      }
      if (window_.size() == 0) break;
    }
    const RefWord c = window_.tail();
    const uint32_t cm = r_.hook(c).meta.load(std::memory_order_relaxed);
    if (cm & EvictionHook::kAccessed) {
      moveTo(c, cm, kWindow, true);  // LRU window, approximated
      ++moves;
      continue;
    }
    if (window_.size() > target || mainSize == 0) {
      // Main is below its share: the window's victim goes there freely.
      moveTo(c, cm, kProbation, true);
      ++moves;
      continue;
    }
    const RefWord v = mainVictimLocked(moves);
    if (v == kNullRef) {
      if (!offer(c, false)) break;
      continue;
    }
    if (v != estimated) {
      estimated = v;
      victimEstimate = sketch.estimate(r_.keyHash(v));
    }
    if (sketch.estimate(r_.keyHash(c)) > victimEstimate) {
      moveTo(c, cm, kProbation, true);  // admitted; main's victim goes
      ++moves;
      if (!offer(v, false)) break;
    } else {
      if (!offer(c, true)) break;  // the filter turned the newcomer away
    }
  }
  return taken;
}

size_t WTinyLfuPolicy::size() const {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return window_.size() + probation_.size() + protected_.size();
}

size_t WTinyLfuPolicy::windowSize() const {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return window_.size();
}

size_t WTinyLfuPolicy::metadataBytes() const {
  std::lock_guard<AdaptiveMutex> g(lock_);
  size_t n = 0;
  for (const auto& s : sketches_) n += s->bytes();
  return n + hits_.bytes();
}

bool WTinyLfuPolicy::forEach(void (*fn)(RefWord, void*), void* ctx) const {
  std::lock_guard<AdaptiveMutex> g(lock_);
  return window_.forEach(fn, ctx) && probation_.forEach(fn, ctx) && protected_.forEach(fn, ctx);
}

}  // namespace tiercache
