// LatencyHistogram: percentiles within one bucket (6.25%) above the truth,
// never above the exact maximum, and merging equals recording in one.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "bench/latency.h"

namespace tiercache::bench {
namespace {

TEST(LatencyHistogram, PercentilesAreWithinOneBucketAboveTheExactOnes) {
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> dist(7.0, 1.5);  // ~1 us median, long tail
  std::vector<uint64_t> values;
  LatencyHistogram h;
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = static_cast<uint64_t>(dist(rng));
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const uint64_t exact = values[static_cast<size_t>(q * values.size()) - 1];
    const uint64_t got = h.percentile(q);
    EXPECT_GE(got, exact) << q;
    EXPECT_LE(static_cast<double>(got), static_cast<double>(exact) * 1.0625 + 1) << q;
  }
  EXPECT_EQ(h.max(), values.back());
  EXPECT_EQ(h.percentile(1.0), values.back());
  EXPECT_EQ(h.count(), values.size());
}

TEST(LatencyHistogram, SmallValuesAreExactAndEveryBucketEdgeRoundTrips) {
  LatencyHistogram h;
  for (uint64_t v = 0; v < 16; ++v) EXPECT_EQ(LatencyHistogram::upperEdge(LatencyHistogram::bucketOf(v)), v);
  for (uint64_t v : {16ull, 17ull, 1000ull, 123456789ull, (1ull << 40) + 5}) {
    const int b = LatencyHistogram::bucketOf(v);
    EXPECT_GE(LatencyHistogram::upperEdge(b), v);
    EXPECT_EQ(LatencyHistogram::bucketOf(LatencyHistogram::upperEdge(b)), b);
    EXPECT_LT(LatencyHistogram::bucketOf(v), LatencyHistogram::kBuckets);
  }
  EXPECT_EQ(h.percentile(0.5), 0u) << "empty";
}

TEST(LatencyHistogram, MergingPerThreadHistogramsEqualsOneHistogram) {
  LatencyHistogram a, b, all;
  for (uint64_t v = 1; v < 5000; v += 7) {
    (v % 2 ? a : b).record(v * 13);
    all.record(v * 13);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.max(), all.max());
  for (double q : {0.1, 0.5, 0.9, 0.99, 0.999}) EXPECT_EQ(a.percentile(q), all.percentile(q)) << q;
  const LatencySummary s = summarize(a);
  EXPECT_EQ(s.count, a.count());
  EXPECT_DOUBLE_EQ(s.max_us, static_cast<double>(a.max()) / 1e3);
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
}

TEST(LatencyHistogram, MeanIsExactAndCountsTheTail) {
  LatencyHistogram h;
  EXPECT_EQ(h.mean(), 0.0) << "empty";
  // 99 fast operations and one slow one: the percentiles below p99 do not
  // see it, the mean (what throughput follows) does.
  for (int i = 0; i < 99; ++i) h.record(1000);
  h.record(1001000);
  EXPECT_DOUBLE_EQ(h.mean(), 11000.0);
  EXPECT_LE(h.percentile(0.99), 1100u);
  EXPECT_DOUBLE_EQ(summarize(h).mean_us, 11.0);
}

}  // namespace
}  // namespace tiercache::bench
