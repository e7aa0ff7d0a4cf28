// SpinLock: a 1-byte test-and-test-and-set lock for the index stripes,
// whose critical sections are a few loads. Yields after a short spin, so a
// preempted holder does not burn the other core (this runs on 2-core hosts).
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tiercache {

class SpinLock {
 public:
  void lock() {
    for (int spins = 0;; ++spins) {
      if (!flag_.exchange(true, std::memory_order_acquire)) return;
      while (flag_.load(std::memory_order_relaxed)) {
        if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
          _mm_pause();
#endif
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  bool try_lock() { return !flag_.load(std::memory_order_relaxed) && !flag_.exchange(true, std::memory_order_acquire); }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace tiercache
