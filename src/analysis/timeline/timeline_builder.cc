#include "analysis/timeline/timeline_builder.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <span>
#include <utility>

#include "analysis/steps/dp_group_steps.h"

namespace prism::analysis {
namespace {

struct GpuTransfer {
  int64_t start_ns, end_ns;
  EndpointId peer;
  bool outgoing;
  bool dp;
};

// Whether an incoming transfer from the peer of the send `events[at]` starts within
// `tolerance_ns` of it. `events` are in start order, so only the run of events that start within
// the tolerance on either side is looked at (a step of a deep pipeline has dozens of events, and
// every send of it asks).
bool LeavesWithPeer(std::span<const PpEvent> events, size_t at, int64_t tolerance_ns) {
  const PpEvent& send = events[at];
  for (size_t j = at; j-- > 0 && events[j].start_ns >= send.start_ns - tolerance_ns;)
    if (!events[j].outgoing && events[j].peer == send.peer) return true;
  for (size_t j = at + 1; j < events.size() && events[j].start_ns <= send.start_ns + tolerance_ns;
       ++j)
    if (!events[j].outgoing && events[j].peer == send.peer) return true;
  return false;
}

// The median of a non-empty `v`, reordering it (v is scratch).
int64_t MedianInPlace(std::vector<int64_t>& v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

int64_t MedianOf(std::vector<int64_t> v) { return v.empty() ? 0 : MedianInPlace(v); }

// The job's DP and PP transfers, sorted out: per stage all its DP transfers (for the step
// boundaries), per GPU its own transfers in start order. The GPUs' lists are runs of one array
// (one allocation for the job, where a list per GPU took one each from a heap that, at 100,000
// GPUs, holds millions of freed pair lists to search through).
struct JobTransfers {
  std::vector<std::vector<DpTransfer>> stage_dp;  // per stage
  // Per endpoint of the job's DP and PP pairs, numbered in order of appearance: lists for the
  // job's GPUs only, not for every endpoint of the window (jobs x endpoints lists otherwise).
  std::map<EndpointId, uint32_t> local;
  std::vector<GpuTransfer> own;   // GPU l's transfers: own[own_first[l] .. own_first[l + 1])
  size_t pp_entries = 0;          // of `own`, the PP ones: at most the job's PP events
  std::vector<size_t> own_first;  // per local GPU, then the end
  uint32_t LocalOf(EndpointId e) {
    return local.try_emplace(e, uint32_t(local.size())).first->second;
  }
  // The endpoint's transfers (none for an endpoint of no DP or PP pair of the job).
  std::span<const GpuTransfer> OwnOf(EndpointId e) const {
    const auto it = local.find(e);
    if (it == local.end()) return {};
    return std::span<const GpuTransfer>(own).subspan(own_first[it->second],
                                                     own_first[it->second + 1] -
                                                         own_first[it->second]);
  }
};

// Puts a GPU's transfers `v` in start order. They are one run per pair of the GPU, each in start
// order (a pair's transfers are), so the runs are found where the start falls and merged two by
// two: log2 of a GPU's pairs (2-4 at most layouts) passes over the list, where sorting it made
// ~log2 of its length (callgrind, scale-10k: the sort was 3.8% of a run's instructions). Equal
// starts keep the runs' order. `scratch` and `runs` are working space, kept from GPU to GPU.
void MergeRunsByStart(std::span<GpuTransfer> v, std::vector<GpuTransfer>* scratch,
                      std::vector<size_t>* runs) {
  const size_t n = v.size();
  runs->assign(1, 0);
  for (size_t i = 1; i < n; ++i)
    if (v[i].start_ns < v[i - 1].start_ns) runs->push_back(i);
  if (runs->size() == 1) return;
  runs->push_back(n);
  if (scratch->size() < n) scratch->resize(n);
  GpuTransfer* from = v.data();
  GpuTransfer* to = scratch->data();
  const auto by_start = [](const GpuTransfer& x, const GpuTransfer& y) {
    return x.start_ns < y.start_ns;
  };
  // runs: the runs' first indices, then n. Each pass merges runs 2i and 2i+1 (an odd last run
  // is copied) and keeps the merged runs' first indices in place.
  while (runs->size() > 2) {
    std::vector<size_t>& r = *runs;
    const size_t count = r.size() - 1;
    size_t kept = 0;
    for (size_t i = 0; i < count; i += 2) {
      const size_t begin = r[i], mid = r[i + 1], end = i + 2 <= count ? r[i + 2] : mid;
      std::merge(from + begin, from + mid, from + mid, from + end, to + begin, by_start);
      r[kept++] = begin;
    }
    r[kept++] = n;
    r.resize(kept);
    std::swap(from, to);
  }
  if (from != v.data()) std::copy(from, from + n, v.data());
}

// Moves the transfers of the job's DP and PP pairs out of `pair_transfers` (their lists are
// freed) into per-stage and per-GPU lists.
JobTransfers SortTransfers(const std::vector<Pair>& pairs, PairIndices job_pairs,
                           std::vector<PairTransfers>* pair_transfers,
                           const std::vector<int>& stage_of, int num_stages) {
  JobTransfers jt;
  jt.stage_dp.resize(num_stages);
  // Exact sizes first: these lists hold every transfer of the job twice (at the peak of the
  // analysis), and grown by doubling they kept up to half again as much, plus the freed blocks.
  std::vector<size_t> stage_dp_size(num_stages);
  std::vector<size_t>& own_size = jt.own_first;  // counts, then turned into offsets
  // Tensor-parallel all-reduces are neither step boundaries nor pipeline events.
  auto in_timeline = [](const Pair& p) {
    return p.label == PairLabel::kDp || p.label == PairLabel::kPp;
  };
  for (uint32_t i : job_pairs) {
    const Pair& p = pairs[i];
    if (!in_timeline(p)) continue;
    const size_t n = (*pair_transfers)[i].transfers.size();
    for (EndpointId e : {p.a, p.b}) {
      const uint32_t l = jt.LocalOf(e);
      if (l >= own_size.size()) own_size.resize(size_t{l} + 1);
      own_size[l] += n;
    }
    if (p.label != PairLabel::kDp) continue;
    const int s = stage_of[p.a] >= 0 ? stage_of[p.a] : stage_of[p.b];
    if (s >= 0 && s < num_stages) stage_dp_size[s] += n;
  }
  size_t total = 0;
  for (size_t& n : own_size) total += std::exchange(n, total);
  own_size.push_back(total);
  jt.own.resize(total);
  std::vector<size_t> fill(own_size.begin(), own_size.end() - 1);
  for (int s = 0; s < num_stages; ++s) jt.stage_dp[s].reserve(stage_dp_size[s]);
  for (uint32_t i : job_pairs) {
    const Pair& p = pairs[i];
    if (!in_timeline(p)) continue;
    const bool dp = p.label == PairLabel::kDp;
    size_t& own_a = fill[jt.local[p.a]];
    size_t& own_b = fill[jt.local[p.b]];
    std::vector<Transfer>& transfers = (*pair_transfers)[i].transfers;
    const int s = stage_of[p.a] >= 0 ? stage_of[p.a] : stage_of[p.b];
    for (const Transfer& t : transfers) {
      EndpointId from = t.from_a ? p.a : p.b, to = t.from_a ? p.b : p.a;
      jt.own[(t.from_a ? own_a : own_b)++] = {t.start_ns, t.end_ns, to, true, dp};
      jt.own[(t.from_a ? own_b : own_a)++] = {t.start_ns, t.end_ns, from, false, dp};
      if (!dp) {
        jt.pp_entries += 2;
        continue;
      }
      if (s >= 0 && s < num_stages) jt.stage_dp[s].push_back({t.start_ns, t.end_ns, t.bytes, from});
    }
    std::vector<Transfer>().swap(transfers);
  }
  std::vector<GpuTransfer> scratch;
  std::vector<size_t> runs;
  for (size_t l = 0; l + 1 < jt.own_first.size(); ++l)
    MergeRunsByStart(std::span<GpuTransfer>(jt.own).subspan(
                         jt.own_first[l], jt.own_first[l + 1] - jt.own_first[l]),
                     &scratch, &runs);
  return jt;
}

// The job's steps' PP events, all in one array while the timelines are measured (one allocation
// for the job instead of one per GPU step); copied into each step's own list only when the caller
// keeps them (TimelineOptions::keep_pp_events).
struct JobPpEvents {
  std::vector<PpEvent> events;
  // Step k of timeline i: events[first[step_base[i] + k] .. first[step_base[i] + k + 1]).
  std::vector<size_t> first{0};
  std::vector<size_t> step_base;
  std::span<const PpEvent> Of(size_t timeline, size_t k) const {
    const size_t at = step_base[timeline] + k;
    return std::span<const PpEvent>(events).subspan(first[at], first[at + 1] - first[at]);
  }
};

// Pass 1: GPU g's steps between its stage's DP activities `acts`, each with the GPU's own DP
// phase and first DP send, and its PP events (appended to `ev`, one run per step).
// `mine`: the GPU's transfers in start order.
// With `own_ends` (a job without tensor parallelism), a step ends where the GPU's own DP phase
// ends when the network saw the GPU both send and receive in it: its collective is done once its
// last chunk is in, and nothing else holds it to its stage. The GPUs of one collective finish
// apart by how late each was woken (the real-traffic corpus's DP-only variants: up to 56 ms in
// 2-s steps, most of their p99 step error). A GPU with tensor-parallel peers starts its next
// forward only with them, so the stage's boundary stays its own (in the simulator's TP-8 jobs
// every GPU's visible DP phase ends ~33 ms before its stage's, the rest of the step's
// collectives passing over NVLink); so does a GPU the network sees only send, or only receive.
Timeline GpuSteps(EndpointId g, int job_index, const std::vector<int>& stage_of,
                  const std::vector<Activity>& acts, std::span<const GpuTransfer> mine,
                  bool own_ends, JobPpEvents& ev) {
  Timeline tl;
  tl.gpu = g;
  tl.job = job_index;
  tl.stage = stage_of[g];
  ev.step_base.push_back(ev.first.size() - 1);
  if (acts.size() > 1) tl.steps.reserve(acts.size() - 1);
  size_t cursor = 0;
  for (size_t k = 1; k < acts.size(); ++k) {
    TimelineStep step;
    step.start_ns = tl.steps.empty() ? acts[k - 1].end_ns : tl.steps.back().end_ns;
    step.end_ns = acts[k].end_ns;
    step.dp_start_ns = acts[k].start_ns;
    step.dp_end_ns = acts[k].end_ns;
    int64_t own_dp_start = INT64_MAX, own_dp_end = INT64_MIN, own_dp_send = INT64_MAX;
    bool own_dp_received = false;
    // The GPU's transfers are split between steps at its stage's boundaries, whatever its own.
    while (cursor < mine.size() && mine[cursor].start_ns < acts[k - 1].end_ns) ++cursor;
    const size_t events_before = ev.events.size();
    for (size_t i = cursor; i < mine.size() && mine[i].start_ns < step.end_ns; ++i) {
      const GpuTransfer& t = mine[i];
      if (t.dp) {
        if (t.start_ns >= acts[k].start_ns) {
          own_dp_start = std::min(own_dp_start, t.start_ns);
          own_dp_end = std::max(own_dp_end, t.end_ns);
          if (t.outgoing) own_dp_send = std::min(own_dp_send, t.start_ns);
          else own_dp_received = true;
        }
        continue;
      }
      const int from_stage = t.outgoing ? tl.stage : stage_of[t.peer];
      const int to_stage = t.outgoing ? stage_of[t.peer] : tl.stage;
      ev.events.push_back({t.start_ns, t.end_ns, t.peer, from_stage < to_stage, t.outgoing});
    }
    ev.first.push_back(ev.events.size());
    if (own_dp_start != INT64_MAX) {
      step.dp_start_ns = own_dp_start;
      step.dp_end_ns = std::max(own_dp_end, own_dp_start);
    }
    if (own_dp_send != INT64_MAX) step.dp_first_send_ns = own_dp_send;
    if (own_ends && own_dp_send != INT64_MAX && own_dp_received) step.end_ns = step.dp_end_ns;
    step.pp_event_count = static_cast<uint32_t>(ev.events.size() - events_before);
    tl.steps.push_back(std::move(step));
  }
  return tl;
}

// A GPU that starts each step by sending activations (the first stage of a pipeline) shows, in
// its next step's first forward send, when it came back from the step it ended: that send
// follows its optimizer and one forward op, nearly the same time every step. One send much
// later than usual, between steps whose sends are on time, means the GPU resumed late after its
// DP phase (a host that woke it late, a slow optimizer), which the DP phase's own end cannot
// show: the step ends that much later and the next one starts then. A GPU whose forward ops
// are slow (a straggler) is late step after step: that is its compute, in the next step, and
// nothing moves. "Much later" is beyond kLateResumeMads median absolute deviations of the GPU's
// own gaps and kLateResumeStepShare of its median step, so the usual jitter moves nothing (on
// the real-traffic corpus's 1F1B variant, rank 1 came back 10-14 ms late after two all-reduces,
// two steps apart: step p99 2.9% before). A lone stall before a first forward (e.g. a data
// loader) is counted in the step before: the price of seeing late resumes.
constexpr double kLateResumeMads = 6.0;
constexpr double kLateResumeStepShare = 0.005;
constexpr size_t kLateResumeMinSteps = 8;

// From step k's end to step k+1's first forward send, when that is step k+1's first PP event;
// -1 otherwise (the GPU receives first: its next step waits on its peers, not on itself).
std::vector<int64_t> ResumeGaps(const Timeline& tl, size_t i, const JobPpEvents& ev) {
  std::vector<int64_t> gaps(tl.steps.size(), -1);
  for (size_t k = 0; k + 1 < tl.steps.size(); ++k) {
    const std::span<const PpEvent> next = ev.Of(i, k + 1);
    if (next.empty() || !next.front().outgoing || !next.front().forward) continue;
    gaps[k] = next.front().start_ns - tl.steps[k].end_ns;
  }
  return gaps;
}

// Per step k of `tl` (timeline i): how much later than usual step k+1's first forward send came,
// when that is beyond the allowance; 0 otherwise.
std::vector<int64_t> LateResumes(const Timeline& tl, size_t i, const JobPpEvents& ev) {
  const std::vector<int64_t> gaps = ResumeGaps(tl, i, ev);
  std::vector<int64_t> late(gaps.size(), 0), known, spread, durations;
  for (int64_t g : gaps)
    if (g >= 0) known.push_back(g);
  if (known.size() < kLateResumeMinSteps) return late;
  const int64_t usual = MedianOf(known);
  for (int64_t g : known) spread.push_back(std::abs(g - usual));
  for (const TimelineStep& st : tl.steps) durations.push_back(st.end_ns - st.start_ns);
  const double allowed = std::max(kLateResumeMads * static_cast<double>(MedianOf(spread)),
                                  kLateResumeStepShare * static_cast<double>(MedianOf(durations)));
  for (size_t k = 0; k < gaps.size(); ++k)
    if (gaps[k] >= 0 && static_cast<double>(gaps[k] - usual) > allowed) late[k] = gaps[k] - usual;
  return late;
}

// Moves the ends of the lone late resumes of the GPUs `members` (one stage of one job: their
// steps share the stage's boundaries, so step k is the same step for all): late at step k, on
// time at steps k-1 and k+1, and the only one of its stage late at k. The stage late together
// is a slow forward everywhere (a loaded host), not one GPU waking late.
void EndLateResumes(std::vector<Timeline>& out, const std::vector<size_t>& members,
                    const JobPpEvents& ev) {
  std::vector<std::vector<int64_t>> late;
  for (size_t i : members) late.push_back(LateResumes(out[i], i, ev));
  for (size_t m = 0; m < members.size(); ++m) {
    std::vector<TimelineStep>& steps = out[members[m]].steps;
    for (size_t k = 0; k + 1 < steps.size(); ++k) {
      if (late[m][k] == 0 || (k > 0 && late[m][k - 1] != 0) || late[m][k + 1] != 0) continue;
      bool alone = true;
      for (size_t o = 0; o < members.size(); ++o)
        if (o != m && k < late[o].size() && late[o][k] != 0) alone = false;
      if (!alone) continue;
      steps[k].end_ns += late[m][k];
      steps[k + 1].start_ns = steps[k].end_ns;
    }
  }
}

// The k-th activation and k-th gradient received in step k by a tensor-parallel group: the
// latest over the group's GPUs (the group starts an op only when all of them have their input).
struct GroupArrivals {
  std::vector<int64_t> act_in, grad_in;
};

// Fills `a` (cleared first; its vectors' capacity is reused from step to step).
void ArrivalsOf(const JobPpEvents& ev, const std::vector<size_t>& members, size_t k,
                GroupArrivals& a) {
  a.act_in.clear();
  a.grad_in.clear();
  for (size_t i : members) {
    size_t na = 0, ng = 0;
    for (const PpEvent& e : ev.Of(i, k)) {
      if (e.outgoing) continue;
      auto& v = e.forward ? a.act_in : a.grad_in;
      size_t& n = e.forward ? na : ng;
      if (v.size() <= n) v.push_back(e.end_ns);
      else v[n] = std::max(v[n], e.end_ns);
      ++n;
    }
  }
}

// Pass 2 for one GPU step: its compute (the gaps before its PP sends, each from when it was free
// and had its input, and the last backward), bubble, and median forward / backward op.
// The forward and backward op gaps of one step: kept from step to step so that their capacity,
// not a new allocation, takes each step's gaps (pass 2 runs over every GPU step of a job).
struct OpGaps {
  std::vector<int64_t> fwd, bwd;
};

void MeasureOps(TimelineStep& step, std::span<const PpEvent> events, const GroupArrivals& in,
                size_t warmup, const TimelineOptions& options, OpGaps& gaps) {
  const std::vector<int64_t>& act_in = in.act_in;
  const std::vector<int64_t>& grad_in = in.grad_in;
  std::vector<int64_t>& fwd_gaps = gaps.fwd;
  std::vector<int64_t>& bwd_gaps = gaps.bwd;
  fwd_gaps.clear();
  bwd_gaps.clear();
  size_t fwd_sent = 0, bwd_sent = 0;
  int64_t last_send = step.start_ns;
  for (size_t at = 0; at < events.size(); ++at) {
    const PpEvent& e = events[at];
    if (!e.outgoing) continue;
    int64_t input = step.start_ns;
    bool after_backward = false;
    if (e.forward && act_in.empty()) {
      // Stage 0 in 1F1B: forward ops 0 .. pp-1 (warm-up and the first steady one) follow
      // forward ops; from then on forward op i follows the (unseen) backward op that
      // consumed gradient i - pp.
      const size_t i = fwd_sent++;
      if (i >= warmup) {
        after_backward = true;
        if (i - warmup < grad_in.size()) input = grad_in[i - warmup];
      }
    } else if (e.forward) {
      if (fwd_sent < act_in.size()) input = act_in[fwd_sent];
      ++fwd_sent;
    } else {
      const auto& source = grad_in.empty() ? act_in : grad_in;
      if (bwd_sent < source.size()) input = source[bwd_sent];
      ++bwd_sent;
    }
    const int64_t gap = e.start_ns - std::max(last_send, input);
    if (gap > 0) {
      // A send that leaves together with a transfer from the same peer (a batched
      // send/recv, or a rendezvous that waits for the receiver to post its buffer) left
      // when the later of the two GPUs was ready: its gap may be the peer's delay, so it
      // is not a measure of this GPU's op time.
      if (!LeavesWithPeer(events, at, options.paired_send_ns))
        (e.forward && !after_backward ? fwd_gaps : bwd_gaps).push_back(gap);
      step.compute_ns += gap;
    }
    last_send = std::max(last_send, e.start_ns);
  }
  // The last backward runs between the last PP event and the DP phase.
  const int64_t last_event = std::max(last_send, grad_in.empty() ? INT64_MIN : grad_in.back());
  if (!events.empty() && step.dp_start_ns > last_event)
    step.compute_ns += step.dp_start_ns - last_event;
  const int64_t dp_ns = std::max<int64_t>(0, step.dp_end_ns - step.dp_start_ns);
  step.bubble_ns =
      std::max<int64_t>(0, step.end_ns - step.start_ns - dp_ns - step.compute_ns);
  // Forward and backward ops differ (backward ~2x): a median over both flips between them.
  step.median_fwd_op_ns = fwd_gaps.empty() ? 0 : MedianInPlace(fwd_gaps);
  step.median_bwd_op_ns = bwd_gaps.empty() ? 0 : MedianInPlace(bwd_gaps);
  step.median_op_ns = step.median_fwd_op_ns > 0 ? step.median_fwd_op_ns : step.median_bwd_op_ns;
}

}  // namespace

std::vector<Timeline> BuildTimelines(int job_index, const Job& job, const std::vector<Pair>& pairs,
                                     PairIndices job_pairs,
                                     std::vector<PairTransfers>* pair_transfers,
                                     const std::vector<int>& stage_of, const EndpointContext& ctx,
                                     int64_t window_end_ns, const TimelineOptions& options) {
  const int num_stages = std::max<int>(1, static_cast<int>(job.layout.stages.size()));
  JobTransfers jt = SortTransfers(pairs, job_pairs, pair_transfers, stage_of, num_stages);

  // Step boundaries per stage: ends of the DP activities.
  std::vector<std::vector<Activity>> stage_steps(num_stages);
  for (int s = 0; s < num_stages; ++s)
    stage_steps[s] = DpActivities(std::move(jt.stage_dp[s]), window_end_ns,
                                  options.tail_guard_steps, options.steps);

  // Pass 1: every GPU's steps with their DP phase and PP events.
  const bool own_ends = job.layout.tp == 1;
  std::vector<Timeline> out;
  out.reserve(job.gpus.size());
  JobPpEvents ev;
  // Sized once: grown by doubling, the list held up to twice its events, and each doubling left
  // the old block free in the heap while the next job's lists were being made beside it.
  ev.events.reserve(jt.pp_entries);
  ev.step_base.reserve(job.gpus.size());
  for (EndpointId g : job.gpus) {
    const int s = stage_of[g] >= 0 && stage_of[g] < num_stages ? stage_of[g] : 0;
    out.push_back(GpuSteps(g, job_index, stage_of, stage_steps[s], jt.OwnOf(g), own_ends, ev));
  }
  std::vector<GpuTransfer>().swap(jt.own);  // read by pass 1 only
  if (own_ends) {
    std::map<int, std::vector<size_t>> stages;
    for (size_t i = 0; i < out.size(); ++i) stages[out[i].stage].push_back(i);
    for (const auto& [stage, members] : stages) EndLateResumes(out, members, ev);
  }

  // Pass 2: compute and bubble. An op starts when the GPU is free (its previous send) and has its
  // input: the k-th forward send of a step consumes the k-th activation received, the k-th
  // backward send the k-th gradient received (on the last stage, the k-th activation).
  // Micro-batches run in order, so matching by rank is exact where matching by time would pick a
  // later arrival. Stage 0 receives no activations: from its (pp+1)-th forward send on, each
  // follows a backward op on the matching gradient, and those gaps (backward + forward) count with
  // the backward ops; every GPU of a stage runs the same schedule, so like is compared with like.
  // The GPUs of one host and stage form a tensor-parallel group that starts an op only when all
  // of them have their input, so the input time is the latest over the group.
  const size_t warmup = static_cast<size_t>(std::max(1, job.layout.pp));
  std::map<std::pair<int, int>, std::vector<size_t>> groups;  // (host, stage) -> timelines
  for (size_t i = 0; i < out.size(); ++i)
    groups[{ctx.host[out[i].gpu], out[i].stage}].push_back(i);
  GroupArrivals in;
  OpGaps gaps;
  for (const auto& [key, members] : groups) {
    size_t steps = SIZE_MAX;
    for (size_t i : members) steps = std::min(steps, out[i].steps.size());
    for (size_t k = 0; k < steps; ++k) {
      ArrivalsOf(ev, members, k, in);
      for (size_t i : members) MeasureOps(out[i].steps[k], ev.Of(i, k), in, warmup, options, gaps);
    }
  }
  if (options.keep_pp_events) {
    for (size_t i = 0; i < out.size(); ++i) {
      for (size_t k = 0; k < out[i].steps.size(); ++k) {
        const std::span<const PpEvent> events = ev.Of(i, k);
        out[i].steps[k].pp_events.assign(events.begin(), events.end());
      }
    }
  }
  return out;
}

}  // namespace prism::analysis
