// libFuzzer target: the memcached text-protocol parser (server/protocol.h).
//
// The input is a byte stream as a client would send it; it is cut into
// lines at '\n' and each line parsed. Beyond "no crash, no UB, no leak"
// (ASan+UBSan), every result is checked against the parser's contract: keys
// are 1..250 bytes without control characters and point into the line; an
// error has a reply line (or, for an HTTP request line, is silent and
// closes the connection) and never asks to swallow more than a value of the
// largest length the protocol allows; a storage command says how many
// value bytes follow. An input that starts with the binary magic is also
// framed as a binary request and its "not supported" response checked.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/protocol.h"

using namespace tiercache::server;

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // Both key rules: the first byte's low bit picks server.strict_keys.
  const ParseOptions options{.strictKeys = size > 0 && (data[0] & 1) != 0};
  if (size >= kBinaryHeaderBytes && data[0] == kBinaryRequestMagic) {
    // A binary request: its response echoes opcode and opaque, and its
    // body length frames the next request.
    const BinaryRequestHeader h = parseBinaryHeader(in);
    std::string reply;
    appendBinaryNotSupported(h, reply);
    check(reply.size() > kBinaryHeaderBytes && static_cast<unsigned char>(reply[0]) == 0x81);
    check(h.opcode == data[1] && static_cast<unsigned char>(reply[1]) == data[1]);
    check(reply.compare(12, 4, in.substr(12, 4)) == 0);
    check(h.bodyBytes == (uint32_t{data[8]} << 24 | uint32_t{data[9]} << 16 | uint32_t{data[10]} << 8 | data[11]));
    check(h.keyBytes == (uint32_t{data[2]} << 8 | data[3]) && h.extrasBytes == data[4]);
    // A response carries its parts whole, its body length their sum.
    const std::string_view rest = in.substr(kBinaryHeaderBytes);
    const std::string_view extras = rest.substr(0, std::min<size_t>(rest.size(), h.extrasBytes));
    const std::string_view key = rest.substr(extras.size(), std::min<size_t>(rest.size() - extras.size(), h.keyBytes));
    reply.clear();
    appendBinaryResponse(reply, h, 0x81, h.cas, extras, key, rest.substr(extras.size() + key.size()));
    check(reply.size() == in.size() && parseBinaryHeader(reply).bodyBytes == rest.size());
    check(parseBinaryHeader(reply).cas == h.cas &&
          reply.compare(kBinaryHeaderBytes, std::string_view::npos, rest) == 0);
  }
  Request r;
  while (!in.empty()) {
    size_t nl = in.find('\n');
    std::string_view line = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    if (line.size() > maxLineLength(line)) continue;  // the connection refuses such lines before parsing
    ParseResult p = parseLine(line, r, options);
    if (p.status == ParseResult::kError) {
      check(!p.error.empty() || (p.silent && p.close));
      check(p.swallow <= uint64_t{INT32_MAX});
      continue;
    }
    for (std::string_view k : r.keys) {
      check(!k.empty() && k.size() <= kMaxKeyLength);
      check(k.data() >= line.data() && k.data() + k.size() <= line.data() + line.size());
      for (unsigned char c : k) check(options.strictKeys ? c > 0x20 && c != 0x7f : c != ' ' && c != 0);
    }
    if (isStorage(r.command)) check(r.keys.size() == 1 && r.valueBytes <= uint64_t{INT32_MAX});
    check(r.meta.orderCount <= sizeof(r.meta.order));
    if (!r.meta.opaque.empty()) check(r.meta.opaque.size() <= 32);
  }
  return 0;
}
