// Value codec: the bytes the bench writes for a key, and their check.
//
// A value of n >= 16 bytes is
//   [0, 8)   check = hash(key, n, stamp)
//   [8, 16)  stamp, unique per write (writer thread and sequence number)
//   [16, n)  a window of a fixed pseudo-random pattern, at an offset taken
//            from check
// so a reader that knows the key and the size the key must have rebuilds
// the whole value from the first 16 bytes and compares every byte: a value
// of another key, a wrong length, a torn mix of two writes or one flipped
// byte all fail. Shorter values are the pattern window alone, chosen by
// hash(key, n). The pattern makes writing and checking a memcpy/memcmp, so
// the bench measures the cache, not the value generator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tiercache::bench {

class ValueCodec {
 public:
  static constexpr size_t kHeaderSize = 16;

  // Fills out[0, size) with the value of key for this write's stamp.
  static void fill(std::string_view key, uint64_t stamp, char* out, size_t size);
  // True when value is a value fill() could have produced for key with
  // exactly expectedSize bytes.
  static bool verify(std::string_view key, size_t expectedSize, std::string_view value);
};

}  // namespace tiercache::bench
