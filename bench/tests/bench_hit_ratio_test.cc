// The hit-ratio limits: Belady's MIN on hand-worked examples, against an
// exhaustive search on tiny traces, never worse than LRU or a real cache.
#include "bench/hit_ratio_sim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "allocator/cache.h"
#include "bench/runner.h"
#include "bench/trace.h"

namespace tiercache::bench {
namespace {

std::vector<SimRequest> parse(const std::string& ops, uint32_t size = 1) {
  // "a b c" = gets; "+a" set, "-a" del, "?a" lone get.
  std::vector<SimRequest> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    char c = ops[i];
    if (c == ' ') continue;
    RequestOp op = RequestOp::kGet;
    if (c == '+' || c == '-' || c == '?') {
      op = c == '+' ? RequestOp::kSet : c == '-' ? RequestOp::kDel : RequestOp::kLoneGet;
      c = ops[++i];
    }
    out.push_back(SimRequest{uint32_t(c - 'a'), size, op, true});
  }
  return out;
}

TEST(HitRatioSimTest, HandWorkedGets) {
  // Capacity 2, gets with lookaside: a b c b a c a b.
  //   a, b miss and fill. c misses; held a (next read at 5), b (at 4), c
  //   itself (at 6): c is read furthest, so it is not stored. b, a hit.
  //   c misses (never read again: not stored). a, b hit. 4 hits of 8.
  // LRU: a b c miss (c evicts a), b hits, a misses (evicts c), c misses
  //   (evicts b), a hits, b misses: 2 of 8.
  auto reqs = parse("a b c b a c a b");
  SimResult opt = simulateBelady(reqs, 2, true);
  EXPECT_EQ(opt.gets, 8u);
  EXPECT_EQ(opt.hits, 4u);
  EXPECT_DOUBLE_EQ(opt.hitRatio(), 0.5);
  SimResult lru = simulateLru(reqs, 2, true);
  EXPECT_EQ(lru.hits, 2u);
  // Bytes: the same with objects of 10 bytes in 20 bytes.
  auto sized = parse("a b c b a c a b", 10);
  EXPECT_EQ(simulateBeladySize(sized, 20, true).hits, 4u);
  EXPECT_EQ(simulateLru(sized, 20, true).hits, 2u);
  EXPECT_EQ(simulateLru(sized, 29, true).hits, 2u);
}

TEST(HitRatioSimTest, HandWorkedSetsDeletesAndLoneGets) {
  // Capacity 1: +a a +b a -a a ?c.
  //   +a stored. a hits. +b: b is never read, a is read next: b not stored.
  //   a hits. -a drops a. a misses; never read again, so not kept. ?c misses.
  //   Optimal 2 of 4 reads. LRU: +a, a hits, +b evicts a, a misses and
  //   fills, -a, a misses, ?c misses: 1 of 4.
  auto reqs = parse("+a a +b a -a a ?c");
  SimResult opt = simulateBelady(reqs, 1, true);
  EXPECT_EQ(opt.gets, 4u);
  EXPECT_EQ(opt.hits, 2u);
  EXPECT_EQ(simulateLru(reqs, 1, true).hits, 1u);
  // Without lookaside a miss never fills: a a a with nothing set is 0 hits.
  EXPECT_EQ(simulateBelady(parse("a a a"), 4, false).hits, 0u);
  EXPECT_EQ(simulateBelady(parse("a a a"), 4, true).hits, 2u);
  // A lone get never fills, even with lookaside.
  EXPECT_EQ(simulateBelady(parse("?a ?a"), 4, true).hits, 0u);
  EXPECT_EQ(simulateLru(parse("?a ?a"), 4, true).hits, 0u);
}

TEST(HitRatioSimTest, UnmeasuredRequestsWarmButDoNotCount) {
  auto reqs = parse("+a +b a b");
  reqs[0].measured = reqs[1].measured = false;
  SimResult r = simulateBelady(reqs, 2, true);
  EXPECT_EQ(r.gets, 2u);
  EXPECT_EQ(r.hits, 2u);
}

TEST(HitRatioSimTest, ObjectCapacityCountsTheSmallestObjectsThatFit) {
  std::vector<SimRequest> reqs = {{0, 40, RequestOp::kSet, true}, {1, 10, RequestOp::kSet, true},
                                  {2, 30, RequestOp::kGet, true}, {3, 20, RequestOp::kSet, true},
                                  {0, 5, RequestOp::kSet, true},  {4, 1, RequestOp::kLoneGet, true}};
  bool unit = true;
  // Smallest size per storable key: 5, 10, 30, 20 -> 5 + 10 + 20 + 30 = 65.
  EXPECT_EQ(objectCapacity(reqs, 64, &unit), 3u);
  EXPECT_FALSE(unit);
  EXPECT_EQ(objectCapacity(reqs, 65), 4u);
  EXPECT_EQ(objectCapacity(parse("a b c", 8), 20, &unit), 2u);
  EXPECT_TRUE(unit);
}

// The best any policy can do on a unit-size trace: a search over every
// choice (store or not; which object to drop) by dynamic programming over
// the set of held keys.
// relaxed: a read miss may also fill when the key has a value (the model
// simulateBelady optimizes, see hit_ratio_sim.h); else only lookaside gets fill.
uint64_t bruteForceHits(const std::vector<SimRequest>& reqs, uint32_t capacity, bool lookaside, bool relaxed) {
  std::map<uint32_t, int64_t> states = {{0u, 0}};  // held-key mask -> best hits
  std::vector<bool> exists(32, false);
  for (const SimRequest& r : reqs) {
    bool canFill = (r.op == RequestOp::kGet && lookaside) || (relaxed && exists[r.key]);
    uint32_t bit = 1u << r.key;
    std::map<uint32_t, int64_t> next;
    auto offer = [&](uint32_t mask, int64_t hits) {
      auto [it, fresh] = next.try_emplace(mask, hits);
      if (!fresh) it->second = std::max(it->second, hits);
    };
    auto storeChoices = [&](uint32_t mask, int64_t hits) {
      offer(mask, hits);  // do not store
      if (uint32_t(__builtin_popcount(mask)) < capacity) {
        offer(mask | bit, hits);
      } else {
        for (uint32_t m = mask; m; m &= m - 1) offer((mask & ~(m & -m)) | bit, hits);
      }
    };
    for (auto [mask, hits] : states) {
      switch (r.op) {
        case RequestOp::kGet:
        case RequestOp::kLoneGet:
          if (mask & bit) {
            offer(mask, hits + (r.measured ? 1 : 0));
          } else if (canFill) {
            storeChoices(mask, hits);
          } else {
            offer(mask, hits);
          }
          break;
        case RequestOp::kSet: storeChoices(mask & ~bit, hits); break;
        case RequestOp::kDel: offer(mask & ~bit, hits); break;
      }
    }
    states.swap(next);
    if (r.op == RequestOp::kSet || (r.op == RequestOp::kGet && lookaside)) exists[r.key] = true;
    if (r.op == RequestOp::kDel) exists[r.key] = false;
  }
  int64_t best = 0;
  for (auto [mask, hits] : states) best = std::max(best, hits);
  return uint64_t(best);
}

TEST(HitRatioSimTest, BeladyIsExactOnUnitSizesAgainstExhaustiveSearch) {
  std::mt19937_64 rng(7);
  int exactRounds = 0;
  for (int round = 0; round < 400; ++round) {
    uint32_t keys = 2 + rng() % 4;
    size_t n = 6 + rng() % 12;
    std::vector<SimRequest> reqs;
    for (size_t i = 0; i < n; ++i) {
      uint32_t p = rng() % 100;
      RequestOp op = p < 60 ? RequestOp::kGet : p < 85 ? RequestOp::kSet : p < 95 ? RequestOp::kDel : RequestOp::kLoneGet;
      reqs.push_back(SimRequest{uint32_t(rng() % keys), 1, op, rng() % 5 != 0});
    }
    uint32_t capacity = 1 + rng() % 3;
    bool lookaside = rng() % 2;
    SimResult opt = simulateBelady(reqs, capacity, lookaside);
    std::string shown;
    for (const SimRequest& r : reqs)
      shown += std::string(" ") + (r.measured ? "" : "(") + "gsdl"[int(r.op)] + char('a' + r.key) + (r.measured ? "" : ")");
    // Exact for the model it optimizes ...
    ASSERT_EQ(opt.hits, bruteForceHits(reqs, capacity, lookaside, true))
        << "round " << round << ": capacity " << capacity << (lookaside ? ", lookaside:" : ":") << shown;
    // ... an upper bound for the real one, and equal to its optimum when
    // it made no fill a real cache could not.
    uint64_t strict = bruteForceHits(reqs, capacity, lookaside, false);
    ASSERT_GE(opt.hits, strict) << "round " << round << shown;
    if (opt.relaxed_fills == 0) ASSERT_EQ(opt.hits, strict) << "round " << round << shown;
    exactRounds += opt.relaxed_fills == 0;
  }
  EXPECT_GT(exactRounds, 200);  // most rounds check exactness for the real model
}

std::vector<SimRequest> randomSized(std::mt19937_64& rng, size_t n, uint32_t keys, bool unit) {
  std::vector<SimRequest> reqs;
  std::vector<uint32_t> size(keys);
  for (uint32_t& s : size) s = unit ? 100 : 20 + rng() % 400;
  for (size_t i = 0; i < n; ++i) {
    // Skewed: low keys are hot.
    uint32_t k = uint32_t(std::min<uint64_t>(keys - 1, (rng() % keys) * (rng() % keys) / keys));
    uint32_t p = rng() % 100;
    RequestOp op = p < 75 ? RequestOp::kGet : p < 95 ? RequestOp::kSet : RequestOp::kDel;
    if (op == RequestOp::kSet && !unit && rng() % 4 == 0) size[k] = 20 + rng() % 400;
    reqs.push_back(SimRequest{k, size[k], op, true});
  }
  return reqs;
}

TEST(HitRatioSimTest, OptimalNeverWorseThanLru) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 200; ++round) {
    bool unit = round % 2 == 0;
    auto reqs = randomSized(rng, 300, 60, unit);
    uint64_t capacity = 500 + rng() % 3000;
    bool lookaside = rng() % 2;
    HitRatioLimits l = computeLimits(reqs, capacity, lookaside);
    EXPECT_EQ(l.unit_sizes, unit);
    if (!unit) EXPECT_FALSE(l.exact);
    ASSERT_GE(l.optimal.hits, l.lru.hits) << "round " << round;
    if (unit) {
      // Unit sizes: Belady over objects and over bytes agree.
      ASSERT_EQ(l.optimal.hits, l.belady_size.hits) << "round " << round;
    }
  }
}

// Replays a trace single-threaded on a real cache and checks that the
// measured hit ratio never beats the optimum for the cache's capacity.
void expectOptimalBeatsMeasured(const Trace& trace, bool lookaside) {
  Cache cache(CacheConfig::dram(4ull << 20));
  WorkloadResult r = runTrace(cache, trace, ReplayConfig{1, lookaside});
  ASSERT_EQ(r.ops.value_mismatches, 0u) << r.first_mismatch;
  uint64_t gets = r.after.gets - r.before.gets, hits = r.after.hits - r.before.hits;
  uint64_t capacity = 0;
  for (const TierStats& t : r.after.tiers) capacity += t.slabs_total * cache.config().slab_size;
  HitRatioLimits l = computeLimits(traceRequests(trace, r.after.item_header_bytes), capacity, lookaside);
  EXPECT_EQ(l.optimal.gets, gets);
  EXPECT_GT(hits, 0u);
  EXPECT_GE(l.optimal.hits, hits);
  EXPECT_GE(l.optimal.hits, l.lru.hits);
  EXPECT_LT(hits, gets);  // the trace must not fit, or the test shows nothing
}

TEST(HitRatioSimTest, OptimalNeverWorseThanARealCache) {
  std::mt19937_64 rng(3);
  for (bool unit : {true, false}) {
    for (bool lookaside : {true, false}) {
      Trace trace;
      // About 3x what 4 MiB holds.
      const uint32_t keys = unit ? 12000 : 6000;
      for (int i = 0; i < 60000; ++i) {
        uint32_t k = uint32_t((rng() % keys) * (rng() % keys) / keys);
        std::string key = "key-" + std::to_string(k);
        uint32_t size = unit ? 900 : 200 + uint32_t(k * 2654435761u % 3000);
        uint32_t p = rng() % 100;
        trace.add(key, size, p < 80 ? RequestOp::kGet : p < 98 ? RequestOp::kSet : RequestOp::kDel);
      }
      SCOPED_TRACE(std::string(unit ? "unit" : "variable") + (lookaside ? ", lookaside" : ""));
      expectOptimalBeatsMeasured(trace, lookaside);
    }
  }
}

TEST(HitRatioSimTest, FormatNamesExactOrBound) {
  HitRatioLimits l;
  l.capacity_bytes = 1 << 20;
  l.capacity_objects = 1000;
  l.unit_sizes = true;
  l.exact = true;
  l.optimal = {100, 80};
  l.lru = {100, 60};
  EXPECT_EQ(formatLimits(l),
            "  optimal     :  80.00% (Belady, exact for 1,000 objects)\n"
            "  LRU (sim)   :  60.00% (1,048,576 bytes)\n");
  l.unit_sizes = false;
  l.exact = false;
  l.belady_size = {100, 75};
  EXPECT_EQ(formatLimits(l),
            "  optimal     :  80.00% (Belady, upper bound over 1,000 objects)\n"
            "  Belady-size :  75.00% (heuristic, 1,048,576 bytes)\n"
            "  LRU (sim)   :  60.00% (1,048,576 bytes)\n");
}

}  // namespace
}  // namespace tiercache::bench
