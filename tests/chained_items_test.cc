// ChainedItems (allocator/chained_items.h): chains read back whole and byte
// for byte, or not at all; members and parents leave together.
#include "allocator/chained_items.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace tiercache {
namespace {

using test::fnv1a;
using test::makeValue;
using test::smallDramConfig;

// A child payload that names what it belongs to: parent token, index and a
// version, then bytes derived from all of them and the key.
std::string childPayload(std::string_view key, uint64_t token, uint32_t index, uint32_t version, size_t size) {
  std::string v(std::max<size_t>(size, 16), '\0');
  std::memcpy(v.data(), &token, 8);
  std::memcpy(v.data() + 8, &index, 4);
  std::memcpy(v.data() + 12, &version, 4);
  uint64_t x = fnv1a(key) ^ (token * 0x9E3779B97F4A7C15ull) ^ (uint64_t{index} << 32) ^ version ^ v.size();
  for (size_t i = 16; i < v.size(); ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v[i] = static_cast<char>(x);
  }
  return v;
}

// True if payload is exactly what childPayload wrote for this parent and index.
bool payloadOk(std::string_view key, uint64_t token, uint32_t index, std::string_view payload) {
  if (payload.size() < 16) return false;
  uint64_t t;
  uint32_t i, version;
  std::memcpy(&t, payload.data(), 8);
  std::memcpy(&i, payload.data() + 8, 4);
  std::memcpy(&version, payload.data() + 12, 4);
  return t == token && i == index && childPayload(key, token, index, version, payload.size()) == payload;
}

bool parentOk(std::string_view key, std::string_view value) {
  if (value.size() < 16) return false;
  uint64_t sum, len;
  std::memcpy(&sum, value.data(), 8);
  std::memcpy(&len, value.data() + 8, 8);
  return len == value.size() && sum == (fnv1a(value.substr(16)) ^ fnv1a(key));
}

bool insertParent(Cache& cache, ChainedItems& chains, std::string_view key, const std::string& value) {
  WriteHandle w = cache.allocate(key, value.size());
  if (!w) return false;
  std::memcpy(w.data(), value.data(), value.size());
  chains.insertOrReplace(std::move(w));
  return true;
}

TEST(ChainedItems, ChainReadsBackByteForByteInOrder) {
  CacheHooks hooks;
  auto hook = ChainedItems::attach(hooks);
  Cache cache(smallDramConfig(8 << 20), hooks);
  ChainedItems chains(cache, hook);
  const std::string pv = makeValue("parent", 1, 300);
  ASSERT_TRUE(insertParent(cache, chains, "parent", pv));
  ReadHandle p = cache.find("parent");
  ASSERT_TRUE(p);
  // An inserted parent has an empty chain, not a miss.
  ChainView empty = chains.findChain("parent");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty.size(), 0u);
  empty = {};
  std::vector<std::string> expected;
  for (uint32_t i = 0; i < 6; ++i) {
    expected.push_back(childPayload("parent", p.casToken(), i, 0, 16 + 700 * i));
    ASSERT_TRUE(chains.addChainedItem(p, expected.back()));
  }
  ChainView v = chains.findChain("parent");
  ASSERT_TRUE(v);
  EXPECT_EQ(v.parent.value(), pv);
  ASSERT_EQ(v.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(v.child(i), expected[i]) << i;
  // Children are ordinary items: parent + head + 6 children.
  size_t items = 0;
  v = {};
  cache.forEachItem([&](const ReadHandle&) { ++items; });
  EXPECT_EQ(items, 8u);
  ChainedItemsStats s = chains.stats();
  EXPECT_EQ(s.children_added, 6u);
  EXPECT_EQ(s.live_children, 6);
  EXPECT_GT(s.live_child_bytes, int64_t(700 * 15));

  // Pop the newest, replace the first.
  ASSERT_TRUE(chains.popChainedItem(p));
  expected.pop_back();
  expected[0] = childPayload("parent", p.casToken(), 0, 7, 90);
  ASSERT_TRUE(chains.replaceChainedItem(p, 0, expected[0]));
  EXPECT_FALSE(chains.replaceChainedItem(p, 5, expected[0])) << "index past the chain";
  v = chains.findChain("parent");
  ASSERT_TRUE(v);
  ASSERT_EQ(v.size(), 5u);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(v.child(i), expected[i]) << i;
  v = {};
  EXPECT_EQ(chains.stats().live_children, 5);

  // Removing the parent removes the chain.
  p.reset();
  EXPECT_TRUE(chains.remove("parent"));
  EXPECT_FALSE(chains.findChain("parent"));
  items = 0;
  cache.forEachItem([&](const ReadHandle&) { ++items; });
  EXPECT_EQ(items, 0u);
  EXPECT_EQ(chains.stats().live_children, 0);
  EXPECT_EQ(chains.stats().live_child_bytes, 0);
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(ChainedItems, ReservedKeysAreRefused) {
  Cache cache(smallDramConfig(4 << 20));
  ChainedItems chains(cache);
  WriteHandle w = cache.allocate(std::string_view("\0tcHabc", 7), 8);
  ASSERT_TRUE(w);
  EXPECT_THROW(chains.insertOrReplace(std::move(w)), std::invalid_argument);
  EXPECT_THROW(chains.insertOrReplace(WriteHandle{}), std::invalid_argument);
  EXPECT_FALSE(chains.findChain(std::string_view("\0tcHabc", 7)));
}

TEST(ChainedItems, ParentRemovedOrReplacedThroughCacheDropsTheChain) {
  CacheHooks hooks;
  auto hook = ChainedItems::attach(hooks);
  Cache cache(smallDramConfig(8 << 20), hooks);
  ChainedItems chains(cache, hook);
  ASSERT_TRUE(insertParent(cache, chains, "k", makeValue("k", 1, 100)));
  ReadHandle p = cache.find("k");
  ASSERT_TRUE(chains.addChainedItem(p, childPayload("k", p.casToken(), 0, 0, 64)));
  p.reset();
  // A plain set replaces the parent: its chain does not carry over.
  ASSERT_TRUE(cache.set("k", makeValue("k", 2, 100)));
  EXPECT_FALSE(chains.findChain("k"));
  EXPECT_FALSE(cache.peek(ChainedItems::childKey("k", 0))) << "the hook drops the old chain";
  EXPECT_FALSE(cache.peek(ChainedItems::headKey("k")));
  // A chain can be started on a parent stored by set.
  p = cache.find("k");
  ASSERT_TRUE(chains.addChainedItem(p, childPayload("k", p.casToken(), 0, 1, 64)));
  ChainView v = chains.findChain("k");
  ASSERT_TRUE(v);
  EXPECT_EQ(v.size(), 1u);
  EXPECT_TRUE(payloadOk("k", p.casToken(), 0, v.child(0)));
  v = {};
  p.reset();
  ASSERT_TRUE(cache.remove("k"));
  EXPECT_FALSE(cache.peek(ChainedItems::childKey("k", 0)));
  EXPECT_FALSE(cache.peek(ChainedItems::headKey("k")));
  EXPECT_EQ(chains.stats().live_children, 0);
}

TEST(ChainedItems, MissingChildReadsAsMissNotPartial) {
  Cache cache(smallDramConfig(8 << 20));  // no hook: the reader's checks alone
  ChainedItems chains(cache);
  ASSERT_TRUE(insertParent(cache, chains, "k", makeValue("k", 1, 100)));
  ReadHandle p = cache.find("k");
  for (uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(chains.addChainedItem(p, childPayload("k", p.casToken(), i, 0, 50)));
  ASSERT_TRUE(chains.findChain("k"));
  ASSERT_TRUE(cache.remove(ChainedItems::childKey("k", 1)));
  EXPECT_FALSE(chains.findChain("k"));
  EXPECT_TRUE(cache.peek("k")) << "without the hook the parent stays";
  EXPECT_GE(chains.stats().chain_broken, 1u);
  // A stale child (an older parent's) is refused as well.
  ASSERT_TRUE(insertParent(cache, chains, "k", makeValue("k", 2, 100)));
  ReadHandle p2 = cache.find("k");
  ASSERT_TRUE(chains.addChainedItem(p2, childPayload("k", p2.casToken(), 0, 0, 50)));
  p2.reset();
  // Forge the new head's count up to 3: children 1 and 2 would be the old parent's.
  WriteHandle forged = cache.allocate(ChainedItems::headKey("k"), 16 + 1);
  ASSERT_TRUE(forged);
  {
    ReadHandle h = cache.peek(ChainedItems::headKey("k"));
    std::memcpy(forged.data(), h.value().data(), h.value().size());
  }
  const uint32_t three = 3;
  std::memcpy(forged.data() + 4, &three, 4);
  cache.insertOrReplace(std::move(forged));
  EXPECT_FALSE(chains.findChain("k")) << "children of another parent are never mixed in";
}

// Real evictions: the parent stays hot, its children go cold and are evicted.
void evictChildren(bool withHook) {
  CacheHooks hooks;
  std::shared_ptr<ChainedItems::Hook> hook;
  if (withHook) hook = ChainedItems::attach(hooks);
  Cache cache(smallDramConfig(4 << 20), hooks);
  ChainedItems chains(cache, hook);
  ASSERT_TRUE(insertParent(cache, chains, "parent", makeValue("parent", 1, 1000)));
  ReadHandle p = cache.find("parent");
  const uint64_t token = p.casToken();
  for (uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(chains.addChainedItem(p, childPayload("parent", token, i, 0, 984)));
  p.reset();
  bool childGone = false;
  for (int i = 0; i < 20000 && !childGone; ++i) {
    (void)cache.find("parent");  // keep the parent hot, not its chain
    ASSERT_TRUE(cache.set("filler" + std::to_string(i), makeValue("f", i, 1000)));
    for (uint32_t c = 0; c < 3; ++c) childGone |= !cache.peek(ChainedItems::childKey("parent", c));
  }
  // (No findChain in the loop: reading a chain refreshes its members.)
  ASSERT_TRUE(childGone) << "no chain member was evicted; evictions " << cache.stats().tiers[0].evictions
                         << " items " << cache.stats().tiers[0].items << " parent " << bool(cache.peek("parent"));
  EXPECT_FALSE(chains.findChain("parent"));
  if (withHook) {
    EXPECT_FALSE(cache.peek("parent")) << "an evicted member takes its parent with it";
    EXPECT_GE(chains.stats().cascade_removals, 1u);
  } else {
    EXPECT_TRUE(cache.peek("parent"));
  }
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(ChainedItems, ChildEvictedIsAMissAndTakesTheParent) { evictChildren(true); }
TEST(ChainedItems, ChildEvictedIsAMissWithoutTheHook) { evictChildren(false); }

TEST(ChainedItems, ParentEvictedIsAChainMiss) {
  CacheHooks hooks;
  auto hook = ChainedItems::attach(hooks);
  Cache cache(smallDramConfig(4 << 20), hooks);
  ChainedItems chains(cache, hook);
  ASSERT_TRUE(insertParent(cache, chains, "parent", makeValue("parent", 1, 1000)));
  ReadHandle p = cache.find("parent");
  for (uint32_t i = 0; i < 2; ++i) ASSERT_TRUE(chains.addChainedItem(p, childPayload("parent", p.casToken(), i, 0, 100)));
  p.reset();
  int i = 0;
  for (; i < 20000 && cache.peek("parent"); ++i) {
    // Keep the (small) chain members hot, so the parent is what goes.
    (void)cache.find(ChainedItems::headKey("parent"));
    for (uint32_t c = 0; c < 2; ++c) (void)cache.find(ChainedItems::childKey("parent", c));
    ASSERT_TRUE(cache.set("filler" + std::to_string(i), makeValue("f", i, 1000)));
  }
  ASSERT_FALSE(cache.peek("parent")) << "the parent was never evicted";
  EXPECT_FALSE(chains.findChain("parent"));
  EXPECT_FALSE(cache.peek(ChainedItems::headKey("parent"))) << "the chain leaves with its parent";
  EXPECT_FALSE(cache.peek(ChainedItems::childKey("parent", 0)));
}

TEST(ChainedItems, ReplacingTheParentLeavesAHeldChainReadable) {
  CacheHooks hooks;
  auto hook = ChainedItems::attach(hooks);
  Cache cache(smallDramConfig(8 << 20), hooks);
  ChainedItems chains(cache, hook);
  ASSERT_TRUE(insertParent(cache, chains, "k", makeValue("k", 1, 200)));
  ReadHandle p = cache.find("k");
  std::vector<std::string> old;
  for (uint32_t i = 0; i < 3; ++i) {
    old.push_back(childPayload("k", p.casToken(), i, 0, 500));
    ASSERT_TRUE(chains.addChainedItem(p, old.back()));
  }
  ChainView held = chains.findChain("k");
  ASSERT_TRUE(held);
  // Replace the parent and build a new chain over the same child keys.
  ASSERT_TRUE(insertParent(cache, chains, "k", makeValue("k", 2, 200)));
  EXPECT_FALSE(chains.addChainedItem(p, "x")) << "p is no longer the key's item";
  p = cache.find("k");
  for (uint32_t i = 0; i < 2; ++i) ASSERT_TRUE(chains.addChainedItem(p, childPayload("k", p.casToken(), i, 1, 300)));
  // The held chain still reads as it was, byte for byte.
  EXPECT_EQ(held.parent.value(), makeValue("k", 1, 200));
  ASSERT_EQ(held.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(held.child(i), old[i]);
  ChainView now = chains.findChain("k");
  ASSERT_TRUE(now);
  ASSERT_EQ(now.size(), 2u);
  for (uint32_t i = 0; i < 2; ++i) EXPECT_TRUE(payloadOk("k", p.casToken(), i, now.child(i)));
  held = {};
  now = {};
  p.reset();
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(ChainedItems, ConcurrentStressWithChecksums) {
  CacheHooks hooks;
  auto hook = ChainedItems::attach(hooks);
  Cache cache(smallDramConfig(6 << 20), hooks);
  ChainedItems chains(cache, hook);
  constexpr int kThreads = 4;
  constexpr int kKeys = 48;
  constexpr int kOps = 6000;
  std::atomic<uint64_t> bad{0}, wholeChains{0}, longest{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1234 + t);
      for (int op = 0; op < kOps; ++op) {
        const std::string key = "key" + std::to_string(rng() % kKeys);
        const int dice = int(rng() % 100);
        const uint32_t version = uint32_t(rng());
        if (dice < 35) {
          ChainView v = chains.findChain(key);
          if (!v) continue;
          wholeChains.fetch_add(1);
          uint64_t n = v.size();
          uint64_t l = longest.load();
          while (n > l && !longest.compare_exchange_weak(l, n)) {}
          if (!parentOk(key, v.parent.value())) bad.fetch_add(1);
          for (uint32_t i = 0; i < v.size(); ++i)
            if (!payloadOk(key, v.parent.casToken(), 0, v.child(i))) bad.fetch_add(1);
        } else if (dice < 50) {
          insertParent(cache, chains, key, makeValue(key, version, 64 + rng() % 2000));
        } else if (dice < 80) {
          ReadHandle p = cache.find(key);
          // Index 0 in every payload: concurrent adders cannot know their
          // position; the parent token is what a mixed chain would betray.
          if (p) chains.addChainedItem(p, childPayload(key, p.casToken(), 0, version, 16 + rng() % 3000));
        } else if (dice < 88) {
          ReadHandle p = cache.find(key);
          if (p) chains.popChainedItem(p);
        } else if (dice < 93) {
          ReadHandle p = cache.find(key);
          if (p) chains.replaceChainedItem(p, 0, childPayload(key, p.casToken(), 0, version, 16 + rng() % 500));
        } else if (dice < 97) {
          chains.remove(key);
        } else {
          cache.set(key, makeValue(key, version, 100));  // a parent with no chain: findChain misses
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(wholeChains.load(), 100u);
  EXPECT_GE(longest.load(), 2u);
  EXPECT_GT(chains.stats().children_added, 1000u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

}  // namespace
}  // namespace tiercache
