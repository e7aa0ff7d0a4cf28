// libFuzzer target: CacheConfig parsing (issue 9, items 8, 10, 17, 18).
// Any bytes given to CacheConfig::fromJsonString either make a config or a
// ConfigError; anything else (a crash, a stack overflow, another exception,
// an allocation over the limit fuzz/run.sh sets with -malloc_limit_mb) is a
// finding. An accepted config must also keep its promises:
//   - toJson() does not throw and reads back as an equal config;
//   - its pool and tier counts and names are within the documented bounds;
//   - metadataBytes() is within the budget validate() enforces, so building
//     a Cache from it could not exhaust memory on metadata alone.
// The Cache itself is not built: tiers map real memory.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "allocator/cache_config.h"

using tiercache::CacheConfig;
using tiercache::ConfigError;

namespace {

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "config_fuzzer: %s\n", what);
  std::abort();
}

bool validName(const std::string& name) {
  if (name.empty() || name.size() > CacheConfig::kMaxNameLength) return false;
  for (unsigned char ch : name) {
    if (!(std::isalnum(ch) || ch == '_' || ch == '-' || ch == '.' || ch == ':')) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CacheConfig c;
  try {
    c = CacheConfig::fromJsonString(text);
  } catch (const ConfigError&) {
    return 0;
  }
  if (c.tiers.empty() || c.tiers.size() > CacheConfig::kMaxTiers) finding("tier count out of bounds");
  if (c.pools.empty() || c.pools.size() > CacheConfig::kMaxPools) finding("pool count out of bounds");
  for (const auto& t : c.tiers) {
    if (!validName(t.name)) finding("tier name outside the character set");
  }
  for (const auto& p : c.pools) {
    if (!validName(p.name)) finding("pool name outside the character set");
  }
  if (c.index.bucket_power > c.maxUsefulBucketPower()) finding("bucket_power over the capacity bound");
  uint64_t capacity = c.total_size;  // an upper bound of what validate() counts, saturating
  for (const auto& t : c.tiers) {
    if (__builtin_add_overflow(capacity, t.size, &capacity)) capacity = UINT64_MAX;
  }
  if (c.metadataBytes() > std::max<uint64_t>(capacity, CacheConfig::kMinMetadataBudget)) {
    finding("metadata over its budget");
  }
  std::string json;
  try {
    json = c.toJson();
  } catch (...) {
    finding("toJson threw");
  }
  try {
    if (!(CacheConfig::fromJsonString(json) == c)) finding("toJson does not read back as the same config");
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    finding("toJson of an accepted config is refused");
  }
  return 0;
}
