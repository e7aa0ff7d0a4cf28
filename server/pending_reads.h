// Gets that wait for flash without blocking their worker.
//
// With a flash store, a get's keys are looked up with Cache::findManyAsync:
// memory hits and sure misses complete at once, on the worker; the keys the
// flash index may hold are read on the cache's flash completion thread.
// While such a read is in flight its connection is parked (it reads and
// carries out nothing more, so its replies keep their order) and the worker
// serves its other connections. The completion thread hands the finished
// read to the worker's loop (a mutex-protected queue and the worker's
// Wakeup), and the worker resumes the connection where it stopped.
//
// Threads: a FlashRead belongs to one connection and is used by its worker,
// except found_ (written by the completion thread while in flight) and the
// count left_. A connection that closes while its read is in flight orphans
// the FlashRead; the worker deletes it when the completion arrives, so the
// completion never touches a freed object. FlashReads::drain() waits for
// every read in flight before the worker goes (and so before the Cache can).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "../allocator/cache.h"
#include "wakeup.h"

namespace tiercache::server {

class FlashReads;

// One connection's lookup of a get batch (or an mg key), reused from one
// request to the next.
class FlashRead {
 public:
  // Looks keys up. true: every result is ready (results()); false: some are
  // being read from flash, and the worker's resume callback runs for this
  // read's connection once they are all in. `first` names the batch (the
  // index of its first key in the request) for ready().
  bool start(Cache& cache, std::span<const std::string_view> keys, size_t first);
  bool inFlight() const { return inFlight_; }
  // The results of the batch that begins at `first` are waiting to be used.
  bool ready(size_t first) const { return ready_ && first_ == first; }
  // One handle per key of the batch, empty where absent; the caller moves
  // them out, then calls done().
  std::span<ReadHandle> results() { return found_; }
  void done();

 private:
  friend class FlashReads;
  FlashRead(FlashReads& owner, void* conn) : owner_(owner), conn_(conn) {}

  FlashReads& owner_;
  void* conn_;  // null once the connection closed (worker thread only)
  std::vector<ReadHandle> found_;
  // Callbacks still to run, plus one held by start() until findManyAsync
  // returns: whoever takes it to 0 completes the read.
  std::atomic<size_t> left_{0};
  size_t first_ = 0;
  bool inFlight_ = false;
  bool ready_ = false;
};

// A worker's side of it: the queue the completion thread fills, the event
// that wakes the worker's loop, and the reads in flight.
class FlashReads {
 public:
  using Resume = void (*)(void* ctx, void* conn);
  // resume(ctx, conn) runs from runCompleted() for each completed read
  // whose connection is still open; a completion signals wake.
  FlashReads(const Wakeup& wake, Resume resume, void* ctx);
  ~FlashReads();
  FlashReads(const FlashReads&) = delete;
  FlashReads& operator=(const FlashReads&) = delete;

  // A connection's FlashRead (worker thread).
  FlashRead* make(void* conn) { return new FlashRead(*this, conn); }
  // The connection closes: its FlashRead goes now, or when its read completes.
  void release(FlashRead* r);
  // Waits for every read in flight and frees the orphaned ones: once each
  // connection is released, before the loop's base and the cache go.
  void drain();
  size_t inFlight() const { return inFlight_; }
  // The worker's loop, once woken: resumes the reads completed so far.
  void runCompleted();

 private:
  friend class FlashRead;
  void post(FlashRead* r);  // completion thread
  void completed(FlashRead* r);

  Resume resume_;
  void* ctx_;
  const Wakeup& wake_;
  size_t inFlight_ = 0;  // worker thread only
  std::mutex mutex_;     // done_
  std::condition_variable doneCv_;
  std::vector<FlashRead*> done_;
  std::vector<FlashRead*> scratch_;
};

}  // namespace tiercache::server
