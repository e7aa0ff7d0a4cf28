// The config shared by the persistent-cache tests and their crash child, so
// that both open the pool file with the same layout fingerprint.
#pragma once

#include <string>

#include "allocator/cache_config.h"
#include "test_util.h"

namespace tiercache::test {

// A persistent pool-file tier; by default the one the persistent tier's own
// tests open (4 slabs of kPmemTestSlab).
inline constexpr uint64_t kPmemTestSlab = 1 << 20;
inline TierConfig pmemTierConfig(const std::string& path, uint64_t size = 4 * kPmemTestSlab,
                                 const std::string& name = "pmem-p") {
  TierConfig cfg;
  cfg.name = name;
  cfg.kind = TierKind::kPmemFile;
  cfg.size = size;
  cfg.path = path;
  cfg.persistent = true;
  return cfg;
}

inline CacheConfig persistentConfig(const std::string& poolFile, bool durableSets) {
  CacheConfig cfg = smallDramConfig(4 << 20, "lru", 256 << 10);
  cfg.tiers.push_back(pmemTierConfig(poolFile, 32 << 20, "pmem"));
  cfg.allocation.max_size = 64 << 10;
  cfg.persistence.durable_sets = durableSets;
  return cfg;
}

}  // namespace tiercache::test
