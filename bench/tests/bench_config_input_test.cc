// tiercache-bench on hostile config files (issue 9, item 17): each is a
// config error, exit 2, naming the file or key; none crashes, none reads
// without end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/cli.h"

namespace tiercache::bench {
namespace {

class BenchConfigInput : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const std::string& f : files_) std::remove(f.c_str());
  }
  std::string write(const std::string& text) {
    const std::string path = ::testing::TempDir() + "/tiercache_bench_input_" + std::to_string(getpid()) + "_" +
                             std::to_string(files_.size()) + ".json";
    std::ofstream(path, std::ios::binary) << text;
    files_.push_back(path);
    return path;
  }
  int run(const std::string& config) {
    out_.str("");
    err_.str("");
    return runBenchCli({"run", "--config", config}, out_, err_, false);
  }
  std::ostringstream out_, err_;
  std::vector<std::string> files_;
};

const char* kTiers = R"("tiers": [{"name": "dram", "kind": "dram", "size": "16MiB"}])";

TEST_F(BenchConfigInput, DevZeroIsRefusedNotReadForever) {
  EXPECT_EQ(run("/dev/zero"), kExitUsage);
  EXPECT_NE(err_.str().find("not a regular file"), std::string::npos) << err_.str();
}

TEST_F(BenchConfigInput, DeepNestingIsAConfigError) {
  EXPECT_EQ(run(write("{" + std::string(kTiers) + R"(, "workload": )" + std::string(50000, '[') +
                      std::string(50000, ']') + "}")),
            kExitUsage);
  EXPECT_NE(err_.str().find("nested deeper than 64"), std::string::npos) << err_.str();
}

TEST_F(BenchConfigInput, OverflowingNumberNamesTheKey) {
  EXPECT_EQ(run(write(R"({"slab_size": 1e400, )" + std::string(kTiers) + "}")), kExitUsage);
  EXPECT_NE(err_.str().find("slab_size: number out of range"), std::string::npos) << err_.str();
}

TEST_F(BenchConfigInput, NulInAKeyNamesTheKey) {
  EXPECT_EQ(run(write("{" + std::string(kTiers) + R"(, "sl\u0000ab": 1})")), kExitUsage);
  EXPECT_NE(err_.str().find("sl\\x00ab: key contains a NUL byte"), std::string::npos) << err_.str();
}

TEST_F(BenchConfigInput, HugeUnknownKeyIsEchoedShort) {
  EXPECT_EQ(run(write("{" + std::string(kTiers) + ", \"" + std::string(3 << 20, 'k') + "\": 1}")), kExitUsage);
  EXPECT_LT(err_.str().size(), 400u);
  EXPECT_NE(err_.str().find("unknown key"), std::string::npos) << err_.str().substr(0, 400);
}

}  // namespace
}  // namespace tiercache::bench
