// Memory is bounded: writing 10x the capacity maps exactly the configured
// tier size and the process RSS stops growing once the cache is full.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "allocator/cache.h"
#include "test_util.h"

namespace tiercache {
namespace {

uint64_t rssBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

TEST(MemoryBound, TenTimesCapacityKeepsMappingAndRssFlat) {
  const uint64_t capacity = 32 << 20;
  Cache cache(test::smallDramConfig(capacity, "lru", 1 << 20));
  std::string value(1000, 'v');
  uint64_t written = 0;
  uint64_t i = 0;
  auto writeUntil = [&](uint64_t bytes) {
    while (written < bytes) {
      const std::string key = "k" + std::to_string(i++);
      // Varying sizes so several classes fill and compete for slabs.
      const size_t size = 100 + (i * 7919) % 3000;
      value.assign(size, static_cast<char>('a' + i % 26));
      ASSERT_TRUE(cache.set(key, value));
      written += key.size() + size;
    }
  };
  writeUntil(2 * capacity);
  const uint64_t rssAtTwo = rssBytes();
  writeUntil(10 * capacity);
  const uint64_t rssAtTen = rssBytes();

  const CacheStats s = cache.stats();
  ASSERT_EQ(s.tiers.size(), 1u);
  EXPECT_EQ(s.tiers[0].mapped_bytes, capacity);
  EXPECT_EQ(s.tiers[0].slabs_used, s.tiers[0].slabs_total);
  EXPECT_GT(s.evictions, 0u);
  // Between 2x and 10x the cache only recycles memory it already has; allow
  // 4 MiB for allocator noise. ThreadSanitizer's runtime keeps growing its
  // own per-access history whatever the program does, so its RSS says
  // nothing about the cache: the RSS check is skipped there (the plain and
  // ASan builds still make it).
#if defined(__SANITIZE_THREAD__)
  (void)rssAtTwo;
  (void)rssAtTen;
#else
  EXPECT_LT(rssAtTen, rssAtTwo + (4 << 20)) << "RSS grew from " << rssAtTwo << " to " << rssAtTen;
#endif
  EXPECT_EQ(cache.checkConsistency(), "");
}

}  // namespace
}  // namespace tiercache
