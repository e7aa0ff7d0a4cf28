// The cache's own live counters (the rows of TIERCACHE_CACHE_COUNTERS and
// TIERCACHE_RECOVERY_COUNTERS in cache_stats.h), kept by Cache and read by
// the stats part (stats_collector.h). Not part of the API.
#pragma once

#include <memory>
#include <vector>

#include "cache_stats.h"
#include "sharded_counter.h"

namespace tiercache {

struct CacheCounters {
  // Bumped on the request path from many threads: sharded.
#define TIERCACHE_SHARDED_FIELD(name, help) ShardedCounter name;
  TIERCACHE_CACHE_COUNTERS(TIERCACHE_SHARDED_FIELD)
#undef TIERCACHE_SHARDED_FIELD
  // Handles made and released: their difference is the pins outstanding,
  // exact once no other thread uses the cache (~Cache checks it).
  ShardedCounter handlesOpened, handlesClosed;
  // A set (or insertOrReplace) rewritten in place bumps one counter, not
  // the four rows it belongs to (sets, inserts, replaces, replaces_in_place):
  // every add is a locked instruction on the hot path. The stats part adds
  // these into those rows.
  ShardedCounter setsInPlace, insertsInPlace;
  std::vector<std::unique_ptr<ShardedCounter>> tierHits;  // one per tier: the tier rows of "hits"
};

// Written once by recovery, before any other thread uses the cache.
struct RecoveryCounters {
#define TIERCACHE_PLAIN_FIELD(name, help) uint64_t name = 0;
  TIERCACHE_RECOVERY_COUNTERS(TIERCACHE_PLAIN_FIELD)
#undef TIERCACHE_PLAIN_FIELD
  double seconds = 0;
};

}  // namespace tiercache
