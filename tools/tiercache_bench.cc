// tiercache-bench: run a workload on a cache built from a JSON config and
// print a cachebench-style report (see bench/cli.h, docs/bench.md).
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "bench/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return tiercache::bench::runBenchCli(args, std::cout, std::cerr, isatty(STDERR_FILENO) == 1);
}
