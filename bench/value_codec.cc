#include "bench/value_codec.h"

#include <algorithm>
#include <array>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bench/key_space.h"

namespace tiercache::bench {

namespace {

constexpr size_t kPatternSize = 64 * 1024;

const std::array<char, kPatternSize>& pattern() {
  static const std::array<char, kPatternSize> kPattern = [] {
    std::array<char, kPatternSize> p{};
    uint64_t h = 0x7061747465726e00ull;
    for (size_t i = 0; i < kPatternSize; i += 8) {
      h = mix64(h);
      std::memcpy(p.data() + i, &h, 8);
    }
    return p;
  }();
  return kPattern;
}

uint64_t checkOf(std::string_view key, size_t size, uint64_t stamp) {
  return XXH3_64bits_withSeed(key.data(), key.size(), mix64(size) ^ stamp);
}

// Copies (or compares) n bytes of the pattern, wrapping, starting at offset.
void copyPattern(uint64_t offset, char* out, size_t n) {
  const char* p = pattern().data();
  size_t pos = offset % kPatternSize;
  while (n > 0) {
    size_t chunk = std::min(n, kPatternSize - pos);
    std::memcpy(out, p + pos, chunk);
    out += chunk;
    n -= chunk;
    pos = 0;
  }
}

bool matchPattern(uint64_t offset, const char* in, size_t n) {
  const char* p = pattern().data();
  size_t pos = offset % kPatternSize;
  while (n > 0) {
    size_t chunk = std::min(n, kPatternSize - pos);
    if (std::memcmp(in, p + pos, chunk) != 0) return false;
    in += chunk;
    n -= chunk;
    pos = 0;
  }
  return true;
}

}  // namespace

void ValueCodec::fill(std::string_view key, uint64_t stamp, char* out, size_t size) {
  if (size < kHeaderSize) {
    copyPattern(checkOf(key, size, 0), out, size);
    return;
  }
  uint64_t check = checkOf(key, size, stamp);
  std::memcpy(out, &check, 8);
  std::memcpy(out + 8, &stamp, 8);
  copyPattern(check, out + kHeaderSize, size - kHeaderSize);
}

bool ValueCodec::verify(std::string_view key, size_t expectedSize, std::string_view value) {
  if (value.size() != expectedSize) return false;
  size_t size = value.size();
  if (size < kHeaderSize) return matchPattern(checkOf(key, size, 0), value.data(), size);
  uint64_t check, stamp;
  std::memcpy(&check, value.data(), 8);
  std::memcpy(&stamp, value.data() + 8, 8);
  if (check != checkOf(key, size, stamp)) return false;
  return matchPattern(check, value.data() + kHeaderSize, size - kHeaderSize);
}

}  // namespace tiercache::bench
