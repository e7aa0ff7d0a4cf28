#include "bench/trace.h"

#include <charconv>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>

namespace tiercache::bench {

namespace {

constexpr std::string_view kCsvHeader = "key,size,op";

bool parseOp(std::string_view s, RequestOp& op) {
  if (s == "get") op = RequestOp::kGet;
  else if (s == "set") op = RequestOp::kSet;
  else if (s == "del") op = RequestOp::kDel;
  else if (s == "lget") op = RequestOp::kLoneGet;
  else return false;
  return true;
}

void checkRecord(std::string_view key, uint64_t size, const std::string& where) {
  if (key.empty()) throw TraceError(where + ": empty key");
  if (key.size() > 255) throw TraceError(where + ": key of " + std::to_string(key.size()) + " bytes (at most 255)");
  if (size > UINT32_MAX) throw TraceError(where + ": size " + std::to_string(size) + " is 2^32 or more");
}

}  // namespace

void Trace::add(std::string_view key, uint64_t size, RequestOp op) {
  checkRecord(key, size, "record " + std::to_string(entries_.size()));
  if (uint8_t(op) > uint8_t(RequestOp::kLoneGet)) throw TraceError("record " + std::to_string(entries_.size()) + ": bad op");
  entries_.push_back(Entry{arena_.size(), uint32_t(size), uint8_t(key.size()), op});
  arena_.append(key);
}

Trace Trace::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError("cannot open trace " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

Trace Trace::parse(std::string_view bytes, const std::string& source) {
  if (bytes.size() >= sizeof kTraceMagic && std::memcmp(bytes.data(), kTraceMagic, sizeof kTraceMagic) == 0)
    return parseBinary(bytes, source);
  return parseCsv(bytes, source);
}

Trace Trace::parseCsv(std::string_view text, const std::string& source) {
  Trace t;
  size_t lineNo = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line[0] == '#') continue;
    if (lineNo == 1 && line == kCsvHeader) continue;
    std::string where = source + ":" + std::to_string(lineNo);
    size_t c1 = line.find(',');
    size_t c2 = c1 == std::string_view::npos ? c1 : line.find(',', c1 + 1);
    if (c2 == std::string_view::npos || line.find(',', c2 + 1) != std::string_view::npos)
      throw TraceError(where + ": expected key,size,op");
    std::string_view key = line.substr(0, c1);
    std::string_view sizeText = line.substr(c1 + 1, c2 - c1 - 1);
    std::string_view opText = line.substr(c2 + 1);
    uint64_t size = 0;
    auto [end, ec] = std::from_chars(sizeText.data(), sizeText.data() + sizeText.size(), size);
    if (sizeText.empty() || ec != std::errc() || end != sizeText.data() + sizeText.size())
      throw TraceError(where + ": size \"" + std::string(sizeText) + "\" is not a whole number");
    RequestOp op;
    if (!parseOp(opText, op))
      throw TraceError(where + ": op \"" + std::string(opText) + "\" is not get, set, del or lget");
    checkRecord(key, size, where);
    t.add(key, size, op);
  }
  return t;
}

Trace Trace::parseBinary(std::string_view bytes, const std::string& source) {
  Trace t;
  size_t pos = sizeof kTraceMagic;
  while (pos < bytes.size()) {
    size_t start = pos;
    std::string where = source + ": record " + std::to_string(t.size()) + " at byte " + std::to_string(start);
    if (bytes.size() - pos < 3) throw TraceError(where + ": truncated");
    uint8_t op = uint8_t(bytes[pos++]);
    uint8_t keyLength = uint8_t(bytes[pos++]);
    if (op > uint8_t(RequestOp::kLoneGet)) throw TraceError(where + ": bad op " + std::to_string(op));
    if (keyLength == 0) throw TraceError(where + ": empty key");
    uint64_t size = 0;
    for (int shift = 0;; shift += 7) {
      if (pos >= bytes.size()) throw TraceError(where + ": truncated");
      if (shift > 28) throw TraceError(where + ": size is 2^32 or more");
      uint8_t b = uint8_t(bytes[pos++]);
      size |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    if (bytes.size() - pos < keyLength) throw TraceError(where + ": truncated");
    checkRecord(bytes.substr(pos, keyLength), size, where);
    t.add(bytes.substr(pos, keyLength), size, RequestOp(op));
    pos += keyLength;
  }
  return t;
}

TraceWriter::TraceWriter(std::ostream& out, TraceFormat format) : out_(out), format_(format) {
  if (format_ == TraceFormat::kBinary) out_.write(kTraceMagic, sizeof kTraceMagic);
  else out_ << kCsvHeader << '\n';
}

TraceFormat TraceWriter::formatFor(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0 ? TraceFormat::kCsv : TraceFormat::kBinary;
}

void TraceWriter::write(std::string_view key, uint64_t size, RequestOp op) {
  std::string where = "record " + std::to_string(records_);
  checkRecord(key, size, where);
  if (format_ == TraceFormat::kCsv) {
    if (key.find_first_of(",\r\n") != std::string_view::npos || key[0] == '#')
      throw TraceError(where + ": key has ',', a line break or a leading '#'; use the binary form");
    out_ << key << ',' << size << ',' << requestOpName(op) << '\n';
  } else {
    char buf[2 + 5];
    size_t n = 0;
    buf[n++] = char(op);
    buf[n++] = char(key.size());
    uint64_t v = size;
    do {
      uint8_t b = v & 0x7f;
      v >>= 7;
      buf[n++] = char(v ? b | 0x80 : b);
    } while (v);
    out_.write(buf, std::streamsize(n));
    out_.write(key.data(), std::streamsize(key.size()));
  }
  ++records_;
}

std::string traceToCsv(const Trace& trace) {
  std::ostringstream os;
  TraceWriter w(os, TraceFormat::kCsv);
  for (size_t i = 0; i < trace.size(); ++i) w.write(trace[i].key, trace[i].size, trace[i].op);
  return os.str();
}

std::string traceToBinary(const Trace& trace) {
  std::ostringstream os;
  TraceWriter w(os, TraceFormat::kBinary);
  for (size_t i = 0; i < trace.size(); ++i) w.write(trace[i].key, trace[i].size, trace[i].op);
  return os.str();
}

const char* requestOpName(RequestOp op) {
  switch (op) {
    case RequestOp::kGet: return "get";
    case RequestOp::kSet: return "set";
    case RequestOp::kDel: return "del";
    case RequestOp::kLoneGet: return "lget";
    case RequestOp::kAddChained: return "addchained";
    case RequestOp::kUpdate: return "update";
    case RequestOp::kCouldExist: return "couldexist";
    case RequestOp::kLoneSet: return "lset";
  }
  return "?";
}

}  // namespace tiercache::bench
