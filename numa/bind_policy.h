// BindPolicy: what to do when memory cannot be bound to the NUMA node(s) a
// tier asks for. Its own small header so that tiers/tier_config.h can carry
// the policy without pulling in the whole Topology.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "../common/name_table.h"

namespace tiercache {

enum class BindPolicy : uint8_t {
  kNone,      // never bind; the kernel's default policy (first touch) applies
  kAdvisory,  // try to bind; on failure record and log a warning, keep going
  kStrict,    // bind or refuse: a failed binding is an error
};

// The one list of the names, in enum order (the config's choices).
inline constexpr std::array<NameRow<BindPolicy>, 3> kBindPolicyNames = {{
    {BindPolicy::kNone, "none"}, {BindPolicy::kAdvisory, "advisory"}, {BindPolicy::kStrict, "strict"}}};
static_assert(isDenseNameTable(kBindPolicyNames, BindPolicy::kStrict));

const char* bindPolicyName(BindPolicy policy);  // "none", "advisory", "strict"
std::optional<BindPolicy> bindPolicyFromName(std::string_view name);

}  // namespace tiercache
