#include "flash_index.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace tiercache {

FlashIndex::FlashIndex(uint64_t entries, uint32_t lockPower) {
  const uint64_t slots = std::max<uint64_t>(entries * 4 / 3 + 1, kSlots);
  const uint64_t buckets = std::bit_ceil((slots + kSlots - 1) / kSlots);
  mask_ = buckets - 1;
  lockMask_ = std::min<uint64_t>(buckets, uint64_t{1} << std::min<uint32_t>(lockPower, 20)) - 1;
  entries_ = std::make_unique<Entry[]>(buckets * kSlots);
  std::memset(entries_.get(), 0, buckets * kSlots * sizeof(Entry));
  locks_ = std::make_unique<std::mutex[]>(lockMask_ + 1);
}

FlashLoc FlashIndex::locOf(const Entry& e) {
  const uint64_t units = (uint64_t{e.addrHi} << 32) | e.addrLo;
  return FlashLoc{units * kUnit, uint32_t{e.sizeUnits} * kUnit};
}

void FlashIndex::setLoc(Entry& e, const FlashLoc& loc) {
  const uint64_t units = loc.addr / kUnit;
  e.addrLo = static_cast<uint32_t>(units);
  e.addrHi = static_cast<uint8_t>(units >> 32);
  e.sizeUnits = static_cast<uint16_t>(loc.size / kUnit);
}

FlashIndex::Entry* FlashIndex::findTag(Entry* b, uint32_t tag) {
  for (uint32_t i = 0; i < kSlots; ++i) {
    if (b[i].sizeUnits != 0 && b[i].tag == tag) return &b[i];
  }
  return nullptr;
}

std::optional<FlashIndex::Found> FlashIndex::lookup(uint64_t hash) const {
  std::lock_guard<std::mutex> g(lockOf(hash));
  const Entry* e = findTag(bucket(hash), tagOf(hash));
  if (!e) return std::nullopt;
  return Found{locOf(*e), (e->flags & kHit) != 0};
}

void FlashIndex::markHit(uint64_t hash, const FlashLoc& loc) {
  std::lock_guard<std::mutex> g(lockOf(hash));
  Entry* e = findTag(bucket(hash), tagOf(hash));
  if (e && locOf(*e) == loc) e->flags |= kHit;
}

bool FlashIndex::insert(uint64_t hash, const FlashLoc& loc, std::optional<FlashLoc>* replaced) {
  std::lock_guard<std::mutex> g(lockOf(hash));
  Entry* b = bucket(hash);
  const uint32_t tag = tagOf(hash);
  Entry* e = findTag(b, tag);
  if (e) {
    if (replaced) *replaced = locOf(*e);
  } else {
    for (uint32_t i = 0; i < kSlots && !e; ++i) {
      if (b[i].sizeUnits == 0) e = &b[i];
    }
    if (!e) return false;
  }
  e->tag = tag;
  e->flags = 0;
  setLoc(*e, loc);
  return true;
}

bool FlashIndex::hasRoom(uint64_t hash) const {
  std::lock_guard<std::mutex> g(lockOf(hash));
  const Entry* b = bucket(hash);
  const uint32_t tag = tagOf(hash);
  for (uint32_t i = 0; i < kSlots; ++i) {
    if (b[i].sizeUnits == 0 || b[i].tag == tag) return true;
  }
  return false;
}

std::optional<FlashLoc> FlashIndex::remove(uint64_t hash) {
  std::lock_guard<std::mutex> g(lockOf(hash));
  Entry* e = findTag(bucket(hash), tagOf(hash));
  if (!e) return std::nullopt;
  const FlashLoc loc = locOf(*e);
  *e = Entry{};
  return loc;
}

bool FlashIndex::removeIf(uint64_t hash, const FlashLoc& loc, bool* wasHit) {
  std::lock_guard<std::mutex> g(lockOf(hash));
  Entry* e = findTag(bucket(hash), tagOf(hash));
  if (!e || locOf(*e) != loc) return false;
  if (wasHit) *wasHit = (e->flags & kHit) != 0;
  *e = Entry{};
  return true;
}

bool FlashIndex::replaceIf(uint64_t hash, const FlashLoc& from, const FlashLoc& to) {
  std::lock_guard<std::mutex> g(lockOf(hash));
  Entry* e = findTag(bucket(hash), tagOf(hash));
  if (!e || locOf(*e) != from) return false;
  e->flags = 0;
  setLoc(*e, to);
  return true;
}

void FlashIndex::clear() {
  for (uint64_t b = 0; b <= mask_; ++b) {
    std::lock_guard<std::mutex> g(locks_[b & lockMask_]);
    std::memset(static_cast<void*>(&entries_[b * kSlots]), 0, kSlots * sizeof(Entry));
  }
}

size_t FlashIndex::size() const {
  size_t n = 0;
  for (uint64_t b = 0; b <= mask_; ++b) {
    std::lock_guard<std::mutex> g(locks_[b & lockMask_]);
    for (uint32_t i = 0; i < kSlots; ++i) n += entries_[b * kSlots + i].sizeUnits != 0;
  }
  return n;
}

uint64_t FlashIndex::memoryBytes() const {
  return (mask_ + 1) * kSlots * sizeof(Entry) + (lockMask_ + 1) * sizeof(std::mutex);
}

}  // namespace tiercache
