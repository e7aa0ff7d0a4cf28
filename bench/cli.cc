#include "bench/cli.h"

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>

#include <unistd.h>

#include "allocator/cache.h"
#include "allocator/cache_config.h"
#include "bench/cachebench.h"
#include "bench/compare.h"
#include "bench/hit_ratio_sim.h"
#include "bench/key_space.h"
#include "bench/kvcache_trace.h"
#include "bench/policy_sim.h"
#include "bench/report.h"
#include "bench/runner.h"
#include "bench/stressors.h"
#include "bench/sweep.h"
#include "bench/trace.h"
#include "bench/trace_formats.h"
#include "bench/workload.h"

namespace tiercache::bench {

namespace {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The configs of one file, tiercache's own form or a cachebench one.
struct LoadedConfig {
  std::string path;
  CacheConfig cache;
  WorkloadConfig workload;
  bool cachebench = false;
  std::optional<CachebenchReplay> replay;  // a cachebench config with generator "replay"
  std::string stressor;                    // a cachebench special stressor (bench/stressors.h)
  uint32_t stressor_threads = 0;
};

// Bounded like the cache's own parser: /dev/zero or a huge file is a
// config error (exit 2), not a read without end.
std::string readFile(const std::string& path) { return readConfigFile(path); }

// A flash file the cachebench import made up goes when the program ends.
std::vector<std::string>& filesToRemove() {
  static std::vector<std::string> files;
  return files;
}

void removeAtExit(const std::string& file) {
  // The list first: it must outlive (be built before) the exit handler.
  std::vector<std::string>& files = filesToRemove();
  static const bool registered = [] {
    std::atexit([] {
      for (const std::string& f : filesToRemove()) ::unlink(f.c_str());
    });
    return true;
  }();
  (void)registered;
  files.push_back(file);
}

LoadedConfig loadConfig(const std::string& path, std::ostream& err) {
  LoadedConfig l;
  l.path = path;
  std::string text = readFile(path);
  if (isCachebenchDocument(text)) {
    CachebenchConfig cb = importCachebenchFile(path);
    std::string warning = ignoredKeysWarning(cb.ignored);
    if (!warning.empty()) err << "tiercache-bench: " << warning << " (in " << path << ")\n";
    l.cache = std::move(cb.cache);
    l.workload = std::move(cb.workload);
    l.cachebench = true;
    l.replay = std::move(cb.replay);
    l.stressor = cb.stressor;
    l.stressor_threads = cb.stressor_threads;
    for (const std::string& f : cb.scratchFiles()) removeAtExit(f);
  } else {
    l.cache = CacheConfig::fromJsonFile(path);
    l.workload = WorkloadConfig::fromJsonFile(path);
  }
  return l;
}

// The cache for a config; a value range the cache cannot store is a config error.
// With chained items, *chainHook receives the cache's chain remove hook.
std::unique_ptr<Cache> makeCache(const LoadedConfig& l, const CacheConfig& cacheConfig, const WorkloadConfig& w,
                                 std::shared_ptr<ChainedItems::Hook>* chainHook = nullptr) {
  CacheHooks hooks;
  if (chainHook && w.add_chained_ratio > 0) *chainHook = ChainedItems::attach(hooks);
  auto cache = std::make_unique<Cache>(cacheConfig, hooks);
  size_t maxValue = cache->maxValueSize(w.key_size.max);
  if (w.value_size.max > maxValue) {
    std::string key = l.cachebench ? cachebenchKeyFor("workload.value_size") : "workload.value_size";
    throw ConfigError(key, "max " + std::to_string(w.value_size.max) +
                               " exceeds the largest value the cache stores with a " + std::to_string(w.key_size.max) +
                               "-byte key (" + std::to_string(maxValue) + ") (in " + l.path + ")");
  }
  return cache;
}

uint64_t capacityBytes(const Cache& cache) {
  uint64_t bytes = 0;
  for (const TierStats& t : cache.stats().tiers) bytes += t.slabs_total * cache.config().slab_size;
  return bytes;
}

// Progress: a bar rewritten in place on a terminal; with --progress
// elsewhere, one plain line per interval.
class Progress {
 public:
  Progress(std::ostream& err, bool enabled, bool terminal, uint32_t intervalMs)
      : err_(err), enabled_(enabled && intervalMs > 0), terminal_(terminal), intervalMs_(intervalMs) {}
  RunOptions options() {
    RunOptions o;
    if (!enabled_) return o;
    o.progress_interval = std::chrono::milliseconds(intervalMs_);
    o.progress = [this](const ProgressSnapshot& p) {
      if (terminal_) {
        err_ << '\r' << formatProgressBar(p) << "\x1b[K" << std::flush;
        open_ = true;
      } else {
        err_ << formatProgress(p) << std::endl;
      }
    };
    return o;
  }
  void finish() {
    if (open_) err_ << "\r\x1b[K" << std::flush;
    open_ = false;
  }

 private:
  std::ostream& err_;
  bool enabled_, terminal_;
  uint32_t intervalMs_;
  bool open_ = false;
};

struct Args {
  std::vector<std::string> positional;
  std::string config, trace, output, sweepValues, objects, policies, traceFormat = "auto";
  std::optional<SweepKind> sweepKind;
  bool json = false, noLimits = false;
  std::optional<bool> progress, lookaside;
  std::optional<uint32_t> threads;
  std::optional<uint64_t> maxOps;
  uint32_t runs = 5;
};

uint32_t parseCount(const std::string& flag, const std::string& v, uint32_t lo, uint32_t hi) {
  size_t used = 0;
  unsigned long n = 0;
  try {
    n = std::stoul(v, &used);
  } catch (const std::exception&) {
  }
  if (used != v.size() || n < lo || n > hi)
    throw UsageError(flag + " needs a whole number in [" + std::to_string(lo) + "," + std::to_string(hi) + "], not '" + v +
                     "'");
  return uint32_t(n);
}

Args parseArgs(const std::string& command, const std::vector<std::string>& args, size_t first) {
  Args a;
  auto value = [&](size_t& i, const std::string& flag) -> std::string {
    if (i + 1 >= args.size()) throw UsageError(flag + (flag == "--config" ? " needs a file" : " needs a value"));
    return args[++i];
  };
  for (size_t i = first; i < args.size(); ++i) {
    const std::string& s = args[i];
    auto eq = [&](const char* flag) { return s.rfind(std::string(flag) + "=", 0) == 0; };
    auto after = [&](const char* flag) { return s.substr(std::string(flag).size() + 1); };
    if (s == "--config") a.config = value(i, "--config");
    else if (eq("--config")) a.config = after("--config");
    else if (s == "--json") a.json = true;
    else if (s == "--progress") a.progress = true;
    else if (s == "--no-progress") a.progress = false;
    else if (s == "--no-limits") a.noLimits = true;
    else if (command == "run" && s == "--max-ops") a.maxOps = parseCount(s, value(i, s), 1, UINT32_MAX);
    else if (command == "record" && (s == "-o" || s == "--output")) a.output = value(i, s);
    else if (command == "sweep" && s == "--out") a.output = value(i, s);
    else if ((command == "replay" || command == "simulate") && s == "--trace") a.trace = value(i, s);
    else if ((command == "replay" || command == "simulate") && s == "--trace-format") a.traceFormat = value(i, s);
    else if (command == "simulate" && s == "--objects") a.objects = value(i, s);
    else if (command == "simulate" && s == "--policies") a.policies = value(i, s);
    else if (command == "replay" && s == "--lookaside") a.lookaside = true;
    else if (command == "replay" && s == "--no-lookaside") a.lookaside = false;
    else if (command == "replay" && s == "--threads") a.threads = parseCount(s, value(i, s), 1, 1024);
    else if ((command == "compare" || command == "sweep") && (s == "-n" || s == "--runs"))
      a.runs = parseCount(s, value(i, s), 1, 1000);
    else if (command == "sweep" && (s == "--threads" || s == "--cache-size" || s == "--tier-ratio")) {
      if (a.sweepKind) throw UsageError("sweep takes one of --threads, --cache-size, --tier-ratio");
      a.sweepKind = s == "--threads" ? SweepKind::kThreads : s == "--cache-size" ? SweepKind::kCacheSize : SweepKind::kTierRatio;
      a.sweepValues = value(i, s);
    } else if (command == "compare" && !s.empty() && s[0] != '-') a.positional.push_back(s);
    else throw UsageError("unknown argument '" + s + "'");
  }
  return a;
}

void requireConfig(const Args& a) {
  if (a.config.empty()) throw UsageError("--config FILE is required");
}

struct Figures {
  double get_per_sec, set_per_sec, ops_per_sec, hit_ratio;
  double tier0_hit_share;  // hits served by the first tier, of all hits
  double cpu_us_per_op;    // process CPU (user + sys) per operation
  LatencySummary get, set;
};

Figures figuresOf(const WorkloadResult& r) {
  double t = r.elapsed_seconds > 0 ? r.elapsed_seconds : 1e-9;
  uint64_t gets = r.after.gets - r.before.gets, hits = r.after.hits - r.before.hits;
  uint64_t tier0 = r.after.tiers.empty() ? 0
                   : r.after.tiers[0].hits - (r.before.tiers.empty() ? 0 : r.before.tiers[0].hits);
  const uint64_t ops = r.ops.ops();
  return Figures{double(r.ops.gets) / t,
                 double(r.ops.sets) / t,
                 double(ops) / t,
                 gets ? double(hits) / double(gets) : 0.0,
                 hits ? double(tier0) / double(hits) : 0.0,
                 ops ? 1e6 * r.cpu_seconds / double(ops) : 0.0,
                 summarize(r.get_latency),
                 summarize(r.set_latency)};
}

// One fresh cache, one run; throws on failures.
WorkloadResult runOnce(const LoadedConfig& l, const CacheConfig& c, const WorkloadConfig& w, const RunOptions& o = {}) {
  RunOptions opts = o;
  std::unique_ptr<Cache> cache = makeCache(l, c, w, &opts.chain_hook);
  WorkloadResult r = runWorkload(*cache, w, opts);
  if (r.ops.value_mismatches > 0) throw std::runtime_error("value verification failed: " + r.first_mismatch);
  return r;
}

int replayTrace(const Args& a, const LoadedConfig& l, const Trace& trace, const std::string& traceName,
                ReplayConfig rc, std::ostream& out, std::ostream& err, bool terminal);

int commandRun(const Args& a, std::ostream& out, std::ostream& err, bool terminal) {
  requireConfig(a);
  LoadedConfig l = loadConfig(a.config, err);
  if (a.maxOps) l.workload.ops_per_thread = std::min<uint64_t>(l.workload.ops_per_thread, *a.maxOps);
  if (!l.stressor.empty()) {
    StressorOptions so;
    so.ops_per_thread = l.workload.ops_per_thread;
    so.threads = a.threads.value_or(l.stressor_threads);
    so.seed = l.workload.seed;
    return runStressor(l.stressor, l.cache, so, out, err) == 0 ? 0 : kExitFailed;
  }
  if (l.replay) {
    // cachebench's numOps bounds a replay too: numOps * numThreads requests.
    uint64_t cap = l.workload.ops_per_thread * l.workload.threads;
    Trace trace;
    KvcacheReadStats stats;
    try {
      trace = readKvcacheTraces(l.replay->files, cap, l.replay->repeat, &stats, l.replay->binary);
    } catch (const TraceError& e) {
      err << "tiercache-bench: " << e.what() << "\n";
      return kExitUsage;
    }
    if (stats.skipped_ops > 0)
      err << "tiercache-bench: warning: " << stats.skipped_ops
          << " trace rows with an operation other than GET, SET or DELETE were skipped\n";
    std::string names;
    for (const std::string& f : l.replay->files) names += (names.empty() ? "" : ", ") + f;
    ReplayConfig rc;
    rc.threads = l.workload.threads;
    rc.lookaside = l.workload.lookaside;
    return replayTrace(a, l, trace, names, rc, out, err, terminal);
  }
  std::unique_ptr<Cache> cache;
  std::shared_ptr<ChainedItems::Hook> chainHook;
  try {
    cache = makeCache(l, l.cache, l.workload, &chainHook);
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    err << "tiercache-bench: cannot create the cache from " << a.config << ": " << e.what() << "\n";
    return kExitFailed;
  }
  Progress progress(err, a.progress.value_or(terminal), terminal, l.workload.progress_interval_ms);
  WorkloadResult result;
  try {
    RunOptions opts = progress.options();
    opts.chain_hook = chainHook;
    result = runWorkload(*cache, l.workload, opts);
  } catch (const std::exception& e) {
    progress.finish();
    err << "tiercache-bench: run failed: " << e.what() << "\n";
    return kExitFailed;
  }
  progress.finish();
  std::optional<HitRatioLimits> limits;
  std::string note;
  if (a.noLimits) {
    note = "not computed (--no-limits)";
  } else if (l.workload.threads != 1) {
    note = "n/a: needs a single-threaded run or a trace (threads interleave in no fixed order)";
  } else {
    limits = computeLimits(workloadRequests(l.workload, result.after.item_header_bytes), capacityBytes(*cache),
                           l.workload.lookaside);
  }
  const HitRatioLimits* lp = limits ? &*limits : nullptr;
  out << (a.json ? reportJson(l.workload, result, lp) + "\n" : formatReport(l.workload, result, lp, note));
  if (result.ops.value_mismatches > 0) {
    err << "tiercache-bench: " << result.ops.value_mismatches << " value(s) failed verification; first: "
        << result.first_mismatch << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

int commandRecord(const Args& a, std::ostream& out, std::ostream& err) {
  requireConfig(a);
  if (a.output.empty()) throw UsageError("record needs -o TRACE (.csv for CSV, anything else binary)");
  LoadedConfig l = loadConfig(a.config, err);
  const WorkloadConfig& w = l.workload;
  std::ofstream file(a.output, std::ios::binary | std::ios::trunc);
  if (!file) {
    err << "tiercache-bench: cannot write " << a.output << "\n";
    return kExitFailed;
  }
  TraceWriter writer(file, TraceWriter::formatFor(a.output));
  KeySpace keys(w);
  std::unique_ptr<KeySampler> sampler = KeySampler::forWorkload(w);
  std::string key;
  uint64_t prepopulate = 0;
  // Prepopulate sets in the order the threads issue them together (record i
  // of the prepopulate part is thread i mod threads's), then the measured
  // requests round-robin over the threads.
  if (w.prepopulate) {
    for (uint64_t i = w.keys; i-- > 0; ++prepopulate) {
      keys.key(i, key);
      writer.write(key, keys.valueSize(i), RequestOp::kSet);
    }
  }
  std::vector<RequestStream> streams;
  for (uint32_t t = 0; t < w.threads; ++t) streams.emplace_back(w, *sampler, t);
  uint64_t couldExists = 0;
  for (uint64_t op = 0; op < w.ops_per_thread; ++op) {
    for (RequestStream& s : streams) {
      Request r = s.next();
      if (r.op == RequestOp::kCouldExist) {  // changes nothing, reads nothing: not written
        ++couldExists;
        continue;
      }
      if (r.op == RequestOp::kLoneGet) {
        keys.loneKey(r.index, key);
      } else if (r.op == RequestOp::kLoneSet) {
        KeySpace::loneSetKey(r.seq, key);
      } else {
        keys.key(r.index, key);
      }
      // A trace has no chains: an add-chained op is recorded as a get of its parent.
      // An update (no fill) is recorded as a get too; a lone set as a set of its fresh key.
      const bool read = r.op == RequestOp::kAddChained || r.op == RequestOp::kUpdate;
      const RequestOp op = read ? RequestOp::kGet : r.op == RequestOp::kLoneSet ? RequestOp::kSet : r.op;
      writer.write(key, keys.valueSize(r.index), op);
    }
  }
  file.close();
  if (!file) {
    err << "tiercache-bench: writing " << a.output << " failed\n";
    return kExitFailed;
  }
  out << "recorded " << withCommas(writer.records()) << " requests (" << withCommas(prepopulate)
      << " prepopulate sets, then " << withCommas(w.ops_per_thread * w.threads - couldExists) << " from " << w.threads
      << " thread(s)";
  if (couldExists > 0) out << "; " << withCommas(couldExists) << " couldExists left out";
  out << ") to " << a.output << "\n";
  return kExitOk;
}

int commandReplay(const Args& a, std::ostream& out, std::ostream& err, bool terminal) {
  requireConfig(a);
  if (a.trace.empty()) throw UsageError("replay needs --trace TRACE");
  LoadedConfig l = loadConfig(a.config, err);
  Trace trace;
  try {
    trace = readTrace(a.trace, a.traceFormat);
  } catch (const TraceError& e) {
    err << "tiercache-bench: " << e.what() << "\n";
    return kExitUsage;
  }
  ReplayConfig rc;
  rc.threads = a.threads.value_or(1);
  rc.lookaside = a.lookaside.value_or(l.workload.lookaside);
  return replayTrace(a, l, trace, a.trace, rc, out, err, terminal);
}

int replayTrace(const Args& a, const LoadedConfig& l, const Trace& trace, const std::string& traceName,
                ReplayConfig rc, std::ostream& out, std::ostream& err, bool terminal) {
  // The report's view of the run: the replay's threads and lookaside.
  WorkloadConfig shown = l.workload;
  shown.threads = rc.threads;
  shown.lookaside = rc.lookaside;
  shown.prepopulate = false;
  shown.ops_per_thread = std::max<uint64_t>(1, trace.size() / rc.threads);
  std::unique_ptr<Cache> cache;
  try {
    cache = std::make_unique<Cache>(l.cache);
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    err << "tiercache-bench: cannot create the cache from " << l.path << ": " << e.what() << "\n";
    return kExitFailed;
  }
  Progress progress(err, a.progress.value_or(terminal), terminal, l.workload.progress_interval_ms);
  WorkloadResult result = runTrace(*cache, trace, rc, progress.options());
  progress.finish();
  std::optional<HitRatioLimits> limits;
  std::string note;
  if (a.noLimits) {
    note = "not computed (--no-limits)";
  } else {
    limits = computeLimits(traceRequests(trace, result.after.item_header_bytes), capacityBytes(*cache), rc.lookaside);
    if (rc.threads > 1) note = "limits are for the trace in its own order";
  }
  const HitRatioLimits* lp = limits ? &*limits : nullptr;
  if (a.json) {
    out << reportJson(shown, result, lp) << "\n";
  } else {
    out << formatReport(shown, result, lp, "") << "Trace         : " << traceName << ", " << withCommas(trace.size())
        << " records" << (note.empty() ? "" : " (" + note + ")") << "\n";
  }
  if (result.ops.value_mismatches > 0) {
    err << "tiercache-bench: " << result.ops.value_mismatches << " value(s) failed verification; first: "
        << result.first_mismatch << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

// Reference policies over unit-size objects: one row per policy, one column
// per capacity in objects (bench/policy_sim.h).
int commandSimulate(const Args& a, std::ostream& out, std::ostream& err) {
  requireConfig(a);
  if (a.objects.empty()) throw UsageError("simulate needs --objects N[,N...] (capacities in objects)");
  std::vector<uint64_t> caps;
  for (const std::string& v : splitList(a.objects)) caps.push_back(parseCount("--objects", v, 1, UINT32_MAX));
  std::vector<std::string> names = a.policies.empty() ? referencePolicyNames() : splitList(a.policies);
  LoadedConfig l = loadConfig(a.config, err);
  std::vector<SimRequest> requests;
  bool lookaside = l.workload.lookaside;
  if (!a.trace.empty()) {
    requests = traceRequests(readTrace(a.trace, a.traceFormat), 1);
  } else {
    requests = workloadRequests(l.workload, 1);
  }
  out << "policy";
  for (uint64_t c : caps) out << "\t" << c;
  out << "\t(miss ratio, %, unit sizes)\n";
  for (const std::string& name : names) {
    out << name;
    for (uint64_t c : caps) {
      const SimResult r = simulatePolicy(name, requests, c, lookaside);
      char cell[32];
      std::snprintf(cell, sizeof cell, "\t%.3f", 100.0 * (1.0 - r.hitRatio()));
      out << cell << std::flush;
    }
    out << "\n";
  }
  return kExitOk;
}

int commandCompare(const Args& a, std::ostream& out, std::ostream& err, bool terminal) {
  if (a.positional.size() != 2) throw UsageError("compare needs two config files: compare A.json B.json [-n RUNS]");
  LoadedConfig configs[2] = {loadConfig(a.positional[0], err), loadConfig(a.positional[1], err)};
  std::vector<Figures> figures[2];
  bool verbose = a.progress.value_or(terminal);
  for (uint32_t run = 0; run < a.runs; ++run) {
    // Alternate, so that drifting machine load falls on both sides.
    for (int side = 0; side < 2; ++side) {
      const LoadedConfig& l = configs[run % 2 ? 1 - side : side];
      int which = run % 2 ? 1 - side : side;
      try {
        Figures f = figuresOf(runOnce(l, l.cache, l.workload));
        figures[which].push_back(f);
        if (verbose)
          err << "compare: run " << run + 1 << "/" << a.runs << " " << (which ? "B" : "A") << ": "
              << shortNumber(f.ops_per_sec) << " ops/s, hit ratio " << 100 * f.hit_ratio << "%" << std::endl;
      } catch (const ConfigError&) {
        throw;
      } catch (const std::exception& e) {
        err << "tiercache-bench: " << l.path << ": " << e.what() << "\n";
        return kExitFailed;
      }
    }
  }
  auto column = [&](int side, double Figures::*field) {
    std::vector<double> v;
    for (const Figures& f : figures[side]) v.push_back(f.*field);
    return v;
  };
  auto lat = [&](int side, LatencySummary Figures::*op, double LatencySummary::*q) {
    std::vector<double> v;
    for (const Figures& f : figures[side]) v.push_back(f.*op.*q);
    return v;
  };
  std::vector<ComparisonRow> rows = {
      {"get/s", column(0, &Figures::get_per_sec), column(1, &Figures::get_per_sec), false},
      {"set/s", column(0, &Figures::set_per_sec), column(1, &Figures::set_per_sec), false},
      {"ops/s", column(0, &Figures::ops_per_sec), column(1, &Figures::ops_per_sec), false},
      {"hit ratio", column(0, &Figures::hit_ratio), column(1, &Figures::hit_ratio), true},
      {"tier-0 share of hits", column(0, &Figures::tier0_hit_share), column(1, &Figures::tier0_hit_share), true},
      {"CPU us/op", column(0, &Figures::cpu_us_per_op), column(1, &Figures::cpu_us_per_op), false},
  };
  const std::pair<const char*, LatencySummary Figures::*> ops[] = {{"get", &Figures::get}, {"set", &Figures::set}};
  const std::pair<const char*, double LatencySummary::*> qs[] = {{"mean", &LatencySummary::mean_us},
                                                                 {"p50", &LatencySummary::p50_us},
                                                                 {"p90", &LatencySummary::p90_us},
                                                                 {"p99", &LatencySummary::p99_us},
                                                                 {"p99.9", &LatencySummary::p999_us},
                                                                 {"max", &LatencySummary::max_us}};
  for (const auto& [opName, op] : ops) {
    for (const auto& [qName, q] : qs) {
      rows.push_back({std::string(opName) + " " + qName + " us", lat(0, op, q), lat(1, op, q), false});
    }
  }
  out << formatComparison("A: " + a.positional[0], "B: " + a.positional[1], rows);
  return kExitOk;
}

int commandSweep(const Args& a, std::ostream& out, std::ostream& err, bool terminal) {
  requireConfig(a);
  if (!a.sweepKind) throw UsageError("sweep needs one of --threads LIST, --cache-size LIST, --tier-ratio LIST");
  std::vector<std::string> values = splitList(a.sweepValues);
  if (values.empty()) throw UsageError("the sweep list is empty");
  LoadedConfig l = loadConfig(a.config, err);
  // Check every value before the first run.
  for (const std::string& v : values) {
    CacheConfig c = l.cache;
    WorkloadConfig w = l.workload;
    applySweepValue(*a.sweepKind, v, c, w);
    c.validate();
  }
  bool verbose = a.progress.value_or(terminal);
  std::vector<SweepRow> rows;
  for (const std::string& v : values) {
    CacheConfig c = l.cache;
    WorkloadConfig w = l.workload;
    applySweepValue(*a.sweepKind, v, c, w);
    std::vector<double> ops, gets, sets, hits;
    for (uint32_t run = 0; run < a.runs; ++run) {
      try {
        Figures f = figuresOf(runOnce(l, c, w));
        ops.push_back(f.ops_per_sec);
        gets.push_back(f.get_per_sec);
        sets.push_back(f.set_per_sec);
        hits.push_back(f.hit_ratio);
        if (verbose)
          err << "sweep: " << sweepColumn(*a.sweepKind) << " " << v << " run " << run + 1 << "/" << a.runs << ": "
              << shortNumber(f.ops_per_sec) << " ops/s" << std::endl;
      } catch (const ConfigError&) {
        throw;
      } catch (const std::exception& e) {
        err << "tiercache-bench: " << sweepColumn(*a.sweepKind) << " " << v << ": " << e.what() << "\n";
        return kExitFailed;
      }
    }
    SweepRow row{v, a.runs, median(ops), median(gets), median(sets), median(hits)};
    if (*a.sweepKind == SweepKind::kCacheSize) {
      char mib[32];
      std::snprintf(mib, sizeof mib, "%g", double(parseSize(v, "")) / double(1 << 20));
      row.value = mib;
    }
    rows.push_back(row);
  }
  std::string prefix = a.output.empty() ? "sweep" : a.output;
  std::string csv = prefix + ".csv", gp = prefix + ".gp", png = prefix + ".png";
  std::string csvText = sweepCsv(*a.sweepKind, rows);
  std::ofstream(csv) << csvText;
  std::string title = "tiercache-bench sweep over " + std::string(sweepColumn(*a.sweepKind)) + ": " +
                      std::filesystem::path(a.config).filename().string();
  std::ofstream(gp) << sweepGnuplot(*a.sweepKind, csv, png, title);
  out << csvText;
  out << "wrote " << csv << " and " << gp << "\n";
  std::string command = "gnuplot '" + gp + "'";
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    err << "tiercache-bench: gnuplot not found (Debian: gnuplot-nox); draw the plot later with: " << command << "\n";
  } else if (std::system(command.c_str()) != 0) {
    err << "tiercache-bench: gnuplot failed on " << gp << "\n";
    return kExitFailed;
  } else {
    out << "wrote " << png << "\n";
  }
  return kExitOk;
}

}  // namespace

std::string benchUsage() {
  return "usage: tiercache-bench --config FILE [--json] [--progress | --no-progress] [--no-limits] [--max-ops N]\n"
         "       tiercache-bench record --config FILE -o TRACE\n"
         "       tiercache-bench replay --config FILE --trace TRACE [--trace-format F] [--threads N]\n"
         "                              [--lookaside | --no-lookaside]\n"
         "                              [--json] [--no-limits] [--progress | --no-progress]\n"
         "       tiercache-bench compare A.json B.json [-n RUNS]\n"
         "       tiercache-bench simulate --config FILE --objects N[,N...] [--trace TRACE] [--policies P,...]\n"
         "       tiercache-bench sweep --config FILE (--threads L | --cache-size L | --tier-ratio L)\n"
         "                             [-n RUNS] [--out PREFIX]\n"
         "\n"
         "FILE is a tiercache config (cache options plus a \"workload\" object) or a CacheLib\n"
         "cachebench config (cache_config + test_config, // comments allowed; docs/cachebench.md).\n"
         "\n"
         "  (run)           build the cache, run the workload, print a report; a single-threaded\n"
         "                  run also prints the optimal (Belady) and LRU hit ratios beside the\n"
         "                  measured one (--no-limits skips that). --max-ops N: at most N\n"
         "                  operations per thread (a cachebench trace replay: N x threads records)\n"
         "  record          write the workload's requests as a trace (.csv: CSV, else binary)\n"
         "  replay          replay a trace on the config's cache over N threads (default 1); F is\n"
         "                  auto (default), tiercache, oracle-general, twitter or meta-kv\n"
         "  simulate        miss ratios of the reference policies (lru fifo clock sieve arc s3fifo\n"
         "                  wtinylfu) over unit-size objects, at each capacity in objects\n"
         "  compare         run A and B alternately RUNS times (default 5), print medians and deltas\n"
         "  sweep           run the workload for each value of a list (L = comma-separated:\n"
         "                  1,2,4 | 256MiB,512MiB | 1:1,1:3) and write PREFIX.csv, PREFIX.gp and,\n"
         "                  with gnuplot, PREFIX.png (default PREFIX: sweep)\n"
         "  --json          print the report as one JSON document on stdout\n"
         "  --progress      progress lines on stderr every workload.progress_interval_ms (a bar\n"
         "                  when stderr is a terminal, the default there); --no-progress: none\n"
         "  --help          this text\n"
         "\n"
         "Exit status: 0 success, 1 value verification failures or run-time failure,\n"
         "2 bad usage or config.\n";
}

int runBenchCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, bool stderrIsTerminal) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      out << benchUsage();
      return kExitOk;
    }
  }
  std::string command = "run";
  size_t first = 0;
  if (!args.empty() && (args[0] == "run" || args[0] == "record" || args[0] == "replay" || args[0] == "compare" ||
                        args[0] == "sweep" || args[0] == "simulate")) {
    command = args[0];
    first = 1;
  }
  try {
    Args a = parseArgs(command, args, first);
    if (command == "run") return commandRun(a, out, err, stderrIsTerminal);
    if (command == "record") return commandRecord(a, out, err);
    if (command == "replay") return commandReplay(a, out, err, stderrIsTerminal);
    if (command == "compare") return commandCompare(a, out, err, stderrIsTerminal);
    if (command == "simulate") return commandSimulate(a, out, err);
    return commandSweep(a, out, err, stderrIsTerminal);
  } catch (const UsageError& e) {
    err << "tiercache-bench: " << e.what() << "\n\n" << benchUsage();
    return kExitUsage;
  } catch (const ConfigError& e) {
    err << "tiercache-bench: " << e.what() << "\n";
    return kExitUsage;
  } catch (const TraceError& e) {
    err << "tiercache-bench: " << e.what() << "\n";
    return kExitFailed;
  } catch (const std::exception& e) {
    err << "tiercache-bench: " << e.what() << "\n";
    return kExitFailed;
  }
}

}  // namespace tiercache::bench
