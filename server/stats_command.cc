// The `stats` command family (general, slabs, items, tiers, cache, settings): what
// the server and its Cache report, in memcached's STAT lines; and the key
// dumps (stats cachedump, lru_crawler metadump and mgdump). Apart from the
// data commands (commands.cc): they read counters and walk the index, and
// serve no one key.
#include <event2/event.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <type_traits>

#include "commands.h"

namespace tiercache::server {

using std::chrono::seconds;

void CommandHandler::stats(const Request& r, ReplySink& out, WorkerCounters& c) {
  std::string s;
  auto stat = [&s](std::string_view name, auto value) {
    s += "STAT ";
    s.append(name);
    s += ' ';
    if constexpr (std::is_convertible_v<decltype(value), std::string_view>) {
      s.append(std::string_view(value));
    } else if constexpr (std::is_floating_point_v<decltype(value)>) {
      char buf[32];
      snprintf(buf, sizeof(buf), "%.6f", static_cast<double>(value));
      s += buf;
    } else if constexpr (std::is_signed_v<decltype(value)>) {
      addSigned(s, static_cast<int64_t>(value));
    } else {
      addNumber(s, static_cast<uint64_t>(value));
    }
    s += "\r\n";
  };
  if (r.statsArgs == "reset") {
    std::lock_guard lock(state_.resetMutex);
    state_.cacheAtReset = cache_.stats();
    state_.workersAtReset.clear();
#define TIERCACHE_SUM_COUNTER(name, help)                                                          \
  {                                                                                                \
    uint64_t sum = 0;                                                                              \
    for (const WorkerCounters* w : state_.workers) sum += w->name.load(std::memory_order_relaxed); \
    state_.workersAtReset.push_back(sum);                                                          \
  }
    TIERCACHE_SERVER_COUNTERS(TIERCACHE_SUM_COUNTER)
#undef TIERCACHE_SUM_COUNTER
    state_.totalConnectionsAtReset = state_.totalConnections.load();
    state_.rejectedConnectionsAtReset = state_.rejectedConnections.load();
    state_.listenDisabledAtReset = state_.listenDisabled.load();
    state_.connYieldsAtReset = state_.connYields.load();
    out.add("RESET\r\n");
    return;
  }
  CacheStats cs = cache_.stats();
  std::vector<uint64_t> workersAtReset;
  uint64_t connectionsAtReset = 0, rejectedAtReset = 0, listenDisabledAtReset = 0, yieldsAtReset = 0;
  {
    std::lock_guard lock(state_.resetMutex);
    if (state_.cacheAtReset) cs = cs.since(*state_.cacheAtReset);
    workersAtReset = state_.workersAtReset;
    connectionsAtReset = state_.totalConnectionsAtReset;
    rejectedAtReset = state_.rejectedConnectionsAtReset;
    listenDisabledAtReset = state_.listenDisabledAtReset;
    yieldsAtReset = state_.connYieldsAtReset;
  }
  if (r.statsArgs.empty()) {
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    stat("pid", static_cast<int64_t>(getpid()));
    stat("uptime", static_cast<uint64_t>(std::chrono::duration_cast<seconds>(
                                             std::chrono::steady_clock::now() - state_.started).count()));
    stat("time", nowUnix());
    stat("version", kVersion);
    stat("pointer_size", static_cast<uint64_t>(sizeof(void*) * 8));
    stat("rusage_user", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6);
    stat("rusage_system", ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
    stat("max_connections", static_cast<uint64_t>(config_.max_conns));
    stat("curr_connections", state_.currConnections.load());
    stat("total_connections", state_.totalConnections.load() - connectionsAtReset);
    stat("rejected_connections", state_.rejectedConnections.load() - rejectedAtReset);
    stat("listen_disabled_num", state_.listenDisabled.load() - listenDisabledAtReset);
    stat("conn_yields", state_.connYields.load() - yieldsAtReset);
    stat("accepting_conns", static_cast<uint64_t>(state_.acceptPaused.load(std::memory_order_relaxed) ? 0 : 1));
    size_t row = 0;
#define TIERCACHE_SUM_COUNTER(name, help)                                                          \
  {                                                                                                \
    uint64_t sum = 0;                                                                              \
    for (const WorkerCounters* w : state_.workers) sum += w->name.load(std::memory_order_relaxed); \
    if (row < workersAtReset.size()) sum -= workersAtReset[row];                                   \
    ++row;                                                                                         \
    stat(#name, sum);                                                                              \
  }
    TIERCACHE_SERVER_COUNTERS(TIERCACHE_SUM_COUNTER)
#undef TIERCACHE_SUM_COUNTER
    uint64_t limit = 0;
    for (const TierStats& t : cs.tiers) limit += t.limit_bytes;
    stat("limit_maxbytes", limit);
    stat("threads", static_cast<uint64_t>(config_.threads));
    stat("libevent", std::string_view(event_get_version()));
    // The index is sized once (index.bucket_power) and never grows.
    stat("hash_power_level", static_cast<uint64_t>(cs.index_buckets_log2));
    stat("hash_is_expanding", static_cast<uint64_t>(0));
    stat("slabs_moved", cs.rebalanced_slabs);
    // memcached's "bytes": what the stored items take (header, key, value)
    // in the memory tiers; monitoring takes it over limit_maxbytes as "used".
    uint64_t itemBytes = 0;
    for (const ClassStats& k : cs.classes) itemBytes += k.requested_bytes;
    stat("bytes", itemBytes);
    stat("curr_items", cs.items);
    stat("total_items", cs.inserts);
    stat("evictions", cs.evictions + cs.background_evictions);
    // memcached's "reclaimed": items found dead (expired or flushed) and
    // their slots taken back, by a read, a write of the key or the reaper.
    stat("reclaimed", cs.expired);
    stat("demotions", cs.demotions);
    stat("promotions", cs.promotions);
  } else if (r.statsArgs == "slabs") {
    // One "slab class" per (tier, pool, allocation class): ids number them in order.
    uint64_t active = 0, total = 0;
    for (const ClassStats& k : cs.classes) {
      std::string p = std::to_string(classNumber(k)) + ":";
      stat(p + "tier", static_cast<uint64_t>(k.tier));
      stat(p + "pool", static_cast<uint64_t>(k.pool));
      stat(p + "chunk_size", static_cast<uint64_t>(k.alloc_size));
      stat(p + "total_pages", k.slabs);
      stat(p + "used_chunks", k.items);
      stat(p + "free_chunks", k.free_slots);
      stat(p + "mem_requested", k.requested_bytes);
      stat(p + "evictions", k.evictions + k.background_evictions);
      active += k.slabs ? 1 : 0;
      total += k.slabs * cache_.config().slab_size;
    }
    stat("active_slabs", active);
    stat("total_malloced", total);
  } else if (r.statsArgs == "items") {
    for (const ClassStats& k : cs.classes) {
      std::string p = "items:" + std::to_string(classNumber(k)) + ":";
      stat(p + "number", k.items);
      stat(p + "evicted", k.evictions + k.background_evictions);
      stat(p + "reclaimed", k.reclaimed);
      stat(p + "mem_requested", k.requested_bytes);
      stat(p + "demoted", k.demotions);
      stat(p + "promoted", k.promotions);
    }
  } else if (r.statsArgs == "tiers") {
    for (const TierStats& t : cs.tiers) {
      std::string p = "tier:" + std::to_string(t.tier) + ":";
      stat(p + "name", t.name);
      stat(p + "kind", t.kind);
      stat(p + "persistent", t.persistent ? "yes" : "no");
      stat(p + "bytes", t.configured_bytes);
      stat(p + "limit_bytes", t.limit_bytes);
      stat(p + "slabs_total", t.slabs_total);
      stat(p + "slabs_used", t.slabs_used);
      stat(p + "items", t.items);
      stat(p + "hits", t.hits);
      stat(p + "hit_ratio", cs.tierHitRatio(t.tier));
      stat(p + "evictions", t.evictions + t.background_evictions);
      stat(p + "demotions", t.demotions);
      stat(p + "promotions", t.promotions);
    }
  } else if (r.statsArgs == "cache") {
    // Every row of the cache's counter tables (cache_stats.h), under its own
    // name: the whole cache, then tier:<n>:<name> per tier.
    for (const MetricDesc& m : metricTable()) {
      if (m.cache) stat(m.name, cs.*m.cache);
    }
    for (const TierStats& t : cs.tiers) {
      const std::string p = "tier:" + std::to_string(t.tier) + ":";
      for (const MetricDesc& m : metricTable()) {
        if (m.tier) stat(p + m.name, t.*m.tier);
      }
    }
  } else if (r.statsArgs == "settings") {
    stat("maxconns", static_cast<uint64_t>(config_.max_conns));
    stat("tcpport", static_cast<uint64_t>(config_.port));
    stat("interface", config_.listen);
    stat("num_threads", static_cast<uint64_t>(config_.threads));
    stat("item_size_max", config_.max_item_size);
    stat("idle_timeout", static_cast<uint64_t>(config_.idle_timeout));
    stat("verbosity", static_cast<uint64_t>(state_.verbosity.load()));
    stat("reqs_per_event", static_cast<uint64_t>(config_.reqs_per_event));
    stat("flush_enabled", std::string_view(config_.flush_all_enabled ? "yes" : "no"));
    stat("binding_protocol", std::string_view(config_.binary_protocol ? "auto-negotiate" : "ascii"));
  } else if (r.statsArgs == "conns") {
    if (state_.describeConnections) state_.describeConnections(s, &out);
  } else if (r.statsArgs == "sizes") {
    // memcached's item-size histogram, off unless turned on there; not kept
    // here (stats slabs and items give the per-class sizes).
    stat("sizes_status", std::string_view("disabled"));
  } else if (r.statsArgs.starts_with("cachedump")) {
    if (!cachedump(r.statsArgs, cs, s)) {
      c.add(c.protocol_errors);
      out.add("CLIENT_ERROR bad command line format\r\n");
      return;
    }
  } else {
    c.add(c.protocol_errors);
    out.add("ERROR\r\n");
    return;
  }
  s += "END\r\n";
  out.add(s);
}

uint64_t CommandHandler::classNumber(const ClassStats& k) const { return classNumber(k.tier, k.pool, k.class_id); }

uint64_t CommandHandler::classNumber(uint32_t tier, uint32_t pool, uint32_t classId) const {
  const CacheConfig& config = cache_.config();
  const uint64_t ladder = config.classCount();
  const uint64_t pools = std::max<size_t>(1, config.pools.size());
  return 1 + classId + ladder * (tier * pools + pool);
}

uint64_t CommandHandler::dumpFrom(const Request& r, uint64_t cursor, ReplySink& out) {
  // memcached's formats: metadump "key=<URI-encoded key> exp=<unix
  // seconds, -1 never> la=<unix seconds of the last access> cas= fetch=
  // cls= size= flags=" a line, then END; mgdump "mg <key>" (a key holding
  // a space or control byte as "mg <base64> b") a line, then EN. la is -1
  // with a policy that keeps no access time (EvictionPolicy::idleMs); size
  // is the key and value bytes. Items on flash are not listed.
  std::vector<uint32_t> classes;
  parseCrawlerClasses(r.subArgument, &classes);  // checked by the parser
  const bool meta = r.subcommand == "metadump";
  const int64_t now = nowUnix();
  std::string s;
  auto line = [&](const ReadHandle& h) {
    const ReadHandle::Placement p = h.placement();
    const uint64_t cls = classNumber(h.tier(), p.pool, p.classId);
    if (!classes.empty() && std::find(classes.begin(), classes.end(), cls) == classes.end()) return;
    const std::string_view key = h.key();
    if (!meta) {
      const bool plain = std::none_of(key.begin(), key.end(), [](char ch) {
        const auto u = static_cast<unsigned char>(ch);
        return u <= 0x20 || u == 0x7f;
      });
      s += "mg ";
      if (plain) {
        s.append(key);
        s += "\r\n";
      } else {
        appendBase64(key, s);
        s += " b\r\n";
      }
      return;
    }
    static constexpr char kHex[] = "0123456789ABCDEF";
    s += "key=";
    for (const char ch : key) {
      const auto u = static_cast<unsigned char>(ch);
      if (std::isalnum(u) || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
        s += ch;
      } else {
        s += '%';
        s += kHex[u >> 4];
        s += kHex[u & 15];
      }
    }
    s += " exp=";
    const auto deadline = h.expiresAt();
    if (deadline) {
      addSigned(s, std::chrono::duration_cast<seconds>(deadline->time_since_epoch()).count());
    } else {
      s += "-1";
    }
    s += " la=";
    const int64_t idle = h.idleMs();
    addSigned(s, idle < 0 ? -1 : now - idle / 1000);
    s += " cas=";
    addNumber(s, h.casToken());
    s += h.fetched() ? " fetch=yes cls=" : " fetch=no cls=";
    addNumber(s, cls);
    s += " size=";
    addNumber(s, key.size() + h.value().size());
    s += " flags=";
    addNumber(s, h.flags());
    s += '\n';
  };
  // Lines go out a walk step at a time, so that a dump stops soon after
  // the connection's output fills.
  constexpr uint64_t kStep = 1024;
  for (uint64_t walked = 0; cursor != Cache::kWalkDone && walked < kDumpBuckets && !out.full(); walked += kStep) {
    cursor = cache_.forEachItemFrom(cursor, kStep, line);
    out.add(s);
    s.clear();
  }
  if (cursor == Cache::kWalkDone) out.add(meta ? "END\r\n" : "EN\r\n");
  return cursor;
}

bool CommandHandler::cachedump(std::string_view args, const CacheStats& cs, std::string& s) {
  // "cachedump <class> <limit>": memcached's debugging dump, "ITEM <key>
  // [<bytes> b; <expiry, unix seconds> s]" per item. The class (numbered as
  // in `stats slabs`) picks the items of its tier whose key and value fit
  // its chunk size and not the class before (approximately: the item header
  // is not counted); the order is the index's, not an LRU's. limit 0 = all,
  // and the reply stops at 2 MiB.
  constexpr size_t kMaxDump = 2 << 20;
  std::vector<std::string_view> t;
  size_t i = 0;
  while (i < args.size()) {
    while (i < args.size() && args[i] == ' ') ++i;
    size_t j = i;
    while (j < args.size() && args[j] != ' ') ++j;
    if (j > i) t.push_back(args.substr(i, j - i));
    i = j;
  }
  uint32_t id = 0, limit = 0;
  if (t.size() != 3 || !parseU32(t[1], id) || !parseU32(t[2], limit)) return false;
  const ClassStats* found = nullptr;
  for (const ClassStats& k : cs.classes) {
    if (classNumber(k) == id) found = &k;
  }
  if (found == nullptr) return true;  // memcached: an empty dump
  const ClassStats& k = *found;
  // The chunk size of the class before in the ladder (the items of this
  // class are larger than it).
  uint64_t below = 0;
  if (k.class_id > 0) {
    const CacheConfig& config = cache_.config();
    below = makeClassSizes(config.allocation.min_size, config.maxAllocSize(), config.allocation.growth_factor,
                           config.allocation.sizes)[k.class_id - 1];
  }
  uint32_t listed = 0;
  const size_t start = s.size();
  cache_.forEachItem([&](const ReadHandle& h) {
    if ((limit != 0 && listed >= limit) || s.size() - start >= kMaxDump) return;
    const uint64_t bytes = h.key().size() + h.value().size();
    if (h.tier() != k.tier || bytes > k.alloc_size || bytes <= below) return;
    s += "ITEM ";
    s.append(h.key());
    s += " [";
    addNumber(s, h.value().size());
    s += " b; ";
    const auto at = h.expiresAt();
    addSigned(s, at ? std::chrono::duration_cast<seconds>(at->time_since_epoch()).count() : 0);
    s += " s]\r\n";
    ++listed;
  });
  return true;
}

}  // namespace tiercache::server
