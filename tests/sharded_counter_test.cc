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

}  // namespace
}  // namespace tiercache
