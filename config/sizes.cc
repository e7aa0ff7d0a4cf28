#include "sizes.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <limits>

namespace tiercache {
namespace {

// A user's value quoted in a message, cut short so one bad value cannot
// flood a log line.
std::string quoted(std::string_view s) {
  constexpr size_t kMax = 40;
  return "\"" + (s.size() > kMax ? std::string(s.substr(0, kMax)) + "..." : std::string(s)) + "\"";
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace

uint64_t parseSize(std::string_view text, const std::string& path) {
  auto fail = [&](const std::string& why) { return ConfigError(path, quoted(text) + " is not a size: " + why); };
  if (text.empty()) throw fail("empty string");
  if (text[0] == '-') throw fail("negative");
  size_t i = 0;
  unsigned __int128 whole = 0;
  auto isDigit = [&](size_t k) { return k < text.size() && text[k] >= '0' && text[k] <= '9'; };
  if (!isDigit(0)) throw fail("expected a number, optionally followed by a unit (B, KiB, MiB, GiB, TiB)");
  for (; isDigit(i); ++i) {
    whole = whole * 10 + static_cast<unsigned>(text[i] - '0');
    if (whole > std::numeric_limits<uint64_t>::max()) throw fail("too large (at most 2^64-1 bytes)");
  }
  unsigned __int128 frac = 0;
  unsigned __int128 fracScale = 1;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (!isDigit(i)) throw fail("expected digits after '.'");
    for (; isDigit(i); ++i) {
      if (fracScale >= static_cast<unsigned __int128>(1e18)) throw fail("too many decimal places");
      frac = frac * 10 + static_cast<unsigned>(text[i] - '0');
      fracScale *= 10;
    }
  }
  if (i + 1 < text.size() && text[i] == ' ') ++i;  // "1.5 GiB" reads as well as "1.5GiB"
  const std::string_view unit = text.substr(i);
  uint64_t mult = unit.empty() ? 1 : 0;
  for (const SizeUnit& u : kSizeUnits) {
    if (unit == u.name) mult = u.mult;
  }
  if (mult == 0) {
    const std::string low = lower(unit);
    static constexpr std::string_view kDecimal[] = {"k", "kb", "m", "mb", "g", "gb", "t", "tb"};
    if (std::find(std::begin(kDecimal), std::end(kDecimal), low) != std::end(kDecimal)) {
      const char prefix = static_cast<char>(std::toupper(static_cast<unsigned char>(low[0])));
      throw fail("unit '" + std::string(unit) + "' is ambiguous (powers of 1000 or 1024?); write '" + prefix +
                 "iB' for powers of 1024");
    }
    std::string hint;
    for (const SizeUnit& u : kSizeUnits) {
      if (lower(u.name) == low) hint = " (did you mean '" + std::string(u.name) + "'?)";
    }
    throw fail("unknown unit " + quoted(unit) + "; use B, KiB, MiB, GiB or TiB" + hint);
  }
  const unsigned __int128 fracBytes = frac * mult;
  if (fracBytes % fracScale != 0) throw fail("not a whole number of bytes");
  const unsigned __int128 bytes = whole * mult + fracBytes / fracScale;
  if (bytes > std::numeric_limits<uint64_t>::max()) throw fail("too large (at most 2^64-1 bytes)");
  return static_cast<uint64_t>(bytes);
}

}  // namespace tiercache
