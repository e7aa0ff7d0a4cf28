// RequestStream: the sequence of requests one worker thread of a workload
// issues, apart from the cache. The runner executes it, `tiercache-bench
// record` writes it as a trace, and the hit-ratio simulators replay it, so
// all three see the same requests for a (config, thread).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bench/popularity.h"
#include "bench/workload.h"

namespace tiercache::bench {

enum class RequestOp : uint8_t {
  kGet = 0,  // find; a miss is filled by a set when lookaside is on
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
  // cachebench's couldExistRatio: whether the key may be cached, asked of
  // memory (as a peek: no access recorded) and the flash index, reading
  // nothing. It changes nothing: record and the simulators leave it out.
  kCouldExist = 6,
  // cachebench's loneSetRatio: a set of a fresh key that no other request
  // names (KeySpace::loneSetKey(seq)), with the value size of the drawn
  // index. Recorded as a set of that key.
  kLoneSet = 7,
};

const char* requestOpName(RequestOp op);  // "get", "set", "del", "lget"

struct Request {
  RequestOp op;
  uint64_t index;    // key index (for kLoneGet: KeySpace::loneKey(index))
  uint64_t seq = 0;  // kLoneSet: unique over the threads' streams (KeySpace::loneSetKey)
};

class RequestStream {
 public:
  RequestStream(const WorkloadConfig& config, const KeySampler& sampler, uint32_t thread)
      : sampler_(sampler), rng_(Rng::forThread(config.seed, thread)), loneSetBase_(uint64_t(thread) << 40) {
    if (config.pool_distributions.empty()) {
      cuts_.push_back(Cuts::of(config));
      return;
    }
    for (const PoolDistribution& d : config.pool_distributions) cuts_.push_back(Cuts::of(d));
    poolStarts_ = config.poolKeyStarts();
  }

  Request next() {
    double r = rng_.uniform();
    uint64_t index = sampler_.sample(rng_);
    const Cuts& c = cuts_.size() == 1 ? cuts_[0] : cuts_[poolOf(index)];
    if (r < c.get) return {RequestOp::kGet, index};
    if (r < c.set) return {RequestOp::kSet, index};
    if (r >= c.chained) return {RequestOp::kAddChained, index};
    if (r >= c.update) return {RequestOp::kUpdate, index};
    if (r >= c.couldExist) return {RequestOp::kCouldExist, index};
    if (r >= c.loneSet) return {RequestOp::kLoneSet, index, loneSetBase_ | loneSets_++};
    if (!c.hasLone || r < c.remove) return {RequestOp::kDel, index};
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
  // Where a uniform draw in [0, 1) falls: get, set, remove, lone get from
  // 0 up; the rarer operations take the top, from 1 down: chained adds,
  // updates, couldExists, lone sets (a cut of 2+ when absent).
  struct Cuts {
    double get, set, remove;
    bool hasLone;
    double chained, update, couldExist, loneSet;
    template <typename R>  // WorkloadConfig or PoolDistribution: the same ratio fields
    static Cuts of(const R& c) {
      const double top = 1.0 - c.add_chained_ratio;
      const double upd = top - c.update_ratio;
      const double ce = upd - c.could_exist_ratio;
      return Cuts{c.get_ratio,
                  c.get_ratio + c.set_ratio,
                  c.get_ratio + c.set_ratio + c.remove_ratio,
                  c.lone_get_ratio > 0,
                  c.add_chained_ratio > 0 ? top : 2.0,
                  c.update_ratio > 0 ? upd : 3.0,
                  c.could_exist_ratio > 0 ? ce : 4.0,
                  c.lone_set_ratio > 0 ? ce - c.lone_set_ratio : 5.0};
    }
  };
  size_t poolOf(uint64_t index) const {
    return size_t(std::upper_bound(poolStarts_.begin(), poolStarts_.end() - 1, index) - poolStarts_.begin()) - 1;
  }

  const KeySampler& sampler_;
  Rng rng_;
  std::vector<Cuts> cuts_;            // one, or one per pool (pool_distributions)
  std::vector<uint64_t> poolStarts_;  // with cuts per pool: first index of each pool, then keys
  uint64_t loneSetBase_;              // the thread in the high bits of a lone set's seq
  uint64_t loneSets_ = 0;
};

}  // namespace tiercache::bench
