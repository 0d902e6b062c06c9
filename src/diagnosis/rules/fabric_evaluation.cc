#include "diagnosis/rules/fabric_evaluation.h"

#include "analysis/analysis_results.h"
#include "analysis/endpoint_context.h"
#include "core/big_blocks.h"
#include "flow/flow_table.h"

namespace prism::diagnosis {
namespace {

// The tables a contribution stands for. Endpoint ids are the table's (interned in row order);
// `index_of` maps them back to the contribution's endpoint indices.
struct FabricTables {
  flow::FlowTable flows;
  PointTable points;
  analysis::EndpointContext ctx;
  analysis::AnalysisResults results;
  std::vector<uint32_t> index_of;
};

void FillRecords(const FabricContribution& c, FabricTables* t) {
  for (const std::string& name : c.points) t->points.Intern(name);
  t->flows.Reserve(c.records());
  for (size_t r = 0; r < c.records(); ++r) {
    FlowRecord rec;
    rec.start_ns = c.start_ns[r];
    rec.end_ns = c.end_ns[r];
    rec.src = c.endpoint_addr[c.src[r]];
    rec.dst = c.endpoint_addr[c.dst[r]];
    rec.bytes = c.bytes[r];  // already the estimated bytes: sampling 1
    rec.point = c.point[r];
    t->flows.OnRecord(rec);
  }
}

void FillNames(const FabricContribution& c, FabricTables* t) {
  const EndpointTable& endpoints = t->flows.endpoints();
  const size_t n = endpoints.size();
  std::vector<uint32_t> id_of(c.endpoint_addr.size(), uint32_t(n));  // contribution -> table
  t->index_of.assign(n, 0);
  for (size_t e = 0; e < c.endpoint_addr.size(); ++e) {
    id_of[e] = endpoints.Find(c.endpoint_addr[e]);
    if (id_of[e] < n) t->index_of[id_of[e]] = uint32_t(e);
  }
  t->ctx.leaf_names = c.leaf_names;
  t->ctx.leaf.assign(n, -1);
  t->results.job_of.assign(n, -1);
  for (size_t e = 0; e < c.endpoint_addr.size(); ++e) {
    if (id_of[e] >= n) continue;  // an endpoint of no record: not asked about
    t->ctx.leaf[id_of[e]] = c.endpoint_leaf[e];
    t->results.job_of[id_of[e]] = c.endpoint_job[e];
  }
  t->results.jobs.resize(c.jobs.size());
  for (size_t j = 0; j < c.jobs.size(); ++j) t->results.jobs[j].id = c.jobs[j];
  for (const auto& p : c.pairs) {
    if (id_of[p.a] >= n || id_of[p.b] >= n) continue;
    analysis::Pair pair;
    pair.a = id_of[p.a];
    pair.b = id_of[p.b];
    pair.job = c.endpoint_job[p.a];
    pair.label = p.label;
    t->results.pairs.push_back(std::move(pair));
  }
}

}  // namespace

NetworkFindings EvaluateFabric(const FabricContribution& c, const DiagnosisOptions& options) {
  NetworkFindings out;
  {
    FabricTables t;
    FillRecords(c, &t);
    FillNames(c, &t);
    const RuleContext rc{t.flows, t.points, t.ctx, t.results, options};
    out = JudgeFabric(rc, c.first_start_ns, c.last_start_ns);
    for (Finding& f : out.findings)
      for (EndpointId& gpu : f.gpus) gpu = t.index_of[gpu];
  }
  // The table's columns are big blocks (core/big_blocks.h), kept when freed: the fabric role
  // judges a window now and then, so they go back to the system instead of staying resident
  // until the next.
  ReleaseBigBlocks();
  return out;
}

}  // namespace prism::diagnosis
