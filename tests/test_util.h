// Helpers shared by the cache tests.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

#include "allocator/cache_config.h"

namespace tiercache::test {

// Test seam: the expiry clock (CacheHooks::clock), moved by hand; atomic,
// since the reaper's thread reads it too.
struct ManualClock {
  std::atomic<int64_t> secs{1'800'000'000};  // 2027-01-15
  std::chrono::system_clock::time_point now() const {
    return std::chrono::system_clock::time_point(std::chrono::seconds(secs.load()));
  }
  void advance(std::chrono::seconds d) { secs += d.count(); }
};

// A one-tier DRAM config with small slabs so that a few MiB hold many slabs.
inline CacheConfig smallDramConfig(uint64_t bytes, const std::string& policy = "lru", uint64_t slab = 256 << 10) {
  CacheConfig cfg;
  cfg.slab_size = slab;
  TierConfig t;
  t.name = "dram";
  t.kind = TierKind::kDram;
  t.size = bytes;
  cfg.tiers.push_back(t);
  cfg.allocation.min_size = 64;
  cfg.allocation.max_size = static_cast<uint32_t>(slab);
  cfg.allocation.growth_factor = 1.5;
  cfg.index.bucket_power = 16;
  cfg.index.lock_power = 8;
  // "lru-midpoint" is LRU with insertion point 1; the rest are policy names.
  if (policy == "clock") {
    cfg.eviction.policy = EvictionPolicyKind::kClock;
  } else if (policy == "s3fifo") {
    cfg.eviction.policy = EvictionPolicyKind::kS3Fifo;
  } else if (policy == "wtinylfu") {
    cfg.eviction.policy = EvictionPolicyKind::kWTinyLfu;
  } else {
    cfg.eviction.policy = EvictionPolicyKind::kLru;
    if (policy == "lru-midpoint") cfg.eviction.lru_insertion_point = 1;
  }
  return cfg;
}

// smallDramConfig's DRAM (64 KiB slabs, values up to a slab) over an
// emulated-PMEM file in /dev/shm (16 MiB is the PMEM minimum): demotion on
// (the default), no background workers.
constexpr uint64_t kSmallDram = 4 << 20;
constexpr uint64_t kSmallPmem = 16 << 20;
inline CacheConfig smallTwoTierConfig(const std::string& policy = "lru", uint64_t dram = kSmallDram,
                                      uint64_t pmemBytes = kSmallPmem) {
  CacheConfig cfg = smallDramConfig(dram, policy, 64 << 10);
  TierConfig pmem;
  pmem.name = "pmem";
  pmem.kind = TierKind::kPmemFile;
  pmem.size = pmemBytes;
  pmem.path = "/dev/shm";
  cfg.tiers.push_back(pmem);
  return cfg;
}

inline uint64_t fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// A value of `size` bytes derived from key and version: the first 16 bytes
// carry a checksum of the rest, so a reader can verify it knowing nothing.
inline std::string makeValue(std::string_view key, uint32_t version, size_t size) {
  std::string v(size < 16 ? 16 : size, '\0');
  uint64_t x = fnv1a(key) ^ (uint64_t{version} * 0x9E3779B97F4A7C15ull);
  for (size_t i = 16; i < v.size(); ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v[i] = static_cast<char>(x);
  }
  const uint64_t sum = fnv1a(std::string_view(v).substr(16)) ^ fnv1a(key);
  const uint64_t len = v.size();
  for (int i = 0; i < 8; ++i) v[i] = static_cast<char>(sum >> (8 * i));
  for (int i = 0; i < 8; ++i) v[8 + i] = static_cast<char>(len >> (8 * i));
  return v;
}

// True if v is a value makeValue produced for this key (any version).
inline bool checkValue(std::string_view key, std::string_view v) {
  if (v.size() < 16) return false;
  uint64_t sum = 0, len = 0;
  for (int i = 0; i < 8; ++i) sum |= uint64_t(static_cast<unsigned char>(v[i])) << (8 * i);
  for (int i = 0; i < 8; ++i) len |= uint64_t(static_cast<unsigned char>(v[8 + i])) << (8 * i);
  return len == v.size() && sum == (fnv1a(v.substr(16)) ^ fnv1a(key));
}

// Polls pred every 2 ms until it holds (true) or limit passes (false):
// for what a background thread does in its own time.
template <class Pred>
bool waitFor(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace tiercache::test
