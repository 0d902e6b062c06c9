// Metric definitions (docs/design.md, Evaluation). GPUs are compared as the strings the documents
// hold (endpoint IPs).
//
// Jobs. Each truth job is matched to the report job sharing most of its GPUs (ties: the report job
// with exactly the same GPU set, then the smaller one, then the first). jobs_exact_fraction = truth
// jobs whose GPU set equals some report job's GPU set / truth jobs. jobs_ari = adjusted Rand index
// over the truth GPUs (each counted once) between the truth partition and the report partition,
// where a GPU's report label is the first report job listing it, or a fresh singleton label if no
// report job does (an unrecognised GPU is its own job).
//
// Pairs. Keyed by the unordered {a, b}. pairs_accuracy = truth pairs whose report pair has the same
// label / truth pairs; a missing report pair is wrong. Labels are compared as strings, so "dp",
// "pp" and "tp" are scored alike. Report pairs absent from the truth are counted as pairs_extra
// (not part of pairs_accuracy); those labelled dp, pp or tp also as pairs_extra_labelled, an
// error of its own (the truth lists every pair that carried a job's tensor data). Also per truth
// job (by the truth pair's "job") and per layout.
//
// Layout. layout_exact_fraction = truth jobs whose matched report job has equal dp, pp, tp and
// equal stages (same count; stage i holds the same GPU set, order inside a stage ignored).
//
// Steps. For each truth timeline, the report steps of the same GPU (all report timelines with that
// "gpu" merged). Each truth step with a positive duration is matched to the report step with the
// largest time overlap, which must exceed half the truth step's duration; its error is
// |report duration - truth duration| / truth duration. p50 / p99 / max use nearest rank over all
// matched steps; steps_matched_fraction = matched truth steps / truth steps. A report step may
// match several truth steps (a merged step then shows as a large error on each).
//
// Faults. Only findings of severity "warning" or "critical" are scored. A finding matches a fault
// when [finding.start_ns, finding.end_ns] overlaps [fault.start_ns - slack, fault.end_ns + slack]
// and the finding names the fault: its job is one of fault.jobs, or one of its GPUs is a fault
// GPU, or one of its switches is a fault switch. Report job ids are the analyser's own, so
// finding.job is first translated to the truth job its report job overlaps most; an id that is
// not a report job is compared as is.
//   precision = scored findings matching >= 1 fault / scored findings (1 if there are none)
//   recall    = faults with >= 1 matching finding / faults (1 if there are none)
//   localized = faults with a matching finding that localises it / faults:
//       straggler        finding.gpus holds every fault GPU and names <= max_localized_gpus
//       degraded_switch  finding.switches holds the fault switch(es) and names <= 2
//       congested_link   finding.switches holds both ends, or holds one end and names <= 2
//       degraded_link    a host's link to its switch, named by the GPU(s) behind it: the straggler
//                        rule (naming only the switch does not tell which of its links)
//       other kinds      either of the first two rules
//   cause     = faults with a localising matching finding whose cause equals the fault's / faults
#include "eval/eval.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "eval/eval_input.h"

namespace prism::eval {
namespace {

using GpuSet = std::vector<std::string>;  // sorted, unique

GpuSet SortedSet(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

double Fraction(size_t num, size_t den) {
  return den == 0 ? 1.0 : static_cast<double>(num) / static_cast<double>(den);
}

std::string LayoutString(const InLayout& l) { return fmt::format("{}x{}x{}", l.dp, l.pp, l.tp); }

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool Intersects(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return std::any_of(a.begin(), a.end(), [&](const std::string& x) { return Contains(b, x); });
}

bool ContainsAll(const std::vector<std::string>& haystack, const std::vector<std::string>& needles) {
  return std::all_of(needles.begin(), needles.end(),
                     [&](const std::string& x) { return Contains(haystack, x); });
}

double Choose2(double n) { return n * (n - 1.0) / 2.0; }

// ---- jobs and layout ----------------------------------------------------------------------

struct JobMatching {
  std::vector<int> truth_to_report;  // -1 if no report job overlaps
  std::vector<int> report_to_truth;  // -1 if no truth job overlaps
};

JobMatching MatchJobs(const std::vector<GpuSet>& truth_sets, const std::vector<GpuSet>& report_sets) {
  std::unordered_map<std::string, std::vector<int>> report_of_gpu;
  for (size_t r = 0; r < report_sets.size(); ++r) {
    for (const auto& g : report_sets[r]) report_of_gpu[g].push_back(static_cast<int>(r));
  }
  JobMatching m;
  m.truth_to_report.assign(truth_sets.size(), -1);
  m.report_to_truth.assign(report_sets.size(), -1);
  std::vector<size_t> best_overlap_of_report(report_sets.size(), 0);
  for (size_t t = 0; t < truth_sets.size(); ++t) {
    std::map<int, size_t> overlap;  // ordered: ties go to the first report job
    for (const auto& g : truth_sets[t]) {
      auto it = report_of_gpu.find(g);
      if (it == report_of_gpu.end()) continue;
      for (int r : it->second) ++overlap[r];
    }
    int best = -1;
    auto better = [&](int r, size_t n) {
      if (best < 0) return true;
      size_t bn = overlap[best];
      if (n != bn) return n > bn;
      bool exact = report_sets[r] == truth_sets[t];
      bool bexact = report_sets[best] == truth_sets[t];
      if (exact != bexact) return exact;
      return report_sets[r].size() < report_sets[best].size();
    };
    for (const auto& [r, n] : overlap) {
      if (better(r, n)) best = r;
      // Report -> truth: most shared GPUs, ties to the first truth job.
      if (n > best_overlap_of_report[r]) {
        best_overlap_of_report[r] = n;
        m.report_to_truth[r] = static_cast<int>(t);
      }
    }
    m.truth_to_report[t] = best;
  }
  return m;
}

bool StagesEqual(const InLayout& a, const InLayout& b) {
  if (a.stages.size() != b.stages.size()) return false;
  for (size_t i = 0; i < a.stages.size(); ++i) {
    if (SortedSet(a.stages[i]) != SortedSet(b.stages[i])) return false;
  }
  return true;
}

// ---- pairs --------------------------------------------------------------------------------

using PairKey = std::pair<std::string, std::string>;

PairKey KeyOf(const InPair& p) {
  return p.a < p.b ? PairKey{p.a, p.b} : PairKey{p.b, p.a};
}

bool IsParallelismLabel(const std::string& label) {
  return label == "dp" || label == "pp" || label == "tp";
}

// ---- steps --------------------------------------------------------------------------------

// Report steps of one GPU sorted by start, with the running maximum of end_ns so the first step
// that can overlap a given start is found by binary search even if report steps overlap.
struct StepIndex {
  std::vector<InStep> steps;
  std::vector<int64_t> max_end_ns;

  void Finish() {
    std::sort(steps.begin(), steps.end(),
              [](const InStep& x, const InStep& y) { return x.start_ns < y.start_ns; });
    max_end_ns.resize(steps.size());
    int64_t m = std::numeric_limits<int64_t>::min();
    for (size_t i = 0; i < steps.size(); ++i) max_end_ns[i] = m = std::max(m, steps[i].end_ns);
  }

  // Duration of the report step overlapping `t` most, if that overlap exceeds half of t.
  std::optional<int64_t> MatchDuration(const InStep& t) const {
    auto it = std::upper_bound(max_end_ns.begin(), max_end_ns.end(), t.start_ns);
    int64_t best_overlap = 0;
    std::optional<int64_t> best;
    for (size_t i = static_cast<size_t>(it - max_end_ns.begin());
         i < steps.size() && steps[i].start_ns < t.end_ns; ++i) {
      int64_t ov = std::min(t.end_ns, steps[i].end_ns) - std::max(t.start_ns, steps[i].start_ns);
      if (ov > best_overlap) {
        best_overlap = ov;
        best = steps[i].end_ns - steps[i].start_ns;
      }
    }
    // Strictly more than half of the truth duration d: for integers, overlap > d / 2 (floor).
    if (best && best_overlap > (t.end_ns - t.start_ns) / 2) return best;
    return std::nullopt;
  }
};

// ---- faults -------------------------------------------------------------------------------

bool IsScored(const InFinding& f) { return f.severity == "warning" || f.severity == "critical"; }

bool Localizes(const InFinding& f, const InFault& fault, const EvalOptions& options) {
  auto gpu_rule = [&] {
    return !fault.gpus.empty() && ContainsAll(f.gpus, fault.gpus) &&
           f.gpus.size() <= options.max_localized_gpus;
  };
  auto switch_rule = [&] {
    return !fault.switches.empty() && ContainsAll(f.switches, fault.switches) &&
           f.switches.size() <= 2;
  };
  if (fault.kind == "straggler" || fault.kind == "degraded_link") return gpu_rule();
  if (fault.kind == "degraded_switch") return switch_rule();
  if (fault.kind == "congested_link") {
    return (!fault.switches.empty() && ContainsAll(f.switches, fault.switches)) ||
           (Intersects(f.switches, fault.switches) && f.switches.size() <= 2);
  }
  return gpu_rule() || switch_rule();
}

}  // namespace

double AdjustedRandIndex(std::span<const int64_t> labels_a, std::span<const int64_t> labels_b) {
  PRISM_CHECK(labels_a.size() == labels_b.size());
  const size_t n = labels_a.size();
  if (n < 2) return 1.0;
  // Sparse contingency table n_ij with its row sums a_i and column sums b_j.
  std::map<std::pair<int64_t, int64_t>, int64_t> cells;
  std::unordered_map<int64_t, int64_t> rows, cols;
  for (size_t k = 0; k < n; ++k) {
    ++cells[{labels_a[k], labels_b[k]}];
    ++rows[labels_a[k]];
    ++cols[labels_b[k]];
  }
  double sum_cells = 0, sum_rows = 0, sum_cols = 0;
  for (const auto& [key, c] : cells) sum_cells += Choose2(static_cast<double>(c));
  for (const auto& [key, c] : rows) sum_rows += Choose2(static_cast<double>(c));
  for (const auto& [key, c] : cols) sum_cols += Choose2(static_cast<double>(c));
  const double expected = sum_rows * sum_cols / Choose2(static_cast<double>(n));
  const double max_index = 0.5 * (sum_rows + sum_cols);
  // The denominator is 0 only if both partitions are all singletons or both a single block,
  // i.e. identical.
  if (max_index - expected == 0.0) return 1.0;
  return (sum_cells - expected) / (max_index - expected);
}

double NearestRankPercentile(std::span<const double> sorted, double p) {
  PRISM_CHECK(!sorted.empty());
  double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  size_t r = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(sorted.size())));
  return sorted[r - 1];
}

namespace {

// What every scoring stage reads and adds to: the two documents, the job matching and the
// result being built.
struct Scoring {
  const TruthDoc& truth;
  const ReportDoc& report;
  const EvalOptions& options;
  EvalResult& res;
  std::vector<GpuSet> truth_sets, report_sets;  // by job, as in the documents
  JobMatching match;
  std::unordered_map<std::string, size_t> truth_job_index;  // truth job id -> index
  std::map<std::string, LayoutDetail> layouts;             // by layout string
};

// Jobs: each truth job against the report job sharing most of its GPUs, and its layout.
void ScoreJobs(Scoring& sc) {
  const TruthDoc& truth = sc.truth;
  const ReportDoc& report = sc.report;
  EvalResult& res = sc.res;
  EvalCounts& c = res.counts;
  for (const auto& j : truth.jobs) sc.truth_sets.push_back(SortedSet(j.gpus));
  for (const auto& j : report.jobs) sc.report_sets.push_back(SortedSet(j.gpus));
  sc.match = MatchJobs(sc.truth_sets, sc.report_sets);
  c.truth_jobs = truth.jobs.size();
  c.report_jobs = report.jobs.size();
  const std::vector<GpuSet>& truth_sets = sc.truth_sets;
  const std::vector<GpuSet>& report_sets = sc.report_sets;
  for (size_t t = 0; t < truth.jobs.size(); ++t) {
    const InJob& tj = truth.jobs[t];
    sc.truth_job_index.emplace(tj.id, t);
    JobDetail d;
    d.truth_id = tj.id;
    d.layout = LayoutString(tj.layout);
    d.truth_gpus = truth_sets[t].size();
    d.exact = std::find(report_sets.begin(), report_sets.end(), truth_sets[t]) != report_sets.end();
    if (int r = sc.match.truth_to_report[t]; r >= 0) {
      const InJob& rj = report.jobs[r];
      d.report_id = rj.id;
      d.report_gpus = report_sets[r].size();
      std::vector<std::string> common;
      std::set_intersection(truth_sets[t].begin(), truth_sets[t].end(), report_sets[r].begin(),
                            report_sets[r].end(), std::back_inserter(common));
      d.overlap_gpus = common.size();
      d.dp_match = rj.layout.dp == tj.layout.dp;
      d.pp_match = rj.layout.pp == tj.layout.pp;
      d.tp_match = rj.layout.tp == tj.layout.tp;
      d.order_match = StagesEqual(rj.layout, tj.layout);
      d.layout_exact = d.dp_match && d.pp_match && d.tp_match && d.order_match;
    }
    c.jobs_exact += d.exact;
    c.layouts_exact += d.layout_exact;
    LayoutDetail& ld = sc.layouts[d.layout];
    ld.layout = d.layout;
    ++ld.jobs;
    ld.jobs_layout_exact += d.layout_exact;
    res.jobs.push_back(std::move(d));
  }
  res.jobs_exact_fraction = Fraction(c.jobs_exact, c.truth_jobs);
  res.layout_exact_fraction = Fraction(c.layouts_exact, c.truth_jobs);
}

// The adjusted Rand index of the report's partition of the truth GPUs into jobs; a GPU listed by
// two truth jobs counts for the first.
void ScoreJobPartition(Scoring& sc) {
  std::unordered_map<std::string, int64_t> report_label;
  for (size_t r = 0; r < sc.report_sets.size(); ++r) {
    for (const auto& g : sc.report_sets[r]) report_label.emplace(g, static_cast<int64_t>(r));
  }
  std::unordered_set<std::string> seen;
  std::vector<int64_t> la, lb;
  int64_t next_singleton = static_cast<int64_t>(sc.report_sets.size());
  for (size_t t = 0; t < sc.truth_sets.size(); ++t) {
    for (const auto& g : sc.truth_sets[t]) {
      if (!seen.insert(g).second) continue;
      la.push_back(static_cast<int64_t>(t));
      auto it = report_label.find(g);
      lb.push_back(it != report_label.end() ? it->second : next_singleton++);
    }
  }
  sc.res.counts.truth_gpus = la.size();
  sc.res.jobs_ari = AdjustedRandIndex(la, lb);
}

// Pairs: each truth pair's label against the report's; report pairs the truth does not list.
void ScorePairs(Scoring& sc) {
  EvalResult& res = sc.res;
  EvalCounts& c = res.counts;
  std::map<PairKey, const InPair*> report_pairs;
  for (const auto& p : sc.report.pairs) report_pairs.emplace(KeyOf(p), &p);
  std::set<PairKey> truth_keys;
  for (const auto& p : sc.truth.pairs) {
    PairKey key = KeyOf(p);
    if (!truth_keys.insert(key).second) continue;  // listed twice: score once
    ++c.truth_pairs;
    auto it = report_pairs.find(key);
    bool correct = it != report_pairs.end() && it->second->label == p.label;
    if (it == report_pairs.end()) {
      ++c.pairs_missing;
    } else if (!correct) {
      ++c.pairs_wrong_label;
    }
    c.pairs_correct += correct;
    auto jt = sc.truth_job_index.find(p.job);
    LayoutDetail* ld;
    if (jt != sc.truth_job_index.end()) {
      JobDetail& jd = res.jobs[jt->second];
      ++jd.pairs_total;
      jd.pairs_correct += correct;
      ld = &sc.layouts[jd.layout];
    } else {
      ld = &sc.layouts["unknown"];
      ld->layout = "unknown";
    }
    ++ld->pairs_total;
    ld->pairs_correct += correct;
  }
  for (const auto& [key, p] : report_pairs) {
    if (truth_keys.contains(key)) continue;
    ++c.pairs_extra;
    c.pairs_extra_labelled += IsParallelismLabel(p->label);
  }
  res.pairs_accuracy = Fraction(c.pairs_correct, c.truth_pairs);
  for (auto& [name, ld] : sc.layouts) res.layouts.push_back(std::move(ld));
}

// Steps: each truth step against the report step of its GPU overlapping it by more than half.
void ScoreSteps(Scoring& sc) {
  EvalResult& res = sc.res;
  EvalCounts& c = res.counts;
  std::unordered_map<std::string, StepIndex> report_steps;
  for (const auto& tl : sc.report.timelines) {
    auto& idx = report_steps[tl.gpu];
    idx.steps.insert(idx.steps.end(), tl.steps.begin(), tl.steps.end());
  }
  for (auto& [gpu, idx] : report_steps) idx.Finish();
  std::vector<double> errors;
  for (const auto& tl : sc.truth.timelines) {
    auto it = report_steps.find(tl.gpu);
    auto jt = sc.truth_job_index.find(tl.job);
    JobDetail* jd = jt != sc.truth_job_index.end() ? &res.jobs[jt->second] : nullptr;
    for (const auto& step : tl.steps) {
      const int64_t truth_ns = step.end_ns - step.start_ns;
      if (truth_ns <= 0) {
        ++c.steps_invalid;
        continue;
      }
      ++c.truth_steps;
      if (jd) ++jd->steps_total;
      if (it == report_steps.end()) continue;
      std::optional<int64_t> report_ns = it->second.MatchDuration(step);
      if (!report_ns) continue;
      ++c.steps_matched;
      if (jd) ++jd->steps_matched;
      errors.push_back(std::abs(static_cast<double>(*report_ns - truth_ns)) /
                       static_cast<double>(truth_ns));
    }
  }
  std::sort(errors.begin(), errors.end());
  if (c.truth_steps == 0) {
    res.step_error_p50 = res.step_error_p99 = res.step_error_max = 0.0;
  } else if (!errors.empty()) {
    res.step_error_p50 = NearestRankPercentile(errors, 50);
    res.step_error_p99 = NearestRankPercentile(errors, 99);
    res.step_error_max = errors.back();
  }
  res.steps_matched_fraction = Fraction(c.steps_matched, c.truth_steps);
}

// One fault against the scored findings: those that overlap it in time and name it, the first
// that localises it, the first of those with its cause. Marks the findings that match.
FaultDetail ScoreFault(const Scoring& sc, const InFault& fault,
                       const std::unordered_map<std::string, std::string>& report_job_to_truth,
                       std::vector<bool>* finding_matches) {
  FaultDetail fd;
  fd.id = fault.id;
  fd.kind = fault.kind;
  fd.cause = fault.cause;
  const int64_t lo = fault.start_ns - sc.options.time_slack_ns;
  const int64_t hi = fault.end_ns + sc.options.time_slack_ns;
  for (size_t i = 0; i < sc.report.findings.size(); ++i) {
    const InFinding& f = sc.report.findings[i];
    if (!IsScored(f)) continue;
    if (f.start_ns > hi || f.end_ns < lo) continue;
    bool names_job = false;
    if (!f.job.empty()) {
      auto it = report_job_to_truth.find(f.job);
      names_job = Contains(fault.jobs, it != report_job_to_truth.end() ? it->second : f.job);
    }
    if (!names_job && !Intersects(f.gpus, fault.gpus) && !Intersects(f.switches, fault.switches)) {
      continue;
    }
    (*finding_matches)[i] = true;
    fd.matching_findings.push_back(i);
    if (!Localizes(f, fault, sc.options)) continue;
    if (!fd.localizing_finding) fd.localizing_finding = i;
    if (!fd.cause_finding && f.cause == fault.cause) fd.cause_finding = i;
  }
  return fd;
}

// Whether a congested_link finding names a link the simulated fabric congested by itself, at a
// time it did (with the faults' slack).
bool OnFabricEvent(const Scoring& sc, const InFinding& f) {
  if (f.kind != "congested_link") return false;
  std::vector<std::string> named = f.switches;
  std::sort(named.begin(), named.end());
  for (const InFabricEvent& e : sc.truth.fabric_events) {
    if (f.start_ns > e.end_ns + sc.options.time_slack_ns ||
        f.end_ns < e.start_ns - sc.options.time_slack_ns) {
      continue;
    }
    std::vector<std::string> link = e.switches;
    std::sort(link.begin(), link.end());
    if (named == link) return true;
  }
  return false;
}

// Faults: recall, localisation and cause per fault; precision over the scored findings (those on
// the fabric's own congestion left out).
void ScoreFaults(Scoring& sc) {
  EvalResult& res = sc.res;
  EvalCounts& c = res.counts;
  std::unordered_map<std::string, std::string> report_job_to_truth;
  for (size_t r = 0; r < sc.report.jobs.size(); ++r) {
    int t = sc.match.report_to_truth[r];
    report_job_to_truth.emplace(sc.report.jobs[r].id, t >= 0 ? sc.truth.jobs[t].id : std::string());
  }
  c.findings = sc.report.findings.size();
  std::vector<bool> finding_matches(sc.report.findings.size(), false);
  for (const auto& fault : sc.truth.faults) {
    FaultDetail fd = ScoreFault(sc, fault, report_job_to_truth, &finding_matches);
    ++c.faults;
    c.faults_matched += !fd.matching_findings.empty();
    c.faults_localized += fd.localizing_finding.has_value();
    c.faults_cause += fd.cause_finding.has_value();
    res.faults.push_back(std::move(fd));
  }
  for (size_t i = 0; i < sc.report.findings.size(); ++i) {
    if (!IsScored(sc.report.findings[i])) continue;
    ++c.findings_scored;
    if (finding_matches[i]) {
      ++c.findings_matching;
    } else if (OnFabricEvent(sc, sc.report.findings[i])) {
      ++c.findings_on_fabric_events;
    } else {
      res.false_positive_findings.push_back(i);
    }
  }
  res.faults_precision =
      Fraction(c.findings_matching, c.findings_scored - c.findings_on_fabric_events);
  res.faults_recall = Fraction(c.faults_matched, c.faults);
  res.faults_localized_fraction = Fraction(c.faults_localized, c.faults);
  res.faults_cause_fraction = Fraction(c.faults_cause, c.faults);
}

StatusOr<EvalResult> EvaluateNamed(const nlohmann::json& truth_json, std::string_view truth_name,
                                   const nlohmann::json& report_json, std::string_view report_name,
                                   const EvalOptions& options) {
  PRISM_ASSIGN_OR_RETURN(TruthDoc truth, ParseTruth(truth_json, truth_name));
  PRISM_ASSIGN_OR_RETURN(ReportDoc report, ParseReport(report_json, report_name));
  EvalResult res;
  Scoring sc{truth, report, options, res, {}, {}, {}, {}, {}};
  ScoreJobs(sc);
  ScoreJobPartition(sc);
  ScorePairs(sc);
  ScoreSteps(sc);
  ScoreFaults(sc);
  return res;
}

}  // namespace

StatusOr<EvalResult> Evaluate(const nlohmann::json& truth, const nlohmann::json& report,
                              const EvalOptions& options) {
  return EvaluateNamed(truth, "truth", report, "report", options);
}

StatusOr<nlohmann::json> LoadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError(ErrorCode::kNotFound, "{}: cannot open file", path);
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return MakeError(ErrorCode::kNotFound, "{}: read error", path);
  try {
    return nlohmann::json::parse(buf.str());
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line L, column C: ...".
    return MakeError(ErrorCode::kInvalidArgument, "{}: invalid JSON (byte {}): {}", path, e.byte,
                     e.what());
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: invalid JSON: {}", path, e.what());
  }
}

StatusOr<EvalResult> EvaluateFiles(const std::string& truth_path, const std::string& report_path,
                                   const EvalOptions& options) {
  PRISM_ASSIGN_OR_RETURN(nlohmann::json truth, LoadJsonFile(truth_path));
  PRISM_ASSIGN_OR_RETURN(nlohmann::json report, LoadJsonFile(report_path));
  return EvaluateNamed(truth, truth_path, report, report_path, options);
}

}  // namespace prism::eval
