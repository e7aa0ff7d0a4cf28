// RequestStream: the sequence of requests one worker thread of a workload
// issues, apart from the cache. The runner executes it, `tiercache-bench
// record` writes it as a trace, and the hit-ratio simulators replay it, so
// all three see the same requests for a (config, thread).
#pragma once

#include <cstdint>

#include "bench/popularity.h"
#include "bench/workload.h"

namespace tiercache::bench {

enum class RequestOp : uint8_t {
  kGet = 0,      // find; a miss is filled by a set when lookaside is on
  kSet = 1,
  kDel = 2,
  kLoneGet = 3,  // find of a key that is never set; a miss is never filled
  // Find the key's parent (set it when absent) and add a chain of children
  // (cachebench's addChainedRatio). Not a trace op: record and the
  // simulators see it as a get.
  kAddChained = 4,
  // cachebench's updateRatio: find the key to write it (CacheLib then bumps
  // an item record version, a no-op without item records): a find whose
  // miss is not filled. Not a trace op: record and the simulators see it
  // as a get of the key that fills nothing.
  kUpdate = 5,
};

const char* requestOpName(RequestOp op);  // "get", "set", "del", "lget"

struct Request {
  RequestOp op;
  uint64_t index;  // key index (for kLoneGet: KeySpace::loneKey(index))
};

class RequestStream {
 public:
  RequestStream(const WorkloadConfig& config, const KeySampler& sampler, uint32_t thread)
      : sampler_(sampler),
        rng_(Rng::forThread(config.seed, thread)),
        getCut_(config.get_ratio),
        setCut_(config.get_ratio + config.set_ratio),
        removeCut_(config.get_ratio + config.set_ratio + config.remove_ratio),
        hasLone_(config.lone_get_ratio > 0),
        chainedCut_(config.add_chained_ratio > 0 ? 1.0 - config.add_chained_ratio : 2.0),
        updateCut_(config.update_ratio > 0 ? 1.0 - config.add_chained_ratio - config.update_ratio : 3.0) {}

  Request next() {
    double r = rng_.uniform();
    uint64_t index = sampler_.sample(rng_);
    if (r < getCut_) return {RequestOp::kGet, index};
    if (r < setCut_) return {RequestOp::kSet, index};
    if (r >= chainedCut_) return {RequestOp::kAddChained, index};
    if (r >= updateCut_) return {RequestOp::kUpdate, index};
    if (!hasLone_ || r < removeCut_) return {RequestOp::kDel, index};
    return {RequestOp::kLoneGet, index};
  }

  // The i-th key index thread `thread` of `threads` sets when prepopulating
  // `keys` keys (coldest first: from the highest index down, the threads
  // taking every threads-th index), or keys when it has no more.
  static uint64_t prepopulateCount(uint64_t keys, uint32_t threads, uint32_t thread) {
    return thread >= keys ? 0 : (keys - 1 - thread) / threads + 1;
  }
  static uint64_t prepopulateIndex(uint64_t keys, uint32_t threads, uint32_t thread, uint64_t i) {
    return keys - 1 - thread - i * threads;
  }

 private:
  const KeySampler& sampler_;
  Rng rng_;
  double getCut_, setCut_, removeCut_;
  bool hasLone_;
  double chainedCut_;  // 2: no chained ops
  double updateCut_;   // [updateCut_, chainedCut_) are updates; 3: none
};

}  // namespace tiercache::bench
