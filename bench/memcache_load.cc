// tiercache-memcache-load: a pipelining load generator for any server that
// speaks the memcached text protocol (tiercache-server, memcached), so both
// are measured with the same client (scripts/server-vs-memcached.sh).
//
//   tiercache-memcache-load --server 127.0.0.1:11211 [--connections 4] [--depth 16]
//       [--keys 100000] [--value-size 512] [--get-ratio 0.9] [--zipf 0.99 | --uniform]
//       [--seconds 10] [--prepopulate] [--seed 1]
//
// One thread per connection; each sends `depth` requests in one write and
// reads the `depth` replies (memcached answers pipelined requests in order).
// Gets are look-aside: a miss is followed by a set of that key, so the hit
// ratio is the cache's. Latency is per batch round trip (depth requests),
// reported as percentiles. Output: one line of key=value pairs.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  std::string host = "127.0.0.1";
  int port = 11211;
  int connections = 4;
  int depth = 16;
  uint64_t keys = 100000;
  size_t valueSize = 512;
  double getRatio = 0.9;
  double zipf = 0.99;  // 0 = uniform
  double seconds = 10;
  bool prepopulate = false;
  uint64_t seed = 1;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "tiercache-memcache-load: %s\n", why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--server") {
        std::string s = val();
        size_t c = s.rfind(':');
        if (c == std::string::npos) usage("--server HOST:PORT");
        o.host = s.substr(0, c);
        o.port = std::stoi(s.substr(c + 1));
      } else if (a == "--connections") o.connections = std::stoi(val());
      else if (a == "--depth") o.depth = std::stoi(val());
      else if (a == "--keys") o.keys = std::stoull(val());
      else if (a == "--value-size") o.valueSize = std::stoull(val());
      else if (a == "--get-ratio") o.getRatio = std::stod(val());
      else if (a == "--zipf") o.zipf = std::stod(val());
      else if (a == "--uniform") o.zipf = 0;
      else if (a == "--seconds") o.seconds = std::stod(val());
      else if (a == "--prepopulate") o.prepopulate = true;
      else if (a == "--seed") o.seed = std::stoull(val());
      else usage("unknown argument " + a);
    } catch (const std::invalid_argument&) {
      usage("bad number for " + a);
    }
  }
  if (o.connections < 1 || o.depth < 1 || o.keys < 1 || o.getRatio < 0 || o.getRatio > 1 || o.seconds <= 0)
    usage("connections, depth, keys >= 1; get-ratio in [0,1]; seconds > 0");
  return o;
}

// Zipf over [0, n) by inverting a precomputed CDF (exact, O(log n) a draw).
class KeyPicker {
 public:
  KeyPicker(uint64_t n, double alpha) : n_(n) {
    // A multiplier coprime to n makes rank -> key a permutation of [0, n).
    mult_ = 2654435761u % n;
    while (n > 1 && std::gcd(mult_, n) != 1) ++mult_;
    if (alpha <= 0) return;
    cdf_.resize(n);
    double sum = 0;
    for (uint64_t i = 0; i < n; ++i) cdf_[i] = (sum += 1.0 / std::pow(double(i + 1), alpha));
    for (double& c : cdf_) c /= sum;
  }
  uint64_t pick(std::mt19937_64& rng) const {
    if (cdf_.empty()) return rng() % n_;
    double u = std::uniform_real_distribution<double>(0, 1)(rng);
    uint64_t r = std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin();
    // Spread popular ranks over the key space (a bijection, so every rank keeps its own key).
    return static_cast<uint64_t>((static_cast<unsigned __int128>(r) * mult_) % n_);
  }

 private:
  uint64_t n_;
  uint64_t mult_ = 1;
  std::vector<double> cdf_;
};

class Conn {
 public:
  Conn(const Options& o) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(o.port);
    inet_pton(AF_INET, o.host.c_str(), &a.sin_addr);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0)
      throw std::runtime_error("connect " + o.host + ":" + std::to_string(o.port) + ": " + strerror(errno));
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~Conn() { close(fd_); }
  void send(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      off += n;
    }
  }
  // A line without "\r\n".
  std::string line() {
    for (;;) {
      size_t p = buf_.find("\r\n", pos_);
      if (p != std::string::npos) {
        std::string l = buf_.substr(pos_, p - pos_);
        pos_ = p + 2;
        return l;
      }
      fill();
    }
  }
  void skip(size_t n) {
    while (buf_.size() - pos_ < n) fill();
    pos_ += n;
  }

 private:
  void fill() {
    if (pos_ > 0 && pos_ == buf_.size()) buf_.clear(), pos_ = 0;
    else if (pos_ > (1 << 20)) buf_.erase(0, pos_), pos_ = 0;
    char tmp[65536];
    ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) throw std::runtime_error("connection closed by the server");
    buf_.append(tmp, n);
  }
  int fd_;
  std::string buf_;
  size_t pos_ = 0;
};

struct Result {
  uint64_t ops = 0, gets = 0, hits = 0, sets = 0, errors = 0;
  std::vector<uint32_t> batchMicros;
};

std::string keyName(uint64_t k) { return "key:" + std::to_string(k); }

void worker(const Options& o, const KeyPicker& keys, int id, std::atomic<bool>& stop, Result& res) {
  Conn c(o);
  std::mt19937_64 rng(o.seed * 1000003 + id);
  std::string value(o.valueSize, 'v');
  std::string req;
  std::vector<std::pair<bool, uint64_t>> batch(o.depth);  // (is get, key)
  std::vector<uint64_t> misses;
  while (!stop.load(std::memory_order_relaxed)) {
    req.clear();
    for (int i = 0; i < o.depth; ++i) {
      bool get = std::uniform_real_distribution<double>(0, 1)(rng) < o.getRatio;
      uint64_t k = keys.pick(rng);
      batch[i] = {get, k};
      if (get) req += "get " + keyName(k) + "\r\n";
      else req += "set " + keyName(k) + " 0 0 " + std::to_string(o.valueSize) + "\r\n" + value + "\r\n";
    }
    auto t0 = std::chrono::steady_clock::now();
    c.send(req);
    misses.clear();
    for (int i = 0; i < o.depth; ++i) {
      std::string l = c.line();
      if (batch[i].first) {
        ++res.gets;
        if (l.rfind("VALUE ", 0) == 0) {
          size_t n = std::stoull(l.substr(l.rfind(' ') + 1));
          c.skip(n + 2);
          l = c.line();
          ++res.hits;
        } else {
          misses.push_back(batch[i].second);
        }
        if (l != "END") ++res.errors;
      } else {
        ++res.sets;
        if (l != "STORED") ++res.errors;
      }
    }
    res.ops += o.depth;
    // Look-aside fill of the misses, in one more pipelined batch.
    if (!misses.empty()) {
      req.clear();
      for (uint64_t k : misses) req += "set " + keyName(k) + " 0 0 " + std::to_string(o.valueSize) + "\r\n" + value + "\r\n";
      c.send(req);
      for (size_t i = 0; i < misses.size(); ++i) {
        if (c.line() != "STORED") ++res.errors;
      }
      res.sets += misses.size();
      res.ops += misses.size();
    }
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
    res.batchMicros.push_back(static_cast<uint32_t>(std::min<int64_t>(us, UINT32_MAX)));
  }
}

void prepopulate(const Options& o) {
  Conn c(o);
  std::string value(o.valueSize, 'v');
  std::string req;
  const uint64_t per = 256;
  for (uint64_t k = 0; k < o.keys; k += per) {
    req.clear();
    uint64_t end = std::min(o.keys, k + per);
    for (uint64_t j = k; j < end; ++j)
      req += "set " + keyName(j) + " 0 0 " + std::to_string(o.valueSize) + " noreply\r\n" + value + "\r\n";
    c.send(req);
  }
  c.send("version\r\n");
  c.line();
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    if (o.prepopulate) prepopulate(o);
    KeyPicker keys(o.keys, o.zipf);
    std::atomic<bool> stop{false};
    std::vector<Result> results(o.connections);
    std::vector<std::thread> threads;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.connections; ++i)
      threads.emplace_back([&, i] {
        try {
          worker(o, keys, i, stop, results[i]);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "tiercache-memcache-load: connection %d: %s\n", i, e.what());
          results[i].errors += 1;
        }
      });
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    stop.store(true);
    for (auto& t : threads) t.join();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Result all;
    for (Result& r : results) {
      all.ops += r.ops, all.gets += r.gets, all.hits += r.hits, all.sets += r.sets, all.errors += r.errors;
      all.batchMicros.insert(all.batchMicros.end(), r.batchMicros.begin(), r.batchMicros.end());
    }
    std::sort(all.batchMicros.begin(), all.batchMicros.end());
    auto pct = [&](double p) -> uint32_t {
      if (all.batchMicros.empty()) return 0;
      return all.batchMicros[std::min<size_t>(all.batchMicros.size() - 1, size_t(p * all.batchMicros.size()))];
    };
    std::printf(
        "ops=%llu seconds=%.2f ops_per_sec=%.0f gets=%llu hits=%llu hit_ratio=%.4f sets=%llu errors=%llu "
        "batch_p50_us=%u batch_p99_us=%u batch_p999_us=%u depth=%d connections=%d\n",
        (unsigned long long)all.ops, secs, all.ops / secs, (unsigned long long)all.gets, (unsigned long long)all.hits,
        all.gets ? double(all.hits) / all.gets : 0.0, (unsigned long long)all.sets, (unsigned long long)all.errors,
        pct(0.5), pct(0.99), pct(0.999), o.depth, o.connections);
    return all.errors == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tiercache-memcache-load: %s\n", e.what());
    return 1;
  }
}
