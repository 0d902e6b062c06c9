// File: analysis/classify/tensor_parallel.h
// Pair labels: tensor-parallel (TP) pairs among the collectives.
//
// Tensor parallelism keeps a layer's matrices split over a group of GPUs that all-reduce the
// layer's activations in every forward and every backward, of every micro-batch. Inside a host
// that traffic rides NVLink, unseen; across hosts it is a collective like the gradients' (both
// ways at once, or one way along a ring), so the first pass labels it DP. What sets it apart is
// when it happens: the gradient collective runs once per step, after the pipeline has drained
// (or during the last backward), while a TP group all-reduces between every two pipeline
// transfers of its GPUs. So a collective pair of a GPU is TP when its bursts fall into most of the
// intervals between consecutive transfers of the GPU's pipeline pairs (the gradient collective
// falls into about one interval per step, the one holding the step boundary).
// A two-GPU TP group exchanges its halves in alternating bursts that the first pass can take for
// a pipeline pair. Interleaving alone cannot tell it from the next stage's pipeline pair (a middle
// stage alternates between its two neighbours too), but the counts can: a pipeline pair carries
// one activation and one gradient per micro-batch, a TP group at least two all-reduces per layer
// each way. So a pipeline-labelled pair is TP when it is interleaved with another pipeline pair
// of its GPU that carries at most 1/min_count_ratio of its transfers.
// Needs pipeline pairs: a job without them (TP x DP only) keeps its TP pairs labelled DP.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "analysis/analysis_results.h"
#include "analysis/classify/transfers.h"

namespace prism::analysis {

struct TensorParallelOptions {
  double min_interleaved_share = 0.6;  // of a pipeline pair's intervals holding the pair's bursts
  size_t min_intervals = 8;  // transfers of either pair, less one, to judge
  // A pipeline-labelled pair is TP only with at least this many times the transfers of the
  // pipeline pair it is interleaved with.
  double min_count_ratio = 2.0;
  // ... and bursts in at least this share of its intervals. Lower than for a DP-labelled pair: the
  // count ratio already sets it apart, and at the ends of a pipeline half of a GPU's intervals are
  // waits for the neighbour stage (send the activation, wait, receive the gradient) with no compute
  // and so no TP collective in them; the gradient collective still falls into about one per step.
  double min_dense_interleaved_share = 0.35;
  // Also label TP a collective with min_count_ratio times the transfers of another collective
  // pair of its GPU, interleaved with its pipeline in min_dense_interleaved_share of the intervals
  // (rule "denser-than-collective"). Only once the step-order pass has sorted collectives from
  // pipeline pairs: a pipeline pair of a middle stage taken for DP by the first pass is as dense
  // and as interleaved (the simulator's `paper`: five such pairs made TP, layout 0.8).
  bool denser_than_collective = false;
};

// Share of the intervals between consecutive transfers of `pipeline` (start order) that hold the
// start of at least one transfer of `collective`.
double InterleavedShare(const std::vector<Transfer>& collective,
                        const std::vector<Transfer>& pipeline);

// A pair labelled TP for being denser than a pipeline pair, with the pairs it was denser than
// (its witnesses) and the rule that had labelled it PP.
struct DenserThanPipeline {
  size_t pair = 0;
  std::vector<size_t> witnesses;
  std::string previous_rule;
};

// Relabels DP pairs interleaved with a pipeline pair of one of their GPUs as TP (rule
// "interleaved-with-pipeline"), and PP pairs interleaved with a pipeline pair of one of their GPUs
// that has min_count_ratio times fewer transfers (rule "denser-than-pipeline", listed in `denser`
// when given); returns how many. Pairs are judged on `threads` threads; the same result for any.
size_t LabelTensorParallelPairs(std::vector<Pair>* pairs,
                                const std::vector<PairTransfers>& transfers,
                                const TensorParallelOptions& options,
                                std::vector<DenserThanPipeline>* denser = nullptr,
                                int threads = 1);

// The witnesses of denser-than-pipeline are pairs labelled PP before the step-order pass, which
// also turns DP pairs misread as pipeline pairs back into DP (a DP pair of a pipeline job sends
// both ways in bursts that alternate). A pair denser only than such pairs is a pipeline pair
// after all — under 1-in-10 packet sampling a pipeline pair's flowlets outnumber a DP pair's
// twofold by chance. Relabels each denser pair all of whose witnesses are now DP back to PP (its
// previous rule); returns how many.
size_t RevertUnwitnessedDenserPairs(std::vector<Pair>* pairs,
                                    const std::vector<DenserThanPipeline>& denser);

}  // namespace prism::analysis
