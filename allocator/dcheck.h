// TC_DCHECK (common/dcheck.h): inline checks of what the item state machine
// and the lock order assume, where they are assumed; compiled out in
// Release and RelWithDebInfo, on in Debug and sanitizer builds.
//
// The lock order (slab_allocator.h): class lock -> policy lock, and no
// index stripe lock while a class lock is held. ClassMutex counts, per
// thread, the class locks held in checked builds, so AccessIndex can check
// the second half when it takes a stripe lock. Unchecked, ClassMutex is a
// plain AdaptiveMutex.
#pragma once

#include <mutex>

#include "../common/adaptive_mutex.h"
#include "../common/dcheck.h"

namespace tiercache::dcheck {

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
