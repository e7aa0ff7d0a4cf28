#include "flash_device.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "../common/log.h"

namespace tiercache {

namespace {

std::atomic<bool> gODirectRefused{false};

[[noreturn]] void fail(const std::string& path, const char* call, int err) {
  throw std::runtime_error("flash: " + std::string(call) + " " + path + ": " + std::strerror(err));
}

}  // namespace

FlashDevice::FlashDevice(const std::string& path, uint64_t size) : path_(path), size_(size) {
  if (size == 0 || size % kAlign != 0) {
    throw std::runtime_error("flash: size of " + path + " must be a positive multiple of 4 KiB");
  }
  if (gODirectRefused.load(std::memory_order_relaxed)) {
    errno = EINVAL;
  } else {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
  }
  if (fd_ >= 0) {
    directIo_ = true;
  } else if (errno == EINVAL) {
    // tmpfs and a few others refuse O_DIRECT: buffered I/O, said out loud.
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) fail(path, "open", errno);
    logWarning("flash: the file system of " + path +
               " refuses O_DIRECT; the flash store uses buffered I/O (the page cache) there");
  } else {
    fail(path, "open", errno);
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    fail(path, "fstat", err);
  }
  if (S_ISBLK(st.st_mode)) {
    uint64_t devBytes = 0;
    if (::ioctl(fd_, BLKGETSIZE64, &devBytes) != 0) {
      const int err = errno;
      ::close(fd_);
      fail(path, "ioctl(BLKGETSIZE64)", err);
    }
    if (devBytes < size) {
      ::close(fd_);
      throw std::runtime_error("flash: block device " + path + " is smaller than the configured size");
    }
  } else if (S_ISREG(st.st_mode)) {
    if (static_cast<uint64_t>(st.st_size) < size && ::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      const int err = errno;
      ::close(fd_);
      fail(path, "ftruncate", err);
    }
  } else {
    ::close(fd_);
    throw std::runtime_error("flash: " + path + " is neither a regular file nor a block device");
  }
}

FlashDevice::~FlashDevice() {
  if (fd_ >= 0) ::close(fd_);
}

void FlashDevice::sync() {
  if (::fdatasync(fd_) != 0) fail(path_, "fdatasync", errno);
}

void setODirectRefusedForTesting(bool refused) { gODirectRefused.store(refused, std::memory_order_relaxed); }

void AlignedFree::operator()(char* p) const { std::free(p); }

AlignedBuffer allocAligned(size_t bytes) {
  bytes = (bytes + FlashDevice::kAlign - 1) / FlashDevice::kAlign * FlashDevice::kAlign;
  void* p = std::aligned_alloc(FlashDevice::kAlign, bytes == 0 ? FlashDevice::kAlign : bytes);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return AlignedBuffer(static_cast<char*>(p));
}

}  // namespace tiercache
