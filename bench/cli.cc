#include "bench/cli.h"

#include <exception>
#include <memory>
#include <ostream>

#include "allocator/cache.h"
#include "allocator/cache_config.h"
#include "bench/report.h"
#include "bench/runner.h"
#include "bench/workload.h"

namespace tiercache::bench {

std::string benchUsage() {
  return "usage: tiercache-bench --config FILE [--json] [--progress | --no-progress]\n"
         "\n"
         "Builds a cache from FILE (the cache options) and runs the workload described by\n"
         "FILE's \"workload\" object against it, then prints a report.\n"
         "\n"
         "  --config FILE   JSON config: cache options plus a \"workload\" object\n"
         "  --json          print the report as one JSON document on stdout\n"
         "  --progress      print a progress line on stderr every workload.progress_interval_ms\n"
         "                  (the default when stderr is a terminal)\n"
         "  --no-progress   never print progress lines\n"
         "  --help          this text\n"
         "\n"
         "Exit status: 0 success, 1 value verification failures or run-time failure,\n"
         "2 bad usage or config.\n";
}

int runBenchCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, bool stderrIsTerminal) {
  std::string configPath;
  bool json = false;
  bool progress = stderrIsTerminal;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      out << benchUsage();
      return kExitOk;
    } else if (a == "--config" && i + 1 < args.size()) {
      configPath = args[++i];
    } else if (a.rfind("--config=", 0) == 0) {
      configPath = a.substr(9);
    } else if (a == "--json") {
      json = true;
    } else if (a == "--progress") {
      progress = true;
    } else if (a == "--no-progress") {
      progress = false;
    } else {
      err << "tiercache-bench: " << (a == "--config" ? "--config needs a file" : "unknown argument '" + a + "'")
          << "\n\n"
          << benchUsage();
      return kExitUsage;
    }
  }
  if (configPath.empty()) {
    err << "tiercache-bench: --config FILE is required\n\n" << benchUsage();
    return kExitUsage;
  }

  CacheConfig cacheConfig;
  WorkloadConfig workload;
  std::unique_ptr<Cache> cache;
  try {
    cacheConfig = CacheConfig::fromJsonFile(configPath);
    workload = WorkloadConfig::fromJsonFile(configPath);
    cache = std::make_unique<Cache>(cacheConfig);
    size_t maxValue = cache->maxValueSize(workload.key_size.max);
    if (workload.value_size.max > maxValue)
      throw ConfigError("workload.value_size",
                        "max " + std::to_string(workload.value_size.max) + " exceeds the largest value the cache stores with a " +
                            std::to_string(workload.key_size.max) + "-byte key (" + std::to_string(maxValue) + ") (in " +
                            configPath + ")");
  } catch (const ConfigError& e) {
    err << "tiercache-bench: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    err << "tiercache-bench: cannot create the cache from " << configPath << ": " << e.what() << "\n";
    return kExitFailed;
  }

  RunOptions options;
  bool lineOpen = false;
  if (progress && workload.progress_interval_ms > 0) {
    options.progress_interval = std::chrono::milliseconds(workload.progress_interval_ms);
    options.progress = [&](const ProgressSnapshot& p) {
      // On a terminal, one line rewritten in place; elsewhere one line each.
      if (stderrIsTerminal) {
        err << '\r' << formatProgress(p) << "\x1b[K" << std::flush;
        lineOpen = true;
      } else {
        err << formatProgress(p) << std::endl;
      }
    };
  }

  WorkloadResult result;
  try {
    result = runWorkload(*cache, workload, options);
  } catch (const std::exception& e) {
    if (lineOpen) err << '\n';
    err << "tiercache-bench: run failed: " << e.what() << "\n";
    return kExitFailed;
  }
  if (lineOpen) err << '\n';

  out << (json ? reportJson(workload, result) + "\n" : formatReport(workload, result));
  if (result.ops.value_mismatches > 0) {
    err << "tiercache-bench: " << result.ops.value_mismatches << " value(s) failed verification; first: "
        << result.first_mismatch << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace tiercache::bench
