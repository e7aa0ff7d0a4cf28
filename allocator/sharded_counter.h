// ShardedCounter: a statistics counter that many threads bump on the hot
// path. Each of the first kCells threads to count owns one cache-line cell
// (taken once per thread, for good) and adds to it with a plain load and
// store: no locked instruction, which costs tens of nanoseconds when the
// operation before it left misses in flight. Later threads (a process that
// keeps starting threads) share kCells more cells, one picked per thread,
// and add atomically. A read sums the cells (monotonic, may lag in-flight
// adds).
//
// ShardedTally: the same for many counters at once (one per allocation
// class, say): one row of counters per cell instead of one line per
// counter, so N counters take 2 * kCells rows of N words, not
// 2 * kCells * N lines.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tiercache {

class ShardedCounter {
 public:
  static constexpr size_t kCells = 16;

  void add(uint64_t n = 1) {
    const size_t i = cellIndex();
    addToCell(cells_[i].v, i, n);
  }
  uint64_t load() const {
    uint64_t sum = 0;
    for (const Cell& c : cells_) sum += c.v.load(std::memory_order_relaxed);
    return sum;
  }

  // One index per thread for every counter: below kCells, a cell no other
  // thread ever writes (a cell is not handed on when its thread exits);
  // from kCells on, a shared cell.
  // Constant-initialised, so reading it takes no guard test.
  static size_t cellIndex() {
    thread_local size_t idx = kUnassigned;
    if (idx == kUnassigned) [[unlikely]] idx = assignCell();
    return idx;
  }
  static void addToCell(std::atomic<uint64_t>& v, size_t cell, uint64_t n) {
    if (cell < kCells) {
      v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);  // this thread's own cell
    } else {
      v.fetch_add(n, std::memory_order_relaxed);
    }
  }

 private:
  static constexpr size_t kUnassigned = ~size_t{0};
  [[gnu::noinline]] static size_t assignCell() {
    static std::atomic<size_t> next{0};
    const size_t n = next.fetch_add(1, std::memory_order_relaxed);
    return n < kCells ? n : kCells + n % kCells;
  }
  struct alignas(64) Cell {
    std::atomic<uint64_t> v{0};
  };
  Cell cells_[2 * ShardedCounter::kCells];
};

class ShardedTally {
 public:
  explicit ShardedTally(size_t counters)
      : lineStride_((counters + kPerLine - 1) / kPerLine),
        lines_(new Line[2 * ShardedCounter::kCells * lineStride_]) {}

  void add(size_t counter, uint64_t n = 1) {
    const size_t cell = ShardedCounter::cellIndex();
    ShardedCounter::addToCell(word(cell, counter), cell, n);
  }
  uint64_t load(size_t counter) const {
    uint64_t sum = 0;
    for (size_t cell = 0; cell < 2 * ShardedCounter::kCells; ++cell) {
      sum += word(cell, counter).load(std::memory_order_relaxed);
    }
    return sum;
  }
  size_t bytes() const { return 2 * ShardedCounter::kCells * lineStride_ * sizeof(Line); }

 private:
  static constexpr size_t kPerLine = 8;
  // A row starts on a line of its own: two threads' rows never share one.
  struct alignas(64) Line {
    std::atomic<uint64_t> v[kPerLine] = {};
  };
  std::atomic<uint64_t>& word(size_t cell, size_t counter) const {
    return lines_[cell * lineStride_ + counter / kPerLine].v[counter % kPerLine];
  }
  const size_t lineStride_;
  const std::unique_ptr<Line[]> lines_;
};

}  // namespace tiercache
