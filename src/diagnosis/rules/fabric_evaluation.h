// File: diagnosis/rules/fabric_evaluation.h
// The bandwidth rule's switch and link judgement (bandwidth_rule.h) of a fabric contribution
// (fabric_contribution.h): one window's, or the merged contributions of every shard's window.
// The contribution becomes the tables the rule reads (records, points, endpoints' leaves and
// jobs, labelled pairs) and the rule runs on them with the window's bins: what one `serve`
// finds on the window holding every shard's records.
#pragma once

#include "diagnosis/rules/bandwidth_rule.h"
#include "diagnosis/rules/fabric_contribution.h"

namespace prism::diagnosis {

// Findings' gpus are endpoint indices of `c` (its endpoint_addr), their job and jobs_affected
// indices into c.jobs.
NetworkFindings EvaluateFabric(const FabricContribution& c, const DiagnosisOptions& options);

}  // namespace prism::diagnosis
