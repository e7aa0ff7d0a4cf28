// The stats part: turns the live counters of the other parts into one
// CacheStats snapshot (Cache::stats()). It owns no counter; it holds
// read-only references to the parts that count, given at construction, and
// walks the counter tables of cache_stats.h. Not part of the API.
#pragma once

#include <memory>
#include <vector>

#include "cache_config.h"
#include "cache_stats.h"

namespace tiercache {

class AccessIndex;
class ItemReaper;
class Movers;
class PoolRecords;
class SlabAllocator;
class SlabRebalancer;
struct WindowSignal;
class SlabTable;
struct CacheCounters;
struct RecoveryCounters;

// What the stats part reads; every reference outlives the collector.
struct StatsParts {
  const CacheConfig& config;
  const std::vector<std::unique_ptr<SlabAllocator>>& allocs;  // one per tier, tier order
  const SlabTable& table;
  const AccessIndex& index;
  const CacheCounters& counters;
  const RecoveryCounters& recovery;
  const Movers& movers;
  const ItemReaper& reaper;
  std::vector<const PoolRecords*> records;        // per tier; null: volatile
  const SlabRebalancer* rebalancer = nullptr;      // rebalance.strategy "marginal-hits" only
  const WindowSignal* windowSignal = nullptr;      // W-TinyLFU only
};

class StatsCollector {
 public:
  explicit StatsCollector(StatsParts parts) : p_(std::move(parts)) {}
  // Thread-safe; gauges are read without stopping the cache (see cache_stats.h).
  CacheStats collect() const;

 private:
  const StatsParts p_;
};

}  // namespace tiercache
