// Reading CacheLib cachebench configs: comments, the mapping of every
// supported key, one warning for keys not implemented, errors that name the
// key whose meaning cannot be honoured, and a run of a two-tier config.
#include "bench/cachebench.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>
#include <string>

#include <set>
#include <thread>

#include "allocator/cache.h"
#include "allocator/item.h"
#include "bench/cli.h"
#include "bench/key_space.h"
#include "bench/hit_ratio_sim.h"
#include "bench/kvcache_trace.h"
#include "bench/popularity.h"
#include "bench/request_stream.h"
#include "bench/runner.h"
#include "bench/stressors.h"

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

void expectImportError(const std::string& doc, const std::string& path, const std::string& reason) {
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
  // Without buckets cachebench draws keys from a normal distribution over
  // the key range, centred on its middle, standard deviation a quarter of it.
  EXPECT_EQ(w.popularity.kind, PopularityKind::kNormal);
  EXPECT_DOUBLE_EQ(w.popularity.stddev_fraction, 0.25);
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
  expectImportError(document(R"(, "allocator": "Bogus")"), "cache_config.allocator", "no tiercache eviction policy");
  expectImportError(document(R"(, "backgroundEvictorStrategy": "bogus")"), "cache_config.backgroundEvictorStrategy",
                    "free-threshold or keep-free");
  expectImportError(document(R"(, "promoterThreads": 4)"), "cache_config.promoterThreads", "one promoter thread");
  expectImportError(document(R"(, "numDuplicateElements": 100)"), "cache_config.numDuplicateElements",
                    "exactly one tier");
  expectImportError(document(R"(, "enableCachePersistence": true)"), "cache_config.enableCachePersistence",
                    "persistent");
  expectImportError(document("", R"(, "addChainedRatio": 0.1)"), "test_config.chainedItemLengthRange",
                    "missing (needed with addChainedRatio)");
  expectImportError(document("", R"(, "couldExistRatio": -0.1)"), "test_config.couldExistRatio",
                    "must not be negative");
  expectImportError(document("", R"(, "loneSetRatio": "many")"), "test_config.loneSetRatio", "must be a number");
  expectImportError(document("", R"(, "poolDistributions": {})"), "test_config.poolDistributions",
                    "non-empty array of objects");
  expectImportError(document("", R"(, "poolDistributions": [1])"), "test_config.poolDistributions[0]",
                    "must be an object");
  expectImportError(document("", R"(, "poolDistributions": [{"getRatio": 1}, {"getRatio": 1}])"),
                    "test_config.poolDistributions", "has 2 entries but keyPoolDistribution has 1 pools");
  expectImportError(document("", R"(, "poolDistributions": [{"getRatio": 1, "loneSetRatio": -1}])"),
                    "test_config.poolDistributions[0].loneSetRatio", "must not be negative");
  expectImportError(document("", R"(, "poolDistributions": [{"getRatio": 1, "popularityWeights": [1]}])"),
                    "test_config.poolDistributions[0].popularityWeights", "needs popularityBuckets");
  // Our validation's findings about an entry's keys name the entry too.
  expectImportError(
      document("",
               R"(, "poolDistributions": [{"getRatio": 1, "keySizeRange": [0, 24], "keySizeRangeProbability": [1]}])"),
      "test_config.poolDistributions[0].keySizeRange", "0 is out of range [1B, 255B]");
  expectImportError(document("", R"(, "generator": "replay")"), "test_config.traceFileName", "needs traceFileName");
  expectImportError(document("", R"(, "generator": "piecewise-replay")"), "test_config.generator",
                    "tiercache-bench replay");
  expectImportError(document("", R"(, "opPoolDistribution": [0.5, 0.5])"), "test_config.opPoolDistribution",
                    "keyPoolDistribution has 1");
  expectImportError(document("", R"(, "ttlRatio": 0.5)"), "test_config.ttlRatio", "needs ttlSecsRange");
  expectImportError(document("", R"(, "ttlSecsRangeProbability": [1])"), "test_config.ttlSecsRangeProbability",
                    "needs ttlSecsRange");
  // Zero values of refused features are fine (what cachebench writes by default).
  EXPECT_NO_THROW(importCachebench(document(R"(, "nvmCacheSizeMB": 0)", R"(, "addChainedRatio": 0)")));
}

TEST(CachebenchTest, NvmCacheMapsOntoTheFlashStore) {
  const fs::path dir = fs::temp_directory_path() / ("cb-flash-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  CachebenchConfig cb = importCachebench(
      document(R"(, "nvmCacheSizeMB": 256, "nvmCachePaths": [")" + dir.string() + R"(", "/nonexistent/b"],
      "navyRegionSizeMB": 8, "navyAdmissionWriteRateMB": 100, "navyQDepth": 64,
      "navyHitsReinsertionThreshold": 2, "navySegmentedFifoSegmentRatio": [1],
      "navyDataChecksum": true, "truncateItemToOriginalAllocSizeInNvm": true,
      "navyBigHashSizePct": 50, "navyEncryption": true)"));
  const FlashStoreConfig& fl = cb.cache.flash;
  EXPECT_EQ(fs::path(fl.path).parent_path(), dir);
  EXPECT_EQ(cb.flash_scratch, fl.path);
  EXPECT_EQ(fl.region_size, 8u << 20);
  EXPECT_EQ(fl.size, 4096u + 31 * (8u << 20));  // 256 MiB less the superblock, in whole regions
  EXPECT_DOUBLE_EQ(fl.admit_write_mb_per_sec, 104.8576);
  EXPECT_EQ(fl.queue_depth, 64u);
  EXPECT_TRUE(fl.reinsert_hits);
  EXPECT_EQ(fl.region_eviction, RegionEviction::kFifo);
  EXPECT_TRUE(fl.discard_contents);
  EXPECT_EQ(fl.expected_item_size, 40u + 15 + 550);  // header + mean key + mean value
  const std::string warning = ignoredKeysWarning(cb.ignored);
  EXPECT_NE(warning.find("cache_config.navyHitsReinsertionThreshold (2 taken as 1"), std::string::npos) << warning;
  EXPECT_NE(warning.find("cache_config.nvmCachePaths[1] (/nonexistent/b: the flash store has one file"),
            std::string::npos)
      << warning;
  EXPECT_NE(warning.find("cache_config.navyBigHashSizePct (one region log for all sizes, no BigHash)"),
            std::string::npos)
      << warning;
  EXPECT_NE(warning.find("cache_config.navyEncryption (no encryption hook"), std::string::npos) << warning;
  {
    // The scratch files are every file the run leaves: removing them (as
    // the CLI does at exit) leaves the directory empty (the write buffer
    // once stayed behind, 16 MiB a run).
    Cache cache(cb.cache);
    ASSERT_TRUE(cache.set("k", std::string(1000, 'v')));
  }
  std::set<std::string> left;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) left.insert(e.path().string());
  const std::vector<std::string> scratch = cb.scratchFiles();
  EXPECT_EQ(left, std::set<std::string>(scratch.begin(), scratch.end()));
  fs::remove_all(dir);

  // Without a path, or with one that is a device or in no directory: /var/tmp, saying why.
  CachebenchConfig plain = importCachebench(document(R"(, "nvmCacheSizeMB": 64)"));
  EXPECT_EQ(fs::path(plain.cache.flash.path).parent_path(), "/var/tmp");
  EXPECT_EQ(plain.cache.flash.region_eviction, RegionEviction::kLru);
  EXPECT_FALSE(plain.cache.flash.reinsert_hits);
  CachebenchConfig dev = importCachebench(document(R"(, "nvmCacheSizeMB": 64, "nvmCachePaths": ["/dev/null"])"));
  EXPECT_EQ(fs::path(dev.cache.flash.path).parent_path(), "/var/tmp");
  EXPECT_NE(ignoredKeysWarning(dev.ignored).find("/dev/null is not a regular file"), std::string::npos);
  CachebenchConfig gone = importCachebench(document(R"(, "nvmCacheSizeMB": 64, "nvmCachePaths": ["/no/such/dir/f"])"));
  EXPECT_EQ(fs::path(gone.cache.flash.path).parent_path(), "/var/tmp");
  EXPECT_NE(ignoredKeysWarning(gone.ignored).find("the directory of /no/such/dir/f does not exist"), std::string::npos);
  // A device that is not there (ssd_perf's /dev/md0) gets no file in /dev.
  CachebenchConfig md =
      importCachebench(document(R"(, "nvmCacheSizeMB": 64, "nvmCachePaths": ["/dev/tc-no-such-md"])"));
  EXPECT_EQ(fs::path(md.cache.flash.path).parent_path(), "/var/tmp");
  EXPECT_NE(ignoredKeysWarning(md.ignored).find("/dev/tc-no-such-md names a device that is not there"),
            std::string::npos);
  // More than the disk holds: capped, and the warning says so.
  CachebenchConfig huge = importCachebench(document(R"(, "nvmCacheSizeMB": 4000000000)"));
  EXPECT_LT(huge.cache.flash.size, 4000000000ull << 20);
  EXPECT_NE(ignoredKeysWarning(huge.ignored).find("cache_config.nvmCacheSizeMB (4000000000 MiB capped at"),
            std::string::npos);
  // Zero: no flash, whatever the navy keys say.
  EXPECT_FALSE(importCachebench(document(R"(, "nvmCacheSizeMB": 0, "navyRegionSizeMB": 8)")).cache.flash.enabled());
}

TEST(CachebenchTest, BadNvmValuesNameTheKey) {
  expectImportError(document(R"(, "nvmCacheSizeMB": -1)"), "cache_config.nvmCacheSizeMB", "whole number");
  expectImportError(document(R"(, "nvmCacheSizeMB": 1)"), "cache_config.nvmCacheSizeMB", "the store needs 2");
  expectImportError(document(R"(, "nvmCacheSizeMB": 64, "nvmCachePaths": [3])"), "cache_config.nvmCachePaths[0]",
                    "must be a string");
  expectImportError(document(R"(, "nvmCacheSizeMB": 64, "nvmCachePaths": {})"), "cache_config.nvmCachePaths",
                    "array of paths");
  expectImportError(document(R"(, "navyRegionSizeMB": 0)"), "cache_config.navyRegionSizeMB", "[1, 1024]");
  expectImportError(document(R"(, "navyQDepth": 5000)"), "cache_config.navyQDepth", "at most 1024");
  expectImportError(document(R"(, "navyAdmissionWriteRateMB": "fast")"), "cache_config.navyAdmissionWriteRateMB",
                    "must be a number");
  expectImportError(document(R"(, "navySegmentedFifoSegmentRatio": 1)"), "cache_config.navySegmentedFifoSegmentRatio",
                    "array of numbers");
  expectImportError(document(R"(, "navyDataChecksum": "maybe")"), "cache_config.navyDataChecksum", "true or false");
}

TEST(CachebenchTest, BadValuesNameTheCachebenchKey) {
  expectImportError(document(R"(, "bogus": )"), "", "invalid JSON");
  expectImportError(R"({"cache_config": {"cacheSizeMB": 64}})", "test_config", "missing");
  expectImportError(R"({"cache_config": {}, "test_config": {}})", "cache_config.cacheSizeMB", "missing");
  expectImportError(document(R"(, "freeThreshold": 9)"), "cache_config.freeThreshold", "lowEvictionAcWatermark");
  std::string tiers = document();
  tiers.replace(tiers.find(R"({"ratio": 1, "memBindNodes": "0"})"), 33, R"({"ratio": 1, "memBindNodes": "x"})");
  expectImportError(tiers, "cache_config.memoryTiers[0].memBindNodes", "not a node list");
  // Our own validation, reported under the cachebench key it came from.
  expectImportError(document("", R"(, "numThreads": 0)"), "test_config.numThreads", "0 is out of range [1, 1024]");
  std::string keys = document();
  keys.replace(keys.find(R"("keySizeRange": [8, 24])"), 23, R"("keySizeRange": [0, 24])");
  expectImportError(keys, "test_config.keySizeRange", "0 is out of range [1B, 255B]");
  expectImportError(document(R"(, "allocFactor": 50)"), "cache_config.allocFactor", "out of range (1, 10]");
  expectImportError(document(R"(, "allocFactor": 10.5)"), "cache_config.allocFactor", "out of range (1, 10]");
  std::string probs = document();
  probs.replace(probs.find(R"([0.25, 0.75])"), 12, R"([1])");
  expectImportError(probs, "test_config.valSizeRangeProbability",
                    "has 1 entries; cachebench needs one per piece of valSizeRange (2) or one per size (3)");
  EXPECT_EQ(cachebenchKeyFor("tiers[1].size"), "cache_config.memoryTiers");
  EXPECT_EQ(cachebenchKeyFor("workload.value_size"), "test_config.valSizeRange");
  EXPECT_EQ(cachebenchKeyFor("eviction.policy"), "eviction.policy");
}

// CacheLib bounds allocFactor only below (> 1); its navy configs ask for 10.
TEST(CachebenchTest, AllocFactorUpTo10) {
  std::string doc = document();
  doc.replace(doc.find(R"("allocFactor": 1.5)"), 18, R"("allocFactor": 10)");
  CachebenchConfig cb = importCachebench(doc);
  EXPECT_DOUBLE_EQ(cb.cache.allocation.growth_factor, 10.0);
  const std::vector<uint32_t> sizes = makeClassSizes(128, 65536, 10.0, {});
  EXPECT_EQ(sizes, (std::vector<uint32_t>{128, 1280, 12800, 65536}));
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

// A directory of its own for files a test writes, removed at the end.
class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(fs::temp_directory_path() / ("tiercache_cb_" + tag + "_" + std::to_string(getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name, const std::string& text) const {
    std::string p = (path_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

// A small DRAM-only cachebench config; extra keys spliced into each object.
constexpr const char* kKeySizes = R"("keySizeRange": [8, 16], "keySizeRangeProbability": [1])";
constexpr const char* kValSizes = R"("valSizeRange": [100, 200], "valSizeRangeProbability": [1])";
std::string smallConfig(const std::string& cacheExtra, const std::string& testExtra,
                        const std::string& keySizes = kKeySizes, const std::string& valSizes = kValSizes) {
  return R"({"cache_config": {"cacheSizeMB": 16, "maxAllocSize": 65536)" + cacheExtra +
         R"(}, "test_config": {"numOps": 2000, "numThreads": 1, "numKeys": 3000, )" + keySizes + ", " + valSizes +
         R"(, "getRatio": 0.7, "setRatio": 0.3)" + testExtra + "}}";
}

// keySizeRange shorter than the hex width of the key index: cachebench
// draws keys of the sampled length and keeps one copy of a repeated key.
TEST(CachebenchKeysTest, ShortKeysMayBeSharedAndKeepOneValueSize) {
  WorkloadConfig w = importCachebench(smallConfig("", "")).workload;
  w.keys = 5000;  // width 4
  w.key_size_buckets = {SizeBucket{SizeRange{1, 3}, 1}, SizeBucket{SizeRange{6, 8}, 1}};
  w.updateEnvelopes();
  w.value_size_buckets = {SizeBucket{SizeRange{10, 5000}, 1}};
  w.updateEnvelopes();
  ASSERT_NO_THROW(w.validate());
  KeySpace ks(w);
  std::map<std::string, size_t> sizeOf;
  std::set<std::string> distinct;
  int shortKeys = 0;
  for (uint64_t i = 0; i < w.keys; ++i) {
    std::string k = ks.key(i);
    ASSERT_EQ(k.size(), ks.keyLength(i));
    if (k.size() < 4) {
      ++shortKeys;
      EXPECT_TRUE(ks.isShortKey(i));
      for (char c : k) ASSERT_TRUE(c >= 'a' && c <= 'z') << k;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "%04llx", static_cast<unsigned long long>(i));
      EXPECT_EQ(k.substr(0, 4), hex);  // a long key is its index: unique
    }
    auto [it, fresh] = sizeOf.emplace(k, ks.valueSize(i));
    // Indices that share a key share its value size, so a value any of them
    // wrote verifies exactly for all of them.
    EXPECT_EQ(it->second, ks.valueSize(i)) << "key " << k << " index " << i;
    distinct.insert(k);
    std::string lone = ks.loneKey(i);
    EXPECT_EQ(lone.size(), k.size());
    EXPECT_NE(lone, k);
  }
  EXPECT_GT(shortKeys, 2000);
  EXPECT_LT(distinct.size(), w.keys);  // lengths 1-3 hold at most 26+676+17576 keys: some are shared
  EXPECT_EQ(ks.distinctKeys(), distinct.size());
  // No real key is ever a lone key.
  for (uint64_t i = 0; i < w.keys; ++i) EXPECT_EQ(distinct.count(ks.loneKey(i)), 0u);
}

TEST(CachebenchKeysTest, ShortKeyWorkloadRunsWithExactVerificationAndCountsSharing) {
  CachebenchConfig cb = importCachebench(smallConfig("", R"(, "delRatio": 0.1, "numThreads": 2,
      "enableLookaside": true)"));
  WorkloadConfig w = cb.workload;
  w.key_size_buckets = {SizeBucket{SizeRange{1, 2}, 1}, SizeBucket{SizeRange{3, 3}, 1}};
  w.updateEnvelopes();
  w.progress_interval_ms = 0;
  Cache cache(cb.cache);
  WorkloadResult r = runWorkload(cache, w);
  EXPECT_EQ(r.ops.value_mismatches, 0u) << r.first_mismatch;
  EXPECT_GT(r.ops.get_hits, 0u);  // shared keys are hit by the indices that share them
  KeySpace ks(w);
  EXPECT_EQ(r.distinct_keys, ks.distinctKeys());
  EXPECT_LT(r.distinct_keys, w.keys);
  EXPECT_GT(r.distinct_keys, 26u);
  // Long keys only: nothing to count.
  WorkloadConfig longKeys = cb.workload;
  longKeys.progress_interval_ms = 0;
  longKeys.ops_per_thread = 10;
  Cache cache2(cb.cache);
  EXPECT_EQ(runWorkload(cache2, longKeys).distinct_keys, 0u);
}

// The hit-ratio limits see one object per key, not per index.
TEST(CachebenchKeysTest, SimulationsTreatASharedKeyAsOneObject) {
  WorkloadConfig w = importCachebench(smallConfig("", R"(, "prepopulateCache": true)",
                                                  R"("keySizeRange": [1, 4], "keySizeRangeProbability": [1])"))
                         .workload;
  w.ops_per_thread = 50;
  KeySpace ks(w);
  std::vector<SimRequest> reqs = workloadRequests(w, 44);
  ASSERT_EQ(reqs.size(), w.keys + 50);
  std::map<std::string, uint32_t> idOfKey;
  std::set<uint32_t> ids;
  for (uint64_t i = 0; i < w.keys; ++i) {
    uint64_t index = RequestStream::prepopulateIndex(w.keys, 1, 0, i);
    auto [it, fresh] = idOfKey.emplace(ks.key(index), reqs[i].key);
    EXPECT_EQ(it->second, reqs[i].key) << "index " << index << " key " << ks.key(index);
    if (fresh) EXPECT_TRUE(ids.insert(reqs[i].key).second) << "two keys share id " << reqs[i].key;
    EXPECT_LT(reqs[i].key, w.keys);
  }
  EXPECT_EQ(idOfKey.size(), ks.distinctKeys());
}

TEST(CachebenchKeysTest, ReportSaysHowManyKeysAreShared) {
  TempDir dir("short");
  std::string path =
      dir.file("short.json", smallConfig("", "", R"("keySizeRange": [1, 3], "keySizeRangeProbability": [1])"));
  std::ostringstream out, err;
  ASSERT_EQ(runBenchCli({"--config", path, "--max-ops", "300", "--no-limits"}, out, err, false), kExitOk) << err.str();
  KeySpace ks(importCachebenchFile(path).workload);
  uint64_t distinct = ks.distinctKeys();
  ASSERT_LT(distinct, 703u);  // lengths 1 and 2: at most 26 + 676 keys
  EXPECT_NE(out.str().find("Keys          : " + std::to_string(distinct) + " distinct of 3,000 ("), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find(" share a short key"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("300 ops in"), std::string::npos) << out.str();  // --max-ops
  EXPECT_NE(out.str().find("Value check failures: 0"), std::string::npos) << out.str();
}

TEST(CachebenchPoolsTest, KeysAndOperationsSpreadOverPools) {
  CachebenchConfig cb = importCachebench(smallConfig(R"(, "numPools": 2, "poolSizes": [0.5, 0.5])",
                                                     R"(, "keyPoolDistribution": [0.4, 0.6],
                                                        "opPoolDistribution": [0.5, 0.5])"));
  const WorkloadConfig& w = cb.workload;
  EXPECT_EQ(w.key_pools, (std::vector<double>{0.4, 0.6}));
  EXPECT_EQ(w.op_pools, (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(w.poolKeyStarts(), (std::vector<uint64_t>{0, 1200, 3000}));  // numKeys * 0.4 = 1200
  KeySpace ks(w);
  EXPECT_EQ(ks.poolOf(0), 0u);
  EXPECT_EQ(ks.poolOf(1199), 0u);
  EXPECT_EQ(ks.poolOf(1200), 1u);
  EXPECT_EQ(ks.poolOf(2999), 1u);
  // Half the operations in each pool, each inside its pool's key range.
  std::unique_ptr<KeySampler> sampler = KeySampler::forWorkload(w);
  Rng rng(7);
  int inPool0 = 0;
  for (int i = 0; i < 20000; ++i) {
    uint64_t k = sampler->sample(rng);
    ASSERT_LT(k, 3000u);
    inPool0 += k < 1200;
  }
  EXPECT_NEAR(inPool0, 10000, 400);
  double total = 0;
  for (uint64_t k = 0; k < 3000; ++k) total += sampler->probability(k);
  EXPECT_NEAR(total, 1.0, 1e-6);
  // Items land in both pools of the cache.
  WorkloadConfig run = w;
  run.progress_interval_ms = 0;
  run.prepopulate = true;
  Cache cache(cb.cache);
  WorkloadResult r = runWorkload(cache, run);
  EXPECT_EQ(r.ops.value_mismatches, 0u) << r.first_mismatch;
  ASSERT_EQ(r.after.pools.size(), 2u);
  EXPECT_GT(r.after.pools[0].slabs, 0u);
  EXPECT_GT(r.after.pools[1].slabs, 0u);
}

TEST(CachebenchPoolsTest, OperationsDefaultToPoolZeroAsInCachebench) {
  CachebenchConfig cb = importCachebench(smallConfig(R"(, "numPools": 3)", R"(, "keyPoolDistribution": [1, 1, 2])"));
  EXPECT_EQ(cb.workload.op_pools, (std::vector<double>{1, 0, 0}));
  std::unique_ptr<KeySampler> sampler = KeySampler::forWorkload(cb.workload);
  Rng rng(3);
  for (int i = 0; i < 2000; ++i) ASSERT_LT(sampler->sample(rng), 750u);  // pool 0 = keys [0, 750)
  expectImportError(smallConfig("", R"(, "keyPoolDistribution": [1, 1])"), "test_config.keyPoolDistribution",
                    "over 2 pools but cache_config.numPools is 1");
  expectImportError(
      smallConfig(R"(, "numPools": 2)", R"(, "keyPoolDistribution": [1, 1], "opPoolDistribution": [1, 1, 1])"),
      "test_config.opPoolDistribution", "has 3 pools but keyPoolDistribution has 2");
  expectImportError(smallConfig(R"(, "numPools": 2)", R"(, "keyPoolDistribution": [1, 1], "opPoolDistribution": [0])"),
                    "test_config.opPoolDistribution", "must not all be 0 [as workload.op_pools]");
  expectImportError(
      smallConfig(R"(, "numPools": 2)", R"(, "keyPoolDistribution": [1, 0], "opPoolDistribution": [0, 1])"),
      "test_config.keyPoolDistribution", "gives pool 1 no keys");
  expectImportError(smallConfig("", R"(, "poolDistributions": [{"getRatio": 1}, {"getRatio": 1}])"),
                    "test_config.poolDistributions", "has 2 entries but keyPoolDistribution has 1");
  expectImportError(smallConfig("", R"(, "poolDistributions": [{}])"), "test_config.poolDistributions[0]", "are all 0");
}

TEST(CachebenchSizesTest, ValueSizesFollowCachebenchsCountRule) {
  // As many probabilities as sizes: each size exactly (discrete).
  WorkloadConfig w = importCachebench(smallConfig("", "", kKeySizes,
      R"("valSizeRange": [100, 250, 4000], "valSizeRangeProbability": [0.2, 0.3, 0.5])")).workload;
  ASSERT_EQ(w.value_size_buckets.size(), 3u);
  KeySpace ks(w);
  std::map<size_t, int> seen;
  for (uint64_t i = 0; i < 3000; ++i) seen[ks.valueSize(i)]++;
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_NEAR(seen[100], 600, 90);
  EXPECT_NEAR(seen[250], 900, 100);
  EXPECT_NEAR(seen[4000], 1500, 110);
  // One fewer: piecewise, half-open pieces.
  WorkloadConfig p = importCachebench(smallConfig("", "", kKeySizes,
      R"("valSizeRange": [100, 250, 4000], "valSizeRangeProbability": [0.2, 0.8])")).workload;
  ASSERT_EQ(p.value_size_buckets.size(), 2u);
  EXPECT_EQ(p.value_size_buckets[0].range.max, 249u);
  EXPECT_EQ(p.value_size_buckets[1].range.max, 3999u);
  // [a, b] with [1]: cachebench's one piece [a, b), so b itself is never drawn.
  WorkloadConfig one = importCachebench(smallConfig("", "")).workload;
  EXPECT_EQ(one.key_size.max, 15u);
  EXPECT_EQ(one.value_size.max, 199u);
  // keySizeRange has no discrete form in cachebench.
  expectImportError(smallConfig("", "", R"("keySizeRange": [8, 16], "keySizeRangeProbability": [0.5, 0.5])"),
                    "test_config.keySizeRangeProbability", "one per piece of keySizeRange (1)");
}

TEST(CachebenchSizesTest, LargeValuesGetCachelibsDefaultLargestClass) {
  CachebenchConfig cb = importCachebench(R"({"cache_config": {"cacheSizeMB": 64},
      "test_config": {"numOps": 10, "numKeys": 100, "getRatio": 1, "keySizeRange": [8, 16],
      "keySizeRangeProbability": [1], "valSizeRange": [1000, 3000000], "valSizeRangeProbability": [1]}})");
  EXPECT_EQ(cb.cache.slab_size, 4u << 20);
  EXPECT_EQ(cb.cache.allocation.max_size, 4u << 20);
  Cache cache(cb.cache);
  EXPECT_GE(cache.maxValueSize(16), 2999999u);
  // Small values keep the small-cache default.
  EXPECT_EQ(importCachebench(R"({"cache_config": {"cacheSizeMB": 64}, "test_config": {"numKeys": 100,
      "getRatio": 1, "valSizeRange": [10, 20]}})").cache.allocation.max_size, 1u << 20);
}

TEST(CachebenchSizesTest, DistributionSideFilesAreReadFromTheConfigDirectory) {
  TempDir dir("side");
  dir.file("pop.json", R"({"popularityBuckets": [1, 3], "popularityWeights": [9, 1], "oneHits": 0})");
  dir.file("sizes.json", R"({"valSizeRange": [64, 128, 512], "valSizeRangeProbability": [0.75, 0.25]})");
  std::string path = dir.file("cb.json", smallConfig("", R"(, "popDistFile": "pop.json", "valSizeDistFile": "sizes.json")"));
  WorkloadConfig w = importCachebenchFile(path).workload;
  EXPECT_EQ(w.popularity.kind, PopularityKind::kPiecewise);
  EXPECT_EQ(w.popularity.bucket_sizes, (std::vector<double>{1, 3}));
  EXPECT_EQ(w.popularity.bucket_weights, (std::vector<double>{9, 1}));
  ASSERT_EQ(w.value_size_buckets.size(), 2u);
  EXPECT_EQ(w.value_size_buckets[1].range.max, 511u);
  // configPath moves the directory; a missing side file is named.
  std::string moved = dir.file("moved.json", smallConfig("", R"(, "configPath": "/nonexistent-dir", "popDistFile": "pop.json")"));
  try {
    importCachebenchFile(moved);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "test_config.popDistFile");
    EXPECT_NE(std::string(e.what()).find("cannot read /nonexistent-dir/pop.json"), std::string::npos) << e.what();
  }
}

TEST(CachebenchAllocatorTest, AllocatorsMapThroughOneTable) {
  EXPECT_EQ(policyForAllocator("LRU"), "lru");
  EXPECT_EQ(policyForAllocator("LRU5B"), "lru");
  EXPECT_EQ(policyForAllocator("LRU2Q"), "s3fifo");
  EXPECT_EQ(policyForAllocator("LRU5B2Q"), "s3fifo");
  EXPECT_EQ(policyForAllocator("TinyLFU"), "wtinylfu");
  EXPECT_EQ(policyForAllocator("TinyLFU5B"), "wtinylfu");
  EXPECT_EQ(policyForAllocator("MRU"), "");
  EXPECT_EQ(importCachebench(smallConfig(R"(, "allocator": "LRU5B")", "")).cache.eviction.policy,
            EvictionPolicyKind::kLru);
  // The mapped name goes through the option table: a build without the
  // policy refuses it by the cachebench key, naming the policy.
  for (const char* a : {"LRU2Q", "TinyLFU"}) {
    try {
      CachebenchConfig cb = importCachebench(smallConfig(std::string(R"(, "allocator": ")") + a + "\"", ""));
      EXPECT_EQ(cb.allocator, a);  // a build with the policy: accepted
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), "cache_config.allocator") << e.what();
      EXPECT_NE(std::string(e.what()).find(std::string("maps to policy \"") + policyForAllocator(a) + "\""),
                std::string::npos)
          << e.what();
    }
  }
  // cache_component's RAM component is a DRAM cache; the flash one is refused.
  EXPECT_EQ(importCachebench(smallConfig(R"(, "allocator": "RAM")", R"(, "name": "cache_component")")).allocator, "LRU");
  expectImportError(smallConfig(R"(, "allocator": "flash")", ""), "cache_config.allocator",
                    "flash cache component on its own");
}

TEST(CachebenchStressorsTest, UnmappedStressorsAreRefusedByName) {
  expectImportError(R"({"cache_config": {"cacheSizeMB": 64}, "test_config": {"name": "object_cache", "numOps": 10}})",
                    "test_config.name", "\"object_cache\" selects a special cachebench stressor");
  expectImportError(R"({"cache_config": {"cacheSizeMB": 64}, "test_config": {"name": "async", "numOps": 10}})",
                    "test_config.name", "asynchronous");
  // The mapped ones are selected, with numThreads when given.
  CachebenchConfig m = importCachebench(
      R"({"cache_config": {"cacheSizeMB": 64}, "test_config": {"name": "cachelib_map", "numOps": 10, "numThreads": 3}})");
  EXPECT_EQ(m.stressor, "cachelib_map");
  EXPECT_EQ(m.stressor_threads, 3u);
  EXPECT_EQ(importCachebench(R"({"cache_config": {"cacheSizeMB": 64}, "test_config": {"name": "high_refcount"}})")
                .stressor_threads,
            0u);
  // Any other name is a label.
  EXPECT_NO_THROW(importCachebench(smallConfig("", R"(, "name": "my test")")));
  // Without a name and without ratios there is nothing to run.
  expectImportError(R"({"cache_config": {"cacheSizeMB": 64}, "test_config": {"numOps": 10}})", "test_config", "all 0");
}

TEST(CachebenchWorkloadTest, OpDelayOnlySetIfMissAndSamplingMap) {
  WorkloadConfig w = importCachebench(smallConfig("", R"(, "opDelayBatch": 10, "opDelayNs": 2000000,
      "onlySetIfMiss": true, "touchValue": true, "samplingIntervalMs": 250)")).workload;
  EXPECT_EQ(w.op_delay_batch, 10u);
  EXPECT_EQ(w.op_delay_ns, 2000000u);
  EXPECT_TRUE(w.only_set_if_miss);
  EXPECT_EQ(w.progress_interval_ms, 250u);
  expectImportError(smallConfig("", R"(, "opRatePerSec": 100)"), "test_config.opRatePerSec", "operation rate");
  WorkloadConfig t = importCachebench(smallConfig("", R"(, "ttlSecsRange": [10, 20], "ttlSecsRangeProbability": [1])"))
                         .workload;
  ASSERT_EQ(t.ttl_secs_buckets.size(), 1u);
  EXPECT_EQ(t.ttl_secs_buckets[0].range.min, 10u);
  EXPECT_EQ(t.ttl_secs_buckets[0].range.max, 19u);
  EXPECT_EQ(t.ttl_ratio, 1.0);
  // The JSON form round-trips.
  WorkloadConfig back = WorkloadConfig::fromJsonString("{\"workload\": " + w.toJson() + "}");
  EXPECT_EQ(back.op_delay_batch, 10u);
  EXPECT_EQ(back.op_delay_ns, 2000000u);
  EXPECT_TRUE(back.only_set_if_miss);
}

TEST(CachebenchWorkloadTest, OpDelayPausesEveryBatch) {
  CachebenchConfig cb = importCachebench(smallConfig("", R"(, "opDelayBatch": 10, "opDelayNs": 3000000)"));
  WorkloadConfig w = cb.workload;
  w.ops_per_thread = 100;  // 10 pauses of 3 ms
  w.progress_interval_ms = 0;
  Cache cache(cb.cache);
  WorkloadResult r = runWorkload(cache, w);
  EXPECT_EQ(r.ops.ops(), 100u);
  EXPECT_GE(r.elapsed_seconds, 0.030);  // a sleep lasts at least what it asks
}

TEST(CachebenchWorkloadTest, OnlySetIfMissSkipsSetsOfCachedKeys) {
  CachebenchConfig cb = importCachebench(smallConfig("", ""));
  WorkloadConfig w = cb.workload;
  w.keys = 20;
  w.get_ratio = 0;
  w.set_ratio = 1;
  w.ops_per_thread = 500;
  w.progress_interval_ms = 0;
  w.popularity.kind = PopularityKind::kUniform;
  {
    Cache cache(cb.cache);
    EXPECT_EQ(runWorkload(cache, w).ops.sets, 500u);
  }
  w.only_set_if_miss = true;
  Cache cache(cb.cache);
  WorkloadResult r = runWorkload(cache, w);
  EXPECT_LE(r.ops.sets, 20u);  // each key is set once, then present
  EXPECT_GT(r.ops.sets, 0u);
  EXPECT_EQ(cache.stats().items, r.ops.sets);
}

// A kvcache trace as cachebench's KVReplayGenerator reads it.
constexpr const char* kKvTrace =
    "op_time,key,key_size,op,op_count,size,cache_hits,ttl\n"
    "1,k1,8,SET,1,100,0,0\n"
    "2,k1,8,GET,2,100,1,0\n"
    "3,k2,1,GET_LEASE,1,50,0,0\n"
    "4,k2,1,SET_LEASE,0,50,0,0\n"
    "5,k1,8,DELETE,1,0,0,0\n"
    "6,k3,4,UPDATE,1,10,0,0\n";

TEST(KvcacheTraceTest, ReadsRowsAsCachebenchDoes) {
  Trace t;
  KvcacheReadStats stats;
  appendKvcacheCsv(kKvTrace, "t.csv", t, 0, stats);
  EXPECT_EQ(stats.rows, 6u);
  EXPECT_EQ(stats.skipped_ops, 1u);  // UPDATE
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0].key, "k1000000");  // padded with '0' to key_size
  EXPECT_EQ(t[0].op, RequestOp::kSet);
  EXPECT_EQ(t[0].size, 100u);
  EXPECT_EQ(t[1].op, RequestOp::kGet);  // op_count 2: issued twice
  EXPECT_EQ(t[2].op, RequestOp::kGet);
  EXPECT_EQ(t[3].key, "k2");            // key_size shorter than the key: kept
  EXPECT_EQ(t[3].op, RequestOp::kGet);  // GET_LEASE
  EXPECT_EQ(t[4].op, RequestOp::kSet);  // SET_LEASE, op_count 0 counts once
  EXPECT_EQ(t[5].op, RequestOp::kDel);
  // Columns in another order, and a cap on the records.
  Trace capped;
  appendKvcacheCsv("size,op,key\n10,GET,a\n20,SET,b\n30,SET,c\n", "u.csv", capped, 2, stats);
  ASSERT_EQ(capped.size(), 2u);
  EXPECT_EQ(capped[1].key, "b");
  EXPECT_EQ(capped[1].size, 20u);
  // Errors name the file and line.
  try {
    appendKvcacheCsv("key,size\nx,1\n", "bad.csv", capped, 0, stats);
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:1: the header must name the columns key, op and size"),
              std::string::npos)
        << e.what();
  }
  try {
    appendKvcacheCsv("key,op,size\nx,GET,many\n", "bad.csv", capped, 0, stats);
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:2: size \"many\""), std::string::npos) << e.what();
  }
}

// A CacheLib binary request dump, built field by field.
std::string binaryDump(const std::vector<std::tuple<std::string, uint8_t, uint16_t, uint32_t>>& reqs) {
  std::string out(8 + 24 * reqs.size(), '\0');
  uint64_t n = reqs.size();
  std::memcpy(out.data(), &n, 8);
  for (size_t i = 0; i < reqs.size(); ++i) {
    const auto& [key, op, repeats, size] = reqs[i];
    size_t at = 8 + 24 * i;
    uint64_t offset = out.size() - at;  // the key is appended next
    out[at] = char(key.size());
    out[at + 1] = char(op);
    std::memcpy(out.data() + at + 2, &repeats, 2);
    std::memcpy(out.data() + at + 8, &offset, 8);
    std::memcpy(out.data() + at + 16, &size, 4);
    out += key;
  }
  return out;
}

TEST(KvcacheTraceTest, ReadsCachelibBinaryDumps) {
  std::string bin = binaryDump({{"alpha", 0, 1, 300}, {"alpha", 1, 3, 300}, {"beta", 2, 1, 0}, {"gamma", 6, 1, 10},
                                {"delta", 4, 0, 0}});
  Trace t;
  KvcacheReadStats stats;
  appendCachelibBinary(bin, "d.bin", t, 0, stats);
  EXPECT_EQ(stats.skipped_ops, 1u);  // op 6, an update
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0].key, "alpha");
  EXPECT_EQ(t[0].op, RequestOp::kSet);
  EXPECT_EQ(t[0].size, 300u);
  EXPECT_EQ(t[3].op, RequestOp::kGet);  // repeats 3
  EXPECT_EQ(t[4].op, RequestOp::kDel);
  EXPECT_EQ(t[5].key, "delta");
  EXPECT_EQ(t[5].op, RequestOp::kLoneGet);
  std::string broken = bin.substr(0, bin.size() - 3);  // the last key cut short
  Trace t2;
  EXPECT_THROW(appendCachelibBinary(broken, "d.bin", t2, 0, stats), TraceError);
  std::string lying = bin;
  uint64_t many = 1000;
  std::memcpy(lying.data(), &many, 8);
  try {
    appendCachelibBinary(lying, "d.bin", t2, 0, stats);
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("d.bin: says 1000 requests"), std::string::npos) << e.what();
  }
  // A binary-replay config runs it; a missing dump is named.
  TempDir dir("binary");
  std::ofstream(dir.path() + "/kv.bin", std::ios::binary) << bin;
  std::string path = dir.file("cb.json", R"({"cache_config": {"cacheSizeMB": 16, "maxAllocSize": 65536},
      "test_config": {"generator": "binary-replay", "numOps": 100, "traceFileName": "kv.bin"}})");
  std::ostringstream out, err;
  ASSERT_EQ(runBenchCli({"--config", path, "--no-limits"}, out, err, false), kExitOk) << err.str();
  EXPECT_NE(out.str().find("kv.bin, 6 records"), std::string::npos) << out.str();
  std::string missing = dir.file("m.json", R"({"cache_config": {"cacheSizeMB": 16},
      "test_config": {"generator": "binary-replay", "traceFileName": "kv_trace.bin"}})");
  try {
    importCachebenchFile(missing);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "test_config.traceFileName");
    EXPECT_NE(std::string(e.what()).find("kv_trace.bin does not exist"), std::string::npos) << e.what();
  }
}

TEST(KvcacheTraceTest, ReplayConfigRunsItsTracesAndNamesAMissingOne) {
  TempDir dir("replay");
  dir.file("a.csv", kKvTrace);
  dir.file("b.csv", "key,op,size\nk9,SET,300\nk9,GET,300\n");
  std::string cfg = R"({"cache_config": {"cacheSizeMB": 16, "maxAllocSize": 65536},
      "test_config": {"generator": "replay", "numOps": 100, "numThreads": 1, "enableLookaside": true,
      "repeatTraceReplay": false, "replayGeneratorConfig": {"ampFactor": 1},
      "traceFileNames": ["a.csv", "b.csv"]}})";
  std::string path = dir.file("cb.json", cfg);
  CachebenchConfig cb = importCachebenchFile(path);
  ASSERT_TRUE(cb.replay.has_value());
  EXPECT_EQ(cb.replay->files, (std::vector<std::string>{dir.path() + "/a.csv", dir.path() + "/b.csv"}));
  std::ostringstream out, err;
  ASSERT_EQ(runBenchCli({"--config", path, "--no-limits"}, out, err, false), kExitOk) << err.str();
  EXPECT_NE(out.str().find("Trace         : " + dir.path() + "/a.csv, " + dir.path() + "/b.csv, 8 records"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("Value check failures: 0"), std::string::npos) << out.str();
  EXPECT_NE(err.str().find("1 trace rows with an operation other than GET, SET or DELETE were skipped"),
            std::string::npos)
      << err.str();
  // numOps * numThreads caps the records; repeatTraceReplay starts over.
  std::string repeat = dir.file("repeat.json", std::string(cfg).replace(cfg.find("\"repeatTraceReplay\": false"), 26,
                                                                        "\"repeatTraceReplay\": true"));
  std::ostringstream out2, err2;
  ASSERT_EQ(runBenchCli({"--config", repeat, "--max-ops", "20", "--no-limits"}, out2, err2, false), kExitOk)
      << err2.str();
  EXPECT_NE(out2.str().find(", 20 records"), std::string::npos) << out2.str();
  // A trace that is not there: refused by name before anything runs.
  std::string missing = dir.file("missing.json", R"({"cache_config": {"cacheSizeMB": 16},
      "test_config": {"generator": "replay", "numOps": 10, "traceFileName": "nope.csv"}})");
  try {
    importCachebenchFile(missing);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "test_config.traceFileName");
    EXPECT_NE(std::string(e.what()).find("trace file " + dir.path() + "/nope.csv does not exist"), std::string::npos)
        << e.what();
  }
  expectImportError(R"({"cache_config": {"cacheSizeMB": 16}, "test_config": {"generator": "replay",
      "traceFileName": "/tmp/x.csv", "replayGeneratorConfig": {"ampFactor": 4}}})",
                    "test_config.replayGeneratorConfig.ampFactor", "amplification");
}

// addChainedRatio and the chainedItem* ranges: parsed as cachebench reads
// them, and run through allocator/chained_items.h with every chain checked.
TEST(CachebenchChainedTest, ChainedKeysMapAndTheRunChecksEveryChain) {
  const std::string chained = R"(, "addChainedRatio": 0.3, "chainedItemLengthRange": [1, 2, 4, 32],
      "chainedItemLengthRangeProbability": [0.6, 0.3, 0.1], "chainedItemValSizeRange": [1, 128, 256, 1024, 4096],
      "chainedItemValSizeRangeProbability": [0.1, 0.2, 0.3, 0.4])";
  CachebenchConfig cb = importCachebench(smallConfig("", chained));
  WorkloadConfig w = cb.workload;
  EXPECT_NEAR(w.add_chained_ratio, 0.3 / 1.3, 1e-9);
  EXPECT_NEAR(w.get_ratio, 0.7 / 1.3, 1e-9);
  ASSERT_EQ(w.chain_length_buckets.size(), 3u);
  EXPECT_EQ(w.chain_length_buckets[2].range.min, 4u);
  EXPECT_EQ(w.chain_length_buckets[2].range.max, 31u);
  ASSERT_EQ(w.chain_value_size_buckets.size(), 4u);
  EXPECT_EQ(w.chain_value_size_buckets[3].range.max, 4095u);
  // A discrete length ([5] with [1.0]), as throughput configs write it.
  WorkloadConfig d = importCachebench(smallConfig("", R"(, "addChainedRatio": 1, "chainedItemLengthRange": [5],
      "chainedItemLengthRangeProbability": [1.0], "chainedItemValSizeRange": [1, 100],
      "chainedItemValSizeRangeProbability": [1.0])")).workload;
  ASSERT_EQ(d.chain_length_buckets.size(), 1u);
  EXPECT_EQ(d.chain_length_buckets[0].range.min, 5u);
  EXPECT_EQ(d.chain_length_buckets[0].range.max, 5u);
  expectImportError(smallConfig("", R"(, "addChainedRatio": 0.1, "chainedItemLengthRange": [1, 2])"),
                    "test_config.chainedItemValSizeRange", "missing");

  w.threads = 3;
  w.ops_per_thread = 3000;
  w.progress_interval_ms = 0;
  CacheHooks hooks;
  RunOptions o;
  o.chain_hook = ChainedItems::attach(hooks);
  Cache cache(cb.cache, hooks);
  WorkloadResult r = runWorkload(cache, w, o);
  EXPECT_EQ(r.ops.value_mismatches, 0u) << r.first_mismatch;
  EXPECT_GT(r.ops.chain_adds, 1000u);
  EXPECT_GT(r.ops.chain_children, 2 * r.ops.chain_adds);  // mean length ~4.8
  EXPECT_GT(r.ops.chain_children_read, 1000u) << "gets read chains back";
  EXPECT_EQ(cache.checkConsistency(), "");
}

// ttlSecsRange: a share of the keys get a TTL drawn per key.
TEST(CachebenchTtlTest, TtlSecsRangeGivesKeysTheirTtl) {
  CachebenchConfig cb = importCachebench(smallConfig("", R"(, "ttlSecsRange": [100, 200],
      "ttlSecsRangeProbability": [1.0], "ttlRatio": 0.5)"));
  WorkloadConfig w = cb.workload;
  w.threads = 1;
  w.ops_per_thread = 2000;
  w.progress_interval_ms = 0;
  Cache cache(cb.cache);
  const auto before = std::chrono::system_clock::now();
  WorkloadResult r = runWorkload(cache, w);
  EXPECT_EQ(r.ops.value_mismatches, 0u);
  EXPECT_GT(r.ops.ttl_sets, r.ops.sets / 4);
  EXPECT_LT(r.ops.ttl_sets, r.ops.sets * 3 / 4);
  size_t withTtl = 0, without = 0;
  cache.forEachItem([&](const ReadHandle& h) {
    if (auto at = h.expiresAt()) {
      ++withTtl;
      const auto secs = std::chrono::duration_cast<std::chrono::seconds>(*at - before).count();
      EXPECT_GE(secs, 99);
      EXPECT_LE(secs, 201);
    } else {
      ++without;
    }
  });
  EXPECT_GT(withTtl, 0u);
  EXPECT_GT(without, 0u);
}

TEST(CachebenchStressorsTest, MappedStressorsRunAndCheck) {
  CacheConfig c = importCachebench(R"({"cache_config": {"cacheSizeMB": 64}, "test_config": {"name": "cachelib_map"}})")
                      .cache;
  for (const char* name : {"high_refcount", "cachelib_map", "cachelib_range_map"}) {
    std::ostringstream out, err;
    StressorOptions o;
    o.ops_per_thread = 30;
    o.threads = 2;
    EXPECT_EQ(runStressor(name, c, o, out, err), 0) << name << ": " << err.str();
    EXPECT_NE(out.str().find("Consistency   : ok"), std::string::npos) << out.str();
  }
}

// high_refcount reaches the refcount limit: RefcountOverflow is thrown,
// caught, and every handle is released (the consistency check sees no pin).
TEST(CachebenchStressorsTest, HighRefcountReachesTheLimit) {
  CacheConfig c = importCachebench(R"({"cache_config": {"cacheSizeMB": 16}, "test_config": {"name": "high_refcount"}})")
                      .cache;
  std::ostringstream out, err;
  StressorOptions o;
  o.threads = 1;  // one thread's share is the whole limit, so it gets there
  o.ops_per_thread = Item::kRefMask + 100;
  ASSERT_EQ(runStressor("high_refcount", c, o, out, err), 0) << err.str();
  EXPECT_EQ(out.str().find("RefcountOverflow thrown : 0\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("Consistency   : ok"), std::string::npos) << out.str();
}

// updateRatio: a find of the key to write it, counted as a get, never filled.
TEST(CachebenchWorkloadTest, UpdateRatioFindsWithoutFilling) {
  CachebenchConfig cb = importCachebench(smallConfig("", R"(, "updateRatio": 0.7)"));
  WorkloadConfig w = cb.workload;
  EXPECT_NEAR(w.update_ratio, 0.7 / 1.7, 1e-9);
  w.lookaside = true;
  w.ops_per_thread = 4000;
  w.progress_interval_ms = 0;
  Cache cache(cb.cache);
  WorkloadResult r = runWorkload(cache, w);
  EXPECT_EQ(r.ops.value_mismatches, 0u);
  EXPECT_GT(r.ops.updates, 1000u);
  EXPECT_GT(r.ops.gets, r.ops.updates);
  // Only gets fill: lookaside sets are fewer than all misses.
  EXPECT_LT(r.ops.lookaside_sets, r.ops.gets - r.ops.get_hits);
}

// couldExistRatio: Cache::couldExist of the key; loneSetRatio: a set of a
// fresh key. Both are weights among the ratios, counted in the report.
TEST(CachebenchWorkloadTest, CouldExistAndLoneSetRatiosRun) {
  CachebenchConfig cb = importCachebench(smallConfig("", R"(, "couldExistRatio": 0.5, "loneSetRatio": 0.5)"));
  WorkloadConfig w = cb.workload;
  EXPECT_NEAR(w.could_exist_ratio, 0.25, 1e-9);
  EXPECT_NEAR(w.lone_set_ratio, 0.25, 1e-9);
  EXPECT_NEAR(w.get_ratio, 0.35, 1e-9);
  w.ops_per_thread = 8000;
  w.progress_interval_ms = 0;
  w.prepopulate = true;
  Cache cache(cb.cache);
  WorkloadResult r = runWorkload(cache, w);
  EXPECT_EQ(r.ops.value_mismatches, 0u);
  EXPECT_NEAR(double(r.ops.could_exists), 2000, 250);
  EXPECT_NEAR(double(r.ops.lone_sets), 2000, 250);
  // Every key was set first and the cache holds them all: couldExist says yes.
  EXPECT_GT(r.ops.could_exist_true, r.ops.could_exists * 9 / 10);
  EXPECT_GE(r.ops.sets, r.ops.lone_sets);
  EXPECT_EQ(r.ops.ops(), 8000u);
  // A lone set's key is fresh, 19 bytes, never a key of the key space.
  std::string a, b;
  KeySpace::loneSetKey(1, a);
  KeySpace::loneSetKey((uint64_t(3) << 40) | 1, b);
  EXPECT_EQ(a.size(), KeySpace::kLoneSetKeySize);
  EXPECT_NE(a, b);
  EXPECT_EQ(a[0], '(');
  EXPECT_TRUE(cache.peek(a));  // the first lone set of thread 0 was stored
  // The simulators skip couldExists and see lone sets as sets of new objects.
  std::vector<SimRequest> sim = workloadRequests(w, 64);
  uint64_t beyond = 0;
  for (const SimRequest& q : sim) {
    EXPECT_NE(q.op, RequestOp::kCouldExist);
    if (q.key >= 2 * w.keys) ++beyond;
  }
  EXPECT_EQ(beyond, r.ops.lone_sets);

  // A lone set takes the drawn key's TTL, as cachebench's request carries it.
  CachebenchConfig ttl =
      importCachebench(smallConfig("", R"(, "loneSetRatio": 1, "getRatio": 0, "setRatio": 0, "ttlSecsRange": [300],
                         "ttlSecsRangeProbability": [1])"));
  ttl.workload.ops_per_thread = 500;
  ttl.workload.progress_interval_ms = 0;
  Cache ttlCache(ttl.cache);
  WorkloadResult t = runWorkload(ttlCache, ttl.workload);
  EXPECT_EQ(t.ops.lone_sets, 500u);
  EXPECT_EQ(t.ops.ttl_sets, 500u);
}

// poolDistributions: cachebench reads the distribution from its entries
// only; one entry serves every pool, and test_config's own distribution
// keys are named in the warning.
TEST(CachebenchPoolsTest, OnePoolDistributionReplacesTestConfigs) {
  TempDir dir("pooldist");
  dir.file("pop.json", R"({"popularityBuckets": [1, 3], "popularityWeights": [9, 1]})");
  std::string path = dir.file("cb.json", smallConfig("", R"(, "poolDistributions": [{"getRatio": 0.2,
      "loneSetRatio": 0.6, "setRatio": 0.2, "keySizeRange": [20, 30], "keySizeRangeProbability": [1],
      "popDistFile": "pop.json", "useLegacyKeyGen": true, "bogus": 1}])"));
  CachebenchConfig cb = importCachebenchFile(path);
  const WorkloadConfig& w = cb.workload;
  EXPECT_NEAR(w.get_ratio, 0.2, 1e-9);
  EXPECT_NEAR(w.lone_set_ratio, 0.6, 1e-9);
  EXPECT_EQ(w.key_size.min, 20u);
  EXPECT_EQ(w.popularity.kind, PopularityKind::kPiecewise);
  EXPECT_EQ(w.popularity.bucket_weights, (std::vector<double>{9, 1}));
  const std::string warning = ignoredKeysWarning(cb.ignored);
  for (const char* k :
       {"test_config.getRatio (not read: poolDistributions", "test_config.keySizeRange (not read",
        "test_config.poolDistributions[0].useLegacyKeyGen", "test_config.poolDistributions[0].bogus (unknown key)"})
    EXPECT_NE(warning.find(k), std::string::npos) << k << " in " << warning;
  // test_config's valSizeRange is not read either (the entry has none).
  EXPECT_EQ(w.value_size_buckets.size(), 0u);
}

// poolDistributions with one entry per pool: pool p's keys take entry p's
// sizes, and an operation that picks pool p entry p's ratios and popularity.
std::string twoPoolConfig(const std::string& second, const std::string& extra = "") {
  return smallConfig(R"(, "numPools": 2)", R"(, "keyPoolDistribution": [1, 1], "opPoolDistribution": [1, 3],
      "poolDistributions": [{"getRatio": 1, "keySizeRange": [10, 11], "keySizeRangeProbability": [1],
      "valSizeRange": [100, 101], "valSizeRangeProbability": [1], "popularityBuckets": [1, 9],
      "popularityWeights": [1, 0]}, )" + second +
                                               "]" + extra);
}
const char kSecondPool[] = R"({"setRatio": 1, "keySizeRange": [20, 21], "keySizeRangeProbability": [1],
      "valSizeRange": [1000, 1001], "valSizeRangeProbability": [1]})";

TEST(CachebenchPoolsTest, PoolDistributionsGiveEachPoolItsOwn) {
  CachebenchConfig cb = importCachebench(twoPoolConfig(kSecondPool));
  WorkloadConfig w = cb.workload;
  ASSERT_EQ(w.pool_distributions.size(), 2u);
  EXPECT_NEAR(w.get_ratio, 0.25, 1e-9);  // the pools' ratios by operation weight (1 : 3)
  EXPECT_NEAR(w.set_ratio, 0.75, 1e-9);
  EXPECT_EQ(w.key_size.min, 10u);
  EXPECT_EQ(w.value_size.max, 1000u);
  KeySpace ks(w);
  for (uint64_t i : {0ull, 700ull, 1499ull}) {
    EXPECT_EQ(ks.keyLength(i), 10u) << i;
    EXPECT_EQ(ks.valueSize(i), 100u) << i;
  }
  for (uint64_t i : {1500ull, 2999ull}) {
    EXPECT_EQ(ks.keyLength(i), 20u) << i;
    EXPECT_EQ(ks.valueSize(i), 1000u) << i;
  }
  std::unique_ptr<KeySampler> sampler = KeySampler::forWorkload(w);
  RequestStream stream(w, *sampler, 0);
  int pool0 = 0;
  for (int i = 0; i < 4000; ++i) {
    Request r = stream.next();
    if (r.index < 1500) {
      ++pool0;
      ASSERT_EQ(r.op, RequestOp::kGet);
      ASSERT_LT(r.index, 150u);  // pool 0's popularity: its first tenth only
    } else {
      ASSERT_EQ(r.op, RequestOp::kSet);
    }
  }
  EXPECT_NEAR(pool0, 1000, 150);
  w.ops_per_thread = 4000;
  w.progress_interval_ms = 0;
  w.lookaside = true;
  Cache cache(cb.cache);
  WorkloadResult r = runWorkload(cache, w);
  EXPECT_EQ(r.ops.value_mismatches, 0u);
  EXPECT_GT(r.ops.get_hits, 0u);
}

TEST(CachebenchPoolsTest, BadPoolDistributionsNameTheEntry) {
  expectImportError(twoPoolConfig(std::string(kSecondPool) + R"(, {"getRatio": 1})"), "test_config.poolDistributions",
                    "has 3 entries but keyPoolDistribution has 2");
  expectImportError(twoPoolConfig(R"({"getRatio": 1, "valSizeRange": [1, 2], "valSizeRangeProbability": [1]})"),
                    "test_config.poolDistributions[1].keySizeRange", "missing");
  expectImportError(twoPoolConfig(R"({"getRatio": 1, "keySizeRange": [20, 21], "keySizeRangeProbability": [1]})"),
                    "test_config.poolDistributions[1].valSizeRange", "missing");
  expectImportError(twoPoolConfig(R"({"setRatio": 1, "keySizeRange": [2, 3], "keySizeRangeProbability": [1],
      "valSizeRange": [10, 11], "valSizeRangeProbability": [1]})"),
                    "test_config.poolDistributions", "may be shared between pools");
  expectImportError(twoPoolConfig(R"({"setRatio": 1, "keySizeRange": [20, 21], "keySizeRangeProbability": [1],
      "valSizeRange": [10, 11], "valSizeRangeProbability": [1], "ttlSecsRange": [5], "ttlSecsRangeProbability": [1]})"),
                    "test_config.poolDistributions[1].ttlSecsRange", "differs from entry 0's");
  expectImportError(twoPoolConfig(R"({"setRatio": -1})"), "test_config.poolDistributions[1].setRatio",
                    "must not be negative");
}

// htBucketPower past what the cache can use is lowered, and said so.
TEST(CachebenchTest, HugeHtBucketPowerIsLoweredWithANote) {
  CachebenchConfig cb = importCachebench(smallConfig(R"(, "htBucketPower": 29)", ""));
  EXPECT_EQ(cb.cache.index.bucket_power, cb.cache.maxUsefulBucketPower());
  EXPECT_LT(cb.cache.index.bucket_power, 29u);
  bool noted = false;
  for (const std::string& k : cb.ignored) noted |= k.rfind("cache_config.htBucketPower (29 lowered to", 0) == 0;
  EXPECT_TRUE(noted);
}

// fast_shutdown: a persistent tier closed mid-workload and reopened; what
// comes back is checked key by key (the stressor throws on any difference).
TEST(CachebenchStressorsTest, FastShutdownReopensExactly) {
  CachebenchConfig cb = importCachebench(
      R"({"cache_config": {"cacheSizeMB": 32, "allocSizes": [64, 100]}, "test_config": {"name": "fast_shutdown"}})");
  EXPECT_EQ(cb.stressor, "fast_shutdown");
  EXPECT_EQ(cb.cache.allocation.sizes, (std::vector<uint32_t>{64, 104}));
  ASSERT_FALSE(cb.ignored.empty());
  EXPECT_EQ(cb.ignored[0], "cache_config.allocSizes (rounded up to multiples of 8: 100 -> 104)");
  std::ostringstream out, err;
  StressorOptions o;
  o.ops_per_thread = 3;  // two rounds
  ASSERT_EQ(runStressor("fast_shutdown", cb.cache, o, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("Rounds        : 2,"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("none invented or lost"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("Reopened      : 0 items"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace tiercache::bench
