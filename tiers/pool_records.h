// PoolRecords: what a persistent tier's pool keeps beside its slab area.
//
// A tier (MemoryTier) is memory plus persist(). Recovery needs more than
// memory: which class each slab served, whether the last process closed
// cleanly, and the secret that keys the item commit checksums. Those live
// in the same pool file but behind this separate interface, held only by
// the cache's persistence part (recovery, clean shutdown) and the slab
// allocator of a persistent tier (which records a slab's new owner before
// it hands out a slot of it). Nothing reaches them through the tier.
//
// Contract:
//   - Every value read from the pool (header fields, slab records) was
//     checked at open: a corrupted or truncated pool was refused with a
//     TierError (or rebuilt when allowed), never read past its mapping.
//   - setSlabRecord is failure-atomic (a libpmemobj transaction): after a
//     crash the record is the old one or the new one.
//   - The clean flag is persisted by setClean; a pool whose process died
//     without setClean(true) opens with wasCleanShutdown() == false.
//   - Thread-safe; record and flag updates are serialised by the backend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "memory_tier.h"

namespace tiercache {

// Durable record of what one slab of a persistent tier serves.
struct SlabRecord {
  uint32_t allocSize = 0;  // 0: the slab is unassigned
  uint16_t pool = 0;
  friend bool operator==(const SlabRecord&, const SlabRecord&) = default;
};

class PoolRecords {
 public:
  virtual ~PoolRecords() = default;

  // An existing pool was opened (not created, not rebuilt): its slabs hold data.
  virtual bool recovered() const = 0;
  // The clean flag as found at open; false for a created or rebuilt pool.
  virtual bool wasCleanShutdown() const = 0;
  // What happened at open, for logs: "created", "opened after a clean
  // shutdown", "opened after a crash", "rebuilt: <reason>".
  virtual std::string openReport() const = 0;
  // slab is the index within the tier, < its slab count. Records read back
  // are validated by the backend only for range; the cache checks that
  // allocSize and pool make sense for its config.
  virtual SlabRecord slabRecord(uint32_t slab) const = 0;
  virtual void setSlabRecord(uint32_t slab, SlabRecord record) = 0;
  virtual void setClean(bool clean) = 0;
  // A random 64-bit secret drawn when the pool was created and kept in its
  // header: the cache keys its item commit checksums with it, so bytes a
  // client wrote cannot pass for a committed item (docs/persistence.md).
  virtual uint64_t commitKey() const = 0;
};

// A persistent tier as opened: its memory, and its records.
struct PersistentTierParts {
  std::unique_ptr<MemoryTier> memory;
  // The records of the same pool; valid for as long as `memory` is.
  PoolRecords* records = nullptr;
};

// Opens a tier the config makes persistent (a pmem-file tier with
// cfg.persistent; cfg.rebuild_on_mismatch allows a rebuild too). Throws
// TierError for any other config, or when the pool cannot be opened.
PersistentTierParts openPersistentTier(const TierConfig& cfg, uint64_t slabSize,
                                       const PersistentOpenOptions& persistence);

}  // namespace tiercache
