#include "bench/report.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/hit_ratio_sim.h"

namespace tiercache::bench {

namespace {

using json = nlohmann::json;

double pct(uint64_t part, uint64_t whole) { return whole ? 100.0 * double(part) / double(whole) : 0.0; }
double rate(uint64_t n, double seconds) { return seconds > 0 ? double(n) / seconds : 0.0; }

// The measured-phase change of the cache counters (gauges: at the end).
CacheStats delta(const WorkloadResult& r) { return r.after.since(r.before); }

std::string sformat(const char* fmt, auto... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

std::string opLine(const char* name, uint64_t count, uint64_t success, double seconds) {
  return sformat("%-10s: %15s/s, success : %6.2f%%\n", name, withCommas(uint64_t(rate(count, seconds) + 0.5)).c_str(),
                pct(success, count));
}

std::string latencyLine(const char* name, const LatencyHistogram& h) {
  const LatencySummary l = summarize(h);
  return sformat("%-10s: mean %.2f  p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.1f  (%s ops)\n", name, l.mean_us,
                 l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us, withCommas(l.count).c_str());
}

json latencyJson(const LatencyHistogram& h) {
  const LatencySummary l = summarize(h);
  return json{{"count", l.count}, {"mean", l.mean_us}, {"p50", l.p50_us},   {"p90", l.p90_us},
              {"p99", l.p99_us},  {"p999", l.p999_us}, {"max", l.max_us}};
}

// Latency, CPU per operation and the idle phase.
std::string formatCostBlock(const WorkloadResult& r) {
  std::string s = "== Latency (us) ==\n";
  s += latencyLine("get", r.get_latency);
  s += latencyLine("set", r.set_latency);
  const uint64_t ops = r.ops.ops();
  s += sformat("CPU           : %.3f s user+sys, %.3f us/op, %.2f cores busy\n", r.cpu_seconds,
               ops ? 1e6 * r.cpu_seconds / double(ops) : 0.0, r.elapsed_seconds > 0 ? r.cpu_seconds / r.elapsed_seconds : 0.0);
  if (r.idle_seconds > 0)
    s += sformat("Idle CPU      : %.2f%% of a core over %.3f s with the workload paused\n",
                 100.0 * r.idle_cpu_seconds / r.idle_seconds, r.idle_seconds);
  return s;
}

// Appends "name: value" entries to `line`, joined by ", ", starting a new
// line (after `indent`) before an entry that would take it, with the comma
// that ends it, past kReportWidth columns.
constexpr size_t kReportWidth = 100;
std::string wrapEntries(std::string line, const std::vector<std::string>& entries, const std::string& indent) {
  std::string s;
  bool first = true;
  for (const std::string& e : entries) {
    if (!first && line.size() + 2 + e.size() + 1 > kReportWidth) {
      s += line + ",\n";
      line = indent;
    } else if (!first) {
      line += ", ";
    }
    line += e;
    first = false;
  }
  return s + line + "\n";
}

std::string entry(const char* name, uint64_t value) { return std::string(name) + ": " + withCommas(value); }

// Every cache-level row of the counter tables (cache_stats.h), in table
// order: a counter if it moved in the measured phase, a gauge (read at the
// end) if it is not zero. A row added to the tables shows up here unedited.
std::string formatCounters(const CacheStats& d) {
  std::vector<std::string> entries;
  for (const MetricDesc& m : metricTable()) {
    if (m.cache && d.*m.cache) entries.push_back(entry(m.name, d.*m.cache));
  }
  if (entries.empty()) return "";
  return "== Counters (measured phase) ==\n" + wrapEntries("", entries, "");
}

// The bench's own counters (opCounterTable, runner.h) that are not zero, by
// their table names, in table order.
std::string formatWorkloadCounters(const OpCounts& ops) {
  std::vector<std::string> entries;
  for (const OpCounterDesc& d : opCounterTable()) {
    if (ops.*d.field) entries.push_back(entry(d.name, ops.*d.field));
  }
  if (entries.empty()) return "";
  return "== Workload counters ==\n" + wrapEntries("", entries, "");
}

// Per-tier lines (the tier's share of the gets and of the hits, then its
// counter rows that moved, in table order) and the background evictor's
// figures (WorkerStats, beside the tables), over the measured phase.
std::string formatTierBlocks(const WorkloadResult& r, const CacheStats& d) {
  const CacheStats& a = r.after;
  std::string s;
  if (a.tiers.size() > 1 || a.background_evictor.threads > 0 || a.promoter.threads > 0 || d.flash_hits) {
    s += "== Tiers ==\n";
    for (const TierStats& t : d.tiers) {
      std::vector<std::string> entries;
      for (const MetricDesc& m : metricTable()) {
        if (m.tier && m.kind == MetricKind::kCounter && t.*m.tier) entries.push_back(entry(m.name, t.*m.tier));
      }
      s += wrapEntries(sformat("%-8s: %.2f%% of gets, %.2f%% of hits%s", t.name.c_str(), pct(t.hits, d.gets),
                               pct(t.hits, d.allHits()), entries.empty() ? "" : "; "),
                       entries, std::string(10, ' '));
    }
    // Flash hits are no memory tier's: their own line, in the same shares.
    if (d.flash_hits) {
      s += sformat("%-8s: %.2f%% of gets, %.2f%% of hits\n", "flash", pct(d.flash_hits, d.gets),
                   pct(d.flash_hits, d.allHits()));
    }
  }
  if (a.background_evictor.threads > 0) {
    const WorkerStats& w = d.background_evictor;
    s += "== Background Evictor ==\n";
    s += sformat("Threads: %u, runs: %s, classes visited: %s, evicted: %s\n", w.threads, withCommas(w.runs).c_str(),
                 withCommas(w.traversals).c_str(), withCommas(w.items).c_str());
    s += sformat("Avg items per run: %.1f, avg time per class visit: %.2f us\n", w.avgItemsPerRun(),
                 w.avgTraversalMicros());
    if (w.yielded_runs) s += sformat("Stood aside (no spare core): %s runs\n", withCommas(w.yielded_runs).c_str());
  }
  for (const TierStats& t : a.tiers) {
    if (!t.persistent) continue;
    s += "== Persistence ==\n";
    s += sformat("%s: %s; recovered %s items, discarded %s, in %.3f s\n", t.name.c_str(), t.open_report.c_str(),
                 withCommas(a.recovered_items).c_str(), withCommas(a.discarded_items).c_str(), a.recovery_seconds);
  }
  return s;
}

}  // namespace

std::string withCommas(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

namespace {

// "label: t0/c3 (64 B) <what>, ..." over the classes of `after` whose weight
// is not zero, heaviest first, at most 6 (then how many more); "" if none.
template <class Weight, class Describe>
std::string formatTopClasses(const CacheStats& after, const char* label, Weight weight, Describe describe,
                             const char* tail) {
  std::vector<const ClassStats*> top;
  for (const ClassStats& c : after.classes) {
    if (weight(c) > 0) top.push_back(&c);
  }
  if (top.empty()) return "";
  std::sort(top.begin(), top.end(), [&](const ClassStats* a, const ClassStats* b) { return weight(*a) > weight(*b); });
  std::string s = label;
  for (size_t i = 0; i < top.size() && i < 6; ++i) {
    const ClassStats& c = *top[i];
    s += sformat("%s t%u/c%u (%u B) ", i ? "," : "", c.tier, c.class_id, c.alloc_size) + describe(c);
  }
  if (top.size() > 6) s += sformat(", %zu more classes", top.size() - 6);
  return s + tail;
}

}  // namespace

// Median eviction age of the classes that evicted most (at most 6).
std::string formatEvictionAges(const CacheStats& after) {
  return formatTopClasses(
      after, "Eviction age  :", [](const ClassStats& c) { return c.evictions + c.background_evictions; },
      [](const ClassStats& c) { return sformat("< %u ms", c.eviction_age_ms + 1); }, " (median)\n");
}

// The classes that gained or lost most slabs over the run (at most 6); the
// slabs moved in the measured phase are the rebalanced_slabs counter.
std::string formatSlabMoves(const CacheStats& after) {
  return formatTopClasses(
      after, "Slab moves    :", [](const ClassStats& c) { return c.slabs_gained + c.slabs_lost; },
      [](const ClassStats& c) {
        return sformat("+%llu -%llu", static_cast<unsigned long long>(c.slabs_gained),
                       static_cast<unsigned long long>(c.slabs_lost));
      },
      " (slabs gained and lost over the run)\n");
}

std::string formatReport(const WorkloadConfig& config, const WorkloadResult& r, const HitRatioLimits* limits,
                         const std::string& limitsNote) {
  const CacheStats d = delta(r);
  std::string s = "== Test Results ==\n";
  for (const TierStats& t : r.after.tiers) {
    std::string label = "Items in " + t.name;
    s += sformat("%-14s: %s\n", label.c_str(), withCommas(t.items).c_str());
  }
  s += sformat("Alloc Attempts: %s Success: %.2f%%\n", withCommas(d.alloc_attempts).c_str(),
              pct(d.alloc_success, d.alloc_attempts));
  s += sformat("Evictions     : %s\n", withCommas(d.evictions).c_str());
  s += sformat("Expired       : %s\n", withCommas(d.expired).c_str());
  s += sformat("Cache Gets    : %s\n", withCommas(d.gets).c_str());
  s += sformat("Hit Ratio     : %.2f%%\n", pct(d.allHits(), d.gets));
  s += sformat("Miss Ratio    : %.2f%% of gets, %.2f%% of bytes", 100.0 - pct(r.ops.get_hits, r.ops.gets),
               100.0 - pct(r.ops.get_hit_bytes, r.ops.get_bytes));
  if (limits && limits->lru.get_bytes)
    s += sformat(" (LRU sim: %.2f%%, %.2f%%)", 100.0 * (1.0 - limits->lru.hitRatio()),
                 100.0 * (1.0 - limits->lru.byteHitRatio()));
  s += "\n";
  if (limits) s += formatLimits(*limits);
  else if (!limitsNote.empty()) s += "  optimal     : " + limitsNote + "\n";
  s += opLine("get", r.ops.gets, r.ops.get_hits, r.elapsed_seconds);
  s += opLine("set", r.ops.sets, r.ops.set_success, r.elapsed_seconds);
  s += opLine("del", r.ops.removes, r.ops.remove_success, r.elapsed_seconds);
  if (config.lookaside)
    s += sformat("Lookaside sets: %s (%.2f%% of misses stored)\n", withCommas(r.ops.lookaside_sets).c_str(),
                 pct(r.ops.lookaside_stored, r.ops.lookaside_sets));
  s += formatEvictionAges(r.after);
  s += formatSlabMoves(r.after);
  s += formatCounters(d);
  s += formatTierBlocks(r, d);
  s += formatWorkloadCounters(r.ops);
  s += formatCostBlock(r);
  if (r.distinct_keys)
    s += sformat("Keys          : %s distinct of %s (%s share a short key, as cachebench's short keys do)\n",
                 withCommas(r.distinct_keys).c_str(), withCommas(config.keys).c_str(),
                 withCommas(config.keys - r.distinct_keys).c_str());
  s += sformat("Value check failures: %s\n", withCommas(r.ops.value_mismatches).c_str());
  if (!r.first_mismatch.empty()) s += "First failure : " + r.first_mismatch + "\n";
  s += sformat("Threads       : %u, %s ops in %.3f s (%s ops/s)\n", config.threads, withCommas(r.ops.ops()).c_str(),
              r.elapsed_seconds, withCommas(uint64_t(rate(r.ops.ops(), r.elapsed_seconds) + 0.5)).c_str());
  if (config.prepopulate)
    s += sformat("Prepopulate   : %s sets (%.2f%% stored) in %.3f s\n", withCommas(r.prepopulate.sets).c_str(),
                pct(r.prepopulate.set_success, r.prepopulate.sets), r.prepopulate_seconds);
  s += sformat("Metadata      : %u B item header, %.2f B index per item, %s B outside the tiers\n",
              r.after.item_header_bytes, r.after.index_bytes_per_item, withCommas(r.after.metadata_bytes).c_str());
  return s;
}

std::string reportJson(const WorkloadConfig& config, const WorkloadResult& r, const HitRatioLimits* limits) {
  const CacheStats d = delta(r);
  auto op = [&](uint64_t count, uint64_t success) {
    return json{{"count", count},
                {"success", success},
                {"per_second", rate(count, r.elapsed_seconds)},
                {"success_ratio", count ? double(success) / double(count) : 0.0}};
  };
  // Every row of the counter tables (cache_stats.h), then the derived figures.
  json tiers = json::array();
  for (const TierStats& t : d.tiers) {
    json o = {{"name", t.name}, {"kind", t.kind}};
    for (const MetricDesc& m : metricTable()) {
      if (m.tier) o[m.name] = t.*m.tier;
    }
    o["hit_share"] = d.allHits() ? double(t.hits) / double(d.allHits()) : 0.0;
    if (t.persistent) o["open_report"] = t.open_report;
    tiers.push_back(std::move(o));
  }
  json cache = {{"tiers", tiers}};
  for (const MetricDesc& m : metricTable()) {
    if (m.cache) cache[m.name] = d.*m.cache;
  }
  // Recovery happens when the cache opens, before the measured phase: its
  // counters are whole, as the text report's Persistence section gives them
  // (a measured-phase change would always be 0).
  cache["recovered_items"] = r.after.recovered_items;
  cache["discarded_items"] = r.after.discarded_items;
  cache["expired_at_recovery"] = r.after.expired_at_recovery;
  cache["recovery_seconds"] = r.after.recovery_seconds;
  cache["alloc_success_ratio"] = d.alloc_attempts ? double(d.alloc_success) / double(d.alloc_attempts) : 0.0;
  cache["background_evictor_runs"] = d.background_evictor.runs;
  cache["background_evictor_yielded_runs"] = d.background_evictor.yielded_runs;
  cache["hit_ratio"] = d.hitRatio();
  cache["flash_hit_share"] = d.allHits() ? double(d.flash_hits) / double(d.allHits()) : 0.0;
  cache["miss_ratio"] = r.ops.gets ? 1.0 - double(r.ops.get_hits) / double(r.ops.gets) : 0.0;
  cache["byte_miss_ratio"] = r.ops.get_bytes ? 1.0 - double(r.ops.get_hit_bytes) / double(r.ops.get_bytes) : 0.0;
  cache["misses_stored_ratio"] =
      r.ops.lookaside_sets ? double(r.ops.lookaside_stored) / double(r.ops.lookaside_sets) : 0.0;
  json ages = json::array();
  for (const ClassStats& c : r.after.classes) {
    if (c.evictions + c.background_evictions > 0)
      ages.push_back(
          {{"tier", c.tier}, {"class", c.class_id}, {"alloc_size", c.alloc_size}, {"median_ms", c.eviction_age_ms}});
  }
  cache["eviction_age_ms"] = ages;
  json slabMoves = json::array();  // rebalanced_slabs / rebalancer_moves come from the table above
  for (const ClassStats& c : r.after.classes) {
    if (c.slabs_gained + c.slabs_lost > 0)
      slabMoves.push_back({{"tier", c.tier}, {"class", c.class_id}, {"alloc_size", c.alloc_size},
                           {"slabs", c.slabs}, {"gained", c.slabs_gained}, {"lost", c.slabs_lost},
                           {"marginal_hits", c.marginal_hits}});
  }
  cache["slab_moves"] = slabMoves;
  cache["item_header_bytes"] = r.after.item_header_bytes;
  cache["index_bytes_per_item"] = r.after.index_bytes_per_item;
  json j = {
      {"workload", json::parse(config.toJson())},
      {"cache", cache},
      {"ops",
       {{"get", op(r.ops.gets, r.ops.get_hits)},
        {"set", op(r.ops.sets, r.ops.set_success)},
        {"del", op(r.ops.removes, r.ops.remove_success)},
        {"lookaside_sets", r.ops.lookaside_sets},
        {"total", r.ops.ops()},
        {"per_second", rate(r.ops.ops(), r.elapsed_seconds)}}},
      {"latency_us", {{"get", latencyJson(r.get_latency)}, {"set", latencyJson(r.set_latency)}}},
      {"cpu",
       {{"seconds", r.cpu_seconds},
        {"per_op_us", r.ops.ops() ? 1e6 * r.cpu_seconds / double(r.ops.ops()) : 0.0},
        {"cores_busy", r.elapsed_seconds > 0 ? r.cpu_seconds / r.elapsed_seconds : 0.0}}},
      {"value_check_failures", r.ops.value_mismatches},
      {"elapsed_seconds", r.elapsed_seconds},
      {"prepopulate",
       {{"sets", r.prepopulate.sets}, {"stored", r.prepopulate.set_success}, {"seconds", r.prepopulate_seconds}}},
  };
  if (!r.first_mismatch.empty()) j["first_value_check_failure"] = r.first_mismatch;
  if (r.idle_seconds > 0) {
    j["idle"] = {{"seconds", r.idle_seconds},
                 {"cpu_seconds", r.idle_cpu_seconds},
                 {"cpu_percent_of_core", 100.0 * r.idle_cpu_seconds / r.idle_seconds}};
  }
  if (r.distinct_keys) j["distinct_keys"] = r.distinct_keys;
  json counts = json::object();  // every row, zero or not: the same keys in every report
  for (const OpCounterDesc& d : opCounterTable()) counts[d.name] = r.ops.*d.field;
  j["workload_counters"] = counts;
  if (limits) {
    j["hit_ratio_limits"] = {{"capacity_bytes", limits->capacity_bytes},
                             {"capacity_objects", limits->capacity_objects},
                             {"unit_sizes", limits->unit_sizes},
                             {"optimal", limits->optimal.hitRatio()},
                             {"optimal_is_exact", limits->exact},
                             {"belady_size_heuristic", limits->belady_size.hitRatio()},
                             {"lru", limits->lru.hitRatio()},
                             {"lru_byte_hit_ratio", limits->lru.byteHitRatio()},
                             {"gets", limits->optimal.gets}};
  }
  return j.dump(2);
}

std::string formatProgress(const ProgressSnapshot& p) {
  uint64_t ops = p.counts.ops();
  return sformat("[%7.1fs] %s ops, %s ops/s, hit ratio %.2f%%, value check failures %s", p.seconds,
                withCommas(ops).c_str(), withCommas(uint64_t(rate(ops, p.seconds) + 0.5)).c_str(),
                pct(p.counts.get_hits, p.counts.gets), withCommas(p.counts.value_mismatches).c_str());
}

std::string formatProgressBar(const ProgressSnapshot& p, int width) {
  uint64_t done = p.counts.ops();
  double r = rate(done, p.seconds);
  std::string s;
  if (p.total_ops > 0) {
    double f = std::min(1.0, double(done) / double(p.total_ops));
    int filled = int(f * width + 0.5);
    s = "[" + std::string(size_t(filled), '#') + std::string(size_t(width - filled), '.') + "]";
    s += sformat(" %5.1f%%", 100 * f);
  } else {
    s = sformat("%s ops", withCommas(done).c_str());
  }
  s += sformat("  %s ops/s  hit %.2f%%", withCommas(uint64_t(r + 0.5)).c_str(), pct(p.counts.get_hits, p.counts.gets));
  if (p.total_ops > 0) {
    if (r > 0 && done <= p.total_ops) {
      uint64_t left = uint64_t(double(p.total_ops - done) / r + 0.5);
      s += left >= 3600 ? sformat("  ETA %llu:%02llu:%02llu", (unsigned long long)(left / 3600),
                                  (unsigned long long)(left / 60 % 60), (unsigned long long)(left % 60))
                        : sformat("  ETA %llu:%02llu", (unsigned long long)(left / 60), (unsigned long long)(left % 60));
    } else {
      s += "  ETA --:--";
    }
  }
  return s;
}

}  // namespace tiercache::bench
