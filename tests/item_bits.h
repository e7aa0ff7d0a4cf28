// Short names for Item's state bits, for the tests that spell out state
// words (item_state_test.cc, access_index_test.cc).
#pragma once

#include <cstdint>

#include "allocator/item.h"

namespace tiercache::test {

inline constexpr uint32_t kA = Item::kAccessible;
inline constexpr uint32_t kX = Item::kExclusive;
inline constexpr uint32_t kF = Item::kFreeSlot;
inline constexpr uint32_t kM = Item::kMoving;

}  // namespace tiercache::test
