#include "dax_kmem_tier.h"
#include "../config/sizes.h"

#include <memkind.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "../numa/topology.h"

namespace tiercache {

bool DaxKmemTier::memkindDaxKmemAvailable() { return memkind_check_available(MEMKIND_DAX_KMEM) == 0; }

DaxKmemTier::DaxKmemTier(std::string name, uint64_t size, std::vector<unsigned> nodes, const Topology* topology)
    : name_(std::move(name)), size_(size), nodes_(std::move(nodes)) {
  if (size_ == 0) throw TierError(name_, "size is 0 (smaller than one slab?)");
  const Topology* topo = topology;
  if (!topo) {
    try {
      topo = &Topology::system();
    } catch (const TopologyError& e) {
      throw TierError(name_, std::string("dax-kmem needs this machine's topology: ") + e.what());
    }
  }
  if (nodes_.empty()) {
    nodes_ = topo->nodesOfKind(MemoryKind::kNvm);
    if (nodes_.empty()) {
      if (topo->isThisSystem() && memkindDaxKmemAvailable()) {
        throw TierError(name_, "memkind reports KMEM DAX memory but hwloc reports no NVM NUMA node; "
                               "name the node(s) in 'nodes'");
      }
      throw TierError(name_, "no KMEM DAX NUMA node on this machine (" + topo->source() +
                                 ": hwloc reports no NVM node" +
                                 (topo->isThisSystem() ? ", memkind_check_available(MEMKIND_DAX_KMEM) fails" : "") +
                                 "); use a pmem-file tier to emulate PMEM");
    }
  }
  for (unsigned n : nodes_) {
    const NumaNode* node = topo->node(n);
    if (!node) throw TierError(name_, "NUMA node " + std::to_string(n) + " does not exist on " + topo->source());
    if (node->kind != MemoryKind::kNvm && node->dax_device.empty()) {
      const std::vector<unsigned> nvm = topo->nodesOfKind(MemoryKind::kNvm);
      throw TierError(name_, "NUMA node " + std::to_string(n) + " is " + memoryKindName(node->kind) +
                                 " memory, not a KMEM DAX (NVM) node; " +
                                 (nvm.empty() ? std::string("no KMEM DAX NUMA node on this machine")
                                              : "the NVM node(s) are " + nodeListString(nvm)));
    }
  }
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    throw TierError(name_, "mmap of " + std::to_string(size_) + " bytes failed: " + std::strerror(errno));
  }
  try {
    topo->bindArea(p, size_, nodes_, BindPolicy::kStrict);
  } catch (const BindError& e) {
    munmap(p, size_);
    throw TierError(name_, e.what());
  }
  base_ = static_cast<std::byte*>(p);
}

DaxKmemTier::~DaxKmemTier() {
  if (base_) munmap(base_, size_);
}

std::string DaxKmemTier::describe() const {
  return "dax-kmem, " + formatSizeApprox(size_) + ", bound to node " + nodeListString(nodes_) + " (strict)";
}

}  // namespace tiercache
