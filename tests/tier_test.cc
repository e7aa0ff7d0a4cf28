// Tier backends: the MemoryTier contract once over every backend that can
// open here (TEST_P), then each backend's own refusals and binding.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "config/sizes.h"
#include "numa/topology.h"
#include "tiers/dax_kmem_tier.h"
#include "tiers/dram_tier.h"
#include "tiers/memory_tier.h"
#include "tiers/pmem_file_tier.h"
#include "common/huge_mapping.h"
#include "fs_test_util.h"

namespace tiercache {
namespace {

using test::TempDir;
using test::WarningCapture;
using test::dataFile;

constexpr uint64_t kTierSlab = 4 * kMiB;




// Expects `f` to throw TierError whose message contains every part.
template <typename F>
void expectTierError(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no TierError; expected one saying: " << parts.front();
  } catch (const TierError& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

int mempolicyMode(void* addr, unsigned long* mask) {
  int mode = -1;
  unsigned long m[16] = {};
  if (syscall(SYS_get_mempolicy, &mode, m, sizeof(m) * 8, addr, 2ul /* MPOL_F_ADDR */) != 0) return -1;
  *mask = m[0];
  return mode;
}

// ---- the contract, over every backend that opens on this machine --------

struct Backend {
  const char* label;
  TierKind kind;
  const char* parent;  // pmem-file: where the tier's directory is made
};

void PrintTo(const Backend& b, std::ostream* os) { *os << b.label; }

class TierContract : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam().parent) dir_ = std::make_unique<TempDir>(GetParam().parent);
  }
  TierConfig config(uint64_t size) const {
    TierConfig c;
    c.name = std::string("t-") + GetParam().label;
    c.kind = GetParam().kind;
    c.size = size;
    if (dir_) c.path = dir_->path();
    return c;
  }
  std::unique_ptr<TempDir> dir_;
};

TEST_P(TierContract, SizeIsWholeSlabsAndMappedBytesMatch) {
  // 16 MiB + 3 MiB + 5 bytes: rounded down to four 4 MiB slabs.
  auto tier = openTier(config(16 * kMiB + 3 * kMiB + 5), kTierSlab);
  EXPECT_EQ(tier->size(), 16 * kMiB);
  EXPECT_EQ(tier->mappedBytes(), 16 * kMiB);
  EXPECT_EQ(tier->kind(), GetParam().kind);
  EXPECT_EQ(tier->name(), std::string("t-") + GetParam().label);
  EXPECT_NE(tier->describe().find(tierKindName(GetParam().kind)), std::string::npos) << tier->describe();
  EXPECT_FALSE(tier->persistent());
  ASSERT_NE(tier->base(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tier->base()) % 4096, 0u);
}

TEST_P(TierContract, MemoryReadsZeroThenReadsBackWhatWasWritten) {
  auto tier = openTier(config(16 * kMiB), kTierSlab);
  std::byte* const b = tier->base();
  const uint64_t n = tier->size();
  for (uint64_t i = 0; i < n; i += 4096) ASSERT_EQ(b[i], std::byte{0}) << "offset " << i;
  ASSERT_EQ(b[n - 1], std::byte{0});
  // A pattern over every page edge and both ends of the region.
  auto pattern = [](uint64_t i) { return static_cast<std::byte>((i * 2654435761u) >> 13); };
  for (uint64_t i = 0; i < n; i += 4093) b[i] = pattern(i);
  b[n - 1] = std::byte{0xA5};
  tier->persist(b, n);  // a no-op on a volatile tier, and safe to call
  for (uint64_t i = 0; i < n; i += 4093) ASSERT_EQ(b[i], pattern(i)) << "offset " << i;
  EXPECT_EQ(b[n - 1], std::byte{0xA5});
}

TEST_P(TierContract, TooSmallForOneSlabIsRefused) {
  expectTierError([&] { openTier(config(kTierSlab - 1), kTierSlab); },
                  {"tier 't-", "smaller than one slab"});
}

TEST_P(TierContract, DestructionUnmapsAndLeavesNothingBehind) {
  void* base = nullptr;
  {
    auto tier = openTier(config(16 * kMiB), kTierSlab);
    base = tier->base();
    ASSERT_EQ(msync(base, 4096, MS_ASYNC), 0);
  }
  // msync on an address with no mapping fails with ENOMEM.
  errno = 0;
  EXPECT_EQ(msync(base, 4096, MS_ASYNC), -1);
  EXPECT_EQ(errno, ENOMEM);
  if (dir_) {
    EXPECT_TRUE(dir_->entries().empty());
  }
}

INSTANTIATE_TEST_SUITE_P(TierBackends, TierContract,
                         ::testing::Values(Backend{"dram", TierKind::kDram, nullptr},
                                           Backend{"pmem_shm", TierKind::kPmemFile, "/dev/shm"},
                                           Backend{"pmem_disk", TierKind::kPmemFile, "/var/tmp"}),
                         [](const ::testing::TestParamInfo<Backend>& info) { return std::string(info.param.label); });

// ---- PmemFileTier -------------------------------------------------------

class TierPmemFile : public ::testing::TestWithParam<const char*> {};

TEST_P(TierPmemFile, FileIsUnlinkedAndExactlyTheTierSize) {
  TempDir dir(GetParam(), "tiercache-tier-test");
  PmemFileTier tier("pmem", dir.path(), 20 * kMiB);
  EXPECT_EQ(tier.size(), 20 * kMiB);
  EXPECT_EQ(tier.fileBytes(), 20 * kMiB);
  EXPECT_GE(tier.allocatedBytes(), 20 * kMiB);  // fallocated up front, not sparse
  EXPECT_EQ(tier.mappedBytes(), tier.fileBytes());
  EXPECT_TRUE(dir.entries().empty()) << "the tier's file must not be visible in " << dir.path();
  EXPECT_EQ(tier.directory(), dir.path());
  EXPECT_NE(tier.describe().find(dir.path()), std::string::npos) << tier.describe();
  if (std::string(GetParam()) == "/dev/shm") {
    EXPECT_EQ(tier.fsType(), "tmpfs");
  }
}

TEST_P(TierPmemFile, MissingDirectoryIsRefused) {
  const std::string path = std::string(GetParam()) + "/tiercache-no-such-dir-7f3a";
  expectTierError([&] { PmemFileTier("pm", path, 16 * kMiB); },
                  {"tier 'pm': directory '" + path + "' does not exist"});
}

TEST_P(TierPmemFile, AFileWhereADirectoryBelongsIsRefused) {
  TempDir dir(GetParam(), "tiercache-tier-test");
  const std::string file = dir.path() + "/plain-file";
  { std::ofstream(file) << "x"; }
  expectTierError([&] { PmemFileTier("pm", file, 16 * kMiB); },
                  {"tier 'pm': '" + file + "' is a file", "must be the directory"});
}

TEST_P(TierPmemFile, BelowTheSixteenMiBMinimumIsRefused) {
  TempDir dir(GetParam(), "tiercache-tier-test");
  expectTierError([&] { PmemFileTier("pm", dir.path(), 16 * kMiB - 4096); },
                  {"tier 'pm': size 16773120 bytes is below the 16MiB minimum for a PMEM tier"});
  EXPECT_TRUE(dir.entries().empty());
}

TEST_P(TierPmemFile, NotEnoughSpaceIsRefusedUpFront) {
  TempDir dir(GetParam(), "tiercache-tier-test");
  struct statvfs vfs {};
  ASSERT_EQ(statvfs(dir.path().c_str(), &vfs), 0);
  const uint64_t free = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  const uint64_t size = (free / kTierSlab + 256) * kTierSlab;  // 1 GiB more than there is
  expectTierError([&] { PmemFileTier("pm", dir.path(), size); },
                  {"tier 'pm': not enough space in '" + dir.path() + "'"});
  EXPECT_TRUE(dir.entries().empty());
}

INSTANTIATE_TEST_SUITE_P(TierTmpfsAndDisk, TierPmemFile, ::testing::Values("/dev/shm", "/var/tmp"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param) == "/dev/shm" ? std::string("tmpfs") : std::string("disk");
                         });

// A private tmpfs mounted with `options` on a fresh directory, unmounted at
// scope exit; mounted() is false where this process may not mount (not root).
class TmpfsMount {
 public:
  explicit TmpfsMount(const std::string& options) : dir_("/tmp", "tiercache-tmpfs") {
    mounted_ = ::mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, options.c_str()) == 0;
  }
  ~TmpfsMount() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& path() const { return dir_.path(); }

 private:
  TempDir dir_;
  bool mounted_ = false;
};

// The system-wide override of every tmpfs mount's huge= option, if any.
std::string shmemHugeOverride() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (all.find("[force]") != std::string::npos) return "force";
  if (all.find("[deny]") != std::string::npos) return "deny";
  return "";
}

TEST(TierPmemFile, TmpfsWithHugePagesMapsTheTierWithThem) {
  TmpfsMount fs("size=64m,huge=within_size");
  if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (not root?)";
  if (shmemHugeOverride() == "deny") GTEST_SKIP() << "shmem_enabled is deny: no tmpfs gets huge pages";
  WarningCapture capture;
  PmemFileTier tier("pm", fs.path(), 32 * kMiB);
  EXPECT_TRUE(tier.hugePages());
  EXPECT_NE(tier.describe().find("(tmpfs, 2 MiB pages, volatile)"), std::string::npos) << tier.describe();
  EXPECT_TRUE(capture.warnings.empty()) << capture.warnings.front();
  // Every page the cache touches is huge, not only the first.
  for (uint64_t off = 0; off < tier.size(); off += 4096) tier.base()[off] = std::byte{1};
  EXPECT_EQ(hugeMappedBytes(tier.base()), tier.size());
}

TEST(TierPmemFile, TmpfsWithoutHugePagesWarnsWithTheRemedy) {
  TmpfsMount fs("size=64m,huge=never");
  if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (not root?)";
  if (shmemHugeOverride() == "force") GTEST_SKIP() << "shmem_enabled is force: every tmpfs gets huge pages";
  WarningCapture capture;
  PmemFileTier tier("pm", fs.path(), 32 * kMiB);
  EXPECT_FALSE(tier.hugePages());
  EXPECT_NE(tier.describe().find("(tmpfs, 4 KiB pages, volatile)"), std::string::npos) << tier.describe();
  ASSERT_EQ(capture.warnings.size(), 1u);
  EXPECT_NE(capture.warnings[0].find("tier 'pm': " + fs.path() + " is tmpfs without huge pages"), std::string::npos)
      << capture.warnings[0];
  EXPECT_NE(capture.warnings[0].find("huge=within_size"), std::string::npos) << capture.warnings[0];
  // Once per directory: a second tier there does not repeat it.
  PmemFileTier second("pm2", fs.path(), 16 * kMiB);
  EXPECT_EQ(capture.warnings.size(), 1u);
}

TEST(TierPmemFile, UnwritableDirectoryIsRefused) {
  // Root passes access() everywhere, but nobody can create a file in /proc:
  // the real create is what catches it.
  expectTierError([&] { PmemFileTier("pm", "/proc", 16 * kMiB); },
                  {"tier 'pm': directory '/proc' is not writable"});
  if (geteuid() != 0) {
    TempDir dir("/var/tmp", "tiercache-tier-test");
    ASSERT_EQ(chmod(dir.path().c_str(), 0500), 0);
    expectTierError([&] { PmemFileTier("pm", dir.path(), 16 * kMiB); },
                    {"tier 'pm': directory '" + dir.path() + "' is not writable"});
  }
}

TEST(TierPmemFile, EmptyPathAndNodesAreRefused) {
  expectTierError([&] { PmemFileTier("pm", "", 16 * kMiB); }, {"tier 'pm': pmem-file tier needs 'path'"});
  TierConfig c;
  c.name = "pm";
  c.kind = TierKind::kPmemFile;
  c.size = 16 * kMiB;
  c.path = "/dev/shm";
  c.nodes = {0};
  expectTierError([&] { openTier(c, kTierSlab); }, {"tier 'pm': 'nodes' does not apply to a pmem-file tier"});
}

// ---- DramTier binding ---------------------------------------------------

TEST(TierDram, StrictBindingToALocalNodeBindsThePages) {
  const unsigned node = Topology::system().nodes().front().os_index;
  DramTier tier("d", 8 * kMiB, {node}, BindPolicy::kStrict);
  EXPECT_TRUE(tier.bound());
  EXPECT_EQ(tier.bindWarning(), "");
  EXPECT_NE(tier.describe().find("bound to node " + std::to_string(node) + " (strict)"), std::string::npos)
      << tier.describe();
  unsigned long mask = 0;
  EXPECT_EQ(mempolicyMode(tier.base(), &mask), 2 /* MPOL_BIND */);
  EXPECT_EQ(mask, 1ul << node);
  tier.base()[0] = std::byte{1};
}

TEST(TierDram, StrictBindingThatCannotBeMadeRefusesTheTier) {
  expectTierError([] { DramTier("d", 8 * kMiB, {999}, BindPolicy::kStrict); },
                  {"tier 'd': cannot bind", "NUMA node 999 does not exist", "strict"});
  // Through openTier with the policy from the config.
  TierConfig c;
  c.name = "d0";
  c.size = 8 * kMiB;
  c.nodes = {999};
  c.bind_policy = BindPolicy::kStrict;
  expectTierError([&] { openTier(c, kTierSlab); }, {"tier 'd0': cannot bind"});
}

TEST(TierDram, AdvisoryBindingFailureKeepsAnUnboundTierAndWarns) {
  WarningCapture capture;
  TierConfig c;
  c.name = "d1";
  c.size = 8 * kMiB;
  c.nodes = {999};  // default policy: advisory
  auto tier = openTier(c, kTierSlab);
  auto* dram = dynamic_cast<DramTier*>(tier.get());
  ASSERT_NE(dram, nullptr);
  EXPECT_FALSE(dram->bound());
  EXPECT_NE(dram->bindWarning().find("NUMA node 999 does not exist"), std::string::npos) << dram->bindWarning();
  EXPECT_NE(tier->describe().find("NOT bound"), std::string::npos) << tier->describe();
  ASSERT_EQ(capture.warnings.size(), 1u);
  EXPECT_NE(capture.warnings[0].find("999"), std::string::npos);
  tier->base()[tier->size() - 1] = std::byte{7};
  EXPECT_EQ(tier->base()[tier->size() - 1], std::byte{7});
}

TEST(TierDram, PolicyNoneAndNoNodesNeverBind) {
  WarningCapture capture;
  DramTier none("d", 8 * kMiB, {999}, BindPolicy::kNone);
  DramTier plain("d", 8 * kMiB);
  EXPECT_FALSE(none.bound());
  EXPECT_FALSE(plain.bound());
  unsigned long mask = 0;
  EXPECT_NE(mempolicyMode(none.base(), &mask), 2);
  EXPECT_NE(mempolicyMode(plain.base(), &mask), 2);
  EXPECT_TRUE(capture.warnings.empty());
}

TEST(TierDram, StrictOnAnXmlTopologyIsRefused) {
  const Topology topo = Topology::fromXml(dataFile("one_dram.xml"));
  expectTierError([&] { DramTier("d", 8 * kMiB, {0}, BindPolicy::kStrict, &topo); },
                  {"tier 'd'", "loaded from xml:"});
}

// ---- DaxKmemTier --------------------------------------------------------

TEST(TierDaxKmem, RefusedWithoutAKmemDaxNode) {
  if (!Topology::system().nodesOfKind(MemoryKind::kNvm).empty()) GTEST_SKIP() << "this machine has KMEM DAX nodes";
  TierConfig c;
  c.name = "kmem";
  c.kind = TierKind::kDaxKmem;
  c.size = 16 * kMiB;
  expectTierError([&] { openTier(c, kTierSlab); }, {"tier 'kmem': no KMEM DAX NUMA node on this machine"});
  EXPECT_FALSE(DaxKmemTier::memkindDaxKmemAvailable());
  const unsigned dram = Topology::system().nodes().front().os_index;
  c.nodes = {dram};
  expectTierError([&] { openTier(c, kTierSlab); },
                  {"tier 'kmem': NUMA node " + std::to_string(dram) + " is DRAM memory, not a KMEM DAX (NVM) node"});
  c.nodes = {999};
  expectTierError([&] { openTier(c, kTierSlab); }, {"tier 'kmem': NUMA node 999 does not exist"});
}

TEST(TierDaxKmem, PicksTheNvmNodesOfItsTopology) {
  // The XML machine has NVM node 1; binding there is refused (a saved
  // topology cannot bind), and the refusal names the node it picked.
  const Topology topo = Topology::fromXml(dataFile("dram_nvm.xml"));
  expectTierError([&] { DaxKmemTier("kmem", 16 * kMiB, {}, &topo); },
                  {"tier 'kmem': cannot bind 16777216 bytes to NUMA node(s) 1", "loaded from xml:"});
  expectTierError([&] { DaxKmemTier("kmem", 16 * kMiB, {0}, &topo); },
                  {"NUMA node 0 is DRAM memory, not a KMEM DAX (NVM) node; the NVM node(s) are 1"});
  const Topology one = Topology::fromXml(dataFile("one_dram.xml"));
  expectTierError([&] { DaxKmemTier("kmem", 16 * kMiB, {}, &one); }, {"no KMEM DAX NUMA node"});
}

TEST(TierKinds, NamesRoundTripAndAutoIsNotOpened) {
  for (TierKind k : {TierKind::kDram, TierKind::kPmemFile, TierKind::kDaxKmem, TierKind::kAuto}) {
    EXPECT_EQ(tierKindFromName(tierKindName(k)), k);
  }
  EXPECT_EQ(tierKindFromName("pmem"), std::nullopt);
  TierConfig c;
  c.name = "a";
  c.kind = TierKind::kAuto;
  c.size = 16 * kMiB;
  expectTierError([&] { openTier(c, kTierSlab); }, {"tier 'a': kind 'auto' must be resolved by the tier planner"});
}

}  // namespace
}  // namespace tiercache
