// SpareCoreMeter: the cgroup quota's text, the cores detected here, and the
// verdict from this process's real CPU time (this thread spinning, then
// sleeping).
#include "common/spare_cores.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <thread>

namespace tiercache {
namespace {

using Clock = std::chrono::steady_clock;

TEST(SpareCoreMeter, ReadsTheCgroupQuotaText) {
  EXPECT_EQ(SpareCoreMeter::quotaCores("200000 100000"), 2.0);
  EXPECT_EQ(SpareCoreMeter::quotaCores("50000 100000\n"), 0.5);
  EXPECT_EQ(SpareCoreMeter::quotaCores("max 100000"), 0.0) << "no quota";
  EXPECT_EQ(SpareCoreMeter::quotaCores("100000"), 0.0) << "no period";
  EXPECT_EQ(SpareCoreMeter::quotaCores(""), 0.0);
  EXPECT_EQ(SpareCoreMeter::quotaCores("cores: 2"), 0.0);
  EXPECT_EQ(SpareCoreMeter::quotaCores("-5 100000"), 0.0);
}

TEST(SpareCoreMeter, AvailableCoresAreTheAffinityAtMost) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const double cores = SpareCoreMeter::availableCores();
  EXPECT_GT(cores, 0.0);
  EXPECT_LE(cores, double(CPU_COUNT(&set)));
  EXPECT_EQ(SpareCoreMeter().cores(), cores);
  EXPECT_EQ(SpareCoreMeter(1.5).cores(), 1.5);
}

// Three quarters of a core (a quota may give a fraction): this thread
// spinning uses more than a quarter of one, so none is spare; asleep, the
// process uses next to nothing, so one is, from the second idle window.
TEST(SpareCoreMeter, ABusyProcessHasNoSpareCoreAndAnIdleOneHas) {
  SpareCoreMeter m(0.75);
  Clock::time_point t = Clock::now();
  EXPECT_TRUE(m.spare(t)) << "no window has passed: no verdict against the evictor yet";
  const Clock::time_point spinUntil = t + 2 * SpareCoreMeter::kWindow;
  while (Clock::now() < spinUntil) {
  }
  EXPECT_FALSE(m.spare(Clock::now())) << "used " << m.usedLastWindow() << " of " << m.cores() << " cores";
  EXPECT_GT(m.usedLastWindow(), 0.25);
  std::this_thread::sleep_for(SpareCoreMeter::kWindow);
  EXPECT_FALSE(m.spare(Clock::now())) << "one idle window does not bring the evictor back";
  EXPECT_LT(m.usedLastWindow(), 0.25);
  std::this_thread::sleep_for(SpareCoreMeter::kWindow);
  t = Clock::now();
  EXPECT_TRUE(m.spare(t)) << "used " << m.usedLastWindow() << " of " << m.cores() << " cores";
  EXPECT_LT(m.usedLastWindow(), 0.25);
  // Within a window the last verdict stands, however busy the thread.
  while (Clock::now() < t + SpareCoreMeter::kWindow / 5) {
  }
  EXPECT_TRUE(m.spare(t + SpareCoreMeter::kWindow / 5));
}

}  // namespace
}  // namespace tiercache
