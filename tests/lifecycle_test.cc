// Item lifecycle: TTLs and expiry, flush, add / CAS / touch / peek, client
// flags, batched and iterated lookups, and the remove callback.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "allocator/cache.h"
#include "test_util.h"

namespace tiercache {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::system_clock;

// Test seam: the expiry clock, moved by hand.
struct ManualClock {
  std::atomic<int64_t> secs{1'800'000'000};  // 2027-01-15
  Clock::time_point now() const { return Clock::time_point(std::chrono::seconds(secs.load())); }
  void advance(std::chrono::seconds d) { secs += d.count(); }
};

// Records every remove callback: key -> causes, in order.
struct CallbackLog {
  std::mutex mu;
  std::map<std::string, std::vector<RemoveCause>> byKey;
  std::vector<std::tuple<std::string, std::string, uint32_t, RemoveCause>> all;
  void operator()(const RemovedItem& r) {
    std::lock_guard<std::mutex> g(mu);
    byKey[std::string(r.key)].push_back(r.cause);
    all.emplace_back(std::string(r.key), std::string(r.value), r.flags, r.cause);
  }
  size_t count(RemoveCause c) {
    std::lock_guard<std::mutex> g(mu);
    size_t n = 0;
    for (auto& e : all) n += std::get<3>(e) == c;
    return n;
  }
};

CacheHooks hooksWith(ManualClock* clock, CallbackLog* log) {
  CacheHooks h;
  if (clock) h.clock = [clock] { return clock->now(); };
  if (log) h.onRemove = [log](const RemovedItem& r) { (*log)(r); };
  return h;
}

TEST(Lifecycle, ExpiredItemIsNeverServedWithAControllableClock) {
  ManualClock clock;
  CallbackLog log;
  Cache cache(test::smallDramConfig(4 << 20), hooksWith(&clock, &log));
  ASSERT_TRUE(cache.set("a", "va", 10s));
  ASSERT_TRUE(cache.set("b", "vb", 10s));
  ASSERT_TRUE(cache.set("c", "vc", 10s));
  ASSERT_TRUE(cache.set("forever", "vf"));
  ReadHandle held = cache.find("a");
  ASSERT_TRUE(held);
  EXPECT_EQ(*cache.get("b"), "vb");
  clock.advance(9s);
  EXPECT_EQ(*cache.get("b"), "vb");
  clock.advance(1s);  // deadline reached
  EXPECT_FALSE(cache.find("a"));
  EXPECT_FALSE(cache.get("b"));
  EXPECT_FALSE(cache.peek("c"));
  std::string_view keys[] = {"a", "b", "c", "forever"};
  std::vector<ReadHandle> many = cache.findMany(keys);
  EXPECT_FALSE(many[0] || many[1] || many[2]);
  ASSERT_TRUE(many[3]);
  EXPECT_EQ(many[3].value(), "vf");
  int visited = 0;
  cache.forEachItem([&](const ReadHandle& h) {
    ++visited;
    EXPECT_EQ(h.key(), "forever");
  });
  EXPECT_EQ(visited, 1);
  EXPECT_EQ(cache.compareAndSwap("c", 0, "x"), CasResult::kNotFound);
  EXPECT_FALSE(cache.touch("c", 100s));
  EXPECT_FALSE(cache.remove("c")) << "an expired key is absent";
  // A handle taken before the deadline still reads its bytes.
  EXPECT_EQ(held.value(), "va");
  held.reset();
  many.clear();
  // a and b were dropped by the reads that found them dead, c by remove.
  EXPECT_EQ(log.count(RemoveCause::kExpired), 3u);
  EXPECT_EQ(cache.stats().expired, 3u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(Lifecycle, DeadlineIsRoundedUpAndReported) {
  ManualClock clock;
  Cache cache(test::smallDramConfig(4 << 20), hooksWith(&clock, nullptr));
  ASSERT_TRUE(cache.set("k", "v", 30s, 7u));
  ReadHandle h = cache.find("k");
  ASSERT_TRUE(h);
  ASSERT_TRUE(h.expiresAt().has_value());
  EXPECT_EQ(*h.expiresAt(), clock.now() + 30s);
  EXPECT_EQ(h.flags(), 7u);
  ASSERT_TRUE(cache.set("n", "v"));
  EXPECT_FALSE(cache.find("n").expiresAt().has_value());
  ASSERT_TRUE(cache.set("neg", "v", -1s));
  EXPECT_FALSE(cache.find("neg")) << "a negative TTL stores an expired item";
}

TEST(Lifecycle, ExpiredItemIsNeverServedInRealTime) {
  Cache cache(test::smallDramConfig(4 << 20));
  ASSERT_TRUE(cache.set("short", "v", 1s));
  ASSERT_TRUE(cache.set("long", "w", 60s));
  EXPECT_EQ(*cache.get("short"), "v");
  std::this_thread::sleep_for(2100ms);  // 1 s TTL lives at most 2 s
  EXPECT_FALSE(cache.get("short"));
  EXPECT_EQ(*cache.get("long"), "w");
}

TEST(Lifecycle, AddStoresOnlyOverAbsentOrExpired) {
  ManualClock clock;
  CallbackLog log;
  Cache cache(test::smallDramConfig(4 << 20), hooksWith(&clock, &log));
  EXPECT_TRUE(cache.add("k", "v1", 5s));
  EXPECT_FALSE(cache.add("k", "v2"));
  EXPECT_EQ(*cache.get("k"), "v1");
  WriteHandle w = cache.allocate("k", 2, 0s);
  std::memcpy(w.data(), "v3", 2);
  EXPECT_FALSE(cache.insert(std::move(w)));
  EXPECT_EQ(*cache.get("k"), "v1");
  clock.advance(5s);
  EXPECT_TRUE(cache.add("k", "v4")) << "an expired item counts as absent";
  EXPECT_EQ(*cache.get("k"), "v4");
  ASSERT_EQ(log.byKey["k"].size(), 1u);
  EXPECT_EQ(log.byKey["k"][0], RemoveCause::kExpired);
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(Lifecycle, CompareAndSwapChecksTheToken) {
  CallbackLog log;
  Cache cache(test::smallDramConfig(4 << 20), hooksWith(nullptr, &log));
  EXPECT_EQ(cache.compareAndSwap("k", 1, "x"), CasResult::kNotFound);
  ASSERT_TRUE(cache.set("k", "v1", 0s, 3u));
  const uint64_t t1 = cache.find("k").casToken();
  EXPECT_NE(t1, 0u);
  ASSERT_TRUE(cache.set("k", "v2"));
  const uint64_t t2 = cache.find("k").casToken();
  EXPECT_NE(t1, t2);
  EXPECT_EQ(cache.compareAndSwap("k", t1, "stale"), CasResult::kExists);
  EXPECT_EQ(*cache.get("k"), "v2");
  EXPECT_EQ(cache.compareAndSwap("k", t2, "v3", 0s, 9u), CasResult::kStored);
  ReadHandle h = cache.find("k");
  EXPECT_EQ(h.value(), "v3");
  EXPECT_EQ(h.flags(), 9u);
  EXPECT_NE(h.casToken(), t2);
  ASSERT_EQ(log.byKey["k"].size(), 2u);
  EXPECT_EQ(log.byKey["k"][0], RemoveCause::kReplaced);
  EXPECT_EQ(log.byKey["k"][1], RemoveCause::kReplaced);
}

TEST(Lifecycle, TouchSetsANewDeadlineWithoutACallback) {
  ManualClock clock;
  CallbackLog log;
  Cache cache(test::smallDramConfig(4 << 20), hooksWith(&clock, &log));
  ASSERT_TRUE(cache.set("k", "value", 10s, 5u));
  EXPECT_FALSE(cache.touch("absent", 10s));
  clock.advance(8s);
  EXPECT_TRUE(cache.touch("k", 10s));
  clock.advance(8s);  // past the first deadline, before the new one
  ReadHandle h = cache.find("k");
  ASSERT_TRUE(h);
  EXPECT_EQ(h.value(), "value");
  EXPECT_EQ(h.flags(), 5u);
  h.reset();
  EXPECT_TRUE(cache.touch("k", 0s));
  clock.advance(1000s);
  EXPECT_TRUE(cache.find("k")) << "touched to never expire";
  EXPECT_TRUE(log.all.empty()) << "a touch is not a departure";
}

TEST(Lifecycle, PeekChangesNoCounterAndNoPolicyState) {
  // LRU with a 1-slot-per-class budget: whether "a" was accessed decides
  // which of a/b an allocation evicts.
  CacheConfig cfg = test::smallDramConfig(4 << 20);
  cfg.eviction.lru_refresh_ms = 0;
  Cache cache(cfg);
  ASSERT_TRUE(cache.set("a", "1"));
  ASSERT_TRUE(cache.set("b", "2"));
  const CacheStats before = cache.stats();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(cache.peek("a").value(), "1");
  EXPECT_FALSE(cache.peek("missing"));
  const CacheStats after = cache.stats();
  EXPECT_EQ(after.gets, before.gets);
  EXPECT_EQ(after.hits, before.hits);
  EXPECT_EQ(after.tiers[0].hits, before.tiers[0].hits);
  EXPECT_EQ(after.promotion_candidates, before.promotion_candidates);
}

TEST(Lifecycle, FlushHidesEverythingStoredBefore) {
  ManualClock clock;
  Cache cache(test::smallDramConfig(4 << 20), hooksWith(&clock, nullptr));
  ASSERT_TRUE(cache.set("old", "1"));
  cache.flush();
  EXPECT_FALSE(cache.get("old"));
  ASSERT_TRUE(cache.set("new", "2"));
  EXPECT_EQ(*cache.get("new"), "2");
  cache.flush(10s);
  ASSERT_TRUE(cache.set("before", "3"));
  clock.advance(9s);
  EXPECT_EQ(*cache.get("new"), "2") << "the delayed flush is not due yet";
  clock.advance(1s);
  EXPECT_FALSE(cache.get("new"));
  EXPECT_FALSE(cache.get("before"));
  ASSERT_TRUE(cache.set("after", "4"));
  EXPECT_EQ(*cache.get("after"), "4");
}

TEST(Lifecycle, FindManyReturnsOneHandlePerKeyInOrder) {
  Cache cache(test::smallDramConfig(4 << 20));
  std::vector<std::string> names;
  for (int i = 0; i < 100; ++i) {
    names.push_back("k" + std::to_string(i));
    if (i % 3 != 0) ASSERT_TRUE(cache.set(names.back(), test::makeValue(names.back(), 0, 40)));
  }
  std::vector<std::string_view> keys(names.begin(), names.end());
  const uint64_t gets = cache.stats().gets;
  std::vector<ReadHandle> hs = cache.findMany(keys);
  ASSERT_EQ(hs.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i % 3 == 0) {
      EXPECT_FALSE(hs[i]);
    } else {
      ASSERT_TRUE(hs[i]);
      EXPECT_EQ(hs[i].key(), keys[i]);
      EXPECT_EQ(hs[i].value(), test::makeValue(keys[i], 0, 40));
    }
  }
  EXPECT_EQ(cache.stats().gets, gets + keys.size());
}

TEST(Lifecycle, ForEachItemVisitsEveryItemOnceAndMayCallBack) {
  Cache cache(test::smallDramConfig(4 << 20));
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(cache.set("k" + std::to_string(i), std::to_string(i)));
  std::set<std::string> seen;
  cache.forEachItem([&](const ReadHandle& h) {
    EXPECT_TRUE(seen.insert(std::string(h.key())).second);
    EXPECT_EQ(h.key().substr(1), h.value());
    if (h.key() == "k7") cache.remove("k7");  // no cache lock is held
  });
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_FALSE(cache.get("k7"));
}

TEST(Lifecycle, RemoveCallbackGetsKeyValueFlagsAndCause) {
  CallbackLog log;
  Cache cache(test::smallDramConfig(4 << 20), hooksWith(nullptr, &log));
  ASSERT_TRUE(cache.set("k", "v1", 0s, 11u));
  ASSERT_TRUE(cache.remove("k"));
  ASSERT_EQ(log.all.size(), 1u);
  EXPECT_EQ(std::get<0>(log.all[0]), "k");
  EXPECT_EQ(std::get<1>(log.all[0]), "v1");
  EXPECT_EQ(std::get<2>(log.all[0]), 11u);
  EXPECT_EQ(std::get<3>(log.all[0]), RemoveCause::kRemoved);
  EXPECT_FALSE(cache.remove("k"));
  EXPECT_EQ(log.all.size(), 1u);
}

}  // namespace
}  // namespace tiercache
