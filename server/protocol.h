// The memcached text protocol, parsing only: one request line in, one
// Request (or the exact error line memcached would send) out. No I/O, no
// cache, no allocation beyond the Request's key list, so that the libFuzzer
// target (fuzz/protocol_fuzzer.cc) can drive it with arbitrary bytes.
//
// Contract of parseLine():
//  - `line` is one request line without its "\n" (a trailing "\r" is
//    stripped here). Tokens are separated by runs of spaces, as memcached
//    splits them.
//  - Every string_view in the Request points into `line`; the caller keeps
//    the line alive while it uses the Request.
//  - On kOk the Request is complete; storage commands (set ... cas, ms)
//    then expect `valueBytes` bytes plus "\r\n" after the line.
//  - On kError, `error` is the reply line (without "\r\n") and `swallow`
//    says how many bytes after the line belong to the failed request (the
//    value of a storage command whose line was bad but whose length was
//    readable, plus its "\r\n"); the connection discards them unread.
//  - Keys are 1..kMaxKeyLength bytes. As memcached: any byte but space
//    (the separator) and NUL (memcached's line ends there), so a key may
//    hold other control bytes; ParseOptions::strictKeys also refuses
//    control bytes (0x00-0x20, 0x7f).
//  - Token counts as memcached checks them: a command with the wrong number
//    of tokens is "ERROR"; version, quit and mn ignore extra tokens.
//  - noreply as memcached: a classic command whose last token is "noreply"
//    gets no reply at all, errors included (ParseResult::silent), once its
//    token count was right; meta commands always report errors.
//  - An unknown command whose last token starts with "HTTP/" (a web client
//    on the wrong port) gets no reply and the connection is closed
//    (ParseResult::close), as memcached hangs up on it.
//  - Bounded work: linear in the line's length.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tiercache::server {

inline constexpr size_t kMaxKeyLength = 250;  // memcached's KEY_MAX_LENGTH
// A request line longer than this (without its newline) is refused and the
// connection closed, as memcached closes on a line it cannot hold.
inline constexpr size_t kMaxLineLength = 64 * 1024;
// A retrieval line (get/gets/gat/gats) may list keys up to this length:
// memcached takes key lists of any length (its tests send 187 KB), and this
// bound keeps the line buffer of one connection bounded all the same.
inline constexpr size_t kMaxGetLineLength = 2 * 1024 * 1024;
// The bound for a line that starts with `start` (its first bytes, as many
// as have arrived).
inline size_t maxLineLength(std::string_view start) {
  return start.starts_with("get") || start.starts_with("gat") ? kMaxGetLineLength : kMaxLineLength;
}

// One row per family reads better than one name a line.
// clang-format off
enum class Command : uint8_t {
  kGet, kGets, kGat, kGats,
  kSet, kAdd, kReplace, kAppend, kPrepend, kCas,
  kDelete, kIncr, kDecr, kTouch,
  kFlushAll, kVersion, kVerbosity, kQuit, kStats,
  kMetaGet, kMetaSet, kMetaDelete, kMetaArithmetic, kMetaNoop,
  kCacheMemlimit, kSlabsAutomove, kDebugTime, kMetaDebug, kLruCrawler,
};
// clang-format on

// The meta commands (counted as such in cmd_meta).
constexpr bool isMeta(Command c) {
  return (c >= Command::kMetaGet && c <= Command::kMetaNoop) || c == Command::kMetaDebug;
}

// Storage commands carry a value after the line.
constexpr bool isStorage(Command c) {
  return (c >= Command::kSet && c <= Command::kCas) || c == Command::kMetaSet;
}

// Meta command flags: single letters, some with a token ("T30", "Oabc").
struct MetaFlags {
  uint64_t seen = 0;  // bit (letter - 'A') for every flag letter given
  std::string_view opaque;            // O
  int64_t ttl = 0;                    // T (ms, mg, ma, md)
  int64_t vivifyTtl = 0;              // N (ma, mg)
  int64_t recacheTtl = 0;             // R (mg): win the recache when less TTL is left
  uint32_t clientFlags = 0;           // F (ms)
  uint64_t compareCas = 0;            // C
  uint64_t delta = 1;                 // D (ma)
  uint64_t initial = 0;               // J (ma)
  char mode = 0;                      // M: ms E/A/P/R/S, ma I/+/D/-
  // Return flags (letters without a token: v, k, c, f, t, s, and O) in the
  // order given, so that the reply lists them in the same order.
  char order[24] = {};
  uint8_t orderCount = 0;

  bool has(char letter) const {
    return letter >= 'A' && letter <= 'z' && (seen >> (letter - 'A')) & 1;
  }
};

struct Request {
  Command command = Command::kVersion;
  std::vector<std::string_view> keys;  // get/gets/gat/gats: all; others: one
  uint32_t clientFlags = 0;  // storage
  int64_t exptime = 0;       // storage, touch, gat, flush_all delay, debugtime shift
  uint64_t valueBytes = 0;   // storage: bytes of the value that follow
  uint64_t cas = 0;          // cas
  uint64_t delta = 0;        // incr/decr
  uint32_t verbosity = 0;
  uint32_t automove = 0;    // slabs automove
  uint64_t memlimitMb = 0;  // cache_memlimit
  bool noreply = false;
  std::string_view statsArgs;  // "stats <args>": "", "slabs", "items", "tiers", ...
  // lru_crawler: the subcommand (metadump, mgdump, crawl, tocrawl, sleep,
  // enable, disable) and its argument ("all", "hash", class ids "1,3", or
  // a number).
  std::string_view subcommand;
  std::string_view subArgument;
  MetaFlags meta;
};

struct ParseResult {
  enum Status : uint8_t { kOk, kError } status = kOk;
  std::string_view error;  // kError: the reply line
  uint64_t swallow = 0;    // kError: bytes after the line to discard
  bool silent = false;     // kError: a noreply request; the error is not sent
  bool close = false;      // kError: hang up after sending the error (if any)
};

struct ParseOptions {
  bool strictKeys = false;  // refuse control bytes in keys (server.strict_keys)
};

ParseResult parseLine(std::string_view line, Request& out, ParseOptions options = {});

// memcached's binary protocol: a request starts with kBinaryRequestMagic
// and a 24-byte header whose body length (extras + key + value) says where
// the next request starts. binary_commands.h carries the requests out; with
// server.binary_protocol off (-B ascii) each is answered "not supported"
// and its body discarded, so a binary client fails at once and stays in
// step. Nothing an ASCII client sends starts with this byte.
inline constexpr unsigned char kBinaryRequestMagic = 0x80;
inline constexpr unsigned char kBinaryResponseMagic = 0x81;
inline constexpr size_t kBinaryHeaderBytes = 24;
inline constexpr uint16_t kBinaryStatusNotSupported = 0x83;
struct BinaryRequestHeader {
  uint8_t opcode = 0;
  uint8_t extrasBytes = 0;
  uint16_t keyBytes = 0;
  uint32_t bodyBytes = 0;  // extras + key + value: what follows the header
  uint32_t opaque = 0;     // echoed in the response
  uint64_t cas = 0;
};
// The binary protocol's numbers: `bytes` (at most 8) big-endian bytes at `at`
// of `s` (which holds them), and appended to `out`.
uint64_t readBigEndian(std::string_view s, size_t at, size_t bytes);
void appendBigEndian(std::string& out, uint64_t v, size_t bytes);
// The fields of a whole header (a shorter `header` gives zeroes).
BinaryRequestHeader parseBinaryHeader(std::string_view header);
// Appends one response: the 24-byte header (the request's opcode and
// opaque, `status`, `cas`), then extras, key and value.
void appendBinaryResponse(std::string& out, const BinaryRequestHeader& request, uint16_t status, uint64_t cas,
                          std::string_view extras, std::string_view key, std::string_view value);
// The same without the value, whose `valueBytes` the caller sends after it.
void appendBinaryResponseHead(std::string& out, const BinaryRequestHeader& request, uint16_t status, uint64_t cas,
                              std::string_view extras, std::string_view key, uint64_t valueBytes);
// The response of a server that does not take the binary protocol (-B ascii).
void appendBinaryNotSupported(const BinaryRequestHeader& h, std::string& out);

// lru_crawler metadump / mgdump: a key dump, streamed over several turns
// of the worker (the other requests wait for it, as they wait for a long
// multiget).
inline bool isKeyDump(const Request& r) {
  return r.command == Command::kLruCrawler && (r.subcommand == "metadump" || r.subcommand == "mgdump");
}
// The classes of lru_crawler's argument: "all" or "hash" (every class:
// `classes` left empty, returns true) or class ids "1,3,7" as `stats
// slabs` numbers them (each >= 1). false for anything else.
bool parseCrawlerClasses(std::string_view arg, std::vector<uint32_t>* classes = nullptr);

// Standard base64 (RFC 4648 alphabet, "=" padding required) into `out`;
// false for anything else. Meta commands' `b` flag: the key token is the
// base64 form of a binary key (parseLine checks that it decodes; the
// command handler decodes it).
bool decodeBase64(std::string_view in, std::string& out);
// The inverse, appended to `out` (with "=" padding).
void appendBase64(std::string_view in, std::string& out);

// Number parsing as memcached does it (decimal, whole token, in range).
bool parseU64(std::string_view s, uint64_t& out);
bool parseI64(std::string_view s, int64_t& out);
bool parseU32(std::string_view s, uint32_t& out);

}  // namespace tiercache::server
