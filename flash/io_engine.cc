#include "io_engine.h"

#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../common/log.h"

namespace tiercache {

namespace {

std::atomic<bool> gUringRefused{false};

// Continues a request after a short transfer (rare on files and block
// devices, but allowed by both read(2) and io_uring).
struct Progress {
  IoRequest* req;
  uint32_t done = 0;
};

bool finished(Progress& p, int64_t res) {
  if (res < 0) {
    p.req->result = res;
    return true;
  }
  p.done += static_cast<uint32_t>(res);
  // res == 0 on a read: end of file, the rest stays as it was.
  if (res == 0 || p.done >= p.req->len) {
    p.req->result = p.done;
    return true;
  }
  return false;
}

class UringEngine final : public IoEngine {
 public:
  UringEngine(int fd, uint32_t depth) : fd_(fd), depth_(depth) {
    io_uring* ring = newRing();  // probe now: kAuto falls back on failure
    if (!ring) throw std::runtime_error(error_);
    free_.push_back(ring);
  }
  ~UringEngine() override {
    for (io_uring* r : free_) {
      io_uring_queue_exit(r);
      delete r;
    }
  }
  const char* name() const override { return "io_uring"; }
  uint32_t queueDepth() const override { return depth_; }

  void run(std::span<IoRequest> requests) override {
    if (requests.empty()) return;
    io_uring* ring = acquire();
    std::vector<Progress> prog(std::min<size_t>(requests.size(), depth_));
    std::vector<uint32_t> idle;  // Progress slots not in flight
    for (uint32_t i = 0; i < prog.size(); ++i) idle.push_back(i);
    size_t next = 0, inFlight = 0;
    while (next < requests.size() || inFlight > 0) {
      // Fill the queue.
      bool queued = false;
      while (!idle.empty() && next < requests.size()) {
        const uint32_t slot = idle.back();
        idle.pop_back();
        prog[slot] = Progress{&requests[next++]};
        prep(ring, prog[slot], slot);
        ++inFlight;
        queued = true;
      }
      if (queued) submit(ring);
      io_uring_cqe* cqe = nullptr;
      int rc = io_uring_wait_cqe(ring, &cqe);
      if (rc == -EINTR) continue;
      if (rc < 0) throw std::runtime_error(std::string("io_uring_wait_cqe: ") + std::strerror(-rc));
      // Reap everything that is ready.
      unsigned head;
      unsigned seen = 0;
      bool requeued = false;
      io_uring_for_each_cqe(ring, head, cqe) {
        ++seen;
        const auto slot = static_cast<uint32_t>(io_uring_cqe_get_data64(cqe));
        const int64_t res = cqe->res;
        if (res == -EAGAIN || res == -EINTR) {
          prep(ring, prog[slot], slot);
          requeued = true;
        } else if (finished(prog[slot], res)) {
          --inFlight;
          idle.push_back(slot);
        } else {
          prep(ring, prog[slot], slot);
          requeued = true;
        }
      }
      io_uring_cq_advance(ring, seen);
      if (requeued) submit(ring);
    }
    release(ring);
  }

 private:
  io_uring* newRing() {
    if (gUringRefused.load(std::memory_order_relaxed)) {
      error_ = "io_uring_queue_init: refused (test seam)";
      return nullptr;
    }
    auto* ring = new io_uring;
    const int rc = io_uring_queue_init(std::max<uint32_t>(depth_, 1), ring, 0);
    if (rc < 0) {
      delete ring;
      error_ = std::string("io_uring_queue_init: ") + std::strerror(-rc);
      return nullptr;
    }
    return ring;
  }
  io_uring* acquire() {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (!free_.empty()) {
        io_uring* r = free_.back();
        free_.pop_back();
        return r;
      }
    }
    // Another caller holds every ring: one more (a ring is one submitter's).
    io_uring* r = newRing();
    if (!r) throw std::runtime_error(error_);
    return r;
  }
  void release(io_uring* ring) {
    std::lock_guard<std::mutex> g(mu_);
    free_.push_back(ring);
  }
  void prep(io_uring* ring, Progress& p, uint32_t slot) {
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    if (!sqe) {
      submit(ring);
      sqe = io_uring_get_sqe(ring);
    }
    char* buf = static_cast<char*>(p.req->buf) + p.done;
    const uint32_t len = p.req->len - p.done;
    const uint64_t off = p.req->offset + p.done;
    if (p.req->op == IoRequest::Op::kRead) {
      io_uring_prep_read(sqe, fd_, buf, len, off);
    } else {
      io_uring_prep_write(sqe, fd_, buf, len, off);
    }
    io_uring_sqe_set_data64(sqe, slot);
  }
  static void submit(io_uring* ring) {
    int rc;
    do {
      rc = io_uring_submit(ring);
    } while (rc == -EINTR || rc == -EAGAIN);
    if (rc < 0) throw std::runtime_error(std::string("io_uring_submit: ") + std::strerror(-rc));
  }

  const int fd_;
  const uint32_t depth_;
  std::string error_;
  std::mutex mu_;
  std::vector<io_uring*> free_;
};

class ThreadPoolEngine final : public IoEngine {
 public:
  ThreadPoolEngine(int fd, uint32_t depth) : fd_(fd), depth_(std::max<uint32_t>(depth, 1)) {
    for (uint32_t i = 0; i < depth_; ++i) threads_.emplace_back([this] { work(); });
  }
  ~ThreadPoolEngine() override {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  const char* name() const override { return "threads"; }
  uint32_t queueDepth() const override { return depth_; }

  void run(std::span<IoRequest> requests) override {
    if (requests.empty()) return;
    Batch b;
    b.left = requests.size();
    {
      std::lock_guard<std::mutex> g(mu_);
      for (IoRequest& r : requests) jobs_.push_back({&r, &b});
    }
    cv_.notify_all();
    std::unique_lock<std::mutex> l(b.mu);
    b.cv.wait(l, [&] { return b.left == 0; });
  }

 private:
  struct Batch {
    std::mutex mu;
    std::condition_variable cv;
    size_t left = 0;
  };
  struct Job {
    IoRequest* req;
    Batch* batch;
  };

  void work() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = jobs_.front();
        jobs_.pop_front();
      }
      Progress p{job.req};
      for (;;) {
        char* buf = static_cast<char*>(p.req->buf) + p.done;
        const size_t len = p.req->len - p.done;
        const off_t off = static_cast<off_t>(p.req->offset + p.done);
        const ssize_t n =
            p.req->op == IoRequest::Op::kRead ? ::pread(fd_, buf, len, off) : ::pwrite(fd_, buf, len, off);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (finished(p, n < 0 ? -errno : n)) break;
      }
      std::lock_guard<std::mutex> g(job.batch->mu);
      if (--job.batch->left == 0) job.batch->cv.notify_one();
    }
  }

  const int fd_;
  const uint32_t depth_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

void setUringRefusedForTesting(bool refused) { gUringRefused.store(refused, std::memory_order_relaxed); }

std::unique_ptr<IoEngine> openIoEngine(IoEngineKind kind, int fd, uint32_t queueDepth) {
  queueDepth = std::clamp<uint32_t>(queueDepth, 1, 1024);
  if (kind == IoEngineKind::kThreads) return std::make_unique<ThreadPoolEngine>(fd, queueDepth);
  try {
    return std::make_unique<UringEngine>(fd, queueDepth);
  } catch (const std::runtime_error& e) {
    if (kind == IoEngineKind::kUring) throw;
    logWarning(std::string("flash: io_uring unavailable (") + e.what() + "); using the thread-pool I/O engine with " +
               std::to_string(queueDepth) + " threads");
  }
  return std::make_unique<ThreadPoolEngine>(fd, queueDepth);
}

}  // namespace tiercache
