// File: io/topology_csv.h
// Topology CSV (docs/design.md, Topology CSV): header ip,host,gpu,leaf[,kind], columns in any
// order, unknown columns ignored, one row per endpoint IP. kind is gpu (default when absent or
// empty), storage or other; gpu is the GPU index on the host, empty or -1 when unknown.
#pragma once

#include <ostream>
#include <string>

#include "core/stats.h"
#include "core/status.h"
#include "core/topology.h"

namespace prism::io {

// Bad rows (unparsable ip / gpu / kind, empty host, wrong field count) bump topology_bad_row, a
// second row for an IP bumps topology_duplicate_ip (the first row wins); both are skipped and the
// first 5 are described on stderr as "FILE:LINE: expected ..., got ...".
// Errors: kNotFound (cannot open), kDataLoss (empty, header lacks ip/host/gpu/leaf, no usable
// row). `stats` may be null.
StatusOr<Topology> ReadTopologyCsv(const std::string& path, Stats* stats);
StatusOr<Topology> ReadTopologyCsvBuffer(std::string_view data, const std::string& name,
                                         Stats* stats);

// Writes header "ip,host,gpu,leaf,kind" and one row per entry in entries() order; gpu < 0 is
// written as an empty field.
Status WriteTopologyCsv(const Topology& topo, std::ostream* out);

}  // namespace prism::io
