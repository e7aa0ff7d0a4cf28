#include "topology.h"

#include <hwloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "../common/log.h"

namespace tiercache {

// ---- names ---------------------------------------------------------------

const char* bindPolicyName(BindPolicy policy) { return nameOf(kBindPolicyNames, policy).data(); }

std::optional<BindPolicy> bindPolicyFromName(std::string_view name) { return valueOf(kBindPolicyNames, name); }

const char* memoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kDram: return "DRAM";
    case MemoryKind::kNvm: return "NVM";
    case MemoryKind::kHbm: return "HBM";
    case MemoryKind::kCxlDram: return "CXL-DRAM";
    case MemoryKind::kOther: return "other";
  }
  return "unknown";
}

std::string nodeListString(const std::vector<unsigned>& nodes) {
  std::string out;
  for (unsigned n : nodes) {
    if (!out.empty()) out += ',';
    out += std::to_string(n);
  }
  return out;
}

// ---- hwloc helpers -------------------------------------------------------

namespace {

// Owns one hwloc bitmap.
struct Bitmap {
  hwloc_bitmap_t b = hwloc_bitmap_alloc();
  Bitmap() {
    if (!b) throw std::bad_alloc();
  }
  ~Bitmap() { hwloc_bitmap_free(b); }
  Bitmap(const Bitmap&) = delete;
  Bitmap& operator=(const Bitmap&) = delete;
};

std::string listString(hwloc_const_bitmap_t set) {
  if (!set || hwloc_bitmap_iszero(set)) return "";
  char* s = nullptr;
  if (hwloc_bitmap_list_asprintf(&s, set) < 0 || !s) return "";
  std::string out(s);
  std::free(s);
  return out;
}

// cxlDevice: the node has hwloc's CXLDevice info attribute (a CXL window).
MemoryKind kindFromSubtype(const char* subtype, bool cxlDevice) {
  const std::string s(subtype ? subtype : "");
  if (s.empty() || s == "DRAM") return cxlDevice ? MemoryKind::kCxlDram : MemoryKind::kDram;
  if (s == "NVM" || s == "CXL-NVM") return MemoryKind::kNvm;
  if (s == "HBM" || s == "MCDRAM") return MemoryKind::kHbm;
  if (s == "CXL-DRAM") return MemoryKind::kCxlDram;
  return MemoryKind::kOther;
}

std::string info(hwloc_obj_t obj, const char* name) {
  const char* v = hwloc_obj_get_info_by_name(obj, name);
  return v ? std::string(v) : std::string();
}

// The attribute's value for `node`, seen from the node's own cpus: hwloc
// stores HMAT values per initiator cpuset, so try the exact local cpuset
// first, then any initiator whose cpus overlap the node's, then (a node
// without cpus, e.g. KMEM DAX) the best initiator of all.
std::optional<uint64_t> memattr(hwloc_topology_t topo, hwloc_memattr_id_t id, hwloc_obj_t node) {
  unsigned long flags = 0;
  if (hwloc_memattr_get_flags(topo, id, &flags) != 0) return std::nullopt;
  hwloc_uint64_t value = 0;
  if (!(flags & HWLOC_MEMATTR_FLAG_NEED_INITIATOR)) {
    if (hwloc_memattr_get_value(topo, id, node, nullptr, 0, &value) == 0) return value;
    return std::nullopt;
  }
  if (node->cpuset && !hwloc_bitmap_iszero(node->cpuset)) {
    hwloc_location loc{};
    loc.type = HWLOC_LOCATION_TYPE_CPUSET;
    loc.location.cpuset = node->cpuset;
    if (hwloc_memattr_get_value(topo, id, node, &loc, 0, &value) == 0) return value;
  }
  unsigned nr = 0;
  if (hwloc_memattr_get_initiators(topo, id, node, 0, &nr, nullptr, nullptr) != 0 || nr == 0) {
    return std::nullopt;
  }
  std::vector<hwloc_location> inits(nr);
  std::vector<hwloc_uint64_t> values(nr);
  if (hwloc_memattr_get_initiators(topo, id, node, 0, &nr, inits.data(), values.data()) != 0) {
    return std::nullopt;
  }
  nr = std::min<unsigned>(nr, static_cast<unsigned>(inits.size()));
  const bool higherFirst = flags & HWLOC_MEMATTR_FLAG_HIGHER_FIRST;
  std::optional<uint64_t> local, any;
  auto better = [&](std::optional<uint64_t> cur, uint64_t v) {
    return !cur || (higherFirst ? v > *cur : v < *cur);
  };
  for (unsigned i = 0; i < nr; i++) {
    hwloc_const_cpuset_t cs = nullptr;
    if (inits[i].type == HWLOC_LOCATION_TYPE_CPUSET) cs = inits[i].location.cpuset;
    if (inits[i].type == HWLOC_LOCATION_TYPE_OBJECT && inits[i].location.object) {
      cs = inits[i].location.object->cpuset;
    }
    if (cs && node->cpuset && hwloc_bitmap_intersects(cs, node->cpuset)) {
      if (better(local, values[i])) local = values[i];
    }
    if (better(any, values[i])) any = values[i];
  }
  return local ? local : any;
}

}  // namespace

// ---- Topology ------------------------------------------------------------

struct Topology::Impl {
  hwloc_topology_t topo = nullptr;
  bool thisSystem = false;
  std::string source;
  std::vector<NumaNode> nodes;
  std::vector<Package> packages;

  ~Impl() {
    if (topo) hwloc_topology_destroy(topo);
  }

  void read() {
    const int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < n; i++) {
      hwloc_obj_t obj = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, i);
      NumaNode node;
      node.os_index = obj->os_index;
      node.subtype = obj->subtype ? obj->subtype : "";
      node.kind = kindFromSubtype(obj->subtype, hwloc_obj_get_info_by_name(obj, "CXLDevice") != nullptr);
      node.capacity = obj->attr ? obj->attr->numanode.local_memory : 0;
      node.cpus = listString(obj->cpuset);
      if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, obj)) {
        node.package = static_cast<int>(pkg->os_index);
      }
      node.dax_device = info(obj, "DAXDevice");
      node.dax_type = info(obj, "DAXType");
      node.dax_parent = info(obj, "DAXParent");
      node.bandwidth_mibs = memattr(topo, HWLOC_MEMATTR_ID_BANDWIDTH, obj);
      node.latency_ns = memattr(topo, HWLOC_MEMATTR_ID_LATENCY, obj);
      nodes.push_back(std::move(node));
    }
    std::sort(nodes.begin(), nodes.end(),
              [](const NumaNode& a, const NumaNode& b) { return a.os_index < b.os_index; });

    const int np = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    for (int i = 0; i < np; i++) {
      hwloc_obj_t obj = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, i);
      Package p;
      p.os_index = obj->os_index;
      p.cpus = listString(obj->cpuset);
      for (const NumaNode& node : nodes) {
        if (node.package == static_cast<int>(p.os_index)) p.nodes.push_back(node.os_index);
      }
      packages.push_back(std::move(p));
    }
  }
};

Topology::Topology(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;
Topology::~Topology() = default;

Topology Topology::detect() {
  auto impl = std::make_unique<Impl>();
  impl->source = "this machine";
  if (hwloc_topology_init(&impl->topo) != 0) {
    throw TopologyError(std::string("hwloc_topology_init failed: ") + std::strerror(errno));
  }
  if (hwloc_topology_load(impl->topo) != 0) {
    throw TopologyError(std::string("hwloc could not read this machine's topology: ") +
                        std::strerror(errno));
  }
  impl->thisSystem = hwloc_topology_is_thissystem(impl->topo) != 0;
  impl->read();
  return Topology(std::move(impl));
}

Topology Topology::fromXml(const std::string& path) {
  // hwloc's own failure says little ("Invalid argument"): check the obvious first.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw TopologyError("cannot load topology XML '" + path + "': " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    throw TopologyError("cannot load topology XML '" + path + "': not a regular file");
  }
  auto impl = std::make_unique<Impl>();
  impl->source = "xml:" + path;
  if (hwloc_topology_init(&impl->topo) != 0) {
    throw TopologyError(std::string("hwloc_topology_init failed: ") + std::strerror(errno));
  }
  if (hwloc_topology_set_xml(impl->topo, path.c_str()) != 0 || hwloc_topology_load(impl->topo) != 0) {
    throw TopologyError("cannot load topology XML '" + path + "': hwloc rejected it (" +
                        std::strerror(errno) +
                        "); it must be hwloc 2.x XML without comments, e.g. from `lstopo --of xml`");
  }
  impl->thisSystem = hwloc_topology_is_thissystem(impl->topo) != 0;
  impl->read();
  return Topology(std::move(impl));
}

const Topology& Topology::system() {
  static const Topology topo = detect();
  return topo;
}

bool Topology::isThisSystem() const { return impl_->thisSystem; }
const std::string& Topology::source() const { return impl_->source; }
const std::vector<NumaNode>& Topology::nodes() const { return impl_->nodes; }
const std::vector<Package>& Topology::packages() const { return impl_->packages; }

const NumaNode* Topology::node(unsigned osIndex) const {
  for (const NumaNode& n : impl_->nodes) {
    if (n.os_index == osIndex) return &n;
  }
  return nullptr;
}

std::vector<unsigned> Topology::nodesOfKind(MemoryKind kind) const {
  std::vector<unsigned> out;
  for (const NumaNode& n : impl_->nodes) {
    if (n.kind == kind) out.push_back(n.os_index);
  }
  return out;
}

std::string Topology::allCpus() const {
  return listString(hwloc_topology_get_topology_cpuset(impl_->topo));
}

std::string Topology::processCpus() const {
  if (impl_->thisSystem) {
    Bitmap set;
    if (hwloc_get_cpubind(impl_->topo, set.b, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(set.b)) {
      return listString(set.b);
    }
  }
  return listString(hwloc_topology_get_allowed_cpuset(impl_->topo));
}

std::vector<unsigned> Topology::nodesLocalTo(const std::string& cpus) const {
  Bitmap set;
  if (hwloc_bitmap_list_sscanf(set.b, cpus.c_str()) != 0) {
    throw TopologyError("malformed cpu list '" + cpus + "' (expected e.g. \"0-3,8\")");
  }
  std::vector<unsigned> out;
  for (const NumaNode& n : impl_->nodes) {
    hwloc_obj_t obj = hwloc_get_numanode_obj_by_os_index(impl_->topo, n.os_index);
    if (obj && obj->cpuset && hwloc_bitmap_intersects(obj->cpuset, set.b)) out.push_back(n.os_index);
  }
  return out;
}

std::string Topology::bindArea(void* addr, size_t len, const std::vector<unsigned>& nodes,
                               BindPolicy policy) const {
  if (policy == BindPolicy::kNone || nodes.empty() || len == 0) return "";
  std::string problem;
  Bitmap set;
  for (unsigned n : nodes) {
    if (!hwloc_get_numanode_obj_by_os_index(impl_->topo, n)) {
      std::vector<unsigned> have;
      for (const NumaNode& node : impl_->nodes) have.push_back(node.os_index);
      problem = "NUMA node " + std::to_string(n) + " does not exist (" + impl_->source + " has node(s) " +
                nodeListString(have) + ")";
      break;
    }
    hwloc_bitmap_set(set.b, n);
  }
  if (problem.empty() && !impl_->thisSystem) {
    problem = "the topology was loaded from " + impl_->source +
              ", not detected on this machine, and hwloc makes bindings on it no-ops";
  }
  if (problem.empty()) {
    const int flags = HWLOC_MEMBIND_BYNODESET | (policy == BindPolicy::kStrict ? HWLOC_MEMBIND_STRICT : 0);
    if (hwloc_set_area_membind(impl_->topo, addr, len, set.b, HWLOC_MEMBIND_BIND, flags) != 0) {
      problem = std::string("hwloc_set_area_membind failed: ") + std::strerror(errno);
    }
  }
  if (problem.empty()) return "";
  const std::string what = "cannot bind " + std::to_string(len) + " bytes to NUMA node(s) " +
                           nodeListString(nodes) + ": " + problem;
  if (policy == BindPolicy::kStrict) throw BindError(what);
  const std::string warning = what + " (advisory binding: continuing unbound)";
  logWarning(warning);
  return warning;
}

}  // namespace tiercache
