// CommandHandler: carries out parsed memcached requests on a Cache.
//
// It knows the protocol's semantics (what each command stores, which reply
// it earns, memcached's expiry rules) and the Cache API; it knows nothing of
// sockets. Replies go to a ReplySink, which the connection backs with its
// output buffer; a value is handed over as a pinned ReadHandle so a large
// value is written to the socket from the item itself, not from a copy.
//
// Threads: one CommandHandler serves all workers (it holds no per-request
// state); counters are per worker (WorkerCounters) and summed by `stats`.
#pragma once

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "../allocator/cache.h"
#include "meta_leases.h"
#include "pending_reads.h"
#include "protocol.h"
#include "server_config.h"

namespace tiercache::server {

class ReplySink {
 public:
  virtual ~ReplySink() = default;
  virtual void add(std::string_view bytes) = 0;
  // The value bytes of `h`; the sink keeps the item pinned until they are written.
  virtual void addValue(ReadHandle&& h) = 0;
  // The sink holds more output than it wants: a long multiget stops at the
  // next batch boundary (getFrom) until the client has read some.
  virtual bool full() const { return false; }
};

// One worker's counters: written by that worker only (relaxed), read by any
// thread answering `stats`.
struct WorkerCounters {
#define TIERCACHE_SERVER_COUNTERS(X)                                                          \
  X(cmd_get, "get/gets/gat/gats keys looked up and mg requests")                              \
  X(cmd_set, "storage commands whose value was read (set/add/replace/append/prepend/cas/ms)") \
  X(cmd_flush, "flush_all requests")                                                          \
  X(cmd_touch, "touch, gat and gats keys")                                                    \
  X(cmd_meta, "meta commands")                                                                \
  X(get_hits, "keys found by get-like commands")                                              \
  X(get_misses, "keys not found by get-like commands")                                        \
  X(delete_hits, "deletes that removed a key")                                                \
  X(delete_misses, "deletes of an absent key")                                                \
  X(incr_hits, "incr/ma increments of a present key")                                         \
  X(incr_misses, "incr/ma increments of an absent key")                                       \
  X(decr_hits, "decr/ma decrements of a present key")                                         \
  X(decr_misses, "decr/ma decrements of an absent key")                                       \
  X(cas_hits, "cas that stored")                                                              \
  X(cas_misses, "cas of an absent key")                                                       \
  X(cas_badval, "cas whose token no longer matched")                                          \
  X(touch_hits, "touch/gat of a present key")                                                 \
  X(touch_misses, "touch/gat of an absent key")                                               \
  X(store_too_large, "values refused as larger than max_item_size")                           \
  X(store_no_memory, "values the cache could not allocate")                                   \
  X(protocol_errors, "requests answered ERROR or CLIENT_ERROR")                               \
  X(bytes_read, "bytes read from clients")                                                    \
  X(bytes_written, "bytes queued to clients")                                                 \
  X(flash_async_reads, "get batches and mg requests that waited for flash off the worker")
#define TIERCACHE_DECLARE_COUNTER(name, help) std::atomic<uint64_t> name{0};
  TIERCACHE_SERVER_COUNTERS(TIERCACHE_DECLARE_COUNTER)
#undef TIERCACHE_DECLARE_COUNTER
  void add(std::atomic<uint64_t>& c, uint64_t n = 1) { c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
};

// Server-wide state that `stats` reports.
struct ServerState {
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::atomic<uint64_t> currConnections{0};
  std::atomic<uint64_t> totalConnections{0};
  std::atomic<uint64_t> rejectedConnections{0};
  std::atomic<uint64_t> listenDisabled{0};  // times accept() ran out of descriptors and paused
  std::atomic<bool> acceptPaused{false};    // accepting paused now (stats: accepting_conns 0)
  // `stats conns`: appends memcached's per-socket lines (listeners, then
  // every connection; `asking` is the connection that asked). Set by the
  // Server; empty where no server runs (the fuzzer).
  std::function<void(std::string& out, const ReplySink* asking)> describeConnections;
  std::atomic<uint64_t> connYields{0};  // times a connection gave way after server.reqs_per_event requests
  std::atomic<uint32_t> verbosity{0};
  // server.use_cas off: the server second of the last flush_all without a
  // delay (-1: none); a value stored in that second is lost, as memcached -C.
  std::atomic<int64_t> flushSecond{-1};
  std::vector<WorkerCounters*> workers;  // fixed once the server runs
  // `stats reset`: the counters as they were then; stats reports what
  // changed since (memcached zeroes its counters; gauges such as curr_items
  // are left alone). Under resetMutex.
  std::mutex resetMutex;
  std::optional<CacheStats> cacheAtReset;
  std::vector<uint64_t> workersAtReset;  // one per TIERCACHE_SERVER_COUNTERS row
  uint64_t totalConnectionsAtReset = 0, rejectedConnectionsAtReset = 0, listenDisabledAtReset = 0;
  uint64_t connYieldsAtReset = 0;
};

// Where a storage request's value is read to: straight into the item that
// will hold it, or (durable_sets, whose items the Cache places in the
// persistent tier only through its copying set()) into a buffer first.
struct PendingValue {
  WriteHandle item;
  std::string copy;
  bool buffered = false;
  char* data() { return buffered ? copy.data() : item.data(); }
  std::string_view view() const { return buffered ? std::string_view(copy) : std::string_view(item.data(), item.size()); }
};

// What the connection does after a request.
enum class Next : uint8_t { kContinue, kClose };

class CommandHandler {
 public:
  CommandHandler(Cache& cache, const ServerConfig& config, ServerState& state);

  // The cache, for lookahead hints (Cache::prefetchIndex) only.
  const Cache& cache() const { return cache_; }

  // Any request that carries no value. With `flash` (configs with a flash
  // store), an mg whose key may be on flash does not wait for it: it returns
  // with flash->inFlight(), and is executed again with the same request
  // once the read is in (it then only writes the reply).
  Next execute(const Request& r, ReplySink& out, WorkerCounters& c, FlashRead* flash = nullptr);

  // Storage requests, in two steps around reading the value. beginStore
  // prepares where the value is to be read (value.data(), valueBytes long);
  // when it returns false, the reply is already written and the value is to
  // be discarded. finishStore publishes it as the command says.
  bool beginStore(const Request& r, ReplySink& out, WorkerCounters& c, PendingValue& value);
  void finishStore(const Request& r, PendingValue&& value, ReplySink& out, WorkerCounters& c);

  // get/gets/gat/gats from key `first` on, in batches of kGetBatch keys (so
  // a multiget pins at most a batch at once); stops after a batch when
  // out.full(). Returns the next key to answer, or r.keys.size() once the
  // closing END is written. With `flash`, get/gets look a batch up with
  // findManyAsync: when some of its keys are being read from flash, it
  // returns that batch's first key with flash->inFlight(); called again
  // from there once the read is in, it answers the batch and goes on.
  static constexpr size_t kGetBatch = 16;
  size_t getFrom(const Request& r, size_t first, ReplySink& out, WorkerCounters& c, FlashRead* flash = nullptr);

  // lru_crawler metadump / mgdump (isKeyDump(r)): the items of up to
  // kDumpBuckets index buckets from `cursor` (0 to start), a line each,
  // stopping early when out.full(). Returns the cursor to go on from, or
  // Cache::kWalkDone once the closing line (END / EN) is written.
  static constexpr uint64_t kDumpBuckets = 1 << 16;
  uint64_t dumpFrom(const Request& r, uint64_t cursor, ReplySink& out);

  static constexpr std::string_view kVersion = "1.6.21-tiercache-0.1.0";

 private:
  void arithmetic(const Request& r, ReplySink& out, WorkerCounters& c);
  void stats(const Request& r, ReplySink& out, WorkerCounters& c);
  // "stats cachedump <class> <limit>" into s; false for bad arguments.
  bool cachedump(std::string_view args, const CacheStats& cs, std::string& s);
  // The `stats slabs` / `stats items` id of a class: 1 + its index in the
  // class ladder, plus one ladder per (tier, pool) before it, so that ids
  // stay put as classes fill and tier 0's are memcached's slab class ids
  // when the ladder is memcached's (allocation min_size 96, growth 1.25).
  uint64_t classNumber(const ClassStats& k) const;
  uint64_t classNumber(uint32_t tier, uint32_t pool, uint32_t classId) const;
  void metaGet(const Request& r, ReplySink& out, WorkerCounters& c, FlashRead* flash);
  void metaDelete(const Request& r, ReplySink& out, WorkerCounters& c);
  void metaDebug(const Request& r, ReplySink& out);
  void metaArithmetic(const Request& r, ReplySink& out, WorkerCounters& c);
  void memlimit(const Request& r, ReplySink& out);

  Cache& cache_;
  LeaseMarks leases_;  // mg's W/Z/X bits of the items a lease command touched
  const ServerConfig& config_;
  ServerState& state_;
};

// Decimal text appended to a reply or a stats line.
inline void addNumber(std::string& s, uint64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  s.append(buf, p);
}
inline void addSigned(std::string& s, int64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  s.append(buf, p);
}
// The server's clock: the wall clock, moved ahead by `debugtime` (only
// accepted with server.debug_commands, as memcached-debug's). With
// debug_commands the clock also ticks in whole seconds, as memcached's does,
// so that moving it by an item's TTL expires the item (a sub-second clock
// keeps it up to a second longer, as tiercache rounds deadlines up). The
// cache reads the same clock then (tools/tiercache_server.cc passes
// serverNow as its expiry clock).
struct ServerClock {
  std::atomic<int64_t> shiftSeconds{0};
  std::atomic<bool> wholeSeconds{false};
};
ServerClock& serverClock();
inline std::chrono::system_clock::time_point serverNow() {
  const ServerClock& c = serverClock();
  const auto shift = std::chrono::seconds(c.shiftSeconds.load(std::memory_order_relaxed));
  const auto t = std::chrono::system_clock::now() + shift;
  return c.wholeSeconds.load(std::memory_order_relaxed) ? std::chrono::floor<std::chrono::seconds>(t) : t;
}
inline int64_t nowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(serverNow().time_since_epoch()).count();
}

// memcached's expiry rule: 0 = never; negative = already expired; up to 30
// days = seconds from now; beyond = absolute unix time. Returns the TTL to
// give the cache (0s = never), or nullopt when the item is already expired.
std::optional<std::chrono::seconds> ttlFromExptime(int64_t exptime, int64_t nowUnix);

}  // namespace tiercache::server
