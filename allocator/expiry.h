// The expiry clock and the liveness test every read applies.
//
// Deadlines are whole seconds since 2020-01-01T00:00:00Z read from
// std::chrono::system_clock, stored in Item::expiry (u32, 0 = never).
// Wall-clock seconds, not a process-relative clock, so that a deadline kept
// in a persistent tier means the same thing after a restart; unsigned 32
// bits from 2020 last until 2156-02-07, so no wrap inside any plausible
// uptime. A deadline is rounded up: an item lives at least its TTL and
// less than one second longer. A wall clock stepped backwards keeps items
// alive longer, one stepped forwards expires them sooner (as in memcached).
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>

#include "item.h"

namespace tiercache {

inline constexpr std::chrono::sys_seconds kExpiryEpoch{std::chrono::seconds{1577836800}};  // 2020-01-01 UTC

// Seconds on the expiry clock at `t` (0 before the epoch).
inline uint32_t expirySeconds(std::chrono::system_clock::time_point t) {
  const auto s = std::chrono::floor<std::chrono::seconds>(t - kExpiryEpoch).count();
  if (s <= 0) return 0;
  if (s >= std::numeric_limits<uint32_t>::max()) return std::numeric_limits<uint32_t>::max();
  return static_cast<uint32_t>(s);
}

// Deadline for a TTL starting at `now`: 0 (never) for a zero TTL or one past
// the clock's range; at least 1 (a negative TTL gives a past deadline).
inline uint32_t expiryDeadline(std::chrono::system_clock::time_point now, std::chrono::seconds ttl) {
  if (ttl == std::chrono::seconds::zero()) return 0;
  // In whole seconds: adding a TTL of centuries to the clock's nanoseconds
  // would overflow into the past and store the item already expired.
  constexpr int64_t kRange = std::numeric_limits<uint32_t>::max();
  if (ttl.count() >= kRange) return 0;
  if (ttl.count() <= -kRange) return 1;
  const int64_t d = std::chrono::ceil<std::chrono::seconds>(now - kExpiryEpoch).count() + ttl.count();
  if (d >= kRange) return 0;
  return d < 1 ? 1 : static_cast<uint32_t>(d);
}

// Deadline for an absolute time, rounded up; never 0.
inline uint32_t expiryDeadlineAt(std::chrono::system_clock::time_point t) {
  const auto d = std::chrono::ceil<std::chrono::seconds>(t - kExpiryEpoch).count();
  if (d >= static_cast<int64_t>(std::numeric_limits<uint32_t>::max())) return std::numeric_limits<uint32_t>::max();
  return d < 1 ? 1 : static_cast<uint32_t>(d);
}

inline std::chrono::system_clock::time_point expiryTimePoint(uint32_t deadline) {
  return kExpiryEpoch + std::chrono::seconds{deadline};
}

// Whether an item may still be served, at one moment: it is dead once its
// deadline has come, or if it was stored before the last flush (its
// sequence number is below flushSeq).
struct LiveCheck {
  uint32_t now = 0;
  uint64_t flushSeq = 0;
  bool dead(const Item& it) const {
    const uint32_t d = it.deadline();
    return (d != 0 && d <= now) || it.seq() < flushSeq;
  }
};

}  // namespace tiercache
