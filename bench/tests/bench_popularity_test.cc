// Key popularity samplers: the empirical distribution matches the intended
// one (fixed seeds, tolerances of many standard deviations, so the tests are
// deterministic and still fail for a wrong sampler).
#include "bench/popularity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tiercache::bench {
namespace {

std::vector<uint64_t> histogram(const KeySampler& s, uint64_t keys, uint64_t draws, uint64_t seed = 1) {
  std::vector<uint64_t> counts(keys, 0);
  Rng rng(seed);
  for (uint64_t i = 0; i < draws; ++i) {
    uint64_t k = s.sample(rng);
    EXPECT_LT(k, keys);
    if (k < keys) ++counts[k];
  }
  return counts;
}

TEST(RngTest, DeterministicPerSeedAndThread) {
  Rng a = Rng::forThread(7, 0), b = Rng::forThread(7, 0), c = Rng::forThread(7, 1), d = Rng::forThread(8, 0);
  uint64_t x = a.next();
  EXPECT_EQ(x, b.next());
  EXPECT_NE(x, c.next());
  EXPECT_NE(x, d.next());
  Rng r(3);
  for (int i = 0; i < 10000; ++i) {
    double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    ASSERT_LT(r.below(10), 10u);
  }
}

TEST(PopularityTest, UniformCoversEveryKeyEvenly) {
  UniformSampler s(100);
  auto counts = histogram(s, 100, 200'000);
  for (uint64_t k = 0; k < 100; ++k) {
    EXPECT_GT(counts[k], 1600u) << k;  // expected 2000, sd ~44
    EXPECT_LT(counts[k], 2400u) << k;
  }
  EXPECT_DOUBLE_EQ(s.probability(5), 0.01);
}

TEST(PopularityTest, ZipfMatchesExpectedFrequencies) {
  const uint64_t keys = 1000, draws = 400'000;
  ZipfSampler s(keys, 0.9);
  double total = 0;
  for (uint64_t k = 0; k < keys; ++k) total += s.probability(k);
  EXPECT_NEAR(total, 1.0, 1e-9);
  // p(0) = 1 / sum_{k=1..1000} k^-0.9
  double h = 0;
  for (int k = 1; k <= 1000; ++k) h += std::pow(k, -0.9);
  EXPECT_NEAR(s.probability(0), 1.0 / h, 1e-12);

  auto counts = histogram(s, keys, draws);
  for (uint64_t k : {0, 1, 2, 3, 9, 99}) {
    double expected = s.probability(k) * draws;
    double sd = std::sqrt(expected);
    EXPECT_NEAR(double(counts[k]), expected, 6 * sd) << "rank " << k + 1;
  }
  // Rank order holds at the head, where neighbours differ by many sd.
  for (uint64_t k = 0; k < 5; ++k) EXPECT_GT(counts[k], counts[k + 1]) << k;
  // The head and the tail carry their share of the mass.
  double head = 0, headExpected = 0;
  for (uint64_t k = 0; k < 10; ++k) {
    head += counts[k];
    headExpected += s.probability(k) * draws;
  }
  EXPECT_NEAR(head, headExpected, 0.02 * headExpected);
  EXPECT_GT(counts[keys - 1], 0u);
}

TEST(PopularityTest, ZipfAlphaOneAndSteep) {
  for (double alpha : {1.0, 1.5, 0.5}) {
    const uint64_t keys = 500, draws = 200'000;
    ZipfSampler s(keys, alpha);
    auto counts = histogram(s, keys, draws, 9);
    for (uint64_t k : {0, 1, 4}) {
      double expected = s.probability(k) * draws;
      EXPECT_NEAR(double(counts[k]), expected, 6 * std::sqrt(expected)) << "alpha " << alpha << " rank " << k + 1;
    }
    // p(1)/p(2) = 2^alpha
    EXPECT_NEAR(s.probability(0) / s.probability(1), std::pow(2.0, alpha), 1e-9);
  }
}

TEST(PopularityTest, ZipfHugeKeySpaceNeedsNoTable) {
  const uint64_t keys = 1'000'000'000;
  ZipfSampler s(keys, 0.99);
  Rng rng(4);
  uint64_t zero = 0, draws = 100'000;
  for (uint64_t i = 0; i < draws; ++i) {
    uint64_t k = s.sample(rng);
    ASSERT_LT(k, keys);
    zero += k == 0;
  }
  double expected = s.probability(0) * draws;
  EXPECT_NEAR(double(zero), expected, 6 * std::sqrt(expected));
}

TEST(PopularityTest, ZipfSingleKey) {
  ZipfSampler s(1, 0.9);
  Rng rng(1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.sample(rng), 0u);
}

TEST(PopularityTest, NormalIsCentered) {
  const uint64_t keys = 100'000, draws = 200'000;
  NormalSampler s(keys, 0.1);
  Rng rng(2);
  double sum = 0, sumSq = 0;
  for (uint64_t i = 0; i < draws; ++i) {
    double k = double(s.sample(rng));
    ASSERT_LT(k, double(keys));
    sum += k;
    sumSq += k * k;
  }
  double mean = sum / draws, sd = std::sqrt(sumSq / draws - mean * mean);
  EXPECT_NEAR(mean, keys / 2.0, 0.005 * keys);  // se of the mean ~ 22
  EXPECT_NEAR(sd, 0.1 * keys, 0.005 * keys);
  EXPECT_GT(s.probability(keys / 2), s.probability(keys / 4));
}

TEST(PopularityTest, FactoryPicksTheConfiguredSampler) {
  PopularityConfig c;
  c.kind = PopularityKind::kUniform;
  EXPECT_NE(dynamic_cast<UniformSampler*>(KeySampler::make(c, 10).get()), nullptr);
  c.kind = PopularityKind::kZipf;
  EXPECT_NE(dynamic_cast<ZipfSampler*>(KeySampler::make(c, 10).get()), nullptr);
  c.kind = PopularityKind::kNormal;
  EXPECT_NE(dynamic_cast<NormalSampler*>(KeySampler::make(c, 10).get()), nullptr);
}

}  // namespace
}  // namespace tiercache::bench
