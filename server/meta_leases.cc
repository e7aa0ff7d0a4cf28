// memcached's meta lease bits beside the cache (see meta_leases.h).
#include "meta_leases.h"

namespace tiercache::server {

void LeaseMarks::erase(Shard& s, std::unordered_map<std::string, Entry, Hash, std::equal_to<>>::iterator it) {
  s.entries.erase(it);
  count_.fetch_sub(1, std::memory_order_relaxed);
}

LeaseMarks::Mark LeaseMarks::get(std::string_view key, uint64_t cas) {
  Shard& s = shardOf(key);
  std::lock_guard lock(s.mutex);
  auto it = s.entries.find(key);
  if (it == s.entries.end()) return {};
  if (it->second.cas != cas) {
    erase(s, it);  // the item was rewritten: its mark is gone with the old version
    return {};
  }
  return it->second.mark;
}

bool LeaseMarks::claimToken(std::string_view key, uint64_t cas) {
  Shard& s = shardOf(key);
  {
    std::lock_guard lock(s.mutex);
    auto it = s.entries.find(key);
    if (it != s.entries.end() && it->second.cas == cas) {
      if (it->second.mark.tokenSent) return false;
      it->second.mark.tokenSent = true;
      return true;
    }
  }
  set(key, cas, Mark{.tokenSent = true});
  return true;
}

void LeaseMarks::set(std::string_view key, uint64_t cas, Mark mark) {
  Shard& s = shardOf(key);
  std::lock_guard lock(s.mutex);
  auto it = s.entries.find(key);
  if (!mark.tokenSent && !mark.stale) {
    if (it != s.entries.end()) erase(s, it);
    return;
  }
  if (it != s.entries.end()) {
    it->second = Entry{cas, mark};
    return;
  }
  while (s.entries.size() >= kPerShard && !s.order.empty()) {
    // Forget the oldest mark still held (keys erased since are skipped).
    auto old = s.entries.find(s.order.front());
    s.order.pop_front();
    if (old != s.entries.end()) erase(s, old);
  }
  if (s.order.size() >= 4 * kPerShard) {
    // Keys of erased marks pile up in `order`: rebuild it from what is held.
    s.order.clear();
    for (const auto& [k, e] : s.entries) s.order.push_back(k);
  }
  s.entries.emplace(std::string(key), Entry{cas, mark});
  s.order.emplace_back(key);
  count_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tiercache::server
