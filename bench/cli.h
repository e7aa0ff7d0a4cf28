// The tiercache-bench command line, as a function so tests can run it.
//
//   tiercache-bench [run] --config FILE [--json] [--progress | --no-progress] [--no-limits]
//   tiercache-bench record --config FILE -o TRACE
//   tiercache-bench replay --config FILE --trace TRACE [--threads N] [--lookaside | --no-lookaside] ...
//   tiercache-bench compare A.json B.json [-n RUNS]
//   tiercache-bench sweep --config FILE (--threads L | --cache-size L | --tier-ratio L) [-n RUNS] [--out PREFIX]
//
// FILE is a tiercache config (cache options + "workload") or a CacheLib
// cachebench config (cache_config + test_config), told apart by content.
// Exit codes: 0 success; 1 the run finished but a value read back failed
// verification, or the cache failed at run time; 2 usage or config error
// (the message names the key, e.g. "workload.get_ratio: must be in [0,1]").
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tiercache::bench {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

// args excludes the program name. A progress bar goes to err when it is a
// terminal (stderrIsTerminal); --progress prints progress lines elsewhere.
int runBenchCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, bool stderrIsTerminal);

std::string benchUsage();

}  // namespace tiercache::bench
