#include "bench/runner.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <latch>
#include <memory>
#include <stdexcept>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "bench/key_space.h"
#include "bench/popularity.h"
#include "allocator/item.h"
#include "bench/request_stream.h"
#include "bench/trace.h"
#include "bench/value_codec.h"

namespace tiercache::bench {

const std::array<OpCounterDesc, kOpCounterCount>& opCounterTable() {
#define TIERCACHE_BENCH_OP_ROW(name, kind, help) OpCounterDesc{#name, OpCounterKind::kind, help, &OpCounts::name},
  static const std::array<OpCounterDesc, kOpCounterCount> table{{TIERCACHE_BENCH_OP_COUNTERS(TIERCACHE_BENCH_OP_ROW)}};
#undef TIERCACHE_BENCH_OP_ROW
  return table;
}

OpCounts& OpCounts::operator+=(const OpCounts& o) {
  for (const OpCounterDesc& d : opCounterTable()) this->*d.field += o.*d.field;
  return *this;
}

namespace {

using Clock = std::chrono::steady_clock;

uint64_t nanosSince(Clock::time_point t0) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

// User + system CPU of the whole process so far.
double processCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

// One writer (its worker), any number of readers (progress): relaxed
// load+store is enough and costs a plain store on x86.
struct alignas(64) ThreadCounters {
#define TIERCACHE_BENCH_OP_ATOMIC(name, kind, help) std::atomic<uint64_t> name{0};
  TIERCACHE_BENCH_OP_COUNTERS(TIERCACHE_BENCH_OP_ATOMIC)
#undef TIERCACHE_BENCH_OP_ATOMIC

  static void bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  OpCounts read() const {
    OpCounts o;
#define TIERCACHE_BENCH_OP_READ(name, kind, help) o.name = name.load(std::memory_order_relaxed);
    TIERCACHE_BENCH_OP_COUNTERS(TIERCACHE_BENCH_OP_READ)
#undef TIERCACHE_BENCH_OP_READ
    return o;
  }
};
static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t) &&
                  sizeof(ThreadCounters) == (kOpCounterCount * sizeof(uint64_t) + 63) / 64 * 64,
              "every ThreadCounters counter is a row of TIERCACHE_BENCH_OP_COUNTERS");

class Worker {
 public:
  Worker(Cache& cache, ChainedItems* chains, std::vector<std::shared_mutex>* keyLocks, const WorkloadConfig& config,
         const KeySpace& keys, const KeySampler& sampler, uint32_t thread, ThreadCounters& counters,
         std::mutex& mismatchMu, std::string& firstMismatch)
      : cache_(cache),
        chains_(chains),
        keyLocks_(keyLocks),
        rng_(Rng::forThread(config.seed ^ 0x636861696e, thread)),
        config_(config),
        keys_(keys),
        sampler_(sampler),
        thread_(thread),
        c_(counters),
        mismatchMu_(mismatchMu),
        firstMismatch_(firstMismatch) {}

  void prepopulate() {
    uint64_t n = RequestStream::prepopulateCount(keys_.size(), config_.threads, thread_);
    for (uint64_t i = 0; i < n; ++i) set(RequestStream::prepopulateIndex(keys_.size(), config_.threads, thread_, i));
  }

  void run() {
    RequestStream stream(config_, sampler_, thread_);
    bool delay = config_.op_delay_batch > 0 && config_.op_delay_ns > 0;
    uint64_t sinceDelay = 0;
    for (uint64_t op = 0; op < config_.ops_per_thread; ++op) {
      Request r = stream.next();
      switch (r.op) {
        case RequestOp::kGet: get(r.index); break;
        case RequestOp::kSet:
          if (!config_.only_set_if_miss || !present(r.index)) set(r.index);
          break;
        case RequestOp::kDel: remove(r.index); break;
        case RequestOp::kLoneGet: loneGet(r.index); break;
        case RequestOp::kAddChained: addChained(r.index); break;
        case RequestOp::kUpdate: update(r.index); break;
        case RequestOp::kCouldExist: couldExist(r.index); break;
        case RequestOp::kLoneSet: loneSet(r.index, r.seq); break;
      }
      // cachebench's opDelayBatch / opDelayNs: a pause after each batch.
      if (delay && ++sinceDelay == config_.op_delay_batch) {
        sinceDelay = 0;
        std::this_thread::sleep_for(std::chrono::nanoseconds(config_.op_delay_ns));
      }
    }
  }

  LatencyHistogram getLatency, setLatency;

 private:
  void get(uint64_t index) {
    keys_.key(index, key_);
    ThreadCounters::bump(c_.gets);
    // The find is timed; verifying the value is the bench's work, not the cache's.
    const Clock::time_point t0 = Clock::now();
    const uint64_t bytes = sizeof(Item) + key_.size() + keys_.valueSize(index);
    ThreadCounters::bump(c_.get_bytes, bytes);
    std::shared_lock<std::shared_mutex> shared;
    if (std::shared_mutex* m = keyLock()) shared = std::shared_lock(*m);
    ReadHandle h = cache_.find(key_);
    getLatency.record(nanosSince(t0));
    if (h) {
      if (h.key() != key_ || !ValueCodec::verify(key_, keys_.valueSize(index), h.value())) mismatch(index, h);
      if (!chains_ || chainWhole(index, std::move(h))) {
        ThreadCounters::bump(c_.get_hits);
        ThreadCounters::bump(c_.get_hit_bytes, bytes);
        return;
      }
    }
    h.reset();
    if (shared.owns_lock()) shared.unlock();
    if (config_.lookaside) {
      ThreadCounters::bump(c_.lookaside_sets);
      if (set(index)) ThreadCounters::bump(c_.lookaside_stored);
    }
  }

  // The key of `index` into key_, counted as a get of its item's bytes
  // (returned) by the ops that start with a find.
  uint64_t countGet(uint64_t index) {
    keys_.key(index, key_);
    ThreadCounters::bump(c_.gets);
    const uint64_t bytes = sizeof(Item) + key_.size() + keys_.valueSize(index);
    ThreadCounters::bump(c_.get_bytes, bytes);
    return bytes;
  }

  // cachebench's update: a find of the key (a get), verified; a miss is
  // not filled. With chains the parent's chain must be whole.
  void update(uint64_t index) {
    const uint64_t bytes = countGet(index);
    ThreadCounters::bump(c_.updates);
    std::unique_lock<std::shared_mutex> alone;
    if (std::shared_mutex* m = keyLock()) alone = std::unique_lock(*m);
    ReadHandle h = cache_.find(key_);
    if (!h) return;
    if (h.key() != key_ || !ValueCodec::verify(key_, keys_.valueSize(index), h.value())) mismatch(index, h);
    if (chains_ && !chainWhole(index, std::move(h))) return;
    ThreadCounters::bump(c_.get_hits);
    ThreadCounters::bump(c_.get_hit_bytes, bytes);
  }

  // onlySetIfMiss: a set of a key already cached is skipped, not counted.
  bool present(uint64_t index) {
    keys_.key(index, key_);
    return bool(cache_.find(key_));
  }

  void loneGet(uint64_t index) {
    keys_.loneKey(index, key_);
    ThreadCounters::bump(c_.gets);
    ThreadCounters::bump(c_.get_bytes, sizeof(Item) + key_.size());
    ReadHandle h = cache_.find(key_);
    if (h) {
      // A lone key is never set: any hit is another key's item.
      ThreadCounters::bump(c_.get_hits);
      mismatch(index, h);
    }
  }

  // cachebench's couldExist: counts the answers; nothing to verify.
  void couldExist(uint64_t index) {
    keys_.key(index, key_);
    ThreadCounters::bump(c_.could_exists);
    if (cache_.couldExist(key_)) ThreadCounters::bump(c_.could_exist_true);
  }

  // cachebench's lone set: a fresh key with the drawn index's value size
  // and TTL, in its pool. No other request names the key: it is never read.
  void loneSet(uint64_t index, uint64_t seq) {
    const Cache::Ttl ttl = drawTtl(index);
    KeySpace::loneSetKey(seq, key_);
    ThreadCounters::bump(c_.sets);
    ThreadCounters::bump(c_.lone_sets);
    const size_t size = keys_.valueSize(index);
    const Clock::time_point t0 = Clock::now();
    WriteHandle w = cache_.allocate(PoolId(keys_.poolOf(index)), key_, size, ttl);
    if (w) {
      ValueCodec::fill(key_, (uint64_t(thread_ + 1) << 48) | ++stamp_, w.data(), size);
      if (chains_) {
        chains_->insertOrReplace(std::move(w));
      } else {
        cache_.insertOrReplace(std::move(w));
      }
      ThreadCounters::bump(c_.set_success);
    }
    setLatency.record(nanosSince(t0));
  }

  bool set(uint64_t index) {
    keys_.key(index, key_);
    ThreadCounters::bump(c_.sets);
    size_t size = keys_.valueSize(index);
    const Cache::Ttl ttl = drawTtl(index);
    // Not held when addChained calls in (it holds the key's lock already).
    std::unique_lock<std::shared_mutex> alone;
    if (std::shared_mutex* m = keyLock(); m && !inChainOp_) alone = std::unique_lock(*m);
    const Clock::time_point t0 = Clock::now();
    WriteHandle w = cache_.allocate(PoolId(keys_.poolOf(index)), key_, size, ttl);
    if (!w) {
      setLatency.record(nanosSince(t0));
      return false;
    }
    ValueCodec::fill(key_, (uint64_t(thread_ + 1) << 48) | ++stamp_, w.data(), size);
    // A chained workload stores every parent with an (empty) chain, which
    // also drops the key's old chain, as a set of a CacheLib parent does.
    if (chains_) {
      chains_->insertOrReplace(std::move(w));
    } else {
      cache_.insertOrReplace(std::move(w));
    }
    setLatency.record(nanosSince(t0));
    ThreadCounters::bump(c_.set_success);
    return true;
  }

  void remove(uint64_t index) {
    keys_.key(index, key_);
    ThreadCounters::bump(c_.removes);
    std::unique_lock<std::shared_mutex> alone;
    if (std::shared_mutex* m = keyLock()) alone = std::unique_lock(*m);
    if (chains_ ? chains_->remove(key_) : cache_.remove(key_)) ThreadCounters::bump(c_.remove_success);
  }

  // A key's TTL: cachebench draws one per key, so the draw is seeded by the
  // key index (a share ttl_ratio of the keys get one); 0 means none.
  Cache::Ttl drawTtl(uint64_t index) {
    if (config_.ttl_ratio <= 0 || config_.ttl_secs_buckets.empty()) return Cache::Ttl::zero();
    Rng r(config_.seed ^ (index * 0x9e3779b97f4a7c15ull) ^ 0x74746c);
    if (r.uniform() >= config_.ttl_ratio) return Cache::Ttl::zero();
    const uint64_t secs = draw(config_.ttl_secs_buckets, r);
    if (secs == 0) return Cache::Ttl::zero();
    ThreadCounters::bump(c_.ttl_sets);
    return Cache::Ttl(int64_t(std::min<uint64_t>(secs, uint64_t(1) << 40)));
  }

  // A value in one of the buckets: a bucket by weight, then uniform in it.
  uint64_t draw(const std::vector<SizeBucket>& buckets) { return draw(buckets, rng_); }
  static uint64_t draw(const std::vector<SizeBucket>& buckets, Rng& rng) {
    double total = 0;
    for (const SizeBucket& b : buckets) total += b.weight;
    double x = rng.uniform() * total;
    const SizeBucket* pick = &buckets.back();
    for (const SizeBucket& b : buckets) {
      if (x < b.weight) {
        pick = &b;
        break;
      }
      x -= b.weight;
    }
    return pick->range.min + rng.below(pick->range.max - pick->range.min + 1);
  }

  // The label a key's children are filled and checked with: never a key's
  // own, so a parent's value cannot pass for a child's.
  const std::string& childLabel() {
    label_.assign(key_).append("\x01chain", 6);
    return label_;
  }

  // Reads the parent's whole chain and checks every child's bytes; false
  // (a miss) when the chain is not whole.
  bool chainWhole(uint64_t index, ReadHandle parent) {
    ChainView v = chains_->viewChain(std::move(parent));
    if (!v) {
      ThreadCounters::bump(c_.chain_broken);
      return false;
    }
    const std::string& label = childLabel();
    for (size_t i = 0; i < v.size(); ++i) {
      std::string_view c = v.child(i);
      // A child's size is drawn per add; its length is checked by the codec's hash.
      if (!ValueCodec::verify(label, c.size(), c)) mismatch(index, v.children[i]);
    }
    ThreadCounters::bump(c_.chain_children_read, v.size());
    return true;
  }

  // cachebench's add-chained op: find the parent (set it when absent, a
  // get miss), then add a chain of children to it.
  void addChained(uint64_t index) {
    const uint64_t bytes = countGet(index);
    ThreadCounters::bump(c_.chain_adds);
    std::unique_lock<std::shared_mutex> alone(*keyLock());
    ReadHandle h = cache_.find(key_);
    if (h) {
      ThreadCounters::bump(c_.get_hits);
      ThreadCounters::bump(c_.get_hit_bytes, bytes);
    } else {
      inChainOp_ = true;
      const bool stored = set(index);
      inChainOp_ = false;
      if (!stored) return;
      h = cache_.peek(key_);
      if (!h) return;
    }
    const uint64_t n = draw(config_.chain_length_buckets);
    const std::string& label = childLabel();
    for (uint64_t j = 0; j < n; ++j) {
      const size_t size = draw(config_.chain_value_size_buckets);
      const uint64_t stamp = (uint64_t(thread_ + 1) << 48) | ++stamp_;
      const bool ok = chains_->addChainedItem(
          h, size, [&](char* out, size_t len) { ValueCodec::fill(label, stamp, out, len); },
          PoolId(keys_.poolOf(index)));
      ThreadCounters::bump(ok ? c_.chain_children : c_.chain_add_failures);
    }
  }

  void mismatch(uint64_t index, const ReadHandle& h) {
    ThreadCounters::bump(c_.value_mismatches);
    std::lock_guard lock(mismatchMu_);
    if (!firstMismatch_.empty()) return;
    firstMismatch_ = "key index " + std::to_string(index) + " (\"" + key_ + "\"): expected " +
                     std::to_string(keys_.valueSize(index)) + " bytes, read " + std::to_string(h.value().size()) +
                     " bytes under key \"" + std::string(h.key()) + "\" from tier " + std::to_string(h.tier());
  }

  Cache& cache_;
  ChainedItems* chains_;  // null unless the workload adds chains
  // With chains, cachebench's per-key locks: gets share a key's lock, sets,
  // deletes and chain adds hold it alone, so a get never lands between a
  // parent's publish and its chain's (that would be a miss cachebench
  // never sees). Null without chains.
  std::vector<std::shared_mutex>* keyLocks_;
  std::shared_mutex* keyLock() { return keyLocks_ ? &(*keyLocks_)[std::hash<std::string>{}(key_) % keyLocks_->size()] : nullptr; }
  Rng rng_;               // chain lengths, chained value sizes, TTLs
  const WorkloadConfig& config_;
  const KeySpace& keys_;
  const KeySampler& sampler_;
  uint32_t thread_;
  ThreadCounters& c_;
  std::mutex& mismatchMu_;
  std::string& firstMismatch_;
  std::string key_;
  std::string label_;
  uint64_t stamp_ = 0;
  bool inChainOp_ = false;  // set() called by addChained, under the key's lock
};

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

OpCounts sum(const std::vector<std::unique_ptr<ThreadCounters>>& counters) {
  OpCounts total;
  for (const auto& c : counters) total += c->read();
  return total;
}

// Runs body(t) on `count` threads started together and reports progress
// from the calling thread until all are done; returns the wall-clock seconds.
template <class Body>
double runMeasured(uint32_t count, const std::vector<std::unique_ptr<ThreadCounters>>& counters, uint64_t totalOps,
                   const RunOptions& options, Body body) {
  std::mutex doneMu;
  std::condition_variable doneCv;
  uint32_t running = count;
  std::latch start(count + 1);
  // Each worker notes when it started: on a busy machine the calling thread
  // can be descheduled between the latch and its own clock read while the
  // workers run, and a clock read there alone would leave their first
  // milliseconds out of the elapsed time.
  std::vector<Clock::time_point> started(count, Clock::time_point::max());
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < count; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      started[t] = Clock::now();
      body(t);
      std::lock_guard lock(doneMu);
      if (--running == 0) doneCv.notify_all();
    });
  }
  start.arrive_and_wait();
  Clock::time_point t0 = Clock::now();
  {
    std::unique_lock lock(doneMu);
    bool report = options.progress && options.progress_interval.count() > 0;
    while (running > 0) {
      if (!report) {
        doneCv.wait(lock, [&] { return running == 0; });
        break;
      }
      if (doneCv.wait_for(lock, options.progress_interval, [&] { return running == 0; })) break;
      lock.unlock();
      options.progress(ProgressSnapshot{secondsSince(t0), sum(counters), totalOps});
      lock.lock();
    }
  }
  for (auto& t : threads) t.join();
  for (const Clock::time_point& s : started) t0 = std::min(t0, s);
  return secondsSince(t0);
}

// Replays every threads-th record of a trace, starting at `thread`.
class TraceWorker {
 public:
  TraceWorker(Cache& cache, const Trace& trace, const ReplayConfig& config, uint32_t thread, ThreadCounters& counters,
              std::mutex& mismatchMu, std::string& firstMismatch)
      : cache_(cache),
        trace_(trace),
        config_(config),
        thread_(thread),
        c_(counters),
        mismatchMu_(mismatchMu),
        firstMismatch_(firstMismatch) {}

  void run() {
    for (size_t i = thread_; i < trace_.size(); i += config_.threads) {
      TraceRecord r = trace_[i];
      switch (r.op) {
        case RequestOp::kGet:
        case RequestOp::kAddChained:  // never in a trace (trace.cc refuses ops above kLoneGet)
        case RequestOp::kUpdate:
        case RequestOp::kCouldExist:
        case RequestOp::kLoneGet: get(i, r); break;
        case RequestOp::kSet:
        case RequestOp::kLoneSet: set(r); break;
        case RequestOp::kDel:
          ThreadCounters::bump(c_.removes);
          if (cache_.remove(r.key)) ThreadCounters::bump(c_.remove_success);
          break;
      }
    }
  }

 private:
  void get(size_t i, const TraceRecord& r) {
    ThreadCounters::bump(c_.gets);
    const uint64_t bytes = sizeof(Item) + r.key.size() + (r.op == RequestOp::kGet ? r.size : 0);
    ThreadCounters::bump(c_.get_bytes, bytes);
    ReadHandle h = cache_.find(r.key);
    if (h) {
      ThreadCounters::bump(c_.get_hits);
      ThreadCounters::bump(c_.get_hit_bytes, bytes);
      // A trace may set one key with several sizes: check the value against
      // the length it has.
      if (h.key() != r.key || !ValueCodec::verify(r.key, h.value().size(), h.value())) {
        ThreadCounters::bump(c_.value_mismatches);
        std::lock_guard lock(mismatchMu_);
        if (firstMismatch_.empty())
          firstMismatch_ = "trace record " + std::to_string(i) + " (\"" + std::string(r.key) + "\"): read " +
                           std::to_string(h.value().size()) + " bytes under key \"" + std::string(h.key()) +
                           "\" from tier " + std::to_string(h.tier());
      }
      return;
    }
    h.reset();
    if (r.op == RequestOp::kGet && config_.lookaside) {
      ThreadCounters::bump(c_.lookaside_sets);
      if (set(r)) ThreadCounters::bump(c_.lookaside_stored);
    }
  }

  bool set(const TraceRecord& r) {
    ThreadCounters::bump(c_.sets);
    WriteHandle w = cache_.allocate(r.key, r.size);
    if (!w) return false;
    ValueCodec::fill(r.key, (uint64_t(thread_ + 1) << 48) | ++stamp_, w.data(), r.size);
    cache_.insertOrReplace(std::move(w));
    ThreadCounters::bump(c_.set_success);
    return true;
  }

  Cache& cache_;
  const Trace& trace_;
  const ReplayConfig& config_;
  uint32_t thread_;
  ThreadCounters& c_;
  std::mutex& mismatchMu_;
  std::string& firstMismatch_;
  uint64_t stamp_ = 0;
};

}  // namespace

WorkloadResult runWorkload(Cache& cache, const WorkloadConfig& config, const RunOptions& options) {
  config.validate();
  if (config.key_pools.size() > cache.poolCount())
    throw std::invalid_argument("the workload spreads keys over " + std::to_string(config.key_pools.size()) +
                                " pools (workload.key_pools) but the cache has " + std::to_string(cache.poolCount()));
  KeySpace keys(config);
  std::unique_ptr<KeySampler> sampler = KeySampler::forWorkload(config);
  WorkloadResult result;
  if (config.key_size.min < KeySpace::indexWidth(config.keys) && config.keys <= WorkloadResult::kMaxCountedKeys)
    result.distinct_keys = keys.distinctKeys();
  std::mutex mismatchMu;
  std::unique_ptr<ChainedItems> chains;
  std::unique_ptr<std::vector<std::shared_mutex>> keyLocks;
  if (config.add_chained_ratio > 0) {
    chains = std::make_unique<ChainedItems>(cache, options.chain_hook);
    keyLocks = std::make_unique<std::vector<std::shared_mutex>>(4096);
  }

  auto makeWorkers = [&](std::vector<std::unique_ptr<ThreadCounters>>& counters) {
    std::vector<std::unique_ptr<Worker>> workers;
    for (uint32_t t = 0; t < config.threads; ++t) {
      counters.push_back(std::make_unique<ThreadCounters>());
      workers.push_back(std::make_unique<Worker>(cache, chains.get(), keyLocks.get(), config, keys, *sampler, t,
                                                 *counters.back(), mismatchMu, result.first_mismatch));
    }
    return workers;
  };

  if (config.prepopulate) {
    std::vector<std::unique_ptr<ThreadCounters>> counters;
    auto workers = makeWorkers(counters);
    Clock::time_point t0 = Clock::now();
    std::vector<std::thread> threads;
    for (auto& w : workers) threads.emplace_back([&w] { w->prepopulate(); });
    for (auto& t : threads) t.join();
    result.prepopulate_seconds = secondsSince(t0);
    result.prepopulate = sum(counters);
  }

  std::vector<std::unique_ptr<ThreadCounters>> counters;
  auto workers = makeWorkers(counters);
  result.before = cache.stats();
  const double cpu0 = processCpuSeconds();
  result.elapsed_seconds = runMeasured(config.threads, counters, config.ops_per_thread * config.threads, options,
                                       [&](uint32_t t) { workers[t]->run(); });
  result.cpu_seconds = processCpuSeconds() - cpu0;
  result.ops = sum(counters);
  result.after = cache.stats();
  for (const auto& w : workers) {
    result.get_latency.merge(w->getLatency);
    result.set_latency.merge(w->setLatency);
  }
  if (config.idle_ms > 0) {
    // The workload paused: what the cache's own threads cost meanwhile.
    const double idle0 = processCpuSeconds();
    const Clock::time_point t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(config.idle_ms));
    result.idle_seconds = secondsSince(t0);
    result.idle_cpu_seconds = processCpuSeconds() - idle0;
  }
  return result;
}

WorkloadResult runTrace(Cache& cache, const Trace& trace, const ReplayConfig& config, const RunOptions& options) {
  if (config.threads < 1 || config.threads > 1024) throw std::invalid_argument("replay threads must be in [1,1024]");
  WorkloadResult result;
  std::mutex mismatchMu;
  std::vector<std::unique_ptr<ThreadCounters>> counters;
  std::vector<std::unique_ptr<TraceWorker>> workers;
  for (uint32_t t = 0; t < config.threads; ++t) {
    counters.push_back(std::make_unique<ThreadCounters>());
    workers.push_back(std::make_unique<TraceWorker>(cache, trace, config, t, *counters.back(), mismatchMu,
                                                    result.first_mismatch));
  }
  result.before = cache.stats();
  const double cpu0 = processCpuSeconds();
  result.elapsed_seconds =
      runMeasured(config.threads, counters, trace.size(), options, [&](uint32_t t) { workers[t]->run(); });
  result.cpu_seconds = processCpuSeconds() - cpu0;
  result.ops = sum(counters);
  result.after = cache.stats();
  return result;
}

}  // namespace tiercache::bench
