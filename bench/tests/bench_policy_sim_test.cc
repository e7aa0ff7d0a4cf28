// Reference simulators (bench/policy_sim.h): hand-worked sequences for each
// algorithm, and tiercache's own policies run on a real one-class cache
// against them on the same request stream.
#include "bench/policy_sim.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "allocator/cache.h"
#include "bench/runner.h"
#include "bench/workload.h"

namespace tiercache::bench {
namespace {

std::vector<SimRequest> gets(const std::vector<uint32_t>& keys) {
  std::vector<SimRequest> out;
  for (uint32_t k : keys) out.push_back(SimRequest{k, 1, RequestOp::kGet, true});
  return out;
}

uint64_t hits(const std::string& policy, const std::vector<uint32_t>& keys, uint64_t k) {
  return simulatePolicy(policy, gets(keys), k, true).hits;
}

TEST(PolicySim, LruFifoClockSieveOnAHandWorkedSequence) {
  // Capacity 3. 1 2 3 1 4 1 5 2: LRU keeps 1 (hit at 4 and 6); FIFO drops 1 at 4.
  const std::vector<uint32_t> seq = {1, 2, 3, 1, 4, 1, 5, 2};
  EXPECT_EQ(hits("lru", seq, 3), 2u);   // 1 (4th), 1 (6th)
  EXPECT_EQ(hits("fifo", seq, 3), 1u);  // 1 (4th); 4 evicts 1
  // CLOCK: 4 finds 1 referenced, reinserts it, evicts 2; 1 hits; 5 evicts 3; 2 misses.
  EXPECT_EQ(hits("clock", seq, 3), 2u);
  // SIEVE: same first eviction (2), then 5 evicts 3 (1 was visited again); 2 misses.
  EXPECT_EQ(hits("sieve", seq, 3), 2u);
}

TEST(PolicySim, SieveKeepsVisitedItemsInPlace) {
  // Capacity 3: 1 2 3, hit 2, insert 4 evicts 1; insert 5: hand at 2 (visited,
  // cleared) -> 3 evicted; 2 still there: hit.
  EXPECT_EQ(hits("sieve", {1, 2, 3, 2, 4, 5, 2}, 3), 2u);
}

TEST(PolicySim, S3FifoOneHitWondersAndGhost) {
  // Capacity 10 (small 1, ghost 9). Key 1 fills the cache with 100..108 and
  // is the first evicted (to the ghost) when 109 arrives; when it comes back
  // it enters main and survives a stream of one-hit wonders.
  std::vector<uint32_t> seq = {1};
  for (uint32_t k = 100; k < 110; ++k) seq.push_back(k);
  seq.push_back(1);  // miss: ghost hit -> main
  for (uint32_t k = 200; k < 230; ++k) seq.push_back(k);
  seq.push_back(1);  // hit: main is not touched by one-hit wonders
  EXPECT_EQ(hits("s3fifo", seq, 10), 1u);
  EXPECT_EQ(hits("lru", seq, 10), 0u);
}

TEST(PolicySim, WTinyLfuFilterKeepsFrequentKeysThroughAScan) {
  std::vector<uint32_t> seq;
  for (int r = 0; r < 5; ++r) {
    for (uint32_t k = 0; k < 50; ++k) seq.push_back(k);
  }
  for (uint32_t k = 1000; k < 1500; ++k) seq.push_back(k);  // scan of 500
  for (uint32_t k = 0; k < 50; ++k) seq.push_back(k);
  const uint64_t w = hits("wtinylfu", seq, 100);
  const uint64_t l = hits("lru", seq, 100);
  EXPECT_EQ(l, 200u) << "LRU loses the 50 frequent keys to the scan";
  // The 550 distinct keys crowd a sketch sized for 100: a few of the 50
  // lose to collisions, most are kept.
  EXPECT_GE(w, l + 35) << "W-TinyLFU keeps most of them";
}

TEST(PolicySim, ArcKeepsFrequentKeysThroughAScan) {
  // 0 and 1 seen three times each (T2), then a scan of 20 new keys passes
  // through T1 (p stays 0: no ghost hits), then 0 and 1 again.
  std::vector<uint32_t> seq = {0, 1, 0, 1, 0, 1};
  for (uint32_t k = 10; k < 30; ++k) seq.push_back(k);
  seq.push_back(0);
  seq.push_back(1);
  EXPECT_EQ(hits("lru", seq, 4), 4u);
  EXPECT_EQ(hits("arc", seq, 4), 6u);
}

TEST(PolicySim, EveryPolicyIsExactWhenEverythingFits) {
  std::vector<uint32_t> seq;
  for (int r = 0; r < 20; ++r) {
    for (uint32_t k = 0; k < 4; ++k) seq.push_back(k);
  }
  for (const std::string& p : referencePolicyNames()) EXPECT_EQ(hits(p, seq, 4), 76u) << p;
}

TEST(PolicySim, UnknownNameIsRefused) {
  EXPECT_THROW(simulatePolicy("lfu", gets({1}), 1, true), std::invalid_argument);
}

// The real cache with one class of exactly k slots, single-threaded, against
// the simulators on the same stream: CLOCK is the same algorithm and must hit
// exactly as often; S3-FIFO's ghost is approximate and its queues follow the
// members, so it must come within 0.5 points.
double realMissRatio(const std::string& policy, const WorkloadConfig& w, uint32_t slabs) {
  CacheConfig c;
  c.slab_size = 64 << 10;
  TierConfig t;
  t.name = "dram";
  t.kind = TierKind::kDram;
  t.size = uint64_t(slabs) * c.slab_size;
  c.tiers.push_back(t);
  c.allocation.sizes = {128};
  c.index.bucket_power = 16;
  c.index.lock_power = 8;
  c.eviction.policy = policy == "clock" ? EvictionPolicyKind::kClock : EvictionPolicyKind::kS3Fifo;
  c.background_eviction.enabled = false;
  c.promotion.enabled = false;
  Cache cache(c);
  const WorkloadResult r = runWorkload(cache, w);
  EXPECT_EQ(r.ops.value_mismatches, 0u);
  return 1.0 - double(r.ops.get_hits) / double(r.ops.gets);
}

TEST(PolicySim, RealClockAndS3FifoMatchTheReferenceOnUnitSizes) {
  WorkloadConfig w;
  w.threads = 1;
  w.ops_per_thread = 200000;
  w.keys = 20000;
  w.key_size = {16, 16};
  w.value_size = {64, 64};  // 48 + 16 + 64 = 128 bytes: one slot each
  w.get_ratio = 1.0;
  w.set_ratio = 0.0;
  w.prepopulate = false;
  w.progress_interval_ms = 0;
  const uint32_t slabs = 4;  // 4 x 512 slots = 10% of the keys
  const std::vector<SimRequest> req = workloadRequests(w, sizeof(Item));
  const double clockSim = 1.0 - simulatePolicy("clock", req, slabs * 512, true).hitRatio();
  const double s3Sim = 1.0 - simulatePolicy("s3fifo", req, slabs * 512, true).hitRatio();
  // Not exact: a full class evicts a small batch (Movers::kForegroundBatch)
  // in one lock hold, so a victim may leave up to 7 allocations early.
  EXPECT_NEAR(realMissRatio("clock", w, slabs), clockSim, 0.001);
  EXPECT_NEAR(realMissRatio("s3fifo", w, slabs), s3Sim, 0.005);
}

}  // namespace
}  // namespace tiercache::bench
