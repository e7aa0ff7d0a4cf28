// Topology: the machine's memory as tiercache sees it (NUMA nodes, their
// kind, capacity, locality, DAX devices and memory attributes), read by hwloc.
//
// Two sources, one class: detect() reads this machine; fromXml() loads a
// saved hwloc topology so tests can describe a two-socket DRAM + NVM host
// precisely. A loaded topology describes memory but cannot bind it: hwloc
// makes bindings on a non-native topology silent no-ops, so bindArea()
// treats "not this system" as a failed binding (strict: error; advisory:
// warning) instead of pretending. Bind through system() / detect().
//
// No hwloc type appears here: the hwloc handle lives in Impl.
// Thread-safety: all const methods may be called concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bind_policy.h"

namespace tiercache {

// Loading or reading a topology failed (unreadable XML, hwloc error).
class TopologyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A strict binding could not be made.
class BindError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// hwloc's NUMA-node subtype, folded to what the tier planner cares about:
// "DRAM" or none -> kDram, "NVM" or "CXL-NVM" -> kNvm, "HBM"/"MCDRAM" ->
// kHbm, "CXL-DRAM" -> kCxlDram, any other subtype (e.g. "SPM", "GPUMemory")
// -> kOther, never auto-planned. hwloc sets "CXL-DRAM" itself from 2.10 on;
// 2.9 leaves a CXL memory expander's node without a subtype (so DRAM) unless
// it reports a CXLDevice info attribute, which also makes it kCxlDram.
enum class MemoryKind : uint8_t { kDram, kNvm, kHbm, kCxlDram, kOther };
const char* memoryKindName(MemoryKind kind);  // "DRAM", "NVM", "HBM", "CXL-DRAM", "other"

struct NumaNode {
  unsigned os_index = 0;
  MemoryKind kind = MemoryKind::kDram;
  std::string subtype;             // as hwloc reports it; "" when none
  uint64_t capacity = 0;           // bytes of memory local to this node
  std::string cpus;                // local cpus as a list ("0-3,8"); "" when none
  int package = -1;                // os index of the enclosing package; -1: none
  std::string dax_device;          // hwloc info DAXDevice ("dax0.0"); "" if none
  std::string dax_type;            // hwloc info DAXType ("NVM", "SPM")
  std::string dax_parent;          // hwloc info DAXParent (region/bus of the device)
  // From hwloc memory attributes, seen from the node's local cpus (or from
  // any initiator when it has none); nullopt when the platform reports none.
  std::optional<uint64_t> bandwidth_mibs;  // MiB/s
  std::optional<uint64_t> latency_ns;      // nanoseconds
};

struct Package {
  unsigned os_index = 0;
  std::string cpus;                // list string
  std::vector<unsigned> nodes;     // os indexes of the NUMA nodes inside it
};

class Topology {
 public:
  // This machine. Throws TopologyError if hwloc cannot load it.
  static Topology detect();
  // A saved hwloc 2.x XML topology (`lstopo --of xml`). No XML comments:
  // hwloc 2.9's loader rejects them. Throws TopologyError naming the path.
  static Topology fromXml(const std::string& path);
  // This machine, detected once per process (what tiers bind through).
  static const Topology& system();

  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;
  ~Topology();

  // True for detect()/system(); false for fromXml().
  bool isThisSystem() const;
  // "this machine" or "xml:<path>", for messages and reports.
  const std::string& source() const;

  const std::vector<NumaNode>& nodes() const;  // ascending os_index
  const NumaNode* node(unsigned osIndex) const;  // nullptr when absent
  const std::vector<Package>& packages() const;
  std::vector<unsigned> nodesOfKind(MemoryKind kind) const;

  // Every cpu of the machine, as a list string.
  std::string allCpus() const;
  // The cpus this process is bound to on a detected topology; allCpus() on
  // a loaded one (there is no process on a saved machine).
  std::string processCpus() const;
  // Nodes whose local cpus intersect `cpus` (a list string such as "0-3").
  // Throws TopologyError for a malformed list.
  std::vector<unsigned> nodesLocalTo(const std::string& cpus) const;

  // Binds the untouched range [addr, addr+len) to `nodes` (os indexes) so
  // that its pages come from them when first touched.
  //   kNone: does nothing, returns "".
  //   kStrict: binds or throws BindError (unknown node, topology not this
  //            system, hwloc/kernel refusal), naming the nodes and reason.
  //   kAdvisory: binds or returns the warning it logged via logWarning().
  // An empty `nodes` or len 0 asks for nothing and returns "".
  std::string bindArea(void* addr, size_t len, const std::vector<unsigned>& nodes,
                       BindPolicy policy) const;

 private:
  struct Impl;
  explicit Topology(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "0,2,3" for messages.
std::string nodeListString(const std::vector<unsigned>& nodes);

}  // namespace tiercache
