// Traces: a request sequence (key, size, operation) on disk and in memory.
//
// Two forms of the same records (docs/bench.md, "Trace format"):
//   CSV     one request per line, `key,size,op`, op one of get|set|del|lget;
//           an optional first line `key,size,op`; blank lines and lines
//           starting with '#' are skipped. Keys may not hold ',' or a line
//           break (use the binary form for such keys).
//   binary  the 8 bytes "TCTRACE" 0x01, then per record: op (1 byte:
//           0 get, 1 set, 2 del, 3 lget), key length (1 byte, 1..255),
//           size (unsigned LEB128, below 2^32), the key bytes.
// Trace::read tells them apart by the magic. A size is the value size in
// bytes: what a set stores, what a get's lookaside fill would store.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bench/request_stream.h"

namespace tiercache::bench {

inline constexpr char kTraceMagic[8] = {'T', 'C', 'T', 'R', 'A', 'C', 'E', 1};

// A malformed trace; what() names the source and the line (CSV) or byte
// offset (binary).
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TraceRecord {
  std::string_view key;
  uint32_t size;
  RequestOp op;
};

enum class TraceFormat : uint8_t { kCsv, kBinary };

// The records, keys packed in one arena.
class Trace {
 public:
  void add(std::string_view key, uint64_t size, RequestOp op);  // throws TraceError for a bad record
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  TraceRecord operator[](size_t i) const {
    const Entry& e = entries_[i];
    return TraceRecord{std::string_view(arena_.data() + e.offset, e.key_length), e.size, e.op};
  }

  static Trace read(const std::string& path);
  static Trace parse(std::string_view bytes, const std::string& source);  // either form
  static Trace parseCsv(std::string_view text, const std::string& source);
  static Trace parseBinary(std::string_view bytes, const std::string& source);

 private:
  struct Entry {
    uint64_t offset;
    uint32_t size;
    uint8_t key_length;
    RequestOp op;
  };
  std::string arena_;
  std::vector<Entry> entries_;
};

// Streams records out in one form. ".csv" paths are CSV, others binary.
class TraceWriter {
 public:
  TraceWriter(std::ostream& out, TraceFormat format);
  static TraceFormat formatFor(const std::string& path);
  void write(std::string_view key, uint64_t size, RequestOp op);  // throws TraceError for an unwritable record
  uint64_t records() const { return records_; }

 private:
  std::ostream& out_;
  TraceFormat format_;
  uint64_t records_ = 0;
};

std::string traceToCsv(const Trace& trace);
std::string traceToBinary(const Trace& trace);

}  // namespace tiercache::bench
