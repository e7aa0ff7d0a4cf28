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

// Exact, for configs and errors: the largest unit that divides `bytes`
// ("4MiB", "1536KiB", "100B", "0B"); parseSize(formatSize(v)) == v.
std::string formatSize(uint64_t bytes);

// Rounded, for reports: the largest unit not above `bytes`, with two
// decimals when it does not divide it ("1.50GiB", "4MiB", "999B"). Same
// units and spelling as formatSize.
std::string formatSizeApprox(uint64_t bytes);

}  // namespace tiercache
