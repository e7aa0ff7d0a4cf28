// Eviction policies on their own, through the HookResolver seam: an array of
// hooks stands in for item memory (the policies never see items).
#include <gtest/gtest.h>

#include <vector>

#include "eviction/clock_policy.h"
#include "eviction/lru_policy.h"

namespace tiercache {
namespace {

class ArrayResolver final : public HookResolver {
 public:
  explicit ArrayResolver(size_t n) : hooks_(n) {}
  EvictionHook& hook(uint32_t ref) const override { return hooks_[ref]; }

 private:
  mutable std::vector<EvictionHook> hooks_;
};

class TakeAll final : public EvictionVisitor {
 public:
  explicit TakeAll(std::vector<uint32_t> pinned = {}) : pinned_(std::move(pinned)) {}
  Verdict visit(uint32_t ref) override {
    for (uint32_t p : pinned_) {
      if (p == ref) return Verdict::kSkip;
    }
    taken.push_back(ref);
    return Verdict::kTake;
  }
  std::vector<uint32_t> taken;

 private:
  std::vector<uint32_t> pinned_;
};

std::vector<uint32_t> drain(EvictionPolicy& p, size_t n) {
  TakeAll v;
  p.evict(n, 1000, v);
  return v.taken;
}

TEST(LruPolicy, EvictsLeastRecentlyUsedFirst) {
  ArrayResolver r(8);
  LruPolicy p(r, 0, 0);
  for (uint32_t i = 0; i < 5; ++i) p.add(i);
  p.recordAccess(0);  // refresh 0 ms: every hit moves
  p.recordAccess(2);
  EXPECT_EQ(drain(p, 5), (std::vector<uint32_t>{1, 3, 4, 0, 2}));
  EXPECT_EQ(p.size(), 0u);
}

TEST(LruPolicy, RefreshIntervalRateLimitsMoves) {
  ArrayResolver r(4);
  LruPolicy p(r, 0, 60000);
  for (uint32_t i = 0; i < 3; ++i) p.add(i);
  p.recordAccess(0);  // within a minute of insertion: no move
  EXPECT_EQ(drain(p, 1), (std::vector<uint32_t>{0}));
}

// 12 items, 0..3 then read; a scan of 8 new keys; 12 evictions. Mid-point
// insertion keeps the read items, classic LRU loses them.
int hotItemsEvictedAfterScan(uint32_t insertionPoint) {
  ArrayResolver r(32);
  LruPolicy p(r, insertionPoint, 0);
  for (uint32_t i = 0; i < 12; ++i) p.add(i);
  for (uint32_t i = 0; i < 4; ++i) p.recordAccess(i);
  for (uint32_t i = 12; i < 20; ++i) p.add(i);
  EXPECT_TRUE(p.forEach(nullptr, nullptr));
  int hot = 0;
  for (uint32_t v : drain(p, 12)) hot += v < 4;
  return hot;
}

TEST(LruPolicy, MidpointInsertionProtectsHotItemsFromAScan) {
  EXPECT_EQ(hotItemsEvictedAfterScan(1), 0);
  EXPECT_EQ(hotItemsEvictedAfterScan(0), 4);
}

TEST(ClockPolicy, AccessedItemsGetASecondChance) {
  ArrayResolver r(8);
  ClockPolicy p(r);
  for (uint32_t i = 0; i < 4; ++i) p.add(i);
  p.recordAccess(0);
  p.recordAccess(1);
  EXPECT_EQ(drain(p, 2), (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(drain(p, 2), (std::vector<uint32_t>{0, 1}));
}

class PolicyTest : public ::testing::TestWithParam<std::string> {
 protected:
  PolicyTest() : r_(16) {
    EvictionPolicyOptions o;
    o.kind = GetParam() == "lru-midpoint" ? "lru" : GetParam();
    o.lruInsertionPoint = GetParam() == "lru-midpoint" ? 2 : 0;
    p_ = makeEvictionPolicy(o, r_);
  }
  ArrayResolver r_;
  std::unique_ptr<EvictionPolicy> p_;
};

TEST_P(PolicyTest, RemoveIsIdempotentAndDropsMembership) {
  for (uint32_t i = 0; i < 6; ++i) p_->add(i);
  EXPECT_TRUE(p_->remove(3));
  EXPECT_FALSE(p_->remove(3));
  EXPECT_EQ(p_->size(), 5u);
  const auto all = drain(*p_, 10);
  EXPECT_EQ(all.size(), 5u);
  EXPECT_EQ(std::count(all.begin(), all.end(), 3u), 0);
  EXPECT_FALSE(p_->remove(0)) << "evicted items are no longer members";
}

TEST_P(PolicyTest, PinnedItemsAreSkippedNotLost) {
  for (uint32_t i = 0; i < 6; ++i) p_->add(i);
  TakeAll v({0, 1});
  EXPECT_EQ(p_->evict(10, 100, v), 4u);
  EXPECT_EQ(p_->size(), 2u);
  EXPECT_TRUE(p_->forEach(nullptr, nullptr));
}

TEST_P(PolicyTest, MaxScanBoundsTheWalk) {
  for (uint32_t i = 0; i < 10; ++i) p_->add(i);
  TakeAll v({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(p_->evict(1, 3, v), 0u);
  EXPECT_EQ(p_->size(), 10u);
}

TEST_P(PolicyTest, ForEachDetectsABrokenLink) {
  for (uint32_t i = 0; i < 4; ++i) p_->add(i);
  EXPECT_TRUE(p_->forEach(nullptr, nullptr));
  r_.hook(2).prev = 9;  // corrupt
  EXPECT_FALSE(p_->forEach(nullptr, nullptr));
}

TEST(EvictionPolicyFactory, UnknownKindIsRefused) {
  ArrayResolver r(1);
  EvictionPolicyOptions o;
  o.kind = "random";
  EXPECT_THROW(makeEvictionPolicy(o, r), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(All, PolicyTest, ::testing::Values("lru", "lru-midpoint", "clock"));

// The batch entry points keep the order the one-at-a-time calls give.
TEST(EvictionPolicyBatch, AddBatchAndAddAndRemoveMatchTheSingleCalls) {
  for (const char* kind : {"lru", "clock"}) {
    ArrayResolver r1(16), r2(16);
    EvictionPolicyOptions o;
    o.kind = kind;
    o.lruRefreshMs = 0;
    auto single = makeEvictionPolicy(o, r1);
    auto batched = makeEvictionPolicy(o, r2);
    const uint32_t refs[] = {3, 1, 4, 5, 9, 2, 6};
    for (uint32_t ref : refs) single->add(ref);
    batched->addBatch(refs, 7);
    single->add(7);
    EXPECT_TRUE(single->remove(4));
    EXPECT_TRUE(batched->addAndRemove(7, 4)) << kind;
    EXPECT_FALSE(batched->addAndRemove(8, 4)) << kind << ": 4 is no longer a member";
    single->add(8);
    EXPECT_EQ(batched->size(), single->size()) << kind;
    EXPECT_EQ(drain(*batched, 16), drain(*single, 16)) << kind;
  }
}

}  // namespace
}  // namespace tiercache
