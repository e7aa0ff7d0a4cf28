// Special stressors: the programs cachebench selects by test_config.name,
// mapped onto tiercache where a faithful mapping exists (docs/cachebench.md
// says what each keeps and what it changes).
//
//   high_refcount       many threads take and hold handles to one item until
//                       its refcount limit throws RefcountOverflow; every
//                       handle released, the cache must be consistent.
//   cachelib_map        a hash map of u32 -> value per key, stored as a
//                       parent plus chain (allocator/chained_items.h),
//                       filled, read back entry by entry, holed and compacted.
//   cachelib_range_map  the same over the sorted index, with range lookups
//                       checked against a scan.
//   fast_shutdown       a persistent tier shut down mid-workload and
//                       reopened, rounds of it; what comes back must be
//                       exactly what was there, byte for byte.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "allocator/cache_config.h"

namespace tiercache::bench {

// True for the names runStressor knows.
bool isMappedStressor(const std::string& name);

struct StressorOptions {
  uint64_t ops_per_thread = 0;
  uint32_t threads = 0;  // 0: the stressor's default
  uint64_t seed = 1;
};

// Runs the stressor on a cache built from config; prints a report to out.
// Returns 0 when every check held, 1 otherwise (the failure on err).
int runStressor(const std::string& name, const CacheConfig& config, const StressorOptions& options, std::ostream& out,
                std::ostream& err);

}  // namespace tiercache::bench
