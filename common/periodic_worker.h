// PeriodicWorker: one background thread that runs a task every interval and
// whenever wake() is called, and stops promptly (stop() or the destructor
// interrupts the wait, and waits only for a run already in progress).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace tiercache {

class PeriodicWorker {
 public:
  PeriodicWorker(std::string name, std::chrono::milliseconds interval, std::function<void()> task);
  ~PeriodicWorker();
  PeriodicWorker(const PeriodicWorker&) = delete;
  PeriodicWorker& operator=(const PeriodicWorker&) = delete;

  void start();
  void stop();
  // Runs the task soon without waiting for the interval. Cheap when a wake
  // is already pending: callers on hot paths may call it freely.
  void wake();
  // wake(), unless the worker sleeps on its timer and its next run is due
  // within `soon` anyway: waking a sleeping thread is a system call (and,
  // on a VM, an interrupt to another vCPU) paid by the caller, tens of
  // microseconds on a small VM, where a timer the worker set itself costs
  // the caller nothing.
  void wakeUnlessDue(std::chrono::milliseconds soon);
  // Called from the task: the next wait (unless woken) lasts `wait` instead
  // of the interval, once.
  void waitNext(std::chrono::milliseconds wait) { nextWaitMs_ = wait.count(); }
  bool running() const { return running_.load(std::memory_order_acquire); }
  uint64_t runs() const { return runs_.load(std::memory_order_relaxed); }
  const std::string& name() const { return name_; }
  // Whether the thread runs under SCHED_BATCH (see loop()): false before it
  // starts, under a policy the process chose, or where the system refused.
  bool batchScheduled() const { return batchScheduled_.load(std::memory_order_relaxed); }

 private:
  void loop();

  const std::string name_;
  const std::chrono::milliseconds interval_;
  const std::function<void()> task_;
  // Serialises start() and stop(): two threads stopping at once (a
  // consistency check and a destructor) must not both join the thread.
  std::mutex lifecycleMu_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopRequested_ = false;
  std::atomic<bool> wakePending_{false};
  // Steady-clock time (ns) the sleeping worker's timer fires; kNotSleeping
  // while the task runs (a wake then costs no system call).
  static constexpr int64_t kNotSleeping = INT64_MAX;
  std::atomic<int64_t> dueNs_{kNotSleeping};
  int64_t nextWaitMs_ = -1;  // the worker thread's own
  std::atomic<bool> running_{false};
  std::atomic<bool> batchScheduled_{false};
  std::atomic<uint64_t> runs_{0};
  std::thread thread_;
};

}  // namespace tiercache
