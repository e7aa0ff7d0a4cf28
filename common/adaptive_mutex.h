// AdaptiveMutex: a mutex whose lock() spins briefly before it sleeps
// (glibc's PTHREAD_MUTEX_ADAPTIVE_NP), for the class and policy locks.
//
// Why: those locks are held for a few microseconds (a claim of a few items,
// a batch of frees), and with background eviction on the evictor holds them
// while an application thread wants them. A plain mutex puts the waiter to
// sleep at once, and waking a sleeping thread on a VM costs the waiter
// tens of microseconds (its vCPU halted; measured: set p99.9 of the seed
// experiment, docs/benchmarks.md), far longer than the hold. Spinning a
// bounded number of times (glibc adapts the count per mutex) waits out
// short holds and still sleeps behind a long one.
#pragma once

#include <pthread.h>

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

  void lock() { pthread_mutex_lock(&m_); }
  bool try_lock() { return pthread_mutex_trylock(&m_) == 0; }
  void unlock() { pthread_mutex_unlock(&m_); }

 private:
  pthread_mutex_t m_;
};

}  // namespace tiercache
