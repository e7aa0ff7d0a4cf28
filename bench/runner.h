// runWorkload: drives a WorkloadConfig against a Cache with N threads.
//
// Phase 1 (prepopulate) sets keys from the coldest index down to the
// hottest, so that what survives eviction is what the measured phase will
// ask for. Phase 2 (measured) runs ops_per_thread operations per thread.
// Every value read is verified (ValueCodec); counters are per thread on
// their own cache line and read by a progress callback while the run goes.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "allocator/cache.h"
#include "allocator/chained_items.h"
#include "allocator/cache_stats.h"
#include "bench/latency.h"
#include "bench/workload.h"

namespace tiercache::bench {

// The bench's own counters of a run, declared once: X(name, kind, help).
// OpCounts' fields, the workers' live counters and their sum (runner.cc),
// opCounterTable(), the JSON report's "workload_counters" and the text
// report's "== Workload counters ==" block (report.cc) all come from this
// list; a row added here shows up in each of them unedited.
// Chained workloads (addChainedRatio): an add-chained op counts as a get of
// its parent (as in cachebench); a get whose parent is there but whose chain
// is not whole counts as a miss and in chain_broken.
#define TIERCACHE_BENCH_OP_COUNTERS(X)                                                                   \
  X(gets, kOps, "gets issued (lone gets, update finds and chained adds' parent finds included)")         \
  X(get_hits, kOps, "gets that found their item")                                                        \
  X(sets, kOps, "sets issued, look-aside sets included")                                                 \
  X(set_success, kOps, "sets the cache stored")                                                          \
  X(lookaside_sets, kOps, "sets issued after a get miss")                                                \
  X(removes, kOps, "removes issued")                                                                     \
  X(remove_success, kOps, "removes that found their key")                                                \
  X(value_mismatches, kOps, "values read back that failed verification")                                 \
  X(get_bytes, kBytes, "item bytes (header + key + value) asked for by gets; a lone get asks no value")  \
  X(get_hit_bytes, kBytes, "item bytes of the gets that hit")                                            \
  X(lookaside_stored, kOps, "look-aside sets the cache took (the misses it stored)")                     \
  X(chain_adds, kOps, "add-chained operations")                                                          \
  X(chain_children, kOps, "chained children added")                                                      \
  X(chain_add_failures, kOps, "chained children that could not be added")                                \
  X(chain_broken, kOps, "gets whose parent was there but whose chain was not whole")                     \
  X(chain_children_read, kOps, "chained children read back and verified by gets")                        \
  X(ttl_sets, kOps, "sets that gave the item a TTL (ttlRatio)")                                          \
  X(updates, kOps, "update operations (updateRatio), also counted as gets")                              \
  X(could_exists, kOps, "couldExist operations (couldExistRatio): memory and flash index, nothing read") \
  X(could_exist_true, kOps, "couldExist operations that answered: may be cached")                        \
  X(lone_sets, kOps, "sets of a fresh key never named again (loneSetRatio), also counted as sets")

#define TIERCACHE_BENCH_COUNT_ROW(name, kind, help) +1
inline constexpr size_t kOpCounterCount = 0 TIERCACHE_BENCH_OP_COUNTERS(TIERCACHE_BENCH_COUNT_ROW);
#undef TIERCACHE_BENCH_COUNT_ROW

struct OpCounts {
#define TIERCACHE_BENCH_OP_FIELD(name, kind, help) uint64_t name = 0;
  TIERCACHE_BENCH_OP_COUNTERS(TIERCACHE_BENCH_OP_FIELD)
#undef TIERCACHE_BENCH_OP_FIELD

  uint64_t ops() const { return gets + sets - lookaside_sets + removes + could_exists; }
  OpCounts& operator+=(const OpCounts& o);
};
// A field declared outside the list would be missed by the sums and reports.
static_assert(sizeof(OpCounts) == kOpCounterCount * sizeof(uint64_t),
              "every OpCounts field is a row of TIERCACHE_BENCH_OP_COUNTERS");

enum class OpCounterKind { kOps, kBytes };
struct OpCounterDesc {
  const char* name;
  OpCounterKind kind;
  const char* help;
  uint64_t OpCounts::*field;
};
// The rows of TIERCACHE_BENCH_OP_COUNTERS, in order.
const std::array<OpCounterDesc, kOpCounterCount>& opCounterTable();

struct ProgressSnapshot {
  double seconds = 0;   // since the measured phase started
  OpCounts counts;      // so far, all threads
  uint64_t total_ops = 0;  // the measured phase's ops (workload or trace records)
};

struct RunOptions {
  // Called from the calling thread every interval while the measured
  // phase runs (not at all when empty or interval is 0).
  std::function<void(const ProgressSnapshot&)> progress;
  std::chrono::milliseconds progress_interval{0};
  // Chained workloads: the remove hook the cache was built with
  // (ChainedItems::attach), so that chains leave with their parents.
  // Without it chains still read whole or not at all.
  std::shared_ptr<ChainedItems::Hook> chain_hook;
};

struct WorkloadResult {
  OpCounts prepopulate;        // sets issued to fill the cache
  double prepopulate_seconds = 0;
  OpCounts ops;                // measured phase
  double elapsed_seconds = 0;  // measured phase, wall clock
  CacheStats before;           // cache stats when the measured phase started
  CacheStats after;            // ... and when it ended
  std::string first_mismatch;  // description of the first failed verification
  // Measured phase, all threads merged: the time of each get (find, and the
  // handle's release) and each set (allocate, fill, insert), and the
  // process CPU time (getrusage: user + system, every thread, background
  // workers included).
  LatencyHistogram get_latency;
  LatencyHistogram set_latency;
  double cpu_seconds = 0;
  // Idle phase (workload.idle_ms): its length and the process CPU in it.
  double idle_seconds = 0;
  double idle_cpu_seconds = 0;
  // Keys shorter than the index's hex width may be shared by several
  // indices (KeySpace): distinct keys among the workload's indices, counted
  // when that can happen and keys <= kMaxCountedKeys; 0 when not counted.
  uint64_t distinct_keys = 0;
  static constexpr uint64_t kMaxCountedKeys = 1ull << 26;  // bounds the count to ~0.5 GiB of codes
};

WorkloadResult runWorkload(Cache& cache, const WorkloadConfig& config, const RunOptions& options = {});

class Trace;

// Trace replay: thread t issues records t, t + threads, t + 2*threads ...
// in order, as fast as it can (the trace is in memory). get misses are
// filled with the record's size when lookaside is on; lget misses never.
// A value read back is checked against its own length (ValueCodec).
struct ReplayConfig {
  uint32_t threads = 1;
  bool lookaside = true;
};
WorkloadResult runTrace(Cache& cache, const Trace& trace, const ReplayConfig& config, const RunOptions& options = {});

}  // namespace tiercache::bench
