// tiercache-bench's command line: exit codes, error messages that name the
// key, the text and JSON reports of a tiny run, and the shipped configs.
#include "bench/cli.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "allocator/cache.h"
#include "allocator/cache_config.h"
#include "bench/report.h"
#include "bench/workload.h"

namespace tiercache::bench {
namespace {

namespace fs = std::filesystem;

class BenchCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tiercache_bench_cli_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& json) {
    std::string path = (dir_ / "config.json").string();
    std::ofstream(path) << json;
    return path;
  }
  int run(std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    return runBenchCli(args, out_, err_, false);
  }
  // A small cache and a workload that runs in well under a second; `extra`
  // overrides workload fields.
  static std::string config(const std::string& extra = "{}", const std::string& tierSize = "\"16MiB\"") {
    nlohmann::json doc = nlohmann::json::parse(R"({"slab_size": "1MiB", "tiers": [{"name": "dram", "kind": "dram"}],
      "workload": {"threads": 2, "ops_per_thread": 3000, "keys": 5000, "key_size": [8, 16],
                   "value_size": [64, 2048], "progress_interval_ms": 1}})");
    doc["tiers"][0]["size"] = nlohmann::json::parse(tierSize);
    doc["workload"].update(nlohmann::json::parse(extra));
    return doc.dump();
  }

  fs::path dir_;
  std::ostringstream out_, err_;
};

TEST_F(BenchCliTest, UsageAndArgumentErrors) {
  EXPECT_EQ(run({"--help"}), kExitOk);
  EXPECT_NE(out_.str().find("usage: tiercache-bench --config FILE"), std::string::npos);
  EXPECT_EQ(run({}), kExitUsage);
  EXPECT_NE(err_.str().find("--config FILE is required"), std::string::npos);
  EXPECT_EQ(run({"--config"}), kExitUsage);
  EXPECT_NE(err_.str().find("--config needs a file"), std::string::npos);
  EXPECT_EQ(run({"--config", "x.json", "--fast"}), kExitUsage);
  EXPECT_NE(err_.str().find("unknown argument '--fast'"), std::string::npos);
  EXPECT_EQ(run({"--config", (dir_ / "missing.json").string()}), kExitUsage);
  EXPECT_NE(err_.str().find("missing.json"), std::string::npos) << err_.str();
}

TEST_F(BenchCliTest, BadWorkloadNamesTheKey) {
  std::string path = write(config(R"({"get_ratio": 2, "set_ratio": 0})"));
  EXPECT_EQ(run({"--config", path}), kExitUsage);
  EXPECT_NE(err_.str().find("workload.get_ratio: 2 is out of range [0, 1]"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find(path), std::string::npos) << err_.str();
  EXPECT_EQ(out_.str(), "");
}

TEST_F(BenchCliTest, BadCacheConfigNamesTheKey) {
  EXPECT_EQ(run({"--config", write(config("{}", "\"lots\""))}), kExitUsage);
  EXPECT_NE(err_.str().find("tiers[0].size"), std::string::npos) << err_.str();
}

TEST_F(BenchCliTest, ValueLargerThanTheCacheStoresIsAConfigError) {
  EXPECT_EQ(run({"--config", write(config(R"({"value_size": [64, "8MiB"]})"))}), kExitUsage);
  EXPECT_NE(err_.str().find("workload.value_size: max 8388608 exceeds the largest value"), std::string::npos)
      << err_.str();
}

TEST_F(BenchCliTest, TextReport) {
  ASSERT_EQ(run({"--config", write(config())}), kExitOk) << err_.str();
  const std::string out = out_.str();
  for (const char* line : {"== Test Results ==\n", "Items in dram : ", "Alloc Attempts: ", "Evictions     : ", "Expired       : ",
                           "Cache Gets    : ", "Hit Ratio     : ", "get       : ", "set       : ", "del       : ",
                           "Value check failures: 0\n", "Threads       : 2, 6,000 ops in "}) {
    EXPECT_NE(out.find(line), std::string::npos) << "missing \"" << line << "\" in\n" << out;
  }
  EXPECT_EQ(err_.str(), "");  // not a terminal and --progress not given
}

TEST_F(BenchCliTest, JsonReportAndProgressOnRequest) {
  ASSERT_EQ(run({"--config", write(config(R"({"ops_per_thread": 50000})")), "--json", "--progress"}), kExitOk)
      << err_.str();
  nlohmann::json j = nlohmann::json::parse(out_.str());
  EXPECT_EQ(j["value_check_failures"], 0);
  EXPECT_EQ(j["ops"]["total"], 100000);
  uint64_t gets = j["ops"]["get"]["count"];
  EXPECT_GT(gets, 0u);
  EXPECT_EQ(j["cache"]["gets"], gets);
  EXPECT_EQ(j["cache"]["tiers"][0]["name"], "dram");
  // Tier counters are measured-phase changes like the cache-wide ones.
  EXPECT_EQ(j["cache"]["tiers"][0]["hits"], j["cache"]["hits"]);
  EXPECT_EQ(j["cache"]["tiers"][0]["evictions"], j["cache"]["evictions"]);
  EXPECT_GT(j["cache"]["alloc_attempts"].get<uint64_t>(), 0u);
  EXPECT_GT(j["cache"]["item_header_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["workload"]["keys"], 5000);
  // Progress lines are timing-dependent in number, but whatever was printed
  // must be whole progress lines.
  std::istringstream lines(err_.str());
  for (std::string line; std::getline(lines, line);) EXPECT_NE(line.find(" ops/s, hit ratio "), std::string::npos) << line;
}

// The JSON report's counters are measured-phase changes, but recovery runs
// when the cache opens: the JSON said 0 recovered items where the text said
// thousands (found by scripts/config-sweep.py, which reads the JSON).
TEST_F(BenchCliTest, JsonReportGivesWhatTheOpenRecovered) {
  nlohmann::json doc = nlohmann::json::parse(config());
  doc["tiers"].push_back({{"name", "pm"},
                          {"kind", "pmem-file"},
                          {"size", "16MiB"},
                          {"persistent", true},
                          {"path", (dir_ / "pool").string()}});
  doc["persistence"] = {{"demote_on_shutdown", true}};
  const std::string path = write(doc.dump());
  ASSERT_EQ(run({"--config", path, "--json"}), kExitOk) << err_.str();
  nlohmann::json first = nlohmann::json::parse(out_.str());
  EXPECT_EQ(first["cache"]["recovered_items"], 0);
  EXPECT_NE(first["cache"]["tiers"][1]["open_report"].get<std::string>().find("created"), std::string::npos)
      << first["cache"]["tiers"][1];
  // The clean shutdown demoted the DRAM tier's items into the pool.
  ASSERT_EQ(run({"--config", path, "--json"}), kExitOk) << err_.str();
  nlohmann::json second = nlohmann::json::parse(out_.str());
  EXPECT_GT(second["cache"]["recovered_items"].get<uint64_t>(), 1000u) << second["cache"];
  EXPECT_EQ(second["cache"]["discarded_items"], 0);
  EXPECT_GT(second["cache"]["recovery_seconds"].get<double>(), 0.0);
  EXPECT_NE(second["cache"]["tiers"][1]["open_report"].get<std::string>().find("clean shutdown"), std::string::npos)
      << second["cache"]["tiers"][1];
  EXPECT_FALSE(second["cache"]["tiers"][0].contains("open_report"));  // not persistent
  EXPECT_EQ(second["value_check_failures"], 0);
  // The text report says the same number.
  ASSERT_EQ(run({"--config", path}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("opened after a clean shutdown; recovered "), std::string::npos) << out_.str();
}

TEST(BenchConfigsTest, ShippedConfigsParse) {
  for (const char* name : {"default.json", "dram.json", "kmem-dax.json"}) {
    std::string path = std::string(TIERCACHE_SOURCE_DIR "/configs/") + name;
    CacheConfig c = CacheConfig::fromJsonFile(path);
    WorkloadConfig w = WorkloadConfig::fromJsonFile(path);
    EXPECT_FALSE(c.tiers.empty()) << name;
    EXPECT_EQ(w.popularity.kind, PopularityKind::kZipf) << name;
    EXPECT_GE(w.ops_per_thread, 1'000'000u) << name;
  }
}

// default.json is DRAM + emulated PMEM with background eviction and
// promotion, over a key space larger than both tiers; dram.json stays DRAM only.
TEST(BenchConfigsTest, DefaultIsTieredAndDramIsNot) {
  std::string dir = std::string(TIERCACHE_SOURCE_DIR) + "/configs/";
  CacheConfig c = CacheConfig::fromJsonFile(dir + "default.json");
  ASSERT_EQ(c.tiers.size(), 2u);
  EXPECT_EQ(c.tiers[0].kind, TierKind::kDram);
  EXPECT_EQ(c.tiers[0].size, 128ull << 20);
  EXPECT_EQ(c.tiers[1].kind, TierKind::kPmemFile);
  EXPECT_EQ(c.tiers[1].size, 512ull << 20);
  EXPECT_EQ(c.tiers[1].path, "/dev/shm");
  EXPECT_TRUE(c.background_eviction.enabled);
  EXPECT_TRUE(c.promotion.enabled);
  WorkloadConfig w = WorkloadConfig::fromJsonFile(dir + "default.json");
  // Smallest items (header + key + value) still take more than both tiers.
  EXPECT_GT(w.keys * (w.key_size.min + w.value_size.min / 2 + w.value_size.max / 2), (640ull << 20));
  CacheConfig d = CacheConfig::fromJsonFile(dir + "dram.json");
  ASSERT_EQ(d.tiers.size(), 1u);
  EXPECT_EQ(d.tiers[0].kind, TierKind::kDram);
  CacheConfig k = CacheConfig::fromJsonFile(dir + "kmem-dax.json");
  ASSERT_EQ(k.tiers.size(), 2u);
  EXPECT_EQ(k.tiers[1].kind, TierKind::kDaxKmem);
}

// The seed experiment's ceiling (scripts/seed-experiment.sh): the 1-thread
// seed workload, unchanged, on one DRAM tier at least as large as the
// seed's two tiers together, so that nothing is evicted or demoted. Its LRU
// refreshes on a fixed interval near the seed's (0.1 x eviction ages of
// 256-512 ms): the adaptive one follows eviction ages, so with no eviction
// it would stay exact LRU, a list move on every hit, more work than the
// seed's cache does; a longer one would do less. Either is no ceiling.
TEST(BenchConfigsTest, SeedCeilingIsTheSeedWorkloadOnOneDramTier) {
  const std::string dir = std::string(TIERCACHE_SOURCE_DIR) + "/configs/";
  auto parse = [](const std::string& path) {
    std::ifstream f(path);
    return nlohmann::json::parse(f);
  };
  const nlohmann::json seed = parse(dir + "seed-bg-off-1t.json");
  const nlohmann::json ceiling = parse(dir + "seed-dram-1t.json");
  EXPECT_EQ(ceiling["workload"], seed["workload"]);
  const CacheConfig s = CacheConfig::fromJsonFile(dir + "seed-bg-off-1t.json");
  const CacheConfig c = CacheConfig::fromJsonFile(dir + "seed-dram-1t.json");
  ASSERT_EQ(c.tiers.size(), 1u);
  EXPECT_EQ(c.tiers[0].kind, TierKind::kDram);
  EXPECT_GE(c.tiers[0].size, s.tiers[0].size + s.tiers[1].size);
  EXPECT_FALSE(c.background_eviction.enabled);
  EXPECT_EQ(c.eviction.policy, s.eviction.policy);
  EXPECT_EQ(c.eviction.lru_refresh_ratio, 0.0);
  EXPECT_EQ(c.eviction.lru_refresh_ms, 40u);
}

// Without a KMEM DAX node the kmem-dax config is refused before any work,
// with a message that says so; on a host with one it runs.
TEST(BenchConfigsTest, KmemDaxRefusedClearlyWithoutTheNode) {
  CacheConfig c = CacheConfig::fromJsonFile(std::string(TIERCACHE_SOURCE_DIR) + "/configs/kmem-dax.json");
  try {
    Cache cache(c);
    SUCCEED() << "this host has KMEM DAX memory";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("KMEM DAX"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tier 'pmem'"), std::string::npos) << e.what();
  }
}

TEST(ReportTest, WithCommas) {
  EXPECT_EQ(withCommas(0), "0");
  EXPECT_EQ(withCommas(999), "999");
  EXPECT_EQ(withCommas(1000), "1,000");
  EXPECT_EQ(withCommas(1234567), "1,234,567");
  EXPECT_EQ(withCommas(18446744073709551615ull), "18,446,744,073,709,551,615");
}

}  // namespace
}  // namespace tiercache::bench
