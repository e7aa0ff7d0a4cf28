// A workload shared by the bench's tests: a short Zipf mix whose key space
// (~40 MB of values) is several times a 16 MiB cache, so it evicts.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "bench/workload.h"
#include "config/config_error.h"

namespace tiercache::bench {

inline WorkloadConfig smallWorkload() {
  WorkloadConfig w;
  w.threads = 2;
  w.ops_per_thread = 20'000;
  w.keys = 40'000;
  w.key_size = {8, 24};
  w.value_size = {64, 2048};
  w.get_ratio = 0.7;
  w.set_ratio = 0.2;
  w.remove_ratio = 0.1;
  w.popularity = {PopularityKind::kZipf, 0.9, 0.1};
  w.lookaside = true;
  w.prepopulate = true;
  w.seed = 5;
  return w;
}

// Expects parsing `workloadJson` (the value of "workload") to fail with a
// ConfigError whose path is `path` and whose message contains `reason` (and
// starts with the path).
inline void expectWorkloadError(const std::string& workloadJson, const std::string& path, const std::string& reason) {
  const std::string doc = R"({"tiers": [], "workload": )" + workloadJson + "}";
  try {
    WorkloadConfig::fromJsonString(doc);
    ADD_FAILURE() << "no error for " << workloadJson;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), path) << e.what();
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    if (!path.empty()) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
    }
  }
}

}  // namespace tiercache::bench
