// Anonymous mappings aligned to 2 MiB and advised for transparent huge
// pages. A cache touches its memory at random: with 4 KiB pages almost every
// lookup also misses the TLB. Exactly `size` bytes stay mapped (the
// alignment slack is unmapped again), so the memory bound still holds.
#pragma once

#include <cstddef>

namespace tiercache {

// Returns nullptr on failure (errno set by mmap).
void* mapHugeAnonymous(size_t size);

}  // namespace tiercache
