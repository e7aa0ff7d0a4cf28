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

  void add(uint32_t ref) override;
  void addBatch(const uint32_t* refs, size_t n) override;
  bool remove(uint32_t ref) override;
  void removeBatch(const uint32_t* refs, size_t n) override;
  bool addAndRemove(uint32_t newRef, uint32_t oldRef) override;
  // The new item keeps the old one's place, accessed (as a hit).
  bool replace(uint32_t newRef, uint32_t oldRef) override;
  size_t evict(size_t want, size_t maxScan, EvictionVisitor& visitor) override;
  size_t size() const override;
  const char* name() const override { return "clock"; }
  bool forEach(void (*fn)(uint32_t, void*), void* ctx) const override;

 private:
  void onAccess(uint32_t ref, EvictionHook& hook) override;
  bool removeLocked(uint32_t ref);  // lock_ held
  mutable AdaptiveMutex lock_;
  IntrusiveList list_;
};

}  // namespace tiercache
