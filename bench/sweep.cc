#include "bench/sweep.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace tiercache::bench {

namespace {

uint64_t tierBytes(const CacheConfig& c) {
  uint64_t sum = 0;
  for (const TierConfig& t : c.tiers) sum += t.size;
  return sum;
}

bool usesRatios(const CacheConfig& c) {
  for (const TierConfig& t : c.tiers)
    if (t.size == 0 && t.ratio > 0) return true;
  return false;
}

uint64_t roundToSlabs(uint64_t bytes, uint64_t slab) { return bytes / slab * slab; }

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

const char* sweepColumn(SweepKind kind) {
  switch (kind) {
    case SweepKind::kThreads: return "threads";
    case SweepKind::kCacheSize: return "cache_size_mib";
    case SweepKind::kTierRatio: return "tier_ratio";
  }
  return "?";
}

std::vector<std::string> splitList(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

void applySweepValue(SweepKind kind, const std::string& value, CacheConfig& cache, WorkloadConfig& workload) {
  switch (kind) {
    case SweepKind::kThreads: {
      std::string path = "--threads " + value;
      size_t used = 0;
      unsigned long n = 0;
      try {
        n = std::stoul(value, &used);
      } catch (const std::exception&) {
      }
      if (used != value.size() || n < 1 || n > 1024) throw ConfigError(path, "must be a whole number in [1,1024]");
      workload.threads = uint32_t(n);
      return;
    }
    case SweepKind::kCacheSize: {
      std::string path = "--cache-size " + value;
      uint64_t total = parseSize(value, path);
      if (usesRatios(cache)) {
        cache.total_size = total;
        return;
      }
      uint64_t old = tierBytes(cache);
      if (old == 0) throw ConfigError(path, "the config's tiers have no sizes to scale");
      uint64_t left = total;
      for (size_t i = 0; i < cache.tiers.size(); ++i) {
        TierConfig& t = cache.tiers[i];
        uint64_t size = i + 1 == cache.tiers.size() ? left : roundToSlabs(uint64_t(double(t.size) * double(total) / double(old)), cache.slab_size);
        t.size = size;
        left -= std::min(left, size);
      }
      if (cache.total_size != 0 && cache.total_size < total) cache.total_size = total;
      return;
    }
    case SweepKind::kTierRatio: {
      std::string path = "--tier-ratio " + value;
      size_t colon = value.find(':');
      double a = 0, b = 0;
      try {
        size_t ua = 0, ub = 0;
        a = std::stod(value.substr(0, colon), &ua);
        b = std::stod(value.substr(colon + 1), &ub);
        if (colon == std::string::npos || ua != colon || ub != value.size() - colon - 1) a = -1;
      } catch (const std::exception&) {
        a = -1;
      }
      if (!(a > 0 && b > 0)) throw ConfigError(path, "must be A:B with A, B > 0 (first tier : second tier)");
      if (cache.tiers.size() != 2) throw ConfigError(path, "needs a config with exactly two tiers");
      if (usesRatios(cache)) {
        cache.tiers[0].ratio = a;
        cache.tiers[1].ratio = b;
        return;
      }
      uint64_t total = tierBytes(cache);
      uint64_t first = roundToSlabs(uint64_t(double(total) * a / (a + b)), cache.slab_size);
      if (first == 0 || first >= total) throw ConfigError(path, "leaves a tier without a slab");
      cache.tiers[0].size = first;
      cache.tiers[1].size = total - first;
      return;
    }
  }
}

std::string sweepCsv(SweepKind kind, const std::vector<SweepRow>& rows) {
  std::string s = std::string(sweepColumn(kind)) + ",runs,ops_per_sec,get_per_sec,set_per_sec,hit_ratio\n";
  char buf[256];
  for (const SweepRow& r : rows) {
    std::snprintf(buf, sizeof buf, ",%u,%.0f,%.0f,%.0f,%.6f\n", r.runs, r.ops_per_sec, r.get_per_sec, r.set_per_sec,
                  r.hit_ratio);
    s += csvField(r.value) + buf;
  }
  return s;
}

std::string sweepGnuplot(SweepKind kind, const std::string& csvPath, const std::string& pngPath,
                         const std::string& title) {
  const char* xlabel = kind == SweepKind::kThreads     ? "worker threads"
                       : kind == SweepKind::kCacheSize ? "cache size (MiB)"
                                                       : "tier ratio (first : second)";
  auto quote = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
    return q + "'";
  };
  std::ostringstream g;
  g << "# Written by tiercache-bench sweep; run: gnuplot THIS_FILE\n"
    << "set datafile separator ','\n"
    << "set terminal pngcairo size 900,540 noenhanced font ',10'\n"
    << "set output " << quote(pngPath) << "\n"
    << "set title " << quote(title) << "\n"
    << "set xlabel " << quote(xlabel) << "\n"
    << "set ylabel 'operations per second (median)'\n"
    << "set y2label 'hit ratio (%)'\n"
    << "set yrange [0:*]\nset y2range [0:100]\nset ytics nomirror\nset y2tics\nset grid\n"
    << "set key outside top center horizontal\n"
    << "set offsets 0.3, 0.3, 0, 0\n"
    << "plot " << quote(csvPath) << " skip 1 using 0:3:xtic(1) with linespoints lw 2 pt 7 title 'ops/s' axes x1y1, \\\n"
    << "     '' skip 1 using 0:4 with linespoints lw 2 pt 5 title 'get/s' axes x1y1, \\\n"
    << "     '' skip 1 using 0:5 with linespoints lw 2 pt 9 title 'set/s' axes x1y1, \\\n"
    << "     '' skip 1 using 0:($6*100) with linespoints lw 2 dt 2 pt 13 title 'hit ratio' axes x1y2\n";
  return g.str();
}

}  // namespace tiercache::bench
