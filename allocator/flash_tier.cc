#include "flash_tier.h"

namespace tiercache {

FlashTier::FlashTier(const FlashStoreConfig& config, FlashHashFn hash, FaultSeam seam)
    : store_(std::make_unique<FlashStore>(config, hash)), locks_(std::make_unique<std::mutex[]>(kLocks)), seam_(seam) {}

void FlashTier::addStats(CacheStats& s) const {
  const FlashCounters& c = store_->counters();
  s.flash_inserts = c.inserts.load(std::memory_order_relaxed);
  s.flash_item_bytes = c.item_bytes.load(std::memory_order_relaxed);
  s.flash_bytes_written = c.bytes_written.load(std::memory_order_relaxed);
  s.flash_reads = c.reads.load(std::memory_order_relaxed);
  s.flash_read_batches = c.read_batches.load(std::memory_order_relaxed);
  s.flash_hits = c.hits.load(std::memory_order_relaxed);
  s.flash_misses = c.misses.load(std::memory_order_relaxed);
  s.flash_checksum_failures = c.checksum_failures.load(std::memory_order_relaxed);
  s.flash_key_mismatches = c.key_mismatches.load(std::memory_order_relaxed);
  s.flash_regions_reclaimed = c.regions_reclaimed.load(std::memory_order_relaxed);
  s.flash_reinserted = c.reinserted.load(std::memory_order_relaxed);
  s.flash_admission_rejects = c.admission_rejects.load(std::memory_order_relaxed);
  s.flash_removes = c.removes.load(std::memory_order_relaxed);
  s.flash_recovered = c.recovered.load(std::memory_order_relaxed);
  s.flash_items = store_->items();
  s.flash_index_bytes = store_->indexBytes();
}

}  // namespace tiercache
