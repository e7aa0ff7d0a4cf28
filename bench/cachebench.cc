#include "bench/cachebench.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bench/cachebench_keys.h"
#include "bench/stressors.h"

namespace tiercache::bench {

namespace {

using json = nlohmann::json;

constexpr uint64_t kMiB = 1ull << 20;

// Where our validation errors point, in cachebench's words.
const std::map<std::string, std::string>& pathMap() {
  static const std::map<std::string, std::string> kMap = {
      {"total_size", "cache_config.cacheSizeMB"},
      {"tiers", "cache_config.memoryTiers"},
      {"allocation.growth_factor", "cache_config.allocFactor"},
      {"allocation.min_size", "cache_config.minAllocSize"},
      {"allocation.max_size", "cache_config.maxAllocSize"},
      {"allocation.sizes", "cache_config.allocSizes"},
      {"pools", "cache_config.poolSizes"},
      {"index.bucket_power", "cache_config.htBucketPower"},
      {"index.lock_power", "cache_config.htLockPower"},
      {"eviction.lru_refresh_ms", "cache_config.lruRefreshSec"},
      {"eviction.lru_insertion_point", "cache_config.lruIpSpec"},
      {"background_eviction.interval_ms", "cache_config.backgroundEvictorIntervalMilSec"},
      {"background_eviction.threads", "cache_config.evictorThreads"},
      {"background_eviction.low_watermark", "cache_config.lowEvictionAcWatermark"},
      {"background_eviction.high_watermark", "cache_config.highEvictionAcWatermark"},
      {"background_eviction.min_batch", "cache_config.minEvictionBatch"},
      {"background_eviction.max_batch", "cache_config.maxEvictionBatch"},
      {"background_eviction.keep_free", "cache_config.nKeepFree"},
      {"promotion.interval_ms", "cache_config.backgroundPromoterIntervalMilSec"},
      {"promotion.max_batch", "cache_config.maxPromotionBatch"},
      {"promotion.upper_free_watermark", "cache_config.promotionAcWatermark"},
      {"workload.threads", "test_config.numThreads"},
      {"workload.ops_per_thread", "test_config.numOps"},
      {"workload.keys", "test_config.numKeys"},
      {"workload.key_size", "test_config.keySizeRange"},
      {"workload.key_size_buckets", "test_config.keySizeRangeProbability"},
      {"workload.value_size", "test_config.valSizeRange"},
      {"workload.value_size_buckets", "test_config.valSizeRangeProbability"},
      {"workload.popularity.buckets", "test_config.popularityBuckets"},
      {"workload.popularity.weights", "test_config.popularityWeights"},
      {"workload.key_pools", "test_config.keyPoolDistribution"},
      {"workload.op_pools", "test_config.opPoolDistribution"},
      {"workload.op_delay_ns", "test_config.opDelayNs"},
      {"workload.pool_distributions", "test_config.poolDistributions"},
      {"workload", "test_config"},
  };
  return kMap;
}

// cachebench writes numbers and booleans as JSON strings now and then
// ("true", "4096"); accept both forms.
double number(const json& v, const std::string& path) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    try {
      size_t used = 0;
      double d = std::stod(s, &used);
      if (used == s.size()) return d;
    } catch (const std::exception&) {
    }
  }
  throw ConfigError(path, "must be a number, not " + v.dump());
}

uint64_t count(const json& v, const std::string& path) {
  double d = number(v, path);
  if (!(d >= 0 && d == std::floor(d) && d < 1.8e19)) throw ConfigError(path, "must be a whole number >= 0");
  return uint64_t(d);
}

uint32_t count32(const json& v, const std::string& path) {
  uint64_t n = count(v, path);
  if (n > UINT32_MAX) throw ConfigError(path, "must be below 2^32");
  return uint32_t(n);
}

bool boolean(const json& v, const std::string& path) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v == "true") return true;
  if (v == "false") return false;
  throw ConfigError(path, "must be true or false, not " + v.dump());
}

std::string text(const json& v, const std::string& path) {
  if (!v.is_string()) throw ConfigError(path, "must be a string, not " + v.dump());
  return v.get<std::string>();
}

std::vector<double> numbers(const json& v, const std::string& path) {
  if (!v.is_array()) throw ConfigError(path, "must be an array of numbers");
  std::vector<double> out;
  for (size_t i = 0; i < v.size(); ++i) out.push_back(number(v[i], path + "[" + std::to_string(i) + "]"));
  return out;
}

// "0", "0,1", "0-2", 0 or [0, 1] -> node list.
std::vector<unsigned> nodeList(const json& v, const std::string& path) {
  std::vector<unsigned> out;
  if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) out.push_back(count32(v[i], path + "[" + std::to_string(i) + "]"));
    return out;
  }
  if (v.is_number()) return {count32(v, path)};
  std::string s = text(v, path);
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');) {
    size_t dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        out.push_back(unsigned(std::stoul(part)));
      } else {
        unsigned a = unsigned(std::stoul(part.substr(0, dash))), b = unsigned(std::stoul(part.substr(dash + 1)));
        if (a > b) throw std::invalid_argument("range");
        for (unsigned n = a; n <= b; ++n) out.push_back(n);
      }
    } catch (const std::exception&) {
      throw ConfigError(path, "\"" + s + "\" is not a node list such as \"0\", \"0,1\" or \"0-1\"");
    }
  }
  if (out.empty()) throw ConfigError(path, "names no node");
  return out;
}

// keySizeRange / valSizeRange with their ...Probability, as cachebench
// reads them: n + 1 bounds with n probabilities are piecewise-uniform pieces
// [a, b), [b, c) ... (cachebench samples a real number and truncates it, so
// the whole sizes are a .. b - 1); with as many probabilities as sizes
// (`discrete`, cachebench allows it for values only) each listed size is
// drawn exactly, with its probability. Without probabilities a two-entry
// range is taken as one inclusive range [a, b] (cachebench itself refuses it).
std::vector<SizeBucket> sizePieces(const json& range, const json* probability, const std::string& rangePath,
                                   const std::string& probPath, bool discreteAllowed) {
  std::vector<double> r = numbers(range, rangePath);
  for (size_t i = 0; i < r.size(); ++i)
    if (!(r[i] >= 0 && r[i] == std::floor(r[i]) && r[i] < 1e12))
      throw ConfigError(rangePath + "[" + std::to_string(i) + "]", "must be a whole number >= 0");
  std::vector<SizeBucket> out;
  if (!probability) {
    if (r.size() != 2) throw ConfigError(probPath, "missing (needed for a range other than [min, max])");
    if (r[1] < r[0]) throw ConfigError(rangePath, "must not decrease");
    out.push_back(SizeBucket{SizeRange{uint64_t(r[0]), uint64_t(r[1])}, 1.0});
    return out;
  }
  std::vector<double> p = numbers(*probability, probPath);
  std::string rangeKey = rangePath.substr(rangePath.find('.') + 1);
  if (discreteAllowed && p.size() == r.size()) {
    for (size_t i = 0; i < r.size(); ++i) out.push_back(SizeBucket{SizeRange{uint64_t(r[i]), uint64_t(r[i])}, p[i]});
    return out;
  }
  if (p.size() + 1 != r.size())
    throw ConfigError(probPath, "has " + std::to_string(p.size()) + " entries; cachebench needs one per piece of " +
                                    rangeKey + " (" + std::to_string(r.size() - 1) + ")" +
                                    (discreteAllowed ? " or one per size (" + std::to_string(r.size()) + ")" : ""));
  for (size_t i = 0; i + 1 < r.size(); ++i) {
    uint64_t lo = uint64_t(r[i]), hi = uint64_t(r[i + 1]);
    if (hi < lo) throw ConfigError(rangePath, "must not decrease");
    if (hi == lo) {
      // An empty piece: cachebench never draws it; keep the weights aligned.
      out.push_back(SizeBucket{SizeRange{lo, lo}, 0.0});
      continue;
    }
    out.push_back(SizeBucket{SizeRange{lo, hi - 1}, p[i]});
  }
  return out;
}

// Special stressors cachebench selects by test_config.name: they exercise
// CacheLib's own structures, not a key-value workload tiercache-bench can run.
const std::map<std::string, std::string>& specialStressors() {
  static const std::map<std::string, std::string> k = {
      {"high_refcount", "tests CacheLib's item refcount limit"},
      {"cachelib_map", "tests CacheLib's CacheLibMap structure"},
      {"cachelib_range_map", "tests CacheLib's RangeMap structure"},
      {"fast_shutdown", "tests CacheLib's shared-memory fast shutdown and restore"},
      {"object_cache", "tests CacheLib's object cache (C++ objects, not bytes)"},
      {"async", "drives CacheLib's asynchronous (coroutine) API"},
  };
  return k;
}

// Reads a side file a config names (popDistFile, valSizeDistFile), relative
// to the config's directory as cachebench resolves it.
json readSideFile(const std::string& dir, const std::string& name, const std::string& path) {
  std::filesystem::path f = std::filesystem::path(name).is_absolute() ? std::filesystem::path(name)
                                                                       : std::filesystem::path(dir) / name;
  std::ifstream in(f);
  if (!in) throw ConfigError(path, "cannot read " + f.string() + " (resolved against configPath \"" + dir + "\")");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  json doc = json::parse(text.begin(), text.end(), nullptr, false, /*ignore_comments=*/true);
  if (!doc.is_object()) throw ConfigError(path, f.string() + " is not a JSON object");
  return doc;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// "" for a key of an ignored row, " (unknown key)" for one no row holds.
std::string ignoredNote(CachebenchSection section, const std::string& key) {
  const CachebenchKey* row = findCachebenchKey(section, key);
  if (!row || row->handling != CachebenchHandling::kIgnored) return " (unknown key)";
  return *row->brief ? std::string(" (") + row->brief + ")" : "";
}

// A key the import takes must be a row it may take: honoured or refused
// when set. Anything else is a table that no longer matches the code.
std::string takenRow(CachebenchSection section, const std::string& key, const std::string& path) {
  const CachebenchKey* row = findCachebenchKey(section, key);
  if (!row || (row->handling != CachebenchHandling::kHonoured && row->handling != CachebenchHandling::kRefusedIfSet))
    throw std::logic_error("cachebench import takes " + path +
                           ", which bench/cachebench_keys.cc does not list as read");
  return path;
}

void refuseIfSet(const json& v, const std::string& path, const std::string& why) {
  if (number(v, path) != 0) throw ConfigError(path, why);
}

// Where a cachebench NVM cache's file goes (docs/cachebench.md,
// nvmCachePaths): never onto a device or path that is not a plain file, and
// never into a directory that is not there; otherwise a file in /var/tmp.
struct FlashPlace {
  std::string file;
  bool scratch = true;  // made up here: removed after the run
  std::string note;     // why the config's path was not used ("" when it was)
};

FlashPlace placeFlashFile(const std::vector<std::string>& paths, const std::string& key) {
  static std::atomic<unsigned> serial{0};
  auto scratchIn = [](const std::filesystem::path& dir) {
    return (dir / ("tiercache-cachebench-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) + ".flash"))
        .string();
  };
  FlashPlace out{scratchIn("/var/tmp"), true, ""};
  if (paths.empty()) return out;
  const std::filesystem::path p = paths[0];
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(p, ec);
  if (std::filesystem::is_directory(st)) return {scratchIn(p), true, ""};
  if (std::filesystem::is_regular_file(st)) return {p.string(), false, ""};
  // A device path that is not there (ssd_perf's /dev/md0 on a machine
  // without that array) gets no file either: /dev is no place for one.
  const bool devicePath = p.lexically_normal().string().rfind("/dev/", 0) == 0;
  if (std::filesystem::exists(st)) {
    out.note = key + " (" + p.string() +
               " is not a regular file; tiercache-bench never writes a device a config "
               "names: the flash file is in /var/tmp)";
  } else if (devicePath) {
    out.note = key + " (" + p.string() +
               " names a device that is not there; tiercache-bench creates no file "
               "under /dev: the flash file is in /var/tmp)";
  } else if (p.has_parent_path() && std::filesystem::is_directory(p.parent_path(), ec)) {
    return {p.string(), true, ""};
  } else {
    out.note = key + " (the directory of " + p.string() + " does not exist: the flash file is in /var/tmp)";
  }
  return out;
}

// Sizes and places the flash store of a non-zero nvmCacheSizeMB: capped by
// the free disk where the file goes and by the DRAM its index takes.
void placeFlash(uint64_t nvmMiB, const std::vector<std::string>& paths, const WorkloadConfig& w, CacheConfig& c,
                CachebenchConfig& out) {
  const std::string key = "cache_config.nvmCacheSizeMB";
  FlashPlace place = placeFlashFile(paths, "cache_config.nvmCachePaths");
  if (!place.note.empty()) out.ignored.push_back(place.note);
  for (size_t i = 1; i < paths.size(); ++i)
    out.ignored.push_back("cache_config.nvmCachePaths[" + std::to_string(i) + "] (" + paths[i] +
                          ": the flash store has one file, the first path's)");
  FlashStoreConfig& fl = c.flash;
  // The index holds size / expected_item_size entries (up to twice that
  // after rounding to a power of two), 12 bytes each.
  const uint64_t meanItem = 40 + (w.key_size.min + w.key_size.max) / 2 + (w.value_size.min + w.value_size.max) / 2;
  fl.expected_item_size = std::clamp<uint64_t>(meanItem, 64, 16 * kMiB);
  uint64_t size = nvmMiB * kMiB;
  const std::filesystem::path dir = std::filesystem::path(place.file).parent_path();
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) == 0) {
    uint64_t avail = uint64_t(vfs.f_bavail) * vfs.f_frsize;
    std::error_code ec;
    if (!place.scratch) avail += std::filesystem::file_size(place.file, ec) * !ec;  // an existing file's own room
    const uint64_t most = avail / 10 * 9;
    if (size > most) {
      out.ignored.push_back(key + " (" + std::to_string(nvmMiB) + " MiB capped at " + std::to_string(most / kMiB) +
                            " MiB: 90% of the free space of " + dir.string() + ")");
      size = most;
    }
  }
  const uint64_t ram = uint64_t(::sysconf(_SC_PHYS_PAGES)) * uint64_t(::sysconf(_SC_PAGESIZE));
  const uint64_t indexMost = ram / 8 / 24 * fl.expected_item_size;
  if (size > indexMost) {
    out.ignored.push_back(key + " (" + std::to_string(size / kMiB) + " MiB capped at " +
                          std::to_string(indexMost / kMiB) + " MiB: the index of its " +
                          std::to_string(fl.expected_item_size) + "-byte items would take more than 1/8 of memory)");
    size = indexMost;
  }
  const uint64_t regions = size > 4096 ? (size - 4096) / fl.region_size : 0;
  if (regions < 2)
    throw ConfigError(key, std::to_string(nvmMiB) + " MiB leaves room for " + std::to_string(regions) +
                               " flash regions of " + std::to_string(fl.region_size / kMiB) + " MiB in " +
                               dir.string() +
                               "; the store needs 2 (free disk space, or a smaller "
                               "navyRegionSizeMB)");
  fl.size = 4096 + regions * fl.region_size;
  fl.path = place.file;
  if (place.scratch) out.flash_scratch = place.file;
}

}  // namespace

bool isCachebenchDocument(std::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  return doc.is_object() && (doc.contains("cache_config") || doc.contains("test_config"));
}

std::string cachebenchKeyFor(const std::string& path) {
  // Longest mapped prefix: "tiers[1].size" -> "cache_config.memoryTiers".
  std::string best, mapped;
  for (const auto& [ours, theirs] : pathMap()) {
    if (path.rfind(ours, 0) == 0 && ours.size() > best.size() &&
        (path.size() == ours.size() || path[ours.size()] == '.' || path[ours.size()] == '[')) {
      best = ours;
      mapped = theirs;
    }
  }
  return best.empty() ? path : mapped;
}

CachebenchConfig importCachebench(std::string_view document, const std::string& source) {
  json doc;
  try {
    doc = json::parse(document.begin(), document.end(), nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    throw ConfigError("", std::string("invalid JSON: ") + e.what());
  }
  if (!doc.is_object()) throw ConfigError("", "a cachebench config must be a JSON object");
  CachebenchConfig out;
  for (const auto& [key, val] : doc.items())
    if (key != "cache_config" && key != "test_config") out.ignored.push_back(key + " (unknown key)");
  if (!doc.contains("cache_config") || !doc["cache_config"].is_object())
    throw ConfigError("cache_config", "missing (an object)");
  if (!doc.contains("test_config") || !doc["test_config"].is_object())
    throw ConfigError("test_config", "missing (an object)");
  const json& cc = doc["cache_config"];
  const json& tc = doc["test_config"];
  auto at = [](const json& obj, const char* key) -> const json* {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  };

  // ---- cache_config ----
  CacheConfig& c = out.cache;
  c.eviction.lru_refresh_ms = 60'000;  // cachebench's default lruRefreshSec is 60
  uint64_t cacheMiB = 0;
  std::vector<std::string> handled;
  auto cpath = [](const std::string& k) { return "cache_config." + k; };
  auto take = [&](const char* key, auto fn) {
    if (const json* v = at(cc, key)) fn(*v, cpath(key));
    handled.push_back(key);
  };
  take("cacheSizeMB", [&](const json& v, const std::string& p) {
    cacheMiB = count(v, p);
    if (cacheMiB == 0) throw ConfigError(p, "must be at least 1");
  });
  if (cacheMiB == 0) throw ConfigError("cache_config.cacheSizeMB", "missing");
  take("allocFactor", [&](const json& v, const std::string& p) { c.allocation.growth_factor = number(v, p); });
  take("minAllocSize", [&](const json& v, const std::string& p) { c.allocation.min_size = count32(v, p); });
  take("maxAllocSize", [&](const json& v, const std::string& p) { c.allocation.max_size = count32(v, p); });
  take("allocSizes", [&](const json& v, const std::string& p) {
    // tiercache's slots are 8-byte aligned: a size that is not a multiple
    // of 8 is rounded up to one, with a note in the warning.
    std::vector<std::string> rounded;
    for (double d : numbers(v, p)) {
      if (d >= 1 && d < 4e9 && uint64_t(d) % 8 != 0) {
        const uint32_t up = uint32_t((uint64_t(d) + 7) / 8 * 8);
        rounded.push_back(std::to_string(uint64_t(d)) + " -> " + std::to_string(up));
        d = up;
      }
      c.allocation.sizes.push_back(uint32_t(d));
    }
    if (!rounded.empty()) {
      std::string list;
      for (const std::string& r : rounded) list += (list.empty() ? "" : ", ") + r;
      out.ignored.push_back(p + " (rounded up to multiples of 8: " + list + ")");
    }
  });
  take("htBucketPower", [&](const json& v, const std::string& p) { c.index.bucket_power = count32(v, p); });
  take("htLockPower", [&](const json& v, const std::string& p) { c.index.lock_power = count32(v, p); });
  // CacheLib's lock power may exceed ours (at most 20 and <= bucket power): clamp, as it only sets striping.
  c.index.lock_power = std::min({c.index.lock_power, c.index.bucket_power, 20u});
  take("allocator", [&](const json& v, const std::string& p) {
    out.allocator = text(v, p);
    // cachebench's cache_component stressor drives one component: "RAM" is
    // a DRAM cache (run here as the LRU cache), "flash" a flash-only cache.
    if (out.allocator == "flash")
      throw ConfigError(p,
                        "\"flash\" is CacheLib's flash cache component on its own; tiercache's flash store "
                        "sits behind a memory cache (nvmCacheSizeMB): use \"LRU\" with nvmCacheSizeMB");
    if (out.allocator == "RAM") out.allocator = "LRU";
    if (policyForAllocator(out.allocator).empty())
      throw ConfigError(p, "\"" + out.allocator + "\" has no tiercache eviction policy mapped to it "
                           "(LRU, LRU5B, LRU2Q, LRU5B2Q, TinyLFU, TinyLFU5B; docs/cachebench.md)");
  });
  take("lruRefreshSec", [&](const json& v, const std::string& p) {
    c.eviction.lru_refresh_ms = uint32_t(std::min<uint64_t>(count(v, p) * 1000, 3'600'000));
  });
  take("lruIpSpec", [&](const json& v, const std::string& p) { c.eviction.lru_insertion_point = count32(v, p); });

  // Pools.
  uint64_t numPools = 1;
  take("numPools", [&](const json& v, const std::string& p) {
    numPools = count(v, p);
    if (numPools < 1 || numPools > 64) throw ConfigError(p, "must be in [1,64]");
  });
  std::vector<double> poolSizes;
  take("poolSizes", [&](const json& v, const std::string& p) {
    poolSizes = numbers(v, p);
    if (poolSizes.size() != numPools)
      throw ConfigError(p, "has " + std::to_string(poolSizes.size()) + " entries for numPools " + std::to_string(numPools));
  });
  if (poolSizes.empty()) poolSizes.assign(numPools, 1.0 / double(numPools));
  for (uint64_t i = 0; i < numPools; ++i)
    c.pools.push_back(PoolConfig{i == 0 ? "default" : "pool" + std::to_string(i), poolSizes[i]});

  // Tiers.
  c.total_size = cacheMiB * kMiB;
  if (const json* tiers = at(cc, "memoryTiers")) {
    std::string p = cpath("memoryTiers");
    if (!tiers->is_array() || tiers->empty()) throw ConfigError(p, "must be a non-empty array of tiers");
    unsigned drams = 0, files = 0;
    for (const json& t : *tiers) (t.contains("file") ? files : drams)++;
    unsigned dramNo = 0, fileNo = 0;
    for (size_t i = 0; i < tiers->size(); ++i) {
      const json& t = (*tiers)[i];
      std::string tp = p + "[" + std::to_string(i) + "]";
      if (!t.is_object()) throw ConfigError(tp, "must be an object");
      TierConfig tier;
      bool hasRatio = false;
      for (const auto& [key, val] : t.items()) {
        std::string kp = tp + "." + key;
        if (key == "ratio") {
          tier.ratio = number(val, kp);
          if (!(tier.ratio > 0)) throw ConfigError(kp, "must be > 0");
          hasRatio = true;
        } else if (key == "file") {
          // Our volatile pmem-file tier makes (and unlinks) its own file in
          // a directory: the directory of cachebench's file, or the path
          // itself when it is a directory.
          std::filesystem::path f = text(val, kp);
          if (f.empty()) throw ConfigError(kp, "must not be empty");
          std::error_code ec;
          tier.path = std::filesystem::is_directory(f, ec) ? f.string()
                      : f.has_parent_path()                ? f.parent_path().string()
                                                           : std::string(".");
          tier.kind = TierKind::kPmemFile;
        } else if (key == "memBindNodes") {
          tier.nodes = nodeList(val, kp);
        } else {
          throw ConfigError(kp, "unknown memory tier key (expected ratio, file or memBindNodes)");
        }
      }
      if (!hasRatio) throw ConfigError(tp + ".ratio", "missing");
      if (tier.kind == TierKind::kPmemFile && !tier.nodes.empty())
        throw ConfigError(tp + ".memBindNodes", "a file tier takes no memBindNodes (its file system places the pages)");
      if (tier.kind == TierKind::kPmemFile) {
        tier.name = files > 1 ? "pmem" + std::to_string(fileNo++) : "pmem";
      } else {
        tier.name = drams > 1 ? "dram" + std::to_string(dramNo++) : "dram";
      }
      c.tiers.push_back(tier);
    }
  } else {
    TierConfig dram;
    dram.name = "dram";
    dram.size = cacheMiB * kMiB;
    c.tiers.push_back(dram);
    c.total_size = 0;
  }
  handled.push_back("memoryTiers");
  // CacheLib's slabs are 4 MiB; a small tier gets 1 MiB slabs so that it
  // still has slabs for each size class in use (docs/cachebench.md).
  {
    double ratioSum = 0;
    for (const TierConfig& t : c.tiers) ratioSum += t.ratio;
    uint64_t smallest = UINT64_MAX;
    for (const TierConfig& t : c.tiers)
      smallest = std::min<uint64_t>(smallest, t.size ? t.size : uint64_t(double(c.total_size) * t.ratio / ratioSum));
    uint32_t largestClass = c.allocation.sizes.empty() ? c.allocation.max_size : c.allocation.sizes.back();
    c.slab_size = smallest < 256 * kMiB && largestClass <= kMiB ? kMiB : 4 * kMiB;
    if (c.allocation.max_size == 0) c.allocation.max_size = uint32_t(std::min<uint64_t>(c.slab_size, kMiB));
  }

  // Background eviction.
  BackgroundEvictionConfig& be = c.background_eviction;
  take("backgroundEvictorIntervalMilSec", [&](const json& v, const std::string& p) {
    uint64_t ms = count(v, p);
    be.enabled = ms > 0;  // cachebench: 0 = no background evictor
    if (ms > 0) be.interval_ms = uint32_t(std::min<uint64_t>(ms, UINT32_MAX));
  });
  take("evictorThreads", [&](const json& v, const std::string& p) { be.threads = count32(v, p); });
  take("backgroundEvictorStrategy", [&](const json& v, const std::string& p) {
    std::string s = text(v, p);
    // The names are the config's own (kEvictorStrategyNames); "" is cachebench's default.
    const std::optional<EvictorStrategyKind> kind =
        s.empty() ? EvictorStrategyKind::kFreeThreshold : valueOf(kEvictorStrategyNames, s);
    if (!kind) throw ConfigError(p, "\"" + s + "\" is not a strategy tiercache has (free-threshold or keep-free)");
    be.strategy = *kind;
  });
  take("lowEvictionAcWatermark", [&](const json& v, const std::string& p) { be.low_watermark = number(v, p); });
  take("highEvictionAcWatermark", [&](const json& v, const std::string& p) { be.high_watermark = number(v, p); });
  take("freeThreshold", [&](const json& v, const std::string& p) {
    double f = number(v, p);
    if (at(cc, "lowEvictionAcWatermark") && f != be.low_watermark)
      throw ConfigError(p, "is another name for lowEvictionAcWatermark and differs from it");
    be.low_watermark = f;
  });
  take("maxEvictionBatch", [&](const json& v, const std::string& p) { be.max_batch = count32(v, p); });
  take("minEvictionBatch", [&](const json& v, const std::string& p) { be.min_batch = count32(v, p); });
  take("nKeepFree", [&](const json& v, const std::string& p) { be.keep_free = count32(v, p); });

  // Promotion.
  PromotionConfig& pr = c.promotion;
  take("backgroundPromoterIntervalMilSec", [&](const json& v, const std::string& p) {
    uint64_t ms = count(v, p);
    if (ms > 0) {
      pr.enabled = true;
      pr.background = true;
      pr.interval_ms = uint32_t(std::min<uint64_t>(ms, UINT32_MAX));
    }
  });
  take("promoterThreads", [&](const json& v, const std::string& p) {
    if (count(v, p) > 1) throw ConfigError(p, "tiercache runs one promoter thread");
  });
  take("backgroundPromoterStrategy", [&](const json& v, const std::string& p) {
    std::string s = text(v, p);
    if (!s.empty() && s != "promotion-threshold")
      throw ConfigError(p, "\"" + s + "\" is not a promotion strategy tiercache has (promotion-threshold)");
  });
  take("maxPromotionBatch", [&](const json& v, const std::string& p) { pr.max_batch = count32(v, p); });
  take("promotionAcWatermark", [&](const json& v, const std::string& p) { pr.upper_free_watermark = number(v, p); });
  take("syncPromotion", [&](const json& v, const std::string& p) {
    if (boolean(v, p)) {
      pr.enabled = true;
      pr.background = false;
    }
  });
  take("numDuplicateElements", [&](const json& v, const std::string& p) {
    refuseIfSet(v, p, "an item lives in exactly one tier in tiercache: duplicates across tiers are not supported");
  });
  take("insertToFirstFreeTier", [&](const json& v, const std::string& p) {
    if (boolean(v, p)) throw ConfigError(p, "tiercache always inserts new items into the first tier");
  });
  take("insertTopTier", [&](const json& v, const std::string& p) {
    if (!boolean(v, p)) throw ConfigError(p, "tiercache always inserts new items into the first tier");
  });
  // NVM cache -> the flash store (flash/); placed and sized once the
  // workload's item sizes are known (placeFlash below).
  uint64_t nvmMiB = 0;
  std::vector<std::string> nvmPaths;
  take("nvmCacheSizeMB", [&](const json& v, const std::string& p) { nvmMiB = count(v, p); });
  take("nvmCachePaths", [&](const json& v, const std::string& p) {
    if (v.is_string()) {
      nvmPaths.push_back(v.get<std::string>());
      return;
    }
    if (!v.is_array()) throw ConfigError(p, "must be an array of paths");
    for (size_t i = 0; i < v.size(); ++i) nvmPaths.push_back(text(v[i], p + "[" + std::to_string(i) + "]"));
  });
  FlashStoreConfig& fl = c.flash;
  fl.region_eviction = RegionEviction::kLru;  // Navy's block cache default
  fl.reinsert_hits = false;                   // Navy reinserts only when asked
  fl.discard_contents = true;                 // cachebench starts its NVM cache empty
  take("navyRegionSizeMB", [&](const json& v, const std::string& p) {
    const uint64_t mib = count(v, p);
    if (mib < 1 || mib > 1024) throw ConfigError(p, "must be in [1, 1024] (MiB)");
    fl.region_size = mib * kMiB;
  });
  take("navyAdmissionWriteRateMB", [&](const json& v, const std::string& p) {
    fl.admit_write_mb_per_sec = double(count(v, p)) * double(kMiB) / 1e6;  // Navy's MB is 2^20 bytes
  });
  take("navyQDepth", [&](const json& v, const std::string& p) {
    const uint64_t q = count(v, p);
    if (q > 1024) throw ConfigError(p, "must be at most 1024");
    if (q > 0) fl.queue_depth = uint32_t(q);
  });
  take("navyHitsReinsertionThreshold", [&](const json& v, const std::string& p) {
    const uint64_t t = count(v, p);
    fl.reinsert_hits = t > 0;
    if (t > 1)
      out.ignored.push_back(p + " (" + std::to_string(t) + " taken as 1: tiercache reinserts an item read once)");
  });
  take("navySegmentedFifoSegmentRatio", [&](const json& v, const std::string& p) {
    const std::vector<double> r = numbers(v, p);
    if (!r.empty()) fl.region_eviction = RegionEviction::kFifo;
    if (r.size() > 1) out.ignored.push_back(p + " (segmented FIFO runs as one FIFO)");
  });
  take("navyDataChecksum", [&](const json& v, const std::string& p) { boolean(v, p); });  // always checksummed
  take("truncateItemToOriginalAllocSizeInNvm", [&](const json& v, const std::string& p) { boolean(v, p); });
  take("enableCachePersistence", [&](const json& v, const std::string& p) {
    if (boolean(v, p))
      throw ConfigError(p, "cachebench's shared-memory persistence is not available; tiercache persists "
                           "through a persistent pmem-file tier (docs/persistence.md)");
  });
  for (const auto& [key, val] : cc.items())
    if (!contains(handled, key)) out.ignored.push_back(cpath(key) + ignoredNote(CachebenchSection::kCacheConfig, key));

  // ---- test_config ----
  WorkloadConfig& w = out.workload;
  w.lookaside = false;   // cachebench's defaults
  w.prepopulate = false;
  w.threads = 1;
  std::vector<std::string> testHandled;
  auto tpath = [](const std::string& k) { return "test_config." + k; };
  auto ttake = [&](const char* key, auto fn) {
    if (const json* v = at(tc, key)) fn(*v, tpath(key));
    testHandled.push_back(key);
  };
  // Side files (popDistFile, valSizeDistFile, traces) are found as cachebench
  // finds them: in configPath, by default the config file's directory.
  std::string configDir = ".";
  if (!source.empty()) {
    std::filesystem::path parent = std::filesystem::path(source).parent_path();
    if (!parent.empty()) configDir = parent.string();
  }
  ttake("configPath", [&](const json& v, const std::string& p) {
    std::string d = text(v, p);
    if (!d.empty()) configDir = d;
  });
  std::string stressor;
  ttake("name", [&](const json& v, const std::string& p) {
    std::string n = text(v, p);
    if (isMappedStressor(n)) {
      stressor = n;  // bench/stressors.h: mapped onto tiercache
      return;
    }
    auto it = specialStressors().find(n);
    if (it != specialStressors().end())
      throw ConfigError(p, "\"" + n + "\" selects a special cachebench stressor that " + it->second +
                               "; tiercache-bench runs the key-value workload only (remove name)");
  });
  // Generator: the synthetic workload, or a kvcache trace replay.
  std::string generator;
  ttake("generator", [&](const json& v, const std::string& p) {
    generator = text(v, p);
    if (generator.empty() || generator == "workload" || generator == "online" || generator == "replay" ||
        generator == "binary-replay")
      return;
    if (generator == "block-replay")
      throw ConfigError(p, "\"block-replay\" simulates CacheLib's block-chunk cache over block traces; "
                           "tiercache-bench has no block-chunk layer");
    if (generator == "piecewise-replay")
      throw ConfigError(p, "\"piecewise-replay\" replays CDN object traces in pieces; tiercache-bench has no "
                           "piecewise cache: convert the trace to `key,size,op` and use `tiercache-bench replay`");
    throw ConfigError(p, "\"" + generator + "\" is not a generator tiercache-bench has (workload, online, replay)");
  });
  bool replay = generator == "replay" || generator == "binary-replay";

  ttake("numOps", [&](const json& v, const std::string& p) { w.ops_per_thread = count(v, p); });
  ttake("numThreads", [&](const json& v, const std::string& p) { w.threads = count32(v, p); });
  ttake("numKeys", [&](const json& v, const std::string& p) { w.keys = count(v, p); });
  if (replay && !at(tc, "numKeys")) w.keys = 1;  // unused by a replay
  // The distribution keys (cachebench's DistributionConfig), with what the
  // side files say in their place. With poolDistributions cachebench reads
  // them from its entries only: one entry serves every pool, more give each
  // pool its own (WorkloadConfig::pool_distributions).
  // clang-format off
  static const char* const kDistributionKeys[] = {
      "keySizeRange", "keySizeRangeProbability", "valSizeRange", "valSizeRangeProbability", "valSizeDistFile",
      "chainedItemLengthRange", "chainedItemLengthRangeProbability", "chainedItemValSizeRange",
      "chainedItemValSizeRangeProbability", "ttlSecsRange", "ttlSecsRangeProbability", "popularityBuckets",
      "popularityWeights", "popDistFile", "getRatio", "setRatio", "delRatio", "addChainedRatio", "loneGetRatio",
      "loneSetRatio", "updateRatio", "couldExistRatio", "useLegacyKeyGen"};
  // clang-format on
  const std::string legacy = "useLegacyKeyGen";  // an ignored key, wherever it is (the warning names it)
  for (const char* k : kDistributionKeys)
    if (k != legacy) testHandled.push_back(k);
  testHandled.push_back("poolDistributions");
  // Reads one distribution from `dist` into d's sizes, ratios, chains,
  // popularity and TTLs; errors name its keys with `prefix`.
  auto readDistribution = [&](json dist, const std::string& prefix, WorkloadConfig& d) {
    auto dpath = [&](const std::string& k) { return prefix + k; };
    auto dtake = [&](const char* key, auto fn) {
      if (const json* v = at(dist, key)) fn(*v, dpath(key));
    };
    dtake("valSizeDistFile", [&](const json& v, const std::string& p) {
      std::string f = text(v, p);
      if (f.empty()) return;
      json side = readSideFile(configDir, f, p);
      for (const char* k : {"valSizeRange", "valSizeRangeProbability"})
        if (side.contains(k)) dist[k] = side[k];
    });
    dtake("popDistFile", [&](const json& v, const std::string& p) {
      std::string f = text(v, p);
      if (f.empty()) return;
      json side = readSideFile(configDir, f, p);
      for (const char* k : {"popularityBuckets", "popularityWeights"})
        if (side.contains(k)) dist[k] = side[k];
    });
    auto dat = [&](const char* key) -> const json* { return at(dist, key); };
    if (const json* v = dat("keySizeRange"))
      d.key_size_buckets = sizePieces(*v, dat("keySizeRangeProbability"), dpath("keySizeRange"),
                                      dpath("keySizeRangeProbability"), /*discreteAllowed=*/false);
    if (const json* v = dat("valSizeRange"))
      d.value_size_buckets = sizePieces(*v, dat("valSizeRangeProbability"), dpath("valSizeRange"),
                                        dpath("valSizeRangeProbability"), /*discreteAllowed=*/true);
    double get = 0, set = 0, del = 0, lone = 0, chained = 0, update = 0, couldExist = 0, loneSet = 0;
    auto ratio = [&](double& r) {
      return [&r](const json& v, const std::string& p) {
        r = number(v, p);
        if (!(r >= 0)) throw ConfigError(p, "must not be negative");
      };
    };
    dtake("getRatio", ratio(get));
    dtake("setRatio", ratio(set));
    dtake("delRatio", ratio(del));
    dtake("loneGetRatio", ratio(lone));
    // Chained items (allocator/chained_items.h): the op finds or sets the
    // key's parent and adds a chain drawn from the chainedItem* ranges.
    dtake("addChainedRatio", ratio(chained));
    dtake("updateRatio", ratio(update));
    dtake("couldExistRatio", ratio(couldExist));  // Cache::couldExist: memory, then the flash index
    dtake("loneSetRatio", ratio(loneSet));        // a set of a fresh key (KeySpace::loneSetKey)
    if (chained > 0) {
      const json* len = dat("chainedItemLengthRange");
      const json* val = dat("chainedItemValSizeRange");
      if (!len) throw ConfigError(dpath("chainedItemLengthRange"), "missing (needed with addChainedRatio)");
      if (!val) throw ConfigError(dpath("chainedItemValSizeRange"), "missing (needed with addChainedRatio)");
      d.chain_length_buckets =
          sizePieces(*len, dat("chainedItemLengthRangeProbability"), dpath("chainedItemLengthRange"),
                     dpath("chainedItemLengthRangeProbability"), /*discreteAllowed=*/true);
      d.chain_value_size_buckets =
          sizePieces(*val, dat("chainedItemValSizeRangeProbability"), dpath("chainedItemValSizeRange"),
                     dpath("chainedItemValSizeRangeProbability"), /*discreteAllowed=*/true);
    }
    double total = get + set + del + lone + chained + update + couldExist + loneSet;
    if (replay || !stressor.empty()) {
      // The trace says what each request is; a stressor has its own operations.
      get = 1, set = del = lone = chained = update = couldExist = loneSet = 0, total = 1;
    } else if (!(total > 0)) {
      throw ConfigError(prefix.substr(0, prefix.size() - 1),
                        "getRatio, setRatio, delRatio and loneGetRatio are all 0 (a workload needs "
                        "operations; a trace replay needs generator \"replay\")");
    }
    // cachebench draws operations in proportion to the ratios.
    d.get_ratio = get / total;
    d.set_ratio = set / total;
    d.remove_ratio = del / total;
    d.lone_get_ratio = lone / total;
    d.add_chained_ratio = chained / total;
    d.update_ratio = update / total;
    d.could_exist_ratio = couldExist / total;
    d.lone_set_ratio = loneSet / total;
    if (const json* v = dat("popularityBuckets")) {
      d.popularity.kind = PopularityKind::kPiecewise;
      d.popularity.bucket_sizes = numbers(*v, dpath("popularityBuckets"));
      const json* weights = dat("popularityWeights");
      if (!weights) throw ConfigError(dpath("popularityWeights"), "missing (needed with popularityBuckets)");
      d.popularity.bucket_weights = numbers(*weights, dpath("popularityWeights"));
    } else {
      if (dat("popularityWeights")) throw ConfigError(dpath("popularityWeights"), "needs popularityBuckets");
      // cachebench without buckets: a normal distribution centred on the middle
      // key with a standard deviation of a quarter of the key range.
      d.popularity.kind = PopularityKind::kNormal;
      d.popularity.stddev_fraction = 0.25;
    }
    // TTL: cachebench draws a TTL per key from ttlSecsRange (discrete or
    // piecewise, as valSizeRange); ttlRatio (below) gives the share of keys.
    if (const json* v = dat("ttlSecsRange"); v && !(v->is_array() && v->empty())) {
      d.ttl_secs_buckets = sizePieces(*v, dat("ttlSecsRangeProbability"), dpath("ttlSecsRange"),
                                      dpath("ttlSecsRangeProbability"), /*discreteAllowed=*/true);
    } else if (const json* pr = dat("ttlSecsRangeProbability"); pr && !(pr->is_array() && pr->empty())) {
      throw ConfigError(dpath("ttlSecsRangeProbability"), "needs ttlSecsRange");
    }
  };
  // The entries of poolDistributions, read into one WorkloadConfig each.
  std::vector<WorkloadConfig> perPool;
  // Where the distribution keys were written, for errors our validation
  // finds: "" (test_config), the one entry, or the list (several entries).
  std::string distFrom;
  if (const json* pd = at(tc, "poolDistributions")) {
    const std::string p = tpath("poolDistributions");
    if (!pd->is_array() || pd->empty()) throw ConfigError(p, "must be a non-empty array of objects");
    distFrom = pd->size() == 1 ? p + "[0]." : p;
    for (const char* k : kDistributionKeys) {
      if (at(tc, k) && k != legacy)
        out.ignored.push_back(tpath(k) + " (not read: poolDistributions gives the distribution)");
    }
    for (size_t i = 0; i < pd->size(); ++i) {
      const json& entry = (*pd)[i];
      const std::string prefix = p + "[" + std::to_string(i) + "].";
      if (!entry.is_object()) throw ConfigError(p + "[" + std::to_string(i) + "]", "must be an object");
      json dist = json::object();
      for (const auto& [key, val] : entry.items()) {
        const bool known = std::find_if(std::begin(kDistributionKeys), std::end(kDistributionKeys),
                                        [&](const char* k) { return key == k; }) != std::end(kDistributionKeys);
        if (known && key != legacy) {
          dist[key] = val;
        } else {
          out.ignored.push_back(prefix + key + ignoredNote(CachebenchSection::kTestConfig, key));
        }
      }
      if (pd->size() == 1) {
        readDistribution(dist, prefix, w);  // one entry serves every pool: the workload's own
        continue;
      }
      WorkloadConfig d = w;
      readDistribution(dist, prefix, d);
      perPool.push_back(std::move(d));
    }
  } else {
    readDistribution(tc, "test_config.", w);
  }
  ttake("enableLookaside", [&](const json& v, const std::string& p) { w.lookaside = boolean(v, p); });
  ttake("prepopulateCache", [&](const json& v, const std::string& p) { w.prepopulate = boolean(v, p); });
  ttake("onlySetIfMiss", [&](const json& v, const std::string& p) { w.only_set_if_miss = boolean(v, p); });
  ttake("touchValue", [&](const json& v, const std::string& p) { boolean(v, p); });  // values are always read and verified
  ttake("samplingIntervalMs", [&](const json& v, const std::string& p) {
    w.progress_interval_ms = uint32_t(std::min<uint64_t>(count(v, p), 3'600'000));
  });
  ttake("distribution", [&](const json& v, const std::string& p) {
    std::string d = text(v, p);
    if (!d.empty() && d != "range")
      throw ConfigError(p, "\"" + d + "\" is not available (only the \"range\" distribution)");
  });

  // Pools: cachebench splits the keys into consecutive ranges by
  // keyPoolDistribution and sends operations to pools by opPoolDistribution,
  // whose default is [1]: every operation in pool 0.
  std::vector<double> keyPools{1.0}, opPools{1.0};
  ttake("keyPoolDistribution", [&](const json& v, const std::string& p) { keyPools = numbers(v, p); });
  ttake("opPoolDistribution", [&](const json& v, const std::string& p) { opPools = numbers(v, p); });
  if (opPools.size() > keyPools.size())
    throw ConfigError(tpath("opPoolDistribution"), "has " + std::to_string(opPools.size()) + " pools but " +
                                                       "keyPoolDistribution has " + std::to_string(keyPools.size()));
  if (keyPools.size() > numPools)
    throw ConfigError(tpath("keyPoolDistribution"), "spreads keys over " + std::to_string(keyPools.size()) +
                                                        " pools but cache_config.numPools is " + std::to_string(numPools));
  if (keyPools.size() > 1) {
    w.key_pools = keyPools;
    w.op_pools = opPools;
    w.op_pools.resize(keyPools.size(), 0.0);
  }
  // Several poolDistributions entries: pool p draws from entry p (as
  // cachebench's generators index them). The workload's own sizes become
  // their envelope and its ratios their mix by operation weight; chains and
  // TTLs stay the workload's, so the entries must agree on them.
  if (!perPool.empty()) {
    const std::string pdPath = tpath("poolDistributions");
    if (perPool.size() != keyPools.size())
      throw ConfigError(pdPath, "has " + std::to_string(perPool.size()) + " entries but keyPoolDistribution has " +
                                    std::to_string(keyPools.size()) +
                                    " pools (one entry serves every pool; several must be one per pool)");
    auto same = [](const std::vector<SizeBucket>& a, const std::vector<SizeBucket>& b) {
      return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const SizeBucket& x, const SizeBucket& y) {
        return x.range.min == y.range.min && x.range.max == y.range.max && x.weight == y.weight;
      });
    };
    auto envelope = [](const std::vector<SizeBucket>& buckets) {
      SizeRange r = buckets[0].range;
      for (const SizeBucket& b : buckets) r.min = std::min(r.min, b.range.min), r.max = std::max(r.max, b.range.max);
      return r;
    };
    const std::vector<double> weights = w.poolOpWeights();
    double totalWeight = 0;
    for (double x : weights) totalWeight += x;
    w.get_ratio = w.set_ratio = w.remove_ratio = w.lone_get_ratio = w.add_chained_ratio = w.update_ratio =
        w.could_exist_ratio = w.lone_set_ratio = 0;
    w.key_size_buckets.clear();
    w.value_size_buckets.clear();
    w.chain_length_buckets.clear();
    w.chain_value_size_buckets.clear();
    for (size_t p = 0; p < perPool.size(); ++p) {
      const WorkloadConfig& d = perPool[p];
      const std::string at = pdPath + "[" + std::to_string(p) + "].";
      if (d.key_size_buckets.empty()) throw ConfigError(at + "keySizeRange", "missing (every entry needs its own)");
      if (d.value_size_buckets.empty())
        throw ConfigError(at + "valSizeRange", "missing (every entry needs its own, or a valSizeDistFile)");
      if (d.add_chained_ratio > 0) {
        if (w.chain_length_buckets.empty()) {
          w.chain_length_buckets = d.chain_length_buckets;
          w.chain_value_size_buckets = d.chain_value_size_buckets;
        } else if (!same(w.chain_length_buckets, d.chain_length_buckets) ||
                   !same(w.chain_value_size_buckets, d.chain_value_size_buckets)) {
          throw ConfigError(at + "chainedItemLengthRange",
                            "differs from an earlier entry's: chains have one shape for every pool");
        }
      }
      if (p == 0) {
        w.ttl_secs_buckets = d.ttl_secs_buckets;
      } else if (!same(w.ttl_secs_buckets, d.ttl_secs_buckets)) {
        throw ConfigError(at + "ttlSecsRange", "differs from entry 0's: TTLs have one distribution for every pool");
      }
      const double f = weights[p] / totalWeight;
      w.get_ratio += f * d.get_ratio;
      w.set_ratio += f * d.set_ratio;
      w.remove_ratio += f * d.remove_ratio;
      w.lone_get_ratio += f * d.lone_get_ratio;
      w.add_chained_ratio += f * d.add_chained_ratio;
      w.update_ratio += f * d.update_ratio;
      w.could_exist_ratio += f * d.could_exist_ratio;
      w.lone_set_ratio += f * d.lone_set_ratio;
      for (SizeBucket b : d.key_size_buckets) w.key_size_buckets.push_back(b);
      for (SizeBucket b : d.value_size_buckets) w.value_size_buckets.push_back(b);
      PoolDistribution pool;
      pool.key_size_buckets = d.key_size_buckets;
      pool.value_size_buckets = d.value_size_buckets;
      pool.key_size = envelope(d.key_size_buckets);
      pool.value_size = envelope(d.value_size_buckets);
      pool.get_ratio = d.get_ratio;
      pool.set_ratio = d.set_ratio;
      pool.remove_ratio = d.remove_ratio;
      pool.lone_get_ratio = d.lone_get_ratio;
      pool.add_chained_ratio = d.add_chained_ratio;
      pool.update_ratio = d.update_ratio;
      pool.could_exist_ratio = d.could_exist_ratio;
      pool.lone_set_ratio = d.lone_set_ratio;
      pool.popularity = d.popularity;
      w.pool_distributions.push_back(std::move(pool));
    }
    w.popularity = perPool[0].popularity;  // unused: each pool draws by its own
  }

  ttake("opDelayBatch", [&](const json& v, const std::string& p) { w.op_delay_batch = count(v, p); });
  ttake("opDelayNs", [&](const json& v, const std::string& p) {
    w.op_delay_ns = count(v, p);
    if (w.op_delay_ns > 1'000'000'000) throw ConfigError(p, "must be at most 1000000000 (one second)");
  });
  ttake("opRatePerSec", [&](const json& v, const std::string& p) {
    refuseIfSet(v, p, "tiercache-bench does not limit the operation rate; set it to 0 (opDelayBatch and "
                      "opDelayNs pace a thread)");
  });
  // ttlRatio, tiercache-bench's reading of an older key, gives the share of
  // keys that get a TTL from ttlSecsRange (default: all).
  double ttlRatio = 1.0;
  bool ttlRatioSet = false;
  ttake("ttlRatio", [&](const json& v, const std::string& p) {
    ttlRatio = number(v, p);
    ttlRatioSet = true;
    if (!(ttlRatio >= 0 && ttlRatio <= 1)) throw ConfigError(p, "must be in [0, 1]");
  });
  if (!w.ttl_secs_buckets.empty()) {
    w.ttl_ratio = ttlRatio;
  } else if (ttlRatioSet && ttlRatio > 0) {
    throw ConfigError(tpath("ttlRatio"), "needs ttlSecsRange (the TTLs to draw)");
  }

  // Trace replay (KVReplayGenerator's kvcache CSV).
  std::vector<std::string> traces;
  ttake("traceFileName", [&](const json& v, const std::string& p) {
    std::string f = text(v, p);
    if (!f.empty()) traces.push_back(f);
  });
  ttake("traceFileNames", [&](const json& v, const std::string& p) {
    if (!v.is_array()) throw ConfigError(p, "must be an array of file names");
    if (!traces.empty() && !v.empty()) throw ConfigError(p, "set only one of traceFileName or traceFileNames");
    for (size_t i = 0; i < v.size(); ++i) traces.push_back(text(v[i], p + "[" + std::to_string(i) + "]"));
  });
  bool repeat = false;
  ttake("repeatTraceReplay", [&](const json& v, const std::string& p) { repeat = boolean(v, p); });
  ttake("replayGeneratorConfig", [&](const json& v, const std::string& p) {
    if (!v.is_object()) throw ConfigError(p, "must be an object");
    for (const auto& [key, val] : v.items()) {
      std::string kp = p + "." + key;
      if (key == "ampFactor" || key == "ampSizeFactor") {
        if (count(val, kp) != 1) throw ConfigError(kp, "trace amplification is not implemented; set it to 1");
      } else if (key == "replaySerializationMode") {
        std::string m = text(val, kp);
        if (m != "strict" && m != "relaxed" && m != "none")
          throw ConfigError(kp, "must be strict, relaxed or none");
        // tiercache-bench replays each thread's share in order (docs/bench.md); no cross-thread serialization.
      } else if (key == "fastForwardCount" || key == "preLoadReqs") {
        refuseIfSet(val, kp, "is not implemented; set it to 0");
      } else if (key == "binaryFileName" || key == "relaxedSerialIntervalMs" || key == "numAggregationFields" ||
                 key == "numExtraFields" || key == "statsPerAggField") {
        out.ignored.push_back(kp);
      } else {
        throw ConfigError(kp, "unknown replay generator key");
      }
    }
  });
  if (replay) {
    if (traces.empty())
      throw ConfigError(tpath("traceFileName"),
                        "missing: generator \"" + generator + "\" needs traceFileName or traceFileNames");
    CachebenchReplay r;
    r.repeat = repeat;
    r.binary = generator == "binary-replay";
    for (const std::string& f : traces) {
      std::filesystem::path path = std::filesystem::path(f).is_absolute() ? std::filesystem::path(f)
                                                                           : std::filesystem::path(configDir) / f;
      std::error_code ec;
      if (!std::filesystem::is_regular_file(path, ec))
        throw ConfigError(tpath(traces.size() > 1 || at(tc, "traceFileNames") ? "traceFileNames" : "traceFileName"),
                          "trace file " + path.string() + " does not exist (names are resolved against configPath \"" +
                              configDir + "\")");
      r.files.push_back(path.string());
    }
    out.replay = std::move(r);
  } else if (!traces.empty()) {
    out.ignored.push_back(tpath(at(tc, "traceFileNames") ? "traceFileNames" : "traceFileName") +
                          " (no replay generator)");
  }
  for (const auto& [key, val] : tc.items())
    if (!contains(testHandled, key))
      out.ignored.push_back(tpath(key) + ignoredNote(CachebenchSection::kTestConfig, key));
  // Every key the import takes is a row that says so (cachebench_keys.cc).
  for (const std::string& k : handled)
    out.handled_keys.push_back(takenRow(CachebenchSection::kCacheConfig, k, cpath(k)));
  for (const std::string& k : testHandled)
    out.handled_keys.push_back(takenRow(CachebenchSection::kTestConfig, k, tpath(k)));

  // Validate in cachebench's words.
  w.updateEnvelopes();
  // CacheLib's largest class is by default its 4 MiB slab; ours defaults to
  // 1 MiB (above). A workload whose values need more gets CacheLib's default.
  uint64_t chainMax = 0;  // a child: tag + payload under a 16-byte internal key
  for (const SizeBucket& b : w.chain_value_size_buckets) chainMax = std::max(chainMax, b.range.max + 32);
  if (!at(cc, "maxAllocSize") && c.allocation.sizes.empty() &&
      std::max(w.value_size.max + w.key_size.max, chainMax) + 64 > c.allocation.max_size) {
    c.slab_size = 4 * kMiB;
    c.allocation.max_size = uint32_t(4 * kMiB);
  }
  if (nvmMiB > 0) placeFlash(nvmMiB, nvmPaths, w, c, out);
  std::string where = source.empty() ? "" : " (in " + source + ")";
  try {
    w.validate();
  } catch (const ConfigError& e) {
    std::string reason = std::string(e.what()).substr(e.path().empty() ? 0 : e.path().size() + 2);
    std::string key = cachebenchKeyFor(e.path());
    // A distribution key read from poolDistributions is named there.
    const std::string rest = key.rfind("test_config.", 0) == 0 ? key.substr(12) : "";
    const bool distKey = std::find_if(std::begin(kDistributionKeys), std::end(kDistributionKeys),
                                      [&](const char* k) { return rest == k; }) != std::end(kDistributionKeys);
    if (!distFrom.empty() && distKey) key = distFrom.back() == '.' ? distFrom + rest : distFrom;
    throw ConfigError(key, reason + " [as " + e.path() + "]" + where);
  }
  try {
    c.normalize();
    // htBucketPower sizes CacheLib's table, whose untouched pages cost
    // nothing; tiercache maps its buckets, so a power past what the cache's
    // item count can use is lowered to that, with a note in the warning.
    if (at(cc, "htBucketPower") && c.index.bucket_power > c.maxUsefulBucketPower()) {
      const uint32_t most = c.maxUsefulBucketPower();
      out.ignored.push_back(cpath("htBucketPower") + " (" + std::to_string(c.index.bucket_power) + " lowered to " +
                            std::to_string(most) + ", the most this cache's item count can use)");
      c.index.bucket_power = most;
      c.index.lock_power = std::min(c.index.lock_power, most);
    }
    c.validate();
    // The mapped policy is always set by name, through the option table
    // (the project's default is not cachebench's LRU), so a policy this
    // build lacks gets the config's own unknown-value error.
    const std::string policy = policyForAllocator(out.allocator);
    json j = json::parse(c.toJson());
    j["eviction"]["policy"] = policy;
    c = CacheConfig::fromJsonString(j.dump());
  } catch (const ConfigError& e) {
    std::string reason = std::string(e.what()).substr(e.path().empty() ? 0 : e.path().size() + 2);
    std::string key = e.path() == "eviction.policy" ? "cache_config.allocator" : cachebenchKeyFor(e.path());
    if (e.path() == "eviction.policy")
      reason = "\"" + out.allocator + "\" maps to policy \"" + policyForAllocator(out.allocator) +
               "\", which this build does not have: " + reason;
    throw ConfigError(key, reason + " [as " + e.path() + "]" + where);
  }
  out.stressor = stressor;
  if (!stressor.empty() && at(tc, "numThreads")) out.stressor_threads = w.threads;
  return out;
}

std::vector<std::string> CachebenchConfig::scratchFiles() const {
  if (flash_scratch.empty()) return {};
  return {flash_scratch, flash_scratch + ".wbuf"};
}

std::string policyForAllocator(const std::string& allocator) {
  // cachebench allocator -> eviction.policy. The "5B" variants differ from
  // their base only in CacheLib's pointer compression, which does not
  // change what is evicted. LRU2Q (hot / warm / cold queues, new items in
  // warm's probation) is closest to S3-FIFO: a small probationary FIFO in
  // front of the main queue, so one-hit items leave early; "lru" with a
  // mid-point insertion would keep one queue and no ghost history.
  static const std::map<std::string, std::string> kTable = {
      {"LRU", "lru"},          {"LRU5B", "lru"},
      {"LRU2Q", "s3fifo"},     {"LRU5B2Q", "s3fifo"},
      {"TinyLFU", "wtinylfu"}, {"TinyLFU5B", "wtinylfu"},
  };
  auto it = kTable.find(allocator);
  return it == kTable.end() ? "" : it->second;
}

CachebenchConfig importCachebenchFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("", "cannot open config file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return importCachebench(ss.str(), path);
  } catch (const ConfigError& e) {
    std::string what = e.what();
    if (what.find(" (in " + path + ")") != std::string::npos) throw;
    std::string reason = e.path().empty() ? what : what.substr(e.path().size() + 2);
    throw ConfigError(e.path(), reason + " (in " + path + ")");
  }
}

std::string ignoredKeysWarning(const std::vector<std::string>& ignored) {
  if (ignored.empty()) return "";
  std::string s = "warning: cachebench keys not implemented, ignored: ";
  for (size_t i = 0; i < ignored.size(); ++i) s += (i ? ", " : "") + ignored[i];
  return s;
}

}  // namespace tiercache::bench
