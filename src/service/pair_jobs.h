// File: service/pair_jobs.h
// Jobs of a pair graph (service/pair_graph.h): the recogniser's job recognition, the same
// RecognizeJobs serve runs on a window's records (analysis/jobs/job_recognition.h), given the
// pairs instead of the records. Each job as its GPUs' addresses, sorted; jobs by first address.
#pragma once

#include <utility>
#include <vector>

#include "analysis/jobs/job_recognition.h"
#include "core/ip_addr.h"
#include "core/topology.h"

namespace prism::service {

std::vector<std::vector<IpAddr>> JobsOfPairs(const std::vector<std::pair<IpAddr, IpAddr>>& pairs,
                                             const Topology* topology,
                                             const analysis::JobRecognitionOptions& options);

}  // namespace prism::service
