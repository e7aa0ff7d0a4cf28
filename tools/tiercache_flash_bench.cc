// tiercache-flash-bench: the flash store's I/O path measured on a file or
// block device, in terms fio reports too (scripts/flash-vs-fio.sh runs both).
//
//   write  --file F [--size 2GiB] [--seconds 10] [--qd 32] [--region-size 16MiB]
//       whole regions written in ring order as the store writes them: cut
//       into FlashStore::kWritePiece pieces, one IoEngine::run() per region
//       (at most qd pieces in flight). Prints MB/s.
//   read   --file F [--size 2GiB] [--seconds 10] [--qd 32] [--bs 4096]
//       uniformly random bs-aligned reads over the whole size through
//       IoEngine::run(), batches of 64 x qd requests so that qd stay in
//       flight. Prints IOPS. Read a file that has been written (no holes).
//   store  --file F [--size 2GiB] [--seconds 10] [--qd 32] [--region-size 16MiB]
//          [--value-size 1000] [--fill 1.5] [--threads qd[,n...]]
//       a FlashStore on F: inserts distinct keys until fill x size item bytes
//       were admitted (so regions wrap and are reclaimed), then for each
//       entry of `threads`, T or TxB, T threads look up keys still present for
//       `seconds`: one synchronous lookup at a time (T reads in flight), or
//       with xB lookupMany of B keys at a time (T x B in flight, one
//       submission per batch). Prints insert rate, device write MB/s, write
//       amplification (device bytes written / key+value bytes admitted),
//       lookups/s and device reads/s.
//   Every mode takes --engine auto|io_uring|threads (default io_uring).
//
// Output: one line of key=value pairs per result. Exit 2 on a bad argument
// (the message names it), 1 on an I/O or setup error.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "flash/flash_device.h"
#include "flash/flash_store.h"
#include "flash/io_engine.h"

namespace {

using tiercache::FlashDevice;
using tiercache::FlashStore;
using tiercache::IoEngineKind;
using tiercache::IoRequest;

struct BadArg : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string file;
  uint64_t size = 2ull << 30;
  double seconds = 10;
  uint32_t qd = 32;
  uint64_t regionSize = 16ull << 20;
  uint32_t bs = 4096;
  uint32_t valueSize = 1000;
  double fill = 1.5;
  struct LookupRun {
    uint32_t threads;
    uint32_t batch;  // 1: FlashStore::lookup; more: lookupMany of this many keys
  };
  std::vector<LookupRun> threads;  // empty: {qd x 1}
  IoEngineKind engine = IoEngineKind::kUring;
};

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

uint64_t parseBytes(const std::string& name, const std::string& s) {
  size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(s, &pos);
  } catch (const std::exception&) {
    throw BadArg(name + ": not a size: '" + s + "'");
  }
  const std::string unit = s.substr(pos);
  uint64_t mult = 1;
  if (unit == "K" || unit == "KiB")
    mult = 1ull << 10;
  else if (unit == "M" || unit == "MiB")
    mult = 1ull << 20;
  else if (unit == "G" || unit == "GiB")
    mult = 1ull << 30;
  else if (!unit.empty())
    throw BadArg(name + ": unknown unit '" + unit + "' (K, M, G, KiB, MiB, GiB)");
  return v * mult;
}

double parseDouble(const std::string& name, const std::string& s) {
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(s, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != s.size() || !(v > 0)) throw BadArg(name + ": not a positive number: '" + s + "'");
  return v;
}

uint32_t parseCount(const std::string& name, const std::string& s, uint32_t max) {
  const double v = parseDouble(name, s);
  if (v != static_cast<double>(static_cast<uint64_t>(v)) || v > max) {
    throw BadArg(name + ": not a whole number in 1.." + std::to_string(max) + ": '" + s + "'");
  }
  return static_cast<uint32_t>(v);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 2; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) throw BadArg(k + ": missing value");
    const std::string v = argv[i + 1];
    if (k == "--file")
      o.file = v;
    else if (k == "--size")
      o.size = parseBytes(k, v);
    else if (k == "--seconds")
      o.seconds = parseDouble(k, v);
    else if (k == "--qd")
      o.qd = parseCount(k, v, 1024);
    else if (k == "--region-size")
      o.regionSize = parseBytes(k, v);
    else if (k == "--bs")
      o.bs = static_cast<uint32_t>(std::min<uint64_t>(parseBytes(k, v), 1u << 30));
    else if (k == "--value-size")
      o.valueSize = parseCount(k, v, 16u << 20);
    else if (k == "--fill")
      o.fill = parseDouble(k, v);
    else if (k == "--threads") {
      o.threads.clear();
      size_t pos = 0;
      for (;;) {
        const size_t comma = v.find(',', pos);
        const std::string one = v.substr(pos, comma - pos);
        const size_t x = one.find('x');
        const uint32_t batch = x == std::string::npos ? 1 : parseCount(k, one.substr(x + 1), 1024);
        const uint32_t threads = parseCount(k, one.substr(0, x), 1024);
        o.threads.push_back({threads, batch});
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    } else if (k == "--engine") {
      if (v == "auto")
        o.engine = IoEngineKind::kAuto;
      else if (v == "io_uring")
        o.engine = IoEngineKind::kUring;
      else if (v == "threads")
        o.engine = IoEngineKind::kThreads;
      else
        throw BadArg("--engine: '" + v + "' is not auto, io_uring or threads");
    } else {
      throw BadArg("unknown option " + k);
    }
  }
  if (o.file.empty()) throw BadArg("--file: required");
  const uint64_t a = FlashDevice::kAlign;
  if (o.size == 0 || o.size % a != 0) throw BadArg("--size: must be a positive multiple of 4 KiB");
  if (o.bs == 0 || o.bs % a != 0 || o.bs > o.size) throw BadArg("--bs: must be a multiple of 4 KiB, at most --size");
  if (o.regionSize < (64u << 10) || o.regionSize % a != 0 || a + 2 * o.regionSize > o.size) {
    throw BadArg("--region-size: must be a multiple of 4 KiB, >= 64 KiB, two of them within --size");
  }
  if (o.threads.empty()) o.threads.push_back({o.qd, 1});
  return o;
}

const char* engineArg(IoEngineKind k) {
  return k == IoEngineKind::kAuto ? "auto" : k == IoEngineKind::kUring ? "io_uring" : "threads";
}

void checkAll(const std::vector<IoRequest>& reqs) {
  for (const IoRequest& r : reqs) {
    if (r.result != static_cast<int64_t>(r.len)) {
      throw std::runtime_error("I/O at offset " + std::to_string(r.offset) + " failed: " +
                               (r.result < 0 ? std::strerror(static_cast<int>(-r.result)) : "short transfer"));
    }
  }
}

int writeMode(const Options& o) {
  FlashDevice dev(o.file, o.size);
  auto engine = tiercache::openIoEngine(o.engine, dev.fd(), o.qd);
  tiercache::AlignedBuffer buf = tiercache::allocAligned(o.regionSize);
  std::mt19937_64 rng(1);
  for (uint64_t i = 0; i + 8 <= o.regionSize; i += 8) {
    const uint64_t x = rng();
    std::memcpy(buf.get() + i, &x, 8);
  }
  // Regions as the store lays them out: after the 4 KiB superblock, in ring order.
  const uint64_t regions = (o.size - FlashDevice::kAlign) / o.regionSize;
  std::vector<IoRequest> reqs;
  uint64_t bytes = 0, r = 0;
  const auto t0 = Clock::now();
  double secs = 0;
  do {
    reqs.clear();
    const uint64_t start = FlashDevice::kAlign + r * o.regionSize;
    for (uint64_t done = 0; done < o.regionSize; done += FlashStore::kWritePiece) {
      IoRequest q;
      q.op = IoRequest::Op::kWrite;
      q.buf = buf.get() + done;
      q.offset = start + done;
      q.len = static_cast<uint32_t>(std::min<uint64_t>(FlashStore::kWritePiece, o.regionSize - done));
      reqs.push_back(q);
    }
    engine->run(reqs);
    checkAll(reqs);
    bytes += o.regionSize;
    r = (r + 1) % regions;
    secs = secondsSince(t0);
  } while (secs < o.seconds);
  const uint64_t inFlight = std::min<uint64_t>(o.qd, reqs.size());
  std::printf(
      "mode=write engine=%s direct=%d qd=%u in_flight=%llu piece=%zu region=%llu seconds=%.2f bytes=%llu "
      "mb_s=%.1f\n",
      engine->name(), dev.directIo() ? 1 : 0, o.qd, static_cast<unsigned long long>(inFlight), FlashStore::kWritePiece,
      static_cast<unsigned long long>(o.regionSize), secs, static_cast<unsigned long long>(bytes),
      double(bytes) / secs / 1e6);
  return 0;
}

int readMode(const Options& o) {
  FlashDevice dev(o.file, o.size);
  auto engine = tiercache::openIoEngine(o.engine, dev.fd(), o.qd);
  // Long batches: run() refills as requests complete, so qd stay in flight
  // except while a batch drains.
  const size_t batch = std::max<size_t>(size_t{64} * o.qd, 256);
  tiercache::AlignedBuffer bufs = tiercache::allocAligned(batch * o.bs);
  std::vector<IoRequest> reqs(batch);
  std::mt19937_64 rng(42);
  const uint64_t blocks = o.size / o.bs;
  uint64_t ios = 0;
  const auto t0 = Clock::now();
  double secs = 0;
  do {
    for (size_t i = 0; i < batch; ++i) {
      reqs[i] = IoRequest{};
      reqs[i].op = IoRequest::Op::kRead;
      reqs[i].buf = bufs.get() + i * o.bs;
      reqs[i].offset = (rng() % blocks) * o.bs;
      reqs[i].len = o.bs;
    }
    engine->run(reqs);
    checkAll(reqs);
    ios += batch;
    secs = secondsSince(t0);
  } while (secs < o.seconds);
  std::printf("mode=read engine=%s direct=%d qd=%u bs=%u batch=%zu seconds=%.2f ios=%llu iops=%.0f mb_s=%.1f\n",
              engine->name(), dev.directIo() ? 1 : 0, o.qd, o.bs, batch, secs, static_cast<unsigned long long>(ios),
              double(ios) / secs, double(ios) * o.bs / secs / 1e6);
  return 0;
}

std::string keyOf(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "key:%014llu", static_cast<unsigned long long>(i));
  return buf;
}

int storeMode(const Options& o) {
  tiercache::FlashStoreConfig cfg;
  cfg.path = o.file;
  cfg.size = o.size;
  cfg.region_size = o.regionSize;
  cfg.io_engine = o.engine;
  cfg.queue_depth = o.qd;
  cfg.expected_item_size = std::max<uint64_t>(o.valueSize, 64);
  cfg.discard_contents = true;
  FlashStore store(cfg);
  const auto& c = store.counters();
  std::string value(o.valueSize, 'v');
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>('a' + i % 26);

  // Fill: distinct keys, so nothing is replaced; past one pass over the
  // device, regions are reclaimed (no hits yet, so nothing is reinserted).
  const uint64_t written0 = c.bytes_written.load(), admitted0 = c.item_bytes.load();
  const uint64_t target = static_cast<uint64_t>(o.fill * double(o.size));
  uint64_t n = 0, stored = 0;
  const auto t0 = Clock::now();
  while (c.item_bytes.load() - admitted0 < target) {
    stored += store.insert(keyOf(n), value) == FlashStore::InsertResult::kStored;
    ++n;
  }
  store.flush();
  const double wsecs = secondsSince(t0);
  const uint64_t written = c.bytes_written.load() - written0, admitted = c.item_bytes.load() - admitted0;
  std::printf(
      "mode=store-fill engine=%s direct=%d qd=%u region=%llu value_size=%u seconds=%.2f inserts=%llu "
      "stored=%llu items_s=%.0f item_mb_s=%.1f device_mb_s=%.1f item_bytes=%llu device_bytes=%llu "
      "write_amp=%.3f regions_reclaimed=%llu\n",
      store.engineName(), store.directIo() ? 1 : 0, o.qd, static_cast<unsigned long long>(o.regionSize), o.valueSize,
      wsecs, static_cast<unsigned long long>(n), static_cast<unsigned long long>(stored), double(n) / wsecs,
      double(admitted) / wsecs / 1e6, double(written) / wsecs / 1e6, static_cast<unsigned long long>(admitted),
      static_cast<unsigned long long>(written), admitted ? double(written) / double(admitted) : 0.0,
      static_cast<unsigned long long>(c.regions_reclaimed.load()));
  std::fflush(stdout);

  // Lookups of keys still present: the newest items(), less the active
  // region's (those are served from DRAM, not the device).
  const uint64_t present = store.items();
  const uint64_t perRegion = o.regionSize / (FlashStore::kEntryHeader + 32 + o.valueSize);
  const uint64_t lo = n - std::min(n, present), hi = n - std::min(n - lo, perRegion);
  if (hi <= lo) throw std::runtime_error("store: too few items on the device to read; raise --size or --fill");
  for (const auto [threads, batch] : o.threads) {
    const uint64_t reads0 = c.reads.load(), hits0 = c.hits.load(), misses0 = c.misses.load();
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> lookups{0};
    std::vector<std::thread> pool;
    const auto t1 = Clock::now();
    for (uint32_t t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        std::mt19937_64 rng(t + 7);
        uint64_t mine = 0;
        std::vector<std::string> keys(batch);
        std::vector<std::string_view> views(batch);
        std::vector<std::optional<tiercache::FlashItem>> out(batch);
        std::vector<tiercache::FlashLoc> where(batch);
        while (!stop.load(std::memory_order_relaxed)) {
          if (batch == 1) {
            store.lookup(keyOf(lo + rng() % (hi - lo)));
          } else {
            for (uint32_t i = 0; i < batch; ++i) views[i] = keys[i] = keyOf(lo + rng() % (hi - lo));
            store.lookupMany(views, out, where);
          }
          mine += batch;
        }
        lookups.fetch_add(mine);
      });
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    stop.store(true);
    for (auto& th : pool) th.join();
    const double rsecs = secondsSince(t1);
    const uint64_t reads = c.reads.load() - reads0, hits = c.hits.load() - hits0, misses = c.misses.load() - misses0;
    std::printf(
        "mode=store-read engine=%s threads=%u batch=%u seconds=%.2f lookups=%llu lookups_s=%.0f "
        "device_reads_s=%.0f hits=%llu misses=%llu\n",
        store.engineName(), threads, batch, rsecs, static_cast<unsigned long long>(lookups.load()),
        double(lookups.load()) / rsecs, double(reads) / rsecs, static_cast<unsigned long long>(hits),
        static_cast<unsigned long long>(misses));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: %s write|read|store --file PATH [--size 2GiB] [--seconds 10] [--qd 32]\n"
      "         [--engine auto|io_uring|threads] [--region-size 16MiB] [--bs 4096]\n"
      "         [--value-size 1000] [--fill 1.5] [--threads QD[,T|TxB...]]\n";
  if (argc < 2) {
    std::fprintf(stderr, usage, argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  Options o;
  try {
    if (mode != "write" && mode != "read" && mode != "store") throw BadArg("unknown mode '" + mode + "'");
    o = parse(argc, argv);
  } catch (const BadArg& e) {
    std::fprintf(stderr, "tiercache-flash-bench: %s\n", e.what());
    std::fprintf(stderr, usage, argv[0]);
    return 2;
  }
  try {
    if (mode == "write") return writeMode(o);
    if (mode == "read") return readMode(o);
    return storeMode(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tiercache-flash-bench: %s (engine %s)\n", e.what(), engineArg(o.engine));
    return 1;
  }
}
