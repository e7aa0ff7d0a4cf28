// MemoryTier: the narrow interface every tier backend implements.
//
// A tier is one contiguous, byte-addressable region that the slab allocator
// cuts into slabs. Backends know memory, not items.
//
// Contract (all backends):
//   - open (the backend's factory/constructor) either returns a usable tier
//     or throws TierError naming the tier and the reason (missing or
//     unwritable path, too small, kind unavailable); it never returns a
//     half-working tier.
//   - base() is valid, readable and writable for size() bytes until the tier
//     is destroyed; size() is a whole number of slabs (the configured size
//     rounded down) and never changes.
//   - A volatile tier's memory reads as zero at open. A persistent tier's
//     memory holds what was persisted before.
//   - mappedBytes() is what the tier took from the OS (mapping or file size),
//     at most the configured size for volatile tiers; a persistent tier's
//     pool file adds libpmemobj's header and metadata on top (reported).
//   - persist(p, n) makes [p, p+n) durable on a persistent tier and is a
//     no-op on a volatile one. Thread-safe; ranges may overlap.
//   - Destruction unmaps and releases everything the tier took.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "tier_config.h"

namespace tiercache {

class TierError : public std::runtime_error {
 public:
  TierError(const std::string& tier, const std::string& reason)
      : std::runtime_error("tier '" + tier + "': " + reason), tier_(tier) {}
  const std::string& tier() const noexcept { return tier_; }

 private:
  std::string tier_;
};

class MemoryTier {
 public:
  virtual ~MemoryTier() = default;

  virtual std::byte* base() const = 0;
  virtual uint64_t size() const = 0;
  virtual uint64_t mappedBytes() const = 0;
  virtual TierKind kind() const = 0;
  virtual const std::string& name() const = 0;
  // One line for reports: "dram, 128 MiB, node 0".
  virtual std::string describe() const = 0;
  virtual bool persistent() const { return false; }
  virtual void persist(const void* /*addr*/, size_t /*len*/) const {}
};

// Durable record of what one slab of a persistent tier serves.
struct SlabRecord {
  uint32_t allocSize = 0;  // 0: the slab is unassigned
  uint16_t pool = 0;
  friend bool operator==(const SlabRecord&, const SlabRecord&) = default;
};

struct PersistentOpenOptions {
  // Hash of everything that shapes the layout (slab size, tier size, class
  // sizes, pools); computed by the cache. An existing pool with another
  // fingerprint is refused, or rebuilt (emptied) when rebuildOnMismatch.
  uint64_t fingerprint = 0;
  bool rebuildOnMismatch = false;
};

// A tier whose contents survive the process (a libpmemobj pool file).
//
// Contract, in addition to MemoryTier's:
//   - base()/size() is the slab area only; the header and the slab records
//     live elsewhere in the pool and are never handed out.
//   - Every value read from the pool (header fields, slab records) is
//     checked before use: a corrupted or truncated pool is refused at open
//     with a TierError (or rebuilt when allowed), never read past its mapping.
//   - setSlabRecord is failure-atomic (a libpmemobj transaction): after a
//     crash the record is the old one or the new one.
//   - The clean flag is persisted by setClean; a pool whose process died
//     without setClean(true) opens with wasCleanShutdown() == false.
class PersistentTier : public MemoryTier {
 public:
  bool persistent() const override { return true; }
  // An existing pool was opened (not created, not rebuilt): its slabs hold data.
  virtual bool recovered() const = 0;
  virtual bool wasCleanShutdown() const = 0;
  // What happened at open, for logs: "created", "opened after a clean
  // shutdown", "opened after a crash", "rebuilt: <reason>".
  virtual std::string openReport() const = 0;
  // slab is the index within this tier, < size() / slab size. Records read
  // back are validated by the tier only for range; the cache checks that
  // allocSize and pool make sense for its config.
  virtual SlabRecord slabRecord(uint32_t slab) const = 0;
  virtual void setSlabRecord(uint32_t slab, SlabRecord record) = 0;
  virtual void setClean(bool clean) = 0;
  // A random 64-bit secret drawn when the pool was created and kept in its
  // header: the cache keys its item commit checksums with it, so bytes a
  // client wrote cannot pass for a committed item (docs/persistence.md).
  virtual uint64_t commitKey() const = 0;
};

// Opens the backend for cfg.kind with cfg.size rounded down to slabSize.
// `persistence` applies to tiers with cfg.persistent set.
std::unique_ptr<MemoryTier> openTier(const TierConfig& cfg, uint64_t slabSize,
                                     const PersistentOpenOptions& persistence = {});
// The same for a tier the config makes persistent (a pmem-file tier with
// cfg.persistent), typed: the cache's persistence part keeps the
// PersistentTier reference from here on instead of casting. Throws
// TierError for any other config.
std::unique_ptr<PersistentTier> openPersistentTier(const TierConfig& cfg, uint64_t slabSize,
                                                   const PersistentOpenOptions& persistence);

}  // namespace tiercache
