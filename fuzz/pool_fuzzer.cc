// libFuzzer target: PersistentPmemTier's open must survive any bytes in the
// parts of a pool file that tiercache itself reads (the header and the
// slab-record array), in libpmemobj's own metadata before them (pool
// header, lanes, heap zone and chunk headers: checked by libpmempool before
// pmemobj_open), and any truncation: it either refuses with TierError or
// opens a tier whose every value is in range. A crash, a hang, a read
// outside the mapping, any other exception or a broken invariant is a
// finding.
//
// A valid pool is made once per process (the template); each input is
// applied to a fresh copy of it:
//   byte 0        flags: 1 fix the header checksum after the overlay,
//                 2 fix every record's check, 4 truncate, 8 allow rebuild,
//                 16 overwrite instead of XOR, 32 PMDK's area instead
//   bytes 1..3    with flag 4: how many bytes to cut off the end (24 bits,
//                 scaled to the file size)
//   then          sizeof(PoolHeader) bytes over the header, the rest over
//                 the record array (XOR by default, so zeros change nothing
//                 and mutations stay close to a valid pool);
//                 with flag 32 instead: 4-byte edits (3 bytes of position,
//                 scaled to the bytes before tiercache's header, i.e.
//                 libpmemobj's metadata, and 1 byte XORed or written there)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tiers/persistent_pmem_tier.h"

using namespace tiercache;
using pmem_layout::PoolHeader;
using pmem_layout::SlabRecordSlot;

namespace {

constexpr uint64_t kSlab = 256 << 10;
constexpr uint64_t kTierSize = 4 << 20;
constexpr uint64_t kFingerprint = 0x5eed;

struct Template {
  std::string dir;
  std::string path;
  std::vector<char> bytes;
  uint64_t header = 0;
  uint64_t records = 0;
  uint32_t slabs = 0;
};

Template* tmpl = nullptr;

TierConfig config() {
  TierConfig cfg;
  cfg.name = "fuzz";
  cfg.kind = TierKind::kPmemFile;
  cfg.size = kTierSize;
  cfg.path = tmpl->path;
  cfg.persistent = true;
  return cfg;
}

void removeAll() {
  if (!tmpl) return;
  ::unlink(tmpl->path.c_str());
  ::rmdir(tmpl->dir.c_str());
}

void die(const char* what) {
  std::fprintf(stderr, "pool_fuzzer: %s: %s\n", what, std::strerror(errno));
  std::abort();
}

void writeAll(int fd, const char* p, size_t n) {
  for (size_t done = 0; done < n;) {
    ssize_t w = ::pwrite(fd, p + done, n - done, static_cast<off_t>(done));
    if (w <= 0) die("pwrite");
    done += static_cast<size_t>(w);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tmpl = new Template;
  const char* base = std::getenv("TIERCACHE_FUZZ_DIR");
  std::string d = std::string(base && *base ? base : "/dev/shm") + "/tiercache-fuzz-XXXXXX";
  if (!mkdtemp(d.data())) die("mkdtemp");
  tmpl->dir = d;
  tmpl->path = d + "/pool";
  std::atexit(removeAll);
  PersistentOpenOptions o;
  o.fingerprint = kFingerprint;
  {
    PersistentPmemTier tier(config(), kSlab, o);
    tmpl->header = tier.headerOffset();
    tmpl->records = tier.recordsOffset();
    tmpl->slabs = tier.slabCount();
    for (uint32_t s = 0; s < tier.slabCount(); s += 2) tier.setSlabRecord(s, {64u << (s % 8), static_cast<uint16_t>(s % 3)});
    tier.setClean(true);
  }
  struct stat st {};
  if (::stat(tmpl->path.c_str(), &st) != 0) die("stat");
  tmpl->bytes.resize(static_cast<size_t>(st.st_size));
  int fd = ::open(tmpl->path.c_str(), O_RDONLY);
  if (fd < 0 || ::pread(fd, tmpl->bytes.data(), tmpl->bytes.size(), 0) != static_cast<ssize_t>(tmpl->bytes.size())) {
    die("reading the template");
  }
  ::close(fd);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<char> file = tmpl->bytes;
  const uint8_t flags = size ? data[0] : 0;
  size_t pos = 1;
  uint64_t cut = 0;
  if (flags & 4) {
    uint32_t v = 0;
    for (int i = 0; i < 3; ++i) v = v << 8 | (pos < size ? data[pos++] : 0);
    cut = static_cast<uint64_t>(v) * file.size() >> 24;
  }
  auto overlay = [&](uint64_t at, size_t len) {
    for (size_t i = 0; i < len && pos < size; ++i, ++pos) {
      char& c = file[at + i];
      c = (flags & 16) ? static_cast<char>(data[pos]) : static_cast<char>(c ^ data[pos]);
    }
  };
  if (flags & 32) {
    // Byte edits anywhere in libpmemobj's area: [0, tiercache's header).
    while (pos + 4 <= size) {
      const uint32_t v = uint32_t{data[pos]} << 16 | uint32_t{data[pos + 1]} << 8 | data[pos + 2];
      const uint64_t at = static_cast<uint64_t>(v) * tmpl->header >> 24;
      char& c = file[at];
      c = (flags & 16) ? static_cast<char>(data[pos + 3]) : static_cast<char>(c ^ data[pos + 3]);
      pos += 4;
    }
  } else {
    overlay(tmpl->header, sizeof(PoolHeader));
    overlay(tmpl->records, uint64_t{tmpl->slabs} * sizeof(SlabRecordSlot));
  }
  if (flags & 1) {
    PoolHeader h;
    std::memcpy(&h, &file[tmpl->header], sizeof h);
    h.checksum = pmem_layout::headerChecksum(h);
    std::memcpy(&file[tmpl->header], &h, sizeof h);
  }
  if (flags & 2) {
    for (uint32_t s = 0; s < tmpl->slabs; ++s) {
      SlabRecordSlot r;
      std::memcpy(&r, &file[tmpl->records + s * sizeof r], sizeof r);
      r.check = pmem_layout::recordCheck(s, r.allocSize, r.pool);
      std::memcpy(&file[tmpl->records + s * sizeof r], &r, sizeof r);
    }
  }
  file.resize(file.size() - cut);

  // A fresh file each time: a rebuild replaces the inode, and an open
  // writes the clean flag.
  ::unlink(tmpl->path.c_str());
  int fd = ::open(tmpl->path.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0) die("creating the pool copy");
  writeAll(fd, file.data(), file.size());
  ::close(fd);

  PersistentOpenOptions o;
  o.fingerprint = kFingerprint;
  o.rebuildOnMismatch = (flags & 8) != 0;
  try {
    PersistentPmemTier tier(config(), kSlab, o);
    // Invariants of an opened tier; reading through the API must stay
    // inside the mapping.
    if (tier.size() != kTierSize || tier.slabCount() != kTierSize / kSlab) __builtin_trap();
    if (tier.slabAreaOffset() + tier.size() > tier.mappedBytes()) __builtin_trap();
    if (tier.recordsOffset() + uint64_t{tier.slabCount()} * sizeof(SlabRecordSlot) > tier.mappedBytes()) __builtin_trap();
    if (tier.headerOffset() + sizeof(PoolHeader) > tier.mappedBytes()) __builtin_trap();
    uint64_t sum = 0;
    for (uint32_t s = 0; s < tier.slabCount(); ++s) {
      const SlabRecord r = tier.slabRecord(s);
      if (r.allocSize > kSlab || (r.allocSize == 0 && r.pool != 0)) __builtin_trap();
      sum += r.allocSize;
    }
    const volatile std::byte* b = tier.base();
    for (uint64_t off = 0; off < tier.size(); off += 4096) sum += static_cast<uint64_t>(b[off]);
    sum += static_cast<uint64_t>(b[tier.size() - 1]);
    const std::string report = tier.openReport();
    if (!tier.recovered() && report.rfind("rebuilt: ", 0) != 0 && report.rfind("created", 0) != 0) __builtin_trap();
    if (tier.recovered() && report.rfind("opened after ", 0) != 0) __builtin_trap();
    (void)sum;
  } catch (const TierError&) {
    // Refused: fine.
  }
  return 0;
}
