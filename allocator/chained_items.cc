#include "chained_items.h"

#include <xxhash.h>

#include <cstring>
#include <stdexcept>
#include <thread>

#include "item.h"

namespace tiercache {

namespace {

constexpr uint32_t kHeadMagic = 0x31484354;   // "TCH1"
constexpr uint32_t kChildMagic = 0x31434354;  // "TCC1"
constexpr size_t kHeadFixed = 16;             // magic, count, seq; then the parent key
constexpr char kHeadPrefix[] = {'\0', 't', 'c', 'H'};
constexpr char kChildPrefix[] = {'\0', 't', 'c', 'C'};
// A reader retries this many times when writers keep changing the head.
constexpr int kReadAttempts = 4;

uint64_t keyHash(std::string_view key) { return XXH3_64bits_withSeed(key.data(), key.size(), 0x43484149); }

void put32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
void put64(char* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t get32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t get64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

std::string headKeyOf(uint64_t hash) {
  std::string k(kHeadPrefix, sizeof(kHeadPrefix));
  k.append(reinterpret_cast<const char*>(&hash), 8);
  return k;
}

std::string childKeyOf(uint64_t hash, uint32_t index) {
  std::string k(kChildPrefix, sizeof(kChildPrefix));
  k.append(reinterpret_cast<const char*>(&hash), 8);
  k.append(reinterpret_cast<const char*>(&index), 4);
  return k;
}

struct ChildTag {
  uint32_t index = 0;
  uint64_t seq = 0;
};

bool parseChild(std::string_view value, ChildTag& t) {
  if (value.size() < ChainedItems::kChildTagSize || get32(value.data()) != kChildMagic) return false;
  t.index = get32(value.data() + 4);
  t.seq = get64(value.data() + 8);
  return true;
}

struct HeadValue {
  uint32_t count = 0;
  uint64_t seq = 0;
  std::string_view parentKey;
};

bool parseHead(std::string_view value, HeadValue& h) {
  if (value.size() < kHeadFixed || get32(value.data()) != kHeadMagic) return false;
  h.count = get32(value.data() + 4);
  h.seq = get64(value.data() + 8);
  h.parentKey = value.substr(kHeadFixed);
  return true;
}

size_t itemBytes(std::string_view key, size_t valueSize) { return Item::totalSize(key.size(), valueSize); }

// Holds a chain's writer stripe for the scope.
using StripeLock = std::lock_guard<std::mutex>;

}  // namespace

struct ChainedItems::Counters {
  std::atomic<uint64_t> parents_inserted{0}, children_added{0}, add_failures{0}, children_popped{0},
      children_replaced{0}, chain_hits{0}, chain_broken{0}, cascade_removals{0};
  std::atomic<int64_t> live_children{0}, live_child_bytes{0};
};

std::string_view ChainView::child(size_t i) const {
  return children.at(i).value().substr(ChainedItems::kChildTagSize);
}

// ---- hook ----

void ChainedItems::Hook::call(const RemovedItem& item) {
  inflight_.fetch_add(1);
  if (ChainedItems* t = target_.load()) t->handleRemoved(item);
  inflight_.fetch_sub(1);
  // The chain's own items are not the client's business.
  if (!isInternalKey(item.key) && previous_) previous_(item);
}

void ChainedItems::Hook::bind(ChainedItems* target) {
  target_.store(target);
  if (target == nullptr)
    while (inflight_.load() != 0) std::this_thread::yield();
}

std::shared_ptr<ChainedItems::Hook> ChainedItems::attach(CacheHooks& hooks) {
  auto hook = std::make_shared<Hook>(std::move(hooks.onRemove));
  hooks.onRemove = [hook](const RemovedItem& item) { hook->call(item); };
  return hook;
}

// ---- construction ----

ChainedItems::ChainedItems(Cache& cache, std::shared_ptr<Hook> hook)
    : cache_(cache), hook_(std::move(hook)), c_(std::make_unique<Counters>()) {
  if (hook_) hook_->bind(this);
}

ChainedItems::~ChainedItems() {
  if (hook_) hook_->bind(nullptr);
}

std::string ChainedItems::headKey(std::string_view parentKey) { return headKeyOf(keyHash(parentKey)); }
std::string ChainedItems::childKey(std::string_view parentKey, uint32_t index) {
  return childKeyOf(keyHash(parentKey), index);
}

// ---- helpers ----

bool ChainedItems::current(const ReadHandle& parent) {
  if (!parent) return false;
  ReadHandle cur = cache_.peek(parent.key());
  return cur && cur.casToken() == parent.casToken();
}

bool ChainedItems::readHead(std::string_view key, uint64_t hash, uint64_t seq, Head& out, bool record) {
  const std::string hk = headKeyOf(hash);
  ReadHandle h = record ? cache_.find(hk) : cache_.peek(hk);
  HeadValue v;
  if (!h || !parseHead(h.value(), v) || v.seq != seq || v.parentKey != key) return false;
  out.count = v.count;
  out.seq = v.seq;
  out.token = h.casToken();
  return true;
}

bool ChainedItems::writeHead(std::string_view key, uint64_t hash, uint64_t seq, uint32_t count,
                             const ReadHandle& parent, PoolId pool) {
  const std::string hk = headKeyOf(hash);
  WriteHandle w = cache_.allocate(pool, hk, kHeadFixed + key.size());
  if (!w) return false;
  char* p = w.data();
  put32(p, kHeadMagic);
  put32(p + 4, count);
  put64(p + 8, seq);
  std::memcpy(p + kHeadFixed, key.data(), key.size());
  w.setExpiresAt(parent.expiresAt());
  cache_.insertOrReplace(std::move(w));
  return true;
}

bool ChainedItems::writeChild(std::string_view key, uint64_t hash, uint32_t index, const ReadHandle& parent,
                              size_t size, const Fill& fill, PoolId pool) {
  (void)key;
  const std::string ck = childKeyOf(hash, index);
  WriteHandle w = cache_.allocate(pool, ck, kChildTagSize + size);
  if (!w) return false;
  char* p = w.data();
  put32(p, kChildMagic);
  put32(p + 4, index);
  put64(p + 8, parent.casToken());
  if (size > 0) fill(p + kChildTagSize, size);
  w.setExpiresAt(parent.expiresAt());
  cache_.insertOrReplace(std::move(w));
  c_->live_children.fetch_add(1, std::memory_order_relaxed);
  c_->live_child_bytes.fetch_add(int64_t(itemBytes(ck, kChildTagSize + size)), std::memory_order_relaxed);
  return true;
}

void ChainedItems::dropChain(std::string_view key, uint64_t hash, uint64_t keepSeq) {
  const std::string hk = headKeyOf(hash);
  ReadHandle h = cache_.peek(hk);
  HeadValue v;
  if (!h || !parseHead(h.value(), v) || v.parentKey != key) return;  // none, or another key's (hash collision)
  if (keepSeq != 0 && v.seq == keepSeq) return;
  const uint64_t seq = v.seq;
  // Read every member before removing: a removal may run the hook, which
  // may remove the head under us (h stays pinned, v stays valid).
  const uint32_t count = std::min(v.count, kMaxChainLength);
  for (uint32_t i = 0; i < count; ++i) {
    const std::string ck = childKeyOf(hash, i);
    ReadHandle c = cache_.peek(ck);
    ChildTag t;
    if (!c || !parseChild(c.value(), t) || t.seq != seq) continue;  // gone, or a newer chain's
    c.reset();
    cache_.remove(ck);
  }
  ReadHandle again = cache_.peek(hk);
  if (again && again.casToken() == h.casToken()) {
    again.reset();
    cache_.remove(hk);
  }
}

// ---- writers ----

bool ChainedItems::insertOrReplace(WriteHandle&& parent) {
  if (!parent) throw std::invalid_argument("ChainedItems::insertOrReplace: empty handle");
  if (isInternalKey(parent.key()))
    throw std::invalid_argument("ChainedItems::insertOrReplace: a key starting with NUL is reserved for chains");
  const std::string key(parent.key());
  const uint64_t hash = keyHash(key);
  StripeLock lock(stripe(hash));
  const bool replaced = cache_.insertOrReplace(std::move(parent));
  ReadHandle cur = cache_.peek(key);
  if (!cur) return replaced;  // evicted or replaced already: nothing to chain
  dropChain(key, hash, cur.casToken());
  if (writeHead(key, hash, cur.casToken(), 0, cur, 0)) c_->parents_inserted.fetch_add(1, std::memory_order_relaxed);
  return replaced;
}

bool ChainedItems::addChainedItem(const ReadHandle& parent, std::string_view value, PoolId pool) {
  return addChainedItem(parent, value.size(), [value](char* out, size_t n) { std::memcpy(out, value.data(), n); },
                        pool);
}

bool ChainedItems::addChainedItem(const ReadHandle& parent, size_t size, const Fill& fill, PoolId pool) {
  auto fail = [&] {
    c_->add_failures.fetch_add(1, std::memory_order_relaxed);
    return false;
  };
  if (!parent || isInternalKey(parent.key())) return fail();
  const std::string_view key = parent.key();
  const uint64_t hash = keyHash(key);
  const uint64_t seq = parent.casToken();
  StripeLock lock(stripe(hash));
  if (!current(parent)) return fail();
  Head head;
  uint32_t n = 0;
  if (readHead(key, hash, seq, head, false)) {
    n = head.count;
  } else {
    dropChain(key, hash, seq);  // an older parent's chain, or none: start this one
  }
  if (n >= kMaxChainLength) return fail();
  // Child first, then the head that counts it: a reader never counts a
  // child that is not there yet.
  if (!writeChild(key, hash, n, parent, size, fill, pool)) return fail();
  if (!writeHead(key, hash, seq, n + 1, parent, pool)) return fail();
  c_->children_added.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool ChainedItems::popChainedItem(const ReadHandle& parent) {
  if (!parent) return false;
  const std::string_view key = parent.key();
  const uint64_t hash = keyHash(key);
  StripeLock lock(stripe(hash));
  Head head;
  if (!current(parent) || !readHead(key, hash, parent.casToken(), head, false) || head.count == 0) return false;
  // Uncount first, then remove: a reader never counts a missing child.
  if (!writeHead(key, hash, head.seq, head.count - 1, parent, 0)) return false;
  cache_.remove(childKeyOf(hash, head.count - 1));
  c_->children_popped.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool ChainedItems::replaceChainedItem(const ReadHandle& parent, size_t index, std::string_view value, PoolId pool) {
  if (!parent) return false;
  const std::string_view key = parent.key();
  const uint64_t hash = keyHash(key);
  StripeLock lock(stripe(hash));
  Head head;
  if (!current(parent) || !readHead(key, hash, parent.casToken(), head, false) || index >= head.count) return false;
  const auto fill = [value](char* out, size_t n) { std::memcpy(out, value.data(), n); };
  if (!writeChild(key, hash, uint32_t(index), parent, value.size(), fill, pool)) return false;
  // Rewriting the head gives it a new token, so a reader that read the old
  // child and the new one in one pass retries.
  writeHead(key, hash, head.seq, head.count, parent, pool);
  c_->children_replaced.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool ChainedItems::remove(std::string_view key) {
  if (isInternalKey(key)) return false;
  const uint64_t hash = keyHash(key);
  StripeLock lock(stripe(hash));
  // Parent first: from then on readers miss, and never see a parent whose
  // chain is half gone.
  const bool removed = cache_.remove(key);
  dropChain(key, hash, 0);
  return removed;
}

// ---- readers ----

ChainView ChainedItems::findChain(std::string_view key) {
  if (isInternalKey(key)) return {};
  ReadHandle parent = cache_.find(key);
  if (!parent) return {};
  return viewChain(std::move(parent));
}

ChainView ChainedItems::viewChain(ReadHandle parent) {
  if (!parent) return {};
  const std::string_view key = parent.key();
  const uint64_t hash = keyHash(key);
  const uint64_t seq = parent.casToken();
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    Head head;
    if (!readHead(key, hash, seq, head, true)) break;  // no chain for this parent
    if (head.count > kMaxChainLength) break;
    std::vector<ReadHandle> children;
    children.reserve(head.count);
    bool whole = true;
    for (uint32_t i = 0; i < head.count && whole; ++i) {
      ReadHandle c = cache_.find(childKeyOf(hash, i));
      ChildTag t;
      whole = c && parseChild(c.value(), t) && t.seq == seq && t.index == i;
      if (whole) children.push_back(std::move(c));
    }
    // The head unchanged across the reads: the children are one version.
    ReadHandle again = cache_.peek(headKeyOf(hash));
    const bool stable = again && again.casToken() == head.token;
    if (stable && whole) {
      c_->chain_hits.fetch_add(1, std::memory_order_relaxed);
      ChainView v;
      v.parent = std::move(parent);
      v.children = std::move(children);
      return v;
    }
    if (stable) break;  // a member is missing or stale and no writer is at work: broken
  }
  c_->chain_broken.fetch_add(1, std::memory_order_relaxed);
  return {};
}

// ---- the remove hook ----

void ChainedItems::handleRemoved(const RemovedItem& item) {
  // A cascade runs cache calls that may remove more items and re-enter
  // here; depth 2 covers member -> parent -> chain. Deeper: the readers'
  // checks still hold, eviction reclaims the rest.
  thread_local int depth = 0;
  struct Depth {
    Depth() { ++depth; }
    ~Depth() { --depth; }
  } guard;
  const bool left = item.cause == RemoveCause::kEvicted || item.cause == RemoveCause::kExpired;
  if (!isInternalKey(item.key)) {
    if (depth > 3) return;
    // A parent left or was replaced: drop its chain unless it belongs to the
    // key's current item (a chain added to the replacing item already).
    const uint64_t hash = keyHash(item.key);
    ReadHandle cur = cache_.peek(item.key);
    const uint64_t keep = cur ? cur.casToken() : 0;
    cur.reset();
    if (keep == 0) {
      dropChain(item.key, hash, 0);
    } else {
      dropChain(item.key, hash, keep);
    }
    return;
  }
  ChildTag t;
  HeadValue hv;
  std::string parentKey;
  uint64_t seq = 0;
  if (parseChild(item.value, t)) {
    c_->live_children.fetch_sub(1, std::memory_order_relaxed);
    c_->live_child_bytes.fetch_sub(int64_t(itemBytes(item.key, item.value.size())), std::memory_order_relaxed);
    if (!left || depth > 3 || item.key.size() < sizeof(kChildPrefix) + 8) return;
    uint64_t hash;
    std::memcpy(&hash, item.key.data() + sizeof(kChildPrefix), 8);
    ReadHandle h = cache_.peek(headKeyOf(hash));
    if (!h || !parseHead(h.value(), hv) || hv.seq != t.seq) return;  // the chain is gone or newer
    parentKey.assign(hv.parentKey);
    seq = t.seq;
  } else if (parseHead(item.value, hv)) {
    if (!left || depth > 3) return;
    parentKey.assign(hv.parentKey);
    seq = hv.seq;
  } else {
    return;
  }
  // A member evicted or expired: the chain is incomplete, so its parent
  // goes too (its removal then drops the rest of the chain).
  ReadHandle p = cache_.peek(parentKey);
  if (!p || p.casToken() != seq) return;
  p.reset();
  if (cache_.remove(parentKey)) c_->cascade_removals.fetch_add(1, std::memory_order_relaxed);
}

ChainedItemsStats ChainedItems::stats() const {
  ChainedItemsStats s;
  const auto r = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  s.parents_inserted = r(c_->parents_inserted);
  s.children_added = r(c_->children_added);
  s.add_failures = r(c_->add_failures);
  s.children_popped = r(c_->children_popped);
  s.children_replaced = r(c_->children_replaced);
  s.chain_hits = r(c_->chain_hits);
  s.chain_broken = r(c_->chain_broken);
  s.cascade_removals = r(c_->cascade_removals);
  s.live_children = c_->live_children.load(std::memory_order_relaxed);
  s.live_child_bytes = c_->live_child_bytes.load(std::memory_order_relaxed);
  return s;
}

}  // namespace tiercache
