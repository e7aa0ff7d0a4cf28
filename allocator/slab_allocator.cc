#include "slab_allocator.h"


#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "../eviction/clock_policy.h"
#include "../eviction/lru_policy.h"
#include "../eviction/s3fifo_policy.h"
#include "../eviction/wtinylfu_policy.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace tiercache {

uint64_t SlabTable::keyHash(RefWord ref) const { return stableKeyHash(item(CompressedRef(ref))->key()); }

uint64_t SlabTable::stableKeyHash(std::string_view key) {
  return XXH3_64bits_withSeed(key.data(), key.size(), 0x7469657263616368ull);  // "tiercach"
}

// The config's metadata estimate (CacheConfig::metadataBytes) uses these.
static_assert(sizeof(SlabInfo) <= CacheConfig::kSlabMetadataBytes);
static_assert(sizeof(AllocationClass) + sizeof(LruPolicy) <= CacheConfig::kClassMetadataBytes);
static_assert(CacheConfig::kClassTallyBytes ==
              2 * ShardedCounter::kCells * AllocationClass::kTallyPerClass * sizeof(uint64_t));
static_assert(CacheConfig::kTierTallyRoundingBytes == 2 * ShardedCounter::kCells * 64);
static_assert(sizeof(AllocationClass) + sizeof(ClockPolicy) <= CacheConfig::kClassMetadataBytes);
static_assert(sizeof(AllocationClass) + sizeof(S3FifoPolicy) <= CacheConfig::kClassMetadataBytes);
static_assert(sizeof(AllocationClass) + sizeof(WTinyLfuPolicy) <= CacheConfig::kClassMetadataBytes);

SlabTable::SlabTable(uint64_t slabSize, uint32_t slotBits, uint32_t totalSlabs)
    : slabSize_(slabSize), slotBits_(slotBits), slabs_(totalSlabs) {
  // The top slab id would make the all-ones ref, which means null.
  constexpr uint32_t kRefBits = CompressedRef::kBits;
  if (slotBits_ >= kRefBits || totalSlabs >= (1ull << (kRefBits - slotBits_))) {
    throw std::invalid_argument("too many slabs (" + std::to_string(totalSlabs) + ") for " +
                                std::to_string(kRefBits - slotBits_) + " bits of slab id");
  }
}

AllocationClass::AllocationClass(SlabTable& table, uint32_t tier, uint32_t pool, uint32_t id, uint32_t allocSize,
                                 std::unique_ptr<EvictionPolicy> policy, ShardedTally& tally, size_t tallyAt)
    : table_(table),
      tier_(tier),
      pool_(pool),
      id_(id),
      allocSize_(allocSize),
      slotsPerSlab_(static_cast<uint32_t>(table.slabSize() / allocSize)),
      policy_(std::move(policy)),
      tally_(tally),
      tallyAt_(tallyAt) {}

CompressedRef AllocationClass::popFree(bool* belowLow) {
  if (const CompressedRef spare = popSpare()) {
    // A class that was just given a slot back is not running dry.
    if (belowLow) *belowLow = false;
    return spare;
  }
  std::lock_guard<ClassMutex> g(lock_);
  const CompressedRef ref = popFreeLocked();
  if (belowLow) {
    const uint64_t free = freeCount_ + uncarvedLocked();
    const uint64_t capacity = slabs_.size() * slotsPerSlab_;
    *belowLow = free < std::min(lowSlots_, capacity) ||
                100.0 * static_cast<double>(free) < lowWatermark_ * static_cast<double>(capacity);
  }
  return ref;
}

size_t AllocationClass::allocateSlots(size_t n, CompressedRef* out) {
  std::lock_guard<ClassMutex> g(lock_);
  size_t got = 0;
  while (got < n) {
    const CompressedRef ref = popFreeLocked();
    if (!ref) break;
    out[got++] = ref;
  }
  return got;
}

CompressedRef AllocationClass::popFreeLocked() {
  if (freeHead_ != CompressedRef::kNull) {
    const CompressedRef ref(freeHead_);
    Item* it = table_.item(ref);
    freeHead_ = it->chainNext();
    if (freeHead_ == CompressedRef::kNull) freeTail_ = CompressedRef::kNull;
    --freeCount_;
    it->state.store(Item::kExclusive, std::memory_order_relaxed);
    return ref;
  }
  while (!carve_.empty()) {
    if (carveNext_ < slotsPerSlab_) {
      const CompressedRef ref = table_.makeRef(carve_.back(), carveNext_++);
      table_.item(ref)->state.store(Item::kExclusive, std::memory_order_relaxed);
      return ref;
    }
    carve_.pop_back();
    carveNext_ = 0;
  }
  return CompressedRef();
}

bool AllocationClass::pushSpare(CompressedRef ref) {
  if (spare_.load(std::memory_order_relaxed) != CompressedRef::kNull) return false;
  if (HazardPins::isProtected(table_.item(ref))) return false;  // the caller defers it
  return pushSpareUnchecked(ref);
}

bool AllocationClass::pushSpareUnchecked(CompressedRef ref) {
  if (spare_.load(std::memory_order_relaxed) != CompressedRef::kNull) return false;
  // Owned, as a slot fresh from popFreeLocked is (recovery frees slots
  // whose state word is whatever the pool held).
  table_.item(ref)->state.store(Item::kExclusive, std::memory_order_relaxed);
  uint64_t none = CompressedRef::kNull;
  return spare_.compare_exchange_strong(none, ref.raw(), std::memory_order_release, std::memory_order_relaxed);
}

void AllocationClass::pushFree(CompressedRef ref) {
  Item* it = table_.item(ref);
  if (HazardPins::isProtected(it)) {  // a lock-free reader still reads it
    deferFree(ref);
    return;
  }
  if (pushSpareUnchecked(ref)) return;
  std::lock_guard<ClassMutex> g(lock_);
  it->state.store(Item::kFreeSlot, std::memory_order_relaxed);
  pushFreeHeadLocked(ref.raw());
  ++freeCount_;
}

void AllocationClass::pushFreeHeadLocked(uint64_t ref) {
  table_.item(CompressedRef(ref))->setChainNext(freeHead_);
  if (freeHead_ == CompressedRef::kNull) freeTail_ = ref;
  freeHead_ = ref;
}

void AllocationClass::deferFree(CompressedRef ref) {
  Item* it = table_.item(ref);
  uint64_t head = deferredHead_.load(std::memory_order_relaxed);
  do {
    it->setChainNext(head);
  } while (!deferredHead_.compare_exchange_weak(head, ref.raw(), std::memory_order_release, std::memory_order_relaxed));
}

void AllocationClass::flushSpareLocked() {
  const uint64_t r = spare_.exchange(CompressedRef::kNull, std::memory_order_acquire);
  if (r == CompressedRef::kNull) return;
  Item* it = table_.item(CompressedRef(r));
  it->state.store(Item::kFreeSlot, std::memory_order_relaxed);
  pushFreeHeadLocked(r);
  ++freeCount_;
}

size_t AllocationClass::drainDeferred() {
  if (spare_.load(std::memory_order_relaxed) != CompressedRef::kNull) {
    std::lock_guard<ClassMutex> g(lock_);
    flushSpareLocked();
  }
  if (!hasDeferred()) return 0;
  // Counted before the list is taken: an allocation that finds both the
  // free list and this list empty waits for the slots in flight
  // (waitForDrains) instead of evicting for nothing.
  drainsInFlight_.fetch_add(1, std::memory_order_seq_cst);
  uint64_t r = deferredHead_.exchange(CompressedRef::kNull, std::memory_order_seq_cst);
  // Small chunks, and no class lock while the policy unlinks them (each
  // unlink touches two cold neighbours): an allocation waiting for either
  // lock waits for 16 items at most.
  constexpr size_t kChunk = 16;
  RefWord refs[kChunk];
  CompressedRef slots[kChunk];
  size_t total = 0;
  while (r != CompressedRef::kNull) {
    size_t n = 0;
    size_t members = 0;
    for (; n < kChunk && r != CompressedRef::kNull; ++n) {
      slots[n] = CompressedRef(r);
      const Item* it = table_.item(slots[n]);
      // An in-place replace already took the old item out of the policy:
      // only members need the list lock. Membership cannot change under us:
      // a deferred item is owned, so nothing adds or evicts it, and the
      // list-lock hold that cleared kInList came before deferFree's release.
      if (it->hook.meta.load(std::memory_order_relaxed) & EvictionHook::kInList) refs[members++] = r;
      r = it->chainNext();
    }
    if (members) policy_->removeBatch(refs, members);
    total += pushFreeBatch(slots, n);
  }
  drainsInFlight_.fetch_sub(1, std::memory_order_release);
  return total;
}

CompressedRef AllocationClass::popFreeAfterDrains() {
  for (int spins = 0; drainsInFlight_.load(std::memory_order_acquire) > 0; ++spins) {
    if (const CompressedRef ref = popFree()) return ref;
    if (spins >= 64) std::this_thread::yield();
  }
  return popFree();
}

size_t AllocationClass::pushFreeBatch(const CompressedRef* refs, size_t n, bool atTail) {
  if (n == 0) return 0;
  // Slots a lock-free reader still holds wait on the deferred list.
  const HazardPins::Snapshot held;
  std::vector<CompressedRef> kept;
  if (!held.empty()) [[unlikely]] {
    for (size_t i = 0; i < n; ++i) {
      if (held.contains(table_.item(refs[i]))) {
        deferFree(refs[i]);
      } else {
        kept.push_back(refs[i]);
      }
    }
    refs = kept.data();
    n = kept.size();
    if (n == 0) return 0;
  }
  // Chained before the lock; marked free under it (releaseSlab reads the
  // marks under the lock and must find a free-marked slot on the list).
  for (size_t i = 0; i < n; ++i) {
    table_.item(refs[i])->setChainNext(i + 1 < n ? refs[i + 1].raw() : CompressedRef::kNull);
  }
  std::lock_guard<ClassMutex> g(lock_);
  for (size_t i = 0; i < n; ++i) table_.item(refs[i])->state.store(Item::kFreeSlot, std::memory_order_relaxed);
  if (atTail && freeTail_ != CompressedRef::kNull) {
    table_.item(CompressedRef(freeTail_))->setChainNext(refs[0].raw());
    freeTail_ = refs[n - 1].raw();
  } else {
    table_.item(refs[n - 1])->setChainNext(freeHead_);
    if (freeHead_ == CompressedRef::kNull) freeTail_ = refs[n - 1].raw();
    freeHead_ = refs[0].raw();
  }
  freeCount_ += n;
  return n;
}

void AllocationClass::addSlab(uint32_t slab) {
  std::lock_guard<ClassMutex> g(lock_);
  slabs_.push_back(slab);
  slabsHint_.store(static_cast<uint32_t>(slabs_.size()), std::memory_order_relaxed);
  // Keep carving the current slab first: the new one goes underneath.
  if (carve_.empty()) {
    carve_.push_back(slab);
    carveNext_ = 0;
  } else {
    carve_.insert(carve_.begin(), slab);
  }
}

void AllocationClass::adoptSlab(uint32_t slab) {
  std::lock_guard<ClassMutex> g(lock_);
  slabs_.push_back(slab);
  slabsHint_.store(static_cast<uint32_t>(slabs_.size()), std::memory_order_relaxed);
}

uint64_t AllocationClass::slabCount() const {
  std::lock_guard<ClassMutex> g(lock_);
  return slabs_.size();
}

uint32_t AllocationClass::uncarvedLocked() const {
  if (carve_.empty()) return 0;
  return static_cast<uint32_t>(carve_.size()) * slotsPerSlab_ - carveNext_;
}

uint64_t AllocationClass::freeSlots() const {
  std::lock_guard<ClassMutex> g(lock_);
  return freeCount_ + uncarvedLocked() + (spare_.load(std::memory_order_relaxed) != CompressedRef::kNull);
}

uint32_t AllocationClass::carvedLocked(uint32_t slab) const {
  auto it = std::find(carve_.begin(), carve_.end(), slab);
  if (it == carve_.end()) return slotsPerSlab_;
  return (slab == carve_.back()) ? carveNext_ : 0;
}

void AllocationClass::undoClaimsLocked(std::vector<CompressedRef>& claimed, size_t from) {
  for (size_t i = from; i < claimed.size(); ++i) {
    Item* it = table_.item(claimed[i]);
    uint32_t s = it->state.load(std::memory_order_relaxed);
    TC_DCHECK((s & Item::kExclusive) && !(s & Item::kRefMask));  // our claim: nobody pinned or dropped it
    while ((s & Item::kAccessible) &&
           !it->state.compare_exchange_weak(s, s & ~Item::kExclusive, std::memory_order_release,
                                            std::memory_order_relaxed)) {
    }
    if (s & Item::kAccessible) continue;
    // Removed while claimed: the remover left it to us.
    policy_->remove(claimed[i].raw());
    if (HazardPins::isProtected(it)) {
      deferFree(claimed[i]);
      continue;
    }
    it->state.store(Item::kFreeSlot, std::memory_order_relaxed);
    pushFreeHeadLocked(claimed[i].raw());
    ++freeCount_;
  }
  claimed.resize(from);
}

uint32_t AllocationClass::releaseSlab(std::vector<CompressedRef>& claimed) {
  std::lock_guard<ClassMutex> g(lock_);
  if (slabs_.empty()) return kNoSlab;
  flushSpareLocked();  // a spare slot would make its slab look busy
  const uint32_t bits = table_.slotBits();

  // Free slots per slab (uncarved slots count as free).
  std::unordered_map<uint32_t, uint32_t> freePerSlab;
  for (uint64_t r = freeHead_; r != CompressedRef::kNull; r = table_.item(CompressedRef(r))->chainNext()) {
    ++freePerSlab[CompressedRef(r).slab(bits)];
  }
  // Most free slots first: the cheapest slab to empty. Stable, so that
  // among equals the oldest slab goes first, as before.
  std::vector<std::pair<int64_t, uint32_t>> order;
  order.reserve(slabs_.size());
  for (uint32_t s : slabs_) order.emplace_back(freePerSlab[s] + (slotsPerSlab_ - carvedLocked(s)), s);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  // Claims below must not allocate: an exception between a claim and its
  // bookkeeping would leave an item claimed for good.
  const size_t firstClaim = claimed.size();
  claimed.reserve(firstClaim + slotsPerSlab_);

  uint32_t victim = kNoSlab;
  for (size_t k = 0; k < order.size() && k < kReleaseTries && victim == kNoSlab; ++k) {
    const uint32_t slab = order[k].second;
    const uint32_t carved = carvedLocked(slab);
    // A pin can last for seconds: look before claiming anything (a claim
    // makes the item miss for readers until it is undone).
    bool pinned = false;
    for (uint32_t slot = 0; slot < carved && !pinned; ++slot) {
      const uint32_t s = table_.item(table_.makeRef(slab, slot))->state.load(std::memory_order_relaxed);
      pinned = s != Item::kFreeSlot && ((s & Item::kRefMask) || (s & (Item::kMoving | Item::kExclusive)));
    }
    if (pinned) continue;
    for (uint32_t slot = 0; slot < carved && !pinned; ++slot) {
      const CompressedRef ref = table_.makeRef(slab, slot);
      Item* it = table_.item(ref);
      if (it->state.load(std::memory_order_relaxed) == Item::kFreeSlot) continue;
      if (it->tryMarkExclusive()) {
        claimed.push_back(ref);
      } else {
        pinned = true;  // pinned since the look
      }
    }
    if (!pinned) {
      // Claimed every item; a lock-free reader that pinned one before
      // (hazard_pins.h) keeps the slab.
      const HazardPins::Snapshot held;
      for (size_t i = firstClaim; i < claimed.size() && !pinned; ++i) pinned = held.contains(table_.item(claimed[i]));
    }
    if (pinned) {
      undoClaimsLocked(claimed, firstClaim);
      continue;
    }
    victim = slab;
  }
  if (victim == kNoSlab) return kNoSlab;
  // Every slot of the victim is free or claimed by us, so no hit on its
  // items is in flight: the hits the policy buffered (refs into this slab
  // among them) are applied now, while the refs still mean this class's
  // slots (lru_policy.h says why that matters).
  policy_->applyPendingAccesses(false);
  for (size_t i = firstClaim; i < claimed.size(); ++i) policy_->remove(claimed[i].raw());

  // Drop the victim's free slots from the free list and stop carving it.
  Item* prev = nullptr;  // the last slot kept; null: none yet (freeHead_ links)
  freeTail_ = CompressedRef::kNull;
  for (uint64_t r = freeHead_; r != CompressedRef::kNull;) {
    Item* it = table_.item(CompressedRef(r));
    const uint64_t next = it->chainNext();
    if (CompressedRef(r).slab(bits) == victim) {
      if (prev)
        prev->setChainNext(next);
      else
        freeHead_ = next;
      --freeCount_;
    } else {
      freeTail_ = r;
      prev = it;
    }
    r = next;
  }
  auto c = std::find(carve_.begin(), carve_.end(), victim);
  if (c != carve_.end()) {
    const bool wasBack = (victim == carve_.back());
    carve_.erase(c);
    if (wasBack) carveNext_ = 0;
  }
  slabs_.erase(std::find(slabs_.begin(), slabs_.end(), victim));
  slabsHint_.store(static_cast<uint32_t>(slabs_.size()), std::memory_order_relaxed);
  return victim;
}

void AllocationClass::check(std::string& out, uint64_t& liveItems) const {
  std::lock_guard<ClassMutex> g(lock_);
  const std::string where = "class(t" + std::to_string(tier_) + ",p" + std::to_string(pool_) + ",c" +
                            std::to_string(id_) + "): ";
  const uint32_t bits = table_.slotBits();
  std::unordered_set<uint32_t> owned(slabs_.begin(), slabs_.end());
  std::unordered_set<uint64_t> freeSet;
  uint64_t last = CompressedRef::kNull;
  for (uint64_t r = freeHead_; r != CompressedRef::kNull; r = table_.item(CompressedRef(r))->chainNext()) {
    last = r;
    const CompressedRef ref(r);
    if (!owned.count(ref.slab(bits))) {
      out += where + "free slot in a slab the class does not own\n";
      return;
    }
    if (!freeSet.insert(r).second) {
      out += where + "free list has a cycle or duplicate\n";
      return;
    }
    if (table_.item(ref)->state.load(std::memory_order_relaxed) != Item::kFreeSlot) {
      out += where + "free-list slot not marked free\n";
    }
  }
  if (freeSet.size() != freeCount_) out += where + "free count " + std::to_string(freeCount_) + " != list length\n";
  if (last != freeTail_) out += where + "free list tail is not its last slot\n";
  // The spare slot is free too, though owned-looking (kExclusive).
  const uint64_t spare = spare_.load(std::memory_order_acquire);
  if (spare != CompressedRef::kNull) {
    if (!owned.count(CompressedRef(spare).slab(bits))) out += where + "spare slot in a slab the class does not own\n";
    if (freeSet.count(spare)) out += where + "spare slot also on the free list\n";
    if (table_.item(CompressedRef(spare))->state.load(std::memory_order_relaxed) != Item::kExclusive) {
      out += where + "spare slot not owned\n";
    }
  }

  struct Ctx {
    const SlabTable* table;
    const AllocationClass* self;
    std::unordered_set<RefWord> members;
    std::string* out;
    std::string where;
  } ctx{&table_, this, {}, &out, where};
  const bool linksOk = policy_->forEach(
      [](RefWord ref, void* p) {
        auto* c = static_cast<Ctx*>(p);
        if (!c->members.insert(ref).second) *c->out += c->where + "item twice in the eviction list\n";
        if (c->table->owner(CompressedRef(ref)) != c->self) *c->out += c->where + "list member of another class\n";
      },
      &ctx);
  if (!linksOk) out += where + "eviction list links are broken\n";

  uint64_t live = 0;
  for (uint32_t slab : slabs_) {
    const SlabInfo& info = table_.slab(slab);
    if (info.owner.load() != this || info.allocSize.load() != allocSize_) out += where + "slab owner mismatch\n";
    const uint32_t carved = carvedLocked(slab);
    for (uint32_t slot = 0; slot < carved; ++slot) {
      const CompressedRef ref = table_.makeRef(slab, slot);
      const uint32_t s = table_.item(ref)->state.load(std::memory_order_relaxed);
      if (s == Item::kFreeSlot) {
        if (!freeSet.count(ref.raw())) out += where + "slot marked free but not on the free list\n";
        continue;
      }
      if (ref.raw() == spare) continue;
      ++live;
      if (s & Item::kRefMask) out += where + "item still pinned (leaked handle?)\n";
      if (s & (Item::kExclusive | Item::kMoving)) out += where + "item left exclusive\n";
      if (!(s & Item::kAccessible)) out += where + "unreachable item not freed\n";
      if (!ctx.members.count(ref.raw())) out += where + "live item missing from the eviction list\n";
    }
  }
  if (live != ctx.members.size()) {
    out += where + "eviction list has " + std::to_string(ctx.members.size()) + " items, slabs hold " +
           std::to_string(live) + "\n";
  }
  liveItems += live;
}

SlabAllocator::SlabAllocator(uint32_t tierIndex, MemoryTier& tier, PoolRecords* records, SlabTable& table,
                             uint32_t firstSlab, const std::vector<PoolConfig>& pools,
                             const std::vector<uint32_t>& classSizes, const EvictionPolicyOptions& policy)
    : tierIndex_(tierIndex),
      tier_(tier),
      table_(table),
      firstSlab_(firstSlab),
      slabCount_(static_cast<uint32_t>(tier.size() / table.slabSize())),
      classSizes_(classSizes),
      allocTally_(AllocationClass::kTallyPerClass * pools.size() * classSizes.size()),
      records_(records),
      limit_(slabCount_) {
  for (uint32_t i = 0; i < slabCount_; ++i) {
    SlabInfo& s = table_.slab(firstSlab_ + i);
    s.base = tier.base() + static_cast<uint64_t>(i) * table.slabSize();
    s.tier = tierIndex;
    s.persistent = records_ != nullptr;
  }
  // Hand slabs out in address order: pop from the back.
  for (uint32_t i = slabCount_; i-- > 0;) freeSlabs_.push_back(firstSlab_ + i);
  // classFor's table: granule g covers sizes (kClassGranule*(g-1), kClassGranule*g];
  // entry g is the first class that holds the granule's smallest size.
  const size_t largest = classSizes_.empty() || classSizes_.size() > UINT16_MAX
                             ? 0
                             : std::min<size_t>(classSizes_.back(), kClassTableBytes);
  classOfGranule_.resize((largest + kClassGranule - 1) / kClassGranule + 1);
  for (size_t g = 0, c = 0; g < classOfGranule_.size(); ++g) {
    const size_t smallest = g == 0 ? 0 : kClassGranule * (g - 1) + 1;
    while (c < classSizes_.size() && classSizes_[c] < smallest) ++c;
    classOfGranule_[g] = static_cast<uint16_t>(c);
  }
  for (uint32_t p = 0; p < pools.size(); ++p) {
    auto pool = std::make_unique<Pool>();
    pool->name = pools[p].name;
    pool->quota = std::min<uint32_t>(
        slabCount_, std::max<uint32_t>(1, static_cast<uint32_t>(pools[p].share * slabCount_ + 1e-9)));
    for (uint32_t c = 0; c < classSizes_.size(); ++c) {
      pool->classes.push_back(std::make_unique<AllocationClass>(
          table_, tierIndex, p, c, classSizes_[c], makeEvictionPolicy(policy, table_), allocTally_,
          AllocationClass::kTallyPerClass * (p * classSizes_.size() + c)));
    }
    pools_.push_back(std::move(pool));
  }
}

uint32_t SlabAllocator::slabsUsed() const {
  std::lock_guard<std::mutex> g(slabLock_);
  return slabCount_ - static_cast<uint32_t>(freeSlabs_.size() + retired_.size());
}

uint32_t SlabAllocator::setSlabLimit(uint32_t slabs) {
  slabs = std::min(slabs, slabCount_);
  std::vector<uint32_t> discard;
  uint32_t over = 0;
  {
    std::lock_guard<std::mutex> g(slabLock_);
    limit_.store(slabs, std::memory_order_relaxed);
    const uint32_t used = slabCount_ - static_cast<uint32_t>(freeSlabs_.size() + retired_.size());
    const size_t room = slabs > used ? slabs - used : 0;
    if (freeSlabs_.size() > room) {
      // The highest slabs leave first (the front: slabs are handed out from the back).
      const auto n = static_cast<std::ptrdiff_t>(freeSlabs_.size() - room);
      discard.assign(freeSlabs_.begin(), freeSlabs_.begin() + n);
      retired_.insert(retired_.end(), discard.begin(), discard.end());
      freeSlabs_.erase(freeSlabs_.begin(), freeSlabs_.begin() + n);
    }
    while (freeSlabs_.size() < room && !retired_.empty()) {
      freeSlabs_.insert(freeSlabs_.begin(), retired_.back());
      retired_.pop_back();
    }
    exhausted_.store(freeSlabs_.empty(), std::memory_order_relaxed);
    over = used > slabs ? used - slabs : 0;
  }
  for (uint32_t s : discard)
    tier_.discard(static_cast<uint64_t>(s - firstSlab_) * table_.slabSize(), table_.slabSize());
  return over;
}

void SlabAllocator::retireSlab(uint32_t slab, uint32_t pool) {
  // owner and allocSize stay as they were (as for a slab the rebalancer
  // moves) until reassignSlab: a reader holding a stale ref finds a class.
  pools_[pool]->owned.fetch_sub(1, std::memory_order_relaxed);
  bool out;
  {
    std::lock_guard<std::mutex> g(slabLock_);
    const uint32_t used = slabCount_ - static_cast<uint32_t>(freeSlabs_.size() + retired_.size()) - 1;
    out = used >= limit_.load(std::memory_order_relaxed);
    if (out) {
      retired_.push_back(slab);
    } else {
      freeSlabs_.push_back(slab);
      exhausted_.store(false, std::memory_order_relaxed);
    }
  }
  if (out) tier_.discard(static_cast<uint64_t>(slab - firstSlab_) * table_.slabSize(), table_.slabSize());
}

int SlabAllocator::classFor(size_t bytes) const {
  const size_t g = (bytes + kClassGranule - 1) / kClassGranule;
  if (g < classOfGranule_.size()) {
    // The table holds the first class that fits the granule's smallest size;
    // explicit class sizes need not be multiples of the granule, so step on
    // past classes smaller than `bytes` (at most a granule's worth).
    size_t c = classOfGranule_[g];
    while (c < classSizes_.size() && classSizes_[c] < bytes) ++c;
    return c == classSizes_.size() ? -1 : static_cast<int>(c);
  }
  auto it = std::lower_bound(classSizes_.begin(), classSizes_.end(), bytes);
  return it == classSizes_.end() ? -1 : static_cast<int>(it - classSizes_.begin());
}

CompressedRef SlabAllocator::allocateSlot(uint32_t pool, uint32_t classId) {
  AllocationClass& c = cls(pool, classId);
  CompressedRef ref = c.popFree();
  if (!ref && growClass(pool, classId)) ref = c.popFree();
  return ref;
}

size_t SlabAllocator::allocateSlots(uint32_t pool, uint32_t classId, size_t n, CompressedRef* out) {
  AllocationClass& c = cls(pool, classId);
  size_t got = c.allocateSlots(n, out);
  while (got < n && growClass(pool, classId)) got += c.allocateSlots(n - got, out + got);
  return got;
}

bool SlabAllocator::growClass(uint32_t pool, uint32_t classId) {
  Pool& p = *pools_[pool];
  // Unlocked pre-check: in steady state every allocation that misses its
  // free list gets here, and the answer is "no" for good.
  if (p.owned.load(std::memory_order_relaxed) >= p.quota || exhausted_.load(std::memory_order_relaxed)) return false;
  uint32_t slab;
  {
    std::lock_guard<std::mutex> g(slabLock_);
    if (p.owned.load(std::memory_order_relaxed) >= p.quota || freeSlabs_.empty()) return false;
    slab = freeSlabs_.back();
    freeSlabs_.pop_back();
    if (freeSlabs_.empty()) exhausted_.store(true, std::memory_order_relaxed);
    p.owned.fetch_add(1, std::memory_order_relaxed);
  }
  reassignSlab(slab, pool, classId);
  return true;
}

void SlabAllocator::reassignSlab(uint32_t slab, uint32_t pool, uint32_t classId) {
  AllocationClass& c = cls(pool, classId);
  SlabInfo& s = table_.slab(slab);
  if (records_) {
    // Recovery scans the slab in the layout its record names, so only slots
    // committed in that layout may look committed: the commit word of every
    // slot of the new layout is cleared, durably, before the record names
    // it. Otherwise old items' bytes, or a value holding an item image at a
    // slot boundary of the new layout, would be parsed as items.
    const uint32_t size = c.allocSize();
    for (uint64_t off = 0; off + size <= table_.slabSize(); off += size) {
      std::memset(s.base + off + offsetof(Item, checksum), 0, sizeof(Item::checksum));
    }
    tier_.persist(s.base, table_.slabSize());
    records_->setSlabRecord(slab - firstSlab_, {size, static_cast<uint16_t>(pool)});
  }
  s.allocSize.store(c.allocSize(), std::memory_order_relaxed);
  s.owner.store(&c, std::memory_order_relaxed);
  c.addSlab(slab);  // the class lock publishes the two stores above
}

void SlabAllocator::adoptSlab(uint32_t slabInTier, uint32_t pool, uint32_t classId) {
  const uint32_t slab = firstSlab_ + slabInTier;
  AllocationClass& c = cls(pool, classId);
  SlabInfo& s = table_.slab(slab);
  s.allocSize.store(c.allocSize(), std::memory_order_relaxed);
  s.owner.store(&c, std::memory_order_relaxed);
  c.adoptSlab(slab);
  pools_[pool]->owned.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> g(slabLock_);
  if (adopted_.empty()) adopted_.assign(slabCount_, false);
  adopted_[slabInTier] = true;
}

void SlabAllocator::finishRecovery() {
  std::lock_guard<std::mutex> g(slabLock_);
  if (adopted_.empty()) return;
  freeSlabs_.clear();
  for (uint32_t i = slabCount_; i-- > 0;) {
    if (!adopted_[i]) freeSlabs_.push_back(firstSlab_ + i);
  }
  exhausted_.store(freeSlabs_.empty(), std::memory_order_relaxed);
  adopted_.clear();
}

std::vector<uint32_t> SlabAllocator::pickDonors(uint32_t pool, uint32_t receiver, bool idleOnly, size_t max) const {
  const Pool& p = *pools_[pool];
  const uint64_t slabSize = table_.slabSize();
  struct Candidate {
    int rank;      // 0 idle slab's worth free, 1 several slabs, 2 its only slab
    uint64_t key;  // larger first within a rank
    uint32_t id;
  };
  std::vector<Candidate> all;
  for (uint32_t c = 0; c < p.classes.size(); ++c) {
    if (c == receiver) continue;
    const AllocationClass& ac = *p.classes[c];
    const uint64_t slabs = ac.slabCount();
    if (slabs == 0) continue;
    const uint64_t freeBytes = ac.freeSlots() * ac.allocSize();
    if (freeBytes >= slabSize) {
      all.push_back({0, freeBytes, c});
    } else if (!idleOnly) {
      all.push_back(slabs > 1 ? Candidate{1, slabs, c} : Candidate{2, freeBytes, c});
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.key > b.key;
  });
  std::vector<uint32_t> out;
  for (size_t i = 0; i < all.size() && out.size() < max; ++i) out.push_back(all[i].id);
  return out;
}

int SlabAllocator::pickDonor(uint32_t pool, uint32_t receiver, bool idleOnly) const {
  const std::vector<uint32_t> d = pickDonors(pool, receiver, idleOnly, 1);
  return d.empty() ? -1 : static_cast<int>(d[0]);
}

void SlabAllocator::check(std::string& out, uint64_t& liveItems) const {
  uint64_t owned = 0;
  for (const auto& p : pools_) {
    uint64_t poolSlabs = 0;
    for (const auto& c : p->classes) {
      c->check(out, liveItems);
      poolSlabs += c->slabCount();
    }
    if (poolSlabs != p->owned.load()) {
      out += "tier " + std::to_string(tierIndex_) + " pool " + p->name + ": classes own " +
             std::to_string(poolSlabs) + " slabs, pool counts " + std::to_string(p->owned.load()) + "\n";
    }
    if (poolSlabs > p->quota) out += "pool " + p->name + " is over its slab quota\n";
    owned += poolSlabs;
  }
  if (owned != slabsUsed()) out += "tier " + std::to_string(tierIndex_) + ": slabs handed out != slabs owned\n";
}

}  // namespace tiercache
