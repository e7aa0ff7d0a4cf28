// CompressedRef: a 40-bit, position-independent reference to an item slot.
//
//   bits [39 .. slotBits]  global slab id   (slabs of all tiers numbered in one space)
//   bits [slotBits-1 .. 0] slot within the slab
//
// slotBits = log2(slabSize / minAllocSize) is fixed per cache (16 for 4 MiB
// slabs and 64-byte classes), leaving 40 - slotBits bits of slab id: 2^24 - 1
// slabs = 64 TiB of cache at 4 MiB slabs (32-bit refs stopped at 65,535
// slabs, 256 GiB). Which tier a slab belongs to is looked up from the slab
// id (each tier owns a contiguous range), so a ref carries the tier without
// spending bits on it and any number of tiers fits. No raw address is
// stored: a persistent tier can be mapped elsewhere after a restart. kNull
// (all ones) is never a valid ref: slab id 2^(40-slotBits)-1 is never
// handed out.
//
// In registers a ref is a 64-bit word; where it is stored it takes 5 bytes:
// an index bucket is 5 packed bytes (AccessIndex), an item's links are a
// 32-bit word and a high byte each (Item::chainLink, EvictionHook prev/next).
// The 40 bits are eviction/'s RefWord, so policies hold the same value.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>

#include "../eviction/eviction_policy.h"

namespace tiercache {

class CompressedRef {
 public:
  static constexpr uint32_t kBits = 40;
  static constexpr uint64_t kNull = (uint64_t{1} << kBits) - 1;
  static constexpr uint32_t kStoredBytes = kBits / 8;  // an index bucket

  constexpr CompressedRef() = default;
  constexpr explicit CompressedRef(uint64_t raw) : raw_(raw) {}
  static constexpr CompressedRef make(uint64_t slab, uint32_t slot, uint32_t slotBits) {
    return CompressedRef((slab << slotBits) | slot);
  }

  constexpr uint64_t raw() const { return raw_; }
  constexpr bool isNull() const { return raw_ == kNull; }
  constexpr explicit operator bool() const { return raw_ != kNull; }
  constexpr uint32_t slab(uint32_t slotBits) const { return static_cast<uint32_t>(raw_ >> slotBits); }
  constexpr uint32_t slot(uint32_t slotBits) const {
    return static_cast<uint32_t>(raw_) & ((uint32_t{1} << slotBits) - 1);
  }

  friend constexpr bool operator==(CompressedRef a, CompressedRef b) { return a.raw_ == b.raw_; }

 private:
  uint64_t raw_ = kNull;
};

// Where one ref is stored: its low 32 bits and its high byte, which may lie
// apart (an item's chain link) or together (a packed index bucket), at any
// alignment. Index chains are read without a lock (AccessIndex::acquire
// validates what it read by the stripe's sequence number), so every load
// and store is atomic, byte by byte (an unaligned word cannot be): release
// stores and acquire loads, plain moves on x86. A load that races a store
// may return a torn value; lock-free readers check before they use it.
class RefLink {
 public:
  RefLink(void* lo, void* hi) : lo_(static_cast<unsigned char*>(lo)), hi_(static_cast<unsigned char*>(hi)) {}
  // A packed 5-byte slot.
  explicit RefLink(unsigned char* packed) : lo_(packed), hi_(packed + 4) {}

  uint64_t load() const {
    uint64_t v = uint64_t{loadByte(hi_)} << 32;
    for (int i = 0; i < 4; ++i) v |= uint64_t{loadByte(lo_ + i)} << (8 * i);
    return v;
  }
  void store(uint64_t raw) const {
    for (int i = 0; i < 4; ++i) storeByte(lo_ + i, static_cast<unsigned char>(raw >> (8 * i)));
    storeByte(hi_, static_cast<unsigned char>(raw >> 32));
  }
  bool sameAs(const RefLink& o) const { return lo_ == o.lo_; }

 private:
  static unsigned char loadByte(unsigned char* p) {
    return std::atomic_ref<unsigned char>(*p).load(std::memory_order_acquire);
  }
  static void storeByte(unsigned char* p, unsigned char v) {
    std::atomic_ref<unsigned char>(*p).store(v, std::memory_order_release);
  }

  unsigned char* lo_;
  unsigned char* hi_;
};
// The low word is kept in the byte order of a uint32_t (Item::hashNext).
static_assert(std::endian::native == std::endian::little);

static_assert(CompressedRef::kNull == kNullRefWord, "policies and the allocator agree on the null ref");

}  // namespace tiercache
