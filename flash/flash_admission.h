// FlashAdmission: which items a flash store takes. Flash wears with every
// byte written, and a device has a write bandwidth the reads share, so the
// store may refuse items:
//   - a write-rate budget: at most `mbPerSec` MB (10^6 bytes) of entries a
//     second, as a token bucket holding one second of budget (0: no budget);
//   - hit-only: only items that were hit while in memory (an item nobody
//     read since it was written is likely never read again).
// Thread-safe; the budget takes a mutex, the hit-only test none.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>

namespace tiercache {

class FlashAdmission {
 public:
  using Clock = std::chrono::steady_clock;
  FlashAdmission(double mbPerSec, bool hitOnly) : bytesPerSec_(mbPerSec * 1e6), hitOnly_(hitOnly) {}

  bool admit(size_t bytes, bool wasHit) {
    if (hitOnly_ && !wasHit) return false;
    if (bytesPerSec_ <= 0) return true;
    std::lock_guard<std::mutex> g(mu_);
    const Clock::time_point now = Clock::now();
    if (!started_) {
      started_ = true;
      tokens_ = bytesPerSec_;
    } else {
      const double secs = std::chrono::duration<double>(now - last_).count();
      tokens_ = std::min(bytesPerSec_, tokens_ + secs * bytesPerSec_);
    }
    last_ = now;
    if (tokens_ < static_cast<double>(bytes)) return false;
    tokens_ -= static_cast<double>(bytes);
    return true;
  }

 private:
  const double bytesPerSec_;
  const bool hitOnly_;
  std::mutex mu_;
  bool started_ = false;
  double tokens_ = 0;
  Clock::time_point last_;
};

}  // namespace tiercache
