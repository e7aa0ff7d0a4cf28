// A handle that outlives its Cache (issue 9, item 7): ~Cache makes it loud.
// With NDEBUG off (Debug and sanitizer builds) it aborts with a message; in
// release builds it warns and counts. The late handle is never released
// here: releasing it would write into the destroyed cache.
#include <gtest/gtest.h>

#include <memory>

#include "allocator/cache.h"
#include "test_util.h"

namespace tiercache {
namespace {

#ifndef NDEBUG
TEST(CacheLifetimeDeathTest, DestroyingACacheWithAPinnedItemAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto cache = std::make_unique<Cache>(test::smallDramConfig(4 << 20));
        cache->set("k", "v");
        auto* late = new ReadHandle(cache->find("k"));
        (void)late;
        cache.reset();
      },
      "destroyed while 1 handle\\(s\\) still pin items");
}
#else
TEST(CacheLifetime, DestroyingACacheWithAPinnedItemWarnsAndCounts) {
  const uint64_t before = Cache::pinsOutstandingAtDestruction();
  auto cache = std::make_unique<Cache>(test::smallDramConfig(4 << 20));
  ASSERT_TRUE(cache->set("k", "v"));
  ASSERT_TRUE(cache->set("w", "v"));
  // Leaked on purpose: releasing them after the cache is gone is the bug.
  auto* late = new ReadHandle(cache->find("k"));
  auto* lateWrite = new WriteHandle(cache->allocate("x", 4));
  ASSERT_TRUE(*late && *lateWrite);
  ::testing::internal::CaptureStderr();
  cache.reset();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("destroyed while 2 handle(s) still pin items"), std::string::npos) << err;
  EXPECT_EQ(Cache::pinsOutstandingAtDestruction(), before + 2);
}
#endif

TEST(CacheLifetime, ReleasedHandlesLeaveNothingOutstanding) {
  const uint64_t before = Cache::pinsOutstandingAtDestruction();
  {
    Cache cache(test::smallDramConfig(4 << 20));
    ASSERT_TRUE(cache.set("k", "v"));
    ReadHandle a = cache.find("k");
    ReadHandle b = std::move(a);
    WriteHandle w = cache.allocate("n", 3);
    cache.insertOrReplace(std::move(w));
    WriteHandle dropped = cache.allocate("d", 3);
    dropped.reset();
    EXPECT_FALSE(cache.find("absent"));
    b.reset();
  }
  EXPECT_EQ(Cache::pinsOutstandingAtDestruction(), before);
}

}  // namespace
}  // namespace tiercache
