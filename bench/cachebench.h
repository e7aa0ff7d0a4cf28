// Reads a CacheLib cachebench config ({"cache_config": {...}, "test_config":
// {...}}, // and /* */ comments allowed) into a CacheConfig and a
// WorkloadConfig. docs/cachebench.md has the mapping table.
//
// Every key is a row of bench/cachebench_keys.h, which says its kind:
//   honoured     mapped (e.g. cacheSizeMB, memoryTiers, getRatio); a value
//                tiercache cannot honour is refused
//   refused when set   accepted at cachebench's default (0, false), else
//                a ConfigError naming "cache_config.<key>" or "test_config.<key>"
//   ignored      read and dropped because tiercache has no such knob or it
//                does not change what is measured (e.g. lruUpdateOnWrite);
//                they and keys no row holds are listed in `ignored` so the
//                bench prints them in one warning
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "allocator/cache_config.h"
#include "bench/workload.h"

namespace tiercache::bench {

// A trace-replay config (generator "replay" or "binary-replay"): the trace files, in order,
// replayed through runTrace. `workload` then holds threads, lookaside and
// the op cap (ops_per_thread * threads records at most, as cachebench's numOps).
struct CachebenchReplay {
  std::vector<std::string> files;  // resolved against the config's directory (configPath)
  bool repeat = false;             // repeatTraceReplay: start over until the op cap is reached
  bool binary = false;             // generator "binary-replay": CacheLib's binary request dump
};

struct CachebenchConfig {
  CacheConfig cache;
  WorkloadConfig workload;
  std::vector<std::string> ignored;  // "cache_config.lruUpdateOnWrite", ... in document order
  // Every key the import has a rule for, present or not ("test_config.numOps", ...).
  std::vector<std::string> handled_keys;
  std::optional<CachebenchReplay> replay;
  std::string allocator = "LRU";     // cachebench's allocator name, as given
  // test_config.name of a special stressor tiercache maps (bench/stressors.h);
  // "" for the key-value workload. stressor_threads: numThreads, 0 when absent.
  std::string stressor;
  uint32_t stressor_threads = 0;
  // The flash file the import made up for nvmCacheSizeMB (remove it after
  // the run); "" when there is none or it is the config's own file.
  std::string flash_scratch;
  // The files to remove after the run: flash_scratch and the store's
  // write-buffer file beside it (<path>.wbuf, flash/flash_store.h). Empty
  // when flash_scratch is.
  std::vector<std::string> scratchFiles() const;
};

// cachebench allocator -> tiercache eviction.policy name ("" when none maps).
// One table; docs/cachebench.md lists it.
std::string policyForAllocator(const std::string& allocator);

// True when the document's top level has "cache_config" or "test_config".
bool isCachebenchDocument(std::string_view text);
// Throws ConfigError ("cache_config.<key>: reason"); source names the file in messages.
CachebenchConfig importCachebench(std::string_view text, const std::string& source = "");
CachebenchConfig importCachebenchFile(const std::string& path);
// "warning: cachebench keys not implemented, ignored: a, b, c" or "" when none.
std::string ignoredKeysWarning(const std::vector<std::string>& ignored);
// The cachebench key behind a tiercache key path, e.g. "workload.value_size"
// -> "test_config.valSizeRange"; the path itself when there is none.
std::string cachebenchKeyFor(const std::string& tiercachePath);

}  // namespace tiercache::bench
