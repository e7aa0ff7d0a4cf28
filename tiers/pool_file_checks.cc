// Checks of a pool file around libpmemobj's own: see pool_file_checks.h.
#include "pool_file_checks.h"

#include <dirent.h>
#include <libpmemobj.h>
#include <libpmempool.h>
#include <pwd.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "file_system.h"

namespace tiercache::pool_file {

std::string parentDir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string fsTypeName(const std::string& dir) {
  struct statfs sfs {};
  return ::statfs(dir.c_str(), &sfs) == 0 ? fileSystemName(sfs.f_type) : "unknown fs";
}

// PMDK's pool header starts with this 8-byte signature; a file without it is
// not a libpmemobj pool and never replaced, whatever rebuildOnMismatch says.
bool startsLikePmemObjPool(int fd) {
  char sig[8] = {};
  return ::pread(fd, sig, sizeof sig, 0) == static_cast<ssize_t>(sizeof sig) && std::memcmp(sig, "PMEMOBJ", 8) == 0;
}

std::string octal(unsigned mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0%03o", mode & 07777);
  return buf;
}

std::string userName(uid_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[1024];
  const std::string id = "uid " + std::to_string(uid);
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found) return id + " (" + found->pw_name + ")";
  return id;
}

std::string describeOwner(const struct stat& st) {
  return "owner " + userName(st.st_uid) + ", mode " + octal(st.st_mode);
}

// libpmempool's consistency check of PMDK's own metadata, read-only (no
// repair). Empty string: consistent; else what it found.
std::string checkPmemObjMetadata(const std::string& path) {
  pmempool_check_args args {};
  args.path = path.c_str();
  args.backup_path = nullptr;
  args.pool_type = PMEMPOOL_POOL_TYPE_OBJ;
  args.flags = PMEMPOOL_CHECK_FORMAT_STR;
  PMEMpoolcheck* check = pmempool_check_init(&args, sizeof args);
  if (!check) {
    const char* msg = pmempool_errormsg();
    return std::string("the check could not start: ") + (msg && *msg ? msg : std::strerror(errno));
  }
  std::string errors;
  while (pmempool_check_status* st = pmempool_check(check)) {
    // Without PMEMPOOL_CHECK_REPAIR no question is asked; errors are kept
    // (the first few) for the message, information is dropped.
    if (st->type == PMEMPOOL_CHECK_MSG_TYPE_ERROR && errors.size() < 400 && st->str.msg) {
      if (!errors.empty()) errors += "; ";
      errors += st->str.msg;
    }
  }
  const pmempool_check_result result = pmempool_check_end(check);
  if (result == PMEMPOOL_CHECK_RESULT_CONSISTENT) return {};
  return (errors.empty() ? "not consistent" : errors) + " (result " + std::to_string(static_cast<int>(result)) + ")";
}

// How long a probe open (below) may take before it counts as a hang.
constexpr int kProbeSeconds = 20;

enum class ChildWait { kEnded, kTimedOut, kLost };

// Waits for the child to end, until the deadline. Where the kernel has
// pidfds (Linux 5.3+) it sleeps in poll() until the child exits, so the
// verdict comes at once; else it polls waitpid with a growing pause, which
// answered up to 20 ms late (a probe takes 35-50 ms here, 300 ms under TSan).
// kLost: the child was reaped elsewhere (SIGCHLD ignored) or waitpid failed.
ChildWait waitForChild(pid_t pid, std::chrono::steady_clock::time_point deadline, int& status) {
#ifdef SYS_pidfd_open
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  const int pidfd = -1;  // headers older than Linux 5.3: the polling loop
#endif
  auto pause = std::chrono::microseconds(200);
  ChildWait result;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      result = ChildWait::kEnded;
      break;
    }
    if (r < 0 && errno != EINTR) {
      result = ChildWait::kLost;
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline) {
      result = ChildWait::kTimedOut;
      break;
    }
    if (pidfd >= 0) {
      // Readable once the child has exited; EINTR or a spurious wake-up
      // just goes round again.
      pollfd p{pidfd, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
      ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(20000));
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  return result;
}

// libpmemobj trusts its lane and heap metadata, and libpmempool's check
// covers only the pool header of an obj pool: flipped bytes in the heap
// made pmemobj_open fault or loop. So a child process opens the pool
// first, walks its heap and closes it; only if that ends normally does
// this process open it. Empty string: fine (or no verdict: the child could
// not be started or was reaped elsewhere); else what went wrong.
std::string probeOpenInChild(const std::string& path, const std::string& layout) {
  const pid_t pid = ::fork();
  if (pid < 0) return {};
  if (pid == 0) {
    // The child runs nothing but libpmemobj and leaves through _exit: no
    // destructors, atexit handlers or buffered output of the parent's.
    // Default actions for faults, so that a crash ends the child by its
    // signal even where a sanitizer or the application installed handlers.
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::signal(sig, SIG_DFL);
    PMEMobjpool* pop = pmemobj_open(path.c_str(), layout.c_str());
    if (!pop) _exit(0);  // an error: the parent's own open reports it
    uint64_t n = 0;
    for (PMEMoid oid = pmemobj_first(pop); !OID_IS_NULL(oid) && n < (1u << 24); oid = pmemobj_next(oid)) ++n;
    pmemobj_close(pop);
    _exit(0);
  }
  int status = 0;
  switch (waitForChild(pid, std::chrono::steady_clock::now() + std::chrono::seconds(kProbeSeconds), status)) {
    case ChildWait::kEnded: break;
    case ChildWait::kLost: return {};
    case ChildWait::kTimedOut:
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return "libpmemobj did not finish opening it within " + std::to_string(kProbeSeconds) +
             " s in a probe process (a loop in its heap metadata)";
  }
  if (WIFSIGNALED(status)) {
    return "libpmemobj crashed opening it in a probe process (signal " + std::to_string(WTERMSIG(status)) + ", " +
           strsignal(WTERMSIG(status)) + ")";
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return "libpmemobj failed opening it in a probe process (exit " + std::to_string(WEXITSTATUS(status)) + ")";
  }
  return {};
}

// Removes "<base>.creating.<pid>" files of this user in dir whose process
// is gone: what a killed creation left behind in builds that named their
// temporary file (this one creates it unnamed where it can).
void removeStaleTemporaries(const std::string& dir, const std::string& base) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  const std::string prefix = base + ".creating.";
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string pidText = name.substr(prefix.size());
    if (pidText.empty() || pidText.size() > 9 || pidText.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pidText));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    const std::string full = dir + "/" + name;
    struct stat st {};
    if (::lstat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid()) ::unlink(full.c_str());
  }
  ::closedir(d);
}

}  // namespace tiercache::pool_file
