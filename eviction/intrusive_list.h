// IntrusiveList: a doubly linked list through EvictionHook prev/next refs.
// Not thread-safe: the owning policy holds its lock around every call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../common/dcheck.h"
#include "eviction_policy.h"

namespace tiercache {

class IntrusiveList {
 public:
  static constexpr uint32_t kNull = EvictionPolicy::kNullRef;

  explicit IntrusiveList(const HookResolver& r) : r_(r) {}

  uint32_t head() const { return head_; }
  uint32_t tail() const { return tail_; }
  size_t size() const { return size_; }

  void pushHead(uint32_t ref) {
    TC_DCHECK(ref != kNull && ref != head_);  // a member is never pushed again
    EvictionHook& h = r_.hook(ref);
    h.prev = kNull;
    h.next = head_;
    if (head_ != kNull) r_.hook(head_).prev = ref;
    head_ = ref;
    if (tail_ == kNull) tail_ = ref;
    ++size_;
  }

  void pushTail(uint32_t ref) {
    TC_DCHECK(ref != kNull && ref != tail_);
    EvictionHook& h = r_.hook(ref);
    h.next = kNull;
    h.prev = tail_;
    if (tail_ != kNull) r_.hook(tail_).next = ref;
    tail_ = ref;
    if (head_ == kNull) head_ = ref;
    ++size_;
  }

  void unlink(uint32_t ref) {
    EvictionHook& h = r_.hook(ref);
    TC_DCHECK(size_ > 0);  // the count never wraps
    TC_DCHECK(isLinked(ref, h));
    if (h.prev != kNull) r_.hook(h.prev).next = h.next; else head_ = h.next;
    if (h.next != kNull) r_.hook(h.next).prev = h.prev; else tail_ = h.prev;
    h.prev = h.next = kNull;
    --size_;
  }

  // newRef (not a member of any list) takes member oldRef's place; oldRef
  // leaves the list. One splice: the neighbours' links, no count change.
  void replace(uint32_t oldRef, uint32_t newRef) {
    EvictionHook& o = r_.hook(oldRef);
    EvictionHook& n = r_.hook(newRef);
    TC_DCHECK(newRef != oldRef && newRef != head_ && newRef != tail_);
    TC_DCHECK(isLinked(oldRef, o));
    n.prev = o.prev;
    n.next = o.next;
    if (o.prev != kNull) r_.hook(o.prev).next = newRef; else head_ = newRef;
    if (o.next != kNull) r_.hook(o.next).prev = newRef; else tail_ = newRef;
    o.prev = o.next = kNull;
  }

  uint32_t prevOf(uint32_t ref) const { return r_.hook(ref).prev; }

  // Walks head to tail; false if a link is inconsistent or the count is off.
  bool forEach(void (*fn)(uint32_t, void*), void* ctx) const {
    size_t n = 0;
    uint32_t prev = kNull;
    for (uint32_t cur = head_; cur != kNull; cur = r_.hook(cur).next) {
      if (r_.hook(cur).prev != prev || ++n > size_) return false;
      if (fn) fn(cur, ctx);
      prev = cur;
    }
    return n == size_ && prev == tail_;
  }

 private:
  // What a member's links say of it: an end link of kNull means it is that
  // end of this list (a ref that is in no list, or in another, fails).
  bool isLinked(uint32_t ref, const EvictionHook& h) const {
    return (h.prev != kNull || head_ == ref) && (h.next != kNull || tail_ == ref);
  }

  const HookResolver& r_;
  uint32_t head_ = kNull;
  uint32_t tail_ = kNull;
  size_t size_ = 0;
};

}  // namespace tiercache
