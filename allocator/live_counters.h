// The live form of a cache-level counter list of cache_stats.h, for a part
// that counts from its own threads (the movers, the reaper, the
// rebalancer): one relaxed atomic per row, named as the row, and the copy
// of every row into a CacheStats. A part declares
//   struct XCounters { TIERCACHE_LIVE_COUNTERS(TIERCACHE_X_COUNTERS) };
// and a new row of its list is counted and reported with no other edit than
// the line that increments it. Not part of the API.
#pragma once

#include <atomic>
#include <cstdint>

#include "cache_stats.h"

#define TIERCACHE_LIVE_FIELD(name, help) std::atomic<uint64_t> name{0};
#define TIERCACHE_LIVE_COPY(name, help) s.name = name.load(std::memory_order_relaxed);
#define TIERCACHE_LIVE_COUNTERS(LIST)                        \
  LIST(TIERCACHE_LIVE_FIELD)                                 \
  /* Copies every row into the snapshot (relaxed loads). */  \
  void copyTo(::tiercache::CacheStats& s) const { LIST(TIERCACHE_LIVE_COPY) }
