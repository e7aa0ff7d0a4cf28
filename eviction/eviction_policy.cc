#include "eviction_policy.h"

#include <algorithm>
#include <bit>
#include <iterator>
#include <stdexcept>

#include "clock_policy.h"
#include "lru_policy.h"
#include "policy_names.h"
#include "s3fifo_policy.h"
#include "wtinylfu_policy.h"

namespace tiercache {

namespace {

using Factory = std::unique_ptr<EvictionPolicy> (*)(const EvictionPolicyOptions&, const HookResolver&);

struct PolicyRow {
  std::string_view name;
  Factory make;
};

// The registration table: one row per policy, nothing else maps names.
// Row i is kEvictionPolicyNames[i] (checked below), so EvictionPolicyKind
// i of the cache config always builds the policy of that name.
constexpr PolicyRow kPolicies[] = {
    {kEvictionPolicyNames[0],
     [](const EvictionPolicyOptions& o, const HookResolver& r) -> std::unique_ptr<EvictionPolicy> {
       return std::make_unique<LruPolicy>(r, o.lruInsertionPoint, o.lruRefreshMs, o.lruRefreshRatio);
     }},
    {kEvictionPolicyNames[1],
     [](const EvictionPolicyOptions&, const HookResolver& r) -> std::unique_ptr<EvictionPolicy> {
       return std::make_unique<ClockPolicy>(r);
     }},
    {kEvictionPolicyNames[2],
     [](const EvictionPolicyOptions& o, const HookResolver& r) -> std::unique_ptr<EvictionPolicy> {
       return std::make_unique<S3FifoPolicy>(r, o.s3fifoSmallPercent);
     }},
    {kEvictionPolicyNames[3],
     [](const EvictionPolicyOptions& o, const HookResolver& r) -> std::unique_ptr<EvictionPolicy> {
       return std::make_unique<WTinyLfuPolicy>(r, o.wtinylfuWindowPercent, o.wtinylfuWindow);
     }},
};
static_assert(std::size(kPolicies) == kEvictionPolicyNames.size(), "one registration row per policy name");

}  // namespace

std::unique_ptr<EvictionPolicy> makeEvictionPolicy(const EvictionPolicyOptions& options,
                                                   const HookResolver& resolver) {
  for (const PolicyRow& row : kPolicies) {
    if (options.kind == row.name) return row.make(options, resolver);
  }
  std::string known;
  for (const PolicyRow& row : kPolicies) known += (known.empty() ? "" : ", ") + std::string(row.name);
  throw std::invalid_argument("unknown eviction policy '" + options.kind + "' (expected one of " + known + ")");
}

std::vector<std::string> evictionPolicyNames() {
  std::vector<std::string> out;
  for (const PolicyRow& row : kPolicies) out.emplace_back(row.name);
  return out;
}

void EvictionAgeHistogram::record(uint32_t ageMs) {
  const int b = std::min<int>(kBuckets - 1, std::bit_width(ageMs));
  buckets_[b].fetch_add(1, std::memory_order_relaxed);
}

uint64_t EvictionAgeHistogram::count() const {
  uint64_t n = 0;
  for (const auto& b : buckets_) n += b.load(std::memory_order_relaxed);
  return n;
}

uint32_t EvictionAgeHistogram::medianMs() const {
  const uint64_t n = count();
  if (n == 0) return 0;
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[b].load(std::memory_order_relaxed);
    // Bucket b holds ages in [2^(b-1), 2^b): report its upper edge - 1.
    if (2 * seen >= n) return b == 0 ? 0 : static_cast<uint32_t>((uint64_t{1} << b) - 1);
  }
  return UINT32_MAX;
}

}  // namespace tiercache
