// The movers under load: batched demotion by two background evictors, the
// promoter and four application threads at once, and batch moves racing
// find / remove / insertOrReplace of the very keys being moved. Real tiers
// (DRAM + a pmem-file tier on /dev/shm), every value checksummed, the
// consistency checker at the end.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "allocator/cache.h"
#include "common/spare_cores.h"
#include "eviction/background_strategy.h"
#include "test_util.h"

namespace tiercache {
namespace {

using test::checkValue;
using test::makeValue;

constexpr uint64_t kSlab = 64 << 10;

CacheConfig twoTiers(uint64_t dram, uint64_t pmem) {
  CacheConfig cfg = test::smallTwoTierConfig("lru", dram, pmem);
  cfg.index.bucket_power = 18;
  return cfg;
}

// Two evictors, the promoter and four application threads over a key space
// about four times what both tiers hold.
TEST(MoversStress, TwoEvictorsPromoterAndFourThreadsOverFourTimesTheCache) {
  CacheConfig cfg = twoTiers(4 << 20, 16 << 20);
  cfg.background_eviction.enabled = true;
  cfg.background_eviction.yield_to_application = false;  // the evictors run, spare core or not
  cfg.background_eviction.threads = 2;
  cfg.background_eviction.interval_ms = 1;
  cfg.background_eviction.low_watermark = 10;
  cfg.background_eviction.high_watermark = 20;
  cfg.promotion.enabled = true;
  cfg.promotion.background = true;
  cfg.promotion.hits = 1;
  cfg.promotion.interval_ms = 1;
  cfg.promotion.upper_free_watermark = 0;
  Cache cache(cfg);
  // ~20 MiB of cache; 200k keys of ~420 bytes with their headers: ~4x.
  const int keySpace = 200000, threads = 4, ops = 60000;
  std::atomic<uint64_t> bad{0}, hits{0}, reads{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 rng(99 + t);
      ReadHandle held;
      for (int i = 0; i < ops; ++i) {
        // Half the draws from a hot tenth of the keys, so promotions happen.
        const int k = static_cast<int>(rng() % 2 ? rng() % (keySpace / 10) : rng() % keySpace);
        const std::string key = "key:" + std::to_string(k);
        const unsigned op = rng() % 100;
        if (op < 55) {
          reads.fetch_add(1, std::memory_order_relaxed);
          ReadHandle h = cache.find(key);
          if (h) {
            hits.fetch_add(1, std::memory_order_relaxed);
            if (h.key() != key || !checkValue(key, h.value())) bad.fetch_add(1);
            if (rng() % 16 == 0) held = std::move(h);
          }
        } else if (op < 90) {
          cache.set(key, makeValue(key, static_cast<uint32_t>(i), 100 + rng() % 600));
        } else if (op < 95) {
          WriteHandle w = cache.allocate(key, 16 + rng() % 700);
          if (w) {
            const std::string v = makeValue(key, static_cast<uint32_t>(i), w.size());
            std::memcpy(w.data(), v.data(), v.size());
            cache.insertOrReplace(std::move(w));
          }
        } else {
          cache.remove(key);
        }
        if (held && !checkValue(held.key(), held.value())) bad.fetch_add(1);
        if (i % 500 == 0) held.reset();
      }
    });
  }
  for (auto& th : pool) th.join();
  const CacheStats s = cache.stats();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(hits.load(), 0u);
  EXPECT_LT(hits.load(), reads.load()) << "the key space must not fit";
  EXPECT_GT(s.tiers[0].background_evictions, 0u);
  EXPECT_GT(s.tiers[0].demotions, 0u);
  EXPECT_GT(s.promotions, 0u);
  EXPECT_EQ(s.background_evictor.threads, 2u);
  EXPECT_GT(s.replaces_in_place, 0u) << "rewrites in place must have raced the movers";
  EXPECT_EQ(cache.checkConsistency(), "");
  // Everything still readable and intact (these gets promote, too).
  for (int k = 0; k < keySpace; ++k) {
    const std::string key = "key:" + std::to_string(k);
    if (auto v = cache.get(key)) ASSERT_TRUE(checkValue(key, *v)) << key;
  }
  EXPECT_EQ(cache.checkConsistency(), "");
}

// Each thread owns its keys and knows their latest value (or that it
// removed them), while evictors demote in batches and finds promote: a find
// must return exactly the latest value, byte for byte, and a key that was
// not removed must be found, since the lower tier has room for every key
// (nothing is dropped: checked below).
TEST(MoversRace, BatchMovesRacingFindRemoveReplaceNeverServeStaleOrLoseAKey) {
  CacheConfig cfg = twoTiers(2 << 20, 16 << 20);
  cfg.background_eviction.enabled = true;
  cfg.background_eviction.yield_to_application = false;  // the evictors run, spare core or not
  cfg.background_eviction.threads = 2;
  cfg.background_eviction.interval_ms = 1;
  cfg.background_eviction.low_watermark = 30;  // demote a lot
  cfg.background_eviction.high_watermark = 60;
  cfg.promotion.enabled = true;
  cfg.promotion.background = false;  // synchronous: moves up inside find
  cfg.promotion.hits = 1;
  cfg.promotion.upper_free_watermark = 0;
  // Slab rebalancing evicts a donor slab's items outright (not a move):
  // off, so that every item leaving tier 0 is a demotion.
  cfg.rebalance.enabled = false;
  Cache cache(cfg);
  const int threads = 4, keysPerThread = 1500, ops = 40000;
  std::atomic<uint64_t> stale{0}, lost{0}, torn{0}, sets{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 rng(7 + t);
      struct Model {
        uint32_t version = 0;
        uint32_t size = 0;
        bool present = false;
      };
      std::vector<Model> model(keysPerThread);
      auto keyOf = [&](int k) { return "t" + std::to_string(t) + ":" + std::to_string(k); };
      for (int i = 0; i < ops; ++i) {
        const int k = static_cast<int>(rng() % keysPerThread);
        const std::string key = keyOf(k);
        Model& m = model[k];
        const unsigned op = rng() % 100;
        if (op < 45) {
          ReadHandle h = cache.find(key);
          if (!h) {
            if (m.present) lost.fetch_add(1);
          } else if (!m.present) {
            stale.fetch_add(1);  // removed, yet served
          } else if (!checkValue(key, h.value())) {
            torn.fetch_add(1);
          } else if (h.value() != makeValue(key, m.version, m.size)) {
            stale.fetch_add(1);
          }
        } else if (op < 70) {
          const uint32_t size = 150 + static_cast<uint32_t>(rng() % 500);
          if (cache.set(key, makeValue(key, i + 1, size))) {
            m = Model{static_cast<uint32_t>(i + 1), size, true};
            sets.fetch_add(1);
          }
        } else if (op < 90) {
          const uint32_t size = 150 + static_cast<uint32_t>(rng() % 500);
          WriteHandle w = cache.allocate(key, size);
          if (w) {
            const std::string v = makeValue(key, i + 1, size);
            std::memcpy(w.data(), v.data(), v.size());
            cache.insertOrReplace(std::move(w));
            m = Model{static_cast<uint32_t>(i + 1), size, true};
            sets.fetch_add(1);
          }
        } else {
          const bool removed = cache.remove(key);
          if (removed != m.present) (removed ? stale : lost).fetch_add(1);
          m.present = false;
        }
      }
      // Every key ends exactly as its owner left it.
      for (int k = 0; k < keysPerThread; ++k) {
        auto v = cache.get(keyOf(k));
        if (model[k].present != v.has_value()) {
          (v ? stale : lost).fetch_add(1);
        } else if (v && *v != makeValue(keyOf(k), model[k].version, model[k].size)) {
          stale.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  const CacheStats s = cache.stats();
  // The premise: the lower tier dropped nothing, so nothing may be missing.
  std::string classes;
  for (const ClassStats& c : s.classes) {
    classes += "t" + std::to_string(c.tier) + " c" + std::to_string(c.class_id) + " size " + std::to_string(c.alloc_size) +
               " slabs " + std::to_string(c.slabs) + " items " + std::to_string(c.items) + " free " +
               std::to_string(c.free_slots) + " ev " + std::to_string(c.evictions) + " bg " +
               std::to_string(c.background_evictions) + " lost " + std::to_string(c.slabs_lost) + "\n";
  }
  ASSERT_EQ(s.tiers[1].evictions + s.tiers[1].background_evictions, 0u)
      << "the lower tier must hold every key; tier 1 slabs used " << s.tiers[1].slabs_used << "/"
      << s.tiers[1].slabs_total << "\n" << classes;
  // Every item that left tier 0 was demoted, or its move was aborted
  // because its owner replaced or removed it meanwhile: none dropped.
  EXPECT_LE(s.tiers[0].evictions + s.tiers[0].background_evictions, s.tiers[0].demotions + s.moves_aborted);
  EXPECT_GT(s.tiers[0].demotions, 1000u) << "the test must race with many moves";
  EXPECT_GT(s.promotions, 0u);
  EXPECT_GT(sets.load(), 0u);
  EXPECT_GT(s.replaces_in_place, 0u) << "rewrites in place must have raced the moves";
  EXPECT_EQ(torn.load(), 0u);
  EXPECT_EQ(stale.load(), 0u);
  EXPECT_EQ(lost.load(), 0u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

// Demotion in batches keeps the protocol's counters exact: every item that
// left tier 0 was either demoted or (nowhere) dropped, and the lower tier
// holds them all.
TEST(MoversBatch, ForegroundBatchDemotesEveryEvictedItemWhenTheLowerTierHasRoom) {
  Cache cache(twoTiers(1 << 20, 16 << 20));
  const int n = 6000;  // ~3.6 MB of items: more than DRAM
  for (int i = 0; i < n; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_TRUE(cache.set(key, makeValue(key, 1, 500)));
  }
  const CacheStats s = cache.stats();
  EXPECT_GT(s.tiers[0].evictions, 0u);
  EXPECT_EQ(s.tiers[0].demotions, s.tiers[0].evictions) << "nothing dropped from tier 0";
  EXPECT_EQ(s.tiers[1].evictions, 0u);
  EXPECT_EQ(s.items, static_cast<uint64_t>(n));
  for (int i = 0; i < n; ++i) {
    const std::string key = "k" + std::to_string(i);
    auto v = cache.get(key);
    ASSERT_TRUE(v.has_value()) << key;
    ASSERT_EQ(*v, makeValue(key, 1, 500)) << key;
  }
  EXPECT_EQ(cache.checkConsistency(), "");
}

// With background eviction on, a replace that publishes a new item defers
// the old item's free to a batch. The deferred slots must come back: a full
// class whose every key is replaced (same size class) needs no eviction at
// all, whoever drains them (the allocation that finds no free slot, or the
// evictor's look), and every value reads back. The replaces are CASes: a
// plain set would rewrite each item in its slot and defer nothing.
TEST(MoversDeferredFree, ReplacedSlotsAreReusedNotLostAndNothingIsEvicted) {
  CacheConfig cfg = test::smallDramConfig(1 << 20, "lru", kSlab);
  cfg.allocation.max_size = kSlab;
  cfg.background_eviction.enabled = true;
  cfg.background_eviction.yield_to_application = false;  // the evictors run, spare core or not
  cfg.background_eviction.low_watermark = 0;  // its strategy never evicts
  cfg.background_eviction.high_watermark = 0;
  cfg.background_eviction.min_batch = 1;
  Cache cache(cfg);
  // Fill until the first eviction would be needed: keys in one size class.
  int n = 0;
  for (;; ++n) {
    const std::string key = "k" + std::to_string(n);
    ASSERT_TRUE(cache.set(key, makeValue(key, 0, 400)));
    const CacheStats s = cache.stats();
    if (s.evictions + s.background_evictions > 0) break;
  }
  ASSERT_GT(n, 100);
  // Replace only what is cached: a key evicted by the fill would be a new
  // insert, which needs an eviction by right.
  std::vector<std::string> cached;
  for (int i = 0; i <= n; ++i) {
    const std::string key = "k" + std::to_string(i);
    if (cache.get(key)) cached.push_back(key);
  }
  const CacheStats before = cache.stats();
  ASSERT_EQ(cached.size(), before.items);
  for (int round = 1; round <= 3; ++round) {
    for (const std::string& key : cached) {
      const uint64_t token = cache.find(key).casToken();
      ASSERT_EQ(cache.compareAndSwap(key, token, makeValue(key, round, 400)), CasResult::kStored) << key;
    }
  }
  const CacheStats after = cache.stats();
  EXPECT_EQ(after.replaces_in_place, 0u);
  EXPECT_EQ(after.replaces - before.replaces, 3 * cached.size());
  EXPECT_EQ(after.evictions + after.background_evictions, before.evictions + before.background_evictions)
      << "a replace found its slot through the deferred frees, not by evicting";
  for (const std::string& key : cached) {
    auto v = cache.get(key);
    ASSERT_TRUE(v.has_value()) << key << " lost its place";
    ASSERT_EQ(*v, makeValue(key, 3, 400)) << key;
  }
  EXPECT_EQ(after.items, before.items);
  EXPECT_EQ(cache.checkConsistency(), "");
}

// yield_to_application: while the application leaves no core spare, the
// evictor stands aside (allocations evict for themselves, and the evictor
// is neither told nor woken); once a core is spare again it serves its
// classes. available_cores = 1 makes "no core spare" a matter of this
// process alone: two threads setting flat out use most of a core whatever
// else the machine runs. Values are checksummed, and the consistency
// checker runs at the end (frees are direct while it stands aside,
// deferred while it runs: both paths are taken).
TEST(EvictorYield, StandsAsideWhileTheApplicationKeepsTheCoresBusyAndComesBack) {
  CacheConfig cfg = twoTiers(2 << 20, 16 << 20);
  cfg.background_eviction.enabled = true;
  cfg.background_eviction.interval_ms = 1;
  cfg.background_eviction.available_cores = 1;
  ASSERT_TRUE(cfg.background_eviction.yield_to_application) << "the default";
  Cache cache(cfg);
  const int keySpace = 80000;  // ~80K keys of ~400 bytes with headers: about 2x both tiers
  std::atomic<uint64_t> bad{0};
  auto work = [&](uint64_t seed, int ops) {
    std::mt19937_64 rng(seed);
    for (int i = 0; i < ops; ++i) {
      const std::string key = "key:" + std::to_string(rng() % keySpace);
      if (rng() % 4 == 0) {
        if (auto v = cache.get(key); v && !checkValue(key, *v)) bad.fetch_add(1);
      } else {
        cache.set(key, makeValue(key, static_cast<uint32_t>(i), 200 + rng() % 300));
      }
    }
  };
  // Busy: two threads for at least 8 meter windows, and until the evictor
  // has stood aside for a while.
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (int t = 0; t < 2; ++t) {
    busy.emplace_back([&, t] {
      for (uint64_t round = 0; !stop.load(std::memory_order_relaxed); ++round) work(1000 * t + round, 2000);
    });
  }
  std::this_thread::sleep_for(4 * SpareCoreMeter::kWindow);
  const CacheStats early = cache.stats();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  CacheStats late;
  do {
    std::this_thread::sleep_for(4 * SpareCoreMeter::kWindow);
    late = cache.stats();
  } while (late.background_evictor.yielded_runs < early.background_evictor.yielded_runs + 8 &&
           std::chrono::steady_clock::now() < deadline);
  stop = true;
  for (auto& th : busy) th.join();
  const uint64_t fg = late.tiers[0].evictions - early.tiers[0].evictions;
  const uint64_t bg = late.tiers[0].background_evictions - early.tiers[0].background_evictions;
  EXPECT_GE(late.background_evictor.yielded_runs, early.background_evictor.yielded_runs + 8);
  EXPECT_GT(fg, 0u) << "allocations evicted for themselves";
  EXPECT_LT(bg, fg) << "standing aside, the evictor did less of the eviction than the allocations";

  // Spare: one thread, a few sets now and then; the class runs low and the
  // evictor, back, serves it.
  const CacheStats quiet = cache.stats();
  ASSERT_TRUE(test::waitFor(
      [&] {
        work(7, 200);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return cache.stats().background_evictions > quiet.background_evictions;
      },
      std::chrono::seconds(20)))
      << "the evictor did not come back";
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

// The batch follows the deficit or the slots consumed since the last look,
// whichever is larger, within [min, max].
TEST(FreeThresholdStrategyRate, BatchCoversWhatTheClassConsumedSinceTheLastLook) {
  FreeThresholdStrategy s(10, 20, 1, 1000);
  ClassUsage u;
  u.capacity = 1000;
  u.free = 50;  // below 10%: deficit to 20% is 150
  EXPECT_EQ(s.batchFor(u), 150u);
  u.consumed = 180;  // consumed faster than the deficit says
  EXPECT_EQ(s.batchFor(u), 180u);
  u.consumed = 5000;  // never beyond the high watermark's worth
  EXPECT_EQ(s.batchFor(u), 200u);
  u.free = 500;  // above the low watermark: nothing, whatever was consumed
  EXPECT_EQ(s.batchFor(u), 0u);
}

}  // namespace
}  // namespace tiercache
