// Sweeps (applying a value, the CSV, the gnuplot script and its PNG) and
// the terminal progress bar.
#include "bench/sweep.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/cli.h"
#include "bench/report.h"
#include "bench/runner.h"

namespace tiercache::bench {
namespace {

namespace fs = std::filesystem;

CacheConfig twoTiers() {
  CacheConfig c;
  c.slab_size = 1 << 20;
  TierConfig dram, pmem;
  dram.name = "dram";
  dram.size = 128ull << 20;
  pmem.name = "pmem";
  pmem.kind = TierKind::kPmemFile;
  pmem.path = "/dev/shm";
  pmem.size = 512ull << 20;
  c.tiers = {dram, pmem};
  return c;
}

void expectSweepError(SweepKind kind, const std::string& value, CacheConfig c, const std::string& message) {
  WorkloadConfig w;
  try {
    applySweepValue(kind, value, c, w);
    ADD_FAILURE() << "no error for " << value;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(SweepTest, AppliesValues) {
  WorkloadConfig w;
  CacheConfig c = twoTiers();
  applySweepValue(SweepKind::kThreads, "4", c, w);
  EXPECT_EQ(w.threads, 4u);
  applySweepValue(SweepKind::kCacheSize, "320MiB", c, w);  // half of 640: both tiers halve
  EXPECT_EQ(c.tiers[0].size, 64ull << 20);
  EXPECT_EQ(c.tiers[1].size, 256ull << 20);
  c = twoTiers();
  applySweepValue(SweepKind::kTierRatio, "1:3", c, w);  // the same 640 MiB split 1:3
  EXPECT_EQ(c.tiers[0].size, 160ull << 20);
  EXPECT_EQ(c.tiers[1].size, 480ull << 20);
  // Ratio tiers (as cachebench configs give) take the total and the ratios as they are.
  c = twoTiers();
  c.total_size = 256ull << 20;
  c.tiers[0].size = c.tiers[1].size = 0;
  c.tiers[0].ratio = c.tiers[1].ratio = 1;
  applySweepValue(SweepKind::kTierRatio, "1:4", c, w);
  EXPECT_DOUBLE_EQ(c.tiers[1].ratio, 4);
  applySweepValue(SweepKind::kCacheSize, "1GiB", c, w);
  EXPECT_EQ(c.total_size, 1ull << 30);

  expectSweepError(SweepKind::kThreads, "0", twoTiers(), "--threads 0: must be a whole number in [1,1024]");
  expectSweepError(SweepKind::kThreads, "2x", twoTiers(), "--threads 2x");
  expectSweepError(SweepKind::kCacheSize, "1GB", twoTiers(), "--cache-size 1GB");
  expectSweepError(SweepKind::kTierRatio, "1-3", twoTiers(), "--tier-ratio 1-3: must be A:B");
  expectSweepError(SweepKind::kTierRatio, "0:3", twoTiers(), "must be A:B with A, B > 0");
  CacheConfig one = twoTiers();
  one.tiers.pop_back();
  expectSweepError(SweepKind::kTierRatio, "1:1", one, "exactly two tiers");
  expectSweepError(SweepKind::kTierRatio, "1:100000", twoTiers(), "leaves a tier without a slab");
  EXPECT_EQ(splitList("1,2,,4"), (std::vector<std::string>{"1", "2", "4"}));
}

TEST(SweepTest, CsvAndGnuplotScript) {
  std::vector<SweepRow> rows = {{"1:1", 3, 1000.4, 800, 200, 0.5}, {"1:3", 3, 2000, 1600, 400, 0.712345678}};
  EXPECT_EQ(sweepCsv(SweepKind::kTierRatio, rows),
            "tier_ratio,runs,ops_per_sec,get_per_sec,set_per_sec,hit_ratio\n"
            "1:1,3,1000,800,200,0.500000\n"
            "1:3,3,2000,1600,400,0.712346\n");
  std::string gp = sweepGnuplot(SweepKind::kThreads, "out/s.csv", "out/it's.png", "title");
  EXPECT_NE(gp.find("set output 'out/it''s.png'\n"), std::string::npos) << gp;
  EXPECT_NE(gp.find("plot 'out/s.csv' skip 1 using 0:3:xtic(1)"), std::string::npos) << gp;
  EXPECT_NE(gp.find("set xlabel 'worker threads'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("axes x1y2"), std::string::npos) << gp;
}

// The whole sweep command on a tiny cache: CSV rows per value and, where
// gnuplot is installed, a PNG file.
TEST(SweepTest, CommandWritesCsvAndPlot) {
  fs::path dir = fs::temp_directory_path() / ("tiercache_sweep_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string config = (dir / "c.json").string();
  std::ofstream(config) << R"({"slab_size": "1MiB", "tiers": [{"name": "dram", "kind": "dram", "size": "4MiB"}],
    "workload": {"threads": 1, "ops_per_thread": 2000, "keys": 4000, "value_size": [100, 1000]}})";
  std::ostringstream out, err;
  std::string prefix = (dir / "s").string();
  ASSERT_EQ(runBenchCli({"sweep", "--config", config, "--threads", "1,2", "-n", "2", "--out", prefix}, out, err, false),
            kExitOk)
      << err.str();
  std::ifstream csv(prefix + ".csv");
  std::string header, row1, row2, extra;
  std::getline(csv, header);
  std::getline(csv, row1);
  std::getline(csv, row2);
  EXPECT_EQ(header, "threads,runs,ops_per_sec,get_per_sec,set_per_sec,hit_ratio");
  EXPECT_EQ(row1.rfind("1,2,", 0), 0u) << row1;
  EXPECT_EQ(row2.rfind("2,2,", 0), 0u) << row2;
  EXPECT_FALSE(std::getline(csv, extra));
  EXPECT_TRUE(fs::exists(prefix + ".gp"));
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    std::ifstream png(prefix + ".png", std::ios::binary);
    char magic[8] = {};
    png.read(magic, 8);
    EXPECT_EQ(std::string(magic, 8), "\x89PNG\r\n\x1a\n");
    EXPECT_NE(out.str().find("wrote " + prefix + ".png"), std::string::npos) << out.str();
  }
  // A bad value is refused before anything runs.
  EXPECT_EQ(runBenchCli({"sweep", "--config", config, "--tier-ratio", "1:1"}, out, err, false), kExitUsage);
  EXPECT_NE(err.str().find("--tier-ratio 1:1: needs a config with exactly two tiers"), std::string::npos) << err.str();
  fs::remove_all(dir);
}

TEST(ProgressBarTest, RateAndEta) {
  ProgressSnapshot p;
  p.seconds = 2;
  p.total_ops = 1000;
  p.counts.gets = 400;
  p.counts.get_hits = 300;
  p.counts.sets = 100;
  EXPECT_EQ(formatProgressBar(p, 10), "[#####.....]  50.0%  250 ops/s  hit 75.00%  ETA 0:02");
  p.total_ops = 1'000'000;
  EXPECT_EQ(formatProgressBar(p, 4), "[....]   0.1%  250 ops/s  hit 75.00%  ETA 1:06:38");
  p.seconds = 0;
  EXPECT_EQ(formatProgressBar(p, 4), "[....]   0.1%  0 ops/s  hit 75.00%  ETA --:--");
  p.total_ops = 0;  // unknown total: a counter, no bar
  EXPECT_EQ(formatProgressBar(p, 4), "500 ops  0 ops/s  hit 75.00%");
}

}  // namespace
}  // namespace tiercache::bench
