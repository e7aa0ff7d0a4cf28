// PersistentPmemTier: a pmem-file tier whose slabs survive the process, kept
// in one libpmemobj pool file at TierConfig::path (a FILE path).
//
// Pool layout (see docs/persistence.md, "The pool file"):
//   root object   pmem_layout::PoolHeader: signature "TIERCACHE", layout
//                 version, slab size and count, config fingerprint, pool
//                 size, where the two objects below are, a checksum over all
//                 of that, and the clean flag (outside the checksum).
//   object 1      pmem_layout::SlabRecordSlot[slab count], one per slab.
//   object 2      the slab area: size() bytes starting at a 2 MiB boundary
//                 of the mapping (so a DAX mapping can use huge pages),
//                 inside one allocation of size() + kSlabAreaAlignment.
//
// Open: a missing (or empty) file is built in an unnamed file (O_TMPFILE)
// and linked into place without replacing anything, so a crash during
// creation leaves nothing and of two racing creators one wins. A link at
// the path, a file of another user or one others may access is refused;
// the pool's lock is tested before anything may be rebuilt; PMDK's own
// metadata is checked (libpmempool, then a probe open in a child process)
// before pmemobj_open in this process. An existing file is opened and everything read from it
// is checked before use (header fields, the checksum, slab geometry and
// fingerprint against the config, that both objects are allocated objects
// of the pool and lie inside the mapping, every record); any mismatch is a
// TierError naming the tier, the file and the reason, or, with
// rebuildOnMismatch, the file is replaced by a fresh pool (openReport()
// "rebuilt: <reason>"). A file that is not a libpmemobj pool at all is never
// replaced: it is not ours to delete.
//
// Durability of persist() depends on the medium (stated by describe()):
// real PMEM (fsdax/devdax): durable; tmpfs: survives kill -9, not a reboot;
// a disk file: durable through msync (slow), unless PMEM_IS_PMEM_FORCE=1,
// which skips msync and is then NOT durable against power loss.
//
// Thread safety: persist(), slabRecord(), setSlabRecord() and setClean() may
// be called from any thread; record and flag updates are serialised here.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "memory_tier.h"
#include "pmemobj_pool.h"
#include "pool_records.h"

namespace tiercache {

// The durable layout, public so that tests and the fuzz target can build
// and corrupt pools byte by byte. All fields are little-endian host order.
namespace pmem_layout {

inline constexpr char kPoolLayoutName[] = "tiercache";  // libpmemobj's layout string
inline constexpr char kSignature[16] = "TIERCACHE";
// 2: 44-byte item header (expiry, flags, seq); 3: commitKey in the header,
// item checksums keyed with it and bound to the slot's position; 4: 48-byte
// item header (40-bit references: the links' high bytes), so every item
// offset moved and a version 3 pool is refused (or rebuilt when the tier
// allows), never read as version 4.
inline constexpr uint32_t kLayoutVersion = 4;
inline constexpr uint64_t kRecordsTypeNum = 1;
inline constexpr uint64_t kSlabAreaTypeNum = 2;
inline constexpr uint64_t kClean = 1;
inline constexpr uint64_t kDirty = 0;

struct PoolHeader {
  char signature[16];       // kSignature, NUL padded
  uint32_t version;         // kLayoutVersion
  uint32_t headerSize;      // sizeof(PoolHeader)
  uint64_t slabSize;
  uint64_t slabCount;
  uint64_t fingerprint;     // PersistentOpenOptions::fingerprint at creation
  uint64_t poolSize;        // the pool file's size at creation
  uint64_t recordsObject;   // offset (from the pool base) of the record array
  uint64_t recordsBytes;    // slabCount * sizeof(SlabRecordSlot)
  uint64_t slabAreaObject;  // offset of the allocation holding the slab area
  uint64_t slabAreaOffset;  // offset of the slab area itself (aligned)
  uint64_t commitKey;       // random secret drawn at creation (never 0)
  uint64_t reserved[6];     // zero
  uint64_t checksum;        // headerChecksum(): everything above
  uint64_t clean;           // kClean or kDirty; persisted on its own
};
static_assert(sizeof(PoolHeader) == 160);

// One slab's durable record. An all-zero slot is the unassigned record.
struct SlabRecordSlot {
  uint32_t allocSize;
  uint16_t pool;
  uint16_t check;  // recordCheck(slab, allocSize, pool)
};
static_assert(sizeof(SlabRecordSlot) == 8);

uint64_t headerChecksum(const PoolHeader& h);
// A 16-bit check of one record that also binds it to its slab index, and is
// 0 for the unassigned record so a zeroed array is valid.
uint16_t recordCheck(uint64_t slab, uint32_t allocSize, uint16_t pool);

}  // namespace pmem_layout

// The tier's memory (MemoryTier) and its pool's records (PoolRecords) are
// two interfaces of one object, because both live in the one pool file;
// the cache holds them apart (openPersistentTier).
class PersistentPmemTier final : public MemoryTier, public PoolRecords {
 public:
  static constexpr uint64_t kSlabAreaAlignment = 2ull << 20;
  static constexpr uint64_t kMinSize = 1ull << 20;
  // The largest size(): one libpmemobj allocation (PMEMOBJ_MAX_ALLOC_SIZE,
  // just under 16 GiB) holds the slab area and its alignment pad.
  static uint64_t maxSize();
  // The pool file created for a slab area of `size` bytes in slabs of
  // `slabSize`: the area, its alignment pad, the records and libpmemobj's
  // own metadata (pool header, lanes, zone headers) with some slack.
  static uint64_t poolFileSize(uint64_t size, uint64_t slabSize);

  // cfg.size is rounded down to whole slabs; cfg.path is the pool file.
  // Throws TierError (see the top of this file).
  PersistentPmemTier(const TierConfig& cfg, uint64_t slabSize, const PersistentOpenOptions& options = {});
  ~PersistentPmemTier() override = default;

  // MemoryTier
  std::byte* base() const override { return base_; }
  uint64_t size() const override { return size_; }
  // The pool file's size: the slab area plus the header, the records and
  // libpmemobj's metadata (a few MiB more than size()).
  uint64_t mappedBytes() const override { return pool_.fileSize(); }
  TierKind kind() const override { return TierKind::kPmemFile; }
  const std::string& name() const override { return name_; }
  std::string describe() const override;
  bool persistent() const override { return true; }
  void persist(const void* addr, size_t len) const override { pool_.persist(addr, len); }

  // PoolRecords
  bool recovered() const override { return recovered_; }
  // The clean flag as found at open; false for a created or rebuilt pool.
  bool wasCleanShutdown() const override { return wasClean_; }
  std::string openReport() const override { return openReport_; }
  // Both throw TierError for slab >= slabCount(); setSlabRecord also for
  // record.allocSize > the slab size.
  SlabRecord slabRecord(uint32_t slab) const override;
  void setSlabRecord(uint32_t slab, SlabRecord record) override;
  void setClean(bool clean) override;
  uint64_t commitKey() const override { return commitKey_; }

  const std::string& path() const { return path_; }
  uint64_t slabSize() const { return slabSize_; }
  uint32_t slabCount() const { return slabCount_; }
  uint64_t fingerprint() const { return fingerprint_; }
  // "tmpfs", "ext4", "xfs", ... of the pool file's file system.
  const std::string& fsType() const { return fsType_; }
  // Where the durable structures are, as offsets into the pool file.
  uint64_t headerOffset() const { return offsetOf(header_); }
  uint64_t recordsOffset() const { return offsetOf(records_); }
  uint64_t slabAreaOffset() const { return offsetOf(base_); }

 private:
  // The pool file's descriptor (opened without following links) and an
  // flock on it, as libpmemobj takes; defined in the .cc.
  class FileLock;
  void checkConfig() const;
  void open();
  // Refuses a file another user owns, or a non-empty one group or others
  // may access, naming its owner and mode.
  void checkOwner(const struct stat& st) const;
  void removeLocked(FileLock& lock, const std::string& why);
  void rebuildLocked(FileLock& lock, const std::string& reason);
  void createPool();
  // Empty string: the pool is ours and matches; else the reason it is not.
  std::string validate();
  void adopt();
  void rebuild(const std::string& reason);
  [[noreturn]] void refuse(const std::string& reason) const;
  uint64_t offsetOf(const void* p) const {
    return static_cast<uint64_t>(static_cast<const std::byte*>(p) - pool_.base());
  }

  std::string name_;
  std::string path_;
  uint64_t size_ = 0;
  uint64_t slabSize_ = 0;
  uint32_t slabCount_ = 0;
  uint64_t fingerprint_ = 0;
  bool rebuildOnMismatch_ = false;

  PmemObjPool pool_;
  pmem_layout::PoolHeader* header_ = nullptr;
  pmem_layout::SlabRecordSlot* records_ = nullptr;
  std::byte* base_ = nullptr;

  uint64_t commitKey_ = 0;
  bool recovered_ = false;
  bool wasClean_ = false;
  std::string openReport_;
  std::string fsType_;
  mutable std::mutex mutex_;  // record and flag updates
};

}  // namespace tiercache
