// Report: a WorkloadResult as text (cachebench-style) or as JSON.
//
// Cache counters are the change over the measured phase, gauges (items,
// bytes) are read at its end; op rates are the workload's own counts over
// the measured wall-clock time. Both reports list every cache- and
// tier-level row of the counter tables (allocator/cache_stats.h): the JSON
// all of them, the text the counters that moved and the gauges not zero,
// under "== Counters (measured phase) ==" and in the per-tier lines, after
// the cachebench-style headline figures.
#pragma once

#include <cstdint>
#include <string>

#include "bench/runner.h"
#include "bench/workload.h"

namespace tiercache::bench {

struct HitRatioLimits;

// limits: the simulated optimal and LRU hit ratios, printed beside the
// measured one (nullptr: not computed; `limitsNote` then says why, if set).
std::string formatReport(const WorkloadConfig& config, const WorkloadResult& result,
                         const HitRatioLimits* limits = nullptr, const std::string& limitsNote = "");
std::string reportJson(const WorkloadConfig& config, const WorkloadResult& result,
                       const HitRatioLimits* limits = nullptr);
// One progress line (no newline), e.g. for stderr.
std::string formatProgress(const ProgressSnapshot& p);
// A progress bar for a terminal (no newline): done/total, rate, hit ratio
// and the time left at the current rate, e.g.
// "[#########...........]  45.0%  1.2M ops/s  hit 71.20%  ETA 0:03".
std::string formatProgressBar(const ProgressSnapshot& p, int width = 24);

// 1234567 -> "1,234,567"
std::string withCommas(uint64_t n);

}  // namespace tiercache::bench
