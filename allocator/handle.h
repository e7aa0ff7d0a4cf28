// ReadHandle / WriteHandle: a reference that pins one item.
//
// While a handle is alive its item's memory is never freed, reused or
// rewritten. Most handles hold one count in the item's refcount, and every
// path that frees an item first wins a CAS that requires the count to be
// zero. A find that hits without a lock holds a hazard entry of its thread
// instead (hazard_pins.h), so a hit writes no line another thread reads:
// such an item may still be evicted, removed or moved (unlinked), but its
// slot waits for the handle before it is freed. A removed or replaced item
// stays readable through handles taken before; the last release frees it.
// Handles are move-only and not thread-safe themselves (one handle, one
// thread at a time); any number of handles to the same item may live in
// different threads.
//
// A handle must be released before the Cache that made it is destroyed:
// release writes into the cache. ~Cache aborts (NDEBUG off) or warns and
// counts (release builds) when handles are still held; see cache.h.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "compressed_ref.h"

namespace tiercache {

class Cache;
class Item;

class ReadHandle {
 public:
  ReadHandle() = default;
  ReadHandle(ReadHandle&& o) noexcept : cache_(o.cache_), item_(o.item_), ref_(o.ref_), hazard_(o.hazard_) {
    o.item_ = nullptr;
  }
  ReadHandle& operator=(ReadHandle&& o) noexcept {
    if (this != &o) {
      reset();
      cache_ = o.cache_;
      item_ = o.item_;
      ref_ = o.ref_;
      hazard_ = o.hazard_;
      o.item_ = nullptr;
    }
    return *this;
  }
  ReadHandle(const ReadHandle&) = delete;
  ReadHandle& operator=(const ReadHandle&) = delete;
  ~ReadHandle() { reset(); }

  explicit operator bool() const { return item_ != nullptr; }
  std::string_view key() const;
  std::string_view value() const;
  // Tier the item lived in when the handle was taken.
  uint32_t tier() const;
  // Changes whenever the key's item is replaced (set, CAS, touch); 0 for an
  // item not yet inserted. Kept across moves between tiers and restarts.
  uint64_t casToken() const;
  // The item's deadline (whole seconds), or nullopt if it never expires.
  std::optional<std::chrono::system_clock::time_point> expiresAt() const;
  // 32-bit client flags stored with the item.
  uint32_t flags() const;
  // memcached's "fetched" bit (its mg h flag): whether a client read the
  // item since it was stored. The cache never sets it by itself (a find
  // does not); markFetched sets it and returns whether it was set before,
  // writing the item's line only the first time.
  bool fetched() const;
  bool markFetched() const;
  // Milliseconds since the item's last access as its class's eviction
  // policy records it (LRU: insertion or last refresh), or -1 when the
  // policy keeps no access time (EvictionPolicy::idleMs).
  int64_t idleMs() const;
  // The allocation class holding the item: its pool, its index in the
  // class ladder (CacheStats' ClassStats::pool and class_id) and its slot size.
  struct Placement {
    uint32_t pool = 0;
    uint32_t classId = 0;
    uint32_t slotBytes = 0;
  };
  Placement placement() const;
  CompressedRef ref() const { return ref_; }
  // Release the pin now (the destructor does it otherwise).
  void reset();

 protected:
  friend class Cache;
  // Counts the handle as opened (Cache checks for leaks at destruction).
  // With `hazard`, the pin is that hazard entry (hazard_pins.h), not a
  // count in the item.
  ReadHandle(Cache* cache, Item* item, CompressedRef ref, std::atomic<const void*>* hazard = nullptr);
  Item* item() const { return item_; }

  Cache* cache_ = nullptr;
  Item* item_ = nullptr;
  CompressedRef ref_;
  std::atomic<const void*>* hazard_ = nullptr;
};

// A freshly allocated item, not yet visible to other threads: fill data()
// with the value, then Cache::insertOrReplace(std::move(handle)). Dropping
// it without inserting returns the memory.
class WriteHandle : public ReadHandle {
 public:
  WriteHandle() = default;
  WriteHandle(WriteHandle&&) noexcept = default;
  WriteHandle& operator=(WriteHandle&& o) noexcept {
    if (this != &o) {
      discard();
      ReadHandle::operator=(std::move(o));
      hash_ = o.hash_;
    }
    return *this;
  }
  ~WriteHandle() { discard(); }
  // Returns the slot now, uninserted (the destructor does it otherwise).
  void reset() { discard(); }

  // The value bytes (size() of them), writable until inserted.
  char* data() const;
  size_t size() const;
  // Metadata, settable until inserted (allocate() sets both already).
  void setFlags(uint32_t flags);
  void setExpiresAt(std::optional<std::chrono::system_clock::time_point> deadline);

 private:
  friend class Cache;
  WriteHandle(Cache* cache, Item* item, CompressedRef ref, uint64_t hash)
      : ReadHandle(cache, item, ref), hash_(hash) {}
  // A handle that still holds its item never inserted it (an insert takes
  // the handle), so it holds the item's only reference: the slot goes back
  // without the release's compare-and-swap (Cache::discardUnpublished).
  void discard();
  // The key's hash, taken when the slot was (the key cannot change): the
  // insert does not hash it again.
  uint64_t hash_ = 0;
};

}  // namespace tiercache
