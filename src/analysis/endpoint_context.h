// File: analysis/endpoint_context.h
// What the topology says about each endpoint of a window: its host, whether it is a GPU, its GPU
// index on the host and its leaf switch. Without a topology every endpoint is its own host and a
// GPU (docs/design.md, Endpoint context).
#pragma once

#include <string>
#include <vector>

#include "core/name_table.h"
#include "core/topology.h"

namespace prism::analysis {

struct EndpointContext {
  std::vector<int> host;            // per endpoint: dense host index
  std::vector<std::string> host_names;
  std::vector<uint8_t> is_gpu;
  std::vector<int> local_gpu;       // GPU index on the host, -1 unknown
  std::vector<int> leaf;            // index into leaf_names, -1 unknown
  std::vector<std::string> leaf_names;
  bool has_topology = false;
};

EndpointContext BuildEndpointContext(const EndpointTable& endpoints, const Topology* topology);

}  // namespace prism::analysis
