// tiercache-microbench: Cache operations beside the same operation on a
// baseline, in one binary and one run, so every figure has a ratio.
//
// The baseline is what a server would write without tiercache: one mutex
// over a std::unordered_map<std::string, list iterator> and a std::list in
// LRU order holding std::string values, evicting by the same byte budget as
// the cache's DRAM tier (key + value + an estimate of the node overhead).
//
// BM_FindHit also runs two plain maps (no cache: see PlainMapReadImpl),
// the hit path's yardstick.
//
// Names read BM_<Op>/<impl>/real_time/threads:<n>; bench/ratios.py turns the
// JSON output into tiercache/baseline ratios. Fixtures are built once per
// process (outside every timed loop) and shared by the thread counts:
//   read fixture:  kReadKeys items that fit both implementations, never evicted
//   write fixture: prefilled with kWriteKeys keys, more than either holds, so
//                  sets evict in steady state.
#include <benchmark/benchmark.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "allocator/cache.h"
#include "bench/popularity.h"

namespace tiercache::bench {
namespace {

constexpr uint64_t kCacheBytes = 128ull << 20;
constexpr size_t kValueSize = 100;
constexpr uint64_t kReadKeys = 200'000;    // ~30 MB with headers: fits both
constexpr uint64_t kWriteKeys = 2'000'000; // ~300 MB: twice what either holds

std::string keyOf(const char* prefix, uint64_t i) {
  char buf[32];
  // 15 characters at most with a 4-character prefix: libstdc++ keeps the
  // key inside the std::string (no heap pointer to chase), so the harness
  // adds as few cache misses as possible to either implementation.
  std::snprintf(buf, sizeof buf, "%s%011llu", prefix, static_cast<unsigned long long>(i));
  return buf;
}

std::vector<std::string> makeKeys(const char* prefix, uint64_t n) {
  std::vector<std::string> keys;
  keys.reserve(n);
  for (uint64_t i = 0; i < n; ++i) keys.push_back(keyOf(prefix, i));
  return keys;
}

const std::string& valueBytes() {
  static const std::string v = [] {
    std::string s(kValueSize, '\0');
    for (size_t i = 0; i < s.size(); ++i) s[i] = char('a' + i % 26);
    return s;
  }();
  return v;
}

// ---------------------------------------------------------------------------
// The baseline: mutex + unordered_map + std::list LRU, byte-bounded.

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class BaselineLru {
 public:
  explicit BaselineLru(size_t budgetBytes) : budget_(budgetBytes) {}

  template <class Visit>
  bool find(std::string_view key, Visit&& visit) {
    std::lock_guard lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return false;
    lru_.splice(lru_.begin(), lru_, it->second);
    visit(std::string_view(it->second->value));
    return true;
  }

  void set(std::string_view key, std::string value) {
    std::lock_guard lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) {
      bytes_ -= charge(*it->second);
      it->second->value = std::move(value);
      bytes_ += charge(*it->second);
      lru_.splice(lru_.begin(), lru_, it->second);
    } else {
      lru_.push_front(Entry{std::string(key), std::move(value)});
      map_.emplace(lru_.front().key, lru_.begin());
      bytes_ += charge(lru_.front());
    }
    while (bytes_ > budget_ && !lru_.empty()) {
      Entry& victim = lru_.back();
      bytes_ -= charge(victim);
      map_.erase(victim.key);
      lru_.pop_back();
    }
  }

 private:
  struct Entry {
    std::string key;
    std::string value;
  };
  using List = std::list<Entry>;
  // What one entry costs beyond key and value bytes: the list node (two
  // strings, two links), the map node (a string, an iterator, a next link,
  // the cached hash) and one bucket pointer.
  static constexpr size_t kOverhead = sizeof(Entry) + 2 * sizeof(void*) + sizeof(std::string) +
                                      sizeof(List::iterator) + 2 * sizeof(void*) + sizeof(void*);
  static size_t charge(const Entry& e) { return e.key.size() + e.value.size() + kOverhead; }

  std::mutex mu_;
  List lru_;
  std::unordered_map<std::string, List::iterator, StringHash, std::equal_to<>> map_;
  size_t bytes_ = 0;
  size_t budget_;
};

// ---------------------------------------------------------------------------
// The two implementations behind one interface for the benchmark bodies.

struct TiercacheImpl {
  static constexpr const char* kName = "tiercache";
  TiercacheImpl() : TiercacheImpl(CacheConfig::dram(kCacheBytes)) {}
  explicit TiercacheImpl(const CacheConfig& c) : cache(c) {}
  Cache cache;

  bool find(std::string_view key) {
    ReadHandle h = cache.find(key);
    if (!h) return false;
    benchmark::DoNotOptimize(h.value()[0]);  // touch the value, as a reader would
    return true;
  }
  bool set(std::string_view key, std::string_view value) { return cache.set(key, value); }
  bool allocateInsert(std::string_view key, std::string_view value) {
    WriteHandle w = cache.allocate(key, value.size());
    if (!w) return false;
    std::memcpy(w.data(), value.data(), value.size());
    cache.insertOrReplace(std::move(w));
    return true;
  }
};

// The cache as it was before W-TinyLFU became the default: LRU with a fixed
// 1 s refresh interval. FindHit runs it too, so the default policy's hit
// path has a ratio against it from the same run.
struct TiercacheLruImpl : TiercacheImpl {
  static constexpr const char* kName = "tiercache-lru";
  TiercacheLruImpl() : TiercacheImpl(lruConfig()) {}
  static CacheConfig lruConfig() {
    CacheConfig c = CacheConfig::dram(kCacheBytes);
    c.eviction.policy = EvictionPolicyKind::kLru;
    c.eviction.lru_refresh_ratio = 0;
    return c;
  }
};

struct TiercacheS3FifoImpl : TiercacheImpl {
  static constexpr const char* kName = "tiercache-s3fifo";
  TiercacheS3FifoImpl() : TiercacheImpl(s3fifoConfig()) {}
  static CacheConfig s3fifoConfig() {
    CacheConfig c = CacheConfig::dram(kCacheBytes);
    c.eviction.policy = EvictionPolicyKind::kS3Fifo;
    return c;
  }
};

struct TiercacheClockImpl : TiercacheImpl {
  static constexpr const char* kName = "tiercache-clock";
  TiercacheClockImpl() : TiercacheImpl(clockConfig()) {}
  static CacheConfig clockConfig() {
    CacheConfig c = CacheConfig::dram(kCacheBytes);
    c.eviction.policy = EvictionPolicyKind::kClock;
    return c;
  }
};

// The default policy with the marginal-hits slab rebalancer: its ghosts are
// read on allocations and lower-tier hits only, so a hit should cost the same.
struct TiercacheMarginalImpl : TiercacheImpl {
  static constexpr const char* kName = "tiercache-marginal-hits";
  TiercacheMarginalImpl() : TiercacheImpl(marginalConfig()) {}
  static CacheConfig marginalConfig() {
    CacheConfig c = CacheConfig::dram(kCacheBytes);
    c.rebalance.strategy = "marginal-hits";
    return c;
  }
};

struct BaselineImpl {
  static constexpr const char* kName = "baseline";
  BaselineLru lru{kCacheBytes};

  bool find(std::string_view key) {
    return lru.find(key, [](std::string_view v) { benchmark::DoNotOptimize(v[0]); });
  }
  // The copying API: the value is copied into a new string, as Cache::set copies.
  bool set(std::string_view key, std::string_view value) {
    lru.set(key, std::string(value));
    return true;
  }
  // The closest analogue of allocate + fill + insert: make the buffer, fill
  // it in place, hand it over.
  bool allocateInsert(std::string_view key, std::string_view value) {
    std::string buf(value.size(), '\0');
    std::memcpy(buf.data(), value.data(), value.size());
    lru.set(key, std::move(buf));
    return true;
  }
};

// The plain-map read baselines of BM_FindHit: what a lookup costs with no
// cache around it, the yardstick of the hit path (docs/design.md, "The hit
// path"). Neither evicts, counts or orders anything; find() reads the value's
// first byte, as the others do. The fixture fills them before any timed loop.
//   plain-map-read:        one std::unordered_map<std::string, std::string>,
//                          read-only and unlocked: nothing written per read.
//   plain-map-shared-lock: 1024 such maps, each read under its own
//                          std::shared_mutex (a reader-count write per read),
//                          as a concurrent server would guard a map that
//                          also takes writes; the cache's index has 1024
//                          lock stripes by default.
using PlainMap = std::unordered_map<std::string, std::string, StringHash, std::equal_to<>>;

struct PlainMapReadImpl {
  static constexpr const char* kName = "plain-map-read";
  PlainMap map;
  bool find(std::string_view key) {
    auto it = map.find(key);
    if (it == map.end()) return false;
    benchmark::DoNotOptimize(it->second[0]);
    return true;
  }
  bool set(std::string_view key, std::string_view value) {  // fixture only: never concurrent with find
    map.insert_or_assign(std::string(key), std::string(value));
    return true;
  }
};

struct PlainMapSharedLockImpl {
  static constexpr const char* kName = "plain-map-shared-lock";
  static constexpr size_t kShards = 1024;
  struct alignas(64) Shard {
    std::shared_mutex mu;
    PlainMap map;
  };
  std::unique_ptr<Shard[]> shards{new Shard[kShards]};
  Shard& shardOf(std::string_view key) { return shards[StringHash{}(key) % kShards]; }
  bool find(std::string_view key) {
    Shard& s = shardOf(key);
    std::shared_lock lock(s.mu);
    auto it = s.map.find(key);
    if (it == s.map.end()) return false;
    benchmark::DoNotOptimize(it->second[0]);
    return true;
  }
  bool set(std::string_view key, std::string_view value) {
    Shard& s = shardOf(key);
    std::unique_lock lock(s.mu);
    s.map.insert_or_assign(std::string(key), std::string(value));
    return true;
  }
};

template <class Impl>
Impl& readFixture() {
  static Impl* impl = [] {
    auto* i = new Impl();
    for (const std::string& k : makeKeys("hit:", kReadKeys)) i->set(k, valueBytes());
    return i;
  }();
  return *impl;
}

template <class Impl>
Impl& writeFixture() {
  static Impl* impl = [] {
    auto* i = new Impl();
    for (uint64_t k = 0; k < kWriteKeys; ++k) i->set(keyOf("set:", k), valueBytes());
    return i;
  }();
  return *impl;
}

const std::vector<std::string>& hitKeys() {
  static const std::vector<std::string> keys = makeKeys("hit:", kReadKeys);
  return keys;
}
const std::vector<std::string>& missKeys() {
  static const std::vector<std::string> keys = makeKeys("mis:", kReadKeys);
  return keys;
}
const std::vector<std::string>& setKeys() {
  static const std::vector<std::string> keys = makeKeys("set:", kWriteKeys);
  return keys;
}

// Pre-drawn uniform key indices per thread, so the loop times the cache
// rather than the random number generator.
std::vector<uint32_t> drawIndices(uint64_t n, int thread) {
  std::vector<uint32_t> idx(1 << 16);
  Rng rng = Rng::forThread(42, uint64_t(thread));
  for (auto& i : idx) i = uint32_t(rng.below(n));
  return idx;
}

template <class Impl>
void BM_FindHit(benchmark::State& state) {
  Impl& impl = readFixture<Impl>();
  const auto& keys = hitKeys();
  auto idx = drawIndices(keys.size(), state.thread_index());
  size_t i = 0;
  uint64_t misses = 0;
  for (auto _ : state) misses += !impl.find(keys[idx[i++ & 0xffff]]);
  state.SetItemsProcessed(state.iterations());
  if (misses) state.SkipWithError("a find-hit key was missing: the read fixture does not fit");
}

template <class Impl>
void BM_FindMiss(benchmark::State& state) {
  Impl& impl = readFixture<Impl>();
  const auto& keys = missKeys();
  auto idx = drawIndices(keys.size(), state.thread_index());
  size_t i = 0;
  uint64_t hits = 0;
  for (auto _ : state) hits += impl.find(keys[idx[i++ & 0xffff]]);
  state.SetItemsProcessed(state.iterations());
  if (hits) state.SkipWithError("a find-miss key was present");
}

template <class Impl>
void BM_Set(benchmark::State& state) {
  Impl& impl = writeFixture<Impl>();
  const auto& keys = setKeys();
  auto idx = drawIndices(keys.size(), state.thread_index());
  const std::string& value = valueBytes();
  size_t i = 0;
  uint64_t failures = 0;
  for (auto _ : state) failures += !impl.set(keys[idx[i++ & 0xffff]], value);
  state.SetItemsProcessed(state.iterations());
  state.counters["failures"] = benchmark::Counter(double(failures));
}

template <class Impl>
void BM_AllocateInsert(benchmark::State& state) {
  Impl& impl = writeFixture<Impl>();
  const auto& keys = setKeys();
  auto idx = drawIndices(keys.size(), state.thread_index() + 100);
  const std::string& value = valueBytes();
  size_t i = 0;
  uint64_t failures = 0;
  for (auto _ : state) failures += !impl.allocateInsert(keys[idx[i++ & 0xffff]], value);
  state.SetItemsProcessed(state.iterations());
  state.counters["failures"] = benchmark::Counter(double(failures));
}

// --iterations=N (ours, taken out of argv before Google Benchmark reads it):
// every benchmark runs exactly N iterations once, with no ramp-up, so an
// instruction count under callgrind divides by a known number (Google
// Benchmark 1.7 has no --benchmark_min_time=Nx). 0: time-based, as usual.
benchmark::IterationCount gIterations = 0;

// Each operation's two implementations are registered side by side, so the
// console output shows every pair together.
template <template <class> class Bench>
void registerPair(const char* op) {
  auto reg = [op](const char* impl, void (*fn)(benchmark::State&)) {
    auto* b = benchmark::RegisterBenchmark((std::string("BM_") + op + "/" + impl).c_str(), fn)
                  ->Threads(1)
                  ->Threads(2)
                  ->UseRealTime();
    if (gIterations > 0) b->Iterations(gIterations);
  };
  reg(TiercacheImpl::kName, Bench<TiercacheImpl>::run);
  reg(BaselineImpl::kName, Bench<BaselineImpl>::run);
  if (std::string(op) == "FindHit") {
    reg(TiercacheLruImpl::kName, Bench<TiercacheLruImpl>::run);
    reg(TiercacheS3FifoImpl::kName, Bench<TiercacheS3FifoImpl>::run);
    reg(TiercacheClockImpl::kName, Bench<TiercacheClockImpl>::run);
    reg(TiercacheMarginalImpl::kName, Bench<TiercacheMarginalImpl>::run);
  }
}

// The plain maps run FindHit only (they have no write path to compare).
template <class Impl>
void registerFindHitOnly() {
  auto* b = benchmark::RegisterBenchmark((std::string("BM_FindHit/") + Impl::kName).c_str(), BM_FindHit<Impl>)
                ->Threads(1)
                ->Threads(2)
                ->UseRealTime();
  if (gIterations > 0) b->Iterations(gIterations);
}

// ---------------------------------------------------------------------------
// Batched lookups: 16 keys per call through findMany against 16 single
// finds, both on tiercache, 1 thread, over a table far larger than the L3
// cache (2M items of 100 bytes, ~330 MB of slabs and an 8 MiB bucket array),
// so nearly every bucket and item read misses the caches.

constexpr uint64_t kBatchKeys = 2'000'000;
constexpr size_t kBatch = 16;

Cache& batchFixture() {
  static Cache* cache = [] {
    CacheConfig cfg = CacheConfig::dram(768ull << 20);
    cfg.index.bucket_power = 21;
    auto* c = new Cache(cfg);
    for (uint64_t k = 0; k < kBatchKeys; ++k) c->set(keyOf("bat:", k), valueBytes());
    return c;
  }();
  return *cache;
}

const std::vector<std::string>& batchKeys() {
  static const std::vector<std::string> keys = makeKeys("bat:", kBatchKeys);
  return keys;
}

void BM_Find16(benchmark::State& state, bool batched) {
  Cache& cache = batchFixture();
  const auto& keys = batchKeys();
  auto idx = drawIndices(keys.size(), 7);
  std::string_view batch[kBatch];
  size_t i = 0;
  uint64_t misses = 0;
  for (auto _ : state) {
    for (size_t j = 0; j < kBatch; ++j) batch[j] = keys[idx[i++ & 0xffff]];
    if (batched) {
      std::vector<ReadHandle> hs = cache.findMany(batch);
      for (const ReadHandle& h : hs) {
        if (h) {
          benchmark::DoNotOptimize(h.value()[0]);
        } else {
          ++misses;
        }
      }
    } else {
      for (std::string_view k : batch) {
        ReadHandle h = cache.find(k);
        if (h) {
          benchmark::DoNotOptimize(h.value()[0]);
        } else {
          ++misses;
        }
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  if (misses) state.SkipWithError("a batch key was missing: the fixture does not fit");
}

template <class Impl> struct FindHit { static void run(benchmark::State& s) { BM_FindHit<Impl>(s); } };
template <class Impl> struct FindMiss { static void run(benchmark::State& s) { BM_FindMiss<Impl>(s); } };
template <class Impl> struct Set { static void run(benchmark::State& s) { BM_Set<Impl>(s); } };
template <class Impl> struct AllocateInsert { static void run(benchmark::State& s) { BM_AllocateInsert<Impl>(s); } };

}  // namespace
}  // namespace tiercache::bench

int main(int argc, char** argv) {
  using namespace tiercache::bench;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.starts_with("--iterations=")) {
      const std::string_view v = a.substr(13);
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), gIterations);
      if (ec != std::errc() || end != v.data() + v.size() || gIterations < 0) {
        std::fprintf(stderr, "tiercache-microbench: --iterations: expected an integer >= 0, got '%s'\n",
                     std::string(v).c_str());
        return 2;
      }
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  registerPair<FindHit>("FindHit");
  registerFindHitOnly<PlainMapReadImpl>();
  registerFindHitOnly<PlainMapSharedLockImpl>();
  registerPair<FindMiss>("FindMiss");
  registerPair<Set>("Set");
  registerPair<AllocateInsert>("AllocateInsert");
  benchmark::RegisterBenchmark("BM_Find16/findMany", [](benchmark::State& s) { BM_Find16(s, true); })
      ->Threads(1)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_Find16/singleFinds", [](benchmark::State& s) { BM_Find16(s, false); })
      ->Threads(1)
      ->UseRealTime();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
