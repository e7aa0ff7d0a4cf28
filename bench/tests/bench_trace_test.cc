// Traces: CSV and binary round trips, malformed input named by line or
// byte, and record -> replay giving the very hit ratio of the run.
#include "bench/trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "allocator/cache.h"
#include "bench/cli.h"
#include "bench/key_space.h"
#include "bench/runner.h"

namespace tiercache::bench {
namespace {

namespace fs = std::filesystem;

Trace sample() {
  Trace t;
  t.add("alpha", 100, RequestOp::kSet);
  t.add("alpha", 100, RequestOp::kGet);
  t.add("beta", 0, RequestOp::kGet);
  t.add("alpha", 7, RequestOp::kDel);
  t.add("lone", 127, RequestOp::kLoneGet);
  t.add("big", UINT32_MAX, RequestOp::kSet);
  t.add("with space and \xff bytes", 128, RequestOp::kSet);
  t.add(std::string(255, 'k'), 16384, RequestOp::kGet);
  return t;
}

void expectSame(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].key, b[i].key) << i;
    EXPECT_EQ(a[i].size, b[i].size) << i;
    EXPECT_EQ(a[i].op, b[i].op) << i;
  }
}

TEST(TraceTest, CsvRoundTrip) {
  Trace t = sample();
  std::string csv = traceToCsv(t);
  EXPECT_EQ(csv.substr(0, 60), "key,size,op\nalpha,100,set\nalpha,100,get\nbeta,0,get\nalpha,7,d");
  EXPECT_NE(csv.find("\nlone,127,lget\nbig,4294967295,set\n"), std::string::npos) << csv;
  expectSame(t, Trace::parseCsv(csv, "t.csv"));
  expectSame(t, Trace::parse(csv, "t.csv"));
  // Header optional, CRLF, comments and blank lines skipped.
  Trace u = Trace::parseCsv("# a comment\r\n\r\nx,1,get\r\ny,2,set\n", "u.csv");
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[1].key, "y");
  EXPECT_EQ(u[1].size, 2u);
  EXPECT_EQ(u[1].op, RequestOp::kSet);
}

TEST(TraceTest, BinaryRoundTripIsCompact) {
  Trace t = sample();
  std::string bin = traceToBinary(t);
  EXPECT_EQ(bin.substr(0, 8), std::string("TCTRACE\x01", 8));
  // set alpha 100: op 1, length 5, size 100 in one LEB128 byte, the key.
  EXPECT_EQ(bin.substr(8, 8), std::string("\x01\x05\x64" "alpha", 8));
  expectSame(t, Trace::parseBinary(bin, "t.bin"));
  expectSame(t, Trace::parse(bin, "t.bin"));
  EXPECT_LT(bin.size(), traceToCsv(t).size());
  // Both forms of a trace convert to each other without loss.
  expectSame(Trace::parse(traceToCsv(Trace::parse(bin, "b")), "c"), t);
}

void expectTraceError(const std::string& bytes, const std::string& message) {
  try {
    Trace::parse(bytes, "bad");
    ADD_FAILURE() << "no error; expected " << message;
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(TraceTest, MalformedInputNamesWhere) {
  expectTraceError("key,size,op\na,1,get\nb,x,get\n", "bad:3: size \"x\" is not a whole number");
  expectTraceError("a,1,fetch\n", "bad:1: op \"fetch\" is not get, set, del or lget");
  expectTraceError("a,1\n", "bad:1: expected key,size,op");
  expectTraceError("a,1,get,extra\n", "bad:1: expected key,size,op");
  expectTraceError(",1,get\n", "bad:1: empty key");
  expectTraceError("a,4294967296,set\n", "bad:1: size 4294967296 is 2^32 or more");
  std::string bin = traceToBinary(sample());
  expectTraceError(bin.substr(0, bin.size() - 1), "bad: record 7 at byte");
  expectTraceError(bin.substr(0, bin.size() - 1), "truncated");
  std::string badOp = std::string("TCTRACE\x01", 8) + std::string("\x09\x01\x01k", 4);
  expectTraceError(badOp, "bad: record 0 at byte 8: bad op 9");
  std::ostringstream os;
  TraceWriter csv(os, TraceFormat::kCsv);
  EXPECT_THROW(csv.write("a,b", 1, RequestOp::kGet), TraceError);
  EXPECT_THROW(csv.write("#a", 1, RequestOp::kGet), TraceError);
  EXPECT_THROW(csv.write(std::string(256, 'k'), 1, RequestOp::kGet), TraceError);
  EXPECT_EQ(TraceWriter::formatFor("x.csv"), TraceFormat::kCsv);
  EXPECT_EQ(TraceWriter::formatFor("x.bin"), TraceFormat::kBinary);
}

class TraceRoundTripTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tiercache_trace_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  int run(std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    return runBenchCli(args, out_, err_, false);
  }
  fs::path dir_;
  std::ostringstream out_, err_;
};

// record, replay: the same hit ratio, single-threaded. No background
// threads and no time-based LRU refresh, so the cache is deterministic.
TEST_F(TraceRoundTripTest, RecordThenReplayGivesTheSameHitRatio) {
  std::string config = (dir_ / "c.json").string();
  std::ofstream(config) << R"({"slab_size": "1MiB", "tiers": [{"name": "dram", "kind": "dram", "size": "8MiB"}],
    "eviction": {"lru_refresh_ms": 0},
    "workload": {"threads": 1, "ops_per_thread": 30000, "keys": 20000, "key_size": [8, 24],
                 "value_size": [100, 1500], "get_ratio": 0.7, "set_ratio": 0.2, "remove_ratio": 0.05,
                 "lone_get_ratio": 0.05, "popularity": {"distribution": "zipf", "alpha": 0.8}}})";
  ASSERT_EQ(run({"--config", config, "--json"}), kExitOk) << err_.str();
  nlohmann::json direct = nlohmann::json::parse(out_.str());
  double hitRatio = direct["cache"]["hit_ratio"];
  EXPECT_GT(hitRatio, 0.2);
  EXPECT_LT(hitRatio, 0.95);
  // A single-threaded run also gets its limits.
  EXPECT_GE(direct["hit_ratio_limits"]["optimal"].get<double>(), hitRatio);

  for (const char* name : {"t.csv", "t.bin"}) {
    SCOPED_TRACE(name);
    std::string trace = (dir_ / name).string();
    ASSERT_EQ(run({"record", "--config", config, "-o", trace}), kExitOk) << err_.str();
    EXPECT_EQ(out_.str(), "recorded 50,000 requests (20,000 prepopulate sets, then 30,000 from 1 thread(s)) to " +
                              trace + "\n");
    EXPECT_EQ(Trace::read(trace).size(), 50000u);
    ASSERT_EQ(run({"replay", "--config", config, "--trace", trace, "--json"}), kExitOk) << err_.str();
    nlohmann::json replay = nlohmann::json::parse(out_.str());
    EXPECT_EQ(replay["cache"]["gets"], direct["cache"]["gets"]);
    EXPECT_EQ(replay["cache"]["hits"], direct["cache"]["hits"]);
    EXPECT_DOUBLE_EQ(replay["cache"]["hit_ratio"].get<double>(), hitRatio);
    EXPECT_EQ(replay["ops"]["lookaside_sets"], direct["ops"]["lookaside_sets"]);
    EXPECT_EQ(replay["value_check_failures"], 0);
    // The limits see the same requests both ways.
    EXPECT_DOUBLE_EQ(replay["hit_ratio_limits"]["optimal"].get<double>(),
                     direct["hit_ratio_limits"]["optimal"].get<double>());
    EXPECT_DOUBLE_EQ(replay["hit_ratio_limits"]["lru"].get<double>(), direct["hit_ratio_limits"]["lru"].get<double>());
  }
}

// A cachebench config's couldExists are not written (they change nothing)
// and its lone sets are sets of their fresh keys.
TEST_F(TraceRoundTripTest, RecordLeavesCouldExistsOutAndWritesLoneSets) {
  std::string config = (dir_ / "cb.json").string();
  std::ofstream(config) << R"({"cache_config": {"cacheSizeMB": 16},
    "test_config": {"numOps": 4000, "numThreads": 1, "numKeys": 1000, "keySizeRange": [8, 9],
                    "keySizeRangeProbability": [1], "valSizeRange": [100, 101], "valSizeRangeProbability": [1],
                    "getRatio": 0.5, "couldExistRatio": 0.25, "loneSetRatio": 0.25}})";
  std::string trace = (dir_ / "t.csv").string();
  ASSERT_EQ(run({"record", "--config", config, "-o", trace}), kExitOk) << err_.str();
  const Trace t = Trace::read(trace);
  size_t loneSets = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].key[0] != '(') continue;
    ++loneSets;
    EXPECT_EQ(t[i].op, RequestOp::kSet);
    EXPECT_EQ(t[i].key.size(), KeySpace::kLoneSetKeySize);
  }
  EXPECT_NEAR(double(loneSets), 1000, 120);
  EXPECT_NEAR(double(t.size()), 3000, 120);
  EXPECT_NE(out_.str().find(" from 1 thread(s); "), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find(" couldExists left out) to "), std::string::npos) << out_.str();
}

TEST_F(TraceRoundTripTest, ReplayOnThreadsAndItsReport) {
  std::string config = (dir_ / "c.json").string();
  std::ofstream(config) << R"({"slab_size": "1MiB", "tiers": [{"name": "dram", "kind": "dram", "size": "4MiB"}],
    "workload": {"threads": 2, "ops_per_thread": 5000, "keys": 5000, "value_size": [100, 1000]}})";
  std::string trace = (dir_ / "t.bin").string();
  ASSERT_EQ(run({"record", "--config", config, "-o", trace}), kExitOk) << err_.str();
  ASSERT_EQ(run({"replay", "--config", config, "--trace", trace, "--threads", "2"}), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("Threads       : 2, 15,000 ops in "), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("  optimal     : "), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("Trace         : " + trace + ", 15,000 records (limits are for the trace in its own order)"),
            std::string::npos)
      << out_.str();
  EXPECT_NE(out_.str().find("Value check failures: 0"), std::string::npos);
  // Errors: missing trace, malformed trace.
  EXPECT_EQ(run({"replay", "--config", config}), kExitUsage);
  EXPECT_NE(err_.str().find("replay needs --trace TRACE"), std::string::npos);
  std::string bad = (dir_ / "bad.csv").string();
  std::ofstream(bad) << "a,1,get\nb,1,nope\n";
  EXPECT_EQ(run({"replay", "--config", config, "--trace", bad}), kExitUsage);
  EXPECT_NE(err_.str().find(bad + ":2: op \"nope\""), std::string::npos) << err_.str();
}

}  // namespace
}  // namespace tiercache::bench
