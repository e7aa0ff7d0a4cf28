// Recovery accepts only what the cache committed, in the slab's current
// layout; a replace under durable_sets never leaves a key without a value;
// durable items stay in persistent tiers. (Issue 9, items 1, 5, 6, 12.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "allocator/cache.h"
#include "allocator/item.h"
#include "persistent_test_util.h"
#include "tiers/persistent_pmem_tier.h"
#include "tiers/pmemobj_pool.h"

namespace tiercache {
namespace {

using test::makeValue;
using test::persistentConfig;

class PersistentRecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    pool_ = "/dev/shm/tiercache-test-" + std::to_string(getpid()) + "-" + name + ".pool";
    unlink(pool_.c_str());
  }
  void TearDown() override { unlink(pool_.c_str()); }
  std::string pool_;
};

// An item image as a client can write it inside a value: the header of
// allocator/item.h, key, value, and the commit checksum as an unkeyed XXH3
// of sizes, expiry/flags/seq, key and value (the algorithm is public; the
// pool's commit key is not).
std::string itemImage(const std::string& key, const std::string& value, uint64_t seq) {
  constexpr size_t kHeader = sizeof(Item);
  std::string img(kHeader + key.size() + value.size(), '\0');
  const uint32_t sizes = static_cast<uint32_t>(key.size()) | static_cast<uint32_t>(value.size()) << 8;
  std::memcpy(&img[offsetof(Item, sizes)], &sizes, 4);
  const uint32_t lo = static_cast<uint32_t>(seq), hi = static_cast<uint32_t>(seq >> 32);
  std::memcpy(&img[offsetof(Item, seqLo)], &lo, 4);
  std::memcpy(&img[offsetof(Item, seqHi)], &hi, 4);
  std::memcpy(&img[kHeader], key.data(), key.size());
  std::memcpy(&img[kHeader + key.size()], value.data(), value.size());
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, &img[offsetof(Item, sizes)], 4);
  XXH3_64bits_update(&st, &img[offsetof(Item, expiry)], 16);
  XXH3_64bits_update(&st, &img[kHeader], key.size() + value.size());
  uint32_t sum = static_cast<uint32_t>(XXH3_64bits_digest(&st));
  if (sum == 0) sum = 1;
  std::memcpy(&img[offsetof(Item, checksum)], &sum, 4);
  return img;
}

TEST_F(PersistentRecoveryTest, AValueHoldingAnItemImageNeverComesBackAsAnItem) {
  // Class 1024 is 8 slots of class 128: every slot boundary of the small
  // class inside a large slot is at a fixed offset from that slot's start.
  CacheConfig cfg = persistentConfig(pool_, true);
  cfg.allocation.sizes = {128, 1024, 65536};
  const std::string keyPrefix = "a";
  const size_t keyLen = 7;  // "a" + 6 digits
  const size_t valueStart = sizeof(Item) + keyLen;
  const size_t valueLen = 1024 - valueStart;
  auto bigValue = [&](uint32_t i) {
    std::string v = makeValue(keyPrefix + std::to_string(i), i, valueLen);
    // Images at every small-class boundary but the slot's own start: a
    // key never set ("ghost") and a key that is set ("forged") with the
    // highest sequence number there is.
    for (size_t k = 1; k < 8; ++k) {
      const std::string img = k % 2 ? itemImage("ghost", "evil", 1) : itemImage("forged", "evil", ~0ull);
      std::memcpy(&v[k * 128 - valueStart], img.data(), img.size());
    }
    return v;
  };
  uint64_t rebalanced = 0;
  {
    Cache cache(cfg);
    // More large items than the 32 MiB pool holds: every slab ends up in
    // the large class, each slot's value full of images.
    for (uint32_t i = 0; i < 40000; ++i) {
      char key[16];
      std::snprintf(key, sizeof key, "a%06u", i);
      ASSERT_TRUE(cache.set(key, bigValue(i))) << i;
    }
    // The small class has no slab: this set takes one from the large class.
    ASSERT_TRUE(cache.set("forged", "real"));
    rebalanced = cache.stats().rebalanced_slabs;
    ASSERT_GE(rebalanced, 1u);
    ASSERT_EQ(cache.get("ghost"), std::nullopt);
  }
  Cache cache(cfg);
  const CacheStats s = cache.stats();
  EXPECT_NE(s.tiers[1].open_report.find("clean"), std::string::npos) << s.tiers[1].open_report;
  EXPECT_EQ(cache.get("ghost"), std::nullopt) << "a value's bytes were recovered as an item";
  EXPECT_EQ(cache.get("forged"), "real") << "the committed item lost to a forged copy";
  // After a clean shutdown nothing stale is even looked at: every slot of
  // the re-cut slab's new layout was uncommitted before the record changed.
  EXPECT_EQ(s.discarded_items, 0u);
  EXPECT_GT(s.recovered_items, 30000u);
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST_F(PersistentRecoveryTest, AnImageWrittenIntoAFreeSlotOfTheCurrentLayoutIsNotAccepted) {
  // The commit mark is keyed with the pool's secret: bytes with the right
  // shape and a checksum anyone can compute do not count, even at a slot
  // boundary of the slab's current layout (here written straight into the
  // file, standing in for any way bytes could get there).
  const CacheConfig cfg = persistentConfig(pool_, true);
  {
    Cache cache(cfg);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(cache.set("k" + std::to_string(i), "value"));
  }
  {
    PmemObjPool pool = PmemObjPool::open(pool_, pmem_layout::kPoolLayoutName);
    const auto* h = static_cast<const pmem_layout::PoolHeader*>(pool.root(sizeof(pmem_layout::PoolHeader)));
    const auto* records = reinterpret_cast<const pmem_layout::SlabRecordSlot*>(pool.base() + h->recordsObject);
    const uint32_t allocSize = records[0].allocSize;  // the class the ten items went to
    ASSERT_GT(allocSize, 0u);
    std::byte* slot = pool.base() + h->slabAreaOffset + 100 * uint64_t{allocSize};
    const std::string img = itemImage("ghost", "evil", ~0ull);
    ASSERT_LE(img.size(), allocSize);
    std::memcpy(slot, img.data(), img.size());
    pool.persist(slot, img.size());
  }
  Cache cache(cfg);
  EXPECT_EQ(cache.get("ghost"), std::nullopt) << "an image with an unkeyed checksum was accepted";
  EXPECT_EQ(cache.stats().recovered_items, 10u);
  EXPECT_EQ(cache.stats().discarded_items, 1u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(cache.get("k" + std::to_string(i)), "value");
}

// Runs the crash child with the fault seam that kills it inside a
// replacing set, between "new copy committed" and "old copy invalidated".
void runReplaceCrash(const std::string& pool, const std::string& key, int order) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    setenv("TIERCACHE_CRASH_AT", "replace-committed", 1);
    const std::string orderText = std::to_string(order);
    execl(TIERCACHE_CRASH_CHILD, TIERCACHE_CRASH_CHILD, pool.c_str(), "durable", key.c_str(), orderText.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  uint32_t ack = 0;
  const ssize_t got = read(fds[0], &ack, sizeof ack);
  close(fds[0]);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof ack)) << "the first set was not acknowledged";
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the child was not killed at the seam (status " << status << ")";
}

TEST_F(PersistentRecoveryTest, KillBetweenCommitAndInvalidateOfAReplaceKeepsTheKey) {
  // Both orders of the two copies in the pool's scan: the old value in an
  // earlier slab than the new one, and the other way round. The key must
  // hold a value afterwards, and the newer one (higher sequence number).
  for (int order = 0; order < 2; ++order) {
    const std::string key = "replaced-" + std::to_string(order);
    runReplaceCrash(pool_, key, order);
    Cache cache(persistentConfig(pool_, true));
    const CacheStats s = cache.stats();
    EXPECT_NE(s.tiers[1].open_report.find("crash"), std::string::npos) << s.tiers[1].open_report;
    const auto v = cache.get(key);
    ASSERT_TRUE(v.has_value()) << "order " << order << ": the acknowledged value was lost";
    EXPECT_EQ(*v, makeValue(key, 2, order == 0 ? 3000 : 100)) << "order " << order << ": the older copy won";
    EXPECT_EQ(s.discarded_items, 1u) << "the older committed copy is discarded";
    // New sequence numbers stay above the recovered ones: a later replace
    // wins the next recovery too.
    ASSERT_TRUE(cache.set(key, "later"));
    EXPECT_EQ(cache.checkConsistency(), "");
  }
  Cache cache(persistentConfig(pool_, true));
  EXPECT_EQ(cache.get("replaced-0"), "later");
  EXPECT_EQ(cache.get("replaced-1"), "later");
}

TEST_F(PersistentRecoveryTest, ADurableSetIsNeverStoredInAVolatileTier) {
  CacheConfig cfg = persistentConfig(pool_, true);
  cfg.demotion.enabled = false;  // sets fall through to lower tiers with room
  TierConfig below;
  below.name = "dram-below";
  below.kind = TierKind::kDram;
  below.size = 8 << 20;
  cfg.tiers.push_back(below);
  Cache cache(cfg);
  // Twice what the persistent tier holds, so it runs out of free slots.
  const int n = 60000;
  for (int i = 0; i < n; ++i) {
    const std::string k = "d" + std::to_string(i);
    ASSERT_TRUE(cache.set(k, makeValue(k, 1, 900))) << i;
  }
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.tiers[2].items, 0u) << "durable sets stored in the volatile tier below";
  EXPECT_EQ(s.tiers[0].items, 0u);
  EXPECT_GT(s.tiers[1].items, 20000u);
  ReadHandle h = cache.find("d" + std::to_string(n - 1));
  ASSERT_TRUE(h);
  EXPECT_EQ(h.tier(), 1u);
}

// The promoter thread stops inside the index lookup of one key (through
// the injected hash function) until the test lets it go.
std::atomic<bool> gHoldPromoter{false};
std::atomic<bool> gPromoterHeld{false};
std::atomic<bool> gPromoterPassed{false};
std::thread::id gMainThread;

uint64_t holdingHash(std::string_view key) {
  if (key == "hot" && std::this_thread::get_id() != gMainThread && gHoldPromoter.load()) {
    gPromoterHeld.store(true);
    while (gHoldPromoter.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
    gPromoterPassed.store(true);
  }
  return XXH3_64bits(key.data(), key.size());
}

TEST_F(PersistentRecoveryTest, ThePromoterChecksDurabilityWhenItMovesNotWhenItQueues) {
  // DRAM, a volatile tier, then the persistent tier.
  CacheConfig cfg = persistentConfig(pool_, true);
  TierConfig mid;
  mid.name = "dram-mid";
  mid.kind = TierKind::kDram;
  mid.size = 4 << 20;
  cfg.tiers.insert(cfg.tiers.begin() + 1, mid);
  cfg.promotion.enabled = true;
  cfg.promotion.background = true;
  cfg.promotion.hits = 2;
  gMainThread = std::this_thread::get_id();
  CacheHooks hooks;
  hooks.hash = &holdingHash;
  Cache cache(cfg, hooks);
  // "hot" set non-durably (tier 0), then pushed down into tier 1 by newer items.
  {
    WriteHandle w = cache.allocate("hot", 500);
    ASSERT_TRUE(w);
    std::memset(w.data(), 'v', 500);
    cache.insertOrReplace(std::move(w));
  }
  // LRU: "hot" is the coldest item of its class, so the first demotion is it.
  for (int i = 0; i < 20000 && cache.stats().tiers[1].items == 0; ++i) {
    for (int j = 0; j < 100; ++j) {
      const std::string k = "fill" + std::to_string(i) + "-" + std::to_string(j);
      WriteHandle w = cache.allocate(k, 500);
      ASSERT_TRUE(w);
      cache.insertOrReplace(std::move(w));
    }
  }
  {
    ReadHandle h = cache.find("hot");  // first lower-tier hit
    ASSERT_TRUE(h);
    ASSERT_EQ(h.tier(), 1u);
  }
  gHoldPromoter.store(true);
  { ReadHandle h = cache.find("hot"); }  // second lower-tier hit: queued for promotion
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!gPromoterHeld.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(gPromoterHeld.load()) << "the promoter never looked the key up";
  // Re-set durably while the promoter holds the queued key: now in the
  // persistent tier, where it must stay.
  ASSERT_TRUE(cache.set("hot", "durable"));
  gHoldPromoter.store(false);
  while (!gPromoterPassed.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the promoter finishes its batch
  ReadHandle h = cache.find("hot");
  ASSERT_TRUE(h);
  EXPECT_EQ(h.value(), "durable");
  EXPECT_EQ(h.tier(), 2u) << "a durable item was promoted out of the persistent tier";
}

}  // namespace
}  // namespace tiercache
