// ShardedCounter: a statistics counter that many threads bump on the hot
// path. Each thread adds to one of 16 cache-line-sized cells (picked once
// per thread), so two cores counting hits do not bounce one line; a read
// sums the cells (monotonic, may lag in-flight adds).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tiercache {

class ShardedCounter {
 public:
  static constexpr size_t kCells = 16;

  void add(uint64_t n = 1) { cells_[cellIndex()].v.fetch_add(n, std::memory_order_relaxed); }
  uint64_t load() const {
    uint64_t sum = 0;
    for (const Cell& c : cells_) sum += c.v.load(std::memory_order_relaxed);
    return sum;
  }

 private:
  struct alignas(64) Cell {
    std::atomic<uint64_t> v{0};
  };
  static size_t cellIndex() {
    static std::atomic<size_t> next{0};
    thread_local const size_t idx = next.fetch_add(1, std::memory_order_relaxed) % kCells;
    return idx;
  }
  Cell cells_[kCells];
};

}  // namespace tiercache
