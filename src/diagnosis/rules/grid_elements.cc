#include "diagnosis/rules/grid_elements.h"

#include <algorithm>

namespace prism::diagnosis {
namespace {

constexpr int kKindShift = 62;
constexpr uint64_t kIdMask = (uint64_t{1} << 31) - 1;

uint64_t KindBits(ElementKind kind) { return uint64_t(kind) << kKindShift; }

}  // namespace

SwitchIds::SwitchIds(const RuleContext& rc) {
  for (uint32_t p = 0; p < rc.points.size(); ++p) names_.push_back(rc.points.Name(p));
  names_.insert(names_.end(), rc.ctx.leaf_names.begin(), rc.ctx.leaf_names.end());
  std::sort(names_.begin(), names_.end());
  names_.erase(std::unique(names_.begin(), names_.end()), names_.end());
  if (!names_.empty() && names_.front().empty()) names_.erase(names_.begin());
  const auto id = [this](const std::string& name) -> int32_t {
    if (name.empty()) return -1;
    return int32_t(std::lower_bound(names_.begin(), names_.end(), name) - names_.begin());
  };
  for (uint32_t p = 0; p < rc.points.size(); ++p) of_point_.push_back(id(rc.points.Name(p)));
  for (const std::string& leaf : rc.ctx.leaf_names) of_leaf_.push_back(id(leaf));
}

uint64_t SwitchKey(int32_t switch_id) {
  return KindBits(ElementKind::kSwitch) | uint64_t(switch_id);
}

uint64_t FabricLinkKey(int32_t leaf_switch, int32_t spine_switch) {
  return KindBits(ElementKind::kFabricLink) | (uint64_t(leaf_switch) << 31) |
         uint64_t(spine_switch);
}

uint64_t AccessLinkKey(EndpointId endpoint) {
  return KindBits(ElementKind::kAccessLink) | uint64_t(endpoint);
}

void AppendRouteKeys(const SwitchIds& switches, uint32_t point, int leaf_src, int leaf_dst,
                     std::vector<uint64_t>* out) {
  const int32_t obs = switches.OfPoint(point);
  const int32_t ls = switches.OfLeaf(leaf_src), ld = switches.OfLeaf(leaf_dst);
  // Ids are in name order: sorted ids are RouteElements' switches by name.
  int32_t crossed[3] = {obs, ls, ld};
  std::sort(std::begin(crossed), std::end(crossed));
  for (size_t i = 0; i < 3; ++i)
    if (crossed[i] >= 0 && (i == 0 || crossed[i] != crossed[i - 1]))
      out->push_back(SwitchKey(crossed[i]));
  // Observed at a switch that is neither end's leaf: a spine, crossed on two links.
  if (obs >= 0 && obs != ls && obs != ld)
    for (const int32_t leaf : {ls, ld})
      if (leaf >= 0) out->push_back(FabricLinkKey(leaf, obs));
}

Element NameElement(const RuleContext& rc, const SwitchIds& switches, uint64_t key) {
  const auto kind = ElementKind(key >> kKindShift);
  switch (kind) {
    case ElementKind::kSwitch: {
      const std::string& name = switches.Name(int32_t(key & kIdMask));
      return {name, kind, name, "", 0};
    }
    case ElementKind::kFabricLink: {
      const std::string& leaf = switches.Name(int32_t((key >> 31) & kIdMask));
      const std::string& spine = switches.Name(int32_t(key & kIdMask));
      return {leaf + "|" + spine, kind, leaf, spine, 0};
    }
    case ElementKind::kAccessLink:
      break;
  }
  // The link between an endpoint's NIC and its leaf, named by the endpoint's address and the leaf
  // ("10.0.3.5|leaf-p000-r2"; an endpoint of unknown leaf: "10.0.3.5|").
  const auto end = EndpointId(key & ((uint64_t{1} << 32) - 1));
  const int leaf = rc.ctx.leaf[end];
  const std::string leaf_name = leaf >= 0 ? rc.ctx.leaf_names[size_t(leaf)] : "";
  const std::string addr = rc.flows.endpoints().Addr(end).ToString();
  return {addr + "|" + leaf_name, kind, leaf_name, addr, end};
}

}  // namespace prism::diagnosis
