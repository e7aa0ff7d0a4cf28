#include "pmem_file_tier.h"
#include "../config/sizes.h"

#include "file_system.h"
#include "../common/huge_mapping.h"
#include "../common/log.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

namespace tiercache {

namespace {


// An unlinked file in `dir`: O_TMPFILE where the file system has it,
// else mkstemp + unlink. Returns the fd or -1 with errno set.
int createUnlinked(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return -1;
  std::string tmpl = dir + "/.tiercache-XXXXXX";
  fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0) return -1;
  ::unlink(tmpl.c_str());
  return fd;
}

// True the first time a directory is seen in this process: one warning
// per directory, not one per tier or test.
bool firstTimeFor(const std::string& dir) {
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> g(mu);
  return seen.insert(dir).second;
}

}  // namespace

PmemFileTier::PmemFileTier(std::string name, std::string directory, uint64_t size)
    : name_(std::move(name)), directory_(std::move(directory)), size_(size) {
  if (directory_.empty()) {
    throw TierError(name_, "pmem-file tier needs 'path': the directory its file is created in");
  }
  if (size_ < kPmemMinSize) {
    throw TierError(name_, "size " + std::to_string(size_) + " bytes is below the " +
                               formatSize(kPmemMinSize) + " minimum for a PMEM tier");
  }
  struct stat st {};
  if (::stat(directory_.c_str(), &st) != 0) {
    if (errno == ENOENT) throw TierError(name_, "directory '" + directory_ + "' does not exist");
    throw TierError(name_, "cannot stat '" + directory_ + "': " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw TierError(name_, "'" + directory_ + "' is " + (S_ISREG(st.st_mode) ? "a file" : "not a directory") +
                               "; pmem-file 'path' must be the directory the tier's file is created in");
  }
  if (::access(directory_.c_str(), W_OK | X_OK) != 0) {
    throw TierError(name_, "directory '" + directory_ + "' is not writable: " + std::strerror(errno));
  }
  // access() says yes to root everywhere and knows nothing of read-only
  // mounts or pseudo file systems: only a real create tells.
  fd_ = createUnlinked(directory_);
  if (fd_ < 0) {
    throw TierError(name_, "directory '" + directory_ + "' is not writable: cannot create a file in it: " +
                               std::strerror(errno));
  }
  auto fail = [&](const std::string& reason) {
    ::close(fd_);
    fd_ = -1;
    throw TierError(name_, reason);
  };
  // Ask first: on some file systems a doomed fallocate allocates (and then
  // frees) everything that was free before it reports ENOSPC.
  struct statvfs vfs {};
  if (::fstatvfs(fd_, &vfs) == 0) {
    const uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (avail < size_) {
      fail("not enough space in '" + directory_ + "': the tier needs " + formatSizeApprox(size_) + ", " + formatSizeApprox(avail) +
           " free");
    }
  }
  if (int rc = ::posix_fallocate(fd_, 0, static_cast<off_t>(size_)); rc != 0) {
    if (rc == ENOSPC) fail("not enough space in '" + directory_ + "' for " + formatSizeApprox(size_) + " (fallocate: ENOSPC)");
    fail("posix_fallocate of " + formatSizeApprox(size_) + " in '" + directory_ + "' failed: " + std::strerror(rc));
  }
  struct statfs sfs {};
  fsType_ = ::fstatfs(fd_, &sfs) == 0 ? fileSystemName(sfs.f_type) : "unknown fs";
  void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) fail("mmap of " + formatSizeApprox(size_) + " from '" + directory_ + "' failed: " + std::strerror(errno));
  base_ = static_cast<std::byte*>(p);
  // A cache reads its tier at random: on 4 KiB pages nearly every access
  // also misses the TLB, which under a hypervisor's nested paging costs
  // microseconds at the tail. tmpfs (huge=always or
  // within_size) and DAX file systems back an aligned mapping with 2 MiB
  // pages. The fallocate above chose tmpfs's page size already; the advice
  // lets khugepaged collapse a huge=advise mount's pages later. One read
  // maps the first page, so smaps can tell which we got.
  ::madvise(base_, size_, MADV_HUGEPAGE);
  (void)*static_cast<volatile const std::byte*>(p);
  hugePages_ = hugeMappedBytes(base_) > 0;
  if (!hugePages_ && fsType_ == "tmpfs" && firstTimeFor(directory_)) {
    logWarning("tier '" + name_ + "': " + directory_ +
               " is tmpfs without huge pages, so the tier is mapped with 4 KiB pages and misses the TLB "
               "on most accesses; remount it with huge=within_size (mount -o remount,huge=within_size "
               "<its mount point>; scripts/setup.sh does this for /dev/shm)");
  }
}

PmemFileTier::~PmemFileTier() {
  if (base_) ::munmap(base_, size_);
  if (fd_ >= 0) ::close(fd_);
}

uint64_t PmemFileTier::fileBytes() const {
  struct stat st {};
  return ::fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

uint64_t PmemFileTier::allocatedBytes() const {
  struct stat st {};
  return ::fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
}

std::string PmemFileTier::describe() const {
  return "pmem-file, " + formatSizeApprox(size_) + ", unlinked file in " + directory_ + " (" + fsType_ + ", " +
         (hugePages_ ? "2 MiB pages" : "4 KiB pages") + ", volatile)";
}

}  // namespace tiercache
