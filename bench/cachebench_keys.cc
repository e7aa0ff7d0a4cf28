#include "bench/cachebench_keys.h"

#include <array>

namespace tiercache::bench {

namespace {

using enum CachebenchSection;
using enum CachebenchHandling;

// In docs order: each section's keys that are read, then its ignored keys
// grouped by reason. Rows without keys (kNote) only explain the docs table.
constexpr CachebenchKey kKeys[] = {
    {kCacheConfig, "cacheSizeMB", "`cacheSizeMB` (required)", "integer", kHonoured, "`total_size` = MiB × 2^20",
     "split among `memoryTiers` by ratio. Without `memoryTiers`: one DRAM tier of that size"},
    {kCacheConfig, "memoryTiers", "`memoryTiers`", "list of objects", kHonoured, "`tiers`",
     "one tier per entry, in order (tier 0 is the front)"},
    {kCacheConfig, "", "`memoryTiers[].ratio` (required)", "", kNote, "`tiers[].ratio`",
     "the tier's share of `cacheSizeMB`. The planner sizes the tier, rounding down to whole slabs (the last ratio tier "
     "takes what rounding left)"},
    {kCacheConfig, "", "`memoryTiers[].file`", "", kNote,
     "`tiers[].kind` = `pmem-file`, `tiers[].path` = the file's **directory**",
     "see \"File tiers\" below. Tier name `pmem` (`pmem0`, `pmem1` … when there are several)"},
    {kCacheConfig, "", "`memoryTiers[].memBindNodes`", "", kNote, "`tiers[].nodes` on a `dram` tier",
     "`0`, `\"0\"`, `\"0,1\"`, `\"0-2\"` or `[0, 1]`. Bind policy stays `advisory` (docs/configuration.md). Not "
     "allowed with `file`. Tier name `dram` (`dram0` … when there are several)"},
    {kCacheConfig, "", "(slab size)", "", kNote, "`slab_size`",
     "CacheLib's slabs are 4 MiB. tiercache uses 4 MiB too, except when a tier gets less than 256 MiB and the largest "
     "class is at most 1 MiB: then 1 MiB, so that a small tier still has slabs for every size class in use"},
    {kCacheConfig, "allocFactor", "`allocFactor`", "number", kHonoured, "`allocation.growth_factor`",
     "in (1, 10]: CacheLib has no upper bound, its own configs go up to 10"},
    {kCacheConfig, "minAllocSize", "`minAllocSize`", "integer", kHonoured, "`allocation.min_size`", ""},
    {kCacheConfig, "maxAllocSize", "`maxAllocSize`", "integer", kHonoured, "`allocation.max_size`",
     "when absent: min(slab size, 1 MiB); when the workload's largest key + value need more, CacheLib's own default, "
     "the 4 MiB slab (and 4 MiB slabs)"},
    {kCacheConfig, "allocSizes", "`allocSizes`", "list of numbers", kHonoured, "`allocation.sizes`",
     "explicit classes; a size that is not a multiple of 8 (tiercache's slot alignment) is rounded up to one, and the "
     "warning says so (`100 -> 104` in `fast_shutdown.json`)"},
    {kCacheConfig, "numPools", "`numPools`", "integer", kHonoured, "`pools`",
     "pool 0 is `default`, the others `pool1` …"},
    {kCacheConfig, "poolSizes", "`poolSizes`", "list of numbers", kHonoured, "`pools[].share`",
     "one per pool: the pool's fraction of the cache, as cachebench sizes pools. Without it the pools share equally "
     "(cachebench insists on it). Which keys go to which pool: `keyPoolDistribution`"},
    {kCacheConfig, "htBucketPower", "`htBucketPower`", "integer", kHonoured, "`index.bucket_power`",
     "a power past what the cache's item count can use (tiercache maps its buckets; CacheLib's untouched table pages "
     "cost nothing) is lowered to that maximum, and the warning says so (`config_kvtrace.json` asks for 29: 2 GiB of "
     "buckets for a 500 MB cache)"},
    {kCacheConfig, "htLockPower", "`htLockPower`", "integer", kHonoured, "`index.lock_power`",
     "clamped to min(20, `htBucketPower`): CacheLib configs often ask for more stripes than tiercache allows. Striping "
     "changes contention only"},
    {kCacheConfig, "allocator", "`allocator`", "string", kHonoured, "`eviction.policy`",
     "through one table (`policyForAllocator` in bench/cachebench.cc), below. `\"RAM\"` (the cache_component "
     "stressor's memory cache) runs as `LRU`; `\"flash\"` is refused (no flash cache); other names are refused"},
    {kCacheConfig, "lruRefreshSec", "`lruRefreshSec`", "integer", kHonoured,
     "`eviction.lru_refresh_ms` = s × 1000 (at most one hour)",
     "cachebench's default is 60 s and so is the mapped default"},
    {kCacheConfig, "lruIpSpec", "`lruIpSpec`", "integer", kHonoured, "`eviction.lru_insertion_point`", ""},
    {kCacheConfig, "backgroundEvictorIntervalMilSec", "`backgroundEvictorIntervalMilSec`", "integer", kHonoured,
     "`background_eviction.enabled` = (value > 0), `interval_ms`",
     "0 or absent: no background evictor, as in cachebench"},
    {kCacheConfig, "evictorThreads", "`evictorThreads`", "integer", kHonoured, "`background_eviction.threads`", ""},
    {kCacheConfig, "backgroundEvictorStrategy", "`backgroundEvictorStrategy`", "string", kHonoured,
     "`background_eviction.strategy`", "`free-threshold` or `keep-free`; others are refused"},
    {kCacheConfig, "lowEvictionAcWatermark", "`lowEvictionAcWatermark`", "number", kHonoured,
     "`background_eviction.low_watermark`", "percent free"},
    {kCacheConfig, "highEvictionAcWatermark", "`highEvictionAcWatermark`", "number", kHonoured,
     "`background_eviction.high_watermark`", "percent free"},
    {kCacheConfig, "freeThreshold", "`freeThreshold`", "number", kHonoured, "`background_eviction.low_watermark`",
     "another name for `lowEvictionAcWatermark`. Giving both with different values is refused"},
    {kCacheConfig, "maxEvictionBatch", "`maxEvictionBatch`", "integer", kHonoured, "`background_eviction.max_batch`",
     ""},
    {kCacheConfig, "minEvictionBatch", "`minEvictionBatch`", "integer", kHonoured, "`background_eviction.min_batch`",
     ""},
    {kCacheConfig, "nKeepFree", "`nKeepFree`", "integer", kHonoured, "`background_eviction.keep_free`",
     "for `keep-free`"},
    {kCacheConfig, "backgroundPromoterIntervalMilSec", "`backgroundPromoterIntervalMilSec`", "integer", kHonoured,
     "`promotion.enabled` = (value > 0), `background` = true, `interval_ms`",
     "tiercache promotes items that are hit in a lower tier (`promotion.hits` times). It does not scan classes as "
     "CacheLib's promoter does"},
    {kCacheConfig, "promoterThreads", "`promoterThreads`", "integer", kHonoured, "—",
     "1 is accepted. More than 1 is refused: tiercache runs one promoter thread"},
    {kCacheConfig, "backgroundPromoterStrategy", "`backgroundPromoterStrategy`", "string", kHonoured, "—",
     "`\"\"` or `promotion-threshold`; others are refused"},
    {kCacheConfig, "maxPromotionBatch", "`maxPromotionBatch`", "integer", kHonoured, "`promotion.max_batch`", ""},
    {kCacheConfig, "promotionAcWatermark", "`promotionAcWatermark`", "number", kHonoured,
     "`promotion.upper_free_watermark`", "percent free the upper class needs before an item moves up"},
    {kCacheConfig, "syncPromotion", "`syncPromotion`", "bool", kHonoured,
     "`promotion.enabled` = true, `background` = false", "when true"},
    {kCacheConfig, "numDuplicateElements", "`numDuplicateElements`", "integer", kRefusedIfSet, "—",
     "non-zero is refused: an item lives in exactly one tier"},
    {kCacheConfig, "insertToFirstFreeTier", "`insertToFirstFreeTier`", "bool", kRefusedIfSet, "—",
     "true is refused: new items always go to tier 0"},
    {kCacheConfig, "insertTopTier", "`insertTopTier`", "bool", kRefusedIfSet, "—",
     "false is refused, for the same reason"},
    {kCacheConfig, "nvmCacheSizeMB", "`nvmCacheSizeMB`", "integer", kHonoured,
     "`flash.path`, `flash.size` = MiB × 2^20",
     "non-zero: a flash store behind the last memory tier, started empty (`flash.discard_contents`), regions "
     "reclaimed least recently read first (`lru`, Navy's default). Capped at 90% of the free space of the file's "
     "file system and so that the store's DRAM index (12 bytes per item of the workload's mean size) takes at most "
     "1/8 of the machine's memory; the warning says when it is capped"},
    {kCacheConfig, "nvmCachePaths", "`nvmCachePaths`", "list of strings", kHonoured, "`flash.path`",
     "the first entry: a directory gets a file of its own (removed after the run); an existing regular file is used "
     "and kept; a block device is **never** written (it would be overwritten), no file is made under `/dev` for a "
     "device that is not there (`/dev/md0`), and a path whose directory does not exist is not created: then, as "
     "without the key, a file in `/var/tmp` (removed after the run), and the warning "
     "says why. More entries (Navy's RAID-0) are named in the warning: the store has one file"},
    {kCacheConfig, "navyRegionSizeMB", "`navyRegionSizeMB`", "integer", kHonoured, "`flash.region_size` = MiB × 2^20",
     "default 16, as Navy's"},
    {kCacheConfig, "navyAdmissionWriteRateMB", "`navyAdmissionWriteRateMB`", "integer", kHonoured,
     "`flash.admit_write_mb_per_sec` = value × 1.048576",
     "Navy's MB is 2^20 bytes, tiercache's 10^6. tiercache drops items past the budget; Navy's dynamic random "
     "admission drops a share of them"},
    {kCacheConfig, "navyQDepth", "`navyQDepth`", "integer", kHonoured, "`flash.queue_depth`", "when > 0"},
    {kCacheConfig, "navyHitsReinsertionThreshold", "`navyHitsReinsertionThreshold`", "integer", kHonoured,
     "`flash.reinsert_hits` = (value > 0)",
     "Navy reinserts an item read at least that many times; tiercache one read at least once (a threshold above 1 "
     "is named in the warning). Without it neither reinserts, as in Navy"},
    {kCacheConfig, "navySegmentedFifoSegmentRatio", "`navySegmentedFifoSegmentRatio`", "list of numbers", kHonoured,
     "`flash.region_eviction` = `fifo`",
     "non-empty: FIFO regions. Navy's segmented FIFO (more than one ratio) runs as one FIFO, named in the warning"},
    {kCacheConfig, "navyDataChecksum truncateItemToOriginalAllocSizeInNvm",
     "`navyDataChecksum`, `truncateItemToOriginalAllocSizeInNvm`", "bool", kHonoured, "—",
     "always so: every flash entry is checksummed and holds the key and value bytes only"},
    {kCacheConfig, "enableCachePersistence", "`enableCachePersistence`", "bool", kRefusedIfSet, "—",
     "true is refused. tiercache persists through a persistent `pmem-file` tier (docs/persistence.md)"},
    {kCacheConfig, "lruRefreshRatio", "`lruRefreshRatio`", "", kIgnored, "",
     "tunes CacheLib's LRU lock and update internals; tiercache's LRU refreshes by `eviction.lru_refresh_ms`"},
    {kCacheConfig, "lruUpdateOnWrite", "`lruUpdateOnWrite`", "", kIgnored, "",
     "tunes CacheLib's LRU lock and update internals; tiercache's LRU refreshes by `eviction.lru_refresh_ms`"},
    {kCacheConfig, "lruUpdateOnRead", "`lruUpdateOnRead`", "", kIgnored, "",
     "tunes CacheLib's LRU lock and update internals; tiercache's LRU refreshes by `eviction.lru_refresh_ms`"},
    {kCacheConfig, "tryLockUpdate", "`tryLockUpdate`", "", kIgnored, "",
     "tunes CacheLib's LRU lock and update internals; tiercache's LRU refreshes by `eviction.lru_refresh_ms`"},
    {kCacheConfig, "useCombinedLockForIterators", "`useCombinedLockForIterators`", "", kIgnored, "",
     "tunes CacheLib's LRU lock and update internals; tiercache's LRU refreshes by `eviction.lru_refresh_ms`"},
    {kCacheConfig, "poolRebalanceIntervalSec", "`poolRebalanceIntervalSec`", "", kIgnored, "",
     "tiercache rebalances slabs within a pool on demand (`rebalance` in docs/configuration.md), whatever these say"},
    {kCacheConfig, "rebalanceStrategy", "`rebalanceStrategy`", "", kIgnored, "",
     "tiercache rebalances slabs within a pool on demand (`rebalance` in docs/configuration.md), whatever these say"},
    {kCacheConfig, "rebalanceMinSlabs", "`rebalanceMinSlabs`", "", kIgnored, "",
     "tiercache rebalances slabs within a pool on demand (`rebalance` in docs/configuration.md), whatever these say"},
    {kCacheConfig, "rebalanceDiffRatio", "`rebalanceDiffRatio`", "", kIgnored, "",
     "tiercache rebalances slabs within a pool on demand (`rebalance` in docs/configuration.md), whatever these say"},
    {kCacheConfig, "moveOnSlabRelease", "`moveOnSlabRelease`", "", kIgnored, "",
     "tiercache rebalances slabs within a pool on demand (`rebalance` in docs/configuration.md), whatever these say"},
    {kCacheConfig, "poolResizeIntervalSec", "`poolResizeIntervalSec`", "", kIgnored, "",
     "tiercache rebalances slabs within a pool on demand (`rebalance` in docs/configuration.md), whatever these say"},
    {kCacheConfig, "poolOptimizeIntervalSec", "`poolOptimizeIntervalSec`", "", kIgnored, "",
     "tiercache rebalances slabs within a pool on demand (`rebalance` in docs/configuration.md), whatever these say"},
    {kCacheConfig, "poolOptimizerStrategy", "`poolOptimizerStrategy`", "", kIgnored, "",
     "tiercache rebalances slabs within a pool on demand (`rebalance` in docs/configuration.md), whatever these say"},
    {kCacheConfig, "rebalanceMinRatio", "`rebalanceMinRatio`", "", kIgnored, "",
     "tiercache rebalances slabs within a pool on demand (`rebalance` in docs/configuration.md), whatever these say"},
    {kCacheConfig, "maxEvictionPromotionHotness", "`maxEvictionPromotionHotness`", "", kIgnored, "",
     "tunes CacheLib's background movers' internals; tiercache's evictor and promoter take the keys above"},
    {kCacheConfig, "minPromotionBatch", "`minPromotionBatch`", "", kIgnored, "",
     "tunes CacheLib's background movers' internals; tiercache's evictor and promoter take the keys above"},
    {kCacheConfig, "minAcAllocationWatermark", "`minAcAllocationWatermark`", "", kIgnored, "",
     "tunes CacheLib's background movers' internals; tiercache's evictor and promoter take the keys above"},
    {kCacheConfig, "maxAcAllocationWatermark", "`maxAcAllocationWatermark`", "", kIgnored, "",
     "tunes CacheLib's background movers' internals; tiercache's evictor and promoter take the keys above"},
    {kCacheConfig, "usePosixShm", "`usePosixShm`", "", kIgnored, "",
     "shared-memory and page setup of CacheLib's cache; tiercache maps its tiers itself (huge pages where the file "
     "system gives them)"},
    {kCacheConfig, "cacheDir", "`cacheDir`", "", kIgnored, "",
     "shared-memory and page setup of CacheLib's cache; tiercache maps its tiers itself (huge pages where the file "
     "system gives them)"},
    {kCacheConfig, "enableFastShutdown", "`enableFastShutdown`", "", kIgnored, "",
     "shared-memory and page setup of CacheLib's cache; tiercache maps its tiers itself (huge pages where the file "
     "system gives them)"},
    {kCacheConfig, "shmType", "`shmType`", "", kIgnored, "",
     "shared-memory and page setup of CacheLib's cache; tiercache maps its tiers itself (huge pages where the file "
     "system gives them)"},
    {kCacheConfig, "hugePageSize", "`hugePageSize`", "", kIgnored, "",
     "shared-memory and page setup of CacheLib's cache; tiercache maps its tiers itself (huge pages where the file "
     "system gives them)"},
    {kCacheConfig, "hugePageMountDir", "`hugePageMountDir`", "", kIgnored, "",
     "shared-memory and page setup of CacheLib's cache; tiercache maps its tiers itself (huge pages where the file "
     "system gives them)"},
    {kCacheConfig, "lockMemory", "`lockMemory`", "", kIgnored, "",
     "shared-memory and page setup of CacheLib's cache; tiercache maps its tiers itself (huge pages where the file "
     "system gives them)"},
    {kCacheConfig, "navyReaderThreads", "`navyReaderThreads`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "flash I/O runs on the calling thread"},
    {kCacheConfig, "navyWriterThreads", "`navyWriterThreads`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "flash I/O runs on the calling thread"},
    {kCacheConfig, "navyBigHashSizePct", "`navyBigHashSizePct`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "one region log for all sizes, no BigHash"},
    {kCacheConfig, "navyBlockSize", "`navyBlockSize`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "flash I/O is in 4 KiB units (O_DIRECT alignment)"},
    {kCacheConfig, "navySmallItemMaxSize", "`navySmallItemMaxSize`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "one region log for all sizes, no BigHash"},
    {kCacheConfig, "navyParcelMemoryMB", "`navyParcelMemoryMB`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "demotion writes into the region buffer at once"},
    {kCacheConfig, "navyProbabilityReinsertionThreshold", "`navyProbabilityReinsertionThreshold`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "only hit-based reinsertion (flash.reinsert_hits)"},
    {kCacheConfig, "navyNumInmemBuffers", "`navyNumInmemBuffers`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "the store keeps two region buffers"},
    {kCacheConfig, "navyCleanRegions", "`navyCleanRegions`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "the store keeps two region buffers"},
    {kCacheConfig, "printNvmCounters", "`printNvmCounters`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "the report prints the flash counters"},
    {kCacheConfig, "dipperSizeMB", "`dipperSizeMB`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "no such knob in tiercache's flash store"},
    {kCacheConfig, "dipperBackend", "`dipperBackend`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "no such knob in tiercache's flash store"},
    {kCacheConfig, "dipperDevicePath", "`dipperDevicePath`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "no such knob in tiercache's flash store"},
    {kCacheConfig, "dipperUseDirectIO", "`dipperUseDirectIO`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "no such knob in tiercache's flash store"},
    {kCacheConfig, "writeAmpDeviceList", "`writeAmpDeviceList`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "write amplification comes from the store's counters"},
    {kCacheConfig, "deviceMaxWriteSize", "`deviceMaxWriteSize`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "regions are written in 1 MiB pieces"},
    {kCacheConfig, "nvmCacheMetadataSizeMB", "`nvmCacheMetadataSizeMB`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "the index is in DRAM, no metadata area"},
    {kCacheConfig, "navyBigHashBucketSize", "`navyBigHashBucketSize`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "one region log for all sizes, no BigHash"},
    {kCacheConfig, "navyBloomFilterPerBucketSize", "`navyBloomFilterPerBucketSize`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "one region log for all sizes, no BigHash"},
    {kCacheConfig, "navyMaxNumReads", "`navyMaxNumReads`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "flash I/O runs on the calling thread"},
    {kCacheConfig, "navyMaxNumWrites", "`navyMaxNumWrites`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "flash I/O runs on the calling thread"},
    {kCacheConfig, "navyStackSizeKB", "`navyStackSizeKB`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "no fibers"},
    {kCacheConfig, "navyEnableIoUring", "`navyEnableIoUring`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "flash.io_engine auto picks io_uring where the kernel allows"},
    {kCacheConfig, "navyCleanRegionThreads", "`navyCleanRegionThreads`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "regions are reclaimed by the writer"},
    {kCacheConfig, "navyMaxConcurrentInserts", "`navyMaxConcurrentInserts`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "inserts are not queued"},
    {kCacheConfig, "navyEncryption", "`navyEncryption`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "no encryption hook: entries are stored in clear"},
    {kCacheConfig, "navyReqOrderShardsPower", "`navyReqOrderShardsPower`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "a key's flash moves are ordered under its lock"},
    {kCacheConfig, "navySizeClasses", "`navySizeClasses`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "entries are packed at any size, no size classes"},
    {kCacheConfig, "navyArenas", "`navyArenas`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "one region log, no arenas"},
    {kCacheConfig, "navyEnableAccessTimeMap", "`navyEnableAccessTimeMap`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "no access-time map"},
    {kCacheConfig, "navyAccessTimeMapMaxSize", "`navyAccessTimeMapMaxSize`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "no access-time map"},
    {kCacheConfig, "navyEnableItemHistoryTracking", "`navyEnableItemHistoryTracking`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "no item history"},
    {kCacheConfig, "deviceEnableFDP", "`deviceEnableFDP`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "no FDP placement"},
    {kCacheConfig, "nvmAdmissionRetentionTimeThreshold", "`nvmAdmissionRetentionTimeThreshold`", "", kIgnored, "",
     "tunes a part of CacheLib's Navy that tiercache's flash store does not have: one region log for all item sizes "
     "(no BigHash, size classes or arenas), I/O from the calling thread (no reader/writer pools or fibers), two region "
     "buffers, entries always checksummed, no encryption hook. The warning names each key with a short reason",
     "no retention-time admission"},
    {kCacheConfig, "enableItemDestructorCheck", "`enableItemDestructorCheck`", "", kIgnored, "",
     "item destructors: tiercache reports removals through its own hooks"},
    {kCacheConfig, "enableItemDestructor", "`enableItemDestructor`", "", kIgnored, "",
     "item destructors: tiercache reports removals through its own hooks"},
    {kCacheConfig, "mmReconfigureIntervalSecs", "`mmReconfigureIntervalSecs`", "", kIgnored, "",
     "CacheLib internals or tooling that do not change what is measured"},
    {kCacheConfig, "memoryOnlyTTL", "`memoryOnlyTTL`", "", kIgnored, "",
     "CacheLib internals or tooling that do not change what is measured"},
    {kCacheConfig, "trackRecentItemsForDump", "`trackRecentItemsForDump`", "", kIgnored, "",
     "CacheLib internals or tooling that do not change what is measured"},
    {kCacheConfig, "tickerSynchingSeconds", "`tickerSynchingSeconds`", "", kIgnored, "",
     "CacheLib internals or tooling that do not change what is measured"},
    {kCacheConfig, "eventTrackerFilePath", "`eventTrackerFilePath`", "", kIgnored, "",
     "CacheLib internals or tooling that do not change what is measured"},
    {kCacheConfig, "eventTrackerSamplingRate", "`eventTrackerSamplingRate`", "", kIgnored, "",
     "CacheLib internals or tooling that do not change what is measured"},
    {kCacheConfig, "eventTrackerQueueSize", "`eventTrackerQueueSize`", "", kIgnored, "",
     "CacheLib internals or tooling that do not change what is measured"},
    {kCacheConfig, "fccCoroFiberAdapterNumThreads", "`fccCoroFiberAdapterNumThreads`", "", kIgnored, "",
     "CacheLib internals or tooling that do not change what is measured"},
    {kCacheConfig, "fccCoroFiberAdapterFibersPerThread", "`fccCoroFiberAdapterFibersPerThread`", "", kIgnored, "",
     "CacheLib internals or tooling that do not change what is measured"},
    {kCacheConfig, "fccCoroFiberAdapterStackSizeKB", "`fccCoroFiberAdapterStackSizeKB`", "", kIgnored, "",
     "CacheLib internals or tooling that do not change what is measured"},
    {kCacheConfig, "customConfigJson", "`customConfigJson`", "", kIgnored, "",
     "CacheLib internals or tooling that do not change what is measured"},
    {kCacheConfig, "lru2qHotPct", "`lru2qHotPct`", "", kIgnored, "",
     "2Q's queue sizes: S3-FIFO sizes its small queue itself"},
    {kCacheConfig, "lru2qColdPct", "`lru2qColdPct`", "", kIgnored, "",
     "2Q's queue sizes: S3-FIFO sizes its small queue itself"},
    {kTestConfig, "numOps", "`numOps`", "integer", kHonoured, "`ops_per_thread`",
     "per thread, as in cachebench. `tiercache-bench run --max-ops N` caps it (the tally below uses that)"},
    {kTestConfig, "numThreads", "`numThreads`", "integer", kHonoured, "`threads`", "default 1"},
    {kTestConfig, "numKeys", "`numKeys`", "integer", kHonoured, "`keys`", ""},
    {kTestConfig, "keySizeRange keySizeRangeProbability", "`keySizeRange` + `keySizeRangeProbability`",
     "list of numbers", kHonoured, "`key_size_buckets`",
     "n + 1 bounds with n probabilities: piecewise-uniform pieces `[a, b)`, `[b, c)` … as cachebench draws them (a "
     "real number, truncated: `[8, 9]` with `[1]` is always 8). Without probabilities a two-entry range is one "
     "inclusive range `[a, b]` (cachebench itself refuses that). Any length ≥ 1 works, see \"Keys\" below"},
    {kTestConfig, "valSizeRange valSizeRangeProbability", "`valSizeRange` + `valSizeRangeProbability`",
     "list of numbers", kHonoured, "`value_size_buckets`",
     "the same piecewise rule; with **as many probabilities as sizes**, cachebench's discrete form: each listed size "
     "exactly, with its probability. Any other count is refused, naming both counts"},
    {kTestConfig, "valSizeDistFile popDistFile", "`valSizeDistFile`, `popDistFile`", "string", kHonoured, "—",
     "JSON side files whose `valSizeRange`/`valSizeRangeProbability` and `popularityBuckets`/`popularityWeights` "
     "replace the config's, read from `configPath` as cachebench does. A missing file is refused, naming the path "
     "tried"},
    {kTestConfig, "configPath", "`configPath`", "string", kHonoured, "—",
     "where side files and traces are looked for; default: the config file's directory"},
    {kTestConfig, "getRatio setRatio delRatio loneGetRatio", "`getRatio`, `setRatio`, `delRatio`, `loneGetRatio`",
     "number", kHonoured, "`get_ratio`, `set_ratio`, `remove_ratio`, `lone_get_ratio`",
     "weights, normalized to sum to 1 (cachebench draws each operation in proportion to them). All zero is refused "
     "unless `generator` is `replay`"},
    {kTestConfig, "", "`loneGetRatio`", "", kNote, "`lone_get_ratio`",
     "a get of a key that is never set: always a miss, and never filled, even with lookaside"},
    {kTestConfig, "popularityBuckets popularityWeights", "`popularityBuckets` + `popularityWeights`", "list of numbers",
     kHonoured, "`popularity` = `piecewise`",
     "the key space (of each pool) is cut into consecutive buckets of the given relative sizes. A bucket is drawn by "
     "weight, then a key uniformly inside it"},
    {kTestConfig, "", "(no `popularityBuckets`)", "", kNote, "`popularity` = `normal`, `stddev_fraction` 0.25",
     "cachebench's default: a normal distribution centred on the middle key, standard deviation a quarter of the key "
     "range (draws outside the range are drawn again)"},
    {kTestConfig, "enableLookaside", "`enableLookaside`", "bool", kHonoured, "`lookaside`",
     "default false, as in cachebench"},
    {kTestConfig, "prepopulateCache", "`prepopulateCache`", "bool", kHonoured, "`prepopulate`",
     "default false, as in cachebench. Keys are set coldest first"},
    {kTestConfig, "onlySetIfMiss", "`onlySetIfMiss`", "bool", kHonoured, "`only_set_if_miss`",
     "a set of a key that is in the cache is skipped and not counted, as cachebench skips it"},
    {kTestConfig, "touchValue", "`touchValue`", "bool", kHonoured, "—",
     "honoured always: every value read is read in full and verified"},
    {kTestConfig, "samplingIntervalMs", "`samplingIntervalMs`", "integer", kHonoured, "`progress_interval_ms`",
     "the interval of the progress line"},
    {kTestConfig, "keyPoolDistribution", "`keyPoolDistribution`", "list of numbers", kHonoured, "`key_pools`",
     "cachebench's split: pool p owns the consecutive key indices up to `numKeys` × (shares so far) / (sum); its items "
     "are allocated in the cache's pool p. More entries than `numPools` is refused"},
    {kTestConfig, "opPoolDistribution", "`opPoolDistribution`", "list of numbers", kHonoured, "`op_pools`",
     "an operation picks its pool by these weights, then a key in that pool's range by the popularity distribution. "
     "Default `[1]` as in cachebench: with several key pools and no `opPoolDistribution`, every operation goes to pool "
     "0. More entries than `keyPoolDistribution` is refused"},
    {kTestConfig, "opDelayBatch opDelayNs", "`opDelayBatch`, `opDelayNs`", "integer", kHonoured,
     "`op_delay_batch`, `op_delay_ns`",
     "after every `opDelayBatch` operations a thread sleeps `opDelayNs` (both > 0), as cachebench does"},
    {kTestConfig, "generator", "`generator`", "string", kHonoured, "—",
     "`\"\"`, `workload` or `online` is this workload (online draws the same distributions). `replay` replays kvcache "
     "CSV traces and `binary-replay` CacheLib's binary dump of one, below. `block-replay` (CacheLib's block-chunk "
     "cache over block traces) and `piecewise-replay` (CDN traces replayed in pieces) are refused with the reason: "
     "tiercache-bench has neither layer"},
    {kTestConfig, "traceFileName traceFileNames", "`traceFileName` / `traceFileNames`", "string", kHonoured, "—",
     "the traces of a `replay` config, resolved against `configPath`; a file that is not there is refused before the "
     "run, naming the path"},
    {kTestConfig, "repeatTraceReplay", "`repeatTraceReplay`", "bool", kHonoured, "—",
     "a replay starts over from the first file until `numOps` × `numThreads` requests were issued"},
    {kTestConfig, "replayGeneratorConfig", "`replayGeneratorConfig`", "object", kHonoured, "—",
     "`ampFactor` and `ampSizeFactor` must be 1 (refused otherwise); `fastForwardCount` and `preLoadReqs` must be 0; "
     "`replaySerializationMode` is accepted (each thread replays its share in order); `binaryFileName`, "
     "`numAggregationFields`, `numExtraFields`, `statsPerAggField`, `relaxedSerialIntervalMs` are warned about"},
    {kTestConfig, "name", "`name`", "string", kHonoured, "—",
     "four of cachebench's special stressors are mapped (see \"Special stressors\" below): `high_refcount`, "
     "`cachelib_map`, `cachelib_range_map`, `fast_shutdown`. `object_cache` (C++ objects) and `async` (CacheLib's "
     "coroutine API) are refused by name. `cache_component` with `allocator` `RAM` runs this workload on a memory "
     "cache. Any other name is a label"},
    {kTestConfig, "distribution", "`distribution`", "string", kHonoured, "—",
     "`range` (the default) is accepted; others are refused"},
    {kTestConfig, "addChainedRatio", "`addChainedRatio`", "number", kHonoured, "`add_chained_ratio`",
     "a weight like the other ratios. The operation finds the key's parent (a get; when absent it is set, a miss), "
     "then adds a chain to it: a length drawn from `chainedItemLengthRange`, each child's size from "
     "`chainedItemValSizeRange`, through `ChainedItems` (allocator/chained_items.h). With it, every set stores its "
     "parent through `ChainedItems` (which drops the key's old chain, as a set of a CacheLib parent does), a delete "
     "removes parent and chain, and **every get reads the whole chain** and checks each child byte for byte (a chain "
     "that is not whole is a miss, counted as a broken chain). As in cachebench's stressor, a chained workload takes "
     "per-key locks: gets share a key's, sets, deletes, updates and chain adds hold it alone (the get latency includes "
     "waiting for it). The report's `== Workload counters ==` block gives `chain_adds`, `chain_children`, "
     "`chain_add_failures`, `chain_children_read` and `chain_broken`"},
    {kTestConfig, "chainedItemLengthRange chainedItemLengthRangeProbability",
     "`chainedItemLengthRange` + `chainedItemLengthRangeProbability`", "list of numbers", kHonoured,
     "`chain_length_buckets`", "the piecewise or discrete rule of `valSizeRange` (`[5]` with `[1.0]`: always 5)"},
    {kTestConfig, "chainedItemValSizeRange chainedItemValSizeRangeProbability",
     "`chainedItemValSizeRange` + `chainedItemValSizeRangeProbability`", "list of numbers", kHonoured,
     "`chain_value_size_buckets`",
     "likewise; a child larger than the largest class is an add failure (counted, as cachebench's "
     "`addChainedFailure`)"},
    {kTestConfig, "updateRatio", "`updateRatio`", "number", kHonoured, "`update_ratio`",
     "cachebench's update: a find of the key to write it, counted as a get; a miss is not filled (CacheLib then bumps "
     "an item-record version, which does nothing without item records)"},
    {kTestConfig, "couldExistRatio", "`couldExistRatio`", "number", kHonoured, "`could_exist_ratio`",
     "a weight like the other ratios. cachebench's couldExist, as `Cache::couldExist`: true for a live item in memory "
     "(looked at as `peek` does: no access recorded, nothing promoted), else whether the flash store's index has an "
     "entry for the key's tag; nothing is read from flash. The report's `== Workload counters ==` block gives "
     "`could_exists` and `could_exist_true` (cachebench prints the share that said true as couldExist's success). "
     "`record` leaves it out of a trace and the simulators skip it: it changes nothing"},
    {kTestConfig, "loneSetRatio", "`loneSetRatio`", "number", kHonoured, "`lone_set_ratio`",
     "a weight like the other ratios: a set of a fresh key no other request names (19 bytes, `(` and a sequence "
     "number in hex; cachebench's are about 19 decimal digits), with the value size and TTL of the drawn key, in its "
     "pool. "
     "Counted as a set and as `lone_sets`"},
    {kTestConfig, "opRatePerSec", "`opRatePerSec`", "integer", kRefusedIfSet, "—",
     "non-zero is refused (`opDelayBatch`/`opDelayNs` pace a thread instead)"},
    {kTestConfig, "ttlSecsRange ttlSecsRangeProbability", "`ttlSecsRange` + `ttlSecsRangeProbability`",
     "list of numbers", kHonoured, "`ttl_secs_buckets`",
     "cachebench's per-key TTL: the piecewise or discrete rule of `valSizeRange`, drawn once per key (seeded by the "
     "key index) and given to every set of it, as `Cache::set`'s TTL; 0 means none. The report counts the sets with a "
     "TTL"},
    {kTestConfig, "ttlRatio", "`ttlRatio`", "number", kHonoured, "`ttl_ratio`",
     "not a key of CacheLib's cachebench at 278ffc74: tiercache-bench reads it as the share of keys that get a TTL "
     "(default 1 with `ttlSecsRange`); without `ttlSecsRange` a non-zero value is refused"},
    {kTestConfig, "poolDistributions", "`poolDistributions`", "list of objects", kHonoured, "—",
     "as in cachebench, the distribution keys (sizes, ratios, popularity, TTLs, chains and their side files) are then "
     "read from its entries only; the same keys in `test_config` are named in the warning. One entry serves every "
     "pool. Several entries must be one per pool of `keyPoolDistribution`: pool p's keys take entry p's key and value "
     "sizes, and an operation that picks pool p (by `opPoolDistribution`) entry p's ratios and popularity "
     "(`pool_distributions`); the report's ratios are their mix by operation weight. Chain shapes and TTLs must be "
     "the same in every entry, and keys shorter than the key index in hex (which two pools could share) are refused"},
    {kTestConfig, "mode", "`mode`", "", kIgnored, "",
     "not read by cachebench at 278ffc74; chains are shaped by the `chainedItem*` ranges"},
    {kTestConfig, "numChainedItems", "`numChainedItems`", "", kIgnored, "",
     "not read by cachebench at 278ffc74; chains are shaped by the `chainedItem*` ranges"},
    {kTestConfig, "chainedItemsPerLocation", "`chainedItemsPerLocation`", "", kIgnored, "",
     "not read by cachebench at 278ffc74; chains are shaped by the `chainedItem*` ranges"},
    {kTestConfig, "checkConsistency", "`checkConsistency`", "", kIgnored, "",
     "cachebench's own consistency and warm-up checks; tiercache-bench verifies every value it reads"},
    {kTestConfig, "checkNvmCacheWarmUp", "`checkNvmCacheWarmUp`", "", kIgnored, "",
     "cachebench's own consistency and warm-up checks; tiercache-bench verifies every value it reads"},
    {kTestConfig, "maxInconsistencyCount", "`maxInconsistencyCount`", "", kIgnored, "",
     "cachebench's own consistency and warm-up checks; tiercache-bench verifies every value it reads"},
    {kTestConfig, "maxInvalidDestructorCount", "`maxInvalidDestructorCount`", "", kIgnored, "",
     "cachebench's own consistency and warm-up checks; tiercache-bench verifies every value it reads"},
    {kTestConfig, "nvmCacheWarmupCheckPolicy", "`nvmCacheWarmupCheckPolicy`", "", kIgnored, "",
     "cachebench's own consistency and warm-up checks; tiercache-bench verifies every value it reads"},
    {kTestConfig, "timestampFactor", "`timestampFactor`", "", kIgnored, "",
     "trace timing and amplification of cachebench replays; requests are replayed in order, once"},
    {kTestConfig, "useTraceTimeStamp", "`useTraceTimeStamp`", "", kIgnored, "",
     "trace timing and amplification of cachebench replays; requests are replayed in order, once"},
    {kTestConfig, "ampFactor", "`ampFactor`", "", kIgnored, "",
     "trace timing and amplification of cachebench replays; requests are replayed in order, once"},
    {kTestConfig, "missTraceFile", "`missTraceFile`", "", kIgnored, "",
     "trace timing and amplification of cachebench replays; requests are replayed in order, once"},
    {kTestConfig, "prepopulateThreads", "`prepopulateThreads`", "", kIgnored, "",
     "tunes cachebench's driver (threads, rates, iterators, key generation); it does not change the workload "
     "tiercache-bench draws"},
    {kTestConfig, "numFastShutdown", "`numFastShutdown`", "", kIgnored, "",
     "tunes cachebench's driver (threads, rates, iterators, key generation); it does not change the workload "
     "tiercache-bench draws"},
    {kTestConfig, "tenantRateLimits", "`tenantRateLimits`", "", kIgnored, "",
     "tunes cachebench's driver (threads, rates, iterators, key generation); it does not change the workload "
     "tiercache-bench draws"},
    {kTestConfig, "preallocateCache", "`preallocateCache`", "", kIgnored, "",
     "tunes cachebench's driver (threads, rates, iterators, key generation); it does not change the workload "
     "tiercache-bench draws"},
    {kTestConfig, "ignoreOpCount", "`ignoreOpCount`", "", kIgnored, "",
     "tunes cachebench's driver (threads, rates, iterators, key generation); it does not change the workload "
     "tiercache-bench draws"},
    {kTestConfig, "populateItem", "`populateItem`", "", kIgnored, "",
     "tunes cachebench's driver (threads, rates, iterators, key generation); it does not change the workload "
     "tiercache-bench draws"},
    {kTestConfig, "cachePieceSize", "`cachePieceSize`", "", kIgnored, "",
     "tunes cachebench's driver (threads, rates, iterators, key generation); it does not change the workload "
     "tiercache-bench draws"},
    {kTestConfig, "maxCachePieces", "`maxCachePieces`", "", kIgnored, "",
     "tunes cachebench's driver (threads, rates, iterators, key generation); it does not change the workload "
     "tiercache-bench draws"},
    {kTestConfig, "dramIteratorMode", "`dramIteratorMode`", "", kIgnored, "",
     "tunes cachebench's driver (threads, rates, iterators, key generation); it does not change the workload "
     "tiercache-bench draws"},
    {kTestConfig, "dramIteratorIntervalMs", "`dramIteratorIntervalMs`", "", kIgnored, "",
     "tunes cachebench's driver (threads, rates, iterators, key generation); it does not change the workload "
     "tiercache-bench draws"},
    {kTestConfig, "dramIteratorSleepMs", "`dramIteratorSleepMs`", "", kIgnored, "",
     "tunes cachebench's driver (threads, rates, iterators, key generation); it does not change the workload "
     "tiercache-bench draws"},
    {kTestConfig, "dramIteratorWorkMs", "`dramIteratorWorkMs`", "", kIgnored, "",
     "tunes cachebench's driver (threads, rates, iterators, key generation); it does not change the workload "
     "tiercache-bench draws"},
    {kTestConfig, "opRateBurstSize", "`opRateBurstSize`", "", kIgnored, "",
     "tunes cachebench's driver (threads, rates, iterators, key generation); it does not change the workload "
     "tiercache-bench draws"},
    {kTestConfig, "useLegacyKeyGen", "`useLegacyKeyGen`", "", kIgnored, "",
     "tunes cachebench's driver (threads, rates, iterators, key generation); it does not change the workload "
     "tiercache-bench draws"},
    {kTestConfig, "repeatOpCount", "`repeatOpCount`", "", kIgnored, "", "cachebench does not read it"},
};

bool hasKey(const CachebenchKey& row, std::string_view key) {
  std::string_view keys = row.keys;
  while (!keys.empty()) {
    const size_t end = keys.find(' ');
    if (keys.substr(0, end) == key) return true;
    if (end == std::string_view::npos) break;
    keys.remove_prefix(end + 1);
  }
  return false;
}

}  // namespace

std::span<const CachebenchKey> cachebenchKeyTable() { return kKeys; }

const CachebenchKey* findCachebenchKey(CachebenchSection section, std::string_view key) {
  for (const CachebenchKey& row : kKeys) {
    if (row.section == section && hasKey(row, key)) return &row;
  }
  return nullptr;
}

std::string cachebenchKeysMarkdown(CachebenchSection section) {
  const char* object = section == kCacheConfig ? "cache_config" : "test_config";
  std::string md = std::string("<!-- BEGIN generated: cachebenchKeysMarkdown(") + object + ") -->\n";
  md += "| cachebench key | type | tiercache option | notes |\n|---|---|---|---|\n";
  for (const CachebenchKey& row : kKeys) {
    if (row.section != section || row.handling == kIgnored) continue;
    const std::string target = *row.target ? row.target : "—";
    md += std::string("| ") + row.display + " | " + row.type + " | " + target + " | " + row.note + " |\n";
  }
  md += std::string("\nIgnored, with a warning that names them (`") + object + ".<key>`):\n\n";
  md += "| keys | why |\n|---|---|\n";
  std::string keys, reason;
  auto flush = [&] {
    if (!keys.empty()) md += "| " + keys + " | " + reason + " |\n";
    keys.clear();
  };
  for (const CachebenchKey& row : kKeys) {
    if (row.section != section || row.handling != kIgnored) continue;
    if (!keys.empty() && reason != row.note) flush();
    reason = row.note;
    keys += (keys.empty() ? "" : ", ") + std::string(row.display);
  }
  flush();
  return md + "<!-- END generated -->\n";
}

}  // namespace tiercache::bench
