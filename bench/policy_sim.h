// Reference simulators: exact, unit-size (every object takes one slot) models
// of the eviction policies the literature compares, over the same request
// model as bench/hit_ratio_sim.h (get, lget, set, del; only measured gets
// counted). They check tiercache's policies and defaults against the
// published algorithms (libCacheSim's are the reference; see docs/bench.md,
// "Reference simulators"): LRU, FIFO, CLOCK, SIEVE, ARC, S3-FIFO, W-TinyLFU.
//
// A set of a held key counts as an access (no hit is counted); a miss is
// filled after the eviction that makes room, as in libCacheSim.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/hit_ratio_sim.h"

namespace tiercache::bench {

std::vector<std::string> referencePolicyNames();
// Throws std::invalid_argument for a name not in referencePolicyNames().
SimResult simulatePolicy(const std::string& name, const std::vector<SimRequest>& requests, uint64_t capacityObjects,
                         bool lookaside);

}  // namespace tiercache::bench
