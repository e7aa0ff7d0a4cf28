#include "clock.h"

#include <time.h>

namespace tiercache {

uint32_t coarseNowMs() {
  // CLOCK_MONOTONIC_COARSE is a vDSO read with no syscall: cheap enough for
  // every hit; its few-ms resolution is plenty for LRU refresh intervals.
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint32_t>(static_cast<uint64_t>(ts.tv_sec) * 1000u + static_cast<uint64_t>(ts.tv_nsec) / 1000000u);
}

}  // namespace tiercache
