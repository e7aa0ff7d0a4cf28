// PersistentPmemTier: a libpmemobj pool file whose slab area, slab records
// and clean flag survive the process. Each behaviour runs on tmpfs
// (/dev/shm) and on a disk file system (a temp dir under TMPDIR or /tmp).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tiers/memory_tier.h"
#include "tiers/persistent_pmem_tier.h"
#include "tiers/pmem_file_tier.h"
#include "tiers/pmemobj_pool.h"
#include "fs_test_util.h"
#include "persistent_test_util.h"

namespace tiercache {
namespace {

using test::TempDir;
using test::WarningCapture;
using test::dataFile;

using pmem_layout::PoolHeader;
using pmem_layout::SlabRecordSlot;

using test::kPmemTestSlab;
using test::pmemTierConfig;
constexpr uint64_t kTierSize = 4 * kMiB;


std::string diskParent() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

PersistentOpenOptions fp(uint64_t fingerprint, bool rebuild = false) {
  PersistentOpenOptions o;
  o.fingerprint = fingerprint;
  o.rebuildOnMismatch = rebuild;
  return o;
}

std::string readFile(const std::string& path, uint64_t offset, size_t len) {
  std::string out(len, '\0');
  int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::pread(fd, out.data(), len, static_cast<off_t>(offset)), static_cast<ssize_t>(len));
  ::close(fd);
  return out;
}

void writeFile(const std::string& path, uint64_t offset, const void* data, size_t len) {
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, data, len, static_cast<off_t>(offset)), static_cast<ssize_t>(len));
  ::close(fd);
}

uint64_t fileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// A byte pattern that differs per position and per seed.
void fillPattern(std::byte* p, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    p[i] = static_cast<std::byte>(x);
  }
}

bool allZero(const std::byte* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != std::byte{0}) return false;
  }
  return true;
}

// The open must fail with a TierError naming the tier, the file and `reason`.
void expectRefused(const TierConfig& cfg, const PersistentOpenOptions& o, const std::string& reason) {
  try {
    PersistentPmemTier tier(cfg, kPmemTestSlab, o);
    ADD_FAILURE() << "opened, expected refusal: " << reason << " (report: " << tier.openReport() << ")";
  } catch (const TierError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.tier(), cfg.name);
    EXPECT_NE(msg.find(reason), std::string::npos) << msg;
    if (!cfg.path.empty()) EXPECT_NE(msg.find(cfg.path), std::string::npos) << msg;
  }
}

// Where the header and the records are in the file, found through the tier,
// and the header's bytes as the file holds them.
struct PoolMap {
  uint64_t header = 0;
  uint64_t records = 0;
  PoolHeader hdr {};
};

PoolMap mapOf(const TierConfig& cfg, uint64_t fingerprint) {
  PoolMap m;
  {
    PersistentPmemTier tier(cfg, kPmemTestSlab, fp(fingerprint));
    m.header = tier.headerOffset();
    m.records = tier.recordsOffset();
    tier.setClean(true);
  }
  const std::string bytes = readFile(cfg.path, m.header, sizeof(PoolHeader));
  std::memcpy(&m.hdr, bytes.data(), sizeof m.hdr);
  return m;
}

class PersistentTierMedium : public ::testing::TestWithParam<std::string> {
 protected:
  PersistentTierMedium() : dir_(GetParam() == "tmpfs" ? std::string("/dev/shm") : diskParent()) {}
  std::string pool() const { return dir_.file("tier.pool"); }
  TempDir dir_;
};

TEST_P(PersistentTierMedium, CreatesAPoolFileWithMode0600) {
  PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(7));
  EXPECT_EQ(tier.openReport(), "created");
  EXPECT_FALSE(tier.recovered());
  EXPECT_FALSE(tier.wasCleanShutdown());
  EXPECT_TRUE(tier.persistent());
  EXPECT_EQ(tier.kind(), TierKind::kPmemFile);
  EXPECT_EQ(tier.size(), kTierSize);
  EXPECT_EQ(tier.slabCount(), kTierSize / kPmemTestSlab);
  struct stat st {};
  ASSERT_EQ(::stat(pool().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(tier.mappedBytes(), static_cast<uint64_t>(st.st_size));
  EXPECT_EQ(tier.mappedBytes(), PersistentPmemTier::poolFileSize(kTierSize, kPmemTestSlab));
  EXPECT_GT(tier.mappedBytes(), tier.size());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tier.base()) % 4096, 0u);
  EXPECT_GE(tier.slabAreaOffset(), tier.recordsOffset());
  EXPECT_LE(tier.slabAreaOffset() + tier.size(), tier.mappedBytes());
  EXPECT_TRUE(allZero(tier.base(), tier.size())) << "a new pool's slab area reads as zero";
  for (uint32_t s = 0; s < tier.slabCount(); ++s) EXPECT_EQ(tier.slabRecord(s), SlabRecord{}) << "slab " << s;
  EXPECT_EQ(dir_.entries(), std::set<std::string>{"tier.pool"}) << "no temporary file left behind";
  EXPECT_NE(tier.describe().find(pool()), std::string::npos) << tier.describe();
  EXPECT_NE(tier.describe().find(GetParam() == "tmpfs" ? "not a reboot" : "durable"), std::string::npos)
      << tier.describe();
}

TEST_P(PersistentTierMedium, ReopenAfterCleanShutdownKeepsBytesAndRecords) {
  std::vector<std::byte> expect(kTierSize);
  fillPattern(expect.data(), expect.size(), 1);
  {
    PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(7));
    std::memcpy(tier.base(), expect.data(), expect.size());
    tier.persist(tier.base(), tier.size());
    tier.setSlabRecord(0, {4096, 0});
    tier.setSlabRecord(2, {192, 3});
    tier.setClean(true);
  }
  PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(7));
  EXPECT_TRUE(tier.recovered());
  EXPECT_TRUE(tier.wasCleanShutdown());
  EXPECT_EQ(tier.openReport(), "opened after a clean shutdown");
  EXPECT_EQ(std::memcmp(tier.base(), expect.data(), expect.size()), 0) << "the slab area came back byte for byte";
  EXPECT_EQ(tier.slabRecord(0), (SlabRecord{4096, 0}));
  EXPECT_EQ(tier.slabRecord(1), SlabRecord{});
  EXPECT_EQ(tier.slabRecord(2), (SlabRecord{192, 3}));
  EXPECT_EQ(tier.slabRecord(3), SlabRecord{});
  // A record can be cleared again.
  tier.setSlabRecord(2, {});
  EXPECT_EQ(tier.slabRecord(2), SlabRecord{});
}

TEST_P(PersistentTierMedium, ReopenWithoutSetCleanReportsACrash) {
  {
    PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(7));
    tier.setClean(true);
  }
  {
    PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(7));
    EXPECT_TRUE(tier.wasCleanShutdown());
    // Closed without setClean(true): the open itself marked the pool dirty.
  }
  PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(7));
  EXPECT_TRUE(tier.recovered());
  EXPECT_FALSE(tier.wasCleanShutdown());
  EXPECT_EQ(tier.openReport(), "opened after a crash");
}

// A process that dies by SIGKILL: what it persisted is there, the pool
// opens as after a crash.
TEST_P(PersistentTierMedium, KilledProcessLeavesPersistedDataAndADirtyPool) {
  {
    PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(7));
    tier.setClean(true);
  }
  std::vector<std::byte> expect(kPmemTestSlab);
  fillPattern(expect.data(), expect.size(), 2);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(7));
    std::memcpy(tier.base() + kPmemTestSlab, expect.data(), kPmemTestSlab);
    tier.persist(tier.base() + kPmemTestSlab, kPmemTestSlab);
    tier.setSlabRecord(1, {512, 1});
    ::raise(SIGKILL);
    ::_exit(3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child status " << status;
  ASSERT_EQ(WTERMSIG(status), SIGKILL);
  PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(7));
  EXPECT_TRUE(tier.recovered());
  EXPECT_FALSE(tier.wasCleanShutdown());
  EXPECT_EQ(tier.openReport(), "opened after a crash");
  EXPECT_EQ(std::memcmp(tier.base() + kPmemTestSlab, expect.data(), kPmemTestSlab), 0);
  EXPECT_EQ(tier.slabRecord(1), (SlabRecord{512, 1}));
}

TEST_P(PersistentTierMedium, FingerprintMismatchIsRefusedOrRebuilt) {
  {
    PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(1));
    fillPattern(tier.base(), tier.size(), 3);
    tier.persist(tier.base(), tier.size());
    tier.setSlabRecord(1, {1024, 0});
    tier.setClean(true);
  }
  expectRefused(pmemTierConfig(pool()), fp(2),
                "layout fingerprint differs: the pool was written by another config (pool 0x0000000000000001, "
                "config 0x0000000000000002)");
  {
    PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(2, true));
    EXPECT_EQ(tier.openReport().rfind("rebuilt: layout fingerprint differs", 0), 0u) << tier.openReport();
    EXPECT_FALSE(tier.recovered());
    EXPECT_FALSE(tier.wasCleanShutdown());
    EXPECT_EQ(tier.slabRecord(1), SlabRecord{});
    EXPECT_TRUE(allZero(tier.base(), tier.size())) << "a rebuilt pool is a new one";
    EXPECT_EQ(tier.fingerprint(), 2u);
    tier.setClean(true);
  }
  EXPECT_EQ(dir_.entries(), std::set<std::string>{"tier.pool"});
  PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(2));
  EXPECT_TRUE(tier.recovered()) << "the rebuilt pool carries the new fingerprint";
}

TEST_P(PersistentTierMedium, SlabGeometryMismatchIsNamed) {
  { PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(7)); }
  try {
    PersistentPmemTier tier(pmemTierConfig(pool()), 2 * kPmemTestSlab, fp(7));
    ADD_FAILURE() << "opened with another slab size";
  } catch (const TierError& e) {
    EXPECT_NE(std::string(e.what()).find("slab size differs: the pool has 1048576-byte slabs, the config 2097152"),
              std::string::npos)
        << e.what();
  }
  expectRefused(pmemTierConfig(pool(), 8 * kMiB), fp(7), "pool is truncated, or was made for a smaller tier");
  {
    // A bigger pool opened with a smaller tier: the header tells.
    TempDir other(GetParam() == "tmpfs" ? std::string("/dev/shm") : diskParent(), "tiercache-persistent-test");
    { PersistentPmemTier big(pmemTierConfig(other.file("p"), 16 * kMiB), kPmemTestSlab, fp(7)); }
    expectRefused(pmemTierConfig(other.file("p")), fp(7), "slab count differs: the pool has 16 slabs, the config 4");
  }
  // Rebuilt to the new geometry when allowed: a bigger file.
  PersistentPmemTier tier(pmemTierConfig(pool(), 8 * kMiB), kPmemTestSlab, fp(7, true));
  EXPECT_EQ(tier.openReport().rfind("rebuilt: pool is truncated, or was made for a smaller tier", 0), 0u)
      << tier.openReport();
  EXPECT_EQ(tier.slabCount(), 8u);
  EXPECT_EQ(fileSize(pool()), PersistentPmemTier::poolFileSize(8 * kMiB, kPmemTestSlab));
}

TEST_P(PersistentTierMedium, HeaderIsFoundAtItsOffsetAndCorruptionIsRefused) {
  const TierConfig cfg = pmemTierConfig(pool());
  const PoolMap m = mapOf(cfg, 7);
  // The tier's offset is where the signature really is in the file.
  const std::string file = readFile(pool(), 0, fileSize(pool()));
  EXPECT_EQ(file.find("TIERCACHE"), m.header);
  EXPECT_EQ(m.hdr.version, pmem_layout::kLayoutVersion);
  EXPECT_EQ(m.hdr.slabCount, 4u);
  EXPECT_EQ(m.hdr.clean, pmem_layout::kClean);
  EXPECT_EQ(m.hdr.checksum, pmem_layout::headerChecksum(m.hdr));

  struct Case {
    const char* what;
    size_t offset;
    std::vector<unsigned char> bytes;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {"signature", offsetof(PoolHeader, signature), {'X'}, "not a tiercache pool: no TIERCACHE signature"},
      {"version", offsetof(PoolHeader, version), {9}, "pool layout version 9 is not one this build reads (4)"},
      // A pool of the 44-byte item header and 32-bit references.
      {"old version", offsetof(PoolHeader, version), {3}, "pool layout version 3 is not one this build reads (4)"},
      // Empty bytes: flip the byte there (the commit key is random: a fixed
      // byte would match it one time in 256).
      {"commit key", offsetof(PoolHeader, commitKey), {}, "header is corrupted: checksum mismatch"},
      {"header size", offsetof(PoolHeader, headerSize), {1}, "header is corrupted: header size 1"},
      {"slab size", offsetof(PoolHeader, slabSize) + 2, {0x55}, "header is corrupted: checksum mismatch"},
      {"fingerprint", offsetof(PoolHeader, fingerprint), {0xEE}, "header is corrupted: checksum mismatch"},
      {"clean flag", offsetof(PoolHeader, clean), {7}, "header is corrupted: clean flag 7 (expected 0 or 1)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string saved = readFile(pool(), m.header, sizeof(PoolHeader));
    std::vector<unsigned char> bytes = c.bytes;
    if (bytes.empty()) bytes.push_back(static_cast<unsigned char>(saved[c.offset] ^ 0xFF));
    writeFile(pool(), m.header + c.offset, bytes.data(), bytes.size());
    expectRefused(cfg, fp(7), c.reason);
    writeFile(pool(), m.header, saved.data(), saved.size());
    PersistentPmemTier ok(cfg, kPmemTestSlab, fp(7));  // restored: opens again
    EXPECT_TRUE(ok.recovered());
    ok.setClean(true);
  }
  // Rebuilt when allowed.
  const unsigned char junk = 'X';
  writeFile(pool(), m.header, &junk, 1);
  PersistentPmemTier tier(cfg, kPmemTestSlab, fp(7, true));
  EXPECT_EQ(tier.openReport(), "rebuilt: not a tiercache pool: no TIERCACHE signature in its header");
}

// Headers whose checksum is right but whose offsets lie: every offset is
// checked against the pool's allocated objects and the mapping.
TEST_P(PersistentTierMedium, ForgedOffsetsWithAValidChecksumAreRefused) {
  const TierConfig cfg = pmemTierConfig(pool());
  const PoolMap m = mapOf(cfg, 7);
  auto forge = [&](auto edit, const std::string& reason) {
    SCOPED_TRACE(reason);
    PoolHeader h = m.hdr;
    edit(h);
    h.checksum = pmem_layout::headerChecksum(h);
    writeFile(pool(), m.header, &h, sizeof h);
    expectRefused(cfg, fp(7), reason);
    writeFile(pool(), m.header, &m.hdr, sizeof m.hdr);
  };
  forge([](PoolHeader& h) { h.recordsObject += 8; }, "the slab-record array");
  forge([](PoolHeader& h) { h.recordsBytes = 40; }, "header is corrupted: slab-record array of 40 bytes, 4 slabs need 32");
  forge([&](PoolHeader& h) { h.recordsObject = m.hdr.slabAreaObject; }, "the slab-record array");
  forge([](PoolHeader& h) { h.recordsObject = UINT64_MAX - 4; }, "not an allocated object");
  forge([](PoolHeader& h) { h.slabAreaOffset += PersistentPmemTier::kSlabAreaAlignment * 2; }, "the slab area");
  forge([](PoolHeader& h) { h.slabAreaOffset = UINT64_MAX - 4095; }, "the slab area");
  forge([](PoolHeader& h) { h.slabAreaObject = h.recordsObject; }, "the slab area");
  forge([](PoolHeader& h) { h.slabAreaOffset += 8; }, "is not page aligned");
  forge([](PoolHeader& h) { h.poolSize += 4096; }, "pool is truncated: the file has");
  forge([](PoolHeader& h) { h.poolSize -= 4096; }, "pool file size changed");
  PersistentPmemTier tier(cfg, kPmemTestSlab, fp(7));
  EXPECT_TRUE(tier.recovered()) << "the original header still opens";
}

TEST_P(PersistentTierMedium, CorruptedSlabRecordIsRefused) {
  const TierConfig cfg = pmemTierConfig(pool());
  {
    PersistentPmemTier tier(cfg, kPmemTestSlab, fp(7));
    tier.setSlabRecord(2, {256, 1});
    tier.setClean(true);
  }
  const PoolMap m = mapOf(cfg, 7);
  SlabRecordSlot r {};
  std::memcpy(&r, readFile(pool(), m.records + 2 * sizeof r, sizeof r).data(), sizeof r);
  EXPECT_EQ(r.allocSize, 256u);
  EXPECT_EQ(r.pool, 1u);
  EXPECT_EQ(r.check, pmem_layout::recordCheck(2, 256, 1));
  SlabRecordSlot bad = r;
  bad.allocSize = 512;  // plausible value, stale check
  writeFile(pool(), m.records + 2 * sizeof r, &bad, sizeof bad);
  expectRefused(cfg, fp(7), "slab record 2 is corrupted (allocSize 512, pool 1");
  // A record moved to another slab does not pass as that slab's either.
  writeFile(pool(), m.records + 2 * sizeof r, &r, sizeof r);
  writeFile(pool(), m.records + 3 * sizeof r, &r, sizeof r);
  expectRefused(cfg, fp(7), "slab record 3 is corrupted");
  // allocSize larger than a slab, with a matching check.
  SlabRecordSlot huge{static_cast<uint32_t>(kPmemTestSlab + 8), 0, pmem_layout::recordCheck(3, kPmemTestSlab + 8, 0)};
  writeFile(pool(), m.records + 3 * sizeof r, &huge, sizeof huge);
  expectRefused(cfg, fp(7), "slab record 3 is corrupted (allocSize 1048584");
  PersistentPmemTier tier(cfg, kPmemTestSlab, fp(7, true));
  EXPECT_EQ(tier.openReport().rfind("rebuilt: slab record 3 is corrupted", 0), 0u) << tier.openReport();
  EXPECT_EQ(tier.slabRecord(2), SlabRecord{});
}

TEST_P(PersistentTierMedium, TruncatedFileIsRefused) {
  const TierConfig cfg = pmemTierConfig(pool());
  { PersistentPmemTier tier(cfg, kPmemTestSlab, fp(7)); }
  const uint64_t full = fileSize(pool());
  const std::string saved = readFile(pool(), 0, full);
  auto restore = [&] {
    ASSERT_EQ(::truncate(pool().c_str(), 0), 0);
    writeFile(pool(), 0, saved.data(), saved.size());
  };
  ASSERT_EQ(::truncate(pool().c_str(), static_cast<off_t>(full - 4096)), 0);
  expectRefused(cfg, fp(7), "pool is truncated, or was made for a smaller tier: the file has " +
                                std::to_string(full - 4096) + " bytes, a pool for this config " + std::to_string(full));
  restore();
  ASSERT_EQ(::truncate(pool().c_str(), static_cast<off_t>(full - PersistentPmemTier::kSlabAreaAlignment)), 0);
  expectRefused(cfg, fp(7), "pool is truncated, or was made for a smaller tier");
  restore();
  // Grown by a whole 2 MiB: PMDK opens it, the header's size tells.
  ASSERT_EQ(::truncate(pool().c_str(), static_cast<off_t>(full + PersistentPmemTier::kSlabAreaAlignment)), 0);
  expectRefused(cfg, fp(7), "pool file size changed: the file has " +
                                std::to_string(full + PersistentPmemTier::kSlabAreaAlignment) +
                                " bytes, the pool was created with " + std::to_string(full));
  restore();
  // Grown by less: not a size this class makes.
  ASSERT_EQ(::truncate(pool().c_str(), static_cast<off_t>(full + 4096)), 0);
  expectRefused(cfg, fp(7), "pool is truncated (or not a tiercache pool)");
  restore();
  { PersistentPmemTier restored(cfg, kPmemTestSlab, fp(7)); }
  ASSERT_EQ(::truncate(pool().c_str(), static_cast<off_t>(kMiB)), 0);
  expectRefused(cfg, fp(7), "pool is truncated or not a pool: the file has 1048576 bytes");
  // Rebuilt when allowed: the file still starts like a libpmemobj pool.
  PersistentPmemTier tier(cfg, kPmemTestSlab, fp(7, true));
  EXPECT_EQ(tier.openReport().rfind("rebuilt: pool is truncated", 0), 0u) << tier.openReport();
  EXPECT_EQ(fileSize(pool()), full);
}

TEST_P(PersistentTierMedium, AFileThatIsNoPoolIsNeverReplaced) {
  std::string junk(16 * kMiB, 'j');
  {
    int fd = ::open(pool().c_str(), O_CREAT | O_WRONLY, 0600);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  writeFile(pool(), 0, junk.data(), junk.size());
  expectRefused(pmemTierConfig(pool()), fp(7), "libpmemobj refused the file");
  expectRefused(pmemTierConfig(pool()), fp(7, true), "not replaced: it does not start like a libpmemobj pool");
  EXPECT_EQ(readFile(pool(), 0, junk.size()), junk) << "the file was left alone";
}

TEST_P(PersistentTierMedium, APoolOfAnotherLayoutIsRefusedOrRebuilt) {
  {
    PmemObjPool other =
        PmemObjPool::create(pool(), "someone-else", PersistentPmemTier::poolFileSize(kTierSize, kPmemTestSlab));
  }
  expectRefused(pmemTierConfig(pool()), fp(7), "wrong layout");
  PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(7, true));
  EXPECT_EQ(tier.openReport().rfind("rebuilt: libpmemobj refused the pool", 0), 0u) << tier.openReport();
}

TEST_P(PersistentTierMedium, AnEmptyFileBecomesAPool) {
  int fd = ::open(pool().c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ::close(fd);
  PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(7));
  EXPECT_EQ(tier.openReport(), "created (the file was empty)");
  struct stat st {};
  ASSERT_EQ(::stat(pool().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_P(PersistentTierMedium, ASecondOpenOfAnOpenPoolIsRefused) {
  PersistentPmemTier tier(pmemTierConfig(pool()), kPmemTestSlab, fp(7));
  expectRefused(pmemTierConfig(pool()), fp(7, true), "the pool is in use");
  EXPECT_EQ(tier.slabRecord(0), SlabRecord{}) << "the open pool was not touched";
}

TEST_P(PersistentTierMedium, RecordsAndPersistFromManyThreads) {
  constexpr uint64_t kSmallSlab = 64 << 10;
  constexpr uint32_t kThreads = 4;
  const TierConfig cfg = pmemTierConfig(pool());
  const uint32_t slabs = kTierSize / kSmallSlab;
  {
    PersistentPmemTier tier(cfg, kSmallSlab, fp(7));
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (uint32_t s = t; s < slabs; s += kThreads) {
          std::byte* p = tier.base() + uint64_t{s} * kSmallSlab;
          fillPattern(p, 256, s);
          tier.persist(p, 256);
          tier.setSlabRecord(s, {64 + s, static_cast<uint16_t>(t)});
          EXPECT_EQ(tier.slabRecord(s), (SlabRecord{64 + s, static_cast<uint16_t>(t)}));
        }
      });
    }
    for (auto& th : threads) th.join();
    tier.setClean(true);
  }
  PersistentPmemTier tier(cfg, kSmallSlab, fp(7));
  std::vector<std::byte> expect(256);
  for (uint32_t s = 0; s < slabs; ++s) {
    EXPECT_EQ(tier.slabRecord(s), (SlabRecord{64 + s, static_cast<uint16_t>(s % kThreads)})) << "slab " << s;
    fillPattern(expect.data(), expect.size(), s);
    EXPECT_EQ(std::memcmp(tier.base() + uint64_t{s} * kSmallSlab, expect.data(), 256), 0) << "slab " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(PersistentTierMedia, PersistentTierMedium, ::testing::Values("tmpfs", "disk"),
                         [](const auto& info) { return info.param; });

TEST(PersistentTier, RecordAccessIsRangeChecked) {
  TempDir dir("/dev/shm", "tiercache-persistent-test");
  PersistentPmemTier tier(pmemTierConfig(dir.file("p")), kPmemTestSlab, fp(7));
  EXPECT_THROW(tier.slabRecord(4), TierError);
  EXPECT_THROW(tier.setSlabRecord(4, {64, 0}), TierError);
  try {
    tier.setSlabRecord(0, {static_cast<uint32_t>(kPmemTestSlab + 1), 0});
    ADD_FAILURE() << "a record larger than its slab was stored";
  } catch (const TierError& e) {
    EXPECT_NE(std::string(e.what()).find("allocSize 1048577 is larger than the slab"), std::string::npos) << e.what();
  }
  EXPECT_EQ(tier.slabRecord(0), SlabRecord{});
  tier.setSlabRecord(0, {0, 5});
  EXPECT_EQ(tier.slabRecord(0), SlabRecord{}) << "an unassigned record has no pool";
}

TEST(PersistentTier, BadPathsAndSizesAreRefusedUpFront) {
  TempDir dir("/dev/shm", "tiercache-persistent-test");
  expectRefused(pmemTierConfig(""), fp(7), "needs 'path': the pool file");
  expectRefused(pmemTierConfig(dir.file("missing/p")), fp(7),
                "directory '" + dir.file("missing") + "' of the pool file does not exist");
  expectRefused(pmemTierConfig(dir.path()), fp(7),
                "is a directory; a persistent pmem-file tier's 'path' is the pool FILE");
  expectRefused(pmemTierConfig(dir.file("small"), kMiB / 2), fp(7),
                "below the minimum for a persistent tier: 1048576 bytes");
  expectRefused(pmemTierConfig(dir.file("huge"), 64ull << 30), fp(7), "is above the largest persistent tier");
  EXPECT_TRUE(dir.entries().empty()) << "no file was made by a refused open";
  // Not writable: /proc refuses files even to root; a 0500 directory
  // refuses them to anyone else.
  try {
    PersistentPmemTier tier(pmemTierConfig("/proc/tiercache-test.pool"), kPmemTestSlab, fp(7));
    ADD_FAILURE() << "a pool was made in /proc";
  } catch (const TierError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(msg.find("not writable") != std::string::npos || msg.find("cannot create the pool") != std::string::npos)
        << msg;
  }
  if (::geteuid() != 0) {
    ASSERT_EQ(::chmod(dir.path().c_str(), 0500), 0);
    expectRefused(pmemTierConfig(dir.file("p")), fp(7), "of the pool file is not writable");
  }
}

TEST(PersistentTier, OpenPersistentTierHandsOutTheMemoryAndTheRecordsApart) {
  TempDir dir("/dev/shm", "tiercache-persistent-test");
  TierConfig cfg = pmemTierConfig(dir.file("p"), kTierSize + kPmemTestSlab / 2);  // rounded down to whole slabs
  {
    PersistentTierParts pt = openPersistentTier(cfg, kPmemTestSlab, fp(7));
    ASSERT_NE(pt.memory, nullptr);
    ASSERT_NE(pt.records, nullptr);
    EXPECT_TRUE(pt.memory->persistent());
    EXPECT_EQ(pt.memory->size(), kTierSize);
    EXPECT_EQ(pt.records->openReport(), "created");
    pt.records->setSlabRecord(1, {4096, 0});
    pt.records->setClean(true);
  }
  {
    // openTier opens the same pool, as memory only.
    std::unique_ptr<MemoryTier> t = openTier(cfg, kPmemTestSlab, fp(7));
    EXPECT_TRUE(t->persistent());
    EXPECT_EQ(t->size(), kTierSize);
  }
  {
    PersistentTierParts pt = openPersistentTier(cfg, kPmemTestSlab, fp(7));
    EXPECT_EQ(pt.records->slabRecord(1), (SlabRecord{4096, 0})) << "the record written through the parts survives";
  }
  // TierConfig::rebuild_on_mismatch allows the rebuild too.
  cfg.rebuild_on_mismatch = true;
  EXPECT_EQ(openPersistentTier(cfg, kPmemTestSlab, fp(8))
                .records->openReport()
                .rfind("rebuilt: layout fingerprint differs", 0),
            0u);
  cfg.persistent = false;
  cfg.path = dir.path();
  cfg.size = kPmemMinSize;
  std::unique_ptr<MemoryTier> t = openTier(cfg, kPmemTestSlab);
  EXPECT_FALSE(t->persistent()) << "without 'persistent' a pmem-file tier is volatile";
  try {
    openPersistentTier(cfg, kPmemTestSlab, fp(7));
    ADD_FAILURE() << "a volatile pmem-file tier opened as a persistent one";
  } catch (const TierError& e) {
    EXPECT_NE(std::string(e.what()).find("'persistent' set"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tiercache
