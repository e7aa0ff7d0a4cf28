// CacheStats: a snapshot of the cache's counters, taken by Cache::stats().
//
// Counters are monotonic since the cache was created; gauges (items, free
// slots, slabs) are read at snapshot time without stopping the cache, so
// figures from different classes may be a few operations apart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tiercache {

struct ClassStats {
  uint32_t tier = 0;
  uint32_t pool = 0;
  uint32_t class_id = 0;
  uint32_t alloc_size = 0;
  uint64_t slabs = 0;
  uint64_t items = 0;          // items in the eviction list
  uint64_t free_slots = 0;
  uint64_t alloc_attempts = 0;
  uint64_t alloc_success = 0;
  uint64_t evictions = 0;      // items evicted to make room (foreground)
  uint64_t background_evictions = 0;
  uint64_t demotions = 0;      // moved down out of this class
  uint64_t promotions = 0;     // moved up out of this class
  uint64_t slabs_gained = 0;   // by the rebalancer
  uint64_t slabs_lost = 0;
  uint32_t eviction_age_ms = 0;  // median age of the items its policy gave up (power-of-two buckets)
  // rebalance.strategy "marginal-hits": requests for keys this class evicted
  // within about a slab's worth of evictions (hits one more slab would earn).
  uint64_t marginal_hits = 0;
};

struct TierStats {
  uint32_t tier = 0;
  std::string name;
  std::string kind;
  uint64_t configured_bytes = 0;
  uint64_t mapped_bytes = 0;   // bytes this tier took from the OS
  uint64_t slabs_total = 0;
  uint64_t slabs_used = 0;     // assigned to a class
  uint64_t items = 0;
  uint64_t alloc_attempts = 0;
  uint64_t alloc_success = 0;
  uint64_t evictions = 0;      // foreground: an allocation had to wait for them
  uint64_t background_evictions = 0;
  uint64_t demotions = 0;      // items moved from this tier to the next
  uint64_t promotions = 0;     // items moved from this tier to the one above
  uint64_t hits = 0;           // finds that found their item in this tier
  bool persistent = false;
  std::string open_report;     // persistent tiers: what happened at open
};

struct WorkerStats {
  uint32_t threads = 0;
  uint64_t runs = 0;
  uint64_t traversals = 0;     // classes visited
  uint64_t items = 0;          // items evicted / promoted
  uint64_t busy_nanos = 0;
  double avgItemsPerRun() const { return runs ? double(items) / double(runs) : 0.0; }
  double avgTraversalMicros() const { return traversals ? double(busy_nanos) / 1e3 / double(traversals) : 0.0; }
};

struct PoolStats {
  uint32_t pool = 0;
  std::string name;
  uint64_t slab_quota = 0;     // summed over tiers
  uint64_t slabs = 0;
};

struct CacheStats {
  uint64_t gets = 0;           // find/get calls
  uint64_t hits = 0;
  uint64_t sets = 0;           // set() calls
  uint64_t set_failures = 0;   // set() that could not store
  uint64_t inserts = 0;        // insertOrReplace calls (set included)
  uint64_t replaces = 0;       // of which replaced an existing key
  uint64_t removes = 0;        // remove() calls that removed a key
  uint64_t alloc_attempts = 0;
  uint64_t alloc_success = 0;
  uint64_t alloc_too_large = 0;  // key or value beyond the largest class
  uint64_t evictions = 0;      // foreground, all tiers
  uint64_t background_evictions = 0;
  uint64_t demotions = 0;
  uint64_t promotions = 0;
  uint64_t promotion_candidates = 0;   // lower-tier items that reached the hit threshold
  uint64_t promotions_rate_limited = 0;
  uint64_t promotions_no_room = 0;     // upper class below its free watermark
  uint64_t promotion_queue_dropped = 0;
  uint64_t moves_aborted = 0;          // item removed or replaced while being moved
  // Item lifecycle.
  uint64_t expired = 0;                // dead (expired or flushed) items reclaimed, by any path
  uint64_t reaped = 0;                 // ... of which by the reaper
  uint64_t reaper_runs = 0;
  uint64_t reaper_scanned = 0;         // items the reaper looked at
  uint64_t reaper_sweeps = 0;          // full passes over the index
  uint64_t expired_at_recovery = 0;    // persistent items that expired while the cache was down
  uint64_t remove_callbacks = 0;
  uint64_t conditional_failures = 0;   // add / CAS / touch publishes refused
  uint64_t flushes = 0;
  WorkerStats background_evictor;
  WorkerStats promoter;
  uint64_t rebalanced_slabs = 0;      // by any strategy (the slow path's included)
  uint64_t rebalancer_runs = 0;       // marginal-hits: background runs
  uint64_t rebalancer_moves = 0;      // ... and the slabs they moved
  // Start-up of persistent tiers.
  uint64_t recovered_items = 0;
  uint64_t discarded_items = 0;        // checksum present but wrong (torn, corrupted), or a duplicate key
  double recovery_seconds = 0;
  uint64_t items = 0;
  // DRAM metadata outside the tiers: index, slab table, classes.
  uint64_t metadata_bytes = 0;
  uint32_t item_header_bytes = 0;
  double index_bytes_per_item = 0;  // bucket array bytes / items (at capacity: / slots)
  uint32_t index_buckets_log2 = 0;
  std::vector<TierStats> tiers;
  std::vector<PoolStats> pools;
  std::vector<ClassStats> classes;  // only classes that ever held a slab

  double hitRatio() const { return gets ? double(hits) / double(gets) : 0.0; }
  // Share of all gets that were served by tier t.
  double tierHitRatio(size_t t) const { return gets && t < tiers.size() ? double(tiers[t].hits) / double(gets) : 0.0; }
  std::string toJson() const;
  std::string toPrometheus() const;
};

}  // namespace tiercache
