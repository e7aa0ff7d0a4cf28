// The eviction policies' names, in registration order: the one list that
// the registration table (eviction_policy.cc), the cache config's
// EvictionPolicyKind and its "eviction.policy" choices are checked against
// at compile time. Its own small header so that the config need not pull
// in the policy interface.
#pragma once

#include <array>
#include <string_view>

namespace tiercache {

inline constexpr std::array<std::string_view, 4> kEvictionPolicyNames = {"lru", "clock", "s3fifo", "wtinylfu"};

}  // namespace tiercache
