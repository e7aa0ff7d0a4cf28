// WorkloadConfig: the rows of the "workload" object in the schema engine
// (config/schema.h), its cross-field rules, and the pool arithmetic.
#include "bench/workload.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "allocator/cache.h"
#include "allocator/cache_config.h"
#include "bench/key_space.h"
#include "config/schema.h"

namespace tiercache::bench {

namespace {

using config::Type;

// Sections of the table.
enum Section : uint8_t { kWorkload, kPopularity, kKeyBucket, kValueBucket };

#define WL_FIELD(expr)                                          \
  [](void* root, size_t i) -> config::Field {                   \
    WorkloadConfig& c = *static_cast<WorkloadConfig*>(root);    \
    (void)i;                                                    \
    return expr;                                                \
  }
#define WL_RULE(fn) config::rule<WorkloadConfig, fn>

std::string indexed(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// ---- rules that involve more than one option

// Each bucket inside its envelope (key_size / value_size, which the parser
// sets from the buckets), and some weight somewhere.
void checkBuckets(const std::vector<SizeBucket>& buckets, const SizeRange& envelope, const std::string& path) {
  double total = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (buckets[i].range.min < envelope.min || buckets[i].range.max > envelope.max) {
      throw ConfigError(indexed(path, i) + ".range", "lies outside the envelope (call updateEnvelopes())");
    }
    total += buckets[i].weight;
  }
  if (!buckets.empty() && !(total > 0)) throw ConfigError(path, "the weights must not all be 0");
}
void checkKeyBuckets(const WorkloadConfig& c, size_t, const std::string& path) {
  checkBuckets(c.key_size_buckets, c.key_size, path);
}
void checkValueBuckets(const WorkloadConfig& c, size_t, const std::string& path) {
  checkBuckets(c.value_size_buckets, c.value_size, path);
}

// The four ratios share out every operation; reported at "workload".
void checkRatioSum(const WorkloadConfig& c, size_t, const std::string&) {
  // add_chained_ratio and update_ratio have no JSON key (the cachebench
  // import sets them), so they are checked here, with the sum they share.
  const std::pair<double, const char*> extra[] = {{c.add_chained_ratio, "add_chained_ratio"},
                                                  {c.update_ratio, "update_ratio"},
                                                  {c.could_exist_ratio, "could_exist_ratio"},
                                                  {c.lone_set_ratio, "lone_set_ratio"}};
  for (const auto& [v, name] : extra) {
    if (!(v >= 0 && v <= 1)) throw ConfigError(std::string("workload.") + name, "must be in [0, 1]");
  }
  if (c.add_chained_ratio > 0 && (c.chain_length_buckets.empty() || c.chain_value_size_buckets.empty())) {
    throw ConfigError("workload.add_chained_ratio", "needs chain lengths and chained value sizes");
  }
  const double sum = c.get_ratio + c.set_ratio + c.remove_ratio + c.lone_get_ratio + c.add_chained_ratio +
                     c.update_ratio + c.could_exist_ratio + c.lone_set_ratio;
  if (std::fabs(sum - 1.0) > 1e-6) {
    std::ostringstream os;
    os << "get_ratio + set_ratio + remove_ratio + lone_get_ratio must sum to 1 (they sum to " << sum << ")";
    throw ConfigError("workload", os.str());
  }
  if (c.pool_distributions.empty()) return;
  const size_t pools = std::max<size_t>(c.key_pools.size(), 1);
  if (c.pool_distributions.size() != pools)
    throw ConfigError("workload.pool_distributions", "has " + std::to_string(c.pool_distributions.size()) +
                                                         " entries for " + std::to_string(pools) + " key pools");
  for (size_t p = 0; p < pools; ++p) {
    const PoolDistribution& d = c.pool_distributions[p];
    const std::string at = "workload.pool_distributions[" + std::to_string(p) + "]";
    const double s = d.get_ratio + d.set_ratio + d.remove_ratio + d.lone_get_ratio + d.add_chained_ratio +
                     d.update_ratio + d.could_exist_ratio + d.lone_set_ratio;
    if (std::fabs(s - 1.0) > 1e-6) throw ConfigError(at, "the operation ratios must sum to 1");
    if (d.key_size_buckets.empty()) throw ConfigError(at + ".key_size_buckets", "must not be empty");
    if (d.value_size_buckets.empty()) throw ConfigError(at + ".value_size_buckets", "must not be empty");
    // A short key may be drawn in two pools, whose value sizes differ: the
    // value of the key could not be verified whichever pool wrote it.
    if (d.key_size.min < KeySpace::indexWidth(c.keys))
      throw ConfigError(at + ".key_size_buckets",
                        "keys shorter than " + std::to_string(KeySpace::indexWidth(c.keys)) +
                            " bytes (the key index in hex) may be shared between pools: not with a distribution "
                            "per pool");
    checkBuckets(d.key_size_buckets, c.key_size, at + ".key_size_buckets");
    checkBuckets(d.value_size_buckets, c.value_size, at + ".value_size_buckets");
    const PopularityConfig& pop = d.popularity;
    if (pop.kind == PopularityKind::kPiecewise) {
      const std::vector<uint64_t> starts = c.poolKeyStarts();
      if (pop.bucket_sizes.empty() || pop.bucket_sizes.size() > starts[p + 1] - starts[p])
        throw ConfigError(at + ".popularity.buckets",
                          "must list at least one bucket and at most one per key of the pool");
      if (pop.bucket_weights.size() != pop.bucket_sizes.size())
        throw ConfigError(at + ".popularity.weights", "must have one weight per bucket");
    }
  }
}

void checkShares(const std::vector<double>& shares, const std::string& path) {
  double total = 0;
  for (double s : shares) total += s;
  if (!shares.empty() && !(total > 0)) throw ConfigError(path, "must not all be 0");
  if (shares.size() > 65535) throw ConfigError(path, "names more than 65535 pools");
}
void checkKeyPools(const WorkloadConfig& c, size_t, const std::string& path) { checkShares(c.key_pools, path); }

void checkOpPools(const WorkloadConfig& c, size_t, const std::string& path) {
  checkShares(c.op_pools, path);
  if (!c.op_pools.empty() && c.op_pools.size() != std::max<size_t>(c.key_pools.size(), 1)) {
    throw ConfigError(path, "has " + std::to_string(c.op_pools.size()) + " entries for " +
                                std::to_string(std::max<size_t>(c.key_pools.size(), 1)) + " key pools (key_pools)");
  }
  const std::vector<uint64_t> starts = c.poolKeyStarts();
  const std::vector<double> weights = c.poolOpWeights();
  for (size_t p = 0; p + 1 < starts.size(); ++p) {
    if (starts[p + 1] == starts[p] && weights[p] > 0) {
      throw ConfigError("workload.key_pools[" + std::to_string(p) + "]",
                        "gives pool " + std::to_string(p) + " no keys of the " + std::to_string(c.keys) +
                            ", but operations go to it");
    }
  }
}

void checkPopularityBuckets(const WorkloadConfig& c, size_t, const std::string& path) {
  const PopularityConfig& p = c.popularity;
  if (p.kind != PopularityKind::kPiecewise) return;
  if (p.bucket_sizes.empty()) throw ConfigError(path, "must list at least one bucket");
  if (p.bucket_sizes.size() > c.keys) throw ConfigError(path, "has more buckets than there are keys");
}
void checkPopularityWeights(const WorkloadConfig& c, size_t, const std::string& path) {
  const PopularityConfig& p = c.popularity;
  if (p.kind != PopularityKind::kPiecewise) return;
  if (p.bucket_weights.size() != p.bucket_sizes.size()) {
    throw ConfigError(path, "must have one weight per bucket (" + std::to_string(p.bucket_sizes.size()) + "), not " +
                                std::to_string(p.bucket_weights.size()));
  }
  double total = 0;
  for (double w : p.bucket_weights) total += w;
  if (!(total > 0)) throw ConfigError(path, "must not all be 0");
}

size_t keyBucketCount(const void* r) { return static_cast<const WorkloadConfig*>(r)->key_size_buckets.size(); }
size_t valueBucketCount(const void* r) { return static_cast<const WorkloadConfig*>(r)->value_size_buckets.size(); }

const config::Schema& schema() {
  static const config::Schema kSchema{
      .root = "workload",
      .sections = {"workload", "workload.popularity", "workload.key_size_buckets[]", "workload.value_size_buckets[]"},
      .options =
          {
              {.name = "threads", .type = Type::kCount, .description = "Client threads.",
               .field = WL_FIELD(&c.threads), .min = 1, .max = 1024},
              {.name = "ops_per_thread", .type = Type::kCount, .description = "Measured operations per thread.",
               .field = WL_FIELD(&c.ops_per_thread), .min = 1},
              {.name = "keys", .type = Type::kCount, .description = "Size of the key space.",
               .field = WL_FIELD(&c.keys), .min = 1, .max = static_cast<double>(KeySpace::kMaxKeys)},
              // Buckets before the plain ranges: a bad bucket also spoils the
              // envelope the parser derives from them.
              {.name = "key_size_buckets", .type = Type::kObjectList,
               .description = "Piecewise key sizes (cachebench keySizeRange with its probabilities); replaces "
                              "key_size, which becomes their envelope.",
               .nonEmpty = true, .rule = "not with key_size; some weight > 0", .check = WL_RULE(checkKeyBuckets),
               .child = kKeyBucket, .count = keyBucketCount,
               .resize = [](void* r, size_t n) { static_cast<WorkloadConfig*>(r)->key_size_buckets.resize(n); }},
              {.name = "value_size_buckets", .type = Type::kObjectList,
               .description = "Piecewise value sizes, as key_size_buckets; replaces value_size.",
               .nonEmpty = true, .rule = "not with value_size; some weight > 0",
               .check = WL_RULE(checkValueBuckets), .child = kValueBucket, .count = valueBucketCount,
               .resize = [](void* r, size_t n) { static_cast<WorkloadConfig*>(r)->value_size_buckets.resize(n); }},
              {.name = "key_size", .type = Type::kSizeRange,
               .description = "Key length in bytes, [min, max] or one size; keys shorter than the hex width of "
                              "the key index may repeat (as in cachebench).",
               .field = WL_FIELD((config::RangeField{&c.key_size.min, &c.key_size.max})), .min = 1,
               .max = Cache::kMaxKeySize},
              {.name = "value_size", .type = Type::kSizeRange,
               .description = "Value length, [min, max] or one size; a function of the key.",
               .field = WL_FIELD((config::RangeField{&c.value_size.min, &c.value_size.max})), .max = kGiB},
              {.name = "get_ratio", .type = Type::kReal, .description = "Share of gets.",
               .field = WL_FIELD(&c.get_ratio), .min = 0, .max = 1},
              {.name = "set_ratio", .type = Type::kReal, .description = "Share of sets.",
               .field = WL_FIELD(&c.set_ratio), .min = 0, .max = 1},
              {.name = "remove_ratio", .type = Type::kReal, .description = "Share of removes.",
               .field = WL_FIELD(&c.remove_ratio), .min = 0, .max = 1},
              {.name = "lone_get_ratio", .type = Type::kReal,
               .description = "Share of gets of keys outside the key space: always misses, never filled "
                              "(cachebench loneGetRatio).",
               .field = WL_FIELD(&c.lone_get_ratio), .min = 0, .max = 1,
               .rule = "the four ratios sum to 1", .check = WL_RULE(checkRatioSum)},
              {.name = "popularity", .type = Type::kObject,
               .description = "Which keys operations pick: a distribution name, or an object with its parameters.",
               .child = kPopularity, .shorthand = "distribution"},
              {.name = "lookaside", .type = Type::kBool, .description = "A get miss is followed by a set of that key.",
               .field = WL_FIELD(&c.lookaside)},
              {.name = "prepopulate", .type = Type::kBool,
               .description = "Set the keys (coldest first) before measuring.", .field = WL_FIELD(&c.prepopulate)},
              {.name = "seed", .type = Type::kCount, .description = "Random seed.", .field = WL_FIELD(&c.seed)},
              {.name = "progress_interval_ms", .type = Type::kCount,
               .description = "Milliseconds between progress lines; 0: none.",
               .field = WL_FIELD(&c.progress_interval_ms), .max = 3'600'000},
              {.name = "idle_ms", .type = Type::kCount,
               .description = "After the measured phase, the cache sits idle this long while the process CPU is "
                              "measured; 0: no idle phase.",
               .field = WL_FIELD(&c.idle_ms), .max = 600'000},
              {.name = "key_pools", .type = Type::kRealList,
               .description = "Pool p owns a consecutive share of the keys in proportion to its entry "
                              "(cachebench keyPoolDistribution); empty: all in pool 0.",
               .field = WL_FIELD(&c.key_pools), .min = 0, .nonEmpty = true, .rule = "not all 0",
               .check = WL_RULE(checkKeyPools)},
              {.name = "op_pools", .type = Type::kRealList,
               .description = "Weight of each pool for operations (cachebench opPoolDistribution); empty: key_pools.",
               .field = WL_FIELD(&c.op_pools), .min = 0, .nonEmpty = true,
               .rule = "one per key pool, not all 0; every pool operations reach has keys",
               .check = WL_RULE(checkOpPools)},
              {.name = "op_delay_batch", .type = Type::kCount,
               .description = "A thread sleeps op_delay_ns after this many operations; 0: never.",
               .field = WL_FIELD(&c.op_delay_batch)},
              {.name = "op_delay_ns", .type = Type::kCount, .description = "See op_delay_batch.",
               .field = WL_FIELD(&c.op_delay_ns), .max = 1'000'000'000},
              {.name = "only_set_if_miss", .type = Type::kBool,
               .description = "A set of a key that is in the cache is skipped (cachebench onlySetIfMiss).",
               .field = WL_FIELD(&c.only_set_if_miss)},

              // ---- popularity
              {.section = kPopularity, .name = "distribution", .type = Type::kEnum,
               .description = "uniform, zipf (alpha), normal (stddev_fraction) or piecewise (buckets, weights).",
               .field = WL_FIELD(config::enumField(c.popularity.kind)), .required = true,
               .choices = config::choicesOf(kPopularityNames)},
              {.section = kPopularity, .name = "alpha", .type = Type::kReal,
               .description = "zipf: P(rank k) ~ 1 / k^alpha.", .field = WL_FIELD(&c.popularity.alpha), .min = 0,
               .minExclusive = true, .max = 10, .rule = "zipf only"},
              {.section = kPopularity, .name = "stddev_fraction", .type = Type::kReal,
               .description = "normal: standard deviation as a share of the key space.",
               .field = WL_FIELD(&c.popularity.stddev_fraction), .min = 0, .minExclusive = true, .max = 10,
               .rule = "normal only"},
              {.section = kPopularity, .name = "buckets", .type = Type::kRealList,
               .description = "piecewise: relative sizes of consecutive key ranges.",
               .field = WL_FIELD(&c.popularity.bucket_sizes), .min = 0, .minExclusive = true,
               .rule = "piecewise only; at least one, at most one per key",
               .check = WL_RULE(checkPopularityBuckets)},
              {.section = kPopularity, .name = "weights", .type = Type::kRealList,
               .description = "piecewise: the weight of each bucket.", .field = WL_FIELD(&c.popularity.bucket_weights),
               .min = 0, .rule = "piecewise only; one per bucket, not all 0",
               .check = WL_RULE(checkPopularityWeights)},

              // ---- key_size_buckets[], value_size_buckets[]
              {.section = kKeyBucket, .name = "range", .type = Type::kSizeRange,
               .description = "Key sizes of this bucket, [min, max] or one size.",
               .field = WL_FIELD((config::RangeField{&c.key_size_buckets[i].range.min,
                                                     &c.key_size_buckets[i].range.max})),
               .required = true},  // bounded through key_size, their envelope
              {.section = kKeyBucket, .name = "weight", .type = Type::kReal,
               .description = "Relative probability of the bucket.", .field = WL_FIELD(&c.key_size_buckets[i].weight),
               .min = 0},
              {.section = kValueBucket, .name = "range", .type = Type::kSizeRange,
               .description = "Value sizes of this bucket, [min, max] or one size.",
               .field = WL_FIELD((config::RangeField{&c.value_size_buckets[i].range.min,
                                                     &c.value_size_buckets[i].range.max})),
               .required = true},  // bounded through value_size, their envelope
              {.section = kValueBucket, .name = "weight", .type = Type::kReal,
               .description = "Relative probability of the bucket.",
               .field = WL_FIELD(&c.value_size_buckets[i].weight), .min = 0},
          },
      .wholeFloats = true,  // the bench always took 1e6 for a count
  };
  return kSchema;
}

#undef WL_FIELD
#undef WL_RULE

}  // namespace

const char* popularityName(PopularityKind kind) { return nameOf(kPopularityNames, kind).data(); }

WorkloadConfig WorkloadConfig::fromJsonString(std::string_view document) {
  WorkloadConfig c;
  std::set<std::string> given;
  config::parse(schema(), document, &c, &given);
  // Rules about what was written, checked before updateEnvelopes() replaces
  // the plain ranges. A parameter of another distribution is a mistake, not
  // something to ignore.
  if (given.count("workload.key_size_buckets") && given.count("workload.key_size"))
    throw ConfigError("workload.key_size", "give key_size or key_size_buckets, not both");
  if (given.count("workload.value_size_buckets") && given.count("workload.value_size"))
    throw ConfigError("workload.value_size", "give value_size or value_size_buckets, not both");
  const struct {
    const char* key;
    PopularityKind kind;
  } kOwnParameters[] = {{"alpha", PopularityKind::kZipf},
                        {"stddev_fraction", PopularityKind::kNormal},
                        {"buckets", PopularityKind::kPiecewise},
                        {"weights", PopularityKind::kPiecewise}};
  for (const auto& p : kOwnParameters) {
    const std::string path = std::string("workload.popularity.") + p.key;
    if (given.count(path) && c.popularity.kind != p.kind) {
      throw ConfigError(path, std::string("only applies to the ") + popularityName(p.kind) + " distribution");
    }
  }
  c.updateEnvelopes();
  c.validate();
  return c;
}

WorkloadConfig WorkloadConfig::fromJsonFile(const std::string& path) {
  const std::string text = config::readConfigFile(path);
  try {
    return fromJsonString(text);
  } catch (const ConfigError& e) {
    throw config::inSource(e, path);  // path() kept for callers, the file named for the reader
  }
}

void WorkloadConfig::validate() const { config::validate(schema(), this); }

void WorkloadConfig::updateEnvelopes() {
  auto envelope = [](const std::vector<SizeBucket>& buckets, SizeRange& r) {
    if (buckets.empty()) return;
    r = buckets[0].range;
    for (const SizeBucket& b : buckets) {
      r.min = std::min(r.min, b.range.min);
      r.max = std::max(r.max, b.range.max);
    }
  };
  envelope(key_size_buckets, key_size);
  envelope(value_size_buckets, value_size);
}

std::vector<uint64_t> WorkloadConfig::poolKeyStarts() const {
  if (key_pools.empty()) return {0, keys};
  double total = 0;
  for (double s : key_pools) total += s;
  std::vector<uint64_t> starts{0};
  double acc = 0;
  for (size_t p = 0; p < key_pools.size(); ++p) {
    acc += key_pools[p];
    // cachebench's rule: pool p ends at keys * (shares so far) / total.
    uint64_t end = p + 1 == key_pools.size() ? keys : std::min<uint64_t>(keys, uint64_t(double(keys) * acc / total));
    starts.push_back(std::max(end, starts.back()));
  }
  return starts;
}

std::vector<double> WorkloadConfig::poolOpWeights() const {
  if (!op_pools.empty()) return op_pools;
  if (!key_pools.empty()) return key_pools;
  return {1.0};
}

std::string WorkloadConfig::toJson() const {
  // Every row, less what does not apply, so the output reads as a config a
  // person would write and parses back to the same workload.
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(config::toJson(schema(), this, -1));
  auto& pop = j["popularity"];
  if (popularity.kind != PopularityKind::kZipf) pop.erase("alpha");
  if (popularity.kind != PopularityKind::kNormal) pop.erase("stddev_fraction");
  if (popularity.kind != PopularityKind::kPiecewise) {
    pop.erase("buckets");
    pop.erase("weights");
  }
  for (const char* list : {"key_pools", "op_pools", "key_size_buckets", "value_size_buckets"}) {
    if (j[list].empty()) j.erase(list);
  }
  for (const char* zero : {"op_delay_batch", "op_delay_ns"}) {
    if (j[zero] == 0) j.erase(zero);
  }
  if (!only_set_if_miss) j.erase("only_set_if_miss");
  // Piecewise sizes replace the plain range (the parser refuses both).
  if (!key_size_buckets.empty()) j.erase("key_size");
  if (!value_size_buckets.empty()) j.erase("value_size");
  return j.dump(2);
}

}  // namespace tiercache::bench
