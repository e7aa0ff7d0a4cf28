#include "bench/trace_formats.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/split.h"

namespace tiercache::bench {

namespace {

constexpr size_t kOracleRecord = 24;
constexpr uint64_t kMaxOpCount = 1000;

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

bool number(std::string_view s, uint64_t& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

// Calls fn(line, lineNo) for each non-empty line without its CR.
template <typename Fn>
void forEachLine(std::string_view text, Fn fn) {
  size_t lineNo = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    fn(line, lineNo);
  }
}

std::string_view firstLine(std::string_view bytes) {
  std::string_view l = bytes.substr(0, std::min<size_t>(bytes.find('\n'), 4096));
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  return l;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

// ---- oracleGeneral ----

Trace parseOracleGeneral(std::string_view bytes, const std::string& source) {
  if (bytes.size() % kOracleRecord != 0)
    throw TraceError(source + ": " + std::to_string(bytes.size()) + " bytes is not a whole number of 24-byte "
                     "oracleGeneral records (compressed? decompress .zst first)");
  Trace t;
  char key[24];
  for (size_t pos = 0; pos < bytes.size(); pos += kOracleRecord) {
    const uint64_t id = load<uint64_t>(bytes.data() + pos + 4);
    const uint32_t size = load<uint32_t>(bytes.data() + pos + 12);
    if (size == 0) continue;
    auto [end, ec] = std::to_chars(key, key + sizeof key, id);
    t.add(std::string_view(key, size_t(end - key)), size, RequestOp::kGet);
  }
  return t;
}

// ---- Twitter (twemcache) ----

bool twitterOp(std::string_view s, RequestOp& op) {
  if (s == "get" || s == "gets") op = RequestOp::kGet;
  else if (s == "set" || s == "add" || s == "replace" || s == "cas" || s == "append" || s == "prepend" ||
           s == "incr" || s == "decr")
    op = RequestOp::kSet;
  else if (s == "delete") op = RequestOp::kDel;
  else return false;
  return true;
}

bool looksTwitter(std::string_view bytes) {
  const auto f = splitAt(firstLine(bytes), ',');
  uint64_t n;
  RequestOp op;
  return f.size() == 7 && number(f[0], n) && number(f[3], n) && twitterOp(f[5], op);
}

Trace parseTwitter(std::string_view bytes, const std::string& source) {
  Trace t;
  forEachLine(bytes, [&](std::string_view line, size_t lineNo) {
    const std::string where = source + ":" + std::to_string(lineNo);
    const auto f = splitAt(line, ',');
    if (f.size() != 7) throw TraceError(where + ": expected 7 fields (timestamp,key,key size,value size,client,op,ttl)");
    uint64_t size = 0;
    if (!number(f[3], size)) throw TraceError(where + ": value size \"" + std::string(f[3]) + "\" is not a whole number");
    RequestOp op;
    if (!twitterOp(f[5], op)) throw TraceError(where + ": op \"" + std::string(f[5]) + "\" is not a twemcache op");
    try {
      t.add(f[1], size, op);
    } catch (const TraceError& e) {
      throw TraceError(where + ": " + e.what());
    }
  });
  return t;
}

// ---- Meta kvcache ----

struct MetaColumns {
  int key = -1, op = -1, size = -1, opCount = -1;
  size_t fields = 0;
};

MetaColumns metaColumns(std::string_view header) {
  MetaColumns c;
  const auto f = splitAt(header, ',');
  c.fields = f.size();
  for (size_t i = 0; i < f.size(); ++i) {
    const std::string name = lower(f[i]);
    if (name == "key") c.key = int(i);
    else if (name == "op") c.op = int(i);
    else if (name == "size") c.size = int(i);
    else if (name == "op_count") c.opCount = int(i);
  }
  return c;
}

bool looksMeta(std::string_view bytes) {
  const MetaColumns c = metaColumns(firstLine(bytes));
  // Our own CSV header is exactly key,size,op: three columns, no op_count.
  return c.key >= 0 && c.op >= 0 && c.size >= 0 && (c.fields > 3 || c.opCount >= 0);
}

Trace parseMeta(std::string_view bytes, const std::string& source) {
  const MetaColumns c = metaColumns(firstLine(bytes));
  if (c.key < 0 || c.op < 0 || c.size < 0) throw TraceError(source + ":1: header must name key, op and size columns");
  Trace t;
  forEachLine(bytes, [&](std::string_view line, size_t lineNo) {
    if (lineNo == 1) return;
    const std::string where = source + ":" + std::to_string(lineNo);
    const auto f = splitAt(line, ',');
    if (f.size() != c.fields) throw TraceError(where + ": expected " + std::to_string(c.fields) + " fields");
    uint64_t size = 0, count = 1;
    if (!number(f[size_t(c.size)], size)) throw TraceError(where + ": size \"" + std::string(f[size_t(c.size)]) + "\" is not a whole number");
    if (c.opCount >= 0 && !number(f[size_t(c.opCount)], count))
      throw TraceError(where + ": op_count \"" + std::string(f[size_t(c.opCount)]) + "\" is not a whole number");
    const std::string opName = lower(f[size_t(c.op)]);
    RequestOp op;
    if (opName == "get") op = RequestOp::kGet;
    else if (opName == "set") op = RequestOp::kSet;
    else if (opName == "delete") op = RequestOp::kDel;
    else throw TraceError(where + ": op \"" + std::string(f[size_t(c.op)]) + "\" is not GET, SET or DELETE");
    count = std::clamp<uint64_t>(count, 1, kMaxOpCount);
    try {
      for (uint64_t i = 0; i < count; ++i) t.add(f[size_t(c.key)], size, op);
    } catch (const TraceError& e) {
      throw TraceError(where + ": " + e.what());
    }
  });
  return t;
}

Trace parseOwn(std::string_view bytes, const std::string& source) { return Trace::parse(bytes, source); }

struct FormatRow {
  const char* name;
  bool (*detect)(const std::string& path, std::string_view bytes);
  Trace (*parse)(std::string_view bytes, const std::string& source);
};

// Detection order: the first row whose detector says yes; "tiercache" last.
const FormatRow kFormats[] = {
    {"oracle-general",
     [](const std::string& path, std::string_view) { return path.find("oracleGeneral") != std::string::npos; },
     parseOracleGeneral},
    {"meta-kv", [](const std::string&, std::string_view b) { return looksMeta(b); }, parseMeta},
    {"twitter", [](const std::string&, std::string_view b) { return looksTwitter(b); }, parseTwitter},
    {"tiercache", [](const std::string&, std::string_view) { return true; }, parseOwn},
};

}  // namespace

std::vector<std::string> traceFormatNames() {
  std::vector<std::string> out;
  for (const FormatRow& r : kFormats) out.emplace_back(r.name);
  return out;
}

std::string detectTraceFormat(const std::string& path, std::string_view bytes) {
  if (bytes.size() >= sizeof kTraceMagic && std::memcmp(bytes.data(), kTraceMagic, sizeof kTraceMagic) == 0)
    return "tiercache";
  for (const FormatRow& r : kFormats) {
    if (r.detect(path, bytes)) return r.name;
  }
  return "tiercache";
}

Trace parseTrace(const std::string& format, std::string_view bytes, const std::string& source) {
  const std::string name = format == "auto" ? detectTraceFormat(source, bytes) : format;
  for (const FormatRow& r : kFormats) {
    if (name == r.name) return r.parse(bytes, source);
  }
  std::string known;
  for (const FormatRow& r : kFormats) known += std::string(known.empty() ? "" : ", ") + r.name;
  throw TraceError("unknown trace format '" + format + "' (expected auto, " + known + ")");
}

Trace readTrace(const std::string& path, const std::string& format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError("cannot open trace " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  return parseTrace(format, bytes, path);
}

}  // namespace tiercache::bench
