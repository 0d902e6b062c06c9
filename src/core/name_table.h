// File: core/name_table.h
// Interning tables: observation-point names (switches) and endpoint addresses map to dense ids so
// the columnar FlowTable and the analysis work on small integers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/flow_record.h"
#include "core/ip_addr.h"

namespace prism {

class PointTable {
 public:
  PointId Intern(std::string_view name) {
    auto it = ids_.find(std::string(name));
    if (it != ids_.end()) return it->second;
    PointId id = static_cast<PointId>(names_.size());
    names_.emplace_back(name);
    ids_.emplace(names_.back(), id);
    return id;
  }
  const std::string& Name(PointId id) const { return names_.at(id); }
  size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, PointId> ids_;
};

using EndpointId = uint32_t;

class EndpointTable {
 public:
  EndpointId Intern(const IpAddr& addr) {
    auto [it, inserted] = ids_.try_emplace(addr, static_cast<EndpointId>(addrs_.size()));
    if (inserted) addrs_.push_back(addr);
    return it->second;
  }
  // Returns size() when unknown.
  EndpointId Find(const IpAddr& addr) const {
    auto it = ids_.find(addr);
    return it == ids_.end() ? static_cast<EndpointId>(addrs_.size()) : it->second;
  }
  const IpAddr& Addr(EndpointId id) const { return addrs_[id]; }
  size_t size() const { return addrs_.size(); }

 private:
  std::vector<IpAddr> addrs_;
  std::unordered_map<IpAddr, EndpointId, IpAddrHash> ids_;
};

}  // namespace prism
