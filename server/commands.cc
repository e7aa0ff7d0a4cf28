// memcached semantics over the Cache API (see commands.h).
#include "commands.h"

#include <charconv>
#include <cstring>
#include <span>

namespace tiercache::server {

using std::chrono::seconds;

namespace {

constexpr int64_t kRelativeLimit = 60 * 60 * 24 * 30;  // memcached's REALTIME_MAXDELTA
constexpr int kCasRetries = 1000;                       // bounded work for read-modify-write loops

void reply(ReplySink& out, const Request& r, std::string_view line) {
  if (r.noreply) return;
  out.add(line);
  out.add("\r\n");
}

// ---- the Cache calls the protocol needs ------------------------------------

enum class Stored : uint8_t { kStored, kExists, kNotFound, kNotStored };

Stored fromCas(CasResult r) {
  switch (r) {
    case CasResult::kStored: return Stored::kStored;
    case CasResult::kExists: return Stored::kExists;
    case CasResult::kNotFound: return Stored::kNotFound;
    case CasResult::kNotStored: return Stored::kNotStored;
  }
  return Stored::kNotStored;
}
uint32_t flagsOf(const ReadHandle& h) { return h.flags(); }
uint64_t casOf(const ReadHandle& h) { return h.casToken(); }
Stored compareAndSwap(Cache& c, std::string_view key, uint64_t token, std::string_view v, seconds ttl, uint32_t flags) {
  return fromCas(c.compareAndSwap(key, token, v, ttl, flags));
}
bool touchKey(Cache& c, std::string_view key, seconds ttl) { return c.touch(key, ttl); }
// Read-modify-write commands see a key that lives only on flash.
ReadHandle peekKey(Cache& c, std::string_view key) { return c.peekOrLoad(key); }

// Whole seconds left before h expires; -1 = never (memcached's "t" and ttl
// reply). Rounded down: a deadline is rounded up when stored, so rounding
// up again would report `gat 1000` as 1001 seconds.
int64_t ttlLeft(const ReadHandle& h) {
  auto at = h.expiresAt();
  if (!at) return -1;
  auto left = std::chrono::floor<seconds>(*at - serverNow()).count();
  return left < 0 ? 0 : left;
}

// The key a request names in the cache: its token, or with a meta
// command's b flag the bytes the token encodes in base64 (the parser
// checked that it decodes). A reply's k flag echoes the token as sent.
std::string_view cacheKey(const Request& r, std::string& buffer) {
  if (!r.meta.has('b')) return r.keys[0];
  decodeBase64(r.keys[0], buffer);
  return buffer;
}

// A classic command's error line: memcached sends none for noreply.
void replyError(ReplySink& out, const Request& r, std::string_view line) {
  if (r.command == Command::kMetaSet || r.command == Command::kMetaArithmetic) {
    out.add(line);
    out.add("\r\n");
    return;
  }
  reply(out, r, line);
}

}  // namespace

ServerClock& serverClock() {
  static ServerClock clock;
  return clock;
}

std::optional<seconds> ttlFromExptime(int64_t exptime, int64_t now) {
  if (exptime == 0) return seconds(0);
  if (exptime < 0) return std::nullopt;
  if (exptime <= kRelativeLimit) return seconds(exptime);
  if (exptime <= now) return std::nullopt;
  return seconds(exptime - now);
}

CommandHandler::CommandHandler(Cache& cache, const ServerConfig& config, ServerState& state)
    : cache_(cache), config_(config), state_(state) {}

Next CommandHandler::execute(const Request& r, ReplySink& out, WorkerCounters& c, FlashRead* flash) {
  switch (r.command) {
    case Command::kGet:
    case Command::kGets:
    case Command::kGat:
    case Command::kGats:
      for (size_t next = 0; next < r.keys.size();) next = getFrom(r, next, out, c);
      return Next::kContinue;
    case Command::kDelete: {
      if (cache_.remove(r.keys[0])) {
        c.add(c.delete_hits);
        reply(out, r, "DELETED");
      } else {
        c.add(c.delete_misses);
        reply(out, r, "NOT_FOUND");
      }
      return Next::kContinue;
    }
    case Command::kIncr:
    case Command::kDecr:
      arithmetic(r, out, c);
      return Next::kContinue;
    case Command::kTouch: {
      c.add(c.cmd_touch);
      auto ttl = ttlFromExptime(r.exptime, nowUnix());
      bool found = ttl ? touchKey(cache_, r.keys[0], *ttl) : cache_.remove(r.keys[0]);
      c.add(found ? c.touch_hits : c.touch_misses);
      reply(out, r, found ? "TOUCHED" : "NOT_FOUND");
      return Next::kContinue;
    }
    case Command::kFlushAll: {
      if (!config_.flush_all_enabled) {
        reply(out, r, "CLIENT_ERROR flush_all not allowed");
        return Next::kContinue;
      }
      c.add(c.cmd_flush);
      // flush_all N: items stored before N seconds from now read as absent from then on.
      const auto delay = r.exptime > 0 ? ttlFromExptime(r.exptime, nowUnix()) : std::nullopt;
      cache_.flush(delay.value_or(seconds(0)));
      if (!config_.use_cas && !delay) state_.flushSecond.store(nowUnix(), std::memory_order_relaxed);
      reply(out, r, "OK");
      return Next::kContinue;
    }
    case Command::kVersion:
      out.add("VERSION ");
      out.add(kVersion);
      out.add("\r\n");
      return Next::kContinue;
    case Command::kVerbosity:
      state_.verbosity.store(r.verbosity);
      reply(out, r, "OK");
      return Next::kContinue;
    case Command::kQuit:
      return Next::kClose;
    case Command::kStats:
      stats(r, out, c);
      return Next::kContinue;
    case Command::kDebugTime:
      // memcached-debug's clock shift, for tests that wait out TTLs; an
      // unknown command unless server.debug_commands is on.
      if (!config_.debug_commands) break;
      serverClock().shiftSeconds.fetch_add(r.exptime, std::memory_order_relaxed);
      out.add("OK\r\n");
      return Next::kContinue;
    case Command::kCacheMemlimit: memlimit(r, out); return Next::kContinue;
    case Command::kSlabsAutomove:
      // Accepted for memcached's clients and tools; tiercache moves slabs by
      // its own config (cache.movers), which this does not change.
      reply(out, r, "OK");
      return Next::kContinue;
    case Command::kMetaGet: metaGet(r, out, c, flash); return Next::kContinue;
    case Command::kMetaDelete: metaDelete(r, out, c); return Next::kContinue;
    case Command::kMetaArithmetic: metaArithmetic(r, out, c); return Next::kContinue;
    case Command::kMetaNoop:
      out.add("MN\r\n");
      return Next::kContinue;
    case Command::kMetaDebug: metaDebug(r, out); return Next::kContinue;
    case Command::kLruCrawler:
      // The dumps stream through dumpFrom. The rest steer memcached's
      // crawler thread; tiercache's reaper reclaims expired items on its
      // own (a slice of the index a second) and cannot be stopped.
      if (isKeyDump(r)) break;  // the worker streams those through dumpFrom
      if (r.subcommand == "disable") {
        out.add("ERROR failed to stop lru crawler thread\r\n");
      } else {
        out.add("OK\r\n");
      }
      return Next::kContinue;
    default:
      break;  // storage commands come through beginStore/finishStore
  }
  out.add("ERROR\r\n");
  return Next::kContinue;
}

size_t CommandHandler::getFrom(const Request& r, size_t first, ReplySink& out, WorkerCounters& c, FlashRead* flash) {
  const bool withCas = r.command == Command::kGets || r.command == Command::kGats;
  const bool touch = r.command == Command::kGat || r.command == Command::kGats;
  std::optional<seconds> ttl;
  if (touch) ttl = ttlFromExptime(r.exptime, nowUnix());
  std::vector<ReadHandle> many;
  ReadHandle one;
  // The reply header outgrows a short-string buffer; one per thread keeps
  // a get free of heap allocation.
  static thread_local std::string line;
  size_t next = first;
  while (next < r.keys.size()) {
    if (next > first && out.full()) return next;
    const size_t n = std::min(kGetBatch, r.keys.size() - next);
    const std::span<const std::string_view> batch(r.keys.data() + next, n);
    std::span<ReadHandle> found;
    if (touch) {
      many.clear();
      for (std::string_view k : batch) {
        c.add(c.cmd_touch);
        if (!ttl) {
          // A deadline already past: memcached still answers with the value,
          // which is gone from then on.
          ReadHandle h = cache_.find(k);
          if (h) cache_.remove(k);
          c.add(h ? c.touch_hits : c.touch_misses);
          many.push_back(std::move(h));
          continue;
        }
        bool ok = touchKey(cache_, k, *ttl);
        c.add(ok ? c.touch_hits : c.touch_misses);
        many.push_back(ok ? cache_.find(k) : ReadHandle());
      }
      found = many;
    } else if (flash) {
      // Never waits for flash: a batch with keys on flash parks the request.
      if (!flash->ready(next) && !flash->start(cache_, batch, next)) {
        c.add(c.flash_async_reads);
        return next;
      }
      found = flash->results();
    } else if (n == 1) {
      one = cache_.find(batch[0]);  // a single get needs no batch vector
      found = std::span<ReadHandle>(&one, 1);
    } else {
      many = cache_.findMany(batch);  // one batched lookup: buckets and items prefetched together
      found = many;
    }
    for (size_t i = 0; i < n; ++i) {
      c.add(c.cmd_get);
      ReadHandle& h = found[i];
      if (!h) {
        c.add(c.get_misses);
        continue;
      }
      c.add(c.get_hits);
      h.markFetched();  // memcached's fetched bit (mg h)
      line.assign("VALUE ");
      line.append(h.key());
      line.push_back(' ');
      addNumber(line, flagsOf(h));
      line.push_back(' ');
      addNumber(line, h.value().size());
      if (withCas) {
        line.push_back(' ');
        addNumber(line, casOf(h));
      }
      line.append("\r\n");
      out.add(line);
      out.addValue(std::move(h));
      out.add("\r\n");
    }
    if (flash) flash->done();
    next += n;
  }
  out.add("END\r\n");
  return next;
}

namespace {
// A set (or ms in set mode) that cannot store removes the key's old value,
// as memcached does: a reader must not keep getting what the client meant
// to overwrite.
bool replacesOnFailure(const Request& r) {
  if (r.command == Command::kSet) return true;
  if (r.command != Command::kMetaSet) return false;
  const char m = r.meta.mode;
  return m == 0 || m == 'S' || m == 's';
}
}  // namespace

bool CommandHandler::beginStore(const Request& r, ReplySink& out, WorkerCounters& c, PendingValue& value) {
  std::string keyBuffer;
  const std::string_view key = cacheKey(r, keyBuffer);
  if (r.valueBytes > config_.max_item_size) {
    c.add(c.store_too_large);
    if (replacesOnFailure(r)) cache_.remove(key);
    replyError(out, r, "SERVER_ERROR object too large for cache");
    return false;
  }
  const bool meta = r.command == Command::kMetaSet;
  auto ttl = ttlFromExptime(meta ? r.meta.ttl : r.exptime, nowUnix());
  if (cache_.config().persistence.durable_sets) {
    value.buffered = true;
    value.copy.resize(r.valueBytes);  // bounded by max_item_size
    return true;
  }
  // The value is read straight into the item that will hold it, which
  // carries its TTL and flags from the start.
  value.item = cache_.allocate(key, r.valueBytes, ttl.value_or(seconds(0)), meta ? r.meta.clientFlags : r.clientFlags);
  if (!value.item) {
    c.add(c.store_no_memory);
    if (replacesOnFailure(r)) cache_.remove(key);
    replyError(out, r, "SERVER_ERROR out of memory storing object");
    return false;
  }
  return true;
}

void CommandHandler::finishStore(const Request& r, PendingValue&& value, ReplySink& out, WorkerCounters& c) {
  c.add(c.cmd_set);
  std::string keyBuffer;
  const std::string_view key = cacheKey(r, keyBuffer);
  const std::string_view sentKey = r.keys[0];  // what k returns: the key as the request spelled it
  const std::string_view data = value.view();
  const bool meta = r.command == Command::kMetaSet;
  const MetaFlags& m = r.meta;
  uint32_t flags = meta ? m.clientFlags : r.clientFlags;
  int64_t exptime = meta ? m.ttl : r.exptime;
  auto ttl = ttlFromExptime(exptime, nowUnix());

  // Which store: the classic command, or ms's mode (and C token).
  enum class Mode { kSet, kAdd, kReplace, kAppend, kPrepend, kCas } mode = Mode::kSet;
  uint64_t casIn = 0;
  switch (r.command) {
    case Command::kAdd: mode = Mode::kAdd; break;
    case Command::kReplace: mode = Mode::kReplace; break;
    case Command::kAppend: mode = Mode::kAppend; break;
    case Command::kPrepend: mode = Mode::kPrepend; break;
    case Command::kCas: mode = Mode::kCas, casIn = r.cas; break;
    case Command::kMetaSet:
      switch (m.mode) {
        case 'E': case 'e': mode = Mode::kAdd; break;
        case 'R': case 'r': mode = Mode::kReplace; break;
        case 'A': case 'a': mode = Mode::kAppend; break;
        case 'P': case 'p': mode = Mode::kPrepend; break;
        default: mode = Mode::kSet; break;
      }
      if (m.has('C') && (mode == Mode::kSet || mode == Mode::kReplace)) mode = Mode::kCas, casIn = m.compareCas;
      break;
    default: break;
  }

  Stored result = Stored::kNotStored;
  uint64_t newCas = 0;
  switch (mode) {
    case Mode::kSet:
      if (!ttl) {
        cache_.remove(key);
        result = Stored::kStored;
        break;
      }
      if (value.buffered) {
        result = cache_.set(key, data, *ttl, flags) ? Stored::kStored : Stored::kNotStored;
        if (result != Stored::kStored) {
          c.add(c.store_no_memory);
          cache_.remove(key);
          replyError(out, r, "SERVER_ERROR out of memory storing object");
          return;
        }
        break;
      }
      cache_.insertOrReplace(std::move(value.item));
      result = Stored::kStored;
      break;
    case Mode::kAdd:
      if (!ttl) {
        result = peekKey(cache_, key) ? Stored::kNotStored : Stored::kStored;
        break;
      }
      result = value.buffered ? (cache_.add(key, data, *ttl, flags) ? Stored::kStored : Stored::kNotStored)
                              : cache_.insert(std::move(value.item)) ? Stored::kStored : Stored::kNotStored;
      break;
    case Mode::kReplace:
    case Mode::kCas: {
      result = mode == Mode::kReplace ? Stored::kNotStored : Stored::kNotFound;
      for (int i = 0; i < kCasRetries; ++i) {
        ReadHandle old = peekKey(cache_, key);
        if (!old) break;
        if (mode == Mode::kCas && meta && m.has('I') && casIn < casOf(old)) {
          // ms I with an older token (memcached's stale set): the value is
          // stored all the same, marked stale, keeping the item's TTL and
          // whether its win was handed out.
          const uint64_t current = casOf(old);
          const int64_t left = ttlLeft(old);
          const LeaseMarks::Mark was = leases_.empty() ? LeaseMarks::Mark{} : leases_.get(key, current);
          old.reset();
          result =
              compareAndSwap(cache_, key, current, data, seconds(left < 0 ? 0 : std::max<int64_t>(left, 1)), flags);
          if (result == Stored::kStored) {
            ReadHandle now = peekKey(cache_, key);
            if (now) leases_.set(key, casOf(now), LeaseMarks::Mark{.tokenSent = was.tokenSent, .stale = true});
          }
          break;
        }
        const uint64_t token = mode == Mode::kCas ? casIn : casOf(old);
        old.reset();
        if (!ttl) {
          ReadHandle cur = peekKey(cache_, key);
          if (!cur) break;
          if (casOf(cur) != token) { result = Stored::kExists; break; }
          cur.reset();
          cache_.remove(key);
          result = Stored::kStored;
          break;
        }
        if (mode == Mode::kCas && !value.buffered) {
          // The value already sits in its own item: publish that one.
          result = fromCas(cache_.compareAndSwap(std::move(value.item), token));
          break;
        }
        result = compareAndSwap(cache_, key, token, data, *ttl, flags);
        if (mode == Mode::kCas || result != Stored::kExists) break;
        // replace lost a race with another writer: the key is still there, try again.
      }
      if (result == Stored::kNotFound && mode == Mode::kReplace) result = Stored::kNotStored;
      break;
    }
    case Mode::kAppend:
    case Mode::kPrepend: {
      result = Stored::kNotStored;
      for (int i = 0; i < kCasRetries; ++i) {
        ReadHandle old = peekKey(cache_, key);
        if (!old) break;
        if (meta && m.has('C') && casOf(old) != m.compareCas) { result = Stored::kExists; break; }
        if (old.value().size() + data.size() > config_.max_item_size) {
          replyError(out, r, "SERVER_ERROR out of memory storing object");
          return;
        }
        std::string joined;
        joined.reserve(old.value().size() + data.size());
        if (mode == Mode::kAppend) joined.append(old.value()).append(data);
        else joined.append(data).append(old.value());
        const uint64_t token = casOf(old);
        old.reset();
        // append/prepend keep the item's flags and deadline, as memcached does.
        result = fromCas(cache_.updateValue(key, token, joined));
        if (result != Stored::kExists) break;
      }
      if (result == Stored::kNotFound) result = Stored::kNotStored;
      break;
    }
  }
  if (mode == Mode::kCas) {
    c.add(result == Stored::kStored ? c.cas_hits : result == Stored::kExists ? c.cas_badval : c.cas_misses);
  }
  // memcached -C flushes by the second: a value stored in the second of
  // the last flush_all is as good as flushed (it answers as stored).
  if (result == Stored::kStored && !config_.use_cas &&
      state_.flushSecond.load(std::memory_order_relaxed) == nowUnix()) {
    cache_.remove(key);
  }

  if (!meta) {
    switch (result) {
      case Stored::kStored: reply(out, r, "STORED"); break;
      case Stored::kExists: reply(out, r, "EXISTS"); break;
      case Stored::kNotFound: reply(out, r, "NOT_FOUND"); break;
      case Stored::kNotStored: reply(out, r, "NOT_STORED"); break;
    }
    return;
  }
  // ms: HD / NS / EX / NF with the requested return flags; q hides HD.
  if (result == Stored::kStored && m.has('q')) return;
  std::string line = result == Stored::kStored ? "HD" : result == Stored::kExists ? "EX"
                     : result == Stored::kNotFound ? "NF" : "NS";
  for (uint8_t i = 0; i < m.orderCount; ++i) {
    switch (m.order[i]) {
      case 'O': line += " O"; line.append(m.opaque); break;
      case 'k':
        line += " k";
        line.append(sentKey);
        break;
      case 'c':
        // The new item's token; 0 when nothing was stored, as memcached.
        if (result == Stored::kStored && newCas == 0) {
          ReadHandle h = peekKey(cache_, key);
          newCas = h ? casOf(h) : 0;
        }
        line += " c";
        addNumber(line, result == Stored::kStored ? newCas : 0);
        break;
      default: break;
    }
  }
  line += "\r\n";
  out.add(line);
}

namespace {

// The value as memcached's incr reads it: decimal digits, optionally
// followed by spaces (memcached pads in place when a number shrinks).
bool numericValue(std::string_view v, uint64_t& out) {
  size_t n = 0;
  while (n < v.size() && v[n] >= '0' && v[n] <= '9') ++n;
  for (size_t i = n; i < v.size(); ++i) {
    if (v[i] != ' ') return false;
  }
  return n > 0 && parseU64(v.substr(0, n), out);
}

enum class Delta : uint8_t { kOk, kNotFound, kNonNumeric, kExists, kFailed };

// Read-modify-write through compareAndSwap, so concurrent increments never lose one.
Delta applyDelta(Cache& cache, std::string_view key, bool incr, uint64_t delta, std::optional<uint64_t> casIn,
                 uint64_t& result, uint64_t& newCas, int64_t& ttlOut) {
  for (int i = 0; i < kCasRetries; ++i) {
    ReadHandle h = peekKey(cache, key);
    if (!h) return Delta::kNotFound;
    if (casIn && casOf(h) != *casIn) return Delta::kExists;
    uint64_t v;
    if (!numericValue(h.value(), v)) return Delta::kNonNumeric;
    // incr wraps at 2^64 and decr stops at 0, as in memcached.
    v = incr ? v + delta : (delta > v ? 0 : v - delta);
    char buf[24];
    auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    const uint64_t token = casOf(h);
    ttlOut = ttlLeft(h);
    h.reset();
    // The item's flags and deadline stay as they are (memcached's incr).
    Stored r = fromCas(cache.updateValue(key, token, std::string_view(buf, p - buf)));
    if (r == Stored::kStored) {
      result = v;
      ReadHandle now = peekKey(cache, key);
      newCas = now ? casOf(now) : 0;
      return Delta::kOk;
    }
    if (r == Stored::kNotFound) return Delta::kNotFound;
    if (r == Stored::kNotStored) return Delta::kFailed;
    if (casIn) return Delta::kExists;
  }
  return Delta::kFailed;
}

}  // namespace

void CommandHandler::arithmetic(const Request& r, ReplySink& out, WorkerCounters& c) {
  const bool incr = r.command == Command::kIncr;
  uint64_t v = 0, cas = 0;
  int64_t ttl = 0;
  switch (applyDelta(cache_, r.keys[0], incr, r.delta, std::nullopt, v, cas, ttl)) {
    case Delta::kOk: {
      c.add(incr ? c.incr_hits : c.decr_hits);
      std::string line;
      addNumber(line, v);
      reply(out, r, line);
      return;
    }
    case Delta::kNotFound:
      c.add(incr ? c.incr_misses : c.decr_misses);
      reply(out, r, "NOT_FOUND");
      return;
    case Delta::kNonNumeric: replyError(out, r, "CLIENT_ERROR cannot increment or decrement non-numeric value"); return;
    case Delta::kExists:
    case Delta::kFailed: replyError(out, r, "SERVER_ERROR out of memory"); return;
  }
}

void CommandHandler::metaGet(const Request& r, ReplySink& out, WorkerCounters& c, FlashRead* flash) {
  const MetaFlags& m = r.meta;
  std::string keyBuffer;
  const std::string_view key = cacheKey(r, keyBuffer);
  const std::string_view sentKey = r.keys[0];  // what k returns: the key as the request spelled it
  // u: no bump (no LRU move, no promotion, not marked fetched): the item
  // is peeked. l: its idle time as it was before this read, so a bumping
  // read peeks first (a second lookup, only when l is asked).
  const bool noBump = m.has('u');
  int64_t idleMs = -1;
  ReadHandle h;
  if (flash && flash->ready(0)) {
    h = std::move(flash->results()[0]);  // resumed: the touch and counts were done
    flash->done();
  } else {
    c.add(c.cmd_get);
    if (m.has('T')) {
      auto ttl = ttlFromExptime(m.ttl, nowUnix());
      if (ttl)
        touchKey(cache_, key, *ttl);
      else
        cache_.remove(key);
      c.add(c.cmd_touch);
    }
    if (m.has('l') && !noBump) {
      if (ReadHandle before = cache_.peek(key)) idleMs = before.idleMs();
    }
    if (noBump) {
      h = peekKey(cache_, key);
    } else if (flash) {
      // Never waits for flash: a key that may be there parks the request.
      if (!flash->start(cache_, std::span<const std::string_view>(&key, 1), 0)) {
        c.add(c.flash_async_reads);
        return;  // executed again once the read is in
      }
      h = std::move(flash->results()[0]);
      flash->done();
    } else {
      h = cache_.find(key);
    }
  }
  if (h && m.has('l') && noBump) idleMs = h.idleMs();
  bool created = false;
  if (!h && m.has('N')) {
    // Vivify on miss: an empty item with the N TTL, and this client wins
    // the token to fill it (W); the next readers see Z until it is set.
    auto ttl = ttlFromExptime(m.vivifyTtl, nowUnix());
    if (ttl && cache_.add(key, std::string_view(), *ttl, 0)) {
      h = cache_.find(key);
      created = static_cast<bool>(h);
    } else if (ttl) {
      h = cache_.find(key);  // another client's, just made
    }
  }
  std::string line;
  if (!h) {
    c.add(c.get_misses);
    if (m.has('q')) return;
    line = "EN";
    for (uint8_t i = 0; i < m.orderCount; ++i) {
      if (m.order[i] == 'O') line += " O", line.append(m.opaque);
      if (m.order[i] == 'k') line += " k", line.append(sentKey);
    }
    line += "\r\n";
    out.add(line);
    return;
  }
  c.add(created ? c.get_misses : c.get_hits);
  // Lease flags, as memcached decides them: Z when the win was handed out
  // already, X when the item is stale (and then the first reader wins), W
  // when this request wins (vivified, stale, or R: less TTL left than asked).
  const uint64_t cas = casOf(h);
  const LeaseMarks::Mark mark = created || leases_.empty() ? LeaseMarks::Mark{} : leases_.get(key, cas);
  bool won = created;
  if (m.has('R') && !created && !mark.tokenSent) {
    const int64_t left = ttlLeft(h);
    won = left >= 0 && left < m.recacheTtl;
  }
  if (mark.stale && !mark.tokenSent) won = true;
  // memcached's fetched bit, as it was before this read; a read without u
  // sets it (one load once set).
  const bool fetchedBefore = noBump ? h.fetched() : h.markFetched();
  bool sent = mark.tokenSent;
  if (won && !leases_.claimToken(key, cas)) won = false, sent = true;  // another reader won first
  const bool value = m.has('v');
  if (value) {
    line = "VA ";
    addNumber(line, h.value().size());
  } else {
    line = "HD";
  }
  for (uint8_t i = 0; i < m.orderCount; ++i) {
    switch (m.order[i]) {
      case 'O': line += " O"; line.append(m.opaque); break;
      case 'k':
        line += " k";
        line.append(sentKey);
        break;
      case 'c': line += " c"; addNumber(line, casOf(h)); break;
      case 'f': line += " f"; addNumber(line, flagsOf(h)); break;
      case 's': line += " s"; addNumber(line, h.value().size()); break;
      case 't': line += " t"; addSigned(line, ttlLeft(h)); break;
      case 'h': line += fetchedBefore ? " h1" : " h0"; break;
      case 'l':
        // Seconds since the last access; absent when the eviction policy
        // keeps no access time (only LRU does).
        if (idleMs >= 0) line += " l", addSigned(line, idleMs / 1000);
        break;
      default: break;
    }
  }
  if (sent) line += " Z";
  if (mark.stale) line += " X";
  if (won) line += " W";
  line += "\r\n";
  out.add(line);
  if (value) {
    out.addValue(std::move(h));
    out.add("\r\n");
  }
}

void CommandHandler::metaDebug(const Request& r, ReplySink& out) {
  // "me <key>": one line about the item, without touching it (peek: no LRU
  // bump, no promotion). memcached's fields in its order (la: seconds since
  // the last access, -1 under a policy that keeps no access time; cls as
  // stats slabs numbers classes; size: key and value bytes, where memcached
  // counts its item header too), then tiercache's: the client flags, the
  // value's bytes and the tier holding the item.
  std::string keyBuffer;
  const std::string_view key = cacheKey(r, keyBuffer);
  const std::string_view sentKey = r.keys[0];  // what k returns: the key as the request spelled it
  ReadHandle h = peekKey(cache_, key);
  if (!h) {
    out.add("EN\r\n");
    return;
  }
  std::string line = "ME ";
  line.append(sentKey);
  line += " exp=";
  addSigned(line, ttlLeft(h));
  line += " la=";
  const int64_t idle = h.idleMs();
  addSigned(line, idle < 0 ? -1 : idle / 1000);
  line += " cas=";
  addNumber(line, casOf(h));
  line += h.fetched() ? " fetch=yes cls=" : " fetch=no cls=";
  const ReadHandle::Placement p = h.placement();
  addNumber(line, classNumber(h.tier(), p.pool, p.classId));
  line += " size=";
  addNumber(line, h.key().size() + h.value().size());
  line += " flags=";
  addNumber(line, flagsOf(h));
  line += " value=";
  addNumber(line, h.value().size());
  line += " tier=";
  addNumber(line, h.tier());
  line += "\r\n";
  out.add(line);
}

void CommandHandler::metaDelete(const Request& r, ReplySink& out, WorkerCounters& c) {
  const MetaFlags& m = r.meta;
  std::string keyBuffer;
  const std::string_view key = cacheKey(r, keyBuffer);
  const std::string_view sentKey = r.keys[0];  // what k returns: the key as the request spelled it
  const char* code = "HD";
  if (m.has('I')) {
    // Invalidate rather than delete: the item stays, marked stale, with a
    // new CAS token (and the T TTL when given); the next reader wins the
    // recache (see metaGet).
    code = "NF";
    for (int i = 0; i < kCasRetries; ++i) {
      ReadHandle h = peekKey(cache_, key);
      if (!h) break;
      if (m.has('C') && casOf(h) != m.compareCas) {
        code = "EX";
        break;
      }
      const std::string copy(h.value());
      const uint64_t token = casOf(h);
      h.reset();
      const Stored done = fromCas(cache_.updateValue(key, token, copy));  // a new token, same value
      if (done == Stored::kExists && !m.has('C')) continue;               // rewritten meanwhile: again
      if (done != Stored::kStored) {
        code = done == Stored::kExists ? "EX" : "NF";
        break;
      }
      if (m.has('T')) {
        auto ttl = ttlFromExptime(m.ttl, nowUnix());
        if (ttl) touchKey(cache_, key, *ttl);
      }
      ReadHandle now = peekKey(cache_, key);
      if (now) leases_.set(key, casOf(now), LeaseMarks::Mark{.tokenSent = false, .stale = true});
      code = "HD";
      break;
    }
  } else if (m.has('C')) {
    ReadHandle h = peekKey(cache_, key);
    if (!h) code = "NF";
    else if (casOf(h) != m.compareCas) code = "EX";
    else {
      h.reset();
      // A concurrent writer between the check and the remove is indistinguishable
      // from one just after it.
      code = cache_.remove(key) ? "HD" : "NF";
    }
  } else {
    code = cache_.remove(key) ? "HD" : "NF";
  }
  c.add(code[0] == 'H' ? c.delete_hits : c.delete_misses);
  if (m.has('q') && code[0] == 'H') return;  // q hides HD only, as memcached
  std::string line = code;
  for (uint8_t i = 0; i < m.orderCount; ++i) {
    if (m.order[i] == 'O') line += " O", line.append(m.opaque);
    if (m.order[i] == 'k') line += " k", line.append(sentKey);
  }
  line += "\r\n";
  out.add(line);
}

void CommandHandler::metaArithmetic(const Request& r, ReplySink& out, WorkerCounters& c) {
  const MetaFlags& m = r.meta;
  std::string keyBuffer;
  const std::string_view key = cacheKey(r, keyBuffer);
  const std::string_view sentKey = r.keys[0];  // what k returns: the key as the request spelled it
  const bool incr = !(m.mode == 'D' || m.mode == 'd' || m.mode == '-');
  uint64_t v = 0, cas = 0;
  int64_t ttl = -1;
  std::optional<uint64_t> casIn;
  if (m.has('C')) casIn = m.compareCas;
  Delta d = applyDelta(cache_, key, incr, m.delta, casIn, v, cas, ttl);
  if (d == Delta::kNotFound && m.has('N')) {
    // Auto-create with the initial value and the N TTL.
    auto create = ttlFromExptime(m.vivifyTtl, nowUnix());
    char buf[24];
    auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), m.initial);
    if (create && cache_.add(key, std::string_view(buf, p - buf), *create)) {
      v = m.initial;
      ReadHandle h = peekKey(cache_, key);
      cas = h ? casOf(h) : 0;
      ttl = h ? ttlLeft(h) : -1;
      d = Delta::kOk;
    } else if (create) {
      d = applyDelta(cache_, key, incr, m.delta, casIn, v, cas, ttl);  // lost the race: apply to the winner's
    } else {
      d = Delta::kFailed;
    }
  }
  if (d == Delta::kOk && m.has('T')) {
    auto t = ttlFromExptime(m.ttl, nowUnix());
    if (t) touchKey(cache_, key, *t), ttl = t->count() == 0 ? -1 : t->count();
  }
  c.add(d == Delta::kOk ? (incr ? c.incr_hits : c.decr_hits) : (incr ? c.incr_misses : c.decr_misses));
  std::string line;
  switch (d) {
    case Delta::kNonNumeric: out.add("CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"); return;
    case Delta::kNotFound: line = "NF"; break;
    case Delta::kExists: line = "EX"; break;
    case Delta::kFailed: line = "NS"; break;
    case Delta::kOk:
      if (m.has('q')) return;  // q hides success, value or not, as memcached
      if (m.has('v')) {
        std::string num;
        addNumber(num, v);
        line = "VA ";
        addNumber(line, num.size());
        v = 0;
        for (uint8_t i = 0; i < m.orderCount; ++i) {
          switch (m.order[i]) {
            case 'O': line += " O"; line.append(m.opaque); break;
            case 'k':
              line += " k";
              line.append(sentKey);
              break;
            case 'c': line += " c"; addNumber(line, cas); break;
            case 't': line += " t"; addSigned(line, ttl); break;
            default: break;
          }
        }
        line += "\r\n" + num + "\r\n";
        out.add(line);
        return;
      }
      line = "HD";
      break;
  }
  for (uint8_t i = 0; i < m.orderCount; ++i) {
    switch (m.order[i]) {
      case 'O': line += " O"; line.append(m.opaque); break;
      case 'k':
        line += " k";
        line.append(sentKey);
        break;
      case 'c': if (d == Delta::kOk) line += " c", addNumber(line, cas); break;
      case 't': if (d == Delta::kOk) line += " t", addSigned(line, ttl); break;
      default: break;
    }
  }
  line += "\r\n";
  out.add(line);
}

// cache_memlimit: memcached's memory limit is tier 0's (DRAM) limit; the
// tiers below keep their size and take what tier 0 gives up.
void CommandHandler::memlimit(const Request& r, ReplySink& out) {
  if (r.memlimitMb < 8) {
    reply(out, r, "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m");
    return;
  }
  if (r.memlimitMb > 1'000'000'000) {
    reply(out, r, "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes");
    return;
  }
  try {
    cache_.resizeTier(0, r.memlimitMb << 20);
  } catch (const std::invalid_argument& e) {
    reply(out, r, std::string("MEMLIMIT_ADJUST_FAILED ") + e.what());
    return;
  }
  reply(out, r, "OK");
}

}  // namespace tiercache::server
