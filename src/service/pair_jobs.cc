#include "service/pair_jobs.h"

#include <algorithm>

#include "analysis/endpoint_context.h"

namespace prism::service {

std::vector<std::vector<IpAddr>> JobsOfPairs(const std::vector<std::pair<IpAddr, IpAddr>>& pairs,
                                             const Topology* topology,
                                             const analysis::JobRecognitionOptions& options) {
  EndpointTable endpoints;
  std::vector<uint64_t> keys;
  keys.reserve(pairs.size());
  for (const auto& [a, b] : pairs) {
    keys.push_back(analysis::PairKey(endpoints.Intern(a), endpoints.Intern(b)));
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  const analysis::EndpointContext ctx = analysis::BuildEndpointContext(endpoints, topology);
  const analysis::JobRecognition recognition =
      analysis::RecognizeJobs(keys, endpoints, ctx, options);
  std::vector<std::vector<IpAddr>> jobs;
  for (const analysis::Job& job : recognition.jobs) {
    std::vector<IpAddr> gpus;
    for (EndpointId e : job.gpus) gpus.push_back(endpoints.Addr(e));
    jobs.push_back(std::move(gpus));  // RecognizeJobs sorts GPUs and jobs by address
  }
  return jobs;
}

}  // namespace prism::service
