// PmemObjPool: the RAII layer over libpmemobj's C API (create/open/close,
// root, allocation, persist, transactions, errors as exceptions).
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tiers/pmemobj_pool.h"

namespace tiercache {
namespace {

constexpr uint64_t kPoolSize = 16ull << 20;
constexpr char kLayout[] = "pmemobj-pool-test";

// A fresh directory in /dev/shm, removed with its files at scope exit.
class ShmDir {
 public:
  ShmDir() {
    std::string tmpl = "/dev/shm/tiercache-pmemobj-test-XXXXXX";
    if (!mkdtemp(tmpl.data())) std::abort();
    path_ = tmpl;
  }
  ~ShmDir() {
    if (DIR* d = ::opendir(path_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) ::unlink((path_ + "/" + e->d_name).c_str());
      }
      ::closedir(d);
    }
    ::rmdir(path_.c_str());
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct Root {
  uint64_t a;
  uint64_t b;
  char text[48];
};

TEST(PmemObjPool, CreateWriteRootPersistReopenReadsTheSameBytes) {
  ShmDir dir;
  const std::string path = dir.file("pool");
  {
    PmemObjPool pool = PmemObjPool::create(path, kLayout, kPoolSize);
    ASSERT_TRUE(pool.isOpen());
    EXPECT_EQ(pool.fileSize(), kPoolSize);
    EXPECT_EQ(pool.rootSize(), 0u);
    auto* r = static_cast<Root*>(pool.root(sizeof(Root)));
    EXPECT_EQ(r->a, 0u) << "a new root object is zeroed";
    r->a = 0x1122334455667788ull;
    r->b = 42;
    std::strcpy(r->text, "written before close");
    pool.persist(r, sizeof *r);
  }
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), kPoolSize);

  PmemObjPool pool = PmemObjPool::open(path, kLayout);
  ASSERT_EQ(pool.rootSize(), sizeof(Root));
  const auto* r = static_cast<const Root*>(pool.root(sizeof(Root)));
  EXPECT_EQ(r->a, 0x1122334455667788ull);
  EXPECT_EQ(r->b, 42u);
  EXPECT_STREQ(r->text, "written before close");
  EXPECT_TRUE(pool.contains(0, kPoolSize));
  EXPECT_FALSE(pool.contains(1, kPoolSize));
  EXPECT_FALSE(pool.contains(kPoolSize, 1));
  EXPECT_FALSE(pool.contains(8, UINT64_MAX)) << "offset + len must not wrap";
}

TEST(PmemObjPool, ErrorsCarryLibpmemobjMessageAndErrno) {
  ShmDir dir;
  const std::string path = dir.file("pool");
  try {
    PmemObjPool::create(path, kLayout, 1 << 20);
    FAIL() << "a 1 MiB pool was created";
  } catch (const PmemObjError& e) {
    EXPECT_NE(std::string(e.what()).find("pmemobj_create '" + path + "'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("smaller than"), std::string::npos) << e.what();
  }
  { PmemObjPool created = PmemObjPool::create(path, kLayout, kPoolSize); }
  try {
    PmemObjPool::create(path, kLayout, kPoolSize);
    FAIL() << "create over an existing file succeeded";
  } catch (const PmemObjError& e) {
    EXPECT_EQ(e.errnum(), EEXIST) << e.what();
  }
  try {
    PmemObjPool::open(path, "another-layout");
    FAIL() << "opened with the wrong layout name";
  } catch (const PmemObjError& e) {
    EXPECT_EQ(e.errnum(), EINVAL);
    EXPECT_NE(std::string(e.what()).find("wrong layout"), std::string::npos) << e.what();
  }
  try {
    PmemObjPool::open(dir.file("missing"), kLayout);
    FAIL() << "opened a missing file";
  } catch (const PmemObjError& e) {
    EXPECT_EQ(e.errnum(), ENOENT) << e.what();
  }
}

TEST(PmemObjPool, SecondOpenOfAnOpenPoolIsRefusedByItsLock) {
  ShmDir dir;
  const std::string path = dir.file("pool");
  PmemObjPool pool = PmemObjPool::create(path, kLayout, kPoolSize);
  try {
    PmemObjPool::open(path, kLayout);
    FAIL() << "a pool was opened twice";
  } catch (const PmemObjError& e) {
    EXPECT_TRUE(e.errnum() == EAGAIN || e.errnum() == EWOULDBLOCK) << e.errnum() << " " << e.what();
  }
  pool.close();
  EXPECT_FALSE(pool.isOpen());
  EXPECT_NO_THROW(PmemObjPool::open(path, kLayout)) << "close() releases the lock";
}

TEST(PmemObjPool, MoveTransfersOwnershipAndDestructorCloses) {
  ShmDir dir;
  const std::string path = dir.file("pool");
  {
    PmemObjPool a = PmemObjPool::create(path, kLayout, kPoolSize);
    std::byte* base = a.base();
    PmemObjPool b(std::move(a));
    EXPECT_FALSE(a.isOpen());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
    EXPECT_EQ(a.base(), nullptr);
    ASSERT_TRUE(b.isOpen());
    EXPECT_EQ(b.base(), base);
    EXPECT_EQ(b.path(), path);
    PmemObjPool c;
    c = std::move(b);
    EXPECT_FALSE(b.isOpen());  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(c.base(), base);
  }
  EXPECT_NO_THROW(PmemObjPool::open(path, kLayout)) << "the destructor of the last owner closed the pool";
}

TEST(PmemObjPool, AllocateListsObjectsAndZeroes) {
  ShmDir dir;
  PmemObjPool pool = PmemObjPool::create(dir.file("pool"), kLayout, kPoolSize);
  pool.root(64);
  const PmemObjPool::Object small = pool.allocate(1000, 1, true);
  const PmemObjPool::Object big = pool.allocate(4 << 20, 2, false);
  EXPECT_GE(small.usableSize, 1000u);
  EXPECT_GE(big.usableSize, 4u << 20);
  EXPECT_TRUE(pool.contains(small.offset, small.usableSize));
  EXPECT_TRUE(pool.contains(big.offset, big.usableSize));
  const auto* p = reinterpret_cast<const unsigned char*>(pool.base() + small.offset);
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(p[i], 0) << "byte " << i << " of a zeroed allocation";
  const auto objects = pool.objects();
  ASSERT_EQ(objects.size(), 2u) << "the root object is not listed, the two allocations are";
  EXPECT_NE(std::find(objects.begin(), objects.end(), small), objects.end());
  EXPECT_NE(std::find(objects.begin(), objects.end(), big), objects.end());
  try {
    pool.allocate(64ull << 20, 3, false);
    FAIL() << "a 64 MiB object fit in a 16 MiB pool";
  } catch (const PmemObjError& e) {
    EXPECT_EQ(e.errnum(), ENOMEM) << e.what();
  }
}

TEST(PmemObjPool, TransactionCommitsAndRollsBackWhenTheCallableThrows) {
  ShmDir dir;
  PmemObjPool pool = PmemObjPool::create(dir.file("pool"), kLayout, kPoolSize);
  auto* r = static_cast<Root*>(pool.root(sizeof(Root)));
  pool.transaction([&] {
    pool.addRange(r, sizeof *r);
    r->a = 1;
    r->b = 2;
  });
  EXPECT_EQ(r->a, 1u);
  EXPECT_EQ(r->b, 2u);
  EXPECT_THROW(pool.transaction([&] {
                 pool.addRange(r, sizeof *r);
                 r->a = 100;
                 r->b = 200;
                 throw std::logic_error("give up");
               }),
               std::logic_error);
  EXPECT_EQ(r->a, 1u) << "the aborted transaction restored the snapshot";
  EXPECT_EQ(r->b, 2u);
  // The pool is usable after an abort: the next transaction commits.
  pool.transaction([&] {
    pool.addRange(&r->b, sizeof r->b);
    r->b = 3;
  });
  EXPECT_EQ(r->b, 3u);
}

TEST(PmemObjPool, AddRangeOutsideThePoolThrowsAndAborts) {
  ShmDir dir;
  PmemObjPool pool = PmemObjPool::create(dir.file("pool"), kLayout, kPoolSize);
  auto* r = static_cast<Root*>(pool.root(sizeof(Root)));
  uint64_t notInPool = 7;
  EXPECT_THROW(pool.transaction([&] {
                 pool.addRange(r, sizeof *r);
                 r->a = 9;
                 pool.addRange(&notInPool, sizeof notInPool);
               }),
               PmemObjError);
  EXPECT_EQ(r->a, 0u) << "the failed transaction was rolled back";
}

// A process that dies inside a transaction: at the next open PMDK's
// recovery restores what the transaction snapshotted.
TEST(PmemObjPool, TransactionInterruptedByKillIsRolledBackAtOpen) {
  ShmDir dir;
  const std::string path = dir.file("pool");
  {
    PmemObjPool pool = PmemObjPool::create(path, kLayout, kPoolSize);
    auto* r = static_cast<Root*>(pool.root(sizeof(Root)));
    r->a = 11;
    pool.persist(r, sizeof *r);
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    PmemObjPool pool = PmemObjPool::open(path, kLayout);
    auto* r = static_cast<Root*>(pool.root(sizeof(Root)));
    pool.transaction([&] {
      pool.addRange(r, sizeof *r);
      r->a = 99;
      pool.persist(r, sizeof *r);  // the new value reaches the medium, uncommitted
      ::raise(SIGKILL);
    });
    ::_exit(3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child status " << status;
  ASSERT_EQ(WTERMSIG(status), SIGKILL);
  PmemObjPool pool = PmemObjPool::open(path, kLayout);
  EXPECT_EQ(static_cast<const Root*>(pool.root(sizeof(Root)))->a, 11u);
}

}  // namespace
}  // namespace tiercache
