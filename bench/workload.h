// WorkloadConfig: the "workload" object of a tiercache-bench config file.
//
// The same JSON file holds the cache config (parsed by CacheConfig, which
// ignores "workload") and this object, whose keys are rows of the same
// schema engine (config/schema.h, rows in workload.cc): an unknown key, a
// wrong type or an impossible value is a ConfigError naming the key path,
// worded as the cache's ("workload.get_ratio: 1.5 is out of range [0, 1]").
// A document without a "workload" object gets the defaults below.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/name_table.h"

namespace tiercache::bench {

struct SizeRange {
  uint64_t min = 0;
  uint64_t max = 0;
};

// One piece of a piecewise size distribution: sizes uniform in range, the
// piece chosen with probability weight / (sum of weights).
struct SizeBucket {
  SizeRange range;
  double weight = 1.0;
};

enum class PopularityKind : uint8_t {
  kUniform,
  kZipf,    // P(rank k) ~ 1 / k^alpha, rank 1 = key index 0
  kNormal,  // centered on the middle key, stddev = stddev_fraction * keys
  kPiecewise,  // the key space cut into consecutive buckets (relative sizes),
               // bucket b drawn with weight b, uniform inside (cachebench's
               // popularityBuckets / popularityWeights)
};

inline constexpr std::array<NameRow<PopularityKind>, 4> kPopularityNames = {{{PopularityKind::kUniform, "uniform"},
                                                                          {PopularityKind::kZipf, "zipf"},
                                                                          {PopularityKind::kNormal, "normal"},
                                                                          {PopularityKind::kPiecewise, "piecewise"}}};
static_assert(isDenseNameTable(kPopularityNames, PopularityKind::kPiecewise));

struct PopularityConfig {
  PopularityKind kind = PopularityKind::kZipf;
  double alpha = 0.9;
  double stddev_fraction = 0.1;
  std::vector<double> bucket_sizes;    // kPiecewise: relative, scaled to the key space
  std::vector<double> bucket_weights;  // kPiecewise: one per bucket
};

// One pool's own distribution (cachebench's poolDistributions, one entry
// per pool): the sizes of the pool's keys and values, the operations that
// pick the pool and which of its keys they touch.
struct PoolDistribution {
  SizeRange key_size;  // the envelope of key_size_buckets
  SizeRange value_size;
  std::vector<SizeBucket> key_size_buckets;  // non-empty
  std::vector<SizeBucket> value_size_buckets;
  // The operation shares, as the workload's (they sum to 1).
  double get_ratio = 1.0, set_ratio = 0.0, remove_ratio = 0.0, lone_get_ratio = 0.0, add_chained_ratio = 0.0,
         update_ratio = 0.0, could_exist_ratio = 0.0, lone_set_ratio = 0.0;
  PopularityConfig popularity;
};

struct WorkloadConfig {
  uint32_t threads = 2;
  uint64_t ops_per_thread = 1'000'000;
  uint64_t keys = 1'000'000;          // key space size
  SizeRange key_size{16, 32};         // bytes; min must fit the key's index digits
  SizeRange value_size{64, 4096};     // bytes; a function of the key
  // Piecewise forms (cachebench keySizeRange/valSizeRange with their
  // ...Probability). When non-empty they replace key_size / value_size,
  // which the parser then sets to the envelope [lowest min, highest max].
  std::vector<SizeBucket> key_size_buckets;
  std::vector<SizeBucket> value_size_buckets;
  double get_ratio = 0.8;
  double set_ratio = 0.2;
  double remove_ratio = 0.0;
  // Gets of keys outside the key space, never set: always misses, and a
  // miss is not filled even with lookaside (cachebench's loneGetRatio).
  double lone_get_ratio = 0.0;
  PopularityConfig popularity;
  bool lookaside = true;              // a get miss is followed by a set of that key
  bool prepopulate = true;            // set keys (coldest first) before measuring
  uint64_t seed = 1;
  uint32_t progress_interval_ms = 1000;  // 0: no progress line
  // After the measured phase, the cache sits idle this long while the
  // process CPU is measured (what background threads cost when nothing
  // happens); 0: no idle phase.
  uint32_t idle_ms = 0;
  // Pools (cachebench's keyPoolDistribution / opPoolDistribution). With
  // key_pools, pool p owns the consecutive key indices
  // [keys * S(p) / S, keys * S(p+1) / S), S(p) the sum of the shares before
  // p; its keys are allocated in the cache's pool p. An operation first
  // picks a pool by op_pools' weights (key_pools' when empty), then a key
  // inside that pool's range by `popularity`. Empty: everything in pool 0.
  std::vector<double> key_pools;
  std::vector<double> op_pools;
  // After every op_delay_batch operations a thread sleeps op_delay_ns
  // (cachebench's opDelayBatch / opDelayNs); both must be > 0 to delay.
  uint64_t op_delay_batch = 0;
  uint64_t op_delay_ns = 0;
  // A set of a key that is in the cache is skipped (cachebench's onlySetIfMiss).
  bool only_set_if_miss = false;
  // Chained items (cachebench's addChainedRatio; set from a cachebench
  // config only, no JSON key of its own): the share of operations that find
  // the key's parent (setting it when absent) and add a chain of
  // chain_length_buckets children of chain_value_size_buckets bytes. With
  // it, every parent is stored through allocator/chained_items.h and every
  // get reads and checks the key's whole chain.
  double add_chained_ratio = 0.0;
  // cachebench's updateRatio (find to write; a miss is not filled).
  double update_ratio = 0.0;
  // cachebench's couldExistRatio (Cache::couldExist of the key) and
  // loneSetRatio (a set of a fresh key never named again); set from a
  // cachebench config only, like the two above.
  double could_exist_ratio = 0.0;
  double lone_set_ratio = 0.0;
  std::vector<SizeBucket> chain_length_buckets;
  std::vector<SizeBucket> chain_value_size_buckets;
  // Per-item TTL (cachebench's ttlSecsRange / ttlRatio): a set gives its
  // item a TTL drawn from ttl_secs_buckets with probability ttl_ratio.
  double ttl_ratio = 0.0;
  std::vector<SizeBucket> ttl_secs_buckets;
  // cachebench's poolDistributions with one entry per pool (set from a
  // cachebench config only): pool p's keys take their sizes from
  // pool_distributions[p], and an operation that picks pool p its kind and
  // key. The workload's own sizes are then the envelope of the pools', its
  // ratios the pools' weighted by op_pools, and its popularity unused.
  // Empty: one distribution for every pool.
  std::vector<PoolDistribution> pool_distributions;

  // Parse the "workload" object of a whole config document; throws ConfigError.
  static WorkloadConfig fromJsonString(std::string_view document);
  static WorkloadConfig fromJsonFile(const std::string& path);
  std::string toJson() const;
  // Throws ConfigError for impossible values (also called by the parsers).
  void validate() const;
  // Sets key_size / value_size to the envelope of their buckets (if any).
  void updateEnvelopes();
  // First key index of each pool, then `keys`: {0, keys} without key_pools.
  std::vector<uint64_t> poolKeyStarts() const;
  // Weight of each pool for operations (op_pools, else key_pools, else {1}).
  std::vector<double> poolOpWeights() const;
};

const char* popularityName(PopularityKind kind);  // "uniform", "zipf", "normal", "piecewise"

}  // namespace tiercache::bench
