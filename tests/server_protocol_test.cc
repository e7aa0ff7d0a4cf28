// The memcached protocol parser and the "server" config rows of
// tiercache-server, without sockets (the socket-level tests with real
// clients are tests/server/test_protocol.py).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "allocator/cache_config.h"
#include "server/commands.h"
#include "server/meta_leases.h"
#include "server/protocol.h"
#include "server/server_config.h"

namespace tiercache::server {
namespace {

// The Request points into the line: keep the last one alive until the next parse.
ParseResult parse(const std::string& line, Request& r) {
  static std::string kept;
  kept = line;
  return parseLine(kept, r);
}

TEST(ServerProtocol, StorageLine) {
  Request r;
  ASSERT_EQ(parse("set key 42 100 5 noreply\r", r).status, ParseResult::kOk);
  EXPECT_EQ(r.command, Command::kSet);
  ASSERT_EQ(r.keys.size(), 1u);
  EXPECT_EQ(r.keys[0], "key");
  EXPECT_EQ(r.clientFlags, 42u);
  EXPECT_EQ(r.exptime, 100);
  EXPECT_EQ(r.valueBytes, 5u);
  EXPECT_TRUE(r.noreply);
  ASSERT_EQ(parse("cas  k  0 -1 3   99", r).status, ParseResult::kOk);
  EXPECT_EQ(r.cas, 99u);
  EXPECT_EQ(r.exptime, -1);
  EXPECT_FALSE(r.noreply);
}

TEST(ServerProtocol, BadStorageLineSwallowsTheValueWhenItsLengthIsReadable) {
  Request r;
  ParseResult p = parse("set " + std::string(251, 'k') + " 0 0 10", r);
  EXPECT_EQ(p.status, ParseResult::kError);
  EXPECT_EQ(p.error, "CLIENT_ERROR bad command line format");
  EXPECT_EQ(p.swallow, 12u);
  p = parse("set k 0 0 -1", r);
  EXPECT_EQ(p.error, "CLIENT_ERROR bad command line format");
  EXPECT_EQ(p.swallow, 0u);
  p = parse("set k 4294967296 0 1", r);  // flags beyond 32 bits
  EXPECT_EQ(p.status, ParseResult::kError);
  EXPECT_EQ(p.swallow, 3u);
}

TEST(ServerProtocol, MultiGetAndErrors) {
  Request r;
  ASSERT_EQ(parse("gets a b c", r).status, ParseResult::kOk);
  EXPECT_EQ(r.keys.size(), 3u);
  EXPECT_EQ(parse("get", r).error, "ERROR");
  EXPECT_EQ(parse("", r).error, "ERROR");
  EXPECT_EQ(parse("frobnicate x", r).error, "ERROR");
  EXPECT_EQ(parse(std::string("get a\0b", 7), r).error, "CLIENT_ERROR bad command line format");
  EXPECT_EQ(parse("gat x k", r).error, "CLIENT_ERROR invalid exptime argument");
  EXPECT_EQ(parse("incr k -1", r).error, "CLIENT_ERROR invalid numeric delta argument");
  EXPECT_EQ(parse("incr k 18446744073709551616", r).error, "CLIENT_ERROR invalid numeric delta argument");
  ASSERT_EQ(parse("incr k 18446744073709551615", r).status, ParseResult::kOk);
  EXPECT_EQ(r.delta, UINT64_MAX);
}

// memcached's t/malicious-commands.t: a web request on the memcached port
// is hung up on without a reply; any other unknown command is "ERROR".
TEST(ServerProtocol, HttpRequestLineClosesWithoutReply) {
  Request r;
  for (const char* line : {"GET / HTTP/1.0", "PUT /asdf/asd HTTP/1.1", "DELETE HTTP/1.1"}) {
    ParseResult p = parse(line, r);
    EXPECT_EQ(p.status, ParseResult::kError) << line;
    EXPECT_TRUE(p.close) << line;
    EXPECT_TRUE(p.silent) << line;
  }
  ParseResult p = parse("frobnicate HTTP", r);
  EXPECT_EQ(p.error, "ERROR");
  EXPECT_FALSE(p.close);
}

// memcached's t/strtol-testing.t: a bad number is a CLIENT_ERROR, not ERROR.
TEST(ServerProtocol, SlabsAutomoveTakesLevelsZeroToTwo) {
  Request r;
  EXPECT_EQ(parse("slabs automove invalid", r).error, "CLIENT_ERROR bad command line format");
  EXPECT_EQ(parse("verbosity invalid", r).error, "CLIENT_ERROR bad command line format");
  EXPECT_EQ(parse("slabs automove 3", r).error, "ERROR");
  EXPECT_EQ(parse("slabs reassign 1 2", r).error, "ERROR");
  EXPECT_EQ(parse("slabs automove", r).error, "ERROR");
  ASSERT_EQ(parse("slabs automove 2 noreply", r).status, ParseResult::kOk);
  EXPECT_EQ(r.command, Command::kSlabsAutomove);
  EXPECT_EQ(r.automove, 2u);
  EXPECT_TRUE(r.noreply);
}

TEST(ServerProtocol, KeysTakeControlBytesUnlessStrict) {
  // memcaslap's keys hold control bytes; memcached stores them. Only space
  // (the separator) and NUL (memcached's line ends there) are refused.
  Request r;
  // ("\x01" and "\x7f" end before the 'b': a hex escape takes every hex digit.)
  const std::string keys[] = {std::string("a\x01") + "b", "a\tb", "a\rb", std::string("a\x7f") + "b",
                              "\x1f\x7f\x80\xff"};
  for (const std::string& k : keys) {
    ASSERT_EQ(parse("set " + k + " 0 0 1", r).status, ParseResult::kOk) << k;
    EXPECT_EQ(r.keys[0], k);
    ASSERT_EQ(parse("get x " + k, r).status, ParseResult::kOk) << k;
    EXPECT_EQ(r.keys[1], k);
  }
  EXPECT_EQ(parse(std::string("get a\0b", 7), r).error, "CLIENT_ERROR bad command line format");
  // server.strict_keys keeps the stricter rule.
  const ParseOptions strict{.strictKeys = true};
  std::string line = "set a\tb 0 0 1";
  ParseResult p = parseLine(line, r, strict);
  EXPECT_EQ(p.error, "CLIENT_ERROR bad command line format");
  EXPECT_EQ(p.swallow, 3u);
  line = "get a\x7f";
  EXPECT_EQ(parseLine(line, r, strict).error, "CLIENT_ERROR bad command line format");
  line = "get ab\xff";
  EXPECT_EQ(parseLine(line, r, strict).status, ParseResult::kOk);
}

TEST(ServerProtocol, NoreplySilencesErrorsOnceTheTokenCountIsRight) {
  // memcached sends nothing at all for a noreply request (its errors too),
  // so a client that sent noreply never reads a reply it did not ask for.
  Request r;
  for (const char* line : {"incr k abc noreply", "touch k x noreply", "flush_all x noreply", "delete k 5 noreply",
                           "verbosity x noreply", "set k x 0 1 noreply", "cas k 0 0 1 x noreply"}) {
    ParseResult p = parse(line, r);
    EXPECT_EQ(p.status, ParseResult::kError) << line;
    EXPECT_TRUE(p.silent) << line;
  }
  EXPECT_EQ(parse("set k x 0 1 noreply", r).swallow, 3u) << "the value is still discarded";
  EXPECT_FALSE(parse("incr k abc", r).silent);
  // A wrong token count is "ERROR", sent: memcached has not looked for noreply yet.
  ParseResult p = parse("set k 0 0 1 2 noreply", r);
  EXPECT_EQ(p.error, "ERROR");
  EXPECT_FALSE(p.silent);
  EXPECT_EQ(p.swallow, 0u) << "memcached reads its value as the next command";
  EXPECT_EQ(parse("incr k 1 2 noreply", r).error, "ERROR");
  EXPECT_EQ(parse("verbosity", r).error, "ERROR");
  EXPECT_EQ(parse("touch k", r).error, "ERROR");
  // Commands that take no noreply ignore what follows, as memcached does:
  // "version noreply" is answered.
  for (const char* line : {"version noreply", "quit now", "mn noreply", "version 1 2 3"}) {
    EXPECT_EQ(parse(line, r).status, ParseResult::kOk) << line;
    EXPECT_FALSE(r.noreply) << line;
  }
  // Meta commands report their errors always.
  EXPECT_FALSE(parse("mg k v v", r).silent);
}

TEST(ServerProtocol, HugeExptimesParseAndDoNotExpire) {
  Request r;
  ASSERT_EQ(parse("set k 0 99999999999 1", r).status, ParseResult::kOk);
  EXPECT_EQ(r.exptime, 99'999'999'999);
  ASSERT_EQ(parse("touch k 9223372036854775807", r).status, ParseResult::kOk);
  const int64_t now = 1'800'000'000;
  const auto ttl = ttlFromExptime(r.exptime, now);
  ASSERT_TRUE(ttl.has_value()) << "an absolute time far ahead is not expired";
  EXPECT_GT(ttl->count(), 0);
  ASSERT_EQ(parse("gat -9223372036854775808 k", r).status, ParseResult::kOk);
  EXPECT_EQ(ttlFromExptime(r.exptime, now), std::nullopt);
  ASSERT_EQ(parse("mg k T99999999999", r).status, ParseResult::kOk);
  EXPECT_EQ(r.meta.ttl, 99'999'999'999);
}

TEST(ServerProtocol, MetaFlagsKeepTheirOrder) {
  Request r;
  ASSERT_EQ(parse("mg key v Oxyz k T30 c", r).status, ParseResult::kOk);
  EXPECT_EQ(r.command, Command::kMetaGet);
  EXPECT_TRUE(r.meta.has('v'));
  EXPECT_TRUE(r.meta.has('T'));
  EXPECT_EQ(r.meta.ttl, 30);
  EXPECT_EQ(r.meta.opaque, "xyz");
  EXPECT_EQ(std::string(r.meta.order, r.meta.orderCount), "vOkTc");
  EXPECT_EQ(parse("mg key v v", r).error, "CLIENT_ERROR duplicate flag");
  EXPECT_EQ(parse("mg key 1", r).error, "CLIENT_ERROR invalid flag");
  EXPECT_EQ(parse("mg foo m o o o", r).error, "CLIENT_ERROR invalid flag");  // unknown before duplicate
  EXPECT_EQ(parse("mg key R30 v", r).status, ParseResult::kOk);
  EXPECT_EQ(r.meta.recacheTtl, 30);
  EXPECT_EQ(parse("mg key Rx", r).error, "CLIENT_ERROR bad token in command line format");
  ParseResult p = parse("ms key 3 MZ", r);
  EXPECT_EQ(p.error, "CLIENT_ERROR invalid mode for ms M token");
  EXPECT_EQ(p.swallow, 5u);
  EXPECT_EQ(parse("ma key MX", r).error, "CLIENT_ERROR invalid mode for ma M token");
  EXPECT_EQ(parse("ma key Dx", r).error, "CLIENT_ERROR invalid numeric delta value");
  ASSERT_EQ(parse("ms a2V5 2 b", r).status, ParseResult::kOk);
  EXPECT_TRUE(r.meta.has('b'));
  EXPECT_EQ(r.keys[0], "a2V5");  // decoded by the command handler
  p = parse("ms a2V5= 2 b", r);
  EXPECT_EQ(p.error, "CLIENT_ERROR error decoding key");
  EXPECT_EQ(p.swallow, 4u);
  EXPECT_EQ(parse("mg a*V5 b v", r).error, "CLIENT_ERROR error decoding key");
}

TEST(ServerProtocol, Base64KeysDecode) {
  std::string out;
  ASSERT_TRUE(decodeBase64("44OG44K544OI", out));
  EXPECT_EQ(out, "\xe3\x83\x86\xe3\x82\xb9\xe3\x83\x88");  // "tesuto" in katakana
  ASSERT_TRUE(decodeBase64("a2V5", out));
  EXPECT_EQ(out, "key");
  ASSERT_TRUE(decodeBase64("a2U=", out));
  EXPECT_EQ(out, "ke");
  ASSERT_TRUE(decodeBase64("aw==", out));
  EXPECT_EQ(out, "k");
  ASSERT_TRUE(decodeBase64("AP8gCg==", out));
  EXPECT_EQ(out, std::string("\x00\xff \n", 4));
  EXPECT_FALSE(decodeBase64("a2V", out));   // not a multiple of 4
  EXPECT_FALSE(decodeBase64("a=V5", out));  // padding inside
  EXPECT_FALSE(decodeBase64("a2V5aw=a", out));
  EXPECT_FALSE(decodeBase64("a2-5", out));
}

TEST(ServerProtocol, MetaDebugLine) {
  Request r;
  ASSERT_EQ(parse("me foo", r).status, ParseResult::kOk);
  EXPECT_EQ(r.command, Command::kMetaDebug);
  EXPECT_EQ(r.keys[0], "foo");
  ASSERT_EQ(parse("me a2V5 b", r).status, ParseResult::kOk);
  EXPECT_TRUE(r.meta.has('b'));
  EXPECT_EQ(parse("me", r).error, "ERROR");
  EXPECT_EQ(parse("me foo x", r).error, "CLIENT_ERROR bad command line format");
}

TEST(ServerProtocol, ExptimeFollowsMemcachedRules) {
  const int64_t now = 1'800'000'000;
  EXPECT_EQ(ttlFromExptime(0, now), std::chrono::seconds(0));
  EXPECT_EQ(ttlFromExptime(-1, now), std::nullopt);
  EXPECT_EQ(ttlFromExptime(60, now), std::chrono::seconds(60));
  EXPECT_EQ(ttlFromExptime(30 * 24 * 3600, now), std::chrono::seconds(30 * 24 * 3600));  // still relative
  EXPECT_EQ(ttlFromExptime(now + 100, now), std::chrono::seconds(100));                // absolute
  EXPECT_EQ(ttlFromExptime(now - 1, now), std::nullopt);
}

TEST(ServerProtocol, DebugTimeTakesOneSignedNumber) {
  Request r;
  ASSERT_EQ(parse("debugtime 30", r).status, ParseResult::kOk);
  EXPECT_EQ(r.command, Command::kDebugTime);
  EXPECT_EQ(r.exptime, 30);
  ASSERT_EQ(parse("debugtime -5", r).status, ParseResult::kOk);
  EXPECT_EQ(r.exptime, -5);
  EXPECT_EQ(parse("debugtime x", r).error, "ERROR");
  EXPECT_EQ(parse("debugtime", r).error, "ERROR");
  EXPECT_EQ(parse("debugtime 1 2", r).error, "ERROR");
}

TEST(ServerProtocol, BinaryHeaderAndResponseBytes) {
  // A GETK header: key length 3, extras 4, body 3, opaque 0xdeadbeef, CAS 0x0102030405060708.
  const std::string header(
      "\x80\x0c\x00\x03\x04\x00\x00\x00\x00\x00\x00\x03\xde\xad\xbe\xef"
      "\x01\x02\x03\x04\x05\x06\x07\x08",
      kBinaryHeaderBytes);
  const BinaryRequestHeader h = parseBinaryHeader(header);
  EXPECT_EQ(h.opcode, 0x0c);
  EXPECT_EQ(h.keyBytes, 3u);
  EXPECT_EQ(h.extrasBytes, 4u);
  EXPECT_EQ(h.bodyBytes, 3u);
  EXPECT_EQ(h.opaque, 0xdeadbeefu);
  EXPECT_EQ(h.cas, 0x0102030405060708u);
  std::string out = "before";
  appendBinaryResponse(out, h, 0x0102, 0x1122334455667788u, "EXTR", "key", "value");
  const std::string expected = std::string("before\x81\x0c\x00\x03\x04\x00\x01\x02\x00\x00\x00\x0c", 18) +
                               "\xde\xad\xbe\xef\x11\x22\x33\x44\x55\x66\x77\x88" + "EXTRkeyvalue";
  EXPECT_EQ(out, expected);
  // -B ascii: a "not supported" status and a message saying what to use.
  out.clear();
  appendBinaryNotSupported(h, out);
  const std::string_view message = "binary protocol turned off here (-B ascii): use the ASCII or meta protocol";
  ASSERT_EQ(out.size(), kBinaryHeaderBytes + message.size());
  EXPECT_EQ(out.substr(0, 8), std::string("\x81\x0c\x00\x00\x00\x00\x00\x83", 8));
  EXPECT_EQ(out.substr(kBinaryHeaderBytes), message);
  // A short header reads as zeroes, never past its end.
  const BinaryRequestHeader partial = parseBinaryHeader(header.substr(0, 10));
  EXPECT_EQ(partial.bodyBytes, 0u);
  EXPECT_EQ(partial.opaque, 0u);
}

TEST(ServerLeases, MarksBelongToOneVersionAndStayBounded) {
  LeaseMarks marks;
  EXPECT_TRUE(marks.empty());
  EXPECT_TRUE(marks.claimToken("k", 7));   // the first reader wins
  EXPECT_FALSE(marks.claimToken("k", 7));  // the next one does not
  EXPECT_TRUE(marks.get("k", 7).tokenSent);
  EXPECT_FALSE(marks.get("k", 8).tokenSent);  // a rewrite (new token) voids the mark...
  EXPECT_TRUE(marks.empty());                 // ...which is dropped
  marks.set("s", 3, LeaseMarks::Mark{.tokenSent = false, .stale = true});
  EXPECT_TRUE(marks.get("s", 3).stale);
  EXPECT_TRUE(marks.claimToken("s", 3));
  EXPECT_TRUE(marks.get("s", 3).stale);
  marks.set("s", 3, LeaseMarks::Mark{});
  EXPECT_TRUE(marks.empty());
  // Far more marked items than kept: the newest are there, memory stays bounded.
  const size_t many = LeaseMarks::kShards * LeaseMarks::kPerShard * 3;
  for (size_t i = 0; i < many; ++i) marks.claimToken("key" + std::to_string(i), i);
  EXPECT_TRUE(marks.get("key" + std::to_string(many - 1), many - 1).tokenSent);
  size_t kept = 0;
  for (size_t i = 0; i < many; ++i) kept += marks.get("key" + std::to_string(i), i).tokenSent;
  EXPECT_LE(kept, LeaseMarks::kShards * LeaseMarks::kPerShard);
}

TEST(ServerConfig, DefaultsAndParsedValues) {
  ServerConfig c = ServerConfig::fromJsonString(R"({"tiers": [], "server": {"port": 0, "max_item_size": "2MiB",
                                                  "listen": "::1", "threads": 2, "idle_timeout": 0,
                                                  "flush_all_enabled": false}})");
  EXPECT_EQ(c.port, 0u);
  EXPECT_FALSE(c.flush_all_enabled);
  EXPECT_TRUE(ServerConfig::fromJsonString("{}").flush_all_enabled);
  EXPECT_EQ(c.max_item_size, 2u << 20);
  EXPECT_EQ(c.listen, "::1");
  EXPECT_EQ(c.threads, 2u);
  EXPECT_EQ(ServerConfig::fromJsonString("{}").listen, "127.0.0.1");  // loopback unless asked
  // Idle connections stay open, as memcached keeps them: a client's pooled
  // connection closed under it fails the client's next request.
  EXPECT_EQ(ServerConfig::fromJsonString("{}").idle_timeout, 0u);
  EXPECT_EQ(ServerConfig::fromJsonFile(std::string(TIERCACHE_SOURCE_DIR) + "/configs/server.json").idle_timeout, 0u);
}

TEST(ServerConfig, ErrorsNameTheField) {
  auto error = [](const std::string& json) {
    try {
      ServerConfig::fromJsonString(json);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(R"({"server": {"port": 70000}})"), "server.port: 70000 is out of range [0, 65535]");
  EXPECT_EQ(error(R"({"server": {"threads": 0}})"), "server.threads: 0 is out of range [1, 256]");
  EXPECT_EQ(error(R"({"server": {"listen": "localhost"}})"),
            "server.listen: \"localhost\" is not an IPv4 or IPv6 address");
  EXPECT_EQ(error(R"({"server": {"max_conns": -1}})"), "server.max_conns: -1 is negative; expected an integer >= 0");
  EXPECT_EQ(error(R"({"server": {"max_item_size": "1MB"}})").rfind("server.max_item_size: ", 0), 0u);
  EXPECT_EQ(error(R"({"server": {"prot": 1}})").rfind("server.prot: unknown key", 0), 0u);
  EXPECT_EQ(error(R"({"server": 3})"), "server: expected an object, got number 3");
  EXPECT_EQ(error(R"({"server": {"port": 1, "threads": 2, "port": 2}})"), "server.port: key appears more than once");
  EXPECT_EQ(error(R"({"workload": {"x": 1}, "server": {"x": {"port": 1}, "port": 2}})").rfind("server.x: unknown", 0),
            0u);
}

// docs/server.md carries the table the option rows print.
TEST(ServerConfig, DocumentationContainsTheCurrentTable) {
  std::ifstream in(std::string(TIERCACHE_SOURCE_DIR) + "/docs/server.md");
  std::stringstream doc;
  doc << in.rdbuf();
  EXPECT_NE(doc.str().find(serverOptionsMarkdown()), std::string::npos)
      << "docs/server.md is out of date; its table should read:\n" << serverOptionsMarkdown();
}

TEST(ServerConfig, CacheParserAcceptsTheServerObject) {
  EXPECT_NO_THROW(CacheConfig::fromJsonFile(std::string(TIERCACHE_SOURCE_DIR) + "/configs/server.json"));
  EXPECT_NO_THROW(ServerConfig::fromJsonFile(std::string(TIERCACHE_SOURCE_DIR) + "/configs/server.json"));
}

}  // namespace
}  // namespace tiercache::server
