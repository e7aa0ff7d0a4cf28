#include "eviction_policy.h"

#include <time.h>

#include <stdexcept>

#include "clock_policy.h"
#include "lru_policy.h"

namespace tiercache {

std::unique_ptr<EvictionPolicy> makeEvictionPolicy(const EvictionPolicyOptions& options,
                                                   const HookResolver& resolver) {
  if (options.kind == "lru") {
    return std::make_unique<LruPolicy>(resolver, options.lruInsertionPoint, options.lruRefreshMs);
  }
  if (options.kind == "clock") return std::make_unique<ClockPolicy>(resolver);
  throw std::invalid_argument("unknown eviction policy '" + options.kind + "' (expected lru or clock)");
}

uint32_t coarseNowMs() {
  // CLOCK_MONOTONIC_COARSE is a vDSO read with no syscall: cheap enough for
  // every hit; its few-ms resolution is plenty for LRU refresh intervals.
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint32_t>(static_cast<uint64_t>(ts.tv_sec) * 1000u + static_cast<uint64_t>(ts.tv_nsec) / 1000000u);
}

}  // namespace tiercache
