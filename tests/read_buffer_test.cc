// The hit path's read buffers (eviction/read_buffer.h) and W-TinyLFU's use
// of them: a recorded hit always reaches the sketch with one thread, in the
// order of the calls; a hit never waits for the policy lock and the buffer
// stays bounded while the lock is busy; and a multi-threaded run through the
// cache reads back every value intact and passes the consistency checker.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "allocator/cache.h"
#include "eviction/frequency_sketch.h"
#include "eviction/read_buffer.h"
#include "eviction/wtinylfu_policy.h"
#include "test_util.h"

namespace tiercache {
namespace {

// Hooks in an array; each ref is its own key (the policies never see items).
class HitBufferResolver final : public HookResolver {
 public:
  explicit HitBufferResolver(size_t n) : hooks_(n) {}
  EvictionHook& hook(RefWord ref) const override { return hooks_.at(ref); }
  uint64_t keyHash(RefWord ref) const override { return hashOf(ref); }
  static uint64_t hashOf(RefWord ref) { return (ref + 7) * 0xD6E8FEB86659FD93ull ^ 0x2545F4914F6CDD1Dull; }

 private:
  mutable std::vector<EvictionHook> hooks_;
};

TEST(ReadBuffer, AppliesInPushOrderAndIsFullAtCapacity) {
  ReadBuffer b;
  for (uint64_t i = 0; i < ReadBuffer::kCapacity; ++i) ASSERT_EQ(b.push(i + 1), ReadBuffer::Push::kQueued);
  EXPECT_EQ(b.push(999), ReadBuffer::Push::kFull);
  EXPECT_EQ(b.pending(), ReadBuffer::kCapacity);
  std::vector<uint64_t> seen;
  EXPECT_EQ(b.drainOwn([&](uint64_t v) { seen.push_back(v); }), ReadBuffer::kCapacity);
  ASSERT_EQ(seen.size(), ReadBuffer::kCapacity);
  for (uint64_t i = 0; i < ReadBuffer::kCapacity; ++i) EXPECT_EQ(seen[i], i + 1);
  EXPECT_EQ(b.pending(), 0u);
  // The ring wraps: the next entries land where the first were.
  EXPECT_EQ(b.push(42), ReadBuffer::Push::kQueued);
  seen.clear();
  b.drainAll([&](uint64_t v) { seen.push_back(v); });
  EXPECT_EQ(seen, std::vector<uint64_t>{42});
}

TEST(ReadBuffer, DrainAllAppliesEveryThreadsStripeAndExitedThreadsGiveTheirsBack) {
  ReadBuffer b;
  // More threads than stripes, one after another: each finds a stripe,
  // because an exited thread's stripe goes to the next one.
  constexpr int kThreads = 3 * static_cast<int>(ReadBuffer::kStripes);
  // A stripe handed on keeps its entries: drain before it could fill.
  uint64_t sum = 0;
  size_t applied = 0;
  for (int t = 0; t < kThreads; ++t) {
    std::thread([&, t] { EXPECT_EQ(b.push(static_cast<uint64_t>(t)), ReadBuffer::Push::kQueued); }).join();
    if (t % 8 == 7) {
      EXPECT_EQ(b.pending(), 8u);
      applied += b.drainAll([&](uint64_t v) { sum += v; });
    }
  }
  EXPECT_EQ(applied, static_cast<size_t>(kThreads));
  EXPECT_EQ(sum, static_cast<uint64_t>(kThreads) * (kThreads - 1) / 2);
  EXPECT_EQ(b.pending(), 0u);
}

// The same calls on the policy and on a bare sketch of the same size: every
// estimate must agree, so no buffered hit was lost or reordered. Fails if a
// hit is recorded and never applied (or applied after a later add's count).
TEST(WTinyLfuReadBuffer, OneThreadsHitsReachTheSketchExactlyInOrder) {
  constexpr uint32_t kItems = 1000;  // within the first sketch (1024), so it is never re-made
  HitBufferResolver r(kItems);
  WTinyLfuPolicy p(r, 1);
  FrequencySketch reference(1024, 16);
  std::mt19937 rng(7);
  uint32_t added = 0;
  for (int step = 0; step < 5000; ++step) {
    if (added < kItems && rng() % 3 == 0) {
      p.add(added);
      reference.increment(HitBufferResolver::hashOf(added));
      ++added;
    } else if (added > 0) {
      const uint32_t ref = rng() % added;
      // A hit counts once per pass: until a move (an eviction scan, or
      // the window's overflow in add) clears the bit.
      const bool counted = r.hook(ref).meta.load() & EvictionHook::kAccessed;
      p.recordAccess(ref);
      if (!counted) reference.increment(HitBufferResolver::hashOf(ref));
    }
  }
  EXPECT_GT(p.pendingHits(), 0u) << "the last hits wait in the buffer";
  EXPECT_LE(p.pendingHits(), ReadBuffer::kCapacity);
  for (uint32_t ref = 0; ref < added; ++ref) {
    ASSERT_EQ(p.estimate(ref), reference.estimate(HitBufferResolver::hashOf(ref))) << "ref " << ref;
  }
  EXPECT_EQ(p.pendingHits(), 0u);
  EXPECT_EQ(p.droppedHits(), 0u) << "one thread never finds the lock busy";
}

class TakeOne final : public EvictionVisitor {
 public:
  Verdict visit(RefWord) override { return Verdict::kTake; }
};

TEST(WTinyLfuReadBuffer, EvictionAppliesTheHitsOfEveryThread) {
  HitBufferResolver r(64);
  WTinyLfuPolicy p(r, 1);
  for (uint32_t i = 0; i < 64; ++i) p.add(i);
  std::thread([&] {
    for (uint32_t i = 0; i < 10; ++i) p.recordAccess(i);
  }).join();
  EXPECT_EQ(p.pendingHits(), 10u);
  TakeOne v;
  p.evict(1, 100, v);
  EXPECT_EQ(p.pendingHits(), 0u) << "evict() reads the sketch: every stripe is applied first";
}

// A visitor that holds the policy lock (it runs under it) until released.
class HoldTheLock final : public EvictionVisitor {
 public:
  Verdict visit(RefWord) override {
    inside.store(true);
    while (!release.load()) std::this_thread::yield();
    return Verdict::kStop;
  }
  std::atomic<bool> inside{false}, release{false};
};

TEST(WTinyLfuReadBuffer, HitsNeverWaitForABusyLockAndTheBufferStaysBounded) {
  constexpr uint32_t kItems = 2000;
  HitBufferResolver r(kItems);
  WTinyLfuPolicy p(r, 1);
  for (uint32_t i = 0; i < kItems; ++i) p.add(i);
  HoldTheLock hold;
  std::thread holder([&] { p.evict(1, 10, hold); });
  while (!hold.inside.load()) std::this_thread::yield();
  // Every first hit records a sketch increment: far more than a stripe holds.
  std::atomic<bool> done{false};
  std::thread hitter([&] {
    for (uint32_t i = 0; i < kItems; ++i) p.recordAccess(i);
    done.store(true);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  const bool finishedWhileHeld = done.load();
  const size_t pending = p.pendingHits();
  const uint64_t dropped = p.droppedHits();
  hold.release.store(true);
  holder.join();
  hitter.join();
  EXPECT_TRUE(finishedWhileHeld) << "a hit waited for the policy lock";
  EXPECT_EQ(pending, ReadBuffer::kCapacity) << "bounded: one full stripe";
  EXPECT_EQ(dropped, kItems - ReadBuffer::kCapacity) << "the rest were dropped, not queued";
  TakeOne v;
  p.evict(1, 100, v);
  EXPECT_EQ(p.pendingHits(), 0u);
}

// Through the cache: more threads than stripes (some record hits straight
// into the sketch), a hot key set so that hits, W-TinyLFU evictions, and
// rewrites race; every value carries a checksum. TSan runs it.
TEST(WTinyLfuReadBuffer, ManyThreadsOfHitsAndEvictionsKeepValuesAndStructuresIntact) {
  CacheConfig cfg = test::smallDramConfig(2 << 20, "wtinylfu", 64 << 10);
  Cache cache(cfg);
  constexpr int kThreads = static_cast<int>(ReadBuffer::kStripes) + 4;
  constexpr int kKeys = 12000;       // ~6.6 MB of values: three times the cache
  for (int k = 0; k < kKeys; ++k) {  // more than the cache holds: it evicts from here on
    const std::string key = "hb:" + std::to_string(k);
    cache.set(key, test::makeValue(key, 0, 300 + k % 500));
  }
  std::atomic<uint64_t> bad{0}, hits{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 rng(99 + t);
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int i = 0; i < 4000; ++i) {
        // Skewed: most requests go to the first 1,000 keys.
        const int k = static_cast<int>(rng() % 4 == 0 ? rng() % kKeys : rng() % 1000);
        const std::string key = "hb:" + std::to_string(k);
        if (rng() % 5 == 0) {
          cache.set(key, test::makeValue(key, static_cast<uint32_t>(i), 300 + rng() % 500));
        } else if (ReadHandle h = cache.find(key)) {
          hits.fetch_add(1, std::memory_order_relaxed);
          if (h.key() != key || !test::checkValue(key, h.value())) bad.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(hits.load(), 0u);
  const CacheStats s = cache.stats();
  EXPECT_GT(s.evictions, 0u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

}  // namespace
}  // namespace tiercache
