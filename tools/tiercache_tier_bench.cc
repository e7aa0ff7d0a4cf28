// tiercache-tier-bench: the per-tier and persistence figures of docs/benchmarks.md.
//
//   tiers     [--ops 2000000] [--dir /dev/shm]
//       find-hit throughput for items living in the DRAM tier and in the
//       PMEM tier of one cache (promotion off, so reads do not move them),
//       and allocate+insert throughput into a DRAM tier and into a PMEM
//       tier (each as tier 0 of its own cache); all in one run.
//   recovery  --sizes 256MiB,1GiB,4GiB [--dir /dev/shm]
//       fills a persistent tier of each size with items, closes the cache
//       (clean) or abandons it (as after a crash: the pool is reopened
//       while marked dirty), reopens it and reports the recovery scan:
//       items/s and GB/s of slab area scanned.
//   sets      [--size 1GiB] [--threads 2] [--ops 500000] [--dir /dev/shm]
//       set() throughput into a persistent tier and into a volatile PMEM
//       tier of the same size, alternately in one run, with the ratio.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "allocator/cache.h"

namespace {

using tiercache::Cache;
using tiercache::CacheConfig;

CacheConfig pmemOnly(const std::string& dir, uint64_t size, bool persistent) {
  CacheConfig cfg;
  cfg.slab_size = 4 << 20;
  tiercache::TierConfig t;
  t.name = persistent ? "pmem-persistent" : "pmem-volatile";
  t.kind = tiercache::TierKind::kPmemFile;
  t.size = size;
  t.path = persistent ? dir + "/tiercache-tier-bench-" + std::to_string(getpid()) + ".pool" : dir;
  t.persistent = persistent;
  cfg.tiers.push_back(t);
  cfg.allocation.min_size = 64;
  cfg.allocation.max_size = 64 << 10;
  cfg.index.bucket_power = 24;
  cfg.normalize();
  return cfg;
}

std::string keyOf(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "key:%014llu", static_cast<unsigned long long>(i));
  return buf;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int recovery(const std::vector<uint64_t>& sizes, const std::string& dir) {
  std::printf("%-10s %12s %12s %10s %14s %10s\n", "pool", "sets", "recovered", "seconds", "items/s", "GB/s");
  const std::string value(400, 'v');
  for (uint64_t size : sizes) {
    const CacheConfig cfg = pmemOnly(dir, size, true);
    uint64_t written = 0;
    {
      Cache cache(cfg);
      // Fill to capacity: past it, sets evict and the item count stops growing.
      const uint64_t n = size / 448 + size / 4480;
      for (uint64_t i = 0; i < n; ++i) written += cache.set(keyOf(i), value);
    }
    Cache reopened(cfg);
    const tiercache::CacheStats s = reopened.stats();
    const double secs = s.recovery_seconds;
    std::printf("%-10s %12llu %12llu %10.3f %14.0f %10.2f\n", (std::to_string(size >> 20) + "MiB").c_str(),
                static_cast<unsigned long long>(written), static_cast<unsigned long long>(s.recovered_items), secs,
                secs > 0 ? double(s.recovered_items) / secs : 0.0, secs > 0 ? double(size) / secs / 1e9 : 0.0);
    std::fflush(stdout);
    unlink(cfg.tiers[0].path.c_str());
  }
  return 0;
}

double setRate(const CacheConfig& cfg, int threads, uint64_t ops) {
  Cache cache(cfg);
  const std::string value(400, 'v');
  std::vector<std::thread> pool;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (uint64_t i = 0; i < ops; ++i) cache.set(keyOf(i * threads + t), value);
    });
  }
  for (auto& th : pool) th.join();
  return double(ops) * threads / secondsSince(t0);
}

int sets(uint64_t size, int threads, uint64_t ops, const std::string& dir, int rounds) {
  const CacheConfig persistent = pmemOnly(dir, size, true);
  const CacheConfig volatileCfg = pmemOnly(dir, size, false);
  std::vector<double> p, v;
  for (int r = 0; r < rounds; ++r) {
    unlink(persistent.tiers[0].path.c_str());
    p.push_back(setRate(persistent, threads, ops));
    v.push_back(setRate(volatileCfg, threads, ops));
  }
  unlink(persistent.tiers[0].path.c_str());
  auto median = [](std::vector<double> x) {
    std::sort(x.begin(), x.end());
    return x[x.size() / 2];
  };
  const char* force = std::getenv("PMEM_IS_PMEM_FORCE");
  std::printf("set() of 400-byte values, %d threads, %llu ops per thread, median of %d alternating runs\n",
              threads, static_cast<unsigned long long>(ops), rounds);
  std::printf("PMEM_IS_PMEM_FORCE=%s\n", force ? force : "(unset)");
  std::printf("  volatile PMEM tier   : %12.0f sets/s\n", median(v));
  std::printf("  persistent PMEM tier : %12.0f sets/s\n", median(p));
  std::printf("  persistent/volatile  : %12.2fx\n", median(p) / median(v));
  return 0;
}

CacheConfig twoTiers(const std::string& dir) {
  CacheConfig cfg;
  cfg.slab_size = 4 << 20;
  tiercache::TierConfig d;
  d.name = "dram";
  d.kind = tiercache::TierKind::kDram;
  d.size = 256 << 20;
  tiercache::TierConfig p;
  p.name = "pmem";
  p.kind = tiercache::TierKind::kPmemFile;
  p.size = 256 << 20;
  p.path = dir;
  cfg.tiers = {d, p};
  cfg.allocation.max_size = 64 << 10;
  cfg.index.bucket_power = 21;
  cfg.normalize();
  return cfg;
}

int tiersMode(uint64_t ops, const std::string& dir) {
  const std::string value(400, 'v');
  // Fill 1.5x DRAM: the oldest keys are demoted into PMEM, the newest stay in DRAM.
  Cache cache(twoTiers(dir));
  const uint64_t n = (384ull << 20) / 448;
  for (uint64_t i = 0; i < n; ++i) cache.set(keyOf(i), value);
  std::vector<std::string> inTier[2];
  for (uint64_t i = 0; i < n; ++i) {
    tiercache::ReadHandle h = cache.find(keyOf(i));
    if (h && inTier[h.tier()].size() < 200000) inTier[h.tier()].push_back(keyOf(i));
  }
  std::printf("find hit, one thread, %llu lookups per tier, 400-byte values (%zu / %zu keys sampled)\n",
              static_cast<unsigned long long>(ops), inTier[0].size(), inTier[1].size());
  double rate[2] = {0, 0};
  for (int round = 0; round < 3; ++round) {
    for (int t = 0; t < 2; ++t) {
      if (inTier[t].empty()) continue;
      std::mt19937_64 rng(round);
      uint64_t sum = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (uint64_t i = 0; i < ops; ++i) {
        tiercache::ReadHandle h = cache.find(inTier[t][rng() % inTier[t].size()]);
        sum += static_cast<unsigned char>(h.value()[0]);
      }
      rate[t] = std::max(rate[t], double(ops) / secondsSince(t0));
      if (sum == 0) std::printf("(impossible)\n");
    }
  }
  std::printf("  dram tier : %12.0f finds/s\n  pmem tier : %12.0f finds/s\n  pmem/dram : %12.2fx\n", rate[0], rate[1],
              rate[0] > 0 ? rate[1] / rate[0] : 0.0);

  // Allocation into each medium as tier 0 of a one-tier cache of the same size.
  CacheConfig dramOnly = twoTiers(dir);
  dramOnly.tiers.pop_back();
  CacheConfig pmemOnlyCfg = twoTiers(dir);
  pmemOnlyCfg.tiers.erase(pmemOnlyCfg.tiers.begin());
  double alloc[2] = {0, 0};
  for (int round = 0; round < 3; ++round) {
    for (int t = 0; t < 2; ++t) {
      Cache c(t == 0 ? dramOnly : pmemOnlyCfg);
      const auto t0 = std::chrono::steady_clock::now();
      for (uint64_t i = 0; i < ops; ++i) {
        tiercache::WriteHandle w = c.allocate(keyOf(i), value.size());
        std::memcpy(w.data(), value.data(), value.size());
        c.insertOrReplace(std::move(w));
      }
      alloc[t] = std::max(alloc[t], double(ops) / secondsSince(t0));
    }
  }
  std::printf("allocate+insertOrReplace, one thread, %llu items (best of 3, alternating)\n",
              static_cast<unsigned long long>(ops));
  std::printf("  dram tier : %12.0f allocs/s\n  pmem tier : %12.0f allocs/s\n  pmem/dram : %12.2fx\n", alloc[0],
              alloc[1], alloc[1] / alloc[0]);
  return 0;
}

uint64_t parseBytes(const std::string& s) {
  double v = std::stod(s);
  if (s.find("GiB") != std::string::npos) v *= double(1ull << 30);
  else if (s.find("MiB") != std::string::npos) v *= double(1ull << 20);
  return static_cast<uint64_t>(v);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s recovery [--sizes 256MiB,1GiB,4GiB] [--dir DIR]\n"
                 "       %s sets [--size 1GiB] [--threads N] [--ops N] [--rounds N] [--dir DIR]\n"
                 "       %s tiers [--ops N] [--dir DIR]\n",
                 argv[0], argv[0], argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  std::string dir = "/dev/shm", sizesArg = "256MiB,1GiB,4GiB";
  uint64_t size = 1ull << 30, ops = 500000;  // sets' default; tiers uses 2M unless --ops
  bool opsGiven = false;
  int threads = 2, rounds = 3;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir") dir = v;
    else if (k == "--sizes") sizesArg = v;
    else if (k == "--size") size = parseBytes(v);
    else if (k == "--threads") threads = std::stoi(v);
    else if (k == "--ops") ops = std::stoull(v), opsGiven = true;
    else if (k == "--rounds") rounds = std::stoi(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  try {
    if (mode == "recovery") {
      std::vector<uint64_t> sizes;
      size_t pos = 0;
      while (pos <= sizesArg.size()) {
        const size_t comma = sizesArg.find(',', pos);
        sizes.push_back(parseBytes(sizesArg.substr(pos, comma - pos)));
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
      return recovery(sizes, dir);
    }
    if (mode == "sets") return sets(size, threads, ops, dir, rounds);
    if (mode == "tiers") return tiersMode(opsGiven ? ops : 2000000, dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tiercache-tier-bench: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
