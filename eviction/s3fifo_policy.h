// S3FifoPolicy: S3-FIFO (Yang et al., SOSP 2023) per (tier, pool, class).
//
// Three FIFO queues: new items enter `small` (~10% of the members), items
// hit twice while in small move to `main`, the rest leave the cache and
// their key hash goes to a ghost queue; an item whose key is in the ghost
// when it is added enters main directly. Main is a CLOCK with a 2-bit
// frequency: a hit item at main's tail is reinserted with its frequency
// decreased by one.
//
// Hit path: one relaxed compare-exchange on the hook's meta (frequency + 1,
// skipped once it is 3, so hot items do not bounce a cache line); no lock.
//
// Meta bits: 31 kInList, 30 kMain, 28..29 frequency (0..3), 0..27 insertion
// time in ms modulo 2^28 (eviction age only).
//
// The small/main split follows the members, not a capacity (the policy does
// not know how many slots its class will get): eviction takes from small
// while small holds at least smallPercent of the members.
#pragma once

#include <mutex>
#include <vector>

#include "../common/adaptive_mutex.h"
#include "eviction_policy.h"
#include "intrusive_list.h"

namespace tiercache {

// Key hashes of recently evicted items, FIFO over the last `capacity`
// insertions. Open addressing over 8-byte entries {fingerprint, tick}; an
// entry older than `capacity` insertions is dead (expired lazily), and an
// insert into a full probe window overwrites the oldest entry, so the ghost
// is approximate at the edge: a few entries leave early. 8-16 bytes per
// entry. Not thread-safe: the policy's list lock guards it.
class GhostQueue {
 public:
  void insert(uint64_t hash);
  // True (and forgets it) if hash is in the last `capacity` insertions.
  bool take(uint64_t hash);
  // Grows to hold `capacity` entries (never shrinks); keeps live entries.
  void reserve(size_t capacity);
  size_t capacity() const { return capacity_; }
  size_t bytes() const { return table_.size() * sizeof(Entry); }
  bool empty() const { return live_ == 0; }

 private:
  struct Entry {
    uint32_t fp = 0;  // 0 = empty
    uint32_t tick = 0;
  };
  static constexpr size_t kProbe = 8;
  // The last `capacity` insertions have ages 1..capacity.
  bool alive(const Entry& e) const { return e.fp != 0 && tick_ - e.tick <= capacity_; }
  static uint32_t fingerprint(uint64_t hash) { return static_cast<uint32_t>(hash >> 32) | 1u; }
  // The home bucket comes from the fingerprint alone, so a rebuild can
  // place an entry without the hash it came from.
  static size_t bucketOf(uint32_t fp) { return static_cast<size_t>((fp * 0x9E3779B97F4A7C15ull) >> 32); }

  std::vector<Entry> table_;
  size_t capacity_ = 0;
  uint32_t tick_ = 0;
  size_t live_ = 0;  // upper bound: inserts minus takes, capped at capacity
};

class S3FifoPolicy final : public EvictionPolicy {
 public:
  static constexpr uint32_t kMain = 1u << 30;
  static constexpr uint32_t kFreqShift = 28;
  static constexpr uint32_t kFreqMask = 3u << kFreqShift;
  static constexpr uint32_t kTimeMask = (1u << 28) - 1;
  // Hits while in small that earn a place in main (libCacheSim's default).
  static constexpr uint32_t kMoveToMainHits = 2;

  S3FifoPolicy(const HookResolver& resolver, uint32_t smallPercent);

  void add(RefWord ref) override;
  void addBatch(const RefWord* refs, size_t n) override;
  bool remove(RefWord ref) override;
  void removeBatch(const RefWord* refs, size_t n) override;
  bool addAndRemove(RefWord newRef, RefWord oldRef) override;
  // The new item keeps the old one's queue and place, its frequency one up
  // (as a hit); the ghost is not consulted (the key never left).
  bool replace(RefWord newRef, RefWord oldRef) override;
  size_t evict(size_t want, size_t maxScan, EvictionVisitor& visitor) override;
  size_t size() const override;
  const char* name() const override { return "s3fifo"; }
  bool forEach(void (*fn)(RefWord, void*), void* ctx) const override;
  size_t metadataBytes() const override;

  size_t smallSize() const;
  size_t mainSize() const;

 private:
  void onAccess(RefWord ref, EvictionHook& hook) override;
  bool removeLocked(RefWord ref);              // lock_ held
  void addLocked(RefWord ref, uint64_t hash);  // lock_ held; hash: keyHash(ref)
  const uint32_t smallPercent_;
  mutable AdaptiveMutex lock_;
  IntrusiveList small_;
  IntrusiveList main_;
  GhostQueue ghost_;
};

}  // namespace tiercache
