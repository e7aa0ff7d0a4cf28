// ReadBuffer: hits a policy records without writing a line that another
// thread writes, applied in batches by a holder of the policy's lock (the
// design of Caffeine's read buffers and ristretto's striped buffers).
//
// One stripe per thread: the first kStripes threads alive at once each own
// a stripe index (given back when the thread exits, for the next new
// thread); a thread past them has none (push() says so and the caller
// applies the hit itself, as before the buffer). A stripe is a ring of
// kCapacity 64-bit entries made on the owner's first push, so a class that
// a thread never hits costs it nothing.
//
// Protocol, per stripe (single producer, consumers serialised by the
// policy's lock):
//   producer (the owning thread, no lock): full when tail - head ==
//     kCapacity; else stores entries[tail % kCapacity], then tail + 1
//     (release).
//   consumer (policy lock held): reads tail (acquire), applies entries
//     [head, tail) in order, then stores head = tail (release).
// Invariant: head <= tail <= head + kCapacity (TC_DCHECKed on both sides).
// The producer writes only its own stripe's lines; the consumer writes a
// stripe's head once per batch.
//
// What a full stripe means is the caller's choice (WTinyLfuPolicy: try the
// lock and drain its own stripe; if the lock is busy, drop the hit).
// Nothing here blocks: a hit never waits for a lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "../common/dcheck.h"
#include "../common/thread_slot.h"

namespace tiercache {

class ReadBuffer {
 public:
  static constexpr size_t kStripes = 16;
  static constexpr size_t kCapacity = 32;  // entries per stripe (a power of two)
  static constexpr size_t kNoStripe = ThreadSlot<ReadBuffer, kStripes>::kNone;

  ReadBuffer() = default;
  ~ReadBuffer();
  ReadBuffer(const ReadBuffer&) = delete;
  ReadBuffer& operator=(const ReadBuffer&) = delete;

  enum class Push { kQueued, kFull, kNoStripe };
  // Producer: the calling thread appends v to its own stripe.
  Push push(uint64_t v) {
    const size_t s = threadStripe();
    if (s == kNoStripe) [[unlikely]]
      return Push::kNoStripe;
    Stripe* st = stripes_[s].load(std::memory_order_acquire);
    if (!st) [[unlikely]]
      st = makeStripe(s);
    const uint64_t tail = st->tail.load(std::memory_order_relaxed);  // only this thread writes it
    const uint64_t head = st->head.load(std::memory_order_acquire);
    TC_DCHECK(head <= tail && tail - head <= kCapacity);
    if (tail - head == kCapacity) return Push::kFull;
    st->entries[tail % kCapacity] = v;
    st->tail.store(tail + 1, std::memory_order_release);
    return Push::kQueued;
  }

  // Consumer (the policy's lock held): applies the calling thread's stripe,
  // or every stripe, in the order pushed; returns the entries applied.
  template <class Apply>
  size_t drainOwn(Apply&& apply) {
    const size_t s = threadStripe();
    return s == kNoStripe ? 0 : drainStripe(stripes_[s].load(std::memory_order_acquire), apply);
  }
  template <class Apply>
  size_t drainAll(Apply&& apply) {
    size_t n = 0;
    for (auto& p : stripes_) n += drainStripe(p.load(std::memory_order_acquire), apply);
    return n;
  }

  // Entries pushed and not yet applied (racy sum; tests, diagnostics).
  size_t pending() const;
  // Bytes held outside the policy's items: the stripes made so far.
  size_t bytes() const;

  // This thread's stripe index, the same in every ReadBuffer (kNoStripe
  // when kStripes other threads hold one).
  static size_t threadStripe() { return ThreadSlot<ReadBuffer, kStripes>::index(); }

 private:
  struct alignas(64) Stripe {
    std::atomic<uint64_t> tail{0};              // written by the owning thread
    alignas(64) std::atomic<uint64_t> head{0};  // written by consumers, under the policy lock
    uint64_t entries[kCapacity] = {};
  };
  static_assert((kCapacity & (kCapacity - 1)) == 0);

  template <class Apply>
  static size_t drainStripe(Stripe* st, Apply& apply) {
    if (!st) return 0;
    const uint64_t head = st->head.load(std::memory_order_relaxed);  // consumers are serialised
    const uint64_t tail = st->tail.load(std::memory_order_acquire);
    TC_DCHECK(head <= tail && tail - head <= kCapacity);
    if (head == tail) return 0;
    for (uint64_t i = head; i != tail; ++i) apply(st->entries[i % kCapacity]);
    st->head.store(tail, std::memory_order_release);
    return static_cast<size_t>(tail - head);
  }
  Stripe* makeStripe(size_t s);

  std::atomic<Stripe*> stripes_[kStripes] = {};
};

}  // namespace tiercache
