// Anonymous mappings aligned to 2 MiB and advised for transparent huge
// pages. A cache touches its memory at random: with 4 KiB pages almost every
// lookup also misses the TLB. Exactly `size` bytes stay mapped (the
// alignment slack is unmapped again), so the memory bound still holds.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tiercache {

// Returns nullptr on failure (errno set by mmap).
void* mapHugeAnonymous(size_t size);

// Bytes of the mapping that starts at `start` mapped with huge (PMD) pages
// now, as /proc/self/smaps counts them (anonymous, shmem or file). Pages
// are counted once touched. 0 when the mapping is not found or smaps
// cannot be read.
uint64_t hugeMappedBytes(const void* start);

}  // namespace tiercache
