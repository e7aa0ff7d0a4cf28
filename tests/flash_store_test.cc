// FlashStore on real files: read-back across region rollover and reclaim,
// hot-item reinsertion, tag collisions, corruption, both I/O engines,
// recovery (clean and unclean), and a multi-threaded stress.
#include "flash/flash_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "flash_test_util.h"
#include "fs_test_util.h"

namespace tiercache {
namespace {

using test::flashTestParent;
using test::flashValue;
using test::flashValueVersion;
using test::smallFlashConfig;
using test::TempDir;

std::string fkey(int i) { return "key-" + std::to_string(i); }

void flipByte(const std::string& path, uint64_t offset);

class FlashStoreEngines : public ::testing::TestWithParam<IoEngineKind> {};

TEST_P(FlashStoreEngines, ValuesReadBackAcrossRolloverAndReclaim) {
  TempDir dir(flashTestParent());
  FlashStoreConfig c = smallFlashConfig(dir.file("flash"));
  c.io_engine = GetParam();
  c.reinsert_hits = false;
  FlashStore s(c);
  EXPECT_STREQ(s.engineName(), GetParam() == IoEngineKind::kThreads ? "threads" : "io_uring");
  // About 600 bytes an entry: 100 a region, 16 regions, 4000 items wrap the ring twice.
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(s.insert(fkey(i), flashValue(fkey(i), 1, 500 + i % 100), i, 0), FlashStore::InsertResult::kStored);
  }
  EXPECT_GT(s.counters().regions_reclaimed.load(), 16u);
  int present = 0;
  for (int i = 0; i < n; ++i) {
    auto v = s.lookup(fkey(i));
    if (!v) continue;
    ++present;
    EXPECT_EQ(v->value, flashValue(fkey(i), 1, 500 + i % 100)) << fkey(i);
    EXPECT_EQ(v->flags, static_cast<uint32_t>(i));
  }
  // The newest ~15 regions stay, and nothing older.
  EXPECT_GT(present, 1300);
  EXPECT_LT(present, 1700);
  for (int i = n - 1000; i < n; ++i) EXPECT_TRUE(s.lookup(fkey(i))) << fkey(i);
  EXPECT_FALSE(s.lookup(fkey(0)));
  EXPECT_EQ(s.counters().checksum_failures.load(), 0u);
  EXPECT_EQ(s.counters().key_mismatches.load(), 0u);
  // Region writes only: bytes written is whole 4 KiB blocks of full regions.
  EXPECT_GE(s.counters().bytes_written.load(), s.counters().regions_reclaimed.load() * (60u << 10));
}

TEST_P(FlashStoreEngines, LookupManyReadsTheBatchInOneSubmission) {
  TempDir dir(flashTestParent());
  FlashStoreConfig c = smallFlashConfig(dir.file("flash"));
  c.io_engine = GetParam();
  const std::string path = c.path;
  FlashStore s(c);
  // ~100 entries a region: key-0..key-199 on the device, key-250.. in the active buffer.
  for (int i = 0; i < 260; ++i)
    ASSERT_EQ(s.insert(fkey(i), flashValue(fkey(i), 2, 500), i, 77 + i), FlashStore::InsertResult::kStored);
  flipByte(path, 4096 + FlashStore::kRegionHeader + FlashStore::kEntryHeader + 100);  // key-0's value
  const std::vector<std::string> owned = {fkey(0), fkey(5), fkey(150), "absent", fkey(99), fkey(259), fkey(120)};
  const std::vector<std::string_view> keys(owned.begin(), owned.end());
  std::vector<std::optional<FlashItem>> out(keys.size());
  std::vector<FlashLoc> where(keys.size());
  const uint64_t reads = s.counters().reads.load(), hits = s.counters().hits.load(),
                 misses = s.counters().misses.load();
  s.lookupMany(keys, out, where);
  EXPECT_EQ(s.counters().read_batches.load(), 1u);
  EXPECT_EQ(s.counters().reads.load() - reads, 5u);  // key-0, 5, 150, 99, 120; key-259 is in DRAM
  EXPECT_EQ(s.counters().hits.load() - hits, 5u);
  EXPECT_EQ(s.counters().misses.load() - misses, 2u);  // corrupted key-0, absent
  EXPECT_EQ(s.counters().checksum_failures.load(), 1u);
  EXPECT_FALSE(out[0]);
  EXPECT_FALSE(out[3]);
  for (size_t k : {1, 2, 4, 5, 6}) {
    const int i = std::stoi(owned[k].substr(4));
    ASSERT_TRUE(out[k]) << owned[k];
    EXPECT_EQ(out[k]->value, flashValue(owned[k], 2, 500)) << owned[k];
    EXPECT_EQ(out[k]->flags, static_cast<uint32_t>(i));
    EXPECT_EQ(out[k]->expiry, static_cast<uint32_t>(77 + i));
    EXPECT_TRUE(s.removeIfAt(owned[k], where[k])) << owned[k];  // the location is the entry's
  }
  std::vector<std::optional<FlashItem>> tooFew(2);
  EXPECT_THROW(s.lookupMany(keys, tooFew, where), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Engines, FlashStoreEngines, ::testing::Values(IoEngineKind::kUring, IoEngineKind::kThreads),
                         [](const auto& info) { return info.param == IoEngineKind::kUring ? "io_uring" : "threads"; });

TEST(FlashStore, ReplaceAndRemoveTakeEffect) {
  TempDir dir(flashTestParent());
  FlashStore s(smallFlashConfig(dir.file("flash")));
  s.insert("a", flashValue("a", 1, 100));
  s.insert("a", flashValue("a", 2, 3000));
  s.insert("b", flashValue("b", 1, 100));
  EXPECT_EQ(s.lookup("a")->value, flashValue("a", 2, 3000));
  EXPECT_TRUE(s.remove("b"));
  EXPECT_FALSE(s.remove("b"));
  EXPECT_FALSE(s.lookup("b"));
  EXPECT_EQ(s.counters().removes.load(), 1u);
  EXPECT_EQ(s.items(), 1u);
}

TEST(FlashStore, HitItemsAreReinsertedWhenTheirRegionIsReclaimed) {
  TempDir dir(flashTestParent());
  FlashStore s(smallFlashConfig(dir.file("flash")));
  for (int i = 0; i < 50; ++i) s.insert(fkey(i), flashValue(fkey(i), 7, 500));
  for (int i = 0; i < 50; i += 5) ASSERT_TRUE(s.lookup(fkey(i)));  // hot: every fifth
  // Push the first region through the ring twice over.
  for (int i = 1000; i < 4000; ++i) s.insert(fkey(i), flashValue(fkey(i), 1, 500));
  EXPECT_GE(s.counters().reinserted.load(), 10u);
  for (int i = 0; i < 50; ++i) {
    auto v = s.lookup(fkey(i));
    if (i % 5 == 0) {
      ASSERT_TRUE(v) << fkey(i);
      EXPECT_EQ(v->value, flashValue(fkey(i), 7, 500));
    } else {
      EXPECT_FALSE(v) << fkey(i);
    }
  }
}

TEST(FlashStore, LruRegionEvictionKeepsReadRegions) {
  TempDir dir(flashTestParent());
  FlashStoreConfig c = smallFlashConfig(dir.file("flash"));
  c.region_eviction = RegionEviction::kLru;
  c.reinsert_hits = false;
  FlashStore s(c);
  for (int i = 0; i < 100; ++i) s.insert(fkey(i), flashValue(fkey(i), 1, 500));  // region 0
  for (int i = 1000; i < 4000; ++i) {
    s.insert(fkey(i), flashValue(fkey(i), 1, 500));
    if (i % 50 == 0) ASSERT_TRUE(s.lookup(fkey(3)));  // keeps region 0 recent
  }
  EXPECT_GT(s.counters().regions_reclaimed.load(), 0u);
  EXPECT_EQ(s.lookup(fkey(3))->value, flashValue(fkey(3), 1, 500));
}

// Region eviction by recency reclaims regions out of write order: a region
// holding a key's tombstone or newer value can go while an older region
// holding the key's older value stays (read often). Neither the remove nor
// the replace may be undone by the next open. (Two regions are kept read:
// the next open reuses the oldest one first, as recency is not recorded.)
TEST(FlashStore, LruReclaimOutOfOrderNeverBringsBackRemovedOrReplacedValues) {
  for (const bool reinsert : {false, true}) {
    TempDir dir(flashTestParent());
    FlashStoreConfig c = smallFlashConfig(dir.file("flash"));
    c.region_eviction = RegionEviction::kLru;
    c.reinsert_hits = reinsert;
    auto oldKey = [](int i) { return "old-" + std::to_string(i); };
    {
      FlashStore s(c);
      for (int i = 0; i < 116; ++i) s.insert(fkey(200000 + i), flashValue(fkey(200000 + i), 1, 500));  // region 0
      for (int i = 0; i < 50; ++i) {
        s.insert(oldKey(i), flashValue(oldKey(i), 1, 500));
        s.insert(fkey(100000 + i), flashValue(fkey(100000 + i), 1, 500));  // the hot neighbours
      }
      for (int i = 0; i < 150; ++i) s.insert(fkey(i), flashValue(fkey(i), 1, 500));  // on to the next region
      for (int i = 0; i < 25; ++i) ASSERT_TRUE(s.remove(oldKey(i)));
      for (int i = 25; i < 50; ++i) s.insert(oldKey(i), flashValue(oldKey(i), 2, 500));
      for (int i = 150; s.counters().regions_reclaimed.load() < 40; ++i) {
        ASSERT_LT(i, 20000);
        s.insert(fkey(i), flashValue(fkey(i), 1, 500));
        if (i % 20 == 0) {  // keeps the first two regions recent
          ASSERT_TRUE(s.lookup(fkey(200003)));
          ASSERT_TRUE(s.lookup(fkey(100003)));
        }
      }
      for (int i = 0; i < 50; ++i) {
        const auto v = s.lookup(oldKey(i));
        if (v) EXPECT_EQ(v->value, flashValue(oldKey(i), 2, 500)) << oldKey(i);
      }
    }
    FlashStore s(c);
    ASSERT_TRUE(s.lookup(fkey(100003))) << "the old values' region was reclaimed: the test proves nothing";
    for (int i = 0; i < 50; ++i) {
      const auto v = s.lookup(oldKey(i));
      if (i < 25) {
        EXPECT_FALSE(v) << oldKey(i) << " was removed, came back (reinsert " << reinsert << ")";
      } else if (v) {
        EXPECT_EQ(v->value, flashValue(oldKey(i), 2, 500))
            << oldKey(i) << " came back older (reinsert " << reinsert << ")";
      }
    }
    EXPECT_EQ(s.counters().checksum_failures.load(), 0u);
  }
}

uint64_t oneHashForAll(std::string_view) { return 0x1234567800000042ull; }

TEST(FlashStore, KeysWithOneTagAreNeverConfused) {
  TempDir dir(flashTestParent());
  FlashStore s(smallFlashConfig(dir.file("flash")), &oneHashForAll);
  s.insert("alpha", flashValue("alpha", 1, 200));
  s.insert("beta", flashValue("beta", 1, 200));  // same bucket, same tag: replaces alpha's entry
  EXPECT_FALSE(s.lookup("alpha"));
  EXPECT_EQ(s.counters().key_mismatches.load(), 1u);
  EXPECT_EQ(s.lookup("beta")->value, flashValue("beta", 1, 200));
  // Once on the device too.
  for (int i = 0; i < 300; ++i) s.insert("gamma", flashValue("gamma", i, 500));
  EXPECT_FALSE(s.lookup("beta"));
  EXPECT_EQ(s.lookup("gamma")->value, flashValue("gamma", 299, 500));
}

// "crowd-*" and "late" share one index bucket (distinct tags); every other
// key goes to an odd bucket.
uint64_t crowdedHash(std::string_view k) {
  const uint64_t h = std::hash<std::string_view>{}(k);
  if (k.starts_with("crowd-") || k == "late") return (h & 0xffffffff00000000ull) | 0x42;
  return h | 1;
}

// An insert the index has no room for is refused before anything is
// logged: a logged entry that no index slot names would take no tombstone
// from a later remove, and would come back at the next open once its
// bucket had room again.
TEST(FlashStore, AnInsertRefusedForAFullBucketNeverComesBack) {
  TempDir dir(flashTestParent());
  FlashStoreConfig c = smallFlashConfig(dir.file("flash"));
  c.reinsert_hits = false;
  {
    FlashStore s(c, &crowdedHash);
    for (uint32_t i = 0; i < FlashIndex::kSlots; ++i) {
      ASSERT_EQ(s.insert("crowd-" + std::to_string(i), flashValue("crowd", i, 500)), FlashStore::InsertResult::kStored);
    }
    for (int i = 0; i < 200; ++i) s.insert(fkey(i), flashValue(fkey(i), 1, 500));  // on to later regions
    const uint64_t writtenBefore = s.counters().bytes_written.load();
    const uint64_t insertsBefore = s.counters().inserts.load();
    EXPECT_EQ(s.insert("late", flashValue("late", 1, 500)), FlashStore::InsertResult::kIndexFull);
    EXPECT_EQ(s.counters().inserts.load(), insertsBefore);
    EXPECT_EQ(s.counters().rejects_other.load(), 1u);
    // The crowd's region is reclaimed (its bucket empties), "late"'s region is not.
    for (int i = 200; s.counters().regions_reclaimed.load() == 0; ++i) {
      ASSERT_LT(i, 2000);
      s.insert(fkey(i), flashValue(fkey(i), 1, 500));
    }
    EXPECT_GT(s.counters().bytes_written.load(), writtenBefore);
    EXPECT_FALSE(s.lookup("late"));
  }
  FlashStore s(c, &crowdedHash);
  EXPECT_FALSE(s.lookup("late")) << "an entry refused at insert was recovered";
  EXPECT_EQ(s.lookup(fkey(1000))->value, flashValue(fkey(1000), 1, 500));
}

// After a restart the ring goes on at the region after the newest, as at
// any reuse: its old entries leave the index before its buffer is filled,
// so no read is led into the new buffer (where it used to be counted as a
// corrupted entry).
TEST(FlashStore, ARestartDropsTheEntriesOfTheRegionItReusesFirst) {
  TempDir dir(flashTestParent());
  FlashStoreConfig c = smallFlashConfig(dir.file("flash"));
  int n = 0;
  {
    FlashStore s(c);
    for (; s.counters().regions_reclaimed.load() == 0; ++n) {
      ASSERT_LT(n, 3000);
      s.insert(fkey(n), flashValue(fkey(n), 1, 500));
    }
  }
  FlashStore s(c);
  EXPECT_EQ(s.counters().recovered.load(), s.items());
  // Fill the reused region so that its buffer holds entries where the old ones were.
  for (int i = 0; i < 100; ++i) s.insert("new-" + std::to_string(i), flashValue("new", i, 500));
  uint64_t found = 0;
  for (int i = 0; i < n; ++i) {
    if (auto v = s.lookup(fkey(i))) {
      EXPECT_EQ(v->value, flashValue(fkey(i), 1, 500));
      ++found;
    }
  }
  EXPECT_EQ(found, s.counters().recovered.load());
  EXPECT_GT(found, static_cast<uint64_t>(n) / 2);
  EXPECT_EQ(s.counters().checksum_failures.load(), 0u);
  EXPECT_EQ(s.counters().key_mismatches.load(), 0u);
}

// Flips a byte of the file through the page cache (a direct read sees it:
// the kernel writes dirty pages back before a direct read).
void flipByte(const std::string& path, uint64_t offset) {
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  unsigned char b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, static_cast<off_t>(offset)), 1);
  b ^= 0x5a;
  ASSERT_EQ(::pwrite(fd, &b, 1, static_cast<off_t>(offset)), 1);
  ::fsync(fd);
  ::close(fd);
}

TEST(FlashStore, CorruptedEntryIsDroppedAndCountedNeverReturned) {
  TempDir dir(flashTestParent());
  const std::string path = dir.file("flash");
  FlashStore s(smallFlashConfig(path));
  // Region 0 holds key-0 first: header, then the key and value.
  for (int i = 0; i < 300; ++i) s.insert(fkey(i), flashValue(fkey(i), 1, 500));
  ASSERT_TRUE(s.lookup(fkey(1)));
  flipByte(path, 4096 + FlashStore::kRegionHeader + FlashStore::kEntryHeader + 100);  // key-0's value
  EXPECT_FALSE(s.lookup(fkey(0)));
  EXPECT_EQ(s.counters().checksum_failures.load(), 1u);
  EXPECT_FALSE(s.lookup(fkey(0)));  // dropped from the index: no second read, no second count
  EXPECT_EQ(s.counters().checksum_failures.load(), 1u);
  EXPECT_EQ(s.lookup(fkey(1))->value, flashValue(fkey(1), 1, 500));
}

TEST(FlashStore, RecoversAfterCleanClose) {
  TempDir dir(flashTestParent());
  const FlashStoreConfig c = smallFlashConfig(dir.file("flash"));
  {
    FlashStore s(c);
    for (int i = 0; i < 500; ++i) s.insert(fkey(i), flashValue(fkey(i), 1, 300));
    for (int i = 0; i < 500; i += 10) s.insert(fkey(i), flashValue(fkey(i), 2, 200));
    for (int i = 5; i < 500; i += 10) s.remove(fkey(i));
  }
  FlashStore s(c);
  EXPECT_NE(s.openReport().find("(clean shutdown)"), std::string::npos) << s.openReport();
  for (int i = 0; i < 500; ++i) {
    auto v = s.lookup(fkey(i));
    if (i % 10 == 5) {
      EXPECT_FALSE(v) << fkey(i);
    } else {
      ASSERT_TRUE(v) << fkey(i);
      EXPECT_EQ(v->value, flashValue(fkey(i), i % 10 == 0 ? 2 : 1, i % 10 == 0 ? 200 : 300));
    }
  }
  EXPECT_EQ(s.counters().recovered.load(), 450u);
  // New appends go on after the recovered log and win over it after another restart.
  s.insert(fkey(0), flashValue(fkey(0), 3, 100));
  s.close();
  FlashStore again(c);
  EXPECT_EQ(again.lookup(fkey(0))->value, flashValue(fkey(0), 3, 100));
}

TEST(FlashStore, RecoversFlushedEntriesWithoutClose) {
  TempDir dir(flashTestParent());
  const FlashStoreConfig c = smallFlashConfig(dir.file("flash"));
  FlashStoreConfig copy = c;
  copy.path = dir.file("copy");
  {
    FlashStore s(c);
    for (int i = 0; i < 1000; ++i) s.insert(fkey(i), flashValue(fkey(i), 1, 500));
    s.flush();
    s.insert("unflushed", "x");
    // A copy of the device as a crash leaves it: dirty, the buffer's tail not written.
    ASSERT_EQ(std::system(("cp " + c.path + " " + copy.path).c_str()), 0);
  }
  FlashStore s(copy);
  EXPECT_NE(s.openReport().find("(unclean shutdown)"), std::string::npos) << s.openReport();
  int present = 0;
  for (int i = 0; i < 1000; ++i) {
    if (auto v = s.lookup(fkey(i))) {
      ++present;
      EXPECT_EQ(v->value, flashValue(fkey(i), 1, 500));
    }
  }
  EXPECT_EQ(present, 1000);
  EXPECT_FALSE(s.lookup("unflushed"));
}

// A sealed region buffer is written after the append that sealed it, with
// the append lock released, so a kill can come after the buffer was
// reused for the next region's appends and before the sealed one reached
// the device. Both buffers are in <path>.wbuf: recovery writes each to
// its region (older first) and finds every entry of both.
TEST(FlashStore, BothWriteBuffersAreReplayedAfterAKill) {
  TempDir dir(flashTestParent());
  const FlashStoreConfig c = smallFlashConfig(dir.file("flash"));
  FlashStoreConfig copy = c;
  copy.path = dir.file("copy");
  {
    FlashStore s(c);
    // About 110 entries of 500 bytes fill a 64 KiB region: region 0 is
    // sealed, region 1 active and partly full.
    for (int i = 0; i < 200; ++i)
      ASSERT_EQ(s.insert(fkey(i), flashValue(fkey(i), 1, 500)), FlashStore::InsertResult::kStored);
    ASSERT_EQ(s.counters().regions_reclaimed.load(), 0u);
    // What a kill leaves: the device without region 0 (its write not
    // started), and both buffers in the page cache.
    ASSERT_EQ(std::system(("cp " + c.path + " " + copy.path).c_str()), 0);
    ASSERT_EQ(std::system(("cp " + c.path + ".wbuf " + copy.path + ".wbuf").c_str()), 0);
    const int fd = ::open(copy.path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    const std::string zeroes(c.region_size, '\0');
    ASSERT_EQ(::pwrite(fd, zeroes.data(), zeroes.size(), 4096), static_cast<ssize_t>(zeroes.size()));
    ::close(fd);
  }
  FlashStore s(copy);
  EXPECT_NE(s.openReport().find("(unclean shutdown"), std::string::npos) << s.openReport();
  EXPECT_NE(s.openReport().find("from the write buffer"), std::string::npos) << s.openReport();
  for (int i = 0; i < 200; ++i) {
    auto v = s.lookup(fkey(i));
    ASSERT_TRUE(v) << fkey(i) << ": " << s.openReport();
    EXPECT_EQ(v->value, flashValue(fkey(i), 1, 500));
  }
}

TEST(FlashStore, ChangedGeometryFormatsInsteadOfMisreading) {
  TempDir dir(flashTestParent());
  FlashStoreConfig c = smallFlashConfig(dir.file("flash"));
  {
    FlashStore s(c);
    s.insert("k", "v");
  }
  c.region_size = 128u << 10;
  c.size = 4096 + 8 * c.region_size;
  FlashStore s(c);
  EXPECT_EQ(s.openReport(), "formatted (the store's geometry changed)");
  EXPECT_FALSE(s.lookup("k"));
}

TEST(FlashStore, UringRefusedFallsBackToThreadsWithAWarning) {
  TempDir dir(flashTestParent());
  test::WarningCapture warnings;
  setUringRefusedForTesting(true);
  FlashStoreConfig c = smallFlashConfig(dir.file("flash"));
  std::unique_ptr<FlashStore> s;
  EXPECT_NO_THROW(s = std::make_unique<FlashStore>(c));
  c.io_engine = IoEngineKind::kUring;
  c.path = dir.file("other");
  EXPECT_THROW(FlashStore{c}, std::runtime_error);
  setUringRefusedForTesting(false);
  EXPECT_STREQ(s->engineName(), "threads");
  ASSERT_FALSE(warnings.warnings.empty());
  EXPECT_NE(warnings.warnings[0].find("io_uring unavailable"), std::string::npos) << warnings.warnings[0];
  s->insert("k", "v");
  EXPECT_EQ(s->lookup("k")->value, "v");
}

TEST(FlashStore, RefusedODirectIsSaidOutLoud) {
  TempDir dir(flashTestParent());
  test::WarningCapture warnings;
  // As on a file system without O_DIRECT (tmpfs before Linux 6.6).
  setODirectRefusedForTesting(true);
  FlashStore s(smallFlashConfig(dir.file("flash")));
  setODirectRefusedForTesting(false);
  s.insert("k", "v");
  EXPECT_EQ(s.lookup("k")->value, "v");
  EXPECT_FALSE(s.directIo());
  ASSERT_FALSE(warnings.warnings.empty());
  EXPECT_NE(warnings.warnings[0].find("refuses O_DIRECT"), std::string::npos) << warnings.warnings[0];
}

TEST(FlashStore, BadGeometryIsRefused) {
  TempDir dir(flashTestParent());
  FlashStoreConfig c = smallFlashConfig(dir.file("flash"));
  c.region_size = 5000;
  EXPECT_THROW(FlashStore{c}, std::runtime_error);
  c = smallFlashConfig(dir.file("flash"), 1);
  EXPECT_THROW(FlashStore{c}, std::runtime_error);
}

// Threads own disjoint keys and write versions 1, 2, ...; a read must give
// the owner's latest version or miss (evicted, removed), never another.
TEST(FlashStore, ConcurrentSetsGetsRemovesStayConsistent) {
  TempDir dir(flashTestParent());
  FlashStoreConfig c = smallFlashConfig(dir.file("flash"), 32);
  FlashStore s(c);
  constexpr int kThreads = 4, kKeys = 300, kOps = 6000;
  std::atomic<int> bad{0};
  std::vector<std::map<int, int64_t>> latest(kThreads);  // key -> version, -1 removed
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint64_t x = 88172645463325252ull + t;
      for (int op = 0; op < kOps; ++op) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const int k = static_cast<int>(x % kKeys);
        const std::string key = "t" + std::to_string(t) + "-" + std::to_string(k);
        const int what = static_cast<int>((x >> 20) % 10);
        if (what < 4) {
          const int64_t v = op + 1;
          if (s.insert(key, flashValue(key, v, 100 + (x >> 32) % 900)) == FlashStore::InsertResult::kStored) {
            latest[t][k] = v;
          }
        } else if (what < 5) {
          s.remove(key);
          latest[t][k] = -1;
        } else {
          auto v = s.lookup(key);
          if (!v) continue;
          const int64_t version = flashValueVersion(key, v->value);
          if (version < 0 || latest[t].count(k) == 0 || version != latest[t][k]) bad.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  for (int t = 0; t < kThreads; ++t) {
    for (const auto& [k, version] : latest[t]) {
      const std::string key = "t" + std::to_string(t) + "-" + std::to_string(k);
      auto v = s.lookup(key);
      if (version < 0) {
        EXPECT_FALSE(v) << key;
      } else if (v) {
        EXPECT_EQ(flashValueVersion(key, v->value), version) << key;
      }
    }
  }
  EXPECT_EQ(s.counters().checksum_failures.load(), 0u);
}

// Readers chase the keys a ring's length back, whose region the writers
// are about to reclaim and reuse: a read that took its location before the
// reuse reads the region's next contents. That is a miss (read again), not
// a checksum failure, and never another key's value. (Before the fix, such
// reads were counted as corruption and dropped the index entry they named.)
TEST(FlashStore, ReadsRacingRegionReuseAreNotCountedAsCorruption) {
  TempDir dir(flashTestParent());
  FlashStoreConfig c = smallFlashConfig(dir.file("flash"), 4);  // 4 regions of ~170 entries: reuse is constant
  c.reinsert_hits = true;                                       // reinserts race readers too
  FlashStore s(c);
  constexpr int kWritten = 100000;
  std::atomic<int> next{0};
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::atomic<uint64_t> hits{0};
  std::thread writer([&] {
    for (int i = 0; i < kWritten; ++i) {
      s.insert(fkey(i), flashValue(fkey(i), 1, 200 + i % 300));
      next.store(i + 1, std::memory_order_release);
    }
    done = true;
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      uint32_t x = 77 + t;
      while (!done.load()) {
        const int n = next.load(std::memory_order_acquire);
        if (n < 800) continue;
        x = x * 1103515245 + 12345;
        const int k = n - 1 - 400 - static_cast<int>(x % 400);  // the oldest regions' keys
        auto v = s.lookup(fkey(k));
        if (!v) continue;
        hits.fetch_add(1, std::memory_order_relaxed);
        if (flashValueVersion(fkey(k), v->value) != 1) wrong.fetch_add(1);
      }
    });
  }
  writer.join();
  for (auto& r : readers) r.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(hits.load(), 0u);
  EXPECT_EQ(s.counters().checksum_failures.load(), 0u) << "reads that raced a reuse were counted as corruption";
}

}  // namespace
}  // namespace tiercache
