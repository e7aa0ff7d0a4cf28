// Public trace formats that `replay` reads besides its own (bench/trace.h),
// one row each in a table (name -> detect, parse):
//
//   oracle-general  libCacheSim's oracleGeneral binary: 24-byte records
//                   {u32 time, u64 object id, u32 size, i64 next access},
//                   little-endian. Every record is a get of the key
//                   "<id in decimal>" with value size `size`; records of
//                   size 0 are skipped (libCacheSim's default). Detected by
//                   "oracleGeneral" in the file name (the format has no magic).
//   twitter         Twitter's twemcache traces (github.com/twitter/cache-traces):
//                   CSV `timestamp,key,key size,value size,client id,op,ttl`,
//                   no header. get/gets -> get; set/add/replace/cas/append/
//                   prepend/incr/decr -> set; delete -> del. Detected by 7
//                   fields with a known op in the 6th.
//   meta-kv         Meta's kvcache traces (CacheLib cachebench): CSV with a
//                   header naming at least `key`, `op` and `size` (also
//                   `op_count`: the record is repeated that many times, at
//                   most 1000). GET -> get, SET -> set, DELETE -> del.
//                   Detected by that header.
//
// Bad input gets a TraceError naming the file and the line or record.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bench/trace.h"

namespace tiercache::bench {

// "tiercache" (own CSV or binary), "oracle-general", "twitter", "meta-kv".
std::vector<std::string> traceFormatNames();
// The format of `bytes` read from `path`: a name above.
std::string detectTraceFormat(const std::string& path, std::string_view bytes);
// Parses in the named format ("auto": detectTraceFormat). Throws TraceError.
Trace parseTrace(const std::string& format, std::string_view bytes, const std::string& source);
Trace readTrace(const std::string& path, const std::string& format = "auto");

}  // namespace tiercache::bench
