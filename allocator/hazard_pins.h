// HazardPins: the pin of a lock-free hit, which writes no shared line.
//
// A refcount pin is a locked read-modify-write on the item's line: with two
// threads reading the same items, every hit moves that line from the other
// core. A hazard pin instead stores the item's address in one of the
// calling thread's own entries (a line only that thread writes), then reads
// the item's state: kAccessible and not kExclusive means it is pinned.
// Whoever would free an item or write it in place first claims it (a CAS on
// its state) and then looks through every thread's entries (isProtected).
// Both sides are sequentially consistent (the entry's exchange on one side,
// a fence on the other), so either the reader sees the claim and backs off,
// or the claimer sees the entry and leaves the item alone: a free waits on
// the deferred list (AllocationClass::pushFree, pushFreeBatch), eviction
// rotates the item, a rewrite in place or a slab release gives up.
// Releasing the pin is a plain store.
//
// Each of the first kThreads threads owns kPerThread entries; a thread
// without a free one (or without a record) pins with the refcount instead.
// An entry may be cleared from any thread (a handle moved between
// threads); only its owner sets it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>

#include "../common/thread_slot.h"

namespace tiercache {

// One thread's entries (a line of its own): see HazardPins.
struct alignas(64) HazardRecord {
  static constexpr size_t kEntries = 7;  // 56 bytes: one line per thread
  std::atomic<const void*> entries[kEntries] = {};
  bool counted = false;  // this record's index is below HazardPins' used_ (owner only)
};
static_assert(sizeof(HazardRecord) == 64);

class HazardPins {
 public:
  static constexpr size_t kThreads = 64;
  static constexpr size_t kPerThread = HazardRecord::kEntries;
  static constexpr size_t kEntries = kThreads * kPerThread;
  using Entry = std::atomic<const void*>;

  // Publishes p in a free entry of the calling thread, ordered before the
  // caller's later loads; null when there is none (pin by refcount).
  static Entry* protect(const void* p) {
    const size_t i = Slots::index();
    if (i == Slots::kNone) [[unlikely]]
      return nullptr;
    Record& r = records_[i];
    if (!r.counted) [[unlikely]]
      countThread(i, r);
    for (Entry& e : r.entries) {
      // Only this thread makes an entry non-null, so a null one stays free.
      if (e.load(std::memory_order_relaxed) == nullptr) {
        e.exchange(p, std::memory_order_seq_cst);
        return &e;
      }
    }
    return nullptr;
  }
  // Ends a pin: the holder's reads of the item happen before a claimer's
  // isProtected that sees the entry empty.
  static void clear(Entry* e) { e->store(nullptr, std::memory_order_release); }

  // Called after the caller's claim on p (a CAS on its state): whether a
  // pin that predates the claim still holds p. A pin taken after the claim
  // sees it and backs off, so false is final while the claim lasts.
  static bool isProtected(const void* p) {
    return scan([p](const void* held) { return held == p; });
  }
  // isProtected for many claims at once: every address pinned when it was
  // taken (3.5 KiB: a stack object, no allocation).
  class Snapshot {
   public:
    Snapshot() {
      scan([this](const void* held) {
        held_[n_++] = held;
        return false;
      });
    }
    bool empty() const { return n_ == 0; }
    bool contains(const void* p) const { return std::find(held_, held_ + n_, p) != held_ + n_; }

   private:
    const void* held_[kEntries];
    size_t n_ = 0;
  };

 private:
  using Slots = ThreadSlot<HazardPins, kThreads>;
  using Record = HazardRecord;
  static inline Record records_[kThreads];
  // One past the highest record ever used: isProtected looks no further.
  static inline std::atomic<size_t> used_{0};
  // Calls stop(address) for every entry in use, after the fence that pairs
  // with protect's exchange; true as soon as stop does.
  template <class Stop>
  static bool scan(Stop&& stop) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const size_t n = used_.load(std::memory_order_seq_cst);
    for (size_t i = 0; i < n; ++i) {
      for (const Entry& e : records_[i].entries) {
        const void* held = e.load(std::memory_order_acquire);
        if (held && stop(held)) return true;
      }
    }
    return false;
  }
  // Before the thread's first entry: raise used_ past its record.
  static void countThread(size_t i, Record& r) {
    size_t n = used_.load(std::memory_order_relaxed);
    while (n <= i && !used_.compare_exchange_weak(n, i + 1, std::memory_order_seq_cst)) {
    }
    r.counted = true;
  }
};

}  // namespace tiercache
