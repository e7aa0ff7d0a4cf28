// KeySpace: key index -> key string and value size, both pure functions of
// the index, so any thread can rebuild what another wrote and check it.
//
// A key's length is drawn per index from [key_size.min, key_size.max] (or
// the piecewise buckets). A key at least as long as the index in hex (its
// width) is the index in fixed-width hex, padded with filler characters that
// also derive from the index: unique by construction. A shorter key, as
// cachebench draws them, is `length` lowercase letters picked by a hash of
// the index, so distinct indices of one length may share a key, as they do
// in cachebench (which keeps one copy of each). Short and long keys never
// meet: a length is either below the width (letters) or not (hex prefix).
//
// The value size is drawn from [value_size.min, value_size.max], or from the
// piecewise buckets when the workload has them (a bucket picked by weight,
// then a size in it), by a hash of the key's identity: the index for a long
// key, the key itself for a short one. So indices that share a key also
// share its value size, and a value read back is verified exactly whichever
// of them wrote it.
//
// Keys belong to pools (WorkloadConfig::key_pools): poolOf(index).
//
// Lone set keys (cachebench's lone sets) are '(' and a sequence number, so
// no other request ever names them.
//
// Lone keys (cachebench's lone gets) are never set: loneKey(i) is key(i)
// with its first hex digit replaced by a punctuation character, so it has
// the same length, is unique per index and never equals a real key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/workload.h"

namespace tiercache::bench {

// splitmix64's finalizer: a cheap bijective mix of 64 bits.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class KeySpace {
 public:
  static constexpr uint64_t kMaxKeys = 1ull << 48;

  KeySpace(uint64_t keys, SizeRange keySize, SizeRange valueSize);
  explicit KeySpace(const WorkloadConfig& c);

  uint64_t size() const { return keys_; }
  // Hex digits needed to number `keys` keys (at least 1).
  static size_t indexWidth(uint64_t keys);

  // Writes the key of `index` into out (reusing its capacity).
  void key(uint64_t index, std::string& out) const;
  std::string key(uint64_t index) const {
    std::string s;
    key(index, s);
    return s;
  }
  void loneKey(uint64_t index, std::string& out) const;
  std::string loneKey(uint64_t index) const {
    std::string s;
    loneKey(index, s);
    return s;
  }
  // The key of a lone set (RequestStream's seq): '(' and seq in 18 hex
  // digits, 19 bytes as cachebench's decimal nanosecond keys about are.
  // Never a key of an index nor a lone get's key ('(' starts neither).
  static void loneSetKey(uint64_t seq, std::string& out);
  static constexpr size_t kLoneSetKeySize = 19;
  size_t keyLength(uint64_t index) const;
  size_t valueSize(uint64_t index) const;
  // True when index's key is shorter than indexWidth() (it may be shared).
  bool isShortKey(uint64_t index) const { return keyLength(index) < width_; }
  // A number that identifies index's key among short keys (isShortKey):
  // equal for two indices exactly when their keys are equal.
  uint64_t shortKeyId(uint64_t index) const { return shortKeyCode(index, keyLength(index)); }
  // The pool (WorkloadConfig::key_pools) index belongs to; 0 without pools.
  uint32_t poolOf(uint64_t index) const;

  // Distinct keys among all indices, counting every shared short key once.
  // O(keys) time; memory 8 bytes per short-key index.
  uint64_t distinctKeys() const;

 private:
  // Cumulative weights scaled to 2^64 (last = UINT64_MAX) and their ranges.
  struct Pieces {
    std::vector<uint64_t> cumulative;
    std::vector<SizeRange> ranges;
  };
  static Pieces makePieces(const std::vector<SizeBucket>& buckets);
  static uint64_t pick(uint64_t index, uint64_t salt, SizeRange plain, const Pieces& pieces);
  // A short key as a number: base-26 letters, tagged with the length.
  uint64_t shortKeyCode(uint64_t index, size_t length) const;

  uint64_t keys_;
  SizeRange keySize_;
  SizeRange valueSize_;
  size_t width_;
  Pieces keyPieces_;
  Pieces valuePieces_;
  std::vector<uint64_t> poolStarts_;  // first index of each pool, then keys_
  // WorkloadConfig::pool_distributions: each pool's sizes (empty: none).
  struct PoolSizes {
    SizeRange keySize, valueSize;
    Pieces keyPieces, valuePieces;
  };
  std::vector<PoolSizes> poolSizes_;
};

}  // namespace tiercache::bench
