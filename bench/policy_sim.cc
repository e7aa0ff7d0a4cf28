#include "bench/policy_sim.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "eviction/frequency_sketch.h"

namespace tiercache::bench {

namespace {

constexpr uint32_t kNone = UINT32_MAX;

// Doubly linked list over dense key ids; head = newest.
class KeyList {
 public:
  explicit KeyList(size_t keys) : prev_(keys, kNone), next_(keys, kNone) {}
  void pushHead(uint32_t k) {
    prev_[k] = kNone;
    next_[k] = head_;
    if (head_ != kNone) prev_[head_] = k;
    head_ = k;
    if (tail_ == kNone) tail_ = k;
    ++size_;
  }
  void unlink(uint32_t k) {
    (prev_[k] != kNone ? next_[prev_[k]] : head_) = next_[k];
    (next_[k] != kNone ? prev_[next_[k]] : tail_) = prev_[k];
    prev_[k] = next_[k] = kNone;
    --size_;
  }
  uint32_t tail() const { return tail_; }
  uint32_t prev(uint32_t k) const { return prev_[k]; }
  size_t size() const { return size_; }

 private:
  std::vector<uint32_t> prev_, next_;
  uint32_t head_ = kNone, tail_ = kNone;
  size_t size_ = 0;
};

// One policy over k unit slots. `where_[key]` says which structure holds it.
class SimCache {
 public:
  SimCache(size_t keys, uint64_t k) : k_(k), where_(keys, 0) {}
  virtual ~SimCache() = default;
  bool held(uint32_t key) const { return where_[key] >= kHeld; }
  virtual void hit(uint32_t key) = 0;
  // key is not held; make room, then hold it.
  virtual void insert(uint32_t key) = 0;
  virtual void erase(uint32_t key) = 0;

 protected:
  static constexpr uint8_t kGhost = 1;  // remembered, not held (ARC, S3-FIFO)
  static constexpr uint8_t kHeld = 4;   // kHeld + n: held in structure n; below: ghosts
  const uint64_t k_;
  std::vector<uint8_t> where_;
  std::vector<uint8_t> bits_;  // per-key frequency or visited bit
};

class LruSim final : public SimCache {
 public:
  LruSim(size_t keys, uint64_t k, bool fifo) : SimCache(keys, k), list_(keys), fifo_(fifo) {}
  void hit(uint32_t key) override {
    if (fifo_) return;
    list_.unlink(key);
    list_.pushHead(key);
  }
  void insert(uint32_t key) override {
    if (list_.size() >= k_) erase(list_.tail());
    list_.pushHead(key);
    where_[key] = kHeld;
  }
  void erase(uint32_t key) override {
    list_.unlink(key);
    where_[key] = 0;
  }

 private:
  KeyList list_;
  bool fifo_;
};

// CLOCK (FIFO with one reinsertion bit) and SIEVE (a hand that walks from
// the tail toward the head and leaves visited items in place).
class ClockSim final : public SimCache {
 public:
  ClockSim(size_t keys, uint64_t k, bool sieve) : SimCache(keys, k), list_(keys), sieve_(sieve) { bits_.assign(keys, 0); }
  void hit(uint32_t key) override { bits_[key] = 1; }
  void insert(uint32_t key) override {
    while (list_.size() >= k_) {
      if (sieve_) {
        uint32_t h = hand_ != kNone ? hand_ : list_.tail();
        while (bits_[h]) {
          bits_[h] = 0;
          h = list_.prev(h) != kNone ? list_.prev(h) : list_.tail();
        }
        hand_ = list_.prev(h);
        erase(h);
      } else {
        const uint32_t t = list_.tail();
        if (bits_[t]) {
          bits_[t] = 0;
          list_.unlink(t);
          list_.pushHead(t);
        } else {
          erase(t);
        }
      }
    }
    list_.pushHead(key);
    bits_[key] = 0;
    where_[key] = kHeld;
  }
  void erase(uint32_t key) override {
    if (hand_ == key) hand_ = list_.prev(key);
    list_.unlink(key);
    where_[key] = 0;
  }

 private:
  KeyList list_;
  bool sieve_;
  uint32_t hand_ = kNone;
};

// ARC (Megiddo and Modha, FAST'03): T1/T2 held, B1/B2 ghosts, target p.
class ArcSim final : public SimCache {
 public:
  ArcSim(size_t keys, uint64_t k) : SimCache(keys, k), t1_(keys), t2_(keys), b1_(keys), b2_(keys) {}
  void hit(uint32_t key) override {
    (where_[key] == kT1 ? t1_ : t2_).unlink(key);
    t2_.pushHead(key);
    where_[key] = kT2;
  }
  void insert(uint32_t key) override {
    const uint8_t w = where_[key];
    if (w == kB1) {
      p_ = std::min<double>(double(k_), p_ + std::max(1.0, double(b2_.size()) / double(b1_.size())));
      replace(false);
      b1_.unlink(key);
      t2_.pushHead(key);
      where_[key] = kT2;
      return;
    }
    if (w == kB2) {
      p_ = std::max(0.0, p_ - std::max(1.0, double(b1_.size()) / double(b2_.size())));
      replace(true);
      b2_.unlink(key);
      t2_.pushHead(key);
      where_[key] = kT2;
      return;
    }
    const size_t l1 = t1_.size() + b1_.size();
    const size_t total = l1 + t2_.size() + b2_.size();
    if (l1 == k_) {
      if (t1_.size() < k_) {
        forget(b1_, b1_.tail());
        replace(false);
      } else {
        drop(t1_, t1_.tail());
      }
    } else if (total >= k_) {
      if (total == 2 * k_) forget(b2_, b2_.tail());
      if (t1_.size() + t2_.size() >= k_) replace(false);
    }
    t1_.pushHead(key);
    where_[key] = kT1;
  }
  void erase(uint32_t key) override {
    const uint8_t w = where_[key];
    if (w == kT1) drop(t1_, key);
    else if (w == kT2) drop(t2_, key);
  }

 private:
  static constexpr uint8_t kB1 = 1, kB2 = 3, kT1 = kHeld + 2, kT2 = kHeld + 3;
  void forget(KeyList& l, uint32_t key) {
    l.unlink(key);
    where_[key] = 0;
  }
  void drop(KeyList& l, uint32_t key) { forget(l, key); }
  void replace(bool inB2) {
    if (t1_.size() > 0 && (double(t1_.size()) > p_ || (inB2 && double(t1_.size()) == p_))) {
      const uint32_t v = t1_.tail();
      t1_.unlink(v);
      b1_.pushHead(v);
      where_[v] = kB1;
    } else if (t2_.size() > 0) {
      const uint32_t v = t2_.tail();
      t2_.unlink(v);
      b2_.pushHead(v);
      where_[v] = kB2;
    } else if (t1_.size() > 0) {
      const uint32_t v = t1_.tail();
      t1_.unlink(v);
      b1_.pushHead(v);
      where_[v] = kB1;
    }
  }
  KeyList t1_, t2_, b1_, b2_;
  double p_ = 0;
};

// S3-FIFO as libCacheSim's S3FIFO.c: small 10%, main FIFO with reinsertion
// and a frequency capped at 3, ghost of 0.9 x k keys; move to main at 2 hits.
class S3FifoSim final : public SimCache {
 public:
  S3FifoSim(size_t keys, uint64_t k)
      : SimCache(keys, k),
        small_(keys),
        main_(keys),
        ghost_(keys),
        smallCap_(std::max<uint64_t>(1, k / 10)),
        ghostCap_(std::max<uint64_t>(1, k * 9 / 10)) {
    bits_.assign(keys, 0);
  }
  void hit(uint32_t key) override { bits_[key] = uint8_t(std::min(3, bits_[key] + 1)); }
  void insert(uint32_t key) override {
    while (small_.size() + main_.size() >= k_) evict();
    bits_[key] = 0;
    if (where_[key] == kGhost) {
      ghost_.unlink(key);
      main_.pushHead(key);
      where_[key] = kMain;
    } else {
      small_.pushHead(key);
      where_[key] = kSmall;
    }
  }
  void erase(uint32_t key) override {
    const uint8_t w = where_[key];
    if (w == kSmall) small_.unlink(key);
    else if (w == kMain) main_.unlink(key);
    else if (w == kGhost) ghost_.unlink(key);
    where_[key] = 0;
  }

 private:
  static constexpr uint8_t kSmall = kHeld, kMain = kHeld + 1;
  void evict() {
    if (main_.size() > k_ - smallCap_ || small_.size() == 0) {
      while (true) {
        const uint32_t t = main_.tail();
        main_.unlink(t);
        if (bits_[t] > 0) {
          --bits_[t];
          main_.pushHead(t);
        } else {
          where_[t] = 0;
          return;
        }
      }
    }
    while (small_.size() > 0) {
      const uint32_t t = small_.tail();
      small_.unlink(t);
      if (bits_[t] >= 2) {
        bits_[t] = 0;
        main_.pushHead(t);
        where_[t] = kMain;
      } else {
        if (ghost_.size() >= ghostCap_) {
          const uint32_t g = ghost_.tail();
          ghost_.unlink(g);
          where_[g] = 0;
        }
        ghost_.pushHead(t);
        where_[t] = kGhost;
        return;
      }
    }
  }
  KeyList small_, main_, ghost_;
  const uint64_t smallCap_, ghostCap_;
};

// W-TinyLFU as libCacheSim's WTinyLFU.c with its SLRU main (1:4): a 1% LRU
// window; the window's victim enters main while main has room, else only if
// the sketch counts it more often than main's victim. The sketch is
// tiercache's FrequencySketch (count-min, 4-bit, doorkeeper), sized for the
// main area and halved after 32 x its size accesses (libCacheSim's sample),
// counting every access, as Caffeine does.
class WTinyLfuSim final : public SimCache {
 public:
  WTinyLfuSim(size_t keys, uint64_t k)
      : SimCache(keys, k),
        window_(keys),
        probation_(keys),
        protected_(keys),
        windowCap_(std::max<uint64_t>(1, k / 100)),
        mainCap_(k > windowCap_ ? k - windowCap_ : 1),
        protectedCap_(mainCap_ * 4 / 5),
        sketch_(mainCap_, 32, FrequencySketch::Layout::kSpread) {}  // libCacheSim: halve after 32 x the main size; its count-min layout
  void hit(uint32_t key) override {
    sketch_.increment(hash(key));
    const uint8_t w = where_[key];
    if (w == kWindow) {
      window_.unlink(key);
      window_.pushHead(key);
      return;
    }
    (w == kProbation ? probation_ : protected_).unlink(key);
    protected_.pushHead(key);
    where_[key] = kProtected;
    while (protected_.size() > protectedCap_) {
      const uint32_t t = protected_.tail();
      protected_.unlink(t);
      probation_.pushHead(t);
      where_[t] = kProbation;
    }
  }
  void insert(uint32_t key) override {
    sketch_.increment(hash(key));
    while (window_.size() + probation_.size() + protected_.size() >= k_) evict();
    window_.pushHead(key);
    where_[key] = kWindow;
  }
  void erase(uint32_t key) override {
    const uint8_t w = where_[key];
    if (w == kWindow) window_.unlink(key);
    else if (w == kProbation) probation_.unlink(key);
    else if (w == kProtected) protected_.unlink(key);
    where_[key] = 0;
  }

 private:
  static constexpr uint8_t kWindow = kHeld, kProbation = kHeld + 1, kProtected = kHeld + 2;
  static uint64_t hash(uint32_t key) {
    uint64_t h = (key + 1) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 31);
  }
  uint32_t mainVictim() const { return probation_.size() ? probation_.tail() : protected_.tail(); }
  void evict() {
    while (true) {
      if (window_.size() == 0) {
        erase(mainVictim());
        return;
      }
      const uint32_t c = window_.tail();
      if (probation_.size() + protected_.size() < mainCap_) {
        window_.unlink(c);
        probation_.pushHead(c);
        where_[c] = kProbation;
        continue;
      }
      const uint32_t v = mainVictim();
      if (sketch_.estimate(hash(c)) > sketch_.estimate(hash(v))) {
        erase(v);
        window_.unlink(c);
        probation_.pushHead(c);
        where_[c] = kProbation;
        continue;
      }
      erase(c);
      return;
    }
  }
  KeyList window_, probation_, protected_;
  const uint64_t windowCap_, mainCap_, protectedCap_;
  FrequencySketch sketch_;
};

// The reference policies, one row each: the only place a name maps to a
// simulator (an unknown name is an error, never another policy).
struct SimRow {
  std::string_view name;
  std::unique_ptr<SimCache> (*make)(size_t keys, uint64_t k);
};
constexpr SimRow kSims[] = {
    {"lru", [](size_t n, uint64_t k) -> std::unique_ptr<SimCache> { return std::make_unique<LruSim>(n, k, false); }},
    {"fifo", [](size_t n, uint64_t k) -> std::unique_ptr<SimCache> { return std::make_unique<LruSim>(n, k, true); }},
    {"clock", [](size_t n, uint64_t k) -> std::unique_ptr<SimCache> { return std::make_unique<ClockSim>(n, k, false); }},
    {"sieve", [](size_t n, uint64_t k) -> std::unique_ptr<SimCache> { return std::make_unique<ClockSim>(n, k, true); }},
    {"arc", [](size_t n, uint64_t k) -> std::unique_ptr<SimCache> { return std::make_unique<ArcSim>(n, k); }},
    {"s3fifo", [](size_t n, uint64_t k) -> std::unique_ptr<SimCache> { return std::make_unique<S3FifoSim>(n, k); }},
    {"wtinylfu", [](size_t n, uint64_t k) -> std::unique_ptr<SimCache> { return std::make_unique<WTinyLfuSim>(n, k); }},
};

std::unique_ptr<SimCache> make(const std::string& name, size_t keys, uint64_t k) {
  std::string known;
  for (const SimRow& row : kSims) {
    if (row.name == name) return row.make(keys, k);
    known += (known.empty() ? "" : ", ") + std::string(row.name);
  }
  throw std::invalid_argument("unknown reference policy '" + name + "' (expected one of " + known + ")");
}

}  // namespace

std::vector<std::string> referencePolicyNames() {
  std::vector<std::string> out;
  for (const SimRow& row : kSims) out.emplace_back(row.name);
  return out;
}

SimResult simulatePolicy(const std::string& name, const std::vector<SimRequest>& requests, uint64_t capacityObjects,
                         bool lookaside) {
  uint32_t keys = 0;
  for (const SimRequest& r : requests) keys = std::max(keys, r.key + 1);
  std::unique_ptr<SimCache> c = make(name, keys, std::max<uint64_t>(1, capacityObjects));
  SimResult result;
  for (const SimRequest& r : requests) {
    switch (r.op) {
      case RequestOp::kGet:
      case RequestOp::kAddChained:  // workloadRequests maps these four already
      case RequestOp::kUpdate:
      case RequestOp::kCouldExist:
      case RequestOp::kLoneGet:
        if (r.measured) ++result.gets;
        if (c->held(r.key)) {
          if (r.measured) ++result.hits;
          c->hit(r.key);
        } else if (r.op == RequestOp::kGet && lookaside) {
          c->insert(r.key);
        }
        break;
      case RequestOp::kSet:
      case RequestOp::kLoneSet:
        if (c->held(r.key)) c->hit(r.key); else c->insert(r.key);
        break;
      case RequestOp::kDel:
        if (c->held(r.key)) c->erase(r.key);
        break;
    }
  }
  return result;
}

}  // namespace tiercache::bench
