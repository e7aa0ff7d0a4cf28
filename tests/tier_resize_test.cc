// Cache::resizeTier (the memory limit behind cache_memlimit): shrinking
// demotes or evicts the items of the slabs it takes back, growing lets the
// tier fill again, values read back byte for byte, bounds are refused with
// errors naming the tier, and gets/sets run safely beside resizes.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "allocator/cache.h"
#include "test_util.h"

namespace tiercache {
namespace {

using test::checkValue;
using test::makeValue;

std::string resizeKey(int i) { return "rk" + std::to_string(i); }

uint64_t tierUsedBytes(Cache& cache, uint32_t tier) {
  const CacheStats s = cache.stats();
  return s.tiers[tier].slabs_used * cache.config().slab_size;
}

TEST(TierResize, ShrinkDemotesIntoTheNextTierAndGrowFillsAgain) {
  CacheConfig cfg = test::smallTwoTierConfig();  // 4 MiB DRAM, 16 MiB PMEM, 64 KiB slabs
  Cache cache(cfg);
  constexpr int kItems = 5000;  // ~3 MiB of 600-byte values: all in DRAM
  for (int i = 0; i < kItems; ++i) ASSERT_TRUE(cache.set(resizeKey(i), makeValue(resizeKey(i), 1, 600)));
  ASSERT_EQ(cache.stats().tiers[1].items, 0u);
  const uint64_t before = tierUsedBytes(cache, 0);
  ASSERT_GT(before, 2u << 20);

  const Cache::TierResize r = cache.resizeTier(0, 1 << 20);
  EXPECT_TRUE(r.reached);
  EXPECT_EQ(r.limitBytes, 1u << 20);
  EXPECT_LE(r.usedBytes, 1u << 20);
  EXPECT_GE(r.slabsReleased, (before - (1 << 20)) / cfg.slab_size);
  EXPECT_LE(tierUsedBytes(cache, 0), 1u << 20);
  EXPECT_EQ(cache.tierLimit(0), 1u << 20);
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.tiers[0].limit_bytes, 1u << 20);
  EXPECT_GT(s.demotions, 0u);
  EXPECT_GT(s.tiers[1].items, 0u);
  // PMEM had room for all of them: nothing lost, every value exact.
  for (int i = 0; i < kItems; ++i) {
    auto v = cache.get(resizeKey(i));
    ASSERT_TRUE(v.has_value()) << resizeKey(i);
    ASSERT_EQ(*v, makeValue(resizeKey(i), 1, 600)) << resizeKey(i);
  }
  // New items still go to DRAM, which stays within its limit.
  for (int i = kItems; i < 2 * kItems; ++i) ASSERT_TRUE(cache.set(resizeKey(i), makeValue(resizeKey(i), 1, 600)));
  EXPECT_LE(tierUsedBytes(cache, 0), 1u << 20);

  // Growing back lets DRAM take slabs again.
  const Cache::TierResize g = cache.resizeTier(0, 4 << 20);
  EXPECT_TRUE(g.reached);
  EXPECT_EQ(g.slabsReleased, 0u);
  EXPECT_EQ(cache.tierLimit(0), 4u << 20);
  for (int i = 2 * kItems; i < 3 * kItems; ++i) ASSERT_TRUE(cache.set(resizeKey(i), makeValue(resizeKey(i), 1, 600)));
  EXPECT_GT(tierUsedBytes(cache, 0), 2u << 20);
  for (int i = 2 * kItems; i < 3 * kItems; ++i) {
    auto v = cache.get(resizeKey(i));
    ASSERT_TRUE(v.has_value());
    ASSERT_EQ(*v, makeValue(resizeKey(i), 1, 600));
  }
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(TierResize, ShrinkingTheOnlyTierEvictsAndCountsIt) {
  Cache cache(test::smallDramConfig(8 << 20));  // 256 KiB slabs
  constexpr int kItems = 8000;                  // ~5 MiB
  for (int i = 0; i < kItems; ++i) ASSERT_TRUE(cache.set(resizeKey(i), makeValue(resizeKey(i), 2, 600)));
  const CacheStats before = cache.stats();
  ASSERT_EQ(before.items, static_cast<uint64_t>(kItems));
  const Cache::TierResize r = cache.resizeTier(0, 2 << 20);
  EXPECT_TRUE(r.reached);
  EXPECT_LE(tierUsedBytes(cache, 0), 2u << 20);
  const CacheStats after = cache.stats();
  const uint64_t evicted = after.evictions - before.evictions;
  EXPECT_GT(evicted, 0u);
  // Every item is either still there, exact, or was counted as evicted.
  uint64_t present = 0;
  for (int i = 0; i < kItems; ++i) {
    auto v = cache.get(resizeKey(i));
    if (!v) continue;
    ++present;
    ASSERT_EQ(*v, makeValue(resizeKey(i), 2, 600));
  }
  EXPECT_EQ(present + evicted, static_cast<uint64_t>(kItems));
  EXPECT_EQ(after.items, present);
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(TierResize, BoundsAreRefusedNamingTheTier) {
  Cache cache(test::smallDramConfig(8 << 20));
  try {
    cache.resizeTier(0, 16 << 20);
    FAIL() << "grew past the size at open";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "tier 'dram': cannot grow to 16MiB, past the 8MiB it reserved at open");
  }
  try {
    cache.resizeTier(0, 1000);
    FAIL() << "shrank below a slab";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "tier 'dram': 1000B is less than one slab (256KiB)");
  }
  EXPECT_THROW(cache.resizeTier(1, 1 << 20), std::invalid_argument);
  EXPECT_EQ(cache.tierLimit(0), 8u << 20);  // unchanged by the refusals
}

TEST(TierResize, PinnedSlabsAreSkippedAndReleasedByALaterCall) {
  Cache cache(test::smallDramConfig(2 << 20));  // 8 slabs of 256 KiB
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) {
    keys.push_back(resizeKey(i));
    ASSERT_TRUE(cache.set(keys.back(), makeValue(keys.back(), 3, 600)));
  }
  const uint64_t used = tierUsedBytes(cache, 0);
  {
    // One pin in every slab the class holds.
    std::vector<ReadHandle> pins;
    for (const std::string& k : keys) {
      ReadHandle h = cache.find(k);
      if (h) pins.push_back(std::move(h));
    }
    const Cache::TierResize r = cache.resizeTier(0, 256 << 10);
    EXPECT_FALSE(r.reached);
    EXPECT_EQ(r.slabsReleased, 0u);
    EXPECT_EQ(r.usedBytes, used);
    for (const ReadHandle& h : pins) EXPECT_TRUE(checkValue(h.key(), h.value()));
  }
  const Cache::TierResize r = cache.resizeTier(0, 256 << 10);
  EXPECT_TRUE(r.reached);
  EXPECT_LE(tierUsedBytes(cache, 0), 256u << 10);
}

TEST(TierResize, GetsAndSetsRunBesideResizes) {
  Cache cache(test::smallTwoTierConfig());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0}, reads{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t) {
    workers.emplace_back([&, t] {
      uint32_t x = 12345 + t;
      while (!stop.load(std::memory_order_relaxed)) {
        x = x * 1103515245 + 12345;
        const std::string k = resizeKey(static_cast<int>((x >> 8) % 6000));
        if ((x >> 4) % 4 == 0) {
          cache.set(k, makeValue(k, x, 300 + (x >> 20) % 900));
        } else if (ReadHandle h = cache.find(k)) {
          reads.fetch_add(1, std::memory_order_relaxed);
          if (!checkValue(k, h.value())) bad.fetch_add(1);
        }
      }
    });
  }
  for (int round = 0; round < 20; ++round) {
    cache.resizeTier(0, (round % 2 ? 4 : 1) << 20);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop.store(true);
  for (auto& w : workers) w.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
  cache.resizeTier(0, 1 << 20);
  EXPECT_LE(tierUsedBytes(cache, 0), 1u << 20);
  EXPECT_EQ(cache.checkConsistency(), "");
}

}  // namespace
}  // namespace tiercache
