// TierConfig: what one tier is (kind, size, where). Lives in tiers/ so that
// backends do not depend on the cache config that embeds it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../numa/bind_policy.h"

namespace tiercache {

enum class TierKind : uint8_t {
  kDram,       // anonymous memory, optionally bound to NUMA node(s)
  kPmemFile,   // file-backed PMEM: a file in a directory on a DAX fs, tmpfs or disk
  kDaxKmem,    // PMEM exposed as a NUMA node (KMEM DAX)
  kAuto,       // placeholder: the tier planner (tier_plan.h) picks kind, nodes
               // and path; openTier() refuses it unplanned
};

// The smallest volatile pmem-file tier (after rounding down to whole slabs),
// the same floor as memkind's MEMKIND_PMEM_MIN_SIZE. The config validator
// refuses a smaller one, naming the field; PmemFileTier checks it again.
inline constexpr uint64_t kPmemMinSize = 16ull << 20;

struct TierConfig {
  std::string name;               // "dram", "pmem0", ...; unique
  TierKind kind = TierKind::kDram;
  uint64_t size = 0;              // bytes; rounded down to whole slabs
  std::string path;               // kPmemFile: the directory the tier's file is made in
  std::vector<unsigned> nodes;    // NUMA nodes to bind to (empty: no binding)
  // With size 0: this tier's share of the planner's total size, split in
  // proportion to the ratios of all such tiers (cachebench memoryTiers "ratio").
  double ratio = 0;
  // What a failed binding to `nodes` does (dram). dax-kmem always binds strictly.
  BindPolicy bind_policy = BindPolicy::kAdvisory;
  // pmem-file only: keep the items across restarts in a libpmemobj pool;
  // `path` is then the pool FILE (created 0600 if missing).
  bool persistent = false;
  // persistent only: an existing pool of another layout (config
  // fingerprint) is emptied and reused instead of refused.
  bool rebuild_on_mismatch = false;

  friend bool operator==(const TierConfig&, const TierConfig&) = default;
};

// The one list of the names, in enum order (the config's choices).
inline constexpr std::array<NameRow<TierKind>, 4> kTierKindNames = {{{TierKind::kDram, "dram"},
                                                                    {TierKind::kPmemFile, "pmem-file"},
                                                                    {TierKind::kDaxKmem, "dax-kmem"},
                                                                    {TierKind::kAuto, "auto"}}};
static_assert(isDenseNameTable(kTierKindNames, TierKind::kAuto));

const char* tierKindName(TierKind kind);  // "dram", "pmem-file", "dax-kmem", "auto"
std::optional<TierKind> tierKindFromName(std::string_view name);  // inverse of tierKindName

// Which kinds take `nodes`, stated once: nullptr when `t`'s nodes are
// fine, else why not ("does not apply to a pmem-file tier (...)"). Config
// validation reports it at tiers[i].nodes; the planner and openTier() only
// defend themselves with the same words.
const char* tierNodesProblem(const TierConfig& t);

}  // namespace tiercache
