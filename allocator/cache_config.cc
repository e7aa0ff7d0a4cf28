// CacheConfig parsing, validation, serialization and documentation.
//
// All four are driven by one table, options(): each row is one JSON key
// (its section, name, type, description, a pointer to the field, the bounds
// validate() enforces, and any rule that involves other options together
// with the code that checks it). The parser accepts exactly the keys in the
// table, validate() checks exactly the rules in it, toJson() writes every
// row, and configOptionsMarkdown() prints it for docs/configuration.md. A new
// option is one new row.
#include "cache_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <unordered_map>
#include <sstream>
#include <variant>

namespace tiercache {
namespace {

// ordered_json keeps document order, so the first of several bad keys is
// the one reported, and toJson() writes keys in table order.
using Json = nlohmann::ordered_json;

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kTiB = 1ull << 40;
constexpr double kInf = std::numeric_limits<double>::infinity();
// Pool shares may add up to 1 plus this, so that 0.7 + 0.2 + 0.1 passes.
constexpr double kShareSlack = 1e-9;

static_assert(std::is_same_v<unsigned, uint32_t>, "TierConfig::nodes is read as std::vector<uint32_t>");

// ---------------------------------------------------------------------------
// Small helpers

// A user's value quoted in a message, cut short so one bad value cannot
// flood a log line.
std::string quote(std::string_view s) {
  constexpr size_t kMax = 40;
  std::string out = "\"";
  out += s.size() > kMax ? std::string(s.substr(0, kMax)) + "..." : std::string(s);
  return out + "\"";
}

// A JSON key as shown in a key path: control bytes (NUL included) escaped,
// cut short like quote(), so a 10 MB key cannot flood a log line.
std::string displayKey(std::string_view key) {
  constexpr size_t kMax = 40;
  std::string out;
  for (size_t i = 0; i < key.size() && i < kMax; ++i) {
    const unsigned char ch = static_cast<unsigned char>(key[i]);
    if (ch < 0x20 || ch == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  if (key.size() > kMax) out += "...(" + std::to_string(key.size()) + " bytes)";
  return out;
}

std::string formatNumber(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  std::ostringstream os;
  os << v;
  return os.str();
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// " (did you mean 'x'?)" for the candidate closest to `given`, if it is close
// (a typo or two) or starts with what was given ("pmem" -> "pmem-file").
std::string suggestion(std::string_view given, const std::vector<std::string_view>& candidates) {
  // Edit distance costs |given| x |candidate| per candidate: a key far
  // longer than any option name (a 10 MB key) is no typo of one.
  constexpr size_t kMaxSuggestLength = 64;
  if (given.size() > kMaxSuggestLength) return "";
  std::string_view best;
  size_t bestDist = std::numeric_limits<size_t>::max();
  for (std::string_view c : candidates) {
    const size_t d = editDistance(given, c);
    if (d < bestDist) bestDist = d, best = c;
  }
  if (!best.empty() && bestDist <= std::max<size_t>(1, std::min<size_t>(2, given.size() / 3))) {
    return " (did you mean '" + std::string(best) + "'?)";
  }
  if (given.size() >= 3) {
    for (std::string_view c : candidates) {
      if (c.starts_with(given)) return " (did you mean '" + std::string(c) + "'?)";
    }
  }
  return "";
}

std::string describe(const Json& v) {
  switch (v.type()) {
    case Json::value_t::string: return "string " + quote(v.get_ref<const std::string&>());
    case Json::value_t::boolean: return std::string("boolean ") + (v.get<bool>() ? "true" : "false");
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "number " + v.dump();
    default: return v.type_name();
  }
}

[[noreturn]] void typeError(const std::string& path, const std::string& expected, const Json& v) {
  throw ConfigError(path, "expected " + expected + ", got " + describe(v));
}

std::string join(const std::string& prefix, std::string_view name) {
  const std::string shown = displayKey(name);
  return prefix.empty() ? shown : prefix + "." + shown;
}

std::string indexed(const std::string& prefix, size_t i) { return prefix + "[" + std::to_string(i) + "]"; }

// ---------------------------------------------------------------------------
// The option table

enum class Section : uint8_t {
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
};

// How a section's keys are written in docs (and prefixed in key paths).
std::string_view sectionPrefix(Section s) {
  switch (s) {
    case Section::kTop: return "";
    case Section::kTier: return "tiers[]";
    case Section::kPool: return "pools[]";
    case Section::kAllocation: return "allocation";
    case Section::kIndex: return "index";
    case Section::kEviction: return "eviction";
    case Section::kRebalance: return "rebalance";
    case Section::kDemotion: return "demotion";
    case Section::kBackgroundEviction: return "background_eviction";
    case Section::kPromotion: return "promotion";
    case Section::kPersistence: return "persistence";
    case Section::kReaper: return "reaper";
  }
  return "";
}

enum class Type : uint8_t {
  kSize,        // bytes: JSON integer or size string
  kCount,       // JSON integer >= 0
  kReal,        // JSON number
  kBool,
  kString,
  kEnum,        // JSON string from `choices`
  kCountList,   // array of kCount
  kSizeList,    // array of kSize
  kObject,      // nested section `child`
  kObjectList,  // array of `child` sections
  kIgnored,     // accepted with any content, not read (belongs to another program)
};

// Where an option lives in a CacheConfig. Enum options point at the enum
// (its value indexes `choices`) or at a string holding one of the choices.
using Field = std::variant<std::monostate, uint64_t*, uint32_t*, double*, bool*, std::string*, TierKind*,
                           BindPolicy*, EvictionPolicyKind*, EvictorStrategyKind*, std::vector<uint32_t>*>;
// `index` selects the element for options under tiers[] and pools[].
using FieldFn = Field (*)(CacheConfig& c, size_t index);
// A rule involving other options; throws ConfigError(path, reason).
using CheckFn = void (*)(const CacheConfig& c, size_t index, const std::string& path);

struct Option {
  Section section;
  std::string_view name;
  Type type;
  std::string_view description;
  FieldFn field = nullptr;
  bool required = false;     // the key must be present (parser)
  // Bounds on the value, or on each element of a list (validate()).
  double min = 0;
  bool minExclusive = false;
  double max = kInf;
  uint32_t multipleOf = 0;
  bool powerOfTwo = false;
  bool nonEmpty = false;     // kString
  std::vector<std::string_view> choices = {};  // kEnum
  // Rules involving other options: `rule` documents what `check` enforces.
  std::string_view rule = {};
  CheckFn check = nullptr;
  // kObject / kObjectList
  Section child = Section::kTop;
  size_t (*count)(const CacheConfig&) = nullptr;
  void (*resize)(CacheConfig&, size_t) = nullptr;
};

#define TC_FIELD(expr) [](CacheConfig & c, size_t i) -> Field { (void)i; return &(expr); }

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
      throw ConfigError(path, quote(displayKey(name)) + " has a character outside [A-Za-z0-9_.:-] at byte " +
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
}

void checkTierRatio(const CacheConfig& c, size_t i, const std::string& path) {
  if (c.tiers[i].ratio > 0 && c.tiers[i].size > 0) throw ConfigError(path, "set size or ratio, not both");
}

void checkTierNodes(const CacheConfig& c, size_t i, const std::string& path) {
  const TierConfig& t = c.tiers[i];
  if (t.nodes.empty()) return;
  if (t.kind == TierKind::kPmemFile) {
    throw ConfigError(path, "does not apply to a pmem-file tier (its file system places the pages)");
  }
  if (t.kind == TierKind::kAuto) throw ConfigError(path, "does not apply to an auto tier (the planner picks the nodes)");
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

// The CompressedRef budget: slot bits + slab-id bits <= 32, one slab id
// (all ones) reserved for kNull.
void checkRefBudget(const CacheConfig& c, const std::string& path) {
  const uint32_t slotBits = c.slotBits();
  const uint64_t slots = c.slab_size / std::max<uint32_t>(c.minAllocSize(), 1);
  const uint64_t slabs = c.slabCount();
  const uint32_t idBits = static_cast<uint32_t>(std::bit_width(slabs));
  if (slotBits + idBits <= 32) return;
  const uint64_t maxSlabs = (uint64_t{1} << (32 - slotBits)) - 1;
  throw ConfigError(path, "a compressed item reference (32 bits) cannot address this cache: slab_size " +
                              formatSize(c.slab_size) + " / smallest class " + formatSize(c.minAllocSize()) +
                              " = " + std::to_string(slots) + " slots per slab need " + std::to_string(slotBits) +
                              " bits, which leaves room for " +
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
                              formatSize(uint64_t{4} << c.index.bucket_power) + " of buckets for a cache of at most " +
                              std::to_string(capacityBytes(c) / std::max<uint32_t>(c.minAllocSize(), 1)) +
                              " items; at most " + std::to_string(most) + " is useful here (2^" +
                              std::to_string(most) + " buckets, " + formatSize(uint64_t{4} << most) + ")");
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

const std::vector<Option>& options() {
  static const std::vector<Option> kOptions = {
      // ---- top level
      {.section = Section::kTop, .name = "slab_size", .type = Type::kSize,
       .description = "Unit in which tiers are carved and handed to allocation classes.",
       .field = TC_FIELD(c.slab_size), .min = 64 * kKiB, .max = kGiB, .powerOfTwo = true},
      {.section = Section::kTop, .name = "tiers", .type = Type::kObjectList,
       .description = "Memory tiers, fastest first; new items go to tiers[0] and are demoted down the list.",
       .max = CacheConfig::kMaxTiers, .rule = "at least one", .check = checkTiersPresent, .child = Section::kTier,
       .count = [](const CacheConfig& c) { return c.tiers.size(); },
       .resize = [](CacheConfig& c, size_t n) { c.tiers.resize(n); }},
      // After tiers, so that a tier's own mistake is reported first.
      {.section = Section::kTop, .name = "total_size", .type = Type::kSize,
       .description = "For the tier planner: the bytes shared out among the tiers sized by ratio, after the "
                      "sized tiers take theirs. 0: every tier has its own size.",
       .field = TC_FIELD(c.total_size),
       .rule = "0 or >= slab_size; not 0 when a tier has a ratio; at least the sized tiers' sum (more than it "
               "when a tier has a ratio)",
       .check = checkTotalSize},
      {.section = Section::kTop, .name = "pmem_dir", .type = Type::kString,
       .description = "For the tier planner: the directory for emulated PMEM (a file there, unlinked), used by "
                      "auto tiers after the NVM nodes and by pmem-file tiers without a path. \"\": none.",
       .field = TC_FIELD(c.pmem_dir)},
      {.section = Section::kTop, .name = "pools", .type = Type::kObjectList,
       .description = "Pools partition every tier's slabs; pools[0] is the default pool. "
                      "Empty or absent: one pool \"default\" with share 1.",
       .max = CacheConfig::kMaxPools, .rule = "shares add up to at most 1", .check = checkPoolShares,
       .child = Section::kPool,
       .count = [](const CacheConfig& c) { return c.pools.size(); },
       .resize = [](CacheConfig& c, size_t n) { c.pools.resize(n); }},
      {.section = Section::kTop, .name = "allocation", .type = Type::kObject,
       .description = "Allocation classes (item sizes).", .child = Section::kAllocation},
      {.section = Section::kTop, .name = "index", .type = Type::kObject,
       .description = "The hash index over all tiers.",
       .rule = "with tiers, pools and classes, the cache's own structures take at most what the tiers hold "
               "(or 64MiB)",
       .check = checkMetadataBudget, .child = Section::kIndex},
      {.section = Section::kTop, .name = "eviction", .type = Type::kObject,
       .description = "Eviction policy of every (tier, pool, class).", .child = Section::kEviction},
      {.section = Section::kTop, .name = "rebalance", .type = Type::kObject,
       .description = "Moving slabs between allocation classes.", .child = Section::kRebalance},
      {.section = Section::kTop, .name = "demotion", .type = Type::kObject,
       .description = "Moving evicted items down to the next tier.", .child = Section::kDemotion},
      {.section = Section::kTop, .name = "background_eviction", .type = Type::kObject,
       .description = "Background evictor threads that keep free space in every (tier, pool, class).",
       .child = Section::kBackgroundEviction},
      {.section = Section::kTop, .name = "promotion", .type = Type::kObject,
       .description = "Moving items that are hit in a lower tier up to the tier above.", .child = Section::kPromotion},
      {.section = Section::kTop, .name = "persistence", .type = Type::kObject,
       .description = "Persistent tiers (see docs/persistence.md).", .child = Section::kPersistence},
      {.section = Section::kTop, .name = "reaper", .type = Type::kObject,
       .description = "The thread that reclaims expired items in every class and tier.", .child = Section::kReaper},
      {.section = Section::kTop, .name = "workload", .type = Type::kIgnored,
       .description = "Read by tiercache-bench; the cache accepts it with any content and ignores it."},
      {.section = Section::kTop, .name = "server", .type = Type::kIgnored,
       .description = "Read by tiercache-server (see docs/server.md); the cache accepts it and ignores it."},

      // ---- tiers[]
      {.section = Section::kTier, .name = "name", .type = Type::kString,
       .description = "Tier name, used in stats and messages.", .field = TC_FIELD(c.tiers[i].name),
       .required = true, .nonEmpty = true, .rule = "unique; 1-64 bytes of [A-Za-z0-9_.:-]", .check = checkTierName},
      {.section = Section::kTier, .name = "kind", .type = Type::kEnum,
       .description = "dram: anonymous memory; pmem-file: a file on a DAX or ordinary file system "
                      "(or tmpfs to emulate PMEM); dax-kmem: PMEM exposed as a NUMA node; auto: the tier "
                      "planner picks, from the machine's topology (see Planned tiers).",
       .field = TC_FIELD(c.tiers[i].kind),
       .choices = {tierKindName(TierKind::kDram), tierKindName(TierKind::kPmemFile),
                   tierKindName(TierKind::kDaxKmem), tierKindName(TierKind::kAuto)}},
      {.section = Section::kTier, .name = "size", .type = Type::kSize,
       .description = "Bytes the tier takes from the OS; rounded down to whole slabs.",
       .field = TC_FIELD(c.tiers[i].size), .rule = "0 or >= slab_size; a tier needs a size or a ratio",
       .check = checkTierSize},
      {.section = Section::kTier, .name = "ratio", .type = Type::kReal,
       .description = "For the tier planner, instead of a size: this tier's share of the planned total, "
                      "in proportion to the ratios of the other such tiers.",
       .field = TC_FIELD(c.tiers[i].ratio), .rule = "not with a size", .check = checkTierRatio},
      {.section = Section::kTier, .name = "bind_policy", .type = Type::kEnum,
       .description = "What a failed binding to `nodes` does: none: never bind; advisory: warn and go on; "
                      "strict: fail.",
       .field = TC_FIELD(c.tiers[i].bind_policy),
       .choices = {bindPolicyName(BindPolicy::kNone), bindPolicyName(BindPolicy::kAdvisory),
                   bindPolicyName(BindPolicy::kStrict)},
       .rule = "not for pmem-file; not none for dax-kmem", .check = checkTierBindPolicy},
      {.section = Section::kTier, .name = "path", .type = Type::kString,
       .description = "pmem-file: the directory the tier's file is created in (unlinked at once, so nothing is "
                      "left behind); a persistent tier: its pool file. Empty: pmem_dir (not for persistent).",
       .field = TC_FIELD(c.tiers[i].path),
       .rule = "required for pmem-file unless pmem_dir is set (always when persistent); not allowed for other "
               "kinds",
       .check = checkTierPath},
      {.section = Section::kTier, .name = "nodes", .type = Type::kCountList,
       .description = "NUMA nodes to bind the tier's memory to; empty: no binding (dax-kmem: every NVM node).",
       .field = TC_FIELD(c.tiers[i].nodes), .rule = "not for pmem-file or auto", .check = checkTierNodes},
      {.section = Section::kTier, .name = "persistent", .type = Type::kBool,
       .description = "Keep the tier's items across restarts, in a libpmemobj pool file at `path` (created if "
                      "missing).",
       .field = TC_FIELD(c.tiers[i].persistent), .rule = "pmem-file only", .check = checkTierPersistent},
      {.section = Section::kTier, .name = "rebuild_on_mismatch", .type = Type::kBool,
       .description = "An existing pool made for another layout (slab size, tier size, classes, pools) is emptied "
                      "and reused instead of refused.",
       .field = TC_FIELD(c.tiers[i].rebuild_on_mismatch), .rule = "only with persistent",
       .check = checkTierRebuild},

      // ---- pools[]
      {.section = Section::kPool, .name = "name", .type = Type::kString,
       .description = "Pool name, passed to Cache::poolId().", .field = TC_FIELD(c.pools[i].name),
       .required = true, .nonEmpty = true, .rule = "unique; 1-64 bytes of [A-Za-z0-9_.:-]", .check = checkPoolName},
      {.section = Section::kPool, .name = "share", .type = Type::kReal,
       .description = "Fraction of every tier's slabs reserved for the pool.", .field = TC_FIELD(c.pools[i].share),
       .min = 0, .minExclusive = true, .max = 1},

      // ---- allocation
      {.section = Section::kAllocation, .name = "min_size", .type = Type::kSize,
       .description = "Smallest allocation class, item header included.",
       .field = TC_FIELD(c.allocation.min_size), .min = 32, .max = CacheConfig::kMaxAllocSize, .multipleOf = 8,
       .rule = "<= the largest class; with slab_size and the tier sizes, fits a 32-bit item reference "
               "(see Item references)",
       .check = checkMinSize},
      {.section = Section::kAllocation, .name = "max_size", .type = Type::kSize,
       .description = "Largest allocation class; 0: min(slab_size, 16MiB).",
       .field = TC_FIELD(c.allocation.max_size), .max = CacheConfig::kMaxAllocSize, .multipleOf = 8,
       .rule = "<= slab_size", .check = checkMaxSize},
      {.section = Section::kAllocation, .name = "growth_factor", .type = Type::kReal,
       .description = "Class i+1 is class i times this, rounded up to a multiple of 8.",
       .field = TC_FIELD(c.allocation.growth_factor), .min = 1, .minExclusive = true, .max = 8},
      {.section = Section::kAllocation, .name = "sizes", .type = Type::kSizeList,
       .description = "Explicit class sizes; when not empty they replace min_size, max_size and growth_factor.",
       .field = TC_FIELD(c.allocation.sizes), .min = 32, .max = CacheConfig::kMaxAllocSize, .multipleOf = 8,
       .rule = "strictly increasing, each <= slab_size", .check = checkSizes},

      // ---- index
      {.section = Section::kIndex, .name = "bucket_power", .type = Type::kCount,
       .description = "The index has 2^bucket_power buckets (4 bytes each).", .field = TC_FIELD(c.index.bucket_power),
       .min = 10, .max = 32,
       .rule = "at most 20 or one more than the bits of the most items the tiers can hold (capacity / smallest "
               "class), whichever is larger",
       .check = checkBucketPower},
      {.section = Section::kIndex, .name = "lock_power", .type = Type::kCount,
       .description = "The index has 2^lock_power lock stripes.", .field = TC_FIELD(c.index.lock_power),
       .min = 4, .max = 20, .rule = "<= bucket_power", .check = checkLockPower},

      // ---- eviction
      {.section = Section::kEviction, .name = "policy", .type = Type::kEnum,
       .description = "lru: LRU with optional mid-point insertion; clock: FIFO with a second chance, "
                      "hits take no lock; s3fifo: S3-FIFO (small and main FIFO queues, a ghost of "
                      "key hashes), hits take no lock; wtinylfu: W-TinyLFU (a 1% window, an SLRU main, "
                      "admission by a frequency sketch), hits take no lock.",
       .field = TC_FIELD(c.eviction.policy), .choices = {"lru", "clock", "s3fifo", "wtinylfu"}},
      {.section = Section::kEviction, .name = "lru_insertion_point", .type = Type::kCount,
       .description = "LRU: new items enter where 1/2^k of the list is below them (0: at the head; "
                      "1: the middle).",
       .field = TC_FIELD(c.eviction.lru_insertion_point), .max = 8},
      {.section = Section::kEviction, .name = "lru_refresh_ms", .type = Type::kCount,
       .description = "LRU: a hit moves an item to the head at most once per this many milliseconds.",
       .field = TC_FIELD(c.eviction.lru_refresh_ms), .max = 3600000},
      {.section = Section::kEviction, .name = "lru_refresh_ratio", .type = Type::kReal,
       .description = "LRU: the refresh interval is at most this share of the class's eviction age (the "
                      "idle time of the last item evicted), so hot items move in a fast-churning cache; "
                      "0 = always lru_refresh_ms.",
       .field = TC_FIELD(c.eviction.lru_refresh_ratio), .max = 1},
      {.section = Section::kEviction, .name = "s3fifo_small_percent", .type = Type::kCount,
       .description = "S3-FIFO: share of a class's items in the small (probationary) queue, percent.",
       .field = TC_FIELD(c.eviction.s3fifo_small_percent), .min = 1, .max = 90},
      {.section = Section::kEviction, .name = "wtinylfu_window_percent", .type = Type::kCount,
       .description = "W-TinyLFU: share of a class's items in the admission window, percent.",
       .field = TC_FIELD(c.eviction.wtinylfu_window_percent), .min = 1, .max = 90},
      {.section = Section::kEviction, .name = "demote_rejected", .type = Type::kBool,
       .description = "Items that S3-FIFO's small queue or W-TinyLFU's admission filter rejects in an upper "
                      "tier are demoted to the next tier (true) or dropped (false).",
       .field = TC_FIELD(c.eviction.demote_rejected)},

      // ---- rebalance
      {.section = Section::kRebalance, .name = "enabled", .type = Type::kBool,
       .description = "Move slabs between the classes of a pool as the item sizes change.",
       .field = TC_FIELD(c.rebalance.enabled)},
      {.section = Section::kRebalance, .name = "strategy", .type = Type::kEnum,
       .description = "free-slots: when a class needs a slab, take one from the class with the most free slots "
                      "in the same pool. marginal-hits: besides, a background thread moves slabs from the "
                      "class where a slab earns fewest hits to the one where another slab would earn most.",
       .field = TC_FIELD(c.rebalance.strategy), .choices = {"free-slots", "marginal-hits"}},
      {.section = Section::kRebalance, .name = "interval_ms", .type = Type::kCount,
       .description = "marginal-hits: milliseconds between the background rebalancer's runs.",
       .field = TC_FIELD(c.rebalance.interval_ms), .min = 10, .max = 3600000},
      {.section = Section::kRebalance, .name = "max_slabs", .type = Type::kCount,
       .description = "marginal-hits: at most this many slabs moved per run (over all tiers and pools).",
       .field = TC_FIELD(c.rebalance.max_slabs), .min = 1, .max = 1024},

      // ---- demotion
      {.section = Section::kDemotion, .name = "enabled", .type = Type::kBool,
       .description = "An item evicted from a tier other than the last is moved into the next tier instead of "
                      "dropped. false: every tier drops its own evictions. No effect with one tier.",
       .field = TC_FIELD(c.demotion.enabled)},

      // ---- background_eviction
      {.section = Section::kBackgroundEviction, .name = "enabled", .type = Type::kBool,
       .description = "Run background evictors, so that allocations find free slots instead of evicting inline.",
       .field = TC_FIELD(c.background_eviction.enabled)},
      {.section = Section::kBackgroundEviction, .name = "threads", .type = Type::kCount,
       .description = "Evictor threads; the classes of all tiers are shared out among them.",
       .field = TC_FIELD(c.background_eviction.threads), .min = 1, .max = 64},
      {.section = Section::kBackgroundEviction, .name = "interval_ms", .type = Type::kCount,
       .description = "Milliseconds between an evictor's looks at its classes while the cache is in use (backing off to "
                      "1 s when idle); an allocation that leaves its class below the low watermark wakes it at once.",
       .field = TC_FIELD(c.background_eviction.interval_ms), .min = 1, .max = 60000},
      {.section = Section::kBackgroundEviction, .name = "strategy", .type = Type::kEnum,
       .description = "How much a run evicts from a class. free-threshold: below low_watermark percent free, "
                      "enough to reach high_watermark; keep-free: up to keep_free free slots.",
       .field = TC_FIELD(c.background_eviction.strategy), .choices = {"free-threshold", "keep-free"}},
      {.section = Section::kBackgroundEviction, .name = "low_watermark", .type = Type::kReal,
       .description = "free-threshold: a class with less than this percent of its slots free is served.",
       .field = TC_FIELD(c.background_eviction.low_watermark), .max = 100},
      {.section = Section::kBackgroundEviction, .name = "high_watermark", .type = Type::kReal,
       .description = "free-threshold: the percent of free slots a run aims for.",
       .field = TC_FIELD(c.background_eviction.high_watermark), .max = 100, .rule = ">= low_watermark",
       .check = checkHighWatermark},
      {.section = Section::kBackgroundEviction, .name = "min_batch", .type = Type::kCount,
       .description = "free-threshold: a run that evicts from a class evicts at least this many items (never more "
                      "than the class holds).",
       .field = TC_FIELD(c.background_eviction.min_batch), .min = 1, .max = 1000000},
      {.section = Section::kBackgroundEviction, .name = "max_batch", .type = Type::kCount,
       .description = "Both strategies: at most this many items per class per run.",
       .field = TC_FIELD(c.background_eviction.max_batch), .min = 1, .max = 1000000, .rule = ">= min_batch",
       .check = checkMaxBatch},
      {.section = Section::kBackgroundEviction, .name = "keep_free", .type = Type::kCount,
       .description = "keep-free: free slots to keep in every class.",
       .field = TC_FIELD(c.background_eviction.keep_free), .max = 1000000},

      // ---- promotion
      {.section = Section::kPromotion, .name = "enabled", .type = Type::kBool,
       .description = "Move items that are hit in a lower tier up one tier. No effect with one tier.",
       .field = TC_FIELD(c.promotion.enabled)},
      {.section = Section::kPromotion, .name = "background", .type = Type::kBool,
       .description = "true: candidates are queued for a promoter thread; false: find() promotes in place.",
       .field = TC_FIELD(c.promotion.background)},
      {.section = Section::kPromotion, .name = "hits", .type = Type::kCount,
       .description = "Hits an item takes in a lower tier, counted since it landed there, before it is promoted.",
       .field = TC_FIELD(c.promotion.hits), .min = 1, .max = 7},
      {.section = Section::kPromotion, .name = "max_per_sec", .type = Type::kCount,
       .description = "Promotions per second over all threads; 0: no limit.",
       .field = TC_FIELD(c.promotion.max_per_sec), .max = 10000000},
      {.section = Section::kPromotion, .name = "interval_ms", .type = Type::kCount,
       .description = "Milliseconds between runs of the promoter thread; a queued candidate also wakes it.",
       .field = TC_FIELD(c.promotion.interval_ms), .min = 1, .max = 60000},
      {.section = Section::kPromotion, .name = "max_batch", .type = Type::kCount,
       .description = "Promotions per promoter run.",
       .field = TC_FIELD(c.promotion.max_batch), .min = 1, .max = 1000000},
      {.section = Section::kPromotion, .name = "queue_size", .type = Type::kCount,
       .description = "Candidates waiting for the promoter; a candidate that finds the queue full is dropped.",
       .field = TC_FIELD(c.promotion.queue_size), .min = 1, .max = 1000000},
      {.section = Section::kPromotion, .name = "upper_free_watermark", .type = Type::kReal,
       .description = "An item is promoted only while its class in the upper tier has at least this percent of "
                      "its slots free (or can take a new slab); promotion never evicts.",
       .field = TC_FIELD(c.promotion.upper_free_watermark), .max = 100},

      // ---- persistence
      {.section = Section::kPersistence, .name = "durable_sets", .type = Type::kBool,
       .description = "set() stores new items straight into the first persistent tier and returns once they are "
                      "durable there. No effect without a persistent tier.",
       .field = TC_FIELD(c.persistence.durable_sets)},
      {.section = Section::kPersistence, .name = "demote_on_shutdown", .type = Type::kBool,
       .description = "On a clean shutdown, items of the tiers above the first persistent tier are demoted into "
                      "it while it has room (needs demotion.enabled).",
       .field = TC_FIELD(c.persistence.demote_on_shutdown)},

      // ---- reaper
      {.section = Section::kReaper, .name = "enabled", .type = Type::kBool,
       .description = "Run the reaper thread. Off: expired items are reclaimed only by reads, writes and eviction walks "
                      "(and Cache::reapExpired()).",
       .field = TC_FIELD(c.reaper.enabled)},
      {.section = Section::kReaper, .name = "interval_ms", .type = Type::kCount,
       .description = "Milliseconds between reaper runs.",
       .field = TC_FIELD(c.reaper.interval_ms), .min = 1, .max = 3600000},
      {.section = Section::kReaper, .name = "buckets_per_run", .type = Type::kCount,
       .description = "Index buckets one run looks at (one stripe lock at a time): bounds the work of a run; a "
                      "sweep of the index takes 2^index.bucket_power / buckets_per_run runs.",
       .field = TC_FIELD(c.reaper.buckets_per_run), .min = 1, .max = 1u << 30},
  };
  return kOptions;
}

#undef TC_FIELD

std::vector<std::string_view> keysOf(Section s) {
  std::vector<std::string_view> keys;
  for (const Option& o : options()) {
    if (o.section == s) keys.push_back(o.name);
  }
  return keys;
}

// Read-only access through the (mutable) field accessors: validate() and
// toJson() never write through the pointer.
Field fieldOf(const Option& o, const CacheConfig& c, size_t i) { return o.field(const_cast<CacheConfig&>(c), i); }

size_t enumIndex(const Option& o, const Field& f) {
  if (auto* k = std::get_if<TierKind*>(&f)) return static_cast<size_t>(**k);
  if (auto* b = std::get_if<BindPolicy*>(&f)) return static_cast<size_t>(**b);
  if (auto* p = std::get_if<EvictionPolicyKind*>(&f)) return static_cast<size_t>(**p);
  if (auto* e = std::get_if<EvictorStrategyKind*>(&f)) return static_cast<size_t>(**e);
  const std::string& s = *std::get<std::string*>(f);
  return static_cast<size_t>(std::find(o.choices.begin(), o.choices.end(), s) - o.choices.begin());
}

void setEnum(const Option& o, const Field& f, size_t idx) {
  if (auto* k = std::get_if<TierKind*>(&f)) **k = static_cast<TierKind>(idx);
  else if (auto* b = std::get_if<BindPolicy*>(&f)) **b = static_cast<BindPolicy>(idx);
  else if (auto* p = std::get_if<EvictionPolicyKind*>(&f)) **p = static_cast<EvictionPolicyKind>(idx);
  else if (auto* e = std::get_if<EvictorStrategyKind*>(&f)) **e = static_cast<EvictorStrategyKind>(idx);
  else *std::get<std::string*>(f) = std::string(o.choices[idx]);
}

// ---------------------------------------------------------------------------
// Parsing

uint64_t sizeFromJson(const Json& v, const std::string& path) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) throw ConfigError(path, v.dump() + " is negative; a size is a number of bytes");
  if (v.is_number_float()) {
    throw ConfigError(path, v.dump() + " is not a whole number of bytes (write an integer, or a string such as "
                                       "\"1.5GiB\")");
  }
  if (v.is_string()) return parseSize(v.get_ref<const std::string&>(), path);
  typeError(path, "a size (a number of bytes or a string such as \"64MiB\")", v);
}

uint64_t countFromJson(const Json& v, const std::string& path) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) throw ConfigError(path, v.dump() + " is negative; expected an integer >= 0");
  typeError(path, "an integer >= 0", v);
}

uint32_t narrow32(uint64_t v, const std::string& path) {
  if (v > std::numeric_limits<uint32_t>::max()) {
    throw ConfigError(path, std::to_string(v) + " is out of range (at most 4294967295)");
  }
  return static_cast<uint32_t>(v);
}

void storeUnsigned(const Field& f, uint64_t v, const std::string& path) {
  if (auto* p = std::get_if<uint64_t*>(&f)) **p = v;
  else **std::get_if<uint32_t*>(&f) = narrow32(v, path);
}

void parseSection(const Json& obj, Section section, CacheConfig& c, size_t index, const std::string& prefix);

void parseValue(const Option& o, const Json& v, CacheConfig& c, size_t index, const std::string& path) {
  switch (o.type) {
    case Type::kIgnored: return;
    case Type::kObject:
      if (!v.is_object()) typeError(path, "an object", v);
      parseSection(v, o.child, c, index, path);
      return;
    case Type::kObjectList: {
      if (!v.is_array()) typeError(path, "an array of objects", v);
      if (static_cast<double>(v.size()) > o.max) {
        throw ConfigError(path, std::to_string(v.size()) + " entries, at most " + formatNumber(o.max));
      }
      o.resize(c, v.size());
      for (size_t k = 0; k < v.size(); ++k) {
        if (!v[k].is_object()) typeError(indexed(path, k), "an object", v[k]);
        parseSection(v[k], o.child, c, k, indexed(path, k));
      }
      return;
    }
    default: break;
  }
  const Field f = o.field(c, index);
  switch (o.type) {
    case Type::kSize: storeUnsigned(f, sizeFromJson(v, path), path); return;
    case Type::kCount: storeUnsigned(f, countFromJson(v, path), path); return;
    case Type::kReal:
      if (!v.is_number()) typeError(path, "a number", v);
      *std::get<double*>(f) = v.get<double>();
      return;
    case Type::kBool:
      if (!v.is_boolean()) typeError(path, "true or false", v);
      *std::get<bool*>(f) = v.get<bool>();
      return;
    case Type::kString:
      if (!v.is_string()) typeError(path, "a string", v);
      *std::get<std::string*>(f) = v.get<std::string>();
      return;
    case Type::kEnum: {
      std::string list;
      for (std::string_view ch : o.choices) list += (list.empty() ? "" : ", ") + std::string(ch);
      if (!v.is_string()) typeError(path, "one of: " + list, v);
      const std::string& s = v.get_ref<const std::string&>();
      const auto it = std::find(o.choices.begin(), o.choices.end(), s);
      if (it == o.choices.end()) {
        throw ConfigError(path, "unknown value " + quote(s) + ", expected one of: " + list + suggestion(s, o.choices));
      }
      setEnum(o, f, static_cast<size_t>(it - o.choices.begin()));
      return;
    }
    case Type::kCountList:
    case Type::kSizeList: {
      const bool sizes = o.type == Type::kSizeList;
      if (!v.is_array()) typeError(path, sizes ? "an array of sizes" : "an array of integers", v);
      std::vector<uint32_t>& out = *std::get<std::vector<uint32_t>*>(f);
      out.clear();
      for (size_t k = 0; k < v.size(); ++k) {
        const std::string p = indexed(path, k);
        out.push_back(narrow32(sizes ? sizeFromJson(v[k], p) : countFromJson(v[k], p), p));
      }
      return;
    }
    default: return;
  }
}

void parseSection(const Json& obj, Section section, CacheConfig& c, size_t index, const std::string& prefix) {
  std::set<std::string_view> seen;
  for (const auto& [key, value] : obj.items()) {
    const std::string path = join(prefix, key);
    const Option* opt = nullptr;
    for (const Option& o : options()) {
      if (o.section == section && o.name == key) opt = &o;
    }
    if (!opt) throw ConfigError(path, "unknown key" + suggestion(key, keysOf(section)));
    seen.insert(opt->name);
    parseValue(*opt, value, c, index, path);
  }
  for (const Option& o : options()) {
    if (o.section == section && o.required && !seen.count(o.name)) {
      throw ConfigError(join(prefix, o.name), "required key is missing");
    }
  }
}

// nlohmann keeps the last of two equal keys silently; a config with a key
// twice is almost always a mistake, so find the first repeat and its path.
class DuplicateKeyFinder {
 public:
  bool operator()(int depth, Json::parse_event_t event, Json& parsed) {
    // Refused before the parser builds the level: a deep document must not
    // cost stack in whatever walks the parsed tree.
    if (depth > CacheConfig::kMaxJsonDepth) {
      throw ConfigError(path(), "nested deeper than " + std::to_string(CacheConfig::kMaxJsonDepth) + " levels");
    }
    switch (event) {
      case Json::parse_event_t::object_start: stack_.push_back(Frame{}); break;
      case Json::parse_event_t::array_start: stack_.push_back(Frame{.array = true}); break;
      case Json::parse_event_t::key: {
        Frame& f = stack_.back();
        f.key = parsed.get<std::string>();
        if (f.key.find('\0') != std::string::npos) throw ConfigError(path(), "key contains a NUL byte");
        // The workload object is the bench's: its content is not ours to judge.
        const bool inWorkload = stack_.size() > 1 && (stack_.front().key == "workload" || stack_.front().key == "server");
        if (!f.keys.insert(f.key).second && duplicate_.empty() && !inWorkload) duplicate_ = path();
        break;
      }
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        stack_.pop_back();
        elementDone();
        break;
      case Json::parse_event_t::value: elementDone(); break;
    }
    return true;
  }
  // Path of the first repeated key, "" if none.
  const std::string& duplicate() const { return duplicate_; }
  // Key path of the element being parsed (for errors raised inside the parser).
  std::string path() const {
    std::string p;
    for (const Frame& f : stack_) p = f.array ? indexed(p, f.index) : join(p, f.key);
    return p;
  }

 private:
  struct Frame {
    bool array = false;
    size_t index = 0;
    std::string key = {};
    std::set<std::string> keys = {};
  };
  void elementDone() {
    if (stack_.empty() || !stack_.back().array) return;
    if (++stack_.back().index > CacheConfig::kMaxJsonArray) {
      --stack_.back().index;  // the path names the array, not the element past it
      std::string p = path();
      p = p.substr(0, p.rfind('['));
      throw ConfigError(p, "more than " + std::to_string(CacheConfig::kMaxJsonArray) + " elements");
    }
  }
  std::vector<Frame> stack_;
  std::string duplicate_;
};

// `source` names the input in syntax errors: "" for a string, the file name.
CacheConfig parseDocument(std::string_view text, const std::string& source) {
  Json doc;
  auto finder = std::make_shared<DuplicateKeyFinder>();
  try {
    doc = Json::parse(text.begin(), text.end(),
                      [finder](int depth, Json::parse_event_t e, Json& parsed) { return (*finder)(depth, e, parsed); });
  } catch (const ConfigError& e) {  // from the callback: too deep, NUL in a key
    if (source.empty()) throw;
    const std::string what = e.what();
    throw ConfigError(e.path(), (e.path().empty() ? what : what.substr(e.path().size() + 2)) + " (in " + source + ")");
  } catch (const Json::out_of_range&) {
    // A number the parser cannot hold (1e400): reported at its key.
    throw ConfigError(finder->path(), "number out of range" + (source.empty() ? std::string() : " (in " + source + ")"));
  } catch (const Json::parse_error& e) {
    // e.byte is the 1-based offset of the last byte read; past the end at EOF.
    const size_t pos = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + pos, '\n'));
    const size_t lineStart = text.rfind('\n', pos == 0 ? std::string_view::npos : pos - 1);
    const size_t column = lineStart == std::string_view::npos || pos == 0 ? pos + 1 : pos - lineStart;
    std::string what = e.what();
    const size_t detail = what.find(": ", what.find("parse error"));
    if (detail != std::string::npos) what = what.substr(detail + 2);
    throw ConfigError("", (source.empty() ? "" : source + ": ") + "JSON syntax error at line " + std::to_string(line) +
                              ", column " + std::to_string(column) + " (byte offset " + std::to_string(pos) +
                              "): " + what);
  } catch (const Json::exception& e) {
    throw ConfigError(finder->path(), std::string("cannot parse: ") + e.what());
  }
  try {
    if (!finder->duplicate().empty()) throw ConfigError(finder->duplicate(), "key appears more than once");
    if (!doc.is_object()) typeError("", "a JSON object at the top level", doc);
    CacheConfig c;
    parseSection(doc, Section::kTop, c, 0, "");
    c.normalize();
    c.validate();
    return c;
  } catch (const ConfigError& e) {
    if (source.empty()) throw;
    // Keep path() for callers, and name the file for the person reading.
    const std::string what = e.what();
    const std::string reason = e.path().empty() ? what : what.substr(e.path().size() + 2);
    throw ConfigError(e.path(), reason + " (in " + source + ")");
  }
}

// ---------------------------------------------------------------------------
// Validation

bool isMultiple(uint64_t v, uint32_t m) { return m == 0 || v % m == 0; }

std::string showValue(const Option& o, double v) {
  if (v == 0) return "0";
  return o.type == Type::kSize || o.type == Type::kSizeList ? formatSize(static_cast<uint64_t>(v)) : formatNumber(v);
}

std::string rangeText(const Option& o) {
  // Reals can be negative, so their lower bound is always worth stating.
  const bool hasMin = o.min > 0 || o.minExclusive || o.type == Type::kReal;
  const bool hasMax = o.max != kInf;
  if (!hasMin && !hasMax) return "";
  if (!hasMax) return (o.minExclusive ? "> " : ">= ") + showValue(o, o.min);
  return std::string(o.minExclusive ? "(" : "[") + showValue(o, o.min) + ", " + showValue(o, o.max) + "]";
}

// Bounds of one number (a scalar option or one element of a list).
void checkNumber(const Option& o, double v, uint64_t integer, const std::string& path) {
  const bool low = o.minExclusive ? v <= o.min : v < o.min;
  if (low || v > o.max) throw ConfigError(path, showValue(o, v) + " is out of range " + rangeText(o));
  if (!isMultiple(integer, o.multipleOf)) {
    throw ConfigError(path, showValue(o, v) + " is not a multiple of " + std::to_string(o.multipleOf));
  }
  if (o.powerOfTwo && !std::has_single_bit(integer)) {
    throw ConfigError(path, showValue(o, v) + " is not a power of two");
  }
}

void validateSection(Section section, const CacheConfig& c, size_t index, const std::string& prefix);

void validateOption(const Option& o, const CacheConfig& c, size_t index, const std::string& path) {
  switch (o.type) {
    case Type::kIgnored: return;
    case Type::kObject: validateSection(o.child, c, index, path); break;
    case Type::kObjectList:
      if (static_cast<double>(o.count(c)) > o.max) {
        throw ConfigError(path, std::to_string(o.count(c)) + " entries, at most " + formatNumber(o.max));
      }
      for (size_t k = 0; k < o.count(c); ++k) validateSection(o.child, c, k, indexed(path, k));
      break;
    default: {
      const Field f = fieldOf(o, c, index);
      if (auto* p = std::get_if<uint64_t*>(&f)) checkNumber(o, static_cast<double>(**p), **p, path);
      if (auto* p = std::get_if<uint32_t*>(&f)) checkNumber(o, **p, **p, path);
      if (auto* p = std::get_if<double*>(&f)) {
        if (!std::isfinite(**p)) throw ConfigError(path, "not a finite number");
        checkNumber(o, **p, 0, path);
      }
      if (auto* p = std::get_if<std::vector<uint32_t>*>(&f)) {
        for (size_t k = 0; k < (*p)->size(); ++k) checkNumber(o, (**p)[k], (**p)[k], indexed(path, k));
      }
      if (o.type == Type::kString && o.nonEmpty && std::get<std::string*>(f)->empty()) {
        throw ConfigError(path, "must not be empty");
      }
      if (o.type == Type::kEnum && enumIndex(o, f) >= o.choices.size()) {
        const auto* s = std::get_if<std::string*>(&f);
        throw ConfigError(path, "unknown value" + (s ? " " + quote(**s) : std::string()));
      }
    }
  }
  if (o.check) o.check(c, index, path);
}

void validateSection(Section section, const CacheConfig& c, size_t index, const std::string& prefix) {
  for (const Option& o : options()) {
    if (o.section == section) validateOption(o, c, index, join(prefix, o.name));
  }
}

// ---------------------------------------------------------------------------
// Serialization

// Sizes that are whole KiB are written with a unit ("4MiB"), others as numbers.
Json sizeToJson(uint64_t bytes) {
  if (bytes != 0 && bytes % kKiB == 0) return formatSize(bytes);
  return bytes;
}

Json sectionToJson(Section section, const CacheConfig& c, size_t index);

Json optionToJson(const Option& o, const CacheConfig& c, size_t index) {
  if (o.type == Type::kObject) return sectionToJson(o.child, c, index);
  if (o.type == Type::kObjectList) {
    Json arr = Json::array();
    for (size_t k = 0; k < o.count(c); ++k) arr.push_back(sectionToJson(o.child, c, k));
    return arr;
  }
  const Field f = fieldOf(o, c, index);
  switch (o.type) {
    case Type::kSize:
      if (auto* p = std::get_if<uint64_t*>(&f)) return sizeToJson(**p);
      return sizeToJson(**std::get_if<uint32_t*>(&f));
    case Type::kCount: return **std::get_if<uint32_t*>(&f);
    case Type::kReal: return *std::get<double*>(f);
    case Type::kBool: return *std::get<bool*>(f);
    case Type::kString: return *std::get<std::string*>(f);
    case Type::kEnum: {
      const size_t idx = enumIndex(o, f);
      if (idx < o.choices.size()) return std::string(o.choices[idx]);
      if (auto* s = std::get_if<std::string*>(&f)) return **s;  // invalid, but say what it is
      return idx;
    }
    case Type::kCountList:
    case Type::kSizeList: {
      Json arr = Json::array();
      for (uint32_t v : *std::get<std::vector<uint32_t>*>(f)) {
        arr.push_back(o.type == Type::kSizeList ? sizeToJson(v) : Json(v));
      }
      return arr;
    }
    default: return nullptr;
  }
}

Json sectionToJson(Section section, const CacheConfig& c, size_t index) {
  Json obj = Json::object();
  for (const Option& o : options()) {
    if (o.section == section && o.type != Type::kIgnored) obj[std::string(o.name)] = optionToJson(o, c, index);
  }
  return obj;
}

// ---------------------------------------------------------------------------
// Documentation

std::string typeText(const Option& o) {
  switch (o.type) {
    case Type::kSize: return "size";
    case Type::kCount: return "integer";
    case Type::kReal: return "number";
    case Type::kBool: return "boolean";
    case Type::kString: return "string";
    case Type::kEnum: return "string";
    case Type::kCountList: return "array of integers";
    case Type::kSizeList: return "array of sizes";
    case Type::kObject: return "object";
    case Type::kObjectList: return "array of objects";
    case Type::kIgnored: return "any";
  }
  return "";
}

std::string defaultText(const Option& o) {
  if (o.required) return "required";
  if (o.type == Type::kObject || o.type == Type::kIgnored) return "";
  if (o.type == Type::kObjectList) return "`[]`";
  // Defaults come from the structs' initializers, read through the table.
  CacheConfig d;
  d.tiers.resize(1);
  d.pools.resize(1);
  const Json v = optionToJson(o, d, 0);
  return "`" + v.dump() + "`";
}

std::string validText(const Option& o) {
  std::vector<std::string> parts;
  if (o.type == Type::kEnum) {
    std::string list;
    for (std::string_view ch : o.choices) list += (list.empty() ? "" : ", ") + ("`" + std::string(ch) + "`");
    parts.push_back(list);
  }
  std::string range = rangeText(o);
  if (!range.empty()) parts.push_back((o.type == Type::kSizeList ? "each " : "") + range);
  if (o.multipleOf) parts.push_back("multiple of " + std::to_string(o.multipleOf));
  if (o.powerOfTwo) parts.push_back("power of two");
  if (o.nonEmpty) parts.push_back("not empty");
  if (!o.rule.empty()) parts.push_back(std::string(o.rule));
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string keyPath(const Option& o) {
  const std::string_view prefix = sectionPrefix(o.section);
  return prefix.empty() ? std::string(o.name) : std::string(prefix) + "." + std::string(o.name);
}

}  // namespace

// ---------------------------------------------------------------------------
// Public API

uint64_t parseSize(std::string_view text, const std::string& path) {
  auto fail = [&](const std::string& why) { return ConfigError(path, quote(text) + " is not a size: " + why); };
  if (text.empty()) throw fail("empty string");
  if (text[0] == '-') throw fail("negative");
  size_t i = 0;
  unsigned __int128 whole = 0;
  auto isDigit = [&](size_t k) { return k < text.size() && text[k] >= '0' && text[k] <= '9'; };
  if (!isDigit(0)) throw fail("expected a number, optionally followed by a unit (B, KiB, MiB, GiB, TiB)");
  for (; isDigit(i); ++i) {
    whole = whole * 10 + static_cast<unsigned>(text[i] - '0');
    if (whole > std::numeric_limits<uint64_t>::max()) throw fail("too large (at most 2^64-1 bytes)");
  }
  unsigned __int128 frac = 0;
  unsigned __int128 fracScale = 1;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (!isDigit(i)) throw fail("expected digits after '.'");
    for (; isDigit(i); ++i) {
      if (fracScale >= static_cast<unsigned __int128>(1e18)) throw fail("too many decimal places");
      frac = frac * 10 + static_cast<unsigned>(text[i] - '0');
      fracScale *= 10;
    }
  }
  if (i + 1 < text.size() && text[i] == ' ') ++i;  // "1.5 GiB" reads as well as "1.5GiB"
  const std::string_view unit = text.substr(i);
  static constexpr struct {
    std::string_view name;
    uint64_t mult;
  } kUnits[] = {{"", 1}, {"B", 1}, {"KiB", kKiB}, {"MiB", kMiB}, {"GiB", kGiB}, {"TiB", kTiB}};
  uint64_t mult = 0;
  for (const auto& u : kUnits) {
    if (unit == u.name) mult = u.mult;
  }
  if (mult == 0) {
    std::string lower(unit);
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    static constexpr std::string_view kDecimal[] = {"k", "kb", "m", "mb", "g", "gb", "t", "tb"};
    if (std::find(std::begin(kDecimal), std::end(kDecimal), lower) != std::end(kDecimal)) {
      const char prefix = static_cast<char>(std::toupper(static_cast<unsigned char>(lower[0])));
      throw fail("unit '" + std::string(unit) + "' is ambiguous (powers of 1000 or 1024?); write '" + prefix +
                 "iB' for powers of 1024");
    }
    std::vector<std::string_view> names;
    for (const auto& u : kUnits) {
      if (!u.name.empty()) names.push_back(u.name);
    }
    std::string hint;
    for (std::string_view n : names) {
      std::string ln(n);
      for (char& ch : ln) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (ln == lower) hint = " (did you mean '" + std::string(n) + "'?)";
    }
    throw fail("unknown unit " + quote(unit) + "; use B, KiB, MiB, GiB or TiB" + hint);
  }
  const unsigned __int128 fracBytes = frac * mult;
  if (fracBytes % fracScale != 0) throw fail("not a whole number of bytes");
  const unsigned __int128 bytes = whole * mult + fracBytes / fracScale;
  if (bytes > std::numeric_limits<uint64_t>::max()) throw fail("too large (at most 2^64-1 bytes)");
  return static_cast<uint64_t>(bytes);
}

std::string formatSize(uint64_t bytes) {
  static constexpr struct {
    uint64_t mult;
    const char* unit;
  } kUnits[] = {{kTiB, "TiB"}, {kGiB, "GiB"}, {kMiB, "MiB"}, {kKiB, "KiB"}};
  if (bytes != 0) {
    for (const auto& u : kUnits) {
      if (bytes % u.mult == 0) return std::to_string(bytes / u.mult) + u.unit;
    }
  }
  return std::to_string(bytes) + "B";
}

CacheConfig CacheConfig::fromJsonString(std::string_view json) { return parseDocument(json, ""); }

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
  uint64_t bytes = index.bucket_power < 62 ? uint64_t{sizeof(uint32_t)} << index.bucket_power : ~uint64_t{0};
  bytes = sat(bytes, index.lock_power < 56 ? uint64_t{64} << index.lock_power : ~uint64_t{0});
  bytes = sat(bytes, slab_size ? capacityBytes(*this) / slab_size * kSlabMetadataBytes : 0);
  const uint64_t classes = static_cast<uint64_t>(tiers.size()) * std::max<size_t>(pools.size(), 1) * classCount();
  bytes = sat(bytes, classes * kClassMetadataBytes);
  return bytes;
}

CacheConfig CacheConfig::fromJsonFile(const std::string& path) { return parseDocument(readConfigFile(path), path); }

std::string readConfigFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw ConfigError("", "cannot open config file '" + path + "': " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw ConfigError("", "cannot read config file '" + path + "': " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw ConfigError("", "cannot read config file '" + path + "': it is a directory");
  // A device (/dev/zero) or a FIFO has no size to check; only regular files.
  if (!S_ISREG(st.st_mode)) throw ConfigError("", "config file '" + path + "' is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > CacheConfig::kMaxConfigFileBytes) {
    throw ConfigError("", "config file '" + path + "' is " + formatSize(static_cast<uint64_t>(st.st_size)) +
                              ", more than the " + formatSize(CacheConfig::kMaxConfigFileBytes) + " a config may be");
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ConfigError("", "cannot read config file '" + path + "': " + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    // The file may grow while it is read.
    if (text.size() > CacheConfig::kMaxConfigFileBytes) {
      throw ConfigError("", "config file '" + path + "' is more than the " + formatSize(CacheConfig::kMaxConfigFileBytes) +
                                " a config may be");
    }
  }
  return text;
}

const char* evictionPolicyName(EvictionPolicyKind kind) {
  switch (kind) {
    case EvictionPolicyKind::kLru: return "lru";
    case EvictionPolicyKind::kClock: return "clock";
    case EvictionPolicyKind::kS3Fifo: return "s3fifo";
    case EvictionPolicyKind::kWTinyLfu: return "wtinylfu";
  }
  return "?";
}

std::string CacheConfig::toJson() const {
  return sectionToJson(Section::kTop, *this, 0).dump(2, ' ', false, Json::error_handler_t::replace);
}

void CacheConfig::validate() const { validateSection(Section::kTop, *this, 0, ""); }

void CacheConfig::normalize() {
  if (pools.empty()) pools.push_back(PoolConfig{.name = "default", .share = 1.0});
}

uint32_t CacheConfig::minAllocSize() const { return allocation.sizes.empty() ? allocation.min_size : allocation.sizes.front(); }

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
  std::string md = "| Key | Type | Default | Valid values | Description |\n|---|---|---|---|---|\n";
  for (const Option& o : options()) {
    md += "| `" + keyPath(o) + "` | " + typeText(o) + " | " + defaultText(o) + " | " + validText(o) + " | " +
          std::string(o.description) + " |\n";
  }
  return md;
}

}  // namespace tiercache
