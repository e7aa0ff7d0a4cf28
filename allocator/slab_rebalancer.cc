// The marginal-hits slab rebalancer; see slab_rebalancer.h and
// docs/design.md, "Slab rebalancing by marginal hits".
#include "slab_rebalancer.h"

#include <algorithm>
#include <bit>
#include <chrono>

#include "slab_allocator.h"

namespace tiercache {

// ---- EvictionGhost ----

EvictionGhost::EvictionGhost(const SlabTable& table, uint32_t slotsPerSlab) : table_(table) {
  // Half a slab's worth of evictions per generation, at most kMaxSampled of
  // them remembered: sample one key in 2^k.
  const uint32_t half = std::max<uint32_t>(1, (slotsPerSlab + 1) / 2);
  weight_ = std::bit_ceil(std::max<uint32_t>(1, (half + kMaxSampled - 1) / kMaxSampled));
  sampleMask_ = weight_ - 1;
  genSize_ = std::max<uint32_t>(1, half / weight_);
  // 16 bits per remembered key and two probes: about 1.4% false positives.
  bits_ = std::max<uint64_t>(512, std::bit_ceil(uint64_t{genSize_} * 16));
  words_ = bits_ / 64;
  filter_ = std::make_unique<std::atomic<uint64_t>[]>(2 * words_);
  for (uint64_t i = 0; i < 2 * words_; ++i) filter_[i].store(0, std::memory_order_relaxed);
}

void EvictionGhost::evicted(RefWord ref) {
  const uint64_t hash = table_.keyHash(ref);
  if (!sampled(hash)) return;
  uint32_t g = current_.load(std::memory_order_relaxed);
  if (count_ >= genSize_) {
    // The older generation is cleared and becomes the current one. A reader
    // meanwhile may miss a ghost hit or count one from a stale bit: these
    // are statistics, never correctness.
    g ^= 1;
    for (uint64_t i = 0; i < words_; ++i) filter_[g * words_ + i].store(0, std::memory_order_relaxed);
    current_.store(g, std::memory_order_relaxed);
    count_ = 0;
  }
  ++count_;
  std::atomic<uint64_t>* gen = &filter_[g * words_];
  const uint64_t a = bitA(hash), b = bitB(hash);
  gen[a / 64].fetch_or(1ull << (a % 64), std::memory_order_relaxed);
  gen[b / 64].fetch_or(1ull << (b % 64), std::memory_order_relaxed);
}

bool EvictionGhost::contains(uint64_t hash) const {
  const uint64_t a = bitA(hash), b = bitB(hash);
  for (uint64_t g = 0; g < 2; ++g) {
    const std::atomic<uint64_t>* gen = &filter_[g * words_];
    if ((gen[a / 64].load(std::memory_order_relaxed) >> (a % 64) & 1) &&
        (gen[b / 64].load(std::memory_order_relaxed) >> (b % 64) & 1)) {
      return true;
    }
  }
  return false;
}

// ---- SlabRebalancer ----

SlabRebalancer::SlabRebalancer(const RebalanceConfig& config, const SlabTable& table,
                               std::vector<std::unique_ptr<SlabAllocator>>& allocs, MoveSlabFn moveSlab)
    : config_(config),
      allocs_(allocs),
      moveSlab_(std::move(moveSlab)),
      pools_(allocs.front()->poolCount()),
      classes_(allocs.front()->classCount()),
      worker_("tc-rebalance", std::chrono::milliseconds(config.interval_ms), [this] { runOnce(); }) {
  ghosts_.resize(allocs_.size() * pools_ * classes_);
  state_.resize(ghosts_.size());
  for (uint32_t t = 0; t < allocs_.size(); ++t) {
    for (uint32_t p = 0; p < pools_; ++p) {
      for (uint32_t c = 0; c < classes_; ++c) {
        AllocationClass& ac = allocs_[t]->cls(p, c);
        auto& ghost = ghosts_[flat(t, p, c)];
        ghost = std::make_unique<EvictionGhost>(table, ac.slotsPerSlab());
        ac.policy().setEvictionObserver(ghost.get());
      }
    }
  }
}

SlabRebalancer::~SlabRebalancer() {
  worker_.stop();
  // The policies outlive us (Cache destroys the rebalancer first): they must
  // not call a destroyed ghost.
  for (uint32_t t = 0; t < allocs_.size(); ++t) {
    for (uint32_t p = 0; p < pools_; ++p) {
      for (uint32_t c = 0; c < classes_; ++c) allocs_[t]->cls(p, c).policy().setEvictionObserver(nullptr);
    }
  }
}

void SlabRebalancer::noteAllocation(uint32_t pool, uint32_t classId, uint64_t stableHash) {
  for (uint32_t t = 0; t < allocs_.size(); ++t) ghosts_[flat(t, pool, classId)]->noteRequest(stableHash);
}

void SlabRebalancer::noteLowerTierHit(uint32_t tier, uint32_t pool, uint32_t classId, uint64_t stableHash) {
  for (uint32_t t = 0; t < tier && t < allocs_.size(); ++t) ghosts_[flat(t, pool, classId)]->noteRequest(stableHash);
}

uint64_t SlabRebalancer::ghostHits(uint32_t tier, uint32_t pool, uint32_t classId) const {
  return ghosts_[flat(tier, pool, classId)]->hits();
}

size_t SlabRebalancer::metadataBytes() const {
  size_t n = sizeof(*this) + state_.size() * sizeof(ClassState);
  for (const auto& g : ghosts_) n += g->metadataBytes();
  return n;
}

size_t SlabRebalancer::runOnce() {
  std::lock_guard<std::mutex> g(runMu_);
  ++run_;
  counters_.rebalancer_runs.fetch_add(1, std::memory_order_relaxed);
  size_t moved = 0;
  for (uint32_t t = 0; t < allocs_.size(); ++t) {
    for (uint32_t p = 0; p < pools_; ++p) moved += runPool(t, p, config_.max_slabs - std::min<size_t>(moved, config_.max_slabs));
  }
  return moved;
}

size_t SlabRebalancer::runPool(uint32_t tier, uint32_t pool, size_t budget) {
  SlabAllocator& a = *allocs_[tier];
  struct View {
    uint32_t id;
    double score;   // what its next slab would earn (decayed ghost hits)
    double worth;   // what its last slab earns, at least: max(score, floor)
    bool pressed;   // evicted or found no free slot since the last run
    bool starving;  // wanted a slot since the last run and has no slab
    uint64_t slabs, free, wanted;
  };
  std::vector<View> v;
  v.reserve(classes_);
  for (uint32_t c = 0; c < classes_; ++c) {
    const AllocationClass& ac = a.cls(pool, c);
    ClassState& s = state_[flat(tier, pool, c)];
    const ClassCounters& k = ac.counters();
    const uint64_t hits = ghosts_[flat(tier, pool, c)]->hits();
    const uint64_t pressure = k.evictions.load(std::memory_order_relaxed) +
                              k.background_evictions.load(std::memory_order_relaxed) +
                              k.slow_allocs.load(std::memory_order_relaxed);
    const auto [attempts, success] = ac.allocCounts();
    s.score = s.score * kDecay + static_cast<double>(hits - s.hitsMark);
    s.floor *= kFloorDecay;
    View view{c, s.score, std::max(s.score, s.floor), pressure != s.pressureMark, false, ac.slabCount(), ac.freeSlots(), attempts - s.attemptsMark};
    // Allocations count in tier 0 (or the tier they were made in) only;
    // a lower tier's class is starving when demotions into it find no slot.
    view.starving = view.slabs == 0 && (view.wanted > success - s.successMark || (view.pressed && view.wanted == 0));
    s.hitsMark = hits;
    s.pressureMark = pressure;
    s.attemptsMark = attempts;
    s.successMark = success;
    v.push_back(view);
  }

  size_t moved = 0;
  std::vector<bool> used(classes_, false);  // each class gives or takes at most once per run
  while (moved < budget) {
    // Receiver: a class that needs a slab and has none, else the pressed
    // class whose next slab would earn most.
    const View* recv = nullptr;
    for (const View& x : v) {
      if (used[x.id] || !x.starving) continue;
      if (!recv || x.wanted > recv->wanted) recv = &x;
    }
    if (!recv) {
      for (const View& x : v) {
        const ClassState& s = state_[flat(tier, pool, x.id)];
        if (used[x.id] || !x.pressed || (s.lastLoss && run_ - s.lastLoss < kCooldownRuns)) continue;
        if (!recv || x.score > recv->score) recv = &x;
      }
    }
    if (!recv) break;
    // Donor: the class whose last slab earns least, never its only slab;
    // idle slabs (free slots) first among equals.
    const View* donor = nullptr;
    for (const View& x : v) {
      const ClassState& s = state_[flat(tier, pool, x.id)];
      if (used[x.id] || x.id == recv->id || x.slabs < 2) continue;
      if (s.lastGain && run_ - s.lastGain < kCooldownRuns) continue;
      if (!donor || x.worth < donor->worth || (x.worth == donor->worth && x.free > donor->free)) donor = &x;
    }
    if (!donor) break;
    if (!recv->starving && !(recv->score >= kMinGain && recv->score > kGainRatio * donor->worth)) break;
    used[recv->id] = used[donor->id] = true;
    if (!moveSlab_(tier, pool, donor->id, recv->id)) {
      counters_.rebalancer_move_failures.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    state_[flat(tier, pool, recv->id)].lastGain = run_;
    state_[flat(tier, pool, recv->id)].floor = recv->score;
    state_[flat(tier, pool, donor->id)].lastLoss = run_;
    counters_.rebalancer_moves.fetch_add(1, std::memory_order_relaxed);
    ++moved;
  }
  return moved;
}

}  // namespace tiercache
