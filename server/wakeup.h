// Wakeup: how other threads (the acceptor, stop, the flash completion
// thread) wake a worker's event loop: an eventfd the loop watches.
//
// Why not event_active from those threads: that needs the base's lock, and
// a locked base takes a mutex around every event_add/del and loop turn of
// the worker, a cost paid per request. With all cross-thread wakes on the
// eventfd, the worker's base runs without locks (EVENT_BASE_FLAG_NOLOCK).
//
// Threads: signal() from any thread; fd() and clear() on the loop's thread.
// Wakes coalesce (the eventfd counts them); clear() takes them all.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

namespace tiercache::server {

class Wakeup {
 public:
  Wakeup() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd for a worker's wakeup");
  }
  ~Wakeup() { ::close(fd_); }
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  int fd() const { return fd_; }
  // A write fails only when the count would overflow (2^64 - 2 wakes not
  // taken), and then the loop is woken already.
  void signal() const {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof(one));
  }
  void clear() const {
    uint64_t count;
    [[maybe_unused]] const ssize_t n = ::read(fd_, &count, sizeof(count));
  }

 private:
  int fd_;
};

}  // namespace tiercache::server
