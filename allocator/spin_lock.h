// SeqSpinLock: the index stripes' lock, a 32-bit sequence number that is
// odd while a writer holds it. Writers lock and unlock it as a
// test-and-test-and-set spin lock (critical sections are a few loads and
// stores); each hold moves the number on by two. Readers take no lock: they
// note the number (readBegin), read what the lock guards with acquire
// loads, and keep what they read only if the number is still the same
// (unchangedSince): then no writer held the lock meanwhile. So a reader
// writes nothing, and the lock's line stays shared between the cores that
// read under it.
//
// Invariant: the number is odd exactly while a writer holds the lock; only
// the holder changes it. Writers' stores to guarded data are release
// stores (or atomic stores after the lock's acquire), so a reader that
// reads one of them reads the odd number, or a later one, afterwards.
// Spins, then yields, so a preempted holder does not burn the other core
// (this runs on 2-core hosts).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tiercache {

class SeqSpinLock {
 public:
  void lock() {
    for (int spins = 0;; ++spins) {
      uint32_t v = seq_.load(std::memory_order_relaxed);
      if (!(v & 1) && seq_.compare_exchange_weak(v, v + 1, std::memory_order_acquire, std::memory_order_relaxed)) {
        return;
      }
      if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
        _mm_pause();
#endif
      } else {
        std::this_thread::yield();
      }
    }
  }
  bool try_lock() {
    uint32_t v = seq_.load(std::memory_order_relaxed);
    return !(v & 1) && seq_.compare_exchange_strong(v, v + 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() { seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

  // Reader: the number now; odd means a writer holds the lock (read under
  // it instead). Sequentially consistent, so that a grace period
  // (IndexReaders::waitForReaders) that starts after a writer's unlock sees
  // this reader's section, or this load sees that unlock.
  uint32_t readBegin() const { return seq_.load(std::memory_order_seq_cst); }
  // Reader: no writer held the lock since readBegin returned v. Ordered
  // after the reader's earlier acquire loads (and locked instructions).
  bool unchangedSince(uint32_t v) const { return seq_.load(std::memory_order_relaxed) == v; }

 private:
  std::atomic<uint32_t> seq_{0};
};

}  // namespace tiercache
