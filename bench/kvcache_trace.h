// kvcache traces: the CSV that CacheLib's cachebench replays with generator
// "replay" (its KVReplayGenerator), read into a tiercache Trace.
//
// The first line of each file is a header naming the columns; `key`, `op`
// and `size` are required, `key_size`, `op_count` and others optional, in
// any order (unknown columns are skipped, as cachebench skips them). Rows
// map as cachebench reads them:
//   op       GET, GET_LEASE -> get; SET, SET_LEASE -> set; DELETE -> del.
//            Other operations are skipped and counted.
//   key      padded with '0' up to key_size (when given and longer), and cut
//            to the cache's 255-byte limit (cachebench allows 256)
//   op_count the request is issued that many times (0 counts as 1)
//   size     the value size
// Timestamps and TTLs are not used. A malformed row is a TraceError naming
// the file and line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/trace.h"

namespace tiercache::bench {

struct KvcacheReadStats {
  uint64_t rows = 0;          // data rows read
  uint64_t skipped_ops = 0;   // rows whose op is not a get, set or delete
  uint64_t truncated_keys = 0;  // keys cut to 255 bytes
};

// Appends the requests of one kvcache CSV (source names it in errors) to
// trace, stopping once trace holds maxRecords (0: no limit).
void appendKvcacheCsv(std::string_view text, const std::string& source, Trace& trace, uint64_t maxRecords,
                      KvcacheReadStats& stats);
// CacheLib's binary request dump (generator "binary-replay", written by its
// KV replay generator from a kvcache CSV): a little-endian u64 count, then
// that many 24-byte records {u8 key size, u8 op, u16 repeats, u32 ttl,
// u64 key offset from the record's own start, u32 value size, 4 pad}, then
// the keys. Ops 0 set, 1 get, 2 delete, 4 lone get map; others are skipped
// and counted. A record or key outside the file is a TraceError.
void appendCachelibBinary(std::string_view bytes, const std::string& source, Trace& trace, uint64_t maxRecords,
                          KvcacheReadStats& stats);

// Reads the files in order; with repeat, starts over from the first file
// until maxRecords is reached (repeat needs maxRecords > 0).
// binary: the files are CacheLib binary dumps instead of CSV.
Trace readKvcacheTraces(const std::vector<std::string>& files, uint64_t maxRecords, bool repeat,
                        KvcacheReadStats* stats = nullptr, bool binary = false);

}  // namespace tiercache::bench
