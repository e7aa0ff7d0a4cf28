// A workload shared by the bench's tests: a short Zipf mix whose key space
// (~40 MB of values) is several times a 16 MiB cache, so it evicts.
#pragma once

#include "bench/workload.h"

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

}  // namespace tiercache::bench
