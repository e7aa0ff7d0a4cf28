// ShardedCounter: the first threads add to cells of their own without a
// locked instruction, later ones to shared cells atomically; no add may
// be lost either way, and a reader sees the sum only grow.
#include "allocator/sharded_counter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace tiercache {
namespace {

TEST(ShardedCounterTest, MoreThreadsThanOwnCellsLoseNoAdd) {
  // More threads than own cells: some own a cell, the rest share cells.
  constexpr int kThreads = 2 * ShardedCounter::kCells + 8;
  constexpr uint64_t kAdds = 20'000;
  ShardedCounter a, b;
  std::atomic<bool> done{false};
  std::atomic<bool> shrank{false};
  std::thread reader([&] {
    uint64_t last = 0;
    while (!done.load()) {
      const uint64_t now = a.load();
      if (now < last) shrank = true;
      last = now;
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&] {
      for (uint64_t i = 0; i < kAdds; ++i) {
        a.add();
        b.add(3);
      }
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_EQ(a.load(), kThreads * kAdds);
  EXPECT_EQ(b.load(), 3 * kThreads * kAdds);
  EXPECT_FALSE(shrank.load()) << "a reader saw the sum go down";
}

// The tally: many counters per row. Each thread adds to its own counter and
// to a counter every thread shares; sums are exact per counter, and no add
// lands in a neighbour (rows of 11 counters straddle line boundaries).
TEST(ShardedTallyTest, CountersKeepTheirOwnExactSums) {
  constexpr int kThreads = 2 * ShardedCounter::kCells + 8;
  constexpr size_t kCounters = 11;
  constexpr uint64_t kAdds = 20'000;
  ShardedTally tally(kCounters);
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (uint64_t i = 0; i < kAdds; ++i) {
        tally.add(static_cast<size_t>(t) % (kCounters - 1));
        tally.add(kCounters - 1, 2);
      }
    });
  }
  for (auto& w : writers) w.join();
  for (size_t c = 0; c + 1 < kCounters; ++c) {
    const uint64_t threadsOnIt = static_cast<uint64_t>((kThreads - 1 - static_cast<int>(c)) / int(kCounters - 1) + 1);
    EXPECT_EQ(tally.load(c), threadsOnIt * kAdds) << "counter " << c;
  }
  EXPECT_EQ(tally.load(kCounters - 1), 2 * kThreads * kAdds);
  EXPECT_EQ(tally.bytes(), 2 * ShardedCounter::kCells * 2 * 64) << "11 counters: two lines per row";
}

}  // namespace
}  // namespace tiercache
