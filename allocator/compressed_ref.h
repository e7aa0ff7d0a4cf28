// CompressedRef: a 32-bit, position-independent reference to an item slot.
//
//   bits [31 .. slotBits]  global slab id   (slabs of all tiers numbered in one space)
//   bits [slotBits-1 .. 0] slot within the slab
//
// slotBits = log2(slabSize / minAllocSize) is fixed per cache (16 for 4 MiB
// slabs and 64-byte classes), leaving 32 - slotBits bits of slab id: 65535
// slabs = 256 GiB of cache at 4 MiB slabs. Which tier a slab belongs to is
// looked up from the slab id (each tier owns a contiguous range), so a ref
// carries the tier without spending bits on it and any number of tiers fits.
// No raw address is stored: a persistent tier can be mapped elsewhere after a
// restart. kNull (all ones) is never a valid ref: slab id 2^(32-slotBits)-1
// is never handed out.
#pragma once

#include <cstdint>

namespace tiercache {

class CompressedRef {
 public:
  static constexpr uint32_t kNull = 0xFFFFFFFFu;

  constexpr CompressedRef() = default;
  constexpr explicit CompressedRef(uint32_t raw) : raw_(raw) {}
  static constexpr CompressedRef make(uint32_t slab, uint32_t slot, uint32_t slotBits) {
    return CompressedRef((slab << slotBits) | slot);
  }

  constexpr uint32_t raw() const { return raw_; }
  constexpr bool isNull() const { return raw_ == kNull; }
  constexpr explicit operator bool() const { return raw_ != kNull; }
  constexpr uint32_t slab(uint32_t slotBits) const { return raw_ >> slotBits; }
  constexpr uint32_t slot(uint32_t slotBits) const { return raw_ & ((1u << slotBits) - 1); }

  friend constexpr bool operator==(CompressedRef a, CompressedRef b) { return a.raw_ == b.raw_; }

 private:
  uint32_t raw_ = kNull;
};

static_assert(sizeof(CompressedRef) == 4);

}  // namespace tiercache
