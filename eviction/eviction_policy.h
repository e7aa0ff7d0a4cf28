// EvictionPolicy: the order in which one (tier, pool, class) gives up items.
//
// Policies keep intrusive lists threaded through an EvictionHook inside each
// item, addressed by 32-bit refs (never pointers), and reach the hooks
// through a HookResolver that the cache implements: eviction/ knows nothing
// of items, slabs or tiers.
//
// Concurrency contract:
//   - add/remove/evict take the policy's own list lock (one per class).
//   - recordAccess is the hit path: it may skip work under contention and
//     must never block for long (CLOCK takes no lock at all; LRU moves an
//     item at most once per refresh interval, with try_lock).
//   - A ref is added at most once and removed at most once; remove() of a
//     ref not in the list returns false (membership is the hook's kInList
//     bit, changed only under the list lock).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tiercache {

// 12 bytes inside every item. prev/next are guarded by the list lock; meta
// is atomic because hits update it without the lock:
//   bit 31 kInList, bit 30 kAccessed (CLOCK), bit 29 kHot (LRU mid-point),
//   bits 0..28 last-move time in milliseconds modulo 2^29 (LRU).
struct EvictionHook {
  static constexpr uint32_t kInList = 1u << 31;
  static constexpr uint32_t kAccessed = 1u << 30;
  static constexpr uint32_t kHot = 1u << 29;
  static constexpr uint32_t kTimeMask = (1u << 29) - 1;

  uint32_t prev;
  uint32_t next;
  std::atomic<uint32_t> meta;
};
static_assert(sizeof(EvictionHook) == 12);

class HookResolver {
 public:
  virtual EvictionHook& hook(uint32_t ref) const = 0;

 protected:
  ~HookResolver() = default;
};

// Decides, under the list lock, whether a candidate can go. Every policy
// honours every verdict:
//   kTake    the candidate goes: the policy unlinks it (and clears its hook
//            meta) before the lock is released.
//   kSkip    leave it where it is this time (another thread is moving or
//            freeing it; that ends soon).
//   kRotate  it cannot go now and may not for a long time (a reader pins it):
//            the policy moves it to its warm end, as a hit would, so that the
//            next scans do not meet it again at the cold end. Without this a
//            few long-lived handles on the coldest items fill every scan
//            window and block the class (issue 9, item 4).
//   kStop    end the scan.
// kSkip and kRotate count towards maxScan.
class EvictionVisitor {
 public:
  enum class Verdict { kTake, kSkip, kRotate, kStop };
  virtual Verdict visit(uint32_t ref) = 0;

 protected:
  ~EvictionVisitor() = default;
};

class EvictionPolicy {
 public:
  static constexpr uint32_t kNullRef = 0xFFFFFFFFu;

  virtual ~EvictionPolicy() = default;

  // The new item becomes a member (it must not be one).
  virtual void add(uint32_t ref) = 0;
  // Returns false if ref was not a member.
  virtual bool remove(uint32_t ref) = 0;
  virtual void recordAccess(uint32_t ref) = 0;
  // Offers candidates, coldest first, to visitor; a kTake'n ref is unlinked
  // before the lock is released. Stops after `want` takes, `maxScan`
  // candidates or a kStop. Returns the number taken.
  virtual size_t evict(size_t want, size_t maxScan, EvictionVisitor& visitor) = 0;
  virtual size_t size() const = 0;
  virtual const char* name() const = 0;
  // Walks the list under the lock (for consistency checks): calls fn on
  // every member and returns false if the links are broken.
  virtual bool forEach(void (*fn)(uint32_t ref, void* ctx), void* ctx) const = 0;
};

struct EvictionPolicyOptions {
  std::string kind = "lru";         // "lru" or "clock"
  uint32_t lruInsertionPoint = 0;   // 0 = head; k = 1/2^k of the list below
  uint32_t lruRefreshMs = 1000;
};

// Throws std::invalid_argument for an unknown kind.
std::unique_ptr<EvictionPolicy> makeEvictionPolicy(const EvictionPolicyOptions& options,
                                                   const HookResolver& resolver);

// Monotonic milliseconds, cheap (coarse clock); wraps at 2^29 in the hook.
uint32_t coarseNowMs();

}  // namespace tiercache
