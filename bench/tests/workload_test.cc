// The bench's workload: config parsing, key space, value codec, and a short
// run on a real cache.
#include "bench/workload.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

#include "allocator/cache.h"
#include "bench/key_space.h"
#include "bench/runner.h"
#include "bench/value_codec.h"
#include "small_workload.h"

namespace tiercache::bench {
namespace {

TEST(WorkloadConfigTest, DefaultsWhenAbsent) {
  WorkloadConfig c = WorkloadConfig::fromJsonString(R"({"slab_size": "1MiB"})");
  WorkloadConfig d;
  EXPECT_EQ(c.toJson(), d.toJson());
}

TEST(WorkloadConfigTest, ParsesEveryField) {
  WorkloadConfig c = WorkloadConfig::fromJsonString(R"({"workload": {
      "threads": 3, "ops_per_thread": 500, "keys": 4096,
      "key_size": [8, 20], "value_size": ["1KiB", "4KiB"],
      "get_ratio": 0.5, "set_ratio": 0.3, "remove_ratio": 0.2,
      "popularity": {"distribution": "normal", "stddev_fraction": 0.25},
      "lookaside": false, "prepopulate": false, "seed": 99, "progress_interval_ms": 250}})");
  EXPECT_EQ(c.threads, 3u);
  EXPECT_EQ(c.ops_per_thread, 500u);
  EXPECT_EQ(c.keys, 4096u);
  EXPECT_EQ(c.key_size.min, 8u);
  EXPECT_EQ(c.key_size.max, 20u);
  EXPECT_EQ(c.value_size.min, 1024u);
  EXPECT_EQ(c.value_size.max, 4096u);
  EXPECT_DOUBLE_EQ(c.get_ratio, 0.5);
  EXPECT_DOUBLE_EQ(c.set_ratio, 0.3);
  EXPECT_DOUBLE_EQ(c.remove_ratio, 0.2);
  EXPECT_EQ(c.popularity.kind, PopularityKind::kNormal);
  EXPECT_DOUBLE_EQ(c.popularity.stddev_fraction, 0.25);
  EXPECT_FALSE(c.lookaside);
  EXPECT_FALSE(c.prepopulate);
  EXPECT_EQ(c.seed, 99u);
  EXPECT_EQ(c.progress_interval_ms, 250u);
}

TEST(WorkloadConfigTest, ShorthandsAndRoundTrip) {
  WorkloadConfig c = WorkloadConfig::fromJsonString(
      R"({"workload": {"popularity": "uniform", "value_size": "512", "key_size": 12,
                       "get_ratio": 1, "set_ratio": 0, "remove_ratio": 0}})");
  EXPECT_EQ(c.popularity.kind, PopularityKind::kUniform);
  EXPECT_EQ(c.value_size.min, 512u);
  EXPECT_EQ(c.value_size.max, 512u);
  EXPECT_EQ(c.key_size.min, 12u);

  WorkloadConfig z = WorkloadConfig::fromJsonString(
      R"({"workload": {"popularity": {"distribution": "zipf", "alpha": 1.2}}})");
  EXPECT_EQ(z.popularity.kind, PopularityKind::kZipf);
  EXPECT_DOUBLE_EQ(z.popularity.alpha, 1.2);
  for (const WorkloadConfig& w : {c, z}) {
    WorkloadConfig back = WorkloadConfig::fromJsonString(R"({"workload": )" + w.toJson() + "}");
    EXPECT_EQ(back.toJson(), w.toJson());
  }
}

TEST(WorkloadConfigTest, ErrorsNameTheKey) {
  expectWorkloadError(R"({"get_ratio": 1.5, "set_ratio": 0})", "workload.get_ratio", "1.5 is out of range [0, 1]");
  expectWorkloadError(R"({"set_ratio": -0.1})", "workload.set_ratio", "out of range [0, 1]");
  expectWorkloadError(R"({"get_ratio": 0.5, "set_ratio": 0.3})", "workload", "sum to 1");
  expectWorkloadError(R"({"threads": 0})", "workload.threads", "0 is out of range [1, 1024]");
  expectWorkloadError(R"({"threads": "2"})", "workload.threads", "expected an integer >= 0, got string");
  expectWorkloadError(R"({"keys": -5})", "workload.keys", "negative");
  expectWorkloadError(R"({"keys": 0})", "workload.keys", "0 is out of range [1, ");
  expectWorkloadError(R"({"ops_per_thread": 1.5})", "workload.ops_per_thread", "whole number");
  expectWorkloadError(R"({"thread": 2})", "workload.thread", "unknown key");
  expectWorkloadError(R"({"value_size": [64, "4KB"]})", "workload.value_size[1]", "");
  expectWorkloadError(R"({"value_size": [64, 32, 16]})", "workload.value_size", "[min, max]");
  expectWorkloadError(R"({"value_size": [4096, 64]})", "workload.value_size", "min must not exceed max");
  expectWorkloadError(R"({"value_size": true})", "workload.value_size", "expected a size");
  expectWorkloadError(R"({"key_size": [4, 300]})", "workload.key_size", "300B is out of range [1B, 255B]");
  expectWorkloadError(R"({"keys": 100000, "key_size": [0, 16]})", "workload.key_size", "0 is out of range [1B, 255B]");
  expectWorkloadError(R"({"key_pools": [1, 0], "op_pools": [1, 1]})", "workload.key_pools[1]", "no keys");
  expectWorkloadError(R"({"key_pools": [1, 1], "op_pools": [1]})", "workload.op_pools", "1 entries for 2 key pools");
  expectWorkloadError(R"({"key_pools": [0, 0]})", "workload.key_pools", "must not all be 0");
  expectWorkloadError(R"({"popularity": "pareto"})", "workload.popularity",
                      "unknown value \"pareto\", expected one of: uniform, zipf");
  expectWorkloadError(R"({"popularity": {"alpha": 0.9}})", "workload.popularity.distribution",
                      "required key is missing");
  expectWorkloadError(R"({"popularity": {"distribution": "zipf", "alpha": 0}})", "workload.popularity.alpha",
                      "(0, 10]");
  expectWorkloadError(R"({"popularity": {"distribution": "zipf", "alpha": "high"}})", "workload.popularity.alpha",
                      "expected a number");
  expectWorkloadError(R"({"popularity": {"distribution": "uniform", "alpha": 0.9}})", "workload.popularity.alpha",
                      "only applies to the zipf");
  expectWorkloadError(R"({"popularity": {"distribution": "normal", "stddev_fraction": -1}})",
                      "workload.popularity.stddev_fraction", "(0, 10]");
  expectWorkloadError(R"({"popularity": {"distribution": "normal", "sigma": 1}})", "workload.popularity.sigma",
                      "unknown key");
  expectWorkloadError(R"({"lookaside": 1})", "workload.lookaside", "true or false");
  expectWorkloadError(R"({"progress_interval_ms": 99999999})", "workload.progress_interval_ms",
                      "out of range [0, 3600000]");
  expectWorkloadError(R"([1, 2])", "workload", "expected an object, got array");
  expectWorkloadError(R"({"seed": 1, "threads": 2, "seed": 3})", "workload.seed", "more than once");
  expectWorkloadError(R"({"popularity": {"distribution": "zipf", "alpha": 1, "alpha": 2}})",
                      "workload.popularity.alpha", "more than once");

  try {
    WorkloadConfig::fromJsonString("{\"workload\": {");
    ADD_FAILURE() << "no error for broken JSON";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "");
    EXPECT_NE(std::string(e.what()).find("JSON syntax error at line 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(WorkloadConfig::fromJsonFile("/nonexistent/tiercache.json"), ConfigError);
}

// The workload's rows are in the cache's schema engine: the same mistake
// gets the cache's words.
TEST(WorkloadConfigTest, SameWordingAsTheCache) {
  auto reason = [](const std::function<void()>& fn) {
    try {
      fn();
    } catch (const ConfigError& e) {
      return e.reason();
    }
    return std::string("no error");
  };
  for (const std::string v : {R"("x")", "-3", "true", "[1]"}) {
    SCOPED_TRACE(v);
    EXPECT_EQ(reason([&] { WorkloadConfig::fromJsonString(R"({"workload":{"threads":)" + v + "}}"); }),
              reason([&] {
                CacheConfig::fromJsonString(R"({"tiers":[{"name":"t","size":"64MiB"}],"index":{"bucket_power":)" + v +
                                            "}}");
              }));
  }
  EXPECT_EQ(reason([] { WorkloadConfig::fromJsonString(R"({"workload":{"thread":2}})"); }),
            "unknown key (did you mean 'threads'?)");
}

// What the bench always accepted stays accepted: counts and sizes written as
// JSON numbers without a fraction, a distribution's own parameters.
TEST(WorkloadConfigTest, OldInputsStillParse) {
  const WorkloadConfig w = WorkloadConfig::fromJsonString(
      R"({"workload":{"ops_per_thread":1e6,"value_size":[64,4096.0],"popularity":{"distribution":"zipf","alpha":0.9}}})");
  EXPECT_EQ(w.ops_per_thread, 1000000u);
  EXPECT_EQ(w.value_size.max, 4096u);
  expectWorkloadError(R"({"seed": 1.5})", "workload.seed", "1.5 is not a whole number");
  // A parameter of another distribution is refused when written, even at its default.
  expectWorkloadError(R"({"popularity": {"distribution": "uniform", "alpha": 0.9}})", "workload.popularity.alpha",
                      "only applies to the zipf distribution");
  EXPECT_EQ(popularityName(PopularityKind::kPiecewise), std::string("piecewise"));
}

TEST(KeySpaceTest, KeysAreUniqueWithinRangeAndStable) {
  KeySpace ks(5000, SizeRange{4, 40}, SizeRange{64, 4096});
  EXPECT_EQ(KeySpace::indexWidth(5000), 4u);  // 0x1387
  EXPECT_EQ(KeySpace::indexWidth(1), 1u);
  EXPECT_EQ(KeySpace::indexWidth(16), 1u);
  EXPECT_EQ(KeySpace::indexWidth(17), 2u);
  std::set<std::string> seen;
  std::set<size_t> lengths, valueSizes;
  for (uint64_t i = 0; i < 5000; ++i) {
    std::string k = ks.key(i);
    EXPECT_GE(k.size(), 4u);
    EXPECT_LE(k.size(), 40u);
    EXPECT_EQ(k.size(), ks.keyLength(i));
    EXPECT_EQ(k, ks.key(i));
    EXPECT_TRUE(seen.insert(k).second) << "duplicate key " << k;
    size_t v = ks.valueSize(i);
    EXPECT_GE(v, 64u);
    EXPECT_LE(v, 4096u);
    lengths.insert(k.size());
    valueSizes.insert(v);
  }
  EXPECT_EQ(ks.key(0x1234).substr(0, 4), "1234");
  // The sizes spread over their ranges rather than sticking to one value.
  EXPECT_EQ(lengths.size(), 37u);
  EXPECT_GT(valueSizes.size(), 1000u);
}

TEST(ValueCodecTest, RoundTripAndEveryCorruptionDetected) {
  const std::string key = "0042abcdefgh";
  for (size_t size : {0, 1, 7, 15, 16, 17, 100, 4096, 70000, 140000}) {
    std::string v(size, '\0');
    ValueCodec::fill(key, 7, v.data(), size);
    EXPECT_TRUE(ValueCodec::verify(key, size, v)) << size;
    if (size == 0) continue;
    // Any single changed byte fails: header, body, last byte.
    for (size_t pos : {size_t(0), size / 2, size - 1, std::min<size_t>(9, size - 1), std::min<size_t>(16, size - 1)}) {
      std::string bad = v;
      bad[pos] ^= 0x20;
      EXPECT_FALSE(ValueCodec::verify(key, size, bad)) << "size " << size << " pos " << pos;
    }
    EXPECT_FALSE(ValueCodec::verify("0042abcdefgi", size, v)) << "another key's value, size " << size;
    EXPECT_FALSE(ValueCodec::verify(key, size + 1, v));
    EXPECT_FALSE(ValueCodec::verify(key, size, std::string_view(v).substr(0, size - 1)));
    // A truncated value does not pass for a shorter one either (0 bytes is trivially valid).
    if (size > 1) EXPECT_FALSE(ValueCodec::verify(key, size - 1, std::string_view(v).substr(0, size - 1)));
  }
}

TEST(ValueCodecTest, StampsMakeWritesDistinctAndTornWritesFail) {
  const std::string key = "00ffkey";
  std::string a(1000, '\0'), b(1000, '\0');
  ValueCodec::fill(key, 1, a.data(), a.size());
  ValueCodec::fill(key, 2, b.data(), b.size());
  EXPECT_NE(a, b);
  EXPECT_TRUE(ValueCodec::verify(key, 1000, a));
  EXPECT_TRUE(ValueCodec::verify(key, 1000, b));
  std::string torn = a.substr(0, 500) + b.substr(500);
  EXPECT_FALSE(ValueCodec::verify(key, 1000, torn));
  // The header alone is not enough: its body window must match too.
  std::string swapped = b.substr(0, 16) + a.substr(16);
  EXPECT_FALSE(ValueCodec::verify(key, 1000, swapped));
}

TEST(WorkloadRunTest, ShortRunVerifiesEveryValueAndMovesCounters) {
  Cache cache(CacheConfig::dram(16ull << 20));
  WorkloadConfig w = smallWorkload();
  int progressCalls = 0;
  RunOptions options;
  options.progress = [&](const ProgressSnapshot&) { ++progressCalls; };
  options.progress_interval = std::chrono::milliseconds(1);
  WorkloadResult r = runWorkload(cache, w, options);

  EXPECT_EQ(r.ops.value_mismatches, 0u) << r.first_mismatch;
  EXPECT_EQ(r.first_mismatch, "");
  EXPECT_EQ(r.prepopulate.sets, w.keys);
  EXPECT_GT(r.prepopulate.set_success, 0u);
  EXPECT_EQ(r.ops.ops(), w.threads * w.ops_per_thread);
  EXPECT_GT(r.ops.gets, 0u);
  EXPECT_GT(r.ops.get_hits, 0u);
  EXPECT_LT(r.ops.get_hits, r.ops.gets);  // the key space does not fit
  EXPECT_GT(r.ops.lookaside_sets, 0u);
  EXPECT_EQ(r.ops.lookaside_sets, r.ops.gets - r.ops.get_hits);
  EXPECT_GT(r.ops.set_success, 0u);
  EXPECT_GT(r.ops.removes, 0u);
  EXPECT_GT(r.ops.remove_success, 0u);
  // The cache saw exactly the finds the workload issued.
  EXPECT_EQ(r.after.gets - r.before.gets, r.ops.gets);
  EXPECT_EQ(r.after.hits - r.before.hits, r.ops.get_hits);
  EXPECT_GT(r.after.alloc_attempts, r.before.alloc_attempts);
  EXPECT_GT(r.after.evictions, 0u);
  EXPECT_GT(r.after.items, 0u);
  EXPECT_GT(r.elapsed_seconds, 0.0);
  EXPECT_GE(progressCalls, 0);  // timing-dependent; must simply not crash
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(WorkloadRunTest, SameSeedSameOpsSingleThread) {
  // One thread: the op sequence is fixed by the seed, so the counts are too.
  WorkloadConfig w = smallWorkload();
  w.threads = 1;
  w.ops_per_thread = 5'000;
  w.keys = 2'000;  // fits: no eviction, so hits depend on the sequence alone
  w.prepopulate = false;
  auto run = [&](uint64_t seed) {
    Cache cache(CacheConfig::dram(48ull << 20));  // 48 slabs: every class gets one
    w.seed = seed;
    return runWorkload(cache, w).ops;
  };
  OpCounts a = run(11), b = run(11), c = run(12);
  EXPECT_EQ(a.gets, b.gets);
  EXPECT_EQ(a.get_hits, b.get_hits);
  EXPECT_EQ(a.removes, b.removes);
  EXPECT_EQ(a.remove_success, b.remove_success);
  EXPECT_EQ(a.value_mismatches, 0u);
  EXPECT_TRUE(a.gets != c.gets || a.get_hits != c.get_hits || a.remove_success != c.remove_success);
}

TEST(WorkloadRunTest, WrongValueInTheCacheIsCounted) {
  // A value the codec did not write (or that belongs to another key) must
  // be caught: plant bad values, then only read.
  Cache cache(CacheConfig::dram(8ull << 20));
  WorkloadConfig w = smallWorkload();
  w.threads = 1;
  w.keys = 16;
  w.key_size = {4, 4};
  w.get_ratio = 1;
  w.set_ratio = 0;
  w.remove_ratio = 0;
  w.lookaside = false;
  w.prepopulate = false;
  w.ops_per_thread = 200;
  KeySpace ks(w);
  for (uint64_t i = 0; i < w.keys; ++i) {
    std::string v(ks.valueSize(i), '\0');
    ValueCodec::fill(ks.key(i), 1, v.data(), v.size());
    if (i == 3) v[v.size() / 2] ^= 1;
    ASSERT_TRUE(cache.set(ks.key(i), v));
  }
  WorkloadResult r = runWorkload(cache, w);
  EXPECT_EQ(r.ops.get_hits, r.ops.gets);
  EXPECT_GT(r.ops.value_mismatches, 0u);
  EXPECT_LT(r.ops.value_mismatches, r.ops.gets);
  EXPECT_NE(r.first_mismatch.find("key index 3"), std::string::npos) << r.first_mismatch;
}

}  // namespace
}  // namespace tiercache::bench
