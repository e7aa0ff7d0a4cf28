// Tier planner: turns the configured tiers (some possibly kind "auto", some
// sized by ratio) and a Topology into the ordered list of concrete tiers
// that openTier() can open: kind, NUMA node(s) or directory, size.
//
// Auto tiers take the machine's memory levels in order, fastest first:
//   1. DRAM nodes local to the process (the initiator cpus),
//   2. CXL-DRAM nodes local to the process, then the other CXL-DRAM nodes
//      (planned as dram tiers bound to them; expanders that the memory
//      attributes tell apart are separate levels),
//   3. NVM (KMEM DAX) nodes local to the process,
//   4. the other NVM nodes,
//   5. the pmem_dir, as emulated PMEM (file-backed) when one is given:
//      it stands in for NVM on hosts without NVM nodes; always last.
// When the topology has memory attributes (ACPI HMAT) for every node level,
// levels 1-4 are ordered by them instead: lower latency first, higher
// bandwidth breaking ties (bandwidth alone when no latency is reported);
// equal levels keep the order above. A level's figures are its slowest
// node's, each seen from the node's own cpus (hwloc's best initiator for a
// node without cpus).
// Each auto tier takes the next level after the tiers before it; an
// explicit tier uses up the levels of its kind (and nodes), so [dram, auto]
// gives the auto tier CXL or NVM, not DRAM again (an unbound dram tier uses
// up ordinary DRAM only). Remote DRAM, HBM and "other" nodes are never
// picked automatically: name them with kind dram + nodes.
//
// Sizes: a tier has a size, or (size 0) a ratio; the ratio tiers split
// what is left of total_size after the sized tiers, in proportion to their
// ratios (as cachebench's memoryTiers do), rounded down to whole slabs.
//
// Every impossible plan is a TierPlanError whose message starts with the
// tier's index, "tiers[1]: ...", like the config parser's key paths.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tier_config.h"

namespace tiercache {

class Topology;

class TierPlanError : public std::runtime_error {
 public:
  TierPlanError(int index, const std::string& reason)
      : std::runtime_error(index >= 0 ? "tiers[" + std::to_string(index) + "]: " + reason : reason),
        index_(index) {}
  // The tier the error is about; -1 for the plan as a whole.
  int index() const noexcept { return index_; }

 private:
  int index_;
};

struct TierPlanRequest {
  std::vector<TierConfig> tiers;  // tier 0 first
  uint64_t total_size = 0;        // split among the ratio tiers; 0: all tiers sized
  uint64_t slab_size = 0;         // sizes are rounded down to it; 0: no rounding
  std::string pmem_dir;           // emulated-PMEM directory for auto / pathless pmem-file tiers
  std::string cpus;               // initiator cpus ("0-3"); "": Topology::processCpus()
};

struct PlannedTier {
  TierConfig config;   // concrete: never kAuto, size > 0, ratio 0
  std::string reason;  // "auto: local DRAM node(s) 0", "as configured", ...
};

struct TierPlan {
  std::vector<PlannedTier> tiers;

  std::vector<TierConfig> configs() const;
  // One line per tier, for reports and tiercache-topo.
  std::string describe() const;
};

// Throws TierPlanError for an impossible plan (and TopologyError for a
// malformed request.cpus).
TierPlan planTiers(const TierPlanRequest& request, const Topology& topology);

}  // namespace tiercache
