// Allocation never stalls behind pins (issue 9, items 2-4, 9, 19 and the
// "also look at" list): a starving class gets a slab, a pinned item does not
// block rebalancing or eviction, an empty lower tier is used, a saturated
// refcount is not a miss, and a handle cannot be published by another cache.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "allocator/cache.h"
#include "allocator/hazard_pins.h"
#include "allocator/item.h"
#include "common/periodic_worker.h"
#include "test_util.h"

namespace tiercache {
namespace {

using test::checkValue;
using test::makeValue;
using test::smallDramConfig;

std::string key(const char* prefix, int i) { return prefix + std::to_string(i); }

// 64 MiB of 4 MiB slabs (16 slabs) and 17 classes, 64 B .. 4 MiB.
CacheConfig seventeenClasses() {
  CacheConfig cfg = smallDramConfig(64ull << 20, "lru", 4ull << 20);
  cfg.allocation.sizes.clear();
  for (uint32_t s = 64; s <= (4u << 20); s *= 2) cfg.allocation.sizes.push_back(s);
  return cfg;
}

// Value size that lands in the class of `classBytes` (key of 4 bytes).
size_t valueFor(uint32_t classBytes) { return classBytes - sizeof(Item) - 4; }

// Item 2: every slab owned by a class holding one item; a 17th size still fits.
TEST(Rebalance, ClassWithoutSlabTakesOneFromClassesHoldingOneItemEach) {
  const CacheConfig cfg = seventeenClasses();
  ASSERT_EQ(cfg.allocation.sizes.size(), 17u);
  Cache cache(cfg);
  for (int c = 0; c < 16; ++c) {
    ASSERT_TRUE(cache.set(key("k", 100 + c), std::string(valueFor(cfg.allocation.sizes[c]), 'a' + c))) << c;
  }
  ASSERT_EQ(cache.stats().tiers[0].slabs_used, 16u);
  // The 17th size (4 MiB class): no slab left, no class with a spare slab.
  const std::string big(valueFor(cfg.allocation.sizes[16]), 'Z');
  EXPECT_TRUE(cache.set("k116", big));
  EXPECT_TRUE(cache.get("k116") == big);  // not EXPECT_EQ: 4 MiB in a failure message
  EXPECT_EQ(cache.stats().rebalanced_slabs, 1u);
  // And again with a size whose class just gave its slab away.
  for (int c = 0; c < 16; ++c) {
    const std::string v(valueFor(cfg.allocation.sizes[c]), 'b');
    EXPECT_TRUE(cache.set(key("r", 200 + c), v)) << "class " << c;
    EXPECT_TRUE(cache.get(key("r", 200 + c)) == v) << "class " << c;
  }
  EXPECT_EQ(cache.checkConsistency(), "");
}

// Item 3: one pin in the slab the rebalancer would pick first.
TEST(Rebalance, OnePinnedItemDoesNotBlockSlabRelease) {
  CacheConfig cfg = smallDramConfig(4ull << 20, "lru", 256 << 10);  // 16 slabs
  Cache cache(cfg);
  // Small items fill every slab of one class; the one in the middle of the
  // first slab stays pinned for the whole test.
  const std::string small(40, 's');
  const size_t perSlab = (256 << 10) / 96;  // 44 + up to 10 + 40 bytes: the 96-byte class (64 x 1.5)
  ReadHandle pin;
  for (int i = 0; i < 60000; ++i) {
    ASSERT_TRUE(cache.set(key("small", i), small)) << i;
    if (i == static_cast<int>(perSlab / 2)) pin = cache.find(key("small", i));
  }
  ASSERT_TRUE(pin);
  ASSERT_EQ(cache.stats().tiers[0].slabs_used, 16u);
  const uint64_t evictionsBefore = cache.stats().evictions;
  const std::string large(20000, 'L');
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(cache.set(key("large", i), large)) << i;
  EXPECT_TRUE(cache.get("large49") == large);
  EXPECT_EQ(pin.value(), small);
  // Slab release evicted what its slabs held, not a slab's worth per failed try.
  // 50 large items take 6 slabs of 9 (the 28,768-byte class).
  EXPECT_LE(cache.stats().evictions - evictionsBefore, 8 * perSlab);
  pin.reset();
  EXPECT_EQ(cache.checkConsistency(), "");
}

class PinnedEviction : public ::testing::TestWithParam<std::string> {};

// Item 4: the 64 coldest of 4,096 items pinned for good; later sets still succeed.
TEST_P(PinnedEviction, LongLivedHandlesOnColdestItemsDoNotBlockTheClass) {
  // 16 slabs of 256 KiB, one class of 1 KiB: 4,096 slots.
  CacheConfig cfg = smallDramConfig(4ull << 20, GetParam(), 256 << 10);
  cfg.allocation.sizes = {1024};
  cfg.rebalance.enabled = false;
  Cache cache(cfg);
  const size_t valueSize = 1024 - sizeof(Item) - 16;
  for (int i = 0; i < 4096; ++i) ASSERT_TRUE(cache.set(key("item-", 1000000 + i), makeValue(key("item-", 1000000 + i), 0, valueSize)));
  std::vector<ReadHandle> pins;
  for (int i = 0; i < 64; ++i) {
    pins.push_back(cache.find(key("item-", 1000000 + i)));
    ASSERT_TRUE(pins.back()) << i;
  }
  int failed = 0;
  for (int i = 4096; i < 3 * 4096; ++i) {
    const std::string k = key("item-", 1000000 + i);
    if (!cache.set(k, makeValue(k, 0, valueSize))) ++failed;
  }
  EXPECT_EQ(failed, 0);
  for (const ReadHandle& h : pins) EXPECT_TRUE(checkValue(h.key(), h.value())) << h.key();
  pins.clear();
  EXPECT_EQ(cache.checkConsistency(), "");
}

INSTANTIATE_TEST_SUITE_P(Policies, PinnedEviction, ::testing::Values("lru", "lru-midpoint", "clock"));

// Item 4: when every slot of the class in tier 0 is pinned, an empty lower tier takes the item.
TEST(PinnedEvictionTiers, EveryTierZeroSlotPinnedUsesTheEmptyLowerTier) {
  for (bool background : {false, true}) {
    CacheConfig cfg = smallDramConfig(1ull << 20, "lru", 256 << 10);
    cfg.allocation.sizes = {1024};
    TierConfig lower = cfg.tiers[0];
    lower.name = "lower";
    lower.size = 4ull << 20;
    cfg.tiers.push_back(lower);
    cfg.background_eviction.enabled = background;
    Cache cache(cfg);
    const size_t valueSize = 1024 - sizeof(Item) - 16;
    std::vector<ReadHandle> pins;
    for (int i = 0; i < 1024; ++i) {  // tier 0's 4 slabs x 256 slots
      const std::string k = key("pinned-", 100000 + i);
      ASSERT_TRUE(cache.set(k, makeValue(k, 0, valueSize)));
      pins.push_back(cache.find(k));
      ASSERT_TRUE(pins.back());
      ASSERT_EQ(pins.back().tier(), 0u) << i;
    }
    for (int i = 0; i < 100; ++i) {
      const std::string k = key("later-", 100000 + i);
      ASSERT_TRUE(cache.set(k, makeValue(k, 0, valueSize))) << "background " << background << " item " << i;
      ReadHandle h = cache.find(k);
      ASSERT_TRUE(h);
      EXPECT_EQ(h.tier(), 1u);
      EXPECT_TRUE(checkValue(k, h.value()));
    }
    pins.clear();
    EXPECT_EQ(cache.checkConsistency(), "");
  }
}

// Also-look-at: slab release in tier 0 demotes the items it claims while the next tier has room.
TEST(Rebalance, ReleasedSlabsItemsAreDemotedNotDropped) {
  CacheConfig cfg = smallDramConfig(4ull << 20, "lru", 256 << 10);
  TierConfig lower = cfg.tiers[0];
  lower.name = "lower";
  lower.size = 64ull << 20;
  cfg.tiers.push_back(lower);
  Cache cache(cfg);
  const std::string small(40, 's');
  int n = 0;
  while (cache.stats().tiers[0].slabs_used < 16) {
    ASSERT_TRUE(cache.set(key("small", n), small));
    ++n;
  }
  // Fill tier 0 completely with small items; evictions demote into tier 1.
  for (int i = 0; i < 1000; ++i, ++n) ASSERT_TRUE(cache.set(key("small", n), small));
  const std::string large(20000, 'L');
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(cache.set(key("large", i), large));
  // Every small item is still somewhere: tier 1 has room for all of them.
  int missing = 0;
  for (int i = 0; i < n; ++i) missing += !cache.get(key("small", i)).has_value();
  EXPECT_EQ(missing, 0);
  EXPECT_GT(cache.stats().rebalanced_slabs, 0u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

// Item 19: a handle from another cache.
TEST(HandleOwner, InsertOrReplaceRefusesAHandleOfAnotherCache) {
  Cache a(smallDramConfig(4 << 20));
  Cache b(smallDramConfig(4 << 20));
  WriteHandle h = a.allocate("k", 3);
  ASSERT_TRUE(h);
  std::memcpy(h.data(), "abc", 3);
  EXPECT_THROW(b.insertOrReplace(std::move(h)), std::invalid_argument);
  EXPECT_TRUE(h) << "a refused handle is left to its owner";
  h.reset();
  EXPECT_FALSE(b.get("k").has_value());
  EXPECT_FALSE(a.get("k").has_value());
  EXPECT_EQ(a.checkConsistency(), "");
  EXPECT_EQ(b.checkConsistency(), "");
  EXPECT_EQ(a.stats().tiers[0].items, 0u);
}

// Item 9: a key with the most handles a count can hold is not reported absent.
TEST(Refcount, SaturatedCountIsAnErrorNotAMiss) {
  Cache cache(smallDramConfig(4 << 20));
  ASSERT_TRUE(cache.set("hot", "v"));
  // The thread's hazard entries pin the first finds without a count.
  const size_t most = Item::kRefMask + HazardPins::kPerThread;
  std::vector<ReadHandle> handles;
  handles.reserve(most);
  for (size_t i = 0; i < most; ++i) handles.push_back(cache.find("hot"));
  ASSERT_TRUE(handles.back());
  EXPECT_THROW(cache.find("hot"), RefcountOverflow);
  EXPECT_THROW(cache.get("hot"), RefcountOverflow);
  EXPECT_FALSE(cache.find("absent"));
  handles.pop_back();
  EXPECT_TRUE(cache.find("hot"));
  handles.clear();
  EXPECT_EQ(cache.get("hot"), "v");
  EXPECT_EQ(cache.checkConsistency(), "");
}

// Also-look-at: two threads stopping one worker (CacheStats' checkConsistency and ~Cache both stop).
TEST(PeriodicWorkerStop, TwoThreadsStoppingAtOnce) {
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> runs{0};
    PeriodicWorker w("stop-race", std::chrono::milliseconds(1), [&] { runs.fetch_add(1); });
    w.start();
    std::thread t1([&] { w.stop(); });
    std::thread t2([&] { w.stop(); });
    t1.join();
    t2.join();
    EXPECT_FALSE(w.running());
  }
}

// wakeUnlessDue (the evictor's tell below the low watermark): a worker whose
// timer is far off is woken at once; one whose run is due within `soon` is
// left to its timer, which spares the caller a thread wake-up.
bool waitForRuns(const std::atomic<int>& runs, int n, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (runs.load() < n) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(PeriodicWorkerWake, WakeUnlessDueWakesAWorkerWhoseTimerIsFarOff) {
  std::atomic<int> runs{0};
  PeriodicWorker w("wake-far", std::chrono::seconds(60), [&] { runs.fetch_add(1); });
  w.start();
  ASSERT_TRUE(waitForRuns(runs, 1, std::chrono::seconds(10)));  // the first run is at start
  std::this_thread::sleep_for(std::chrono::milliseconds(50));   // asleep on its 60 s timer
  w.wakeUnlessDue(std::chrono::milliseconds(1));
  EXPECT_TRUE(waitForRuns(runs, 2, std::chrono::seconds(10))) << "not woken: runs " << runs.load();
  w.stop();
}

TEST(PeriodicWorkerWake, WakeUnlessDueLeavesARunThatIsDueSoon) {
  std::atomic<int> runs{0};
  PeriodicWorker w("wake-due", std::chrono::seconds(3), [&] { runs.fetch_add(1); });
  w.start();
  ASSERT_TRUE(waitForRuns(runs, 1, std::chrono::seconds(10)));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  w.wakeUnlessDue(std::chrono::seconds(30));  // the 3 s timer is within 30 s
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(runs.load(), 1) << "woken although its run was due within the bound";
  EXPECT_TRUE(waitForRuns(runs, 2, std::chrono::seconds(20))) << "the timer did not run it";
  w.wake();  // a plain wake still wakes at once
  EXPECT_TRUE(waitForRuns(runs, 3, std::chrono::seconds(2)));
  w.stop();
}

// Why SCHED_BATCH cannot be tested here, or "" when it can: the process
// must run under the normal policy, and a thread must be allowed to take
// SCHED_BATCH (a sandbox may refuse sched_setscheduler).
std::string schedBatchUnavailable() {
  if (sched_getscheduler(0) != SCHED_OTHER) return "not under the normal policy";
  int rc = -1;
  std::thread([&] {
    const sched_param none{};
    rc = sched_setscheduler(0, SCHED_BATCH, &none);
  }).join();
  return rc == 0 ? "" : "sched_setscheduler(SCHED_BATCH) refused here";
}

// Background work does not preempt application threads on its wake-ups:
// every worker (evictors, promoter, reaper, rebalancer) runs under
// SCHED_BATCH when the process runs under the normal policy.
TEST(PeriodicWorkerScheduling, TheTaskRunsUnderSchedBatch) {
  if (const std::string why = schedBatchUnavailable(); !why.empty()) GTEST_SKIP() << why;
  std::atomic<int> runs{0};
  std::atomic<int> policy{-1};
  PeriodicWorker w("sched-batch", std::chrono::seconds(60), [&] {
    policy.store(sched_getscheduler(0));
    runs.fetch_add(1);
  });
  EXPECT_FALSE(w.batchScheduled());
  w.start();
  ASSERT_TRUE(waitForRuns(runs, 1, std::chrono::seconds(10)));
  EXPECT_EQ(policy.load(), SCHED_BATCH);
  EXPECT_TRUE(w.batchScheduled());
  w.stop();
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER) << "the starting thread's policy changed";
}

// A policy the process chose is inherited and kept (here SCHED_IDLE, which
// an unprivileged thread may take).
TEST(PeriodicWorkerScheduling, APolicyTheProcessChoseIsKept) {
  std::atomic<int> runs{0};
  std::atomic<int> policy{-1};
  bool batch = true;
  int refused = 0;  // errno of a refused SCHED_IDLE (a sandbox): the test skips
  std::thread starter([&] {
    const sched_param none{};
    if (sched_setscheduler(0, SCHED_IDLE, &none) != 0) {
      refused = errno;
      return;
    }
    PeriodicWorker w("sched-idle", std::chrono::seconds(60), [&] {
      policy.store(sched_getscheduler(0));
      runs.fetch_add(1);
    });
    w.start();
    ASSERT_TRUE(waitForRuns(runs, 1, std::chrono::seconds(10)));
    batch = w.batchScheduled();
    w.stop();
  });
  starter.join();
  if (refused != 0) GTEST_SKIP() << "sched_setscheduler(SCHED_IDLE) refused here: " << std::strerror(refused);
  EXPECT_EQ(policy.load(), SCHED_IDLE);
  EXPECT_FALSE(batch);
}

// The cache's own workers: every background thread a Cache with background
// eviction, background promotion and the reaper starts is SCHED_BATCH.
TEST(PeriodicWorkerScheduling, ACachesBackgroundThreadsRunUnderSchedBatch) {
  if (const std::string why = schedBatchUnavailable(); !why.empty()) GTEST_SKIP() << why;
  CacheConfig cfg = test::smallTwoTierConfig("lru", 4 << 20, 16 << 20);
  cfg.background_eviction.enabled = true;
  cfg.background_eviction.threads = 2;
  cfg.promotion.enabled = true;
  cfg.promotion.background = true;
  Cache cache(cfg);
  // Each worker thread's name (the workers name themselves tc-*) and policy, from /proc.
  std::vector<std::pair<std::string, int>> seen;
  std::string list;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    seen.clear();
    list.clear();
    bool allBatch = true;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(e.path() / "comm");
      std::string name;
      std::getline(comm, name);
      if (name.rfind("tc-", 0) != 0) continue;
      const int policy = sched_getscheduler(std::stoi(e.path().filename().string()));
      seen.emplace_back(name, policy);
      list += name + ":" + std::to_string(policy) + " ";
      allBatch = allBatch && policy == SCHED_BATCH;
    }
    if (seen.size() >= 3 && allBatch) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_GE(seen.size(), 3u) << "expected 2 evictors and the promoter: " << list;
  for (const auto& [name, policy] : seen) EXPECT_EQ(policy, SCHED_BATCH) << name << " (all: " << list << ")";
}

}  // namespace
}  // namespace tiercache
