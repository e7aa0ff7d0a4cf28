// Cache's own counters, shared by cache.cc and cache_persistence.cc. Not part of the API.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "sharded_counter.h"

namespace tiercache {

struct CacheCounters {
  ShardedCounter gets, sets, setFailures, inserts, replaces, removes, allocTooLarge;
  std::vector<std::unique_ptr<ShardedCounter>> tierHits;
  uint64_t recoveredItems = 0, discardedItems = 0;  // written once, before any other thread
  double recoverySeconds = 0;
};

}  // namespace tiercache
