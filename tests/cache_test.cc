// Behaviour of the Cache facade, run once per eviction policy.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "allocator/cache.h"
#include "allocator/hazard_pins.h"
#include "allocator/item.h"
#include "allocator/slab_allocator.h"
#include "test_util.h"

namespace tiercache {

// Reaches into a cache for tests that must corrupt it on purpose.
class CacheTestPeer {
 public:
  static SlabTable& table(Cache& c) { return *c.table_; }
};

namespace {

using test::checkValue;
using test::makeValue;
using test::smallDramConfig;

class CacheTest : public ::testing::TestWithParam<std::string> {
 protected:
  CacheConfig config(uint64_t bytes = 8 << 20) { return smallDramConfig(bytes, GetParam()); }
};

TEST_P(CacheTest, SetThenGetReturnsValueByteForByte) {
  Cache cache(config());
  std::string binary("a\0b\xff\x01zz", 7);
  ASSERT_TRUE(cache.set("k1", binary));
  ASSERT_TRUE(cache.set("k2", "hello"));
  EXPECT_EQ(cache.get("k1"), binary);
  EXPECT_EQ(cache.get("k2"), "hello");
  EXPECT_EQ(cache.checkConsistency(), "");
}

// The server's mg h and l: the fetched bit through handles (a find does
// not set it, markFetched does, a set starts a new item unfetched) and the
// idle time the policy records (LRU only; -1 elsewhere).
TEST_P(CacheTest, FetchedBitAndIdleTimeThroughHandles) {
  Cache cache(config());
  ASSERT_TRUE(cache.set("k", "v1"));
  {
    ReadHandle h = cache.find("k");
    ASSERT_TRUE(h);
    EXPECT_FALSE(h.fetched());
    EXPECT_FALSE(h.markFetched());
    EXPECT_TRUE(h.markFetched());
  }
  EXPECT_TRUE(cache.peek("k").fetched());
  ASSERT_TRUE(cache.set("k", "v2"));
  EXPECT_FALSE(cache.peek("k").fetched());
  const bool lru = GetParam().rfind("lru", 0) == 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  const int64_t idle = cache.peek("k").idleMs();
  if (lru) {
    EXPECT_GE(idle, 40);
    EXPECT_LT(idle, 10'000);
    (void)cache.find("k");  // exact LRU until the first eviction: the stamp moves
    EXPECT_LT(cache.peek("k").idleMs(), 40);
  } else {
    EXPECT_EQ(idle, -1);
  }
}

TEST_P(CacheTest, MissReturnsNulloptAndCountsGets) {
  Cache cache(config());
  EXPECT_FALSE(cache.get("nope").has_value());
  EXPECT_FALSE(cache.find("nope"));
  ASSERT_TRUE(cache.set("yes", "1"));
  EXPECT_TRUE(cache.get("yes").has_value());
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.gets, 3u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.items, 1u);
}

TEST_P(CacheTest, EmptyValueAndEmptyKeyAreStored) {
  Cache cache(config());
  ASSERT_TRUE(cache.set("", "empty key"));
  ASSERT_TRUE(cache.set("empty value", ""));
  EXPECT_EQ(cache.get(""), "empty key");
  EXPECT_EQ(cache.get("empty value"), "");
}

TEST_P(CacheTest, OverwriteReplacesValueAndFreesOldSlot) {
  Cache cache(config());
  ASSERT_TRUE(cache.set("k", std::string(100, 'a')));
  ASSERT_TRUE(cache.set("k", std::string(3000, 'b')));
  EXPECT_EQ(cache.get("k"), std::string(3000, 'b'));
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.replaces, 1u);
  EXPECT_EQ(s.items, 1u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST_P(CacheTest, RemoveDeletesOnlyThatKey) {
  Cache cache(config());
  ASSERT_TRUE(cache.set("a", "1"));
  ASSERT_TRUE(cache.set("b", "2"));
  EXPECT_TRUE(cache.remove("a"));
  EXPECT_FALSE(cache.remove("a"));
  EXPECT_FALSE(cache.get("a").has_value());
  EXPECT_EQ(cache.get("b"), "2");
  EXPECT_EQ(cache.stats().removes, 1u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST_P(CacheTest, FindHandleExposesKeyAndValue) {
  Cache cache(config());
  ASSERT_TRUE(cache.set("key", "value"));
  ReadHandle h = cache.find("key");
  ASSERT_TRUE(h);
  EXPECT_EQ(h.key(), "key");
  EXPECT_EQ(h.value(), "value");
  EXPECT_EQ(h.tier(), 0u);
}

TEST_P(CacheTest, AllocateAndInsertOrReplaceIsZeroCopy) {
  Cache cache(config());
  WriteHandle w = cache.allocate("zc", 1000);
  ASSERT_TRUE(w);
  ASSERT_EQ(w.size(), 1000u);
  for (size_t i = 0; i < w.size(); ++i) w.data()[i] = static_cast<char>(i * 7);
  EXPECT_FALSE(cache.find("zc")) << "not visible before insert";
  EXPECT_FALSE(cache.insertOrReplace(std::move(w)));
  EXPECT_FALSE(w);
  ReadHandle h = cache.find("zc");
  ASSERT_TRUE(h);
  ASSERT_EQ(h.value().size(), 1000u);
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(h.value()[i], static_cast<char>(i * 7));
  WriteHandle w2 = cache.allocate("zc", 5);
  std::memcpy(w2.data(), "again", 5);
  EXPECT_TRUE(cache.insertOrReplace(std::move(w2)));
  EXPECT_EQ(h.value().size(), 1000u) << "an old handle keeps the old item";
  EXPECT_EQ(cache.get("zc"), "again");
}

TEST_P(CacheTest, InsertingAnEmptyHandleThrows) {
  Cache cache(config());
  WriteHandle empty;
  EXPECT_THROW(cache.insertOrReplace(std::move(empty)), std::invalid_argument);
}

TEST_P(CacheTest, DroppedWriteHandleReturnsItsSlot) {
  Cache cache(config());
  { WriteHandle w = cache.allocate("never", 200); ASSERT_TRUE(w); }
  EXPECT_FALSE(cache.find("never"));
  EXPECT_EQ(cache.stats().items, 0u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

// Every way a WriteHandle ends without publishing its item gives the slot
// back (a discard, without the release's CAS): the destructor, reset(), a
// move-assignment over it and an add that loses. The handle that did
// publish ends as a reader's pin, so a reader's handle keeps the item.
TEST_P(CacheTest, EveryUninsertedWriteHandleGivesItsSlotBack) {
  Cache cache(config());
  ASSERT_TRUE(cache.set("taken", "first"));
  auto freeSlots = [&] {
    uint64_t n = 0;
    for (const ClassStats& c : cache.stats().classes) n += c.free_slots;
    return n;
  };
  auto round = [&] {
    { WriteHandle w = cache.allocate("d", 200); ASSERT_TRUE(w); }
    WriteHandle r = cache.allocate("r", 200);
    ASSERT_TRUE(r);
    r.reset();
    EXPECT_FALSE(r);
    WriteHandle a = cache.allocate("a", 300);
    ASSERT_TRUE(a);
    a = cache.allocate("b", 300);  // a's first slot goes back
    ASSERT_TRUE(a);
    a = WriteHandle();
    WriteHandle add = cache.allocate("taken", 5);
    ASSERT_TRUE(add);
    std::memcpy(add.data(), "other", 5);
    EXPECT_FALSE(cache.insert(std::move(add))) << "the key is there: the add loses and drops its slot";
  };
  round();  // gives each class it uses its slab
  const uint64_t before = freeSlots();
  for (int i = 0; i < 50; ++i) round();
  EXPECT_EQ(freeSlots(), before);
  EXPECT_EQ(cache.get("taken"), "first");
  for (const char* k : {"d", "r", "a", "b"}) EXPECT_FALSE(cache.find(k)) << k;

  WriteHandle w = cache.allocate("pub", 4);
  std::memcpy(w.data(), "four", 4);
  ASSERT_TRUE(cache.insert(std::move(w)));
  ReadHandle h = cache.find("pub");
  ASSERT_TRUE(cache.remove("pub"));
  EXPECT_EQ(h.value(), "four") << "the publishing handle's end did not free a pinned item";
  h.reset();
  EXPECT_EQ(freeSlots(), before);
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST_P(CacheTest, HandleOutlivesRemove) {
  Cache cache(config());
  ASSERT_TRUE(cache.set("k", "pinned value"));
  ReadHandle h = cache.find("k");
  ASSERT_TRUE(cache.remove("k"));
  EXPECT_FALSE(cache.find("k"));
  // The slot may not be reused while the handle lives.
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(cache.set("other" + std::to_string(i), "pinned XXXXX"));
  EXPECT_EQ(h.value(), "pinned value");
  h.reset();
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST_P(CacheTest, HandleOutlivesReplace) {
  Cache cache(config());
  ASSERT_TRUE(cache.set("k", "v1"));
  ReadHandle h = cache.find("k");
  ASSERT_TRUE(cache.set("k", "v2"));
  EXPECT_EQ(h.value(), "v1");
  EXPECT_EQ(cache.get("k"), "v2");
  h.reset();
  EXPECT_EQ(cache.stats().items, 1u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

// A replacing set whose new size falls in the old item's class rewrites
// the item in its slot: no allocation, no new slot, the value byte for
// byte, and a new CAS token, flags and deadline, as a new item would have.
TEST_P(CacheTest, ReplacingSetRewritesTheItemInItsSlot) {
  test::ManualClock clock;
  CacheHooks hooks;
  hooks.clock = [&clock] { return clock.now(); };
  Cache cache(config(), hooks);
  const std::string v1 = makeValue("k", 1, 300), v2 = makeValue("k", 2, 300);
  ASSERT_TRUE(cache.set("k", v1, std::chrono::seconds(100), 7));
  ReadHandle h = cache.find("k");
  const CompressedRef ref1 = h.ref();
  const uint64_t token1 = h.casToken();
  h.reset();
  const CacheStats before = cache.stats();
  ASSERT_TRUE(cache.set("k", v2, Cache::Ttl::zero(), 9));
  const CacheStats after = cache.stats();
  EXPECT_EQ(after.replaces_in_place - before.replaces_in_place, 1u);
  EXPECT_EQ(after.alloc_attempts, before.alloc_attempts) << "no slot was asked for";
  EXPECT_EQ(after.sets - before.sets, 1u);
  EXPECT_EQ(after.inserts - before.inserts, 1u);
  EXPECT_EQ(after.replaces - before.replaces, 1u);
  EXPECT_EQ(after.items, 1u);
  h = cache.find("k");
  ASSERT_TRUE(h);
  EXPECT_EQ(h.ref().raw(), ref1.raw()) << "the same slot";
  EXPECT_EQ(h.value(), v2);
  EXPECT_NE(h.casToken(), token1) << "a rewrite is a new version: a CAS on the old token must fail";
  EXPECT_EQ(h.flags(), 9u);
  EXPECT_FALSE(h.expiresAt().has_value()) << "the set without a TTL clears the old deadline";
  h.reset();
  // A shorter value in the same class: the length shrinks with it.
  const std::string v3 = makeValue("k", 3, 290);
  ASSERT_TRUE(cache.set("k", v3, std::chrono::seconds(5)));
  EXPECT_EQ(cache.get("k"), v3);
  EXPECT_EQ(cache.stats().replaces_in_place - before.replaces_in_place, 2u);
  clock.advance(std::chrono::seconds(6));
  EXPECT_FALSE(cache.get("k").has_value()) << "the rewritten deadline holds";
  EXPECT_EQ(cache.checkConsistency(), "");
}

// The same through allocate + insertOrReplace: the filled new item is
// copied over the old one and its own slot goes back to the class.
TEST_P(CacheTest, InsertOrReplaceRewritesTheOldItemAndFreesTheNewSlot) {
  Cache cache(config());
  ASSERT_TRUE(cache.set("k", makeValue("k", 1, 300)));
  const CompressedRef ref1 = cache.find("k").ref();
  const std::string v2 = makeValue("k", 2, 300);
  WriteHandle w = cache.allocate("k", v2.size(), std::chrono::seconds(100), 3);
  ASSERT_TRUE(w);
  std::memcpy(w.data(), v2.data(), v2.size());
  const CompressedRef newSlot = w.ref();
  EXPECT_TRUE(cache.insertOrReplace(std::move(w)));
  EXPECT_FALSE(w) << "the handle was consumed";
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.replaces_in_place, 1u);
  // One set (the first), two inserts, one of them a replace: the in-place
  // insert is counted in the rows it belongs to, and not as a set.
  EXPECT_EQ(s.sets, 1u);
  EXPECT_EQ(s.inserts, 2u);
  EXPECT_EQ(s.replaces, 1u);
  EXPECT_EQ(s.items, 1u) << "the new slot was freed, not leaked or linked";
  ReadHandle h = cache.find("k");
  EXPECT_EQ(h.ref().raw(), ref1.raw());
  EXPECT_EQ(h.value(), v2);
  EXPECT_EQ(h.flags(), 3u);
  EXPECT_TRUE(h.expiresAt().has_value());
  h.reset();
  EXPECT_EQ(cache.checkConsistency(), "");
  // The freed slot is an ordinary free slot again: the class hands it to
  // the next allocation, which fills and publishes it like any other.
  const std::string v3 = makeValue("k2", 3, 300);
  WriteHandle again = cache.allocate("k2", v3.size());
  ASSERT_TRUE(again);
  EXPECT_EQ(again.ref().raw(), newSlot.raw());
  std::memcpy(again.data(), v3.data(), v3.size());
  EXPECT_FALSE(cache.insertOrReplace(std::move(again)));
  EXPECT_EQ(cache.get("k2"), v3);
  EXPECT_EQ(cache.get("k"), v2);
  EXPECT_EQ(cache.checkConsistency(), "");
}

// Where a rewrite in place would be wrong, a replace takes a new slot: a
// reader pins the old item (it must keep reading the old value), the new
// size needs another class, or the old item is dead (its expiry is
// reported).
TEST_P(CacheTest, ReplaceTakesANewSlotWhenTheOldItemIsPinnedResizedOrDead) {
  test::ManualClock clock;
  CacheHooks hooks;
  hooks.clock = [&clock] { return clock.now(); };
  Cache cache(config(), hooks);
  const std::string v1 = makeValue("k", 1, 300);
  ASSERT_TRUE(cache.set("k", v1));
  ReadHandle pin = cache.find("k");
  ASSERT_TRUE(cache.set("k", makeValue("k", 2, 300)));
  EXPECT_EQ(pin.value(), v1) << "a pinned item is never rewritten";
  EXPECT_NE(cache.find("k").ref().raw(), pin.ref().raw());
  pin.reset();
  ASSERT_TRUE(cache.set("k", makeValue("k", 3, 3000)));
  EXPECT_EQ(cache.get("k"), makeValue("k", 3, 3000));
  ASSERT_TRUE(cache.set("k", makeValue("k", 4, 300), std::chrono::seconds(1)));
  clock.advance(std::chrono::seconds(2));
  ASSERT_TRUE(cache.set("k", makeValue("k", 5, 300)));
  EXPECT_EQ(cache.get("k"), makeValue("k", 5, 300));
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.replaces_in_place, 0u);
  EXPECT_EQ(s.expired, 1u) << "the dead item's replace reports it";
  EXPECT_EQ(s.items, 1u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

// With a remove callback the replaced value must reach it, so a replace
// never rewrites in place.
TEST_P(CacheTest, ReplaceWithARemoveCallbackReportsTheOldValue) {
  std::vector<std::string> replaced;
  CacheHooks hooks;
  hooks.onRemove = [&](const RemovedItem& r) {
    if (r.cause == RemoveCause::kReplaced) replaced.emplace_back(r.value);
  };
  Cache cache(config(), hooks);
  ASSERT_TRUE(cache.set("k", makeValue("k", 1, 300)));
  ASSERT_TRUE(cache.set("k", makeValue("k", 2, 300)));
  ASSERT_EQ(replaced.size(), 1u);
  EXPECT_EQ(replaced[0], makeValue("k", 1, 300));
  EXPECT_EQ(cache.stats().replaces_in_place, 0u);
}

TEST_P(CacheTest, PinnedItemIsNeverEvicted) {
  Cache cache(config(4 << 20));
  const std::string pinnedValue = makeValue("pinned", 1, 500);
  ASSERT_TRUE(cache.set("pinned", pinnedValue));
  ReadHandle h = cache.find("pinned");
  for (int i = 0; i < 40000; ++i) cache.set("fill" + std::to_string(i), makeValue("x", i, 500));
  EXPECT_GT(cache.stats().evictions, 0u);
  EXPECT_EQ(h.value(), pinnedValue);
  EXPECT_EQ(cache.get("pinned"), pinnedValue) << "still indexed: it was never evicted";
  h.reset();
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST_P(CacheTest, TooLargeKeyOrValueIsRefusedAndCounted) {
  Cache cache(config());
  EXPECT_FALSE(cache.set(std::string(256, 'k'), "v"));
  EXPECT_TRUE(cache.set(std::string(255, 'k'), "v"));
  const size_t maxValue = cache.maxValueSize(3);
  EXPECT_TRUE(cache.set("big", std::string(maxValue, 'v')));
  EXPECT_EQ(cache.get("big")->size(), maxValue);
  EXPECT_FALSE(cache.set("big", std::string(maxValue + 1, 'v')));
  EXPECT_FALSE(cache.allocate("k", size_t{1} << 30));
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.alloc_too_large, 3u);
  EXPECT_EQ(s.set_failures, 2u);
  EXPECT_EQ(cache.get("big")->size(), maxValue) << "a refused overwrite keeps the old value";
}

TEST_P(CacheTest, FullCacheEvictsAndKeepsNewestItems) {
  Cache cache(config(4 << 20));
  const int n = 30000;  // ~15 MB of 500-byte values into 4 MiB
  for (int i = 0; i < n; ++i) ASSERT_TRUE(cache.set("key" + std::to_string(i), makeValue("key" + std::to_string(i), 0, 500)));
  const CacheStats s = cache.stats();
  EXPECT_GT(s.evictions, 0u);
  EXPECT_LT(s.items, static_cast<uint64_t>(n));
  EXPECT_EQ(s.items + s.evictions, static_cast<uint64_t>(n));
  // W-TinyLFU's filter admits a newcomer only if it was seen more often than
  // main's victim: keys written once stay only while in its 1% window.
  const int recent = GetParam() == "wtinylfu" ? 10 : 100;
  for (int i = n - recent; i < n; ++i) {
    const std::string k = "key" + std::to_string(i);
    auto v = cache.get(k);
    ASSERT_TRUE(v.has_value()) << k;
    EXPECT_TRUE(checkValue(k, *v));
  }
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST_P(CacheTest, FrequentlyReadKeySurvivesChurn) {
  CacheConfig cfg = config(4 << 20);
  cfg.eviction.lru_refresh_ms = 0;
  Cache cache(cfg);
  ASSERT_TRUE(cache.set("hot", "hot value"));
  for (int i = 0; i < 30000; ++i) {
    ASSERT_TRUE(cache.get("hot").has_value()) << "evicted after " << i << " inserts";
    cache.set("cold" + std::to_string(i), std::string(500, 'c'));
  }
}

TEST_P(CacheTest, PoolsAreSeparateAndNamed) {
  CacheConfig cfg = config(8 << 20);
  cfg.pools = {{"main", 0.75}, {"side", 0.25}};
  Cache cache(cfg);
  EXPECT_EQ(cache.poolCount(), 2u);
  const PoolId side = cache.poolId("side");
  EXPECT_EQ(side, 1);
  EXPECT_THROW(cache.poolId("nope"), std::out_of_range);
  EXPECT_THROW(cache.allocate(7, "k", 1), std::out_of_range);
  for (int i = 0; i < 20000; ++i) {
    WriteHandle w = cache.allocate(side, "s" + std::to_string(i), 400);
    ASSERT_TRUE(w);
    cache.insertOrReplace(std::move(w));
  }
  const CacheStats s = cache.stats();
  ASSERT_EQ(s.pools.size(), 2u);
  EXPECT_EQ(s.pools[1].name, "side");
  EXPECT_EQ(s.pools[1].slabs, s.pools[1].slab_quota) << "side pool filled its share";
  EXPECT_EQ(s.pools[0].slabs, 0u) << "main pool untouched";
  EXPECT_GT(s.evictions, 0u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST_P(CacheTest, StarvingClassGetsSlabFromIdleClass) {
  Cache cache(config(4 << 20));
  // Fill every slab with small items, then ask for large ones only.
  for (int i = 0; i < 60000; ++i) cache.set("small" + std::to_string(i), std::string(40, 's'));
  const uint64_t before = cache.stats().rebalanced_slabs;
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(cache.set("large" + std::to_string(i), std::string(20000, 'L'))) << i;
  }
  const CacheStats s = cache.stats();
  EXPECT_GT(s.rebalanced_slabs, before);
  EXPECT_EQ(cache.get("large199"), std::string(20000, 'L'));
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST_P(CacheTest, StatsExportAsJsonAndPrometheus) {
  Cache cache(config());
  ASSERT_TRUE(cache.set("a", "1"));
  cache.get("a");
  cache.get("b");
  const CacheStats s = cache.stats();
  auto j = nlohmann::json::parse(s.toJson());
  EXPECT_EQ(j["gets"], 2);
  EXPECT_EQ(j["hits"], 1);
  EXPECT_DOUBLE_EQ(j["hit_ratio"].get<double>(), 0.5);
  EXPECT_EQ(j["items"], 1);
  EXPECT_EQ(j["tiers"][0]["name"], "dram");
  EXPECT_EQ(j["tiers"][0]["mapped_bytes"], 8 << 20);
  EXPECT_EQ(j["item_header_bytes"], 48);
  const std::string prom = s.toPrometheus();
  EXPECT_NE(prom.find("tiercache_hits_total 1\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("tiercache_tier_items{tier=\"dram\"} 1\n"), std::string::npos) << prom;
}

TEST_P(CacheTest, ConsistencyCheckerReportsCorruption) {
  Cache cache(config());
  ASSERT_TRUE(cache.set("a", "1"));
  ASSERT_EQ(cache.checkConsistency(), "");
  // Forge a leaked pin on the item: the checker must notice.
  ReadHandle h = cache.find("a");
  Item* item = CacheTestPeer::table(cache).item(h.ref());
  h.reset();
  item->state.fetch_add(1);
  EXPECT_NE(cache.checkConsistency().find("pinned"), std::string::npos);
  item->state.fetch_sub(1);
  EXPECT_EQ(cache.checkConsistency(), "");
}

// A find that hits without a lock pins by a hazard entry of its thread
// (allocator/hazard_pins.h): it writes no count into the item.
TEST_P(CacheTest, LockFreeHitWritesNoCountIntoTheItem) {
  Cache cache(config());
  ASSERT_TRUE(cache.set("k", makeValue("k", 1, 300)));
  ReadHandle h = cache.find("k");
  ASSERT_TRUE(h);
  const Item* item = CacheTestPeer::table(cache).item(h.ref());
  EXPECT_EQ(item->state.load() & Item::kRefMask, 0u) << "a hazard pin, not a count";
  EXPECT_TRUE(checkValue("k", h.value()));
  h.reset();
  EXPECT_EQ(cache.checkConsistency(), "");
}

// The item a hazard pin holds is neither rewritten in place nor reused: a
// replace publishes a new item, and the removed item's slot waits for the
// handle while the cache fills its class many times over.
TEST_P(CacheTest, HazardPinnedItemOutlivesReplaceRemoveAndReuse) {
  Cache cache(config(4 << 20));
  const std::string v1 = makeValue("k", 1, 500);
  ASSERT_TRUE(cache.set("k", v1));
  ReadHandle h = cache.find("k");
  ASSERT_TRUE(h);
  const CacheStats before = cache.stats();
  const std::string v2 = makeValue("k", 2, 500);
  ASSERT_TRUE(cache.set("k", v2));
  EXPECT_EQ(cache.stats().replaces_in_place, before.replaces_in_place) << "rewritten under a reader";
  EXPECT_EQ(cache.get("k"), v2);
  EXPECT_EQ(h.value(), v1);
  ASSERT_TRUE(cache.remove("k"));
  for (int i = 0; i < 40000; ++i) cache.set("fill" + std::to_string(i), makeValue("x", i, 500));
  EXPECT_GT(cache.stats().evictions, 0u);
  EXPECT_EQ(h.key(), "k");
  EXPECT_EQ(h.value(), v1) << "the slot was reused under the handle";
  h.reset();
  EXPECT_EQ(cache.checkConsistency(), "");
  ASSERT_TRUE(cache.set("k", v2));
  EXPECT_EQ(cache.get("k"), v2);
}

// A handle may end on another thread: its entry is free again for the
// thread that took it (else the later finds would fall back to counts).
TEST_P(CacheTest, HazardPinReleasedOnAnotherThreadFreesItsEntry) {
  Cache cache(config());
  ASSERT_TRUE(cache.set("k", makeValue("k", 1, 100)));
  for (size_t round = 0; round < 3 * HazardPins::kPerThread; ++round) {
    ReadHandle h = cache.find("k");
    ASSERT_TRUE(h);
    const Item* item = CacheTestPeer::table(cache).item(h.ref());
    ASSERT_EQ(item->state.load() & Item::kRefMask, 0u) << "round " << round << ": no entry was free";
    std::thread([moved = std::move(h)]() mutable { moved.reset(); }).join();
  }
  EXPECT_EQ(cache.checkConsistency(), "");
}

// Readers on two threads check every value they pin while a writer
// rewrites, removes and refills the same few keys (one class, so slots are
// reused at once): a hazard pin must keep each value whole until released.
TEST_P(CacheTest, HazardPinsHoldUnderRewritesRemovesAndReuse) {
  Cache cache(config(4 << 20));
  constexpr int kKeys = 64;
  auto key = [](int i) { return "h" + std::to_string(i); };
  for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(cache.set(key(i), makeValue(key(i), 0, 400)));
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0}, hits{0};
  auto reader = [&](int seed) {
    std::vector<ReadHandle> held;
    for (uint32_t n = seed; !stop.load(std::memory_order_relaxed); ++n) {
      const std::string k = key(static_cast<int>(n * 7919u % kKeys));
      ReadHandle h = cache.find(k);
      if (!h) continue;
      hits.fetch_add(1, std::memory_order_relaxed);
      if (h.key() != k || !checkValue(k, h.value())) bad.fetch_add(1);
      held.push_back(std::move(h));  // hold a few across the writer's work
      if (held.size() == 3) {
        for (ReadHandle& x : held) {
          if (!checkValue(x.key(), x.value())) bad.fetch_add(1);
        }
        held.clear();
      }
    }
  };
  std::thread r1(reader, 1), r2(reader, 2);
  for (uint32_t v = 1; v < 20000; ++v) {
    const int i = static_cast<int>(v % kKeys);
    if (v % 5 == 0) {
      cache.remove(key(i));
    } else {
      cache.set(key(i), makeValue(key(i), v, 400));  // same size: a rewrite in place when unpinned
    }
  }
  stop = true;
  r1.join();
  r2.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(hits.load(), 0u);
  EXPECT_GT(cache.stats().replaces_in_place, 0u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

// A slab release (here a shrink of the tier) skips a slab whose item a
// hazard pin holds, as it does for a counted pin: the values stay whole.
TEST_P(CacheTest, HazardPinnedSlabsAreNotReleased) {
  Cache cache(config(2 << 20));  // 8 slabs of 256 KiB
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) {
    keys.push_back("rel" + std::to_string(i));
    ASSERT_TRUE(cache.set(keys.back(), makeValue(keys.back(), 3, 600)));
  }
  std::vector<ReadHandle> pins;  // in three of the class's six slabs
  for (const size_t i : {0, 1000, 1999}) {
    ReadHandle h = cache.find(keys[i]);
    ASSERT_TRUE(h);
    ASSERT_EQ(CacheTestPeer::table(cache).item(h.ref())->state.load() & Item::kRefMask, 0u) << "a hazard pin";
    pins.push_back(std::move(h));
  }
  const Cache::TierResize r = cache.resizeTier(0, 256 << 10);
  EXPECT_FALSE(r.reached) << "the pinned items span more than one slab";
  EXPECT_GT(r.slabsReleased, 0u);
  for (const ReadHandle& h : pins) EXPECT_TRUE(checkValue(h.key(), h.value())) << h.key();
  pins.clear();
  EXPECT_TRUE(cache.resizeTier(0, 256 << 10).reached);
  EXPECT_EQ(cache.checkConsistency(), "");
}

INSTANTIATE_TEST_SUITE_P(Policies, CacheTest,
                         ::testing::Values("lru", "lru-midpoint", "clock", "s3fifo", "wtinylfu"));

// Keys are compared in full: with every key in one bucket, no lookup may
// return another key's value.
TEST(CacheIndex, AllKeysInOneBucketNeverReturnAnotherKeysValue) {
  CacheHooks hooks;
  hooks.hash = [](std::string_view) -> uint64_t { return 42; };
  Cache cache(smallDramConfig(8 << 20), hooks);
  const int n = 1500;
  for (int i = 0; i < n; ++i) ASSERT_TRUE(cache.set("key" + std::to_string(i), "value" + std::to_string(i)));
  for (int i = 0; i < n; i += 2) ASSERT_TRUE(cache.remove("key" + std::to_string(i)));
  for (int i = 0; i < n; ++i) {
    auto v = cache.get("key" + std::to_string(i));
    if (i % 2 == 0) {
      EXPECT_FALSE(v.has_value()) << i;
    } else {
      ASSERT_TRUE(v.has_value()) << i;
      EXPECT_EQ(*v, "value" + std::to_string(i));
    }
  }
  EXPECT_FALSE(cache.get("key").has_value());
  EXPECT_FALSE(cache.get("key15000").has_value());
  EXPECT_EQ(cache.checkConsistency(), "");
}

// 48-byte header (expiry, flags, seq and 40-bit links included) + 5-byte
// bucket.
TEST(CacheMetadata, HeaderAndIndexCostAtMost53BytesPerItem) {
  CacheConfig cfg = smallDramConfig(16 << 20);
  cfg.index.bucket_power = 17;  // ~ one bucket per item at this fill
  Cache cache(cfg);
  for (int i = 0; i < 200000; ++i) cache.set("k" + std::to_string(i), std::string(30, 'v'));
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.item_header_bytes, sizeof(Item));
  EXPECT_GT(s.items, 100000u);
  EXPECT_LE(s.index_bytes_per_item, 5.0);
  EXPECT_LE(s.item_header_bytes + s.index_bytes_per_item, 53.0);
}

}  // namespace
}  // namespace tiercache

namespace tiercache {
namespace {

// The policies' own memory (W-TinyLFU's sketch, S3-FIFO's ghost) is
// metadata outside the tiers and must be counted as such.
TEST(CacheMetadata, PolicyMemoryCountsOutsideTheTiers) {
  auto metadataAfterFill = [](const std::string& policy) {
    Cache cache(test::smallDramConfig(4 << 20, policy, 64 << 10));
    for (int i = 0; i < 20000; ++i) cache.set("k" + std::to_string(i), std::string(100, 'v'));
    return cache.stats().metadata_bytes;
  };
  const uint64_t lru = metadataAfterFill("lru");
  EXPECT_GE(metadataAfterFill("wtinylfu"), lru + 4096) << "at least one 1024-item sketch";
  EXPECT_GT(metadataAfterFill("s3fifo"), lru) << "the ghost";
}

}  // namespace
}  // namespace tiercache
