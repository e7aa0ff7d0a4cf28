// A cache whose second tier is a persistent pool file: warm restart after a
// clean shutdown and after kill -9.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "allocator/cache.h"
#include "persistent_test_util.h"
#include "tiers/memory_tier.h"

namespace tiercache {
namespace {

using test::checkValue;
using test::makeValue;
using test::persistentConfig;

class PersistentCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) {
      if (c == '/') c = '_';  // parameterised names hold a '/'
    }
    pool_ = "/dev/shm/tiercache-test-" + std::to_string(getpid()) + "-" + name + ".pool";
    unlink(pool_.c_str());
  }
  void TearDown() override { unlink(pool_.c_str()); }
  std::string pool_;
};

TEST_F(PersistentCacheTest, CleanShutdownKeepsEveryItemByteForByte) {
  const int n = 8000;  // ~8 MB: more than DRAM (4 MiB), less than the pool (32 MiB)
  {
    Cache cache(persistentConfig(pool_, false));
    const CacheStats s = cache.stats();
    ASSERT_TRUE(s.tiers[1].persistent);
    EXPECT_EQ(s.recovered_items, 0u);
    for (int i = 0; i < n; ++i) {
      const std::string k = "k" + std::to_string(i);
      ASSERT_TRUE(cache.set(k, makeValue(k, i, 100 + i % 1500)));
    }
    ASSERT_GT(cache.stats().tiers[0].items, 0u) << "some items still in DRAM at shutdown";
  }
  Cache cache(persistentConfig(pool_, false));
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.recovered_items, static_cast<uint64_t>(n));
  EXPECT_EQ(s.discarded_items, 0u);
  EXPECT_NE(s.tiers[1].open_report.find("clean"), std::string::npos) << s.tiers[1].open_report;
  for (int i = 0; i < n; ++i) {
    const std::string k = "k" + std::to_string(i);
    auto v = cache.get(k);
    ASSERT_TRUE(v.has_value()) << k;
    ASSERT_EQ(*v, makeValue(k, i, 100 + i % 1500)) << k;
  }
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST_F(PersistentCacheTest, RemovedAndReplacedKeysStayThatWayAfterRestart) {
  {
    CacheConfig cfg = persistentConfig(pool_, true);
    Cache cache(cfg);
    // Many removed keys, so that later sets cannot happen to reuse all their slots.
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(cache.set("gone" + std::to_string(i), "old"));
    ASSERT_TRUE(cache.set("changed", "v1"));
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(cache.remove("gone" + std::to_string(i)));
    ASSERT_TRUE(cache.set("changed", "v2"));
    // A crash in the middle of a rewrite would lose both values: a durable
    // replace always commits a new copy first.
    EXPECT_EQ(cache.stats().replaces_in_place, 0u);
  }
  Cache cache(persistentConfig(pool_, true));
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(cache.get("gone" + std::to_string(i)).has_value()) << i;
  EXPECT_EQ(cache.get("changed"), "v2");
  EXPECT_EQ(cache.stats().recovered_items, 1u);
}

TEST_F(PersistentCacheTest, ADifferentLayoutIsRefusedWithAClearMessage) {
  { Cache cache(persistentConfig(pool_, false)); }
  CacheConfig other = persistentConfig(pool_, false);
  other.allocation.growth_factor = 2.0;  // other classes: other slot layout
  try {
    Cache cache(other);
    FAIL() << "opened a pool of another layout";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("pmem"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fingerprint"), std::string::npos) << e.what();
  }
  other.tiers[1].rebuild_on_mismatch = true;
  Cache cache(other);
  EXPECT_NE(cache.stats().tiers[1].open_report.find("rebuilt"), std::string::npos);
  EXPECT_EQ(cache.stats().recovered_items, 0u);
}

// Runs the crash child until it has acknowledged `killAtAck` sets (a point
// in its progress, so the moment is random whatever the build's speed),
// kills it with SIGKILL, and returns what it acknowledged.
std::vector<uint32_t> runAndKill(const std::string& pool, bool durable, const std::string& prefix, uint64_t seed,
                                 size_t killAtAck) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    const std::string seedText = std::to_string(seed);
    execl(TIERCACHE_CRASH_CHILD, TIERCACHE_CRASH_CHILD, pool.c_str(), durable ? "durable" : "volatile",
          prefix.c_str(), seedText.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  std::vector<uint32_t> acked;
  std::string buf;
  auto drain = [&] {
    char chunk[4096];
    ssize_t r;
    while ((r = read(fds[0], chunk, sizeof chunk)) > 0) buf.append(chunk, static_cast<size_t>(r));
  };
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (buf.size() < killAtAck * sizeof(uint32_t) && std::chrono::steady_clock::now() < giveUp) {
    drain();
    std::this_thread::yield();
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child exited early, status " << status;
  drain();
  close(fds[0]);
  for (size_t i = 0; i + sizeof(uint32_t) <= buf.size(); i += sizeof(uint32_t)) {
    uint32_t seq;
    std::memcpy(&seq, buf.data() + i, sizeof seq);
    acked.push_back(seq);
  }
  return acked;
}

class CrashTest : public PersistentCacheTest, public ::testing::WithParamInterface<bool> {};

TEST_P(CrashTest, KillNineAtRandomMomentsNeverServesATornValue) {
  const bool durable = GetParam();
  std::mt19937_64 rng(durable ? 11 : 22);
  uint64_t recoveredTotal = 0;
  int killedMidWrite = 0;
  // 20 kills in the plain build; 8 under a sanitizer, where each round of
  // child and recovery takes 3-6 s (TSan) and the races the sanitizer looks
  // for are in every round alike.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr int kRounds = 8;
#else
  constexpr int kRounds = 20;
#endif
  for (int round = 0; round < kRounds; ++round) {
    const std::string prefix = "r" + std::to_string(round) + ":";
    // Without durable_sets only demoted items reach the pool: let the child
    // write past the DRAM tier (4 MiB) before the kill.
    const size_t killAt = durable ? 1 + rng() % 9000 : 9000 + rng() % 900;
    const std::vector<uint32_t> acked = runAndKill(pool_, durable, prefix, rng(), killAt);
    std::vector<uint32_t> sets;
    std::set<uint32_t> removed;
    for (uint32_t a : acked) {
      if (a & 0x80000000u) {
        removed.insert(a & 0x7FFFFFFFu);
      } else {
        sets.push_back(a);
      }
    }
    killedMidWrite += !sets.empty() && sets.size() < 10000;
    Cache cache(persistentConfig(pool_, durable));
    const CacheStats s = cache.stats();
    recoveredTotal += s.recovered_items;
    if (round > 0) EXPECT_NE(s.tiers[1].open_report.find("crash"), std::string::npos) << s.tiers[1].open_report;
    // Whatever is served is intact.
    for (uint32_t seq = 0; seq < (sets.empty() ? 0 : sets.back() + 50); ++seq) {
      const std::string k = prefix + std::to_string(seq);
      if (auto v = cache.get(k)) ASSERT_TRUE(checkValue(k, *v)) << "round " << round << " " << k;
    }
    for (int h = 0; h < 500; ++h) {
      const std::string k = "hot:" + std::to_string(h);
      if (auto v = cache.get(k)) ASSERT_TRUE(checkValue(k, *v)) << "round " << round << " " << k;
    }
    // A removal that was acknowledged is never undone by a restart.
    for (uint32_t seq : removed) {
      const std::string k = prefix + std::to_string(seq);
      ASSERT_FALSE(cache.get(k).has_value()) << "round " << round << ": removed " << k << " came back";
    }
    if (durable) {
      // Every acknowledged durable set survived the kill, unless it was
      // removed later: keys with seq % 5 == 2 are removal targets, and the
      // kill may land between a removal and its acknowledgement.
      for (uint32_t seq : sets) {
        if (removed.count(seq) || seq % 5 == 2) continue;
        const std::string k = prefix + std::to_string(seq);
        auto v = cache.get(k);
        ASSERT_TRUE(v.has_value()) << "round " << round << ": acknowledged " << k << " lost";
      }
    }
    ASSERT_EQ(cache.checkConsistency(), "") << "round " << round;
  }
  EXPECT_GT(recoveredTotal, 0u);
  // The kills must land while the child writes, not after it is done.
  EXPECT_GE(killedMidWrite, kRounds / 2);
  std::printf("crash test: %d of %d kills landed mid-write, %llu items recovered in all\n", killedMidWrite, kRounds,
              static_cast<unsigned long long>(recoveredTotal));
}

INSTANTIATE_TEST_SUITE_P(Modes, CrashTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "DurableSets" : "Default"; });

}  // namespace
}  // namespace tiercache
