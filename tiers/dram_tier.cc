#include "dram_tier.h"
#include "../config/sizes.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "../numa/topology.h"
#include "../common/huge_mapping.h"
#include "../common/log.h"

namespace tiercache {

DramTier::DramTier(std::string name, uint64_t size, std::vector<unsigned> nodes, BindPolicy policy,
                   const Topology* topology)
    : name_(std::move(name)), size_(size), nodes_(std::move(nodes)), policy_(policy) {
  if (size_ == 0) throw TierError(name_, "size is 0 (smaller than one slab?)");
  void* p = mapHugeAnonymous(size_);
  if (p == nullptr) {
    throw TierError(name_, "mmap of " + std::to_string(size_) + " bytes failed: " + std::strerror(errno));
  }
  base_ = static_cast<std::byte*>(p);
  if (nodes_.empty() || policy_ == BindPolicy::kNone) return;
  std::string failure;
  try {
    const Topology& topo = topology ? *topology : Topology::system();
    bindWarning_ = topo.bindArea(base_, size_, nodes_, policy_);
  } catch (const BindError& e) {
    failure = e.what();
  } catch (const TopologyError& e) {  // this machine's topology could not be read
    failure = std::string("cannot bind to NUMA node(s) ") + nodeListString(nodes_) + ": " + e.what();
  }
  if (!failure.empty()) {
    if (policy_ == BindPolicy::kStrict) {
      munmap(base_, size_);
      base_ = nullptr;
      throw TierError(name_, failure + " (bind_policy strict)");
    }
    bindWarning_ = failure + " (advisory binding: continuing unbound)";
    logWarning("tier '" + name_ + "': " + bindWarning_);
  }
  bound_ = bindWarning_.empty();
}

DramTier::~DramTier() {
  if (base_) munmap(base_, size_);
}

std::string DramTier::describe() const {
  std::string out = "dram, " + formatSizeApprox(size_) + ", ";
  if (nodes_.empty()) return out + "anonymous mapping, not bound";
  if (bound_) return out + "bound to node " + nodeListString(nodes_) + " (" + bindPolicyName(policy_) + ")";
  if (policy_ == BindPolicy::kNone) return out + "node " + nodeListString(nodes_) + " requested, bind_policy none";
  return out + "NOT bound to node " + nodeListString(nodes_) + " (advisory binding failed)";
}

bool DramTier::discard(uint64_t offset, uint64_t len) {
  if (offset > size_ || len > size_ - offset) return false;
  return madvise(base_ + offset, len, MADV_DONTNEED) == 0;  // private anonymous: reads as zero afterwards
}

}  // namespace tiercache
