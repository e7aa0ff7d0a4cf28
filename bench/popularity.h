// Popularity: which key index an operation touches.
//
// Samplers are immutable after construction and shared by all worker
// threads; each thread brings its own Rng, so a run is deterministic per
// (seed, thread) whatever the scheduling.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bench/key_space.h"
#include "bench/workload.h"

namespace tiercache::bench {

// splitmix64 as a generator: 64-bit state, full period, passes BigCrush;
// plenty for picking keys and much cheaper than std::mt19937_64.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  // The stream of thread `thread` in a run seeded with `seed`.
  static Rng forThread(uint64_t seed, uint64_t thread) { return Rng(mix64(seed ^ mix64(thread + 1))); }

  uint64_t next() { return mix64(state_++ * 0x9e3779b97f4a7c15ull); }
  // Uniform in [0, 1) with 53 bits.
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n) (multiply-shift; the bias is below 2^-64 * n).
  uint64_t below(uint64_t n) { return uint64_t((unsigned __int128)next() * n >> 64); }

 private:
  uint64_t state_;
};

class KeySampler {
 public:
  virtual ~KeySampler() = default;
  // A key index in [0, keys).
  virtual uint64_t sample(Rng& rng) const = 0;
  // Probability of index i (for tests and docs); exact for uniform and
  // zipf, from the continuous density for normal.
  virtual double probability(uint64_t index) const = 0;

  static std::unique_ptr<KeySampler> make(const PopularityConfig& config, uint64_t keys);
  // The workload's sampler: make(popularity, keys), or a PoolSampler when
  // the workload spreads keys over several pools.
  static std::unique_ptr<KeySampler> forWorkload(const WorkloadConfig& config);
};

// cachebench's pools: a pool drawn by its operation weight, then a key by
// the popularity distribution over that pool's own consecutive key range
// (WorkloadConfig::key_pools), as cachebench draws each pool's keys.
class PoolSampler final : public KeySampler {
 public:
  // configs: one popularity for every pool, or one per pool.
  PoolSampler(const std::vector<PopularityConfig>& configs, std::vector<uint64_t> starts,
              const std::vector<double>& weights);
  uint64_t sample(Rng& rng) const override;
  double probability(uint64_t index) const override;

 private:
  std::vector<uint64_t> starts_;             // first index of each pool, then keys
  std::vector<double> cumulative_;           // cumulative normalized op weight
  std::vector<double> weight_;               // normalized op weight per pool
  std::vector<std::unique_ptr<KeySampler>> pools_;  // null for a pool without keys (weight 0)
};

class UniformSampler final : public KeySampler {
 public:
  explicit UniformSampler(uint64_t keys) : keys_(keys) {}
  uint64_t sample(Rng& rng) const override { return rng.below(keys_); }
  double probability(uint64_t) const override { return 1.0 / double(keys_); }

 private:
  uint64_t keys_;
};

// Zipf over ranks 1..n with exponent alpha; index = rank - 1, so index 0 is
// the hottest key. Rejection-inversion (Hörmann & Derflinger 1996): O(1)
// memory and expected O(1) time for any n, so a key space of 10^9 needs no
// CDF table. The exponent may be 1 or close to it: H() and its inverse are
// written with log1p/expm1 so they stay accurate there.
class ZipfSampler final : public KeySampler {
 public:
  ZipfSampler(uint64_t keys, double alpha);
  uint64_t sample(Rng& rng) const override;
  double probability(uint64_t index) const override;

 private:
  double h(double x) const;          // the unnormalized density x^-alpha
  double hIntegral(double x) const;  // its antiderivative H
  double hIntegralInverse(double y) const;

  uint64_t keys_;
  double alpha_;
  double hIntegralX1_;  // H(1.5) - 1
  double hIntegralN_;   // H(n + 0.5)
  double s_;            // accept without the second test when |k - x| <= s_
  double norm_;         // generalized harmonic number H_{n,alpha} (for probability())
};

// Normal around the middle index with stddev = fraction * keys; draws
// outside [0, keys) are drawn again.
class NormalSampler final : public KeySampler {
 public:
  NormalSampler(uint64_t keys, double stddevFraction);
  uint64_t sample(Rng& rng) const override;
  double probability(uint64_t index) const override;

 private:
  uint64_t keys_;
  double mean_;
  double stddev_;
};

// Piecewise: consecutive index buckets with relative sizes, bucket b drawn
// with probability weight_b / sum, then uniform inside it. Bucket edges are
// rounded to whole keys; every bucket keeps at least one key.
class PiecewiseSampler final : public KeySampler {
 public:
  PiecewiseSampler(uint64_t keys, const std::vector<double>& sizes, const std::vector<double>& weights);
  uint64_t sample(Rng& rng) const override;
  double probability(uint64_t index) const override;

 private:
  std::vector<uint64_t> start_;      // first index of each bucket, plus keys at the end
  std::vector<double> cumulative_;   // cumulative normalized weight
  std::vector<double> weight_;       // normalized weight per bucket
};

}  // namespace tiercache::bench
