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
//   - A tier is memory plus persist(), nothing else: what a persistent
//     tier's pool keeps beside its slab area (slab records, the clean flag,
//     the commit key) is a separate interface, PoolRecords (pool_records.h),
//     which only the cache's persistence part and slab allocators use.
//   - discard(offset, len) gives the pages of that range (whole slabs, out
//     of use) back to the OS, where the backend can; they read as zero when
//     used again. A backend that cannot returns false and keeps them.
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
  virtual bool discard(uint64_t /*offset*/, uint64_t /*len*/) { return false; }
};

// How a persistent tier's pool is opened (a volatile tier ignores it).
struct PersistentOpenOptions {
  // Hash of everything that shapes the layout (slab size, tier size, class
  // sizes, pools); computed by the cache. An existing pool with another
  // fingerprint is refused, or rebuilt (emptied) when rebuildOnMismatch.
  uint64_t fingerprint = 0;
  bool rebuildOnMismatch = false;
};

// Opens the backend for cfg.kind with cfg.size rounded down to slabSize.
// `persistence` applies to tiers with cfg.persistent set.
// A persistent tier opened this way is memory only; openPersistentTier
// (pool_records.h) also hands out its records.
std::unique_ptr<MemoryTier> openTier(const TierConfig& cfg, uint64_t slabSize,
                                     const PersistentOpenOptions& persistence = {});
}  // namespace tiercache
