// Hit-ratio limits: what an optimal cache and an LRU cache of the same
// capacity would have hit on the same requests (docs/bench.md, "The
// hit-ratio limit").
//
// The model, shared by every simulator and by the measured cache:
//   get   a hit if the key is held; a miss is filled (the object may be
//         stored) when lookaside is on
//   lget  a hit if held; a miss is never filled
//   set   the object may be stored; an older copy is replaced
//   del   the key is dropped
// Only gets and lgets of requests marked `measured` are counted, so a
// prepopulate phase warms the simulated caches as it warms the real one.
//
// Optimal (Belady's MIN with bypass) over a cache of k objects: on every
// store, if the cache is full, drop whichever of the held objects and the
// new one is next *read* furthest in the future (a measured read; an object
// whose key is set or deleted before its next measured read, or that has
// none, is never read again). MIN is optimal only when every read miss may
// fill the cache, so the simulated optimal cache may also fill a miss the
// real one leaves empty (no lookaside, or an lget) whenever the key has a
// value (set, not deleted since). That freedom can only raise its hit ratio,
// so the figure stays an upper bound for the real model; when it never used
// that freedom (relaxed_fills == 0) its choices were all open to a real
// cache as well and the figure is the exact optimum.
//
// Sizes. For objects of one size, k = capacity / size and the result is
// exact as above. For variable sizes, k = the most objects that can be held
// at once: the number of the smallest distinct objects whose sizes fit in
// the capacity. Any cache of that many bytes holds at most k objects, so
// Belady over k objects is an upper bound on its hit ratio (loose when sizes
// vary a lot). Belady-size is a heuristic beside it: MIN over bytes,
// dropping furthest-read objects until the new one fits (not a bound).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/request_stream.h"

namespace tiercache::bench {

class Trace;
struct WorkloadConfig;

struct SimRequest {
  uint32_t key;       // dense id
  uint32_t size;      // bytes the object takes (header + key + value)
  RequestOp op;
  bool measured;
};

struct SimResult {
  uint64_t gets = 0;  // measured gets and lgets
  uint64_t hits = 0;
  uint64_t relaxed_fills = 0;  // Belady: fills the real model would not make
  uint64_t get_bytes = 0;      // object bytes of the measured gets (LRU only)
  uint64_t hit_bytes = 0;
  double hitRatio() const { return gets ? double(hits) / double(gets) : 0.0; }
  double byteHitRatio() const { return get_bytes ? double(hit_bytes) / double(get_bytes) : 0.0; }
};

struct HitRatioLimits {
  uint64_t capacity_bytes = 0;
  uint64_t capacity_objects = 0;  // k above
  bool unit_sizes = false;        // every storable object has one size
  bool exact = false;             // unit sizes and no relaxed fill: optimal is the exact optimum
  SimResult optimal;              // Belady over capacity_objects
  SimResult belady_size;          // heuristic over capacity_bytes
  SimResult lru;                  // LRU over capacity_bytes
};

SimResult simulateBelady(const std::vector<SimRequest>& requests, uint64_t capacityObjects, bool lookaside);
SimResult simulateBeladySize(const std::vector<SimRequest>& requests, uint64_t capacityBytes, bool lookaside);
SimResult simulateLru(const std::vector<SimRequest>& requests, uint64_t capacityBytes, bool lookaside);
// The k above, and whether sizes are all equal.
uint64_t objectCapacity(const std::vector<SimRequest>& requests, uint64_t capacityBytes, bool* unitSizes = nullptr);
HitRatioLimits computeLimits(const std::vector<SimRequest>& requests, uint64_t capacityBytes, bool lookaside);

// The requests of a workload as run with one thread (prepopulate unmeasured,
// then the measured phase), objects sized itemHeaderBytes + key + value.
std::vector<SimRequest> workloadRequests(const WorkloadConfig& config, uint32_t itemHeaderBytes);
// A trace's requests, all measured; keys numbered in order of appearance.
std::vector<SimRequest> traceRequests(const Trace& trace, uint32_t itemHeaderBytes);

// Report lines ("  optimal ...") under "Hit Ratio".
std::string formatLimits(const HitRatioLimits& limits);

}  // namespace tiercache::bench
