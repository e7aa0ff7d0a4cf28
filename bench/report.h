// Report: a WorkloadResult as text (cachebench-style) or as JSON.
//
// Cache counters (alloc attempts, evictions, background evictions,
// demotions, promotions, gets, hits) are the change over the measured phase; items are counted at its end; op rates are the
// workload's own counts over the measured wall-clock time.
#pragma once

#include <cstdint>
#include <string>

#include "bench/runner.h"
#include "bench/workload.h"

namespace tiercache::bench {

std::string formatReport(const WorkloadConfig& config, const WorkloadResult& result);
std::string reportJson(const WorkloadConfig& config, const WorkloadResult& result);
// One progress line (no newline), e.g. for stderr.
std::string formatProgress(const ProgressSnapshot& p);

// 1234567 -> "1,234,567"
std::string withCommas(uint64_t n);

}  // namespace tiercache::bench
