// LatencyHistogram: per-thread operation latencies in log buckets.
//
// A value v (nanoseconds) falls in bucket (e, m): e = floor(log2 v), m = the
// next 4 bits below the top one, so a bucket spans 1/16 of its power of two
// and a percentile read back is at most 6.25% above the true value (the
// bucket's upper edge is reported). Values below 16 ns have a bucket each.
// record() is a few instructions and touches one counter: each thread keeps
// its own histogram and they are merged once at the end. The maximum and
// the sum (so the mean: a thread's throughput is 1 / its mean latency, tail
// included) are kept exactly.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace tiercache::bench {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 4;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kBuckets = (64 - kSubBits + 1) * kSub;

  void record(uint64_t nanos) {
    ++buckets_[bucketOf(nanos)];
    ++count_;
    sum_ += nanos;
    if (nanos > max_) max_ = nanos;
  }
  void merge(const LatencyHistogram& o) {
    for (int i = 0; i < kBuckets; ++i) buckets_[i] += o.buckets_[i];
    count_ += o.count_;
    sum_ += o.sum_;
    if (o.max_ > max_) max_ = o.max_;
  }
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  // Arithmetic mean in nanoseconds; 0 when empty.
  double mean() const { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0; }
  // The latency below which a fraction q (0..1) of the values fall: the
  // upper edge of the bucket holding the q-th value (never above max()).
  // 0 when empty.
  uint64_t percentile(double q) const;

  static int bucketOf(uint64_t v) {
    if (v < kSub) return static_cast<int>(v);
    const int e = 63 - std::countl_zero(v);  // >= kSubBits
    const int m = static_cast<int>((v >> (e - kSubBits)) & (kSub - 1));
    return (e - kSubBits + 1) * kSub + m;
  }
  // Largest value that falls in bucket b.
  static uint64_t upperEdge(int b);

 private:
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

// The figures reports print for one operation.
struct LatencySummary {
  uint64_t count = 0;
  double mean_us = 0, p50_us = 0, p90_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
};
LatencySummary summarize(const LatencyHistogram& h);

}  // namespace tiercache::bench
