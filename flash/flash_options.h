// The options of a flash store (flash_store.h); a Cache embeds them as its
// "flash" section (allocator/cache_config.h), whose option rows document
// each field.
#pragma once

#include <cstdint>
#include <string>

#include "../common/name_table.h"
#include "io_engine.h"

namespace tiercache {

enum class RegionEviction : uint8_t { kFifo, kLru };
inline constexpr std::array<NameRow<RegionEviction>, 2> kRegionEvictionNames = {
    {{RegionEviction::kFifo, "fifo"}, {RegionEviction::kLru, "lru"}}};
static_assert(isDenseNameTable(kRegionEvictionNames, RegionEviction::kLru));

struct FlashStoreConfig {
  std::string path;                    // file or block device
  uint64_t size = 0;                   // bytes used, superblock included
  uint64_t region_size = 16ull << 20;  // multiple of 4 KiB, >= 64 KiB
  IoEngineKind io_engine = IoEngineKind::kAuto;
  uint32_t queue_depth = 32;
  RegionEviction region_eviction = RegionEviction::kFifo;
  bool reinsert_hits = true;           // reclaim keeps items hit since written
  uint64_t expected_item_size = 1024;  // sizes the index: size / this entries
  double admit_write_mb_per_sec = 0;   // write-rate budget (0: none)
  bool admit_hit_only = false;         // only items hit while in memory
  bool discard_contents = false;       // start empty instead of recovering

  bool enabled() const { return !path.empty(); }
  friend bool operator==(const FlashStoreConfig&, const FlashStoreConfig&) = default;
};

}  // namespace tiercache
