// File: diagnosis/rules/fabric_contribution_split.h
// One window's fabric contribution cut into the contributions of the shards its records came
// from. An analyser that holds several shards by lease analyses their records as one window but
// must answer for each shard on its own: the shard it holds today may be another analyser's
// tomorrow, which then publishes that shard's part of the next windows (and the fabric stage
// keeps one part per shard and window, the first it gets).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "diagnosis/rules/fabric_contribution.h"

namespace prism::diagnosis {

// `c` as `parts` contributions; endpoint e of c belongs to part endpoint_part[e] (-1: unknown).
// A record goes with its source's part, else its destination's, else part 0 (a routing
// collector sends a record by its source's job the same way); a labelled pair goes with its
// first end's part by the same rule, and both its ends come with it. Each part keeps the jobs,
// leaves and points its endpoints and records refer to, in c's order, and c's span of record
// starts: the bins span the window's records of every shard, and MergeFabricContributions takes
// the widest span of the parts it joins. A part may hold no record (its span still says the
// window was seen). Merged again, the parts hold c's records, names and pairs.
std::vector<FabricContribution> SplitFabricContribution(const FabricContribution& c,
                                                        std::span<const int32_t> endpoint_part,
                                                        size_t parts);

}  // namespace prism::diagnosis
