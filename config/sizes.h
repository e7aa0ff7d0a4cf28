// Sizes in bytes as people write them: the one parser and the one formatter
// of the tree (configs, errors, stats, the bench report, tiercache-topo).
//
// Syntax: digits with an optional fraction, then an optional unit B, KiB,
// MiB, GiB or TiB (powers of 1024), e.g. "4096", "64KiB", "1.5GiB" (one
// space before the unit is allowed). The result must be a whole number of
// bytes below 2^64. Decimal-looking units (KB, MB, GB, k, M ...) are
// refused as ambiguous.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "config_error.h"

namespace tiercache {

inline constexpr uint64_t kKiB = 1ull << 10;
inline constexpr uint64_t kMiB = 1ull << 20;
inline constexpr uint64_t kGiB = 1ull << 30;
inline constexpr uint64_t kTiB = 1ull << 40;

// "256MiB", "1GiB", "4096", "64KiB", "1.5GiB" -> bytes; throws ConfigError(path, ...).
uint64_t parseSize(std::string_view text, const std::string& path);

// The units, largest first. The formatters are inline, so tiers/ can use
// this header as a leaf without depending on the rest of config/.
struct SizeUnit {
  std::string_view name;
  uint64_t mult;
};
inline constexpr SizeUnit kSizeUnits[] = {{"TiB", kTiB}, {"GiB", kGiB}, {"MiB", kMiB}, {"KiB", kKiB}, {"B", 1}};

// Exact, for configs and errors: the largest unit that divides `bytes`
// ("4MiB", "1536KiB", "100B", "0B"); parseSize(formatSize(v)) == v.
inline std::string formatSize(uint64_t bytes) {
  for (const SizeUnit& u : kSizeUnits) {
    if (bytes != 0 && bytes % u.mult == 0) return std::to_string(bytes / u.mult) + std::string(u.name);
  }
  return "0B";
}

// Rounded, for reports and descriptions: the largest unit not above
// `bytes`, with two decimals when it does not divide it ("1.50GiB", "4MiB",
// "999B"). Same units and spelling as formatSize.
inline std::string formatSizeApprox(uint64_t bytes) {
  for (const SizeUnit& u : kSizeUnits) {
    if (bytes < u.mult) continue;
    if (bytes % u.mult == 0) return std::to_string(bytes / u.mult) + std::string(u.name);
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.2f%.*s", static_cast<double>(bytes) / static_cast<double>(u.mult),
                  static_cast<int>(u.name.size()), u.name.data());
    return buf;
  }
  return "0B";
}

}  // namespace tiercache
