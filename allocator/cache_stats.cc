#include "cache_stats.h"

#include <nlohmann/json.hpp>

namespace tiercache {

std::string CacheStats::toJson() const {
  nlohmann::ordered_json j;
  j["gets"] = gets;
  j["hits"] = hits;
  j["hit_ratio"] = hitRatio();
  j["sets"] = sets;
  j["set_failures"] = set_failures;
  j["inserts"] = inserts;
  j["replaces"] = replaces;
  j["removes"] = removes;
  j["alloc_attempts"] = alloc_attempts;
  j["alloc_success"] = alloc_success;
  j["alloc_too_large"] = alloc_too_large;
  j["evictions"] = evictions;
  j["background_evictions"] = background_evictions;
  j["demotions"] = demotions;
  j["promotions"] = promotions;
  j["promotion_candidates"] = promotion_candidates;
  j["promotions_rate_limited"] = promotions_rate_limited;
  j["promotions_no_room"] = promotions_no_room;
  j["promotion_queue_dropped"] = promotion_queue_dropped;
  j["moves_aborted"] = moves_aborted;
  j["expired"] = expired;
  j["reaped"] = reaped;
  j["reaper_runs"] = reaper_runs;
  j["reaper_scanned"] = reaper_scanned;
  j["reaper_sweeps"] = reaper_sweeps;
  j["expired_at_recovery"] = expired_at_recovery;
  j["remove_callbacks"] = remove_callbacks;
  j["conditional_failures"] = conditional_failures;
  j["flushes"] = flushes;
  auto worker = [](const WorkerStats& w) {
    return nlohmann::ordered_json{{"threads", w.threads},
                                  {"runs", w.runs},
                                  {"traversals", w.traversals},
                                  {"items", w.items},
                                  {"avg_items_per_run", w.avgItemsPerRun()},
                                  {"avg_traversal_us", w.avgTraversalMicros()}};
  };
  j["background_evictor"] = worker(background_evictor);
  j["promoter"] = worker(promoter);
  j["rebalanced_slabs"] = rebalanced_slabs;
  j["rebalancer_runs"] = rebalancer_runs;
  j["rebalancer_moves"] = rebalancer_moves;
  j["recovered_items"] = recovered_items;
  j["discarded_items"] = discarded_items;
  j["recovery_seconds"] = recovery_seconds;
  j["items"] = items;
  j["metadata_bytes"] = metadata_bytes;
  j["item_header_bytes"] = item_header_bytes;
  j["index_bytes_per_item"] = index_bytes_per_item;
  j["index_buckets_log2"] = index_buckets_log2;
  for (const TierStats& t : tiers) {
    j["tiers"].push_back({{"tier", t.tier},
                          {"name", t.name},
                          {"kind", t.kind},
                          {"configured_bytes", t.configured_bytes},
                          {"mapped_bytes", t.mapped_bytes},
                          {"slabs_total", t.slabs_total},
                          {"slabs_used", t.slabs_used},
                          {"items", t.items},
                          {"alloc_attempts", t.alloc_attempts},
                          {"alloc_success", t.alloc_success},
                          {"evictions", t.evictions},
                          {"background_evictions", t.background_evictions},
                          {"demotions", t.demotions},
                          {"promotions", t.promotions},
                          {"hits", t.hits},
                          {"persistent", t.persistent},
                          {"open_report", t.open_report},
                          {"hit_ratio", gets ? double(t.hits) / double(gets) : 0.0}});
  }
  for (const PoolStats& p : pools) {
    j["pools"].push_back({{"pool", p.pool}, {"name", p.name}, {"slab_quota", p.slab_quota}, {"slabs", p.slabs}});
  }
  j["classes"] = nlohmann::ordered_json::array();
  for (const ClassStats& c : classes) {
    j["classes"].push_back({{"tier", c.tier},
                            {"pool", c.pool},
                            {"class", c.class_id},
                            {"alloc_size", c.alloc_size},
                            {"slabs", c.slabs},
                            {"items", c.items},
                            {"free_slots", c.free_slots},
                            {"alloc_attempts", c.alloc_attempts},
                            {"alloc_success", c.alloc_success},
                            {"evictions", c.evictions},
                            {"background_evictions", c.background_evictions},
                            {"demotions", c.demotions},
                            {"promotions", c.promotions},
                            {"slabs_gained", c.slabs_gained},
                            {"slabs_lost", c.slabs_lost},
                            {"eviction_age_ms", c.eviction_age_ms},
                            {"marginal_hits", c.marginal_hits}});
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
  const struct {
    const char* name;
    const char* type;
    const char* help;
    uint64_t v;
  } scalars[] = {
      {"gets_total", "counter", "find/get calls", gets},
      {"hits_total", "counter", "find/get calls that found the key", hits},
      {"sets_total", "counter", "set calls", sets},
      {"set_failures_total", "counter", "set calls that could not store", set_failures},
      {"inserts_total", "counter", "insertOrReplace calls", inserts},
      {"removes_total", "counter", "remove calls that removed a key", removes},
      {"evictions_total", "counter", "items evicted to make room", evictions},
      {"rebalanced_slabs_total", "counter", "slabs moved between allocation classes", rebalanced_slabs},
      {"rebalancer_runs_total", "counter", "marginal-hits rebalancer passes", rebalancer_runs},
      {"rebalancer_moves_total", "counter", "slabs the marginal-hits rebalancer moved", rebalancer_moves},
      {"background_evictions_total", "counter", "items evicted or demoted by background evictors", background_evictions},
      {"demotions_total", "counter", "items moved to a lower tier", demotions},
      {"promotions_total", "counter", "items moved to a higher tier", promotions},
      {"background_evictor_runs_total", "counter", "background evictor passes", background_evictor.runs},
      {"promoter_runs_total", "counter", "promoter passes", promoter.runs},
      {"expired_total", "counter", "expired or flushed items reclaimed", expired},
      {"reaped_total", "counter", "expired items reclaimed by the reaper", reaped},
      {"reaper_runs_total", "counter", "reaper passes", reaper_runs},
      {"expired_at_recovery_total", "counter", "persistent items expired while the cache was down", expired_at_recovery},
      {"remove_callbacks_total", "counter", "remove callbacks run", remove_callbacks},
      {"items", "gauge", "items in the cache", items},
      {"metadata_bytes", "gauge", "DRAM metadata outside the tiers", metadata_bytes},
  };
  for (const auto& s : scalars) {
    metric(out, s.name, s.type, s.help);
    sample(out, s.name, "", static_cast<double>(s.v));
  }
  metric(out, "tier_items", "gauge", "items per tier");
  for (const TierStats& t : tiers) sample(out, "tier_items", label("tier", t.name), static_cast<double>(t.items));
  metric(out, "tier_mapped_bytes", "gauge", "bytes each tier took from the OS");
  for (const TierStats& t : tiers) {
    sample(out, "tier_mapped_bytes", label("tier", t.name), static_cast<double>(t.mapped_bytes));
  }
  metric(out, "tier_hits_total", "counter", "finds served from each tier");
  for (const TierStats& t : tiers) sample(out, "tier_hits_total", label("tier", t.name), static_cast<double>(t.hits));
  metric(out, "tier_demotions_total", "counter", "items moved from each tier to the next");
  for (const TierStats& t : tiers) {
    sample(out, "tier_demotions_total", label("tier", t.name), static_cast<double>(t.demotions));
  }
  metric(out, "tier_promotions_total", "counter", "items moved from each tier to the one above");
  for (const TierStats& t : tiers) {
    sample(out, "tier_promotions_total", label("tier", t.name), static_cast<double>(t.promotions));
  }
  metric(out, "tier_evictions_total", "counter", "evictions per tier");
  for (const TierStats& t : tiers) {
    sample(out, "tier_evictions_total", label("tier", t.name), static_cast<double>(t.evictions));
  }
  return out;
}

}  // namespace tiercache
