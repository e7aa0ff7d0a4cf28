// DaxKmemTier: PMEM that the kernel exposes as a NUMA node (KMEM DAX, a
// cpuless node hwloc reports with subtype NVM), used as an anonymous
// mapping of exactly the tier's size bound *strictly* to that node.
//
// Why not memkind_malloc(MEMKIND_DAX_KMEM, size): jemalloc rounds a large
// request up to its size class (36 MiB -> 40 MiB), so the tier would take
// more than its configured size from the OS. memkind still has a say: its
// memkind_check_available(MEMKIND_DAX_KMEM) is asked on this machine and
// named in the error when no KMEM DAX node exists.
//
// Strict binding always: a dax-kmem tier silently placed in DRAM would
// look healthy and be wrong, and memtier-style fallbacks hide exactly that.
// Refused up front (TierError naming the tier): no NVM node (message says
// "no KMEM DAX NUMA node on this machine"), a named node that does not
// exist or is not NVM, a binding the kernel refuses.
#pragma once

#include <vector>

#include "memory_tier.h"

namespace tiercache {

class Topology;

class DaxKmemTier final : public MemoryTier {
 public:
  // nodes: the KMEM DAX node(s) to use; empty: every NVM node of the
  // topology. `topology` default: Topology::system() (a topology loaded
  // from XML cannot bind, so a tier on it is always refused).
  DaxKmemTier(std::string name, uint64_t size, std::vector<unsigned> nodes = {},
              const Topology* topology = nullptr);
  ~DaxKmemTier() override;

  std::byte* base() const override { return base_; }
  uint64_t size() const override { return size_; }
  uint64_t mappedBytes() const override { return size_; }
  TierKind kind() const override { return TierKind::kDaxKmem; }
  const std::string& name() const override { return name_; }
  std::string describe() const override;

  const std::vector<unsigned>& nodes() const { return nodes_; }

  // memkind_check_available(MEMKIND_DAX_KMEM) == 0 on this machine.
  static bool memkindDaxKmemAvailable();

 private:
  std::string name_;
  uint64_t size_;
  std::vector<unsigned> nodes_;
  std::byte* base_ = nullptr;
};

}  // namespace tiercache
