// The workload's cachebench-shaped pieces: piecewise sizes and popularity,
// lone gets, and the request stream the runner, record and the simulators share.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "allocator/cache.h"
#include "bench/key_space.h"
#include "bench/popularity.h"
#include "bench/request_stream.h"
#include "bench/runner.h"
#include "bench/workload.h"
#include "small_workload.h"

namespace tiercache::bench {
namespace {

const char* kPieces = R"({"workload": {"keys": 1000, "key_size_buckets": [{"range": [8, 8], "weight": 1},
    {"range": [20, 30], "weight": 3}], "value_size_buckets": [{"range": [100, 100], "weight": 0.5},
    {"range": [1000, 2000], "weight": 0.5}], "get_ratio": 0.5, "set_ratio": 0.3, "remove_ratio": 0.1,
    "lone_get_ratio": 0.1, "popularity": {"distribution": "piecewise", "buckets": [1, 9], "weights": [9, 1]}}})";

TEST(WorkloadPiecesTest, ParseRoundTripAndEnvelope) {
  WorkloadConfig c = WorkloadConfig::fromJsonString(kPieces);
  EXPECT_EQ(c.key_size.min, 8u);
  EXPECT_EQ(c.key_size.max, 30u);
  EXPECT_EQ(c.value_size.min, 100u);
  EXPECT_EQ(c.value_size.max, 2000u);
  EXPECT_DOUBLE_EQ(c.lone_get_ratio, 0.1);
  EXPECT_EQ(c.popularity.kind, PopularityKind::kPiecewise);
  std::string json = c.toJson();
  EXPECT_EQ(json.find("\"key_size\""), std::string::npos);  // replaced by the buckets
  WorkloadConfig again = WorkloadConfig::fromJsonString("{\"workload\": " + json + "}");
  EXPECT_EQ(again.toJson(), json);
}

TEST(WorkloadPiecesTest, ErrorsNameTheKey) {
  expectWorkloadError(R"({"value_size": 10, "value_size_buckets": [{"range": [1, 2]}]})", "workload.value_size",
                      "not both");
  expectWorkloadError(R"({"value_size_buckets": []})", "workload.value_size_buckets", "must not be empty");
  expectWorkloadError(R"({"value_size_buckets": [{"weight": 1}]})", "workload.value_size_buckets[0].range",
                      "required key is missing");
  expectWorkloadError(R"({"value_size_buckets": [{"range": [5, 1]}]})", "workload.value_size_buckets[0].range",
                      "min must not exceed max");
  expectWorkloadError(R"({"value_size_buckets": [{"range": [1, 2], "weight": 0}]})", "workload.value_size_buckets",
                      "must not all be 0");
  expectWorkloadError(R"({"value_size_buckets": [{"range": [1, 2], "size": 0}]})",
                      "workload.value_size_buckets[0].size", "unknown key");
  expectWorkloadError(R"({"get_ratio": 0.8, "set_ratio": 0.1, "lone_get_ratio": 0.2})", "workload",
                      "get_ratio + set_ratio + remove_ratio + lone_get_ratio must sum to 1");
  expectWorkloadError(R"({"popularity": {"distribution": "piecewise", "buckets": [1, 2], "weights": [1]}})",
                      "workload.popularity.weights", "one weight per bucket (2), not 1");
  expectWorkloadError(R"({"popularity": {"distribution": "piecewise", "weights": [1]}})", "workload.popularity.buckets",
                      "at least one bucket");
  expectWorkloadError(R"({"popularity": {"distribution": "zipf", "buckets": [1]}})", "workload.popularity.buckets",
                      "only applies to the piecewise distribution");
}

TEST(WorkloadPiecesTest, SizesFollowTheirBuckets) {
  WorkloadConfig c = WorkloadConfig::fromJsonString(kPieces);
  KeySpace keys(c);
  int shortKeys = 0, smallValues = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    size_t k = keys.keyLength(i), v = keys.valueSize(i);
    ASSERT_TRUE(k == 8 || (k >= 20 && k <= 30)) << k;
    ASSERT_TRUE(v == 100 || (v >= 1000 && v <= 2000)) << v;
    shortKeys += k == 8;
    smallValues += v == 100;
    EXPECT_EQ(keys.key(i).size(), k);
  }
  EXPECT_NEAR(shortKeys, 250, 60);   // weight 1 of 4
  EXPECT_NEAR(smallValues, 500, 70);  // weight 1 of 2
}

TEST(WorkloadPiecesTest, LoneKeysAreDistinctFromEveryKey) {
  KeySpace keys(300, {4, 12}, {10, 10});
  std::set<std::string> all;
  for (uint64_t i = 0; i < 300; ++i) all.insert(keys.key(i));
  for (uint64_t i = 0; i < 300; ++i) {
    std::string lone = keys.loneKey(i);
    EXPECT_EQ(lone.size(), keys.keyLength(i));
    EXPECT_TRUE(all.insert(lone).second) << lone;
    EXPECT_NE(lone[0], '#');
    EXPECT_NE(lone[0], ',');
  }
}

TEST(WorkloadPiecesTest, PiecewisePopularity) {
  PiecewiseSampler s(1000, {1, 9}, {9, 1});
  // Bucket 0 = keys [0, 100) with 90% of the draws.
  EXPECT_DOUBLE_EQ(s.probability(0), 0.9 / 100);
  EXPECT_DOUBLE_EQ(s.probability(99), 0.9 / 100);
  EXPECT_DOUBLE_EQ(s.probability(100), 0.1 / 900);
  EXPECT_DOUBLE_EQ(s.probability(1000), 0.0);
  Rng rng(5);
  int hot = 0;
  for (int i = 0; i < 20000; ++i) {
    uint64_t k = s.sample(rng);
    ASSERT_LT(k, 1000u);
    hot += k < 100;
  }
  EXPECT_NEAR(hot, 18000, 300);
  // Tiny key spaces still give every bucket a key.
  PiecewiseSampler tiny(3, {100, 1, 1}, {1, 1, 1});
  EXPECT_GT(tiny.probability(0), 0);
  EXPECT_GT(tiny.probability(1), 0);
  EXPECT_GT(tiny.probability(2), 0);
}

TEST(WorkloadPiecesTest, StreamMixAndLoneGetsInARun) {
  WorkloadConfig c = WorkloadConfig::fromJsonString(kPieces);
  std::unique_ptr<KeySampler> sampler = KeySampler::make(c.popularity, c.keys);
  RequestStream stream(c, *sampler, 0);
  std::map<RequestOp, int> ops;
  for (int i = 0; i < 10000; ++i) ops[stream.next().op]++;
  EXPECT_NEAR(ops[RequestOp::kGet], 5000, 250);
  EXPECT_NEAR(ops[RequestOp::kSet], 3000, 250);
  EXPECT_NEAR(ops[RequestOp::kDel], 1000, 150);
  EXPECT_NEAR(ops[RequestOp::kLoneGet], 1000, 150);
  // In a run, lone gets always miss and are never filled.
  c.threads = 1;
  c.ops_per_thread = 4000;
  c.lone_get_ratio = 1.0;
  c.get_ratio = c.set_ratio = c.remove_ratio = 0;
  Cache cache(CacheConfig::dram(16ull << 20));
  WorkloadResult r = runWorkload(cache, c);
  EXPECT_EQ(r.ops.gets, 4000u);
  EXPECT_EQ(r.ops.get_hits, 0u);
  EXPECT_EQ(r.ops.lookaside_sets, 0u);
  EXPECT_EQ(r.ops.value_mismatches, 0u);
  // Prepopulate order: coldest (highest index) first, threads interleaved.
  EXPECT_EQ(RequestStream::prepopulateCount(10, 3, 0), 4u);
  EXPECT_EQ(RequestStream::prepopulateCount(10, 3, 2), 3u);
  EXPECT_EQ(RequestStream::prepopulateIndex(10, 3, 1, 0), 8u);
  EXPECT_EQ(RequestStream::prepopulateIndex(10, 3, 1, 2), 2u);
}

}  // namespace
}  // namespace tiercache::bench
