// File: core/topology.h
// What the operator knows about the cluster: endpoint IP -> host, GPU index, leaf switch, kind.
// Optional: without it every endpoint is its own host (docs/design.md, Topology CSV).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ip_addr.h"

namespace prism {

enum class EndpointKind { kGpu, kStorage, kOther };

struct EndpointInfo {
  IpAddr ip;
  std::string host;
  int gpu = -1;  // GPU index on the host; -1 when unknown or not a GPU
  std::string leaf;
  EndpointKind kind = EndpointKind::kGpu;
};

class Topology {
 public:
  void Add(EndpointInfo info) {
    index_.emplace(info.ip, entries_.size());
    entries_.push_back(std::move(info));
  }
  bool Contains(const IpAddr& ip) const { return index_.count(ip) != 0; }
  // nullptr when the IP is not listed.
  const EndpointInfo* Find(const IpAddr& ip) const {
    auto it = index_.find(ip);
    return it == index_.end() ? nullptr : &entries_[it->second];
  }
  const std::vector<EndpointInfo>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<EndpointInfo> entries_;
  std::unordered_map<IpAddr, size_t, IpAddrHash> index_;
};

}  // namespace prism
