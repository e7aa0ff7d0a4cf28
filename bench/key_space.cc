#include "bench/key_space.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

namespace tiercache::bench {

namespace {
constexpr char kHex[] = "0123456789abcdef";
// Filler avoids hex digits only for readability in dumps; uniqueness comes
// from the fixed-width prefix alone.
constexpr char kFiller[] = "ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ_-";
// kFillerOfByte[b] = kFiller[b % 42]: the filler character a hash byte picks.
constexpr std::array<char, 256> kFillerOfByte = [] {
  std::array<char, 256> t{};
  for (size_t b = 0; b < t.size(); ++b) t[b] = kFiller[b % (sizeof(kFiller) - 1)];
  return t;
}();
constexpr uint64_t kKeyLenSalt = 0x6b65796c656e0001ull;
constexpr uint64_t kValueLenSalt = 0x76616c6c656e0002ull;
constexpr uint64_t kFillerSalt = 0x66696c6c65720003ull;

constexpr uint64_t kPieceSalt = 0x7069656365000004ull;
constexpr uint64_t kShortSalt = 0x73686f7274000005ull;
// Tags a short key's code so that its value size differs from that of the
// long key whose index happens to equal the code.
constexpr uint64_t kShortIdentityTag = 0x5348525400000006ull;
constexpr uint64_t kLetters = 26;
// Replaces the first hex digit of a lone key: none of these is a hex digit
// or a filler character, nor ',' or '#', which a CSV trace cannot start a key with.
constexpr char kLoneMark[] = "~!@.$%^&*+=:;<>?";

uint64_t pickIn(uint64_t index, uint64_t salt, SizeRange r) {
  uint64_t span = r.max - r.min + 1;  // r.max < 2^63 after validation
  return r.min + mix64(index ^ salt) % span;
}
}  // namespace

KeySpace::KeySpace(uint64_t keys, SizeRange keySize, SizeRange valueSize)
    : keys_(keys), keySize_(keySize), valueSize_(valueSize), width_(indexWidth(keys)), poolStarts_{0, keys} {}

KeySpace::KeySpace(const WorkloadConfig& c) : KeySpace(c.keys, c.key_size, c.value_size) {
  keyPieces_ = makePieces(c.key_size_buckets);
  valuePieces_ = makePieces(c.value_size_buckets);
  poolStarts_ = c.poolKeyStarts();
  for (const PoolDistribution& d : c.pool_distributions)
    poolSizes_.push_back(
        PoolSizes{d.key_size, d.value_size, makePieces(d.key_size_buckets), makePieces(d.value_size_buckets)});
}

uint32_t KeySpace::poolOf(uint64_t index) const {
  // poolStarts_ is sorted; the pool is the last start <= index.
  auto it = std::upper_bound(poolStarts_.begin(), poolStarts_.end() - 1, index);
  return uint32_t(it - poolStarts_.begin() - 1);
}

uint64_t KeySpace::shortKeyCode(uint64_t index, size_t length) const {
  // length < width_ <= 12, and 26^11 < 2^52: the code fits with the length in the low 4 bits.
  uint64_t space = 1;
  for (size_t i = 0; i < length; ++i) space *= kLetters;
  return (mix64(index ^ kShortSalt) % space) << 4 | length;
}

uint64_t KeySpace::distinctKeys() const {
  std::vector<uint64_t> codes;
  uint64_t longKeys = 0;
  for (uint64_t i = 0; i < keys_; ++i) {
    size_t len = keyLength(i);
    if (len >= width_) {
      ++longKeys;
    } else {
      codes.push_back(shortKeyCode(i, len));
    }
  }
  std::sort(codes.begin(), codes.end());
  return longKeys + uint64_t(std::unique(codes.begin(), codes.end()) - codes.begin());
}

KeySpace::Pieces KeySpace::makePieces(const std::vector<SizeBucket>& buckets) {
  Pieces p;
  double total = 0;
  for (const SizeBucket& b : buckets) total += b.weight;
  if (buckets.empty() || !(total > 0)) return p;
  double acc = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    acc += buckets[i].weight;
    double f = acc / total;
    uint64_t cut = i + 1 == buckets.size() || f >= 1.0 ? UINT64_MAX : uint64_t(f * 0x1.0p64);
    p.cumulative.push_back(cut);
    p.ranges.push_back(buckets[i].range);
  }
  return p;
}

uint64_t KeySpace::pick(uint64_t index, uint64_t salt, SizeRange plain, const Pieces& pieces) {
  if (pieces.ranges.empty()) return pickIn(index, salt, plain);
  uint64_t u = mix64(index ^ kPieceSalt ^ salt);
  size_t b = 0;
  while (b + 1 < pieces.cumulative.size() && u >= pieces.cumulative[b]) ++b;
  // A zero-weight piece has the same cut as the one before it and is skipped.
  return pickIn(index, salt, pieces.ranges[b]);
}

size_t KeySpace::indexWidth(uint64_t keys) {
  size_t w = 1;
  for (uint64_t top = keys > 0 ? keys - 1 : 0; top >= 16; top >>= 4) ++w;
  return w;
}

size_t KeySpace::keyLength(uint64_t index) const {
  if (!poolSizes_.empty()) {
    const PoolSizes& p = poolSizes_[poolOf(index)];
    return pick(index, kKeyLenSalt, p.keySize, p.keyPieces);
  }
  return pick(index, kKeyLenSalt, keySize_, keyPieces_);
}

size_t KeySpace::valueSize(uint64_t index) const {
  size_t len = keyLength(index);
  // A shared key must have one value size, whichever index wrote it (with
  // a distribution per pool no key is short: WorkloadConfig refuses it).
  uint64_t identity = len < width_ ? shortKeyCode(index, len) ^ kShortIdentityTag : index;
  if (!poolSizes_.empty()) {
    const PoolSizes& p = poolSizes_[poolOf(index)];
    return pick(identity, kValueLenSalt, p.valueSize, p.valuePieces);
  }
  return pick(identity, kValueLenSalt, valueSize_, valuePieces_);
}

void KeySpace::loneKey(uint64_t index, std::string& out) const {
  key(index, out);
  char c = out[0];
  // A long key starts with a hex digit (the mark keeps lone keys unique per
  // index); a short one with a letter (any mark does: lone gets always miss).
  out[0] = kLoneMark[c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : index % 16];
}

void KeySpace::loneSetKey(uint64_t seq, std::string& out) {
  out.resize(kLoneSetKeySize);
  out[0] = '(';
  for (size_t i = kLoneSetKeySize; i-- > 1;) {
    out[i] = kHex[seq & 15];
    seq >>= 4;
  }
}

void KeySpace::key(uint64_t index, std::string& out) const {
  size_t len = keyLength(index);
  out.resize(len);
  if (len < width_) {
    uint64_t code = shortKeyCode(index, len) >> 4;
    for (size_t i = len; i-- > 0;) {
      out[i] = char('a' + code % kLetters);
      code /= kLetters;
    }
    return;
  }
  // Through a raw pointer: stores through std::string's operator[] may
  // alias its own pointer and are reloaded per character.
  char* p = out.data();
  uint64_t v = index;
  for (size_t i = width_; i-- > 0;) {
    p[i] = kHex[v & 15];
    v >>= 4;
  }
  // Eight filler characters per hash, each byte mapped through a table:
  // key generation runs once per operation and must cost little beside
  // the cache operation it feeds (a division per character did not).
  uint64_t h = index ^ kFillerSalt;
  for (size_t i = width_; i < len; i += 8) {
    h = mix64(h);
    const size_t n = std::min<size_t>(8, len - i);
    uint64_t word = 0;  // the eight characters, first in the lowest byte
#pragma GCC unroll 8
    for (unsigned k = 0; k < 8; ++k) {
      word |= uint64_t(uint8_t(kFillerOfByte[(h >> (8 * k)) & 0xff])) << (8 * k);
    }
    if (n == 8 && std::endian::native == std::endian::little) {
      std::memcpy(p + i, &word, 8);
    } else {
      for (size_t k = 0; k < n; ++k) p[i + k] = char(word >> (8 * k));
    }
  }
}

}  // namespace tiercache::bench
