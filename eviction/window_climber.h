// WindowClimber: hill climbing of W-TinyLFU's window share, the idea of
// Caffeine's adaptive policy (Einziger, Eytan, Friedman, Manes: "Adaptive
// Software Cache Management", Middleware 2018).
//
// A fixed 1% window suits frequency-biased traffic (Zipf), but where recency
// decides (a sliding working set, bursts of re-references) the filter turns
// away the items that would be hit next: about twice LRU's misses on such
// traces (docs/benchmarks.md, "An adaptive window"). The climber
// moves the share after each sample of requests: on in the same direction
// while the hit ratio rises, back when it falls. After a fall of 5 points
// or more it holds for a sample: if the hit ratio comes back, a scan or a
// burst passed and it goes on as before; if not, the workload changed (or
// the last move hurt that much), and it turns round and ages the sketches.
//
// Unlike Caffeine's climber, a move multiplies or divides the share by a
// factor instead of adding a fixed share: the hit ratio answers to the
// window's size on a log scale (1% -> 2% matters as much as 20% -> 40%), so
// on frequency-biased traffic the walk that noise drives stays within a few
// percent of the 1% it starts from, and on recency-biased traffic it still
// reaches half the cache in six rising samples. The first direction is down,
// clamped at 1%: while a cache warms, its hit ratio rises whatever the
// window does, which would otherwise read as a reason to grow. The factor
// decays so the share settles, and starts over after a jump.
//
// Pure arithmetic, no locks: the cache calls sample() from one thread at a
// time and publishes the share where the policies read it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>

namespace tiercache {

// What the cache's tuner publishes and every W-TinyLFU policy of the cache
// reads at eviction.
struct WindowSignal {
  std::atomic<uint32_t> perMille{10};  // the window's share
  // Bumped when a jump down of the hit ratio (kJump or more) lasted a
  // second sample: the workload changed, and each policy halves its sketch
  // once, so that the old keys' counts stop holding main against the new
  // keys.
  std::atomic<uint32_t> agings{0};
};

class WindowClimber {
 public:
  static constexpr double kMinPerMille = 10;      // 1%: the share tuned on Zipf
  static constexpr double kMaxPerMille = 900;     // 90%, the config's largest share
  static constexpr double kFactor = 2;            // a move's first factor
  static constexpr double kDecay = 0.98;          // of (factor - 1), per sample
  static constexpr double kJump = 0.05;           // a fall this large may be the traffic's doing

  explicit WindowClimber(uint32_t initialPerMille)
      : perMille_(std::clamp<double>(initialPerMille, kMinPerMille, kMaxPerMille)) {}

  // The end of a sample with this hit ratio (0..1); returns the new share.
  uint32_t sample(double hitRatio) {
    agingDue_ = false;
    if (previous_ < 0) {  // the first sample: a direction, no comparison yet
      move();
    } else if (fallen_) {
      // The sample after a jump down. Back up: a scan or a burst passed,
      // the window was not to blame; the pair says nothing of it, so no
      // move (moving on the rebound cost hits on Zipf with scans).
      // Still down: the workload changed (the old keys' counts should weigh
      // less), or the last move hurt that much: turn round.
      fallen_ = false;
      if (hitRatio <= beforeFall_ - kJump) {
        agingDue_ = true;
        up_ = !up_;
        factor_ = kFactor;
        move();
      }
    } else if (hitRatio <= previous_ - kJump) {
      // A jump down: hold until the next sample says whose doing it was.
      // (Read at once as the window's, a scan turned the climber round and
      // the rebound after it drove the window up: worse than the fixed
      // window on Zipf with scans.)
      fallen_ = true;
      beforeFall_ = previous_;
    } else {
      if (hitRatio < previous_) up_ = !up_;  // it hurt: turn round
      factor_ = hitRatio - previous_ >= kJump ? kFactor : 1 + (factor_ - 1) * kDecay;
      move();
    }
    previous_ = hitRatio;
    return perMille();
  }

  uint32_t perMille() const { return static_cast<uint32_t>(std::lround(perMille_)); }
  // The last sample confirmed a jump down that did not recover: the
  // workload changed (the cache ages its sketches once).
  bool agingDue() const { return agingDue_; }

 private:
  void move() { perMille_ = std::clamp(up_ ? perMille_ * factor_ : perMille_ / factor_, kMinPerMille, kMaxPerMille); }

  double perMille_;
  double factor_ = kFactor;
  bool up_ = false;
  double previous_ = -1;  // no sample yet
  bool fallen_ = false;   // the last sample jumped down
  double beforeFall_ = 0;
  bool agingDue_ = false;
};

}  // namespace tiercache
