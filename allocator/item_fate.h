// ItemFate: what the movers need of the item lifecycle. Cache implements
// it; Movers holds a reference (allocator/movers.h). Not part of the API.
#pragma once

namespace tiercache {

class Item;
class CompressedRef;
struct LiveCheck;

// What the movers need of the item lifecycle (Cache implements it): which
// items are dead (expired or flushed: dropped, never demoted or promoted),
// and the remove callback for the items the movers unlink for good.
class ItemFate {
 public:
  // False while no item ever had a deadline and no flush happened: then no
  // item can be dead and the movers skip the search for dead ones.
  virtual bool deadlinesSeen() const = 0;
  virtual LiveCheck liveCheck() const = 0;
  // An item the movers unlinked for good (still claimed, so readable).
  virtual void notifyDropped(const Item& item, CompressedRef ref, bool dead) = 0;

 protected:
  ~ItemFate() = default;
};

}  // namespace tiercache
