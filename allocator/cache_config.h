// CacheConfig: everything that shapes a Cache, read from JSON or built in code.
//
// The JSON form mirrors these structs one to one (snake_case keys). Every
// option is declared once, as a row of the schema engine's table
// (config/schema.h; the rows are in cache_config.cc), from which the parser,
// validate() and docs/configuration.md are derived; an unknown key, a wrong
// type or an impossible value is a ConfigError naming the key path
// (e.g. "tiers[1].size") and the reason.
//
// A config file may also hold a top-level "workload" object: it belongs to
// tiercache-bench and the cache parser leaves it alone.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../config/config_error.h"
#include "../config/schema.h"
#include "../config/sizes.h"
#include "../eviction/policy_names.h"
#include "../flash/flash_options.h"
#include "../tiers/tier_config.h"

namespace tiercache {

enum class EvictionPolicyKind : uint8_t {
  kLru,       // LRU with optional mid-point insertion
  kClock,     // FIFO with a second chance; hits take no lock
  kS3Fifo,    // small + main FIFO queues and a ghost; hits take no lock
  kWTinyLfu,  // window + SLRU main behind a TinyLFU admission filter
};
// The option's choices and evictionPolicyName(); checked against the
// policies' registration order (eviction/policy_names.h), so a kind always
// builds the policy of its name and nothing else.
inline constexpr std::array<NameRow<EvictionPolicyKind>, 4> kEvictionPolicyKindNames = {
    {{EvictionPolicyKind::kLru, "lru"},
     {EvictionPolicyKind::kClock, "clock"},
     {EvictionPolicyKind::kS3Fifo, "s3fifo"},
     {EvictionPolicyKind::kWTinyLfu, "wtinylfu"}}};
static_assert(isDenseNameTable(kEvictionPolicyKindNames, EvictionPolicyKind::kWTinyLfu));
static_assert(
    [] {
      if (kEvictionPolicyKindNames.size() != kEvictionPolicyNames.size()) return false;
      for (size_t i = 0; i < kEvictionPolicyNames.size(); ++i) {
        if (kEvictionPolicyKindNames[i].name != kEvictionPolicyNames[i]) return false;
      }
      return true;
    }(),
    "EvictionPolicyKind names the registered policies, in registration order");
const char* evictionPolicyName(EvictionPolicyKind kind);


struct PoolConfig {
  std::string name;               // unique; pool 0 is the default pool
  double share = 1.0;             // fraction of every tier's slabs, (0, 1]

  friend bool operator==(const PoolConfig&, const PoolConfig&) = default;
};

struct AllocationConfig {
  uint32_t min_size = 64;         // smallest allocation class (bytes, item header included)
  uint32_t max_size = 0;          // largest class; 0 = slab size
  double growth_factor = 1.25;    // class i+1 = class i * factor, rounded up to 8
  std::vector<uint32_t> sizes;    // explicit class sizes; overrides the three above

  friend bool operator==(const AllocationConfig&, const AllocationConfig&) = default;
};

// Allocation classes of one pool, sizes ascending: explicitSizes if given,
// else minSize growing by factor (rounded up to 8) up to maxSize.
std::vector<uint32_t> makeClassSizes(uint32_t minSize, uint32_t maxSize, double factor,
                                     const std::vector<uint32_t>& explicitSizes);

struct IndexConfig {
  uint32_t bucket_power = 20;     // 2^power buckets
  uint32_t lock_power = 10;       // 2^power lock stripes

  friend bool operator==(const IndexConfig&, const IndexConfig&) = default;
};

struct EvictionConfig {
  // W-TinyLFU: the lowest miss ratio measured (docs/configuration.md, "Choosing
  // the eviction policy").
  EvictionPolicyKind policy = EvictionPolicyKind::kWTinyLfu;
  // LRU: new items enter at the point with 1/2^k of the list below it
  // (0 = at the head, classic LRU; 1 = mid-point).
  uint32_t lru_insertion_point = 0;
  // LRU: a hit moves the item to the head at most once per this interval;
  // hits in between take no lock.
  uint32_t lru_refresh_ms = 1000;
  // LRU: the interval shrinks to this share of the class's eviction age
  // (0 = fixed lru_refresh_ms).
  double lru_refresh_ratio = 0.1;
  uint32_t s3fifo_small_percent = 10;
  uint32_t wtinylfu_window_percent = 1;
  // W-TinyLFU: a hill climber moves the window share (starting from
  // wtinylfu_window_percent) by the cache's hit ratio, sample by sample.
  bool wtinylfu_adaptive_window = true;
  // What S3-FIFO's small queue or W-TinyLFU's filter rejects from an upper
  // tier is demoted (true) or dropped (false).
  bool demote_rejected = true;

  friend bool operator==(const EvictionConfig&, const EvictionConfig&) = default;
};

struct RebalanceConfig {
  bool enabled = true;
  // Slabs are taken from the class with the most free slots in the same
  // pool (see docs/design.md, "Slab rebalancing").
  std::string strategy = "free-slots";
  // "marginal-hits" (docs/design.md, "Slab rebalancing by marginal hits"):
  // a background run every interval_ms moves at most max_slabs slabs.
  uint32_t interval_ms = 1000;
  uint32_t max_slabs = 1;

  friend bool operator==(const RebalanceConfig&, const RebalanceConfig&) = default;
};

// Moving items between tiers (docs/design.md, "Moving items between tiers").
struct DemotionConfig {
  // Evicting from tier i < last copies the item into tier i+1 instead of
  // dropping it. Off: every tier drops its own evictions.
  bool enabled = true;

  friend bool operator==(const DemotionConfig&, const DemotionConfig&) = default;
};

enum class EvictorStrategyKind : uint8_t {
  kFreeThreshold,  // keep free space between low and high watermarks (percent of a class)
  kKeepFree,       // keep `keep_free` free slots per class
};
inline constexpr std::array<NameRow<EvictorStrategyKind>, 2> kEvictorStrategyNames = {
    {{EvictorStrategyKind::kFreeThreshold, "free-threshold"}, {EvictorStrategyKind::kKeepFree, "keep-free"}}};
static_assert(isDenseNameTable(kEvictorStrategyNames, EvictorStrategyKind::kKeepFree));

struct BackgroundEvictionConfig {
  bool enabled = false;
  uint32_t threads = 1;               // classes are shared out among them
  uint32_t interval_ms = 10;          // also woken when an allocation finds no free slot
  EvictorStrategyKind strategy = EvictorStrategyKind::kFreeThreshold;
  double low_watermark = 2.0;         // percent free below which a class is served
  double high_watermark = 5.0;        // percent free the batch aims for
  uint32_t min_batch = 8;
  uint32_t max_batch = 512;
  uint32_t keep_free = 64;            // KeepFree: free slots per class
  // Stand aside while the process leaves less than half a core idle
  // (allocations then evict for themselves; docs/design.md).
  bool yield_to_application = true;
  double available_cores = 0;  // what the yield judges against; 0: detect

  friend bool operator==(const BackgroundEvictionConfig&, const BackgroundEvictionConfig&) = default;
};

struct PromotionConfig {
  bool enabled = false;
  bool background = true;             // false: promote synchronously inside find()
  uint32_t hits = 2;                  // hits in a lower tier (since it landed there) before moving up; 1..7
  uint32_t max_per_sec = 0;           // rate limit over all threads; 0 = none
  uint32_t interval_ms = 10;          // promoter thread period (also woken by queued items)
  uint32_t max_batch = 256;           // promotions per promoter run
  uint32_t queue_size = 4096;         // pending promotions; further candidates are dropped
  // The upper tier's class must have at least this percent of its slots
  // free (the background evictor keeps it so); promotion never evicts.
  double upper_free_watermark = 0.5;

  friend bool operator==(const PromotionConfig&, const PromotionConfig&) = default;
};

// Persistent tiers (docs/persistence.md).
struct PersistenceConfig {
  // set() stores new items straight into the first persistent tier and
  // returns only once they are durable there.
  bool durable_sets = false;
  // On a clean shutdown (Cache destroyed), items of the tiers above the
  // first persistent tier are demoted into it while it has room.
  bool demote_on_shutdown = true;

  friend bool operator==(const PersistenceConfig&, const PersistenceConfig&) = default;
};

// The reaper thread that reclaims expired items (docs/design.md, "Item lifecycle").
struct ReaperConfig {
  bool enabled = true;
  uint32_t interval_ms = 1000;       // between runs
  uint32_t buckets_per_run = 65536;  // index buckets looked at per run: bounds the work of one run

  friend bool operator==(const ReaperConfig&, const ReaperConfig&) = default;
};

struct CacheConfig {
  // Largest allocation class the config accepts (allocation.max_size and
  // explicit sizes are checked against it).
  static constexpr uint32_t kMaxAllocSize = 16u << 20;
  // Input bounds (issue 9): what a config may ask for before the cache
  // allocates anything. Pool ids are 16 bits (PoolId), so 65,536 pools.
  static constexpr uint32_t kMaxTiers = 16;
  static constexpr uint32_t kMaxPools = 65536;
  // Tier and pool names: 1..64 bytes of [A-Za-z0-9_.:-], so that they are
  // valid in JSON, Prometheus labels and messages as they are.
  static constexpr size_t kMaxNameLength = 64;
  // JSON nesting the parser accepts (a config needs 4; workloads a few more).
  static constexpr int kMaxJsonDepth = config::kMaxJsonDepth;
  // Elements of any one JSON array: one more than the longest list allowed
  // (pools), so that list's own bound is the one reported. The parser's
  // callback mode (nlohmann 3.11) walks an array once per object that ends
  // in it, so this also bounds that quadratic cost (~1.5 s at the limit).
  static constexpr size_t kMaxJsonArray = config::kMaxJsonArray;
  // Largest config file read (readConfigFile); devices and FIFOs are refused.
  static constexpr uint64_t kMaxConfigFileBytes = config::kMaxConfigFileBytes;
  // metadataBytes() may reach the tiers' capacity, or this much if larger.
  static constexpr uint64_t kMinMetadataBudget = 64ull << 20;
  // Upper bound of one (tier, pool, class)'s records: AllocationClass and
  // its policy object (slab_allocator.cc checks it). S3-FIFO's ghost and
  // W-TinyLFU's sketch grow with the items and are counted in stats.
  static constexpr uint64_t kClassMetadataBytes = 1024;
  // The allocator's per-thread tally (ShardedTally): per class, its words
  // (AllocationClass::kTallyPerClass) in each of 32 cells, and per tier a
  // line per cell of rounding (slab_allocator.cc checks it).
  static constexpr uint64_t kClassTallyBytes = 32 * 3 * 8;
  static constexpr uint64_t kTierTallyRoundingBytes = 32 * 64;
  static constexpr uint64_t kSlabMetadataBytes = 32;  // one SlabInfo

  uint64_t slab_size = 4ull << 20;  // power of two, 64 KiB .. 1 GiB
  std::vector<TierConfig> tiers;    // tier 0 first; at least one
  // For the tier planner (tiers/tier_plan.h): the bytes that the tiers
  // sized by ratio share, after the sized tiers have taken theirs. 0: every
  // tier has its own size (then a ratio tier is an error).
  uint64_t total_size = 0;
  // For the tier planner: the directory where emulated PMEM is made, for
  // auto tiers that reach that level and for pmem-file tiers without a
  // path. "": none (such tiers are then an error).
  std::string pmem_dir;
  std::vector<PoolConfig> pools;    // empty: one pool "default" with share 1
  AllocationConfig allocation;
  IndexConfig index;
  EvictionConfig eviction;
  RebalanceConfig rebalance;
  DemotionConfig demotion;
  BackgroundEvictionConfig background_eviction;
  PromotionConfig promotion;
  PersistenceConfig persistence;
  ReaperConfig reaper;
  // A flash store behind the last memory tier (docs/design.md, "Flash"):
  // the last tier's victims are written there instead of dropped. Off
  // while flash.path is "".
  FlashStoreConfig flash;

  // Parse a JSON document / file; throws ConfigError (and validates).
  static CacheConfig fromJsonString(std::string_view json);
  static CacheConfig fromJsonFile(const std::string& path);
  // The config as JSON; fromJsonString(toJson()) gives an equal config.
  std::string toJson() const;
  // Throws ConfigError for impossible values (called by the parsers and by Cache).
  // Accepts an empty pools list (meaning what normalize() fills in).
  void validate() const;
  // Fills in what an omitted option implies: an empty pools list becomes one
  // pool "default" with share 1. The parsers call it before validate(), so a
  // parsed config is always normalized; Cache treats an empty list the same.
  void normalize();

  // Derived values, meaningful once validate() has passed. The allocator uses
  // these rather than its own arithmetic, so that the budget validate()
  // checks is the one the cache lives by.
  uint32_t minAllocSize() const;  // smallest class: sizes[0], else allocation.min_size
  // Largest class: sizes.back(), else max_size, else min(slab_size, kMaxAllocSize).
  uint32_t maxAllocSize() const;
  // CompressedRef slot bits: enough to number the slots of a slab of the
  // smallest class, bit_width(slab_size / minAllocSize() - 1). validate()
  // guarantees slabCount() < 2^(CompressedRef::kBits - slotBits()) (and
  // < 2^32): every slab has an id and the all-ones id stays free for kNull.
  uint32_t slotBits() const;
  // Slabs over all tiers, each tier rounded down to whole slabs. Tiers sized
  // by ratio count 0 until the tier planner has given them a size.
  uint64_t slabCount() const;
  // Allocation classes per (tier, pool).
  size_t classCount() const;
  // Largest index.bucket_power validate() accepts for these tiers.
  uint32_t maxUsefulBucketPower() const;
  // What the cache's own structures will cost before any item is stored:
  // index buckets and lock stripes, slab records, per-class records. An
  // upper estimate, reported by tiercache-topo and checked by validate().
  uint64_t metadataBytes() const;

  // A one-tier DRAM config of `bytes` named "dram", with default options and
  // the pool list normalized. Slabs are 4 MiB from 64 MiB up and 1 MiB below
  // that, so that small test caches still get a useful number of slabs.
  static CacheConfig dram(uint64_t bytes);

  friend bool operator==(const CacheConfig&, const CacheConfig&) = default;
};

// A config file's text (config/schema.h): a regular file of at most
// kMaxConfigFileBytes; throws ConfigError naming the file.
using config::readConfigFile;
// parseSize() and formatSize(): config/sizes.h.

// Every config option (key path, type, default, valid values, description)
// as a Markdown table: the source of the table in docs/configuration.md.
std::string configOptionsMarkdown();
// The option table itself, for tests and tools that walk every option.
const config::Schema& cacheConfigSchema();

}  // namespace tiercache
