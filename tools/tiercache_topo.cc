// tiercache-topo: what memory this machine (or a saved hwloc XML machine)
// offers to tiercache, and the tier plan it would get: NUMA nodes with kind,
// capacity, locality, DAX device and memory attributes, then the ordered
// tiers. Like lstopo, but about tiers.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "allocator/cache_config.h"
#include "numa/topology.h"
#include "tiers/dax_kmem_tier.h"
#include "tiers/tier_plan.h"

namespace {

using namespace tiercache;
using nlohmann::json;

constexpr const char* kUsage =
    "usage: tiercache-topo [options]\n"
    "  --xml FILE       read a saved hwloc topology (lstopo --of xml) instead of this machine\n"
    "  --config FILE    plan the tiers of a cache config (JSON); default: auto tiers\n"
    "  --total SIZE     total cache size split by the tiers' ratios (default 1GiB)\n"
    "  --ratios A:B:..  one auto tier per number, sized by ratio (default 1:4 when a second\n"
    "                   level exists, else 1); ignored with --config\n"
    "  --pmem-dir DIR   directory for emulated PMEM where no NVM node exists\n"
    "  --cpus LIST      plan for a process on these cpus (\"0-3\"); default: this process\n"
    "  --slab SIZE      round tier sizes down to this slab size (default: config's, or 4MiB)\n"
    "  --json           machine-readable output\n"
    "  -h, --help       this text\n";

struct Options {
  std::string xml;
  std::string config;
  std::optional<uint64_t> total;
  std::string ratios;
  std::string pmemDir;
  std::string cpus;
  std::optional<uint64_t> slab;
  bool json = false;
};

[[noreturn]] void usageError(const std::string& what) {
  std::fprintf(stderr, "tiercache-topo: %s\n%s", what.c_str(), kUsage);
  std::exit(2);
}

Options parseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--xml") {
      o.xml = value();
    } else if (a == "--config") {
      o.config = value();
    } else if (a == "--total") {
      o.total = parseSize(value(), "--total");
    } else if (a == "--ratios") {
      o.ratios = value();
    } else if (a == "--pmem-dir") {
      o.pmemDir = value();
    } else if (a == "--cpus") {
      o.cpus = value();
    } else if (a == "--slab") {
      o.slab = parseSize(value(), "--slab");
    } else if (a == "--json") {
      o.json = true;
    } else {
      usageError("unknown option '" + a + "'");
    }
  }
  return o;
}

std::vector<double> parseRatios(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ':')) {
    char* end = nullptr;
    const double r = std::strtod(part.c_str(), &end);
    if (part.empty() || *end != '\0' || !(r > 0)) usageError("--ratios: '" + part + "' is not a ratio > 0");
    out.push_back(r);
  }
  if (out.empty()) usageError("--ratios is empty");
  return out;
}

// What the --config file's cache will spend on its own structures before
// storing an item (CacheConfig::metadataBytes), for the report.
std::optional<uint64_t> gConfigMetadataBytes;

TierPlanRequest makeRequest(const Options& o, const Topology& topo) {
  TierPlanRequest req;
  req.total_size = o.total.value_or(1ull << 30);
  req.pmem_dir = o.pmemDir;
  req.cpus = o.cpus;
  if (!o.config.empty()) {
    const CacheConfig cfg = CacheConfig::fromJsonFile(o.config);
    gConfigMetadataBytes = cfg.metadataBytes();
    req.tiers = cfg.tiers;
    req.slab_size = o.slab.value_or(cfg.slab_size);
    // The config's own total and directory, unless overridden on the command line.
    req.total_size = o.total.value_or(cfg.total_size);
    if (o.pmemDir.empty()) req.pmem_dir = cfg.pmem_dir;
    return req;
  }
  req.slab_size = o.slab.value_or(4ull << 20);
  std::string ratios = o.ratios;
  if (ratios.empty()) {
    const bool secondLevel = !topo.nodesOfKind(MemoryKind::kNvm).empty() ||
                             !topo.nodesOfKind(MemoryKind::kCxlDram).empty() || !o.pmemDir.empty();
    ratios = secondLevel ? "1:4" : "1";
  }
  for (double r : parseRatios(ratios)) {
    TierConfig t;
    t.kind = TierKind::kAuto;
    t.ratio = r;
    req.tiers.push_back(t);
  }
  return req;
}

std::string optValue(const std::optional<uint64_t>& v, const char* unit) {
  return v ? std::to_string(*v) + " " + unit : std::string("?");
}

std::string nodeLine(const NumaNode& n) {
  std::string s = "NUMANode P#" + std::to_string(n.os_index) + "  " + memoryKindName(n.kind);
  if (!n.subtype.empty() && n.subtype != memoryKindName(n.kind)) s += " (" + n.subtype + ")";
  s += "  " + formatSizeApprox(n.capacity);
  s += "  cpus " + (n.cpus.empty() ? std::string("none") : n.cpus);
  s += "  bandwidth " + optValue(n.bandwidth_mibs, "MiB/s") + ", latency " + optValue(n.latency_ns, "ns");
  if (!n.dax_device.empty()) {
    s += "\n      DAX device " + n.dax_device;
    if (!n.dax_type.empty()) s += ", type " + n.dax_type;
    if (!n.dax_parent.empty()) s += ", parent " + n.dax_parent;
  }
  return s;
}

void printText(const Topology& topo, const TierPlanRequest& req, const std::optional<TierPlan>& plan,
               const std::string& planError, std::optional<bool> memkindKmem) {
  std::cout << "Machine: " << topo.source() << ", cpus " << topo.allCpus() << ", planning for cpus "
            << (req.cpus.empty() ? topo.processCpus() : req.cpus) << "\n";
  for (const Package& p : topo.packages()) {
    std::cout << "  Package P#" << p.os_index << "  cpus " << p.cpus << "\n";
    for (unsigned n : p.nodes) std::cout << "    " << nodeLine(*topo.node(n)) << "\n";
  }
  bool header = false;
  for (const NumaNode& n : topo.nodes()) {
    if (n.package >= 0) continue;
    if (!header) std::cout << "  Outside any package:\n";
    header = true;
    std::cout << "    " << nodeLine(n) << "\n";
  }
  std::cout << "Memory:";
  for (MemoryKind k :
       {MemoryKind::kDram, MemoryKind::kCxlDram, MemoryKind::kNvm, MemoryKind::kHbm, MemoryKind::kOther}) {
    uint64_t total = 0;
    for (const NumaNode& n : topo.nodes()) total += n.kind == k ? n.capacity : 0;
    std::cout << (k == MemoryKind::kDram ? " " : ", ") << memoryKindName(k) << " " << formatSizeApprox(total);
  }
  std::cout << "\n";
  if (memkindKmem) {
    std::cout << "memkind MEMKIND_DAX_KMEM: " << (*memkindKmem ? "available" : "not available") << "\n";
  }
  std::cout << "Plan ("
            << (req.total_size ? "total " + formatSizeApprox(req.total_size) : std::string("sized tiers")) << ", slab "
            << formatSizeApprox(req.slab_size)
            << (req.pmem_dir.empty() ? std::string(", no pmem dir") : ", pmem dir " + req.pmem_dir) << "):\n";
  if (plan) {
    std::istringstream lines(plan->describe());
    for (std::string line; std::getline(lines, line);) std::cout << "  " << line << "\n";
  } else {
    std::cout << "  error: " << planError << "\n";
  }
}

json toJson(const Topology& topo, const TierPlanRequest& req, const std::optional<TierPlan>& plan,
            const std::optional<TierPlanError>& planError, std::optional<bool> memkindKmem) {
  auto opt = [](const std::optional<uint64_t>& v) { return v ? json(*v) : json(nullptr); };
  json j;
  j["source"] = topo.source();
  j["this_system"] = topo.isThisSystem();
  j["cpus"] = topo.allCpus();
  j["process_cpus"] = req.cpus.empty() ? topo.processCpus() : req.cpus;
  j["memkind_dax_kmem"] = memkindKmem ? json(*memkindKmem) : json(nullptr);
  j["packages"] = json::array();
  for (const Package& p : topo.packages()) {
    j["packages"].push_back({{"os_index", p.os_index}, {"cpus", p.cpus}, {"nodes", p.nodes}});
  }
  j["nodes"] = json::array();
  for (const NumaNode& n : topo.nodes()) {
    j["nodes"].push_back({{"os_index", n.os_index},
                          {"kind", memoryKindName(n.kind)},
                          {"subtype", n.subtype},
                          {"capacity", n.capacity},
                          {"cpus", n.cpus},
                          {"package", n.package >= 0 ? json(n.package) : json(nullptr)},
                          {"dax_device", n.dax_device},
                          {"dax_type", n.dax_type},
                          {"dax_parent", n.dax_parent},
                          {"bandwidth_mibs", opt(n.bandwidth_mibs)},
                          {"latency_ns", opt(n.latency_ns)}});
  }
  json p;
  p["total_size"] = req.total_size;
  p["slab_size"] = req.slab_size;
  p["pmem_dir"] = req.pmem_dir;
  if (plan) {
    p["tiers"] = json::array();
    for (const PlannedTier& t : plan->tiers) {
      p["tiers"].push_back({{"name", t.config.name},
                            {"kind", tierKindName(t.config.kind)},
                            {"size", t.config.size},
                            {"nodes", t.config.nodes},
                            {"path", t.config.path},
                            {"bind_policy", t.config.kind == TierKind::kDaxKmem
                                                ? "strict"
                                                : bindPolicyName(t.config.bind_policy)},
                            {"reason", t.reason}});
    }
  } else if (planError) {
    p["error"] = {{"index", planError->index()}, {"message", planError->what()}};
  }
  j["plan"] = p;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parseArgs(argc, argv);
    const Topology topo = o.xml.empty() ? Topology::detect() : Topology::fromXml(o.xml);
    const TierPlanRequest req = makeRequest(o, topo);
    std::optional<TierPlan> plan;
    std::optional<TierPlanError> planError;
    try {
      plan = planTiers(req, topo);
    } catch (const TierPlanError& e) {
      planError = e;
    }
    // memkind speaks only of this machine.
    std::optional<bool> memkindKmem;
    if (topo.isThisSystem()) memkindKmem = DaxKmemTier::memkindDaxKmemAvailable();
    if (o.json) {
      json j = toJson(topo, req, plan, planError, memkindKmem);
      if (gConfigMetadataBytes) j["config_metadata_bytes"] = *gConfigMetadataBytes;
      std::cout << j.dump(2) << "\n";
    } else {
      printText(topo, req, plan, planError ? planError->what() : "", memkindKmem);
      if (gConfigMetadataBytes) {
        std::printf("config metadata: %s before any item (index, lock stripes, slab and class records; at most)\n",
                    formatSize(*gConfigMetadataBytes).c_str());
      }
    }
    return plan ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tiercache-topo: %s\n", e.what());
    return 2;
  }
}
