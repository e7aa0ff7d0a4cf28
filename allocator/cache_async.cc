// Cache::findManyAsync: memory hits complete on the caller's thread; the
// keys that may be on flash are queued for one completion thread, which
// reads every queued key in one batch (FlashStore::lookupMany, promotion
// as find does) and runs the callbacks.
#include "cache_async.h"

#include <cstdio>
#include <exception>
#include <stdexcept>

#include "access_index.h"
#include "flash_tier.h"

namespace tiercache {

namespace {

// A callback that throws on the completion thread has nobody to catch it.
template <class Fn>
void runCallback(Fn&& fn) noexcept {
  try {
    fn();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tiercache: a findManyAsync callback threw on the flash completion thread: %s\n", e.what());
    std::terminate();
  }
}

}  // namespace

void Cache::findAsync(std::string_view key, std::function<void(ReadHandle handle)> cb) {
  if (!cb) throw std::invalid_argument("findAsync: the callback is empty");
  findManyAsync({&key, 1}, [cb = std::move(cb)](size_t, ReadHandle h) { cb(std::move(h)); });
}

void Cache::findManyAsync(std::span<const std::string_view> keys, FindManyCallback cb) {
  if (!cb) throw std::invalid_argument("findManyAsync: the callback is empty");
  if (async_) {
    std::lock_guard<std::mutex> g(async_->mu);
    if (async_->stopping) throw std::logic_error("findManyAsync: the cache is being destroyed");
  }
  AsyncReads::Job job;
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint64_t hash = hashKey(keys[i]);
    bool onFlash = false;
    ReadHandle h = findHashed(keys[i], hash, flash_ ? &onFlash : nullptr);
    if (onFlash) {
      job.keys.emplace_back(keys[i]);
      job.hashes.push_back(hash);
      job.index.push_back(i);
      continue;
    }
    cb(i, std::move(h));
  }
  if (job.keys.empty()) return;
  job.cb = std::move(cb);
  std::lock_guard<std::mutex> g(async_->mu);
  if (async_->stopping) {
    // The destructor began while the memory part ran: nobody completes
    // the flash part any more.
    throw std::logic_error("findManyAsync: the cache is being destroyed");
  }
  if (!async_->worker.joinable()) async_->worker = std::thread([this] { runAsyncReads(); });
  async_->queue.push_back(std::move(job));
  async_->wake.notify_one();
}

void Cache::runAsyncReads() {
  std::vector<AsyncReads::Job> batch;
  std::vector<std::string_view> keys;
  std::vector<uint64_t> hashes;
  std::vector<ReadHandle> found;
  for (;;) {
    {
      std::unique_lock<std::mutex> g(async_->mu);
      async_->wake.wait(g, [&] { return async_->stopping || !async_->queue.empty(); });
      if (async_->queue.empty()) return;  // stopping, and nothing left
      // Every queued call in one batch: their reads are in flight together.
      while (!async_->queue.empty()) {
        batch.push_back(std::move(async_->queue.front()));
        async_->queue.pop_front();
      }
    }
    keys.clear();
    hashes.clear();
    for (const AsyncReads::Job& job : batch) {
      keys.insert(keys.end(), job.keys.begin(), job.keys.end());
      hashes.insert(hashes.end(), job.hashes.begin(), job.hashes.end());
    }
    found.resize(keys.size());
    promoteManyFromFlash(keys, hashes, found);
    size_t k = 0;
    for (AsyncReads::Job& job : batch) {
      for (size_t j = 0; j < job.keys.size(); ++j, ++k) {
        runCallback([&] { job.cb(job.index[j], std::move(found[k])); });
      }
    }
    found.clear();  // no pin outlives its callback here
    batch.clear();
  }
}

void Cache::stopAsyncReads() {
  if (!async_) return;
  std::thread worker;
  {
    std::lock_guard<std::mutex> g(async_->mu);
    async_->stopping = true;
    async_->wake.notify_one();
    worker = std::move(async_->worker);
  }
  if (worker.joinable()) {
    if (worker.get_id() == std::this_thread::get_id()) {
      std::fprintf(stderr, "tiercache: a findManyAsync callback destroyed its Cache\n");
      std::terminate();
    }
    worker.join();
  }
}

}  // namespace tiercache
