#include "pmemobj_pool.h"

#include <libpmemobj.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace tiercache {

namespace {

std::string lastMessage() {
  const char* msg = pmemobj_errormsg();
  return msg && *msg ? msg : "unknown libpmemobj error";
}

[[noreturn]] void fail(const std::string& what, int errnum) { throw PmemObjError(what, errnum); }

uint64_t sizeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

}  // namespace

PmemObjError::PmemObjError(const std::string& what, int errnum)
    : std::runtime_error(what + ": " + lastMessage()), errnum_(errnum) {}

PmemObjPool PmemObjPool::create(const std::string& path, const std::string& layout, uint64_t size, mode_t mode) {
  PmemObjPool pool;
  pool.pop_ = pmemobj_create(path.c_str(), layout.c_str(), size, mode);
  if (!pool.pop_) {
    const int e = errno;
    fail("pmemobj_create '" + path + "'", e);
  }
  pool.path_ = path;
  pool.fileSize_ = sizeOf(path);
  return pool;
}

PmemObjPool PmemObjPool::open(const std::string& path, const std::string& layout) {
  PmemObjPool pool;
  pool.pop_ = pmemobj_open(path.c_str(), layout.c_str());
  if (!pool.pop_) {
    const int e = errno;
    fail("pmemobj_open '" + path + "'", e);
  }
  pool.path_ = path;
  // PMDK maps the whole file of a single-file pool; it holds an flock on
  // it, so the size cannot change under us through another open.
  pool.fileSize_ = sizeOf(path);
  return pool;
}

PmemObjPool& PmemObjPool::operator=(PmemObjPool&& other) noexcept {
  if (this != &other) {
    close();
    pop_ = std::exchange(other.pop_, nullptr);
    fileSize_ = std::exchange(other.fileSize_, 0);
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

void PmemObjPool::close() noexcept {
  if (pop_) pmemobj_close(std::exchange(pop_, nullptr));
  fileSize_ = 0;
}

void* PmemObjPool::root(size_t size) {
  PMEMoid oid = pmemobj_root(pop_, size);
  if (OID_IS_NULL(oid)) {
    const int e = errno;
    fail("pmemobj_root of " + std::to_string(size) + " bytes in '" + path_ + "'", e);
  }
  return pmemobj_direct(oid);
}

size_t PmemObjPool::rootSize() const { return pmemobj_root_size(pop_); }

PmemObjPool::Object PmemObjPool::allocate(size_t size, uint64_t typeNum, bool zero) {
  PMEMoid oid = OID_NULL;
  const int rc = zero ? pmemobj_zalloc(pop_, &oid, size, typeNum)
                      : pmemobj_alloc(pop_, &oid, size, typeNum, nullptr, nullptr);
  if (rc != 0) {
    const int e = errno;
    fail("allocating " + std::to_string(size) + " bytes in '" + path_ + "'", e);
  }
  return {oid.off, pmemobj_alloc_usable_size(oid), typeNum};
}

std::vector<PmemObjPool::Object> PmemObjPool::objects() const {
  std::vector<Object> out;
  for (PMEMoid oid = pmemobj_first(pop_); !OID_IS_NULL(oid); oid = pmemobj_next(oid)) {
    out.push_back({oid.off, pmemobj_alloc_usable_size(oid), pmemobj_type_num(oid)});
  }
  return out;
}

void PmemObjPool::persist(const void* addr, size_t len) const { pmemobj_persist(pop_, addr, len); }

void PmemObjPool::addRange(void* addr, size_t len) {
  // NO_ABORT: report the failure here as an exception; transaction() aborts.
  if (int rc = pmemobj_tx_xadd_range_direct(addr, len, POBJ_XADD_NO_ABORT); rc != 0) {
    fail("adding " + std::to_string(len) + " bytes to a transaction in '" + path_ + "'", rc);
  }
}

void PmemObjPool::txBegin() {
  if (int rc = pmemobj_tx_begin(pop_, nullptr, TX_PARAM_NONE); rc != 0) {
    if (pmemobj_tx_stage() != TX_STAGE_NONE) pmemobj_tx_end();
    fail("beginning a transaction in '" + path_ + "'", rc);
  }
}

void PmemObjPool::txCommit() {
  // Without a jmp_buf a failed commit aborts and returns; tx_end reports it.
  if (pmemobj_tx_stage() == TX_STAGE_WORK) pmemobj_tx_commit();
  if (int rc = pmemobj_tx_end(); rc != 0) fail("committing a transaction in '" + path_ + "'", rc);
}

void PmemObjPool::txAbort() noexcept {
  if (pmemobj_tx_stage() == TX_STAGE_WORK) pmemobj_tx_abort(ECANCELED);
  pmemobj_tx_end();
}

}  // namespace tiercache
