// TC_DCHECK: inline checks of what the item state machine and the lock
// order assume, where they are assumed. On in Debug builds (NDEBUG unset)
// and in sanitizer builds (whatever the build type), compiled out in
// Release and RelWithDebInfo, where the condition is not evaluated. A
// failed check prints file:line and the condition, then aborts: it marks a
// broken invariant, never a condition a caller can cause with bad input
// (that gets an error or an exception instead).
//
// The lock order (slab_allocator.h): class lock -> policy lock, and no
// index stripe lock while a class lock is held. ClassMutex counts, per
// thread, the class locks held in checked builds, so AccessIndex can check
// the second half when it takes a stripe lock. Unchecked, ClassMutex is a
// plain AdaptiveMutex.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "../common/adaptive_mutex.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TIERCACHE_SANITIZER_BUILD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TIERCACHE_SANITIZER_BUILD 1
#endif

#if !defined(TIERCACHE_DCHECK_IS_ON)
#if !defined(NDEBUG) || defined(TIERCACHE_SANITIZER_BUILD)
#define TIERCACHE_DCHECK_IS_ON 1
#else
#define TIERCACHE_DCHECK_IS_ON 0
#endif
#endif

namespace tiercache::dcheck {

[[noreturn]] inline void failed(const char* file, int line, const char* condition) {
  std::fprintf(stderr, "%s:%d: TC_DCHECK failed: %s\n", file, line, condition);
  std::fflush(stderr);
  std::abort();
}

constexpr bool kOn = TIERCACHE_DCHECK_IS_ON;

#if TIERCACHE_DCHECK_IS_ON
// Class locks this thread holds (ClassMutex).
inline thread_local int classLocksHeld = 0;
#endif

inline int classLocksHeldByThisThread() {
#if TIERCACHE_DCHECK_IS_ON
  return classLocksHeld;
#else
  return 0;
#endif
}

}  // namespace tiercache::dcheck

#if TIERCACHE_DCHECK_IS_ON
#define TC_DCHECK(condition) \
  ((condition) ? static_cast<void>(0) : ::tiercache::dcheck::failed(__FILE__, __LINE__, #condition))
#else
// Not evaluated, but still compiled, so a check cannot rot in release builds.
#define TC_DCHECK(condition) static_cast<void>(sizeof(!(condition)))
#endif

namespace tiercache {

// The allocation class's lock (see the lock order above).
class ClassMutex {
 public:
  void lock() {
    m_.lock();
#if TIERCACHE_DCHECK_IS_ON
    ++dcheck::classLocksHeld;
#endif
  }
  bool try_lock() {
    if (!m_.try_lock()) return false;
#if TIERCACHE_DCHECK_IS_ON
    ++dcheck::classLocksHeld;
#endif
    return true;
  }
  void unlock() {
#if TIERCACHE_DCHECK_IS_ON
    TC_DCHECK(dcheck::classLocksHeld > 0);
    --dcheck::classLocksHeld;
#endif
    m_.unlock();
  }

 private:
  AdaptiveMutex m_;  // spins before it sleeps (common/adaptive_mutex.h)
};

}  // namespace tiercache
