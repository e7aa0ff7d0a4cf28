#include "bench/workload.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "allocator/cache.h"
#include "allocator/cache_config.h"
#include "bench/key_space.h"

namespace tiercache::bench {

namespace {

using json = nlohmann::json;

std::string typeName(const json& v) { return v.type_name(); }

uint64_t parseUint(const json& v, const std::string& path) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) throw ConfigError(path, "must not be negative");
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d >= 0 && d == std::floor(d) && d < 1.8e19) return static_cast<uint64_t>(d);
    throw ConfigError(path, "must be a whole number >= 0");
  }
  throw ConfigError(path, "must be an integer, not " + typeName(v));
}

// A byte count: a number or a size string such as "4KiB".
uint64_t parseBytes(const json& v, const std::string& path) {
  if (v.is_string()) return parseSize(v.get<std::string>(), path);
  if (v.is_number()) return parseUint(v, path);
  throw ConfigError(path, "must be a size (number or string like \"4KiB\"), not " + typeName(v));
}

double parseDouble(const json& v, const std::string& path) {
  if (!v.is_number()) throw ConfigError(path, "must be a number, not " + typeName(v));
  double d = v.get<double>();
  if (!std::isfinite(d)) throw ConfigError(path, "must be finite");
  return d;
}

bool parseBool(const json& v, const std::string& path) {
  if (!v.is_boolean()) throw ConfigError(path, "must be true or false, not " + typeName(v));
  return v.get<bool>();
}

// [min, max], or one size for both.
SizeRange parseRange(const json& v, const std::string& path) {
  if (v.is_array()) {
    if (v.size() != 2) throw ConfigError(path, "must be [min, max]");
    return SizeRange{parseBytes(v[0], path + "[0]"), parseBytes(v[1], path + "[1]")};
  }
  uint64_t n = parseBytes(v, path);
  return SizeRange{n, n};
}

PopularityKind parseKind(const json& v, const std::string& path) {
  if (!v.is_string()) throw ConfigError(path, "must be \"uniform\", \"zipf\" or \"normal\"");
  std::string s = v.get<std::string>();
  if (s == "uniform") return PopularityKind::kUniform;
  if (s == "zipf") return PopularityKind::kZipf;
  if (s == "normal") return PopularityKind::kNormal;
  if (s == "piecewise") return PopularityKind::kPiecewise;
  throw ConfigError(path, "unknown distribution \"" + s + "\" (expected uniform, zipf, normal or piecewise)");
}

PopularityConfig parsePopularity(const json& v, const std::string& path) {
  PopularityConfig p;
  if (v.is_string()) {
    p.kind = parseKind(v, path);
    return p;
  }
  if (!v.is_object()) throw ConfigError(path, "must be a distribution name or an object");
  if (!v.contains("distribution")) throw ConfigError(path + ".distribution", "missing");
  for (const auto& [key, val] : v.items()) {
    std::string sub = path + "." + key;
    if (key == "distribution") {
      p.kind = parseKind(val, sub);
    } else if (key == "alpha") {
      p.alpha = parseDouble(val, sub);
    } else if (key == "stddev_fraction") {
      p.stddev_fraction = parseDouble(val, sub);
    } else if (key == "buckets" || key == "weights") {
      if (!val.is_array()) throw ConfigError(sub, "must be an array of numbers");
      std::vector<double>& out = key == "buckets" ? p.bucket_sizes : p.bucket_weights;
      for (size_t i = 0; i < val.size(); ++i) out.push_back(parseDouble(val[i], sub + "[" + std::to_string(i) + "]"));
    } else {
      throw ConfigError(sub, "unknown key");
    }
  }
  // A parameter of another distribution is a mistake, not something to ignore.
  if (v.contains("alpha") && p.kind != PopularityKind::kZipf)
    throw ConfigError(path + ".alpha", "only applies to the zipf distribution");
  if (v.contains("stddev_fraction") && p.kind != PopularityKind::kNormal)
    throw ConfigError(path + ".stddev_fraction", "only applies to the normal distribution");
  for (const char* k : {"buckets", "weights"})
    if (v.contains(k) && p.kind != PopularityKind::kPiecewise)
      throw ConfigError(path + "." + k, "only applies to the piecewise distribution");
  return p;
}

// [{"range": [min, max], "weight": w}, ...]
std::vector<SizeBucket> parseBuckets(const json& v, const std::string& path) {
  if (!v.is_array() || v.empty()) throw ConfigError(path, "must be a non-empty array of {\"range\", \"weight\"}");
  std::vector<SizeBucket> out;
  for (size_t i = 0; i < v.size(); ++i) {
    std::string p = path + "[" + std::to_string(i) + "]";
    if (!v[i].is_object()) throw ConfigError(p, "must be an object {\"range\": [min, max], \"weight\": w}");
    SizeBucket b;
    if (!v[i].contains("range")) throw ConfigError(p + ".range", "missing");
    for (const auto& [key, val] : v[i].items()) {
      if (key == "range") {
        b.range = parseRange(val, p + ".range");
      } else if (key == "weight") {
        b.weight = parseDouble(val, p + ".weight");
      } else {
        throw ConfigError(p + "." + key, "unknown key");
      }
    }
    out.push_back(b);
  }
  return out;
}

std::vector<double> parseShares(const json& v, const std::string& path) {
  if (!v.is_array() || v.empty()) throw ConfigError(path, "must be a non-empty array of numbers");
  std::vector<double> out;
  for (size_t i = 0; i < v.size(); ++i) out.push_back(parseDouble(v[i], path + "[" + std::to_string(i) + "]"));
  return out;
}

// The option table: one row per key of the "workload" object.
struct Option {
  const char* name;
  std::function<void(WorkloadConfig&, const json&, const std::string&)> parse;
};

const std::vector<Option>& options() {
  static const std::vector<Option> kOptions = {
      {"threads",
       [](WorkloadConfig& c, const json& v, const std::string& p) {
         uint64_t n = parseUint(v, p);
         if (n < 1 || n > 1024) throw ConfigError(p, "must be in [1,1024]");
         c.threads = static_cast<uint32_t>(n);
       }},
      {"ops_per_thread", [](WorkloadConfig& c, const json& v, const std::string& p) { c.ops_per_thread = parseUint(v, p); }},
      {"keys", [](WorkloadConfig& c, const json& v, const std::string& p) { c.keys = parseUint(v, p); }},
      {"key_size", [](WorkloadConfig& c, const json& v, const std::string& p) { c.key_size = parseRange(v, p); }},
      {"value_size", [](WorkloadConfig& c, const json& v, const std::string& p) { c.value_size = parseRange(v, p); }},
      {"get_ratio", [](WorkloadConfig& c, const json& v, const std::string& p) { c.get_ratio = parseDouble(v, p); }},
      {"set_ratio", [](WorkloadConfig& c, const json& v, const std::string& p) { c.set_ratio = parseDouble(v, p); }},
      {"remove_ratio", [](WorkloadConfig& c, const json& v, const std::string& p) { c.remove_ratio = parseDouble(v, p); }},
      {"lone_get_ratio", [](WorkloadConfig& c, const json& v, const std::string& p) { c.lone_get_ratio = parseDouble(v, p); }},
      {"key_size_buckets", [](WorkloadConfig& c, const json& v, const std::string& p) { c.key_size_buckets = parseBuckets(v, p); }},
      {"value_size_buckets", [](WorkloadConfig& c, const json& v, const std::string& p) { c.value_size_buckets = parseBuckets(v, p); }},
      {"popularity", [](WorkloadConfig& c, const json& v, const std::string& p) { c.popularity = parsePopularity(v, p); }},
      {"lookaside", [](WorkloadConfig& c, const json& v, const std::string& p) { c.lookaside = parseBool(v, p); }},
      {"prepopulate", [](WorkloadConfig& c, const json& v, const std::string& p) { c.prepopulate = parseBool(v, p); }},
      {"seed", [](WorkloadConfig& c, const json& v, const std::string& p) { c.seed = parseUint(v, p); }},
      {"key_pools", [](WorkloadConfig& c, const json& v, const std::string& p) { c.key_pools = parseShares(v, p); }},
      {"op_pools", [](WorkloadConfig& c, const json& v, const std::string& p) { c.op_pools = parseShares(v, p); }},
      {"op_delay_batch", [](WorkloadConfig& c, const json& v, const std::string& p) { c.op_delay_batch = parseUint(v, p); }},
      {"op_delay_ns",
       [](WorkloadConfig& c, const json& v, const std::string& p) {
         c.op_delay_ns = parseUint(v, p);
         if (c.op_delay_ns > 1'000'000'000) throw ConfigError(p, "must be at most 1000000000 (one second)");
       }},
      {"only_set_if_miss", [](WorkloadConfig& c, const json& v, const std::string& p) { c.only_set_if_miss = parseBool(v, p); }},
      {"progress_interval_ms",
       [](WorkloadConfig& c, const json& v, const std::string& p) {
         uint64_t n = parseUint(v, p);
         if (n > 3'600'000) throw ConfigError(p, "must be at most 3600000 (one hour)");
         c.progress_interval_ms = static_cast<uint32_t>(n);
       }},
      {"idle_ms",
       [](WorkloadConfig& c, const json& v, const std::string& p) {
         uint64_t n = parseUint(v, p);
         if (n > 600'000) throw ConfigError(p, "must be at most 600000 (ten minutes)");
         c.idle_ms = static_cast<uint32_t>(n);
       }},
  };
  return kOptions;
}

void checkRatio(double r, const char* name) {
  if (!(r >= 0.0 && r <= 1.0)) throw ConfigError(std::string("workload.") + name, "must be in [0,1]");
}

// Finds the first key repeated within one object under "workload" (the
// parser would otherwise keep the last silently); tracked with the parser's
// callback, since the parsed document no longer shows duplicates.
class DuplicateKeys {
 public:
  bool operator()(int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: stack_.push_back(Frame{false, 0, {}, {}}); break;
      case json::parse_event_t::array_start: stack_.push_back(Frame{true, 0, {}, {}}); break;
      case json::parse_event_t::key: {
        Frame& f = stack_.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second && first_.empty()) first_ = path();
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        stack_.pop_back();
        next();
        break;
      case json::parse_event_t::value: next(); break;
    }
    return true;
  }
  // Path of the first repeated key under "workload", "" if none.
  std::string firstInWorkload() const { return first_.rfind("workload", 0) == 0 ? first_ : ""; }

 private:
  struct Frame {
    bool array;
    size_t index;
    std::string key;
    std::set<std::string> keys;
  };
  void next() {
    if (!stack_.empty() && stack_.back().array) ++stack_.back().index;
  }
  std::string path() const {
    std::string p;
    for (const Frame& f : stack_) {
      if (f.array) {
        p += "[" + std::to_string(f.index) + "]";
      } else {
        p += (p.empty() ? "" : ".") + f.key;
      }
    }
    return p;
  }
  std::vector<Frame> stack_;
  std::string first_;
};

}  // namespace

const char* popularityName(PopularityKind kind) {
  switch (kind) {
    case PopularityKind::kUniform: return "uniform";
    case PopularityKind::kZipf: return "zipf";
    case PopularityKind::kNormal: return "normal";
    case PopularityKind::kPiecewise: return "piecewise";
  }
  return "?";
}

WorkloadConfig WorkloadConfig::fromJsonString(std::string_view document) {
  json doc;
  auto duplicates = std::make_shared<DuplicateKeys>();
  try {
    doc = json::parse(document.begin(), document.end(),
                      [duplicates](int depth, json::parse_event_t e, json& parsed) { return (*duplicates)(depth, e, parsed); });
  } catch (const json::parse_error& e) {
    throw ConfigError("", std::string("invalid JSON: ") + e.what());
  }
  std::string duplicate = duplicates->firstInWorkload();
  if (!duplicate.empty()) throw ConfigError(duplicate, "key appears more than once");
  if (!doc.is_object()) throw ConfigError("", "the config must be a JSON object");
  WorkloadConfig c;
  auto it = doc.find("workload");
  if (it == doc.end()) return c;
  if (!it->is_object()) throw ConfigError("workload", "must be an object");
  for (const auto& [key, val] : it->items()) {
    std::string path = "workload." + key;
    bool known = false;
    for (const Option& o : options()) {
      if (key == o.name) {
        o.parse(c, val, path);
        known = true;
        break;
      }
    }
    if (!known) throw ConfigError(path, "unknown key");
  }
  if (it->contains("key_size_buckets") && it->contains("key_size"))
    throw ConfigError("workload.key_size", "give key_size or key_size_buckets, not both");
  if (it->contains("value_size_buckets") && it->contains("value_size"))
    throw ConfigError("workload.value_size", "give value_size or value_size_buckets, not both");
  c.updateEnvelopes();
  c.validate();
  return c;
}

WorkloadConfig WorkloadConfig::fromJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("", "cannot open config file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return fromJsonString(ss.str());
  } catch (const ConfigError& e) {
    // Keep path() for callers; name the file for the reader, as CacheConfig does.
    std::string what = e.what();
    std::string reason = e.path().empty() ? what : what.substr(e.path().size() + 2);
    throw ConfigError(e.path(), reason + " (in " + path + ")");
  }
}

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

namespace {
void checkBuckets(const std::vector<SizeBucket>& buckets, const SizeRange& envelope, const std::string& path) {
  double total = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    std::string p = path + "[" + std::to_string(i) + "]";
    if (buckets[i].range.min > buckets[i].range.max) throw ConfigError(p + ".range", "min must not exceed max");
    if (buckets[i].range.min < envelope.min || buckets[i].range.max > envelope.max)
      throw ConfigError(p + ".range", "lies outside the envelope (call updateEnvelopes())");
    if (!(buckets[i].weight >= 0 && std::isfinite(buckets[i].weight))) throw ConfigError(p + ".weight", "must be >= 0");
    total += buckets[i].weight;
  }
  if (!buckets.empty() && !(total > 0)) throw ConfigError(path, "the weights must not all be 0");
}
}  // namespace

void WorkloadConfig::validate() const {
  // Buckets first: a bad bucket also spoils the envelope checked below.
  checkBuckets(key_size_buckets, key_size, "workload.key_size_buckets");
  checkBuckets(value_size_buckets, value_size, "workload.value_size_buckets");
  if (threads < 1 || threads > 1024) throw ConfigError("workload.threads", "must be in [1,1024]");
  if (ops_per_thread < 1) throw ConfigError("workload.ops_per_thread", "must be at least 1");
  if (keys < 1) throw ConfigError("workload.keys", "must be at least 1");
  if (keys > KeySpace::kMaxKeys)
    throw ConfigError("workload.keys", "must be at most " + std::to_string(KeySpace::kMaxKeys));
  if (key_size.min > key_size.max) throw ConfigError("workload.key_size", "min must not exceed max");
  if (key_size.max > Cache::kMaxKeySize)
    throw ConfigError("workload.key_size", "max must be at most " + std::to_string(Cache::kMaxKeySize));
  // Keys shorter than the hex width of the index are allowed: distinct
  // indices may then share a key, as in cachebench (KeySpace).
  if (key_size.min < 1) throw ConfigError("workload.key_size", "min must be at least 1");
  if (value_size.min > value_size.max) throw ConfigError("workload.value_size", "min must not exceed max");
  if (value_size.max > (1ull << 30)) throw ConfigError("workload.value_size", "max must be at most 1GiB");
  auto checkShares = [&](const std::vector<double>& shares, const char* name) {
    std::string path = std::string("workload.") + name;
    double total = 0;
    for (size_t i = 0; i < shares.size(); ++i) {
      if (!(shares[i] >= 0 && std::isfinite(shares[i])))
        throw ConfigError(path + "[" + std::to_string(i) + "]", "must be >= 0");
      total += shares[i];
    }
    if (!shares.empty() && !(total > 0)) throw ConfigError(path, "must not all be 0");
    if (shares.size() > 65535) throw ConfigError(path, "names more than 65535 pools");
  };
  checkShares(key_pools, "key_pools");
  checkShares(op_pools, "op_pools");
  if (!op_pools.empty() && op_pools.size() != std::max<size_t>(key_pools.size(), 1))
    throw ConfigError("workload.op_pools", "has " + std::to_string(op_pools.size()) + " entries for " +
                                               std::to_string(std::max<size_t>(key_pools.size(), 1)) +
                                               " key pools (key_pools)");
  {
    std::vector<uint64_t> starts = poolKeyStarts();
    std::vector<double> weights = poolOpWeights();
    for (size_t p = 0; p + 1 < starts.size(); ++p)
      if (starts[p + 1] == starts[p] && weights[p] > 0)
        throw ConfigError("workload.key_pools[" + std::to_string(p) + "]",
                          "gives pool " + std::to_string(p) + " no keys of the " + std::to_string(keys) +
                              ", but operations go to it");
  }
  checkRatio(get_ratio, "get_ratio");
  checkRatio(set_ratio, "set_ratio");
  checkRatio(remove_ratio, "remove_ratio");
  checkRatio(lone_get_ratio, "lone_get_ratio");
  checkRatio(add_chained_ratio, "add_chained_ratio");
  checkRatio(update_ratio, "update_ratio");
  if (add_chained_ratio > 0 && (chain_length_buckets.empty() || chain_value_size_buckets.empty()))
    throw ConfigError("workload.add_chained_ratio", "needs chain lengths and chained value sizes");
  double sum = get_ratio + set_ratio + remove_ratio + lone_get_ratio + add_chained_ratio + update_ratio;
  if (std::fabs(sum - 1.0) > 1e-6) {
    std::ostringstream os;
    os << "get_ratio + set_ratio + remove_ratio + lone_get_ratio must sum to 1 (they sum to " << sum << ")";
    throw ConfigError("workload", os.str());
  }
  if (popularity.kind == PopularityKind::kZipf && !(popularity.alpha > 0.0 && popularity.alpha <= 10.0))
    throw ConfigError("workload.popularity.alpha", "must be in (0,10]");
  if (popularity.kind == PopularityKind::kNormal &&
      !(popularity.stddev_fraction > 0.0 && popularity.stddev_fraction <= 10.0))
    throw ConfigError("workload.popularity.stddev_fraction", "must be in (0,10]");
  if (popularity.kind == PopularityKind::kPiecewise) {
    const auto& sizes = popularity.bucket_sizes;
    const auto& weights = popularity.bucket_weights;
    if (sizes.empty()) throw ConfigError("workload.popularity.buckets", "must list at least one bucket");
    if (weights.size() != sizes.size())
      throw ConfigError("workload.popularity.weights", "must have one weight per bucket (" +
                                                           std::to_string(sizes.size()) + "), not " +
                                                           std::to_string(weights.size()));
    double totalWeight = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (!(sizes[i] > 0 && std::isfinite(sizes[i])))
        throw ConfigError("workload.popularity.buckets[" + std::to_string(i) + "]", "must be > 0");
      if (!(weights[i] >= 0 && std::isfinite(weights[i])))
        throw ConfigError("workload.popularity.weights[" + std::to_string(i) + "]", "must be >= 0");
      totalWeight += weights[i];
    }
    if (!(totalWeight > 0)) throw ConfigError("workload.popularity.weights", "must not all be 0");
    if (sizes.size() > keys) throw ConfigError("workload.popularity.buckets", "has more buckets than there are keys");
  }
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
  json pop;
  pop["distribution"] = popularityName(popularity.kind);
  if (popularity.kind == PopularityKind::kZipf) pop["alpha"] = popularity.alpha;
  if (popularity.kind == PopularityKind::kNormal) pop["stddev_fraction"] = popularity.stddev_fraction;
  if (popularity.kind == PopularityKind::kPiecewise) {
    pop["buckets"] = popularity.bucket_sizes;
    pop["weights"] = popularity.bucket_weights;
  }
  auto buckets = [](const std::vector<SizeBucket>& bs) {
    json a = json::array();
    for (const SizeBucket& b : bs) a.push_back({{"range", {b.range.min, b.range.max}}, {"weight", b.weight}});
    return a;
  };
  json j = {
      {"threads", threads},
      {"ops_per_thread", ops_per_thread},
      {"keys", keys},
      {"key_size", {key_size.min, key_size.max}},
      {"value_size", {value_size.min, value_size.max}},
      {"get_ratio", get_ratio},
      {"set_ratio", set_ratio},
      {"remove_ratio", remove_ratio},
      {"lone_get_ratio", lone_get_ratio},
      {"popularity", pop},
      {"lookaside", lookaside},
      {"prepopulate", prepopulate},
      {"seed", seed},
      {"progress_interval_ms", progress_interval_ms},
      {"idle_ms", idle_ms},
  };
  if (!key_pools.empty()) j["key_pools"] = key_pools;
  if (!op_pools.empty()) j["op_pools"] = op_pools;
  if (op_delay_batch) j["op_delay_batch"] = op_delay_batch;
  if (op_delay_ns) j["op_delay_ns"] = op_delay_ns;
  if (only_set_if_miss) j["only_set_if_miss"] = true;
  // Piecewise sizes replace the plain range (the parser refuses both).
  if (!key_size_buckets.empty()) {
    j.erase("key_size");
    j["key_size_buckets"] = buckets(key_size_buckets);
  }
  if (!value_size_buckets.empty()) {
    j.erase("value_size");
    j["value_size_buckets"] = buckets(value_size_buckets);
  }
  return j.dump(2);
}

}  // namespace tiercache::bench
