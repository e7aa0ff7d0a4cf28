// FlashRead / FlashReads: see pending_reads.h.
#include "pending_reads.h"

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

FlashReads::FlashReads(const Wakeup& wake, Resume resume, void* ctx) : resume_(resume), ctx_(ctx), wake_(wake) {}

FlashReads::~FlashReads() { drain(); }

void FlashReads::release(FlashRead* r) {
  if (r->inFlight_) {
    r->conn_ = nullptr;  // completed() frees it (found_ is the completion thread's until then)
    return;
  }
  delete r;
}

void FlashReads::post(FlashRead* r) {
  // The wake under the mutex: drain() returning (and the Wakeup being
  // closed after it) waits for this call to be over.
  std::lock_guard<std::mutex> g(mutex_);
  done_.push_back(r);
  doneCv_.notify_one();
  wake_.signal();
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

void FlashReads::runCompleted() {
  {
    std::lock_guard<std::mutex> g(mutex_);
    scratch_.swap(done_);
  }
  // resume may close its connection (and release its own read), never another's.
  for (FlashRead* r : scratch_) completed(r);
  scratch_.clear();
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
