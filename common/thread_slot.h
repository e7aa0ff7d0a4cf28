// ThreadSlot<Tag, N>: a small index per thread, for structures that give
// each thread a line of its own (ReadBuffer's stripes, IndexReaders'
// sections). The first N threads alive at once hold distinct indices in
// [0, N); an exiting thread gives its index back for the next new thread;
// a thread past them, or one that is exiting, gets kNone. Each Tag has its
// own registry.
//
// index() reads a constant-initialised thread_local, so the hot path pays
// no guard test; the first call takes an index under the registry's mutex,
// so the next holder of an index happens after everything its last holder
// did with it.
#pragma once

#include <cstddef>
#include <mutex>

#include "dcheck.h"

namespace tiercache {

template <class Tag, size_t N>
class ThreadSlot {
 public:
  static constexpr size_t kNone = ~size_t{0};

  static size_t index() {
    if (index_ == kUnassigned) [[unlikely]]
      assign();
    return index_;
  }

 private:
  static constexpr size_t kUnassigned = kNone - 1;

  // Leaked on purpose: threads may exit (and give their index back) during
  // static destruction.
  struct Registry {
    std::mutex mu;
    bool taken[N] = {};
    size_t take() {
      std::lock_guard<std::mutex> g(mu);
      for (size_t i = 0; i < N; ++i) {
        if (!taken[i]) {
          taken[i] = true;
          return i;
        }
      }
      return kNone;
    }
    void give(size_t i) {
      std::lock_guard<std::mutex> g(mu);
      TC_DCHECK(taken[i]);
      taken[i] = false;
    }
  };
  static Registry& registry() {
    static Registry* r = new Registry;
    return *r;
  }
  struct Holder {
    size_t taken = registry().take();
    ~Holder() {
      index_ = kNone;  // an exiting thread's later calls use no slot
      if (taken != kNone) registry().give(taken);
    }
  };
  [[gnu::noinline]] static void assign() {
    thread_local Holder holder;
    index_ = holder.taken;
  }

  static constinit inline thread_local size_t index_ = kUnassigned;
};

}  // namespace tiercache
