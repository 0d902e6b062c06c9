// File: diagnosis/rules/grid_elements.h
// The cell grid's network elements (bandwidth_cells.h) as the grid's builders know them: one 64-bit
// key per element, made of small ids, named once the grid is built. A builder meets an element at
// its first record and, when elements were named as they were met, made its name, its ends' names
// and an index entry there: tens of thousands of small allocations per builder at 10,000 GPUs. On
// two threads both builders made them at once on the process's one malloc arena, and element
// making took 0.06-0.08 s of wall per builder against 0.01 s on one thread (docs/performance.md).
// Keyed, a builder allocates nothing per element but its cells' slots, and the grid names each of
// its elements once (NameElement), in the order the builders met them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/flow_record.h"
#include "diagnosis/rules/bandwidth_cells.h"
#include "diagnosis/rules/rule_context.h"

namespace prism::diagnosis {

// The window's switches, numbered in name order: every observation point and every leaf, one id
// per distinct non-empty name (a leaf is often an observation point too: one switch).
class SwitchIds {
 public:
  explicit SwitchIds(const RuleContext& rc);

  // The switch of an observation point or of a leaf, or -1 (no point, unknown leaf, empty name).
  int32_t OfPoint(uint32_t point) const {
    return point < of_point_.size() ? of_point_[point] : -1;
  }
  int32_t OfLeaf(int leaf) const { return leaf < 0 ? -1 : of_leaf_[size_t(leaf)]; }
  const std::string& Name(int32_t id) const { return names_[size_t(id)]; }

 private:
  std::vector<std::string> names_;  // sorted
  std::vector<int32_t> of_point_, of_leaf_;
};

// An element's key: its kind in the top two bits, then its ids.
uint64_t SwitchKey(int32_t switch_id);
uint64_t FabricLinkKey(int32_t leaf_switch, int32_t spine_switch);
uint64_t AccessLinkKey(EndpointId endpoint);

// The keys of RouteElements(rc, point, leaf_src, leaf_dst), in its order: the switches by name,
// then the fabric links. Appended to `out`.
void AppendRouteKeys(const SwitchIds& switches, uint32_t point, int leaf_src, int leaf_dst,
                     std::vector<uint64_t>* out);

// The element a key stands for, named as RouteElements and the access links name theirs.
Element NameElement(const RuleContext& rc, const SwitchIds& switches, uint64_t key);

}  // namespace prism::diagnosis
