#include "stats_collector.h"

#include <algorithm>
#include <bit>

#include "access_index.h"
#include "cache_counters.h"
#include "item.h"
#include "item_reaper.h"
#include "slab_rebalancer.h"
#include "movers.h"
#include "slab_allocator.h"
#include "../eviction/window_climber.h"
#include "../tiers/pool_records.h"

namespace tiercache {

CacheStats StatsCollector::collect() const {
  CacheStats s;
  const CacheCounters& c = p_.counters;
#define TIERCACHE_LOAD(name, help) s.name = c.name.load();
  TIERCACHE_CACHE_COUNTERS(TIERCACHE_LOAD)
#undef TIERCACHE_LOAD
  const uint64_t setsInPlace = c.setsInPlace.load();
  const uint64_t inPlace = setsInPlace + c.insertsInPlace.load();
  s.sets += setsInPlace;
  s.inserts += inPlace;
  s.replaces += inPlace;
  s.replaces_in_place += inPlace;
#define TIERCACHE_COPY(name, help) s.name = p_.recovery.name;
  TIERCACHE_RECOVERY_COUNTERS(TIERCACHE_COPY)
#undef TIERCACHE_COPY
  s.recovery_seconds = p_.recovery.seconds;
  s.item_header_bytes = sizeof(Item);
  s.index_buckets_log2 = static_cast<uint32_t>(std::bit_width(p_.index.bucketCount()) - 1);
  s.metadata_bytes = p_.index.metadataBytes() + p_.table.metadataBytes();
  if (p_.windowSignal) s.wtinylfu_window_per_mille = p_.windowSignal->perMille.load(std::memory_order_relaxed);
  if (p_.rebalancer) {
    s.metadata_bytes += p_.rebalancer->metadataBytes();
    p_.rebalancer->counters().copyTo(s);
  }

  for (uint32_t p = 0; p < p_.config.pools.size(); ++p) {
    PoolStats ps;
    ps.pool = p;
    ps.name = p_.config.pools[p].name;
    for (const auto& a : p_.allocs) {
      ps.slab_quota += a->poolQuota(p);
      ps.slabs += a->poolSlabs(p);
    }
    s.pools.push_back(ps);
  }
  uint64_t slots = 0;
  std::vector<ClassStats> all;  // every class: the sums count the ones not shown too
  for (uint32_t t = 0; t < p_.allocs.size(); ++t) {
    const SlabAllocator& a = *p_.allocs[t];
    TierStats ts;
    ts.tier = t;
    s.metadata_bytes += a.allocTallyBytes();
    ts.name = a.tier().name();
    ts.kind = tierKindName(a.tier().kind());
    ts.configured_bytes = p_.config.tiers[t].size;
    ts.limit_bytes = static_cast<uint64_t>(a.slabLimit()) * a.tier().size() / std::max<uint32_t>(1, a.slabCount());
    ts.mapped_bytes = a.tier().mappedBytes();
    ts.slabs_total = a.slabCount();
    ts.slabs_used = a.slabsUsed();
    ts.hits = c.tierHits[t]->load();  // every hit counts in exactly one tier
    ts.persistent = a.tier().persistent();
    if (t < p_.records.size() && p_.records[t]) ts.open_report = p_.records[t]->openReport();
    s.tiers.push_back(std::move(ts));
    for (uint32_t p = 0; p < a.poolCount(); ++p) {
      for (uint32_t k = 0; k < a.classCount(); ++k) {
        const AllocationClass& ac = a.cls(p, k);
        s.metadata_bytes += sizeof(AllocationClass) + ac.policy().metadataBytes();  // + ghost / sketch
        ClassStats cs;
        cs.tier = t;
        cs.pool = p;
        cs.class_id = k;
        cs.alloc_size = ac.allocSize();
        cs.slabs = ac.slabCount();
        cs.items = ac.policy().size();
        cs.free_slots = ac.freeSlots();
        cs.requested_bytes = ac.requestedBytes();
#define TIERCACHE_LOAD(name, help) cs.name = ac.counters().name.load(std::memory_order_relaxed);
        TIERCACHE_CLASS_MOVE_COUNTERS(TIERCACHE_LOAD)
        TIERCACHE_CLASS_COUNTERS(TIERCACHE_LOAD)
#undef TIERCACHE_LOAD
        const AllocationClass::AllocCounts allocs = ac.allocCounts();
        cs.alloc_attempts = allocs.attempts;
        cs.alloc_success = allocs.successes;
        cs.eviction_age_ms = ac.policy().evictionAges().medianMs();
        if (p_.rebalancer) cs.marginal_hits = p_.rebalancer->ghostHits(t, p, k);
        slots += cs.slabs * ac.slotsPerSlab();
        if (cs.slabs || cs.alloc_attempts || cs.slabs_lost) s.classes.push_back(cs);
        all.push_back(cs);
      }
    }
  }
  s.rollUp(all);
  p_.movers.addStats(s);
  p_.reaper.counters().copyTo(s);
  // Bucket bytes per item the cache holds, or per slot it could hold while filling.
  const double denom = static_cast<double>(std::max<uint64_t>({s.items, slots, 1}));
  s.index_bytes_per_item = static_cast<double>(p_.index.bucketCount() * AccessIndex::kBucketBytes) / denom;
  return s;
}

}  // namespace tiercache
