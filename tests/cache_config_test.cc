// Tests for the JSON config: parsing, strict errors that name the key path,
// validation rules, size syntax, round trips and the generated docs table.
#include "allocator/cache_config.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace tiercache {
namespace {

using Json = nlohmann::ordered_json;

// Every option set, most to non-default values, so that a field the parser
// forgot to read shows up as a default.
constexpr const char* kFull = R"({
  "slab_size": "2MiB",
  "tiers": [
    {"name": "dram", "kind": "dram", "size": "256MiB", "nodes": [0, 2], "bind_policy": "strict"},
    {"name": "pmem", "kind": "pmem-file", "size": "1GiB", "path": "/dev/shm/tiercache.pool",
     "persistent": true, "rebuild_on_mismatch": true}
  ],
  "total_size": "4GiB",
  "pmem_dir": "/mnt/pmem0",
  "pools": [{"name": "default", "share": 0.8}, {"name": "small", "share": 0.2}],
  "allocation": {"min_size": 96, "max_size": "1MiB", "growth_factor": 1.5, "sizes": []},
  "index": {"bucket_power": 22, "lock_power": 12},
  "eviction": {"policy": "clock", "lru_insertion_point": 1, "lru_refresh_ms": 250, "lru_refresh_ratio": 0.25,
               "s3fifo_small_percent": 20, "wtinylfu_window_percent": 5, "wtinylfu_adaptive_window": false,
               "demote_rejected": false},
  "rebalance": {"enabled": false, "strategy": "free-slots", "interval_ms": 250, "max_slabs": 3},
  "demotion": {"enabled": false},
  "background_eviction": {"enabled": true, "threads": 3, "interval_ms": 25, "strategy": "keep-free",
                          "low_watermark": 1.5, "high_watermark": 7.25, "min_batch": 4, "max_batch": 300,
                          "keep_free": 17, "yield_to_application": false,
                          "available_cores": 1.5},
  "promotion": {"enabled": true, "background": false, "hits": 5, "max_per_sec": 2000, "interval_ms": 40,
                "max_batch": 33, "queue_size": 999, "upper_free_watermark": 12.5},
  "persistence": {"durable_sets": true, "demote_on_shutdown": false},
  "reaper": {"enabled": false, "interval_ms": 250, "buckets_per_run": 4096},
  "flash": {"path": "/var/tmp/tiercache.flash", "size": "1GiB", "region_size": "8MiB", "io_engine": "threads",
            "queue_depth": 16, "region_eviction": "lru", "reinsert_hits": false, "expected_item_size": "4KiB",
            "admit_write_mb_per_sec": 50.5, "admit_hit_only": true, "discard_contents": true},
  "workload": {"ops": 1000000, "anything": [1, "x", null]}
})";

Json full() { return Json::parse(kFull); }

std::string edited(const std::function<void(Json&)>& edit) {
  Json j = full();
  edit(j);
  return j.dump();
}

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

// Parsing `json` must throw a ConfigError whose path() is `path`, whose
// what() is "<path>: <reason>" and whose reason mentions `reason`.
::testing::AssertionResult failsWith(const std::string& json, const std::string& path, const std::string& reason) {
  try {
    CacheConfig::fromJsonString(json);
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    if (e.path() != path) {
      return ::testing::AssertionFailure() << "path() is '" << e.path() << "', expected '" << path << "'; what(): " << what;
    }
    if (!path.empty() && what.rfind(path + ": ", 0) != 0) {
      return ::testing::AssertionFailure() << "what() does not start with the path: " << what;
    }
    if (!contains(what, reason)) {
      return ::testing::AssertionFailure() << "what() does not mention '" << reason << "': " << what;
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-ConfigError: " << e.what();
  }
  return ::testing::AssertionFailure() << "parsed without error: " << json;
}

std::string whatOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no ConfigError>";
}

// Every leaf row of the option table with the index of each element it has
// in `c` (tiers[i], pools[i]): the fields a test walks instead of listing them.
struct Leaf {
  const config::Option* option;
  size_t index;
  std::string path;  // "tiers[1].size"
};
std::vector<Leaf> leaves(const CacheConfig& c) {
  const config::Schema& s = cacheConfigSchema();
  std::vector<Leaf> out;
  std::function<void(uint8_t, size_t, const std::string&)> walk = [&](uint8_t section, size_t index,
                                                                      const std::string& prefix) {
    for (const config::Option& o : s.options) {
      if (o.section != section) continue;
      const std::string path = prefix.empty() ? std::string(o.name) : prefix + "." + std::string(o.name);
      if (o.type == config::Type::kObject) walk(o.child, index, path);
      if (o.type == config::Type::kObjectList) {
        for (size_t k = 0; k < o.count(&c); ++k) walk(o.child, k, path + "[" + std::to_string(k) + "]");
      }
      if (o.field) out.push_back(Leaf{&o, index, path});
    }
  };
  walk(0, 0, "");
  return out;
}

// The value of a leaf as text, read through its field (not through toJson).
std::string valueOf(const Leaf& leaf, const CacheConfig& c) {
  const config::Field f = leaf.option->field(const_cast<CacheConfig*>(&c), leaf.index);
  return std::visit(
      [](const auto& p) -> std::string {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, std::monostate>) {
          return "";
        } else if constexpr (std::is_same_v<P, config::EnumField>) {
          return "enum " + std::to_string(*p.value);
        } else if constexpr (std::is_same_v<P, config::RangeField>) {
          return std::to_string(*p.min) + ".." + std::to_string(*p.max);
        } else if constexpr (std::is_same_v<P, std::string*>) {
          return *p;
        } else if constexpr (std::is_same_v<P, std::vector<uint32_t>*> || std::is_same_v<P, std::vector<double>*>) {
          std::string out;
          for (auto v : *p) out += std::to_string(v) + ",";
          return out;
        } else {
          std::ostringstream os;
          os.precision(17);
          os << *p;
          return os.str();
        }
      },
      f);
}

// "tiers[].size" for "tiers[1].size": the row's key path, as in the docs.
std::string keyPathOf(const Leaf& leaf) { return config::keyPath(cacheConfigSchema(), *leaf.option); }

// operator==, and row by row of the option table so that a failure says
// which option differs.
void expectSame(const CacheConfig& a, const CacheConfig& b) {
  EXPECT_TRUE(a == b);
  ASSERT_EQ(a.tiers.size(), b.tiers.size());
  ASSERT_EQ(a.pools.size(), b.pools.size());
  for (const Leaf& leaf : leaves(a)) EXPECT_EQ(valueOf(leaf, a), valueOf(leaf, b)) << leaf.path;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A file name no other test (or concurrent run) uses.
std::string tempPath(const std::string& tag) {
  return ::testing::TempDir() + "tiercache_config_" + std::to_string(getpid()) + "_" + tag + ".json";
}

// ---------------------------------------------------------------------------

TEST(ConfigParse, FullConfigReadsEveryField) {
  const CacheConfig c = CacheConfig::fromJsonString(kFull);
  EXPECT_EQ(c.slab_size, 2 * kMiB);
  ASSERT_EQ(c.tiers.size(), 2u);
  EXPECT_EQ(c.tiers[0].name, "dram");
  EXPECT_EQ(c.tiers[0].kind, TierKind::kDram);
  EXPECT_EQ(c.tiers[0].size, 256 * kMiB);
  EXPECT_EQ(c.tiers[0].path, "");
  EXPECT_EQ(c.tiers[0].nodes, (std::vector<unsigned>{0, 2}));
  EXPECT_EQ(c.tiers[0].bind_policy, BindPolicy::kStrict);
  EXPECT_EQ(c.tiers[0].ratio, 0.0);
  EXPECT_EQ(c.tiers[1].name, "pmem");
  EXPECT_EQ(c.tiers[1].kind, TierKind::kPmemFile);
  EXPECT_EQ(c.tiers[1].size, kGiB);
  EXPECT_EQ(c.tiers[1].path, "/dev/shm/tiercache.pool");
  EXPECT_TRUE(c.tiers[1].nodes.empty());
  EXPECT_EQ(c.tiers[1].bind_policy, BindPolicy::kAdvisory);
  EXPECT_TRUE(c.tiers[1].persistent);
  EXPECT_TRUE(c.tiers[1].rebuild_on_mismatch);
  EXPECT_FALSE(c.tiers[0].persistent);
  EXPECT_EQ(c.total_size, 4 * kGiB);
  EXPECT_EQ(c.pmem_dir, "/mnt/pmem0");
  ASSERT_EQ(c.pools.size(), 2u);
  EXPECT_EQ(c.pools[0].name, "default");
  EXPECT_DOUBLE_EQ(c.pools[0].share, 0.8);
  EXPECT_EQ(c.pools[1].name, "small");
  EXPECT_DOUBLE_EQ(c.pools[1].share, 0.2);
  EXPECT_EQ(c.allocation.min_size, 96u);
  EXPECT_EQ(c.allocation.max_size, kMiB);
  EXPECT_DOUBLE_EQ(c.allocation.growth_factor, 1.5);
  EXPECT_TRUE(c.allocation.sizes.empty());
  EXPECT_EQ(c.index.bucket_power, 22u);
  EXPECT_EQ(c.index.lock_power, 12u);
  EXPECT_EQ(c.eviction.policy, EvictionPolicyKind::kClock);
  EXPECT_EQ(c.eviction.lru_insertion_point, 1u);
  EXPECT_EQ(c.eviction.lru_refresh_ms, 250u);
  EXPECT_FALSE(c.rebalance.enabled);
  EXPECT_EQ(c.rebalance.strategy, "free-slots");
  EXPECT_FALSE(c.demotion.enabled);
  const BackgroundEvictionConfig& be = c.background_eviction;
  EXPECT_TRUE(be.enabled);
  EXPECT_EQ(be.threads, 3u);
  EXPECT_EQ(be.interval_ms, 25u);
  EXPECT_EQ(be.strategy, EvictorStrategyKind::kKeepFree);
  EXPECT_EQ(be.low_watermark, 1.5);
  EXPECT_EQ(be.high_watermark, 7.25);
  EXPECT_EQ(be.min_batch, 4u);
  EXPECT_EQ(be.max_batch, 300u);
  EXPECT_EQ(be.keep_free, 17u);
  EXPECT_FALSE(be.yield_to_application);
  EXPECT_EQ(be.available_cores, 1.5);
  const PromotionConfig& p = c.promotion;
  EXPECT_TRUE(p.enabled);
  EXPECT_FALSE(p.background);
  EXPECT_EQ(p.hits, 5u);
  EXPECT_EQ(p.max_per_sec, 2000u);
  EXPECT_EQ(p.interval_ms, 40u);
  EXPECT_EQ(p.max_batch, 33u);
  EXPECT_EQ(p.queue_size, 999u);
  EXPECT_EQ(p.upper_free_watermark, 12.5);
  EXPECT_TRUE(c.persistence.durable_sets);
  EXPECT_FALSE(c.persistence.demote_on_shutdown);
}

// Every option in kFull differs from its default (in some element, for
// tiers[] and pools[]), so that a key the parser forgot to read shows up as
// a default. Walks the table, so a new option without a kFull value fails
// here. The exceptions exclude another option that kFull sets.
TEST(ConfigParse, FullConfigDiffersFromTheDefaults) {
  const CacheConfig c = CacheConfig::fromJsonString(kFull);
  CacheConfig d;
  d.tiers.resize(c.tiers.size());
  d.pools.resize(c.pools.size());
  const std::set<std::string> kExceptions = {
      "allocation.sizes",  // would replace min_size, max_size and growth_factor
      "ratio",             // a tier has a size or a ratio
      "rebalance.strategy",  // one choice so far
  };
  std::map<std::string, bool> differs;  // key path without the element index -> some element differs
  for (const Leaf& leaf : leaves(c)) {
    std::string key = keyPathOf(leaf);
    differs[key] = differs[key] || valueOf(leaf, c) != valueOf(leaf, d);
  }
  size_t checked = 0;
  for (const auto& [key, different] : differs) {
    const std::string name = key.substr(key.rfind('.') + 1);
    if (kExceptions.count(key) || kExceptions.count(name)) continue;
    EXPECT_TRUE(different) << key << " has its default value in kFull";
    ++checked;
  }
  EXPECT_GE(checked, 45u);
}

// Every row reaches its own field: two rows sharing one (a copied accessor)
// would parse one key into another's place.
TEST(ConfigTable, EveryRowHasItsOwnField) {
  CacheConfig c = CacheConfig::fromJsonString(kFull);
  std::map<const void*, std::string> owner;
  for (const Leaf& leaf : leaves(c)) {
    const config::Field f = leaf.option->field(&c, leaf.index);
    const void* addr = std::visit(
        [](const auto& p) -> const void* {
          using P = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<P, std::monostate>) return nullptr;
          else if constexpr (std::is_same_v<P, config::EnumField>) return p.value;
          else if constexpr (std::is_same_v<P, config::RangeField>) return p.min;
          else return p;
        },
        f);
    ASSERT_NE(addr, nullptr) << leaf.path;
    const auto [it, fresh] = owner.emplace(addr, leaf.path);
    EXPECT_TRUE(fresh) << leaf.path << " and " << it->second << " share a field";
  }
}

// Every row's key is accepted where the table says, and written back by toJson().
TEST(ConfigTable, EveryRowIsWrittenByToJson) {
  const CacheConfig c = CacheConfig::fromJsonString(kFull);
  const Json j = Json::parse(c.toJson());
  for (const Leaf& leaf : leaves(c)) {
    const Json* v = &j;
    std::istringstream parts(leaf.path);
    for (std::string part; std::getline(parts, part, '.');) {
      const size_t bracket = part.find('[');
      v = &(*v)[part.substr(0, bracket)];
      if (bracket != std::string::npos) v = &(*v)[std::stoul(part.substr(bracket + 1))];
    }
    EXPECT_FALSE(v->is_null()) << leaf.path << " is not in toJson()";
  }
}

TEST(ConfigParse, RoundTripIsExact) {
  const CacheConfig a = CacheConfig::fromJsonString(kFull);
  const std::string json = a.toJson();
  const CacheConfig b = CacheConfig::fromJsonString(json);
  expectSame(a, b);
  EXPECT_EQ(b.toJson(), json);
  // The bench's section is not part of the cache config.
  EXPECT_FALSE(contains(json, "workload"));
  // Enums and sizes are written the way a person would write them.
  const Json j = Json::parse(json);
  EXPECT_EQ(j["background_eviction"]["strategy"], "keep-free");
  EXPECT_EQ(j["total_size"], "4GiB");
  EXPECT_EQ(j["promotion"]["upper_free_watermark"], 12.5);
}

TEST(ConfigParse, RoundTripOfEachEvictorStrategy) {
  for (const auto& [name, kind] : {std::pair{"free-threshold", EvictorStrategyKind::kFreeThreshold},
                                   std::pair{"keep-free", EvictorStrategyKind::kKeepFree}}) {
    SCOPED_TRACE(name);
    const CacheConfig a =
        CacheConfig::fromJsonString(edited([&](Json& j) { j["background_eviction"]["strategy"] = name; }));
    EXPECT_EQ(a.background_eviction.strategy, kind);
    const CacheConfig b = CacheConfig::fromJsonString(a.toJson());
    expectSame(a, b);
    EXPECT_EQ(Json::parse(b.toJson())["background_eviction"]["strategy"], name);
  }
}

TEST(ConfigParse, RoundTripKeepsOddValues) {
  CacheConfig a = CacheConfig::fromJsonString(edited([](Json& j) {
    j["tiers"][0]["size"] = 300000000;  // not a whole KiB: written as a number
    j["tiers"][1]["kind"] = "dax-kmem";
    j["tiers"][1].erase("path");
    j["tiers"][1].erase("persistent");
    j["tiers"][1].erase("rebuild_on_mismatch");
    j["tiers"][1]["nodes"] = {3};
    j["tiers"].push_back(Json::parse(R"({"name":"rest","kind":"auto","ratio":0.75,"bind_policy":"none"})"));
    j["pools"] = Json::parse(R"([{"name":"a","share":0.33},{"name":"b","share":0.56},{"name":"c","share":0.11}])");
    j["allocation"]["sizes"] = Json::parse(R"([96, 1000, "64KiB", "1MiB"])");
    j["eviction"]["policy"] = "lru";
  }));
  const CacheConfig b = CacheConfig::fromJsonString(a.toJson());
  expectSame(a, b);
  EXPECT_EQ(b.tiers[0].size, 300000000u);
  EXPECT_EQ(b.tiers[1].kind, TierKind::kDaxKmem);
  EXPECT_EQ(b.allocation.sizes, (std::vector<uint32_t>{96, 1000, 64 << 10, 1 << 20}));
  EXPECT_DOUBLE_EQ(b.pools[2].share, 0.11);
  EXPECT_EQ(b.tiers[2].kind, TierKind::kAuto);
  EXPECT_EQ(b.tiers[2].size, 0u);
  EXPECT_EQ(b.tiers[2].ratio, 0.75);
  EXPECT_EQ(b.tiers[2].bind_policy, BindPolicy::kNone);
}

TEST(ConfigParse, MinimalConfigGetsStructDefaults) {
  const CacheConfig c = CacheConfig::fromJsonString(R"({"tiers":[{"name":"t","size":"64MiB"}]})");
  const CacheConfig d;
  EXPECT_EQ(c.slab_size, d.slab_size);
  EXPECT_EQ(c.tiers[0].kind, TierKind::kDram);
  EXPECT_TRUE(c.allocation == d.allocation);
  EXPECT_TRUE(c.index == d.index);
  EXPECT_TRUE(c.eviction == d.eviction);
  EXPECT_TRUE(c.rebalance == d.rebalance);
  EXPECT_TRUE(c.demotion == d.demotion);
  EXPECT_TRUE(c.background_eviction == d.background_eviction);
  EXPECT_TRUE(c.promotion == d.promotion);
  EXPECT_TRUE(c.persistence == d.persistence);
  EXPECT_EQ(c.total_size, 0u);
  EXPECT_EQ(c.pmem_dir, "");
  EXPECT_FALSE(c.tiers[0].persistent);
}

TEST(ConfigParse, AbsentOrEmptyPoolsBecomeOneDefaultPool) {
  for (const char* json : {R"({"tiers":[{"name":"t","size":"64MiB"}]})",
                           R"({"tiers":[{"name":"t","size":"64MiB"}],"pools":[]})"}) {
    SCOPED_TRACE(json);
    const CacheConfig c = CacheConfig::fromJsonString(json);
    ASSERT_EQ(c.pools.size(), 1u);
    EXPECT_EQ(c.pools[0].name, "default");
    EXPECT_EQ(c.pools[0].share, 1.0);
  }
  // normalize() leaves an explicit list alone.
  CacheConfig c = CacheConfig::fromJsonString(kFull);
  c.normalize();
  EXPECT_EQ(c.pools.size(), 2u);
}

TEST(ConfigParse, WorkloadIsIgnoredWhateverItHolds) {
  for (const char* workload : {R"({"generator":"zipf","ops":5})", "[1,2,3]", R"("text")", "null", "17"}) {
    SCOPED_TRACE(workload);
    const std::string json = std::string(R"({"tiers":[{"name":"t","size":"64MiB"}],"workload":)") + workload + "}";
    EXPECT_NO_THROW(CacheConfig::fromJsonString(json));
  }
}

TEST(ConfigParse, WorkloadIsOnlyAcceptedAtTopLevel) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][0]["workload"] = Json::object(); }), "tiers[0].workload",
                        "unknown key"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["allocation"]["workload"] = 1; }), "allocation.workload", "unknown key"));
}

TEST(ConfigErrorFormat, WhatIsPathColonReason) {
  const ConfigError e("tiers[1].size", "too small");
  EXPECT_EQ(e.path(), "tiers[1].size");
  EXPECT_STREQ(e.what(), "tiers[1].size: too small");
  const ConfigError top("", "broken");
  EXPECT_STREQ(top.what(), "broken");
}

TEST(ConfigUnknownKey, NamesPathAndSuggestsNearestKey) {
  const std::string what = whatOf([] {
    CacheConfig::fromJsonString(edited([](Json& j) { j["tiers"][1]["sise"] = "1GiB"; }));
  });
  EXPECT_EQ(what, "tiers[1].sise: unknown key (did you mean 'size'?)");
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["slab_sise"] = 1; }), "slab_sise", "(did you mean 'slab_size'?)"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["pools"][1]["shares"] = 0.1; }), "pools[1].shares",
                        "(did you mean 'share'?)"));
  // A key that starts a real one is a likely abbreviation.
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["allocation"]["growth"] = 2; }), "allocation.growth",
                        "(did you mean 'growth_factor'?)"));
}

TEST(ConfigUnknownKey, NoSuggestionWhenNothingIsClose) {
  const std::string what = whatOf([] {
    CacheConfig::fromJsonString(edited([](Json& j) { j["index"]["compression"] = true; }));
  });
  EXPECT_EQ(what, "index.compression: unknown key");
}

TEST(ConfigUnknownKey, RepeatedKeyIsAnError) {
  EXPECT_TRUE(failsWith(R"({"tiers":[{"name":"t","size":"64MiB"},{"name":"u","size":"1GiB","size":"2GiB"}]})",
                        "tiers[1].size", "more than once"));
  EXPECT_TRUE(failsWith(R"({"slab_size":"4MiB","tiers":[{"name":"t","size":"64MiB"}],"slab_size":"1MiB"})",
                        "slab_size", "more than once"));
  // Inside the bench's workload object it is the bench's business.
  EXPECT_NO_THROW(CacheConfig::fromJsonString(
      R"({"tiers":[{"name":"t","size":"64MiB"}],"workload":{"ops":1,"ops":2,"x":{"a":1,"a":1}}})"));
  // The same key in sibling objects is fine.
  EXPECT_NO_THROW(CacheConfig::fromJsonString(kFull));
}

TEST(ConfigType, WrongTypesNameThePathAndTheExpectation) {
  struct Case {
    std::function<void(Json&)> edit;
    const char* path;
    const char* reason;
  };
  const Case cases[] = {
      {[](Json& j) { j["slab_size"] = true; }, "slab_size", "expected a size"},
      {[](Json& j) { j["tiers"] = "dram"; }, "tiers", "expected an array of objects, got string \"dram\""},
      {[](Json& j) { j["tiers"][1] = 5; }, "tiers[1]", "expected an object, got number 5"},
      {[](Json& j) { j["allocation"] = Json::array(); }, "allocation", "expected an object"},
      {[](Json& j) { j["allocation"]["growth_factor"] = "1.5"; }, "allocation.growth_factor", "expected a number"},
      {[](Json& j) { j["rebalance"]["enabled"] = "yes"; }, "rebalance.enabled", "expected true or false"},
      {[](Json& j) { j["tiers"][0]["name"] = 7; }, "tiers[0].name", "expected a string"},
      {[](Json& j) { j["tiers"][0]["nodes"] = 0; }, "tiers[0].nodes", "expected an array of integers"},
      {[](Json& j) { j["tiers"][0]["nodes"] = {0, -1}; }, "tiers[0].nodes[1]", "negative"},
      {[](Json& j) { j["index"]["bucket_power"] = 20.5; }, "index.bucket_power", "expected an integer"},
      {[](Json& j) { j["eviction"]["policy"] = 1; }, "eviction.policy", "expected one of: lru, clock"},
      {[](Json& j) { j["allocation"]["sizes"] = {64, true}; }, "allocation.sizes[1]", "expected a size"},
      {[](Json& j) { j["total_size"] = Json::array(); }, "total_size", "expected a size"},
      {[](Json& j) { j["pmem_dir"] = 5; }, "pmem_dir", "expected a string, got number 5"},
      {[](Json& j) { j["promotion"] = Json::array(); }, "promotion", "expected an object"},
      {[](Json& j) { j["promotion"]["upper_free_watermark"] = "1%"; }, "promotion.upper_free_watermark",
       "expected a number"},
      {[](Json& j) { j["background_eviction"]["low_watermark"] = nullptr; }, "background_eviction.low_watermark",
       "expected a number, got null"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    EXPECT_TRUE(failsWith(edited(c.edit), c.path, c.reason));
  }
  EXPECT_TRUE(failsWith("[1, 2]", "", "expected a JSON object at the top level, got array"));
}

TEST(ConfigType, IntegersThatDoNotFitAreRefused) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["index"]["bucket_power"] = 5000000000ull; }), "index.bucket_power",
                        "out of range"));
  EXPECT_TRUE(
      failsWith(edited([](Json& j) { j["allocation"]["min_size"] = "8GiB"; }), "allocation.min_size", "out of range"));
}

TEST(ConfigEnum, UnknownValuesListTheChoicesAndSuggest) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][1]["kind"] = "pmem"; }), "tiers[1].kind",
                        "unknown value \"pmem\", expected one of: dram, pmem-file, dax-kmem, auto (did you mean 'pmem-file'?)"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["eviction"]["policy"] = "lfu"; }), "eviction.policy",
                        "(did you mean 'lru'?)"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["rebalance"]["strategy"] = "random"; }), "rebalance.strategy",
                        "expected one of: free-slots"));
}

// ---------------------------------------------------------------------------

TEST(ConfigSize, ParsesTheDocumentedSyntax) {
  const struct {
    const char* text;
    uint64_t bytes;
  } cases[] = {
      {"0", 0},
      {"4096", 4096},
      {"4096B", 4096},
      {"4096.0", 4096},
      {"64KiB", 64 << 10},
      {"256MiB", 256 * kMiB},
      {"1GiB", kGiB},
      {"1.5GiB", 3 * kGiB / 2},
      {"1.5 GiB", 3 * kGiB / 2},
      {"0.5KiB", 512},
      {"2.25MiB", 9 * kMiB / 4},
      {"16TiB", 16ull << 40},
      {"18446744073709551615", UINT64_MAX},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(parseSize(c.text, "x"), c.bytes);
  }
}

TEST(ConfigSize, RejectsBadSizesNamingThePathAndWhy) {
  const struct {
    const char* text;
    const char* reason;
  } cases[] = {
      {"", "empty"},
      {"12 parsecs", "unknown unit \"parsecs\""},
      {"-1", "negative"},
      {"-1GiB", "negative"},
      {"1.5", "not a whole number of bytes"},
      {"1.1KiB", "not a whole number of bytes"},
      {"18446744073709551616", "too large"},
      {"17179869184GiB", "too large"},
      {"99999999999999999999999", "too large"},
      {"4MB", "'MB' is ambiguous"},
      {"4kB", "write 'KiB'"},
      {"4G", "ambiguous"},
      {"4 mib", "did you mean 'MiB'?"},
      {"GiB", "expected a number"},
      {" 4", "expected a number"},
      {"4 ", "unknown unit"},
      {"1.", "digits after '.'"},
      {"1e9", "unknown unit \"e9\""},
      {"0x10", "unknown unit"},
      {"1.0000000000000000001GiB", "too many decimal places"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      parseSize(c.text, "tiers[1].size");
      ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), "tiers[1].size");
      EXPECT_TRUE(contains(e.what(), c.reason)) << e.what();
    }
  }
}

TEST(ConfigSize, BadSizeInsideADocumentNamesItsKey) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][1]["size"] = "12 parsecs"; }), "tiers[1].size",
                        "\"12 parsecs\" is not a size"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][0]["size"] = -4096; }), "tiers[0].size", "negative"));
  EXPECT_TRUE(
      failsWith(edited([](Json& j) { j["tiers"][0]["size"] = 4096.5; }), "tiers[0].size", "not a whole number of bytes"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["slab_size"] = ""; }), "slab_size", "empty"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["allocation"]["sizes"] = {64, "1.5"}; }), "allocation.sizes[1]",
                        "not a whole number"));
}

TEST(ConfigSize, FormatSizeIsReadBackExactly) {
  EXPECT_EQ(formatSize(0), "0B");
  EXPECT_EQ(formatSize(100), "100B");
  EXPECT_EQ(formatSize(1536 << 10), "1536KiB");
  EXPECT_EQ(formatSize(4 * kMiB), "4MiB");
  EXPECT_EQ(formatSize(3 * kGiB), "3GiB");
  for (uint64_t v : std::vector<uint64_t>{0, 1, 1000, 65536, 1536ull << 10, 5ull << 40, UINT64_MAX}) {
    EXPECT_EQ(parseSize(formatSize(v), "x"), v) << formatSize(v);
  }
}

// ---------------------------------------------------------------------------

TEST(ConfigValidate, NeedsAtLeastOneTier) {
  EXPECT_TRUE(failsWith(R"({"tiers":[]})", "tiers", "at least one tier"));
  EXPECT_TRUE(failsWith(R"({"slab_size":"4MiB"})", "tiers", "at least one tier"));
}

TEST(ConfigValidate, TierNamesAreRequiredNonEmptyAndUnique) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][1].erase("name"); }), "tiers[1].name", "required key is missing"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][1]["name"] = ""; }), "tiers[1].name", "must not be empty"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][1]["name"] = "dram"; }), "tiers[1].name",
                        "duplicate tier name \"dram\" (also tiers[0].name)"));
}

TEST(ConfigValidate, TierNeedsASizeThatHoldsASlabOrARatio) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][0].erase("size"); }), "tiers[0].size",
                        "a tier needs a size (or a ratio"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][0]["ratio"] = 0.5; }), "tiers[0].ratio",
                        "set size or ratio, not both"));
  EXPECT_TRUE(failsWith(edited([](Json& j) {
                          j["tiers"][0].erase("size");
                          j["tiers"][0]["ratio"] = -1;
                        }),
                        "tiers[0].ratio", "out of range >= 0"));
  const CacheConfig planned = CacheConfig::fromJsonString(edited([](Json& j) {
    j["tiers"][0].erase("size");
    j["tiers"][0]["ratio"] = 2;
  }));
  EXPECT_EQ(planned.tiers[0].size, 0u);
  EXPECT_EQ(planned.slabCount(), 512u);  // the ratio tier has no slabs until planned
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][1]["size"] = "1MiB"; }), "tiers[1].size",
                        "1MiB is smaller than one slab (slab_size 2MiB)"));
  EXPECT_NO_THROW(CacheConfig::fromJsonString(edited([](Json& j) { j["tiers"][1]["size"] = "2MiB"; })));
}

// Found by scripts/config-sweep.py: a volatile pmem-file tier below 16 MiB
// passed validation and failed only when the cache opened it, so the bench
// exited 1 ("cannot create the cache") instead of 2 with the field's name.
TEST(ConfigValidate, VolatilePmemFileTierHoldsAtLeast16MiBInWholeSlabs) {
  auto volatilePmem = [](const char* size) {
    return edited([size](Json& j) {
      j["tiers"][1].erase("persistent");
      j["tiers"][1].erase("rebuild_on_mismatch");
      j["tiers"][1]["path"] = "/dev/shm";
      j["tiers"][1]["size"] = size;
      j.erase("total_size");
    });
  };
  EXPECT_TRUE(failsWith(volatilePmem("11MiB"), "tiers[1].size",
                        "11MiB is below the 16MiB minimum for a pmem-file tier that is not persistent"));
  // 17 MiB is 16 MiB in whole 2 MiB slabs, 15 MiB only 14 MiB.
  EXPECT_NO_THROW(CacheConfig::fromJsonString(volatilePmem("17MiB")));
  EXPECT_TRUE(failsWith(volatilePmem("15MiB"), "tiers[1].size", "below the 16MiB minimum"));
  // A persistent pool has its own, lower floor (the tier checks it).
  EXPECT_NO_THROW(CacheConfig::fromJsonString(edited([](Json& j) { j["tiers"][1]["size"] = "4MiB"; })));
}

TEST(ConfigValidate, OnlyPmemFileTiersTakeAPath) {
  // tiers[1] made volatile: its path is a directory.
  auto volatilePmem = [](Json& j) {
    j["tiers"][1].erase("persistent");
    j["tiers"][1].erase("rebuild_on_mismatch");
    j["tiers"][1]["path"] = "/dev/shm";
  };
  EXPECT_TRUE(failsWith(edited([&](Json& j) {
                          volatilePmem(j);
                          j["tiers"][1].erase("path");
                          j.erase("pmem_dir");
                        }),
                        "tiers[1].path", "needs a path, the directory its file is created in"));
  EXPECT_TRUE(failsWith(edited([&](Json& j) {
                          volatilePmem(j);
                          j["tiers"][1]["path"] = "";
                          j["pmem_dir"] = "";
                        }),
                        "tiers[1].path", "or a top-level pmem_dir"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][0]["path"] = "/mnt/x"; }), "tiers[0].path",
                        "only a pmem-file tier takes a path; this tier's kind is 'dram'"));
  EXPECT_TRUE(failsWith(edited([](Json& j) {
                          j["tiers"][0]["kind"] = "auto";
                          j["tiers"][0].erase("nodes");
                          j["tiers"][0]["path"] = "/mnt/x";
                        }),
                        "tiers[0].path", "only a pmem-file tier takes a path"));
}

// As planTiers() does, a pmem-file tier without a path is put in pmem_dir;
// a persistent tier's path is its pool file, which a directory cannot replace.
TEST(ConfigValidate, PmemDirStandsInForAVolatilePmemFilePath) {
  const CacheConfig c = CacheConfig::fromJsonString(edited([](Json& j) {
    j["tiers"][1].erase("persistent");
    j["tiers"][1].erase("rebuild_on_mismatch");
    j["tiers"][1].erase("path");
  }));
  EXPECT_EQ(c.tiers[1].path, "");
  EXPECT_EQ(c.pmem_dir, "/mnt/pmem0");
  expectSame(c, CacheConfig::fromJsonString(c.toJson()));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][1].erase("path"); }), "tiers[1].path",
                        "a persistent pmem-file tier needs a path: its pool file (pmem_dir does not apply)"));
}

TEST(ConfigValidate, PersistenceOnlyWhereItApplies) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][0]["persistent"] = true; }), "tiers[0].persistent",
                        "only a pmem-file tier can be persistent; this tier's kind is 'dram'"));
  EXPECT_TRUE(failsWith(edited([](Json& j) {
                          j["tiers"][1]["kind"] = "auto";
                          j["tiers"][1].erase("path");
                        }),
                        "tiers[1].persistent", "this tier's kind is 'auto'"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][1]["persistent"] = false; }), "tiers[1].rebuild_on_mismatch",
                        "applies only to a persistent tier"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][1]["persistent"] = "yes"; }), "tiers[1].persistent",
                        "expected true or false"));
  // Durable sets without a persistent tier fall back to ordinary sets: allowed.
  EXPECT_NO_THROW(CacheConfig::fromJsonString(edited([](Json& j) {
    j["tiers"][1]["persistent"] = false;
    j["tiers"][1]["rebuild_on_mismatch"] = false;
  })));
}

// total_size is checked the way planTiers() would refuse it, naming "total_size".
TEST(ConfigValidate, TotalSizeForRatioTiers) {
  auto ratioTier = [](Json& j) { j["tiers"].push_back(Json::parse(R"({"name":"rest","kind":"auto","ratio":2})")); };
  EXPECT_TRUE(failsWith(edited([&](Json& j) {
                          ratioTier(j);
                          j.erase("total_size");
                        }),
                        "total_size", "tiers[2] has a ratio, so the tier planner needs a total"));
  EXPECT_TRUE(failsWith(edited([&](Json& j) {
                          ratioTier(j);
                          j["total_size"] = 0;
                        }),
                        "total_size", "needs a total"));
  // The sized tiers take 256MiB + 1GiB.
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["total_size"] = "1GiB"; }), "total_size",
                        "1GiB is less than the sized tiers take (1280MiB)"));
  EXPECT_TRUE(failsWith(edited([&](Json& j) {
                          ratioTier(j);
                          j["total_size"] = "1280MiB";
                        }),
                        "total_size", "nothing of 1280MiB is left for the ratio tiers (tiers[2] ...)"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["total_size"] = "1MiB"; }), "total_size",
                        "1MiB is smaller than one slab (slab_size 2MiB)"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["total_size"] = "1 GB"; }), "total_size", "ambiguous"));
  // A tier's own mistake is reported before the total.
  EXPECT_TRUE(failsWith(edited([&](Json& j) {
                          ratioTier(j);
                          j.erase("total_size");
                          j["tiers"][2]["ratio"] = -1;
                        }),
                        "tiers[2].ratio", "out of range"));
  // An auto tier with a size needs no total, as in planTiers().
  EXPECT_NO_THROW(CacheConfig::fromJsonString(edited([](Json& j) {
    j["tiers"].push_back(Json::parse(R"({"name":"more","kind":"auto","size":"64MiB"})"));
    j.erase("total_size");
  })));
  const CacheConfig ok = CacheConfig::fromJsonString(edited([&](Json& j) {
    ratioTier(j);
    j["total_size"] = "1282MiB";  // one slab left for the ratio tier
  }));
  EXPECT_EQ(ok.total_size, 1282 * kMiB);
}

TEST(ConfigValidate, BackgroundEvictionBounds) {
  struct Case {
    const char* key;
    Json value;
    const char* reason;
  };
  const Case cases[] = {
      {"threads", 0, "0 is out of range [1, 64]"},
      {"threads", 65, "65 is out of range [1, 64]"},
      {"interval_ms", 0, "out of range [1, 60000]"},
      {"interval_ms", 60001, "out of range [1, 60000]"},
      {"low_watermark", -0.5, "-0.5 is out of range [0, 100]"},
      {"low_watermark", 100.5, "out of range [0, 100]"},
      {"high_watermark", 101, "out of range [0, 100]"},
      {"high_watermark", 1, "1 is below background_eviction.low_watermark (1.5)"},
      {"min_batch", 0, "out of range [1, 1000000]"},
      {"max_batch", 3, "3 is below background_eviction.min_batch (4)"},
      {"max_batch", 1000001, "out of range [1, 1000000]"},
      {"keep_free", 1000001, "out of range [0, 1000000]"},
      {"strategy", "keepfree", "expected one of: free-threshold, keep-free (did you mean 'keep-free'?)"},
      {"strategy", 1, "expected one of: free-threshold, keep-free"},
      {"threads", "2", "expected an integer"},
      {"enabled", 1, "expected true or false"},
      {"max_batchs", 1, "unknown key (did you mean 'max_batch'?)"},
  };
  for (const Case& c : cases) {
    const std::string path = std::string("background_eviction.") + c.key;
    SCOPED_TRACE(path + " = " + c.value.dump());
    EXPECT_TRUE(failsWith(edited([&](Json& j) { j["background_eviction"][c.key] = c.value; }), path, c.reason));
  }
  // A min_batch above max_batch is reported at max_batch, the pair's second key.
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["background_eviction"]["min_batch"] = 301; }),
                        "background_eviction.max_batch", "300 is below background_eviction.min_batch (301)"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["background_eviction"] = true; }), "background_eviction",
                        "expected an object"));
  // The edges are allowed.
  EXPECT_NO_THROW(CacheConfig::fromJsonString(edited([](Json& j) {
    j["background_eviction"] = Json::parse(R"({"threads": 64, "interval_ms": 60000, "low_watermark": 100,
        "high_watermark": 100, "min_batch": 1000000, "max_batch": 1000000, "keep_free": 1000000})");
  })));
  EXPECT_NO_THROW(CacheConfig::fromJsonString(edited([](Json& j) {
    j["background_eviction"] = Json::parse(R"({"threads": 1, "interval_ms": 1, "low_watermark": 0,
        "high_watermark": 0, "min_batch": 1, "max_batch": 1, "keep_free": 0})");
  })));
}

TEST(ConfigValidate, PromotionBounds) {
  struct Case {
    const char* key;
    Json value;
    const char* reason;
  };
  const Case cases[] = {
      {"hits", 0, "0 is out of range [1, 7]"},
      {"hits", 8, "8 is out of range [1, 7]"},
      {"max_per_sec", 10000001, "out of range [0, 10000000]"},
      {"interval_ms", 0, "out of range [1, 60000]"},
      {"interval_ms", 60001, "out of range [1, 60000]"},
      {"max_batch", 0, "out of range [1, 1000000]"},
      {"queue_size", 0, "out of range [1, 1000000]"},
      {"queue_size", 1000001, "out of range [1, 1000000]"},
      {"upper_free_watermark", -1, "out of range [0, 100]"},
      {"upper_free_watermark", 100.01, "out of range [0, 100]"},
      {"hits", -1, "negative"},
      {"background", "no", "expected true or false"},
      {"hit", 2, "unknown key (did you mean 'hits'?)"},
  };
  for (const Case& c : cases) {
    const std::string path = std::string("promotion.") + c.key;
    SCOPED_TRACE(path + " = " + c.value.dump());
    EXPECT_TRUE(failsWith(edited([&](Json& j) { j["promotion"][c.key] = c.value; }), path, c.reason));
  }
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["demotion"]["enabled"] = "off"; }), "demotion.enabled",
                        "expected true or false"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["persistence"]["durable"] = true; }), "persistence.durable",
                        "(did you mean 'durable_sets'?)"));
  EXPECT_NO_THROW(CacheConfig::fromJsonString(edited([](Json& j) {
    j["promotion"] = Json::parse(R"({"hits": 7, "max_per_sec": 10000000, "interval_ms": 60000, "max_batch": 1000000,
        "queue_size": 1000000, "upper_free_watermark": 100})");
  })));
  EXPECT_NO_THROW(CacheConfig::fromJsonString(edited([](Json& j) {
    j["promotion"] = Json::parse(R"({"hits": 1, "max_per_sec": 0, "interval_ms": 1, "max_batch": 1,
        "queue_size": 1, "upper_free_watermark": 0})");
  })));
  // Promotion in a one-tier cache has nothing to do, but is not an error.
  CacheConfig one = CacheConfig::dram(64 * kMiB);
  one.promotion.enabled = true;
  one.demotion.enabled = true;
  EXPECT_NO_THROW(one.validate());
}

TEST(ConfigValidate, NodesAndBindPolicyOnlyWhereTheyApply) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][1]["nodes"] = {1}; }), "tiers[1].nodes",
                        "does not apply to a pmem-file tier"));
  EXPECT_TRUE(failsWith(edited([](Json& j) {
                          j["tiers"][0]["kind"] = "auto";
                        }),
                        "tiers[0].nodes", "does not apply to an auto tier"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][1]["bind_policy"] = "strict"; }), "tiers[1].bind_policy",
                        "does not apply to a pmem-file tier"));
  EXPECT_TRUE(failsWith(edited([](Json& j) {
                          j["tiers"][0]["kind"] = "dax-kmem";
                          j["tiers"][0]["bind_policy"] = "none";
                        }),
                        "tiers[0].bind_policy", "always binds"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["tiers"][0]["bind_policy"] = "loose"; }), "tiers[0].bind_policy",
                        "expected one of: none, advisory, strict"));
}

TEST(ConfigValidate, SlabSizeIsAPowerOfTwoIn64KiBTo1GiB) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["slab_size"] = "3MiB"; }), "slab_size", "3MiB is not a power of two"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["slab_size"] = "32KiB"; }), "slab_size", "out of range [64KiB, 1GiB]"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["slab_size"] = "2GiB"; }), "slab_size", "out of range"));
  EXPECT_NO_THROW(CacheConfig::fromJsonString(edited([](Json& j) {
    j["slab_size"] = "64KiB";
    j["allocation"]["max_size"] = 0;
  })));
  EXPECT_NO_THROW(CacheConfig::fromJsonString(edited([](Json& j) {
    j["slab_size"] = "1GiB";
    j["tiers"][0]["size"] = "1GiB";
  })));
}

TEST(ConfigValidate, PoolRules) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["pools"][1]["name"] = "default"; }), "pools[1].name", "duplicate pool"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["pools"][1].erase("name"); }), "pools[1].name", "required"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["pools"][1]["share"] = 0; }), "pools[1].share", "out of range (0, 1]"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["pools"][1]["share"] = 1.5; }), "pools[1].share", "out of range"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["pools"][1]["share"] = 0.4; }), "pools", "add up to 1.2, more than 1"));
  // Shares that add up to 1 in decimal may add up to 1.0000000000000002 in binary.
  EXPECT_NO_THROW(CacheConfig::fromJsonString(edited([](Json& j) {
    j["pools"] = Json::parse(R"([{"name":"a","share":0.33},{"name":"b","share":0.56},{"name":"c","share":0.11}])");
  })));
}

TEST(ConfigValidate, AllocationMinAndMaxSize) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["allocation"]["min_size"] = 24; }), "allocation.min_size",
                        "out of range [32B, 16MiB]"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["allocation"]["min_size"] = 100; }), "allocation.min_size",
                        "not a multiple of 8"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["allocation"]["min_size"] = "2MiB"; }), "allocation.min_size",
                        "larger than the largest class (allocation.max_size 1MiB)"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["allocation"]["max_size"] = "4MiB"; }), "allocation.max_size",
                        "4MiB is larger than slab_size (2MiB)"));
  EXPECT_TRUE(failsWith(edited([](Json& j) {
                          j["slab_size"] = "64MiB";
                          j["allocation"]["max_size"] = "32MiB";
                        }),
                        "allocation.max_size", "out of range"));
  // 0 means "as large as allowed".
  const CacheConfig c = CacheConfig::fromJsonString(edited([](Json& j) { j["allocation"]["max_size"] = 0; }));
  EXPECT_EQ(c.maxAllocSize(), 2 * kMiB);
}

TEST(ConfigValidate, GrowthFactorIsAbove1AndAtMost10) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["allocation"]["growth_factor"] = 1.0; }), "allocation.growth_factor",
                        "out of range (1, 10]"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["allocation"]["growth_factor"] = 10.5; }), "allocation.growth_factor",
                        "out of range"));
  // CacheLib's cachebench configs ask for up to 10 (feature_stress/navy/default.json).
  EXPECT_NO_THROW(CacheConfig::fromJsonString(edited([](Json& j) { j["allocation"]["growth_factor"] = 10; })));
  EXPECT_NO_THROW(CacheConfig::fromJsonString(edited([](Json& j) { j["allocation"]["growth_factor"] = 1.01; })));
}

TEST(ConfigValidate, ExplicitSizesIncreaseAndFitASlab) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["allocation"]["sizes"] = {64, 128, 128}; }), "allocation.sizes[2]",
                        "strictly increasing"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["allocation"]["sizes"] = {64, 100}; }), "allocation.sizes[1]",
                        "not a multiple of 8"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["allocation"]["sizes"] = {16, 64}; }), "allocation.sizes[0]",
                        "out of range"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["allocation"]["sizes"] = {64, "4MiB"}; }), "allocation.sizes[1]",
                        "larger than slab_size (2MiB)"));
  const CacheConfig c = CacheConfig::fromJsonString(edited([](Json& j) { j["allocation"]["sizes"] = {128, 1024, 4096}; }));
  EXPECT_EQ(c.minAllocSize(), 128u);
  EXPECT_EQ(c.maxAllocSize(), 4096u);
}

// slot bits + slab-id bits <= 40, with one slab id kept for CompressedRef::kNull.
TEST(ConfigValidate, ItemReferenceBudgetIsExact) {
  // 4 MiB slabs / 64-byte classes: 16 slot bits, so at most 2^24 - 1 slabs
  // (64 TiB; a 32-bit reference stopped at 2^16 - 1, 256 GiB).
  auto withSlabs = [](uint64_t slabs) {
    return R"({"tiers":[{"name":"d","size":"256MiB"},{"name":"p","kind":"pmem-file","path":"/dev/shm","size":)" +
           std::to_string((slabs - 64) * 4 * kMiB) + "}]}";
  };
  const CacheConfig old = CacheConfig::fromJsonString(withSlabs(65536));  // past the 32-bit budget
  EXPECT_EQ(old.slabCount(), 65536u);
  const CacheConfig ok = CacheConfig::fromJsonString(withSlabs((1u << 24) - 1));
  EXPECT_EQ(ok.slotBits(), 16u);
  EXPECT_EQ(ok.slabCount(), (1u << 24) - 1);
  EXPECT_TRUE(failsWith(withSlabs(1u << 24), "allocation.min_size",
                        "a compressed item reference (40 bits) cannot address this cache: slab_size 4MiB / smallest "
                        "class 64B = 65536 slots per slab need 16 bits, which leaves room for 16777215 "
                        "slabs, but the tiers hold 16777216; raise allocation.min_size or slab_size"));
  // A bigger smallest class frees a bit.
  Json j = Json::parse(withSlabs(1u << 24));
  j["allocation"]["min_size"] = 128;
  EXPECT_EQ(CacheConfig::fromJsonString(j.dump()).slotBits(), 15u);
  // With explicit sizes the first one is the smallest class.
  j["allocation"]["sizes"] = {64, 128};
  EXPECT_TRUE(failsWith(j.dump(), "allocation.sizes[0]", "need 16 bits"));
}

TEST(ConfigValidate, SlotBitsNumberEverySlotOfTheSmallestClass) {
  CacheConfig c = CacheConfig::dram(256 * kMiB);
  c.allocation.min_size = 72;  // 4 MiB / 72 = 58254 slots: still 16 bits
  EXPECT_EQ(c.slotBits(), 16u);
  c.allocation.min_size = 128;
  EXPECT_EQ(c.slotBits(), 15u);
  c.slab_size = 64 << 10;
  EXPECT_EQ(c.slotBits(), 9u);
  EXPECT_EQ(c.slabCount(), 4096u);
}

TEST(ConfigValidate, IndexPowers) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["index"]["bucket_power"] = 9; }), "index.bucket_power", "out of range [10, 32]"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["index"]["bucket_power"] = 33; }), "index.bucket_power", "out of range"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["index"]["lock_power"] = 3; }), "index.lock_power", "out of range [4, 20]"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["index"]["lock_power"] = 21; }), "index.lock_power", "out of range"));
  EXPECT_TRUE(failsWith(edited([](Json& j) {
                          j["index"]["bucket_power"] = 10;
                          j["index"]["lock_power"] = 12;
                        }),
                        "index.lock_power", "larger than index.bucket_power (10)"));
}

TEST(ConfigValidate, EvictionBounds) {
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["eviction"]["lru_insertion_point"] = 9; }), "eviction.lru_insertion_point",
                        "out of range [0, 8]"));
  EXPECT_TRUE(failsWith(edited([](Json& j) { j["eviction"]["lru_refresh_ms"] = 3600001; }), "eviction.lru_refresh_ms",
                        "out of range"));
  EXPECT_NO_THROW(CacheConfig::fromJsonString(edited([](Json& j) { j["eviction"]["lru_refresh_ms"] = 3600000; })));
}

TEST(ConfigValidate, HandBuiltConfigsAreCheckedToo) {
  CacheConfig c;
  EXPECT_EQ(whatOf([&] { c.validate(); }), "tiers: at least one tier is required");
  c = CacheConfig::dram(64 * kMiB);
  EXPECT_NO_THROW(c.validate());
  c.pools.clear();  // means "one default pool"
  EXPECT_NO_THROW(c.validate());
  c.eviction.policy = static_cast<EvictionPolicyKind>(7);
  EXPECT_EQ(whatOf([&] { c.validate(); }), "eviction.policy: unknown value");
  c.eviction.policy = EvictionPolicyKind::kLru;
  c.rebalance.strategy = "most-evictions";
  EXPECT_EQ(whatOf([&] { c.validate(); }), "rebalance.strategy: unknown value \"most-evictions\"");
  c.rebalance.strategy = "free-slots";
  c.allocation.growth_factor = std::nan("");
  EXPECT_EQ(whatOf([&] { c.validate(); }), "allocation.growth_factor: not a finite number");
  c.allocation.growth_factor = 1.25;
  c.background_eviction.strategy = static_cast<EvictorStrategyKind>(2);
  EXPECT_EQ(whatOf([&] { c.validate(); }), "background_eviction.strategy: unknown value");
  c.background_eviction.strategy = EvictorStrategyKind::kKeepFree;
  c.background_eviction.high_watermark = std::numeric_limits<double>::infinity();
  EXPECT_EQ(whatOf([&] { c.validate(); }), "background_eviction.high_watermark: not a finite number");
  c.background_eviction.high_watermark = 5;
  c.promotion.upper_free_watermark = std::nan("");
  EXPECT_EQ(whatOf([&] { c.validate(); }), "promotion.upper_free_watermark: not a finite number");
  c.promotion.upper_free_watermark = 0.5;
  c.tiers[0].ratio = 1;
  c.tiers[0].size = 0;
  EXPECT_EQ(whatOf([&] { c.validate(); }),
            "total_size: tiers[0] has a ratio, so the tier planner needs a total to share out (0 means every tier "
            "has its own size)");
  c.total_size = 64 * kMiB;
  EXPECT_NO_THROW(c.validate());
}

// ---------------------------------------------------------------------------

TEST(ConfigSyntax, ErrorNamesLineAndColumn) {
  const std::string json = "{\n  \"slab_size\": \"4MiB\",\n  \"tiers\": [ {\"name\": \"a\",} ]\n}";
  // The stray '}' after the comma is line 3, column 27 (byte offset 51).
  EXPECT_TRUE(failsWith(json, "", "JSON syntax error at line 3, column 27 (byte offset 51): "));
  EXPECT_TRUE(failsWith(json, "", "unexpected '}'"));
}

TEST(ConfigSyntax, TruncatedAndEmptyDocuments) {
  EXPECT_TRUE(failsWith("{\n  \"tiers\": [", "", "line 2, column 13"));
  EXPECT_TRUE(failsWith("{\n  \"tiers\": [", "", "unexpected end of input"));
  EXPECT_TRUE(failsWith("", "", "JSON syntax error at line 1, column 1"));
  EXPECT_TRUE(failsWith("{} x", "", "line 1, column 4"));
  // Comments are not JSON.
  EXPECT_TRUE(failsWith("{ // tiers\n}", "", "line 1, column"));
}

TEST(ConfigFile, MissingFileIsNamed) {
  const std::string path = tempPath("missing");
  std::remove(path.c_str());
  const std::string what = whatOf([&] { CacheConfig::fromJsonFile(path); });
  EXPECT_TRUE(contains(what, "'" + path + "'")) << what;
  EXPECT_TRUE(contains(what, "No such file")) << what;
  const std::string dir = whatOf([] { CacheConfig::fromJsonFile("/"); });
  EXPECT_TRUE(contains(dir, "'/'")) << dir;
  EXPECT_TRUE(contains(dir, "directory")) << dir;
}

TEST(ConfigFile, ParsesAFileAndNamesItInErrors) {
  const std::string path = tempPath("file");
  {
    std::ofstream(path) << kFull;
  }
  expectSame(CacheConfig::fromJsonFile(path), CacheConfig::fromJsonString(kFull));

  std::ofstream(path) << edited([](Json& j) { j["tiers"][1]["size"] = "1 GB"; });
  try {
    CacheConfig::fromJsonFile(path);
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "tiers[1].size");
    EXPECT_TRUE(contains(e.what(), "ambiguous")) << e.what();
    EXPECT_TRUE(contains(e.what(), "(in " + path + ")")) << e.what();
  }

  std::ofstream(path) << "{\n\n  nope\n}";
  const std::string what = whatOf([&] { CacheConfig::fromJsonFile(path); });
  // The column is that of the last byte read: "no" is not the start of "null".
  EXPECT_TRUE(contains(what, path + ": JSON syntax error at line 3, column 4 (byte offset 6)")) << what;
  std::remove(path.c_str());
}

TEST(ConfigDram, SmallAndLargeCaches) {
  const CacheConfig big = CacheConfig::dram(256 * kMiB);
  ASSERT_EQ(big.tiers.size(), 1u);
  EXPECT_EQ(big.tiers[0].name, "dram");
  EXPECT_EQ(big.tiers[0].kind, TierKind::kDram);
  EXPECT_EQ(big.tiers[0].size, 256 * kMiB);
  EXPECT_EQ(big.slab_size, 4 * kMiB);
  ASSERT_EQ(big.pools.size(), 1u);
  EXPECT_EQ(big.pools[0].name, "default");
  EXPECT_NO_THROW(big.validate());
  expectSame(big, CacheConfig::fromJsonString(big.toJson()));

  EXPECT_EQ(CacheConfig::dram(64 * kMiB).slab_size, 4 * kMiB);
  EXPECT_EQ(CacheConfig::dram(64 * kMiB - 1).slab_size, kMiB);
  const CacheConfig small = CacheConfig::dram(16 * kMiB);
  EXPECT_EQ(small.slab_size, kMiB);
  EXPECT_EQ(small.slabCount(), 16u);
  EXPECT_EQ(small.maxAllocSize(), kMiB);
  EXPECT_NO_THROW(small.validate());
}

// ---------------------------------------------------------------------------

std::string docsPath() { return TIERCACHE_SOURCE_DIR "/docs/configuration.md"; }

TEST(ConfigDocs, MarkdownTableHasEveryKeyOfAFullConfig) {
  const std::string md = configOptionsMarkdown();
  // Every key path of a full document, written the way the table writes it.
  std::function<void(const Json&, const std::string&)> walk = [&](const Json& obj, const std::string& prefix) {
    for (const auto& [key, value] : obj.items()) {
      const std::string path = prefix.empty() ? key : prefix + "." + key;
      EXPECT_TRUE(contains(md, "| `" + path + "` |")) << path;
      if (key == "workload") continue;
      if (value.is_object()) walk(value, path);
      if (value.is_array() && !value.empty() && value[0].is_object()) walk(value[0], path + "[]");
    }
  };
  walk(full(), "");
}

TEST(ConfigDocs, DocumentationContainsTheCurrentTable) {
  const std::string doc = readFile(docsPath());
  ASSERT_FALSE(doc.empty()) << "cannot read " << docsPath();
  const std::string md = configOptionsMarkdown();
  std::istringstream rows(md);
  for (std::string row; std::getline(rows, row);) {
    if (row.rfind("| `", 0) != 0) continue;
    const std::string key = row.substr(2, row.find('`', 3) - 1);  // "`tiers[].size`"
    EXPECT_TRUE(contains(doc, key)) << docsPath() << " does not mention " << key;
  }
  if (!contains(doc, md)) {
    const std::string out = std::string(TIERCACHE_BINARY_DIR) + "/configuration_options.md";
    std::ofstream(out) << md;
    ADD_FAILURE() << docsPath() << " is out of date: paste " << out
                  << " (the output of configOptionsMarkdown()) into it between the BEGIN/END markers";
  }
}

// The configs shipped in configs/ stay valid as the options change.
// (CacheLib cachebench configs, with "cache_config", are the bench's to read.)
TEST(ConfigFile, ShippedConfigsParse) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TIERCACHE_SOURCE_DIR) + "/configs")) {
    if (entry.path().extension() != ".json") continue;
    const Json doc = Json::parse(readFile(entry.path().string()));
    if (doc.contains("cache_config")) continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(CacheConfig::fromJsonFile(entry.path().string()));
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(ConfigDocs, DocumentationExampleParses) {
  const std::string doc = readFile(docsPath());
  const std::string open = "```json\n";
  const size_t begin = doc.find(open);
  ASSERT_NE(begin, std::string::npos) << "no ```json example in " << docsPath();
  const size_t end = doc.find("```", begin + open.size());
  ASSERT_NE(end, std::string::npos);
  const CacheConfig c = CacheConfig::fromJsonString(doc.substr(begin + open.size(), end - begin - open.size()));
  EXPECT_GE(c.tiers.size(), 2u);
}

}  // namespace
}  // namespace tiercache
