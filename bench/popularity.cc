#include "bench/popularity.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tiercache::bench {

namespace {
// log1p(x)/x and expm1(x)/x, with their limit 1 at x = 0.
double log1pOverX(double x) { return std::fabs(x) > 1e-8 ? std::log1p(x) / x : 1.0 - x / 2.0; }
double expm1OverX(double x) { return std::fabs(x) > 1e-8 ? std::expm1(x) / x : 1.0 + x / 2.0; }
}  // namespace

std::unique_ptr<KeySampler> KeySampler::make(const PopularityConfig& config, uint64_t keys) {
  switch (config.kind) {
    case PopularityKind::kUniform: return std::make_unique<UniformSampler>(keys);
    case PopularityKind::kZipf: return std::make_unique<ZipfSampler>(keys, config.alpha);
    case PopularityKind::kNormal: return std::make_unique<NormalSampler>(keys, config.stddev_fraction);
    case PopularityKind::kPiecewise:
      return std::make_unique<PiecewiseSampler>(keys, config.bucket_sizes, config.bucket_weights);
  }
  return nullptr;
}

std::unique_ptr<KeySampler> KeySampler::forWorkload(const WorkloadConfig& config) {
  if (!config.pool_distributions.empty()) {
    std::vector<PopularityConfig> each;
    for (const PoolDistribution& d : config.pool_distributions) each.push_back(d.popularity);
    if (config.key_pools.size() <= 1) return make(each[0], config.keys);
    return std::make_unique<PoolSampler>(each, config.poolKeyStarts(), config.poolOpWeights());
  }
  if (config.key_pools.size() <= 1) return make(config.popularity, config.keys);
  return std::make_unique<PoolSampler>(std::vector<PopularityConfig>{config.popularity}, config.poolKeyStarts(),
                                       config.poolOpWeights());
}

PoolSampler::PoolSampler(const std::vector<PopularityConfig>& configs, std::vector<uint64_t> starts,
                         const std::vector<double>& weights)
    : starts_(std::move(starts)) {
  double total = 0;
  for (double w : weights) total += w;
  double acc = 0;
  for (size_t p = 0; p + 1 < starts_.size(); ++p) {
    weight_.push_back(weights[p] / total);
    acc += weight_.back();
    cumulative_.push_back(acc);
    uint64_t n = starts_[p + 1] - starts_[p];
    pools_.push_back(n > 0 ? make(configs.size() == 1 ? configs[0] : configs[p], n) : nullptr);
  }
  // Rounding must not leave u past the last pool that takes operations.
  size_t last = cumulative_.size() - 1;
  while (last > 0 && !(pools_[last] && weight_[last] > 0)) --last;
  for (size_t p = last; p < cumulative_.size(); ++p) cumulative_[p] = 1.0;
}

uint64_t PoolSampler::sample(Rng& rng) const {
  double u = rng.uniform();
  size_t p = 0;
  // A pool of weight 0 has the cut of the one before it and is skipped.
  while (p + 1 < cumulative_.size() && u >= cumulative_[p]) ++p;
  return starts_[p] + pools_[p]->sample(rng);
}

double PoolSampler::probability(uint64_t index) const {
  size_t p = size_t(std::upper_bound(starts_.begin(), starts_.end() - 1, index) - starts_.begin()) - 1;
  return pools_[p] ? weight_[p] * pools_[p]->probability(index - starts_[p]) : 0.0;
}

ZipfSampler::ZipfSampler(uint64_t keys, double alpha) : keys_(keys), alpha_(alpha) {
  hIntegralX1_ = hIntegral(1.5) - 1.0;
  hIntegralN_ = hIntegral(double(keys) + 0.5);
  s_ = 2.0 - hIntegralInverse(hIntegral(2.5) - h(2.0));
  // The exact sum for small n; for large n the head exactly plus the tail
  // by Euler-Maclaurin (error far below what tests can observe).
  constexpr uint64_t kExact = 1'000'000;
  norm_ = 0;
  for (uint64_t k = 1; k <= std::min(keys, kExact); ++k) norm_ += h(double(k));
  if (keys > kExact) {
    double a = double(kExact), b = double(keys);
    double integral = alpha == 1.0 ? std::log(b / a) : (std::pow(b, 1 - alpha) - std::pow(a, 1 - alpha)) / (1 - alpha);
    norm_ += integral + (h(b) - h(a)) / 2.0;
  }
}

double ZipfSampler::h(double x) const { return std::exp(-alpha_ * std::log(x)); }

// H(x) = (x^(1-alpha) - 1) / (1-alpha), or log(x) when alpha = 1.
double ZipfSampler::hIntegral(double x) const {
  double logX = std::log(x);
  return expm1OverX((1.0 - alpha_) * logX) * logX;
}

double ZipfSampler::hIntegralInverse(double y) const {
  double t = y * (1.0 - alpha_);
  if (t < -1.0) t = -1.0;  // rounding can push it just past the domain
  return std::exp(log1pOverX(t) * y);
}

// Draw x from the continuous density h on [0.5, n + 0.5] by inversion,
// round it to the rank k, and accept k with probability h(k) / (the mass of
// h over [k - 0.5, k + 0.5]); most draws pass the cheap first test.
uint64_t ZipfSampler::sample(Rng& rng) const {
  for (;;) {
    double u = hIntegralN_ + rng.uniform() * (hIntegralX1_ - hIntegralN_);
    double x = hIntegralInverse(u);
    double kd = std::floor(x + 0.5);
    if (kd < 1.0) kd = 1.0;
    if (kd > double(keys_)) kd = double(keys_);
    if (kd - x <= s_ || u >= hIntegral(kd + 0.5) - h(kd)) return uint64_t(kd) - 1;
  }
}

double ZipfSampler::probability(uint64_t index) const { return h(double(index + 1)) / norm_; }

NormalSampler::NormalSampler(uint64_t keys, double stddevFraction)
    : keys_(keys), mean_(double(keys - 1) / 2.0), stddev_(stddevFraction * double(keys)) {}

uint64_t NormalSampler::sample(Rng& rng) const {
  for (;;) {
    // Box-Muller; one of the pair is enough here.
    double u1 = 1.0 - rng.uniform();  // (0, 1]
    double u2 = rng.uniform();
    double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    double v = std::floor(mean_ + z * stddev_ + 0.5);
    if (v >= 0.0 && v < double(keys_)) return uint64_t(v);
  }
}

double NormalSampler::probability(uint64_t index) const {
  double z = (double(index) - mean_) / stddev_;
  // Truncation to [0, keys) rescales the density by the mass kept.
  double lo = (-0.5 - mean_) / stddev_, hi = (double(keys_) - 0.5 - mean_) / stddev_;
  double kept = 0.5 * (std::erf(hi / std::numbers::sqrt2) - std::erf(lo / std::numbers::sqrt2));
  return std::exp(-0.5 * z * z) / (stddev_ * std::sqrt(2.0 * std::numbers::pi)) / kept;
}

PiecewiseSampler::PiecewiseSampler(uint64_t keys, const std::vector<double>& sizes, const std::vector<double>& weights) {
  size_t n = sizes.size();
  double totalSize = 0, totalWeight = 0;
  for (size_t i = 0; i < n; ++i) {
    totalSize += sizes[i];
    totalWeight += weights[i];
  }
  double acc = 0;
  start_.push_back(0);
  for (size_t i = 0; i < n; ++i) {
    acc += sizes[i];
    uint64_t end = i + 1 == n ? keys : uint64_t(std::llround(acc / totalSize * double(keys)));
    // At least one key per bucket, and room for the buckets after this one.
    end = std::max(end, start_.back() + 1);
    end = std::min(end, keys - (n - 1 - i));
    start_.push_back(end);
  }
  double c = 0;
  for (size_t i = 0; i < n; ++i) {
    weight_.push_back(weights[i] / totalWeight);
    c += weight_.back();
    cumulative_.push_back(c);
  }
  cumulative_.back() = 1.0;
}

uint64_t PiecewiseSampler::sample(Rng& rng) const {
  double u = rng.uniform();
  size_t b = 0;
  while (b + 1 < cumulative_.size() && (u >= cumulative_[b] || weight_[b] == 0)) ++b;
  return start_[b] + rng.below(start_[b + 1] - start_[b]);
}

double PiecewiseSampler::probability(uint64_t index) const {
  for (size_t b = 0; b + 1 < start_.size(); ++b)
    if (index < start_[b + 1]) return weight_[b] / double(start_[b + 1] - start_[b]);
  return 0;
}

}  // namespace tiercache::bench
