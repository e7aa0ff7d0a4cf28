// Points of the persistent commit protocol, and of a demotion to flash,
// where a crash test stops the process (fault injection; see
// CacheHooks::faultSeam).
#pragma once

#include <cstdint>

namespace tiercache {

enum class FaultPoint : uint8_t {
  kReplaceNewCommitted,  // a replacing publish: new copy committed, old one not yet invalidated
  kDemoteKeyLocked,      // a demotion to flash holds the key's lock, nothing written yet
  kDemoteFlashWritten,   // ... its flash copy is logged, the memory item not yet unlinked
};

}  // namespace tiercache
