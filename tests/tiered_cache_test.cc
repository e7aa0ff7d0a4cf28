// A cache over DRAM + emulated PMEM (a file in /dev/shm): one index over
// both tiers, demotion on eviction, background eviction, promotion.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "allocator/cache.h"
#include "test_util.h"

namespace tiercache {
namespace {

using test::checkValue;
using test::makeValue;
using test::smallTwoTierConfig;
using test::waitFor;

constexpr uint64_t kDram = test::kSmallDram;
constexpr uint64_t kPmem = test::kSmallPmem;

std::string key(int i) { return "key:" + std::to_string(i); }

// Sets n keys of ~size bytes; returns how many sets succeeded.
int fill(Cache& cache, int from, int to, size_t size) {
  int ok = 0;
  for (int i = from; i < to; ++i) ok += cache.set(key(i), makeValue(key(i), 0, size));
  return ok;
}

TEST(TieredCache, EvictionDemotesIntoTheSecondTierAndFindReachesBoth) {
  Cache cache(smallTwoTierConfig());
  ASSERT_EQ(cache.tierCount(), 2u);
  const int n = 20000;  // ~10 MB of 500-byte values: more than DRAM, less than both
  ASSERT_EQ(fill(cache, 0, n, 500), n);
  const CacheStats s = cache.stats();
  ASSERT_EQ(s.tiers.size(), 2u);
  EXPECT_GT(s.tiers[0].items, 0u);
  EXPECT_GT(s.tiers[1].items, 0u);
  EXPECT_GT(s.tiers[0].demotions, 0u);
  EXPECT_EQ(s.tiers[1].evictions + s.tiers[1].background_evictions, 0u) << "PMEM had room for all";
  EXPECT_EQ(s.items, static_cast<uint64_t>(n)) << "nothing dropped";
  EXPECT_EQ(s.tiers[0].mapped_bytes, kDram);
  EXPECT_EQ(s.tiers[1].mapped_bytes, kPmem);
  int inLower = 0;
  for (int i = 0; i < n; ++i) {
    ReadHandle h = cache.find(key(i));
    ASSERT_TRUE(h) << key(i);
    ASSERT_TRUE(checkValue(key(i), h.value())) << key(i);
    inLower += h.tier() == 1;
  }
  EXPECT_GT(inLower, n / 2);
  EXPECT_EQ(cache.stats().tiers[1].hits, static_cast<uint64_t>(inLower));
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(TieredCache, LastTierDropsWhenEverythingIsFull) {
  Cache cache(smallTwoTierConfig());
  const int n = 60000;  // ~30 MB into 20 MB
  ASSERT_EQ(fill(cache, 0, n, 500), n);
  const CacheStats s = cache.stats();
  EXPECT_GT(s.tiers[1].evictions, 0u);
  EXPECT_LT(s.items, static_cast<uint64_t>(n));
  for (int i = n - 50; i < n; ++i) ASSERT_TRUE(cache.get(key(i)).has_value()) << "newest are in DRAM";
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(TieredCache, WithoutDemotionAllocationsFallThroughToTheFirstTierWithRoom) {
  CacheConfig cfg = smallTwoTierConfig();
  cfg.demotion.enabled = false;
  Cache cache(cfg);
  const int n = 20000;
  ASSERT_EQ(fill(cache, 0, n, 500), n);
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.demotions, 0u);
  EXPECT_GT(s.tiers[1].items, 0u);
  EXPECT_EQ(s.items, static_cast<uint64_t>(n));
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(TieredCache, ReplaceAndRemoveWorkOnLowerTierItems) {
  Cache cache(smallTwoTierConfig());
  ASSERT_EQ(fill(cache, 0, 20000, 500), 20000);
  ReadHandle h = cache.find(key(0));
  ASSERT_TRUE(h);
  ASSERT_EQ(h.tier(), 1u);
  h.reset();
  ASSERT_TRUE(cache.set(key(0), "new"));
  EXPECT_EQ(cache.get(key(0)), "new");
  EXPECT_EQ(cache.find(key(0)).tier(), 0u) << "a new value goes to tier 0";
  ASSERT_TRUE(cache.remove(key(1)));
  EXPECT_FALSE(cache.get(key(1)).has_value());
  EXPECT_EQ(cache.checkConsistency(), "");
}

class BackgroundEvictionTest : public ::testing::TestWithParam<EvictorStrategyKind> {};

TEST_P(BackgroundEvictionTest, KeepsTierZeroReadyAndDemotesInBatches) {
  CacheConfig cfg = smallTwoTierConfig();
  cfg.background_eviction.enabled = true;
  cfg.background_eviction.yield_to_application = false;  // the evictors run, spare core or not
  cfg.background_eviction.threads = 1;
  cfg.background_eviction.interval_ms = 1;
  cfg.background_eviction.strategy = GetParam();
  cfg.background_eviction.low_watermark = 10;
  cfg.background_eviction.high_watermark = 20;
  cfg.background_eviction.keep_free = 200;  // room for a burst of 50 sets
  cfg.background_eviction.max_batch = 1024;
  Cache cache(cfg);
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(cache.set(key(i), makeValue(key(i), 0, 500)));
    // A server does other work between bursts of sets. Wait for an evictor
    // pass after each burst, rather than sleep: on a loaded 2-core host a
    // sleep says nothing about whether the evictor thread got to run.
    if (i % 50 == 49) {
      const uint64_t runs = cache.stats().background_evictor.runs;
      ASSERT_TRUE(waitFor([&] { return cache.stats().background_evictor.runs >= runs + 2; }));
    }
  }
  const CacheStats s = cache.stats();
  EXPECT_GT(s.tiers[0].background_evictions, 0u);
  EXPECT_GT(s.background_evictor.runs, 0u);
  EXPECT_GT(s.background_evictor.items, 0u);
  EXPECT_GT(s.tiers[1].items, 0u) << "evicted items were demoted";
  // Foreground evictions fall to nearly none.
  EXPECT_LT(s.tiers[0].evictions * 20, s.tiers[0].background_evictions)
      << "fg " << s.tiers[0].evictions << " bg " << s.tiers[0].background_evictions;
  // Nothing was dropped (stats() may catch a few items mid-move, so read them all instead).
  for (int i = 0; i < n; ++i) {
    auto v = cache.get(key(i));
    ASSERT_TRUE(v.has_value()) << key(i);
    ASSERT_TRUE(checkValue(key(i), *v)) << key(i);
  }
}

TEST(BackgroundEviction, KeepFreeLeavesAtLeastNFreeSlotsPerClass) {
  CacheConfig cfg = smallTwoTierConfig();
  cfg.background_eviction.enabled = true;
  cfg.background_eviction.yield_to_application = false;  // the evictors run, spare core or not
  cfg.background_eviction.interval_ms = 1;
  cfg.background_eviction.strategy = EvictorStrategyKind::kKeepFree;
  cfg.background_eviction.keep_free = 30;
  Cache cache(cfg);
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(cache.set(key(i), makeValue(key(i), 0, 100 + rng() % 2000)));
  const uint64_t runs = cache.stats().background_evictor.runs;
  ASSERT_TRUE(waitFor([&] { return cache.stats().background_evictor.runs > runs + 2; }));
  for (const ClassStats& c : cache.stats().classes) {
    if (c.tier != 0 || c.slabs == 0) continue;
    const uint64_t capacity = c.slabs * ((64 << 10) / c.alloc_size);
    EXPECT_GE(c.free_slots, std::min<uint64_t>(30, capacity)) << "class " << c.class_id;
  }
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(BackgroundEviction, FreeThresholdLeavesFreeSpaceBetweenTheWatermarks) {
  CacheConfig cfg = smallTwoTierConfig();
  cfg.background_eviction.enabled = true;
  cfg.background_eviction.yield_to_application = false;  // the evictors run, spare core or not
  cfg.background_eviction.interval_ms = 1;
  cfg.background_eviction.low_watermark = 10;
  cfg.background_eviction.high_watermark = 25;
  cfg.background_eviction.min_batch = 1;
  Cache cache(cfg);
  ASSERT_EQ(fill(cache, 0, 20000, 500), 20000);
  const uint64_t runs = cache.stats().background_evictor.runs;
  ASSERT_TRUE(waitFor([&] { return cache.stats().background_evictor.runs > runs + 2; }));
  int checked = 0;
  for (const ClassStats& c : cache.stats().classes) {
    if (c.tier != 0 || c.slabs == 0) continue;
    const double capacity = static_cast<double>(c.slabs * ((64 << 10) / c.alloc_size));
    const double freePct = 100.0 * static_cast<double>(c.free_slots) / capacity;
    EXPECT_GE(freePct, 10.0) << "class " << c.class_id;
    EXPECT_LE(freePct, 25.0 + 100.0 / capacity) << "class " << c.class_id;  // one item of rounding
    ++checked;
  }
  EXPECT_GT(checked, 0);
  EXPECT_EQ(cache.checkConsistency(), "");
}

INSTANTIATE_TEST_SUITE_P(Strategies, BackgroundEvictionTest,
                         ::testing::Values(EvictorStrategyKind::kFreeThreshold, EvictorStrategyKind::kKeepFree));

class PromotionTest : public ::testing::TestWithParam<bool> {};  // background promoter?

TEST_P(PromotionTest, HotSetMovesUpAndAScanDoesNotPushItOut) {
  CacheConfig cfg = smallTwoTierConfig("lru");
  cfg.eviction.lru_refresh_ms = 0;
  cfg.promotion.enabled = true;
  cfg.promotion.background = GetParam();
  cfg.promotion.hits = 2;
  cfg.promotion.interval_ms = 1;
  cfg.background_eviction.enabled = true;  // keeps free room in DRAM for promotions
  cfg.background_eviction.yield_to_application = false;  // the evictors run, spare core or not
  cfg.background_eviction.interval_ms = 1;
  cfg.background_eviction.low_watermark = 5;
  cfg.background_eviction.high_watermark = 10;
  Cache cache(cfg);
  const int hot = 200;
  ASSERT_EQ(fill(cache, 0, hot, 500), hot);
  ASSERT_EQ(fill(cache, hot, 20000, 500), 20000 - hot);  // pushes the hot keys down
  auto hotInTier0 = [&] {
    int n = 0;
    for (int i = 0; i < hot; ++i) {
      ReadHandle h = cache.find(key(i));
      EXPECT_TRUE(h && checkValue(key(i), h.value())) << key(i);
      n += h && h.tier() == 0;
    }
    return n;
  };
  ASSERT_LT(hotInTier0(), hot / 10) << "setup: the hot set starts in PMEM";
  ASSERT_TRUE(waitFor([&] { return hotInTier0() == hot; })) << "hot set was not promoted";
  const CacheStats promoted = cache.stats();
  EXPECT_GE(promoted.tiers[1].promotions, static_cast<uint64_t>(hot));

  // A one-pass scan of cold keys, twice the size of DRAM, while the hot set
  // stays in use.
  for (int i = 0; i < 16000; ++i) {
    ASSERT_TRUE(cache.set("scan:" + std::to_string(i), std::string(500, 's')));
    if (i % 500 == 0) hotInTier0();
  }
  EXPECT_EQ(hotInTier0(), hot);
  // No ping-pong: the hot set was promoted once and stayed.
  EXPECT_LE(cache.stats().tiers[1].promotions, promoted.tiers[1].promotions + hot / 10);
  EXPECT_EQ(cache.checkConsistency(), "");
}

INSTANTIATE_TEST_SUITE_P(Modes, PromotionTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Background" : "Synchronous"; });

TEST(TieredCache, ConcurrentAppThreadsWithEvictorAndPromoter) {
  CacheConfig cfg = smallTwoTierConfig("clock");
  cfg.background_eviction.enabled = true;
  cfg.background_eviction.yield_to_application = false;  // the evictors run, spare core or not
  cfg.background_eviction.threads = 2;
  cfg.background_eviction.interval_ms = 1;
  cfg.promotion.enabled = true;
  cfg.promotion.interval_ms = 1;
  Cache cache(cfg);
  std::atomic<uint64_t> bad{0}, hits{0};
  auto app = [&](int seed) {
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 40000; ++i) {
      const int k = static_cast<int>(rng() % 50000);
      // Skewed reads: a hot tenth of the keys takes most of them.
      const int r = rng() % 4 ? k % 5000 : k;
      if (rng() % 3) {
        ReadHandle h = cache.find(key(r));
        if (h) {
          hits.fetch_add(1);
          if (!checkValue(key(r), h.value())) bad.fetch_add(1);
        }
      } else if (rng() % 10) {
        cache.set(key(k), makeValue(key(k), i, 50 + rng() % 1500));
      } else {
        cache.remove(key(k));
      }
    }
  };
  std::thread a(app, 1), b(app, 2);
  a.join();
  b.join();
  const CacheStats s = cache.stats();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(hits.load(), 0u);
  EXPECT_GT(s.demotions, 0u);
  EXPECT_GT(s.background_evictor.runs, 0u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

}  // namespace
}  // namespace tiercache

namespace tiercache {
namespace {

TEST(TieredCachePlan, RatioTiersSplitTheTotalSize) {
  CacheConfig cfg = test::smallDramConfig(0, "lru", 1 << 20);
  cfg.tiers[0].size = 0;
  cfg.tiers[0].ratio = 1;
  TierConfig pmem;
  pmem.name = "pmem";
  pmem.kind = TierKind::kPmemFile;
  pmem.path = "/dev/shm";
  pmem.ratio = 3;
  cfg.tiers.push_back(pmem);
  cfg.total_size = 64 << 20;
  Cache cache(cfg);
  const CacheStats s = cache.stats();
  ASSERT_EQ(s.tiers.size(), 2u);
  EXPECT_EQ(s.tiers[0].mapped_bytes, 16u << 20);
  EXPECT_EQ(s.tiers[1].mapped_bytes, 48u << 20);
  EXPECT_EQ(s.tiers[1].kind, "pmem-file");
}

TEST(TieredCachePlan, AutoTiersOnThisMachineAreDramThenEmulatedPmem) {
  CacheConfig cfg = test::smallDramConfig(0, "lru", 1 << 20);
  cfg.tiers[0] = TierConfig{};
  cfg.tiers[0].name = "fast";
  cfg.tiers[0].kind = TierKind::kAuto;
  cfg.tiers[0].ratio = 1;
  TierConfig slow = cfg.tiers[0];
  slow.name = "slow";
  cfg.tiers.push_back(slow);
  cfg.total_size = 32 << 20;
  cfg.pmem_dir = "/dev/shm";
  Cache cache(cfg);
  const CacheStats s = cache.stats();
  ASSERT_EQ(s.tiers.size(), 2u);
  EXPECT_EQ(s.tiers[0].kind, "dram");
  // This host has no NVM node: the second level is the emulated-PMEM directory.
  EXPECT_EQ(s.tiers[1].kind, "pmem-file");
  ASSERT_TRUE(cache.set("k", "v"));
  EXPECT_EQ(cache.get("k"), "v");
}

}  // namespace
}  // namespace tiercache

namespace tiercache {
namespace {

// eviction.demote_rejected: what W-TinyLFU's filter (or S3-FIFO's small
// queue) turns away in DRAM goes to PMEM (true) or is dropped (false).
// A working set read three times, then a one-pass scan of new keys: the
// filter rejects the scan's keys in DRAM.
struct RejectedRun {
  uint64_t demotions = 0;
  uint64_t scanHeld = 0;  // scan keys still found anywhere
};

RejectedRun runRejected(const std::string& policy, bool demoteRejected) {
  CacheConfig cfg = smallTwoTierConfig(policy);
  cfg.promotion.enabled = false;
  cfg.eviction.demote_rejected = demoteRejected;
  Cache cache(cfg);
  auto k = [](int i) { return "key:" + std::to_string(i); };
  for (int i = 0; i < 6000; ++i) cache.set(k(i), test::makeValue(k(i), 0, 400));
  for (int r = 0; r < 3; ++r) {
    for (int i = 0; i < 6000; ++i) (void)cache.get(k(i));
  }
  for (int i = 100000; i < 106000; ++i) cache.set(k(i), test::makeValue(k(i), 0, 400));
  RejectedRun out;
  out.demotions = cache.stats().demotions;
  for (int i = 100000; i < 106000; ++i) out.scanHeld += cache.get(k(i)).has_value();
  EXPECT_EQ(cache.checkConsistency(), "");
  return out;
}

TEST(TieredCache, RejectedItemsAreDemotedOrDroppedAsConfigured) {
  for (const char* policy : {"wtinylfu", "s3fifo"}) {
    const RejectedRun demote = runRejected(policy, true);
    const RejectedRun drop = runRejected(policy, false);
    EXPECT_GT(demote.demotions, drop.demotions) << policy;
    EXPECT_GT(demote.scanHeld, drop.scanHeld) << policy << ": demoted scan keys live on in PMEM";
  }
}

}  // namespace
}  // namespace tiercache
