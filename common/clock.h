// Clocks every part uses. coarseNowMs() is read on every cache hit (policy
// time stamps, rate limits), so it must cost no system call.
#pragma once

#include <cstdint>

namespace tiercache {

// Monotonic milliseconds, cheap (coarse clock, a few ms resolution). Wraps
// at 2^32; the eviction hooks keep only its low 29 bits.
uint32_t coarseNowMs();

}  // namespace tiercache
