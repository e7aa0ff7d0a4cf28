#include "read_buffer.h"

namespace tiercache {

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
