// TC_DCHECK: inline checks of an invariant where it is assumed. On in Debug
// builds (NDEBUG unset) and in sanitizer builds (whatever the build type),
// compiled out in Release and RelWithDebInfo, where the condition is not
// evaluated. A failed check prints file:line and the condition, then aborts:
// it marks a broken invariant, never a condition a caller can cause with bad
// input (that gets an error or an exception instead). Here, below every part,
// so that eviction/ checks its own invariants too; allocator/dcheck.h adds
// the lock-order checks.
#pragma once

#include <cstdio>
#include <cstdlib>

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

}  // namespace tiercache::dcheck

#if TIERCACHE_DCHECK_IS_ON
#define TC_DCHECK(condition) \
  ((condition) ? static_cast<void>(0) : ::tiercache::dcheck::failed(__FILE__, __LINE__, #condition))
#else
// Not evaluated, but still compiled, so a check cannot rot in release builds.
#define TC_DCHECK(condition) static_cast<void>(sizeof(!(condition)))
#endif
