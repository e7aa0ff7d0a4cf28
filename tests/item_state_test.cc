// The item state machine (allocator/item.h), driven directly: every
// transition, every claim site, pins against claims, moves, and the
// refcount limit. Each step asserts the exact state word afterwards, so a
// transition that sets or clears one bit too many fails here, not in a
// stress test an hour later. The races at the end check the one property
// the protocol exists for: exactly one thread ever owns (may free) an item.
#include <gtest/gtest.h>

#include <atomic>
#include <new>
#include <thread>
#include <vector>

#include "allocator/dcheck.h"
#include "allocator/item.h"
#include "item_bits.h"

namespace tiercache {
namespace {

using test::kA;
using test::kF;
using test::kM;
using test::kX;

// One item in its own slot (header, key, value), as a slab holds it.
class Slot {
 public:
  Slot() : item_(new (bytes_) Item) {}
  ~Slot() { item_->~Item(); }
  Item& operator*() { return *item_; }
  Item* operator->() { return item_; }
  uint32_t state() const { return item_->state.load(); }
  void set(uint32_t s) { item_->state.store(s); }

 private:
  alignas(8) unsigned char bytes_[sizeof(Item) + 64];
  Item* item_;
};

// ---- allocate, publish, pin, release --------------------------------------

TEST(ItemState, InitHoldsOneReferenceUnpublishedWithEmptyMeta) {
  Slot s;
  s.set(kX);  // as popFree hands the slot out
  s->init("key", 5);
  EXPECT_EQ(s.state(), 1u);
  EXPECT_EQ(s->key(), "key");
  EXPECT_EQ(s->valueSize(), 5u);
  EXPECT_EQ(s->seq(), 0u);
  EXPECT_EQ(s->expiry, 0u);
  EXPECT_EQ(s->flags, 0u);
  EXPECT_EQ(s->chainNext(), CompressedRef::kNull);
}

// memcached's fetched bit (the server's mg h): set once by a pinned
// reader, only its own bit; cleared by an in-place rewrite and a reuse of
// the slot, kept by a move's copy.
TEST(ItemState, FetchedBitIsSetOnceClearedByRewriteAndReuseKeptByMoves) {
  Slot s;
  s->init("k", 1);
  s->state.fetch_or(kA);  // published; init's reference is the reader's pin
  EXPECT_FALSE(s->fetched());
  EXPECT_FALSE(s->markFetched());  // not fetched before
  EXPECT_EQ(s.state(), kA | Item::kFetched | 1);
  EXPECT_TRUE(s->markFetched());
  EXPECT_EQ(s.state(), kA | Item::kFetched | 1);
  Slot copy;
  copy->init("k", 1);
  copy->copyMetaFrom(*s);
  EXPECT_EQ(copy.state(), Item::kFetched | 1);
  EXPECT_FALSE(s->releaseRef());
  ASSERT_TRUE(s->tryMarkExclusive());  // an in-place rewrite's claim
  s->endRewrite();
  EXPECT_EQ(s.state(), kA);
  EXPECT_FALSE(s->fetched());
  copy->init("k", 1);  // the slot reused
  EXPECT_EQ(copy.state(), 1u);
}

TEST(ItemState, PinsCountUpAndDownAroundPublishedItem) {
  Slot s;
  s->init("k", 1);
  s->state.fetch_or(kA);  // what AccessIndex does under the stripe lock
  EXPECT_EQ(s.state(), kA | 1);
  ASSERT_TRUE(s->tryAcquire());
  ASSERT_TRUE(s->tryAcquire());
  EXPECT_EQ(s.state(), kA | 3);
  EXPECT_FALSE(s->releaseRef());
  EXPECT_FALSE(s->releaseRef());
  // Last reference of a published item: the index still holds it.
  EXPECT_FALSE(s->releaseRef());
  EXPECT_EQ(s.state(), kA);
}

TEST(ItemState, LastReleaseOfUnpublishedItemClaimsIt) {
  Slot s;
  s->init("k", 1);  // allocated, never published (a dropped WriteHandle)
  ASSERT_TRUE(s->tryAcquire());
  EXPECT_FALSE(s->releaseRef());
  EXPECT_EQ(s.state(), 1u);
  EXPECT_TRUE(s->releaseRef());
  EXPECT_EQ(s.state(), kX);
  EXPECT_TRUE(Item::isOwnedState(s.state()));
}

TEST(ItemState, TryAcquireFailsOnClaimedOrFreeSlotAndLeavesStateAlone) {
  Slot s;
  for (uint32_t st : {kX, kX | kA, kF}) {
    s.set(st);
    EXPECT_FALSE(s->tryAcquire()) << st;
    EXPECT_EQ(s.state(), st);
  }
}

// ---- unpublish (remove, replace) -------------------------------------------

TEST(ItemState, UnpublishOfUnpinnedItemClaimsIt) {
  Slot s;
  s.set(kA);
  EXPECT_TRUE(s->unpublish());
  EXPECT_EQ(s.state(), kX);
}

TEST(ItemState, UnpublishOfPinnedItemLeavesTheClaimToTheLastRelease) {
  Slot s;
  s.set(kA | 2);
  EXPECT_FALSE(s->unpublish());
  EXPECT_EQ(s.state(), 2u);
  EXPECT_FALSE(s->releaseRef());
  EXPECT_EQ(s.state(), 1u);
  EXPECT_TRUE(s->releaseRef());
  EXPECT_EQ(s.state(), kX);
}

TEST(ItemState, UnpublishOfClaimedItemDoesNotClaimItTwice) {
  // The evictor claimed it (tryMarkExclusive) before a remove unlinked it:
  // the evictor stays the owner and the remover must not free it.
  Slot s;
  s.set(kA | kX);
  EXPECT_FALSE(s->unpublish());
  EXPECT_EQ(s.state(), kX);
}

TEST(ItemState, UnpublishOfMovingItemLeavesTheClaimToFinishMove) {
  Slot s;
  s.set(kA | kM);
  EXPECT_FALSE(s->unpublish());
  EXPECT_EQ(s.state(), kM);
  EXPECT_TRUE(s->finishMove());
  EXPECT_EQ(s.state(), kX);
}

// ---- the evictor's claim ---------------------------------------------------

TEST(ItemState, TryMarkExclusiveClaimsOnlyAnUnpinnedIdleItem) {
  Slot s;
  s.set(kA);
  ASSERT_TRUE(s->tryMarkExclusive());
  EXPECT_EQ(s.state(), kA | kX);
  // Claimed: no new pin, no second claim, no move.
  EXPECT_FALSE(s->tryAcquire());
  EXPECT_FALSE(s->tryMarkExclusive());
  EXPECT_FALSE(s->tryMarkMoving(true));
  EXPECT_EQ(s.state(), kA | kX);
}

TEST(ItemState, TryMarkExclusiveRefusesPinnedMovingAndFreeSlots) {
  Slot s;
  for (uint32_t st : {kA | 1, kA | Item::kRefMask, kA | kM, kM, kF, kX}) {
    s.set(st);
    EXPECT_FALSE(s->tryMarkExclusive()) << std::hex << st;
    EXPECT_EQ(s.state(), st);
  }
}

TEST(ItemState, PinTakenBeforeTheClaimWins) {
  Slot s;
  s.set(kA);
  ASSERT_TRUE(s->tryAcquire());
  EXPECT_FALSE(s->tryMarkExclusive());
  EXPECT_FALSE(s->releaseRef());
  EXPECT_TRUE(s->tryMarkExclusive());
  EXPECT_EQ(s.state(), kA | kX);
}

// ---- moves between tiers ---------------------------------------------------

TEST(ItemState, DemotionNeedsAnUnpinnedPublishedItem) {
  Slot s;
  s.set(kA | 1);
  EXPECT_FALSE(s->tryMarkMoving(false));
  EXPECT_EQ(s.state(), kA | 1);
  s.set(1);  // unpublished
  EXPECT_FALSE(s->tryMarkMoving(true));
  s.set(kA);
  ASSERT_TRUE(s->tryMarkMoving(false));
  EXPECT_EQ(s.state(), kA | kM);
}

TEST(ItemState, PromotionMayMoveAPinnedItemAndReadersStillPinIt) {
  Slot s;
  s.set(kA | 1);
  ASSERT_TRUE(s->tryMarkMoving(true));
  EXPECT_EQ(s.state(), kA | kM | 1);
  EXPECT_FALSE(s->tryMarkMoving(true));  // one mover at a time
  EXPECT_FALSE(s->tryMarkExclusive());   // no claim while moving
  ASSERT_TRUE(s->tryAcquire());          // a reader may still pin it
  EXPECT_EQ(s.state(), kA | kM | 2);
}

TEST(ItemState, FinishMoveAfterSwapClaimsTheUnpinnedOriginal) {
  Slot s;
  s.set(kA);
  ASSERT_TRUE(s->tryMarkMoving(false));
  s->state.fetch_and(~kA);  // replaceExact unpublished the original
  EXPECT_TRUE(s->finishMove());
  EXPECT_EQ(s.state(), kX);
}

TEST(ItemState, FinishMoveOfPinnedOriginalLeavesTheClaimToTheLastReader) {
  Slot s;
  s.set(kA | 1);
  ASSERT_TRUE(s->tryMarkMoving(true));
  s->state.fetch_and(~kA);
  EXPECT_FALSE(s->finishMove());
  EXPECT_EQ(s.state(), 1u);
  EXPECT_TRUE(s->releaseRef());
  EXPECT_EQ(s.state(), kX);
}

TEST(ItemState, LastReleaseWhileMovingDoesNotClaim) {
  // The reader lets go after the swap but before finishMove: the mover
  // still reads the original, so the claim waits for finishMove.
  Slot s;
  s.set(kA | 1);
  ASSERT_TRUE(s->tryMarkMoving(true));
  s->state.fetch_and(~kA);
  EXPECT_FALSE(s->releaseRef());
  EXPECT_EQ(s.state(), kM);
  EXPECT_TRUE(s->finishMove());
  EXPECT_EQ(s.state(), kX);
}

TEST(ItemState, FinishMoveOfAnAbortedMoveLeavesItemPublished) {
  // No slot below, or the swap lost: the item stays where it was.
  Slot s;
  s.set(kA);
  ASSERT_TRUE(s->tryMarkMoving(false));
  EXPECT_FALSE(s->finishMove());
  EXPECT_EQ(s.state(), kA);
  EXPECT_TRUE(s->tryMarkExclusive());
}

// ---- refcount limit, hit bits ---------------------------------------------

TEST(ItemState, RefcountSaturatesWithoutSpillingIntoFlagBits) {
  Slot s;
  s.set(kA | (Item::kRefMask - 1));
  ASSERT_TRUE(s->tryAcquire());
  EXPECT_EQ(s.state(), kA | Item::kRefMask);
  EXPECT_FALSE(s->tryAcquire());
  EXPECT_EQ(s.state(), kA | Item::kRefMask);  // kAccessible not turned into kExclusive
  EXPECT_FALSE(s->releaseRef());
  EXPECT_TRUE(s->tryAcquire());
  EXPECT_EQ(s.state(), kA | Item::kRefMask);
}

TEST(ItemState, LowerTierHitsCountToSevenOnceEachAndSurviveRefcounting) {
  Slot s;
  s.set(kA);
  for (uint32_t i = 1; i <= 7; ++i) EXPECT_EQ(s->addLowerTierHit(), i);
  EXPECT_EQ(s->addLowerTierHit(), 0u);  // saturated: reported to nobody
  EXPECT_EQ(s.state(), kA | Item::kHitMask);
  ASSERT_TRUE(s->tryAcquire());
  EXPECT_FALSE(s->releaseRef());
  ASSERT_TRUE(s->tryMarkExclusive());
  EXPECT_EQ(s.state(), kA | kX | Item::kHitMask);
  s->clearLowerTierHits();
  EXPECT_EQ(s.state(), kA | kX);
}

TEST(ItemState, OwnedStateIsClaimedUnpinnedUnpublishedAndStill) {
  EXPECT_TRUE(Item::isOwnedState(kX));
  EXPECT_TRUE(Item::isOwnedState(kX | Item::kHitMask));
  for (uint32_t st : {0u, kX | kA, kX | 1, kX | kM, kX | kF, kF, kA}) EXPECT_FALSE(Item::isOwnedState(st)) << st;
}

TEST(ItemState, CopyMetaKeepsExpiryFlagsAndSequence) {
  Slot a, b;
  a->init("k", 1);
  a->expiry = 77;
  a->flags = 0xdeadbeef;
  a->setSeq(0x123456789abcdefull);
  b->init("k", 1);
  b->copyMetaFrom(*a);
  EXPECT_EQ(b->expiry, 77u);
  EXPECT_EQ(b->flags, 0xdeadbeefu);
  EXPECT_EQ(b->seq(), 0x123456789abcdefull);
}

// ---- races: exactly one owner ---------------------------------------------

TEST(ItemStateRace, ManyEvictorsClaimAnItemOnce) {
  constexpr int kThreads = 4, kRounds = 2000;
  Slot s;
  for (int round = 0; round < kRounds; ++round) {
    s.set(kA);
    std::atomic<int> winners{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) ts.emplace_back([&] { winners += s->tryMarkExclusive(); });
    for (auto& t : ts) t.join();
    ASSERT_EQ(winners.load(), 1) << "round " << round;
    ASSERT_EQ(s.state(), kA | kX);
  }
}

TEST(ItemStateRace, RemoveAgainstLastReadersYieldsOneOwner) {
  // Readers release their pins while a remover unpublishes: whichever
  // comes last claims, and only one does.
  constexpr int kReaders = 3, kRounds = 2000;
  Slot s;
  for (int round = 0; round < kRounds; ++round) {
    s.set(kA | kReaders);
    std::atomic<int> owners{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kReaders; ++t) ts.emplace_back([&] { owners += s->releaseRef(); });
    ts.emplace_back([&] { owners += s->unpublish(); });
    for (auto& t : ts) t.join();
    ASSERT_EQ(owners.load(), 1) << "round " << round;
    ASSERT_EQ(s.state(), kX);
  }
}

TEST(ItemStateRace, PinAgainstClaimNeverBoth) {
  constexpr int kRounds = 5000;
  Slot s;
  for (int round = 0; round < kRounds; ++round) {
    s.set(kA);
    bool pinned = false, claimed = false;
    std::thread reader([&] { pinned = s->tryAcquire(); });
    std::thread evictor([&] { claimed = s->tryMarkExclusive(); });
    reader.join();
    evictor.join();
    ASSERT_NE(pinned, claimed) << "round " << round;
    ASSERT_EQ(s.state(), pinned ? (kA | 1) : (kA | kX));
  }
}

TEST(ItemStateRace, MoveAgainstRemoveAndReaderYieldsOneOwner) {
  // A promotion moves a pinned item while a remove unpublishes it and the
  // reader lets go: finishMove or the last release claims, exactly once.
  constexpr int kRounds = 3000;
  Slot s;
  for (int round = 0; round < kRounds; ++round) {
    s.set(kA | 1);
    ASSERT_TRUE(s->tryMarkMoving(true));
    std::atomic<int> owners{0};
    std::thread remover([&] { owners += s->unpublish(); });
    std::thread reader([&] { owners += s->releaseRef(); });
    remover.join();
    reader.join();
    EXPECT_EQ(owners.load(), 0);  // kMoving holds every claim back
    owners += s->finishMove();
    ASSERT_EQ(owners.load(), 1) << "round " << round;
    ASSERT_EQ(s.state(), kX);
  }
}

// ---- debug assertions ------------------------------------------------------

TEST(ItemStateDeathTest, ReleaseWithoutReferenceFiresDcheck) {
  if (!dcheck::kOn) GTEST_SKIP() << "TC_DCHECK is compiled out in this build type (Release/RelWithDebInfo)";
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  Slot s;
  s.set(kA);  // published, no reference: a release here is a double release
  EXPECT_DEATH(s->releaseRef(), "item.h:[0-9]+: TC_DCHECK failed: \\(s & kRefMask\\) != 0");
}

TEST(ItemStateDeathTest, FinishMoveWithoutAMoveFiresDcheck) {
  if (!dcheck::kOn) GTEST_SKIP() << "TC_DCHECK is compiled out in this build type (Release/RelWithDebInfo)";
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  Slot s;
  s.set(kA | 1);
  EXPECT_DEATH(s->finishMove(), "TC_DCHECK failed: s & kMoving");
}

}  // namespace
}  // namespace tiercache
