// FlashStore: a log-structured store of key/value entries on a file or
// block device (flash), the last level of a Cache. Not byte-addressable
// memory: the cache copies values in and out, and a read costs an I/O.
//
// Layout. The device is a 4 KiB superblock (signature, version, geometry, a
// random format id, clean flag) followed by regions of region_size bytes.
// Items are appended to an in-DRAM buffer of the active region; a full
// buffer is written whole, sequentially, and the next region becomes
// active: the next in ring order (FIFO) or the least recently read (LRU).
// A region taken again is reclaimed first: its entries leave the index,
// except those hit since written, which are appended again (reinserted).
//
// Entry (40-byte header, then key and value, padded to 16 bytes): magic,
// kind (value or tombstone), sizes, memcached flags and deadline, a
// store-wide sequence number and an XXH3 checksum of header, key and value
// seeded with the format id and the region's sequence number. So an entry
// left by an earlier use of a region, or by an earlier format, never checks
// out as part of the current one.
//
// Index: FlashIndex (12 bytes per item, keyed by hash and tag). A read goes
// to the region buffer while the region is active, else to the device in
// 4 KiB-aligned spans; the key and checksum are verified on every read: a
// colliding key misses, a corrupted entry is dropped and counted, neither
// is ever returned. Regions carry an epoch (odd while in the DRAM buffer,
// bumped when written and when reused) that a read checks around its I/O,
// so a region rewritten under a read is read again, never mixed.
//
// Recovery (every open of an existing store, clean or after kill -9): the
// regions' headers are read, regions replayed in sequence order, each entry
// up to the first one that does not check out; a later entry of a key
// replaces an earlier one, a tombstone removes it. When the store is a
// regular file, the write buffer is a shared mapping of <path>.wbuf: what
// was appended to it before a kill -9 is in the page cache, and recovery
// writes its checked entries to their region before the replay. A power
// loss (or a block device, whose buffer is anonymous) loses what was not
// yet written (see docs/design.md, "Flash").
//
// Concurrency: inserts and removes are serialized by one append mutex (the
// log order is the index order); lookups take it only to copy from a DRAM
// buffer. Region I/O runs outside it: there are two buffers, so a full one
// is sealed (appends go on in the other) and written, and the next region
// to reuse is read back, by the thread whose append sealed it, after its
// own operation and without the lock (with background eviction on, the
// evictor); the seal that reuses that region only drops its entries from
// the index. An append waits only when the other buffer is still being
// written or the next region still read. Any number of threads may call
// anything.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "flash_admission.h"
#include "flash_options.h"
#include "flash_device.h"
#include "flash_index.h"

namespace tiercache {

// Counters of one store, monotonic (the cache's flash rows read them).
struct FlashCounters {
  std::atomic<uint64_t> inserts{0};        // entries accepted
  std::atomic<uint64_t> item_bytes{0};     // key + value bytes accepted
  std::atomic<uint64_t> bytes_written{0};  // bytes written to the device
  std::atomic<uint64_t> reads{0};          // device reads
  std::atomic<uint64_t> read_batches{0};   // lookupMany submissions (reads in flight together)
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> misses{0};
  std::atomic<uint64_t> checksum_failures{0};  // entries dropped: bad magic or checksum
  std::atomic<uint64_t> key_mismatches{0};     // tag collisions caught by the key compare
  std::atomic<uint64_t> regions_reclaimed{0};
  std::atomic<uint64_t> reinserted{0};
  std::atomic<uint64_t> admission_rejects{0};
  std::atomic<uint64_t> rejects_other{0};  // too large, or index bucket full
  std::atomic<uint64_t> removes{0};        // entries invalidated (tombstones)
  std::atomic<uint64_t> recovered{0};      // entries indexed by recovery
};

struct FlashItem {
  std::string value;
  uint32_t flags = 0;
  uint32_t expiry = 0;  // the cache's deadline (0: none)
};

using FlashHashFn = uint64_t (*)(std::string_view key);

class FlashStore {
 public:
  static constexpr size_t kEntryHeader = 40;
  static constexpr size_t kRegionHeader = 32;
  // Region writes are cut into pieces this large so that several are in
  // flight at the engine's queue depth (tools/tiercache_flash_bench.cc
  // writes the same way).
  static constexpr size_t kWritePiece = 1u << 20;

  enum class InsertResult : uint8_t { kStored, kRejected, kTooLarge, kIndexFull };

  // Opens (recovering what is there) or formats the store. Throws
  // std::runtime_error for an unusable device or geometry. hash: nullptr
  // for XXH3 (a test passes one that collides).
  explicit FlashStore(const FlashStoreConfig& config, FlashHashFn hash = nullptr);
  // close().
  ~FlashStore();
  FlashStore(const FlashStore&) = delete;
  FlashStore& operator=(const FlashStore&) = delete;

  // Appends the item and points the index at it (replacing an older copy).
  // wasHit: the item was read while in memory (admit_hit_only).
  InsertResult insert(std::string_view key, std::string_view value, uint32_t flags = 0, uint32_t expiry = 0,
                      bool wasHit = true);
  // The newest copy of key, verified; nullopt on a miss.
  // *where: the entry's location (for removeIfAt).
  std::optional<FlashItem> lookup(std::string_view key, FlashLoc* where = nullptr);
  // The lookup of every key at once: the device reads of the batch go to
  // the engine in one run() (one io_uring submission up to the queue
  // depth, or the pool's threads in parallel), then each entry is verified
  // as lookup() does, with the same counters. out[i] and where[i] (spans of
  // keys.size(), else std::invalid_argument) get key i's item and location.
  // An entry in the active buffer, or in a region rewritten under the read,
  // takes the single-key path.
  void lookupMany(std::span<const std::string_view> keys, std::span<std::optional<FlashItem>> out,
                  std::span<FlashLoc> where);
  // Whether the index has an entry for key's tag (no I/O; may be another key's).
  bool mayContain(std::string_view key) const;
  // Drops key's entry (and logs a tombstone); false when there was none.
  bool remove(std::string_view key);
  // Drops key's entry only if it is still the one at `where` (a lookup's).
  bool removeIfAt(std::string_view key, const FlashLoc& where);
  // Drops every entry (memcached flush_all); a marker in the log keeps
  // recovery from bringing them back.
  void removeAll();
  // Writes the active buffer out (its region stays active): what is in the
  // store so far survives a crash.
  void flush();
  // Writes the buffer and marks the store clean; later calls do nothing.
  void close();

  const FlashCounters& counters() const { return counters_; }
  uint64_t items() const { return index_->size(); }
  uint64_t indexBytes() const { return index_->memoryBytes(); }
  uint64_t regionCount() const { return regions_; }
  const char* engineName() const { return engine_->name(); }
  bool directIo() const { return device_.directIo(); }
  // What open found: "formatted", or "recovered N entries from R regions (clean|unclean shutdown)".
  const std::string& openReport() const { return openReport_; }
  const FlashStoreConfig& config() const { return config_; }

 private:
  struct Reinsert;
  // An entry of a region read back for reclaim: where it is, in the
  // region and in scratch_, its key's hash and size, and its kind.
  struct VictimEntry {
    uint64_t hash;
    FlashLoc loc;
    uint32_t off;
    uint16_t keySize;
    bool tombstone;
  };
  uint64_t regionStart(uint64_t r) const { return FlashDevice::kAlign + r * config_.region_size; }
  uint64_t regionOf(uint64_t addr) const { return (addr - FlashDevice::kAlign) / config_.region_size; }
  uint64_t seedOf(uint64_t regionSeq) const { return formatId_ ^ (regionSeq * 0x9E3779B97F4A7C15ull); }
  void format();
  void recover(bool clean);
  void writeSuperblock(bool clean);
  // appendMu_, once an append of n bytes fits the active buffer or its
  // seal need not wait for I/O (the other buffer written, the next region
  // read back). Every appending operation takes the lock here and ends with
  // finishIo().
  std::unique_lock<std::mutex> lockForAppend(size_t n);
  // Appends one entry to the active buffer (sealing it first when full);
  // appendMu_ held (from lockForAppend). Returns its location.
  FlashLoc appendLocked(uint8_t kind, std::string_view key, std::string_view value, uint32_t flags, uint32_t expiry);
  // Switches to the other buffer and the next region (no I/O when that
  // region was read back ahead); the full buffer waits for finishIo().
  // Leaves room for an entry of `reserve` bytes (the append that sealed).
  void sealAndAdvanceLocked(size_t reserve);
  // The I/O an operation left (the sealed buffer's write, then the next
  // region's read-back), with appendMu_ released around it; lk is held again
  // on return.
  void finishIo(std::unique_lock<std::mutex>& lk);
  // Waits (lk released) until no region write or read-back is in flight,
  // doing a pending write itself.
  void drainIo(std::unique_lock<std::mutex>& lk);
  void writeActiveLocked();
  uint64_t pickVictimLocked() const;
  // Reads region r into scratch_ and lists its value entries and
  // tombstones; needs no lock (nobody writes r meanwhile, one reclaim at a
  // time).
  void readVictim(uint64_t r, std::vector<VictimEntry>& entries);
  // Whether a region written before r still holds entries: then r, reclaimed
  // out of write order (lru), must pass on its last word about each key it
  // holds (a tombstone of a key no longer indexed, an indexed value it
  // drops) as a tombstone, or recovery would find the older region's copy.
  bool olderRegionLiveLocked(uint64_t r) const;
  // The region written longest ago (or one never written), not the active one.
  uint64_t oldestRegionLocked() const;
  // Drops the listed entries of r (still in scratch_) from the index,
  // except the hit ones (into hot, to append again). Under the lock and in
  // the same hold as r's activation: an entry dropped earlier would let a
  // later set of its key skip the tombstone, and r's old contents, still on
  // the device, bring the older value back after a kill. carry: the keys
  // whose tombstone r must pass on (olderRegionLiveLocked), when `carry`.
  void dropVictimLocked(uint64_t r, const std::vector<VictimEntry>& entries, std::vector<Reinsert>& hot, bool carrying,
                        std::vector<std::string>& carry);
  void activateLocked(uint64_t r);
  void tombstoneLocked(std::string_view key);
  char* slotBuf(int slot) const { return wbuf_ + static_cast<size_t>(slot) * slotLen(); }
  size_t slotLen() const { return config_.region_size + FlashDevice::kAlign; }
  // The buffer holding region r while its epoch is odd.
  const char* bufferOfLocked(uint64_t r) const { return slotBuf(slotRegion_[0] == r ? 0 : 1); }
  // Verifies the entry at p (read from loc, region sequence rseq) as key's;
  // counts a hit, checksum failure or key mismatch (not the miss). Sets
  // *stale instead of counting a failure when the index no longer holds
  // loc: the read raced its region's reclaim (read the key again).
  std::optional<FlashItem> checkEntry(std::string_view key, uint64_t h, const FlashLoc& loc, uint64_t rseq,
                                      const char* p, FlashLoc* where, bool* stale);
  void openWriteBuffer();
  void setTrailerLocked(int slot, bool valid);
  size_t checkedPrefix(const char* p, uint64_t regionSeq) const;
  uint64_t replayWriteBuffer();
  uint64_t replayWriteBufferSlot(int slot);
  void ioOrThrow(IoRequest::Op op, char* buf, uint64_t offset, size_t len);

  const FlashStoreConfig config_;
  const FlashHashFn hash_;
  FlashDevice device_;
  std::unique_ptr<IoEngine> engine_;
  std::unique_ptr<FlashIndex> index_;
  FlashAdmission admission_;
  uint64_t regions_ = 0;
  uint64_t formatId_ = 0;
  std::string openReport_;
  FlashCounters counters_;

  // Per region: epoch (odd: in the DRAM buffer), its sequence number (0:
  // never written) and when it was last read (a logical clock, for LRU).
  std::unique_ptr<std::atomic<uint64_t>[]> epoch_;
  std::unique_ptr<std::atomic<uint64_t>[]> regionSeq_;
  std::unique_ptr<std::atomic<uint64_t>[]> lastRead_;
  std::atomic<uint64_t> clock_{1};

  std::mutex appendMu_;             // everything below
  std::condition_variable ioDone_;  // a region write or reclaim ended
  AlignedBuffer buf_;               // the write buffers when they are anonymous
  // Two slots, each a region's contents, then a trailer page: the active
  // region's, and the sealed one's until it is written.
  char* wbuf_ = nullptr;
  size_t wbufLen_ = 0;
  int wbufFd_ = -1;        // the write-buffer file (<path>.wbuf), or -1
  AlignedBuffer scratch_;  // a reclaimed region, read back (one reclaim at a time)
  uint64_t slotRegion_[2] = {UINT64_MAX, UINT64_MAX};
  int activeSlot_ = 0;
  uint64_t active_ = 0;
  size_t used_ = 0;  // bytes of the active slot in use
  // The sealed buffer: waiting for its write (sealPending_), being written
  // (writeInFlight_).
  bool sealPending_ = false;
  bool writeInFlight_ = false;
  uint64_t sealedRegion_ = 0;
  size_t sealedUsed_ = 0;
  // The next region to reuse, read back ahead (its entries listed, still
  // indexed: they are dropped when it becomes active), or being read.
  bool prepared_ = false;
  bool prepInFlight_ = false;
  uint64_t preparedRegion_ = 0;
  std::vector<VictimEntry> preparedEntries_;
  uint64_t nextRegionSeq_ = 1;
  uint64_t nextSeq_ = 1;
  bool closed_ = false;
};

}  // namespace tiercache
