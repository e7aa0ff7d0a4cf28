// PmemObjPool: a small RAII owner of one libpmemobj pool (PMDK's C API).
//
// PMDK's C++ bindings (libpmemobj++) are not packaged here, so this is the
// project's own thin layer: create/open/close, the root object, atomic
// allocation, persist, and a transaction that runs a callable. Every failure
// is a PmemObjError carrying pmemobj_errormsg() and errno; nothing returns
// an error code. The header keeps <libpmemobj.h> out of installed headers:
// objects are named by their offset from the pool base, not by PMEMoid.
//
// Invariants: an open PmemObjPool owns exactly one PMEMobjpool (and PMDK's
// flock on its file) and closes it in the destructor; a moved-from or
// closed pool owns nothing. base() is the start of the mapping, which spans
// the whole pool file (fileSize() bytes, measured at open).
//
// Thread safety: persist() and transactions may run on many threads at once
// (PMDK gives each thread its own lane); a transaction must not touch ranges
// another thread's transaction touches. Opening, closing and moving are not
// thread-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

struct pmemobjpool;  // PMDK's PMEMobjpool

namespace tiercache {

class PmemObjError : public std::runtime_error {
 public:
  // what(): "<what>: <pmemobj_errormsg()>"
  PmemObjError(const std::string& what, int errnum);
  // errno at the failure (EINVAL for a bad pool, EAGAIN/EWOULDBLOCK when
  // another open holds the pool's lock, ENOENT, EACCES, ENOMEM, ...).
  int errnum() const noexcept { return errnum_; }

 private:
  int errnum_;
};

class PmemObjPool {
 public:
  // PMDK refuses pools below this (PMEMOBJ_MIN_POOL).
  static constexpr uint64_t kMinPoolSize = 8ull << 20;

  // A new pool file of exactly `size` bytes at `path`, which must not exist.
  static PmemObjPool create(const std::string& path, const std::string& layout, uint64_t size,
                            mode_t mode = 0600);
  // An existing pool; PMDK checks its own headers and the layout name and
  // runs its recovery (undo logs of interrupted transactions).
  static PmemObjPool open(const std::string& path, const std::string& layout);

  PmemObjPool() = default;
  ~PmemObjPool() { close(); }
  PmemObjPool(PmemObjPool&& other) noexcept { *this = std::move(other); }
  PmemObjPool& operator=(PmemObjPool&& other) noexcept;
  PmemObjPool(const PmemObjPool&) = delete;
  PmemObjPool& operator=(const PmemObjPool&) = delete;

  void close() noexcept;
  bool isOpen() const noexcept { return pop_ != nullptr; }

  std::byte* base() const noexcept { return reinterpret_cast<std::byte*>(pop_); }
  uint64_t fileSize() const noexcept { return fileSize_; }
  const std::string& path() const noexcept { return path_; }
  // True if [offset, offset + len) lies inside the mapping (no overflow).
  bool contains(uint64_t offset, uint64_t len) const noexcept {
    return offset <= fileSize_ && len <= fileSize_ - offset;
  }

  // The root object: created zeroed (or grown) to `size` bytes by root(),
  // 0 bytes from rootSize() while it does not exist.
  void* root(size_t size);
  size_t rootSize() const;

  struct Object {
    uint64_t offset = 0;       // from base()
    uint64_t usableSize = 0;   // what PMDK says may be used, >= the size asked for
    uint64_t typeNum = 0;      // as given to allocate()
    friend bool operator==(const Object&, const Object&) = default;
  };
  // Failure-atomic allocation (no transaction needed); zero fills with zeros.
  Object allocate(size_t size, uint64_t typeNum, bool zero);
  // Every allocated object but the root, as PMDK's heap walk finds them.
  std::vector<Object> objects() const;

  void persist(const void* addr, size_t len) const;

  // Runs fn() inside a transaction: committed when fn returns, aborted (all
  // ranges given to addRange rolled back) when fn throws, which rethrows.
  template <class F>
  void transaction(F&& fn) {
    txBegin();
    try {
      std::forward<F>(fn)();
    } catch (...) {
      txAbort();
      throw;
    }
    txCommit();
  }
  // Inside transaction(): snapshot [addr, addr + len) so an abort or a crash
  // before the commit restores it. The range must lie inside this pool.
  void addRange(void* addr, size_t len);

 private:
  void txBegin();
  void txCommit();
  void txAbort() noexcept;

  ::pmemobjpool* pop_ = nullptr;
  uint64_t fileSize_ = 0;
  std::string path_;
};

}  // namespace tiercache
