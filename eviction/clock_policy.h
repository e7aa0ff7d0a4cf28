// ClockPolicy: FIFO with a second chance (CLOCK), the scalable policy.
//
// A hit only sets the kAccessed bit in the item's hook (one relaxed atomic
// OR, skipped when already set, so hot items do not bounce a cache line
// between cores): the hit path takes no lock. Eviction walks from the tail;
// an accessed item has its bit cleared and is moved to the head, an
// unaccessed one is offered to the visitor.
#pragma once

#include <mutex>

#include "../common/adaptive_mutex.h"
#include "eviction_policy.h"
#include "intrusive_list.h"

namespace tiercache {

class ClockPolicy final : public EvictionPolicy {
 public:
  explicit ClockPolicy(const HookResolver& resolver) : EvictionPolicy(resolver), list_(resolver) {}

  void add(RefWord ref) override;
  void addBatch(const RefWord* refs, size_t n) override;
  bool remove(RefWord ref) override;
  void removeBatch(const RefWord* refs, size_t n) override;
  bool addAndRemove(RefWord newRef, RefWord oldRef) override;
  // The new item keeps the old one's place, accessed (as a hit).
  bool replace(RefWord newRef, RefWord oldRef) override;
  size_t evict(size_t want, size_t maxScan, EvictionVisitor& visitor) override;
  size_t size() const override;
  const char* name() const override { return "clock"; }
  bool forEach(void (*fn)(RefWord, void*), void* ctx) const override;

 private:
  void onAccess(RefWord ref, EvictionHook& hook) override;
  bool removeLocked(RefWord ref);  // lock_ held
  mutable AdaptiveMutex lock_;
  IntrusiveList list_;
};

}  // namespace tiercache
