#include "spare_cores.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

namespace tiercache {

namespace {

int64_t cpuNanos(clockid_t clock) {
  timespec ts{};
  if (::clock_gettime(clock, &ts) != 0) return 0;
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// This process's cgroup v2 path ("0::/a/b" in /proc/self/cgroup), or empty.
std::string cgroupPath() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return {};
}

// The smallest quota on the way from the process's cgroup up to the root
// (a parent's quota bounds its children), or 0 when none is set.
double cgroupQuotaCores() {
  std::string path = cgroupPath();
  if (path.empty() || path.find("..") != std::string::npos) return 0;
  double best = 0;
  for (;;) {
    std::ifstream in("/sys/fs/cgroup" + path + "/cpu.max");
    std::string text;
    if (in && std::getline(in, text)) {
      const double q = SpareCoreMeter::quotaCores(text.c_str());
      if (q > 0 && (best == 0 || q < best)) best = q;
    }
    if (path.empty() || path == "/") break;
    const size_t slash = path.find_last_of('/');
    path = slash == std::string::npos || slash == 0 ? std::string() : path.substr(0, slash);
  }
  return best;
}

}  // namespace

double SpareCoreMeter::quotaCores(const char* text) {
  char* end = nullptr;
  const double quota = std::strtod(text, &end);
  if (end == text || quota <= 0) return 0;  // "max": no quota
  const double period = std::strtod(end, &end);
  return period > 0 ? quota / period : 0;
}

double SpareCoreMeter::availableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  double cores = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  if (cores <= 0) cores = 1;
  const double quota = cgroupQuotaCores();
  return quota > 0 ? std::min(cores, quota) : cores;
}

SpareCoreMeter::SpareCoreMeter(double cores, double minSpare)
    : minSpare_(minSpare), cores_(cores > 0 ? cores : availableCores()) {}

bool SpareCoreMeter::spare(std::chrono::steady_clock::time_point now) {
  if (started_ && now - windowStart_ < kWindow) return verdict_;
  const int64_t process = cpuNanos(CLOCK_PROCESS_CPUTIME_ID);
  if (started_) {
    const double wall = std::chrono::duration<double, std::nano>(now - windowStart_).count();
    // The caller's own time counts: whether the others would have used it
    // had it not run cannot be told from CPU times, and assuming they
    // would keeps it from taking a core they need.
    used_ = double(process - processNs_) / wall;
    // One busy window sends the evictor aside; kSpareWindowsToResume spare
    // ones in a row bring it back, so a window that only looked idle
    // (application threads descheduled by the host, a pause) does not
    // start it on a core that is not there.
    spareInARow_ = cores_ - used_ >= minSpare_ ? spareInARow_ + 1 : 0;
    verdict_ = verdict_ ? spareInARow_ > 0 : spareInARow_ >= kSpareWindowsToResume;
  }
  started_ = true;
  windowStart_ = now;
  processNs_ = process;
  return verdict_;
}

}  // namespace tiercache
