// The counter tables (allocator/cache_stats.h): every row reaches every
// exporter, the sums per tier and per cache agree with the class rows, and
// since() subtracts counters but keeps gauges.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "allocator/cache.h"
#include "allocator/item.h"
#include "test_util.h"

namespace tiercache {
namespace {

using test::makeValue;

// Two tiers (test::smallTwoTierConfig), small enough that filling them
// demotes and evicts, so that most counters are non-zero.
using test::smallTwoTierConfig;

void churn(Cache& cache) {
  for (int i = 0; i < 40000; ++i) {
    const std::string key = "key:" + std::to_string(i);
    ASSERT_TRUE(cache.set(key, makeValue(key, 0, 500)));
  }
  for (int i = 0; i < 40000; i += 7) cache.get("key:" + std::to_string(i));
}

std::string promName(const MetricDesc& m) {
  const char* prefix = m.level == MetricLevel::kTier ? "tier_" : m.level == MetricLevel::kClass ? "class_" : "";
  return std::string("tiercache_") + prefix + m.name + (m.kind == MetricKind::kCounter ? "_total" : "");
}

TEST(CounterTable, RowsAreSnakeCaseUniquePerLevelAndPointAtTheirLevel) {
  const std::regex snake("[a-z][a-z0-9]*(_[a-z0-9]+)*");
  std::set<std::string> seen[3];
  size_t cacheRows = 0;
  for (const MetricDesc& m : metricTable()) {
    EXPECT_TRUE(std::regex_match(m.name, snake)) << m.name;
    EXPECT_TRUE(seen[static_cast<int>(m.level)].insert(m.name).second)
        << m.name << " twice at level " << metricLevelName(m.level);
    EXPECT_NE(std::string(m.help), "") << m.name;
    const int pointers = (m.cache != nullptr) + (m.tier != nullptr) + (m.cls != nullptr);
    EXPECT_EQ(pointers, 1) << m.name;
    EXPECT_EQ(m.cache != nullptr, m.level == MetricLevel::kCache) << m.name;
    EXPECT_EQ(m.tier != nullptr, m.level == MetricLevel::kTier) << m.name;
    EXPECT_EQ(m.cls != nullptr, m.level == MetricLevel::kClass) << m.name;
    cacheRows += m.level == MetricLevel::kCache;
  }
  // Sanity: the names the other tests and the docs rely on are rows.
  for (const char* name : {"gets", "hits", "items", "demotions", "alloc_attempts", "expired", "rebalanced_slabs"}) {
    EXPECT_TRUE(seen[0].count(name)) << name;
  }
  EXPECT_TRUE(seen[1].count("mapped_bytes"));
  EXPECT_TRUE(seen[2].count("free_slots"));
  EXPECT_GE(cacheRows, 30u);
}

TEST(CounterTable, EveryRowAppearsInJsonAndPrometheusWithItsValue) {
  Cache cache(smallTwoTierConfig());
  churn(cache);
  const CacheStats s = cache.stats();
  ASSERT_EQ(s.tiers.size(), 2u);
  ASSERT_FALSE(s.classes.empty());
  ASSERT_GT(s.demotions, 0u);  // the churn reached the second tier
  const auto j = nlohmann::json::parse(s.toJson());
  const std::string prom = s.toPrometheus();
  for (const MetricDesc& m : metricTable()) {
    const std::string name = promName(m);
    EXPECT_NE(prom.find("# HELP " + name + " " + m.help + "\n"), std::string::npos) << name;
    EXPECT_NE(prom.find("# TYPE " + name + " " + metricKindName(m.kind) + "\n"), std::string::npos) << name;
    if (m.cache) {
      ASSERT_TRUE(j.contains(m.name)) << m.name;
      EXPECT_EQ(j[m.name].get<uint64_t>(), s.*m.cache) << m.name;
      EXPECT_NE(prom.find("\n" + name + " " + std::to_string(s.*m.cache) + "\n"), std::string::npos) << name;
    }
    if (m.tier) {
      for (size_t t = 0; t < s.tiers.size(); ++t) {
        ASSERT_TRUE(j["tiers"][t].contains(m.name)) << m.name;
        EXPECT_EQ(j["tiers"][t][m.name].get<uint64_t>(), s.tiers[t].*m.tier) << m.name;
        const std::string line =
            "\n" + name + "{tier=\"" + s.tiers[t].name + "\"} " + std::to_string(s.tiers[t].*m.tier) + "\n";
        EXPECT_NE(prom.find(line), std::string::npos) << line;
      }
    }
    if (m.cls) {
      const ClassStats& c = s.classes.front();
      ASSERT_TRUE(j["classes"][0].contains(m.name)) << m.name;
      EXPECT_EQ(j["classes"][0][m.name].get<uint64_t>(), c.*m.cls) << m.name;
      const std::string line = "\n" + name + "{tier=\"" + s.tiers[c.tier].name + "\",pool=\"" + std::to_string(c.pool) +
                               "\",class=\"" + std::to_string(c.class_id) + "\"} " + std::to_string(c.*m.cls) + "\n";
      EXPECT_NE(prom.find(line), std::string::npos) << line;
    }
  }
}

TEST(CounterTable, RolledUpRowsAreTheSumsOfTheFinerLevel) {
  Cache cache(smallTwoTierConfig());
  churn(cache);
  const CacheStats s = cache.stats();  // no other thread uses the cache: the figures are still
  size_t checked = 0;
  for (const MetricDesc& m : metricTable()) {
    if (!m.rolledUp) continue;
    if (m.cls) {
      // The class row's tier and cache rows carry the same name.
      const MetricDesc* tierRow = nullptr;
      const MetricDesc* cacheRow = nullptr;
      for (const MetricDesc& o : metricTable()) {
        if (o.tier && std::string(o.name) == m.name) tierRow = &o;
        if (o.cache && std::string(o.name) == m.name) cacheRow = &o;
      }
      ASSERT_TRUE(tierRow && cacheRow) << m.name;
      uint64_t total = 0;
      for (size_t t = 0; t < s.tiers.size(); ++t) {
        uint64_t sum = 0;
        for (const ClassStats& c : s.classes) sum += c.tier == t ? c.*m.cls : 0;
        EXPECT_EQ(sum, s.tiers[t].*tierRow->tier) << m.name << " tier " << t;
        total += sum;
      }
      EXPECT_EQ(total, s.*cacheRow->cache) << m.name;
      ++checked;
    }
  }
  EXPECT_GE(checked, 7u);
  EXPECT_EQ(s.hits, s.tiers[0].hits + s.tiers[1].hits);
  EXPECT_GT(s.alloc_attempts, 0u);
  EXPECT_GT(s.tiers[1].items, 0u);
}

TEST(CounterTable, SinceSubtractsCountersAndKeepsGauges) {
  Cache cache(smallTwoTierConfig());
  ASSERT_TRUE(cache.set("a", "1"));
  ASSERT_TRUE(cache.set("b", "2"));
  cache.get("a");
  const CacheStats before = cache.stats();
  cache.get("a");
  cache.get("zz");
  ASSERT_TRUE(cache.set("c", "3"));
  const CacheStats d = cache.stats().since(before);
  EXPECT_EQ(d.gets, 2u);
  EXPECT_EQ(d.hits, 1u);
  EXPECT_EQ(d.sets, 1u);
  EXPECT_EQ(d.tiers[0].hits, 1u);
  EXPECT_EQ(d.items, 3u);              // a gauge: the count now, not the change
  EXPECT_EQ(d.tiers[0].items, 3u);
  EXPECT_EQ(d.tiers[0].mapped_bytes, before.tiers[0].mapped_bytes);
  ASSERT_FALSE(d.classes.empty());
  uint64_t attempts = 0;
  for (const ClassStats& c : d.classes) attempts += c.alloc_attempts;
  EXPECT_EQ(attempts, 1u);
}

// Attempts are successes plus failures: an allocation that finds every
// slot of its class pinned (one tier, no slab left, nothing evictable) is
// an attempt and not a success, and every allocation before it was both.
TEST(CounterTable, AFailedAllocationIsAnAttemptWithoutASuccess) {
  CacheConfig c = CacheConfig::dram(4ull << 20);
  c.slab_size = 1ull << 20;
  Cache cache(c);
  const std::string value(1000, 'v');
  std::vector<ReadHandle> pins;
  uint64_t stored = 0;
  for (; stored < 100'000; ++stored) {
    const std::string key = "pinned:" + std::to_string(stored);
    if (!cache.set(key, value)) break;
    pins.push_back(cache.find(key));
    ASSERT_TRUE(pins.back());
  }
  ASSERT_LT(stored, 100'000u) << "the cache never filled";
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.set_failures, 1u);
  EXPECT_EQ(s.alloc_success, stored);
  EXPECT_EQ(s.alloc_attempts, stored + 1);
  pins.clear();
  EXPECT_EQ(cache.checkConsistency(), "");
}

// memcached's mem_requested and per-class reclaimed: a class's
// requested_bytes is the header, key and value bytes of its published
// items, moved by every set, replace, remove and eviction; reclaimed counts
// its dead items taken back.
uint64_t requestedOf(const CacheStats& s, uint32_t tier, uint32_t cls) {
  for (const ClassStats& k : s.classes) {
    if (k.tier == tier && k.class_id == cls) return k.requested_bytes;
  }
  return 0;
}

TEST(ClassCounters, RequestedBytesFollowSetsReplacesRemovesAndEvictions) {
  test::ManualClock clock;
  CacheHooks hooks;
  hooks.clock = [&clock] { return clock.now(); };
  CacheConfig cfg = test::smallDramConfig(4 << 20);
  cfg.reaper.enabled = false;
  Cache cache(cfg, hooks);
  auto size = [](size_t key, size_t value) { return Item::totalSize(key, value); };
  // One class (values 100..110 with 5-byte keys fit the same one).
  ASSERT_TRUE(cache.set("key:1", std::string(100, 'a')));
  CacheStats s = cache.stats();
  ASSERT_EQ(s.classes.size(), 1u);
  const uint32_t cls = s.classes[0].class_id;
  EXPECT_EQ(requestedOf(s, 0, cls), size(5, 100));
  ASSERT_TRUE(cache.set("key:2", std::string(110, 'b')));
  EXPECT_EQ(requestedOf(cache.stats(), 0, cls), size(5, 100) + size(5, 110));
  // A replace by a shorter value (in place or not) counts the new size only.
  ASSERT_TRUE(cache.set("key:1", std::string(104, 'c')));
  ASSERT_EQ(cache.stats().classes.size(), 1u);
  EXPECT_EQ(requestedOf(cache.stats(), 0, cls), size(5, 104) + size(5, 110));
  ASSERT_TRUE(cache.remove("key:2"));
  EXPECT_EQ(requestedOf(cache.stats(), 0, cls), size(5, 104));
  // Expired, then reclaimed by a read: off the requested bytes, one reclaimed.
  ASSERT_TRUE(cache.set("key:3", std::string(100, 'd'), std::chrono::seconds(10)));
  EXPECT_EQ(requestedOf(cache.stats(), 0, cls), size(5, 104) + size(5, 100));
  EXPECT_EQ(cache.stats().classes[0].reclaimed, 0u);
  clock.advance(std::chrono::seconds(20));
  EXPECT_FALSE(cache.find("key:3"));
  s = cache.stats();
  EXPECT_EQ(requestedOf(s, 0, cls), size(5, 104));
  EXPECT_EQ(s.classes[0].reclaimed, 1u);
  // An expired key written again: the dead copy is reclaimed by the set.
  ASSERT_TRUE(cache.set("key:4", std::string(100, 'e'), std::chrono::seconds(10)));
  clock.advance(std::chrono::seconds(20));
  ASSERT_TRUE(cache.set("key:4", std::string(101, 'f')));
  s = cache.stats();
  EXPECT_EQ(requestedOf(s, 0, cls), size(5, 104) + size(5, 101));
  EXPECT_EQ(s.classes[0].reclaimed, 2u);
  ASSERT_TRUE(cache.remove("key:1"));
  ASSERT_TRUE(cache.remove("key:4"));
  EXPECT_EQ(requestedOf(cache.stats(), 0, cls), 0u);
}

TEST(ClassCounters, RequestedBytesStayExactThroughEviction) {
  CacheConfig cfg = test::smallDramConfig(4 << 20);
  cfg.background_eviction.enabled = false;  // quiet at the snapshot
  Cache cache(cfg);
  const std::string value(500, 'v');
  const int n = 40000;  // many times what 4 MiB holds: most are evicted
  for (int i = 0; i < n; ++i) ASSERT_TRUE(cache.set("key:" + std::to_string(100000 + i), value));
  const CacheStats s = cache.stats();
  ASSERT_GT(s.evictions + s.background_evictions, 0u);
  uint64_t requested = 0;
  for (const ClassStats& k : s.classes) requested += k.requested_bytes;
  EXPECT_EQ(requested, s.items * Item::totalSize(10, 500));
  EXPECT_LT(s.items, uint64_t(n));
}

// Demotions move an item's bytes from its DRAM class to its PMEM class.
TEST(ClassCounters, RequestedBytesFollowDemotions) {
  CacheConfig cfg = smallTwoTierConfig();
  cfg.background_eviction.enabled = false;
  Cache cache(cfg);
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(cache.set("key:" + std::to_string(100000 + i), std::string(500, 'v')));
  const CacheStats s = cache.stats();
  ASSERT_GT(s.demotions, 0u);
  for (const ClassStats& k : s.classes) {
    EXPECT_EQ(k.requested_bytes, k.items * Item::totalSize(10, 500)) << k.tier << ":" << k.class_id;
  }
}

}  // namespace
}  // namespace tiercache
