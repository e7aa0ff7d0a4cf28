// Sweeps: one parameter over a list of values (threads, cache size or the
// split between two tiers), the workload run at each; the medians go to a
// CSV file and a gnuplot script draws throughput and hit ratio to a PNG.
#pragma once

#include <string>
#include <vector>

#include "allocator/cache_config.h"
#include "bench/workload.h"

namespace tiercache::bench {

enum class SweepKind : uint8_t {
  kThreads,    // values: 1, 2, 4 ...
  kCacheSize,  // values: sizes ("256MiB"); all tiers scaled to that total
  kTierRatio,  // values: "1:3" = first tier : second tier, same total
};

const char* sweepColumn(SweepKind kind);  // "threads", "cache_size_mib", "tier_ratio"

// Applies one value to copies of the configs; throws ConfigError naming the
// value ("--tier-ratio 1:x: ...").
void applySweepValue(SweepKind kind, const std::string& value, CacheConfig& cache, WorkloadConfig& workload);
// "1,2,4" -> {"1","2","4"}
std::vector<std::string> splitList(const std::string& list);

struct SweepRow {
  std::string value;  // as given ("1:3"); cache sizes are written in MiB
  uint32_t runs = 0;
  double ops_per_sec = 0, get_per_sec = 0, set_per_sec = 0, hit_ratio = 0;  // medians
};

std::string sweepCsv(SweepKind kind, const std::vector<SweepRow>& rows);
// A gnuplot script that draws csvPath into pngPath: throughput on the left
// axis, hit ratio (%) on the right, one point per value.
std::string sweepGnuplot(SweepKind kind, const std::string& csvPath, const std::string& pngPath, const std::string& title);

}  // namespace tiercache::bench
