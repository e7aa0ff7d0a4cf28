#include "bench/stressors.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "allocator/cache.h"
#include "allocator/chained_items.h"
#include "allocator/item.h"
#include "bench/popularity.h"
#include "bench/report.h"
#include "bench/value_codec.h"

namespace tiercache::bench {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string commas(uint64_t v) { return withCommas(v); }

// Runs body(t) on n threads; the first exception any thread throws is rethrown.
template <class Body>
void onThreads(uint32_t n, Body body) {
  std::mutex mu;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      try {
        body(t);
      } catch (...) {
        std::lock_guard lock(mu);
        if (!first) first = std::current_exception();
      }
    });
  }
  for (auto& th : threads) th.join();
  if (first) std::rethrow_exception(first);
}

// ---- high_refcount ----
//
// cachebench runs 10,000 threads that find one item and sleep 1-10 ms, so
// that handles pile up past CacheLib's refcount limit. Here fewer threads
// hold their handles explicitly, each up to a share of the limit
// (Item::kRefMask) that makes the shares add up past it, and release them
// all when they reach it or see RefcountOverflow. No sleeps.
int highRefcount(const CacheConfig& config, const StressorOptions& o, std::ostream& out) {
  Cache cache(config);
  const uint32_t threads = o.threads ? o.threads : 64;
  const size_t holdLimit = Item::kRefMask / threads + 1024;
  const std::string key = "high_refcount";
  std::atomic<uint64_t> finds{0}, hits{0}, overflows{0}, wrong{0}, held{0}, mostHeld{0};
  const Clock::time_point t0 = Clock::now();
  onThreads(threads, [&](uint32_t) {
    std::vector<ReadHandle> mine;
    for (uint64_t op = 0; op < o.ops_per_thread; ++op) {
      finds.fetch_add(1, std::memory_order_relaxed);
      try {
        ReadHandle h = cache.find(key);
        if (!h) {
          WriteHandle w = cache.allocate(PoolId(0), key, 1);
          if (w) {
            w.data()[0] = 'r';
            cache.insertOrReplace(std::move(w));
          }
          continue;
        }
        hits.fetch_add(1, std::memory_order_relaxed);
        if (h.value() != "r") wrong.fetch_add(1, std::memory_order_relaxed);
        mine.push_back(std::move(h));
        uint64_t now = held.fetch_add(1, std::memory_order_relaxed) + 1;
        uint64_t m = mostHeld.load(std::memory_order_relaxed);
        while (now > m && !mostHeld.compare_exchange_weak(m, now, std::memory_order_relaxed)) {}
        if (mine.size() >= holdLimit) {
          held.fetch_sub(mine.size(), std::memory_order_relaxed);
          mine.clear();
        }
      } catch (const RefcountOverflow&) {
        overflows.fetch_add(1, std::memory_order_relaxed);
        held.fetch_sub(mine.size(), std::memory_order_relaxed);
        mine.clear();
      }
    }
    held.fetch_sub(mine.size(), std::memory_order_relaxed);
  });
  const double secs = secondsSince(t0);
  const std::string check = cache.checkConsistency();
  out << "Stressor      : high_refcount (" << threads << " threads holding handles to one item; limit "
      << commas(Item::kRefMask) << " handles)\n"
      << "Finds         : " << commas(finds) << " (" << commas(hits) << " hits) in " << secs << " s\n"
      << "Most handles held at once: " << commas(mostHeld) << "\n"
      << "RefcountOverflow thrown : " << commas(overflows) << "\n"
      << "Wrong values  : " << commas(wrong) << "\n"
      << "Consistency   : " << (check.empty() ? "ok" : check) << "\n";
  if (wrong > 0 || !check.empty()) throw std::runtime_error("high_refcount: a check failed (see the report)");
  return 0;
}

// ---- cachelib_map / cachelib_range_map ----
//
// A map per key, stored as a parent and its chain: child 0 is the index
// (entries sorted by key: key, segment, offset, size), children 1.. are
// segments of packed entry values. cachebench's loop: a map above 10,000
// entries is removed (1 in 5) or holed (about 100 entries erased, then
// compacted); otherwise every entry is looked up and checked, and 1,000 to
// 2,000 entries of 1,000 to 2,000 bytes are added. Readers share a key's
// lock, writers take it alone (as cachebench's stressor does).
class ChainMapStressor {
 public:
  static constexpr uint32_t kMaxEntries = 10'000;
  static constexpr uint32_t kDeletionRate = 5;
  static constexpr uint32_t kShrink = 100;
  static constexpr uint32_t kValueMin = 1000, kValueMax = 2000;
  static constexpr uint32_t kBatchMin = 1000, kBatchMax = 2000;
  static constexpr size_t kSegmentBytes = 128 << 10;
  static constexpr size_t kKeys = 100;

  struct Entry {
    uint32_t key, segment, offset, size;
  };

  ChainMapStressor(const CacheConfig& config, const StressorOptions& o, bool ranges)
      : ranges_(ranges), options_(o) {
    CacheHooks hooks;
    hook_ = ChainedItems::attach(hooks);
    cache_ = std::make_unique<Cache>(config, hooks);
    chains_ = std::make_unique<ChainedItems>(*cache_, hook_);
    for (size_t i = 0; i < kKeys; ++i) keys_[i] = "map_key_" + std::to_string(i);
  }

  int run(std::ostream& out) {
    const uint32_t threads = options_.threads ? options_.threads : std::max(1u, std::thread::hardware_concurrency());
    const Clock::time_point t0 = Clock::now();
    onThreads(threads, [&](uint32_t t) {
      Rng rng = Rng::forThread(options_.seed, t);
      for (uint64_t op = 0; op < options_.ops_per_thread; ++op) loop(rng);
    });
    const double secs = secondsSince(t0);
    chains_.reset();
    const std::string check = cache_->checkConsistency();
    out << "Stressor      : " << (ranges_ ? "cachelib_range_map" : "cachelib_map") << " (" << threads
        << " threads, " << kKeys << " maps as parent + chain)\n"
        << "Operations    : " << commas(ops_) << " in " << secs << " s\n"
        << "Maps created  : " << commas(created_) << ", removed " << commas(removed_) << ", holed "
        << commas(holed_) << ", lost to eviction " << commas(lost_) << "\n"
        << "Entries added : " << commas(added_) << ", read back and checked " << commas(checked_) << "\n";
    if (ranges_) out << "Range lookups : " << commas(rangeChecks_) << " checked against a scan\n";
    out << "Alloc failures: " << commas(allocFailures_) << "\n"
        << "Consistency   : " << (check.empty() ? "ok" : check) << "\n";
    if (!check.empty()) throw std::runtime_error("the cache failed its consistency check");
    return 0;
  }

 private:
  std::shared_mutex& lockOf(size_t k) { return locks_[k]; }

  static std::string label(const std::string& key, uint32_t entry) {
    return key + "#" + std::to_string(entry);
  }

  // The index of a whole chain, or false when it is not a map's.
  static bool parseIndex(const ChainView& v, std::vector<Entry>& out) {
    out.clear();
    if (v.size() == 0) return false;
    std::string_view idx = v.child(0);
    if (idx.size() % sizeof(Entry) != 0) return false;
    out.resize(idx.size() / sizeof(Entry));
    if (!out.empty()) std::memcpy(out.data(), idx.data(), idx.size());
    for (const Entry& e : out)
      if (e.segment == 0 || e.segment >= v.size() || size_t(e.offset) + e.size > v.child(e.segment).size())
        return false;
    return true;
  }

  void loop(Rng& rng) {
    ops_.fetch_add(1, std::memory_order_relaxed);
    const size_t k = rng.below(kKeys);
    const std::string& key = keys_[k];
    {
      std::shared_lock r(lockOf(k));
      ChainView v = chains_->findChain(key);
      if (v) {
        std::vector<Entry> index;
        if (!parseIndex(v, index)) throw std::runtime_error("map " + key + ": chain without a valid index");
        if (index.size() > kMaxEntries && rng.below(kDeletionRate) == 0) {
          r.unlock();
          std::unique_lock w(lockOf(k));
          if (chains_->remove(key)) removed_.fetch_add(1, std::memory_order_relaxed);
          return;
        }
        if (index.size() > kMaxEntries) {
          v = {};
          r.unlock();
          std::unique_lock w(lockOf(k));
          pokeHoles(key, rng);
          return;
        }
        readEntries(key, v, index, rng);
        v = {};
        r.unlock();
        std::unique_lock w(lockOf(k));
        populate(key, rng, false);
        return;
      }
      if (cache_->peek(key)) lost_.fetch_add(1, std::memory_order_relaxed);  // parent there, chain not whole
    }
    std::unique_lock w(lockOf(k));
    populate(key, rng, true);
  }

  void readEntries(const std::string& key, const ChainView& v, const std::vector<Entry>& index, Rng& rng) {
    for (const Entry& e : index) {
      std::string_view bytes = v.child(e.segment).substr(e.offset, e.size);
      if (!ValueCodec::verify(label(key, e.key), e.size, bytes))
        throw std::runtime_error("map " + key + ": entry " + std::to_string(e.key) + " read back wrong");
    }
    checked_.fetch_add(index.size(), std::memory_order_relaxed);
    if (!ranges_ || index.empty()) return;
    // A range lookup: binary search on the sorted index against a scan.
    uint32_t lo = uint32_t(rng.below(index.back().key + 1)), hi = lo + uint32_t(rng.below(500));
    auto first = std::lower_bound(index.begin(), index.end(), lo, [](const Entry& e, uint32_t x) { return e.key < x; });
    auto last = std::upper_bound(index.begin(), index.end(), hi, [](uint32_t x, const Entry& e) { return x < e.key; });
    size_t scan = 0;
    for (const Entry& e : index) scan += e.key >= lo && e.key <= hi;
    if (size_t(last - first) != scan) throw std::runtime_error("range map " + key + ": range lookup disagrees");
    rangeChecks_.fetch_add(1, std::memory_order_relaxed);
  }

  // Writes the map anew: a parent, then the index and the segments, from
  // the entries given (values regenerated from their labels), plus `extra`
  // new entries. Called with the key's lock held alone.
  bool write(const std::string& key, std::vector<Entry> keep, uint32_t extraFrom, uint32_t extra, Rng& rng) {
    struct Pending {
      uint32_t key, size;
    };
    std::vector<Pending> all;
    all.reserve(keep.size() + extra);
    for (const Entry& e : keep) all.push_back({e.key, e.size});
    for (uint32_t i = 0; i < extra; ++i)
      all.push_back({extraFrom + i, kValueMin + uint32_t(rng.below(kValueMax - kValueMin + 1))});
    WriteHandle p = cache_->allocate(PoolId(0), key, 8);
    if (!p) return fail(key);
    std::memcpy(p.data(), "TCMAP1\0\0", 8);
    chains_->insertOrReplace(std::move(p));
    ReadHandle parent = cache_->peek(key);
    if (!parent) return fail(key);
    // Child 0 is the index; it is sized now and rewritten at the end.
    std::vector<Entry> index;
    index.reserve(all.size());
    std::string zeros(all.size() * sizeof(Entry), '\0');
    if (!chains_->addChainedItem(parent, zeros)) return fail(key);
    std::string segment;
    uint32_t segNo = 1;
    auto flush = [&] {
      if (segment.empty()) return true;
      if (!chains_->addChainedItem(parent, segment)) return false;
      segment.clear();
      ++segNo;
      return true;
    };
    for (const Pending& e : all) {
      if (segment.size() + e.size > kSegmentBytes && !flush()) return fail(key);
      index.push_back(Entry{e.key, segNo, uint32_t(segment.size()), e.size});
      const size_t at = segment.size();
      segment.resize(at + e.size);
      ValueCodec::fill(label(key, e.key), e.key, segment.data() + at, e.size);
    }
    if (!flush()) return fail(key);
    std::sort(index.begin(), index.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
    std::string_view bytes(reinterpret_cast<const char*>(index.data()), index.size() * sizeof(Entry));
    if (!chains_->replaceChainedItem(parent, 0, bytes)) return fail(key);
    added_.fetch_add(extra, std::memory_order_relaxed);
    return true;
  }

  // No room for the whole map: it goes (a half-written map is never left).
  bool fail(const std::string& key) {
    allocFailures_.fetch_add(1, std::memory_order_relaxed);
    chains_->remove(key);
    return false;
  }

  // Adds a batch of entries (a new map when absent or not whole).
  void populate(const std::string& key, Rng& rng, bool fresh) {
    std::vector<Entry> index;
    ChainView v = fresh ? ChainView{} : chains_->findChain(key);
    if (v && !parseIndex(v, index)) index.clear();
    v = {};
    if (!fresh && index.empty()) fresh = true;
    const uint32_t batch = kBatchMin + uint32_t(rng.below(kBatchMax - kBatchMin + 1));
    uint32_t next = 0;
    for (const Entry& e : index) next = std::max(next, e.key + 1);
    if (write(key, std::move(index), next, batch, rng) && fresh) created_.fetch_add(1, std::memory_order_relaxed);
  }

  // Erases about kShrink entries, then compacts (the map is rewritten).
  void pokeHoles(const std::string& key, Rng& rng) {
    std::vector<Entry> index;
    ChainView v = chains_->findChain(key);
    if (!v || !parseIndex(v, index)) return;
    v = {};
    const uint64_t rate = std::max<uint64_t>(1, index.size() / kShrink);
    std::vector<Entry> keep;
    for (const Entry& e : index)
      if (rng.below(rate) != 0) keep.push_back(e);
    if (write(key, std::move(keep), 0, 0, rng)) holed_.fetch_add(1, std::memory_order_relaxed);
  }

  bool ranges_;
  StressorOptions options_;
  std::shared_ptr<ChainedItems::Hook> hook_;
  std::unique_ptr<Cache> cache_;
  std::unique_ptr<ChainedItems> chains_;
  std::array<std::string, kKeys> keys_;
  std::array<std::shared_mutex, kKeys> locks_;
  std::atomic<uint64_t> ops_{0}, created_{0}, removed_{0}, holed_{0}, lost_{0}, added_{0}, checked_{0},
      rangeChecks_{0}, allocFailures_{0};
};

// ---- fast_shutdown ----
//
// cachebench fills a shared-memory cache, starts slab releases, shuts it
// down mid-release and reattaches, rounds of it, and requires each shutdown
// to take at most 10 s. tiercache's counterpart is its persistent tier:
// the cache_config's size becomes one persistent pool file (on /dev/shm,
// removed at the end), writer threads set and remove keys (each key has one
// writer, so its last acknowledged state is known) and are stopped at a
// random point, the cache is closed (a clean shutdown) and reopened. What
// comes back must be exactly the keys that were live before the shutdown,
// each with its last acknowledged value, byte for byte: no key invented,
// none lost, no older value. Shutdown and reopen are timed (10 s each at most).
int fastShutdown(const CacheConfig& base, const StressorOptions& o, std::ostream& out) {
  CacheConfig config = base;
  uint64_t bytes = 0;
  for (const TierConfig& t : base.tiers) bytes += t.size;
  if (bytes == 0) bytes = base.total_size;
  const std::string pool = "/dev/shm/tiercache-bench-fss-" + std::to_string(getpid()) + ".pool";
  TierConfig tier;
  tier.name = "pmem";
  tier.kind = TierKind::kPmemFile;
  tier.size = bytes;
  tier.path = pool;
  tier.persistent = true;
  config.tiers = {tier};
  config.total_size = 0;
  struct RemovePool {
    std::string path;
    ~RemovePool() { std::filesystem::remove(path); }
  } cleanup{pool};
  std::filesystem::remove(pool);

  const uint32_t threads = o.threads ? o.threads : 2;
  // cachebench's rounds: wait times 6, 9, ... up to numOps * 3 seconds.
  const uint64_t rounds = o.ops_per_thread >= 2 ? o.ops_per_thread - 1 : 1;
  constexpr uint64_t kKeysPerThread = 20'000;
  constexpr uint64_t kOpsPerRound = 40'000;  // per thread, at most: stopped earlier at random
  // expected[t][i]: the last acknowledged value of key (t, i); "" = absent.
  std::vector<std::vector<std::string>> expected(threads, std::vector<std::string>(kKeysPerThread));
  auto keyOf = [](uint32_t t, uint64_t i) { return "key_" + std::to_string(t) + "_" + std::to_string(i); };
  Rng main = Rng::forThread(o.seed, 999);
  double worstClose = 0, worstOpen = 0;
  uint64_t totalOps = 0, checked = 0;
  // Everything that was live before the shutdown, exactly.
  auto verify = [&](Cache& c) {
    Cache* cache = &c;
    uint64_t live = 0;
    for (uint32_t t = 0; t < threads; ++t)
      for (uint64_t i = 0; i < kKeysPerThread; ++i) {
        ReadHandle h = cache->peek(keyOf(t, i));
        const std::string& want = expected[t][i];
        if (want.empty() != !h || (h && h.value() != want))
          throw std::runtime_error("after reopen, " + keyOf(t, i) + " is " +
                                   (h ? "\"" + std::string(h.value()) + "\"" : std::string("absent")) +
                                   ", expected " + (want.empty() ? "absent" : "\"" + want + "\""));
        live += !want.empty();
      }
    size_t items = 0;
    cache->forEachItem([&](const ReadHandle&) { ++items; });
    if (items != live)
      throw std::runtime_error("after reopen: " + std::to_string(items) + " items, " + std::to_string(live) +
                               " expected (an item was invented)");
    checked += live;
  };
  auto cache = std::make_unique<Cache>(config);
  for (uint64_t round = 0; round < rounds; ++round) {
    // Writers, stopped at a random point of the round.
    const uint64_t stopAt = kOpsPerRound / 2 + main.below(kOpsPerRound / 2);
    std::atomic<uint64_t> ops{0};
    onThreads(threads, [&](uint32_t t) {
      Rng rng = Rng::forThread(o.seed + round, t);
      for (uint64_t n = 0; n < stopAt; ++n) {
        const uint64_t i = rng.below(kKeysPerThread);
        const std::string key = keyOf(t, i);
        if (rng.below(10) < 8) {
          std::string v = "r" + std::to_string(round) + "n" + std::to_string(n) + "/";
          v.resize(5 + rng.below(36), char('a' + n % 26));
          if (cache->set(key, v)) {
            expected[t][i] = v;
          } else {
            // Not stored: set() replaces nothing then, the old value stays.
          }
        } else if (cache->remove(key)) {
          expected[t][i].clear();
        }
      }
      ops.fetch_add(stopAt, std::memory_order_relaxed);
    });
    totalOps += ops;
    // A set that failed may have left an evicted key: the cache is the
    // judge of what is live, but only among acknowledged states.
    for (uint32_t t = 0; t < threads; ++t)
      for (uint64_t i = 0; i < kKeysPerThread; ++i) {
        ReadHandle h = cache->peek(keyOf(t, i));
        if (!h && !expected[t][i].empty()) expected[t][i].clear();  // evicted before the shutdown
        if (h && h.value() != expected[t][i])
          throw std::runtime_error("before shutdown, " + keyOf(t, i) + " holds a value never acknowledged");
      }
    const Clock::time_point c0 = Clock::now();
    cache.reset();  // clean shutdown
    worstClose = std::max(worstClose, secondsSince(c0));
    const Clock::time_point o0 = Clock::now();
    cache = std::make_unique<Cache>(config);
    worstOpen = std::max(worstOpen, secondsSince(o0));
    verify(*cache);
  }
  cache.reset();
  out << "Stressor      : fast_shutdown (" << threads << " writer threads; one persistent tier of "
      << commas(bytes >> 20) << " MiB at " << pool << ", removed after)\n"
      << "Rounds        : " << rounds << ", " << commas(totalOps) << " sets/removes, each round stopped at random\n"
      << "Reopened      : " << commas(checked) << " items checked byte for byte, none invented or lost\n"
      << "Slowest shutdown " << worstClose << " s, slowest reopen " << worstOpen << " s (at most 10 s each)\n";
  if (worstClose > 10 || worstOpen > 10) throw std::runtime_error("a shutdown or reopen took over 10 s");
  return 0;
}

}  // namespace

bool isMappedStressor(const std::string& name) {
  return name == "high_refcount" || name == "cachelib_map" || name == "cachelib_range_map" ||
         name == "fast_shutdown";
}

int runStressor(const std::string& name, const CacheConfig& config, const StressorOptions& options, std::ostream& out,
                std::ostream& err) {
  try {
    if (name == "high_refcount") return highRefcount(config, options, out);
    if (name == "fast_shutdown") return fastShutdown(config, options, out);
    if (name == "cachelib_map" || name == "cachelib_range_map") {
      ChainMapStressor s(config, options, name == "cachelib_range_map");
      return s.run(out);
    }
    err << "tiercache-bench: no stressor \"" << name << "\"\n";
    return 1;
  } catch (const std::exception& e) {
    err << "tiercache-bench: stressor " << name << " failed: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tiercache::bench
