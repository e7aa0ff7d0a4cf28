#include "flash_store.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <stdexcept>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "../common/dcheck.h"

namespace tiercache {

namespace {

constexpr uint64_t kSuperMagic = 0x31485341'4c464354ull;  // "TCFLASH1"
constexpr uint32_t kVersion = 1;
constexpr uint64_t kRegionMagic = 0x4e4f4947'4552434dull;
constexpr uint32_t kEntryMagic = 0x59544e45u;  // "ENTY"
constexpr uint8_t kKindValue = 1;
constexpr uint8_t kKindTombstone = 2;
constexpr uint8_t kKindRemoveAll = 3;  // no key: every earlier entry is gone

struct Superblock {
  uint64_t magic;
  uint32_t version;
  uint32_t clean;
  uint64_t deviceSize;
  uint64_t regionSize;
  uint64_t formatId;
  uint64_t checksum;  // of the fields above
};

struct RegionHeader {
  uint64_t magic;
  uint64_t regionSeq;
  uint64_t formatId;
  uint64_t checksum;
};
static_assert(sizeof(RegionHeader) == FlashStore::kRegionHeader);

// The last page of the write-buffer file: which region and region sequence
// number the buffer in front of it holds. Written after the buffer is
// reset, invalidated before it is, so a valid trailer never names a buffer
// that is being cleared.
constexpr uint64_t kBufferMagic = 0x46554257'4c464354ull;  // "TCFLWBUF"
struct BufferTrailer {
  uint64_t magic;
  uint64_t formatId;
  uint64_t region;
  uint64_t regionSeq;
  uint64_t checksum;  // of the fields above
};

struct EntryHeader {
  uint32_t magic;
  uint16_t keySize;
  uint8_t kind;
  uint8_t pad0;
  uint32_t valueSize;
  uint32_t flags;
  uint32_t expiry;
  uint32_t pad1;
  uint64_t seq;
  uint64_t checksum;  // XXH3 of the header (this field 0), key and value, seeded
};
static_assert(sizeof(EntryHeader) == FlashStore::kEntryHeader);

uint64_t defaultHash(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

size_t entryBytes(size_t key, size_t value) {
  const size_t n = FlashStore::kEntryHeader + key + value;
  return (n + FlashIndex::kUnit - 1) / FlashIndex::kUnit * FlashIndex::kUnit;
}

uint64_t entryChecksum(const char* entry, uint64_t seed) {
  EntryHeader h;
  std::memcpy(&h, entry, sizeof h);
  h.checksum = 0;
  // The header's hash seeds the payload's: one value covers both.
  const uint64_t head = XXH3_64bits_withSeed(&h, sizeof h, seed);
  return XXH3_64bits_withSeed(entry + sizeof h, size_t{h.keySize} + h.valueSize, head);
}

// A parsed entry at p with `room` bytes to its region's end; false when
// it is not a whole, checked entry of the region seeded `seed`.
bool parseEntry(const char* p, size_t room, uint64_t seed, EntryHeader& h) {
  if (room < sizeof h) return false;
  std::memcpy(&h, p, sizeof h);
  if (h.magic != kEntryMagic || h.kind < kKindValue || h.kind > kKindRemoveAll) return false;
  if (entryBytes(h.keySize, h.valueSize) > room) return false;
  return entryChecksum(p, seed) == h.checksum;
}

}  // namespace

struct FlashStore::Reinsert {
  uint64_t hash;
  FlashLoc from;
  std::string key;
  std::string value;
  uint32_t flags;
  uint32_t expiry;
};

FlashStore::FlashStore(const FlashStoreConfig& config, FlashHashFn hash)
    : config_(config),
      hash_(hash ? hash : &defaultHash),
      device_(config.path, config.size),
      admission_(config.admit_write_mb_per_sec, config.admit_hit_only) {
  const uint64_t rs = config_.region_size;
  if (rs < (64u << 10) || rs % FlashDevice::kAlign != 0 || rs > (1ull << 30)) {
    throw std::runtime_error("flash: region_size must be a multiple of 4 KiB between 64 KiB and 1 GiB");
  }
  if (config_.size < FlashDevice::kAlign + 2 * rs) {
    throw std::runtime_error("flash: size must hold the superblock and at least two regions");
  }
  if (config_.size > FlashIndex::kMaxAddr) throw std::runtime_error("flash: size beyond 16 TiB");
  regions_ = (config_.size - FlashDevice::kAlign) / rs;
  engine_ = openIoEngine(config_.io_engine, device_.fd(), config_.queue_depth);
  index_ = std::make_unique<FlashIndex>(config_.size / std::max<uint64_t>(config_.expected_item_size, 64));
  epoch_ = std::make_unique<std::atomic<uint64_t>[]>(regions_);
  regionSeq_ = std::make_unique<std::atomic<uint64_t>[]>(regions_);
  lastRead_ = std::make_unique<std::atomic<uint64_t>[]>(regions_);
  openWriteBuffer();
  scratch_ = allocAligned(rs);

  AlignedBuffer sb = allocAligned(FlashDevice::kAlign);
  ioOrThrow(IoRequest::Op::kRead, sb.get(), 0, FlashDevice::kAlign);
  Superblock s;
  std::memcpy(&s, sb.get(), sizeof s);
  const bool valid =
      s.magic == kSuperMagic && s.version == kVersion && s.checksum == XXH3_64bits(&s, offsetof(Superblock, checksum));
  const bool sameGeometry = valid && s.deviceSize == config_.size && s.regionSize == rs;
  if (!config_.discard_contents && sameGeometry) {
    formatId_ = s.formatId;
    recover(s.clean != 0);
  } else {
    format();
    openReport_ = valid && !config_.discard_contents ? "formatted (the store's geometry changed)" : "formatted";
  }
  std::lock_guard<std::mutex> g(appendMu_);
  writeSuperblock(false);  // dirty until close()
}

FlashStore::~FlashStore() {
  try {
    close();
  } catch (const std::exception&) {
    // A failed final write leaves the store unclean: recovery copes.
  }
  if (wbufFd_ >= 0) {
    munmap(wbuf_, wbufLen_);
    ::close(wbufFd_);
  }
}

void FlashStore::openWriteBuffer() {
  // The buffer is a shared mapping of a file next to the store when the
  // store is a regular file: its stores are in the page cache, which a
  // kill -9 does not take, so recovery finds every entry and tombstone
  // appended before the process died. Elsewhere (a block device) it is
  // anonymous memory and a kill -9 loses it.
  // Two slots (the active region's and the one being written), each
  // followed by its trailer page.
  const size_t len = 2 * slotLen();
  struct stat st {};
  if (::stat(config_.path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    const std::string path = config_.path + ".wbuf";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0 && ::ftruncate(fd, static_cast<off_t>(len)) == 0) {
      void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (m != MAP_FAILED) {
        wbufFd_ = fd;
        wbuf_ = static_cast<char*>(m);
        wbufLen_ = len;
        return;
      }
    }
    if (fd >= 0) ::close(fd);
  }
  buf_ = allocAligned(len);
  wbuf_ = buf_.get();
  wbufLen_ = len;
}

void FlashStore::setTrailerLocked(int slot, bool valid) {
  BufferTrailer t{};
  if (valid) {
    const uint64_t r = slotRegion_[slot];
    t = BufferTrailer{kBufferMagic, formatId_, r, regionSeq_[r].load(std::memory_order_relaxed), 0};
    t.checksum = XXH3_64bits(&t, offsetof(BufferTrailer, checksum));
  }
  // Not reordered with the buffer's own stores (a kill stops the thread
  // between two instructions; the page cache keeps what was stored).
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(slotBuf(slot) + config_.region_size, &t, sizeof t);
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

// The checked prefix of the region image at p (bytes, from its start).
size_t FlashStore::checkedPrefix(const char* p, uint64_t regionSeq) const {
  size_t off = kRegionHeader;
  EntryHeader h;
  while (parseEntry(p + off, config_.region_size - off, seedOf(regionSeq), h))
    off += entryBytes(h.keySize, h.valueSize);
  return off;
}

uint64_t FlashStore::replayWriteBuffer() {
  if (wbufFd_ < 0) return 0;
  // Both slots, older region first (they hold different regions, or the
  // older names a region the device already has newer).
  BufferTrailer t[2];
  for (int slot = 0; slot < 2; ++slot) std::memcpy(&t[slot], slotBuf(slot) + config_.region_size, sizeof t[slot]);
  const int first = t[0].regionSeq <= t[1].regionSeq ? 0 : 1;
  return replayWriteBufferSlot(first) + replayWriteBufferSlot(1 - first);
}

uint64_t FlashStore::replayWriteBufferSlot(int slot) {
  const char* const wbuf = slotBuf(slot);
  BufferTrailer t;
  std::memcpy(&t, wbuf + config_.region_size, sizeof t);
  if (t.magic != kBufferMagic || t.checksum != XXH3_64bits(&t, offsetof(BufferTrailer, checksum))) return 0;
  if (t.formatId != formatId_ || t.region >= regions_ || t.regionSeq == 0) return 0;
  RegionHeader bh;
  std::memcpy(&bh, wbuf, sizeof bh);
  if (bh.magic != kRegionMagic || bh.formatId != formatId_ || bh.regionSeq != t.regionSeq ||
      bh.checksum != XXH3_64bits(&bh, offsetof(RegionHeader, checksum))) {
    return 0;
  }
  const size_t have = checkedPrefix(wbuf, t.regionSeq);
  // The device's copy of the region: newer (the buffer is stale), the same
  // region written as far (nothing to add), or older.
  ioOrThrow(IoRequest::Op::kRead, scratch_.get(), regionStart(t.region), config_.region_size);
  RegionHeader dh;
  std::memcpy(&dh, scratch_.get(), sizeof dh);
  if (dh.magic == kRegionMagic && dh.formatId == formatId_ &&
      dh.checksum == XXH3_64bits(&dh, offsetof(RegionHeader, checksum))) {
    if (dh.regionSeq > t.regionSeq) return 0;
    if (dh.regionSeq == t.regionSeq && checkedPrefix(scratch_.get(), dh.regionSeq) >= have) return 0;
  }
  const size_t len = (have + FlashDevice::kAlign - 1) / FlashDevice::kAlign * FlashDevice::kAlign;
  ioOrThrow(IoRequest::Op::kWrite, const_cast<char*>(wbuf), regionStart(t.region), len);
  return have;
}

void FlashStore::ioOrThrow(IoRequest::Op op, char* buf, uint64_t offset, size_t len) {
  std::vector<IoRequest> reqs;
  for (size_t done = 0; done < len; done += kWritePiece) {
    IoRequest r;
    r.op = op;
    r.buf = buf + done;
    r.offset = offset + done;
    r.len = static_cast<uint32_t>(std::min(kWritePiece, len - done));
    reqs.push_back(r);
  }
  engine_->run(reqs);
  for (const IoRequest& r : reqs) {
    if (r.result != static_cast<int64_t>(r.len)) {
      throw std::runtime_error("flash: " + std::string(op == IoRequest::Op::kRead ? "read" : "write") + " of " +
                               device_.path() + " at " + std::to_string(r.offset) + " failed: " +
                               (r.result < 0 ? std::strerror(static_cast<int>(-r.result)) : "short transfer"));
    }
  }
  if (op == IoRequest::Op::kWrite) counters_.bytes_written.fetch_add(len, std::memory_order_relaxed);
}

void FlashStore::writeSuperblock(bool clean) {
  AlignedBuffer sb = allocAligned(FlashDevice::kAlign);
  Superblock s{kSuperMagic, kVersion, clean ? 1u : 0u, config_.size, config_.region_size, formatId_, 0};
  s.checksum = XXH3_64bits(&s, offsetof(Superblock, checksum));
  std::memcpy(sb.get(), &s, sizeof s);
  ioOrThrow(IoRequest::Op::kWrite, sb.get(), 0, FlashDevice::kAlign);
  if (!device_.directIo() || clean) device_.sync();
}

void FlashStore::format() {
  std::random_device rd;
  formatId_ = (uint64_t{rd()} << 32) ^ rd() ^
              static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::lock_guard<std::mutex> g(appendMu_);
  activateLocked(0);
}

void FlashStore::recover(bool clean) {
  // 0. The write buffer of a killed process goes to its region first, so
  //    the replay below sees it like any written region.
  const uint64_t fromBuffer = replayWriteBuffer();
  // 1. Region headers: which regions hold what, in which order.
  std::vector<std::pair<uint64_t, uint64_t>> order;  // (regionSeq, region)
  AlignedBuffer head = allocAligned(FlashDevice::kAlign);
  for (uint64_t r = 0; r < regions_; ++r) {
    ioOrThrow(IoRequest::Op::kRead, head.get(), regionStart(r), FlashDevice::kAlign);
    RegionHeader h;
    std::memcpy(&h, head.get(), sizeof h);
    if (h.magic != kRegionMagic || h.formatId != formatId_ || h.regionSeq == 0) continue;
    if (h.checksum != XXH3_64bits(&h, offsetof(RegionHeader, checksum))) continue;
    order.emplace_back(h.regionSeq, r);
  }
  std::sort(order.begin(), order.end());
  // 2. Replay, oldest region first: a later entry of a key wins.
  uint64_t maxSeq = 0, entries = 0;
  for (const auto& [rseq, r] : order) {
    ioOrThrow(IoRequest::Op::kRead, scratch_.get(), regionStart(r), config_.region_size);
    regionSeq_[r].store(rseq);
    lastRead_[r].store(rseq);
    const uint64_t seed = seedOf(rseq);
    size_t off = kRegionHeader;
    EntryHeader h;
    while (parseEntry(scratch_.get() + off, config_.region_size - off, seed, h)) {
      const size_t n = entryBytes(h.keySize, h.valueSize);
      const std::string_view key(scratch_.get() + off + sizeof h, h.keySize);
      const uint64_t kh = hash_(key);
      if (h.kind == kKindValue) {
        if (index_->insert(kh, FlashLoc{regionStart(r) + off, static_cast<uint32_t>(n)})) ++entries;
      } else if (h.kind == kKindRemoveAll) {
        index_->clear();
      } else {
        index_->remove(kh);
      }
      maxSeq = std::max(maxSeq, h.seq);
      off += n;
    }
  }
  nextSeq_ = maxSeq + 1;
  // The ring goes on at the oldest region (after the newest, in fifo
  // order), which has no older region to pass tombstones on for. Its
  // entries leave the index first, as at any reuse: indexed, they would
  // lead reads into the new buffer (and count as corruption there).
  std::unique_lock<std::mutex> lk(appendMu_);
  const uint64_t next = oldestRegionLocked();
  std::vector<VictimEntry> victims;
  if (regionSeq_[next].load() != 0) {
    lk.unlock();  // readVictim needs no lock; nothing else runs yet
    readVictim(next, victims);
    lk.lock();
  }
  nextRegionSeq_ = order.empty() ? 1 : order.back().first + 1;
  clock_.store(nextRegionSeq_);  // reads from now on are more recent than any region's write
  if (!victims.empty()) {
    std::vector<Reinsert> hot;  // none: nothing was read yet
    std::vector<std::string> carry;
    dropVictimLocked(next, victims, hot, false, carry);
  }
  counters_.recovered.store(index_->size());
  activateLocked(next);
  openReport_ = "recovered " + std::to_string(index_->size()) + " entries from " + std::to_string(order.size()) +
                " regions (" + (clean ? "clean" : "unclean") + " shutdown" +
                (fromBuffer ? ", " + std::to_string(fromBuffer) + " bytes from the write buffer" : "") + ")";
}

void FlashStore::activateLocked(uint64_t r) {
  // A reused region's old index entries are gone (reclaim) or lose their
  // epoch check from here on.
  epoch_[r].fetch_add(1);  // odd: in the DRAM buffer
  const uint64_t rseq = nextRegionSeq_++;
  regionSeq_[r].store(rseq);
  lastRead_[r].store(clock_.fetch_add(1));
  // The trailer is invalid while the slot is reset: a kill in between
  // leaves no buffer to replay (the slot's previous region is written
  // already). The slot is not cleared: what its last region left after
  // the new header is checksummed with another region's seed, so it ends
  // a replay as zeroes would (the tail of the last 4 KiB written is zeroed
  // at the write).
  setTrailerLocked(activeSlot_, false);
  active_ = r;
  slotRegion_[activeSlot_] = r;
  char* const wbuf = slotBuf(activeSlot_);
  RegionHeader h{kRegionMagic, rseq, formatId_, 0};
  h.checksum = XXH3_64bits(&h, offsetof(RegionHeader, checksum));
  std::memcpy(wbuf, &h, sizeof h);
  used_ = kRegionHeader;
  setTrailerLocked(activeSlot_, true);
}

std::unique_lock<std::mutex> FlashStore::lockForAppend(size_t n) {
  std::unique_lock<std::mutex> lk(appendMu_);
  // A seal reuses the other slot (its write must be done) and activates
  // the reclaimed region (its reclaim must be done); it never waits itself,
  // so that nothing an operation did under the lock is split from its append.
  ioDone_.wait(lk, [&] {
    return closed_ || used_ + n <= config_.region_size || (!sealPending_ && !writeInFlight_ && !prepInFlight_);
  });
  return lk;
}

FlashLoc FlashStore::appendLocked(uint8_t kind, std::string_view key, std::string_view value, uint32_t flags,
                                  uint32_t expiry) {
  const size_t n = entryBytes(key.size(), value.size());
  if (used_ + n > config_.region_size) sealAndAdvanceLocked(n);
  char* p = slotBuf(activeSlot_) + used_;
  EntryHeader h{};
  h.magic = kEntryMagic;
  h.keySize = static_cast<uint16_t>(key.size());
  h.kind = kind;
  h.valueSize = static_cast<uint32_t>(value.size());
  h.flags = flags;
  h.expiry = expiry;
  h.seq = nextSeq_++;
  std::memcpy(p, &h, sizeof h);
  if (!key.empty()) std::memcpy(p + sizeof h, key.data(), key.size());  // removeAll's marker has no key
  if (!value.empty()) std::memcpy(p + sizeof h + key.size(), value.data(), value.size());
  h.checksum = entryChecksum(p, seedOf(regionSeq_[active_].load(std::memory_order_relaxed)));
  // The checksum goes in last: a kill before it leaves an entry that ends
  // the replay of the buffer (its operation never returned).
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(p + offsetof(EntryHeader, checksum), &h.checksum, sizeof h.checksum);
  const FlashLoc loc{regionStart(active_) + used_, static_cast<uint32_t>(n)};
  used_ += n;
  return loc;
}

void FlashStore::writeActiveLocked() {
  const size_t len = (used_ + FlashDevice::kAlign - 1) / FlashDevice::kAlign * FlashDevice::kAlign;
  char* const wbuf = slotBuf(activeSlot_);
  std::memset(wbuf + used_, 0, len - used_);  // not the slot's last region's bytes
  ioOrThrow(IoRequest::Op::kWrite, wbuf, regionStart(active_), len);
}

uint64_t FlashStore::pickVictimLocked() const {
  if (config_.region_eviction == RegionEviction::kFifo) return (active_ + 1) % regions_;
  uint64_t best = regions_, bestClock = UINT64_MAX;
  for (uint64_t r = 0; r < regions_; ++r) {
    if (r == active_ || ((sealPending_ || writeInFlight_) && r == sealedRegion_)) continue;
    if (regionSeq_[r].load(std::memory_order_relaxed) == 0) return r;  // never used
    const uint64_t c = lastRead_[r].load(std::memory_order_relaxed);
    if (c < bestClock) {
      bestClock = c;
      best = r;
    }
  }
  return best;
}

void FlashStore::readVictim(uint64_t r, std::vector<VictimEntry>& entries) {
  ioOrThrow(IoRequest::Op::kRead, scratch_.get(), regionStart(r), config_.region_size);
  const uint64_t seed = seedOf(regionSeq_[r].load(std::memory_order_relaxed));
  size_t off = kRegionHeader;
  EntryHeader h;
  while (parseEntry(scratch_.get() + off, config_.region_size - off, seed, h)) {
    const size_t n = entryBytes(h.keySize, h.valueSize);
    const char* p = scratch_.get() + off;
    if (h.kind == kKindValue || h.kind == kKindTombstone) {
      const uint64_t kh = hash_(std::string_view(p + sizeof h, h.keySize));
      entries.push_back(VictimEntry{kh, FlashLoc{regionStart(r) + off, static_cast<uint32_t>(n)},
                                    static_cast<uint32_t>(off), h.keySize, h.kind == kKindTombstone});
    }
    off += n;
  }
}

bool FlashStore::olderRegionLiveLocked(uint64_t r) const {
  const uint64_t seq = regionSeq_[r].load(std::memory_order_relaxed);
  for (uint64_t q = 0; q < regions_; ++q) {
    const uint64_t s = regionSeq_[q].load(std::memory_order_relaxed);
    if (q != r && s != 0 && s < seq) return true;
  }
  return false;
}

uint64_t FlashStore::oldestRegionLocked() const {
  uint64_t best = regions_, bestSeq = UINT64_MAX;
  for (uint64_t q = 0; q < regions_; ++q) {
    if (q == active_ && slotRegion_[activeSlot_] == q) continue;
    const uint64_t s = regionSeq_[q].load(std::memory_order_relaxed);
    if (s < bestSeq) {
      bestSeq = s;
      best = q;
    }
  }
  return best;
}

void FlashStore::dropVictimLocked(uint64_t r, const std::vector<VictimEntry>& entries, std::vector<Reinsert>& hot,
                                  bool carrying, std::vector<std::string>& carry) {
  static_cast<void>(r);
  auto keyOf = [&](const VictimEntry& e) { return std::string(scratch_.get() + e.off + kEntryHeader, e.keySize); };
  for (const VictimEntry& e : entries) {
    const auto found = index_->lookup(e.hash);
    if (e.tombstone) {
      // The key indexed again has a newer entry in a newer region.
      if (carrying && !found) carry.push_back(keyOf(e));
      continue;
    }
    if (!found || found->loc != e.loc) continue;  // replaced, removed or never indexed
    if (config_.reinsert_hits && found->hit) {
      const char* p = scratch_.get() + e.off;
      EntryHeader h;
      std::memcpy(&h, p, sizeof h);
      hot.push_back(Reinsert{e.hash, e.loc, std::string(p + sizeof h, h.keySize),
                             std::string(p + sizeof h + h.keySize, h.valueSize), h.flags, h.expiry});
    } else {
      index_->removeIf(e.hash, e.loc);
      if (carrying) carry.push_back(keyOf(e));
    }
  }
  counters_.regions_reclaimed.fetch_add(1, std::memory_order_relaxed);
}

void FlashStore::sealAndAdvanceLocked(size_t reserve) {
  TC_DCHECK(!sealPending_ && !writeInFlight_ && !prepInFlight_);  // lockForAppend waited
  std::vector<Reinsert> hot;
  std::vector<std::string> carry;
  std::vector<VictimEntry> entries;
  uint64_t next;
  if (prepared_) {
    next = preparedRegion_;
    entries = std::move(preparedEntries_);
    preparedEntries_.clear();
    prepared_ = false;
  } else {
    next = pickVictimLocked();  // not read ahead: here, under the lock
    if (regionSeq_[next].load(std::memory_order_relaxed) != 0) readVictim(next, entries);
  }
  bool carrying = regionSeq_[next].load(std::memory_order_relaxed) != 0 && olderRegionLiveLocked(next);
  if (carrying) {
    // What the region may pass on must fit the new buffer beside the
    // append that sealed; else (a region of tombstones, a large append)
    // the oldest region goes instead, which passes nothing on.
    size_t bound = 0;
    for (const VictimEntry& e : entries) bound += entryBytes(e.keySize, 0);
    if (kRegionHeader + bound + reserve > config_.region_size) {
      next = oldestRegionLocked();
      entries.clear();
      if (regionSeq_[next].load(std::memory_order_relaxed) != 0) readVictim(next, entries);
      carrying = false;
    }
  }
  if (regionSeq_[next].load(std::memory_order_relaxed) != 0) dropVictimLocked(next, entries, hot, carrying, carry);
  // The full buffer stays readable (its region's epoch odd) until finishIo()
  // has written it.
  sealPending_ = true;
  sealedRegion_ = active_;
  sealedUsed_ = used_;
  activeSlot_ ^= 1;
  activateLocked(next);
  // In the same hold as the activation: from the trailer's write on, a
  // kill leaves the new buffer, not the region's old contents.
  for (const std::string& key : carry) appendLocked(kKindTombstone, key, {}, 0, 0);
  size_t hotTombstones = 0;  // room kept for the tombstones of hot entries not written back
  if (carrying) {
    for (const Reinsert& e : hot) hotTombstones += entryBytes(e.key.size(), 0);
  }
  for (const Reinsert& e : hot) {
    if (carrying) hotTombstones -= entryBytes(e.key.size(), 0);
    // The entries came from one region and are written back packed, but the
    // append that sealed must fit after them: a second seal would have to
    // wait for this one's write, inside the caller's operation.
    if (used_ + entryBytes(e.key.size(), e.value.size()) + hotTombstones + reserve > config_.region_size) {
      if (index_->removeIf(e.hash, e.from) && carrying) appendLocked(kKindTombstone, e.key, {}, 0, 0);
      continue;
    }
    const FlashLoc to = appendLocked(kKindValue, e.key, e.value, e.flags, e.expiry);
    if (index_->replaceIf(e.hash, e.from, to)) counters_.reinserted.fetch_add(1, std::memory_order_relaxed);
  }
}

void FlashStore::finishIo(std::unique_lock<std::mutex>& lk) {
  if (sealPending_ && !writeInFlight_) {
    sealPending_ = false;
    writeInFlight_ = true;
    const int slot = activeSlot_ ^ 1;
    const uint64_t r = sealedRegion_;
    const size_t used = sealedUsed_;
    lk.unlock();
    // Only this thread touches the slot's tail; lookups copy entries below `used`.
    const size_t len = (used + FlashDevice::kAlign - 1) / FlashDevice::kAlign * FlashDevice::kAlign;
    std::memset(slotBuf(slot) + used, 0, len - used);
    try {
      ioOrThrow(IoRequest::Op::kWrite, slotBuf(slot), regionStart(r), len);
    } catch (...) {
      lk.lock();
      sealPending_ = true;  // written by the next finishIo, or close()
      writeInFlight_ = false;
      ioDone_.notify_all();
      throw;
    }
    lk.lock();
    epoch_[r].fetch_add(1);  // even: on the device
    writeInFlight_ = false;
    ioDone_.notify_all();
  }
  // The next region to reuse, read back ahead: the seal that needs it will
  // not wait for its read, only drop its entries from the index.
  if (closed_ || prepared_ || prepInFlight_ || sealPending_ || writeInFlight_) return;
  const uint64_t v = pickVictimLocked();
  if (v >= regions_) return;
  std::vector<VictimEntry> entries;
  if (regionSeq_[v].load(std::memory_order_relaxed) != 0) {
    prepInFlight_ = true;
    lk.unlock();
    try {
      readVictim(v, entries);
    } catch (...) {
      lk.lock();
      prepInFlight_ = false;
      ioDone_.notify_all();
      throw;
    }
    lk.lock();
    prepInFlight_ = false;
  }
  preparedRegion_ = v;
  preparedEntries_ = std::move(entries);
  prepared_ = true;
  ioDone_.notify_all();
}

void FlashStore::drainIo(std::unique_lock<std::mutex>& lk) {
  for (;;) {
    if (sealPending_ && !writeInFlight_) {
      finishIo(lk);
      continue;
    }
    if (!writeInFlight_ && !prepInFlight_) return;
    ioDone_.wait(lk);
  }
}

FlashStore::InsertResult FlashStore::insert(std::string_view key, std::string_view value, uint32_t flags,
                                            uint32_t expiry, bool wasHit) {
  const size_t n = entryBytes(key.size(), value.size());
  if (key.size() > UINT16_MAX || n > config_.region_size - kRegionHeader || n > FlashIndex::kMaxSize) {
    counters_.rejects_other.fetch_add(1, std::memory_order_relaxed);
    return InsertResult::kTooLarge;
  }
  if (!admission_.admit(n, wasHit)) {
    counters_.admission_rejects.fetch_add(1, std::memory_order_relaxed);
    return InsertResult::kRejected;
  }
  const uint64_t h = hash_(key);
  std::unique_lock<std::mutex> lk = lockForAppend(n);
  if (closed_) return InsertResult::kRejected;
  // Checked before the append: an entry logged but not indexed could take
  // no tombstone from a later remove, and recovery would bring it back.
  // Only appends (under appendMu_) fill index slots, so the room stays.
  if (!index_->hasRoom(h)) {
    counters_.rejects_other.fetch_add(1, std::memory_order_relaxed);
    return InsertResult::kIndexFull;
  }
  const FlashLoc loc = appendLocked(kKindValue, key, value, flags, expiry);
  const bool indexed = index_->insert(h, loc);
  TC_DCHECK(indexed);
  static_cast<void>(indexed);
  counters_.inserts.fetch_add(1, std::memory_order_relaxed);
  counters_.item_bytes.fetch_add(key.size() + value.size(), std::memory_order_relaxed);
  finishIo(lk);
  return InsertResult::kStored;
}

bool FlashStore::mayContain(std::string_view key) const { return index_->lookup(hash_(key)).has_value(); }

bool FlashStore::remove(std::string_view key) {
  const uint64_t h = hash_(key);
  if (!index_->lookup(h)) return false;  // the common case: no I/O, no append lock
  std::unique_lock<std::mutex> lk = lockForAppend(entryBytes(key.size(), 0));
  if (!index_->remove(h)) return false;
  tombstoneLocked(key);
  finishIo(lk);
  return true;
}

bool FlashStore::removeIfAt(std::string_view key, const FlashLoc& where) {
  const uint64_t h = hash_(key);
  std::unique_lock<std::mutex> lk = lockForAppend(entryBytes(key.size(), 0));
  if (!index_->removeIf(h, where)) return false;
  tombstoneLocked(key);
  finishIo(lk);
  return true;
}

void FlashStore::tombstoneLocked(std::string_view key) {
  // The tombstone keeps recovery from bringing the entry back.
  if (!closed_) appendLocked(kKindTombstone, key, {}, 0, 0);
  counters_.removes.fetch_add(1, std::memory_order_relaxed);
}

void FlashStore::removeAll() {
  std::unique_lock<std::mutex> lk = lockForAppend(entryBytes(0, 0));
  index_->clear();
  if (!closed_) appendLocked(kKindRemoveAll, {}, {}, 0, 0);
  finishIo(lk);
}

std::optional<FlashItem> FlashStore::lookup(std::string_view key, FlashLoc* where) {
  const uint64_t h = hash_(key);
  // A region rewritten under the read is read again (a bounded number of times).
  for (int attempt = 0; attempt < 4; ++attempt) {
    const auto found = index_->lookup(h);
    if (!found) break;
    const FlashLoc loc = found->loc;
    const uint64_t r = regionOf(loc.addr);
    const uint64_t e1 = epoch_[r].load();
    uint64_t rseq = regionSeq_[r].load();
    std::string copy;  // the entry from the active buffer
    AlignedBuffer span;
    const char* p = nullptr;
    if (e1 & 1) {
      std::lock_guard<std::mutex> g(appendMu_);
      if (epoch_[r].load() != e1) continue;
      rseq = regionSeq_[r].load();  // set after the epoch when the region was activated
      const size_t off = loc.addr - regionStart(r);
      copy.assign(bufferOfLocked(r) + off, loc.size);
      p = copy.data();
    } else {
      const uint64_t first = loc.addr / FlashDevice::kAlign * FlashDevice::kAlign;
      const uint64_t end = (loc.addr + loc.size + FlashDevice::kAlign - 1) / FlashDevice::kAlign * FlashDevice::kAlign;
      span = allocAligned(end - first);
      IoRequest req;
      req.op = IoRequest::Op::kRead;
      req.buf = span.get();
      req.offset = first;
      req.len = static_cast<uint32_t>(end - first);
      engine_->run({&req, 1});
      counters_.reads.fetch_add(1, std::memory_order_relaxed);
      if (epoch_[r].load() != e1) continue;                    // reused under the read
      if (req.result != static_cast<int64_t>(req.len)) break;  // an I/O error is a miss
      p = span.get() + (loc.addr - first);
    }
    bool stale = false;
    std::optional<FlashItem> item = checkEntry(key, h, loc, rseq, p, where, &stale);
    if (item) return item;
    if (stale) continue;
    break;
  }
  counters_.misses.fetch_add(1, std::memory_order_relaxed);
  return std::nullopt;
}

std::optional<FlashItem> FlashStore::checkEntry(std::string_view key, uint64_t h, const FlashLoc& loc, uint64_t rseq,
                                                const char* p, FlashLoc* where, bool* stale) {
  EntryHeader eh;
  if (!parseEntry(p, loc.size, seedOf(rseq), eh) || eh.kind != kKindValue ||
      entryBytes(eh.keySize, eh.valueSize) != loc.size) {
    // A reader that took loc from the index before its region was reclaimed
    // and reused (drop or reinsert, both before the new epoch is read) reads
    // the region's next contents; the index has let go of loc by then.
    const auto now = index_->lookup(h);
    if (!now || now->loc != loc) {
      *stale = true;
      return std::nullopt;
    }
    // Corrupted on the device (or a bug): dropped, counted, never returned.
    counters_.checksum_failures.fetch_add(1, std::memory_order_relaxed);
    index_->removeIf(h, loc);
    return std::nullopt;
  }
  if (std::string_view(p + sizeof eh, eh.keySize) != key) {
    counters_.key_mismatches.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  index_->markHit(h, loc);
  if (where) *where = loc;
  lastRead_[regionOf(loc.addr)].store(clock_.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
  counters_.hits.fetch_add(1, std::memory_order_relaxed);
  return FlashItem{std::string(p + sizeof eh + eh.keySize, eh.valueSize), eh.flags, eh.expiry};
}

void FlashStore::lookupMany(std::span<const std::string_view> keys, std::span<std::optional<FlashItem>> out,
                            std::span<FlashLoc> where) {
  if (out.size() != keys.size() || where.size() != keys.size()) {
    throw std::invalid_argument("FlashStore::lookupMany: out and where must have one slot per key");
  }
  struct Pending {
    size_t i;
    uint64_t h;
    FlashLoc loc;
    uint64_t e1;
    uint64_t rseq;
    uint64_t first;
    AlignedBuffer span;
  };
  std::vector<Pending> pending;
  std::vector<size_t> single;  // in the active buffer, or rewritten under the batch
  pending.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    out[i].reset();
    const uint64_t h = hash_(keys[i]);
    const auto found = index_->lookup(h);
    if (!found) {
      counters_.misses.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    const FlashLoc loc = found->loc;
    const uint64_t r = regionOf(loc.addr);
    const uint64_t e1 = epoch_[r].load();
    if (e1 & 1) {
      single.push_back(i);  // a copy under the append lock: no I/O to batch
      continue;
    }
    const uint64_t first = loc.addr / FlashDevice::kAlign * FlashDevice::kAlign;
    const uint64_t end = (loc.addr + loc.size + FlashDevice::kAlign - 1) / FlashDevice::kAlign * FlashDevice::kAlign;
    pending.push_back(Pending{i, h, loc, e1, regionSeq_[r].load(), first, allocAligned(end - first)});
  }
  if (!pending.empty()) {
    std::vector<IoRequest> reqs(pending.size());
    for (size_t k = 0; k < pending.size(); ++k) {
      const uint64_t end = (pending[k].loc.addr + pending[k].loc.size + FlashDevice::kAlign - 1) / FlashDevice::kAlign *
                           FlashDevice::kAlign;
      reqs[k].op = IoRequest::Op::kRead;
      reqs[k].buf = pending[k].span.get();
      reqs[k].offset = pending[k].first;
      reqs[k].len = static_cast<uint32_t>(end - pending[k].first);
    }
    engine_->run(reqs);  // all in flight together, up to the queue depth
    counters_.reads.fetch_add(reqs.size(), std::memory_order_relaxed);
    counters_.read_batches.fetch_add(1, std::memory_order_relaxed);
    for (size_t k = 0; k < pending.size(); ++k) {
      Pending& pd = pending[k];
      if (epoch_[regionOf(pd.loc.addr)].load() != pd.e1) {
        single.push_back(pd.i);  // reused under the read: read again, alone
        continue;
      }
      if (reqs[k].result == static_cast<int64_t>(reqs[k].len)) {
        bool stale = false;
        out[pd.i] = checkEntry(keys[pd.i], pd.h, pd.loc, pd.rseq, pd.span.get() + (pd.loc.addr - pd.first),
                               &where[pd.i], &stale);
        if (stale) {
          single.push_back(pd.i);  // its region was reused: read again, alone
          continue;
        }
      }
      if (!out[pd.i]) counters_.misses.fetch_add(1, std::memory_order_relaxed);  // an I/O error is a miss
    }
  }
  for (size_t i : single) out[i] = lookup(keys[i], &where[i]);
}

void FlashStore::flush() {
  std::unique_lock<std::mutex> lk(appendMu_);
  if (closed_) return;
  drainIo(lk);  // the sealed buffer first
  writeActiveLocked();
}

void FlashStore::close() {
  std::unique_lock<std::mutex> lk(appendMu_);
  if (closed_) return;
  drainIo(lk);
  closed_ = true;
  ioDone_.notify_all();
  writeActiveLocked();
  device_.sync();
  writeSuperblock(true);
  // Written and clean: the next open has no buffer to replay.
  setTrailerLocked(0, false);
  setTrailerLocked(1, false);
}

}  // namespace tiercache
