#include "memory_tier.h"

#include "dax_kmem_tier.h"
#include "dram_tier.h"
#include "persistent_pmem_tier.h"
#include "pmem_file_tier.h"

namespace tiercache {

const char* tierKindName(TierKind kind) { return nameOf(kTierKindNames, kind).data(); }

std::optional<TierKind> tierKindFromName(std::string_view name) { return valueOf(kTierKindNames, name); }

const char* tierNodesProblem(const TierConfig& t) {
  if (t.nodes.empty()) return nullptr;
  // A file's pages are placed by the file system, not by a binding.
  if (t.kind == TierKind::kPmemFile) return "does not apply to a pmem-file tier (its file system places the pages)";
  if (t.kind == TierKind::kAuto) return "does not apply to an auto tier (the planner picks the nodes)";
  return nullptr;
}

namespace {

// The checks every opening makes: cfg.size rounded down to slabSize, refused
// below one slab; a file's pages are placed by the file system, not by a
// binding. Returns the rounded size.
uint64_t checkedSize(const TierConfig& cfg, uint64_t slabSize) {
  const uint64_t size = slabSize ? cfg.size / slabSize * slabSize : cfg.size;
  if (size == 0) {
    throw TierError(cfg.name, "size " + std::to_string(cfg.size) + " is smaller than one slab (" +
                                  std::to_string(slabSize) + " bytes)");
  }
  if (const char* why = tierNodesProblem(cfg)) throw TierError(cfg.name, std::string("'nodes' ") + why);
  return size;
}

}  // namespace

PersistentTierParts openPersistentTier(const TierConfig& cfg, uint64_t slabSize,
                                       const PersistentOpenOptions& persistence) {
  if (cfg.kind != TierKind::kPmemFile || !cfg.persistent) {
    throw TierError(cfg.name, "only a pmem-file tier with 'persistent' set opens as a persistent tier");
  }
  checkedSize(cfg, slabSize);
  PersistentOpenOptions options = persistence;
  options.rebuildOnMismatch = options.rebuildOnMismatch || cfg.rebuild_on_mismatch;
  auto tier = std::make_unique<PersistentPmemTier>(cfg, slabSize, options);
  PoolRecords* records = tier.get();
  return {std::move(tier), records};
}

std::unique_ptr<MemoryTier> openTier(const TierConfig& cfg, uint64_t slabSize, const PersistentOpenOptions& persistence) {
  const uint64_t size = checkedSize(cfg, slabSize);
  switch (cfg.kind) {
    case TierKind::kDram:
      return std::make_unique<DramTier>(cfg.name, size, cfg.nodes, cfg.bind_policy);
    case TierKind::kPmemFile:
      if (cfg.persistent) return openPersistentTier(cfg, slabSize, persistence).memory;
      return std::make_unique<PmemFileTier>(cfg.name, cfg.path, size);
    case TierKind::kDaxKmem:
      return std::make_unique<DaxKmemTier>(cfg.name, size, cfg.nodes);
    case TierKind::kAuto:
      throw TierError(cfg.name, "kind 'auto' must be resolved by the tier planner (planTiers) before the tier is opened");
  }
  throw TierError(cfg.name, "unknown tier kind " + std::to_string(static_cast<int>(cfg.kind)));
}

}  // namespace tiercache
