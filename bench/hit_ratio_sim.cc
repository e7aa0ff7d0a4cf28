#include "bench/hit_ratio_sim.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "bench/key_space.h"
#include "bench/popularity.h"
#include "bench/report.h"
#include "bench/trace.h"
#include "bench/workload.h"

namespace tiercache::bench {

namespace {

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

bool isRead(RequestOp op) { return op == RequestOp::kGet || op == RequestOp::kLoneGet; }

uint32_t keyCount(const std::vector<SimRequest>& requests) {
  uint32_t n = 0;
  for (const SimRequest& r : requests) n = std::max(n, r.key + 1);
  return n;
}

// next[i]: the position of the next measured read of requests[i].key
// before any set or del of it (which makes the copy held after i
// worthless), else kNever. Unmeasured reads count for nothing, but do not
// end the copy's life either.
std::vector<uint64_t> nextReads(const std::vector<SimRequest>& requests) {
  std::vector<uint64_t> next(requests.size(), kNever);
  std::vector<uint64_t> pending(keyCount(requests), kNever);
  for (size_t i = requests.size(); i-- > 0;) {
    const SimRequest& r = requests[i];
    next[i] = pending[r.key];
    if (!isRead(r.op)) pending[r.key] = kNever;
    else if (r.measured) pending[r.key] = i;
  }
  return next;
}

// Belady over objects (unit) or bytes (sized): held objects ordered by next read.
SimResult belady(const std::vector<SimRequest>& requests, uint64_t capacity, bool bytes, bool lookaside) {
  SimResult result;
  std::vector<uint64_t> next = nextReads(requests);
  uint32_t keys = keyCount(requests);
  std::vector<uint64_t> heldNext(keys, kNever);
  std::vector<uint32_t> heldSize(keys, 0);
  std::vector<bool> held(keys, false);
  // Whether the key has a value the cache could fetch: set (or filled by a
  // lookaside get) and not deleted since.
  std::vector<bool> exists(keys, false);
  std::set<std::pair<uint64_t, uint32_t>> order;  // (next read, key); furthest last
  uint64_t used = 0;
  auto cost = [&](uint32_t size) -> uint64_t { return bytes ? size : 1; };
  auto drop = [&](uint32_t key) {
    order.erase({heldNext[key], key});
    used -= cost(heldSize[key]);
    held[key] = false;
  };
  auto store = [&](uint32_t key, uint32_t size, uint64_t nextRead) {
    if (held[key]) drop(key);
    uint64_t need = cost(size);
    // Never read again, or larger than the cache: storing it cannot help.
    if (nextRead == kNever || need > capacity) return;
    // Drop the furthest-read objects while they are read later than this one.
    uint64_t freed = 0;
    size_t victims = 0;
    for (auto it = order.rbegin(); used - freed + need > capacity; ++it, ++victims) {
      if (it == order.rend()) return;
      if (it->first < nextRead) return;  // the new object is the furthest: bypass
      freed += cost(heldSize[it->second]);
    }
    for (; victims > 0; --victims) drop(std::prev(order.end())->second);
    order.insert({nextRead, key});
    heldNext[key] = nextRead;
    heldSize[key] = size;
    held[key] = true;
    used += need;
  };
  for (size_t i = 0; i < requests.size(); ++i) {
    const SimRequest& r = requests[i];
    switch (r.op) {
      case RequestOp::kGet:
      case RequestOp::kAddChained:  // workloadRequests maps these four already
      case RequestOp::kUpdate:
      case RequestOp::kCouldExist:
      case RequestOp::kLoneGet:
        if (r.measured) ++result.gets;
        if (held[r.key]) {
          if (r.measured) ++result.hits;
          order.erase({heldNext[r.key], r.key});
          heldNext[r.key] = next[i];
          order.insert({next[i], r.key});
        } else if (r.op == RequestOp::kGet && lookaside) {
          store(r.key, r.size, next[i]);
          exists[r.key] = true;
        } else if (exists[r.key]) {
          // The relaxation (see the header): a miss the real cache would not
          // fill may fill here when the key has a value.
          bool before = held[r.key];
          store(r.key, r.size, next[i]);
          if (held[r.key] && !before) result.relaxed_fills++;
        }
        break;
      case RequestOp::kSet:
      case RequestOp::kLoneSet:
        store(r.key, r.size, next[i]);
        exists[r.key] = true;
        break;
      case RequestOp::kDel:
        if (held[r.key]) drop(r.key);
        exists[r.key] = false;
        break;
    }
  }
  return result;
}

}  // namespace

SimResult simulateBelady(const std::vector<SimRequest>& requests, uint64_t capacityObjects, bool lookaside) {
  return belady(requests, capacityObjects, false, lookaside);
}

SimResult simulateBeladySize(const std::vector<SimRequest>& requests, uint64_t capacityBytes, bool lookaside) {
  return belady(requests, capacityBytes, true, lookaside);
}

SimResult simulateLru(const std::vector<SimRequest>& requests, uint64_t capacityBytes, bool lookaside) {
  SimResult result;
  uint32_t keys = keyCount(requests);
  constexpr uint32_t kNone = UINT32_MAX;
  // Intrusive doubly linked list over key ids; head = most recent.
  std::vector<uint32_t> prev(keys, kNone), next(keys, kNone), size(keys, 0);
  std::vector<bool> held(keys, false);
  uint32_t head = kNone, tail = kNone;
  uint64_t used = 0;
  auto unlink = [&](uint32_t k) {
    (prev[k] != kNone ? next[prev[k]] : head) = next[k];
    (next[k] != kNone ? prev[next[k]] : tail) = prev[k];
    prev[k] = next[k] = kNone;
  };
  auto pushFront = [&](uint32_t k) {
    next[k] = head;
    prev[k] = kNone;
    if (head != kNone) prev[head] = k;
    head = k;
    if (tail == kNone) tail = k;
  };
  auto drop = [&](uint32_t k) {
    unlink(k);
    used -= size[k];
    held[k] = false;
  };
  auto store = [&](uint32_t k, uint32_t bytes) {
    if (held[k]) drop(k);
    if (bytes > capacityBytes) return;
    while (used + bytes > capacityBytes) drop(tail);
    pushFront(k);
    size[k] = bytes;
    held[k] = true;
    used += bytes;
  };
  for (const SimRequest& r : requests) {
    switch (r.op) {
      case RequestOp::kGet:
      case RequestOp::kAddChained:  // workloadRequests maps these four already
      case RequestOp::kUpdate:
      case RequestOp::kCouldExist:
      case RequestOp::kLoneGet:
        if (r.measured) {
          ++result.gets;
          result.get_bytes += r.op == RequestOp::kGet ? r.size : 0;
        }
        if (held[r.key]) {
          if (r.measured) {
            ++result.hits;
            result.hit_bytes += r.op == RequestOp::kGet ? r.size : 0;
          }
          unlink(r.key);
          pushFront(r.key);
        } else if (r.op == RequestOp::kGet && lookaside) {
          store(r.key, r.size);
        }
        break;
      case RequestOp::kSet:
      case RequestOp::kLoneSet: store(r.key, r.size); break;
      case RequestOp::kDel:
        if (held[r.key]) drop(r.key);
        break;
    }
  }
  return result;
}

uint64_t objectCapacity(const std::vector<SimRequest>& requests, uint64_t capacityBytes, bool* unitSizes) {
  uint32_t keys = keyCount(requests);
  std::vector<uint32_t> smallest(keys, UINT32_MAX);
  uint32_t lo = UINT32_MAX, hi = 0;
  for (const SimRequest& r : requests) {
    if (r.op != RequestOp::kSet && r.op != RequestOp::kGet) continue;  // objects that can be stored
    smallest[r.key] = std::min(smallest[r.key], r.size);
    lo = std::min(lo, r.size);
    hi = std::max(hi, r.size);
  }
  if (unitSizes) *unitSizes = lo == hi;
  std::vector<uint32_t> sizes;
  for (uint32_t s : smallest)
    if (s != UINT32_MAX) sizes.push_back(s);
  std::sort(sizes.begin(), sizes.end());
  uint64_t used = 0, k = 0;
  for (uint32_t s : sizes) {
    if (used + s > capacityBytes) break;
    used += s;
    ++k;
  }
  return k;
}

HitRatioLimits computeLimits(const std::vector<SimRequest>& requests, uint64_t capacityBytes, bool lookaside) {
  HitRatioLimits l;
  l.capacity_bytes = capacityBytes;
  l.capacity_objects = objectCapacity(requests, capacityBytes, &l.unit_sizes);
  l.optimal = simulateBelady(requests, l.capacity_objects, lookaside);
  l.belady_size = simulateBeladySize(requests, capacityBytes, lookaside);
  l.lru = simulateLru(requests, capacityBytes, lookaside);
  l.exact = l.unit_sizes && l.optimal.relaxed_fills == 0;
  return l;
}

std::vector<SimRequest> workloadRequests(const WorkloadConfig& config, uint32_t itemHeaderBytes) {
  if (config.keys > (UINT32_MAX - 1) / 2) throw std::length_error("too many keys to simulate (at most 2^31 - 1)");
  KeySpace keys(config);
  std::unique_ptr<KeySampler> sampler = KeySampler::forWorkload(config);
  auto object = [&](uint64_t index) {
    return uint32_t(std::min<uint64_t>(itemHeaderBytes + keys.keyLength(index) + keys.valueSize(index), UINT32_MAX));
  };
  // Indices that share a short key are one object: its id is the first such
  // index seen (still below keys, so ids stay dense).
  std::unordered_map<uint64_t, uint32_t> shortIds;
  auto idOf = [&](uint64_t index) -> uint32_t {
    if (!keys.isShortKey(index)) return uint32_t(index);
    return shortIds.try_emplace(keys.shortKeyId(index), uint32_t(index)).first->second;
  };
  std::vector<SimRequest> out;
  if (config.prepopulate) {
    out.reserve(config.keys + config.ops_per_thread);
    for (uint64_t i = 0, n = RequestStream::prepopulateCount(config.keys, 1, 0); i < n; ++i) {
      uint64_t index = RequestStream::prepopulateIndex(config.keys, 1, 0, i);
      out.push_back(SimRequest{idOf(index), object(index), RequestOp::kSet, false});
    }
  }
  if (config.lone_set_ratio > 0 && 2 * config.keys + config.ops_per_thread > UINT32_MAX)
    throw std::length_error("too many keys and lone sets to simulate (2 x keys + ops at most 2^32 - 1)");
  RequestStream stream(config, *sampler, 0);
  uint32_t loneSetId = uint32_t(2 * config.keys);  // a fresh object per lone set
  for (uint64_t i = 0; i < config.ops_per_thread; ++i) {
    Request r = stream.next();
    if (r.op == RequestOp::kCouldExist) continue;  // reads nothing, changes nothing
    uint32_t id = r.op == RequestOp::kLoneGet   ? uint32_t(config.keys + r.index)
                  : r.op == RequestOp::kLoneSet ? loneSetId++
                                                : idOf(r.index);
    // An add-chained op reads its parent (and sets it when absent): a get
    // here; the chain's bytes are not simulated. An update reads the key
    // and fills nothing: a lone get of the key's own id. A lone set is a
    // set of an object no request reads.
    const RequestOp op = r.op == RequestOp::kAddChained ? RequestOp::kGet
                         : r.op == RequestOp::kUpdate   ? RequestOp::kLoneGet
                         : r.op == RequestOp::kLoneSet  ? RequestOp::kSet
                                                        : r.op;
    const uint32_t size = r.op == RequestOp::kLoneSet
                              ? uint32_t(std::min<uint64_t>(
                                    itemHeaderBytes + KeySpace::kLoneSetKeySize + keys.valueSize(r.index), UINT32_MAX))
                              : object(r.index);
    out.push_back(SimRequest{id, size, op, true});
  }
  return out;
}

std::vector<SimRequest> traceRequests(const Trace& trace, uint32_t itemHeaderBytes) {
  std::unordered_map<std::string_view, uint32_t> ids;
  ids.reserve(trace.size() / 4 + 16);
  std::vector<SimRequest> out;
  out.reserve(trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    TraceRecord r = trace[i];
    auto [it, fresh] = ids.try_emplace(r.key, uint32_t(ids.size()));
    uint64_t size = uint64_t(itemHeaderBytes) + r.key.size() + r.size;
    out.push_back(SimRequest{it->second, uint32_t(std::min<uint64_t>(size, UINT32_MAX)), r.op, true});
  }
  return out;
}

std::string formatLimits(const HitRatioLimits& l) {
  char buf[512];
  std::string s;
  std::snprintf(buf, sizeof buf, "  optimal     : %6.2f%% (Belady, %s %s objects)\n", 100.0 * l.optimal.hitRatio(),
                l.exact ? "exact for" : "upper bound over", withCommas(l.capacity_objects).c_str());
  s += buf;
  if (!l.unit_sizes) {
    std::snprintf(buf, sizeof buf, "  Belady-size : %6.2f%% (heuristic, %s bytes)\n", 100.0 * l.belady_size.hitRatio(),
                  withCommas(l.capacity_bytes).c_str());
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "  LRU (sim)   : %6.2f%% (%s bytes)\n", 100.0 * l.lru.hitRatio(),
                withCommas(l.capacity_bytes).c_str());
  s += buf;
  return s;
}

}  // namespace tiercache::bench
