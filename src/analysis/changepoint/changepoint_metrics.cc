#include "analysis/changepoint/changepoint_metrics.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace prism::analysis {
namespace {

size_t Distance(size_t a, size_t b) { return a > b ? a - b : b - a; }

// Largest distance from a point of `from` to its nearest point in the sorted `to`.
size_t DirectedHausdorff(std::span<const size_t> from, std::span<const size_t> to_sorted) {
  size_t worst = 0;
  for (size_t x : from) {
    auto it = std::lower_bound(to_sorted.begin(), to_sorted.end(), x);
    size_t best = std::numeric_limits<size_t>::max();
    if (it != to_sorted.end()) best = Distance(*it, x);
    if (it != to_sorted.begin()) best = std::min(best, Distance(*(it - 1), x));
    worst = std::max(worst, best);
  }
  return worst;
}

}  // namespace

double HausdorffDistance(std::span<const size_t> a, std::span<const size_t> b) {
  if (a.empty() && b.empty()) return 0;
  if (a.empty() || b.empty()) return std::numeric_limits<double>::infinity();
  std::vector<size_t> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  return static_cast<double>(std::max(DirectedHausdorff(sa, sb), DirectedHausdorff(sb, sa)));
}

PrecisionRecall ChangePointPrecisionRecall(std::span<const size_t> truth,
                                           std::span<const size_t> found, size_t margin) {
  std::vector<size_t> t(truth.begin(), truth.end()), f(found.begin(), found.end());
  std::sort(t.begin(), t.end());
  std::sort(f.begin(), f.end());
  // Greedy over both sorted lists: each true point takes the earliest unused found point inside
  // its window. Windows have equal width, so this is a maximum matching.
  size_t matched = 0;
  size_t j = 0;
  for (size_t x : t) {
    while (j < f.size() && f[j] + margin < x) ++j;  // too early for this and all later truths
    if (j < f.size() && f[j] <= x + margin) {
      ++matched;
      ++j;
    }
  }
  const double m = static_cast<double>(matched);
  return {f.empty() ? 1.0 : m / static_cast<double>(f.size()),
          t.empty() ? 1.0 : m / static_cast<double>(t.size())};
}

}  // namespace prism::analysis
