#include "counters/resample.h"

#include <algorithm>
#include <cmath>

#include "diagnosis/robust_stats.h"

namespace prism::counters {

PollProfile ProfilePolls(const CountersData& data) {
  PollProfile p;
  std::vector<double> dts, refresh;
  uint64_t zeros = 0, busy_polls = 0;
  for (const PortSeries& s : data.ports) {
    const size_t n = s.ts_ms.size();
    // Subsample poll intervals of big inputs: the median needs a few per port.
    const size_t stride = std::max<size_t>(1, n / 200);
    for (size_t i = 1; i < n; i += stride) dts.push_back((s.ts_ms[i] - s.ts_ms[i - 1]) / 1000.0);
    size_t nonzero = 0;
    double span = 0;
    size_t intervals = 0;
    int64_t last_nz = -1;
    for (size_t i = 0; i < n; ++i) {
      if (s.in_bytes[i] + s.out_bytes[i] == 0) continue;
      ++nonzero;
      if (last_nz >= 0) {
        double gap = (s.ts_ms[i] - s.ts_ms[last_nz]) / 1000.0;
        if (gap <= 5) {  // inside a busy stretch
          span += gap;
          ++intervals;
        }
      }
      last_nz = static_cast<int64_t>(i);
    }
    // "Busy": non-zero in most polls of a stretch of at least 20 intervals.
    if (intervals >= 20 && nonzero * 4 >= n) {
      refresh.push_back(span / intervals);
      for (size_t i = 1; i + 1 < n; ++i) {
        if (s.in_bytes[i] + s.out_bytes[i] == 0 && s.in_bytes[i - 1] + s.out_bytes[i - 1] != 0) {
          ++busy_polls;
          if (s.in_bytes[i + 1] + s.out_bytes[i + 1] != 0) ++zeros;
        } else {
          ++busy_polls;
        }
      }
    }
  }
  p.poll_s = diagnosis::Median(dts);
  if (!dts.empty()) {
    auto k = dts.begin() + static_cast<ptrdiff_t>(dts.size() * 9 / 10);
    std::nth_element(dts.begin(), k, dts.end());
    p.poll_p90_s = *k;
  }
  p.refresh_s = refresh.empty() ? p.poll_s : std::max(p.poll_s, diagnosis::Median(refresh));
  p.stale_zero_fraction = busy_polls ? double(zeros) / double(busy_polls) : 0;
  return p;
}

uint64_t SpreadPort(const PortSeries& port, const Grid& grid, const SpreadOptions& options,
                    double* bytes, uint16_t* covered, Stats* stats) {
  const size_t n = port.ts_ms.size();
  if (n < 2 || grid.bins == 0) return 0;
  const double bin_ms = grid.bin_s * 1000;
  const double refresh_ms = options.refresh_s * 1000;
  const double max_gap_ms = options.max_gap_s * 1000;
  const double nbins = static_cast<double>(grid.bins);
  auto value = [&](size_t i) {
    return (options.in ? port.in_bytes[i] : 0) + (options.out ? port.out_bytes[i] : 0);
  };
  // Marks bins entirely inside (a, b] (grid ms offsets) as covered.
  auto cover = [&](double a, double b) {
    double first = std::ceil(a / bin_ms), last = std::floor(b / bin_ms);  // bins [first, last)
    first = std::max(first, 0.0);
    last = std::min(last, nbins);
    for (double k = first; k < last; ++k) ++covered[static_cast<size_t>(k)];
  };
  // Adds v bytes evenly over (a, b] (ms offsets from the grid start), clipped to the grid.
  auto spread = [&](double a, double b, double v) {
    if (b <= a) {
      double k = std::floor(b / bin_ms);
      if (k >= 0 && k < nbins) bytes[static_cast<size_t>(k)] += v;
      return;
    }
    const double rate = v / (b - a);
    double k = std::floor(a / bin_ms);
    for (double lo = a; lo < b; k += 1) {
      double hi = std::min(b, (k + 1) * bin_ms);
      if (k >= 0 && k < nbins) bytes[static_cast<size_t>(k)] += rate * (hi - lo);
      lo = hi;
    }
  };
  uint64_t total = 0;
  double last_nonzero = static_cast<double>(port.ts_ms[0] - grid.start_ms);
  for (size_t i = 1; i < n; ++i) {
    const double t = static_cast<double>(port.ts_ms[i] - grid.start_ms);
    const double prev = static_cast<double>(port.ts_ms[i - 1] - grid.start_ms);
    const double dt = t - prev;
    if (dt > max_gap_ms) {
      if (stats) stats->Add(Stat::counters_gap);
    } else {
      cover(prev, t);
    }
    const uint64_t v = value(i);
    if (v == 0) {
      if (i + 1 < n && value(i + 1) != 0 && port.ts_ms[i + 1] - port.ts_ms[i - 1] <= refresh_ms * 1.5 &&
          stats) {
        stats->Add(Stat::counters_stale_zero);
      }
      continue;
    }
    const double a = std::max(last_nonzero, t - std::max(refresh_ms, dt));
    spread(a, t, static_cast<double>(v));
    total += v;
    last_nonzero = t;
  }
  return total;
}

}  // namespace prism::counters
