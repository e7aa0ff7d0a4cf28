// Crash-test child: opens a cache on a persistent pool and writes
// checksummed items until it is killed. After each set() returns it writes
// the item's sequence number to stdout, so the parent knows which sets were
// acknowledged before the SIGKILL.
//   tiercache_crash_child POOL_FILE durable|volatile PREFIX SEED
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "allocator/cache.h"
#include "persistent_test_util.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s POOL_FILE durable|volatile PREFIX SEED\n", argv[0]);
    return 2;
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
