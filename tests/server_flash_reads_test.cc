// server/pending_reads.h: a get's flash reads complete on the worker's
// loop, and a read whose connection closed meanwhile is freed safely.
#include <event2/event.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "allocator/cache.h"
#include "flash_test_util.h"
#include "fs_test_util.h"
#include "server/pending_reads.h"

namespace tiercache::server {
namespace {

using test::flashCacheConfig;
using test::flashTestParent;
using test::flashValue;
using test::TempDir;

std::string frk(int i) { return "fr-" + std::to_string(i); }

void fillPastMemory(Cache& cache) {
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(cache.set(frk(i), flashValue(frk(i), 1, 1000)));
}

// A worker's loop as server.cc builds it: a lock-free base woken through a
// Wakeup's eventfd, whose callback runs the completed reads.
struct Loop {
  Loop() {
    event_config* cfg = event_config_new();
    event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
    base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    woken = event_new(base, wakeup.fd(), EV_READ | EV_PERSIST, &Loop::onWake, this);
    event_add(woken, nullptr);
  }
  ~Loop() {
    event_free(woken);
    event_base_free(base);
  }
  Wakeup wakeup;
  event_base* base;
  event* woken;
  FlashReads* reads = nullptr;
  std::vector<void*> resumed;
  static void onWake(int, short, void* self) {
    auto* l = static_cast<Loop*>(self);
    l->wakeup.clear();
    if (l->reads) l->reads->runCompleted();
  }
  static void onResume(void* self, void* conn) {
    auto* l = static_cast<Loop*>(self);
    l->resumed.push_back(conn);
    event_base_loopbreak(l->base);
  }
};

TEST(ServerFlashReads, MemoryHitsCompleteInlineAndFlashReadsResumeOnTheLoop) {
  TempDir dir(flashTestParent());
  Cache cache(flashCacheConfig(dir.file("flash"), 128));
  fillPastMemory(cache);
  Loop loop;
  {
    FlashReads reads(loop.wakeup, &Loop::onResume, &loop);
    loop.reads = &reads;
    int conn = 0;
    FlashRead* r = reads.make(&conn);

    const std::vector<std::string_view> memory = {"fr-19999", "fr-absent"};
    ASSERT_TRUE(r->start(cache, memory, 0));
    EXPECT_FALSE(r->inFlight());
    EXPECT_TRUE(r->ready(0));
    EXPECT_FALSE(r->ready(16));
    ASSERT_EQ(r->results().size(), 2u);
    EXPECT_EQ(std::string(r->results()[0].value()), flashValue(frk(19999), 1, 1000));
    EXPECT_FALSE(r->results()[1]);
    r->done();
    EXPECT_FALSE(r->ready(0));

    std::vector<std::string> owned = {frk(5), frk(19998), frk(77), "fr-absent"};
    const std::vector<std::string_view> keys(owned.begin(), owned.end());
    ASSERT_FALSE(r->start(cache, keys, 16));
    EXPECT_TRUE(r->inFlight());
    EXPECT_EQ(reads.inFlight(), 1u);
    event_base_loop(loop.base, EVLOOP_NO_EXIT_ON_EMPTY);
    ASSERT_EQ(loop.resumed, std::vector<void*>{&conn});
    EXPECT_FALSE(r->inFlight());
    EXPECT_EQ(reads.inFlight(), 0u);
    ASSERT_TRUE(r->ready(16));
    auto found = r->results();
    EXPECT_EQ(std::string(found[0].value()), flashValue(frk(5), 1, 1000));
    EXPECT_EQ(std::string(found[1].value()), flashValue(frk(19998), 1, 1000));
    EXPECT_EQ(std::string(found[2].value()), flashValue(frk(77), 1, 1000));
    EXPECT_FALSE(found[3]);
    r->done();
    reads.release(r);
  }
  EXPECT_EQ(cache.checkConsistency(), "");
}

TEST(ServerFlashReads, AReadWhoseConnectionClosedIsFreedWhenItCompletes) {
  TempDir dir(flashTestParent());
  Cache cache(flashCacheConfig(dir.file("flash"), 128));
  fillPastMemory(cache);
  Loop loop;
  {
    FlashReads reads(loop.wakeup, &Loop::onResume, &loop);
    loop.reads = &reads;
    std::vector<int> conns(50);
    std::vector<std::string> owned;
    for (int i = 0; i < 50 * 4; ++i) owned.push_back(frk(i * 37 % 15000));
    size_t inFlight = 0;
    for (int c = 0; c < 50; ++c) {
      FlashRead* r = reads.make(&conns[c]);
      const std::vector<std::string_view> keys(owned.begin() + c * 4, owned.begin() + c * 4 + 4);
      if (!r->start(cache, keys, 0)) ++inFlight;
      reads.release(r);  // the connection closes at once, its read still in flight
    }
    EXPECT_GT(inFlight, 0u);
    EXPECT_EQ(reads.inFlight(), inFlight);
    reads.drain();  // what a worker does before it goes
    EXPECT_EQ(reads.inFlight(), 0u);
    EXPECT_TRUE(loop.resumed.empty());
    // Completions that came in before drain() took them wake the loop: no resume either.
    event_base_loop(loop.base, EVLOOP_NONBLOCK);
    EXPECT_TRUE(loop.resumed.empty());
  }
  // Every handle the orphaned reads held is released.
  EXPECT_EQ(cache.checkConsistency(), "");
}

}  // namespace
}  // namespace tiercache::server
