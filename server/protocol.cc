// memcached text protocol parser (see protocol.h for the contract).
#include "protocol.h"

#include <array>
#include <limits>

#include "../common/split.h"

namespace tiercache::server {
namespace {

constexpr std::string_view kBadFormat = "CLIENT_ERROR bad command line format";
constexpr size_t kMaxTokens = 24;  // command, key and meta flags: as memcached's token limit

// Splits on runs of spaces; at most `max` tokens, returns false if more.
bool tokenize(std::string_view line, std::vector<std::string_view>& out, size_t max) {
  out.clear();
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i == line.size()) break;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (out.size() == max) return false;
    out.push_back(line.substr(i, j - i));
    i = j;
  }
  return true;
}

bool validKey(const ParseOptions& o, std::string_view k) {
  if (k.empty() || k.size() > kMaxKeyLength) return false;
  for (unsigned char c : k) {
    // memcached ends the line at a NUL; strict mode refuses every control byte.
    if (c == 0 || (o.strictKeys && (c < 0x21 || c == 0x7f))) return false;
  }
  return true;
}

ParseResult error(std::string_view line, uint64_t swallow = 0) {
  return ParseResult{ParseResult::kError, line, swallow};
}

// A command's name and the token counts memcached accepts for it (the
// command included); outside them the reply is "ERROR". `noreply`: the
// command takes a trailing noreply that silences its errors too.
struct CommandName {
  std::string_view name;
  Command command;
  uint8_t minTokens;
  uint8_t maxTokens;  // kAny: no limit
  bool noreply;
};
constexpr uint8_t kAny = 0;

constexpr std::array<CommandName, 29> kCommands = {{
    {"get", Command::kGet, 2, kAny, false},
    {"gets", Command::kGets, 2, kAny, false},
    {"gat", Command::kGat, 2, kAny, false},
    {"gats", Command::kGats, 2, kAny, false},
    {"set", Command::kSet, 5, 6, true},
    {"add", Command::kAdd, 5, 6, true},
    {"replace", Command::kReplace, 5, 6, true},
    {"append", Command::kAppend, 5, 6, true},
    {"prepend", Command::kPrepend, 5, 6, true},
    {"cas", Command::kCas, 6, 7, true},
    {"delete", Command::kDelete, 2, 4, true},
    {"incr", Command::kIncr, 3, 4, true},
    {"decr", Command::kDecr, 3, 4, true},
    {"touch", Command::kTouch, 3, 4, true},
    {"flush_all", Command::kFlushAll, 1, 3, true},
    {"version", Command::kVersion, 1, kAny, false},
    {"verbosity", Command::kVerbosity, 2, 3, true},
    {"quit", Command::kQuit, 1, kAny, false},
    {"stats", Command::kStats, 1, kAny, false},
    {"mg", Command::kMetaGet, 2, kAny, false},
    {"ms", Command::kMetaSet, 2, kAny, false},
    {"md", Command::kMetaDelete, 2, kAny, false},
    {"ma", Command::kMetaArithmetic, 2, kAny, false},
    {"mn", Command::kMetaNoop, 1, kAny, false},
    {"cache_memlimit", Command::kCacheMemlimit, 2, 3, true},
    {"slabs", Command::kSlabsAutomove, 3, 4, true},
    {"debugtime", Command::kDebugTime, 2, 2, false},
    {"me", Command::kMetaDebug, 2, kAny, false},
    {"lru_crawler", Command::kLruCrawler, 2, 3, false},
}};

// memcached's exptime: any whole number (it is compared, never added to a
// clock here: commands.cc turns it into a TTL without overflow).
bool parseExptime(std::string_view s, int64_t& out) { return parseI64(s, out); }

// "<cmd> <key> <flags> <exptime> <bytes> [cas] [noreply]"
ParseResult parseStorage(const ParseOptions& o, const std::vector<std::string_view>& t, Request& r) {
  const bool isCas = r.command == Command::kCas;
  const size_t fixed = isCas ? 6 : 5;
  // The value length is what tells us how much to discard if the rest is
  // bad, so read it first when it is there.
  int64_t vlen = -1;
  if (t.size() >= 5) {
    int64_t n;
    if (parseI64(t[4], n) && n >= 0 && n <= std::numeric_limits<int32_t>::max() - 2) vlen = n;
  }
  const uint64_t swallow = vlen >= 0 ? static_cast<uint64_t>(vlen) + 2 : 0;
  if (t.size() < fixed || t.size() > fixed + 1) return error(kBadFormat, swallow);
  if (!validKey(o, t[1])) return error(kBadFormat, swallow);
  int64_t exptime;
  if (!parseU32(t[2], r.clientFlags) || !parseExptime(t[3], exptime) || vlen < 0) return error(kBadFormat, swallow);
  if (isCas && !parseU64(t[5], r.cas)) return error(kBadFormat, swallow);
  r.keys.push_back(t[1]);
  r.exptime = exptime;
  r.valueBytes = static_cast<uint64_t>(vlen);
  // memcached treats any last token as noreply only when it reads "noreply".
  r.noreply = t.size() == fixed + 1 && t[fixed] == "noreply";
  return {};
}

bool metaNumber(std::string_view v, uint64_t& out) { return parseU64(v, out); }

// Meta flags from t[first...]. Errors as memcached words them.
ParseResult parseMetaFlags(const std::vector<std::string_view>& t, size_t first, Request& r, uint64_t swallow) {
  MetaFlags& m = r.meta;
  for (size_t i = first; i < t.size(); ++i) {
    const char f = t[i][0];
    const std::string_view v = t[i].substr(1);
    // The flags memcached 1.6 knows, whichever meta command they come with
    // (it ignores those that mean nothing to the command); others are refused.
    constexpr std::string_view kKnown = "bNTRlOPLkstcfvhuqFCMJDI";
    if (kKnown.find(f) == std::string_view::npos) return error("CLIENT_ERROR invalid flag", swallow);
    const uint64_t bit = uint64_t{1} << (f - 'A');
    if (m.seen & bit) return error("CLIENT_ERROR duplicate flag", swallow);
    m.seen |= bit;
    if (m.orderCount < sizeof(m.order)) m.order[m.orderCount++] = f;
    uint64_t n = 0;
    switch (f) {
      case 'O':
        if (v.size() > 32) return error("CLIENT_ERROR opaque token too long", swallow);
        m.opaque = v;
        break;
      case 'T':
      case 'N':
      case 'R': {
        int64_t s;
        if (!parseExptime(v, s)) return error("CLIENT_ERROR bad token in command line format", swallow);
        (f == 'T' ? m.ttl : f == 'N' ? m.vivifyTtl : m.recacheTtl) = s;
        break;
      }
      case 'F': {
        uint32_t fl;
        if (!parseU32(v, fl)) return error("CLIENT_ERROR bad token in command line format", swallow);
        m.clientFlags = fl;
        break;
      }
      case 'C':
        if (!metaNumber(v, n)) return error("CLIENT_ERROR bad token in command line format", swallow);
        m.compareCas = n;
        break;
      case 'D':
        if (!metaNumber(v, n)) return error("CLIENT_ERROR invalid numeric delta value", swallow);
        m.delta = n;
        break;
      case 'J':
        if (!metaNumber(v, n)) return error("CLIENT_ERROR invalid numeric initial value", swallow);
        m.initial = n;
        break;
      case 'M':
        if (v.size() != 1) return error("CLIENT_ERROR bad token in command line format", swallow);
        m.mode = v[0];
        break;
      case 'b': {
        // The key token is base64: it must decode to a key (1..250 bytes of anything).
        std::string key;
        if (!decodeBase64(r.keys[0], key) || key.empty()) return error("CLIENT_ERROR error decoding key", swallow);
        break;
      }
      default:
        break;  // flags without a token (v, k, c, f, t, s, q, ...) or ignored ones
    }
  }
  return {};
}

}  // namespace

bool parseCrawlerClasses(std::string_view arg, std::vector<uint32_t>* classes) {
  if (arg == "all" || arg == "hash") return true;
  for (std::string_view field : splitAt(arg, ',')) {
    uint32_t id = 0;
    if (!parseU32(field, id) || id == 0) return false;
    if (classes) classes->push_back(id);
  }
  return true;
}

uint64_t readBigEndian(std::string_view s, size_t at, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v = v << 8 | static_cast<unsigned char>(s[at + i]);
  return v;
}

void appendBigEndian(std::string& out, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out += static_cast<char>(v >> (8 * (bytes - 1 - i)));
}

BinaryRequestHeader parseBinaryHeader(std::string_view header) {
  BinaryRequestHeader h;
  if (header.size() < kBinaryHeaderBytes) return h;  // not a whole header: nothing to read
  h.opcode = static_cast<uint8_t>(readBigEndian(header, 1, 1));
  h.keyBytes = static_cast<uint16_t>(readBigEndian(header, 2, 2));
  h.extrasBytes = static_cast<uint8_t>(readBigEndian(header, 4, 1));
  h.bodyBytes = static_cast<uint32_t>(readBigEndian(header, 8, 4));
  h.opaque = static_cast<uint32_t>(readBigEndian(header, 12, 4));
  h.cas = readBigEndian(header, 16, 8);
  return h;
}

void appendBinaryResponse(std::string& out, const BinaryRequestHeader& request, uint16_t status, uint64_t cas,
                          std::string_view extras, std::string_view key, std::string_view value) {
  appendBinaryResponseHead(out, request, status, cas, extras, key, value.size());
  out.append(value);
}

void appendBinaryResponseHead(std::string& out, const BinaryRequestHeader& request, uint16_t status, uint64_t cas,
                              std::string_view extras, std::string_view key, uint64_t valueBytes) {
  appendBigEndian(out, kBinaryResponseMagic, 1);
  appendBigEndian(out, request.opcode, 1);
  appendBigEndian(out, key.size(), 2);
  appendBigEndian(out, extras.size(), 1);
  appendBigEndian(out, 0, 1);  // data type: raw bytes
  appendBigEndian(out, status, 2);
  appendBigEndian(out, extras.size() + key.size() + valueBytes, 4);
  appendBigEndian(out, request.opaque, 4);
  appendBigEndian(out, cas, 8);
  out.append(extras).append(key);
}

void appendBinaryNotSupported(const BinaryRequestHeader& h, std::string& out) {
  appendBinaryResponse(out, h, kBinaryStatusNotSupported, 0, {}, {},
                       "binary protocol turned off here (-B ascii): use the ASCII or meta protocol");
}

void appendBase64(std::string_view in, std::string& out) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(in[k])); };
  for (; i + 3 <= in.size(); i += 3) {
    const uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(v >> shift) & 63];
  }
  if (const size_t left = in.size() - i; left > 0) {
    const uint32_t v = byte(i) << 16 | (left == 2 ? byte(i + 1) << 8 : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += left == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
}

bool decodeBase64(std::string_view in, std::string& out) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  out.clear();
  if (in.size() % 4 != 0) return false;
  for (size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    // "=" only at the end: "xx==" (one byte) or "xxx=" (two).
    const int pad = last ? (in[i + 3] == '=') + (in[i + 2] == '=' && in[i + 3] == '=') : 0;
    uint32_t bits = 0;
    for (int j = 0; j < 4; ++j) {
      const int v = j >= 4 - pad ? 0 : value(in[i + j]);
      if (v < 0) return false;
      bits = bits << 6 | static_cast<uint32_t>(v);
    }
    out.push_back(static_cast<char>(bits >> 16));
    if (pad < 2) out.push_back(static_cast<char>(bits >> 8 & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(bits & 0xff));
  }
  return true;
}

bool parseU64(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  out = v;
  return true;
}

bool parseI64(std::string_view s, int64_t& out) {
  const bool neg = !s.empty() && s[0] == '-';
  uint64_t u;
  if (!parseU64(neg ? s.substr(1) : s, u)) return false;
  if (neg) {
    if (u > uint64_t{1} << 63) return false;
    out = u == uint64_t{1} << 63 ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(u);
  } else {
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    out = static_cast<int64_t>(u);
  }
  return true;
}

bool parseU32(std::string_view s, uint32_t& out) {
  uint64_t u;
  if (!parseU64(s, u) || u > std::numeric_limits<uint32_t>::max()) return false;
  out = static_cast<uint32_t>(u);
  return true;
}

namespace {
ParseResult parseCommand(const ParseOptions& o, std::string_view line, const std::vector<std::string_view>& t,
                         Request& r);
constexpr size_t kKeepTokens = 1024;  // token and key buffers up to this many are kept for the next line
}  // namespace

ParseResult parseLine(std::string_view line, Request& r, ParseOptions options) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // Both vectors keep their buffers from one request to the next: an
  // allocation and a free per request cost as much as the parsing. One
  // huge multiget's buffers are not kept.
  std::vector<std::string_view> keys = std::move(r.keys);
  keys.clear();
  if (keys.capacity() > kKeepTokens) keys = {};
  r = Request{};
  r.keys = std::move(keys);
  thread_local std::vector<std::string_view> t;
  t.clear();
  if (t.capacity() > kKeepTokens) t = {};
  // get/gets/gat/gats take any number of keys; everything else is short.
  const bool multiKey = line.starts_with("get") || line.starts_with("gat");
  if (!tokenize(line, t, multiKey ? kMaxGetLineLength : kMaxTokens)) {
    return error(line.starts_with("m") ? "CLIENT_ERROR options flags are too long" : "ERROR");
  }
  if (t.empty()) return error("ERROR");
  const CommandName* known = nullptr;
  for (const CommandName& c : kCommands) {
    if (t[0] == c.name) {
      known = &c;
      break;
    }
  }
  if (known == nullptr) {
    if (t.back().starts_with("HTTP/")) {
      ParseResult p = error("");
      p.silent = true;
      p.close = true;
      return p;
    }
    return error("ERROR");
  }
  r.command = known->command;
  if (t.size() < known->minTokens || (known->maxTokens != kAny && t.size() > known->maxTokens)) {
    // As memcached: nothing of the line is trusted, not even a value length,
    // so a storage line's value is read as the next command (memcached's
    // t/cas.t expects its "ERROR").
    return error("ERROR");
  }
  ParseResult p = parseCommand(options, line, t, r);
  if (p.status == ParseResult::kError && known->noreply && t.back() == "noreply") {
    // memcached: noreply silences everything the command would answer.
    p.silent = true;
    r.noreply = true;
  }
  return p;
}

namespace {

ParseResult parseCommand(const ParseOptions& o, std::string_view line, const std::vector<std::string_view>& t,
                         Request& r) {
  switch (r.command) {
    case Command::kGet:
    case Command::kGets: {
      if (t.size() < 2) return error("ERROR");
      for (size_t i = 1; i < t.size(); ++i) {
        if (!validKey(o, t[i])) return error(kBadFormat);
        r.keys.push_back(t[i]);
      }
      return {};
    }
    case Command::kGat:
    case Command::kGats: {
      if (t.size() < 3) return error("ERROR");
      int64_t e;
      if (!parseExptime(t[1], e)) return error("CLIENT_ERROR invalid exptime argument");
      r.exptime = e;
      for (size_t i = 2; i < t.size(); ++i) {
        if (!validKey(o, t[i])) return error(kBadFormat);
        r.keys.push_back(t[i]);
      }
      return {};
    }
    case Command::kSet:
    case Command::kAdd:
    case Command::kReplace:
    case Command::kAppend:
    case Command::kPrepend:
    case Command::kCas: return parseStorage(o, t, r);
    case Command::kDelete: {
      // "delete <key> [0] [noreply]": the old time argument is accepted only as 0.
      if (t.size() < 2 || t.size() > 4) return error("ERROR");
      if (!validKey(o, t[1])) return error(kBadFormat);
      r.keys.push_back(t[1]);
      size_t i = 2;
      if (i < t.size() && t[i] == "0") ++i;
      if (i < t.size() && t[i] == "noreply") r.noreply = true, ++i;
      if (i != t.size()) return error("CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]");
      return {};
    }
    case Command::kIncr:
    case Command::kDecr: {
      if (t.size() < 3 || t.size() > 4) return error("ERROR");
      if (!validKey(o, t[1])) return error(kBadFormat);
      r.keys.push_back(t[1]);
      if (!parseU64(t[2], r.delta)) return error("CLIENT_ERROR invalid numeric delta argument");
      r.noreply = t.size() == 4 && t[3] == "noreply";
      return {};
    }
    case Command::kTouch: {
      if (t.size() < 3 || t.size() > 4) return error("ERROR");
      if (!validKey(o, t[1])) return error(kBadFormat);
      r.keys.push_back(t[1]);
      int64_t e;
      if (!parseExptime(t[2], e)) return error("CLIENT_ERROR invalid exptime argument");
      r.exptime = e;
      r.noreply = t.size() == 4 && t[3] == "noreply";
      return {};
    }
    case Command::kFlushAll: {
      if (t.size() > 3) return error("ERROR");
      size_t i = 1;
      if (i < t.size() && t[i] != "noreply") {
        int64_t e;
        if (!parseExptime(t[i], e)) return error("CLIENT_ERROR invalid exptime argument");
        r.exptime = e;
        ++i;
      }
      if (i < t.size()) {
        if (t[i] != "noreply") return error("ERROR");
        r.noreply = true;
        ++i;
      }
      if (i != t.size()) return error("ERROR");
      return {};
    }
    case Command::kVersion:
    case Command::kQuit:
    case Command::kMetaNoop: return {};  // memcached ignores what follows
    case Command::kVerbosity: {
      if (t.size() < 2 || t.size() > 3) return error("ERROR");
      if (!parseU32(t[1], r.verbosity)) return error(kBadFormat);
      r.noreply = t.size() == 3 && t[2] == "noreply";
      return {};
    }
    case Command::kCacheMemlimit: {
      // "cache_memlimit <megabytes> [noreply]"; the bounds are the command's (commands.cc).
      if (t.size() < 2 || t.size() > 3) return error("ERROR");
      if (!parseU64(t[1], r.memlimitMb)) return error("ERROR");
      r.noreply = t.size() == 3 && t[2] == "noreply";
      return {};
    }
    case Command::kSlabsAutomove: {
      // "slabs automove <0|1|2> [noreply]"; memcached's other slabs
      // subcommand (reassign) moves its own slab classes and is "ERROR" here.
      if (t[1] != "automove") return error("ERROR");
      if (!parseU32(t[2], r.automove)) return error(kBadFormat);
      if (r.automove > 2) return error("ERROR");
      r.noreply = t.size() == 4 && t[3] == "noreply";
      return {};
    }
    case Command::kDebugTime:
      // "debugtime <seconds>": how far to move the server's clock ahead.
      if (!parseI64(t[1], r.exptime)) return error("ERROR");
      return {};
    case Command::kStats: {
      // Everything after "stats" as one string: "slabs", "items", "tiers", "reset", ...
      const size_t at = line.find("stats") + 5;
      std::string_view rest = line.substr(at);
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
      r.statsArgs = rest;
      return {};
    }
    case Command::kLruCrawler: {
      // "lru_crawler <metadump|mgdump|crawl> <all|hash|ids>", "lru_crawler
      // <tocrawl|sleep> <n>", "lru_crawler <enable|disable>"; the replies
      // to bad arguments are memcached's.
      r.subcommand = t[1];
      const bool withArgument = t.size() == 3;
      if (t[1] == "metadump" || t[1] == "mgdump" || t[1] == "crawl") {
        if (!withArgument) return error("ERROR");
        if (!parseCrawlerClasses(t[2])) return error("BADCLASS invalid class id");
        r.subArgument = t[2];
        return {};
      }
      if (t[1] == "tocrawl" || t[1] == "sleep") {
        uint32_t n = 0;
        if (!withArgument) return error("ERROR");
        if (!parseU32(t[2], n)) return error(kBadFormat);
        if (t[1] == "sleep" && n > 1000000) return error("CLIENT_ERROR sleep must be one second or less");
        r.subArgument = t[2];
        return {};
      }
      if ((t[1] == "enable" || t[1] == "disable") && !withArgument) return {};
      return error("ERROR");
    }
    case Command::kMetaDebug: {
      // "me <key> [b]": memcached's item debug line.
      if (!validKey(o, t[1])) return error(kBadFormat);
      r.keys.push_back(t[1]);
      if (t.size() > 2) {
        std::string key;
        if (t.size() > 3 || t[2] != "b") return error(kBadFormat);
        if (!decodeBase64(t[1], key) || key.empty()) return error("CLIENT_ERROR error decoding key");
        r.meta.seen |= uint64_t{1} << ('b' - 'A');
      }
      return {};
    }
    case Command::kMetaGet:
    case Command::kMetaDelete:
    case Command::kMetaArithmetic: {
      if (t.size() < 2 || !validKey(o, t[1])) return error(kBadFormat);
      r.keys.push_back(t[1]);
      ParseResult p = parseMetaFlags(t, 2, r, 0);
      if (p.status != ParseResult::kOk) return p;
      const char m = r.meta.mode;
      if (r.command == Command::kMetaArithmetic && r.meta.has('M') && m != 'I' && m != 'i' && m != '+' &&
          m != 'D' && m != 'd' && m != '-')
        return error("CLIENT_ERROR invalid mode for ma M token");
      return {};
    }
    case Command::kMetaSet: {
      // "ms <key> <datalen> <flags>*"
      int64_t vlen = -1;
      if (t.size() >= 3) {
        int64_t n;
        if (parseI64(t[2], n) && n >= 0 && n <= std::numeric_limits<int32_t>::max() - 2) vlen = n;
      }
      const uint64_t swallow = vlen >= 0 ? static_cast<uint64_t>(vlen) + 2 : 0;
      if (t.size() < 3 || !validKey(o, t[1]) || vlen < 0) return error(kBadFormat, swallow);
      r.keys.push_back(t[1]);
      r.valueBytes = static_cast<uint64_t>(vlen);
      ParseResult p = parseMetaFlags(t, 3, r, swallow);
      if (p.status != ParseResult::kOk) return p;
      const char m = r.meta.mode;
      if (r.meta.has('M') && m != 'E' && m != 'A' && m != 'P' && m != 'R' && m != 'S' && m != 'e' && m != 'a' &&
          m != 'p' && m != 'r' && m != 's')
        return error("CLIENT_ERROR invalid mode for ms M token", swallow);
      return {};
    }
  }
  return error("ERROR");
}

}  // namespace

}  // namespace tiercache::server
