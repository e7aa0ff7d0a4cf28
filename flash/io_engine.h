// IoEngine: the flash store's asynchronous I/O, one narrow interface with
// two backends.
//
//   UringEngine       io_uring (liburing): a ring per concurrent caller,
//                     requests kept in flight up to the queue depth.
//   ThreadPoolEngine  pread/pwrite on a pool of queueDepth threads, for
//                     hosts where io_uring is refused (old kernel, seccomp).
//
// Contract of run(): every request is carried out exactly once, with at
// most queueDepth of the caller's requests in flight at a time; it returns
// when all are done, each request's `result` holding the bytes transferred
// or -errno. A short transfer is continued until the whole length is done,
// an error or end of file. Buffers and offsets must meet the device's
// alignment (FlashDevice::kAlign when it is opened with O_DIRECT). Any
// number of threads may call run() at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "../common/name_table.h"

namespace tiercache {

struct IoRequest {
  enum class Op : uint8_t { kRead, kWrite };
  Op op = Op::kRead;
  void* buf = nullptr;
  uint64_t offset = 0;
  uint32_t len = 0;
  int64_t result = 0;  // bytes transferred, or -errno
};

enum class IoEngineKind : uint8_t {
  kAuto,     // io_uring when the kernel allows it, else the thread pool (logged)
  kUring,    // io_uring or an error
  kThreads,  // the thread pool
};
inline constexpr std::array<NameRow<IoEngineKind>, 3> kIoEngineKindNames = {
    {{IoEngineKind::kAuto, "auto"}, {IoEngineKind::kUring, "io_uring"}, {IoEngineKind::kThreads, "threads"}}};
static_assert(isDenseNameTable(kIoEngineKindNames, IoEngineKind::kThreads));

class IoEngine {
 public:
  virtual ~IoEngine() = default;
  virtual const char* name() const = 0;  // "io_uring" or "threads"
  virtual uint32_t queueDepth() const = 0;
  virtual void run(std::span<IoRequest> requests) = 0;
};

// The engine of `kind` over fd (which must outlive the engine). kAuto falls
// back to the thread pool when io_uring_queue_init fails, with a warning
// (common/log.h); kUring then throws std::runtime_error.
std::unique_ptr<IoEngine> openIoEngine(IoEngineKind kind, int fd, uint32_t queueDepth);

// Test seam: while set, io_uring reports itself unavailable, as under a
// seccomp filter that refuses io_uring_setup.
void setUringRefusedForTesting(bool refused);

}  // namespace tiercache
