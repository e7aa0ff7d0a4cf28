// The item lifecycle operations of the Cache facade: deadlines and flush,
// conditional publishes (add, CAS, touch), peek, batched and iterated
// lookups, and the remove callback. See docs/design.md, "Item lifecycle".
//
// Who reports an item's departure (the remove callback and the expired
// counter) is decided by who unlinks it from the index, so that it happens
// exactly once: remove, replace, a read that finds an item dead and the
// reaper unlink with a pin held (the item cannot be freed under the
// callback); the eviction walk unlinks items it holds as kMoving; a slab
// release claims items exclusively before anyone else can pin them and
// reports every item it claimed. A move between tiers swaps the index
// entry (replaceExact), which is not a departure.
#include <cstring>
#include <stdexcept>

#include "access_index.h"
#include "cache.h"
#include "cache_counters.h"
#include "cache_persistence.h"
#include "expiry.h"
#include "flash_tier.h"
#include "item.h"
#include "item_reaper.h"
#include "movers.h"
#include "slab_allocator.h"

namespace tiercache {

const char* removeCauseName(RemoveCause cause) {
  switch (cause) {
    case RemoveCause::kEvicted: return "evicted";
    case RemoveCause::kExpired: return "expired";
    case RemoveCause::kRemoved: return "removed";
    case RemoveCause::kReplaced: return "replaced";
  }
  return "unknown";
}

uint32_t Cache::nowSeconds() const {
  return expirySeconds(hooks_.clock ? hooks_.clock() : std::chrono::system_clock::now());
}

uint32_t Cache::deadlineAfter(Ttl ttl) const {
  if (ttl == Ttl::zero()) return 0;
  return expiryDeadline(hooks_.clock ? hooks_.clock() : std::chrono::system_clock::now(), ttl);
}

LiveCheck Cache::liveCheck() const {
  LiveCheck c;
  // No item ever had a deadline and no flush happened: nothing can be dead,
  // and the hot paths read no clock.
  if (!deadlinesSeen_.load(std::memory_order_relaxed)) return c;
  c.now = nowSeconds();
  // A delayed flush takes effect at the first look after its time: the
  // sequence number then marks everything stored before as flushed.
  uint32_t at = pendingFlushAt_.load(std::memory_order_acquire);
  if (at != 0 && c.now >= at &&
      pendingFlushAt_.compare_exchange_strong(at, 0, std::memory_order_acq_rel)) {
    uint64_t cur = flushSeq_.load(std::memory_order_relaxed);
    const uint64_t next = nextSeq_.load(std::memory_order_relaxed);
    while (cur < next && !flushSeq_.compare_exchange_weak(cur, next, std::memory_order_acq_rel)) {
    }
  }
  c.flushSeq = flushSeq_.load(std::memory_order_acquire);
  return c;
}

bool Cache::isExpired(const Item& item) const {
  // The common case (no deadline, no flush ever) reads no clock.
  if (item.expiry == 0 && flushSeq_.load(std::memory_order_acquire) == 0 &&
      pendingFlushAt_.load(std::memory_order_relaxed) == 0) {
    return false;
  }
  return liveCheck().dead(item);
}

void Cache::notifyRemoved(const Item& item, CompressedRef ref, RemoveCause cause) {
  if (cause == RemoveCause::kExpired) {
    counters_->expired.add();
    table_->owner(ref)->counters().reclaimed.fetch_add(1, std::memory_order_relaxed);
  }
  if (!hooks_.onRemove || closing_.load(std::memory_order_relaxed)) return;
  counters_->remove_callbacks.add();
  hooks_.onRemove(RemovedItem{item.key(), item.value(), item.flags, cause});
}

InsertOutcome Cache::publish(WriteHandle&& handle, const InsertCondition& cond, bool notifyReplaced) {
  if (!handle) throw std::invalid_argument("insert: empty handle");
  return publishHashed(std::move(handle), cond, notifyReplaced, handle.hash_);
}

bool Cache::defersFrees() const { return deferFrees_ && movers_->defersFrees(); }

InsertOutcome Cache::publishHashed(WriteHandle&& handle, const InsertCondition& condIn, bool notifyReplaced,
                                   uint64_t hash, bool flashKeyLocked) {
  // Another cache's slot linked into this index would corrupt both.
  if (handle.cache_ != this) throw std::invalid_argument("insert: the handle belongs to another Cache");
  WriteHandle h = std::move(handle);
  Item* item = h.item();
  const CompressedRef ref = h.ref();
  if (item->expiry != 0 && !deadlinesSeen_.load(std::memory_order_relaxed)) {
    deadlinesSeen_.store(true, std::memory_order_relaxed);
  }
  InsertCondition cond = condIn;
  cond.live = liveCheck();
  // With a remove callback the replaced item is pinned so that the callback
  // can read it, and so that whoever unlinks an item is the one who reports it.
  cond.pinOld = static_cast<bool>(hooks_.onRemove);
  item->setSeq(cond.keepSeq != 0 ? cond.keepSeq : nextSeq_.fetch_add(1, std::memory_order_relaxed));
  if (table_->persistent(ref)) persistence_->persistPayload(item, ref);
  const InsertOutcome out = index_->insertIf(ref, item, hash, cond);
  if (!out.stored) {
    counters_->conditional_failures.add();
    return out;  // h discards the unpublished item
  }
  // Published: other threads may pin the item from here on, so the handle's
  // reference ends as a reader's does (release's CAS), not as a discard.
  const ReadHandle published(std::move(h));
  // The key's older copy on flash, if any, goes (after the publish: a
  // promotion of it now finds the key present; under the key's lock: a
  // demotion of the item just replaced is not left half done, flash_tier.h).
  if (flash_) {
    if (flashKeyLocked) {
      flash_->store().remove(item->key());
    } else {
      flash_->invalidate(hash, item->key());
    }
  }
  counters_->inserts.add();
  if (out.old && out.existed) counters_->replaces.add();
  AllocationClass* ac = table_->owner(ref);
  if (out.old && !out.pinnedOld && out.ownedOld && table_->owner(out.old) == ac) {
    // The common replace, no callback: old and new in one class, one
    // policy-lock hold. (notifyRemoved only counts an expired one here.)
    if (out.oldDead) notifyRemoved(*table_->item(out.old), out.old, RemoveCause::kExpired);
    // One hold: the new item takes the old one's place (a live key
    // rewritten is a use of it; a dead one's is a newcomer).
    EvictionPolicy& policy = ac->policy();
    if (out.oldDead) {
      policy.addAndRemove(ref.raw(), out.old.raw());
    } else {
      policy.replace(ref.raw(), out.old.raw());
    }
    if (!defersFrees()) {
      ac->pushFree(out.old);
    } else if (!ac->pushSpare(out.old)) {
      // Out of the policy already: the batch only frees it.
      ac->deferFree(out.old);
    }
    return out;
  }
  ac->policy().add(ref.raw());
  if (out.old) {
    Item* old = table_->item(out.old);
    if (out.pinnedOld) {
      if (out.oldDead) {
        notifyRemoved(*old, out.old, RemoveCause::kExpired);
      } else if (notifyReplaced) {
        notifyRemoved(*old, out.old, RemoveCause::kReplaced);
      }
      release(old, out.old);
    } else if (out.ownedOld) {
      if (out.oldDead) notifyRemoved(*old, out.old, RemoveCause::kExpired);
      if (defersFrees()) {
        table_->owner(out.old)->deferFree(out.old);
      } else {
        freeOwned(out.old);
      }
    }
    // Neither: a slab release claimed the old item and reports it.
  }
  return out;
}

bool Cache::insert(WriteHandle&& handle) {
  loadFromFlashIfAbsent(handle.key(), hashKey(handle.key()));
  InsertCondition c;
  c.kind = InsertCondition::Kind::kIfAbsent;
  return publish(std::move(handle), c, true).stored;
}

bool Cache::add(std::string_view key, std::string_view value, Ttl ttl, uint32_t flags) {
  const uint64_t hash = hashKey(key);
  // The bucket's line (a cache miss in a large index) loads while the slot
  // is allocated, instead of after.
  index_->prefetchBucket(hash);
  WriteHandle h = filledForSet(key, value, ttl, flags, hash);
  if (!h) return false;
  loadFromFlashIfAbsent(key, hash);  // a key on flash is present: add fails
  InsertCondition c;
  c.kind = InsertCondition::Kind::kIfAbsent;
  return publishHashed(std::move(h), c, true, hash).stored;
}

CasResult Cache::compareAndSwap(WriteHandle&& handle, uint64_t casToken) {
  loadFromFlashIfAbsent(handle.key(), hashKey(handle.key()));
  InsertCondition c;
  c.kind = InsertCondition::Kind::kIfToken;
  c.token = casToken;
  const InsertOutcome out = publish(std::move(handle), c, true);
  if (out.stored) return CasResult::kStored;
  return out.existed ? CasResult::kExists : CasResult::kNotFound;
}

CasResult Cache::compareAndSwap(std::string_view key, uint64_t casToken, std::string_view value, Ttl ttl,
                                uint32_t flags) {
  WriteHandle h = allocateForSet(key, value.size(), ttl, flags, hashKey(key));
  if (!h) {
    // Tell "absent" from "no room", as a server must.
    ReadHandle cur = peekOrLoad(key);
    if (!cur) return CasResult::kNotFound;
    return cur.casToken() == casToken ? CasResult::kNotStored : CasResult::kExists;
  }
  if (!value.empty()) std::memcpy(h.data(), value.data(), value.size());
  return compareAndSwap(std::move(h), casToken);
}

bool Cache::touch(std::string_view key, Ttl ttl) {
  return rewriteLive(key, 0, nullptr, deadlineAfter(ttl), true) == CasResult::kStored;
}

CasResult Cache::updateValue(std::string_view key, uint64_t casToken, std::string_view value) {
  return rewriteLive(key, casToken, &value, std::nullopt, false);
}

CasResult Cache::rewriteLive(std::string_view key, uint64_t token, const std::string_view* value,
                             std::optional<uint32_t> deadline, bool keepSeq) {
  // Items are immutable while readable (a persistent tier's checksum covers
  // the deadline), so a new copy is published only over the very item that
  // was read. Without a token a racing writer wins and the loop reads again.
  for (int attempt = 0; attempt < 8; ++attempt) {
    ReadHandle cur = peekOrLoad(key);
    if (!cur) return CasResult::kNotFound;
    if (token != 0 && cur.casToken() != token) return CasResult::kExists;
    const std::string_view v = value ? *value : cur.value();
    const auto pool = static_cast<PoolId>(table_->owner(cur.ref())->pool());
    WriteHandle w =
        config_.persistence.durable_sets ? allocateDurable(key, v.size(), hashKey(key)) : allocate(pool, key, v.size());
    if (!w) return CasResult::kNotStored;
    if (!v.empty()) std::memcpy(w.data(), v.data(), v.size());
    w.item()->flags = cur.item()->flags;
    w.item()->expiry = deadline ? *deadline : cur.item()->expiry;
    InsertCondition c;
    c.kind = InsertCondition::Kind::kIfToken;
    c.token = cur.casToken();
    if (keepSeq) c.keepSeq = c.token;
    cur.reset();
    const InsertOutcome out = publish(std::move(w), c, false);
    if (out.stored) return CasResult::kStored;
    if (!out.existed) return CasResult::kNotFound;
    if (token != 0) return CasResult::kExists;
  }
  return CasResult::kExists;
}

void Cache::flush(Ttl delay) {
  counters_->flushes.add();
  // Flash entries carry no cache sequence number: they go now, even for a
  // delayed flush (a cache may always forget).
  if (flash_) flash_->store().removeAll();
  deadlinesSeen_.store(true, std::memory_order_relaxed);
  if (delay <= Ttl::zero()) {
    // memcached: a flush replaces the one pending, so a delayed flush given
    // earlier cannot fire after this one.
    pendingFlushAt_.store(0, std::memory_order_release);
    const uint64_t next = nextSeq_.load(std::memory_order_relaxed);
    uint64_t cur = flushSeq_.load(std::memory_order_relaxed);
    while (cur < next && !flushSeq_.compare_exchange_weak(cur, next, std::memory_order_acq_rel)) {
    }
    // The flush mark is not durable: unlink (and so invalidate) every
    // flushed item of a persistent tier now, or a restart would bring it back.
    if (persistence_->firstPersistentTier() >= 0) {
      size_t reaped = 0;
      reapSome(0, index_->bucketCount(), reaped);
    }
    return;
  }
  const auto now = hooks_.clock ? hooks_.clock() : std::chrono::system_clock::now();
  const uint32_t at = std::max<uint32_t>(1, expirySeconds(now + delay));
  pendingFlushAt_.store(at, std::memory_order_release);
}

void Cache::dropExpired(Item* item, CompressedRef ref) {
  // The caller pins the item; if the unlink is ours, so is the report.
  if (index_->unlinkExact(ref, hashKey(item->key()))) notifyRemoved(*item, ref, RemoveCause::kExpired);
}

ReadHandle Cache::peek(std::string_view key) {
  Item* item = nullptr;
  const CompressedRef ref = index_->acquire(key, hashKey(key), item);
  if (!ref) return {};
  ReadHandle h(this, item, ref);
  if (isExpired(*item)) return {};  // left for a find or the reaper: peek changes nothing
  return h;
}

ReadHandle Cache::peekOrLoad(std::string_view key) {
  ReadHandle h = peek(key);
  if (h || !flash_) return h;
  loadFromFlashIfAbsent(key, hashKey(key));
  return peek(key);
}

bool Cache::couldExist(std::string_view key) {
  if (peek(key)) return true;
  return flash_ && flash_->store().mayContain(key);  // the index only: no read
}

std::vector<ReadHandle> Cache::findMany(std::span<const std::string_view> keys) {
  std::vector<ReadHandle> out(keys.size());
  constexpr size_t kBatch = 32;  // hashes kept on the stack per round
  uint64_t hashes[kBatch];
  for (size_t base = 0; base < keys.size(); base += kBatch) {
    const size_t n = std::min(kBatch, keys.size() - base);
    for (size_t i = 0; i < n; ++i) {
      hashes[i] = hashKey(keys[base + i]);
      index_->prefetchBucket(hashes[i]);
    }
    for (size_t i = 0; i < n; ++i) index_->prefetchChainHead(hashes[i]);
    if (!flash_) {
      for (size_t i = 0; i < n; ++i) out[base + i] = findHashed(keys[base + i], hashes[i]);
      continue;
    }
    // Memory first; the keys flash may hold are then read in one batch.
    std::string_view missKeys[kBatch];
    uint64_t missHashes[kBatch];
    size_t missAt[kBatch];
    size_t misses = 0;
    for (size_t i = 0; i < n; ++i) {
      bool onFlash = false;
      out[base + i] = findHashed(keys[base + i], hashes[i], &onFlash);
      if (onFlash) {
        missKeys[misses] = keys[base + i];
        missHashes[misses] = hashes[i];
        missAt[misses++] = base + i;
      }
    }
    if (misses == 0) continue;
    ReadHandle found[kBatch];
    promoteManyFromFlash({missKeys, misses}, {missHashes, misses}, {found, misses});
    for (size_t k = 0; k < misses; ++k) out[missAt[k]] = std::move(found[k]);
  }
  return out;
}

void Cache::forEachItem(const std::function<void(const ReadHandle&)>& fn) {
  for (uint64_t cursor = 0; cursor != kWalkDone;) cursor = forEachItemFrom(cursor, index_->bucketCount(), fn);
}

uint64_t Cache::forEachItemFrom(uint64_t cursor, uint64_t buckets, const std::function<void(const ReadHandle&)>& fn) {
  constexpr uint64_t kBucketsPerStep = 256;  // pins held at once stay few
  const uint64_t end = index_->bucketCount();
  if (cursor >= end) return kWalkDone;
  buckets = std::max<uint64_t>(buckets, 1);  // every call moves on
  const uint64_t stop = end - cursor <= buckets ? end : cursor + buckets;
  std::vector<std::pair<CompressedRef, Item*>> pinned;
  for (uint64_t b = cursor; b < stop; b += kBucketsPerStep) {
    pinned.clear();
    index_->pinLive(b, std::min(b + kBucketsPerStep, stop), liveCheck(), pinned);
    // Every pin is wrapped at once, so an exception from fn releases them all.
    std::vector<ReadHandle> handles;
    handles.reserve(pinned.size());
    for (auto& [ref, item] : pinned) handles.push_back(ReadHandle(this, item, ref));
    for (const ReadHandle& h : handles) fn(h);
  }
  return stop == end ? kWalkDone : stop;
}

size_t Cache::reapSome(uint64_t begin, uint64_t end, size_t& reaped) {
  reaped = 0;
  // No item ever had a deadline and nothing was flushed: nothing can be
  // dead, and a walk of the index would only take a core from the workload.
  if (!deadlinesSeen_.load(std::memory_order_relaxed)) return 0;
  std::vector<std::pair<CompressedRef, Item*>> dead;
  const size_t scanned = index_->unlinkDead(begin, end, liveCheck(), dead);
  for (auto& [ref, item] : dead) {
    notifyRemoved(*item, ref, RemoveCause::kExpired);
    release(item, ref);
  }
  reaped = dead.size();
  return scanned;
}

size_t Cache::reapExpired() {
  const uint64_t before = reaper_->counters().reaped.load(std::memory_order_relaxed);
  reaper_->sweep();
  return reaper_->counters().reaped.load(std::memory_order_relaxed) - before;
}

// ---- handles ----

uint64_t ReadHandle::casToken() const { return item_->seq(); }
uint32_t ReadHandle::flags() const { return item_->flags; }
bool ReadHandle::fetched() const { return item_->fetched(); }
bool ReadHandle::markFetched() const { return item_->markFetched(); }
int64_t ReadHandle::idleMs() const { return cache_->table_->owner(ref_)->policy().idleMs(item_->hook); }
std::optional<std::chrono::system_clock::time_point> ReadHandle::expiresAt() const {
  if (item_->expiry == 0) return std::nullopt;
  return expiryTimePoint(item_->expiry);
}

void WriteHandle::setFlags(uint32_t flags) { item_->flags = flags; }
void WriteHandle::setExpiresAt(std::optional<std::chrono::system_clock::time_point> deadline) {
  item_->expiry = deadline ? expiryDeadlineAt(*deadline) : 0;
}

}  // namespace tiercache
