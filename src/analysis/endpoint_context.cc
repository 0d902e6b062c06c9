#include "analysis/endpoint_context.h"

#include <unordered_map>

namespace prism::analysis {

EndpointContext BuildEndpointContext(const EndpointTable& endpoints, const Topology* topology) {
  EndpointContext ctx;
  const size_t n = endpoints.size();
  ctx.host.resize(n);
  ctx.is_gpu.assign(n, 1);
  ctx.local_gpu.assign(n, -1);
  ctx.leaf.assign(n, -1);
  ctx.has_topology = topology != nullptr && !topology->empty();
  std::unordered_map<std::string, int> host_ids, leaf_ids;
  auto intern = [](std::unordered_map<std::string, int>* ids, std::vector<std::string>* names,
                   const std::string& name) {
    auto [it, inserted] = ids->try_emplace(name, static_cast<int>(names->size()));
    if (inserted) names->push_back(name);
    return it->second;
  };
  for (EndpointId e = 0; e < n; ++e) {
    const EndpointInfo* info = ctx.has_topology ? topology->Find(endpoints.Addr(e)) : nullptr;
    if (info == nullptr) {
      ctx.host[e] = intern(&host_ids, &ctx.host_names, endpoints.Addr(e).ToString());
      continue;
    }
    ctx.host[e] = intern(&host_ids, &ctx.host_names, info->host);
    ctx.is_gpu[e] = info->kind == EndpointKind::kGpu;
    ctx.local_gpu[e] = info->gpu;
    if (!info->leaf.empty()) ctx.leaf[e] = intern(&leaf_ids, &ctx.leaf_names, info->leaf);
  }
  return ctx;
}

}  // namespace prism::analysis
