// FlashRead / FlashReads: see pending_reads.h.
#include "pending_reads.h"

#include <event2/event.h>

#include <stdexcept>

namespace tiercache::server {

bool FlashRead::start(Cache& cache, std::span<const std::string_view> keys, size_t first) {
  found_.clear();
  found_.resize(keys.size());
  first_ = first;
  ready_ = false;
  left_.store(keys.size() + 1, std::memory_order_relaxed);
  cache.findManyAsync(keys, [this](size_t i, ReadHandle h) {
    found_[i] = std::move(h);
    // The completion thread's last callback hands the read to the worker;
    // this object is not touched after post().
    if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) owner_.post(this);
  });
  if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    ready_ = true;  // every key answered inline (or the flash part already came back)
    return true;
  }
  inFlight_ = true;
  ++owner_.inFlight_;
  return false;
}

void FlashRead::done() {
  ready_ = false;
  for (ReadHandle& h : found_) h.reset();
}

FlashReads::FlashReads(event_base* base, Resume resume, void* ctx) : resume_(resume), ctx_(ctx) {
  wake_ = event_new(base, -1, 0, &FlashReads::onDone, this);
  if (wake_ == nullptr) throw std::runtime_error("event_new failed");
}

FlashReads::~FlashReads() {
  drain();
  event_free(wake_);
}

void FlashReads::release(FlashRead* r) {
  if (r->inFlight_) {
    r->conn_ = nullptr;  // completed() frees it (found_ is the completion thread's until then)
    return;
  }
  delete r;
}

void FlashReads::post(FlashRead* r) {
  // event_active under the mutex: drain() returning (and the base being
  // freed after it) waits for this call to be over.
  std::lock_guard<std::mutex> g(mutex_);
  done_.push_back(r);
  doneCv_.notify_one();
  event_active(wake_, 0, 0);
}

void FlashReads::completed(FlashRead* r) {
  --inFlight_;
  r->inFlight_ = false;
  if (r->conn_ == nullptr) {
    delete r;  // its connection closed meanwhile; the handles go with it
    return;
  }
  r->ready_ = true;
  resume_(ctx_, r->conn_);
}

void FlashReads::onDone(int, short, void* self) {
  auto* f = static_cast<FlashReads*>(self);
  {
    std::lock_guard<std::mutex> g(f->mutex_);
    f->scratch_.swap(f->done_);
  }
  // resume may close its connection (and release its own read), never another's.
  for (FlashRead* r : f->scratch_) f->completed(r);
  f->scratch_.clear();
}

void FlashReads::drain() {
  while (inFlight_ > 0) {
    std::vector<FlashRead*> got;
    {
      std::unique_lock<std::mutex> g(mutex_);
      doneCv_.wait(g, [&] { return !done_.empty(); });
      got.swap(done_);
    }
    for (FlashRead* r : got) completed(r);
  }
}

}  // namespace tiercache::server
