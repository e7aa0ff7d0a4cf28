#include "persistent_pmem_tier.h"
#include "../config/sizes.h"


#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <dirent.h>
#include <libpmemobj.h>
#include <libpmempool.h>
#include <sys/wait.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/random.h>

#include <chrono>
#include <thread>

#include "file_system.h"
#include "pool_file_checks.h"

namespace tiercache {

namespace pmem_layout {

namespace {
uint64_t fnv1a(const void* data, size_t len, uint64_t h = 0xcbf29ce484222325ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < len; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}
}  // namespace

uint64_t headerChecksum(const PoolHeader& h) { return fnv1a(&h, offsetof(PoolHeader, checksum)); }

uint16_t recordCheck(uint64_t slab, uint32_t allocSize, uint16_t pool) {
  const uint64_t key = slab * 0x9E3779B97F4A7C15ull;
  const uint64_t v = mix(key ^ (uint64_t{allocSize} << 16 | pool)) ^ mix(key);
  return static_cast<uint16_t>(v ^ (v >> 16) ^ (v >> 32) ^ (v >> 48));
}

}  // namespace pmem_layout

using pmem_layout::PoolHeader;
using pmem_layout::SlabRecordSlot;

using pool_file::checkPmemObjMetadata;
using pool_file::describeOwner;
using pool_file::fsTypeName;
using pool_file::parentDir;
using pool_file::probeOpenInChild;
using pool_file::removeStaleTemporaries;
using pool_file::startsLikePmemObjPool;
using pool_file::userName;

namespace {

// PMEMOBJ_MAX_ALLOC_SIZE in PMDK 1.12's <libpmemobj/base.h>; kept here so
// this file needs no PMDK header.
constexpr uint64_t kPmemObjMaxAlloc = 0x3FFDFFFC0ull;
constexpr uint64_t kZoneBytes = 16ull << 30;  // roughly one libpmemobj heap zone

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// A random 64-bit key, never 0.
uint64_t randomKey() {
  uint64_t key = 0;
  while (key == 0) {
    if (::getrandom(&key, sizeof key, 0) != static_cast<ssize_t>(sizeof key)) {
      // No entropy source: still unpredictable enough to a client that
      // cannot see the process (time, address, pid).
      key = static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count()) ^
            reinterpret_cast<uintptr_t>(&key) ^ (uint64_t{static_cast<uint32_t>(::getpid())} << 32);
    }
  }
  return key;
}

const PmemObjPool::Object* findObject(const std::vector<PmemObjPool::Object>& objects, uint64_t offset,
                                      uint64_t typeNum) {
  for (const auto& o : objects) {
    if (o.offset == offset && o.typeNum == typeNum) return &o;
  }
  return nullptr;
}

}  // namespace

// The pool file opened without following a link, and PMDK's kind of lock
// on it (flock, which conflicts with libpmemobj's own on another
// descriptor, in this process or another). Closing drops the lock.
class PersistentPmemTier::FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC)) {
    if (fd_ < 0) error_ = errno;
  }
  ~FileLock() { close(); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  int fd() const { return fd_; }
  int error() const { return error_; }
  bool tryLock() {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return true;
    error_ = errno;
    return false;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
  int error_ = 0;
};

uint64_t PersistentPmemTier::maxSize() { return kPmemObjMaxAlloc - kSlabAreaAlignment; }

uint64_t PersistentPmemTier::poolFileSize(uint64_t size, uint64_t slabSize) {
  const uint64_t slabs = slabSize ? size / slabSize : 0;
  const uint64_t records = alignUp(slabs * sizeof(SlabRecordSlot) + 1, 256 << 10);
  // Measured with PMDK 1.12: pool header, 1024 lanes and the first zone's
  // headers take about 4.2 MiB before the heap's first chunk, and a 4 GiB
  // area needs about 4 MiB more than a 64 MiB one. 8 MiB + 1 MiB per zone +
  // 1/512 of the area covers that with room; createPool() grows the file if
  // a later PMDK needs more.
  const uint64_t zones = (size + kZoneBytes - 1) / kZoneBytes;
  const uint64_t overhead = 8 * kMiB + zones * kMiB + size / 512;
  return alignUp(size + kSlabAreaAlignment + records + overhead, kSlabAreaAlignment);
}

PersistentPmemTier::PersistentPmemTier(const TierConfig& cfg, uint64_t slabSize, const PersistentOpenOptions& options)
    : name_(cfg.name),
      path_(cfg.path),
      size_(slabSize ? cfg.size / slabSize * slabSize : 0),
      slabSize_(slabSize),
      slabCount_(static_cast<uint32_t>(std::min<uint64_t>(slabSize ? cfg.size / slabSize : 0, UINT32_MAX))),
      fingerprint_(options.fingerprint),
      rebuildOnMismatch_(options.rebuildOnMismatch) {
  checkConfig();
  fsType_ = fsTypeName(parentDir(path_));
  open();
}

void PersistentPmemTier::open() {
  // lstat, not stat: a symbolic link at the pool path is refused, never
  // followed (it could lead into another user's file).
  struct stat st {};
  if (::lstat(path_.c_str(), &st) != 0) {
    if (errno != ENOENT) refuse("cannot stat the pool file: " + std::string(std::strerror(errno)));
    createPool();
    openReport_ = "created";
    return;
  }
  if (S_ISLNK(st.st_mode)) {
    char target[4096] = {};
    const ssize_t n = ::readlink(path_.c_str(), target, sizeof target - 1);
    refuse("is a symbolic link (to '" + std::string(target, n > 0 ? static_cast<size_t>(n) : 0) + "', " +
           describeOwner(st) + "); a pool is opened only at its real path, never through a link");
  }
  if (S_ISDIR(st.st_mode)) {
    refuse("is a directory; a persistent pmem-file tier's 'path' is the pool FILE (e.g. " + path_ +
           "/tiercache.pool)");
  }
  if (!S_ISREG(st.st_mode)) refuse("is not a regular file");
  checkOwner(st);
  // From here on every check looks at the file we opened, not at the path
  // again: O_NOFOLLOW and fstat close the gap between lstat and open.
  FileLock lock(path_);
  if (lock.fd() < 0) {
    if (lock.error() == ELOOP) refuse("became a symbolic link while being opened; refused");
    refuse("cannot open the pool file: " + std::string(std::strerror(lock.error())));
  }
  if (::fstat(lock.fd(), &st) != 0) refuse("cannot stat the pool file: " + std::string(std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) refuse("is not a regular file");
  checkOwner(st);
  // The lock is tested before anything may be rebuilt: a pool another open
  // holds (in this process or another) is never deleted under it.
  if (!lock.tryLock()) {
    refuse("the pool is in use (locked by another open, in this process or another): " +
           std::string(std::strerror(lock.error())));
  }
  if (st.st_size == 0) {
    // Nothing to lose, and PMDK cannot open a 0-byte file safely.
    removeLocked(lock, "the file was empty");
    createPool();
    openReport_ = "created (the file was empty)";
    return;
  }
  if (static_cast<uint64_t>(st.st_size) < PmemObjPool::kMinPoolSize) {
    // Below PMDK's minimum: not a pool, or one cut short. Checked here
    // because PMDK itself may fault on some such files.
    const std::string reason = "pool is truncated or not a pool: the file has " + std::to_string(st.st_size) +
                               " bytes, a libpmemobj pool at least " + std::to_string(PmemObjPool::kMinPoolSize);
    if (!rebuildOnMismatch_ || !startsLikePmemObjPool(lock.fd())) refuse(reason);
    rebuildLocked(lock, reason);
    return;
  }

  if (const uint64_t expected = poolFileSize(size_, slabSize_); static_cast<uint64_t>(st.st_size) < expected) {
    // Every pool made for this config has at least this size. Checked before
    // PMDK sees the file: a truncated pool sends pmemobj_open down an error
    // path that leaks its heap's run-time state (PMDK 1.12).
    const std::string reason = "pool is truncated, or was made for a smaller tier: the file has " +
                               std::to_string(st.st_size) + " bytes, a pool for this config " +
                               std::to_string(expected);
    if (!rebuildOnMismatch_ || !startsLikePmemObjPool(lock.fd())) refuse(reason);
    rebuildLocked(lock, reason);
    return;
  }
  if (st.st_size % kSlabAreaAlignment != 0) {
    // Every pool this class makes is a whole number of 2 MiB.
    const std::string reason = "pool is truncated (or not a tiercache pool): the file has " + std::to_string(st.st_size) +
                               " bytes, not a multiple of 2 MiB as every tiercache pool";
    if (!rebuildOnMismatch_ || !startsLikePmemObjPool(lock.fd())) refuse(reason);
    rebuildLocked(lock, reason);
    return;
  }
  const bool pmemObjSignature = startsLikePmemObjPool(lock.fd());
  // libpmemobj takes its own flock on its own descriptor, which ours would
  // block: let go just before; a racing open then finds PMDK's lock.
  lock.close();

  // PMDK's own metadata is checked before this process trusts it: its pool
  // header by libpmempool, its lanes and heap by a probe open in a child
  // (pmemobj_open trusts them and can fault or loop on a corrupted heap).
  if (pmemObjSignature) {
    std::string reason;
    if (std::string problem = checkPmemObjMetadata(path_); !problem.empty()) {
      reason = "libpmemobj metadata is corrupted (pmempool check): " + problem;
    } else if (std::string crash = probeOpenInChild(path_, pmem_layout::kPoolLayoutName); !crash.empty()) {
      reason = "libpmemobj metadata is corrupted: " + crash;
    }
    if (!reason.empty()) {
      if (!rebuildOnMismatch_) refuse(reason);
      rebuild(reason);
      return;
    }
  }
  try {
    pool_ = PmemObjPool::open(path_, pmem_layout::kPoolLayoutName);
  } catch (const PmemObjError& e) {
    if (e.errnum() == EAGAIN || e.errnum() == EWOULDBLOCK) {
      refuse("the pool is in use (locked by another open, in this process or another): " + std::string(e.what()));
    }
    if (e.errnum() != EINVAL || !rebuildOnMismatch_ || !pmemObjSignature) {
      if (e.errnum() != EINVAL) refuse("cannot open the pool: " + std::string(e.what()));
      refuse("libpmemobj refused the file (not a pool, another layout, or a corrupted pool): " +
             std::string(e.what()) +
             (rebuildOnMismatch_ ? "; not replaced: it does not start like a libpmemobj pool" : ""));
    }
    rebuild("libpmemobj refused the pool: " + std::string(e.what()));
    return;
  }
  if (std::string reason = validate(); !reason.empty()) {
    if (!rebuildOnMismatch_) refuse(reason);
    rebuild(reason);
    return;
  }
  adopt();
}

void PersistentPmemTier::refuse(const std::string& reason) const {
  throw TierError(name_, "pool file '" + path_ + "': " + reason);
}

void PersistentPmemTier::checkConfig() const {
  if (path_.empty()) {
    throw TierError(name_, "a persistent pmem-file tier needs 'path': the pool file (created if missing)");
  }
  if (slabSize_ == 0 || slabSize_ > UINT32_MAX) {
    refuse("slab size " + std::to_string(slabSize_) + " is not usable by a persistent tier (1 byte to 4 GiB)");
  }
  if (size_ < std::max(kMinSize, slabSize_)) {
    refuse("size " + std::to_string(size_) + " bytes is below the minimum for a persistent tier: " +
           std::to_string(std::max(kMinSize, slabSize_)) + " bytes (1 MiB and at least one slab)");
  }
  if (size_ / slabSize_ > UINT32_MAX) {
    refuse(std::to_string(size_ / slabSize_) + " slabs are more than a slab record index holds; raise the slab size");
  }
  if (size_ > maxSize()) {
    refuse("size " + formatSizeApprox(size_) + " is above the largest persistent tier, " + formatSizeApprox(maxSize()) +
           " (one libpmemobj allocation holds the slab area); split it into several tiers");
  }
  const std::string dir = parentDir(path_);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) refuse("directory '" + dir + "' of the pool file does not exist");
    refuse("cannot stat directory '" + dir + "': " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) refuse("'" + dir + "' (the pool file's directory) is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    refuse("directory '" + dir + "' of the pool file is not writable: " + std::strerror(errno));
  }
}

void PersistentPmemTier::checkOwner(const struct stat& st) const {
  // A pool is trusted only if this user made it: a file another user
  // planted (or can read or write) could serve forged items, or learn the
  // cache's values.
  if (st.st_uid != ::geteuid()) {
    refuse("is not owned by this process's user (" + userName(::geteuid()) + "): " + describeOwner(st) +
           "; refused: a pool file must belong to the user that runs the cache");
  }
  if (st.st_size > 0 && (st.st_mode & 077) != 0) {
    refuse("is accessible to group or others: " + describeOwner(st) +
           "; refused: a pool holds the cache's values and its commit key, so it must be private (chmod 600)");
  }
}

void PersistentPmemTier::removeLocked(FileLock& lock, const std::string& why) {
  // Unlinked while the lock is held: no other open can be using this file,
  // and none can take it between the check and the removal.
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
    refuse("cannot remove the pool to replace it (" + why + "): " + std::strerror(errno));
  }
  lock.close();
}

void PersistentPmemTier::rebuildLocked(FileLock& lock, const std::string& reason) {
  removeLocked(lock, reason);
  createPool();
  openReport_ = "rebuilt: " + reason;
}

void PersistentPmemTier::createPool() {
  const uint64_t fileSize = poolFileSize(size_, slabSize_);
  const std::string dir = parentDir(path_);
  const std::string base = path_.substr(path_.find_last_of('/') == std::string::npos ? 0 : path_.find_last_of('/') + 1);
  removeStaleTemporaries(dir, base);
  // The pool is built in an unnamed file (O_TMPFILE) and linked into place
  // when complete: a crash while building leaves nothing behind, and the
  // link never replaces a file, so of two processes creating the same pool
  // at once exactly one wins. File systems without O_TMPFILE get a named
  // temporary, "<path>.creating.<pid>", removed by later creations once its
  // process is gone.
  const std::string named = path_ + ".creating." + std::to_string(::getpid());
  int tmpFd = -1;
  std::string tmp;  // the path PMDK builds the pool at
  auto openTemporary = [&](uint64_t bytes) {
    tmpFd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (tmpFd >= 0) {
      tmp = "/proc/self/fd/" + std::to_string(tmpFd);
    } else {
      ::unlink(named.c_str());
      tmpFd = ::open(named.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
      if (tmpFd < 0) {
        refuse("directory '" + dir + "' of the pool file is not writable: cannot create a file in it: " +
               std::strerror(errno));
      }
      tmp = named;
    }
    // umask may have narrowed the mode; never widened, but state it exactly.
    ::fchmod(tmpFd, 0600);
    if (::ftruncate(tmpFd, static_cast<off_t>(bytes)) != 0) {
      const int err = errno;
      ::close(tmpFd);
      if (tmp == named) ::unlink(named.c_str());
      refuse("cannot size the new pool file to " + formatSizeApprox(bytes) + ": " + std::strerror(err));
    }
  };
  auto dropTemporary = [&] {
    if (tmp == named) ::unlink(named.c_str());
    if (tmpFd >= 0) ::close(tmpFd);
    tmpFd = -1;
  };
  uint64_t trySize = fileSize;
  for (int attempt = 0;; ++attempt) {
    openTemporary(trySize);
    // After the first create, which tells whether the directory takes a
    // file at all (access() says yes to root everywhere); the file is
    // sparse so far.
    struct statvfs vfs {};
    if (attempt == 0 && ::statvfs(dir.c_str(), &vfs) == 0) {
      const uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
      if (avail < fileSize) {
        dropTemporary();
        refuse("not enough space in '" + dir + "': the pool needs " + formatSizeApprox(fileSize) + ", " + formatSizeApprox(avail) + " free");
      }
    }
    try {
      // Size 0: PMDK formats the file as it is (the unnamed file is reached
      // through /proc/self/fd).
      PmemObjPool pool = PmemObjPool::create(tmp, pmem_layout::kPoolLayoutName, 0, 0600);
      auto* h = static_cast<PoolHeader*>(pool.root(sizeof(PoolHeader)));
      const uint64_t recordsBytes = uint64_t{slabCount_} * sizeof(SlabRecordSlot);
      const PmemObjPool::Object records = pool.allocate(recordsBytes, pmem_layout::kRecordsTypeNum, true);
      PmemObjPool::Object area;
      try {
        area = pool.allocate(size_ + kSlabAreaAlignment, pmem_layout::kSlabAreaTypeNum, false);
      } catch (const PmemObjError& e) {
        if (e.errnum() != ENOMEM || attempt >= 3) throw;
        // poolFileSize() fell short for this PMDK: grow and try again.
        pool.close();
        dropTemporary();
        trySize += alignUp(trySize / 16, kSlabAreaAlignment);
        continue;
      }
      const auto areaAddr = reinterpret_cast<uintptr_t>(pool.base() + area.offset);
      const uint64_t aligned = alignUp(areaAddr, kSlabAreaAlignment) - reinterpret_cast<uintptr_t>(pool.base());
      PoolHeader hdr {};
      std::memcpy(hdr.signature, pmem_layout::kSignature, sizeof hdr.signature);
      hdr.version = pmem_layout::kLayoutVersion;
      hdr.headerSize = sizeof(PoolHeader);
      hdr.slabSize = slabSize_;
      hdr.slabCount = slabCount_;
      hdr.fingerprint = fingerprint_;
      hdr.poolSize = pool.fileSize();
      hdr.recordsObject = records.offset;
      hdr.recordsBytes = recordsBytes;
      hdr.slabAreaObject = area.offset;
      hdr.slabAreaOffset = aligned;
      hdr.commitKey = randomKey();
      hdr.checksum = pmem_layout::headerChecksum(hdr);
      hdr.clean = pmem_layout::kClean;
      std::memcpy(h, &hdr, sizeof hdr);
      pool.persist(h, sizeof hdr);
      break;
    } catch (const PmemObjError& e) {
      dropTemporary();
      refuse("cannot create the pool: " + std::string(e.what()));
    }
  }
  // Linked, never renamed over: an existing file at the path (another
  // process's pool, created meanwhile) is left alone and this open refused.
  const int rc = tmp == named ? ::link(named.c_str(), path_.c_str())
                              : ::linkat(AT_FDCWD, tmp.c_str(), AT_FDCWD, path_.c_str(), AT_SYMLINK_FOLLOW);
  const int err = errno;
  dropTemporary();
  if (rc != 0) {
    if (err == EEXIST) {
      refuse("another open created the pool file at the same moment; this one is refused (the pool is in use)");
    }
    refuse("cannot link the new pool into place: " + std::string(std::strerror(err)));
  }
  // Reopen through the same checks as any existing pool: what creation
  // wrote is what open accepts.
  FileLock lock(path_);
  if (lock.fd() < 0) refuse("cannot open the pool just created: " + std::string(std::strerror(lock.error())));
  if (!lock.tryLock()) refuse("the pool just created is in use by another open (created at the same moment)");
  lock.close();
  try {
    pool_ = PmemObjPool::open(path_, pmem_layout::kPoolLayoutName);
  } catch (const PmemObjError& e) {
    if (e.errnum() == EAGAIN || e.errnum() == EWOULDBLOCK) {
      refuse("the pool just created is in use by another open (created at the same moment)");
    }
    refuse("cannot open the pool just created: " + std::string(e.what()));
  }
  if (std::string reason = validate(); !reason.empty()) refuse("the pool just created fails its checks: " + reason);
  adopt();
  recovered_ = false;
  wasClean_ = false;
}

void PersistentPmemTier::rebuild(const std::string& reason) {
  if (pool_.isOpen()) {
    // libpmemobj's lock is ours: remove the file before letting go of it.
    if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
      refuse("cannot remove the pool to rebuild it (" + reason + "): " + std::strerror(errno));
    }
    pool_.close();
  } else {
    FileLock lock(path_);
    if (lock.fd() < 0) refuse("cannot open the pool to rebuild it (" + reason + "): " + std::strerror(lock.error()));
    if (!lock.tryLock()) refuse("the pool is in use (locked by another open); not rebuilt (" + reason + ")");
    removeLocked(lock, reason);
  }
  header_ = nullptr;
  records_ = nullptr;
  base_ = nullptr;
  createPool();
  openReport_ = "rebuilt: " + reason;
}

std::string PersistentPmemTier::validate() {
  const size_t rootSize = pool_.rootSize();
  if (rootSize == 0) return "not a tiercache pool: it has no header (root object)";
  if (rootSize < sizeof(PoolHeader)) {
    return "not a tiercache pool: its root object has " + std::to_string(rootSize) + " bytes, a header " +
           std::to_string(sizeof(PoolHeader));
  }
  auto* hp = static_cast<PoolHeader*>(pool_.root(sizeof(PoolHeader)));
  if (!pool_.contains(offsetOf(hp), sizeof(PoolHeader))) return "pool is corrupted: its header lies outside the file";
  const PoolHeader h = *hp;  // one snapshot: every check below reads the same bytes
  if (std::memcmp(h.signature, pmem_layout::kSignature, sizeof h.signature) != 0) {
    return "not a tiercache pool: no TIERCACHE signature in its header";
  }
  if (h.version != pmem_layout::kLayoutVersion) {
    return "pool layout version " + std::to_string(h.version) + " is not one this build reads (" +
           std::to_string(pmem_layout::kLayoutVersion) + ")";
  }
  if (h.headerSize != sizeof(PoolHeader)) {
    return "header is corrupted: header size " + std::to_string(h.headerSize) + ", this version has " +
           std::to_string(sizeof(PoolHeader));
  }
  if (h.checksum != pmem_layout::headerChecksum(h)) return "header is corrupted: checksum mismatch";
  if (h.poolSize != pool_.fileSize()) {
    if (pool_.fileSize() < h.poolSize) {
      return "pool is truncated: the file has " + std::to_string(pool_.fileSize()) + " bytes, the pool was created with " +
             std::to_string(h.poolSize);
    }
    return "pool file size changed: the file has " + std::to_string(pool_.fileSize()) +
           " bytes, the pool was created with " + std::to_string(h.poolSize);
  }
  if (h.slabSize != slabSize_) {
    return "slab size differs: the pool has " + std::to_string(h.slabSize) + "-byte slabs, the config " +
           std::to_string(slabSize_);
  }
  if (h.slabCount != slabCount_) {
    return "slab count differs: the pool has " + std::to_string(h.slabCount) + " slabs, the config " +
           std::to_string(slabCount_) + " (tier size " + std::to_string(size_) + ")";
  }
  if (h.fingerprint != fingerprint_) {
    return "layout fingerprint differs: the pool was written by another config (pool " + hex(h.fingerprint) +
           ", config " + hex(fingerprint_) + ")";
  }
  if (h.commitKey == 0) return "header is corrupted: commit key 0";
  for (uint64_t r : h.reserved) {
    if (r != 0) return "header is corrupted: reserved words are not zero";
  }
  if (h.clean != pmem_layout::kClean && h.clean != pmem_layout::kDirty) {
    return "header is corrupted: clean flag " + std::to_string(h.clean) + " (expected 0 or 1)";
  }
  // Both objects must be what PMDK's heap says is allocated, of their own
  // type (so neither can alias the other), big enough, and inside the
  // mapping; offsets alone are never trusted.
  const std::vector<PmemObjPool::Object> objects = pool_.objects();
  const uint64_t recordsBytes = uint64_t{slabCount_} * sizeof(SlabRecordSlot);
  if (h.recordsBytes != recordsBytes) {
    return "header is corrupted: slab-record array of " + std::to_string(h.recordsBytes) + " bytes, " +
           std::to_string(slabCount_) + " slabs need " + std::to_string(recordsBytes);
  }
  const PmemObjPool::Object* rec = findObject(objects, h.recordsObject, pmem_layout::kRecordsTypeNum);
  if (!rec || rec->usableSize < recordsBytes || !pool_.contains(h.recordsObject, recordsBytes) ||
      h.recordsObject % alignof(SlabRecordSlot) != 0) {
    return "pool is corrupted: the slab-record array (offset " + std::to_string(h.recordsObject) + ", " +
           std::to_string(recordsBytes) + " bytes) is not an allocated object inside the " +
           std::to_string(pool_.fileSize()) + "-byte file";
  }
  const PmemObjPool::Object* area = findObject(objects, h.slabAreaObject, pmem_layout::kSlabAreaTypeNum);
  if (!area || !pool_.contains(area->offset, area->usableSize) || h.slabAreaOffset < area->offset ||
      h.slabAreaOffset - area->offset > area->usableSize || area->usableSize - (h.slabAreaOffset - area->offset) < size_ ||
      !pool_.contains(h.slabAreaOffset, size_)) {
    return "pool is corrupted: the slab area (offset " + std::to_string(h.slabAreaOffset) + ", " +
           std::to_string(size_) + " bytes) is not inside an allocated object of the " +
           std::to_string(pool_.fileSize()) + "-byte file";
  }
  if (reinterpret_cast<uintptr_t>(pool_.base() + h.slabAreaOffset) % 4096 != 0) {
    return "pool is corrupted: the slab area offset " + std::to_string(h.slabAreaOffset) + " is not page aligned";
  }
  const auto* records = reinterpret_cast<const SlabRecordSlot*>(pool_.base() + h.recordsObject);
  for (uint32_t s = 0; s < slabCount_; ++s) {
    const SlabRecordSlot r = records[s];
    if (r.allocSize > slabSize_ || r.check != pmem_layout::recordCheck(s, r.allocSize, r.pool) ||
        (r.allocSize == 0 && r.pool != 0)) {
      return "slab record " + std::to_string(s) + " is corrupted (allocSize " + std::to_string(r.allocSize) +
             ", pool " + std::to_string(r.pool) + ", check " + std::to_string(r.check) + ")";
    }
  }
  header_ = hp;
  records_ = const_cast<SlabRecordSlot*>(records);
  base_ = pool_.base() + h.slabAreaOffset;
  return {};
}

void PersistentPmemTier::adopt() {
  wasClean_ = header_->clean == pmem_layout::kClean;
  commitKey_ = header_->commitKey;
  recovered_ = true;
  openReport_ = wasClean_ ? "opened after a clean shutdown" : "opened after a crash";
  // Dirty from now on: a crash before setClean(true) must show at the next open.
  setClean(false);
}

SlabRecord PersistentPmemTier::slabRecord(uint32_t slab) const {
  if (slab >= slabCount_) {
    throw TierError(name_, "slab record " + std::to_string(slab) + " out of range (" + std::to_string(slabCount_) +
                               " slabs)");
  }
  std::lock_guard lock(mutex_);
  const SlabRecordSlot r = records_[slab];
  return {r.allocSize, r.pool};
}

void PersistentPmemTier::setSlabRecord(uint32_t slab, SlabRecord record) {
  if (slab >= slabCount_) {
    throw TierError(name_, "slab record " + std::to_string(slab) + " out of range (" + std::to_string(slabCount_) +
                               " slabs)");
  }
  if (record.allocSize > slabSize_) {
    throw TierError(name_, "slab record " + std::to_string(slab) + ": allocSize " + std::to_string(record.allocSize) +
                               " is larger than the slab (" + std::to_string(slabSize_) + " bytes)");
  }
  const uint16_t pool = record.allocSize ? record.pool : 0;  // the unassigned record is all zero
  std::lock_guard lock(mutex_);
  try {
    pool_.transaction([&] {
      SlabRecordSlot* r = &records_[slab];
      pool_.addRange(r, sizeof *r);
      r->allocSize = record.allocSize;
      r->pool = pool;
      r->check = pmem_layout::recordCheck(slab, record.allocSize, pool);
    });
  } catch (const PmemObjError& e) {
    throw TierError(name_, "pool file '" + path_ + "': " + e.what());
  }
}

void PersistentPmemTier::setClean(bool clean) {
  std::lock_guard lock(mutex_);
  // One aligned 8-byte store: failure-atomic on its own.
  header_->clean = clean ? pmem_layout::kClean : pmem_layout::kDirty;
  pool_.persist(&header_->clean, sizeof header_->clean);
}

std::string PersistentPmemTier::describe() const {
  std::string durability;
  const char* force = std::getenv("PMEM_IS_PMEM_FORCE");
  if (fsType_ == "tmpfs") {
    durability = "tmpfs: survives kill -9, not a reboot";
  } else if (force && std::strcmp(force, "1") == 0) {
    durability = fsType_ + ", PMEM_IS_PMEM_FORCE=1: no msync, NOT durable against power loss unless real PMEM";
  } else {
    durability = fsType_ + ": durable (cache flushes on DAX PMEM, msync elsewhere)";
  }
  return "pmem-file, " + formatSizeApprox(size_) + ", persistent pool " + path_ + " (" + formatSizeApprox(mappedBytes()) +
         " file; " + durability + "), " + openReport_;
}

}  // namespace tiercache
