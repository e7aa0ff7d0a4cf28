// A/B comparison of two configs, in the manner of Go's benchstat: each
// figure's median over the runs with its spread, and the change from A to
// B with a Mann-Whitney U test deciding whether it is more than noise.
#pragma once

#include <string>
#include <vector>

namespace tiercache::bench {

double median(std::vector<double> values);
// Largest distance of a value from the median, as a fraction of the median
// (0 when the median is 0): the "± x%" benchstat prints.
double spread(const std::vector<double>& values);
// Two-sided p-value of the Mann-Whitney U test that a and b come from the
// same distribution: exact when there are no ties and both samples have at
// most 50 values, else the normal approximation with tie and continuity
// correction. 1 when either sample is empty.
double mannWhitneyP(const std::vector<double>& a, const std::vector<double>& b);

struct ComparisonRow {
  std::string name;      // "get/s"
  std::vector<double> a, b;
  bool ratio = false;    // a ratio in [0,1]: shown in percent, delta in percentage points
};

// The table; a delta whose p-value is above alpha is shown as "~".
std::string formatComparison(const std::string& nameA, const std::string& nameB, const std::vector<ComparisonRow>& rows,
                             double alpha = 0.05);

// 1234567 -> "1.235M", 536100 -> "536.1k", 12.5 -> "12.50"
std::string shortNumber(double v);

}  // namespace tiercache::bench
