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

// Counters declared once. Each X-macro list below is one table of rows
// X(name, help); the list a row sits in says its level (class, tier,
// cache), its kind (counter: monotonic; gauge: read at snapshot time), who
// counts it and whether it is summed into the coarser levels. From these
// lists come the fields of the stats structs, the live counters of the
// parts (ClassCounters, MoverCounters, CacheCounters), the sums per tier
// and per cache, metricTable(), toJson(), toPrometheus(), the bench report
// and the server's stats. Adding a counter = one row + the line that
// increments it. Names are snake_case; Prometheus adds the prefix
// tiercache_[tier_|class_] and, for counters, the suffix _total.

// Per (tier, pool, class), summed into their tier and the cache: counted
// on every allocation (AllocationClass::countSuccess/countFailure, in the
// allocator's per-thread tally; attempts are their sum) and by the movers
// (ClassCounters).
#define TIERCACHE_CLASS_ROLLUP_COUNTERS(X) TIERCACHE_CLASS_ALLOC_COUNTERS(X) TIERCACHE_CLASS_MOVE_COUNTERS(X)
#define TIERCACHE_CLASS_ALLOC_COUNTERS(X)                                                  \
  X(alloc_attempts, "allocations tried")                                                   \
  X(alloc_success, "allocations that got a slot")
#define TIERCACHE_CLASS_MOVE_COUNTERS(X)                                                   \
  X(evictions, "items evicted by an allocation that found no free slot (foreground)")     \
  X(background_evictions, "items evicted or demoted by the background evictors")          \
  X(demotions, "items moved down to the next tier")                                        \
  X(promotions, "items moved up to the tier above")
// Per class only, counted (ClassCounters).
#define TIERCACHE_CLASS_COUNTERS(X)                          \
  X(slow_allocs, "allocations that found no free slot")      \
  X(slabs_gained, "slabs the rebalancer gave this class")    \
  X(slabs_lost, "slabs the rebalancer took from this class") \
  X(reclaimed, "dead (expired or flushed) items of this class reclaimed, by any path")
// Per class, read at snapshot time, summed into their tier and the cache.
#define TIERCACHE_CLASS_ROLLUP_GAUGES(X) X(items, "items in the eviction lists")
// Per class only, read at snapshot time.
#define TIERCACHE_CLASS_GAUGES(X)                                                                      \
  X(slabs, "slabs the class holds")                                                                    \
  X(free_slots, "free slots in the class's slabs")                                                     \
  X(requested_bytes, "bytes its published items take (header, key, value: memcached's mem_requested)") \
  X(marginal_hits, "requests for keys the class evicted lately: hits one more slab would earn (marginal-hits)")
// Per tier, counted by the cache, summed into the cache.
#define TIERCACHE_TIER_ROLLUP_COUNTERS(X) X(hits, "finds that found their item in this tier")
// Per tier only, read at snapshot time.
#define TIERCACHE_TIER_GAUGES(X)                                                  \
  X(configured_bytes, "the tier's configured size")                               \
  X(limit_bytes, "the tier's limit: its size unless resized (Cache::resizeTier)") \
  X(mapped_bytes, "bytes the tier took from the OS")                              \
  X(slabs_total, "slabs the tier is cut into")                                    \
  X(slabs_used, "slabs assigned to a class")
// Whole cache, counted by Cache on the request path (CacheCounters).
#define TIERCACHE_CACHE_COUNTERS(X)                                                        \
  X(gets, "find/get calls")                                                                \
  X(sets, "set calls")                                                                     \
  X(set_failures, "set calls that could not store")                                        \
  X(inserts, "insertOrReplace calls (set included)")                                       \
  X(replaces, "inserts that replaced an existing key")                                     \
  X(replaces_in_place, "replacing sets that rewrote the item in its own slot")             \
  X(removes, "remove calls that removed a key")                                            \
  X(alloc_too_large, "allocations refused: key or value beyond the largest class")         \
  X(expired, "dead (expired or flushed) items reclaimed, by any path")                     \
  X(remove_callbacks, "remove callbacks run")                                              \
  X(conditional_failures, "add / CAS / touch publishes refused")                           \
  X(flushes, "flush calls")
// Whole cache, counted by the movers (MoverCounters).
#define TIERCACHE_MOVER_COUNTERS(X)                                                        \
  X(promotion_candidates, "lower-tier items that reached the hit threshold")               \
  X(promotions_rate_limited, "promotions refused by the rate limit")                       \
  X(promotions_no_room, "promotions refused: upper class below its free watermark")        \
  X(promotion_queue_dropped, "promotion requests dropped from a full queue")               \
  X(moves_aborted, "items removed or replaced while being moved")                          \
  X(rebalanced_slabs, "slabs moved between allocation classes")
// Whole cache, counted by the reaper (ItemReaper).
#define TIERCACHE_REAPER_COUNTERS(X)                                                       \
  X(reaped, "expired items reclaimed by the reaper")                                       \
  X(reaper_runs, "reaper passes")                                                          \
  X(reaper_scanned, "items the reaper looked at")                                          \
  X(reaper_sweeps, "full reaper passes over the index")
// Whole cache, counted by the marginal-hits slab rebalancer (SlabRebalancer).
#define TIERCACHE_REBALANCER_COUNTERS(X)                                                   \
  X(rebalancer_runs, "marginal-hits rebalancer runs")                                      \
  X(rebalancer_moves, "slabs the marginal-hits rebalancer moved")                        \
  X(rebalancer_move_failures, "moves the rebalancer chose but could not make (every donor slab pinned)")
// Whole cache, counted once at start by the persistence part (RecoveryCounters).
#define TIERCACHE_RECOVERY_COUNTERS(X)                                                     \
  X(recovered_items, "persistent items recovered at start")                                \
  X(discarded_items, "persistent slots discarded at start: torn, corrupted or a duplicate key") \
  X(expired_at_recovery, "persistent items that expired while the cache was down")
// Whole cache, counted by the flash store behind the last memory tier
// (FlashTier; flash/flash_store.h). Write amplification is
// flash_bytes_written / flash_item_bytes.
#define TIERCACHE_FLASH_COUNTERS(X)                                                            \
  X(flash_inserts, "items written to flash (victims of the last memory tier)")                 \
  X(flash_item_bytes, "key and value bytes of the items written to flash")                     \
  X(flash_bytes_written, "bytes written to the flash device")                                  \
  X(flash_reads, "reads from the flash device")                                                \
  X(flash_read_batches, "batches of flash reads submitted together (findMany)")                \
  X(flash_hits, "finds that missed in memory and were served from flash")                      \
  X(flash_misses, "flash lookups that found nothing")                                          \
  X(flash_checksum_failures, "flash entries dropped: bad checksum (corrupted on the device)")  \
  X(flash_key_mismatches, "flash reads of another key's entry (a hash tag collision): misses") \
  X(flash_regions_reclaimed, "flash regions reclaimed for reuse")                              \
  X(flash_reinserted, "flash items written again when their region was reclaimed")             \
  X(flash_admission_rejects, "victims the flash admission policy refused (dropped)")           \
  X(flash_removes, "flash entries invalidated: remove, replace or promotion")                  \
  X(flash_recovered, "flash entries recovered at start")
// Whole cache, read from the flash store at snapshot time.
#define TIERCACHE_FLASH_GAUGES(X)            \
  X(flash_items, "items in the flash index") \
  X(flash_index_bytes, "DRAM the flash index takes")
// Whole cache, read at snapshot time.
#define TIERCACHE_CACHE_GAUGES(X)                                                  \
  X(metadata_bytes, "DRAM metadata outside the tiers: index, slab table, classes") \
  X(wtinylfu_window_per_mille, "W-TinyLFU: the window's share of each class, per mille (0: another policy)")

#define TIERCACHE_STATS_FIELD(name, help) uint64_t name = 0;

enum class MetricKind : uint8_t { kCounter, kGauge };
enum class MetricLevel : uint8_t { kCache, kTier, kClass };
const char* metricKindName(MetricKind kind);    // "counter", "gauge"
const char* metricLevelName(MetricLevel level);  // "cache", "tier", "class"

struct ClassStats {
  uint32_t tier = 0;
  uint32_t pool = 0;
  uint32_t class_id = 0;
  uint32_t alloc_size = 0;
  TIERCACHE_CLASS_ROLLUP_COUNTERS(TIERCACHE_STATS_FIELD)
  TIERCACHE_CLASS_COUNTERS(TIERCACHE_STATS_FIELD)
  TIERCACHE_CLASS_ROLLUP_GAUGES(TIERCACHE_STATS_FIELD)
  TIERCACHE_CLASS_GAUGES(TIERCACHE_STATS_FIELD)
  uint32_t eviction_age_ms = 0;  // median age of the items its policy gave up (power-of-two buckets)
};

struct TierStats {
  uint32_t tier = 0;
  std::string name;
  std::string kind;
  TIERCACHE_CLASS_ROLLUP_COUNTERS(TIERCACHE_STATS_FIELD)  // sums over the tier's classes
  TIERCACHE_CLASS_ROLLUP_GAUGES(TIERCACHE_STATS_FIELD)
  TIERCACHE_TIER_ROLLUP_COUNTERS(TIERCACHE_STATS_FIELD)
  TIERCACHE_TIER_GAUGES(TIERCACHE_STATS_FIELD)
  bool persistent = false;
  std::string open_report;     // persistent tiers: what happened at open
};

struct WorkerStats {
  uint32_t threads = 0;
  uint64_t runs = 0;
  uint64_t traversals = 0;     // classes visited
  uint64_t items = 0;          // items evicted / promoted
  uint64_t busy_nanos = 0;
  uint64_t yielded_runs = 0;  // evictor runs that stood aside: no spare core
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
  TIERCACHE_CACHE_COUNTERS(TIERCACHE_STATS_FIELD)
  TIERCACHE_MOVER_COUNTERS(TIERCACHE_STATS_FIELD)
  TIERCACHE_REAPER_COUNTERS(TIERCACHE_STATS_FIELD)
  TIERCACHE_REBALANCER_COUNTERS(TIERCACHE_STATS_FIELD)
  TIERCACHE_RECOVERY_COUNTERS(TIERCACHE_STATS_FIELD)
  TIERCACHE_FLASH_COUNTERS(TIERCACHE_STATS_FIELD)
  TIERCACHE_FLASH_GAUGES(TIERCACHE_STATS_FIELD)
  TIERCACHE_CACHE_GAUGES(TIERCACHE_STATS_FIELD)
  TIERCACHE_CLASS_ROLLUP_COUNTERS(TIERCACHE_STATS_FIELD)  // sums over the tiers
  TIERCACHE_CLASS_ROLLUP_GAUGES(TIERCACHE_STATS_FIELD)
  TIERCACHE_TIER_ROLLUP_COUNTERS(TIERCACHE_STATS_FIELD)
  WorkerStats background_evictor;
  WorkerStats promoter;
  double recovery_seconds = 0;          // persistent tiers: time to rebuild the index at start
  uint32_t item_header_bytes = 0;
  double index_bytes_per_item = 0;  // bucket array bytes / items (at capacity: / slots)
  uint32_t index_buckets_log2 = 0;
  std::vector<TierStats> tiers;
  std::vector<PoolStats> pools;
  std::vector<ClassStats> classes;  // only classes that ever held a slab

  // Flash bytes written per item byte accepted (0 before any).
  double flashWriteAmplification() const {
    return flash_item_bytes ? double(flash_bytes_written) / double(flash_item_bytes) : 0.0;
  }
  // Every hit: the memory tiers' (`hits`) and flash's. A flash hit is a
  // hit (the item comes back into tier 0) but no tier's.
  uint64_t allHits() const { return hits + flash_hits; }
  double hitRatio() const { return gets ? double(allHits()) / double(gets) : 0.0; }
  // Share of all gets that were served by tier t.
  double tierHitRatio(size_t t) const { return gets && t < tiers.size() ? double(tiers[t].hits) / double(gets) : 0.0; }
  std::string toJson() const;
  std::string toPrometheus() const;
  // Sums the class rows of the ROLLUP lists into their tiers (over every
  // class in `allClasses`, kept or not) and the tier rows into the cache.
  void rollUp(const std::vector<ClassStats>& allClasses);
  // The change since an earlier snapshot of the same cache: every counter
  // (and the worker figures) is this minus `before`, every gauge is this
  // snapshot's. Tiers match by position, classes by (tier, pool, class).
  CacheStats since(const CacheStats& before) const;
};

// One row of the counter tables, for code that walks them all (exporters,
// tests). Exactly one of the three field pointers is set, for its level.
struct MetricDesc {
  const char* name;
  MetricKind kind;
  MetricLevel level;
  const char* help;
  uint64_t CacheStats::*cache = nullptr;
  uint64_t TierStats::*tier = nullptr;
  uint64_t ClassStats::*cls = nullptr;
  // Summed up into the coarser levels (which then have a row of their own).
  bool rolledUp = false;
};
// Every row, class rows first, then tier, then cache; a ROLLUP row appears
// once per level it is kept at.
const std::vector<MetricDesc>& metricTable();

}  // namespace tiercache
