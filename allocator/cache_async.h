// The state behind Cache::findManyAsync (cache_async.cc): a queue of the
// flash reads of async lookups and the one thread that completes them.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cache.h"

namespace tiercache {

struct Cache::AsyncReads {
  // One call's keys that may be on flash, with their positions in it.
  struct Job {
    std::vector<std::string> keys;
    std::vector<uint64_t> hashes;
    std::vector<size_t> index;
    FindManyCallback cb;
  };
  std::mutex mu;  // everything below
  std::condition_variable wake;
  std::deque<Job> queue;
  std::thread worker;  // started by the first job
  bool stopping = false;
};

}  // namespace tiercache
