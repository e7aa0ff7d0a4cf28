// FlashIndex: the DRAM index of a flash store, 12 bytes per item.
//
// An open-addressing table of buckets of kSlots entries; a key's hash picks
// the bucket (low bits) and its tag (high 32 bits, never 0). An entry holds
// no key: the store keeps the full key on flash beside the value and
// compares it after the read, so two keys with one tag can never be
// confused, only cost a miss. A bucket holds at most one entry per tag: an
// insert replaces the entry of its tag (the key's older copy, or a
// colliding key, which then misses), so the newest copy of a key is the
// only one the index can lead to.
//
// Entry (12 bytes): tag 32 | address 40 (16-byte units: devices up to
// 16 TiB) | size 16 (16-byte units: entries up to 1 MiB - 16) | flags 8
// (bit 0: hit since written). Size 0 marks an empty slot. A full bucket
// refuses an insert (the item is then not kept on flash).
//
// Every operation locks the bucket's stripe; none blocks on I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

namespace tiercache {

struct FlashLoc {
  uint64_t addr = 0;  // byte offset on the device, a multiple of kUnit
  uint32_t size = 0;  // bytes, a multiple of kUnit, > 0
  friend bool operator==(const FlashLoc&, const FlashLoc&) = default;
};

class FlashIndex {
 public:
  static constexpr uint32_t kUnit = 16;
  static constexpr uint32_t kSlots = 8;
  static constexpr uint64_t kMaxAddr = (1ull << 40) * kUnit;
  static constexpr uint32_t kMaxSize = 0xffffu * kUnit;

  // Room for about `entries` items at a load of at most 3/4.
  explicit FlashIndex(uint64_t entries, uint32_t lockPower = 10);

  struct Found {
    FlashLoc loc;
    bool hit = false;
  };
  std::optional<Found> lookup(uint64_t hash) const;
  // Marks the entry hit if it is still at loc.
  void markHit(uint64_t hash, const FlashLoc& loc);
  // Points the key's tag at loc; false when the bucket is full. *replaced:
  // the entry that was there.
  bool insert(uint64_t hash, const FlashLoc& loc, std::optional<FlashLoc>* replaced = nullptr);
  // Whether insert(hash, ...) would succeed now (the tag's entry or a free slot).
  bool hasRoom(uint64_t hash) const;
  // Removes the tag's entry; returns where it pointed.
  std::optional<FlashLoc> remove(uint64_t hash);
  // Removes the entry only if it still points at loc (a reclaimed region's
  // entry, not a newer copy). *wasHit: its hit flag.
  bool removeIf(uint64_t hash, const FlashLoc& loc, bool* wasHit = nullptr);
  // Moves the entry from `from` to `to` (hit flag cleared) only if it still
  // points at `from`: a reinsertion loses to a remove or a newer copy.
  bool replaceIf(uint64_t hash, const FlashLoc& from, const FlashLoc& to);

  void clear();         // every entry
  size_t size() const;  // entries held
  uint64_t bucketCount() const { return mask_ + 1; }
  uint64_t memoryBytes() const;
  // Test seam: the tag a hash gets.
  static uint32_t tagOf(uint64_t hash) {
    const auto t = static_cast<uint32_t>(hash >> 32);
    return t == 0 ? 1 : t;
  }

 private:
  struct Entry {
    uint32_t tag;
    uint32_t addrLo;
    uint16_t sizeUnits;
    uint8_t addrHi;
    uint8_t flags;
  };
  static_assert(sizeof(Entry) == 12, "a flash index entry is 12 bytes");
  static constexpr uint8_t kHit = 1;

  Entry* bucket(uint64_t hash) const { return &entries_[(hash & mask_) * kSlots]; }
  std::mutex& lockOf(uint64_t hash) const { return locks_[(hash & mask_) & lockMask_]; }
  static FlashLoc locOf(const Entry& e);
  static void setLoc(Entry& e, const FlashLoc& loc);
  static Entry* findTag(Entry* b, uint32_t tag);

  uint64_t mask_;
  uint64_t lockMask_;
  std::unique_ptr<Entry[]> entries_;
  std::unique_ptr<std::mutex[]> locks_;
};

}  // namespace tiercache
