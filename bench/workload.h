// WorkloadConfig: the "workload" object of a tiercache-bench config file.
//
// The same JSON file holds the cache config (parsed by CacheConfig, which
// ignores "workload") and this object (parsed here, with the same rules: an
// unknown key, a wrong type or an impossible value is a ConfigError naming
// the key path, e.g. "workload.get_ratio: must be in [0,1]"). A document
// without a "workload" object gets the defaults below.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tiercache::bench {

struct SizeRange {
  uint64_t min = 0;
  uint64_t max = 0;
};

enum class PopularityKind : uint8_t {
  kUniform,
  kZipf,    // P(rank k) ~ 1 / k^alpha, rank 1 = key index 0
  kNormal,  // centered on the middle key, stddev = stddev_fraction * keys
};

struct PopularityConfig {
  PopularityKind kind = PopularityKind::kZipf;
  double alpha = 0.9;
  double stddev_fraction = 0.1;
};

struct WorkloadConfig {
  uint32_t threads = 2;
  uint64_t ops_per_thread = 1'000'000;
  uint64_t keys = 1'000'000;          // key space size
  SizeRange key_size{16, 32};         // bytes; min must fit the key's index digits
  SizeRange value_size{64, 4096};     // bytes; a function of the key
  double get_ratio = 0.8;
  double set_ratio = 0.2;
  double remove_ratio = 0.0;
  PopularityConfig popularity;
  bool lookaside = true;              // a get miss is followed by a set of that key
  bool prepopulate = true;            // set keys (coldest first) before measuring
  uint64_t seed = 1;
  uint32_t progress_interval_ms = 1000;  // 0: no progress line

  // Parse the "workload" object of a whole config document; throws ConfigError.
  static WorkloadConfig fromJsonString(std::string_view document);
  static WorkloadConfig fromJsonFile(const std::string& path);
  std::string toJson() const;
  // Throws ConfigError for impossible values (also called by the parsers).
  void validate() const;
};

const char* popularityName(PopularityKind kind);  // "uniform", "zipf", "normal"

}  // namespace tiercache::bench
