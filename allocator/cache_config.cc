// CacheConfig's option table, its cross-field rules and its derived values.
//
// Every option is one row of the schema below (config/schema.h): the
// engine parses exactly the keys in it, validate() checks exactly its
// bounds and rules, toJson() writes every row and configOptionsMarkdown()
// prints it for docs/configuration.md. A new option is one new row; a rule
// that involves other options is one check function beside its row.
#include "cache_config.h"
#include "compressed_ref.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>

namespace tiercache {
namespace {

using config::formatNumber;
using config::Option;
using config::quote;
using config::Type;

// Pool shares may add up to 1 plus this, so that 0.7 + 0.2 + 0.1 passes.
constexpr double kShareSlack = 1e-9;

static_assert(std::is_same_v<unsigned, uint32_t>, "TierConfig::nodes is read as std::vector<uint32_t>");
static_assert(CacheConfig::kMaxJsonArray == CacheConfig::kMaxPools + 1, "the pools list's own bound is reported");

std::string indexed(const std::string& prefix, size_t i) { return prefix + "[" + std::to_string(i) + "]"; }

// Sections of the table; the prefixes are how their keys are written in docs.
enum Section : uint8_t {
  kTop,
  kTier,
  kPool,
  kAllocation,
  kIndex,
  kEviction,
  kRebalance,
  kDemotion,
  kBackgroundEviction,
  kPromotion,
  kPersistence,
  kReaper,
  kFlash,
};

#define TC_FIELD(expr)                                    \
  [](void* root, size_t i) -> config::Field {             \
    CacheConfig& c = *static_cast<CacheConfig*>(root);    \
    (void)i;                                              \
    return &(expr);                                       \
  }
#define TC_ENUM(expr)                                     \
  [](void* root, size_t i) -> config::Field {             \
    CacheConfig& c = *static_cast<CacheConfig*>(root);    \
    (void)i;                                              \
    return config::enumField(expr);                       \
  }
#define TC_RULE(fn) config::rule<CacheConfig, fn>

// ---- rules that involve more than one option

void checkTiersPresent(const CacheConfig& c, size_t, const std::string& path) {
  if (c.tiers.empty()) throw ConfigError(path, "at least one tier is required");
}

// Names go into stats exports (JSON, Prometheus labels), thread names and
// messages: a small portable set keeps every one of those well-formed.
void checkNameCharset(const std::string& name, const std::string& path) {
  if (name.size() > CacheConfig::kMaxNameLength) {
    throw ConfigError(path, quote(name) + " is longer than " + std::to_string(CacheConfig::kMaxNameLength) +
                                " bytes");
  }
  for (size_t k = 0; k < name.size(); ++k) {
    const unsigned char ch = static_cast<unsigned char>(name[k]);
    if (!std::isalnum(ch) && ch != '_' && ch != '-' && ch != '.' && ch != ':') {
      throw ConfigError(path, quote(config::displayKey(name)) + " has a character outside [A-Za-z0-9_.:-] at byte " +
                                  std::to_string(k));
    }
  }
}

void checkTierName(const CacheConfig& c, size_t i, const std::string& path) {
  checkNameCharset(c.tiers[i].name, path);
  for (size_t j = 0; j < i; ++j) {
    if (c.tiers[j].name == c.tiers[i].name) {
      throw ConfigError(path, "duplicate tier name " + quote(c.tiers[i].name) + " (also tiers[" +
                                  std::to_string(j) + "].name)");
    }
  }
}

void checkTierSize(const CacheConfig& c, size_t i, const std::string& path) {
  if (c.tiers[i].size == 0 && c.tiers[i].ratio == 0) {
    throw ConfigError(path, "a tier needs a size (or a ratio, for the tier planner)");
  }
  if (c.tiers[i].size != 0 && c.tiers[i].size < c.slab_size) {
    throw ConfigError(path, formatSize(c.tiers[i].size) + " is smaller than one slab (slab_size " +
                                formatSize(c.slab_size) + ")");
  }
  // Caught here so the error names the field (and the bench exits 2, as
  // for any bad config) rather than surfacing as the tier's open failure.
  const TierConfig& t = c.tiers[i];
  if (t.kind == TierKind::kPmemFile && !t.persistent && t.size != 0 && c.slab_size != 0 &&
      t.size / c.slab_size * c.slab_size < kPmemMinSize) {
    throw ConfigError(path, formatSize(t.size) + " is below the " + formatSize(kPmemMinSize) +
                                " minimum for a pmem-file tier that is not persistent (counted in whole slabs)");
  }
}

void checkTierRatio(const CacheConfig& c, size_t i, const std::string& path) {
  if (c.tiers[i].ratio > 0 && c.tiers[i].size > 0) throw ConfigError(path, "set size or ratio, not both");
}

void checkTierNodes(const CacheConfig& c, size_t i, const std::string& path) {
  if (const char* why = tierNodesProblem(c.tiers[i])) throw ConfigError(path, why);
}

void checkTierBindPolicy(const CacheConfig& c, size_t i, const std::string& path) {
  const TierConfig& t = c.tiers[i];
  if (t.kind == TierKind::kPmemFile && t.bind_policy != TierConfig{}.bind_policy) {
    throw ConfigError(path, "does not apply to a pmem-file tier (nothing is bound)");
  }
  if (t.kind == TierKind::kDaxKmem && t.bind_policy == BindPolicy::kNone) {
    throw ConfigError(path, "a dax-kmem tier always binds to its node(s)");
  }
}

// A pathless pmem-file tier is planned into pmem_dir (planTiers does so),
// but a persistent tier's path is its pool file, which a directory cannot
// stand in for.
void checkTierPath(const CacheConfig& c, size_t i, const std::string& path) {
  const TierConfig& t = c.tiers[i];
  if (t.kind == TierKind::kPmemFile && t.path.empty() && t.persistent) {
    throw ConfigError(path, "a persistent pmem-file tier needs a path: its pool file (pmem_dir does not apply)");
  }
  if (t.kind == TierKind::kPmemFile && t.path.empty() && c.pmem_dir.empty()) {
    throw ConfigError(path, "a pmem-file tier needs a path, the directory its file is created in "
                            "(e.g. \"/dev/shm\"), or a top-level pmem_dir");
  }
  if (t.kind != TierKind::kPmemFile && !t.path.empty()) {
    throw ConfigError(path, std::string("only a pmem-file tier takes a path; this tier's kind is '") +
                                tierKindName(t.kind) + "'");
  }
}

void checkTierPersistent(const CacheConfig& c, size_t i, const std::string& path) {
  const TierConfig& t = c.tiers[i];
  if (t.persistent && t.kind != TierKind::kPmemFile) {
    throw ConfigError(path, std::string("only a pmem-file tier can be persistent; this tier's kind is '") +
                                tierKindName(t.kind) + "'");
  }
}

void checkTierRebuild(const CacheConfig& c, size_t i, const std::string& path) {
  if (c.tiers[i].rebuild_on_mismatch && !c.tiers[i].persistent) {
    throw ConfigError(path, "applies only to a persistent tier (persistent is false)");
  }
}

// What planTiers() will refuse about the total, caught while the user still
// has the config file open. Sums saturate: sizes may each be near 2^64.
void checkTotalSize(const CacheConfig& c, size_t, const std::string& path) {
  uint64_t sized = 0;
  int firstRatio = -1;
  for (size_t i = 0; i < c.tiers.size(); ++i) {
    const uint64_t s = c.tiers[i].size;
    sized = s > std::numeric_limits<uint64_t>::max() - sized ? std::numeric_limits<uint64_t>::max() : sized + s;
    if (s == 0 && firstRatio < 0) firstRatio = static_cast<int>(i);
  }
  if (c.total_size != 0 && c.total_size < c.slab_size) {
    throw ConfigError(path, formatSize(c.total_size) + " is smaller than one slab (slab_size " +
                                formatSize(c.slab_size) + ")");
  }
  if (firstRatio >= 0 && c.total_size == 0) {
    throw ConfigError(path, "tiers[" + std::to_string(firstRatio) +
                                "] has a ratio, so the tier planner needs a total to share out (0 means every "
                                "tier has its own size)");
  }
  if (c.total_size != 0 && sized > c.total_size) {
    throw ConfigError(path, formatSize(c.total_size) + " is less than the sized tiers take (" + formatSize(sized) +
                                ")");
  }
  if (firstRatio >= 0 && sized >= c.total_size) {
    throw ConfigError(path, "nothing of " + formatSize(c.total_size) + " is left for the ratio tiers (tiers[" +
                                std::to_string(firstRatio) + "] ...) after the sized tiers take " +
                                formatSize(sized));
  }
}

void checkPoolName(const CacheConfig& c, size_t i, const std::string& path) {
  checkNameCharset(c.pools[i].name, path);
  // Up to 65,536 pools: one hashed pass at the last pool, not i compares at each.
  if (i + 1 != c.pools.size()) return;
  std::unordered_map<std::string_view, size_t> first;
  for (size_t k = 0; k < c.pools.size(); ++k) {
    const auto [it, fresh] = first.emplace(c.pools[k].name, k);
    if (!fresh) {
      throw ConfigError("pools[" + std::to_string(k) + "].name", "duplicate pool name " + quote(c.pools[k].name) +
                                                                     " (also pools[" + std::to_string(it->second) +
                                                                     "].name)");
    }
  }
}

void checkPoolShares(const CacheConfig& c, size_t, const std::string& path) {
  double sum = 0;
  for (const PoolConfig& p : c.pools) sum += p.share;
  if (sum > 1.0 + kShareSlack) {
    std::ostringstream os;
    os << "pool shares add up to " << sum << ", more than 1";
    throw ConfigError(path, os.str());
  }
}

// The CompressedRef budget: slot bits + slab-id bits <= CompressedRef::kBits,
// one slab id (all ones) reserved for kNull; slab ids are 32-bit numbers.
void checkRefBudget(const CacheConfig& c, const std::string& path) {
  constexpr uint32_t kRefBits = CompressedRef::kBits;
  const uint32_t slotBits = c.slotBits();
  const uint64_t slots = c.slab_size / std::max<uint32_t>(c.minAllocSize(), 1);
  const uint64_t slabs = c.slabCount();
  const uint32_t idBits = static_cast<uint32_t>(std::bit_width(slabs));
  if (slotBits + idBits <= kRefBits && idBits <= 32) return;
  const uint64_t maxSlabs = std::min<uint64_t>((uint64_t{1} << (kRefBits - slotBits)) - 1, UINT32_MAX);
  throw ConfigError(path, "a compressed item reference (" + std::to_string(kRefBits) +
                              " bits) cannot address this cache: slab_size " + formatSize(c.slab_size) +
                              " / smallest class " + formatSize(c.minAllocSize()) + " = " + std::to_string(slots) +
                              " slots per slab need " + std::to_string(slotBits) + " bits, which leaves room for " +
                              std::to_string(maxSlabs) + " slabs, but the tiers hold " + std::to_string(slabs) +
                              "; raise allocation.min_size or slab_size (or make the tiers smaller)");
}

void checkMinSize(const CacheConfig& c, size_t, const std::string& path) {
  const auto& a = c.allocation;
  const uint32_t largest = a.max_size ? a.max_size : c.maxAllocSize();
  if (a.min_size > largest) {
    throw ConfigError(path, formatSize(a.min_size) + " is larger than the largest class (" +
                                (a.max_size ? "allocation.max_size " : "slab_size ") + formatSize(largest) + ")");
  }
  if (a.sizes.empty()) checkRefBudget(c, path);
}

void checkMaxSize(const CacheConfig& c, size_t, const std::string& path) {
  if (c.allocation.max_size > c.slab_size) {
    throw ConfigError(path, formatSize(c.allocation.max_size) + " is larger than slab_size (" +
                                formatSize(c.slab_size) + ")");
  }
}

void checkSizes(const CacheConfig& c, size_t, const std::string& path) {
  const auto& s = c.allocation.sizes;
  for (size_t k = 0; k < s.size(); ++k) {
    if (k > 0 && s[k] <= s[k - 1]) {
      throw ConfigError(indexed(path, k), formatSize(s[k]) + " does not exceed the size before it (" +
                                              formatSize(s[k - 1]) + "); sizes must be strictly increasing");
    }
    if (s[k] > c.slab_size) {
      throw ConfigError(indexed(path, k),
                        formatSize(s[k]) + " is larger than slab_size (" + formatSize(c.slab_size) + ")");
    }
  }
  if (!s.empty()) checkRefBudget(c, indexed(path, 0));
}

void checkHighWatermark(const CacheConfig& c, size_t, const std::string& path) {
  const BackgroundEvictionConfig& b = c.background_eviction;
  if (b.high_watermark < b.low_watermark) {
    throw ConfigError(path, formatNumber(b.high_watermark) + " is below background_eviction.low_watermark (" +
                                formatNumber(b.low_watermark) + ")");
  }
}

void checkMaxBatch(const CacheConfig& c, size_t, const std::string& path) {
  const BackgroundEvictionConfig& b = c.background_eviction;
  if (b.max_batch < b.min_batch) {
    throw ConfigError(path, std::to_string(b.max_batch) + " is below background_eviction.min_batch (" +
                                std::to_string(b.min_batch) + ")");
  }
}

void checkLockPower(const CacheConfig& c, size_t, const std::string& path) {
  if (c.index.lock_power > c.index.bucket_power) {
    throw ConfigError(path, std::to_string(c.index.lock_power) + " is larger than index.bucket_power (" +
                                std::to_string(c.index.bucket_power) + "); a lock stripe covers whole buckets");
  }
}

// Bytes of item slots the tiers can hold: sized tiers, plus the planner's
// total when some tier is sized by ratio. Saturating.
uint64_t capacityBytes(const CacheConfig& c) {
  uint64_t bytes = 0;
  bool ratio = false;
  for (const TierConfig& t : c.tiers) {
    bytes = t.size > std::numeric_limits<uint64_t>::max() - bytes ? std::numeric_limits<uint64_t>::max() : bytes + t.size;
    ratio |= t.size == 0;
  }
  return ratio ? std::max(bytes, c.total_size) : bytes;
}

void checkBucketPower(const CacheConfig& c, size_t, const std::string& path) {
  const uint32_t most = c.maxUsefulBucketPower();
  if (c.index.bucket_power <= most) return;
  throw ConfigError(path, std::to_string(c.index.bucket_power) + " would map " +
                              formatSize(uint64_t{CompressedRef::kStoredBytes} << c.index.bucket_power) +
                              " of buckets for a cache of at most " +
                              std::to_string(capacityBytes(c) / std::max<uint32_t>(c.minAllocSize(), 1)) +
                              " items; at most " + std::to_string(most) + " is useful here (2^" + std::to_string(most) +
                              " buckets, " + formatSize(uint64_t{CompressedRef::kStoredBytes} << most) + ")");
}

void checkMetadataBudget(const CacheConfig& c, size_t, const std::string& path) {
  const uint64_t meta = c.metadataBytes();
  const uint64_t budget = std::max(capacityBytes(c), CacheConfig::kMinMetadataBudget);
  if (meta <= budget) return;
  throw ConfigError(path, "this config's own structures would take " + formatSize(meta) + " (" +
                              std::to_string(c.tiers.size()) + " tiers x " + std::to_string(c.pools.size()) +
                              " pools x " + std::to_string(c.classCount()) + " classes, 2^" +
                              std::to_string(c.index.bucket_power) +
                              " index buckets), more than the tiers hold (" + formatSize(capacityBytes(c)) +
                              "); use fewer pools or classes");
}

void checkFlashRegionSize(const CacheConfig& c, size_t, const std::string& path) {
  if (c.flash.region_size % (4 * kKiB) != 0) {
    throw ConfigError(path, formatSize(c.flash.region_size) + " is not a multiple of 4KiB");
  }
}

void checkFlashSize(const CacheConfig& c, size_t, const std::string& path) {
  if (!c.flash.enabled()) return;
  if (c.flash.size % (4 * kKiB) != 0) throw ConfigError(path, formatSize(c.flash.size) + " is not a multiple of 4KiB");
  if (c.flash.size < 4 * kKiB + 2 * c.flash.region_size) {
    throw ConfigError(path, formatSize(c.flash.size) + " holds fewer than two regions of " +
                                formatSize(c.flash.region_size) + " (after the 4KiB superblock)");
  }
}

const config::Schema& schema() {
  static const config::Schema kSchema{
      .root = "",
      .sections = {"", "tiers[]", "pools[]", "allocation", "index", "eviction", "rebalance", "demotion",
                   "background_eviction", "promotion", "persistence", "reaper", "flash"},
      .options = {
          // ---- top level
          {.section = kTop,
           .name = "slab_size",
           .type = Type::kSize,
           .description = "Unit in which tiers are carved and handed to allocation classes.",
           .field = TC_FIELD(c.slab_size),
           .min = 64 * kKiB,
           .max = kGiB,
           .powerOfTwo = true},
          {.section = kTop,
           .name = "tiers",
           .type = Type::kObjectList,
           .description = "Memory tiers, fastest first; new items go to tiers[0] and are demoted down the list.",
           .max = CacheConfig::kMaxTiers,
           .rule = "at least one",
           .check = TC_RULE(checkTiersPresent),
           .child = kTier,
           .count = [](const void* r) { return static_cast<const CacheConfig*>(r)->tiers.size(); },
           .resize = [](void* r, size_t n) { static_cast<CacheConfig*>(r)->tiers.resize(n); }},
          // After tiers, so that a tier's own mistake is reported first.
          {.section = kTop,
           .name = "total_size",
           .type = Type::kSize,
           .description = "For the tier planner: the bytes shared out among the tiers sized by ratio, after the "
                          "sized tiers take theirs. 0: every tier has its own size.",
           .field = TC_FIELD(c.total_size),
           .rule = "0 or >= slab_size; not 0 when a tier has a ratio; at least the sized tiers' sum (more than it "
                   "when a tier has a ratio)",
           .check = TC_RULE(checkTotalSize)},
          {.section = kTop,
           .name = "pmem_dir",
           .type = Type::kString,
           .description = "For the tier planner: the directory for emulated PMEM (a file there, unlinked), used by "
                          "auto tiers after the NVM nodes and by pmem-file tiers without a path. \"\": none.",
           .field = TC_FIELD(c.pmem_dir)},
          {.section = kTop,
           .name = "pools",
           .type = Type::kObjectList,
           .description = "Pools partition every tier's slabs; pools[0] is the default pool. "
                          "Empty or absent: one pool \"default\" with share 1.",
           .max = CacheConfig::kMaxPools,
           .rule = "shares add up to at most 1",
           .check = TC_RULE(checkPoolShares),
           .child = kPool,
           .count = [](const void* r) { return static_cast<const CacheConfig*>(r)->pools.size(); },
           .resize = [](void* r, size_t n) { static_cast<CacheConfig*>(r)->pools.resize(n); }},
          {.section = kTop,
           .name = "allocation",
           .type = Type::kObject,
           .description = "Allocation classes (item sizes).",
           .child = kAllocation},
          {.section = kTop,
           .name = "index",
           .type = Type::kObject,
           .description = "The hash index over all tiers.",
           .rule = "with tiers, pools and classes, the cache's own structures take at most what the tiers hold "
                   "(or 64MiB)",
           .check = TC_RULE(checkMetadataBudget),
           .child = kIndex},
          {.section = kTop,
           .name = "eviction",
           .type = Type::kObject,
           .description = "Eviction policy of every (tier, pool, class).",
           .child = kEviction},
          {.section = kTop,
           .name = "rebalance",
           .type = Type::kObject,
           .description = "Moving slabs between allocation classes.",
           .child = kRebalance},
          {.section = kTop,
           .name = "demotion",
           .type = Type::kObject,
           .description = "Moving evicted items down to the next tier.",
           .child = kDemotion},
          {.section = kTop,
           .name = "background_eviction",
           .type = Type::kObject,
           .description = "Background evictor threads that keep free space in every (tier, pool, class).",
           .child = kBackgroundEviction},
          {.section = kTop,
           .name = "promotion",
           .type = Type::kObject,
           .description = "Moving items that are hit in a lower tier up to the tier above.",
           .child = kPromotion},
          {.section = kTop,
           .name = "persistence",
           .type = Type::kObject,
           .description = "Persistent tiers (see docs/persistence.md).",
           .child = kPersistence},
          {.section = kTop,
           .name = "reaper",
           .type = Type::kObject,
           .description = "The thread that reclaims expired items in every class and tier.",
           .child = kReaper},
          {.section = kTop,
           .name = "flash",
           .type = Type::kObject,
           .description = "A flash store (file or block device) behind the last memory tier: its victims are kept "
                          "there instead of dropped, and a find that misses in memory reads them back (see "
                          "docs/design.md, Flash).",
           .child = kFlash},
          {.section = kTop,
           .name = "workload",
           .type = Type::kIgnored,
           .description = "Read by tiercache-bench; the cache accepts it with any content and ignores it."},
          {.section = kTop,
           .name = "server",
           .type = Type::kIgnored,
           .description = "Read by tiercache-server (see docs/server.md); the cache accepts it and ignores it."},

          // ---- tiers[]
          {.section = kTier,
           .name = "name",
           .type = Type::kString,
           .description = "Tier name, used in stats and messages.",
           .field = TC_FIELD(c.tiers[i].name),
           .required = true,
           .nonEmpty = true,
           .rule = "unique; 1-64 bytes of [A-Za-z0-9_.:-]",
           .check = TC_RULE(checkTierName)},
          {.section = kTier,
           .name = "kind",
           .type = Type::kEnum,
           .description = "dram: anonymous memory; pmem-file: a file on a DAX or ordinary file system "
                          "(or tmpfs to emulate PMEM); dax-kmem: PMEM exposed as a NUMA node; auto: the tier "
                          "planner picks, from the machine's topology (see Planned tiers).",
           .field = TC_ENUM(c.tiers[i].kind),
           .choices = config::choicesOf(kTierKindNames)},
          {.section = kTier,
           .name = "size",
           .type = Type::kSize,
           .description = "Bytes the tier takes from the OS; rounded down to whole slabs.",
           .field = TC_FIELD(c.tiers[i].size),
           .rule = "0 or >= slab_size; a tier needs a size or a ratio; pmem-file, not persistent: >= 16MiB in "
                   "whole slabs",
           .check = TC_RULE(checkTierSize)},
          {.section = kTier,
           .name = "ratio",
           .type = Type::kReal,
           .description = "For the tier planner, instead of a size: this tier's share of the planned total, "
                          "in proportion to the ratios of the other such tiers.",
           .field = TC_FIELD(c.tiers[i].ratio),
           .rule = "not with a size",
           .check = TC_RULE(checkTierRatio)},
          {.section = kTier,
           .name = "bind_policy",
           .type = Type::kEnum,
           .description = "What a failed binding to `nodes` does: none: never bind; advisory: warn and go on; "
                          "strict: fail.",
           .field = TC_ENUM(c.tiers[i].bind_policy),
           .choices = config::choicesOf(kBindPolicyNames),
           .rule = "not for pmem-file; not none for dax-kmem",
           .check = TC_RULE(checkTierBindPolicy)},
          {.section = kTier,
           .name = "path",
           .type = Type::kString,
           .description = "pmem-file: the directory the tier's file is created in (unlinked at once, so nothing is "
                          "left behind); a persistent tier: its pool file. Empty: pmem_dir (not for persistent).",
           .field = TC_FIELD(c.tiers[i].path),
           .rule = "required for pmem-file unless pmem_dir is set (always when persistent); not allowed for other "
                   "kinds",
           .check = TC_RULE(checkTierPath)},
          {.section = kTier,
           .name = "nodes",
           .type = Type::kCountList,
           .description = "NUMA nodes to bind the tier's memory to; empty: no binding (dax-kmem: every NVM node).",
           .field = TC_FIELD(c.tiers[i].nodes),
           .rule = "not for pmem-file or auto",
           .check = TC_RULE(checkTierNodes)},
          {.section = kTier,
           .name = "persistent",
           .type = Type::kBool,
           .description = "Keep the tier's items across restarts, in a libpmemobj pool file at `path` (created if "
                          "missing).",
           .field = TC_FIELD(c.tiers[i].persistent),
           .rule = "pmem-file only",
           .check = TC_RULE(checkTierPersistent)},
          {.section = kTier,
           .name = "rebuild_on_mismatch",
           .type = Type::kBool,
           .description = "An existing pool made for another layout (slab size, tier size, classes, pools) is emptied "
                          "and reused instead of refused.",
           .field = TC_FIELD(c.tiers[i].rebuild_on_mismatch),
           .rule = "only with persistent",
           .check = TC_RULE(checkTierRebuild)},

          // ---- pools[]
          {.section = kPool,
           .name = "name",
           .type = Type::kString,
           .description = "Pool name, passed to Cache::poolId().",
           .field = TC_FIELD(c.pools[i].name),
           .required = true,
           .nonEmpty = true,
           .rule = "unique; 1-64 bytes of [A-Za-z0-9_.:-]",
           .check = TC_RULE(checkPoolName)},
          {.section = kPool,
           .name = "share",
           .type = Type::kReal,
           .description = "Fraction of every tier's slabs reserved for the pool.",
           .field = TC_FIELD(c.pools[i].share),
           .min = 0,
           .minExclusive = true,
           .max = 1},

          // ---- allocation
          {.section = kAllocation,
           .name = "min_size",
           .type = Type::kSize,
           .description = "Smallest allocation class, item header included.",
           .field = TC_FIELD(c.allocation.min_size),
           .min = 32,
           .max = CacheConfig::kMaxAllocSize,
           .multipleOf = 8,
           .rule = "<= the largest class; with slab_size and the tier sizes, fits a 40-bit item reference "
                   "(see Item references)",
           .check = TC_RULE(checkMinSize)},
          {.section = kAllocation,
           .name = "max_size",
           .type = Type::kSize,
           .description = "Largest allocation class; 0: min(slab_size, 16MiB).",
           .field = TC_FIELD(c.allocation.max_size),
           .max = CacheConfig::kMaxAllocSize,
           .multipleOf = 8,
           .rule = "<= slab_size",
           .check = TC_RULE(checkMaxSize)},
          {.section = kAllocation,
           .name = "growth_factor",
           .type = Type::kReal,
           .description = "Class i+1 is class i times this, rounded up to a multiple of 8.",
           .field = TC_FIELD(c.allocation.growth_factor),
           .min = 1,
           .minExclusive = true,
           .max = 10},  // CacheLib has no bound; its cachebench configs go up to 10
          {.section = kAllocation,
           .name = "sizes",
           .type = Type::kSizeList,
           .description = "Explicit class sizes; when not empty they replace min_size, max_size and growth_factor.",
           .field = TC_FIELD(c.allocation.sizes),
           .min = 32,
           .max = CacheConfig::kMaxAllocSize,
           .multipleOf = 8,
           .rule = "strictly increasing, each <= slab_size",
           .check = TC_RULE(checkSizes)},

          // ---- index
          {.section = kIndex,
           .name = "bucket_power",
           .type = Type::kCount,
           .description = "The index has 2^bucket_power buckets (5 bytes each).",
           .field = TC_FIELD(c.index.bucket_power),
           .min = 10,
           .max = 32,
           .rule = "at most 20 or one more than the bits of the most items the tiers can hold (capacity / smallest "
                   "class), whichever is larger",
           .check = TC_RULE(checkBucketPower)},
          {.section = kIndex,
           .name = "lock_power",
           .type = Type::kCount,
           .description = "The index has 2^lock_power lock stripes.",
           .field = TC_FIELD(c.index.lock_power),
           .min = 4,
           .max = 20,
           .rule = "<= bucket_power",
           .check = TC_RULE(checkLockPower)},

          // ---- eviction
          {.section = kEviction,
           .name = "policy",
           .type = Type::kEnum,
           .description = "lru: LRU with optional mid-point insertion; clock: FIFO with a second chance, "
                          "hits take no lock; s3fifo: S3-FIFO (small and main FIFO queues, a ghost of "
                          "key hashes), hits take no lock; wtinylfu: W-TinyLFU (a 1% window, an SLRU main, "
                          "admission by a frequency sketch), hits take no lock.",
           .field = TC_ENUM(c.eviction.policy),
           .choices = {"lru", "clock", "s3fifo", "wtinylfu"}},
          {.section = kEviction,
           .name = "lru_insertion_point",
           .type = Type::kCount,
           .description = "LRU: new items enter where 1/2^k of the list is below them (0: at the head; "
                          "1: the middle).",
           .field = TC_FIELD(c.eviction.lru_insertion_point),
           .max = 8},
          {.section = kEviction,
           .name = "lru_refresh_ms",
           .type = Type::kCount,
           .description = "LRU: a hit moves an item to the head at most once per this many milliseconds.",
           .field = TC_FIELD(c.eviction.lru_refresh_ms),
           .max = 3600000},
          {.section = kEviction,
           .name = "lru_refresh_ratio",
           .type = Type::kReal,
           .description = "LRU: the refresh interval is at most this share of the class's eviction age (the "
                          "idle time of the last item evicted), so hot items move in a fast-churning cache; "
                          "0 = always lru_refresh_ms.",
           .field = TC_FIELD(c.eviction.lru_refresh_ratio),
           .max = 1},
          {.section = kEviction,
           .name = "s3fifo_small_percent",
           .type = Type::kCount,
           .description = "S3-FIFO: share of a class's items in the small (probationary) queue, percent.",
           .field = TC_FIELD(c.eviction.s3fifo_small_percent),
           .min = 1,
           .max = 90},
          {.section = kEviction,
           .name = "wtinylfu_window_percent",
           .type = Type::kCount,
           .description = "W-TinyLFU: share of a class's items in the admission window, percent (where the "
                          "adaptive window starts).",
           .field = TC_FIELD(c.eviction.wtinylfu_window_percent),
           .min = 1,
           .max = 90},
          {.section = kEviction,
           .name = "wtinylfu_adaptive_window",
           .type = Type::kBool,
           .description = "W-TinyLFU: a hill climber moves the window share between 1% and 90% by the cache's "
                          "hit ratio, one sample (5 x the cache's slots in gets) at a time; false: the share "
                          "stays wtinylfu_window_percent.",
           .field = TC_FIELD(c.eviction.wtinylfu_adaptive_window)},
          {.section = kEviction,
           .name = "demote_rejected",
           .type = Type::kBool,
           .description = "Items that S3-FIFO's small queue or W-TinyLFU's admission filter rejects in an upper "
                          "tier are demoted to the next tier (true) or dropped (false).",
           .field = TC_FIELD(c.eviction.demote_rejected)},

          // ---- rebalance
          {.section = kRebalance,
           .name = "enabled",
           .type = Type::kBool,
           .description = "Move slabs between the classes of a pool as the item sizes change.",
           .field = TC_FIELD(c.rebalance.enabled)},
          {.section = kRebalance,
           .name = "strategy",
           .type = Type::kEnum,
           .description = "free-slots: when a class needs a slab, take one from the class with the most free slots "
                          "in the same pool. marginal-hits: besides, a background thread moves slabs from the "
                          "class where a slab earns fewest hits to the one where another slab would earn most.",
           .field = TC_FIELD(c.rebalance.strategy),
           .choices = {"free-slots", "marginal-hits"}},
          {.section = kRebalance,
           .name = "interval_ms",
           .type = Type::kCount,
           .description = "marginal-hits: milliseconds between the background rebalancer's runs.",
           .field = TC_FIELD(c.rebalance.interval_ms),
           .min = 10,
           .max = 3600000},
          {.section = kRebalance,
           .name = "max_slabs",
           .type = Type::kCount,
           .description = "marginal-hits: at most this many slabs moved per run (over all tiers and pools).",
           .field = TC_FIELD(c.rebalance.max_slabs),
           .min = 1,
           .max = 1024},

          // ---- demotion
          {.section = kDemotion,
           .name = "enabled",
           .type = Type::kBool,
           .description = "An item evicted from a tier other than the last is moved into the next tier instead of "
                          "dropped. false: every tier drops its own evictions. No effect with one tier.",
           .field = TC_FIELD(c.demotion.enabled)},

          // ---- background_eviction
          {.section = kBackgroundEviction,
           .name = "enabled",
           .type = Type::kBool,
           .description = "Run background evictors, so that allocations find free slots instead of evicting inline.",
           .field = TC_FIELD(c.background_eviction.enabled)},
          {.section = kBackgroundEviction,
           .name = "threads",
           .type = Type::kCount,
           .description = "Evictor threads; the classes of all tiers are shared out among them.",
           .field = TC_FIELD(c.background_eviction.threads),
           .min = 1,
           .max = 64},
          {.section = kBackgroundEviction,
           .name = "interval_ms",
           .type = Type::kCount,
           .description =
               "Milliseconds between an evictor's looks at its classes while the cache is in use (backing off to "
               "1 s when idle); an allocation that leaves its class below the low watermark wakes it at once.",
           .field = TC_FIELD(c.background_eviction.interval_ms),
           .min = 1,
           .max = 60000},
          {.section = kBackgroundEviction,
           .name = "strategy",
           .type = Type::kEnum,
           .description = "How much a run evicts from a class. free-threshold: below low_watermark percent free, "
                          "enough to reach high_watermark; keep-free: up to keep_free free slots.",
           .field = TC_ENUM(c.background_eviction.strategy),
           .choices = config::choicesOf(kEvictorStrategyNames)},
          {.section = kBackgroundEviction,
           .name = "low_watermark",
           .type = Type::kReal,
           .description = "free-threshold: a class with less than this percent of its slots free is served.",
           .field = TC_FIELD(c.background_eviction.low_watermark),
           .max = 100},
          {.section = kBackgroundEviction,
           .name = "high_watermark",
           .type = Type::kReal,
           .description = "free-threshold: the percent of free slots a run aims for.",
           .field = TC_FIELD(c.background_eviction.high_watermark),
           .max = 100,
           .rule = ">= low_watermark",
           .check = TC_RULE(checkHighWatermark)},
          {.section = kBackgroundEviction,
           .name = "min_batch",
           .type = Type::kCount,
           .description = "free-threshold: a run that evicts from a class evicts at least this many items (never more "
                          "than the class holds).",
           .field = TC_FIELD(c.background_eviction.min_batch),
           .min = 1,
           .max = 1000000},
          {.section = kBackgroundEviction,
           .name = "max_batch",
           .type = Type::kCount,
           .description = "Both strategies: at most this many items per class per run.",
           .field = TC_FIELD(c.background_eviction.max_batch),
           .min = 1,
           .max = 1000000,
           .rule = ">= min_batch",
           .check = TC_RULE(checkMaxBatch)},
          {.section = kBackgroundEviction,
           .name = "keep_free",
           .type = Type::kCount,
           .description = "keep-free: free slots to keep in every class.",
           .field = TC_FIELD(c.background_eviction.keep_free),
           .max = 1000000},
          {.section = kBackgroundEviction,
           .name = "yield_to_application",
           .type = Type::kBool,
           .description = "Evictors stand aside while the process leaves less than half a core idle (of the "
                          "CPUs it may use, capped by its cgroup's quota): their runs would take a core from the "
                          "application, and allocations evict the same batches themselves. false: they always run.",
           .field = TC_FIELD(c.background_eviction.yield_to_application)},
          {.section = kBackgroundEviction,
           .name = "available_cores",
           .type = Type::kReal,
           .description = "The cores yield_to_application judges the process's CPU use against; 0: detect (the CPUs "
                          "the process may run on, capped by its cgroup v2 quota). Set it where the machine "
                          "reserves cores for other work.",
           .field = TC_FIELD(c.background_eviction.available_cores),
           .max = 4096},

          // ---- promotion
          {.section = kPromotion,
           .name = "enabled",
           .type = Type::kBool,
           .description = "Move items that are hit in a lower tier up one tier. No effect with one tier.",
           .field = TC_FIELD(c.promotion.enabled)},
          {.section = kPromotion,
           .name = "background",
           .type = Type::kBool,
           .description = "true: candidates are queued for a promoter thread; false: find() promotes in place.",
           .field = TC_FIELD(c.promotion.background)},
          {.section = kPromotion,
           .name = "hits",
           .type = Type::kCount,
           .description = "Hits an item takes in a lower tier, counted since it landed there, before it is promoted.",
           .field = TC_FIELD(c.promotion.hits),
           .min = 1,
           .max = 7},
          {.section = kPromotion,
           .name = "max_per_sec",
           .type = Type::kCount,
           .description = "Promotions per second over all threads; 0: no limit.",
           .field = TC_FIELD(c.promotion.max_per_sec),
           .max = 10000000},
          {.section = kPromotion,
           .name = "interval_ms",
           .type = Type::kCount,
           .description = "Milliseconds between runs of the promoter thread; a queued candidate also wakes it.",
           .field = TC_FIELD(c.promotion.interval_ms),
           .min = 1,
           .max = 60000},
          {.section = kPromotion,
           .name = "max_batch",
           .type = Type::kCount,
           .description = "Promotions per promoter run.",
           .field = TC_FIELD(c.promotion.max_batch),
           .min = 1,
           .max = 1000000},
          {.section = kPromotion,
           .name = "queue_size",
           .type = Type::kCount,
           .description = "Candidates waiting for the promoter; a candidate that finds the queue full is dropped.",
           .field = TC_FIELD(c.promotion.queue_size),
           .min = 1,
           .max = 1000000},
          {.section = kPromotion,
           .name = "upper_free_watermark",
           .type = Type::kReal,
           .description = "An item is promoted only while its class in the upper tier has at least this percent of "
                          "its slots free (or can take a new slab); promotion never evicts.",
           .field = TC_FIELD(c.promotion.upper_free_watermark),
           .max = 100},

          // ---- persistence
          {.section = kPersistence,
           .name = "durable_sets",
           .type = Type::kBool,
           .description = "set() stores new items straight into the first persistent tier and returns once they are "
                          "durable there. No effect without a persistent tier.",
           .field = TC_FIELD(c.persistence.durable_sets)},
          {.section = kPersistence,
           .name = "demote_on_shutdown",
           .type = Type::kBool,
           .description = "On a clean shutdown, items of the tiers above the first persistent tier are demoted into "
                          "it while it has room (needs demotion.enabled).",
           .field = TC_FIELD(c.persistence.demote_on_shutdown)},

          // ---- reaper
          {.section = kReaper,
           .name = "enabled",
           .type = Type::kBool,
           .description =
               "Run the reaper thread. Off: expired items are reclaimed only by reads, writes and eviction walks "
               "(and Cache::reapExpired()).",
           .field = TC_FIELD(c.reaper.enabled)},
          {.section = kReaper,
           .name = "interval_ms",
           .type = Type::kCount,
           .description = "Milliseconds between reaper runs.",
           .field = TC_FIELD(c.reaper.interval_ms),
           .min = 1,
           .max = 3600000},
          {.section = kReaper,
           .name = "buckets_per_run",
           .type = Type::kCount,
           .description = "Index buckets one run looks at (one stripe lock at a time): bounds the work of a run; a "
                          "sweep of the index takes 2^index.bucket_power / buckets_per_run runs.",
           .field = TC_FIELD(c.reaper.buckets_per_run),
           .min = 1,
           .max = 1u << 30},

          // ---- flash
          {.section = kFlash,
           .name = "path",
           .type = Type::kString,
           .description = "The file (created 0600 if missing, extended to size) or block device of the flash store; "
                          "\"\": no flash. Opened with O_DIRECT where the file system allows it. A file gets "
                          "<path>.wbuf beside it: the region write buffer, kept across a kill -9.",
           .field = TC_FIELD(c.flash.path)},
          {.section = kFlash,
           .name = "size",
           .type = Type::kSize,
           .description = "Bytes of the file or device the store uses: a 4 KiB superblock, then whole regions.",
           .field = TC_FIELD(c.flash.size),
           .rule = "with a path: a multiple of 4KiB holding at least two regions",
           .check = TC_RULE(checkFlashSize)},
          {.section = kFlash,
           .name = "region_size",
           .type = Type::kSize,
           .description = "The unit the store writes whole and reclaims: items are buffered in DRAM until a region is "
                          "full (the store keeps two region-sized buffers).",
           .field = TC_FIELD(c.flash.region_size),
           .min = 64 * kKiB,
           .max = kGiB,
           .rule = "a multiple of 4KiB",
           .check = TC_RULE(checkFlashRegionSize)},
          {.section = kFlash,
           .name = "io_engine",
           .type = Type::kEnum,
           .description = "io_uring: liburing; threads: pread/pwrite on queue_depth threads; auto: io_uring, or "
                          "threads (with a warning) where the kernel refuses it.",
           .field = TC_ENUM(c.flash.io_engine),
           .choices = config::choicesOf(kIoEngineKindNames)},
          {.section = kFlash,
           .name = "queue_depth",
           .type = Type::kCount,
           .description = "I/Os one caller keeps in flight (region writes are cut into 1 MiB pieces); the thread "
                          "engine's threads.",
           .field = TC_FIELD(c.flash.queue_depth),
           .min = 1,
           .max = 1024},
          {.section = kFlash,
           .name = "region_eviction",
           .type = Type::kEnum,
           .description = "The region reclaimed when the store is full: fifo, the oldest written; lru, the least "
                          "recently read.",
           .field = TC_ENUM(c.flash.region_eviction),
           .choices = config::choicesOf(kRegionEvictionNames)},
          {.section = kFlash,
           .name = "reinsert_hits",
           .type = Type::kBool,
           .description = "A reclaimed region's items that were read since they were written are written again "
                          "instead of dropped.",
           .field = TC_FIELD(c.flash.reinsert_hits)},
          {.section = kFlash,
           .name = "expected_item_size",
           .type = Type::kSize,
           .description = "Sizes the store's DRAM index (12 bytes per item): room for size / expected_item_size "
                          "items; a full index bucket refuses an item.",
           .field = TC_FIELD(c.flash.expected_item_size),
           .min = 64,
           .max = 16 * kMiB},
          {.section = kFlash,
           .name = "admit_write_mb_per_sec",
           .type = Type::kReal,
           .description = "Write-rate budget: at most this many MB (10^6 bytes) of items a second are admitted; the "
                          "rest are dropped as without flash. 0: no budget.",
           .field = TC_FIELD(c.flash.admit_write_mb_per_sec),
           .max = 1e6},
          {.section = kFlash,
           .name = "admit_hit_only",
           .type = Type::kBool,
           .description = "Only items hit in the last memory tier since they landed there are admitted (the hit "
                          "count promotion keeps: needs promotion.enabled and two memory tiers).",
           .field = TC_FIELD(c.flash.admit_hit_only)},
          {.section = kFlash,
           .name = "discard_contents",
           .type = Type::kBool,
           .description = "Start with an empty store instead of recovering what the file holds.",
           .field = TC_FIELD(c.flash.discard_contents)},
      }};
  return kSchema;
}

#undef TC_FIELD
#undef TC_ENUM
#undef TC_RULE

}  // namespace

// ---------------------------------------------------------------------------
// Public API

// `source` names the input in errors: "" for a string, the file name.
static CacheConfig parseDocument(std::string_view text, const std::string& source) {
  try {
    CacheConfig c;
    config::parse(schema(), text, &c);
    c.normalize();
    c.validate();
    return c;
  } catch (const ConfigError& e) {
    if (source.empty()) throw;
    throw config::inSource(e, source);  // path() kept for callers, the file named for the reader
  }
}

CacheConfig CacheConfig::fromJsonString(std::string_view json) { return parseDocument(json, ""); }

CacheConfig CacheConfig::fromJsonFile(const std::string& path) { return parseDocument(readConfigFile(path), path); }

const char* evictionPolicyName(EvictionPolicyKind kind) { return nameOf(kEvictionPolicyKindNames, kind).data(); }

std::vector<uint32_t> makeClassSizes(uint32_t minSize, uint32_t maxSize, double factor,
                                     const std::vector<uint32_t>& explicitSizes) {
  if (!explicitSizes.empty()) return explicitSizes;
  std::vector<uint32_t> sizes;
  auto round8 = [](double v) { return (static_cast<uint64_t>(std::ceil(v)) + 7) & ~uint64_t{7}; };
  uint64_t cur = round8(minSize);
  while (cur < maxSize && sizes.size() < 254) {
    sizes.push_back(static_cast<uint32_t>(cur));
    cur = std::max(cur + 8, round8(static_cast<double>(cur) * factor));
  }
  sizes.push_back(maxSize & ~7u);
  return sizes;
}

size_t CacheConfig::classCount() const {
  const AllocationConfig& a = allocation;
  if (!a.sizes.empty()) return a.sizes.size();
  if (!(a.growth_factor > 1) || minAllocSize() == 0) return 1;
  return makeClassSizes(minAllocSize(), maxAllocSize(), a.growth_factor, {}).size();
}

uint32_t CacheConfig::maxUsefulBucketPower() const {
  // One bucket per item at most, times two for a short chain at full load;
  // never below the default, so small caches keep it.
  const uint64_t items = capacityBytes(*this) / std::max<uint32_t>(minAllocSize(), 1);
  return std::max<uint32_t>(IndexConfig{}.bucket_power, static_cast<uint32_t>(std::bit_width(items)) + 1);
}

uint64_t CacheConfig::metadataBytes() const {
  const auto sat = [](uint64_t a, uint64_t b) {
    return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max() : a + b;
  };
  uint64_t bytes = index.bucket_power < 62 ? uint64_t{CompressedRef::kStoredBytes} << index.bucket_power : ~uint64_t{0};
  bytes = sat(bytes, index.lock_power < 56 ? uint64_t{64} << index.lock_power : ~uint64_t{0});
  bytes = sat(bytes, slab_size ? capacityBytes(*this) / slab_size * kSlabMetadataBytes : 0);
  const uint64_t classes = static_cast<uint64_t>(tiers.size()) * std::max<size_t>(pools.size(), 1) * classCount();
  bytes = sat(bytes, classes * (kClassMetadataBytes + kClassTallyBytes));
  bytes = sat(bytes, tiers.size() * kTierTallyRoundingBytes);
  return bytes;
}

std::string CacheConfig::toJson() const { return config::toJson(schema(), this, 2); }

void CacheConfig::validate() const { config::validate(schema(), this); }

void CacheConfig::normalize() {
  if (pools.empty()) pools.push_back(PoolConfig{.name = "default", .share = 1.0});
}

uint32_t CacheConfig::minAllocSize() const {
  return allocation.sizes.empty() ? allocation.min_size : allocation.sizes.front();
}

uint32_t CacheConfig::maxAllocSize() const {
  if (!allocation.sizes.empty()) return allocation.sizes.back();
  if (allocation.max_size) return allocation.max_size;
  return static_cast<uint32_t>(std::min<uint64_t>(slab_size, kMaxAllocSize));
}

uint32_t CacheConfig::slotBits() const {
  const uint64_t slots = slab_size / std::max<uint32_t>(minAllocSize(), 1);
  return slots <= 1 ? 0 : static_cast<uint32_t>(std::bit_width(slots - 1));
}

uint64_t CacheConfig::slabCount() const {
  uint64_t n = 0;
  for (const TierConfig& t : tiers) n += slab_size ? t.size / slab_size : 0;
  return n;
}

CacheConfig CacheConfig::dram(uint64_t bytes) {
  CacheConfig c;
  c.slab_size = bytes < 64 * kMiB ? kMiB : 4 * kMiB;
  TierConfig t;
  t.name = "dram";
  t.kind = TierKind::kDram;
  t.size = bytes;
  c.tiers.push_back(std::move(t));
  c.normalize();
  return c;
}

std::string configOptionsMarkdown() {
  // Defaults come from the structs' initializers, read through the table.
  CacheConfig d;
  d.tiers.resize(1);
  d.pools.resize(1);
  return config::markdown(schema(), &d);
}

const config::Schema& cacheConfigSchema() { return schema(); }

}  // namespace tiercache
