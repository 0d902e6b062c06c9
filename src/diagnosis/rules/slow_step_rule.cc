#include "diagnosis/rules/slow_step_rule.h"

#include <cmath>

#include <fmt/format.h>

#include "analysis/changepoint/bocd.h"
#include "diagnosis/robust_stats.h"

namespace prism::diagnosis {
namespace {

constexpr size_t kMinRegimeSteps = 4;  // and at least a quarter of the window's steps
constexpr double kMinSigmaFraction = 0.002;  // step times are never steadier than 0.2%

// The timeline carrying the job's step series: the first GPU of stage 0 with the most steps.
const analysis::Timeline* JobSeries(const analysis::AnalysisResults& r, int job) {
  const analysis::Timeline* best = nullptr;
  for (const auto& t : r.timelines) {
    if (t.job != job || t.stage > 0) continue;
    if (best == nullptr || t.steps.size() > best->steps.size()) best = &t;
  }
  return best;
}

Baseline HealthyBaseline(const std::vector<double>& d) {
  std::vector<double> logs(d.size());
  for (size_t i = 0; i < d.size(); ++i) logs[i] = std::log(d[i]);
  analysis::BocdOptions bocd;
  bocd.prior = analysis::FitNormalGammaPrior(logs);
  bocd.max_run_lengths = 64;
  std::vector<size_t> cuts = analysis::DetectChangePoints(logs, bocd);
  cuts.insert(cuts.begin(), 0);
  cuts.push_back(d.size());
  Baseline best;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    std::vector<double> seg(d.begin() + cuts[i], d.begin() + cuts[i + 1]);
    if (seg.size() < std::max(kMinRegimeSteps, d.size() / 4)) continue;
    const double m = Median(seg);
    if (best.samples == 0 || m < best.median) {
      best.median = m;
      best.sigma = RobustSigma(seg, m);
      best.samples = static_cast<int>(seg.size());
    }
  }
  if (best.samples == 0) {
    best.median = Median(d);
    best.sigma = RobustSigma(d, best.median);
    best.samples = static_cast<int>(d.size());
  }
  return best;
}

}  // namespace

std::vector<Finding> FindSlowSteps(const RuleContext& rc, BaselineStore* baselines) {
  std::vector<Finding> out;
  const auto& o = rc.options;
  for (size_t j = 0; j < rc.results.jobs.size(); ++j) {
    const analysis::Job& job = rc.results.jobs[j];
    const analysis::Timeline* series = JobSeries(rc.results, static_cast<int>(j));
    if (series == nullptr || series->steps.size() < 2) continue;
    std::vector<double> d;
    for (const auto& s : series->steps) d.push_back(double(s.end_ns - s.start_ns) / 1e9);

    const std::string key =
        fmt::format("{}/{}", rc.flows.endpoints().Addr(job.gpus.front()).ToString(), job.gpus.size());
    Baseline base = HealthyBaseline(d);
    if (baselines != nullptr) {
      auto it = baselines->find(key);
      // A carried baseline from healthy history wins over a window that may be faulty throughout.
      if (it != baselines->end() && it->second.samples >= base.samples && it->second.median < base.median)
        base = it->second;
    }
    const double sigma = std::max(base.sigma, kMinSigmaFraction * base.median);
    std::vector<bool> slow(d.size());
    for (size_t i = 0; i < d.size(); ++i)
      slow[i] = d[i] > base.median + o.k * sigma && d[i] > base.median * (1 + o.min_step_effect);
    for (const Run& run : FlaggedRuns(slow, 1)) {
      std::vector<double> in_run(d.begin() + run.first, d.begin() + run.last + 1);
      Finding f;
      f.kind = FindingKind::kSlowStep;
      f.job = static_cast<int>(j);
      f.start_ns = series->steps[run.first].start_ns;
      f.end_ns = series->steps[run.last].end_ns;
      f.metric = "step_duration_s";
      f.value = Median(in_run);
      f.baseline = base.median;
      f.sigma = sigma;
      f.units = static_cast<int>(run.flagged);
      f.severity = SeverityFor(f.units, f.value / f.baseline - 1, o);
      f.summary = fmt::format("{}: {} slow steps, median {:.3f} s vs baseline {:.3f} s (+{:.0f}%)",
                              job.id, f.units, f.value, f.baseline,
                              100 * (f.value / f.baseline - 1));
      out.push_back(std::move(f));
    }
    if (baselines != nullptr) {
      // Remember the healthy part of this window: steps that were not slow.
      std::vector<double> healthy;
      for (size_t i = 0; i < d.size(); ++i)
        if (!slow[i]) healthy.push_back(d[i]);
      if (healthy.size() >= kMinRegimeSteps) {
        Baseline& stored = (*baselines)[key];
        Baseline now{Median(healthy), RobustSigma(healthy, Median(healthy)),
                     static_cast<int>(healthy.size())};
        if (stored.samples == 0 || now.median <= stored.median * (1 + o.min_step_effect)) {
          stored.median = stored.samples == 0 ? now.median
                                              : (stored.median * stored.samples + now.median * now.samples) /
                                                    (stored.samples + now.samples);
          stored.sigma = std::max(stored.sigma, now.sigma);
          stored.samples += now.samples;
        }
      }
    }
  }
  return out;
}

}  // namespace prism::diagnosis
