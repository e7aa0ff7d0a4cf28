// ShardedCounter: a statistics counter that many threads bump on the hot
// path. Each of the first kCells threads to count owns one cache-line cell
// (taken once per thread, for good) and adds to it with a plain load and
// store: no locked instruction, which costs tens of nanoseconds when the
// operation before it left misses in flight. Later threads (a process that
// keeps starting threads) share kCells more cells, one picked per thread,
// and add atomically. A read sums the cells (monotonic, may lag in-flight
// adds).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tiercache {

class ShardedCounter {
 public:
  static constexpr size_t kCells = 16;

  void add(uint64_t n = 1) {
    const size_t i = cellIndex();
    std::atomic<uint64_t>& v = cells_[i].v;
    if (i < kCells) {
      v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);  // this thread's own cell
    } else {
      v.fetch_add(n, std::memory_order_relaxed);
    }
  }
  uint64_t load() const {
    uint64_t sum = 0;
    for (const Cell& c : cells_) sum += c.v.load(std::memory_order_relaxed);
    return sum;
  }

 private:
  struct alignas(64) Cell {
    std::atomic<uint64_t> v{0};
  };
  // One index per thread for every counter: below kCells, a cell no other
  // thread ever writes (a cell is not handed on when its thread exits);
  // from kCells on, a shared cell.
  static size_t cellIndex() {
    static std::atomic<size_t> next{0};
    thread_local const size_t idx = [] {
      const size_t n = next.fetch_add(1, std::memory_order_relaxed);
      return n < kCells ? n : kCells + n % kCells;
    }();
    return idx;
  }
  Cell cells_[2 * kCells];
};

}  // namespace tiercache
