// IndexReaders: the read sections of the index's lock-free lookups, and the
// grace period that slab memory waits out before it is cut anew.
//
// A lock-free lookup (AccessIndex::acquire) follows refs it read without a
// lock: it may still hold the ref of an item that a writer has unlinked
// and freed since, and it reads that slot's header (tag, chain link) and
// may pin it with a CAS on its state word. Within one allocation class that
// is harmless: a slot's header stays a header, its state word a state word
// (a free slot's too), written only atomically; the lookup then fails its
// check and looks again under the stripe lock. But a slab cut for another
// class size puts values where the old headers were. So a slab whose items
// are all unlinked waits (waitForReaders) until every lookup that might
// have read a ref into it has ended, before it is handed to another class
// or retired (Movers::emptySlabOf). Slab releases are rare; lookups pay one
// locked instruction on a line of their own thread.
//
// Each of the first kSlots threads alive owns one slot (ThreadSlot): a
// counter only it writes, odd while the thread is inside a section. A
// thread past them gets no section and takes the stripe lock instead.
// Entering is an exchange (sequentially consistent, so ordered before the
// lookup's first read of the index: SeqSpinLock::readBegin); leaving is a
// release store. Nothing inside a section waits for anything, so a grace
// period always ends.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

#include "../common/dcheck.h"
#include "../common/thread_slot.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tiercache {

class IndexReaders {
 public:
  static constexpr size_t kSlots = 64;
  using Slots = ThreadSlot<IndexReaders, kSlots>;

  // RAII: a section of the calling thread, or none (operator bool false)
  // when the thread has no slot. Sections do not nest.
  class Section {
   public:
    explicit Section(IndexReaders& readers) {
      const size_t i = Slots::index();
      if (i == Slots::kNone) [[unlikely]]
        return;
      slot_ = &readers.slots_[i].count;
      count_ = slot_->load(std::memory_order_relaxed) + 1;  // only this thread writes it
      TC_DCHECK(count_ & 1);                                // not inside a section already
      slot_->exchange(count_, std::memory_order_seq_cst);
    }
    ~Section() { leave(); }
    Section(const Section&) = delete;
    Section& operator=(const Section&) = delete;

    explicit operator bool() const { return slot_ != nullptr; }
    // Ends the section early (before anything that may take a lock).
    void leave() {
      if (!slot_) return;
      slot_->store(count_ + 1, std::memory_order_release);
      slot_ = nullptr;
    }

   private:
    std::atomic<uint64_t>* slot_ = nullptr;
    uint64_t count_ = 0;
  };

  // Returns once every section that was open when it was called has ended.
  // The caller has already made what the sections must not read again
  // unreachable (unlinked under the stripe locks).
  void waitForReaders() const {
    const size_t me = Slots::index();
    TC_DCHECK(me == Slots::kNone || !(slots_[me].count.load(std::memory_order_relaxed) & 1));  // not from a section
    // Pairs with the exchange on entry and SeqSpinLock::readBegin: a section
    // this does not see open will read the index as the caller left it.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (const Slot& s : slots_) {
      const uint64_t open = s.count.load(std::memory_order_acquire);
      if (!(open & 1)) continue;
      for (int spins = 0; s.count.load(std::memory_order_acquire) == open; ++spins) {
        if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
          _mm_pause();
#endif
        } else {
          std::this_thread::yield();
        }
      }
    }
  }

  // Sections open now (a racy count: tests).
  size_t openSections() const {
    size_t n = 0;
    for (const Slot& s : slots_) n += s.count.load(std::memory_order_relaxed) & 1;
    return n;
  }

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> count{0};
  };
  Slot slots_[kSlots];
};

}  // namespace tiercache
