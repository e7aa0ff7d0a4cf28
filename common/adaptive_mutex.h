// AdaptiveMutex: a mutex whose lock() spins for up to kSpinBudget before it
// sleeps, for the class and policy locks.
//
// Why: those locks are held for a few microseconds (a claim of a few items,
// a batch of frees), and with background eviction on the evictor holds them
// while an application thread wants them. A plain mutex puts the waiter to
// sleep at once, and waking a sleeping thread on a VM costs the waiter
// tens of microseconds (its vCPU halted), far longer than the hold. glibc's
// adaptive mutex alone spins about 100 tries, shorter than
// the evictor's holds: with it the application thread still slept on the
// policy lock hundreds of times a second; spinning up to 20 us (checking the
// clock every 16 pauses, trying the lock only then, so the holder's line is
// not hammered) cut the seed runs' set p99.9 with the evictor on several
// times over, and raised their throughput.
// A holder that is not running (preempted) costs a waiter at most the
// budget before it sleeps.
#pragma once

#include <pthread.h>

#include <chrono>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tiercache {

class AdaptiveMutex {
 public:
  AdaptiveMutex() {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&m_, &a);
    pthread_mutexattr_destroy(&a);
  }
  ~AdaptiveMutex() { pthread_mutex_destroy(&m_); }
  AdaptiveMutex(const AdaptiveMutex&) = delete;
  AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;

  static constexpr std::chrono::microseconds kSpinBudget{20};

  void lock() {
    if (pthread_mutex_trylock(&m_) == 0) return;
    const auto end = std::chrono::steady_clock::now() + kSpinBudget;
    do {
      for (int i = 0; i < 16; ++i) pause();
      if (pthread_mutex_trylock(&m_) == 0) return;
    } while (std::chrono::steady_clock::now() < end);
    pthread_mutex_lock(&m_);
  }
  bool try_lock() { return pthread_mutex_trylock(&m_) == 0; }
  void unlock() { pthread_mutex_unlock(&m_); }

 private:
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }
  pthread_mutex_t m_;
};

}  // namespace tiercache
