// Slab allocator pieces: class sizes, compressed refs, slab carving, pool
// quotas and slab release, on a real DRAM tier.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <set>

#include "allocator/compressed_ref.h"
#include "allocator/slab_allocator.h"
#include "tiers/dram_tier.h"

namespace tiercache {
namespace {

TEST(CompressedRef, PacksSlabAndSlot) {
  const CompressedRef r = CompressedRef::make(1234, 65535, 16);
  EXPECT_EQ(r.slab(16), 1234u);
  EXPECT_EQ(r.slot(16), 65535u);
  EXPECT_FALSE(r.isNull());
  EXPECT_TRUE(CompressedRef().isNull());
  EXPECT_FALSE(static_cast<bool>(CompressedRef()));
  // Slab ids past the 32-bit reference's 65,535: up to 2^24 - 2 at 16 slot bits.
  const CompressedRef far = CompressedRef::make((1u << 24) - 2, 65535, 16);
  EXPECT_EQ(far.slab(16), (1u << 24) - 2);
  EXPECT_EQ(far.slot(16), 65535u);
  EXPECT_FALSE(far.isNull());
  EXPECT_TRUE(CompressedRef::make((1u << 24) - 1, 65535, 16).isNull());  // the id kept for kNull
}

// A packed 5-byte slot at any alignment, and a split one, hold all 40 bits
// and touch nothing beside them.
TEST(CompressedRef, RefLinkStoresFortyBitsInFiveBytes) {
  unsigned char buf[16];
  std::memset(buf, 0xAB, sizeof buf);
  const RefLink packed(buf + 3);
  packed.store(0x12'3456'789Aull);
  EXPECT_EQ(packed.load(), 0x12'3456'789Aull);
  EXPECT_EQ(buf[2], 0xAB);
  EXPECT_EQ(buf[8], 0xAB);
  packed.store(CompressedRef::kNull);
  EXPECT_EQ(packed.load(), CompressedRef::kNull);
  uint32_t lo = 0;
  unsigned char hi = 0;
  const RefLink split(&lo, &hi);
  split.store(0xFE'0000'0001ull);
  EXPECT_EQ(lo, 1u);
  EXPECT_EQ(hi, 0xFE);
  EXPECT_EQ(split.load(), 0xFE'0000'0001ull);
  EXPECT_TRUE(split.sameAs(RefLink(&lo, &hi)));
  EXPECT_FALSE(split.sameAs(packed));
}

TEST(ClassSizes, GeometricMultipleOfEightEndingAtMax) {
  const auto sizes = makeClassSizes(64, 1 << 20, 1.25, {});
  ASSERT_GT(sizes.size(), 10u);
  EXPECT_EQ(sizes.front(), 64u);
  EXPECT_EQ(sizes.back(), 1u << 20);
  for (size_t i = 1; i < sizes.size(); ++i) {
    EXPECT_EQ(sizes[i] % 8, 0u);
    EXPECT_GT(sizes[i], sizes[i - 1]);
    if (i + 1 < sizes.size()) EXPECT_LE(sizes[i], sizes[i - 1] * 1.25 + 8);
  }
}

TEST(ClassSizes, ExplicitListWins) {
  EXPECT_EQ(makeClassSizes(64, 4096, 2.0, {128, 256, 1024}), (std::vector<uint32_t>{128, 256, 1024}));
}

class SlabAllocatorTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kSlab = 64 << 10;
  SlabAllocatorTest()
      : tier_("dram", 8 * kSlab), table_(kSlab, 10, 8),
        alloc_(0, tier_, nullptr, table_, 0, {{"a", 0.5}, {"b", 0.5}}, {64, 256, 1024}, EvictionPolicyOptions{}) {}
  DramTier tier_;
  SlabTable table_;
  SlabAllocator alloc_;
};

TEST_F(SlabAllocatorTest, ClassForPicksSmallestFit) {
  EXPECT_EQ(alloc_.classFor(1), 0);
  EXPECT_EQ(alloc_.classFor(64), 0);
  EXPECT_EQ(alloc_.classFor(65), 1);
  EXPECT_EQ(alloc_.classFor(1024), 2);
  EXPECT_EQ(alloc_.classFor(1025), -1);
}

// classFor answers from a table of 8-byte granules up to 16 KiB and by
// binary search above: every size must get the smallest class that fits,
// for generated sizes and for explicit ones that are not multiples of 8
// (several in one granule) or lie beyond the table.
TEST(SlabAllocatorClassFor, TableAgreesWithTheSmallestFitForEverySize) {
  constexpr uint64_t kSlab = 1 << 20;
  const std::vector<std::vector<uint32_t>> lists = {
      makeClassSizes(48, 1 << 20, 1.25, {}),
      {13, 14, 15, 16, 17, 100, 101, 16383, 16384, 16385, 20000, 1 << 20},
      {1 << 20},
  };
  for (const auto& sizes : lists) {
    DramTier tier("dram", 2 * kSlab);
    SlabTable table(kSlab, 16, 2);
    SlabAllocator alloc(0, tier, nullptr, table, 0, {{"a", 1.0}}, sizes, EvictionPolicyOptions{});
    for (size_t bytes = 0; bytes <= (size_t{1} << 20) + 1; bytes += bytes < 40000 ? 1 : 997) {
      const auto it = std::lower_bound(sizes.begin(), sizes.end(), bytes);
      const int want = it == sizes.end() ? -1 : static_cast<int>(it - sizes.begin());
      ASSERT_EQ(alloc.classFor(bytes), want) << bytes << " bytes, first class " << sizes.front();
    }
    EXPECT_EQ(alloc.classFor((size_t{1} << 20) + 1), -1);
  }
}

TEST_F(SlabAllocatorTest, PoolQuotaBoundsSlabsAndSlotsAreDistinct) {
  EXPECT_EQ(alloc_.poolQuota(0), 4u);
  std::set<uint32_t> refs;
  const uint32_t perSlab = kSlab / 1024;
  for (uint32_t i = 0; i < 4 * perSlab; ++i) {
    const CompressedRef r = alloc_.allocateSlot(0, 2);
    ASSERT_TRUE(r) << i;
    ASSERT_TRUE(refs.insert(r.raw()).second);
    Item* it = table_.item(r);
    // Slots never overlap: each lies inside its slab at a multiple of 1024.
    const auto off = reinterpret_cast<std::byte*>(it) - tier_.base();
    EXPECT_EQ(off % 1024, 0);
    it->init("k", 10);
    it->state.store(Item::kAccessible);  // pretend published, unpinned
    alloc_.cls(0, 2).policy().add(r.raw());
  }
  EXPECT_FALSE(alloc_.allocateSlot(0, 2)) << "pool a is at its quota";
  EXPECT_EQ(alloc_.poolSlabs(0), 4u);
  std::string problems;
  uint64_t live = 0;
  alloc_.check(problems, live);
  EXPECT_EQ(live, 4u * perSlab);
  EXPECT_EQ(problems, "");
  EXPECT_TRUE(alloc_.allocateSlot(1, 0)) << "pool b has its own share";
}

TEST_F(SlabAllocatorTest, FreedSlotIsReusedFirst) {
  const CompressedRef a = alloc_.allocateSlot(0, 0);
  const CompressedRef b = alloc_.allocateSlot(0, 0);
  ASSERT_TRUE(a && b);
  EXPECT_NE(a.raw(), b.raw());
  alloc_.cls(0, 0).pushFree(a);
  EXPECT_EQ(alloc_.cls(0, 0).freeSlots(), kSlab / 64 - 1);
  EXPECT_EQ(alloc_.allocateSlot(0, 0).raw(), a.raw());
}

// pushFree keeps one slot outside the lock (the spare) and popFree hands it
// out first; the checker counts it as free, drainDeferred and a slab release
// move it to the free list.
TEST_F(SlabAllocatorTest, SpareSlotIsFreeForCheckerStatsAndRelease) {
  AllocationClass& c = alloc_.cls(0, 0);
  const CompressedRef a = alloc_.allocateSlot(0, 0);
  const CompressedRef b = alloc_.allocateSlot(0, 0);
  ASSERT_TRUE(a && b);
  c.pushFree(a);  // the spare
  EXPECT_EQ(table_.item(a)->state.load(), Item::kExclusive) << "a spare slot looks owned";
  c.pushFree(b);  // the spare is taken: onto the list
  EXPECT_EQ(table_.item(b)->state.load(), Item::kFreeSlot);
  EXPECT_EQ(c.freeSlots(), kSlab / 64);
  std::string problems;
  uint64_t live = 0;
  alloc_.check(problems, live);
  EXPECT_EQ(problems, "");
  EXPECT_EQ(live, 0u);
  EXPECT_EQ(c.popFree().raw(), a.raw()) << "the spare goes first";
  c.pushFree(a);
  EXPECT_EQ(c.drainDeferred(), 0u);  // no deferred item, but the spare is flushed
  EXPECT_EQ(table_.item(a)->state.load(), Item::kFreeSlot);
  EXPECT_EQ(c.freeSlots(), kSlab / 64);
  EXPECT_EQ(c.popFree().raw(), a.raw());
  EXPECT_EQ(c.popFree().raw(), b.raw());
  // A slab whose only non-free slot is the spare is released, not skipped.
  c.pushFree(a);
  c.pushFree(b);
  std::vector<CompressedRef> claimed;
  EXPECT_NE(c.releaseSlab(claimed), AllocationClass::kNoSlab);
  EXPECT_TRUE(claimed.empty());
  EXPECT_EQ(c.slabCount(), 0u);
  EXPECT_FALSE(c.popFree()) << "no slot of a released slab is left anywhere";
}

// The evictor's frees go to the free list's end (atTail), others to its
// head; the order holds through a slab release that drops the tail's slab.
TEST_F(SlabAllocatorTest, FreeBatchAtTailIsTakenLast) {
  AllocationClass& c = alloc_.cls(0, 2);  // 1024-byte slots: 64 per slab
  std::vector<CompressedRef> s;
  for (uint32_t i = 0; i < 2 * kSlab / 1024; ++i) s.push_back(alloc_.allocateSlot(0, 2));  // two full slabs
  ASSERT_TRUE(s.back());
  const uint32_t perSlab = kSlab / 1024;
  CompressedRef head[2] = {s[0], s[1]}, tail[2] = {s[2], s[3]}, second[2] = {s[4], s[5]};
  CompressedRef otherSlab[1] = {s[perSlab]};
  c.pushFreeBatch(head, 2);
  c.pushFreeBatch(tail, 2, true);
  c.pushFreeBatch(second, 2);
  c.pushFreeBatch(otherSlab, 1, true);
  const uint64_t want[] = {s[4].raw(), s[5].raw(), s[0].raw(), s[1].raw(), s[2].raw(), s[3].raw(), s[perSlab].raw()};
  for (uint64_t w : want) EXPECT_EQ(c.popFree().raw(), w);
  EXPECT_FALSE(c.popFree()) << "the list is empty (both slabs carved)";
  // Empty list: a batch at the tail starts it.
  c.pushFreeBatch(tail, 2, true);
  c.pushFreeBatch(head, 2, true);
  EXPECT_EQ(c.popFree().raw(), s[2].raw());
  EXPECT_EQ(c.popFree().raw(), s[3].raw());
  EXPECT_EQ(c.popFree().raw(), s[0].raw());
  EXPECT_EQ(c.popFree().raw(), s[1].raw());
  // Everything back, half at each end: the checker finds the list whole
  // (its length, and its tail at its last slot).
  c.pushFreeBatch(s.data(), perSlab);
  c.pushFreeBatch(s.data() + perSlab, perSlab, true);
  std::string problems;
  uint64_t live = 0;
  alloc_.check(problems, live);
  EXPECT_EQ(problems, "");
  EXPECT_EQ(live, 0u);
  EXPECT_EQ(c.popFree().raw(), s[0].raw());
}

// A replace in place takes the old item out of the policy before its free
// is deferred; draining such slots must not wait for the policy's list lock
// (held here by an eviction scan for as long as the test lets it). A
// deferred item still in the policy is unlinked as before.
TEST_F(SlabAllocatorTest, DrainingSlotsAlreadyOutOfThePolicyTakesNoListLock) {
  AllocationClass& c = alloc_.cls(0, 2);
  const CompressedRef oldA = alloc_.allocateSlot(0, 2), newA = alloc_.allocateSlot(0, 2),
                      other = alloc_.allocateSlot(0, 2);
  ASSERT_TRUE(oldA && newA && other);
  table_.item(oldA)->init("a", 4);
  table_.item(newA)->init("a", 4);
  table_.item(other)->init("other", 4);
  c.policy().add(other.raw());
  c.policy().add(oldA.raw());
  c.policy().replace(newA.raw(), oldA.raw());
  ASSERT_EQ(c.policy().size(), 2u);
  c.deferFree(oldA);

  struct HoldingVisitor final : EvictionVisitor {
    AllocationClass* cls;
    bool visited = false;
    bool drainedWhileHeld = false;
    std::future<size_t> drained;
    Verdict visit(RefWord) override {
      if (visited) return Verdict::kStop;
      visited = true;
      drained = std::async(std::launch::async, [this] { return cls->drainDeferred(); });
      drainedWhileHeld = drained.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
      return Verdict::kStop;
    }
  } holder;
  holder.cls = &c;
  c.policy().evict(1, 4, holder);
  ASSERT_TRUE(holder.visited);
  EXPECT_TRUE(holder.drainedWhileHeld) << "the drain waited for the list lock for a slot out of the policy";
  EXPECT_EQ(holder.drained.get(), 1u);
  EXPECT_EQ(c.popFree().raw(), oldA.raw()) << "the drained slot is the free list's head";

  // Still a member: the drain unlinks it.
  c.deferFree(other);
  EXPECT_EQ(c.drainDeferred(), 1u);
  EXPECT_EQ(c.policy().size(), 1u);
  EXPECT_EQ(c.popFree().raw(), other.raw());
}

TEST_F(SlabAllocatorTest, ReleaseSlabRefusesWhilePinnedThenMovesIt) {
  AllocationClass& donor = alloc_.cls(0, 1);
  const CompressedRef r = alloc_.allocateSlot(0, 1);
  ASSERT_TRUE(r);
  Item* it = table_.item(r);
  it->init("pinned", 4);  // refcount 1
  std::vector<CompressedRef> claimed;
  EXPECT_EQ(donor.releaseSlab(claimed), AllocationClass::kNoSlab);
  EXPECT_TRUE(claimed.empty());
  EXPECT_EQ(donor.slabCount(), 1u);
  it->state.store(Item::kAccessible);  // unpinned, published
  donor.policy().add(r.raw());
  const uint32_t slab = donor.releaseSlab(claimed);
  ASSERT_NE(slab, AllocationClass::kNoSlab);
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].raw(), r.raw());
  EXPECT_EQ(donor.slabCount(), 0u);
  EXPECT_EQ(donor.policy().size(), 0u);
  alloc_.reassignSlab(slab, 0, 2);
  EXPECT_EQ(table_.slab(slab).allocSize.load(), 1024u);
  EXPECT_EQ(alloc_.cls(0, 2).freeSlots(), kSlab / 1024);
}

TEST_F(SlabAllocatorTest, CheckerFindsAForeignFreeSlot) {
  const CompressedRef a = alloc_.allocateSlot(0, 0);
  const CompressedRef b = alloc_.allocateSlot(1, 1);
  ASSERT_TRUE(a && b);
  alloc_.cls(0, 0).pushFree(a);
  alloc_.cls(0, 0).pushFree(b);  // b belongs to pool 1, class 1
  std::string problems;
  uint64_t live = 0;
  alloc_.check(problems, live);
  EXPECT_NE(problems.find("does not own"), std::string::npos) << problems;
}

}  // namespace
}  // namespace tiercache
