// LeaseMarks: the two bits memcached's meta commands keep on an item for
// its recache leases, kept here beside the cache (whose items have no room
// for them):
//  - token sent: a client was handed the win (mg's W flag) for this item;
//    later readers see Z until the item is rewritten;
//  - stale: `md <key> I` or `ms ... I` marked the item invalid; readers see
//    X, and the first one wins the recache.
// A mark belongs to one version of an item, named by its CAS token: any
// rewrite gives the item a new token, so the old mark no longer applies
// (and is dropped when next looked at). Marks exist only for items that a
// lease command touched; at most kShards * kPerShard are kept, and past
// that the oldest-inserted of a shard is forgotten, which can at worst hand
// out a second W for that item, never lose data.
//
// Threads: any; each shard has its own mutex. empty() is a relaxed read that
// lets mg skip the lookup while no lease is in use.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tiercache::server {

class LeaseMarks {
 public:
  struct Mark {
    bool tokenSent = false;
    bool stale = false;
  };

  // The mark of `key`'s item version `cas` (none: never marked, or rewritten since).
  Mark get(std::string_view key, uint64_t cas);
  // Sets token-sent on (key, cas) unless it was set; true if this call set it (the caller won).
  bool claimToken(std::string_view key, uint64_t cas);
  // Replaces the mark of `key` with `mark` for version `cas`.
  void set(std::string_view key, uint64_t cas, Mark mark);
  bool empty() const { return count_.load(std::memory_order_relaxed) == 0; }

  static constexpr size_t kShards = 64;
  static constexpr size_t kPerShard = 1024;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Entry {
    uint64_t cas = 0;
    Mark mark;
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string, Entry, Hash, std::equal_to<>> entries;
    std::deque<std::string> order;  // insertion order, for forgetting past kPerShard
  };
  Shard& shardOf(std::string_view key) { return shards_[Hash{}(key) % kShards]; }
  void erase(Shard& s, std::unordered_map<std::string, Entry, Hash, std::equal_to<>>::iterator it);

  std::array<Shard, kShards> shards_;
  std::atomic<size_t> count_{0};
};

}  // namespace tiercache::server
