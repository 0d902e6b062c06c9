#include "bench/bench_data.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include <fmt/format.h>

namespace prism::bench {

void PipelineTransferTimes(size_t n, uint64_t seed, std::vector<int64_t>* start_ns,
                           std::vector<int64_t>* end_ns) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> burst_len(5, 60);
  std::lognormal_distribution<double> idle_ns(std::log(20'000.0), 0.8);
  std::uniform_int_distribution<int64_t> gap_ns(5'000'000, 50'000'000);
  std::uniform_int_distribution<int64_t> duration_ns(10'000, 200'000);
  start_ns->clear();
  end_ns->clear();
  int64_t t = 1'000'000'000;
  int left = burst_len(rng);
  for (size_t i = 0; i < n; ++i) {
    const int64_t d = duration_ns(rng);
    start_ns->push_back(t);
    end_ns->push_back(t + d);
    t += d;
    if (--left == 0) {
      t += gap_ns(rng);
      left = burst_len(rng);
    } else {
      t += std::max<int64_t>(0, std::llround(idle_ns(rng)) - 5'000);  // some idle times clamp
    }
  }
}

std::vector<double> PipelineIntervalSeries(size_t n, uint64_t seed) {
  std::vector<int64_t> start, end;
  PipelineTransferTimes(n + 1, seed, &start, &end);
  std::vector<double> xs(n);
  int64_t latest_end = end[0];
  for (size_t k = 0; k < n; ++k) {
    xs[k] = std::log(double(std::max<int64_t>(1'000, start[k + 1] - latest_end)));
    latest_end = std::max(latest_end, end[k + 1]);
  }
  return xs;
}

std::vector<FlowRecord> RingJobRecords(int jobs, int gpus_per_job, int steps, PointTable* points,
                                      int num_switches) {
  std::vector<PointId> switches;
  for (int s = 0; s < num_switches; ++s) {
    switches.push_back(points->Intern(num_switches <= 8
                                          ? fmt::format("spine{}", s)
                                          : fmt::format("leaf-p{:03}-r{}", s / 8, s % 8)));
  }
  std::vector<FlowRecord> out;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> jitter_ns(0, 20'000);
  const int64_t step_ns = 400'000'000, bucket_ns = 20'000'000;
  for (int j = 0; j < jobs; ++j) {
    for (int g = 0; g < gpus_per_job; ++g) {
      const uint32_t a = 0x0A000000u + uint32_t(j * gpus_per_job + g);
      const uint32_t b = 0x0A000000u + uint32_t(j * gpus_per_job + (g + 1) % gpus_per_job);
      for (int s = 0; s < steps; ++s) {
        for (int k = 0; k < 4; ++k) {
          FlowRecord r;
          r.start_ns = 1'000'000'000'000 + s * step_ns + k * bucket_ns + jitter_ns(rng);
          r.end_ns = r.start_ns + 2'000'000;
          r.src = IpAddr::FromV4(a);
          r.dst = IpAddr::FromV4(b);
          r.src_port = 49152;
          r.dst_port = 4791;
          r.proto = 17;
          r.qp = 100 + uint32_t(k);
          r.bytes = 1'000'000 + uint64_t(k) * 250'000;  // distinct bucket sizes: DP
          r.packets = r.bytes / 4096 + 1;
          r.point = switches[size_t(j * gpus_per_job + g + k) % switches.size()];
          out.push_back(r);
        }
      }
    }
  }
  std::sort(out.begin(), out.end(),
            [](const FlowRecord& x, const FlowRecord& y) { return x.start_ns < y.start_ns; });
  return out;
}

}  // namespace prism::bench
