// WTinyLfuPolicy: W-TinyLFU (Einziger, Friedman, Manes; Caffeine's policy)
// per (tier, pool, class).
//
// New items enter a small window (1% of the members, or the share the
// cache's hill climber sets: window_climber.h); the window's victim
// is admitted to the main area only if the frequency sketch says its key is
// more popular than main's victim, else it is the one evicted. Main is an
// SLRU: admitted items enter `probation`; a hit item found at probation's
// tail moves to `protected` (<= 80% of main), whose overflow goes back to
// probation.
//
// Hit path, no lock and no shared line: the hook's kAccessed bit (set once,
// like CLOCK; the item's own line, which the hit's pin writes anyway) and,
// when the bit was clear, the key hash appended to the thread's stripe of a
// ReadBuffer (read_buffer.h); so the sketch counts passes with a hit, not
// hits, and repeated hits are a load. The buffered hashes reach the sketch
// in batches under the policy lock: a full stripe is applied by its thread
// if the lock is free (else that hit is dropped: lossy only under
// contention), and every holder of the lock that reads or grows the sketch
// applies the buffers first (evict: every stripe; add and replace: the
// caller's own stripe, before its own increment), so with one thread the
// sketch sees exactly the increments, in the order, it saw before the
// buffer. The LRU orders of window and
// protected are approximated by second chances at eviction time (an accessed
// tail item goes back to the head), which is what keeps hits lock-free.
//
// The sketch is sized from the members (re-made twice as big when they
// outgrow it; old sketches are kept until the policy dies, since a hit may
// still be reading one: memory at most 2x the last).
//
// Meta bits: 31 kInList, 30 kAccessed, 28..29 segment (window, probation,
// protected), 0..27 insertion time in ms modulo 2^28 (eviction age only).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "../common/adaptive_mutex.h"
#include "eviction_policy.h"
#include "frequency_sketch.h"
#include "intrusive_list.h"
#include "read_buffer.h"

namespace tiercache {

class WTinyLfuPolicy final : public EvictionPolicy {
 public:
  static constexpr uint32_t kSegShift = 28;
  static constexpr uint32_t kSegMask = 3u << kSegShift;
  static constexpr uint32_t kTimeMask = (1u << 28) - 1;
  enum Segment : uint32_t { kWindow = 0, kProbation = 1, kProtected = 2 };
  static constexpr uint32_t kProtectedPercent = 80;  // of main

  // signal: the window's share and the sketch agings, moved by the cache's
  // climber (window_climber.h); null: windowPercent, fixed, and no aging
  // but the sketch's own.
  WTinyLfuPolicy(const HookResolver& resolver, uint32_t windowPercent,
                 std::shared_ptr<const WindowSignal> signal = nullptr);

  void add(RefWord ref) override;
  void addBatch(const RefWord* refs, size_t n) override;
  bool remove(RefWord ref) override;
  void removeBatch(const RefWord* refs, size_t n) override;
  bool addAndRemove(RefWord newRef, RefWord oldRef) override;
  // The new item keeps the old one's segment and place, accessed (a hit's
  // second chance and sketch count); no window overflow, no growth.
  bool replace(RefWord newRef, RefWord oldRef) override;
  size_t evict(size_t want, size_t maxScan, EvictionVisitor& visitor) override;
  size_t size() const override;
  const char* name() const override { return "wtinylfu"; }
  bool forEach(void (*fn)(RefWord, void*), void* ctx) const override;
  size_t metadataBytes() const override;

  // Frequency estimate of a member's key (tests, diagnostics); applies the
  // buffered hits first.
  uint32_t estimate(RefWord ref) const;
  size_t windowSize() const;
  // Hits buffered and not yet in the sketch; hits dropped because a full
  // stripe found the lock busy (tests, diagnostics).
  size_t pendingHits() const { return hits_.pending(); }
  uint64_t droppedHits() const { return droppedHits_.load(std::memory_order_relaxed); }

 private:
  void onAccess(RefWord ref, EvictionHook& hook) override;
  // A hit's sketch increment, through the caller's stripe (see above).
  void recordHit(uint64_t keyHash);
  // lock_ held: the buffered hits into the current sketch.
  void applyOwnHitsLocked() const;
  void applyAllHitsLocked() const;
  bool removeLocked(RefWord ref);  // lock_ held
  void addLocked(RefWord ref);     // lock_ held; the sketch already counted it
  IntrusiveList& listOf(uint32_t meta);
  void moveTo(RefWord ref, uint32_t meta, Segment seg, bool head);
  void growSketchLocked();
  // Main's victim after second chances (probation first), or kNullRef.
  RefWord mainVictimLocked(size_t& moves);

  // The window's target size for this many members.
  size_t windowTarget(size_t members) const;

  const uint32_t windowPercent_;
  const std::shared_ptr<const WindowSignal> signal_;
  uint32_t agingsSeen_ = 0;  // lock_ held
  mutable AdaptiveMutex lock_;
  IntrusiveList window_;
  IntrusiveList probation_;
  IntrusiveList protected_;
  std::atomic<FrequencySketch*> sketch_;
  std::vector<std::unique_ptr<FrequencySketch>> sketches_;  // all made; the last is current
  mutable ReadBuffer hits_;                                 // key hashes of hits, for the sketch
  std::atomic<uint64_t> droppedHits_{0};                    // written only when a hit is dropped
};

}  // namespace tiercache
