#include "read_buffer.h"

#include <mutex>

namespace tiercache {

namespace {

// Stripe indices of the threads alive now. Leaked on purpose: threads may
// exit (and give their index back) during static destruction.
struct StripeRegistry {
  std::mutex mu;
  bool taken[ReadBuffer::kStripes] = {};

  size_t take() {
    std::lock_guard<std::mutex> g(mu);
    for (size_t i = 0; i < ReadBuffer::kStripes; ++i) {
      if (!taken[i]) {
        taken[i] = true;
        return i;
      }
    }
    return ReadBuffer::kNoStripe;
  }
  // The next taker of i happens after this (the mutex), so it continues the
  // stripe's entries where this thread left them.
  void give(size_t i) {
    std::lock_guard<std::mutex> g(mu);
    TC_DCHECK(taken[i]);
    taken[i] = false;
  }
};

StripeRegistry& registry() {
  static StripeRegistry* r = new StripeRegistry;
  return *r;
}

struct ThreadStripe {
  size_t index = registry().take();
  ~ThreadStripe() {
    if (index != ReadBuffer::kNoStripe) registry().give(index);
  }
};

}  // namespace

size_t ReadBuffer::threadStripe() {
  thread_local ThreadStripe mine;
  return mine.index;
}

ReadBuffer::~ReadBuffer() {
  for (auto& p : stripes_) delete p.load(std::memory_order_relaxed);
}

ReadBuffer::Stripe* ReadBuffer::makeStripe(size_t s) {
  // Only the stripe's owner makes it, once; a consumer that loads null
  // skips it.
  Stripe* made = new Stripe;
  Stripe* expected = nullptr;
  if (!stripes_[s].compare_exchange_strong(expected, made, std::memory_order_acq_rel)) {
    delete made;
    return expected;
  }
  return made;
}

size_t ReadBuffer::pending() const {
  size_t n = 0;
  for (const auto& p : stripes_) {
    if (const Stripe* st = p.load(std::memory_order_acquire)) {
      n += static_cast<size_t>(st->tail.load(std::memory_order_acquire) - st->head.load(std::memory_order_acquire));
    }
  }
  return n;
}

size_t ReadBuffer::bytes() const {
  size_t n = 0;
  for (const auto& p : stripes_) n += p.load(std::memory_order_relaxed) ? sizeof(Stripe) : 0;
  return n;
}

}  // namespace tiercache
