// Cache's own counters, shared by cache.cc and cache_persistence.cc. Not part of the API.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "sharded_counter.h"

namespace tiercache {

struct CacheCounters {
  ShardedCounter gets, sets, setFailures, inserts, replaces, removes, allocTooLarge;
  // Handles made and released: their difference is the pins outstanding,
  // exact once no other thread uses the cache (~Cache checks it).
  ShardedCounter handlesOpened, handlesClosed;
  std::vector<std::unique_ptr<ShardedCounter>> tierHits;
  uint64_t recoveredItems = 0, discardedItems = 0;  // written once, before any other thread
  double recoverySeconds = 0;
  // Lifecycle: dead items reclaimed (any path), remove callbacks run,
  // flushes, conditional publishes refused (add/CAS/touch), items dropped
  // at recovery because they expired while the cache was down.
  std::atomic<uint64_t> expired{0}, removeCallbacks{0}, flushes{0}, conditionalFailures{0};
  uint64_t expiredAtRecovery = 0;  // written once, before any other thread
};

}  // namespace tiercache
