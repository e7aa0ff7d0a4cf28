#include "cache_stats.h"

#include <type_traits>

#include <nlohmann/json.hpp>

namespace tiercache {

const char* metricKindName(MetricKind kind) { return kind == MetricKind::kCounter ? "counter" : "gauge"; }

const char* metricLevelName(MetricLevel level) {
  switch (level) {
    case MetricLevel::kCache: return "cache";
    case MetricLevel::kTier: return "tier";
    case MetricLevel::kClass: return "class";
  }
  return "?";
}

const std::vector<MetricDesc>& metricTable() {
  static const std::vector<MetricDesc> table = [] {
    std::vector<MetricDesc> t;
    auto add = [&t](const char* name, MetricKind kind, MetricLevel level, const char* help, auto field, bool up) {
      MetricDesc d{name, kind, level, help};
      d.rolledUp = up;
      using F = decltype(field);
      if constexpr (std::is_same_v<F, uint64_t CacheStats::*>) d.cache = field;
      if constexpr (std::is_same_v<F, uint64_t TierStats::*>) d.tier = field;
      if constexpr (std::is_same_v<F, uint64_t ClassStats::*>) d.cls = field;
      t.push_back(d);
    };
    constexpr MetricKind C = MetricKind::kCounter, G = MetricKind::kGauge;
    constexpr MetricLevel L0 = MetricLevel::kCache, L1 = MetricLevel::kTier, L2 = MetricLevel::kClass;
#define TC_CLASS_UP_C(n, h) add(#n, C, L2, h, &ClassStats::n, true);
#define TC_CLASS_UP_G(n, h) add(#n, G, L2, h, &ClassStats::n, true);
#define TC_CLASS_C(n, h) add(#n, C, L2, h, &ClassStats::n, false);
#define TC_CLASS_G(n, h) add(#n, G, L2, h, &ClassStats::n, false);
#define TC_TIER_UP_C(n, h) add(#n, C, L1, h, &TierStats::n, true);
#define TC_TIER_UP_G(n, h) add(#n, G, L1, h, &TierStats::n, true);
#define TC_TIER_C(n, h) add(#n, C, L1, h, &TierStats::n, false);
#define TC_TIER_G(n, h) add(#n, G, L1, h, &TierStats::n, false);
#define TC_CACHE_C(n, h) add(#n, C, L0, h, &CacheStats::n, false);
#define TC_CACHE_G(n, h) add(#n, G, L0, h, &CacheStats::n, false);
    TIERCACHE_CLASS_ROLLUP_COUNTERS(TC_CLASS_UP_C)
    TIERCACHE_CLASS_COUNTERS(TC_CLASS_C)
    TIERCACHE_CLASS_ROLLUP_GAUGES(TC_CLASS_UP_G)
    TIERCACHE_CLASS_GAUGES(TC_CLASS_G)
    TIERCACHE_CLASS_ROLLUP_COUNTERS(TC_TIER_UP_C)  // the tier's sums, summed again into the cache
    TIERCACHE_CLASS_ROLLUP_GAUGES(TC_TIER_UP_G)
    TIERCACHE_TIER_ROLLUP_COUNTERS(TC_TIER_UP_C)
    TIERCACHE_TIER_GAUGES(TC_TIER_G)
    TIERCACHE_CACHE_COUNTERS(TC_CACHE_C)
    TIERCACHE_CLASS_ROLLUP_COUNTERS(TC_CACHE_C)
    TIERCACHE_TIER_ROLLUP_COUNTERS(TC_CACHE_C)
    TIERCACHE_MOVER_COUNTERS(TC_CACHE_C)
    TIERCACHE_REAPER_COUNTERS(TC_CACHE_C)
    TIERCACHE_REBALANCER_COUNTERS(TC_CACHE_C)
    TIERCACHE_RECOVERY_COUNTERS(TC_CACHE_C)
    TIERCACHE_FLASH_COUNTERS(TC_CACHE_C)
    TIERCACHE_CLASS_ROLLUP_GAUGES(TC_CACHE_G)
    TIERCACHE_CACHE_GAUGES(TC_CACHE_G)
    TIERCACHE_FLASH_GAUGES(TC_CACHE_G)
#undef TC_CLASS_UP_C
#undef TC_CLASS_UP_G
#undef TC_CLASS_C
#undef TC_CLASS_G
#undef TC_TIER_UP_C
#undef TC_TIER_UP_G
#undef TC_TIER_C
#undef TC_TIER_G
#undef TC_CACHE_C
#undef TC_CACHE_G
    return t;
  }();
  return table;
}

void CacheStats::rollUp(const std::vector<ClassStats>& allClasses) {
  for (const ClassStats& c : allClasses) {
    if (c.tier >= tiers.size()) continue;
    TierStats& t = tiers[c.tier];
#define TC_SUM(n, h) t.n += c.n;
    TIERCACHE_CLASS_ROLLUP_COUNTERS(TC_SUM)
    TIERCACHE_CLASS_ROLLUP_GAUGES(TC_SUM)
#undef TC_SUM
  }
  for (const TierStats& t : tiers) {
#define TC_SUM(n, h) n += t.n;
    TIERCACHE_CLASS_ROLLUP_COUNTERS(TC_SUM)
    TIERCACHE_CLASS_ROLLUP_GAUGES(TC_SUM)
    TIERCACHE_TIER_ROLLUP_COUNTERS(TC_SUM)
#undef TC_SUM
  }
}

CacheStats CacheStats::since(const CacheStats& before) const {
  CacheStats d = *this;
  for (const MetricDesc& m : metricTable()) {
    if (m.kind != MetricKind::kCounter) continue;
    if (m.cache) d.*m.cache -= before.*m.cache;
    if (m.tier) {
      for (size_t i = 0; i < d.tiers.size() && i < before.tiers.size(); ++i) d.tiers[i].*m.tier -= before.tiers[i].*m.tier;
    }
    if (m.cls) {
      for (ClassStats& c : d.classes) {
        for (const ClassStats& b : before.classes) {
          if (b.tier == c.tier && b.pool == c.pool && b.class_id == c.class_id) c.*m.cls -= b.*m.cls;
        }
      }
    }
  }
  for (auto [w, b] : {std::pair{&d.background_evictor, &before.background_evictor}, {&d.promoter, &before.promoter}}) {
    w->runs -= b->runs;
    w->traversals -= b->traversals;
    w->items -= b->items;
    w->busy_nanos -= b->busy_nanos;
    w->yielded_runs -= b->yielded_runs;
  }
  return d;
}

std::string CacheStats::toJson() const {
  const std::vector<MetricDesc>& table = metricTable();
  nlohmann::ordered_json j;
  for (const MetricDesc& m : table) {
    if (m.cache) j[m.name] = this->*m.cache;
  }
  j["hit_ratio"] = hitRatio();
  auto worker = [](const WorkerStats& w) {
    return nlohmann::ordered_json{{"threads", w.threads},
                                  {"runs", w.runs},
                                  {"traversals", w.traversals},
                                  {"items", w.items},
                                  {"busy_nanos", w.busy_nanos},
                                  {"yielded_runs", w.yielded_runs},
                                  {"avg_items_per_run", w.avgItemsPerRun()},
                                  {"avg_traversal_us", w.avgTraversalMicros()}};
  };
  j["background_evictor"] = worker(background_evictor);
  j["promoter"] = worker(promoter);
  j["recovery_seconds"] = recovery_seconds;
  j["item_header_bytes"] = item_header_bytes;
  j["index_bytes_per_item"] = index_bytes_per_item;
  j["index_buckets_log2"] = index_buckets_log2;
  for (const TierStats& t : tiers) {
    nlohmann::ordered_json o{{"tier", t.tier}, {"name", t.name}, {"kind", t.kind}};
    for (const MetricDesc& m : table) {
      if (m.tier) o[m.name] = t.*m.tier;
    }
    o["persistent"] = t.persistent;
    o["open_report"] = t.open_report;
    o["hit_ratio"] = gets ? double(t.hits) / double(gets) : 0.0;
    j["tiers"].push_back(std::move(o));
  }
  for (const PoolStats& p : pools) {
    j["pools"].push_back({{"pool", p.pool}, {"name", p.name}, {"slab_quota", p.slab_quota}, {"slabs", p.slabs}});
  }
  j["classes"] = nlohmann::ordered_json::array();
  for (const ClassStats& c : classes) {
    nlohmann::ordered_json o{{"tier", c.tier}, {"pool", c.pool}, {"class", c.class_id}, {"alloc_size", c.alloc_size}};
    for (const MetricDesc& m : table) {
      if (m.cls) o[m.name] = c.*m.cls;
    }
    o["eviction_age_ms"] = c.eviction_age_ms;
    j["classes"].push_back(std::move(o));
  }
  // Names are validated by the config, but a CacheStats can be built by
  // hand: invalid UTF-8 is replaced rather than thrown (U+FFFD).
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {
void metric(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP tiercache_") + name + " " + help + "\n# TYPE tiercache_" + name + " " + type + "\n";
}
// A label value in the exposition format: backslash, double quote and
// newline escaped, so an unusual name cannot end the label early.
std::string label(const char* name, const std::string& value) {
  std::string out = std::string(name) + "=\"";
  for (char ch : value) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '"') out += "\\\"";
    else if (ch == '\n') out += "\\n";
    else out += ch;
  }
  return out + "\"";
}
void sample(std::string& out, const char* name, const std::string& labels, double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.17g", v);
  out += std::string("tiercache_") + name + (labels.empty() ? "" : "{" + labels + "}") + " " + buf + "\n";
}
}  // namespace

std::string CacheStats::toPrometheus() const {
  std::string out;
  for (const MetricDesc& m : metricTable()) {
    const bool counter = m.kind == MetricKind::kCounter;
    const std::string name = std::string(m.level == MetricLevel::kTier    ? "tier_"
                                          : m.level == MetricLevel::kClass ? "class_"
                                                                           : "") +
                             m.name + (counter ? "_total" : "");
    metric(out, name.c_str(), metricKindName(m.kind), m.help);
    if (m.cache) sample(out, name.c_str(), "", static_cast<double>(this->*m.cache));
    if (m.tier) {
      for (const TierStats& t : tiers) sample(out, name.c_str(), label("tier", t.name), static_cast<double>(t.*m.tier));
    }
    if (m.cls) {
      for (const ClassStats& c : classes) {
        const std::string tier = c.tier < tiers.size() ? tiers[c.tier].name : std::to_string(c.tier);
        const std::string labels = label("tier", tier) + "," + label("pool", std::to_string(c.pool)) + "," +
                                   label("class", std::to_string(c.class_id));
        sample(out, name.c_str(), labels, static_cast<double>(c.*m.cls));
      }
    }
  }
  // The worker threads' figures (WorkerStats, beside the tables).
  const struct {
    const char* name;
    const WorkerStats& w;
  } workers[] = {{"background_evictor", background_evictor}, {"promoter", promoter}};
  for (const auto& [wname, w] : workers) {
    const std::string runs = std::string(wname) + "_runs_total";
    metric(out, runs.c_str(), "counter", "passes of the worker threads");
    sample(out, runs.c_str(), "", static_cast<double>(w.runs));
    const std::string items = std::string(wname) + "_items_total";
    metric(out, items.c_str(), "counter", "items the worker threads moved or evicted");
    sample(out, items.c_str(), "", static_cast<double>(w.items));
  }
  return out;
}

}  // namespace tiercache
