// Helpers for the flash tests: a store config on a real file in a temp dir
// on disk (not /dev/shm: the store is meant for O_DIRECT on a device) and
// values that encode their key and version, so any value read back can be
// checked byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "allocator/cache_config.h"
#include "flash/flash_store.h"
#include <cstdlib>

namespace tiercache::test {

// A directory for flash files: on disk, under /var/tmp.
inline std::string flashTestParent() {
  const char* env = std::getenv("TIERCACHE_FLASH_TEST_DIR");
  return env && *env ? env : "/var/tmp";
}

inline FlashStoreConfig smallFlashConfig(const std::string& path, uint64_t regions = 16,
                                         uint64_t regionSize = 64u << 10) {
  FlashStoreConfig c;
  c.path = path;
  c.region_size = regionSize;
  c.size = 4096 + regions * regionSize;
  c.queue_depth = 8;
  c.expected_item_size = 128;
  return c;
}

// "<key>#<version>#" then filler derived from both, `len` bytes in all (at
// least the prefix).
inline std::string flashValue(const std::string& key, uint64_t version, size_t len) {
  std::string v = key + "#" + std::to_string(version) + "#";
  uint64_t x = version * 0x9E3779B97F4A7C15ull + key.size();
  for (char c : key) x = x * 131 + static_cast<unsigned char>(c);
  while (v.size() < len) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v.push_back(static_cast<char>('a' + x % 26));
  }
  return v;
}

// The version a value claims for key, or -1 when it is not a well-formed
// flashValue of that key (any length).
inline int64_t flashValueVersion(const std::string& key, const std::string& value) {
  const std::string prefix = key + "#";
  if (value.compare(0, prefix.size(), prefix) != 0) return -1;
  const size_t end = value.find('#', prefix.size());
  if (end == std::string::npos) return -1;
  const int64_t version = std::stoll(value.substr(prefix.size(), end - prefix.size()));
  return flashValue(key, static_cast<uint64_t>(version), value.size()) == value ? version : -1;
}

// A small DRAM cache (8 MiB, 1 MiB slabs) with a flash store of `regions`
// 256 KiB regions behind it, on `path`.
inline CacheConfig flashCacheConfig(const std::string& path, uint64_t regions = 32) {
  CacheConfig c = CacheConfig::dram(8u << 20);
  c.flash.path = path;
  c.flash.region_size = 256u << 10;
  c.flash.size = 4096 + regions * c.flash.region_size;
  c.flash.queue_depth = 8;
  c.flash.expected_item_size = 256;
  c.reaper.enabled = false;
  return c;
}

// The crash child's flash storm cache (tests/crash_child.cc), for the child
// and for the parent that recovers it: mode "flash" (FIFO regions) or
// "flash-lru" (regions evicted by LRU, the storm reads too).
inline bool flashStormReads(std::string_view mode) { return mode == "flash-lru"; }
inline CacheConfig flashStormConfig(const std::string& path, std::string_view mode) {
  CacheConfig c = flashCacheConfig(path, 64);
  if (flashStormReads(mode)) c.flash.region_eviction = RegionEviction::kLru;
  return c;
}

}  // namespace tiercache::test
