// The umbrella header as a user includes it (<tiercache/tiercache.h>, from
// include/ in the build tree as once installed) gives the whole public API:
// a cache built, written, read and counted through it alone.
#include <tiercache/tiercache.h>

#include <gtest/gtest.h>

namespace tiercache {
namespace {

TEST(UmbrellaHeader, GivesTheCacheItsConfigStatsAndHandles) {
  Cache cache(CacheConfig::dram(16 << 20));
  ASSERT_TRUE(cache.set("umbrella-key", "umbrella-value"));
  ReadHandle h = cache.find("umbrella-key");
  ASSERT_TRUE(h);
  EXPECT_EQ(h.value(), "umbrella-value");
  const CacheStats stats = cache.stats();
  EXPECT_EQ(stats.gets, 1u);
  EXPECT_EQ(stats.hits, 1u);
}

}  // namespace
}  // namespace tiercache
