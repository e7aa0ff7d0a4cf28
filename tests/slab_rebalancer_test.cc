// The marginal-hits slab rebalancer (issue 11, item 4): slabs move from a
// class whose last slab earns nothing to one where another slab earns hits,
// at most max_slabs per run, without ping-pong; a class that never had a
// slab gets one; the items of a slab taken from an upper tier are demoted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "allocator/cache.h"
#include "allocator/item.h"
#include "test_util.h"

namespace tiercache {
namespace {

using test::checkValue;
using test::makeValue;
using test::smallDramConfig;

constexpr size_t kSmall = 100;   // value bytes: a class of about 200 B
constexpr size_t kLarge = 1500;  // about 1.6 KiB

std::string key(char prefix, int i) { return std::string(1, prefix) + std::to_string(i); }

// 8 MiB of 256 KiB slabs (32). The worker's own runs are an hour apart:
// tests run the rebalancer with rebalanceSlabs(), deterministically.
CacheConfig marginalConfig(uint32_t maxSlabs = 1, const std::string& policy = "lru") {
  CacheConfig cfg = smallDramConfig(8ull << 20, policy);
  cfg.rebalance.strategy = "marginal-hits";
  cfg.rebalance.interval_ms = 3600000;
  cfg.rebalance.max_slabs = maxSlabs;
  return cfg;
}

const ClassStats* classOf(const CacheStats& s, uint32_t tier, size_t valueSize, size_t keySize) {
  const size_t bytes = sizeof(Item) + keySize + valueSize;
  const ClassStats* best = nullptr;
  for (const ClassStats& c : s.classes) {
    if (c.tier == tier && c.alloc_size >= bytes && (!best || c.alloc_size < best->alloc_size)) best = &c;
  }
  return best;
}

// Fills the cache with small items (class A: they are never read again),
// then gives the large class (B) its first slab.
void fillWithSmallThenOneLarge(Cache& cache) {
  for (int i = 0; i < 60000; ++i) ASSERT_TRUE(cache.set(key('a', i), makeValue(key('a', i), 0, kSmall)));
  ASSERT_TRUE(cache.set(key('b', 0), makeValue(key('b', 0), 0, kLarge)));
}

// One round over class B: uniform random gets over `keys` large keys, a
// miss is set (look-aside). Returns the hits.
int roundOfLarge(Cache& cache, std::mt19937& rng, int keys, int requests) {
  std::uniform_int_distribution<int> pick(0, keys - 1);
  int hits = 0;
  for (int r = 0; r < requests; ++r) {
    const std::string k = key('b', pick(rng));
    if (ReadHandle h = cache.find(k)) {
      EXPECT_TRUE(checkValue(k, h.value()));
      ++hits;
    } else {
      EXPECT_TRUE(cache.set(k, makeValue(k, 0, kLarge)));
    }
  }
  return hits;
}

TEST(MarginalHits, SlabsMoveFromAClassThatEarnsNothingToOneThatEarnsHits) {
  Cache cache(marginalConfig());
  fillWithSmallThenOneLarge(cache);
  const CacheStats before = cache.stats();
  const ClassStats small0 = *classOf(before, 0, kSmall, 6);
  const ClassStats large0 = *classOf(before, 0, kLarge, 5);
  ASSERT_GT(small0.slabs, 20u);
  ASSERT_EQ(large0.slabs, 1u);

  std::mt19937 rng(7);
  std::vector<int> hits;
  size_t moved = 0;
  for (int run = 0; run < 12; ++run) {
    hits.push_back(roundOfLarge(cache, rng, 1500, 3000));
    moved += cache.rebalanceSlabs();
  }
  const CacheStats after = cache.stats();
  const ClassStats small1 = *classOf(after, 0, kSmall, 6);
  const ClassStats large1 = *classOf(after, 0, kLarge, 5);
  // One slab per run (max_slabs 1), every one from the idle small class.
  EXPECT_GE(moved, 8u);
  EXPECT_LE(moved, 12u);
  EXPECT_EQ(after.rebalancer_moves, moved);
  EXPECT_EQ(after.rebalancer_runs, before.rebalancer_runs + 12);
  EXPECT_EQ(large1.slabs, large0.slabs + moved);
  EXPECT_EQ(small1.slabs, small0.slabs - moved);
  EXPECT_EQ(large1.slabs_gained - large0.slabs_gained, moved);
  EXPECT_EQ(small1.slabs_lost - small0.slabs_lost, moved);
  EXPECT_GT(large1.marginal_hits, large0.marginal_hits);
  EXPECT_EQ(small1.marginal_hits, small0.marginal_hits);  // never asked for again
  // The large class's hits rise with its slabs.
  EXPECT_GT(hits.back(), 2 * hits.front()) << hits.front() << " -> " << hits.back();
  EXPECT_EQ(cache.checkConsistency(), "");

  // The same workload under free-slots: the small class has no idle slab
  // to give, so the large class stays at one slab and its hits stay low.
  CacheConfig fs = marginalConfig();
  fs.rebalance.strategy = "free-slots";
  Cache control(fs);
  fillWithSmallThenOneLarge(control);
  std::mt19937 rng2(7);
  int controlLast = 0;
  for (int run = 0; run < 12; ++run) controlLast = roundOfLarge(control, rng2, 1500, 3000);
  EXPECT_EQ(control.rebalanceSlabs(), 0u);
  EXPECT_EQ(classOf(control.stats(), 0, kLarge, 5)->slabs, 1u);
  EXPECT_GT(hits.back(), 2 * controlLast) << "marginal-hits " << hits.back() << " vs free-slots " << controlLast;
}

TEST(MarginalHits, RateLimitIsRespected) {
  Cache cache(marginalConfig(3));
  fillWithSmallThenOneLarge(cache);
  std::mt19937 rng(11);
  for (int run = 0; run < 6; ++run) {
    roundOfLarge(cache, rng, 3000, 3000);
    const size_t moved = cache.rebalanceSlabs();
    EXPECT_LE(moved, 3u);
  }
  EXPECT_GT(cache.stats().rebalancer_moves, 0u);

  // The worker's own runs: moves never exceed max_slabs per run.
  CacheConfig cfg = marginalConfig(2);
  cfg.rebalance.interval_ms = 10;
  Cache timed(cfg);
  fillWithSmallThenOneLarge(timed);
  std::mt19937 rng2(12);
  for (int i = 0; i < 20; ++i) roundOfLarge(timed, rng2, 3000, 2000);
  const CacheStats s = timed.stats();
  EXPECT_GT(s.rebalancer_runs, 0u);
  EXPECT_LE(s.rebalancer_moves, 2 * s.rebalancer_runs);
  EXPECT_EQ(timed.checkConsistency(), "");
}

// Two classes that both earn hits, with a stable mix: the slabs settle, and
// no slab goes back and forth between them run after run.
TEST(MarginalHits, NoPingPongOnAStableWorkload) {
  Cache cache(marginalConfig(1));
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> smallKey(0, 30000 - 1), largeKey(0, 3000 - 1), coin(0, 1);
  auto round = [&] {
    for (int r = 0; r < 6000; ++r) {
      const bool small = coin(rng);
      const std::string k = small ? key('a', smallKey(rng)) : key('b', largeKey(rng));
      if (!cache.find(k)) ASSERT_TRUE(cache.set(k, makeValue(k, 0, small ? kSmall : kLarge)));
    }
  };
  for (int i = 0; i < 5; ++i) round();  // warm: both classes full and evicting
  constexpr int kRuns = 40;
  std::vector<int> direction;  // +1: a slab into the large class, -1: out of it, 0: none
  uint64_t gained = classOf(cache.stats(), 0, kLarge, 5)->slabs_gained;
  uint64_t lost = classOf(cache.stats(), 0, kLarge, 5)->slabs_lost;
  for (int run = 0; run < kRuns; ++run) {
    round();
    cache.rebalanceSlabs();
    const CacheStats now = cache.stats();  // classOf points into it
    const ClassStats& l = *classOf(now, 0, kLarge, 5);
    direction.push_back(l.slabs_gained > gained ? 1 : l.slabs_lost > lost ? -1 : 0);
    gained = l.slabs_gained;
    lost = l.slabs_lost;
  }
  // A reversal is a move one way after a move the other way; the cooldown
  // and the gain ratio allow at most a few while the slabs settle.
  int reversals = 0, last = 0, movesSecondHalf = 0;
  std::string trace;
  for (int i = 0; i < kRuns; ++i) {
    trace += direction[i] > 0 ? '+' : direction[i] < 0 ? '-' : '.';
    if (direction[i] == 0) continue;
    if (last != 0 && direction[i] != last) ++reversals;
    last = direction[i];
    if (i >= kRuns / 2) ++movesSecondHalf;
  }
  std::printf("large class, per run (+ gained, - lost): %s\n", trace.c_str());
  EXPECT_LE(reversals, 2) << trace;
  EXPECT_LE(movesSecondHalf, 5) << trace;
  EXPECT_EQ(cache.checkConsistency(), "");
}

// The large class's working set fits after it took slabs from the idle
// small class; then the small keys are wanted too. The large class evicts
// nothing, so its ghost falls silent and it becomes a donor: a slab may go
// to the small class, but none comes straight back (no reversal). (Measured
// with the floor off too: this workload then loses one slab at once instead
// of two after 23 runs, and no reversal either; the gain ratio and the
// cooldown suffice here.)
TEST(MarginalHits, AWorkingSetThatFitsKeepsItsSlabs) {
  Cache cache(marginalConfig());
  fillWithSmallThenOneLarge(cache);
  std::mt19937 rng(9);
  for (int run = 0; run < 14; ++run) {
    roundOfLarge(cache, rng, 1200, 3000);
    cache.rebalanceSlabs();
  }
  std::uniform_int_distribution<int> smallKey(0, 60000 - 1), largeKey(0, 1200 - 1), coin(0, 3);
  std::string trace;
  uint64_t gained = classOf(cache.stats(), 0, kLarge, 5)->slabs_gained;
  uint64_t lost = classOf(cache.stats(), 0, kLarge, 5)->slabs_lost;
  int reversals = 0, last = 0;
  for (int run = 0; run < 30; ++run) {
    for (int r = 0; r < 4000; ++r) {
      const bool small = coin(rng) != 0;
      const std::string k = small ? key('a', smallKey(rng)) : key('b', largeKey(rng));
      if (!cache.find(k)) ASSERT_TRUE(cache.set(k, makeValue(k, 0, small ? kSmall : kLarge)));
    }
    cache.rebalanceSlabs();
    const CacheStats now = cache.stats();  // classOf points into it
    const ClassStats* l = classOf(now, 0, kLarge, 5);
    const int d = l->slabs_gained > gained ? 1 : l->slabs_lost > lost ? -1 : 0;
    gained = l->slabs_gained;
    lost = l->slabs_lost;
    trace += d > 0 ? '+' : d < 0 ? '-' : '.';
    if (d != 0 && last != 0 && d != last) ++reversals;
    if (d != 0) last = d;
  }
  std::printf("large class after it fits, per run: %s\n", trace.c_str());
  EXPECT_LE(reversals, 2) << trace;
  EXPECT_EQ(cache.checkConsistency(), "");
}

// A class that never had a slab gets one at its first allocation under
// marginal-hits too (the slow path keeps serving starving classes), even
// when every slab is held by one full class.
// A move the rebalancer chose but could not make (every slab of the donor
// holds a pinned item) is counted, not silently dropped; once the pins go,
// the same move is made.
TEST(MarginalHits, AMoveWhoseDonorIsPinnedEverywhereIsCountedAsAFailure) {
  Cache cache(marginalConfig());
  fillWithSmallThenOneLarge(cache);
  std::vector<ReadHandle> pins;
  for (int i = 0; i < 60000; ++i) {
    if (ReadHandle h = cache.find(key('a', i))) pins.push_back(std::move(h));
  }
  ASSERT_GT(pins.size(), 1000u);
  std::mt19937 rng(7);
  for (int run = 0; run < 3; ++run) {
    roundOfLarge(cache, rng, 1500, 3000);
    EXPECT_EQ(cache.rebalanceSlabs(), 0u) << "a slab with a pinned item moved";
  }
  const CacheStats pinned = cache.stats();
  EXPECT_EQ(pinned.rebalancer_moves, 0u);
  EXPECT_GT(pinned.rebalancer_move_failures, 0u);
  for (const ReadHandle& h : pins) EXPECT_TRUE(checkValue(std::string(h.key()), h.value()));
  pins.clear();
  roundOfLarge(cache, rng, 1500, 3000);
  EXPECT_GT(cache.rebalanceSlabs(), 0u);
  EXPECT_EQ(cache.stats().rebalancer_move_failures, pinned.rebalancer_move_failures);
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(MarginalHits, AClassThatNeverHadASlabGetsOne) {
  Cache cache(marginalConfig());
  for (int i = 0; i < 60000; ++i) ASSERT_TRUE(cache.set(key('a', i), makeValue(key('a', i), 0, kSmall)));
  // Listed only once it was asked for a slot.
  ASSERT_EQ(classOf(cache.stats(), 0, 3000, 2), nullptr);
  const std::string k = "c0";
  ASSERT_TRUE(cache.set(k, makeValue(k, 0, 3000)));
  const ReadHandle h = cache.find(k);
  ASSERT_TRUE(h);
  EXPECT_TRUE(checkValue(k, h.value()));
  const CacheStats after = cache.stats();
  const ClassStats* c = classOf(after, 0, 3000, 2);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->slabs, 1u);
  EXPECT_EQ(c->slabs_gained, 1u);
}

// Item 4: the items of a slab the rebalancer takes from tier 0 are demoted
// into tier 1 (which has room), not dropped.
TEST(MarginalHits, ItemsOfAMovedSlabAreDemotedWhenTheLowerTierHasRoom) {
  CacheConfig cfg = marginalConfig();
  TierConfig lower = cfg.tiers[0];
  lower.name = "lower";
  lower.size = 64ull << 20;
  cfg.tiers.push_back(lower);
  Cache cache(cfg);
  // Fill tier 0 with small items; a few spill into tier 1 by demotion.
  // stats() is looked at every 64 sets, not after each: it sums every
  // class and counter, and under TSan that loop took most of a minute.
  int n = 0;
  for (CacheStats s = cache.stats(); s.tiers[0].slabs_used < s.tiers[0].slabs_total; s = cache.stats()) {
    for (int i = 0; i < 64; ++i, ++n) ASSERT_TRUE(cache.set(key('a', n), makeValue(key('a', n), 0, kSmall)));
  }
  for (int i = 0; i < 2000; ++i, ++n) ASSERT_TRUE(cache.set(key('a', n), makeValue(key('a', n), 0, kSmall)));
  ASSERT_TRUE(cache.set(key('b', 0), makeValue(key('b', 0), 0, kLarge)));
  // Large keys churn in tier 0 (and hit in tier 1 after their demotion).
  std::mt19937 rng(5);
  const uint64_t smallDemotionsBefore = classOf(cache.stats(), 0, kSmall, 6)->demotions;
  const uint64_t smallLostBefore = classOf(cache.stats(), 0, kSmall, 6)->slabs_lost;
  size_t moved = 0;
  for (int run = 0; run < 6; ++run) {
    roundOfLarge(cache, rng, 1500, 3000);
    moved += cache.rebalanceSlabs();
  }
  ASSERT_GT(moved, 0u);
  const CacheStats s = cache.stats();
  const ClassStats& small0 = *classOf(s, 0, kSmall, 6);
  EXPECT_EQ(small0.slabs_lost - smallLostBefore, moved);
  // Nothing small was dropped: tier 1 had room for every one.
  int missing = 0;
  for (int i = 0; i < n; ++i) {
    const ReadHandle h = cache.peek(key('a', i));
    if (!h) {
      ++missing;
      continue;
    }
    EXPECT_TRUE(checkValue(key('a', i), h.value()));
  }
  EXPECT_EQ(missing, 0);
  // The small class allocates nothing in these rounds: its demotions are the
  // moved slabs' items (each slab was at least half full).
  const uint64_t slotsPerSlab = (256u << 10) / small0.alloc_size;
  EXPECT_GE(small0.demotions - smallDemotionsBefore, moved * slotsPerSlab / 2);
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(MarginalHits, ConfigRowsAreParsedAndBounded) {
  const CacheConfig c = CacheConfig::fromJsonString(
      R"({"tiers": [{"name": "dram", "kind": "dram", "size": 67108864}],
          "rebalance": {"strategy": "marginal-hits", "interval_ms": 250, "max_slabs": 3}})");
  EXPECT_EQ(c.rebalance.strategy, "marginal-hits");
  EXPECT_EQ(c.rebalance.interval_ms, 250u);
  EXPECT_EQ(c.rebalance.max_slabs, 3u);
  auto errorOf = [](const char* json) {
    try {
      CacheConfig::fromJsonString(json);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(errorOf(R"({"tiers": [{"name": "d", "kind": "dram", "size": 67108864}],
                        "rebalance": {"max_slabs": 0}})")
                .find("rebalance.max_slabs"),
            std::string::npos);
  EXPECT_NE(errorOf(R"({"tiers": [{"name": "d", "kind": "dram", "size": 67108864}],
                        "rebalance": {"interval_ms": 1}})")
                .find("rebalance.interval_ms"),
            std::string::npos);
}

// Several threads set and read mixed sizes (checksummed values) while the
// rebalancer's worker runs every 10 ms and another thread runs it besides,
// over two tiers: values read back intact and the structures stay consistent.
TEST(MarginalHits, StressWithReadersWritersAndTheWorker) {
  CacheConfig cfg = marginalConfig(4, "wtinylfu");
  cfg.rebalance.interval_ms = 10;
  TierConfig lower = cfg.tiers[0];
  lower.name = "lower";
  lower.size = 8ull << 20;
  cfg.tiers.push_back(lower);
  Cache cache(cfg);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0}, reads{0};
  auto worker = [&](int id) {
    std::mt19937 rng(100 + id);
    // The mix shifts over time: small values first, then large ones.
    for (int phase = 0; phase < 3; ++phase) {
      const size_t sizes[3][2] = {{kSmall, 300}, {300, kLarge}, {kLarge, 3000}};
      std::uniform_int_distribution<int> pick(0, 4000 - 1), which(0, 1);
      for (int r = 0; r < 15000; ++r) {
        const size_t size = sizes[phase][which(rng)];
        const std::string k = std::to_string(size) + "k" + std::to_string(pick(rng));
        if (ReadHandle h = cache.find(k)) {
          reads.fetch_add(1, std::memory_order_relaxed);
          if (!checkValue(k, h.value())) bad.fetch_add(1, std::memory_order_relaxed);
        } else {
          cache.set(k, makeValue(k, static_cast<uint32_t>(r), size));
        }
      }
    }
  };
  std::thread extra([&] {
    while (!stop.load()) {
      cache.rebalanceSlabs();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back(worker, i);
  for (auto& t : threads) t.join();
  stop = true;
  extra.join();
  const CacheStats s = cache.stats();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
  EXPECT_GT(s.rebalancer_moves, 0u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

}  // namespace
}  // namespace tiercache
