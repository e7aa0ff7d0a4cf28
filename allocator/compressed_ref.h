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

#include <cstdint>
#include <cstring>

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
// apart (an item's chain link) or together (a packed index bucket). Any
// alignment: loads and stores go through memcpy, one move each on x86.
class RefLink {
 public:
  RefLink(void* lo, void* hi) : lo_(static_cast<unsigned char*>(lo)), hi_(static_cast<unsigned char*>(hi)) {}
  // A packed 5-byte slot.
  explicit RefLink(unsigned char* packed) : lo_(packed), hi_(packed + 4) {}

  uint64_t load() const {
    uint32_t lo;
    std::memcpy(&lo, lo_, sizeof lo);
    return lo | (uint64_t{*hi_} << 32);
  }
  void store(uint64_t raw) const {
    const uint32_t lo = static_cast<uint32_t>(raw);
    std::memcpy(lo_, &lo, sizeof lo);
    *hi_ = static_cast<unsigned char>(raw >> 32);
  }
  // load() for a reader that holds no lock and tolerates a torn value (a
  // prefetch): byte loads the race detector does not see, since a call of
  // load() would be instrumented even from an uninstrumented caller.
  __attribute__((no_sanitize("thread"))) uint64_t loadRacy() const {
    const volatile unsigned char* lo = lo_;
    uint64_t v = uint64_t{*static_cast<const volatile unsigned char*>(hi_)} << 32;
    for (int i = 3; i >= 0; --i) v |= uint64_t{lo[i]} << (8 * i);
    return v;
  }
  bool sameAs(const RefLink& o) const { return lo_ == o.lo_; }

 private:
  unsigned char* lo_;
  unsigned char* hi_;
};

static_assert(CompressedRef::kNull == kNullRefWord, "policies and the allocator agree on the null ref");

}  // namespace tiercache
