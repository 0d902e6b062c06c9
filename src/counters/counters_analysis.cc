#include "counters/counters_analysis.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "counters/late_servers.h"
#include "diagnosis/robust_stats.h"

namespace prism::counters {
namespace {

using diagnosis::Median;
using diagnosis::RobustSigma;
using diagnosis::FindingKind;
using diagnosis::Severity;

struct ServerAcc {
  std::vector<double> bytes;
  std::vector<uint16_t> covered;
  int ports = 0;
  std::map<std::string, std::pair<std::string, double>> nic;  // name -> (ip, gbps)
};

double Pearson(const double* a, const double* b, size_t n) {
  if (n < 3) return 0;
  double ma = 0, mb = 0;
  for (size_t i = 0; i < n; ++i) {
    ma += a[i];
    mb += b[i];
  }
  ma /= n;
  mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

// L1 distance of two servers' NIC-share vectors, NICs compared by rank in name order: servers of
// one model name their NICs alike, other models differ (ens10np0.. vs ens24np0..) yet carry a job
// the same way, so the shape counts, not the names. A missing NIC has share 0.
double SignatureDistance(const ServerResult& a, const ServerResult& b) {
  auto shares = [](const ServerResult& s) {
    double total = std::accumulate(s.nic_gbps.begin(), s.nic_gbps.end(), 0.0);
    std::vector<double> v;
    for (double g : s.nic_gbps) v.push_back(total > 0 ? g / total : 0);
    return v;
  };
  std::vector<double> x = shares(a), y = shares(b);
  if (x.size() < y.size()) x.resize(y.size(), 0);
  if (y.size() < x.size()) y.resize(x.size(), 0);
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) d += std::abs(x[i] - y[i]);
  return d;
}

// Average-linkage agglomerative clustering on a similarity matrix (NaN = never together).
std::vector<std::vector<int>> AverageLinkage(std::vector<std::vector<double>> sim, double threshold) {
  const size_t n = sim.size();
  std::vector<std::vector<int>> members(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) members[i] = {static_cast<int>(i)};
  for (;;) {
    double best = threshold;
    int bi = -1, bj = -1;
    for (size_t i = 0; i < n; ++i) {
      if (!alive[i]) continue;
      for (size_t j = i + 1; j < n; ++j) {
        if (!alive[j] || std::isnan(sim[i][j])) continue;
        if (sim[i][j] >= best) {
          best = sim[i][j];
          bi = static_cast<int>(i);
          bj = static_cast<int>(j);
        }
      }
    }
    if (bi < 0) break;
    const double na = static_cast<double>(members[bi].size()), nb = static_cast<double>(members[bj].size());
    for (size_t k = 0; k < n; ++k) {
      if (!alive[k] || static_cast<int>(k) == bi || static_cast<int>(k) == bj) continue;
      double a = sim[bi][k], b = sim[bj][k];
      // A veto (NaN) on either side keeps the merged cluster apart from k.
      double v = std::isnan(a) || std::isnan(b) ? std::nan("") : (na * a + nb * b) / (na + nb);
      sim[bi][k] = sim[k][bi] = v;
    }
    members[bi].insert(members[bi].end(), members[bj].begin(), members[bj].end());
    members[bj].clear();
    alive[bj] = false;
  }
  std::vector<std::vector<int>> out;
  for (size_t i = 0; i < n; ++i) {
    if (alive[i]) out.push_back(members[i]);
  }
  return out;
}

// Normalised cross-correlation of x[t, t+L) with the template at every t (0 where the segment is
// silent, mostly missing or too weak to be an iteration).
std::vector<double> MatchScores(const std::vector<double>& x, const std::vector<uint8_t>& valid,
                                const std::vector<double>& tmpl) {
  const size_t n = x.size(), L = tmpl.size();
  std::vector<double> score(n, 0);
  if (L < 3 || n < L) return score;
  double tm = std::accumulate(tmpl.begin(), tmpl.end(), 0.0) / L;
  std::vector<double> tc(L);
  double te = 0;
  for (size_t i = 0; i < L; ++i) {
    tc[i] = tmpl[i] - tm;
    te += tc[i] * tc[i];
  }
  if (te <= 0 || tm <= 0) return score;
  std::vector<double> s1(n + 1, 0), s2(n + 1, 0), sv(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    s1[i + 1] = s1[i] + x[i];
    s2[i + 1] = s2[i] + x[i] * x[i];
    sv[i + 1] = sv[i] + (valid[i] ? 1 : 0);
  }
  for (size_t t = 0; t + L <= n; ++t) {
    if (sv[t + L] - sv[t] < 0.75 * L) continue;
    const double mean = (s1[t + L] - s1[t]) / L;
    if (mean < 0.3 * tm) continue;
    const double var = s2[t + L] - s2[t] - L * mean * mean;
    if (var <= 1e-12 * L * mean * mean) continue;
    double dot = 0;
    for (size_t i = 0; i < L; ++i) dot += x[t + i] * tc[i];
    score[t] = dot / std::sqrt(var * te);
  }
  return score;
}

double ParabolicPeak(const std::vector<double>& s, size_t i) {
  if (i == 0 || i + 1 >= s.size()) return static_cast<double>(i);
  const double a = s[i - 1], b = s[i], c = s[i + 1];
  const double den = a - 2 * b + c;
  if (den >= 0) return static_cast<double>(i);
  return static_cast<double>(i) + std::clamp(0.5 * (a - c) / den, -0.5, 0.5);
}

// Iteration starts (fractional bins) by template tracking: from each boundary, the best match one
// period on (within 0.6..1.4 periods, climbing on when the best is at the window's far edge); when
// nothing matches there (a stall, a gap, the job's end), the next match anywhere further on.
std::vector<double> TrackBoundaries(const std::vector<double>& score, double period_bins,
                                    double threshold) {
  std::vector<double> out;
  const size_t n = score.size();
  auto local_max_from = [&](size_t t) {
    size_t end = std::min(n, t + static_cast<size_t>(period_bins / 2) + 1);
    size_t arg = t;
    for (size_t j = t; j < end; ++j)
      if (score[j] > score[arg]) arg = j;
    return arg;
  };
  auto first_match = [&](size_t from) -> int64_t {
    for (size_t t = from; t < n; ++t)
      if (score[t] >= threshold) return static_cast<int64_t>(local_max_from(t));
    return -1;
  };
  int64_t pos = first_match(0);
  while (pos >= 0) {
    out.push_back(ParabolicPeak(score, static_cast<size_t>(pos)));
    size_t lo = static_cast<size_t>(pos + std::llround(0.6 * period_bins));
    size_t hi = std::min(n - 1, static_cast<size_t>(pos + std::llround(1.4 * period_bins)));
    if (lo >= n) break;
    size_t arg = lo;
    for (size_t j = lo; j <= hi; ++j)
      if (score[j] > score[arg]) arg = j;
    if (score[arg] >= threshold) {
      while (arg == hi && arg + 1 < n && score[arg + 1] > score[arg]) hi = ++arg;
      pos = static_cast<int64_t>(arg);
    } else {
      pos = first_match(hi + 1);
    }
  }
  return out;
}

// Mean profile of one iteration: every iteration between consecutive boundaries stretched to L bins.
std::vector<double> AlignedTemplate(const std::vector<double>& x, const std::vector<double>& starts,
                                    size_t L, double period_bins) {
  std::vector<double> t(L, 0);
  size_t used = 0;
  for (size_t k = 0; k + 1 < starts.size(); ++k) {
    const double len = starts[k + 1] - starts[k];
    if (len > 1.3 * period_bins || len < 0.7 * period_bins) continue;
    for (size_t i = 0; i < L; ++i) {
      const double pos = starts[k] + len * (i + 0.5) / L;
      size_t b = static_cast<size_t>(pos);
      if (b < x.size()) t[i] += x[b];
    }
    ++used;
  }
  if (used == 0) return {};
  for (double& v : t) v /= static_cast<double>(used);
  return t;
}

// Profile of x folded at period_bins over bins where `use` holds, rotated so it starts at its
// quietest point (the smoothed minimum): iteration boundaries then fall between bursts.
std::vector<double> FoldedTemplate(const std::vector<double>& x, const std::vector<uint8_t>& use,
                                   size_t L, double period_bins) {
  std::vector<double> sum(L, 0), cnt(L, 0);
  for (size_t t = 0; t < x.size(); ++t) {
    if (!use[t]) continue;
    double phase = std::fmod(static_cast<double>(t), period_bins) / period_bins;
    size_t i = std::min(L - 1, static_cast<size_t>(phase * L));
    sum[i] += x[t];
    cnt[i] += 1;
  }
  std::vector<double> prof(L, 0);
  for (size_t i = 0; i < L; ++i) prof[i] = cnt[i] > 0 ? sum[i] / cnt[i] : 0;
  const size_t w = std::max<size_t>(1, L / 8);
  size_t anchor = 0;
  double low = INFINITY;
  for (size_t i = 0; i < L; ++i) {
    double s = 0;
    for (size_t j = 0; j < w; ++j) s += prof[(i + j) % L];
    if (s < low) {
      low = s;
      anchor = i;
    }
  }
  std::vector<double> out(L);
  for (size_t i = 0; i < L; ++i) out[i] = prof[(anchor + i) % L];
  return out;
}

std::string Seconds(double s) { return fmt::format("{:.2f}s", s); }

// The stages of AnalyzeCounters (counters_analysis.h), each a function of plain inputs.

// Stage 1: every port's deltas spread onto the grid and summed per server (all its NICs), with
// each NIC's mean rate. Ports missing from the topology are counted and skipped.
std::map<std::string, ServerAcc> SumPortsByServer(const CountersData& data,
                                                  const PortTopology& topology, const Grid& grid,
                                                  const SpreadOptions& spread, Stats* stats,
                                                  uint64_t* bytes) {
  std::map<std::string, ServerAcc> acc;
  for (const PortSeries& p : data.ports) {
    std::string server, nic, ip;
    if (topology.empty()) {
      server = p.switch_name + ":" + p.port;
      nic = p.port;
    } else {
      auto it = topology.find({p.switch_name, p.port});
      if (it == topology.end()) {
        if (stats) stats->Add(Stat::counters_unmapped_port);
        continue;
      }
      server = it->second.server;
      nic = it->second.nic.empty() ? p.switch_name + ":" + p.port : it->second.nic;
      ip = it->second.nic_ip;
    }
    ServerAcc& a = acc[server];
    if (a.bytes.empty()) {
      a.bytes.assign(grid.bins, 0);
      a.covered.assign(grid.bins, 0);
    }
    ++a.ports;
    uint64_t total = SpreadPort(p, grid, spread, a.bytes.data(), a.covered.data(), stats);
    *bytes += total;
    double span_s = p.ts_ms.size() >= 2 ? (p.ts_ms.back() - p.ts_ms.front()) / 1000.0 : 0;
    auto& slot = a.nic[nic];
    slot.first = ip;
    slot.second += span_s > 0 ? total * 8.0 / span_s / 1e9 : 0;
  }
  return acc;
}

// Each server's rate (Gb/s per bin) and which bins are valid (at least half its ports covered).
struct ServerSeries {
  std::vector<std::vector<double>> rate;
  std::vector<std::vector<uint8_t>> valid;
};

// Stage 2: per server, its NICs, mean rate and step period (only above the idle rate). The
// accumulated bytes are released as they are turned into rates.
ServerSeries ProfileServers(std::map<std::string, ServerAcc>* acc, const Grid& grid,
                            const CountersOptions& options, std::vector<ServerResult>* servers) {
  const size_t nb = grid.bins;
  const double bin_s = grid.bin_s;
  ServerSeries series;
  for (auto& [name, a] : *acc) {
    ServerResult s;
    s.name = name;
    for (const auto& [nic, v] : a.nic) {
      s.nics.push_back(nic);
      s.nic_ips.push_back(v.first);
      s.nic_gbps.push_back(v.second);
    }
    std::vector<double> r(nb);
    std::vector<uint8_t> ok(nb);
    const uint16_t need = static_cast<uint16_t>((a.ports + 1) / 2);
    double sum = 0;
    size_t cnt = 0;
    for (size_t i = 0; i < nb; ++i) {
      r[i] = a.bytes[i] * 8 / bin_s / 1e9;
      ok[i] = a.covered[i] >= need && need > 0;
      if (ok[i]) {
        sum += r[i];
        ++cnt;
      }
    }
    s.mean_gbps = cnt ? sum / cnt : 0;
    if (s.mean_gbps >= options.min_server_gbps) s.period = EstimatePeriod(r, ok, bin_s, options.period);
    servers->push_back(std::move(s));
    series.rate.push_back(std::move(r));
    series.valid.push_back(std::move(ok));
    a.bytes = {};
    a.covered = {};
  }
  return series;
}

// A moving average of x over `width` bins centred on each bin (shorter at the edges).
std::vector<double> MovingAverage(const std::vector<double>& x, size_t width) {
  const size_t n = x.size();
  std::vector<double> pre(n + 1, 0), out(n);
  for (size_t t = 0; t < n; ++t) pre[t + 1] = pre[t] + x[t];
  for (size_t t = 0; t < n; ++t) {
    size_t lo = t > width / 2 ? t - width / 2 : 0, hi = std::min(n, t + width / 2 + 1);
    out[t] = (pre[hi] - pre[lo]) / static_cast<double>(hi - lo);
  }
  return out;
}

// A candidate server's rate as it is correlated with others: detrended, smoothed over
// `smooth_bins` (when at least 2: the iteration-scale shape, not per-transfer detail nor
// poll-phase noise) and scaled to unit norm.
std::vector<double> CorrelationShape(const std::vector<double>& rate,
                                     const std::vector<uint8_t>& valid, size_t detrend_window,
                                     size_t smooth_bins) {
  std::vector<double> z = Detrend(rate, valid, detrend_window);
  if (smooth_bins >= 2) z = MovingAverage(z, smooth_bins);
  double e = 0;
  for (double v : z) e += v * v;
  e = std::sqrt(e);
  if (e > 0)
    for (double& v : z) v /= e;
  return z;
}

// Similarity of two candidate servers: NaN (never in one job) unless their periods are
// harmonically related and their NIC signatures alike; else their best correlation over phase
// lags up to half a period (pipeline stages of one job keep a fixed phase), or -1.
double ServerSimilarity(const ServerResult& a, const ServerResult& b, const std::vector<double>& za,
                        const std::vector<double>& zb, size_t nb, double bin_s,
                        const CountersOptions& options) {
  if (!(HarmonicallyRelated(a.period.period_s, b.period.period_s) &&
        SignatureDistance(a, b) <= options.signature_l1)) {
    return std::nan("");
  }
  const double p = std::min(a.period.period_s, b.period.period_s);
  const int max_lag = static_cast<int>(std::min(p / 2, options.max_phase_lag_s) / bin_s);
  const double* x = za.data();
  const double* y = zb.data();
  double v = -1;
  for (int lag = -max_lag; lag <= max_lag; ++lag) {
    const size_t off = static_cast<size_t>(std::abs(lag));
    const double* u = lag >= 0 ? x : y;
    const double* w = lag >= 0 ? y + off : x + off;
    double dot = 0;
    for (size_t t = 0; t + off < nb; ++t) dot += u[t] * w[t];
    v = std::max(v, dot);
  }
  return v;
}

// Stage 3: jobs. Periodic servers are clustered (average linkage) on their similarities;
// clusters of at least 2 servers are jobs, ordered by their first server. Sets each member's
// mean similarity to the others (job_correlation).
std::vector<CountersJob> GroupServersIntoJobs(const ServerSeries& series, const Grid& grid,
                                              const CountersOptions& options,
                                              std::vector<ServerResult>* servers) {
  const double bin_s = grid.bin_s;
  std::vector<int> cand;
  for (size_t i = 0; i < servers->size(); ++i)
    if ((*servers)[i].period.period_s > 0) cand.push_back(static_cast<int>(i));
  const size_t detrend_window =
      std::max<size_t>(static_cast<size_t>(3 * options.period.max_period_s / bin_s), 8);
  // One smoothing for all: a quarter of a short period among the candidates (10th percentile).
  double short_period = 0;
  {
    std::vector<double> ps;
    for (int c : cand) ps.push_back((*servers)[c].period.period_s);
    if (!ps.empty()) {
      std::sort(ps.begin(), ps.end());
      short_period = ps[ps.size() / 10];
    }
  }
  const size_t smooth_bins = static_cast<size_t>(0.25 * short_period / bin_s);
  std::vector<std::vector<double>> z(cand.size());
  for (size_t c = 0; c < cand.size(); ++c) {
    z[c] = CorrelationShape(series.rate[cand[c]], series.valid[cand[c]], detrend_window,
                            smooth_bins);
  }
  std::vector<std::vector<double>> sim(cand.size(), std::vector<double>(cand.size(), 1));
  for (size_t i = 0; i < cand.size(); ++i) {
    for (size_t j = i + 1; j < cand.size(); ++j) {
      sim[i][j] = sim[j][i] = ServerSimilarity((*servers)[cand[i]], (*servers)[cand[j]], z[i],
                                               z[j], grid.bins, bin_s, options);
    }
  }
  std::vector<CountersJob> jobs;
  for (const auto& cl : AverageLinkage(sim, options.join_correlation)) {
    if (cl.size() < 2) continue;
    CountersJob job;
    for (int c : cl) job.servers.push_back(cand[c]);
    std::sort(job.servers.begin(), job.servers.end());
    for (int c : cl) {
      double s = 0;
      for (int d : cl)
        if (d != c && !std::isnan(sim[c][d])) s += sim[c][d];
      (*servers)[cand[c]].job_correlation = s / static_cast<double>(cl.size() - 1);
    }
    jobs.push_back(std::move(job));
  }
  std::sort(jobs.begin(), jobs.end(),
            [](const CountersJob& a, const CountersJob& b) { return a.servers[0] < b.servers[0]; });
  return jobs;
}

// A job's summed traffic (Gb/s per bin) and where it is valid (at least half its servers).
struct JobTraffic {
  std::vector<double> rate;
  std::vector<uint8_t> ok;
};

JobTraffic SumJobTraffic(const CountersJob& job, const ServerSeries& series, size_t nb) {
  const size_t ns = job.servers.size();
  JobTraffic jt{std::vector<double>(nb, 0), std::vector<uint8_t>(nb, 0)};
  for (size_t t = 0; t < nb; ++t) {
    size_t v = 0;
    for (int s : job.servers) {
      jt.rate[t] += series.rate[s][t];
      v += series.valid[s][t];
    }
    jt.ok[t] = v * 2 >= ns;
  }
  return jt;
}

// The job's NIC signature (its bytes per NIC name) and mean rate per server.
void DescribeJobNics(const std::vector<ServerResult>& servers, CountersJob* job) {
  const size_t ns = job->servers.size();
  std::map<std::string, double> nic_total;
  double all = 0;
  for (int s : job->servers) {
    const ServerResult& sv = servers[s];
    for (size_t i = 0; i < sv.nics.size(); ++i) {
      nic_total[sv.nics[i]] += sv.nic_gbps[i];
      all += sv.nic_gbps[i];
    }
    job->server_gbps += sv.mean_gbps / ns;
  }
  for (const auto& [nic, v] : nic_total) {
    job->nic_names.push_back(nic);
    job->signature.push_back(all > 0 ? v / all : 0);
  }
}

// The period of the job's summed traffic, else the median of its members' periods.
PeriodEstimate JobPeriod(const JobTraffic& jt, const CountersJob& job,
                         const std::vector<ServerResult>& servers, double bin_s,
                         const PeriodOptions& options) {
  PeriodEstimate pe = EstimatePeriod(jt.rate, jt.ok, bin_s, options);
  if (pe.period_s <= 0) {
    std::vector<double> ps;
    for (int s : job.servers) ps.push_back(servers[s].period.period_s);
    pe.period_s = Median(ps);
  }
  return pe;
}

// Iteration starts (fractional bins) and the template match score at every bin.
struct Boundaries {
  std::vector<double> starts;
  std::vector<double> scores;
};

// Stage 4a: where the job runs (a period-long moving average above half its typical level), a
// one-iteration template folded there at the period, boundaries tracked with it, then tracked
// again with the template rebuilt from the aligned iterations.
Boundaries TrackIterations(const JobTraffic& jt, double period_bins,
                           const CountersOptions& options) {
  const size_t nb = jt.rate.size();
  const size_t L = std::max<size_t>(3, static_cast<size_t>(std::llround(period_bins)));
  const std::vector<double> smooth = MovingAverage(jt.rate, L);
  std::vector<double> levels;
  for (size_t t = 0; t < nb; ++t)
    if (jt.ok[t] && smooth[t] > 0) levels.push_back(smooth[t]);
  const double level = Median(levels);
  std::vector<uint8_t> running(nb);
  for (size_t t = 0; t < nb; ++t) running[t] = jt.ok[t] && smooth[t] >= 0.5 * level;

  std::vector<double> tmpl = FoldedTemplate(jt.rate, running, L, period_bins);
  Boundaries b;
  b.starts = TrackBoundaries(MatchScores(jt.rate, jt.ok, tmpl), period_bins,
                             options.match_threshold);
  if (std::vector<double> t2 = AlignedTemplate(jt.rate, b.starts, L, period_bins); !t2.empty()) {
    tmpl = std::move(t2);
    b.starts = TrackBoundaries(MatchScores(jt.rate, jt.ok, tmpl), period_bins,
                               options.match_threshold);
  }
  b.scores = MatchScores(jt.rate, jt.ok, tmpl);
  return b;
}

// Stage 4b: the iterations between consecutive starts (an iteration more than a tenth missing is
// a gap); returns the durations of the others, in seconds.
std::vector<double> MakeIterations(const Boundaries& b, const std::vector<uint8_t>& ok,
                                   const Grid& grid, CountersJob* job) {
  const size_t nb = ok.size();
  auto to_ms = [&](double bins) {
    return grid.start_ms + static_cast<int64_t>(std::llround(bins * grid.bin_s * 1000));
  };
  std::vector<double> durations;
  for (size_t k = 0; k + 1 < b.starts.size(); ++k) {
    Iteration it;
    it.start_ms = to_ms(b.starts[k]);
    it.end_ms = to_ms(b.starts[k + 1]);
    size_t b0 = static_cast<size_t>(b.starts[k]), b1 = static_cast<size_t>(b.starts[k + 1]);
    it.score = b.scores[b0];
    size_t missing = 0;
    for (size_t t = b0; t < b1 && t < nb; ++t) missing += ok[t] ? 0 : 1;
    it.gap = missing * 10 > (b1 - b0);
    job->iterations.push_back(it);
    if (!it.gap) durations.push_back((it.end_ms - it.start_ms) / 1000.0);
  }
  if (!job->iterations.empty()) {
    job->start_ms = job->iterations.front().start_ms;
    job->end_ms = job->iterations.back().end_ms;
  }
  return durations;
}

// The normal iteration: median duration and robust sigma (at least 2% of the median).
struct StepBaseline {
  double median = 0, sigma = 0;
};

// Stage 4c: the job's step median, p99 and baseline; the period is refined to the mean of the
// normal iterations (telescoping boundaries, so finer than a bin) when there are enough of them.
StepBaseline SummarizeSteps(const std::vector<double>& durations, double k, CountersJob* job) {
  StepBaseline base;
  base.median = Median(durations);
  base.sigma = std::max(RobustSigma(durations, base.median), 0.02 * base.median);
  double sum = 0;
  size_t n = 0;
  for (double d : durations)
    if (std::abs(d - base.median) <= k * base.sigma) {
      sum += d;
      ++n;
    }
  if (n >= 5 && std::abs(sum / n - job->period_s) < 0.1 * job->period_s) job->period_s = sum / n;
  job->step_median_s = base.median;
  if (!durations.empty()) {
    std::vector<double> d = durations;
    std::sort(d.begin(), d.end());
    const size_t p99 = static_cast<size_t>(std::ceil(0.99 * d.size())) - 1;
    job->step_p99_s = d[std::min(d.size() - 1, p99)];
  }
  return base;
}

// Stage 4d: the job's traffic for the report's plot, at most 4000 points.
void MakePlotSeries(const std::vector<double>& rate, const Grid& grid,
                    const CountersOptions& options, CountersJob* job) {
  const size_t nb = rate.size();
  const double bin_s = grid.bin_s;
  double pb = options.plot_bin_s > 0 ? options.plot_bin_s : std::max(bin_s, job->period_s / 8);
  const double span_s = nb * bin_s;
  pb = std::max(pb, span_s / 4000);
  const size_t per = std::max<size_t>(1, static_cast<size_t>(std::llround(pb / bin_s)));
  job->plot_bin_s = per * bin_s;
  job->plot_start_ms = grid.start_ms;
  for (size_t t = 0; t < nb; t += per) {
    double s = 0;
    size_t c = 0;
    for (size_t u = t; u < std::min(nb, t + per); ++u, ++c) s += rate[u];
    job->traffic_gbps.push_back(static_cast<float>(s / c));
  }
}

// The grid bin of an iteration boundary (truncated).
size_t BinOf(int64_t ms, const Grid& grid) {
  return static_cast<size_t>((ms - grid.start_ms) / 1000.0 / grid.bin_s);
}

// Not a gap and within k sigma of the median duration.
bool IsNormal(const Iteration& it, const StepBaseline& base, double k) {
  double d = (it.end_ms - it.start_ms) / 1000.0;
  return !(it.gap || std::abs(d - base.median) > k * base.sigma);
}

// The job's rate over its normal iterations, and the longest silence (below a tenth of that
// rate) of a typical normal iteration: compute phases are quiet too, so a stall must be longer.
struct QuietProfile {
  double mean_rate = 0;
  double normal_quiet_s = 0;
};

// The longest run of bins in [b0, b1) quieter than a tenth of `mean_rate`, in seconds; its first
// bin goes to *at when given.
double LongestQuiet(const std::vector<double>& rate, double mean_rate, size_t b0, size_t b1,
                    double bin_s, size_t* at) {
  size_t best = 0, cur = 0;
  for (size_t t = b0; t < b1 && t < rate.size(); ++t) {
    if (rate[t] < 0.1 * mean_rate) {
      if (++cur > best) {
        best = cur;
        if (at) *at = t + 1 - cur;
      }
    } else {
      cur = 0;
    }
  }
  return best * bin_s;
}

QuietProfile ProfileQuiet(const CountersJob& job, const std::vector<double>& rate,
                          const StepBaseline& base, const Grid& grid, double k) {
  const size_t nb = rate.size();
  std::vector<double> normal_rate;
  for (const Iteration& it : job.iterations) {
    if (!IsNormal(it, base, k)) continue;
    size_t b0 = BinOf(it.start_ms, grid);
    size_t b1 = std::min(nb, BinOf(it.end_ms, grid));
    for (size_t t = b0; t < b1; ++t) normal_rate.push_back(rate[t]);
  }
  QuietProfile q;
  const double rate_sum = std::accumulate(normal_rate.begin(), normal_rate.end(), 0.0);
  q.mean_rate = normal_rate.empty() ? 0 : rate_sum / normal_rate.size();
  std::vector<double> normal_quiet;
  for (const Iteration& it : job.iterations) {
    if (!IsNormal(it, base, k)) continue;
    normal_quiet.push_back(LongestQuiet(rate, q.mean_rate, BinOf(it.start_ms, grid),
                                        BinOf(it.end_ms, grid), grid.bin_s, nullptr));
  }
  q.normal_quiet_s = Median(normal_quiet);
  return q;
}

// One episode of slow iterations as a finding: a job-wide stall when its longest all-server
// silence exceeds a normal iteration's by a median iteration (and two refreshes), else slow
// iterations. Severity by the GPU time lost; a stall is at least a warning (every server of the
// job made no progress for longer than any normal iteration: a hang in the making).
CountersFinding EpisodeFinding(const CountersJob& job, int ji, const SlowEpisode& ep,
                               const std::vector<double>& rate, const StepBaseline& base,
                               const QuietProfile& quiet, const Grid& grid, double refresh_s,
                               const ImpactOptions& impact) {
  const double med = base.median;
  const Iteration& first = job.iterations[ep.first];
  const Iteration& last = job.iterations[ep.last];
  size_t b0 = BinOf(first.start_ms, grid);
  size_t b1 = std::min(rate.size(), BinOf(last.end_ms, grid));
  size_t best_at = b0;
  const double quiet_s = LongestQuiet(rate, quiet.mean_rate, b0, b1, grid.bin_s, &best_at);
  const size_t best_len = static_cast<size_t>(std::llround(quiet_s / grid.bin_s));
  const double span_s = (last.end_ms - first.start_ms) / 1000.0;
  const size_t ns = job.servers.size();
  CountersFinding f;
  f.job = ji;
  f.servers = job.servers;
  f.sigma = job.resolution.uncertainty_s;
  f.units = ep.slow;
  f.lost_gpu_s = static_cast<double>(ns) * impact.gpus_per_server * ep.extra_s;
  f.severity = SeverityOfLoss(f.lost_gpu_s, impact);
  // The episode's length against what its iterations' bytes take at the median step: the
  // difference is the time lost (the summary says it in GPU-seconds).
  f.metric = "episode_s";
  f.value = span_s;
  f.baseline = std::max(0.0, span_s - ep.extra_s);
  if (quiet_s >= quiet.normal_quiet_s + med && quiet_s >= 2 * refresh_s) {
    f.kind = FindingKind::kJobStall;
    f.severity = std::max(f.severity, Severity::kWarning);
    f.start_ms = grid.BinStartMs(best_at);
    f.end_ms = grid.BinStartMs(best_at + best_len);
    f.summary = fmt::format("all {} servers silent for {} ({} lost over median steps of {}; "
                            "{:.0f} GPU-s)",
                            ns, Seconds(quiet_s), Seconds(ep.extra_s), Seconds(med),
                            f.lost_gpu_s);
  } else {
    f.kind = FindingKind::kSlowIteration;
    f.start_ms = first.start_ms;
    f.end_ms = last.end_ms;
    f.summary = fmt::format("{} slow iteration{} in {} ({} lost over median steps of {}, longest "
                            "{}; {:.0f} GPU-s on {} servers)",
                            ep.slow, ep.slow > 1 ? "s" : "", Seconds(span_s), Seconds(ep.extra_s),
                            Seconds(med), Seconds(ep.longest_s), f.lost_gpu_s, ns);
  }
  return f;
}

// The job's bytes (Gb) in each iteration, for the missed-boundary test.
std::vector<double> IterationVolumes(const CountersJob& job, const std::vector<double>& rate,
                                     const Grid& grid) {
  std::vector<double> v;
  for (const Iteration& it : job.iterations) {
    const size_t b0 = BinOf(it.start_ms, grid), b1 = std::min(rate.size(), BinOf(it.end_ms, grid));
    double s = 0;
    for (size_t t = b0; t < b1; ++t) s += rate[t] * grid.bin_s;
    v.push_back(s);
  }
  return v;
}

// Stage 5a: the job's resolution limit, its slow episodes, stalls and rhythm
// (counters/slow_episodes.h). Returns which iterations are not normal (slow or rhythm).
std::vector<bool> FindSlowIterations(CountersJob* job, int ji, const std::vector<double>& rate,
                                     size_t durations, const StepBaseline& base, const Grid& grid,
                                     double refresh_s, double poll_p90_s,
                                     const CountersOptions& options,
                                     std::vector<CountersFinding>* findings) {
  const double k = options.k;
  job->resolution = ComputeResolution(refresh_s, poll_p90_s, base.median, base.sigma, k);
  std::vector<bool> flagged(job->iterations.size(), false);
  if (durations < 5) return flagged;
  const QuietProfile quiet = ProfileQuiet(*job, rate, base, grid, k);
  const std::vector<double> volume = IterationVolumes(*job, rate, grid);
  std::vector<double> normal_volume;
  for (size_t i = 0; i < job->iterations.size(); ++i)
    if (IsNormal(job->iterations[i], base, k)) normal_volume.push_back(volume[i]);
  const double unit = Median(normal_volume);
  std::vector<IterationSample> samples;
  for (size_t i = 0; i < job->iterations.size(); ++i) {
    const Iteration& it = job->iterations[i];
    samples.push_back({(it.end_ms - it.start_ms) / 1000.0, unit > 0 ? volume[i] / unit : 1,
                       it.gap});
  }
  EpisodeOptions eo = options.episodes;
  eo.k = k;
  const EpisodeAnalysis ea = FindSlowEpisodes(samples, base.median, job->resolution, eo);
  job->merged_iterations = ea.merged;
  for (size_t i = 0; i < flagged.size(); ++i)
    flagged[i] = ea.state[i] == IterationState::kSlow || ea.state[i] == IterationState::kRhythm;
  for (const SlowEpisode& ep : ea.episodes) {
    findings->push_back(
        EpisodeFinding(*job, ji, ep, rate, base, quiet, grid, refresh_s, options.impact));
  }
  if (ea.rhythm) {
    const IterationRhythm& r = *ea.rhythm;
    CountersFinding f;
    f.kind = FindingKind::kIterationRhythm;
    f.severity = Severity::kInfo;
    f.job = ji;
    f.servers = job->servers;
    f.start_ms = job->iterations[r.first].start_ms;
    f.end_ms = job->iterations[r.last].end_ms;
    f.metric = "rhythm_iteration_s";  // the cadence's iteration against the median one
    f.value = base.median + r.extra_s;
    f.baseline = base.median;
    f.sigma = job->resolution.uncertainty_s;
    f.units = r.count;
    f.lost_gpu_s = static_cast<double>(job->servers.size()) * options.impact.gpus_per_server *
                   r.extra_s * r.count;
    f.summary = fmt::format("every {} iterations (~{}) one takes {} longer (a checkpoint or "
                            "evaluation cadence): {} times, {:.1f}% of the job's time",
                            r.every, Seconds(r.period_s), Seconds(r.extra_s), r.count,
                            100 * r.cost_fraction);
    findings->push_back(std::move(f));
  }
  return flagged;
}

// One server's NICs as separate rate series on the grid.
using NicSeriesFn = std::function<std::vector<std::vector<double>>(const std::string& server)>;

// A stretch of normal iterations, >= 10 s (and 20 bins), for the out-of-step test.
struct Chunk {
  size_t b0, b1;
  int64_t start_ms, end_ms;
};

std::vector<Chunk> NormalChunks(const CountersJob& job, const std::vector<bool>& flagged,
                                const Grid& grid, size_t nb) {
  std::vector<Chunk> chunks;
  const double min_s = std::max(10.0, 20 * grid.bin_s);
  size_t k = 0;
  while (k < job.iterations.size()) {
    if (job.iterations[k].gap || flagged[k]) {
      ++k;
      continue;
    }
    size_t e = k;
    while (e + 1 < job.iterations.size() && !job.iterations[e + 1].gap && !flagged[e + 1] &&
           (job.iterations[e].end_ms - job.iterations[k].start_ms) / 1000.0 < min_s)
      ++e;
    Chunk c;
    c.start_ms = job.iterations[k].start_ms;
    c.end_ms = job.iterations[e].end_ms;
    c.b0 = BinOf(c.start_ms, grid);
    c.b1 = std::min(nb, BinOf(c.end_ms, grid));
    if ((c.end_ms - c.start_ms) / 1000.0 >= 0.5 * min_s) chunks.push_back(c);
    k = e + 1;
  }
  return chunks;
}

// The lag in bins (x later than y: positive) within +-max_lag maximising the correlation of
// x[t] with y[t - lag] over t in [b0, b1), and that correlation.
struct LagFit {
  int lag = 0;
  double corr = -1;
};
LagFit BestLag(const std::vector<double>& x, const std::vector<double>& y, size_t b0, size_t b1,
               int max_lag) {
  LagFit best;
  const int64_t n = static_cast<int64_t>(std::min(x.size(), y.size()));
  for (int lag = -max_lag; lag <= max_lag; ++lag) {
    const int64_t t0 = std::max<int64_t>(static_cast<int64_t>(b0), lag);
    const int64_t t1 = std::min<int64_t>(static_cast<int64_t>(b1), n + std::min(lag, 0));
    if (t1 - t0 < 8) continue;
    const double c = Pearson(x.data() + t0, y.data() + t0 - lag, static_cast<size_t>(t1 - t0));
    if (c > best.corr) best = {lag, c};
  }
  return best;
}

// Per chunk, a series' lag against the rest of its job; the median over chunks where the fit is
// clear (correlation >= 0.3) is its own usual lag (pipeline stages keep one), the shift of each
// chunk the difference (NaN where the fit is not clear).
std::vector<double> LagShifts(const std::vector<double>& x, const std::vector<double>& rest,
                              const std::vector<Chunk>& chunks, int max_lag) {
  std::vector<double> lag(chunks.size(), std::nan("")), clear;
  for (size_t c = 0; c < chunks.size(); ++c) {
    const LagFit f = BestLag(x, rest, chunks[c].b0, chunks[c].b1, max_lag);
    if (f.corr >= 0.3) {
      lag[c] = f.lag;
      clear.push_back(f.lag);
    }
  }
  const double usual = clear.empty() ? 0 : Median(clear);
  for (double& v : lag) v -= usual;
  return lag;
}

// Whether server `x` is shifted from its usual phase against `rest` (the sum of the others) by
// at least `min_shift` bins in a run of >= 3 chunks (one may interrupt).
bool ShiftedInThreeChunks(const std::vector<double>& x, const std::vector<double>& rest,
                          const std::vector<Chunk>& chunks, int max_lag, double min_shift) {
  const std::vector<double> vs_rest = LagShifts(x, rest, chunks, max_lag);
  std::vector<bool> off_rest(chunks.size());
  for (size_t c = 0; c < chunks.size(); ++c) off_rest[c] = std::abs(vs_rest[c]) >= min_shift;
  bool candidate = false;
  for (const diagnosis::Run& run : diagnosis::FlaggedRuns(off_rest, 1)) {
    candidate |= run.flagged >= 3;
  }
  return candidate;
}

// Server `si`'s shift per chunk against each other member (their median) and whether it is off
// in that chunk. Against each member, not the sum: in a small job the sum of the others moves
// when one member does, so its other members look shifted against it; against each member, only
// the server that moved is shifted against (nearly) all the others.
void ShiftsAgainstMembers(const CountersJob& job, size_t si, const ServerSeries& series,
                          const std::vector<Chunk>& chunks, int max_lag, double min_shift,
                          std::vector<double>* shift, std::vector<bool>* off) {
  const std::vector<double>& x = series.rate[job.servers[si]];
  std::vector<std::vector<double>> pair;
  for (size_t j = 0; j < job.servers.size(); ++j)
    if (j != si) pair.push_back(LagShifts(x, series.rate[job.servers[j]], chunks, max_lag));
  shift->assign(chunks.size(), 0);
  off->assign(chunks.size(), false);
  for (size_t c = 0; c < chunks.size(); ++c) {
    std::vector<double> v;
    for (const std::vector<double>& p : pair)
      if (!std::isnan(p[c])) v.push_back(p[c]);
    if (v.size() < 2) continue;
    (*shift)[c] = Median(v);
    size_t agree = 0;
    for (double d : v) agree += std::abs(d) >= min_shift && std::abs(d - (*shift)[c]) <= min_shift;
    (*off)[c] = std::abs((*shift)[c]) >= min_shift && agree * 3 >= 2 * v.size();
  }
}

// The server_out_of_step finding of server `si` over chunk run `run`, shifted `typical` bins;
// with the severity (and GPU-seconds lost) of the job's worst own episode it overlaps.
CountersFinding OutOfStepFinding(const CountersJob& job, int ji, size_t si,
                                 const std::vector<Chunk>& chunks, const diagnosis::Run& run,
                                 double typical, const Grid& grid,
                                 const std::vector<ServerResult>& servers, size_t nics,
                                 const std::vector<CountersFinding>& job_episodes) {
  CountersFinding f;
  f.kind = FindingKind::kServerOutOfStep;
  f.severity = Severity::kInfo;
  f.job = ji;
  f.servers = {job.servers[si]};
  f.start_ms = chunks[run.first].start_ms;
  f.end_ms = chunks[run.last].end_ms;
  f.metric = "phase_shift_s";
  f.value = typical * grid.bin_s;
  f.baseline = 0;
  f.sigma = job.resolution.boundary_s;
  f.units = static_cast<int>(run.flagged);
  std::string tied;
  for (const CountersFinding& e : job_episodes) {
    if (e.start_ms < f.end_ms && e.end_ms > f.start_ms && e.severity > f.severity) {
      f.severity = e.severity;
      f.lost_gpu_s = e.lost_gpu_s;
      tied = fmt::format("; the job lost {:.0f} GPU-s meanwhile ({})", e.lost_gpu_s,
                         diagnosis::FindingKindName(e.kind));
    }
  }
  f.summary = fmt::format("{} out of step with its job: {} {} its usual phase in {} chunks "
                          "over {:.0f}s, on all {} of its NICs{}",
                          servers[job.servers[si]].name, Seconds(std::abs(f.value)),
                          f.value > 0 ? "behind" : "ahead of", run.flagged,
                          (f.end_ms - f.start_ms) / 1000.0, nics, tied);
  return f;
}

// Stage 5b: servers out of step. A server's phase against each other member of its job is
// measured per chunk of normal iterations; it is out of step when it is shifted from its usual
// phase (pipeline stages keep their own) against at least two thirds of them by more than the
// counters blur a boundary (one refresh or poll interval, a tenth of a period) in >= 3 chunks
// (one may interrupt), all the same way, and each of its NICs (on different switches, polled and
// refreshed apart) shows the same shift: stale zeros and double deltas move one port's bytes by
// up to a refresh, at random, never every port the same way for several chunks. Severity is
// that of the job's own slowdown in the span (the finding names who is behind it), else info.
void FindServersOutOfStep(const CountersJob& job, int ji, const std::vector<double>& job_rate,
                          const ServerSeries& series, const std::vector<bool>& flagged,
                          const Grid& grid, const std::vector<ServerResult>& servers,
                          const NicSeriesFn& nic_series, std::vector<CountersFinding>* findings) {
  const size_t ns = job.servers.size(), nb = job_rate.size();
  if (ns < 3 || job.iterations.size() < 4) return;
  const std::vector<Chunk> chunks = NormalChunks(job, flagged, grid, nb);
  if (chunks.size() < 3) return;
  const int max_lag = static_cast<int>(0.5 * job.period_s / grid.bin_s);
  const double min_shift_s =
      std::max({job.resolution.boundary_s, 2 * grid.bin_s, 0.1 * job.period_s});
  const double min_shift = min_shift_s / grid.bin_s;
  std::vector<CountersFinding> job_episodes;
  for (const CountersFinding& f : *findings)
    if (f.job == ji && (f.kind == FindingKind::kSlowIteration || f.kind == FindingKind::kJobStall))
      job_episodes.push_back(f);
  std::vector<double> rest(nb);
  for (size_t si = 0; si < ns; ++si) {
    const std::vector<double>& x = series.rate[job.servers[si]];
    for (size_t t = 0; t < nb; ++t) rest[t] = job_rate[t] - x[t];
    // Candidates first, against the sum of the others (cheap).
    if (!ShiftedInThreeChunks(x, rest, chunks, max_lag, min_shift)) continue;
    std::vector<double> shift;
    std::vector<bool> off;
    ShiftsAgainstMembers(job, si, series, chunks, max_lag, min_shift, &shift, &off);
    std::vector<std::vector<double>> nic_shifts;
    bool nics_loaded = false;
    for (const diagnosis::Run& run : diagnosis::FlaggedRuns(off, 1)) {
      if (run.flagged < 3) continue;
      std::vector<double> in_run;
      for (size_t c = run.first; c <= run.last; ++c)
        if (off[c]) in_run.push_back(shift[c]);
      const double typical = Median(in_run);
      size_t same = 0;
      for (double v : in_run) same += (v > 0) == (typical > 0) ? 1 : 0;
      if (same * 4 < in_run.size() * 3) continue;  // no consistent direction: noise
      // Each NIC with a real share of the server's bytes must show the same shift.
      if (!nics_loaded) {
        for (const std::vector<double>& nic : nic_series(servers[job.servers[si]].name)) {
          double nic_sum = std::accumulate(nic.begin(), nic.end(), 0.0);
          double all = std::accumulate(x.begin(), x.end(), 0.0);
          if (all > 0 && nic_sum >= 0.1 * all) nic_shifts.push_back(LagShifts(nic, rest, chunks, max_lag));
        }
        nics_loaded = true;
      }
      // One NIC cannot confirm itself: its own polling artefacts are what is being ruled out.
      bool agree = nic_shifts.size() >= 2;
      for (const std::vector<double>& ns_c : nic_shifts) {
        std::vector<double> v;
        for (size_t c = run.first; c <= run.last; ++c)
          if (off[c] && !std::isnan(ns_c[c])) v.push_back(ns_c[c]);
        if (v.empty() || std::abs(Median(v) - typical) > min_shift) agree = false;
      }
      if (!agree) continue;
      CountersFinding f = OutOfStepFinding(job, ji, si, chunks, run, typical, grid, servers,
                                           nic_shifts.size(), job_episodes);
      findings->push_back(std::move(f));
    }
  }
}

// Stages 4 and 5 for one job: period, iterations, step summary, plot, findings.
void AnalyzeJob(int ji, const ServerSeries& series, const Grid& grid, double refresh_s,
                const CountersOptions& options, const NicSeriesFn& nic_series,
                const ServerPortsFn& server_ports, CountersResult* res) {
  CountersJob& job = res->jobs[ji];
  for (int s : job.servers) res->servers[s].job = ji;
  const JobTraffic jt = SumJobTraffic(job, series, grid.bins);
  DescribeJobNics(res->servers, &job);
  const PeriodEstimate pe = JobPeriod(jt, job, res->servers, grid.bin_s, options.period);
  job.period_s = pe.period_s;
  job.strength = pe.strength;
  const Boundaries b = TrackIterations(jt, pe.period_s / grid.bin_s, options);
  const std::vector<double> durations = MakeIterations(b, jt.ok, grid, &job);
  const StepBaseline base = SummarizeSteps(durations, options.k, &job);
  MakePlotSeries(jt.rate, grid, options, &job);
  const std::vector<bool> flagged =
      FindSlowIterations(&job, ji, jt.rate, durations.size(), base, grid, refresh_s,
                         res->polls.poll_p90_s, options, &res->findings);
  FindServersOutOfStep(job, ji, jt.rate, series, flagged, grid, res->servers, nic_series,
                       &res->findings);
  LateServerContext late;
  late.refresh_s = refresh_s;
  late.max_gap_s = options.max_gap_s;
  late.step_median_s = base.median;
  FindLateServers(job, ji, res->servers, flagged, late, server_ports, &res->findings);
}

}  // namespace

CountersResult AnalyzeCounters(const CountersData& data, const PortTopology& topology,
                               const CountersOptions& options, Stats* stats) {
  CountersResult res;
  res.polls = ProfilePolls(data);
  const double refresh_s =
      options.refresh_s > 0 ? options.refresh_s : std::max(res.polls.refresh_s, 0.001);
  const double bin_s = options.bin_s > 0 ? options.bin_s : std::clamp(refresh_s / 4, 0.05, 0.5);
  res.grid.bin_s = bin_s;
  res.grid.start_ms = data.first_ms;
  res.grid.bins =
      data.last_ms > data.first_ms
          ? static_cast<size_t>(std::ceil((data.last_ms - data.first_ms) / (bin_s * 1000))) + 1
          : 0;
  SpreadOptions spread;
  spread.refresh_s = refresh_s;
  spread.max_gap_s = options.max_gap_s;
  std::map<std::string, ServerAcc> acc =
      SumPortsByServer(data, topology, res.grid, spread, stats, &res.bytes);
  const ServerSeries series = ProfileServers(&acc, res.grid, options, &res.servers);
  // One server's ports with their NIC names: the late-server test folds their raw polls.
  const ServerPortsFn server_ports = [&](const std::string& server) {
    std::vector<std::pair<const PortSeries*, std::string>> out;
    for (const PortSeries& p : data.ports) {
      auto it = topology.find({p.switch_name, p.port});
      const std::string name =
          topology.empty() ? p.switch_name + ":" + p.port
                           : (it == topology.end() ? std::string() : it->second.server);
      if (name != server) continue;
      const bool named = !topology.empty() && !it->second.nic.empty();
      out.push_back({&p, named ? it->second.nic : p.switch_name + ":" + p.port});
    }
    return out;
  };
  // One server's NICs, each on its own (Gb/s per bin), spread again only when asked: the
  // out-of-step test needs them for a few candidate servers.
  const NicSeriesFn nic_series = [&](const std::string& server) {
    std::vector<std::vector<double>> out;
    for (const auto& [port, nic] : server_ports(server)) {
      std::vector<double> bytes(res.grid.bins, 0);
      std::vector<uint16_t> covered(res.grid.bins, 0);
      SpreadPort(*port, res.grid, spread, bytes.data(), covered.data(), nullptr);
      for (double& v : bytes) v = v * 8 / res.grid.bin_s / 1e9;
      out.push_back(std::move(bytes));
    }
    return out;
  };
  res.jobs = GroupServersIntoJobs(series, res.grid, options, &res.servers);
  for (size_t ji = 0; ji < res.jobs.size(); ++ji) {
    AnalyzeJob(static_cast<int>(ji), series, res.grid, refresh_s, options, nic_series,
               server_ports, &res);
  }
  std::sort(res.findings.begin(), res.findings.end(),
            [](const CountersFinding& a, const CountersFinding& b) {
              return std::tie(a.start_ms, a.kind, a.job, a.servers) <
                     std::tie(b.start_ms, b.kind, b.job, b.servers);
            });
  return res;
}

}  // namespace prism::counters
