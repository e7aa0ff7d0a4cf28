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
  static constexpr RefWord kNull = EvictionPolicy::kNullRef;

  explicit IntrusiveList(const HookResolver& r) : r_(r) {}

  RefWord head() const { return head_; }
  RefWord tail() const { return tail_; }
  size_t size() const { return size_; }

  void pushHead(RefWord ref) {
    TC_DCHECK(ref != kNull && ref != head_);  // a member is never pushed again
    EvictionHook& h = r_.hook(ref);
    h.setPrev(kNull);
    h.setNext(head_);
    if (head_ != kNull) r_.hook(head_).setPrev(ref);
    head_ = ref;
    if (tail_ == kNull) tail_ = ref;
    ++size_;
  }

  void pushTail(RefWord ref) {
    TC_DCHECK(ref != kNull && ref != tail_);
    EvictionHook& h = r_.hook(ref);
    h.setNext(kNull);
    h.setPrev(tail_);
    if (tail_ != kNull) r_.hook(tail_).setNext(ref);
    tail_ = ref;
    if (head_ == kNull) head_ = ref;
    ++size_;
  }

  void unlink(RefWord ref) {
    EvictionHook& h = r_.hook(ref);
    TC_DCHECK(size_ > 0);  // the count never wraps
    TC_DCHECK(isLinked(ref, h));
    const RefWord prev = h.prev(), next = h.next();
    if (prev != kNull)
      r_.hook(prev).setNext(next);
    else
      head_ = next;
    if (next != kNull)
      r_.hook(next).setPrev(prev);
    else
      tail_ = prev;
    h.setPrev(kNull);
    h.setNext(kNull);
    --size_;
  }

  // newRef (not a member of any list) takes member oldRef's place; oldRef
  // leaves the list. One splice: the neighbours' links, no count change.
  void replace(RefWord oldRef, RefWord newRef) {
    EvictionHook& o = r_.hook(oldRef);
    EvictionHook& n = r_.hook(newRef);
    TC_DCHECK(newRef != oldRef && newRef != head_ && newRef != tail_);
    TC_DCHECK(isLinked(oldRef, o));
    const RefWord prev = o.prev(), next = o.next();
    n.setPrev(prev);
    n.setNext(next);
    if (prev != kNull)
      r_.hook(prev).setNext(newRef);
    else
      head_ = newRef;
    if (next != kNull)
      r_.hook(next).setPrev(newRef);
    else
      tail_ = newRef;
    o.setPrev(kNull);
    o.setNext(kNull);
  }

  RefWord prevOf(RefWord ref) const { return r_.hook(ref).prev(); }

  // Walks head to tail; false if a link is inconsistent or the count is off.
  bool forEach(void (*fn)(RefWord, void*), void* ctx) const {
    size_t n = 0;
    RefWord prev = kNull;
    for (RefWord cur = head_; cur != kNull; cur = r_.hook(cur).next()) {
      if (r_.hook(cur).prev() != prev || ++n > size_) return false;
      if (fn) fn(cur, ctx);
      prev = cur;
    }
    return n == size_ && prev == tail_;
  }

 private:
  // What a member's links say of it: an end link of kNull means it is that
  // end of this list (a ref that is in no list, or in another, fails).
  bool isLinked(RefWord ref, const EvictionHook& h) const {
    return (h.prev() != kNull || head_ == ref) && (h.next() != kNull || tail_ == ref);
  }

  const HookResolver& r_;
  RefWord head_ = kNull;
  RefWord tail_ = kNull;
  size_t size_ = 0;
};

}  // namespace tiercache
