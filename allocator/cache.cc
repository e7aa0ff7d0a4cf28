#include "cache.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <tuple>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "../config/sizes.h"
#include "../numa/topology.h"
#include "../tiers/tier_plan.h"
#include "access_index.h"
#include "cache_async.h"
#include "cache_counters.h"
#include "cache_persistence.h"
#include "expiry.h"
#include "flash_tier.h"
#include "item.h"
#include "item_reaper.h"
#include "movers.h"
#include "sharded_counter.h"
#include "slab_allocator.h"
#include "slab_rebalancer.h"
#include "stats_collector.h"
#include "window_tuner.h"

namespace tiercache {

namespace {

uint64_t defaultHash(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

std::atomic<uint64_t> gPinsAtDestruction{0};

}  // namespace

Cache::Cache(const CacheConfig& config, CacheHooks hooks) : config_(config), hooks_(hooks) {
  config_.normalize();
  config_.validate();
  deferFrees_ = config_.background_eviction.enabled;
  // Auto tiers, ratio-sized tiers and pathless pmem-file tiers are made
  // concrete by the planner from this machine's topology.
  const bool needsPlan = std::any_of(config_.tiers.begin(), config_.tiers.end(), [](const TierConfig& t) {
    return t.kind == TierKind::kAuto || t.size == 0 || (t.kind == TierKind::kPmemFile && t.path.empty());
  });
  if (needsPlan) {
    TierPlanRequest request;
    request.tiers = config_.tiers;
    request.total_size = config_.total_size;
    request.slab_size = config_.slab_size;
    request.pmem_dir = config_.pmem_dir;
    config_.tiers = planTiers(request, Topology::system()).configs();
    // Planned sizes count now: the 32-bit reference budget is checked again.
    config_.validate();
  }
  if (!hooks_.hash) hooks_.hash = &defaultHash;
  const uint64_t slabSize = config_.slab_size;
  const AllocationConfig& ac = config_.allocation;
  const std::vector<uint32_t> sizes =
      makeClassSizes(ac.min_size, config_.maxAllocSize(), ac.growth_factor, ac.sizes);

  uint64_t totalSlabs = 0;
  // The records of the persistent tiers' pools (null for a volatile tier):
  // the persistence part and the slab allocators use them, nobody else.
  std::vector<PoolRecords*> records;
  for (const TierConfig& t : config_.tiers) {
    PersistentOpenOptions popts;
    popts.fingerprint = layoutFingerprint(config_, t, sizes);
    popts.rebuildOnMismatch = t.rebuild_on_mismatch;
    if (t.persistent) {
      PersistentTierParts pt = openPersistentTier(t, slabSize, popts);
      records.push_back(pt.records);
      tiers_.push_back(std::move(pt.memory));
    } else {
      tiers_.push_back(openTier(t, slabSize, popts));
      records.push_back(nullptr);
    }
    totalSlabs += tiers_.back()->size() / slabSize;
  }
  // validate() guaranteed that these slabs fit a 40-bit reference.
  table_ = std::make_unique<SlabTable>(slabSize, config_.slotBits(), static_cast<uint32_t>(totalSlabs));

  counters_ = std::make_unique<CacheCounters>();
  for (size_t t = 0; t < tiers_.size(); ++t) counters_->tierHits.push_back(std::make_unique<ShardedCounter>());
  EvictionPolicyOptions policy;
  policy.kind = evictionPolicyName(config_.eviction.policy);
  policy.lruInsertionPoint = config_.eviction.lru_insertion_point;
  policy.lruRefreshMs = config_.eviction.lru_refresh_ms;
  policy.lruRefreshRatio = config_.eviction.lru_refresh_ratio;
  policy.s3fifoSmallPercent = config_.eviction.s3fifo_small_percent;
  policy.wtinylfuWindowPercent = config_.eviction.wtinylfu_window_percent;
  if (config_.eviction.policy == EvictionPolicyKind::kWTinyLfu) {
    // The share every W-TinyLFU policy reads: the configured one, moved by
    // the tuner when the window adapts.
    auto signal = std::make_shared<WindowSignal>();
    signal->perMille.store(config_.eviction.wtinylfu_window_percent * 10, std::memory_order_relaxed);
    policy.wtinylfuWindow = windowSignal_ = signal;
    if (config_.eviction.wtinylfu_adaptive_window) {
      tuner_ = std::make_unique<WindowTuner>(signal, *counters_, [this] {
        WindowTuner::Capacity capacity{0, true};
        for (const auto& a : allocs_) {
          for (uint32_t p = 0; p < a->poolCount(); ++p) {
            capacity.full = capacity.full && !a->canGrow(p);  // its slabs are all given out
            for (uint32_t c = 0; c < a->classCount(); ++c) {
              capacity.slots += a->cls(p, c).slabCountHint() * a->cls(p, c).slotsPerSlab();
            }
          }
        }
        return capacity;
      });
    }
  }
  uint32_t first = 0;
  for (uint32_t t = 0; t < tiers_.size(); ++t) {
    allocs_.push_back(
        std::make_unique<SlabAllocator>(t, *tiers_[t], records[t], *table_, first, config_.pools, sizes, policy));
    first += allocs_.back()->slabCount();
  }
  persistence_ = std::make_unique<CachePersistence>(PersistenceParts{tiers_, records, *table_, hooks_.faultSeam});
  index_ = std::make_unique<AccessIndex>(config_.index.bucket_power, config_.index.lock_power, *table_,
                                         persistence_->firstPersistentTier() >= 0 ? persistence_.get() : nullptr);
  recovery_ = std::make_unique<RecoveryCounters>();
  if (config_.flash.enabled()) {
    flash_ = std::make_unique<FlashTier>(config_.flash, hooks_.hash, hooks_.faultSeam);
    async_ = std::make_unique<AsyncReads>();
  }
  movers_ = std::make_unique<Movers>(MoverParts{config_, *table_, allocs_, *index_, hooks_.hash, *persistence_,
                                                static_cast<ItemFate&>(*this), flash_.get()});
  if (config_.rebalance.enabled && config_.rebalance.strategy == "marginal-hits") {
    rebalancer_ = std::make_unique<SlabRebalancer>(
        config_.rebalance, *table_, allocs_,
        [m = movers_.get()](uint32_t tier, uint32_t pool, uint32_t donor, uint32_t receiver) {
          return m->moveSlab(tier, pool, donor, receiver);
        });
  }
  const RecoveredState recovered = persistence_->recover(allocs_, *index_, hooks_.hash, nowSeconds(), *recovery_);
  // New sequence numbers stay above every recovered one.
  nextSeq_.store(std::max<uint64_t>(nextSeq_.load(std::memory_order_relaxed), recovered.maxSeq + 1),
                 std::memory_order_relaxed);
  if (recovered.anyDeadline) deadlinesSeen_.store(true, std::memory_order_relaxed);
  inPlaceSets_ = !tiers_[0]->persistent() && !config_.persistence.durable_sets && !hooks_.onRemove;
  movers_->start();
  if (rebalancer_) rebalancer_->start();
  reaper_ = std::make_unique<ItemReaper>(index_->bucketCount(), config_.reaper.buckets_per_run,
                                         std::chrono::milliseconds(config_.reaper.interval_ms),
                                         [this](uint64_t begin, uint64_t end) {
                                           ItemReaper::Slice s;
                                           s.scanned = reapSome(begin, end, s.reaped);
                                           return s;
                                         });
  stats_ = std::make_unique<StatsCollector>(StatsParts{config_, allocs_, *table_, *index_, *counters_, *recovery_,
                                                       *movers_, *reaper_, {records.begin(), records.end()},
                                                       rebalancer_.get(), windowSignal_.get()});
  if (config_.reaper.enabled) reaper_->start();
}

// Background threads stop first; then the persistent tiers are closed
// cleanly; then members go in reverse order: index and allocators before
// the tiers whose memory they point into.
Cache::~Cache() {
  stopAsyncReads();  // reads in flight complete, callbacks run, while all is intact
  closing_.store(true, std::memory_order_relaxed);
  reaper_->stop();
  if (rebalancer_) rebalancer_->stop();
  movers_->stop();
  // Handles still held would release into freed memory later (see the
  // lifetime rule in cache.h): make that loud here, where it is still clear.
  const uint64_t pins = counters_->handlesOpened.load() - counters_->handlesClosed.load();
  if (pins != 0) {
    std::fprintf(stderr,
                 "tiercache: Cache destroyed while %llu handle(s) still pin items; every ReadHandle and "
                 "WriteHandle must be released before its Cache is destroyed\n",
                 static_cast<unsigned long long>(pins));
#ifndef NDEBUG
    std::abort();
#endif
    gPinsAtDestruction.fetch_add(pins, std::memory_order_relaxed);
  }
  persistence_->close(allocs_, *movers_, config_.persistence.demote_on_shutdown && config_.demotion.enabled);
}

uint64_t Cache::pinsOutstandingAtDestruction() { return gPinsAtDestruction.load(std::memory_order_relaxed); }

uint64_t Cache::hashKey(std::string_view key) const { return hooks_.hash(key); }

uint64_t Cache::prefetchIndex(std::string_view key) const {
  const uint64_t hash = hashKey(key);
  index_->prefetchLookup(hash);
  return hash;
}

void Cache::prefetchItem(uint64_t token) const { index_->prefetchChainHead(token, kPrefetchItemLines); }

size_t Cache::poolCount() const { return allocs_.front()->poolCount(); }
size_t Cache::tierCount() const { return tiers_.size(); }

PoolId Cache::poolId(std::string_view name) const {
  for (size_t i = 0; i < config_.pools.size(); ++i) {
    if (config_.pools[i].name == name) return static_cast<PoolId>(i);
  }
  throw std::out_of_range("no pool named '" + std::string(name) + "'");
}

size_t Cache::maxValueSize(size_t keySize) const {
  const size_t largest = allocs_.front()->classSizes().back();
  const size_t overhead = sizeof(Item) + keySize;
  return largest > overhead ? std::min<size_t>(largest - overhead, Item::kMaxValueSize) : 0;
}

ReadHandle Cache::find(std::string_view key) { return findHashed(key, hashKey(key)); }

ReadHandle Cache::findHashed(std::string_view key, uint64_t hash, bool* onFlash) {
  counters_->gets.add();
  Item* item = nullptr;
  bool saturated = false;
  HazardPins::Entry* hazard = nullptr;
  const CompressedRef ref = index_->acquire(key, hash, item, &saturated, &hazard);
  if (!ref) {
    if (tuner_) tuner_->noteMiss();
    if (saturated) {
      throw RefcountOverflow("find: the item already has " + std::to_string(Item::kRefMask) +
                             " live handles, the most its count holds");
    }
    if (!flash_) return {};
    if (onFlash) {
      *onFlash = flash_->store().mayContain(key);  // the caller reads it in a batch
      return {};
    }
    return promoteFromFlash(key, hash);
  }
  if (isExpired(*item)) {
    // A miss; the read reclaims the dead item rather than leave it for the
    // reaper. The unlink may make the unpinner the owner, which only a
    // counted pin's release handles: a hazard pin looks again with a count.
    if (hazard) {
      HazardPins::clear(hazard);
      const CompressedRef counted = index_->acquire(key, hash, item);
      if (!counted) return {};  // gone meanwhile
      ReadHandle pin(this, item, counted);
      if (isExpired(*item)) dropExpired(item, counted);
      return {};
    }
    ReadHandle pin(this, item, ref);
    dropExpired(item, ref);
    return {};
  }
  const uint32_t tier = table_->tierOf(ref);
  counters_->tierHits[tier]->add();
  AllocationClass& owner = *table_->owner(ref);
  owner.policy().recordAccess(ref.raw(), item->hook);
  if (tier > 0) {
    // Would a tier above have kept it with one more slab? (marginal-hits)
    if (rebalancer_) rebalancer_->noteLowerTierHit(tier, owner.pool(), owner.id(), SlabTable::stableKeyHash(key));
    if (config_.promotion.enabled) movers_->noteLowerTierHit(item, ref);
  }
  return ReadHandle(this, item, ref, hazard);
}

std::optional<std::string> Cache::get(std::string_view key) {
  ReadHandle h = find(key);
  if (!h) return std::nullopt;
  return std::string(h.value());
}

WriteHandle Cache::allocate(std::string_view key, size_t valueSize) { return allocate(0, key, valueSize); }

WriteHandle Cache::allocate(std::string_view key, size_t valueSize, Ttl ttl, uint32_t flags) {
  return allocate(0, key, valueSize, ttl, flags);
}

WriteHandle Cache::allocate(PoolId pool, std::string_view key, size_t valueSize, Ttl ttl, uint32_t flags) {
  WriteHandle h = allocate(pool, key, valueSize);
  if (h) {
    h.item()->expiry = deadlineAfter(ttl);
    h.item()->flags = flags;
  }
  return h;
}

WriteHandle Cache::allocate(PoolId pool, std::string_view key, size_t valueSize) {
  if (pool >= poolCount()) throw std::out_of_range("pool id " + std::to_string(pool) + " does not exist");
  // The caller will insert this key: its bucket starts loading now and
  // arrives while the slot is taken and filled (the handle keeps the hash
  // for the insert).
  const uint64_t hash = hashKey(key);
  index_->prefetchBucket(hash);
  WriteHandle h = allocateIn(0, pool, key, valueSize, hash);
  // The chain's first item (the one the insert compares and rewrites or
  // unlinks) loads during the caller's fill, if the fill is long enough to
  // hide a miss. Finding it reads the bucket, which may still be in flight:
  // before a short fill that read only holds this call (BM_AllocateInsert's
  // 100-byte values ran faster without it).
  if (h && valueSize >= kChainHeadMinValue) index_->prefetchChainHead(hash);
  return h;
}

WriteHandle Cache::allocateDurable(std::string_view key, size_t valueSize, uint64_t hash) {
  const int pt = persistence_->firstPersistentTier();
  return allocateIn(pt < 0 ? 0 : static_cast<uint32_t>(pt), 0, key, valueSize, hash, pt >= 0);
}

WriteHandle Cache::allocateIn(uint32_t tier, PoolId pool, std::string_view key, size_t valueSize, uint64_t hash,
                              bool persistentOnly) {
  if (key.size() > kMaxKeySize || valueSize > Item::kMaxValueSize) {
    counters_->alloc_too_large.add();
    return {};
  }
  SlabAllocator& a = *allocs_[tier];
  const int found = a.classFor(Item::totalSize(key.size(), valueSize));
  if (found < 0) {
    counters_->alloc_too_large.add();
    return {};
  }
  const uint32_t cid = static_cast<uint32_t>(found);
  AllocationClass& ac = a.cls(pool, cid);
  // A class that evicted this key lately would have hit with one more slab.
  if (rebalancer_) rebalancer_->noteAllocation(pool, cid, SlabTable::stableKeyHash(key));

  // The slot a replace or a dropped handle just gave back, if any: no lock,
  // and a class that was given a slot is not running dry (nothing for the
  // movers to be told). It is in `tier`, which is persistent when it must be.
  CompressedRef ref = ac.popSpare();
  if (!ref && !config_.demotion.enabled) {
    // Without demotion, lower tiers fill only by falling through to the
    // first one with room (insert to the first free tier).
    // A durable set falls through to persistent tiers only: a volatile slot
    // would lose an acknowledged set to a crash.
    for (size_t t = tier; !ref && t < allocs_.size(); ++t) {
      if (!persistentOnly || tiers_[t]->persistent()) ref = allocs_[t]->allocateSlot(pool, cid);
    }
  }
  if (!ref) ref = movers_->obtainSlot(tier, pool, cid);
  // Every candidate of the class is pinned: a lower tier with room (or
  // with unpinned items) takes the item rather than the set failing.
  for (size_t t = tier + 1; !ref && t < allocs_.size() && maySpillBelow(tier); ++t) {
    ref = movers_->obtainSlot(static_cast<uint32_t>(t), pool, cid);
  }
  if (!ref) {
    ac.countFailure();
    return {};
  }
  Item* item = table_->item(ref);
  item->init(key, static_cast<uint32_t>(valueSize));
  ac.countSuccess();
  return WriteHandle(this, item, ref, hash);
}

WriteHandle Cache::allocateForSet(std::string_view key, size_t valueSize, Ttl ttl, uint32_t flags, uint64_t hash) {
  // allocateIn, not allocate(): a set has hashed the key and prefetches
  // its bucket itself.
  WriteHandle h = config_.persistence.durable_sets ? allocateDurable(key, valueSize, hash)
                                                   : allocateIn(0, 0, key, valueSize, hash);
  if (h) {
    h.item()->expiry = deadlineAfter(ttl);
    h.item()->flags = flags;
    // The insert follows the value's copy at once, and the set walked the
    // key's chain already (or started loading its bucket): the item the
    // bucket points to, the one the insert compares and rewrites or
    // unlinks, loads during the copy.
    index_->prefetchChainHead(hash);
  }
  return h;
}

WriteHandle Cache::filledForSet(std::string_view key, std::string_view value, Ttl ttl, uint32_t flags,
                                uint64_t hash) {
  counters_->sets.add();
  WriteHandle h = allocateForSet(key, value.size(), ttl, flags, hash);
  if (!h) {
    counters_->set_failures.add();
    return h;
  }
  // An empty view may have a null data(), which memcpy must not get.
  if (!value.empty()) std::memcpy(h.data(), value.data(), value.size());  // the chain head loads meanwhile
  return h;
}

bool Cache::maySpillBelow(uint32_t tier) const {
  return !(config_.persistence.durable_sets && allocs_[tier]->tier().persistent());
}

bool Cache::insertOrReplace(WriteHandle&& handle) {
  if (!handle) throw std::invalid_argument("insertOrReplace: empty handle");
  if (handle.cache_ != this) throw std::invalid_argument("insert: the handle belongs to another Cache");
  const uint64_t hash = handle.hash_;
  if (replaceInPlace(handle, hash)) return true;
  return publishHashed(std::move(handle), InsertCondition{}, true, hash).existed;
}

bool Cache::set(std::string_view key, std::string_view value, Ttl ttl, uint32_t flags) {
  const uint64_t hash = hashKey(key);
  if (setInPlace(key, value, ttl, flags, hash)) return true;
  WriteHandle h = filledForSet(key, value, ttl, flags, hash);
  if (!h) return false;
  publishHashed(std::move(h), InsertCondition{}, true, hash);
  return true;
}

bool Cache::setInPlace(std::string_view key, std::string_view value, Ttl ttl, uint32_t flags, uint64_t hash) {
  // The bucket's line (a cache miss in a large index) starts loading while
  // the class is looked up.
  index_->prefetchBucket(hash);
  if (!inPlaceSets_ || value.size() > kMaxInPlaceValue || key.size() > kMaxKeySize) return false;
  const int cls = allocs_[0]->classFor(Item::totalSize(key.size(), value.size()));
  if (cls < 0) return false;
  return rewriteInPlace(key, hash, allocs_[0]->cls(0, static_cast<uint32_t>(cls)), value, deadlineAfter(ttl), flags,
                        counters_->setsInPlace);
}

bool Cache::replaceInPlace(WriteHandle& h, uint64_t hash) {
  const Item& src = *h.item();
  if (!inPlaceSets_ || src.valueSize() > kMaxInPlaceValue || table_->persistent(h.ref())) return false;
  AllocationClass& cls = *table_->owner(h.ref());
  if (!rewriteInPlace(src.key(), hash, cls, src.value(), src.expiry, src.flags, counters_->insertsInPlace)) {
    return false;
  }
  discardUnpublished(h, cls);
  return true;
}

void Cache::discardUnpublished(WriteHandle& h, AllocationClass& cls) {
  // The handle holds the item's only reference, and nothing else writes
  // its state: it is in no index chain or list (find and the movers cannot
  // reach it) and a slab release skips a slot with a reference. So the
  // release needs no locked read-modify-write: the state word becomes that
  // of an owned slot (pushFree stores it) and the slot goes back. Never
  // listed, it has no policy entry to leave.
  TC_DCHECK(h.item_->state.load(std::memory_order_relaxed) == 1);  // one reference, unpublished
  counters_->handlesClosed.add();
  cls.pushFree(h.ref_);
  h.item_ = nullptr;
}

bool Cache::rewriteInPlace(std::string_view key, uint64_t hash, AllocationClass& target, std::string_view value,
                           uint32_t expiry, uint32_t flags, ShardedCounter& counted) {
  // As publish does: the reads that test deadlines must know of one before
  // an item with it is visible.
  if (expiry != 0 && !deadlinesSeen_.load(std::memory_order_relaxed)) {
    deadlinesSeen_.store(true, std::memory_order_relaxed);
  }
  const LiveCheck live = liveCheck();
  const CompressedRef ref = index_->rewriteInPlace(
      key, hash,
      // Where the new item would go (same class, so same tier and pool), and
      // alive: a dead item's replace reports it expired.
      [&](const Item& it, CompressedRef r) {
        if (table_->owner(r) != &target || live.dead(it)) return false;
        // The header's line is in (the key was compared); request the
        // value's lines for writing now, so their misses overlap the claim.
        for (size_t off = 64; off < value.size() + 64; off += 64) __builtin_prefetch(it.valueData() + off - 64, 1);
        return true;
      },
      // Under the claim: the locked instructions (sequence number, counter,
      // the policy's access bit) come before the value's stores, so none
      // waits for their misses to drain.
      [&](Item& it, CompressedRef r) {
        it.setSeq(nextSeq_.fetch_add(1, std::memory_order_relaxed));
        counted.add();
        // A rewrite is a use of the key, as the policies' replace counts it
        // (fits() saw the item in target).
        target.policy().recordAccess(r.raw(), it.hook);
        it.setValueSize(static_cast<uint32_t>(value.size()));
        it.setDeadline(expiry);
        it.flags = flags;
        if (!value.empty()) std::memcpy(it.valueData(), value.data(), value.size());
      });
  // An older copy on flash would come back once this one leaves memory.
  // No key lock: a demotion claims the item, so none of it was under way.
  if (ref && flash_) flash_->store().remove(key);
  return static_cast<bool>(ref);
}

bool Cache::remove(std::string_view key) {
  bool owned = false;
  bool pinned = false;
  const uint64_t hash = hashKey(key);
  CompressedRef ref;
  bool onFlash = false;
  if (flash_) {
    // Memory and flash together, under the key's lock (flash_tier.h).
    std::lock_guard<std::mutex> g(flash_->keyLock(hash));
    ref = index_->remove(key, hash, owned, &pinned);
    onFlash = flash_->store().remove(key);
  } else {
    ref = index_->remove(key, hash, owned, &pinned);
  }
  if (!ref) {
    if (onFlash) counters_->removes.add();
    return onFlash;
  }
  Item* item = table_->item(ref);
  // Pinned (or owned), the item stays readable for the callback. Neither:
  // a slab release had claimed it and reports it.
  const bool dead = (pinned || owned) && isExpired(*item);
  if (pinned || owned) notifyRemoved(*item, ref, dead ? RemoveCause::kExpired : RemoveCause::kRemoved);
  if (pinned) release(item, ref);
  if (owned) freeOwned(ref);
  if (dead) return false;  // an expired key was already absent
  counters_->removes.add();
  return true;
}

void Cache::release(Item* item, CompressedRef ref) {
  if (item->releaseRef()) freeOwned(ref);
}

void Cache::freeOwned(CompressedRef ref) { table_->owner(ref)->freeOwned(ref); }

size_t Cache::rebalanceSlabs() { return rebalancer_ ? rebalancer_->runOnce() : 0; }

uint64_t Cache::tierLimit(uint32_t tier) const {
  return static_cast<uint64_t>(allocs_.at(tier)->slabLimit()) * table_->slabSize();
}

Cache::TierResize Cache::resizeTier(uint32_t tier, uint64_t bytes) {
  std::lock_guard<std::mutex> g(resizeMu_);
  if (tier >= allocs_.size()) {
    throw std::invalid_argument("resizeTier: no tier " + std::to_string(tier) + " (the cache has " +
                                std::to_string(allocs_.size()) + ")");
  }
  SlabAllocator& a = *allocs_[tier];
  const uint64_t slab = table_->slabSize();
  const std::string name = "tier '" + a.tier().name() + "'";
  if (a.tier().persistent()) {
    throw std::invalid_argument(name + " is persistent: its pool file fixes its size");
  }
  const uint64_t reserved = static_cast<uint64_t>(a.slabCount()) * slab;
  if (bytes > reserved) {
    throw std::invalid_argument(name + ": cannot grow to " + formatSize(bytes) + ", past the " + formatSize(reserved) +
                                " it reserved at open");
  }
  if (bytes < slab) {
    throw std::invalid_argument(name + ": " + formatSize(bytes) + " is less than one slab (" + formatSize(slab) + ")");
  }
  uint32_t over = a.setSlabLimit(static_cast<uint32_t>(bytes / slab));
  TierResize r;
  // The classes with the most slabs give first; each release is bounded
  // (AllocationClass::kReleaseTries slabs looked at), and a class whose
  // slabs are all pinned is passed over.
  while (over > 0) {
    std::vector<std::tuple<uint64_t, uint32_t, uint32_t>> donors;  // slabs, pool, class
    for (uint32_t p = 0; p < a.poolCount(); ++p) {
      for (uint32_t c = 0; c < a.classCount(); ++c) {
        if (const uint64_t n = a.cls(p, c).slabCountHint()) donors.emplace_back(n, p, c);
      }
    }
    std::sort(donors.begin(), donors.end(),
              [](const auto& x, const auto& y) { return std::get<0>(x) > std::get<0>(y); });
    bool released = false;
    for (const auto& [n, p, c] : donors) {
      if (movers_->retireSlab(tier, p, c)) {
        released = true;
        break;
      }
    }
    if (!released) break;
    ++r.slabsReleased;
    --over;
  }
  r.limitBytes = static_cast<uint64_t>(a.slabLimit()) * slab;
  r.usedBytes = static_cast<uint64_t>(a.slabsUsed()) * slab;
  r.reached = r.usedBytes <= r.limitBytes;
  return r;
}

void Cache::drainDeferredFrees() const {
  for (const auto& a : allocs_) {
    for (uint32_t p = 0; p < a->poolCount(); ++p) {
      for (uint32_t c = 0; c < a->classCount(); ++c) a->cls(p, c).drainDeferred();
    }
  }
}

CacheStats Cache::stats() const {
  // Items are counted from the policies: deferred frees leave first.
  drainDeferredFrees();
  CacheStats s = stats_->collect();
  if (flash_) flash_->addStats(s);
  return s;
}

std::string Cache::checkConsistency() const {
  // Background workers move items between structures; hold them still.
  if (rebalancer_) rebalancer_->stop();
  movers_->stop();
  reaper_->stop();
  struct Restart {
    Movers& m;
    ItemReaper& r;
    SlabRebalancer* s;
    bool reaperOn;
    ~Restart() {
      m.start();
      if (s) s->start();
      if (reaperOn) r.start();
    }
  } restart{*movers_, *reaper_, rebalancer_.get(), config_.reaper.enabled};
  drainDeferredFrees();
  std::string out;
  uint64_t live = 0;
  for (const auto& a : allocs_) a->check(out, live);
  const uint64_t indexed = index_->check(hooks_.hash, out);
  if (indexed != live) {
    out += "index holds " + std::to_string(indexed) + " items, slabs hold " + std::to_string(live) + "\n";
  }
  return out;
}

// ---- handles ----

std::string_view ReadHandle::key() const { return item_->key(); }
std::string_view ReadHandle::value() const { return item_->value(); }
uint32_t ReadHandle::tier() const { return cache_->table_->tierOf(ref_); }
ReadHandle::Placement ReadHandle::placement() const {
  const AllocationClass* c = cache_->table_->owner(ref_);
  if (c == nullptr) return {};  // not in a slab (a value read back from flash)
  return {c->pool(), c->id(), c->allocSize()};
}

ReadHandle::ReadHandle(Cache* cache, Item* item, CompressedRef ref, std::atomic<const void*>* hazard)
    : cache_(cache), item_(item), ref_(ref), hazard_(hazard) {
  cache_->counters_->handlesOpened.add();
}

void ReadHandle::reset() {
  if (item_) {
    cache_->counters_->handlesClosed.add();
    if (hazard_) {
      HazardPins::clear(hazard_);
      hazard_ = nullptr;
    } else {
      cache_->release(item_, ref_);
    }
    item_ = nullptr;
  }
}

void WriteHandle::discard() {
  if (item_) cache_->discardUnpublished(*this, *cache_->table_->owner(ref_));
}

char* WriteHandle::data() const { return item_->valueData(); }
size_t WriteHandle::size() const { return item_->valueSize(); }

}  // namespace tiercache
