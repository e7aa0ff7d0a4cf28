// The access index (allocator/access_index.*), driven directly over one
// slab of real memory: chains, replace, remove, the exact unlink and swap
// the evictor and movers use, conditional publishes, and unlinks under
// races between several threads. Hashes are passed in by the test, so a
// collision is forced by giving two keys the same hash: the index must
// then tell them apart by the full key.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "allocator/access_index.h"
#include "allocator/dcheck.h"
#include "allocator/slab_allocator.h"
#include "item_bits.h"

namespace tiercache {
namespace {

using test::kA;
using test::kM;
using test::kX;

class AccessIndexTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kSlab = 64 << 10;
  static constexpr uint32_t kAlloc = 512;  // room for a 255-byte key
  static constexpr uint32_t kSlots = kSlab / kAlloc;

  explicit AccessIndexTest(uint32_t bucketPower = 2, uint32_t lockPower = 1)
      : memory_(new (std::align_val_t{64}) std::byte[kSlab]), table_(kSlab, 10, 1) {
    table_.slab(0).base = memory_.get();
    table_.slab(0).allocSize.store(kAlloc);
    // Every slot starts as an owned free slot, and make() only init()s it:
    // constructing an Item again would write its state word non-atomically
    // while a lock-free lookup may still read it.
    for (uint32_t slot = 0; slot < kSlots; ++slot) {
      new (item(table_.makeRef(0, slot))) Item;
      item(table_.makeRef(0, slot))->state.store(Item::kExclusive);
    }
    index_ = std::make_unique<AccessIndex>(bucketPower, lockPower, table_, nullptr, [](CompressedRef) {
      ADD_FAILURE() << "a lookup became the owner of an item; this test frees items itself";
    });
  }

  // A new item in `slot`, held by one reference (the caller's WriteHandle).
  CompressedRef make(uint32_t slot, std::string_view key, std::string_view value = "v") {
    const CompressedRef ref = table_.makeRef(0, slot);
    Item* it = item(ref);
    it->init(key, static_cast<uint32_t>(value.size()));
    std::memcpy(it->valueData(), value.data(), value.size());
    return ref;
  }
  Item* item(CompressedRef ref) const { return table_.item(ref); }
  uint32_t state(CompressedRef ref) const { return item(ref)->state.load(); }

  // Publishes and drops the caller's reference, as set() does.
  CompressedRef publish(uint32_t slot, std::string_view key, uint64_t hash, std::string_view value = "v") {
    const CompressedRef ref = make(slot, key, value);
    bool owned = true;
    EXPECT_TRUE(index_->insertOrReplace(ref, item(ref), hash, owned).isNull());
    EXPECT_FALSE(item(ref)->releaseRef());
    return ref;
  }

  // The value found under key (pinned and released again), or "<absent>".
  std::string lookup(std::string_view key, uint64_t hash) {
    Item* it = nullptr;
    const CompressedRef ref = index_->acquire(key, hash, it);
    if (!ref) return "<absent>";
    EXPECT_EQ(it, item(ref));
    std::string v(it->value());
    EXPECT_FALSE(it->releaseRef());
    return v;
  }

  uint64_t checkEntries(std::string* problems = nullptr) {
    std::string out;
    // Not used for placement: every test passes the hash it chose.
    const uint64_t n = index_->check(+[](std::string_view k) -> uint64_t { return k.empty() ? 0 : k[0]; }, out);
    if (problems) *problems = out;
    return n;
  }

  struct AlignedDelete {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<std::byte[], AlignedDelete> memory_;
  SlabTable table_;
  std::unique_ptr<AccessIndex> index_;
};

TEST_F(AccessIndexTest, PublishSetsAccessibleAndAcquirePinsTheSameItem) {
  const CompressedRef ref = make(0, "alpha", "one");
  bool owned = true;
  EXPECT_TRUE(index_->insertOrReplace(ref, item(ref), 5, owned).isNull());
  EXPECT_FALSE(owned);
  EXPECT_EQ(state(ref), kA | 1);
  Item* it = nullptr;
  EXPECT_EQ(index_->acquire("alpha", 5, it), ref);
  EXPECT_EQ(it, item(ref));
  EXPECT_EQ(state(ref), kA | 2);
  EXPECT_EQ(it->value(), "one");
  EXPECT_EQ(lookup("alpha", 6), "<absent>");  // another bucket: not found there
}

TEST_F(AccessIndexTest, ChainsHoldManyKeysPerBucket) {
  // 4 buckets, 40 keys: chains of 10.
  for (uint32_t i = 0; i < 40; ++i) publish(i, "key" + std::to_string(i), i, "value" + std::to_string(i));
  for (uint32_t i = 0; i < 40; ++i) EXPECT_EQ(lookup("key" + std::to_string(i), i), "value" + std::to_string(i));
  EXPECT_EQ(index_->bucketCount(), 4u);
}

TEST_F(AccessIndexTest, ForcedCollisionsAreToldApartByTheFullKey) {
  // One hash for every key: prefixes, equal lengths, one differing last byte.
  const std::vector<std::string> keys = {"ab", "abc", "abd", "abcd", "b", std::string(255, 'z'),
                                         std::string(254, 'z') + "y"};
  for (uint32_t i = 0; i < keys.size(); ++i) publish(i, keys[i], 42, "v" + std::to_string(i));
  for (uint32_t i = 0; i < keys.size(); ++i) EXPECT_EQ(lookup(keys[i], 42), "v" + std::to_string(i)) << keys[i];
  for (const char* absent : {"a", "abce", "", "abcde", "B"}) EXPECT_EQ(lookup(absent, 42), "<absent>") << absent;
  std::string problems;
  EXPECT_EQ(checkEntries(&problems), keys.size());
  // check() hashes with the test's function, so only the placement lines may appear.
  EXPECT_EQ(problems.find("linked twice"), std::string::npos) << problems;
  EXPECT_EQ(problems.find("not published"), std::string::npos) << problems;
}

TEST_F(AccessIndexTest, KeysOfEveryShortLengthDifferingInOneByteAreToldApart) {
  // Keys of 8 to 16 bytes are compared as two overlapping words: a key
  // that differs from a chained one in any single byte, or is one byte
  // longer or shorter, is another key.
  for (size_t len = 6; len <= 18; ++len) {
    index_ = std::make_unique<AccessIndex>(2, 1, table_);
    const std::string base(len, 'k');
    publish(static_cast<uint32_t>(len), base, 1, "base");
    for (size_t i = 0; i < len; ++i) {
      std::string other = base;
      other[i] = 'K';
      EXPECT_EQ(lookup(other, 1), "<absent>") << len << " " << i;
    }
    EXPECT_EQ(lookup(base + "k", 1), "<absent>") << len;
    EXPECT_EQ(lookup(base.substr(1), 1), "<absent>") << len;
    EXPECT_EQ(lookup(base, 1), "base") << len;
  }
}

TEST_F(AccessIndexTest, ReplaceOfUnpinnedItemHandsItToTheCaller) {
  const CompressedRef a1 = publish(0, "k", 7, "old");
  const CompressedRef a2 = make(1, "k", "new");
  bool owned = false;
  EXPECT_EQ(index_->insertOrReplace(a2, item(a2), 7, owned), a1);
  EXPECT_TRUE(owned);
  EXPECT_EQ(state(a1), kX);
  EXPECT_EQ(state(a2), kA | 1);
  EXPECT_EQ(lookup("k", 7), "new");
}

TEST_F(AccessIndexTest, ReplaceOfPinnedItemLeavesItToTheLastReader) {
  const CompressedRef a1 = publish(0, "k", 7, "old");
  Item* reader = nullptr;
  ASSERT_EQ(index_->acquire("k", 7, reader), a1);
  const CompressedRef a2 = make(1, "k", "new");
  bool owned = true;
  EXPECT_EQ(index_->insertOrReplace(a2, item(a2), 7, owned), a1);
  EXPECT_FALSE(owned);
  EXPECT_EQ(state(a1), 1u);
  EXPECT_EQ(reader->value(), "old");  // the reader's bytes are intact
  EXPECT_TRUE(reader->releaseRef());
  EXPECT_EQ(state(a1), kX);
}

TEST_F(AccessIndexTest, ReplaceInsideAChainKeepsItsNeighbours) {
  for (uint32_t i = 0; i < 3; ++i) publish(i, "c" + std::to_string(i), 1, "old");
  const CompressedRef fresh = make(3, "c1", "new");
  bool owned = false;
  EXPECT_EQ(index_->insertOrReplace(fresh, item(fresh), 1, owned), table_.makeRef(0, 1));
  EXPECT_EQ(lookup("c0", 1), "old");
  EXPECT_EQ(lookup("c1", 1), "new");
  EXPECT_EQ(lookup("c2", 1), "old");
  EXPECT_EQ(checkEntries(), 3u);
}

TEST_F(AccessIndexTest, RemoveAtHeadMiddleAndTailOfAChain) {
  for (uint32_t i = 0; i < 5; ++i) publish(i, "r" + std::to_string(i), 3);
  // Chains grow at the head: r4 r3 r2 r1 r0.
  for (uint32_t victim : {4u, 2u, 0u}) {
    bool owned = false;
    EXPECT_EQ(index_->remove("r" + std::to_string(victim), 3, owned), table_.makeRef(0, victim));
    EXPECT_TRUE(owned);
    EXPECT_EQ(state(table_.makeRef(0, victim)), kX);
  }
  EXPECT_EQ(lookup("r1", 3), "v");
  EXPECT_EQ(lookup("r3", 3), "v");
  for (const char* gone : {"r0", "r2", "r4"}) EXPECT_EQ(lookup(gone, 3), "<absent>");
  bool owned = true;
  EXPECT_TRUE(index_->remove("r0", 3, owned).isNull());
  EXPECT_FALSE(owned);
  EXPECT_EQ(checkEntries(), 2u);
}

// The keys of one chain, head first (pinLive walks each chain in order).
std::vector<std::string> chainOrder(AccessIndex& index) {
  std::vector<std::pair<CompressedRef, Item*>> all;
  index.pinLive(0, index.bucketCount(), LiveCheck{}, all);
  std::vector<std::string> keys;
  for (auto& [ref, it] : all) {
    keys.emplace_back(it->key());
    it->releaseRef();
  }
  return keys;
}

TEST_F(AccessIndexTest, AFoundKeyMovesToTheHeadOfItsChain) {
  for (uint32_t i = 0; i < 4; ++i) publish(i, "m" + std::to_string(i), 2, "v" + std::to_string(i));
  using V = std::vector<std::string>;
  EXPECT_EQ(chainOrder(*index_), (V{"m3", "m2", "m1", "m0"}));  // chains grow at the head
  // A found key goes to the head one lookup in kMoveToFrontEvery (of this
  // thread's lookups that find a key behind its chain's head).
  for (uint32_t i = 0; i < AccessIndex::kMoveToFrontEvery; ++i) EXPECT_EQ(lookup("m1", 2), "v1");
  EXPECT_EQ(chainOrder(*index_), (V{"m1", "m3", "m2", "m0"})) << "a found key goes to the head";
  for (uint32_t i = 0; i < AccessIndex::kMoveToFrontEvery; ++i) EXPECT_EQ(lookup("m0", 2), "v0");  // the tail
  EXPECT_EQ(chainOrder(*index_), (V{"m0", "m1", "m3", "m2"}));
  EXPECT_EQ(lookup("m0", 2), "v0");  // already the head: nothing moves
  EXPECT_EQ(chainOrder(*index_), (V{"m0", "m1", "m3", "m2"}));
  EXPECT_EQ(lookup("m9", 2), "<absent>");  // a miss moves nothing
  EXPECT_EQ(chainOrder(*index_), (V{"m0", "m1", "m3", "m2"}));
  // A rewrite in place is a use of the key too.
  EXPECT_TRUE(index_->rewriteInPlace(
      "m2", 2, [](const Item&, CompressedRef) { return true; }, [](Item&, CompressedRef) {}));
  EXPECT_EQ(chainOrder(*index_), (V{"m2", "m0", "m1", "m3"}));
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(lookup("m" + std::to_string(i), 2), "v" + std::to_string(i));
  EXPECT_EQ(checkEntries(), 4u);
}

TEST_F(AccessIndexTest, RewriteInPlaceWritesUnderTheClaimAndLeavesTheItemUnpinned) {
  const CompressedRef ref = publish(0, "w", 9, "old");
  uint32_t during = 0;
  const CompressedRef got = index_->rewriteInPlace(
      "w", 9, [](const Item&, CompressedRef) { return true; },
      [&](Item& it, CompressedRef r) {
        EXPECT_EQ(r, ref);
        during = it.state.load();
        std::memcpy(it.valueData(), "new", 3);
      });
  EXPECT_EQ(got, ref);
  EXPECT_EQ(during, kA | kX) << "written while claimed, so no evictor or mover takes it";
  EXPECT_EQ(state(ref), kA) << "published and unpinned afterwards: nothing for the caller to release";
  EXPECT_EQ(lookup("w", 9), "new");
  // Not rewritten (and nothing changed) when the item is pinned, claimed or
  // moving, refused by fits, or absent.
  auto untouched = [&](const char* why) {
    bool wrote = false;
    EXPECT_TRUE(index_->rewriteInPlace("w", 9, [](const Item&, CompressedRef) { return true; },
                                       [&](Item&, CompressedRef) { wrote = true; })
                    .isNull())
        << why;
    EXPECT_FALSE(wrote) << why;
  };
  Item* pin = nullptr;
  ASSERT_EQ(index_->acquire("w", 9, pin), ref);
  untouched("pinned");
  EXPECT_EQ(state(ref), kA | 1);
  EXPECT_FALSE(pin->releaseRef());
  ASSERT_TRUE(item(ref)->tryMarkMoving(false));
  untouched("moving");
  EXPECT_FALSE(item(ref)->finishMove());
  ASSERT_TRUE(item(ref)->tryMarkExclusive());
  untouched("claimed");
  item(ref)->state.store(kA);  // the claimer lets go (test only)
  EXPECT_TRUE(index_->rewriteInPlace("w", 9, [](const Item&, CompressedRef) { return false; },
                                     [](Item&, CompressedRef) { ADD_FAILURE() << "refused by fits"; })
                  .isNull());
  EXPECT_TRUE(index_->rewriteInPlace("x", 9, [](const Item&, CompressedRef) { return true; },
                                     [](Item&, CompressedRef) { ADD_FAILURE() << "absent"; })
                  .isNull());
  EXPECT_EQ(state(ref), kA);
  EXPECT_EQ(lookup("w", 9), "new");
}

TEST_F(AccessIndexTest, RemoveWithPinOutParameterPinsBeforeUnpublishing) {
  const CompressedRef ref = publish(0, "p", 0);
  bool owned = true, pinned = false;
  EXPECT_EQ(index_->remove("p", 0, owned, &pinned), ref);
  EXPECT_TRUE(pinned);
  EXPECT_FALSE(owned);  // the pin holds it: freed at its release
  EXPECT_EQ(state(ref), 1u);
  EXPECT_TRUE(item(ref)->releaseRef());
}

TEST_F(AccessIndexTest, RemoveOfAClaimedItemNeitherPinsNorOwnsIt) {
  const CompressedRef ref = publish(0, "p", 0);
  ASSERT_TRUE(item(ref)->tryMarkExclusive());  // an evictor's claim
  bool owned = true, pinned = true;
  EXPECT_EQ(index_->remove("p", 0, owned, &pinned), ref);
  EXPECT_FALSE(pinned);
  EXPECT_FALSE(owned);
  EXPECT_EQ(state(ref), kX);
  EXPECT_FALSE(index_->unlinkExact(ref, 0));  // the evictor finds it gone
}

TEST_F(AccessIndexTest, AcquireSkipsClaimedAndReportsSaturatedItems) {
  const CompressedRef claimed = publish(0, "x", 1);
  ASSERT_TRUE(item(claimed)->tryMarkExclusive());
  Item* it = nullptr;
  bool saturated = true;
  EXPECT_TRUE(index_->acquire("x", 1, it, &saturated).isNull());
  EXPECT_FALSE(saturated);

  const CompressedRef full = publish(1, "y", 1);
  item(full)->state.store(kA | Item::kRefMask);
  EXPECT_TRUE(index_->acquire("y", 1, it, &saturated).isNull());
  EXPECT_TRUE(saturated);
  EXPECT_EQ(state(full), kA | Item::kRefMask);
}

TEST_F(AccessIndexTest, UnlinkExactTakesOnlyThatItem) {
  const CompressedRef a1 = publish(0, "k", 2);
  const CompressedRef a2 = make(1, "k");
  bool owned = false;
  ASSERT_EQ(index_->insertOrReplace(a2, item(a2), 2, owned), a1);
  ASSERT_FALSE(item(a2)->releaseRef());
  // The replaced copy is not linked any more; the key's live item is.
  EXPECT_FALSE(index_->unlinkExact(a1, 2));
  ASSERT_TRUE(item(a2)->tryMarkExclusive());
  EXPECT_TRUE(index_->unlinkExact(a2, 2));
  EXPECT_EQ(state(a2), kX);
  EXPECT_EQ(lookup("k", 2), "<absent>");
}

TEST_F(AccessIndexTest, ReplaceExactSwapsAMovingItemForItsCopy) {
  const CompressedRef src = publish(0, "m", 3, "payload");
  publish(1, "n", 3);  // a neighbour in the chain
  ASSERT_TRUE(item(src)->tryMarkMoving(false));
  const CompressedRef copy = make(2, "m", "payload");
  EXPECT_TRUE(index_->replaceExact(src, copy, item(copy), 3));
  EXPECT_EQ(state(copy), kA | 1);
  EXPECT_EQ(state(src), kM);
  EXPECT_TRUE(item(src)->finishMove());
  EXPECT_FALSE(item(copy)->releaseRef());
  Item* it = nullptr;
  EXPECT_EQ(index_->acquire("m", 3, it), copy);
  EXPECT_FALSE(it->releaseRef());
  EXPECT_EQ(lookup("n", 3), "v");
  EXPECT_EQ(checkEntries(), 2u);
}

TEST_F(AccessIndexTest, ReplaceExactDoesNotResurrectARemovedItem) {
  const CompressedRef src = publish(0, "m", 3);
  ASSERT_TRUE(item(src)->tryMarkMoving(false));
  bool owned = true;
  ASSERT_EQ(index_->remove("m", 3, owned), src);
  EXPECT_FALSE(owned);  // kMoving: the mover's finishMove claims
  const CompressedRef copy = make(1, "m");
  EXPECT_FALSE(index_->replaceExact(src, copy, item(copy), 3));
  EXPECT_EQ(state(copy), 1u);
  EXPECT_TRUE(item(src)->finishMove());
  EXPECT_TRUE(item(copy)->releaseRef());
  EXPECT_EQ(lookup("m", 3), "<absent>");
}

TEST_F(AccessIndexTest, ConditionalPublishes) {
  using Kind = InsertCondition::Kind;
  const CompressedRef live = publish(0, "c", 9);
  item(live)->setSeq(17);
  InsertCondition cond;

  cond.kind = Kind::kIfAbsent;
  const CompressedRef add = make(1, "c");
  InsertOutcome out = index_->insertIf(add, item(add), 9, cond);
  EXPECT_FALSE(out.stored);
  EXPECT_TRUE(out.existed);
  EXPECT_EQ(state(add), 1u);

  cond.kind = Kind::kIfToken;
  cond.token = 16;
  out = index_->insertIf(add, item(add), 9, cond);
  EXPECT_FALSE(out.stored);
  EXPECT_TRUE(out.existed);
  cond.token = 17;
  out = index_->insertIf(add, item(add), 9, cond);
  EXPECT_TRUE(out.stored);
  EXPECT_EQ(out.old, live);
  EXPECT_TRUE(out.ownedOld);
  EXPECT_EQ(state(add), kA | 1);

  cond.kind = Kind::kIfPresent;
  const CompressedRef absent = make(2, "d");
  out = index_->insertIf(absent, item(absent), 9, cond);
  EXPECT_FALSE(out.stored);
  EXPECT_FALSE(out.existed);
  EXPECT_EQ(state(absent), 1u);
}

TEST_F(AccessIndexTest, DeadItemCountsAsAbsentAndIsReplaced) {
  const CompressedRef old = publish(0, "e", 4);
  item(old)->expiry = 100;
  InsertCondition cond;
  cond.kind = InsertCondition::Kind::kIfAbsent;
  cond.live.now = 100;  // deadline reached
  const CompressedRef add = make(1, "e", "fresh");
  const InsertOutcome out = index_->insertIf(add, item(add), 4, cond);
  EXPECT_TRUE(out.stored);
  EXPECT_FALSE(out.existed);
  EXPECT_TRUE(out.oldDead);
  EXPECT_EQ(out.old, old);
  EXPECT_TRUE(out.ownedOld);
}

TEST_F(AccessIndexTest, PinLiveAndUnlinkDeadSplitByDeadline) {
  for (uint32_t i = 0; i < 6; ++i) {
    const CompressedRef r = publish(i, "t" + std::to_string(i), i);
    item(r)->expiry = (i % 2) ? 50 : 0;  // odd ones expire at 50
  }
  LiveCheck live;
  live.now = 60;
  std::vector<std::pair<CompressedRef, Item*>> pinned;
  EXPECT_EQ(index_->pinLive(0, index_->bucketCount(), live, pinned), 6u);
  ASSERT_EQ(pinned.size(), 3u);
  for (auto& [ref, it] : pinned) {
    EXPECT_EQ(it->expiry, 0u);
    EXPECT_EQ(state(ref), kA | 1);
    EXPECT_FALSE(it->releaseRef());
  }
  std::vector<std::pair<CompressedRef, Item*>> dead;
  index_->unlinkDead(0, index_->bucketCount(), live, dead);
  ASSERT_EQ(dead.size(), 3u);
  for (auto& [ref, it] : dead) {
    EXPECT_EQ(it->expiry, 50u);
    EXPECT_EQ(state(ref), 1u);  // unlinked, pinned by the reaper
    EXPECT_TRUE(it->releaseRef());
  }
  EXPECT_EQ(checkEntries(), 3u);
}

// ---- races -----------------------------------------------------------------

// A shared free list of the slab's slots, so that whichever thread becomes
// an item's owner can free it; a slot freed twice shows up twice.
class SlotPool {
 public:
  explicit SlotPool(uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) free_.push_back(i);
  }
  bool take(uint32_t& slot) {
    std::lock_guard<std::mutex> g(mu_);
    if (free_.empty()) return false;
    slot = free_.back();
    free_.pop_back();
    return true;
  }
  void give(uint32_t slot) {
    std::lock_guard<std::mutex> g(mu_);
    free_.push_back(slot);
  }
  std::vector<uint32_t> slots() const { return free_; }

 private:
  std::mutex mu_;
  std::vector<uint32_t> free_;
};

TEST_F(AccessIndexTest, ChurnOnOneCollidingChainFreesEverySlotOnce) {
  // Writers replace and remove keys that all share one hash, readers pin
  // them; whoever is told it owns an item frees its slot. At the end every
  // slot is either linked once or free once: none lost, none freed twice.
  constexpr int kWriters = 3, kReaders = 2, kOps = 4000;
  constexpr uint64_t kHash = 1;
  SlotPool pool(kSlots);
  // A lookup that pins an item a writer then removes may be left its owner.
  index_ = std::make_unique<AccessIndex>(2, 1, table_, nullptr, [&](CompressedRef r) { pool.give(r.slot(10)); });
  std::atomic<bool> stop{false};
  auto release = [&](CompressedRef ref) {
    if (item(ref)->releaseRef()) pool.give(ref.slot(10));
  };
  std::vector<std::thread> ts;
  for (int w = 0; w < kWriters; ++w) {
    ts.emplace_back([&, w] {
      for (int op = 0; op < kOps; ++op) {
        const std::string key = "w" + std::to_string(w) + "k" + std::to_string(op % 8);
        if (op % 3 == 2) {
          bool owned = false;
          const CompressedRef gone = index_->remove(key, kHash, owned);
          if (gone && owned) pool.give(gone.slot(10));
          continue;
        }
        // Some replaces rewrite in place (no slot changes hands) while
        // readers move the keys they find to the chain's head.
        if (op % 5 == 1 && index_->rewriteInPlace(
                               key, kHash, [](const Item& it, CompressedRef) { return it.valueSize() == 8; },
                               [](Item& it, CompressedRef) { std::memcpy(it.valueData(), "rewrite!", 8); })) {
          continue;
        }
        uint32_t slot;
        if (!pool.take(slot)) continue;
        const CompressedRef ref = make(slot, key, op % 2 ? std::string("rewrite!") : std::to_string(op));
        bool owned = false;
        const CompressedRef old = index_->insertOrReplace(ref, item(ref), kHash, owned);
        if (old && owned) pool.give(old.slot(10));
        release(ref);
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    ts.emplace_back([&, r] {
      for (uint64_t n = r; !stop.load(std::memory_order_relaxed); ++n) {
        const std::string key = "w" + std::to_string(n % kWriters) + "k" + std::to_string(n % 8);
        Item* it = nullptr;
        const CompressedRef ref = index_->acquire(key, kHash, it);
        if (!ref) continue;
        EXPECT_EQ(it->key(), key);  // never another key's item
        release(ref);
      }
    });
  }
  for (int w = 0; w < kWriters; ++w) ts[w].join();
  stop = true;
  for (size_t t = kWriters; t < ts.size(); ++t) ts[t].join();

  std::string problems;
  const uint64_t linked = checkEntries(&problems);
  EXPECT_EQ(problems.find("linked twice"), std::string::npos) << problems;
  std::vector<uint32_t> free = pool.slots();
  std::set<uint32_t> distinct(free.begin(), free.end());
  EXPECT_EQ(distinct.size(), free.size()) << "a slot was freed twice";
  EXPECT_EQ(linked + free.size(), kSlots) << "a slot was lost";
  // Every linked item is published and unpinned, and not in the free list.
  std::vector<std::pair<CompressedRef, Item*>> all;
  index_->pinLive(0, index_->bucketCount(), LiveCheck{}, all);
  EXPECT_EQ(all.size(), linked);
  for (auto& [ref, it] : all) {
    EXPECT_EQ(state(ref) & ~Item::kHitMask, kA | 1);
    EXPECT_EQ(distinct.count(ref.slot(10)), 0u);
    EXPECT_FALSE(it->releaseRef());
  }
}

TEST_F(AccessIndexTest, RacingRemovesOfOneKeyUnlinkItOnce) {
  constexpr int kThreads = 4, kRounds = 1000;
  for (int round = 0; round < kRounds; ++round) {
    const CompressedRef ref = publish(0, "same", 5);
    std::atomic<int> found{0}, owners{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) {
      ts.emplace_back([&] {
        bool owned = false;
        if (index_->remove("same", 5, owned)) ++found;
        owners += owned;
      });
    }
    for (auto& t : ts) t.join();
    ASSERT_EQ(found.load(), 1) << "round " << round;
    ASSERT_EQ(owners.load(), 1) << "round " << round;
    ASSERT_EQ(state(ref), kX);
  }
}

TEST_F(AccessIndexTest, MoveRacingRemoveNeverLeavesTwoCopiesOrNone) {
  // The mover swaps in a copy while a remover deletes the key: either the
  // remove took the original (the swap fails, the key is gone) or the copy
  // (the swap won first); the original is owned by finishMove either way.
  constexpr int kRounds = 1000;
  for (int round = 0; round < kRounds; ++round) {
    const CompressedRef src = publish(0, "mv", 6);
    ASSERT_TRUE(item(src)->tryMarkMoving(false));
    const CompressedRef copy = make(1, "mv");
    bool swapped = false;
    CompressedRef removed;
    bool removedOwned = false;
    std::thread mover([&] { swapped = index_->replaceExact(src, copy, item(copy), 6); });
    std::thread remover([&] { removed = index_->remove("mv", 6, removedOwned); });
    mover.join();
    remover.join();
    ASSERT_TRUE(item(src)->finishMove()) << "round " << round;
    if (swapped) {
      ASSERT_EQ(removed, copy);
      ASSERT_FALSE(removedOwned);  // the mover still pins its copy
      ASSERT_TRUE(item(copy)->releaseRef());
    } else {
      ASSERT_EQ(removed, src);
      ASSERT_FALSE(removedOwned);
      ASSERT_TRUE(item(copy)->releaseRef());  // never published
    }
    ASSERT_EQ(lookup("mv", 6), "<absent>");
    ASSERT_EQ(checkEntries(), 0u);
  }
}

// ---- debug assertions ------------------------------------------------------

TEST_F(AccessIndexTest, LookupsPassItemsOfAnotherTagAndUnpinWhatTheyGiveUp) {
  // One bucket (hash & 3 == 1), three keys: "x" and "y" share a tag, "z"
  // has another. Every lookup, hit or miss, leaves each item as it was:
  // a lock-free lookup that pinned the wrong key's item gave the pin back.
  const uint64_t tagA = uint64_t{0xA1} << 56, tagB = uint64_t{0xB2} << 56;
  const CompressedRef x = publish(0, "x", tagA | 1, "vx");
  const CompressedRef y = publish(1, "y", tagA | 1, "vy");
  const CompressedRef z = publish(2, "z", tagB | 1, "vz");
  EXPECT_EQ(item(x)->indexTag(), 0xA1);
  EXPECT_EQ(item(z)->indexTag(), 0xB2);
  for (int round = 0; round < 20; ++round) {  // past the move-to-front period: chain orders change
    EXPECT_EQ(lookup("x", tagA | 1), "vx");
    EXPECT_EQ(lookup("y", tagA | 1), "vy");
    EXPECT_EQ(lookup("z", tagB | 1), "vz");
    EXPECT_EQ(lookup("w", tagA | 1), "<absent>");  // a same-tag miss
    for (CompressedRef r : {x, y, z}) EXPECT_EQ(state(r) & ~Item::kHitMask, kA) << "round " << round;
  }
  EXPECT_EQ(index_->openReadSections(), 0u);
}

TEST_F(AccessIndexTest, CheckNamesALinkedItemWithAWrongTag) {
  const uint64_t hash = (uint64_t{0x5C} << 56) | 2;
  const CompressedRef ref = publish(0, "k", hash);
  std::string out;
  index_->check(
      +[](std::string_view) -> uint64_t { return (uint64_t{0x5C} << 56) | 2; }, out);
  EXPECT_EQ(out, "");
  item(ref)->setIndexTag(0x5D);
  index_->check(
      +[](std::string_view) -> uint64_t { return (uint64_t{0x5C} << 56) | 2; }, out);
  EXPECT_NE(out.find("wrong tag"), std::string::npos) << out;
}

TEST(IndexReadersTest, AGracePeriodWaitsForTheSectionsOpenWhenItBegan) {
  IndexReaders readers;
  std::atomic<int> phase{0};
  std::thread reader([&] {
    IndexReaders::Section s(readers);
    ASSERT_TRUE(s);
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();
    s.leave();
  });
  while (phase.load() != 1) std::this_thread::yield();
  EXPECT_EQ(readers.openSections(), 1u);
  std::atomic<bool> waited{false};
  std::thread waiter([&] {
    readers.waitForReaders();
    waited = true;
  });
  // The reader's section is open and stays open: the wait cannot end.
  for (int i = 0; i < 200; ++i) {
    std::this_thread::yield();
    ASSERT_FALSE(waited.load()) << "the grace period ended while a section was open";
  }
  phase = 2;
  waiter.join();
  EXPECT_TRUE(waited.load());
  reader.join();
  readers.waitForReaders();  // none open: returns at once
  EXPECT_EQ(readers.openSections(), 0u);
}

TEST_F(AccessIndexTest, StripeLockUnderAClassLockFiresDcheck) {
  if (!dcheck::kOn) GTEST_SKIP() << "TC_DCHECK is compiled out in this build type (Release/RelWithDebInfo)";
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  publish(0, "k", 0);
  EXPECT_DEATH(
      {
        ClassMutex classLock;
        std::lock_guard<ClassMutex> g(classLock);
        lookup("k", 0);
      },
      "TC_DCHECK failed: dcheck::classLocksHeldByThisThread\\(\\) == 0");
}

}  // namespace
}  // namespace tiercache
