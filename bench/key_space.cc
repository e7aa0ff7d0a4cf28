#include "bench/key_space.h"

namespace tiercache::bench {

namespace {
constexpr char kHex[] = "0123456789abcdef";
// Filler avoids hex digits only for readability in dumps; uniqueness comes
// from the fixed-width prefix alone.
constexpr char kFiller[] = "ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ_-";
constexpr uint64_t kKeyLenSalt = 0x6b65796c656e0001ull;
constexpr uint64_t kValueLenSalt = 0x76616c6c656e0002ull;
constexpr uint64_t kFillerSalt = 0x66696c6c65720003ull;

uint64_t pick(uint64_t index, uint64_t salt, SizeRange r) {
  uint64_t span = r.max - r.min + 1;  // r.max < 2^63 after validation
  return r.min + mix64(index ^ salt) % span;
}
}  // namespace

KeySpace::KeySpace(uint64_t keys, SizeRange keySize, SizeRange valueSize)
    : keys_(keys), keySize_(keySize), valueSize_(valueSize), width_(indexWidth(keys)) {}

size_t KeySpace::indexWidth(uint64_t keys) {
  size_t w = 1;
  for (uint64_t top = keys > 0 ? keys - 1 : 0; top >= 16; top >>= 4) ++w;
  return w;
}

size_t KeySpace::keyLength(uint64_t index) const {
  size_t len = pick(index, kKeyLenSalt, keySize_);
  return len < width_ ? width_ : len;
}

size_t KeySpace::valueSize(uint64_t index) const { return pick(index, kValueLenSalt, valueSize_); }

void KeySpace::key(uint64_t index, std::string& out) const {
  size_t len = keyLength(index);
  out.resize(len);
  uint64_t v = index;
  for (size_t i = width_; i-- > 0;) {
    out[i] = kHex[v & 15];
    v >>= 4;
  }
  uint64_t h = index ^ kFillerSalt;
  for (size_t i = width_; i < len; ++i) {
    if ((i - width_) % 8 == 0) h = mix64(h);
    out[i] = kFiller[((h >> (8 * ((i - width_) % 8))) & 0xff) % (sizeof(kFiller) - 1)];
  }
}

}  // namespace tiercache::bench
