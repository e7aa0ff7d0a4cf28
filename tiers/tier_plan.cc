#include "tier_plan.h"
#include "../config/sizes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "../numa/topology.h"
#include "pmem_file_tier.h"

namespace tiercache {

namespace {

// One memory level an auto tier can take.
struct Level {
  TierKind kind;
  MemoryKind memory;            // what the nodes are (kDram for a pmem-file level)
  std::vector<unsigned> nodes;  // dram / dax-kmem
  std::string path;             // pmem-file
  std::string what;             // for reasons and errors
  // The level's worst node as the topology's memory attributes tell;
  // nullopt when a node has no value.
  std::optional<uint64_t> latency_ns;
  std::optional<uint64_t> bandwidth_mibs;
};

bool overlaps(const std::vector<unsigned>& a, const std::vector<unsigned>& b) {
  for (unsigned x : a) {
    if (std::find(b.begin(), b.end(), x) != b.end()) return true;
  }
  return false;
}

std::vector<unsigned> intersect(const std::vector<unsigned>& a, const std::vector<unsigned>& b) {
  std::vector<unsigned> out;
  for (unsigned x : a) {
    if (std::find(b.begin(), b.end(), x) != b.end()) out.push_back(x);
  }
  return out;
}

std::vector<unsigned> minus(const std::vector<unsigned>& a, const std::vector<unsigned>& b) {
  std::vector<unsigned> out;
  for (unsigned x : a) {
    if (std::find(b.begin(), b.end(), x) == b.end()) out.push_back(x);
  }
  return out;
}

// A node level's highest latency and lowest bandwidth: a tier spread over
// its nodes is as slow as the slowest of them.
void measure(Level& l, const Topology& topo) {
  bool allLatency = true, allBandwidth = true;
  uint64_t latency = 0, bandwidth = UINT64_MAX;
  for (unsigned n : l.nodes) {
    const NumaNode* node = topo.node(n);
    allLatency = allLatency && node && node->latency_ns;
    allBandwidth = allBandwidth && node && node->bandwidth_mibs;
    if (allLatency) latency = std::max(latency, *node->latency_ns);
    if (allBandwidth) bandwidth = std::min(bandwidth, *node->bandwidth_mibs);
  }
  if (allLatency) l.latency_ns = latency;
  if (allBandwidth) l.bandwidth_mibs = bandwidth;
}

// Orders the node levels by what the memory attributes (HMAT) measure, when
// every node level has a latency (lower first; bandwidth breaks ties) or
// else every one a bandwidth (higher first). Otherwise, and between equal
// levels, the kind order stays. The pmem_dir level stays last.
void orderByAttributes(std::vector<Level>& levels) {
  const auto end =
      std::find_if(levels.begin(), levels.end(), [](const Level& l) { return l.kind == TierKind::kPmemFile; });
  const bool byLatency = std::all_of(levels.begin(), end, [](const Level& l) { return l.latency_ns.has_value(); });
  const bool byBandwidth =
      std::all_of(levels.begin(), end, [](const Level& l) { return l.bandwidth_mibs.has_value(); });
  if (byLatency) {
    std::stable_sort(levels.begin(), end, [](const Level& a, const Level& b) {
      if (*a.latency_ns != *b.latency_ns) return *a.latency_ns < *b.latency_ns;
      return a.bandwidth_mibs.value_or(0) > b.bandwidth_mibs.value_or(0);
    });
  } else if (byBandwidth) {
    std::stable_sort(levels.begin(), end,
                     [](const Level& a, const Level& b) { return *a.bandwidth_mibs > *b.bandwidth_mibs; });
  }
  if (!byLatency && !byBandwidth) return;
  for (auto it = levels.begin(); it != end; ++it) {
    it->what += " (";
    if (it->latency_ns) it->what += "latency " + std::to_string(*it->latency_ns) + " ns";
    if (it->latency_ns && it->bandwidth_mibs) it->what += ", ";
    if (it->bandwidth_mibs) it->what += "bandwidth " + std::to_string(*it->bandwidth_mibs) + " MiB/s";
    it->what += ")";
  }
}

std::vector<Level> memoryLevels(const TierPlanRequest& req, const Topology& topo) {
  const std::string cpus = req.cpus.empty() ? topo.processCpus() : req.cpus;
  const std::vector<unsigned> local = topo.nodesLocalTo(cpus);
  const std::vector<unsigned> dram = topo.nodesOfKind(MemoryKind::kDram);
  const std::vector<unsigned> cxl = topo.nodesOfKind(MemoryKind::kCxlDram);
  const std::vector<unsigned> nvm = topo.nodesOfKind(MemoryKind::kNvm);
  std::vector<Level> levels;
  // CXL-DRAM: one level per group of nodes that the memory attributes do
  // not tell apart (a near and a far expander are two levels), in node
  // order. Other kinds: one level for all the nodes given.
  auto add = [&](TierKind kind, MemoryKind memory, const std::vector<unsigned>& nodes, const std::string& what) {
    using Key = std::pair<std::optional<uint64_t>, std::optional<uint64_t>>;
    std::vector<std::pair<Key, std::vector<unsigned>>> groups;
    for (unsigned n : nodes) {
      const NumaNode* node = topo.node(n);
      const Key key = memory == MemoryKind::kCxlDram ? Key{node->latency_ns, node->bandwidth_mibs} : Key{};
      auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == key; });
      if (g == groups.end())
        groups.push_back({key, {n}});
      else
        g->second.push_back(n);
    }
    for (auto& [key, group] : groups) {
      std::string w = what + " node(s) " + nodeListString(group);
      levels.push_back({kind, memory, std::move(group), "", std::move(w), std::nullopt, std::nullopt});
      measure(levels.back(), topo);
    }
  };
  // A process bound to cpus with no DRAM node of their own still needs a first tier.
  std::vector<unsigned> localDram = intersect(dram, local);
  const bool dramIsLocal = !localDram.empty();
  if (!dramIsLocal) localDram = dram;
  add(TierKind::kDram, MemoryKind::kDram, localDram, std::string(dramIsLocal ? "local" : "non-local") + " DRAM");
  // CXL memory expanders: DRAM behind a link, slower than local DRAM and
  // faster than NVM; a dram tier bound to their nodes.
  add(TierKind::kDram, MemoryKind::kCxlDram, intersect(cxl, local), "local CXL-DRAM");
  add(TierKind::kDram, MemoryKind::kCxlDram, minus(cxl, local), "remote CXL-DRAM");
  add(TierKind::kDaxKmem, MemoryKind::kNvm, intersect(nvm, local), "local NVM (KMEM DAX)");
  add(TierKind::kDaxKmem, MemoryKind::kNvm, minus(nvm, local), "remote NVM (KMEM DAX)");
  orderByAttributes(levels);
  if (!req.pmem_dir.empty()) {
    levels.push_back({TierKind::kPmemFile,
                      MemoryKind::kDram,
                      {},
                      req.pmem_dir,
                      "emulated PMEM in " + req.pmem_dir + (nvm.empty() ? " (no NVM node)" : " (after the NVM nodes)"),
                      std::nullopt,
                      std::nullopt});
  }
  return levels;
}

// Does an explicit tier use up this level?
bool uses(const TierConfig& t, const Level& level) {
  if (t.kind != level.kind) return false;
  if (t.kind == TierKind::kPmemFile) return true;
  // A dram tier left unbound takes ordinary memory, not a CXL expander's.
  if (t.nodes.empty()) return t.kind != TierKind::kDram || level.memory == MemoryKind::kDram;
  return overlaps(t.nodes, level.nodes);
}

std::string defaultName(TierKind kind) {
  switch (kind) {
    case TierKind::kDram: return "dram";
    case TierKind::kPmemFile: return "pmem";
    case TierKind::kDaxKmem: return "kmem";
    case TierKind::kAuto: break;
  }
  return "tier";
}

void checkNodes(int i, const TierConfig& t, const Topology& topo) {
  for (unsigned n : t.nodes) {
    const NumaNode* node = topo.node(n);
    if (!node) {
      std::vector<unsigned> have;
      for (const NumaNode& x : topo.nodes()) have.push_back(x.os_index);
      throw TierPlanError(i, "NUMA node " + std::to_string(n) + " does not exist (" + topo.source() +
                                 " has node(s) " + nodeListString(have) + ")");
    }
    if (t.kind == TierKind::kDram && node->kind == MemoryKind::kNvm) {
      throw TierPlanError(i, "NUMA node " + std::to_string(n) + " is NVM; use kind dax-kmem for KMEM DAX memory");
    }
    if (t.kind == TierKind::kDaxKmem && node->kind != MemoryKind::kNvm) {
      throw TierPlanError(i, "NUMA node " + std::to_string(n) + " is " + memoryKindName(node->kind) +
                                 ", not NVM; a dax-kmem tier needs a KMEM DAX node");
    }
  }
}

}  // namespace

std::vector<TierConfig> TierPlan::configs() const {
  std::vector<TierConfig> out;
  for (const PlannedTier& t : tiers) out.push_back(t.config);
  return out;
}

std::string TierPlan::describe() const {
  std::string out;
  for (size_t i = 0; i < tiers.size(); i++) {
    const TierConfig& c = tiers[i].config;
    out += "tier " + std::to_string(i) + " '" + c.name + "': " + tierKindName(c.kind) + ", " + formatSizeApprox(c.size);
    if (c.kind == TierKind::kPmemFile) out += ", dir " + c.path;
    if (!c.nodes.empty()) out += ", node(s) " + nodeListString(c.nodes);
    if (c.kind == TierKind::kDram && !c.nodes.empty()) out += std::string(", bind ") + bindPolicyName(c.bind_policy);
    if (c.kind == TierKind::kDaxKmem) out += ", bind strict";
    out += "  [" + tiers[i].reason + "]\n";
  }
  return out;
}

TierPlan planTiers(const TierPlanRequest& req, const Topology& topo) {
  if (req.tiers.empty()) throw TierPlanError(-1, "no tiers to plan");
  const int n = static_cast<int>(req.tiers.size());

  // Sizes first: they need nothing from the machine.
  uint64_t sized = 0;
  long double ratioSum = 0;
  int firstRatio = -1;
  for (int i = 0; i < n; i++) {
    const TierConfig& t = req.tiers[i];
    if (!(t.ratio >= 0) || std::isinf(t.ratio)) {
      throw TierPlanError(i, "ratio " + std::to_string(t.ratio) + " must be a finite number >= 0");
    }
    if (t.size > 0 && t.ratio > 0) throw TierPlanError(i, "set size or ratio, not both");
    if (t.size == 0 && t.ratio == 0) throw TierPlanError(i, "needs a size or a ratio > 0");
    if (t.size > 0) {
      sized += t.size;
    } else {
      ratioSum += t.ratio;
      if (firstRatio < 0) firstRatio = i;
    }
  }
  if (firstRatio >= 0 && req.total_size == 0) {
    throw TierPlanError(firstRatio, "a ratio needs the plan's total size (total_size is 0)");
  }
  if (req.total_size > 0 && sized > req.total_size) {
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) {
      sum += req.tiers[i].size;
      if (sum > req.total_size) {
        throw TierPlanError(i, "the tiers' sizes up to here (" + formatSizeApprox(sum) +
                                   ") exceed the total size " + formatSizeApprox(req.total_size));
      }
    }
  }
  if (firstRatio >= 0 && sized >= req.total_size) {
    throw TierPlanError(firstRatio, "nothing is left of the total size " + formatSizeApprox(req.total_size) +
                                        " for ratio tiers after the sized tiers take " + formatSizeApprox(sized));
  }
  const uint64_t remaining = req.total_size > sized ? req.total_size - sized : 0;
  int lastRatio = -1;
  for (int i = 0; i < n; i++) {
    if (req.tiers[i].size == 0) lastRatio = i;
  }
  uint64_t ratioPlanned = 0;  // bytes the ratio tiers before this one got

  const std::vector<Level> levels = memoryLevels(req, topo);
  size_t cursor = 0;  // next level an auto tier may take
  TierPlan plan;
  std::set<std::string> names;
  std::map<std::vector<unsigned>, uint64_t> nodeUse;  // bytes planned per node set

  for (int i = 0; i < n; i++) {
    const TierConfig& in = req.tiers[i];
    PlannedTier out{in, ""};
    TierConfig& c = out.config;
    const char* autoName = nullptr;  // the default name of an auto tier, when not its kind's

    if (in.kind == TierKind::kAuto) {
      if (cursor >= levels.size()) {
        std::string have;
        for (const Level& l : levels) have += (have.empty() ? "" : "; ") + l.what;
        throw TierPlanError(i, "auto: no memory level left for this tier (" + topo.source() + " offers: " +
                                   (have.empty() ? "nothing" : have) +
                                   "); give a pmem_dir for emulated PMEM or set the kind");
      }
      const Level& l = levels[cursor++];
      c.kind = l.kind;
      c.nodes = l.nodes;
      c.path = l.path;
      if (l.memory == MemoryKind::kCxlDram) autoName = "cxl";
      out.reason = "auto: " + l.what;
    } else {
      for (size_t k = 0; k < levels.size(); k++) {
        if (uses(in, levels[k])) cursor = std::max(cursor, k + 1);
      }
      out.reason = "as configured";
      if (c.kind == TierKind::kDaxKmem && c.nodes.empty()) {
        c.nodes = topo.nodesOfKind(MemoryKind::kNvm);
        if (c.nodes.empty()) {
          throw TierPlanError(i, "dax-kmem: no NVM (KMEM DAX) NUMA node in " + topo.source() +
                                     "; use kind pmem-file (or auto with a pmem_dir) to emulate PMEM");
        }
        out.reason = "as configured: every NVM node";
      }
      if (c.kind == TierKind::kPmemFile && c.path.empty()) {
        if (req.pmem_dir.empty()) {
          throw TierPlanError(i, "pmem-file needs a path (the directory its file is created in)");
        }
        c.path = req.pmem_dir;
        out.reason = "as configured, in the plan's pmem_dir";
      }
      if (const char* why = tierNodesProblem(c)) throw TierPlanError(i, std::string("'nodes' ") + why);
      checkNodes(i, c, topo);
    }

    // Size.
    if (in.size == 0) {
      // The last ratio tier takes what the others' rounding left, so the
      // plan uses the total up to one slab.
      const long double share = static_cast<long double>(remaining) * in.ratio / ratioSum;
      c.size = i == lastRatio ? remaining - ratioPlanned : static_cast<uint64_t>(share);
      out.reason += ", ratio " + formatSizeApprox(static_cast<uint64_t>(share)) + " of " +
                    formatSizeApprox(remaining);
    }
    const uint64_t unrounded = c.size;
    if (req.slab_size > 0) c.size = c.size / req.slab_size * req.slab_size;
    if (in.size == 0) ratioPlanned += c.size;
    c.ratio = 0;
    if (c.size == 0) {
      throw TierPlanError(i, "size " + formatSizeApprox(unrounded) + " is smaller than one slab (" +
                                 formatSizeApprox(req.slab_size) + ")");
    }
    if (c.kind == TierKind::kPmemFile && c.size < kPmemMinSize) {
      throw TierPlanError(i, "pmem-file size " + formatSizeApprox(c.size) + " is below the " +
                                 formatSizeApprox(kPmemMinSize) + " minimum for a PMEM tier");
    }
    if (!c.nodes.empty()) {
      uint64_t capacity = 0;
      bool known = true;
      for (unsigned node : c.nodes) {
        const NumaNode* nn = topo.node(node);
        if (!nn || nn->capacity == 0) known = false;
        if (nn) capacity += nn->capacity;
      }
      std::vector<unsigned> key = c.nodes;
      std::sort(key.begin(), key.end());
      uint64_t& used = nodeUse[key];
      used += c.size;
      if (known && used > capacity) {
        throw TierPlanError(i, formatSizeApprox(c.size) + " on node(s) " + nodeListString(c.nodes) +
                                   " does not fit: they hold " + formatSizeApprox(capacity) +
                                   (used > c.size ? " and earlier tiers already take " + formatSizeApprox(used - c.size)
                                                  : std::string()));
      }
    }

    // Name.
    if (c.name.empty()) {
      c.name = autoName ? autoName : defaultName(c.kind);
      if (names.count(c.name)) c.name += std::to_string(i);
    }
    if (!names.insert(c.name).second) {
      int other = 0;
      for (int j = 0; j < i; j++) {
        if (plan.tiers[j].config.name == c.name) other = j;
      }
      throw TierPlanError(i, "name '" + c.name + "' is already used by tiers[" + std::to_string(other) + "]");
    }
    plan.tiers.push_back(std::move(out));
  }
  return plan;
}

}  // namespace tiercache
