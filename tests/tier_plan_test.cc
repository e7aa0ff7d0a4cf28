// Tier planner: auto tiers over the saved XML machines, ratio sizing, and
// one clear error (naming the tier index) per impossible plan.
#include "tiers/tier_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/sizes.h"
#include "fs_test_util.h"
#include "numa/topology.h"
#include "tiers/memory_tier.h"

namespace tiercache {
namespace {

using test::dataFile;

const Topology& xml(const std::string& name) {
  // Loaded once per file: every test here only reads them.
  static const Topology one = Topology::fromXml(dataFile("one_dram.xml"));
  static const Topology dramNvm = Topology::fromXml(dataFile("dram_nvm.xml"));
  static const Topology twoSockets = Topology::fromXml(dataFile("two_socket_dram_nvm.xml"));
  static const Topology cxl = Topology::fromXml(dataFile("dram_cxl_nvm.xml"));
  static const Topology cxlNoAttrs = Topology::fromXml(dataFile("dram_cxl_nvm_no_memattrs.xml"));
  if (name == "one_dram") return one;
  if (name == "dram_nvm") return dramNvm;
  if (name == "dram_cxl_nvm") return cxl;
  if (name == "dram_cxl_nvm_no_memattrs") return cxlNoAttrs;
  return twoSockets;
}

TierConfig autoTier(double ratio) {
  TierConfig t;
  t.kind = TierKind::kAuto;
  t.ratio = ratio;
  return t;
}

TierConfig sized(TierKind kind, uint64_t size, std::vector<unsigned> nodes = {}, std::string path = "") {
  TierConfig t;
  t.kind = kind;
  t.size = size;
  t.nodes = std::move(nodes);
  t.path = std::move(path);
  return t;
}

// Expects planTiers to throw TierPlanError for tier `index` with `text` in its message.
void expectPlanError(const TierPlanRequest& req, const Topology& topo, int index, const std::string& text) {
  try {
    planTiers(req, topo);
    ADD_FAILURE() << "planned; expected: " << text;
  } catch (const TierPlanError& e) {
    EXPECT_EQ(e.index(), index) << e.what();
    const std::string prefix = index >= 0 ? "tiers[" + std::to_string(index) + "]: " : "";
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(TierPlan, AutoOnOneDramNodeEmulatesPmemInTheDirectory) {
  TierPlanRequest req;
  req.tiers = {autoTier(1), autoTier(3)};
  req.total_size = 1 * kGiB;
  req.slab_size = 4 * kMiB;
  req.pmem_dir = "/dev/shm";
  const TierPlan plan = planTiers(req, xml("one_dram"));
  ASSERT_EQ(plan.tiers.size(), 2u);
  const TierConfig& t0 = plan.tiers[0].config;
  EXPECT_EQ(t0.kind, TierKind::kDram);
  EXPECT_EQ(t0.nodes, std::vector<unsigned>{0});
  EXPECT_EQ(t0.size, 256 * kMiB);
  EXPECT_EQ(t0.name, "dram");
  EXPECT_EQ(t0.ratio, 0.0);
  EXPECT_NE(plan.tiers[0].reason.find("auto: local DRAM node(s) 0"), std::string::npos) << plan.tiers[0].reason;
  const TierConfig& t1 = plan.tiers[1].config;
  EXPECT_EQ(t1.kind, TierKind::kPmemFile);
  EXPECT_EQ(t1.path, "/dev/shm");
  EXPECT_TRUE(t1.nodes.empty());
  EXPECT_EQ(t1.size, 768 * kMiB);
  EXPECT_EQ(t1.name, "pmem");
  EXPECT_NE(plan.tiers[1].reason.find("emulated PMEM in /dev/shm (no NVM node)"), std::string::npos);
  EXPECT_EQ(plan.describe(),
            "tier 0 'dram': dram, 256MiB, node(s) 0, bind advisory  [auto: local DRAM node(s) 0, ratio 256MiB of 1GiB]\n"
            "tier 1 'pmem': pmem-file, 768MiB, dir /dev/shm  [auto: emulated PMEM in /dev/shm (no NVM node), ratio 768MiB "
            "of 1GiB]\n");
}

TEST(TierPlan, AutoWithoutNvmOrDirectoryRunsOutOfMemoryLevels) {
  TierPlanRequest req;
  req.tiers = {autoTier(1), autoTier(1)};
  req.total_size = 1 * kGiB;
  expectPlanError(req, xml("one_dram"), 1, "auto: no memory level left for this tier");
}

TEST(TierPlan, AutoPrefersTheNvmNodeOverTheDirectory) {
  TierPlanRequest req;
  req.tiers = {autoTier(1), autoTier(1), autoTier(2)};
  req.total_size = 4 * kGiB;
  req.pmem_dir = "/var/tmp";
  const TierPlan plan = planTiers(req, xml("dram_nvm"));
  ASSERT_EQ(plan.tiers.size(), 3u);
  EXPECT_EQ(plan.tiers[0].config.kind, TierKind::kDram);
  EXPECT_EQ(plan.tiers[0].config.nodes, std::vector<unsigned>{0});
  EXPECT_EQ(plan.tiers[1].config.kind, TierKind::kDaxKmem);
  EXPECT_EQ(plan.tiers[1].config.nodes, std::vector<unsigned>{1});
  EXPECT_EQ(plan.tiers[1].config.name, "kmem");
  EXPECT_EQ(plan.tiers[2].config.kind, TierKind::kPmemFile);
  EXPECT_EQ(plan.tiers[2].config.path, "/var/tmp");
  EXPECT_NE(plan.tiers[2].reason.find("after the NVM nodes"), std::string::npos);
  EXPECT_EQ(plan.tiers[0].config.size, 1 * kGiB);
  EXPECT_EQ(plan.tiers[1].config.size, 1 * kGiB);
  EXPECT_EQ(plan.tiers[2].config.size, 2 * kGiB);
}

TEST(TierPlan, TwoSocketsUnboundProcessUsesBothSockets) {
  TierPlanRequest req;
  req.tiers = {autoTier(1), autoTier(4)};
  req.total_size = 5 * kGiB;
  const TierPlan plan = planTiers(req, xml("two_sockets"));
  ASSERT_EQ(plan.tiers.size(), 2u);
  EXPECT_EQ(plan.tiers[0].config.kind, TierKind::kDram);
  EXPECT_EQ(plan.tiers[0].config.nodes, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(plan.tiers[1].config.kind, TierKind::kDaxKmem);
  EXPECT_EQ(plan.tiers[1].config.nodes, (std::vector<unsigned>{2, 3}));
  EXPECT_EQ(plan.tiers[0].config.size, 1 * kGiB);
  EXPECT_EQ(plan.tiers[1].config.size, 4 * kGiB);
}

TEST(TierPlan, ProcessOnSocketOneGetsItsOwnNodesFirst) {
  TierPlanRequest req;
  req.tiers = {autoTier(1), autoTier(1), autoTier(1)};
  req.total_size = 3 * kGiB;
  req.cpus = "2-3";
  const TierPlan plan = planTiers(req, xml("two_sockets"));
  ASSERT_EQ(plan.tiers.size(), 3u);
  EXPECT_EQ(plan.tiers[0].config.kind, TierKind::kDram);
  EXPECT_EQ(plan.tiers[0].config.nodes, std::vector<unsigned>{1});
  EXPECT_EQ(plan.tiers[1].config.kind, TierKind::kDaxKmem);
  EXPECT_EQ(plan.tiers[1].config.nodes, std::vector<unsigned>{3});
  EXPECT_NE(plan.tiers[1].reason.find("local NVM"), std::string::npos);
  EXPECT_EQ(plan.tiers[2].config.kind, TierKind::kDaxKmem);
  EXPECT_EQ(plan.tiers[2].config.nodes, std::vector<unsigned>{2});
  EXPECT_NE(plan.tiers[2].reason.find("remote NVM"), std::string::npos);
  EXPECT_EQ(plan.tiers[2].config.name, "kmem2");  // "kmem" is taken by tier 1
}

TEST(TierPlan, AnExplicitTierUsesUpItsLevel) {
  TierPlanRequest req;
  req.tiers = {sized(TierKind::kDram, 64 * kMiB), autoTier(1)};
  req.total_size = 1 * kGiB;
  const TierPlan plan = planTiers(req, xml("dram_nvm"));
  ASSERT_EQ(plan.tiers.size(), 2u);
  EXPECT_EQ(plan.tiers[0].config.kind, TierKind::kDram);
  EXPECT_TRUE(plan.tiers[0].config.nodes.empty());  // as configured: unbound
  EXPECT_EQ(plan.tiers[0].reason, "as configured");
  EXPECT_EQ(plan.tiers[1].config.kind, TierKind::kDaxKmem);
  EXPECT_EQ(plan.tiers[1].config.size, 1 * kGiB - 64 * kMiB);
}

// dram_cxl_nvm.xml: DRAM node 0 (90 ns, 20000 MiB/s), CXL-DRAM expanders 1
// (250 ns, 12000) and 2 (400 ns, 6000), NVM node 3 (300 ns, 8000); the
// attributes put the far expander after the NVM node.
TEST(TierPlan, CxlNodesAreOrderedByTheirMemoryAttributes) {
  TierPlanRequest req;
  req.tiers = {autoTier(1), autoTier(1), autoTier(1), autoTier(1), autoTier(4)};
  req.total_size = 8 * kGiB;
  req.slab_size = 4 * kMiB;
  req.pmem_dir = "/var/tmp";
  const TierPlan plan = planTiers(req, xml("dram_cxl_nvm"));
  ASSERT_EQ(plan.tiers.size(), 5u);
  const std::vector<std::pair<TierKind, std::vector<unsigned>>> want = {{TierKind::kDram, {0}},
                                                                        {TierKind::kDram, {1}},
                                                                        {TierKind::kDaxKmem, {3}},
                                                                        {TierKind::kDram, {2}},
                                                                        {TierKind::kPmemFile, {}}};
  for (size_t i = 0; i < want.size(); i++) {
    EXPECT_EQ(plan.tiers[i].config.kind, want[i].first) << i << ": " << plan.tiers[i].reason;
    EXPECT_EQ(plan.tiers[i].config.nodes, want[i].second) << i << ": " << plan.tiers[i].reason;
  }
  EXPECT_EQ(plan.tiers[4].config.path, "/var/tmp");
  EXPECT_NE(plan.tiers[1].reason.find("auto: local CXL-DRAM node(s) 1 (latency 250 ns, bandwidth 12000 MiB/s)"),
            std::string::npos)
      << plan.tiers[1].reason;
  EXPECT_NE(plan.tiers[3].reason.find("CXL-DRAM node(s) 2 (latency 400 ns"), std::string::npos) << plan.tiers[3].reason;
  EXPECT_EQ(plan.tiers[1].config.name, "cxl");
  EXPECT_EQ(plan.tiers[3].config.name, "cxl3");
  EXPECT_NE(plan.describe().find("tier 1 'cxl': dram, 1GiB, node(s) 1, bind advisory  [auto: local CXL-DRAM"),
            std::string::npos)
      << plan.describe();
}

// The same machine without memory attributes, its second expander (node 2)
// marked only by hwloc 2.9's CXLDevice info: the kind order, DRAM before
// both expanders (one level) before NVM.
TEST(TierPlan, CxlNodesWithoutMemoryAttributesFollowTheKindOrder) {
  TierPlanRequest req;
  req.tiers = {autoTier(1), autoTier(1), autoTier(1)};
  req.total_size = 3 * kGiB;
  const TierPlan plan = planTiers(req, xml("dram_cxl_nvm_no_memattrs"));
  ASSERT_EQ(plan.tiers.size(), 3u);
  EXPECT_EQ(plan.tiers[0].config.kind, TierKind::kDram);
  EXPECT_EQ(plan.tiers[0].config.nodes, std::vector<unsigned>{0});
  EXPECT_EQ(plan.tiers[1].config.kind, TierKind::kDram);
  EXPECT_EQ(plan.tiers[1].config.nodes, (std::vector<unsigned>{1, 2}));
  EXPECT_EQ(plan.tiers[1].reason, "auto: local CXL-DRAM node(s) 1,2, ratio 1GiB of 3GiB");
  EXPECT_EQ(plan.tiers[2].config.kind, TierKind::kDaxKmem);
  EXPECT_EQ(plan.tiers[2].config.nodes, std::vector<unsigned>{3});
}

// An unbound dram tier is ordinary DRAM: the auto tier after it gets the
// CXL expander, not nothing; a dram tier bound to the expander uses it up.
TEST(TierPlan, AnExplicitDramTierLeavesOrUsesUpTheCxlLevel) {
  TierPlanRequest req;
  req.tiers = {sized(TierKind::kDram, 64 * kMiB), autoTier(1)};
  req.total_size = 1 * kGiB;
  TierPlan plan = planTiers(req, xml("dram_cxl_nvm_no_memattrs"));
  EXPECT_EQ(plan.tiers[1].config.kind, TierKind::kDram);
  EXPECT_EQ(plan.tiers[1].config.nodes, (std::vector<unsigned>{1, 2}));
  req.tiers = {sized(TierKind::kDram, 64 * kMiB), sized(TierKind::kDram, 64 * kMiB, {1}), autoTier(1)};
  plan = planTiers(req, xml("dram_cxl_nvm_no_memattrs"));
  EXPECT_EQ(plan.tiers[2].config.kind, TierKind::kDaxKmem);
  EXPECT_EQ(plan.tiers[2].config.nodes, std::vector<unsigned>{3});
  req.tiers = {sized(TierKind::kDaxKmem, 64 * kMiB, {1})};
  expectPlanError(req, xml("dram_cxl_nvm"), 0, "NUMA node 1 is CXL-DRAM, not NVM");
}

TEST(TierPlan, RatiosSplitTheTotalAndRoundDownToSlabs) {
  TierPlanRequest req;
  req.tiers = {sized(TierKind::kDram, 0), sized(TierKind::kDram, 0), sized(TierKind::kDram, 0)};
  req.tiers[0].ratio = 1;
  req.tiers[1].ratio = 2;
  req.tiers[2].ratio = 5;
  req.tiers[0].name = "a";
  req.tiers[1].name = "b";
  req.tiers[2].name = "c";
  req.total_size = 800 * kMiB;
  TierPlan plan = planTiers(req, xml("one_dram"));
  EXPECT_EQ(plan.tiers[0].config.size, 100 * kMiB);
  EXPECT_EQ(plan.tiers[1].config.size, 200 * kMiB);
  EXPECT_EQ(plan.tiers[2].config.size, 500 * kMiB);
  // 64 MiB slabs: 100 -> 64, 200 -> 192, and the last takes the rest,
  // 800 - 256 = 544 -> 512: 12 of the 12.5 slabs the total holds.
  req.slab_size = 64 * kMiB;
  plan = planTiers(req, xml("one_dram"));
  EXPECT_EQ(plan.tiers[0].config.size, 64 * kMiB);
  EXPECT_EQ(plan.tiers[1].config.size, 192 * kMiB);
  EXPECT_EQ(plan.tiers[2].config.size, 512 * kMiB);
  EXPECT_EQ(plan.configs().size(), 3u);
  EXPECT_EQ(plan.configs()[2].name, "c");
}

TEST(TierPlan, ExplicitDaxKmemTakesEveryNvmNode) {
  TierPlanRequest req;
  req.tiers = {sized(TierKind::kDram, 1 * kGiB, {0}), sized(TierKind::kDaxKmem, 8 * kGiB)};
  const TierPlan plan = planTiers(req, xml("two_sockets"));
  EXPECT_EQ(plan.tiers[1].config.nodes, (std::vector<unsigned>{2, 3}));
  EXPECT_EQ(plan.tiers[1].config.size, 8 * kGiB);
}

TEST(TierPlan, ImpossiblePlansNameTheTier) {
  const Topology& one = xml("one_dram");
  const Topology& nvm = xml("dram_nvm");
  TierPlanRequest req;
  expectPlanError(req, one, -1, "no tiers to plan");

  req.tiers = {sized(TierKind::kDram, 64 * kMiB), autoTier(1)};
  req.tiers[1].size = 64 * kMiB;
  req.total_size = 1 * kGiB;
  expectPlanError(req, one, 1, "set size or ratio, not both");

  req.tiers = {sized(TierKind::kDram, 64 * kMiB), sized(TierKind::kDram, 0)};
  expectPlanError(req, one, 1, "needs a size or a ratio > 0");

  req.tiers = {sized(TierKind::kDram, 64 * kMiB), autoTier(-1)};
  expectPlanError(req, one, 1, "must be a finite number >= 0");

  req.tiers = {sized(TierKind::kDram, 64 * kMiB), autoTier(1)};
  req.total_size = 0;
  expectPlanError(req, one, 1, "a ratio needs the plan's total size");

  req.total_size = 64 * kMiB;
  expectPlanError(req, one, 1, "nothing is left of the total size 64MiB for ratio tiers");

  req.tiers = {sized(TierKind::kDram, 64 * kMiB), sized(TierKind::kDram, 64 * kMiB)};
  req.tiers[0].name = "x";
  req.tiers[1].name = "y";
  req.total_size = 100 * kMiB;
  expectPlanError(req, one, 1, "the tiers' sizes up to here (128MiB) exceed the total size 100MiB");

  req.total_size = 0;
  req.tiers[1].name = "x";
  expectPlanError(req, one, 1, "name 'x' is already used by tiers[0]");

  req.tiers = {sized(TierKind::kDram, 64 * kMiB, {1})};
  expectPlanError(req, nvm, 0, "NUMA node 1 is NVM; use kind dax-kmem");
  req.tiers = {sized(TierKind::kDram, 64 * kMiB, {5})};
  expectPlanError(req, nvm, 0, "NUMA node 5 does not exist (xml:");
  req.tiers = {sized(TierKind::kDram, 64 * kMiB), sized(TierKind::kDaxKmem, 64 * kMiB, {0})};
  expectPlanError(req, nvm, 1, "NUMA node 0 is DRAM, not NVM");
  req.tiers = {sized(TierKind::kDram, 64 * kMiB), sized(TierKind::kDaxKmem, 64 * kMiB)};
  expectPlanError(req, one, 1, "dax-kmem: no NVM (KMEM DAX) NUMA node in xml:");

  req.tiers = {sized(TierKind::kDram, 64 * kMiB), sized(TierKind::kPmemFile, 64 * kMiB)};
  expectPlanError(req, one, 1, "pmem-file needs a path");
  req.tiers[1].path = "/dev/shm";
  req.tiers[1].size = 8 * kMiB;
  expectPlanError(req, one, 1, "pmem-file size 8MiB is below the 16MiB minimum");
  req.tiers[1].size = 64 * kMiB;
  req.tiers[1].nodes = {0};
  expectPlanError(req, one, 1, "'nodes' does not apply to a pmem-file tier");

  req.tiers = {sized(TierKind::kDram, 1 * kMiB)};
  req.slab_size = 4 * kMiB;
  expectPlanError(req, one, 0, "size 1MiB is smaller than one slab (4MiB)");
  req.slab_size = 0;

  // Capacity: node 0 of dram_nvm.xml holds 16GiB.
  req.tiers = {sized(TierKind::kDram, 20 * kGiB, {0})};
  expectPlanError(req, nvm, 0, "20GiB on node(s) 0 does not fit: they hold 16GiB");
  req.tiers = {sized(TierKind::kDram, 10 * kGiB, {0}), sized(TierKind::kDram, 10 * kGiB, {0})};
  req.tiers[0].name = "a";
  req.tiers[1].name = "b";
  expectPlanError(req, nvm, 1, "earlier tiers already take 10GiB");
}

// Over every saved machine: a plan is concrete, in order, and sums to the total.
class TierPlanOnMachine : public ::testing::TestWithParam<const char*> {};

TEST_P(TierPlanOnMachine, AutoPlanIsConcreteAndSumsToTheTotal) {
  const Topology& topo = xml(GetParam());
  TierPlanRequest req;
  req.tiers = {autoTier(1), autoTier(7)};
  req.total_size = 8 * kGiB;
  req.slab_size = 4 * kMiB;
  req.pmem_dir = "/dev/shm";
  const TierPlan plan = planTiers(req, topo);
  ASSERT_EQ(plan.tiers.size(), 2u);
  uint64_t sum = 0;
  for (const PlannedTier& t : plan.tiers) {
    EXPECT_NE(t.config.kind, TierKind::kAuto);
    EXPECT_EQ(t.config.size % req.slab_size, 0u);
    EXPECT_EQ(t.config.ratio, 0.0);
    sum += t.config.size;
  }
  EXPECT_EQ(sum, req.total_size);
  EXPECT_EQ(plan.tiers[0].config.kind, TierKind::kDram);  // DRAM first everywhere
  // The second level: CXL-DRAM (a dram tier bound to it), else NVM, else the directory.
  const TierKind second = !topo.nodesOfKind(MemoryKind::kCxlDram).empty() ? TierKind::kDram
                          : topo.nodesOfKind(MemoryKind::kNvm).empty()    ? TierKind::kPmemFile
                                                                          : TierKind::kDaxKmem;
  EXPECT_EQ(plan.tiers[1].config.kind, second);
  // Planning the plan again gives the same plan.
  TierPlanRequest again = req;
  again.tiers = plan.configs();
  const TierPlan replanned = planTiers(again, topo);
  ASSERT_EQ(replanned.tiers.size(), plan.tiers.size());
  for (size_t i = 0; i < plan.tiers.size(); i++) {
    const TierConfig& a = plan.tiers[i].config;
    const TierConfig& b = replanned.tiers[i].config;
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.size, b.size);
    EXPECT_EQ(a.nodes, b.nodes);
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(replanned.tiers[i].reason, "as configured");
  }
}

INSTANTIATE_TEST_SUITE_P(TierPlanSavedMachines, TierPlanOnMachine,
                         ::testing::Values("one_dram", "dram_nvm", "two_sockets", "dram_cxl_nvm",
                                           "dram_cxl_nvm_no_memattrs"));

TEST(TierPlan, PlannedTiersOpenOnThisMachine) {
  TierPlanRequest req;
  req.tiers = {autoTier(1), autoTier(1)};
  req.total_size = 64 * kMiB;
  req.slab_size = 4 * kMiB;
  req.pmem_dir = "/dev/shm";
  const TierPlan plan = planTiers(req, Topology::system());
  ASSERT_EQ(plan.tiers.size(), 2u);
  for (const PlannedTier& t : plan.tiers) {
    auto tier = openTier(t.config, req.slab_size);
    EXPECT_EQ(tier->size(), 32 * kMiB) << t.config.name;
    EXPECT_EQ(tier->kind(), t.config.kind);
    tier->base()[0] = std::byte{1};
  }
}

}  // namespace
}  // namespace tiercache
