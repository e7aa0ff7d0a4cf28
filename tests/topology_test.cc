// Topology: hwloc discovery from saved XML machines and from this machine,
// and memory binding under each BindPolicy.
#include "numa/topology.h"
#include "config/sizes.h"
#include "fs_test_util.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace tiercache {
namespace {

using test::TempDir;
using test::WarningCapture;
using test::dataFile;

// An anonymous mapping that no page of has been touched yet.
struct Mapping {
  size_t len;
  void* p;
  explicit Mapping(size_t n) : len(n), p(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) {
    if (p == MAP_FAILED) std::abort();
  }
  ~Mapping() { munmap(p, len); }
};

// The kernel's memory policy for the page at addr (get_mempolicy(2) with
// MPOL_F_ADDR): mode and the first 64 nodes of its nodemask.
struct Policy {
  int mode = -1;
  unsigned long mask = 0;
};
Policy policyAt(void* addr) {
  Policy pol;
  unsigned long mask[16] = {};
  constexpr unsigned long kMpolFAddr = 2;
  if (syscall(SYS_get_mempolicy, &pol.mode, mask, sizeof(mask) * 8, addr, kMpolFAddr) != 0) pol.mode = -1;
  pol.mask = mask[0];
  return pol;
}
constexpr int kMpolBind = 2;

TEST(Topology, OneDramNodeFromXml) {
  const Topology topo = Topology::fromXml(dataFile("one_dram.xml"));
  EXPECT_FALSE(topo.isThisSystem());
  EXPECT_EQ(topo.source(), "xml:" + dataFile("one_dram.xml"));
  ASSERT_EQ(topo.nodes().size(), 1u);
  const NumaNode& n = topo.nodes()[0];
  EXPECT_EQ(n.os_index, 0u);
  EXPECT_EQ(n.kind, MemoryKind::kDram);  // no subtype at all -> DRAM
  EXPECT_EQ(n.subtype, "");
  EXPECT_EQ(n.capacity, 8 * kGiB);
  EXPECT_EQ(n.cpus, "0-1");
  EXPECT_EQ(n.package, 0);
  EXPECT_EQ(n.dax_device, "");
  EXPECT_FALSE(n.bandwidth_mibs.has_value());
  EXPECT_FALSE(n.latency_ns.has_value());
  ASSERT_EQ(topo.packages().size(), 1u);
  EXPECT_EQ(topo.packages()[0].nodes, std::vector<unsigned>{0});
  EXPECT_EQ(topo.allCpus(), "0-1");
  EXPECT_EQ(topo.processCpus(), "0-1");  // a saved machine has no process: all its cpus
  EXPECT_TRUE(topo.nodesOfKind(MemoryKind::kNvm).empty());
  EXPECT_EQ(topo.node(1), nullptr);
}

TEST(Topology, DramPlusCpulessNvmNodeFromXml) {
  const Topology topo = Topology::fromXml(dataFile("dram_nvm.xml"));
  ASSERT_EQ(topo.nodes().size(), 2u);
  const NumaNode& dram = topo.nodes()[0];
  EXPECT_EQ(dram.os_index, 0u);
  EXPECT_EQ(dram.kind, MemoryKind::kDram);
  EXPECT_EQ(dram.subtype, "DRAM");
  EXPECT_EQ(dram.capacity, 16 * kGiB);
  EXPECT_EQ(dram.cpus, "0-3");
  EXPECT_EQ(dram.package, 0);
  EXPECT_EQ(dram.bandwidth_mibs, std::optional<uint64_t>(20000));
  EXPECT_EQ(dram.latency_ns, std::optional<uint64_t>(90));

  const NumaNode& nvm = topo.nodes()[1];
  EXPECT_EQ(nvm.os_index, 1u);
  EXPECT_EQ(nvm.kind, MemoryKind::kNvm);
  EXPECT_EQ(nvm.subtype, "NVM");
  EXPECT_EQ(nvm.capacity, 128 * kGiB);
  // Attached to the machine, not to the package: hwloc's place for a node
  // without cpus of its own. Its locality is then the whole machine.
  EXPECT_EQ(nvm.package, -1);
  EXPECT_EQ(nvm.cpus, "0-3");
  EXPECT_EQ(nvm.dax_device, "dax0.0");
  EXPECT_EQ(nvm.dax_type, "NVM");
  EXPECT_EQ(nvm.dax_parent, "LNXSYSTM:00/LNXSYBUS:00/ACPI0012:00/ndbus0/region0");
  EXPECT_EQ(nvm.bandwidth_mibs, std::optional<uint64_t>(8000));
  EXPECT_EQ(nvm.latency_ns, std::optional<uint64_t>(300));

  EXPECT_EQ(topo.nodesOfKind(MemoryKind::kNvm), std::vector<unsigned>{1});
  EXPECT_EQ(topo.nodesOfKind(MemoryKind::kDram), std::vector<unsigned>{0});
  ASSERT_EQ(topo.packages().size(), 1u);
  EXPECT_EQ(topo.packages()[0].nodes, std::vector<unsigned>{0});
  EXPECT_EQ(topo.node(1), &topo.nodes()[1]);
}

TEST(Topology, TwoSocketsEachWithDramAndNvmFromXml) {
  const Topology topo = Topology::fromXml(dataFile("two_socket_dram_nvm.xml"));
  ASSERT_EQ(topo.nodes().size(), 4u);
  struct Want {
    unsigned os;
    MemoryKind kind;
    uint64_t capacity;
    int package;
    const char* cpus;
    const char* dax;
    uint64_t bw, lat;
  };
  const Want want[] = {
      {0, MemoryKind::kDram, 96 * kGiB, 0, "0-1", "", 40000, 80},
      {1, MemoryKind::kDram, 96 * kGiB, 1, "2-3", "", 40000, 80},
      {2, MemoryKind::kNvm, 512 * kGiB, 0, "0-1", "dax0.0", 10000, 350},
      {3, MemoryKind::kNvm, 512 * kGiB, 1, "2-3", "dax1.0", 10000, 350},
  };
  for (const Want& w : want) {
    SCOPED_TRACE("node " + std::to_string(w.os));
    const NumaNode* n = topo.node(w.os);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->kind, w.kind);
    EXPECT_EQ(n->capacity, w.capacity);
    EXPECT_EQ(n->package, w.package);
    EXPECT_EQ(n->cpus, w.cpus);
    EXPECT_EQ(n->dax_device, w.dax);
    EXPECT_EQ(n->bandwidth_mibs, std::optional<uint64_t>(w.bw));
    EXPECT_EQ(n->latency_ns, std::optional<uint64_t>(w.lat));
  }
  ASSERT_EQ(topo.packages().size(), 2u);
  EXPECT_EQ(topo.packages()[0].nodes, (std::vector<unsigned>{0, 2}));
  EXPECT_EQ(topo.packages()[0].cpus, "0-1");
  EXPECT_EQ(topo.packages()[1].nodes, (std::vector<unsigned>{1, 3}));
  EXPECT_EQ(topo.nodesLocalTo("0"), (std::vector<unsigned>{0, 2}));
  EXPECT_EQ(topo.nodesLocalTo("2-3"), (std::vector<unsigned>{1, 3}));
  EXPECT_EQ(topo.nodesLocalTo("1-2"), (std::vector<unsigned>{0, 1, 2, 3}));
  EXPECT_EQ(topo.nodesOfKind(MemoryKind::kNvm), (std::vector<unsigned>{2, 3}));
  EXPECT_THROW(topo.nodesLocalTo("zero"), TopologyError);
}

TEST(Topology, FromXmlNamesAMissingFile) {
  const std::string path = "/nonexistent/tiercache/topo.xml";
  try {
    Topology::fromXml(path);
    FAIL() << "loaded a missing file";
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

TEST(Topology, FromXmlRejectsBadXmlNamingThePath) {
  char path[] = "/tmp/tiercache-topo-XXXXXX.xml";
  const int fd = mkstemps(path, 4);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    std::ofstream(path) << "<?xml version=\"1.0\"?>\n<topology version=\"2.0\"><object type=";
  }
  try {
    Topology::fromXml(path);
    ADD_FAILURE() << "loaded a truncated XML file";
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find(std::string("cannot load topology XML '") + path + "'"), std::string::npos)
        << e.what();
  }
  std::remove(path);
}

TEST(Topology, FromXmlRejectsCommentsAndSaysSo) {
  // hwloc 2.9's XML loader refuses comments; the error must point there.
  std::ifstream in(dataFile("one_dram.xml"));
  std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string root = "<topology version=\"2.0\">\n";
  const size_t at = xml.find(root);
  ASSERT_NE(at, std::string::npos);
  xml.insert(at + root.size(), "  <!-- hand-written -->\n");
  char path[] = "/tmp/tiercache-topo-XXXXXX.xml";
  const int fd = mkstemps(path, 4);
  ASSERT_GE(fd, 0);
  close(fd);
  { std::ofstream(path) << xml; }
  try {
    Topology::fromXml(path);
    ADD_FAILURE() << "loaded XML with a comment";
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("without comments"), std::string::npos) << e.what();
  }
  std::remove(path);
}

TEST(Topology, DetectsThisMachine) {
  const Topology topo = Topology::detect();
  EXPECT_TRUE(topo.isThisSystem());
  EXPECT_EQ(topo.source(), "this machine");
  ASSERT_FALSE(topo.nodes().empty());
  for (const NumaNode& n : topo.nodes()) {
    EXPECT_GT(n.capacity, 0u) << "node " << n.os_index;
  }
  EXPECT_FALSE(topo.allCpus().empty());
  EXPECT_FALSE(topo.processCpus().empty());
  // This process runs somewhere, so some node is local to it.
  EXPECT_FALSE(topo.nodesLocalTo(topo.processCpus()).empty());
  EXPECT_EQ(&Topology::system(), &Topology::system());
  EXPECT_EQ(Topology::system().nodes().size(), topo.nodes().size());
}

TEST(Topology, StrictBindingSetsTheKernelPolicy) {
  const Topology& topo = Topology::system();
  const unsigned node = topo.nodes().front().os_index;
  ASSERT_LT(node, 64u);
  Mapping m(1 << 20);
  EXPECT_EQ(topo.bindArea(m.p, m.len, {node}, BindPolicy::kStrict), "");
  const Policy pol = policyAt(m.p);
  EXPECT_EQ(pol.mode, kMpolBind);
  EXPECT_EQ(pol.mask, 1ul << node);
  static_cast<char*>(m.p)[0] = 1;  // the bound page can be touched
}

TEST(Topology, StrictBindingToAMissingNodeThrows) {
  Mapping m(1 << 20);
  try {
    Topology::system().bindArea(m.p, m.len, {999}, BindPolicy::kStrict);
    FAIL() << "bound to node 999";
  } catch (const BindError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot bind 1048576 bytes to NUMA node(s) 999: NUMA node 999 does not exist"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NE(policyAt(m.p).mode, kMpolBind);
}

TEST(Topology, AdvisoryBindingFailureWarnsAndContinues) {
  WarningCapture capture;
  Mapping m(1 << 20);
  const std::string w = Topology::system().bindArea(m.p, m.len, {999}, BindPolicy::kAdvisory);
  EXPECT_NE(w.find("NUMA node 999 does not exist"), std::string::npos) << w;
  EXPECT_NE(w.find("advisory"), std::string::npos) << w;
  ASSERT_EQ(capture.warnings.size(), 1u);
  EXPECT_EQ(capture.warnings[0], w);
  EXPECT_NE(policyAt(m.p).mode, kMpolBind);
}

TEST(Topology, PolicyNoneNeverBinds) {
  WarningCapture capture;
  Mapping m(1 << 20);
  const unsigned node = Topology::system().nodes().front().os_index;
  EXPECT_EQ(Topology::system().bindArea(m.p, m.len, {node}, BindPolicy::kNone), "");
  EXPECT_EQ(Topology::system().bindArea(m.p, m.len, {999}, BindPolicy::kNone), "");
  EXPECT_TRUE(capture.warnings.empty());
  EXPECT_NE(policyAt(m.p).mode, kMpolBind);
}

TEST(Topology, BindingOnALoadedTopologyIsRefusedNotFaked) {
  const Topology topo = Topology::fromXml(dataFile("one_dram.xml"));
  Mapping m(1 << 20);
  try {
    topo.bindArea(m.p, m.len, {0}, BindPolicy::kStrict);
    FAIL() << "a topology loaded from XML claimed to bind";
  } catch (const BindError& e) {
    EXPECT_NE(std::string(e.what()).find("loaded from xml:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no-ops"), std::string::npos) << e.what();
  }
  WarningCapture capture;
  EXPECT_NE(topo.bindArea(m.p, m.len, {0}, BindPolicy::kAdvisory).find("loaded from xml:"), std::string::npos);
  EXPECT_EQ(capture.warnings.size(), 1u);
  EXPECT_NE(policyAt(m.p).mode, kMpolBind);
}

// A CXL memory expander is CXL-DRAM by its subtype (hwloc >= 2.10) or, with
// no subtype, by hwloc's CXLDevice info attribute; its memory attributes
// are read like any node's.
TEST(Topology, CxlExpandersAreCxlDram) {
  const Topology topo = Topology::fromXml(dataFile("dram_cxl_nvm.xml"));
  EXPECT_EQ(topo.nodesOfKind(MemoryKind::kCxlDram), (std::vector<unsigned>{1, 2}));
  EXPECT_EQ(topo.nodesOfKind(MemoryKind::kDram), std::vector<unsigned>{0});
  EXPECT_EQ(topo.nodesOfKind(MemoryKind::kNvm), std::vector<unsigned>{3});
  const NumaNode& far = *topo.node(2);
  EXPECT_EQ(far.subtype, "CXL-DRAM");
  EXPECT_EQ(far.capacity, 128 * kGiB);
  EXPECT_EQ(far.latency_ns, 400u);
  EXPECT_EQ(far.bandwidth_mibs, 6000u);
  const Topology bare = Topology::fromXml(dataFile("dram_cxl_nvm_no_memattrs.xml"));
  EXPECT_EQ(bare.node(2)->subtype, "");
  EXPECT_EQ(bare.node(2)->kind, MemoryKind::kCxlDram);
  EXPECT_EQ(bare.node(2)->latency_ns, std::nullopt);
  EXPECT_EQ(bare.nodesOfKind(MemoryKind::kCxlDram), (std::vector<unsigned>{1, 2}));
  EXPECT_STREQ(memoryKindName(MemoryKind::kCxlDram), "CXL-DRAM");
}

TEST(Topology, NamesRoundTrip) {
  for (BindPolicy p : {BindPolicy::kNone, BindPolicy::kAdvisory, BindPolicy::kStrict}) {
    EXPECT_EQ(bindPolicyFromName(bindPolicyName(p)), p);
  }
  EXPECT_EQ(bindPolicyFromName("Strict"), std::nullopt);
  EXPECT_STREQ(memoryKindName(MemoryKind::kNvm), "NVM");
  EXPECT_EQ(nodeListString({0, 2, 3}), "0,2,3");
  EXPECT_EQ(nodeListString({}), "");
}

}  // namespace
}  // namespace tiercache
