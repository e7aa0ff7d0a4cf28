// DramTier: an anonymous private mapping of exactly the tier's size,
// optionally bound to NUMA node(s).
//
// MAP_NORESERVE: pages are committed on first touch, so a large tier costs
// RSS only as the cache fills; it never grows past size().
//
// Binding happens right after mmap, before any page is touched, so every
// page is placed by the binding (no migration needed). The policy decides
// what a failed binding does: strict refuses the tier (TierError), advisory
// keeps an unbound tier and records the warning (bindWarning(), describe()),
// none never binds.
#pragma once

#include <vector>

#include "../numa/bind_policy.h"
#include "memory_tier.h"

namespace tiercache {

class Topology;

class DramTier final : public MemoryTier {
 public:
  // size must be > 0; throws TierError when the mapping fails or a strict
  // binding cannot be made. `topology` is what binds (default:
  // Topology::system()); a topology loaded from XML cannot bind.
  DramTier(std::string name, uint64_t size, std::vector<unsigned> nodes = {},
           BindPolicy policy = BindPolicy::kAdvisory, const Topology* topology = nullptr);
  ~DramTier() override;

  std::byte* base() const override { return base_; }
  uint64_t size() const override { return size_; }
  uint64_t mappedBytes() const override { return size_; }
  TierKind kind() const override { return TierKind::kDram; }
  const std::string& name() const override { return name_; }
  std::string describe() const override;
  bool discard(uint64_t offset, uint64_t len) override;

  const std::vector<unsigned>& nodes() const { return nodes_; }
  BindPolicy bindPolicy() const { return policy_; }
  // True when the mapping is bound to nodes(); false for no nodes, policy
  // none, or a failed advisory binding.
  bool bound() const { return bound_; }
  // The warning of a failed advisory binding; "" otherwise.
  const std::string& bindWarning() const { return bindWarning_; }

 private:
  std::string name_;
  uint64_t size_;
  std::vector<unsigned> nodes_;
  BindPolicy policy_;
  bool bound_ = false;
  std::string bindWarning_;
  std::byte* base_ = nullptr;
};

}  // namespace tiercache
