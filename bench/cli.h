// The tiercache-bench command line, as a function so tests can run it.
//
//   tiercache-bench --config FILE [--json] [--progress | --no-progress]
//
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

// args excludes the program name. Progress lines go to err when it is a
// terminal (stderrIsTerminal) or --progress is given.
int runBenchCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, bool stderrIsTerminal);

std::string benchUsage();

}  // namespace tiercache::bench
