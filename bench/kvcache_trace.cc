#include "bench/kvcache_trace.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/split.h"

namespace tiercache::bench {

namespace {

constexpr size_t kMaxKey = 255;  // Item::kMaxKeySize

bool parseUint(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  out = v;
  return true;
}

}  // namespace

void appendKvcacheCsv(std::string_view text, const std::string& source, Trace& trace, uint64_t maxRecords,
                      KvcacheReadStats& stats) {
  int keyCol = -1, opCol = -1, sizeCol = -1, keySizeCol = -1, countCol = -1;
  size_t columns = 0;
  uint64_t lineNo = 0;
  size_t pos = 0;
  std::string key;
  while (pos < text.size() && (maxRecords == 0 || trace.size() < maxRecords)) {
    size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    std::vector<std::string_view> f = splitAt(line, ',');
    auto where = [&] { return source + ":" + std::to_string(lineNo) + ": "; };
    if (keyCol < 0) {
      // The header: columns by name, as KVReplayGenerator maps them.
      for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] == "key") keyCol = int(i);
        else if (f[i] == "op") opCol = int(i);
        else if (f[i] == "size") sizeCol = int(i);
        else if (f[i] == "key_size") keySizeCol = int(i);
        else if (f[i] == "op_count") countCol = int(i);
      }
      if (keyCol < 0 || opCol < 0 || sizeCol < 0)
        throw TraceError(where() + "the header must name the columns key, op and size (kvcache trace format), not \"" +
                         std::string(line.substr(0, 200)) + "\"");
      columns = f.size();
      continue;
    }
    if (f.size() < columns)
      throw TraceError(where() + "has " + std::to_string(f.size()) + " fields; the header has " +
                       std::to_string(columns));
    ++stats.rows;
    std::string_view op = f[size_t(opCol)];
    RequestOp kind;
    if (op == "GET" || op == "GET_LEASE") kind = RequestOp::kGet;
    else if (op == "SET" || op == "SET_LEASE") kind = RequestOp::kSet;
    else if (op == "DELETE") kind = RequestOp::kDel;
    else {
      ++stats.skipped_ops;
      continue;
    }
    uint64_t size = 0, keySize = 0, repeats = 1;
    if (!parseUint(f[size_t(sizeCol)], size) || size >= (1ull << 32))
      throw TraceError(where() + "size \"" + std::string(f[size_t(sizeCol)]) + "\" is not a whole number below 2^32");
    key.assign(f[size_t(keyCol)]);
    if (key.empty()) throw TraceError(where() + "empty key");
    if (keySizeCol >= 0 && parseUint(f[size_t(keySizeCol)], keySize) && keySize > key.size())
      key.resize(std::min<uint64_t>(keySize, 256), '0');
    if (key.size() > kMaxKey) {
      key.resize(kMaxKey);
      ++stats.truncated_keys;
    }
    // cachebench keeps op_count in 16 bits and issues a count of 0 once.
    if (countCol >= 0 && !parseUint(f[size_t(countCol)], repeats)) repeats = 1;
    repeats = std::clamp<uint64_t>(repeats, 1, 65535);
    for (uint64_t r = 0; r < repeats && (maxRecords == 0 || trace.size() < maxRecords); ++r) {
      try {
        trace.add(key, size, kind);
      } catch (const TraceError& e) {
        throw TraceError(where() + e.what());
      }
    }
  }
  if (keyCol < 0 && lineNo > 0) throw TraceError(source + ": no header line (kvcache trace format)");
}

void appendCachelibBinary(std::string_view bytes, const std::string& source, Trace& trace, uint64_t maxRecords,
                          KvcacheReadStats& stats) {
  constexpr size_t kRecord = 24;
  auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, bytes.data() + at, 8);
    return v;
  };
  if (bytes.size() < 8) throw TraceError(source + ": too short for a CacheLib binary trace (no request count)");
  uint64_t n = u64(0);
  if (n > (bytes.size() - 8) / kRecord)
    throw TraceError(source + ": says " + std::to_string(n) + " requests but holds at most " +
                     std::to_string((bytes.size() - 8) / kRecord));
  for (uint64_t i = 0; i < n && (maxRecords == 0 || trace.size() < maxRecords); ++i) {
    size_t at = 8 + size_t(i) * kRecord;
    uint8_t keySize = uint8_t(bytes[at]), op = uint8_t(bytes[at + 1]);
    uint16_t repeats;
    std::memcpy(&repeats, bytes.data() + at + 2, 2);
    uint64_t keyOffset = u64(at + 8);
    uint32_t valueSize;
    std::memcpy(&valueSize, bytes.data() + at + 16, 4);
    if (keyOffset > bytes.size() || at + keyOffset > bytes.size() - keySize)
      throw TraceError(source + ": request " + std::to_string(i) + " has its key outside the file");
    ++stats.rows;
    RequestOp kind;
    switch (op) {
      case 0: kind = RequestOp::kSet; break;
      case 1: kind = RequestOp::kGet; break;
      case 2: kind = RequestOp::kDel; break;
      case 4: kind = RequestOp::kLoneGet; break;
      default: ++stats.skipped_ops; continue;
    }
    std::string_view key = bytes.substr(at + keyOffset, keySize);
    if (key.empty()) throw TraceError(source + ": request " + std::to_string(i) + " has an empty key");
    for (uint32_t r = 0; r < std::max<uint32_t>(repeats, 1) && (maxRecords == 0 || trace.size() < maxRecords); ++r) {
      try {
        trace.add(key, valueSize, kind);
      } catch (const TraceError& e) {
        throw TraceError(source + ": request " + std::to_string(i) + ": " + e.what());
      }
    }
  }
}

Trace readKvcacheTraces(const std::vector<std::string>& files, uint64_t maxRecords, bool repeat,
                        KvcacheReadStats* stats, bool binary) {
  Trace trace;
  KvcacheReadStats local;
  KvcacheReadStats& s = stats ? *stats : local;
  std::vector<std::string> texts;
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw TraceError("cannot open trace file " + f);
    std::stringstream ss;
    ss << in.rdbuf();
    texts.push_back(ss.str());
  }
  do {
    size_t before = trace.size();
    for (size_t i = 0; i < files.size(); ++i) {
      if (maxRecords != 0 && trace.size() >= maxRecords) break;
      if (binary) appendCachelibBinary(texts[i], files[i], trace, maxRecords, s);
      else appendKvcacheCsv(texts[i], files[i], trace, maxRecords, s);
    }
    if (trace.size() == before) break;  // nothing to repeat
  } while (repeat && maxRecords != 0 && trace.size() < maxRecords);
  return trace;
}

}  // namespace tiercache::bench
