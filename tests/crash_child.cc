// Crash-test child: opens a cache on a persistent pool and writes
// checksummed items until it is killed. After each set() returns it writes
// the item's sequence number to stdout, so the parent knows which sets were
// acknowledged before the SIGKILL.
//   tiercache_crash_child POOL_FILE durable|volatile PREFIX SEED
//   tiercache_crash_child FLASH_FILE flash|flash-lru PREFIX SEED
// The flash mode runs a set/remove storm from four threads over 30,000 keys
// into a DRAM cache with a flash store behind it (test::flashCacheConfig),
// each set's value encoding key and version (test::flashValue; versions are
// one counter across threads, a thread owns the keys k % 4 == its number).
// After each set it writes the key's number and the version, two uint32s;
// after each remove the same with the key's high bit set. flash-lru: the
// store evicts regions by LRU and a third of the operations are gets.
//
// Fault seam (deterministic crash): with TIERCACHE_CRASH_AT=replace-committed
// the child sets key PREFIX to its "old" value, acknowledges it (writes 1),
// then replaces it with its "new" value and raises SIGKILL inside that
// replace, after the new copy is committed and before the old one is
// invalidated (CacheHooks::faultSeam). SEED 0: old value small, new large
// (other classes, other slabs); SEED 1: the other way round.
//
// With TIERCACHE_CRASH_AT=demote-race (flash mode) the child sets key PREFIX
// to version 1 (acknowledged: 0, 1), then fills the cache until that item
// is demoted to flash. The demotion, holding the key's lock, starts a set
// of version 2 on another thread and waits for it (at most 300 ms); the set
// writes (0, 2) when it returns. A demotion of the key that then logs its
// flash copy raises SIGKILL. Exit 0 when none does, 6 when the key was never
// demoted.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "allocator/cache.h"
#include "flash_test_util.h"
#include "persistent_test_util.h"

namespace {

constexpr uint32_t kFlashStormThreads = 4;
std::atomic<bool> armed{false};

void killAtSeam(tiercache::FaultPoint point, std::string_view) {
  if (armed.load() && point == tiercache::FaultPoint::kReplaceNewCommitted) raise(SIGKILL);
}

std::atomic<tiercache::Cache*> raceCache{nullptr};
std::string raceKey;
std::atomic<int> raceStage{0};  // 1: the racing set started, 2: it returned

void raceAtDemotion(tiercache::FaultPoint point, std::string_view key) {
  if (!armed.load() || key != raceKey) return;
  if (point == tiercache::FaultPoint::kDemoteKeyLocked && raceStage.exchange(1) == 0) {
    std::thread([] {
      raceCache.load()->set(raceKey, tiercache::test::flashValue(raceKey, 2, 300));
      const uint32_t ack[2] = {0, 2};
      if (write(1, ack, sizeof ack) != sizeof ack) _exit(3);
      raceStage.store(2);
    }).detach();
    // A set that waits for this key's lock cannot return before the demotion does.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (raceStage.load() != 2 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  } else if (point == tiercache::FaultPoint::kDemoteFlashWritten) {
    raise(SIGKILL);
  }
}

int demoteRaceAndCrash(const char* path, const std::string& key) {
  tiercache::CacheHooks hooks;
  hooks.faultSeam = &raceAtDemotion;
  tiercache::CacheConfig config = tiercache::test::flashCacheConfig(path, 64);
  config.eviction.policy = tiercache::EvictionPolicyKind::kLru;  // the oldest item is demoted first
  tiercache::Cache cache(config, hooks);
  raceCache.store(&cache);
  raceKey = key;
  if (!cache.set(key, tiercache::test::flashValue(key, 1, 300))) return 4;
  const uint32_t ack[2] = {0, 1};
  if (write(1, ack, sizeof ack) != sizeof ack) return 3;
  armed.store(true);
  // One size: one class, so the key's item is demoted once the class is full.
  uint32_t after = 0;
  for (uint32_t i = 0; i < 200000 && after < 2000; ++i) {
    const std::string fill = key + ":fill" + std::to_string(i);
    cache.set(fill, tiercache::test::flashValue(fill, 1, 300));
    if (raceStage.load() == 2) ++after;
  }
  return raceStage.load() == 2 ? 0 : 6;
}

int replaceAndCrash(const char* pool, const std::string& key, bool smallFirst) {
  tiercache::CacheHooks hooks;
  hooks.faultSeam = &killAtSeam;
  tiercache::Cache cache(tiercache::test::persistentConfig(pool, true), hooks);
  const size_t small = 100, large = 3000;
  if (!cache.set(key, tiercache::test::makeValue(key, 1, smallFirst ? small : large))) return 4;
  const uint32_t ack = 1;
  if (write(1, &ack, sizeof ack) != sizeof ack) return 3;
  armed.store(true);
  cache.set(key, tiercache::test::makeValue(key, 2, smallFirst ? large : small));
  return 5;  // the seam did not fire
}

// flash-lru: the store reclaims regions by last read, not age, and a third
// of the operations are gets, so regions are read, promoted from and
// reclaimed out of order, their hit items carried forward.
int flashStorm(const char* path, const std::string& mode, const std::string& prefix, uint64_t seed) {
  tiercache::Cache cache(tiercache::test::flashStormConfig(path, mode));
  const bool reads = tiercache::test::flashStormReads(mode);
  std::atomic<uint32_t> nextVersion{1};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kFlashStormThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed * 31 + t);
      for (;;) {
        // Thread t owns the keys k with k % threads == t, so its
        // acknowledgements of a key come in the order its operations took
        // effect.
        const uint32_t k = static_cast<uint32_t>(rng() % (30000 / kFlashStormThreads)) * kFlashStormThreads + t;
        const std::string key = prefix + std::to_string(k);
        if (reads && rng() % 3 == 0) {
          // Unacknowledged: a read changes no value, only where it lives.
          if (auto v = cache.get(key); v && tiercache::test::flashValueVersion(key, *v) <= 0) _exit(6);
          continue;
        }
        const uint32_t version = nextVersion.fetch_add(1);
        uint32_t ack[2] = {k, version};
        if (rng() % 5 == 0) {
          cache.remove(key);
          ack[0] |= 0x80000000u;
        } else if (!cache.set(key, tiercache::test::flashValue(key, version, 100 + rng() % 1400))) {
          continue;
        }
        if (write(1, ack, sizeof ack) != sizeof ack) _exit(3);
      }
    });
  }
  for (auto& th : threads) th.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s POOL_FILE durable|volatile PREFIX SEED\n", argv[0]);
    return 2;
  }
  if (const char* at = std::getenv("TIERCACHE_CRASH_AT"); at && std::strcmp(at, "replace-committed") == 0) {
    return replaceAndCrash(argv[1], argv[3], std::strtoul(argv[4], nullptr, 10) == 0);
  }
  if (const char* at = std::getenv("TIERCACHE_CRASH_AT"); at && std::strcmp(at, "demote-race") == 0) {
    return demoteRaceAndCrash(argv[1], argv[3]);
  }
  if (const std::string mode = argv[2]; mode == "flash" || mode == "flash-lru") {
    return flashStorm(argv[1], mode, argv[3], std::strtoull(argv[4], nullptr, 10));
  }
  const bool durable = std::string(argv[2]) == "durable";
  const std::string prefix = argv[3];
  std::mt19937_64 rng(std::strtoull(argv[4], nullptr, 10));
  tiercache::Cache cache(tiercache::test::persistentConfig(argv[1], durable));
  // At most 10,000 fresh keys (~2.5 MB) per run: well inside the pool, so an
  // acknowledged durable key is never evicted before the parent looks.
  for (uint32_t seq = 0; seq < 10000; ++seq) {
    // Fresh keys (checked for presence when durable) and a small hot range
    // that is overwritten and removed (checked for integrity only).
    const std::string key = prefix + std::to_string(seq);
    // One size for the fresh keys: one class, so eviction takes the oldest
    // (earlier rounds') items first and never an acknowledged key of this
    // run. Without durable sets, large enough to overflow DRAM into the pool.
    if (!cache.set(key, tiercache::test::makeValue(key, seq, durable ? 200 : 600))) continue;
    if (write(1, &seq, sizeof seq) != sizeof seq) return 3;
    // Every fifth set also removes an earlier fresh key; the acknowledgement
    // (high bit set) promises it never comes back.
    if (seq % 5 == 4) {
      const uint32_t victim = seq - 2;
      if (cache.remove(prefix + std::to_string(victim))) {
        const uint32_t removed = victim | 0x80000000u;
        if (write(1, &removed, sizeof removed) != sizeof removed) return 3;
      }
    }
    const std::string hot = "hot:" + std::to_string(rng() % 500);
    if (rng() % 4) {
      cache.set(hot, tiercache::test::makeValue(hot, seq, 32 + rng() % 1000));
    } else {
      cache.remove(hot);
    }
  }
  pause();  // wait for the kill
}
