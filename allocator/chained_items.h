// ChainedItems: a parent item plus an ordered chain of child items, read
// back all or nothing (CacheLib's chained items, built on Cache's public API).
//
// Layout. The parent is an ordinary item under the client's key. The chain
// lives in ordinary items under internal keys that start with a NUL byte
// (reserved: the memcached server refuses control bytes in client keys,
// this class refuses a parent key that starts with NUL; Cache's own API
// takes any bytes, so programs linking the library must not use the prefix):
//   head    "\0tcH" + h                value: magic, count n, parent seq, parent key
//   child i "\0tcC" + h + i (u32 LE)   value: magic, i, parent seq, then the payload
// where h = 64-bit hash of the parent key and "parent seq" is the parent
// item's sequence number (its CAS token, ReadHandle::casToken()), unique per
// publish. Children and head take the parent's deadline.
//
// Invariant the reader checks: a chain is returned only if the head and all
// n children exist, each carries the current parent's seq (and its own
// index), and the head did not change while the children were read (every
// mutation rewrites the head, which gives it a new token; the reader
// retries a few times, then reports a miss). So a chain with any member
// evicted, removed or left over from an older parent reads as a miss, never
// as a shorter or mixed chain. Keys are compared in full by the index, and
// the head also stores the parent key, so a 64-bit hash collision between
// two parent keys costs misses, never another key's chain.
//
// Writers of one parent key are serialised by a striped mutex (readers
// take no lock). Removal: with the remove hook wired (attach(), before the
// Cache is built), a parent that leaves the cache takes its chain with it,
// and a chain member that is evicted or expires takes the parent with it
// (as CacheLib evicts a chain whole). The hook never blocks: it checks
// tokens and removes; a race with a concurrent writer can only remove a
// member of a newer chain, which then reads as a miss. Without the hook the
// reader's checks still hold; stale members are reclaimed by eviction.
//
// Children are ordinary items: they count in the cache's item, byte and
// get statistics (reading a chain of n children is n + 2 finds), and this
// class's stats() give the live child count and bytes (kept by the hook).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "cache.h"

namespace tiercache {

struct ChainedItemsStats {
  uint64_t parents_inserted = 0;  // insertOrReplace calls that stored the parent
  uint64_t children_added = 0;
  uint64_t add_failures = 0;      // parent replaced meanwhile, chain full, or no room
  uint64_t children_popped = 0;
  uint64_t children_replaced = 0;
  uint64_t chain_hits = 0;        // findChain/viewChain that returned a whole chain
  uint64_t chain_broken = 0;      // parent present, chain missing, stale or incomplete: a miss
  uint64_t cascade_removals = 0;  // items the hook removed with their parent or chain
  int64_t live_children = 0;      // needs the hook: children added minus children gone
  int64_t live_child_bytes = 0;   // item bytes (header + key + value) of those
};

// A whole chain, pinned: the parent and its children, oldest first (index 0
// is the first child added; CacheLib's viewAsChainedAllocs lists newest
// first). Valid while held, even if the parent is replaced or removed.
struct ChainView {
  ReadHandle parent;
  std::vector<ReadHandle> children;

  explicit operator bool() const { return static_cast<bool>(parent); }
  size_t size() const { return children.size(); }
  // Payload of child i (the bytes given to addChainedItem).
  std::string_view child(size_t i) const;
};

class ChainedItems {
 public:
  static constexpr uint32_t kMaxChainLength = 1u << 16;
  // Bytes in front of every child's payload (magic, index, parent seq).
  static constexpr size_t kChildTagSize = 16;

  // Routes the cache's remove callback through the chains (keeping any
  // callback already in hooks for client keys). Call before building the
  // Cache with these hooks, then pass the result to the constructor.
  class Hook;
  static std::shared_ptr<Hook> attach(CacheHooks& hooks);

  explicit ChainedItems(Cache& cache, std::shared_ptr<Hook> hook = nullptr);
  ~ChainedItems();
  ChainedItems(const ChainedItems&) = delete;
  ChainedItems& operator=(const ChainedItems&) = delete;

  using Fill = std::function<void(char* out, size_t size)>;

  // Publishes a parent with an empty chain, dropping the key's old chain.
  // Returns true if it replaced an item. Throws std::invalid_argument for
  // an empty handle or a key that starts with NUL (reserved).
  bool insertOrReplace(WriteHandle&& parent);
  // Appends a child (a copy of value, or `size` bytes written by fill) to
  // the chain of `parent`, a handle to a published item. False when parent
  // is no longer the key's item, the chain has kMaxChainLength children, or
  // no slot could be had. A parent stored by Cache::set gets a chain too.
  bool addChainedItem(const ReadHandle& parent, std::string_view value, PoolId pool = 0);
  bool addChainedItem(const ReadHandle& parent, size_t size, const Fill& fill, PoolId pool = 0);
  // Removes the newest child; false if the chain is empty or gone.
  bool popChainedItem(const ReadHandle& parent);
  // Replaces child `index` (0 = oldest); false if out of range or gone.
  bool replaceChainedItem(const ReadHandle& parent, size_t index, std::string_view value, PoolId pool = 0);

  // The key's parent and whole chain (find(): records the accesses), or an
  // empty view: parent absent, or chain broken (see the invariant above).
  ChainView findChain(std::string_view key);
  // The chain of a parent the caller already holds; empty if broken.
  ChainView viewChain(ReadHandle parent);
  // Removes the parent and its chain; false if the parent was absent.
  bool remove(std::string_view key);

  ChainedItemsStats stats() const;

  // Keys the chains use; a client key never starts with NUL.
  static bool isInternalKey(std::string_view key) { return !key.empty() && key[0] == '\0'; }
  // The internal keys of a parent key's chain (tests evict members by them).
  static std::string headKey(std::string_view parentKey);
  static std::string childKey(std::string_view parentKey, uint32_t index);

  // What the remove hook does with an item that left the cache (called by
  // Hook; public only for it). Never blocks on a chain's writer lock.
  void handleRemoved(const RemovedItem& item);

 private:
  struct Head {
    uint32_t count = 0;
    uint64_t seq = 0;
    uint64_t token = 0;  // the head item's own CAS token
  };
  // The head of key's chain if it belongs to the parent with seq `seq`.
  bool readHead(std::string_view key, uint64_t hash, uint64_t seq, Head& out, bool record);
  bool writeHead(std::string_view key, uint64_t hash, uint64_t seq, uint32_t count, const ReadHandle& parent,
                 PoolId pool);
  bool writeChild(std::string_view key, uint64_t hash, uint32_t index, const ReadHandle& parent, size_t size,
                  const Fill& fill, PoolId pool);
  // Removes the head and children of key's chain unless it belongs to the
  // parent with seq `keepSeq` (0: remove whatever chain is there).
  void dropChain(std::string_view key, uint64_t hash, uint64_t keepSeq);
  // True if parent is still the key's item.
  bool current(const ReadHandle& parent);
  std::mutex& stripe(uint64_t hash) { return stripes_[hash % stripes_.size()]; }
  Cache& cache_;
  std::shared_ptr<Hook> hook_;
  std::array<std::mutex, 256> stripes_;
  struct Counters;
  std::unique_ptr<Counters> c_;
};

// The link between the cache's remove callback and a ChainedItems. Shared
// (the Cache's hooks hold one reference): callbacks that arrive before the
// ChainedItems exists, or after it is destroyed, only reach the previous
// callback.
class ChainedItems::Hook {
 public:
  explicit Hook(RemoveCallback previous) : previous_(std::move(previous)) {}
  void call(const RemovedItem& item);
  // Points the hook at a ChainedItems (nullptr: detach; waits for calls
  // in flight).
  void bind(ChainedItems* target);

 private:
  RemoveCallback previous_;
  // Not a lock: a callback may re-enter (a cascade removes more items).
  // bind(nullptr) waits until no call is in flight.
  std::atomic<ChainedItems*> target_{nullptr};
  std::atomic<int> inflight_{0};
};

}  // namespace tiercache
