// The text report's counters come from the counter tables: every cache-level
// row that moved in the measured phase (or, for a gauge, is not zero) is
// listed under "== Counters (measured phase) ==" by its table name, and every
// tier-level counter that moved is on its tier's line; nothing else is.
#include "bench/report.h"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "allocator/cache.h"
#include "allocator/cache_stats.h"
#include "bench/runner.h"
#include "bench/workload.h"
#include "small_workload.h"
#include "test_util.h"

namespace tiercache::bench {
namespace {

// The lines from `header` up to the next "== " header (or the end).
std::string section(const std::string& report, const std::string& header) {
  const size_t from = report.find(header + "\n");
  if (from == std::string::npos) return "";
  const size_t to = report.find("\n== ", from + header.size());
  return report.substr(from, to == std::string::npos ? std::string::npos : to + 1 - from);
}

// Tier `name`'s line and its continuation lines (indented) in the Tiers block.
std::string tierLines(const std::string& report, const std::string& name) {
  const std::string tiers = section(report, "== Tiers ==");
  size_t from = tiers.find("\n" + name + " ");
  if (from == std::string::npos) return "";
  ++from;
  size_t to = tiers.find('\n', from);
  while (to != std::string::npos && to + 1 < tiers.size() && tiers[to + 1] == ' ') to = tiers.find('\n', to + 1);
  return tiers.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

// Where "name: " starts an entry of `text` at or after `from`: at the start
// of a line or after a space, so "evictions" does not match inside
// "background_evictions".
size_t findEntry(const std::string& text, const std::string& name, size_t from = 0) {
  for (size_t at = text.find(name + ": ", from); at != std::string::npos; at = text.find(name + ": ", at + 1)) {
    if (at == 0 || text[at - 1] == ' ' || text[at - 1] == '\n') return at;
  }
  return std::string::npos;
}
bool listed(const std::string& text, const std::string& name) { return findEntry(text, name) != std::string::npos; }

std::string entry(const MetricDesc& m, uint64_t value) { return std::string(m.name) + ": " + withCommas(value); }
// Whether row m is listed in `text` with this value.
bool listedAs(const std::string& text, const MetricDesc& m, uint64_t value) {
  const std::string e = entry(m, value);
  const size_t at = findEntry(text, m.name);
  if (at == std::string::npos || text.compare(at, e.size(), e) != 0) return false;
  const size_t end = at + e.size();
  return end == text.size() || text.compare(end, 2, ", ") == 0 || text.compare(end, 2, ",\n") == 0 || text[end] == '\n';
}

constexpr const char* kCounters = "== Counters (measured phase) ==";

// Two tiers, and every cache- and tier-level row set through its member
// pointer: a counter starts high and moves by a figure of its own (the
// report must print the change, not the total), a gauge ends at one.
WorkloadResult everyRowSet() {
  WorkloadResult r;
  for (const char* name : {"dram", "pmem"}) {
    TierStats t;
    t.name = name;
    r.before.tiers.push_back(t);
    r.after.tiers.push_back(t);
  }
  uint64_t i = 0;
  for (const MetricDesc& m : metricTable()) {
    ++i;
    const uint64_t start = m.kind == MetricKind::kCounter ? 1'000'000'000 * i : 0;
    const uint64_t change = 1000 * i + 7;
    if (m.cache) {
      r.before.*m.cache = start;
      r.after.*m.cache = start + change;
    }
    for (size_t t = 0; m.tier && t < 2; ++t) {
      r.before.tiers[t].*m.tier = start;
      r.after.tiers[t].*m.tier = start + change + t;
    }
  }
  return r;
}

TEST(ReportCountersTest, ListsEveryCacheRowByNameWithItsChange) {
  const WorkloadResult r = everyRowSet();
  const std::string report = formatReport(WorkloadConfig{}, r);
  const std::string counters = section(report, kCounters);
  ASSERT_NE(counters, "") << report;
  size_t rows = 0;
  for (const MetricDesc& m : metricTable()) {
    if (!m.cache) continue;
    ++rows;
    const uint64_t change = m.kind == MetricKind::kCounter ? r.after.*m.cache - r.before.*m.cache : r.after.*m.cache;
    EXPECT_TRUE(listedAs(counters, m, change)) << "missing \"" << entry(m, change) << "\" in\n" << counters;
  }
  EXPECT_GT(rows, 30u);  // the table's cache rows, not an empty walk
  // Table order.
  size_t last = 0;
  for (const MetricDesc& m : metricTable()) {
    if (!m.cache) continue;
    const size_t at = findEntry(counters, m.name, last);
    EXPECT_NE(at, std::string::npos) << m.name << " out of table order in\n" << counters;
    if (at != std::string::npos) last = at;
  }
  // No line of the section runs far past the report's width.
  for (size_t from = 0, to; (to = counters.find('\n', from)) != std::string::npos; from = to + 1)
    EXPECT_LE(to - from, 100u) << counters.substr(from, to - from);
}

TEST(ReportCountersTest, ListsEveryTierCounterOnItsTierLine) {
  const WorkloadResult r = everyRowSet();
  const std::string report = formatReport(WorkloadConfig{}, r);
  for (size_t t = 0; t < 2; ++t) {
    const std::string line = tierLines(report, r.after.tiers[t].name);
    ASSERT_NE(line, "") << report;
    EXPECT_NE(line.find("% of gets, "), std::string::npos) << line;
    EXPECT_NE(line.find("% of hits"), std::string::npos) << line;
    for (const MetricDesc& m : metricTable()) {
      if (!m.tier || m.kind != MetricKind::kCounter) continue;
      const uint64_t change = r.after.tiers[t].*m.tier - r.before.tiers[t].*m.tier;
      EXPECT_TRUE(listedAs(line, m, change)) << "missing \"" << entry(m, change) << "\" in\n" << line;
    }
  }
}

TEST(ReportCountersTest, LeavesOutACounterThatDidNotMoveAndAZeroGauge) {
  for (const MetricDesc& m : metricTable()) {
    if (!m.cache) continue;
    WorkloadResult r = everyRowSet();
    if (m.kind == MetricKind::kCounter) {
      r.after.*m.cache = r.before.*m.cache;  // a total, but no change
    } else {
      r.after.*m.cache = 0;
    }
    const std::string counters = section(formatReport(WorkloadConfig{}, r), kCounters);
    ASSERT_NE(counters, "");
    EXPECT_FALSE(listed(counters, m.name)) << m.name << " did not move but is listed in\n" << counters;
  }
  // Nothing moved, nothing to list: no section at all.
  const std::string quiet = formatReport(WorkloadConfig{}, WorkloadResult{});
  EXPECT_EQ(quiet.find(kCounters), std::string::npos) << quiet;
  EXPECT_NE(quiet.find("Hit Ratio     : "), std::string::npos) << quiet;
}

// A real run over DRAM + emulated PMEM with background eviction and
// promotion: whatever moved, the report names it, at its level.
TEST(ReportCountersTest, RealRunListsEveryCounterThatMoved) {
  CacheConfig cfg = test::smallTwoTierConfig();
  cfg.background_eviction.enabled = true;
  cfg.promotion.enabled = true;
  Cache cache(cfg);
  const WorkloadConfig w = smallWorkload();
  const WorkloadResult r = runWorkload(cache, w);
  ASSERT_EQ(r.ops.value_mismatches, 0u) << r.first_mismatch;
  const CacheStats d = r.after.since(r.before);
  ASSERT_GT(d.gets, 0u);
  ASSERT_GT(d.demotions, 0u);  // the run reached the second tier

  const std::string report = formatReport(w, r);
  const std::string counters = section(report, kCounters);
  size_t moved = 0;
  for (const MetricDesc& m : metricTable()) {
    if (!m.cache) continue;
    if (d.*m.cache) {
      ++moved;
      EXPECT_TRUE(listedAs(counters, m, d.*m.cache)) << "missing \"" << entry(m, d.*m.cache) << "\" in\n" << report;
    } else {
      EXPECT_FALSE(listed(counters, m.name)) << m.name << " is 0 but listed in\n" << report;
    }
  }
  EXPECT_GT(moved, 5u);
  for (const TierStats& t : d.tiers) {
    const std::string line = tierLines(report, t.name);
    ASSERT_NE(line, "") << report;
    for (const MetricDesc& m : metricTable()) {
      if (!m.tier || m.kind != MetricKind::kCounter) continue;
      EXPECT_EQ(listed(line, m.name), t.*m.tier != 0) << t.name << " " << m.name << " in\n" << report;
    }
  }
}

// The bench's own counters come from one list (TIERCACHE_BENCH_OP_COUNTERS):
// each row is summed across threads, in the JSON under "workload_counters"
// with its value, and in the text block by its name when it is not zero.
TEST(ReportWorkloadCountersTest, EveryRowIsSummedAndReportedByName) {
  const auto& table = opCounterTable();
  ASSERT_EQ(table.size(), kOpCounterCount);
  OpCounts a, b;
  uint64_t i = 0;
  for (const OpCounterDesc& d : table) {
    ++i;
    a.*d.field = 1000 * i + 1;
    b.*d.field = 7 * i;
    EXPECT_NE(std::string(d.help), "") << d.name;
  }
  OpCounts sum = a;
  sum += b;
  WorkloadResult r;
  r.ops = sum;
  const std::string text = section(formatReport(WorkloadConfig{}, r), "== Workload counters ==");
  ASSERT_NE(text, "");
  const nlohmann::json j = nlohmann::json::parse(reportJson(WorkloadConfig{}, r, nullptr));
  ASSERT_TRUE(j.contains("workload_counters")) << j.dump(2);
  EXPECT_EQ(j["workload_counters"].size(), kOpCounterCount);
  size_t last = 0;
  for (const OpCounterDesc& d : table) {
    const uint64_t want = a.*d.field + b.*d.field;
    EXPECT_EQ(sum.*d.field, want) << d.name << " is not summed by OpCounts::operator+=";
    EXPECT_EQ(j["workload_counters"][d.name], want) << d.name;
    const std::string e = std::string(d.name) + ": " + withCommas(want);
    const size_t at = findEntry(text, d.name, last);
    ASSERT_NE(at, std::string::npos) << d.name << " missing or out of table order in\n" << text;
    EXPECT_EQ(text.compare(at, e.size(), e), 0) << "missing \"" << e << "\" in\n" << text;
    last = at;
  }
  // Zero rows are left out of the text, kept in the JSON.
  WorkloadResult quiet;
  quiet.ops.gets = 5;
  const std::string q = section(formatReport(WorkloadConfig{}, quiet), "== Workload counters ==");
  EXPECT_TRUE(listed(q, "gets")) << q;
  EXPECT_FALSE(listed(q, "sets")) << q;
  EXPECT_EQ(nlohmann::json::parse(reportJson(WorkloadConfig{}, quiet, nullptr))["workload_counters"]["sets"], 0);
}

// A flash hit is a hit of no memory tier (the item comes back into tier 0
// from flash): the hit ratio counts it, the shares of hits are of all hits
// (flash's included), and flash has its own line. (The shares were of the
// memory tiers' hits only: DRAM showed 100% of hits while flash served a
// third of them.)
TEST(ReportHitsTest, FlashHitsCountAsHitsAndHaveTheirOwnShare) {
  WorkloadResult r;
  TierStats dram;
  dram.name = "dram";
  r.before.tiers.push_back(dram);
  dram.hits = 60;
  r.after.tiers.push_back(dram);
  r.after.gets = 100;
  r.after.hits = 60;
  r.after.flash_hits = 30;
  r.after.background_evictor.threads = 1;
  EXPECT_EQ(r.after.allHits(), 90u);
  EXPECT_DOUBLE_EQ(r.after.hitRatio(), 0.9);
  const std::string report = formatReport(WorkloadConfig{}, r);
  EXPECT_NE(report.find("Hit Ratio     : 90.00%"), std::string::npos) << report;
  EXPECT_NE(tierLines(report, "dram").find("60.00% of gets, 66.67% of hits"), std::string::npos) << report;
  EXPECT_NE(tierLines(report, "flash").find("30.00% of gets, 33.33% of hits"), std::string::npos) << report;
  const nlohmann::json j = nlohmann::json::parse(reportJson(WorkloadConfig{}, r, nullptr));
  EXPECT_NEAR(j["cache"]["hit_ratio"].get<double>(), 0.9, 1e-12) << j["cache"].dump(2);
  EXPECT_NEAR(j["cache"]["flash_hit_share"].get<double>(), 1.0 / 3, 1e-12);
  EXPECT_NEAR(j["cache"]["tiers"][0]["hit_share"].get<double>(), 2.0 / 3, 1e-12);
  // Without flash hits there is no flash line.
  r.after.flash_hits = 0;
  EXPECT_EQ(tierLines(formatReport(WorkloadConfig{}, r), "flash"), "");
}

}  // namespace
}  // namespace tiercache::bench
