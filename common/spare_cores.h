// SpareCoreMeter: whether this process leaves a core idle for a background
// thread.
//
// A background evictor pays off only on a core the application is not
// using: on a machine whose cores the application's threads keep busy, each
// of its runs stops an application thread, and the work it does is the
// same work an allocation would have done itself (the same batch code), so
// it moves work without removing any and adds the thread switches. The
// meter tells the two cases apart from the process's CPU time: over a
// window of kWindow, the process's CPU time (every thread's, the caller's
// too) divided by the wall time is how many cores it used. Less than
// `minSpare` of the available cores left over means no spare core.
//
// Available cores: the CPUs the process may run on (sched_getaffinity),
// capped by a cgroup v2 CPU quota (cpu.max) when one is set, as in a
// container given fewer CPUs than the host has. Other processes' load is
// not counted: the meter judges whether this process's background thread
// would compete with this process's own threads.
//
// Not thread-safe: one meter per background thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace tiercache {

class SpareCoreMeter {
 public:
  static constexpr std::chrono::milliseconds kWindow{50};
  // Spare windows in a row that turn a "no" into a "yes" (a busy one
  // turns a "yes" into a "no" at once).
  static constexpr int kSpareWindowsToResume = 2;

  // cores: the cores the process may use; 0: availableCores().
  explicit SpareCoreMeter(double cores = 0, double minSpare = 0.5);

  // The verdict of the last full windows (true until one has passed): did
  // the process leave at least minSpare of a core unused? After a "no",
  // "yes" takes kSpareWindowsToResume spare windows in a row. Reads the
  // process's CPU clock once per window; between windows, only `now`.
  bool spare(std::chrono::steady_clock::time_point now);
  // Cores the process used in the last full window (0 before one).
  double usedLastWindow() const { return used_; }
  double cores() const { return cores_; }

  // The CPUs this process may run on, capped by its cgroup's CPU quota.
  static double availableCores();
  // The quota "cpu.max" of cgroup v2 states ("200000 100000": 2 cores;
  // "max 100000": none, returns 0), or 0 when the text is not one.
  static double quotaCores(const char* cpuMaxText);

 private:
  const double minSpare_;
  const double cores_;
  bool started_ = false;
  bool verdict_ = true;
  double used_ = 0;
  int spareInARow_ = 0;
  std::chrono::steady_clock::time_point windowStart_{};
  int64_t processNs_ = 0;  // at windowStart_
};

}  // namespace tiercache
