// FlashDevice: the file or block device a flash store lives on, opened for
// direct I/O, and the aligned buffers that direct I/O needs.
//
// O_DIRECT bypasses the page cache, so what the store measures and caches
// is the device, not DRAM. A file system that refuses O_DIRECT (tmpfs) gets
// buffered I/O instead, with a warning naming the path; directIo() says
// which. A regular file is created (0600) or extended to `size`; a block
// device must be at least `size` long. Every offset and length the store
// uses is a multiple of kAlign.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tiercache {

class FlashDevice {
 public:
  static constexpr size_t kAlign = 4096;

  // Throws std::runtime_error naming the path and the failing call.
  FlashDevice(const std::string& path, uint64_t size);
  ~FlashDevice();
  FlashDevice(const FlashDevice&) = delete;
  FlashDevice& operator=(const FlashDevice&) = delete;

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  bool directIo() const { return directIo_; }
  const std::string& path() const { return path_; }
  // Makes the written data durable (fdatasync).
  void sync();

 private:
  std::string path_;
  uint64_t size_;
  int fd_ = -1;
  bool directIo_ = false;
};

// Test seam: while set, opening with O_DIRECT fails with EINVAL, as on a
// file system without direct I/O.
void setODirectRefusedForTesting(bool refused);

// A kAlign-aligned heap buffer (direct I/O needs aligned memory).
struct AlignedFree {
  void operator()(char* p) const;
};
using AlignedBuffer = std::unique_ptr<char[], AlignedFree>;
// Zero-filled, bytes rounded up to kAlign. Throws std::bad_alloc.
AlignedBuffer allocAligned(size_t bytes);

}  // namespace tiercache
