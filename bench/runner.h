// runWorkload: drives a WorkloadConfig against a Cache with N threads.
//
// Phase 1 (prepopulate) sets keys from the coldest index down to the
// hottest, so that what survives eviction is what the measured phase will
// ask for. Phase 2 (measured) runs ops_per_thread operations per thread.
// Every value read is verified (ValueCodec); counters are per thread on
// their own cache line and read by a progress callback while the run goes.
#pragma once

#include <chrono>
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

struct OpCounts {
  uint64_t gets = 0;
  uint64_t get_hits = 0;
  uint64_t sets = 0;             // includes lookaside sets
  uint64_t set_success = 0;
  uint64_t lookaside_sets = 0;   // sets issued after a get miss
  uint64_t removes = 0;
  uint64_t remove_success = 0;
  uint64_t value_mismatches = 0; // values read that failed verification
  uint64_t get_bytes = 0;        // item bytes (header + key + value) asked for by gets; lone gets: no value
  uint64_t get_hit_bytes = 0;    // ... of the gets that hit
  uint64_t lookaside_stored = 0; // lookaside sets the cache took (the misses it stored)
  // Chained workloads (addChainedRatio). An add-chained op counts as a get
  // of its parent (as in cachebench); a get whose parent is there but whose
  // chain is not whole counts as a miss and in chain_broken.
  uint64_t chain_adds = 0;         // add-chained operations
  uint64_t chain_children = 0;     // children added
  uint64_t chain_add_failures = 0; // children that could not be added
  uint64_t chain_broken = 0;
  uint64_t chain_children_read = 0;  // children read back and verified by gets
  uint64_t ttl_sets = 0;           // sets that gave the item a TTL (ttlRatio)
  uint64_t updates = 0;            // update ops (updateRatio), also counted as gets

  uint64_t ops() const { return gets + sets - lookaside_sets + removes; }
  OpCounts& operator+=(const OpCounts& o);
};

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
