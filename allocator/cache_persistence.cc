// Persistent tiers: the item commit protocol, recovery at start-up and the
// clean shutdown. See docs/persistence.md.
#include <algorithm>
#include <cstddef>
#include <chrono>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "access_index.h"
#include "cache.h"
#include "cache_counters.h"
#include "cache_persistence.h"
#include "item.h"
#include "movers.h"
#include "slab_allocator.h"
#include "../tiers/memory_tier.h"
#include "../tiers/pool_records.h"

namespace tiercache {

uint32_t itemChecksum(const Item* item, uint64_t seed) {
  // One pass over expiry, flags, seq, key and value (contiguous from
  // `expiry` on); the sizes word is bound through the seed.
  static_assert(offsetof(Item, expiry) + 16 == sizeof(Item), "expiry, flags, seq end the header");
  const size_t len = 16 + item->keySize() + item->valueSize();
  const uint64_t h = XXH3_64bits_withSeed(&item->expiry, len, seed ^ (uint64_t{item->sizes} * 0xC2B2AE3D27D4EB4Full));
  const uint32_t sum = static_cast<uint32_t>(h);
  return sum ? sum : 1;
}

CachePersistence::CachePersistence(PersistenceParts parts) : p_(std::move(parts)) {
  for (const PoolRecords* r : p_.records) commitKeys_.push_back(r ? r->commitKey() : 0);
}

uint32_t CachePersistence::checksumAt(const Item* item, CompressedRef ref) const {
  // The pool's secret key makes the mark unforgeable by whoever chose the
  // bytes of a value (the client never sees a checksum); the slot's offset
  // makes a committed image valid only where it was committed.
  const uint32_t t = p_.table.tierOf(ref);
  const auto offset = static_cast<uint64_t>(reinterpret_cast<const std::byte*>(item) - p_.tiers[t]->base());
  return itemChecksum(item, commitKeys_[t] ^ (offset * 0x9E3779B97F4A7C15ull));
}

void CachePersistence::replaceCommitted(std::string_view key) {
  if (p_.faultSeam) p_.faultSeam(FaultPoint::kReplaceNewCommitted, key);
}

void CachePersistence::persistPayload(const Item* item, CompressedRef ref) const {
  p_.tiers[p_.table.tierOf(ref)]->persist(item, Item::totalSize(item->keySize(), item->valueSize()));
}

void CachePersistence::commit(Item* item, CompressedRef ref) {
  item->checksum = checksumAt(item, ref);
  p_.tiers[p_.table.tierOf(ref)]->persist(&item->checksum, sizeof item->checksum);
}

void CachePersistence::invalidate(Item* item, CompressedRef ref) {
  item->checksum = 0;
  p_.tiers[p_.table.tierOf(ref)]->persist(&item->checksum, sizeof item->checksum);
}

uint64_t layoutFingerprint(const CacheConfig& cfg, const TierConfig& tier, const std::vector<uint32_t>& classSizes) {
  // Everything that decides where slabs and slots are and what a record means.
  std::string shape = "v1;slab=" + std::to_string(cfg.slab_size) + ";tier=" + tier.name + ":" +
                      std::to_string(tier.size / cfg.slab_size) + ";classes=";
  for (uint32_t s : classSizes) {
    shape += std::to_string(s) + ",";
  }
  shape += ";pools=";
  for (const PoolConfig& p : cfg.pools) shape += p.name + ":" + std::to_string(p.share) + ",";
  return XXH3_64bits(shape.data(), shape.size());
}

int CachePersistence::firstPersistentTier() const {
  for (size_t t = 0; t < p_.records.size(); ++t) {
    if (p_.records[t]) return static_cast<int>(t);
  }
  return -1;
}

RecoveredState CachePersistence::recover(std::vector<std::unique_ptr<SlabAllocator>>& allocs, AccessIndex& index,
                                         PersistenceHashFn hash, uint32_t recoveryNow, RecoveryCounters& counters) {
  const auto t0 = std::chrono::steady_clock::now();
  RecoveredState out;
  // Sequence numbers stay used: a later copy must order after every one seen.
  auto noteSeq = [&out](const Item* item) { out.maxSeq = std::max(out.maxSeq, item->seq()); };
  for (size_t t = 0; t < p_.tiers.size(); ++t) {
    PoolRecords* pt = p_.records[t];
    if (!pt) continue;
    SlabAllocator& a = *allocs[t];
    if (pt->recovered()) {
      const std::vector<uint32_t>& sizes = a.classSizes();
      for (uint32_t s = 0; s < a.slabCount(); ++s) {
        const SlabRecord rec = pt->slabRecord(s);
        if (rec.allocSize == 0) continue;
        const int cid = a.classFor(rec.allocSize);
        // The fingerprint matched, so a record naming no class or pool of
        // this config is corruption: forget the slab rather than trust it.
        if (cid < 0 || sizes[cid] != rec.allocSize || rec.pool >= a.poolCount() ||
            a.poolSlabs(rec.pool) >= a.poolQuota(rec.pool)) {
          pt->setSlabRecord(s, {});
          continue;
        }
        a.adoptSlab(s, rec.pool, static_cast<uint32_t>(cid));
        AllocationClass& ac = a.cls(rec.pool, static_cast<uint32_t>(cid));
        const uint32_t slab = a.firstSlab() + s;
        bool dirty = false;
        for (uint32_t slot = 0; slot < ac.slotsPerSlab(); ++slot) {
          const CompressedRef ref = p_.table.makeRef(slab, slot);
          Item* item = p_.table.item(ref);
          // Every field is checked before it is trusted: a slot holds a
          // committed item only if its sizes fit the slot and its checksum holds.
          const uint32_t sizes = item->sizes;
          const uint64_t need = Item::totalSize(sizes & 0xFF, sizes >> 8);
          const bool plausible = need <= ac.allocSize();
          const bool committed =
              plausible && item->checksum != 0 && item->checksum == checksumAt(item, ref);
                    // Expired while the cache was down: dropped (no callback: the
          // cache is not built yet), its slot freed and made durable.
          if (committed && item->expiry != 0 && item->expiry <= recoveryNow) {
            noteSeq(item);
            ++counters.expired_at_recovery;
            dirty = true;
            item->checksum = 0;
            ac.pushFree(ref);
            continue;
          }
          if (committed) {
            item->state.store(0, std::memory_order_relaxed);
            item->hook.meta.store(0, std::memory_order_relaxed);
            const CompressedRef loser = index.insertRecovered(ref, item, hash(item->key()));
            if (loser != ref) {
              noteSeq(item);
              ac.policy().add(ref.raw());
              if (item->expiry != 0) out.anyDeadline = true;
              ++counters.recovered_items;
              if (loser) {
                // An older committed copy of the key, found earlier in the
                // scan (a crash between the two steps of a replace): free it.
                Item* old = p_.table.item(loser);
                AllocationClass* owner = p_.table.owner(loser);
                owner->policy().remove(loser.raw());
                old->checksum = 0;
                p_.tiers[p_.table.tierOf(loser)]->persist(&old->checksum, sizeof old->checksum);
                owner->pushFree(loser);
                --counters.recovered_items;
                ++counters.discarded_items;
              }
              continue;
            }
          }
          // A zero checksum is a slot that was never committed or was
          // invalidated: plain free space. A non-zero one that failed the
          // check (torn, corrupted, or not written by this pool's cache) or
          // lost to a newer copy of its key is discarded.
          if (item->checksum != 0) {
            ++counters.discarded_items;
            dirty = true;
          }
          item->checksum = 0;
          ac.pushFree(ref);
        }
        if (dirty) p_.tiers[t]->persist(p_.table.slab(slab).base, p_.table.slabSize());
      }
    }
    a.finishRecovery();
    // From here on a crash must be detected at the next open.
    pt->setClean(false);
  }
  counters.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

void CachePersistence::close(std::vector<std::unique_ptr<SlabAllocator>>& allocs, Movers& movers, bool demoteFirst) {
  const int pt = firstPersistentTier();
  if (pt < 0) return;
  if (demoteFirst) {
    // Push what lives above the persistent tier down into it, class by
    // class, while it has room; what does not fit is lost as DRAM would be.
    for (int t = pt - 1; t >= 0; --t) {
      SlabAllocator& a = *allocs[t];
      for (uint32_t p = 0; p < a.poolCount(); ++p) {
        for (uint32_t c = 0; c < a.classCount(); ++c) {
          AllocationClass& ac = a.cls(p, c);
          const size_t n = ac.policy().size();
          if (n) movers.evict(ac, n, true);
        }
      }
    }
  }
  for (PoolRecords* p : p_.records) {
    if (p) p->setClean(true);
  }
}

}  // namespace tiercache
