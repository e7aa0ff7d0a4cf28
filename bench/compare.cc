#include "bench/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tiercache::bench {

namespace {
std::string fmt(const char* f, auto... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, args...);
  return buf;
}

// Display width: UTF-8 continuation bytes ("±" is two bytes) take no column.
size_t columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

std::string pad(const std::string& s, size_t width) {
  size_t n = columns(s);
  return n >= width ? s : s + std::string(width - n, ' ');
}
}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double spread(const std::vector<double>& v) {
  double m = median(v);
  if (m == 0) return 0;
  double d = 0;
  for (double x : v) d = std::max(d, std::fabs(x - m));
  return d / std::fabs(m);
}

double mannWhitneyP(const std::vector<double>& a, const std::vector<double>& b) {
  size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) return 1.0;
  // Ranks (1-based) with ties sharing their mean rank.
  std::vector<std::pair<double, int>> all;
  for (double x : a) all.push_back({x, 0});
  for (double x : b) all.push_back({x, 1});
  std::sort(all.begin(), all.end());
  double rankSumA = 0, tieTerm = 0;
  bool ties = false;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    double rank = (double(i + 1) + double(j)) / 2;
    double t = double(j - i);
    if (t > 1) ties = true;
    tieTerm += t * t * t - t;
    for (size_t k = i; k < j; ++k)
      if (all[k].second == 0) rankSumA += rank;
    i = j;
  }
  double u = rankSumA - double(n1) * double(n1 + 1) / 2;  // U of a
  double mean = double(n1) * double(n2) / 2;
  if (!ties && n1 <= 50 && n2 <= 50) {
    // counts[u]: arrangements of n1 a's and n2 b's with statistic u, built
    // up one sample size at a time: f(i, j) = f(i-1, j) shifted by j + f(i, j-1).
    size_t maxU = n1 * n2;
    std::vector<std::vector<std::vector<double>>> f(n1 + 1, std::vector<std::vector<double>>(n2 + 1));
    for (size_t i = 0; i <= n1; ++i) {
      for (size_t j = 0; j <= n2; ++j) {
        std::vector<double>& cur = f[i][j];
        cur.assign(i * j + 1, 0.0);
        if (i == 0 || j == 0) {
          cur[0] = 1;
          continue;
        }
        const std::vector<double>& left = f[i - 1][j];  // largest value is an a: beats all j b's
        const std::vector<double>& down = f[i][j - 1];
        for (size_t k = 0; k < left.size(); ++k) cur[k + j] += left[k];
        for (size_t k = 0; k < down.size(); ++k) cur[k] += down[k];
      }
    }
    const std::vector<double>& dist = f[n1][n2];
    double total = 0, below = 0, above = 0;
    size_t uu = size_t(u + 0.5);
    for (size_t k = 0; k <= maxU; ++k) {
      total += dist[k];
      if (k <= uu) below += dist[k];
      if (k >= uu) above += dist[k];
    }
    return std::min(1.0, 2 * std::min(below, above) / total);
  }
  double n = double(n1 + n2);
  double var = double(n1) * double(n2) / 12 * ((n + 1) - tieTerm / (n * (n - 1)));
  if (var <= 0) return 1.0;
  double z = (std::fabs(u - mean) - 0.5) / std::sqrt(var);
  if (z < 0) z = 0;
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

std::string shortNumber(double v) {
  double a = std::fabs(v);
  if (a >= 1e9) return fmt("%.4gG", v / 1e9);
  if (a >= 1e6) return fmt("%.4gM", v / 1e6);
  if (a >= 1e3) return fmt("%.4gk", v / 1e3);
  return fmt("%.2f", v);
}

std::string formatComparison(const std::string& nameA, const std::string& nameB, const std::vector<ComparisonRow>& rows,
                             double alpha) {
  struct Line {
    std::string name, a, b, delta;
  };
  std::vector<Line> lines;
  auto cell = [](const std::vector<double>& v, bool ratio) {
    double m = median(v);
    std::string value = ratio ? fmt("%.2f%%", 100 * m) : shortNumber(m);
    return value + fmt(" ± %.0f%%", 100 * spread(v));
  };
  for (const ComparisonRow& r : rows) {
    Line l{r.name, cell(r.a, r.ratio), cell(r.b, r.ratio), ""};
    double p = mannWhitneyP(r.a, r.b);
    std::string tail = fmt(" (p=%.3f n=%zu+%zu)", p, r.a.size(), r.b.size());
    double ma = median(r.a), mb = median(r.b);
    if (p > alpha) {
      l.delta = "~" + tail;
    } else if (r.ratio) {
      l.delta = fmt("%+.2fpp", 100 * (mb - ma)) + tail;
    } else if (ma == 0) {
      l.delta = "?" + tail;
    } else {
      l.delta = fmt("%+.2f%%", 100 * (mb - ma) / ma) + tail;
    }
    lines.push_back(l);
  }
  size_t w0 = 6, w1 = columns(nameA), w2 = columns(nameB);
  for (const Line& l : lines) {
    w0 = std::max(w0, columns(l.name));
    w1 = std::max(w1, columns(l.a));
    w2 = std::max(w2, columns(l.b));
  }
  std::string s = pad("figure", w0) + "  " + pad(nameA, w1) + "  " + pad(nameB, w2) + "  delta\n";
  for (const Line& l : lines) s += pad(l.name, w0) + "  " + pad(l.a, w1) + "  " + pad(l.b, w2) + "  " + l.delta + "\n";
  return s;
}

}  // namespace tiercache::bench
