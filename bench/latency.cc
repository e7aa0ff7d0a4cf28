#include "bench/latency.h"

#include <algorithm>
#include <cmath>

namespace tiercache::bench {

uint64_t LatencyHistogram::upperEdge(int b) {
  if (b < kSub) return static_cast<uint64_t>(b);
  const int e = b / kSub + kSubBits - 1;
  const uint64_t m = static_cast<uint64_t>(b % kSub);
  const uint64_t lo = (uint64_t{1} << e) | (m << (e - kSubBits));
  return lo + (uint64_t{1} << (e - kSubBits)) - 1;
}

uint64_t LatencyHistogram::percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The rank of the q-th value, 1-based: at least the first value.
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[b];
    if (seen >= rank) return std::min(upperEdge(b), max_);
  }
  return max_;
}

LatencySummary summarize(const LatencyHistogram& h) {
  LatencySummary s;
  s.count = h.count();
  s.mean_us = h.mean() / 1e3;
  s.p50_us = static_cast<double>(h.percentile(0.50)) / 1e3;
  s.p90_us = static_cast<double>(h.percentile(0.90)) / 1e3;
  s.p99_us = static_cast<double>(h.percentile(0.99)) / 1e3;
  s.p999_us = static_cast<double>(h.percentile(0.999)) / 1e3;
  s.max_us = static_cast<double>(h.max()) / 1e3;
  return s;
}

}  // namespace tiercache::bench
