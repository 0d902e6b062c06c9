#include "analysis/classify/tensor_parallel.h"

#include <algorithm>
#include <unordered_map>

#include "analysis/parallel_for.h"

namespace prism::analysis {
namespace {

// Below this many pipeline intervals per collective start, InterleavedShare walks the intervals;
// above it, it looks up each start's interval.
constexpr size_t kFewCollectiveStarts = 4;

}  // namespace

double InterleavedShare(const std::vector<Transfer>& collective,
                        const std::vector<Transfer>& pipeline) {
  if (pipeline.size() < 2) return 0;
  size_t with = 0;
  if (collective.size() * kFewCollectiveStarts < pipeline.size()) {
    // Few collective starts among many intervals (a DP pair's gradient collective beside a
    // pipeline pair's micro-batches): a start s lies inside at most one interval, the one ending
    // at the first pipeline start at or past s, and inside it only when that start is past s.
    // Found by galloping from the previous start's place (starts in order: each interval is met
    // once). scale-10k's calls are all of this kind, 11 starts to 173 transfers on average: the
    // walk of every interval was 1.7% of a run's instructions, this 0.9% (callgrind).
    size_t end = 0;  // the first pipeline start at or past s
    size_t counted = pipeline.size();  // the last interval counted (none yet)
    const auto before = [](const Transfer& t, int64_t s) { return t.start_ns < s; };
    for (const Transfer& c : collective) {
      const int64_t s = c.start_ns;
      size_t step = 1, lo = end;
      while (end < pipeline.size() && pipeline[end].start_ns < s) {
        lo = end + 1;
        end = std::min(pipeline.size(), end + step);
        step *= 2;
      }
      end = size_t(std::lower_bound(pipeline.begin() + ptrdiff_t(lo),
                                    pipeline.begin() + ptrdiff_t(end), s, before) -
                    pipeline.begin());
      if (end == 0 || end == pipeline.size() || pipeline[end].start_ns == s) continue;
      if (end - 1 != counted) ++with, counted = end - 1;
    }
  } else {
    size_t j = 0;
    for (size_t i = 0; i + 1 < pipeline.size(); ++i) {
      const int64_t lo = pipeline[i].start_ns, hi = pipeline[i + 1].start_ns;
      while (j < collective.size() && collective[j].start_ns <= lo) ++j;
      if (j < collective.size() && collective[j].start_ns < hi) ++with;
    }
  }
  return double(with) / double(pipeline.size() - 1);
}

namespace {

// Indices of the pairs labelled `label` with more than `min_intervals` transfers, by GPU.
std::unordered_map<EndpointId, std::vector<size_t>> PairsByGpu(
    const std::vector<Pair>& pairs, const std::vector<PairTransfers>& transfers, PairLabel label,
    size_t min_intervals) {
  std::unordered_map<EndpointId, std::vector<size_t>> by_gpu;
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (pairs[i].label != label || transfers[i].transfers.size() < min_intervals + 1) continue;
    by_gpu[pairs[i].a].push_back(i);
    by_gpu[pairs[i].b].push_back(i);
  }
  return by_gpu;
}

}  // namespace

namespace {

// One pair's verdict: the rule that makes it TP (none: it stays), and for denser-than-pipeline
// the pipeline pairs it was denser than.
struct TpVerdict {
  const char* rule = nullptr;
  std::vector<size_t> witnesses;
};

TpVerdict JudgeTensorParallel(
    size_t i, const std::vector<Pair>& pairs, const std::vector<PairTransfers>& transfers,
    const std::unordered_map<EndpointId, std::vector<size_t>>& pipeline_of,
    const std::unordered_map<EndpointId, std::vector<size_t>>& collectives_of,
    const TensorParallelOptions& options) {
  TpVerdict out;
  const Pair& c = pairs[i];
  // A tensor-parallel collective runs in every layer of every micro-batch: many bursts. A pair
  // with a handful of records (long flow records of an exporter with second-long timeouts)
  // cannot show where its bursts fall.
  const size_t n = transfers[i].transfers.size();
  if (n < options.min_intervals + 1) return out;
  if (c.label == PairLabel::kDp) {
    double best = 0;
    for (EndpointId g : {c.a, c.b}) {
      auto it = pipeline_of.find(g);
      if (it == pipeline_of.end()) continue;
      for (size_t p : it->second) {
        best = std::max(best, InterleavedShare(transfers[i].transfers, transfers[p].transfers));
        if (best >= options.min_interleaved_share) break;  // the verdict is made
      }
      if (best >= options.min_interleaved_share) break;
    }
    if (best >= options.min_interleaved_share) {
      out.rule = "interleaved-with-pipeline";
    } else if (options.denser_than_collective && best >= options.min_dense_interleaved_share) {
      // A GPU's gradient collective moves about the same number of transfers with each of its
      // ring neighbours; a TP all-reduce runs in every layer of every micro-batch. A collective
      // pair with min_count_ratio times the transfers of another collective pair of its GPU,
      // and interleaved with its pipeline as a TP pair at a pipeline's end is, is TP: what
      // tells TP from DP when long records (10-ms flowlets) leave it too few transfers to be
      // denser than the pipeline.
      for (EndpointId g : {c.a, c.b}) {
        auto it = collectives_of.find(g);
        if (it == collectives_of.end()) continue;
        const bool denser = std::any_of(it->second.begin(), it->second.end(), [&](size_t d) {
          return d != i && double(n) >= options.min_count_ratio *
                                             double(transfers[d].transfers.size());
        });
        if (denser) {
          out.rule = "denser-than-collective";
          break;
        }
      }
    }
  } else if (c.label == PairLabel::kPp) {
    for (EndpointId g : {c.a, c.b}) {
      auto it = pipeline_of.find(g);
      if (it == pipeline_of.end()) continue;
      for (size_t p : it->second) {
        if (p == i) continue;
        const double sparse = double(transfers[p].transfers.size());
        if (double(n) >= options.min_count_ratio * sparse &&
            InterleavedShare(transfers[i].transfers, transfers[p].transfers) >=
                options.min_dense_interleaved_share)
          out.witnesses.push_back(p);
      }
    }
    if (!out.witnesses.empty()) out.rule = "denser-than-pipeline";
  }
  return out;
}

}  // namespace

size_t LabelTensorParallelPairs(std::vector<Pair>* pairs,
                                const std::vector<PairTransfers>& transfers,
                                const TensorParallelOptions& options,
                                std::vector<DenserThanPipeline>* denser_pairs, int threads) {
  const auto pipeline_of = PairsByGpu(*pairs, transfers, PairLabel::kPp, options.min_intervals);
  const auto collectives_of = PairsByGpu(*pairs, transfers, PairLabel::kDp, options.min_intervals);
  // Every pair is judged by the labels as they were: verdicts first (pairs in parallel), labels
  // changed after, in pair order.
  std::vector<TpVerdict> verdicts(pairs->size());
  ParallelForInChunks(pairs->size(), threads, kPairsPerChunk, [&](size_t i) {
    verdicts[i] = JudgeTensorParallel(i, *pairs, transfers, pipeline_of, collectives_of, options);
  });
  size_t labelled = 0;
  for (size_t i = 0; i < pairs->size(); ++i) {
    TpVerdict& v = verdicts[i];
    if (v.rule == nullptr) continue;
    Pair& p = (*pairs)[i];
    if (!v.witnesses.empty() && denser_pairs != nullptr)
      denser_pairs->push_back({i, std::move(v.witnesses), p.evidence.rule});
    p.label = PairLabel::kTp;
    p.evidence.rule = v.rule;
    ++labelled;
  }
  return labelled;
}

size_t RevertUnwitnessedDenserPairs(std::vector<Pair>* pairs,
                                    const std::vector<DenserThanPipeline>& denser) {
  size_t reverted = 0;
  for (const DenserThanPipeline& d : denser) {
    Pair& p = (*pairs)[d.pair];
    if (p.label != PairLabel::kTp) continue;
    const bool witnessed = std::any_of(d.witnesses.begin(), d.witnesses.end(), [&](size_t w) {
      return (*pairs)[w].label != PairLabel::kDp;
    });
    if (witnessed) continue;
    p.label = PairLabel::kPp;
    p.evidence.rule = d.previous_rule;
    ++reverted;
  }
  return reverted;
}

}  // namespace prism::analysis
