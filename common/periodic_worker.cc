#include "periodic_worker.h"

#include <pthread.h>
#include <sched.h>

namespace tiercache {

PeriodicWorker::PeriodicWorker(std::string name, std::chrono::milliseconds interval, std::function<void()> task)
    : name_(std::move(name)), interval_(interval), task_(std::move(task)) {}

PeriodicWorker::~PeriodicWorker() { stop(); }

void PeriodicWorker::start() {
  std::lock_guard<std::mutex> life(lifecycleMu_);
  std::lock_guard<std::mutex> g(mu_);
  if (thread_.joinable()) return;
  stopRequested_ = false;
  running_.store(true, std::memory_order_release);
  thread_ = std::thread([this] { loop(); });
  // Thread names show up in top/gdb; Linux caps them at 15 characters.
  pthread_setname_np(thread_.native_handle(), name_.substr(0, 15).c_str());
}

void PeriodicWorker::stop() {
  std::lock_guard<std::mutex> life(lifecycleMu_);
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!thread_.joinable()) return;
    stopRequested_ = true;
  }
  cv_.notify_all();
  thread_.join();
  running_.store(false, std::memory_order_release);
}

void PeriodicWorker::wake() {
  // Allocations below a watermark call this until the evictor runs: a
  // plain load first, so that they do not take the line from the worker's
  // core with a read-modify-write each time.
  // The fence pairs with the one in loop(): either this load sees the
  // worker's reset, or the worker's task sees what the caller stored before
  // calling wake() (the caller's flags, e.g. a told class).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (wakePending_.load(std::memory_order_relaxed)) return;
  if (wakePending_.exchange(true, std::memory_order_acq_rel)) return;
  // Taking the mutex orders the flag with the worker's wait, so the wake-up
  // cannot fall between its check and its sleep.
  { std::lock_guard<std::mutex> g(mu_); }
  cv_.notify_one();
}

void PeriodicWorker::wakeUnlessDue(std::chrono::milliseconds soon) {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the caller's flags before the look
  if (wakePending_.load(std::memory_order_relaxed)) return;
  const int64_t due = dueNs_.load(std::memory_order_relaxed);
  if (due != kNotSleeping) {
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    // The timed run reads the caller's flags (stored before the fence
    // above, a millisecond or less before that run).
    if (due - now <= std::chrono::duration_cast<std::chrono::nanoseconds>(soon).count()) return;
  }
  wake();
}

void PeriodicWorker::loop() {
  // Background work must not preempt the application: a normal thread that
  // wakes gets the CPU at once (CFS favours a sleeper), so with as many
  // application threads as cores every run of the evictor or the promoter
  // stopped one of them mid-operation. SCHED_BATCH keeps this thread's fair
  // share but no wake-up preemption: it runs on an idle core or at the next
  // tick (the default config, 2 threads on 2 cores, ran faster with a lower
  // get tail; docs/benchmarks.md). A policy the operator chose (real-time,
  // SCHED_IDLE) is inherited and left alone.
  if (sched_getscheduler(0) == SCHED_OTHER) {
    const sched_param none{};
    batchScheduled_.store(sched_setscheduler(0, SCHED_BATCH, &none) == 0, std::memory_order_relaxed);
  }
  std::unique_lock<std::mutex> lk(mu_);
  while (!stopRequested_) {
    lk.unlock();
    wakePending_.store(false, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with wake()
    task_();
    runs_.fetch_add(1, std::memory_order_relaxed);
    lk.lock();
    const auto wait = nextWaitMs_ >= 0 ? std::chrono::milliseconds(nextWaitMs_) : interval_;
    nextWaitMs_ = -1;
    dueNs_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                     (std::chrono::steady_clock::now() + wait).time_since_epoch())
                     .count(),
                 std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with wakeUnlessDue()
    cv_.wait_for(lk, wait, [this] { return stopRequested_ || wakePending_.load(std::memory_order_acquire); });
    dueNs_.store(kNotSleeping, std::memory_order_relaxed);
  }
}

}  // namespace tiercache
