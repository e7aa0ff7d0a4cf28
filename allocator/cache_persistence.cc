// Persistent tiers: the item commit protocol, recovery at start-up and the
// clean shutdown. See docs/persistence.md.
#include <cstddef>
#include <chrono>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "access_index.h"
#include "cache.h"
#include "cache_internal.h"
#include "item.h"
#include "slab_allocator.h"

namespace tiercache {

uint32_t itemChecksum(const Item* item) {
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, &item->sizes, sizeof item->sizes);
  // expiry, flags and seq: the header words after the checksum.
  XXH3_64bits_update(&st, &item->expiry, sizeof(Item) - offsetof(Item, expiry));
  XXH3_64bits_update(&st, item->keyData(), item->keySize() + item->valueSize());
  const uint32_t sum = static_cast<uint32_t>(XXH3_64bits_digest(&st));
  return sum ? sum : 1;
}

void CachePersistence::persistPayload(const Item* item, CompressedRef ref) const {
  cache_.tiers_[cache_.table_->tierOf(ref)]->persist(item, Item::totalSize(item->keySize(), item->valueSize()));
}

void CachePersistence::commit(Item* item, CompressedRef ref) {
  item->checksum = itemChecksum(item);
  cache_.tiers_[cache_.table_->tierOf(ref)]->persist(&item->checksum, sizeof item->checksum);
}

void CachePersistence::invalidate(Item* item, CompressedRef ref) {
  item->checksum = 0;
  cache_.tiers_[cache_.table_->tierOf(ref)]->persist(&item->checksum, sizeof item->checksum);
}

uint64_t Cache::layoutFingerprint(const CacheConfig& cfg, const TierConfig& tier, const std::vector<uint32_t>& classSizes) {
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

int Cache::firstPersistentTier() const {
  for (size_t t = 0; t < tiers_.size(); ++t) {
    if (tiers_[t]->persistent()) return static_cast<int>(t);
  }
  return -1;
}

void Cache::recoverPersistentTiers() {
  const auto t0 = std::chrono::steady_clock::now();
  const uint32_t recoveryNow = nowSeconds();
  for (size_t t = 0; t < tiers_.size(); ++t) {
    auto* pt = dynamic_cast<PersistentTier*>(tiers_[t].get());
    if (!pt) continue;
    SlabAllocator& a = *allocs_[t];
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
          const CompressedRef ref = table_->makeRef(slab, slot);
          Item* item = table_->item(ref);
          // Every field is checked before it is trusted: a slot holds a
          // committed item only if its sizes fit the slot and its checksum holds.
          const uint32_t sizes = item->sizes;
          const uint64_t need = Item::totalSize(sizes & 0xFF, sizes >> 8);
          const bool plausible = need <= ac.allocSize();
          const bool committed = plausible && item->checksum != 0 && item->checksum == itemChecksum(item);
          // Expired while the cache was down: dropped (no callback: the
          // cache is not built yet), its slot freed and made durable.
          if (committed && item->expiry != 0 && item->expiry <= recoveryNow) {
            // Its sequence number stays used: a later copy must order after it.
            if (item->seq() >= nextSeq_.load(std::memory_order_relaxed)) {
              nextSeq_.store(item->seq() + 1, std::memory_order_relaxed);
            }
            ++counters_->expiredAtRecovery;
            dirty = true;
            item->checksum = 0;
            ac.pushFree(ref);
            continue;
          }
          if (committed) {
            item->state.store(0, std::memory_order_relaxed);
            item->hook.meta.store(0, std::memory_order_relaxed);
            if (index_->insertRecovered(ref, item, hashKey(item->key()))) {
              // New sequence numbers stay above every recovered one.
              if (item->seq() >= nextSeq_.load(std::memory_order_relaxed)) {
                nextSeq_.store(item->seq() + 1, std::memory_order_relaxed);
              }
              ac.policy().add(ref.raw());
              if (item->expiry != 0) deadlinesSeen_.store(true, std::memory_order_relaxed);
              ++counters_->recoveredItems;
              continue;
            }
          }
          // A zero checksum is a slot that was never committed or was
          // invalidated: plain free space. A non-zero one that failed the
          // check (torn, corrupted) or lost to a duplicate key is discarded.
          if (item->checksum != 0) {
            ++counters_->discardedItems;
            dirty = true;
          }
          item->checksum = 0;
          ac.pushFree(ref);
        }
        if (dirty) tiers_[t]->persist(table_->slab(slab).base, table_->slabSize());
      }
    }
    a.finishRecovery();
    // From here on a crash must be detected at the next open.
    pt->setClean(false);
  }
  counters_->recoverySeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Cache::closePersistentTiers() {
  const int pt = firstPersistentTier();
  if (pt < 0) return;
  if (config_.persistence.demote_on_shutdown && config_.demotion.enabled) {
    // Push what lives above the persistent tier down into it, class by
    // class, while it has room; what does not fit is lost as DRAM would be.
    for (int t = pt - 1; t >= 0; --t) {
      SlabAllocator& a = *allocs_[t];
      for (uint32_t p = 0; p < a.poolCount(); ++p) {
        for (uint32_t c = 0; c < a.classCount(); ++c) {
          AllocationClass& ac = a.cls(p, c);
          const size_t n = ac.policy().size();
          if (n) evictFrom(ac, n, nullptr, true);
        }
      }
    }
  }
  for (auto& tier : tiers_) {
    if (auto* p = dynamic_cast<PersistentTier*>(tier.get())) p->setClean(true);
  }
}

}  // namespace tiercache
