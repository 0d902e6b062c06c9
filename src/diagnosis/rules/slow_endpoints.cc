#include "diagnosis/rules/slow_endpoints.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "analysis/jobs/job_recognition.h"
#include "analysis/pair_key_map.h"
#include "diagnosis/robust_stats.h"
#include "diagnosis/rules/bandwidth_cells.h"

namespace prism::diagnosis {
namespace {

// Fewer records than this in a bin leave a pair's pace there unjudged: one late record must not
// make a pair slow.
constexpr uint32_t kMinRecordsPerPairBin = 3;
// A pair's usual pace needs this many judged bins.
constexpr size_t kMinBinsForUsualPace = 3;

// Every directed pair's pace per bin (0: not judged) and whether it is slow there.
struct PairPaces {
  analysis::PairKeyMap index;        // directed pair key (source in the high half) -> pair
  std::vector<EndpointId> src, dst;  // by pair
  std::vector<double> pace;          // [pair * bins + bin]
  std::vector<double> usual;         // by pair; 0: too few bins to know
  size_t bins = 0;

  bool Judged(size_t p, size_t bin) const { return usual[p] > 0 && pace[p * bins + bin] > 0; }
  bool Slow(size_t p, size_t bin, double max_ratio) const {
    return Judged(p, bin) && pace[p * bins + bin] < usual[p] * max_ratio;
  }
};

uint64_t DirectedKey(EndpointId src, EndpointId dst) { return (uint64_t(src) << 32) | dst; }

}  // namespace

PairPaceSums::PairPaceSums(int64_t t0, int64_t bin_ns, int64_t bins)
    : t0_(t0), bin_ns_(bin_ns), bins_(std::max<int64_t>(0, bins)), by_bin_(size_t(bins_)) {}

PairPaceSums PairPaceSums::EmptyCopy() const {
  PairPaceSums copy(t0_, bin_ns_, bins_);
  copy.slot_of_.assign(slot_of_.size(), kNoSlot);
  return copy;
}

uint32_t PairPaceSums::PairOf(uint32_t* slot, EndpointId src, EndpointId dst) {
  if (*slot == kNoSlot) {
    *slot = uint32_t(src_.size());
    src_.push_back(src);
    dst_.push_back(dst);
  }
  return *slot;
}

uint32_t* PairPaceSums::OtherSlot(EndpointId src, EndpointId dst) {
  const uint32_t other = others_.FindOrInsert(DirectedKey(src, dst));
  if (other == other_pair_.size()) other_pair_.push_back(kNoSlot);
  return &other_pair_[other];
}

void PairPaceSums::Add(const flow::FlowTable& f, size_t r, uint32_t pair) {
  if (bins_ == 0) return;
  const int64_t start = f.start_ns()[r];
  const int64_t bin = (start - t0_) / bin_ns_;
  if (bin < 0 || bin >= bins_) return;
  const EndpointId src = f.src()[r], dst = f.dst()[r];
  uint32_t p;
  if (pair != kNoPair) {
    p = PairOf(&slot_of_[size_t(pair) * 2 + (src > dst)], src, dst);
  } else {
    p = PairOf(OtherSlot(src, dst), src, dst);
  }
  std::vector<Bin>& in_bin = by_bin_[size_t(bin)];
  if (p >= in_bin.size()) in_bin.resize(src_.size());
  Bin& b = in_bin[p];
  b.bytes += double(f.EstimatedBytes(r));  // a sampled record's pace is that of its N
  b.duration_ns += f.EndNs(r) - start;
  ++b.records;
}

void PairPaceSums::Append(PairPaceSums&& later) {
  // The later run's pairs in the order it met them: those this run met keep their number, the
  // others follow, as one pass would have numbered them. A later pair came by its slot of the
  // caller's numbers (the runs share the caller's numbering) or else by its key.
  std::vector<size_t> caller_slot(later.src_.size(), SIZE_MAX);
  for (size_t slot = 0; slot < later.slot_of_.size(); ++slot)
    if (later.slot_of_[slot] != kNoSlot) caller_slot[later.slot_of_[slot]] = slot;
  std::vector<uint32_t> mine(later.src_.size());
  for (size_t p = 0; p < later.src_.size(); ++p) {
    const EndpointId src = later.src_[p], dst = later.dst_[p];
    uint32_t* slot = caller_slot[p] != SIZE_MAX ? &slot_of_[caller_slot[p]] : OtherSlot(src, dst);
    mine[p] = PairOf(slot, src, dst);
  }
  for (size_t bin = 0; bin < by_bin_.size(); ++bin) {
    std::vector<Bin>& in_bin = by_bin_[bin];
    const std::vector<Bin>& later_bin = later.by_bin_[bin];
    for (size_t p = 0; p < later_bin.size(); ++p) {
      if (later_bin[p].records == 0) continue;
      if (mine[p] >= in_bin.size()) in_bin.resize(src_.size());
      Bin& b = in_bin[mine[p]];
      b.bytes += later_bin[p].bytes;
      b.duration_ns += later_bin[p].duration_ns;
      b.records += later_bin[p].records;
    }
  }
}

namespace {

PairPaces FinishPairPaces(std::vector<EndpointId>&& src, std::vector<EndpointId>&& dst,
                          const std::vector<std::vector<PairPaceSums::Bin>>& by_bin) {
  PairPaces out;
  out.bins = by_bin.size();
  out.src = std::move(src);
  out.dst = std::move(dst);
  for (size_t p = 0; p < out.src.size(); ++p)
    out.index.FindOrInsert(DirectedKey(out.src[p], out.dst[p]));
  out.pace.assign(out.src.size() * out.bins, 0);
  out.usual.assign(out.src.size(), 0);
  std::vector<double> judged;
  for (size_t p = 0; p < out.src.size(); ++p) {
    judged.clear();
    for (size_t bin = 0; bin < out.bins; ++bin) {
      if (p >= by_bin[bin].size()) continue;  // no record of the pair in the bin
      const PairPaceSums::Bin& b = by_bin[bin][p];
      if (b.records < kMinRecordsPerPairBin) continue;
      out.pace[p * out.bins + bin] = b.bytes / double(b.duration_ns);
      judged.push_back(out.pace[p * out.bins + bin]);
    }
    if (judged.size() < kMinBinsForUsualPace) continue;
    std::sort(judged.begin(), judged.end());
    out.usual[p] = judged[judged.size() * 3 / 4];
  }
  return out;
}

// Fills each slow endpoint bin's slow_rows: one more pass over the records, only when some
// endpoint was slow.
void CollectSlowRows(const RuleContext& rc, int64_t t0, int64_t bin_ns, const PairPaces& paces,
                     std::vector<SlowEndpointBin>* slow) {
  if (slow->empty()) return;
  const double max_ratio = 1 - rc.options.min_bw_drop;
  // (endpoint, bin) -> its entry; entries are in (endpoint, bin) order.
  std::map<std::pair<EndpointId, int64_t>, size_t> entry;
  for (size_t i = 0; i < slow->size(); ++i) entry[{(*slow)[i].endpoint, (*slow)[i].bin}] = i;
  const auto& f = rc.flows;
  for (size_t r = 0; r < f.size(); ++r) {
    if (PacedJob(rc, r) < 0) continue;
    const int64_t bin = (f.start_ns()[r] - t0) / bin_ns;
    if (bin < 0 || bin >= int64_t(paces.bins)) continue;
    const uint32_t p = paces.index.Find(DirectedKey(f.src()[r], f.dst()[r]));
    if (!paces.Slow(p, size_t(bin), max_ratio)) continue;
    for (EndpointId end : {f.src()[r], f.dst()[r]})
      if (const auto it = entry.find({end, bin}); it != entry.end())
        (*slow)[it->second].slow_rows.push_back(uint32_t(r));
  }
}

}  // namespace

std::vector<SlowEndpointBin> FindSlowEndpoints(const RuleContext& rc, int64_t t0, int64_t bin_ns,
                                               int64_t bins) {
  PairPaceSums sums(t0, bin_ns, bins);
  const auto& f = rc.flows;
  for (size_t r = 0; r < f.size(); ++r)
    if (PacedJob(rc, r) >= 0) sums.Add(f, r, PairPaceSums::kNoPair);
  return FindSlowEndpoints(rc, std::move(sums));
}

std::vector<SlowEndpointBin> FindSlowEndpoints(const RuleContext& rc, PairPaceSums sums) {
  std::vector<SlowEndpointBin> out;
  if (rc.flows.empty() || sums.bins_ <= 0) return out;
  const int64_t t0 = sums.t0_, bin_ns = sums.bin_ns_;
  const PairPaces paces =
      FinishPairPaces(std::move(sums.src_), std::move(sums.dst_), sums.by_bin_);
  std::vector<std::vector<PairPaceSums::Bin>>().swap(sums.by_bin_);  // the paces hold them now
  const double max_ratio = 1 - rc.options.min_bw_drop;
  // Each endpoint's pairs, in both directions.
  std::vector<std::vector<uint32_t>> pairs_of;
  for (size_t p = 0; p < paces.src.size(); ++p) {
    if (paces.usual[p] <= 0) continue;
    for (EndpointId e : {paces.src[p], paces.dst[p]}) {
      if (pairs_of.size() <= e) pairs_of.resize(size_t(e) + 1);
      pairs_of[e].push_back(uint32_t(p));
    }
  }
  for (EndpointId e = 0; e < pairs_of.size(); ++e) {
    for (size_t bin = 0; bin < paces.bins; ++bin) {
      // Judged and slow pairs by direction: 0 = sent by e, 1 = received.
      int judged[2] = {0, 0}, slow[2] = {0, 0};
      std::set<EndpointId> far_slow[2];
      std::vector<double> ratios;
      for (uint32_t p : pairs_of[e]) {
        if (!paces.Judged(p, bin)) continue;
        const int dir = paces.src[p] == e ? 0 : 1;
        ++judged[dir];
        if (!paces.Slow(p, bin, max_ratio)) continue;
        ++slow[dir];
        far_slow[dir].insert(dir == 0 ? paces.dst[p] : paces.src[p]);
        ratios.push_back(paces.pace[p * paces.bins + bin] / paces.usual[p]);
      }
      auto most_slow = [](int s, int j, size_t far_ends) {
        return s >= 2 && s * 3 >= j * 2 && far_ends >= 2;
      };
      std::set<EndpointId> far_both = far_slow[0];
      far_both.insert(far_slow[1].begin(), far_slow[1].end());
      if (!most_slow(slow[0], judged[0], far_slow[0].size()) &&
          !most_slow(slow[1], judged[1], far_slow[1].size()) &&
          !most_slow(slow[0] + slow[1], judged[0] + judged[1], far_both.size()))
        continue;
      // The far ends' pairs with anyone but e: a bad link of e's leaves them at their pace.
      int others_judged = 0, others_slow = 0;
      for (EndpointId far : far_both) {
        for (uint32_t p : pairs_of[far]) {
          if (paces.src[p] == e || paces.dst[p] == e || !paces.Judged(p, bin)) continue;
          ++others_judged;
          others_slow += paces.Slow(p, bin, max_ratio);
        }
      }
      if (others_judged == 0 || others_slow * 2 >= others_judged) continue;
      out.push_back({e, int64_t(bin), Median(ratios), {}});
    }
  }
  CollectSlowRows(rc, t0, bin_ns, paces, &out);
  return out;
}

}  // namespace prism::diagnosis
