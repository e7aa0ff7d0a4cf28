// PmemFileTier: a volatile tier in one file of exactly the tier's size,
// created unlinked in a directory and mapped MAP_SHARED.
//
// The directory may be on a DAX file system (real PMEM in App Direct mode,
// e.g. /mnt/pmem0), on tmpfs (/dev/shm: emulated PMEM, i.e. DRAM) or on any
// disk file system (emulated, page cache backed). The file is unlinked
// (O_TMPFILE, or mkstemp + unlink where the file system lacks it), so
// nothing is left behind even after kill -9, and fully allocated up front
// with posix_fallocate so a full file system is an error at open, never a
// SIGBUS on first touch. mappedBytes() == file size == size(). The mapping
// is advised for huge pages, and reports whether it got them.
//
// Why not memkind's PMEM kind: memkind_create_pmem() runs a jemalloc heap
// on its file; one allocation of the whole heap size fails (in a 64 MiB
// kind the largest single allocation is 56 MiB, measured with memkind
// 1.14), so a single region of exactly the tier size does not fit it.
// See docs/tiers.md.
//
// Refused up front (TierError naming the tier): no path, missing path, path
// not a directory, size below kPmemMinSize, directory not writable (access()
// and an actual create), not enough free space.
#pragma once

#include "memory_tier.h"

namespace tiercache {

class PmemFileTier final : public MemoryTier {
 public:
  PmemFileTier(std::string name, std::string directory, uint64_t size);
  ~PmemFileTier() override;

  std::byte* base() const override { return base_; }
  uint64_t size() const override { return size_; }
  uint64_t mappedBytes() const override { return size_; }
  TierKind kind() const override { return TierKind::kPmemFile; }
  const std::string& name() const override { return name_; }
  std::string describe() const override;

  const std::string& directory() const { return directory_; }
  // Size of the backing file as the file system reports it now (fstat),
  // and the bytes it has allocated (st_blocks * 512).
  uint64_t fileBytes() const;
  uint64_t allocatedBytes() const;
  // The file system type of the directory: "tmpfs", "ext4", "xfs", ... or a
  // hex magic number; "dax" is not detectable from here (see docs/tiers.md).
  const std::string& fsType() const { return fsType_; }
  // Whether the mapping got huge (2 MiB) pages: tmpfs mounted with
  // huge=always or within_size, or a DAX file system. A tmpfs tier on
  // 4 KiB pages logs a warning, once per directory (the remedy is a remount).
  bool hugePages() const { return hugePages_; }

 private:
  std::string name_;
  std::string directory_;
  uint64_t size_;
  int fd_ = -1;
  std::byte* base_ = nullptr;
  std::string fsType_;
  bool hugePages_ = false;
};

}  // namespace tiercache
