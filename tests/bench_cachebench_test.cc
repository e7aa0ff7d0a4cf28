// Reading CacheLib cachebench configs: comments, the mapping of every
// supported key, one warning for keys not implemented, errors that name the
// key whose meaning cannot be honoured, and a run of a two-tier config.
#include "bench/cachebench.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "bench/cli.h"

namespace tiercache::bench {
namespace {

namespace fs = std::filesystem;

// A cachebench config with comments of both kinds; `cacheExtra` and
// `testExtra` are spliced into the two objects.
std::string document(const std::string& cacheExtra = "", const std::string& testExtra = "") {
  return R"(// a cachebench config
{
  "cache_config": {
    "cacheSizeMB": 64,   // trailing comment
    /* block
       comment */
    "memoryTiers": [{"ratio": 1, "memBindNodes": "0"}, {"ratio": 3, "file": "/dev/shm/some-pmem-file"}],
    "allocFactor": 1.5,
    "minAllocSize": 128,
    "maxAllocSize": 65536,
    "htBucketPower": 16,
    "htLockPower": 8,
    "backgroundEvictorIntervalMilSec": 20,
    "evictorThreads": 2,
    "backgroundEvictorStrategy": "keep-free",
    "nKeepFree": 33,
    "lowEvictionAcWatermark": 3.0,
    "highEvictionAcWatermark": 7.5,
    "maxEvictionBatch": 100,
    "minEvictionBatch": 4,
    "backgroundPromoterIntervalMilSec": 15,
    "promoterThreads": 1,
    "maxPromotionBatch": 30,
    "promotionAcWatermark": 4.0)" +
         cacheExtra + R"(
  },
  "test_config": {
    "numOps": 1000,
    "numThreads": 3,
    "numKeys": 5000,
    "keySizeRange": [8, 24],
    "valSizeRange": [100, 200, 1000],
    "valSizeRangeProbability": [0.25, 0.75],
    "getRatio": 6,
    "setRatio": 2,
    "delRatio": 1,
    "loneGetRatio": 1,
    "popularityBuckets": [10, 90],
    "popularityWeights": [80, 20],
    "enableLookaside": "true",
    "prepopulateCache": true)" +
         testExtra + R"(
  }
})";
}

void expectError(const std::string& doc, const std::string& path, const std::string& reason) {
  try {
    importCachebench(doc);
    ADD_FAILURE() << "no error; expected " << path;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), path) << e.what();
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    if (!path.empty()) EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
  }
}

TEST(CachebenchTest, MapsEveryKey) {
  std::string doc = document();
  ASSERT_TRUE(isCachebenchDocument(doc));
  EXPECT_FALSE(isCachebenchDocument(R"({"tiers": [], "workload": {}})"));
  CachebenchConfig cb = importCachebench(doc);
  const CacheConfig& c = cb.cache;
  EXPECT_TRUE(cb.ignored.empty());
  EXPECT_EQ(c.total_size, 64ull << 20);
  ASSERT_EQ(c.tiers.size(), 2u);
  EXPECT_EQ(c.tiers[0].name, "dram");
  EXPECT_EQ(c.tiers[0].kind, TierKind::kDram);
  EXPECT_EQ(c.tiers[0].nodes, std::vector<unsigned>{0});
  EXPECT_DOUBLE_EQ(c.tiers[0].ratio, 1);
  EXPECT_EQ(c.tiers[0].size, 0u);
  EXPECT_EQ(c.tiers[1].name, "pmem");
  EXPECT_EQ(c.tiers[1].kind, TierKind::kPmemFile);
  EXPECT_EQ(c.tiers[1].path, "/dev/shm");  // the file's directory
  EXPECT_DOUBLE_EQ(c.tiers[1].ratio, 3);
  EXPECT_FALSE(c.tiers[1].persistent);
  EXPECT_EQ(c.slab_size, 1u << 20);  // tiers below 256 MiB
  EXPECT_DOUBLE_EQ(c.allocation.growth_factor, 1.5);
  EXPECT_EQ(c.allocation.min_size, 128u);
  EXPECT_EQ(c.allocation.max_size, 65536u);
  EXPECT_EQ(c.index.bucket_power, 16u);
  EXPECT_EQ(c.index.lock_power, 8u);
  EXPECT_TRUE(c.background_eviction.enabled);
  EXPECT_EQ(c.background_eviction.interval_ms, 20u);
  EXPECT_EQ(c.background_eviction.threads, 2u);
  EXPECT_EQ(c.background_eviction.strategy, EvictorStrategyKind::kKeepFree);
  EXPECT_EQ(c.background_eviction.keep_free, 33u);
  EXPECT_DOUBLE_EQ(c.background_eviction.low_watermark, 3.0);
  EXPECT_DOUBLE_EQ(c.background_eviction.high_watermark, 7.5);
  EXPECT_EQ(c.background_eviction.max_batch, 100u);
  EXPECT_EQ(c.background_eviction.min_batch, 4u);
  EXPECT_TRUE(c.promotion.enabled);
  EXPECT_TRUE(c.promotion.background);
  EXPECT_EQ(c.promotion.interval_ms, 15u);
  EXPECT_EQ(c.promotion.max_batch, 30u);
  EXPECT_DOUBLE_EQ(c.promotion.upper_free_watermark, 4.0);
  ASSERT_EQ(c.pools.size(), 1u);

  const WorkloadConfig& w = cb.workload;
  EXPECT_EQ(w.ops_per_thread, 1000u);
  EXPECT_EQ(w.threads, 3u);
  EXPECT_EQ(w.keys, 5000u);
  ASSERT_EQ(w.key_size_buckets.size(), 1u);
  EXPECT_EQ(w.key_size.min, 8u);
  EXPECT_EQ(w.key_size.max, 24u);
  ASSERT_EQ(w.value_size_buckets.size(), 2u);
  EXPECT_EQ(w.value_size_buckets[0].range.min, 100u);
  EXPECT_EQ(w.value_size_buckets[0].range.max, 199u);  // cachebench's pieces are half-open
  EXPECT_DOUBLE_EQ(w.value_size_buckets[0].weight, 0.25);
  EXPECT_EQ(w.value_size_buckets[1].range.min, 200u);
  EXPECT_EQ(w.value_size_buckets[1].range.max, 999u);
  EXPECT_EQ(w.value_size.min, 100u);
  EXPECT_EQ(w.value_size.max, 999u);
  // Ratios are weights, as cachebench draws them: 6:2:1:1.
  EXPECT_DOUBLE_EQ(w.get_ratio, 0.6);
  EXPECT_DOUBLE_EQ(w.set_ratio, 0.2);
  EXPECT_DOUBLE_EQ(w.remove_ratio, 0.1);
  EXPECT_DOUBLE_EQ(w.lone_get_ratio, 0.1);
  EXPECT_EQ(w.popularity.kind, PopularityKind::kPiecewise);
  EXPECT_EQ(w.popularity.bucket_sizes, (std::vector<double>{10, 90}));
  EXPECT_EQ(w.popularity.bucket_weights, (std::vector<double>{80, 20}));
  EXPECT_TRUE(w.lookaside);
  EXPECT_TRUE(w.prepopulate);
}

TEST(CachebenchTest, DefaultsAndOtherForms) {
  CachebenchConfig cb = importCachebench(R"({"cache_config": {"cacheSizeMB": 512, "numPools": 2,
      "poolSizes": [0.3, 0.7], "allocSizes": [64, 128, 4096], "freeThreshold": 4},
      "test_config": {"numOps": 10, "numKeys": 100, "getRatio": 1, "keySizeRange": [4, 8], "valSizeRange": [10, 20]}})");
  const CacheConfig& c = cb.cache;
  ASSERT_EQ(c.tiers.size(), 1u);  // no memoryTiers: one DRAM tier of cacheSizeMB
  EXPECT_EQ(c.tiers[0].kind, TierKind::kDram);
  EXPECT_EQ(c.tiers[0].size, 512ull << 20);
  EXPECT_EQ(c.slab_size, 4u << 20);  // CacheLib's slab size once tiers are large
  ASSERT_EQ(c.pools.size(), 2u);
  EXPECT_DOUBLE_EQ(c.pools[0].share, 0.3);
  EXPECT_DOUBLE_EQ(c.pools[1].share, 0.7);
  EXPECT_EQ(c.allocation.sizes, (std::vector<uint32_t>{64, 128, 4096}));
  EXPECT_FALSE(c.background_eviction.enabled);  // no interval: no background evictor
  EXPECT_DOUBLE_EQ(c.background_eviction.low_watermark, 4);
  EXPECT_FALSE(c.promotion.enabled);
  const WorkloadConfig& w = cb.workload;
  EXPECT_EQ(w.threads, 1u);
  EXPECT_FALSE(w.lookaside);   // cachebench's defaults
  EXPECT_FALSE(w.prepopulate);
  EXPECT_EQ(w.popularity.kind, PopularityKind::kUniform);
  EXPECT_EQ(w.value_size.min, 10u);
  EXPECT_EQ(w.value_size.max, 20u);  // a one-piece range is inclusive
}

TEST(CachebenchTest, KeysNotImplementedAreListedInOneWarning) {
  CachebenchConfig cb = importCachebench(document(R"(, "lruUpdateOnWrite": true, "moveOnSlabRelease": false,
      "fancyNewKnob": 3)", R"(, "checkConsistency": true)"));
  EXPECT_EQ(cb.ignored, (std::vector<std::string>{"cache_config.fancyNewKnob (unknown key)",
                                                 "cache_config.lruUpdateOnWrite", "cache_config.moveOnSlabRelease",
                                                 "test_config.checkConsistency"}));
  EXPECT_EQ(ignoredKeysWarning(cb.ignored),
            "warning: cachebench keys not implemented, ignored: cache_config.fancyNewKnob (unknown key), "
            "cache_config.lruUpdateOnWrite, cache_config.moveOnSlabRelease, test_config.checkConsistency");
  EXPECT_EQ(ignoredKeysWarning({}), "");
}

TEST(CachebenchTest, UnhonourableKeysAreErrorsNamingThem) {
  expectError(document(R"(, "nvmCacheSizeMB": 1024)"), "cache_config.nvmCacheSizeMB", "no NVM (flash) cache");
  expectError(document(R"(, "allocator": "LRU2Q")"), "cache_config.allocator", "LRU allocator only");
  expectError(document(R"(, "backgroundEvictorStrategy": "bogus")"), "cache_config.backgroundEvictorStrategy",
              "free-threshold or keep-free");
  expectError(document(R"(, "promoterThreads": 4)"), "cache_config.promoterThreads", "one promoter thread");
  expectError(document(R"(, "numDuplicateElements": 100)"), "cache_config.numDuplicateElements", "exactly one tier");
  expectError(document(R"(, "enableCachePersistence": true)"), "cache_config.enableCachePersistence", "persistent");
  expectError(document("", R"(, "addChainedRatio": 0.1)"), "test_config.addChainedRatio", "no addChainedRatio");
  expectError(document("", R"(, "updateRatio": 0.1)"), "test_config.updateRatio", "no updateRatio");
  expectError(document("", R"(, "generator": "replay")"), "test_config.generator", "tiercache-bench replay");
  expectError(document("", R"(, "opPoolDistribution": [0.5, 0.5])"), "test_config.opPoolDistribution", "pools");
  expectError(document("", R"(, "ttlRatio": 0.5)"), "test_config.ttlRatio", "ttlRatio");
  // Zero values of refused features are fine (what cachebench writes by default).
  EXPECT_NO_THROW(importCachebench(document(R"(, "nvmCacheSizeMB": 0)", R"(, "addChainedRatio": 0)")));
}

TEST(CachebenchTest, BadValuesNameTheCachebenchKey) {
  expectError(document(R"(, "bogus": )"), "", "invalid JSON");
  expectError(R"({"cache_config": {"cacheSizeMB": 64}})", "test_config", "missing");
  expectError(R"({"cache_config": {}, "test_config": {}})", "cache_config.cacheSizeMB", "missing");
  expectError(document(R"(, "freeThreshold": 9)"), "cache_config.freeThreshold", "lowEvictionAcWatermark");
  std::string tiers = document();
  tiers.replace(tiers.find(R"({"ratio": 1, "memBindNodes": "0"})"), 33, R"({"ratio": 1, "memBindNodes": "x"})");
  expectError(tiers, "cache_config.memoryTiers[0].memBindNodes", "not a node list");
  // Our own validation, reported under the cachebench key it came from.
  expectError(document("", R"(, "numThreads": 0)"), "test_config.numThreads", "must be in [1,1024]");
  std::string keys = document();
  keys.replace(keys.find(R"("keySizeRange": [8, 24])"), 23, R"("keySizeRange": [2, 24])");
  expectError(keys, "test_config.keySizeRange", "shorter than the 4 characters");
  expectError(document(R"(, "allocFactor": 50)"), "cache_config.allocFactor", "out of range");
  std::string probs = document();
  probs.replace(probs.find(R"([0.25, 0.75])"), 12, R"([1])");
  expectError(probs, "test_config.valSizeRangeProbability", "one entry per piece");
  EXPECT_EQ(cachebenchKeyFor("tiers[1].size"), "cache_config.memoryTiers");
  EXPECT_EQ(cachebenchKeyFor("workload.value_size"), "test_config.valSizeRange");
  EXPECT_EQ(cachebenchKeyFor("eviction.policy"), "eviction.policy");
}

TEST(CachebenchTest, ShippedExamplesImport) {
  for (const char* name : {"hybrid.json", "tiered_bg_off.json", "tiered_bg_on.json"}) {
    std::string path = std::string(TIERCACHE_SOURCE_DIR) + "/configs/cachebench/" + name;
    CachebenchConfig cb = importCachebenchFile(path);
    EXPECT_EQ(cb.cache.tiers.size(), 2u) << name;
    EXPECT_EQ(cb.cache.tiers[1].kind, TierKind::kPmemFile) << name;
    EXPECT_EQ(cb.cache.tiers[1].path, "/dev/shm") << name;
  }
  EXPECT_FALSE(importCachebenchFile(std::string(TIERCACHE_SOURCE_DIR) + "/configs/cachebench/tiered_bg_off.json")
                   .cache.background_eviction.enabled);
  EXPECT_TRUE(importCachebenchFile(std::string(TIERCACHE_SOURCE_DIR) + "/configs/cachebench/tiered_bg_on.json")
                  .cache.background_eviction.enabled);
}

// A small two-tier cachebench config with comments, a file tier and
// background keys runs as it is and reports the optimum beside the measurement.
TEST(CachebenchTest, TwoTierConfigRunsWithTheOptimalHitRatio) {
  fs::path dir = fs::temp_directory_path() / ("tiercache_cachebench_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string path = (dir / "cb.json").string();
  std::ofstream(path) << R"(// two tiers
{
  "cache_config": {
    "cacheSizeMB": 48,
    "memoryTiers": [{"ratio": 1}, {"ratio": 2, "file": ")" + (dir / "pmem-file").string() + R"("}],
    "maxAllocSize": 65536,
    "backgroundEvictorIntervalMilSec": 5, "backgroundEvictorStrategy": "free-threshold",
    "backgroundPromoterIntervalMilSec": 5,
    "lruUpdateOnRead": true  // not implemented: warned about
  },
  "test_config": {"numOps": 20000, "numThreads": 1, "numKeys": 40000, "keySizeRange": [8, 16],
                  "valSizeRange": [500, 3000], "getRatio": 0.9, "setRatio": 0.1,
                  "enableLookaside": true, "prepopulateCache": true}
})";
  std::ostringstream out, err;
  ASSERT_EQ(runBenchCli({"--config", path}, out, err, false), kExitOk) << err.str();
  std::string report = out.str();
  EXPECT_NE(report.find("Items in dram : "), std::string::npos) << report;
  EXPECT_NE(report.find("Items in pmem : "), std::string::npos) << report;
  EXPECT_NE(report.find("Hit Ratio     : "), std::string::npos) << report;
  EXPECT_NE(report.find("  optimal     : "), std::string::npos) << report;
  EXPECT_NE(report.find("(Belady, upper bound over "), std::string::npos) << report;
  EXPECT_NE(report.find("  LRU (sim)   : "), std::string::npos) << report;
  EXPECT_NE(report.find("Value check failures: 0"), std::string::npos) << report;
  EXPECT_EQ(err.str(),
            "tiercache-bench: warning: cachebench keys not implemented, ignored: cache_config.lruUpdateOnRead (in " +
                path + ")\n");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tiercache::bench
