// A/B comparison statistics and the table: medians, spread, the
// Mann-Whitney U test's exact p-values, and the benchstat-like layout.
#include "bench/compare.h"

#include <gtest/gtest.h>

namespace tiercache::bench {
namespace {

TEST(CompareTest, MedianAndSpread) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0);
  // Largest distance from the median over the median: |130 - 100| / 100.
  EXPECT_DOUBLE_EQ(spread({90, 100, 130}), 0.3);
  EXPECT_DOUBLE_EQ(spread({5, 5, 5}), 0);
}

TEST(CompareTest, MannWhitneyExactPValues) {
  // Fully separated 5 + 5: only 2 of the C(10,5) = 252 orders are as extreme.
  EXPECT_NEAR(mannWhitneyP({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 2.0 / 252, 1e-12);
  EXPECT_NEAR(mannWhitneyP({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}), 2.0 / 252, 1e-12);
  // 3 + 3: 2 / C(6,3) = 0.1, never significant at 0.05.
  EXPECT_NEAR(mannWhitneyP({1, 2, 3}, {4, 5, 6}), 0.1, 1e-12);
  // Interleaved: U = 10 against a mean of 12.5; P(U <= 10) = 87/252.
  EXPECT_NEAR(mannWhitneyP({1, 3, 5, 7, 9}, {2, 4, 6, 8, 10}), 174.0 / 252, 1e-12);
  // One value off the end: U = 1; P(U <= 1) = 2/252, so p = 4/252.
  EXPECT_NEAR(mannWhitneyP({1, 2, 3, 4, 6}, {5, 7, 8, 9, 10}), 4.0 / 252, 1e-12);
  EXPECT_DOUBLE_EQ(mannWhitneyP({}, {1}), 1.0);
  // Ties use the normal approximation: all equal is no evidence at all.
  EXPECT_DOUBLE_EQ(mannWhitneyP({5, 5, 5}, {5, 5, 5}), 1.0);
  double p = mannWhitneyP({1, 1, 2, 2, 3, 3, 4, 4}, {5, 5, 6, 6, 7, 7, 8, 8});
  EXPECT_GT(p, 0.0005);
  EXPECT_LT(p, 0.005);
}

TEST(CompareTest, TableLikeBenchstat) {
  std::vector<ComparisonRow> rows = {
      {"get/s", {500e3, 510e3, 490e3, 505e3, 495e3}, {600e3, 610e3, 590e3, 605e3, 595e3}, false},
      {"set/s", {100, 101, 99, 100, 100}, {100, 99, 101, 100, 100}, false},
      {"hit ratio", {0.70, 0.71, 0.69, 0.70, 0.70}, {0.80, 0.81, 0.79, 0.80, 0.80}, true},
  };
  std::string table = formatComparison("A: off.json", "B: on.json", rows);
  EXPECT_EQ(table,
            "figure     A: off.json  B: on.json   delta\n"
            "get/s      500k ± 2%    600k ± 2%    +20.00% (p=0.008 n=5+5)\n"
            "set/s      100.00 ± 1%  100.00 ± 1%  ~ (p=1.000 n=5+5)\n"
            "hit ratio  70.00% ± 1%  80.00% ± 1%  +10.00pp (p=0.010 n=5+5)\n");
  // (the hit ratios have ties, so their p-value is the normal approximation's)
}

TEST(CompareTest, ShortNumbers) {
  EXPECT_EQ(shortNumber(1234567), "1.235M");
  EXPECT_EQ(shortNumber(536100), "536.1k");
  EXPECT_EQ(shortNumber(12.5), "12.50");
  EXPECT_EQ(shortNumber(2.5e9), "2.5G");
}

}  // namespace
}  // namespace tiercache::bench
