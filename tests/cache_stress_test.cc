// Several threads of mixed set/get/remove/find over a key space several times
// larger than the cache. Every value carries a checksum and is verified on
// every read; at the end the cache's own consistency checker must pass.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "allocator/cache.h"
#include "test_util.h"

namespace tiercache {
namespace {

using test::checkValue;
using test::makeValue;

struct StressResult {
  uint64_t reads = 0, hits = 0, badValues = 0, setFailures = 0;
};

StressResult runStress(Cache& cache, int threads, int opsPerThread, int keySpace) {
  std::vector<StressResult> results(threads);
  std::vector<std::thread> pool;
  std::atomic<int> ready{0};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 rng(1234 + t);
      StressResult& r = results[t];
      ReadHandle held;  // sometimes keep a pin across operations
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
      for (int i = 0; i < opsPerThread; ++i) {
        const int k = static_cast<int>(rng() % keySpace);
        const std::string key = "key:" + std::to_string(k);
        const unsigned op = rng() % 100;
        if (op < 50) {
          ++r.reads;
          if (auto v = cache.get(key)) {
            ++r.hits;
            if (!checkValue(key, *v)) ++r.badValues;
          }
        } else if (op < 60) {
          ++r.reads;
          ReadHandle h = cache.find(key);
          if (h) {
            ++r.hits;
            if (h.key() != key || !checkValue(key, h.value())) ++r.badValues;
            if (rng() % 4 == 0) held = std::move(h);
          }
        } else if (op < 90) {
          const size_t size = 16 + rng() % (rng() % 8 == 0 ? 6000 : 600);
          if (!cache.set(key, makeValue(key, i, size))) ++r.setFailures;
        } else if (op < 95) {
          WriteHandle w = cache.allocate(key, 16 + rng() % 300);
          if (w) {
            const std::string v = makeValue(key, i, w.size());
            std::memcpy(w.data(), v.data(), v.size());
            if (rng() % 8 != 0) cache.insertOrReplace(std::move(w));  // else dropped
          }
        } else {
          cache.remove(key);
        }
        if (held && !checkValue(held.key(), held.value())) ++r.badValues;
        if (i % 1000 == 0) held.reset();
      }
    });
  }
  for (auto& th : pool) th.join();
  StressResult total;
  for (const auto& r : results) {
    total.reads += r.reads;
    total.hits += r.hits;
    total.badValues += r.badValues;
    total.setFailures += r.setFailures;
  }
  return total;
}

class CacheStressTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CacheStressTest, MixedOpsOverLargeKeySpaceVerifyEveryValue) {
  // 4 MiB of cache, ~20k keys of ~350 bytes on average: about 2x the capacity,
  // with occasional 6 KB values to drive slab rebalancing.
  Cache cache(test::smallDramConfig(4 << 20, GetParam(), 64 << 10));
  const int threads = 4;
  const StressResult r = runStress(cache, threads, 60000, 40000);
  const CacheStats s = cache.stats();
  EXPECT_EQ(r.badValues, 0u);
  EXPECT_GT(r.hits, 0u);
  EXPECT_LT(r.hits, r.reads) << "the key space must not fit";
  EXPECT_GT(s.evictions, 0u);
  EXPECT_EQ(r.setFailures, s.set_failures);
  EXPECT_EQ(cache.checkConsistency(), "");
  // Everything still readable and intact after the storm.
  uint64_t present = 0;
  for (int k = 0; k < 40000; ++k) {
    const std::string key = "key:" + std::to_string(k);
    if (auto v = cache.get(key)) {
      ++present;
      ASSERT_TRUE(checkValue(key, *v)) << key;
    }
  }
  EXPECT_EQ(present, cache.stats().items);
}

TEST_P(CacheStressTest, HotKeyContentionAcrossThreads) {
  // A handful of keys written and read by every thread: maximal contention on
  // the same index stripes, items and class locks.
  Cache cache(test::smallDramConfig(2 << 20, GetParam(), 64 << 10));
  const StressResult r = runStress(cache, 4, 40000, 16);
  EXPECT_EQ(r.badValues, 0u);
  EXPECT_GT(r.hits, r.reads / 2);
  EXPECT_GT(cache.stats().replaces_in_place, 0u) << "rewrites in place must have raced the readers";
  EXPECT_EQ(cache.checkConsistency(), "");
}

INSTANTIATE_TEST_SUITE_P(Policies, CacheStressTest,
                         ::testing::Values("lru", "lru-midpoint", "clock", "s3fifo", "wtinylfu"));

}  // namespace
}  // namespace tiercache
