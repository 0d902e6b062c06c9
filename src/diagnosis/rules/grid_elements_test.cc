#include "diagnosis/rules/grid_elements.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "analysis/endpoint_context.h"
#include "flow/flow_table.h"

namespace prism::diagnosis {
namespace {

// Two leaves and two spines, observed at every switch (leaves are observation points too, named
// alike, and one point has no name), and three endpoints: two on the leaves, one of unknown leaf.
struct SmallFabric {
  flow::FlowTable flows;
  PointTable points;
  analysis::EndpointContext ctx;
  analysis::AnalysisResults results;
  DiagnosisOptions options;
  RuleContext rc{flows, points, ctx, results, options};

  SmallFabric() {
    for (const char* name : {"spine02", "leaf-b", "", "spine01", "leaf-a"}) points.Intern(name);
    for (uint32_t host : {1u, 2u, 3u}) {
      FlowRecord r;
      r.src = IpAddr::FromV4(0x0a000000 + host);
      r.dst = IpAddr::FromV4(0x0a000000 + host % 3 + 1);
      r.start_ns = 1;
      r.end_ns = 2;
      r.bytes = 1;
      flows.OnRecord(r);
    }
    ctx.leaf_names = {"leaf-a", "leaf-b"};
    ctx.leaf.assign(flows.endpoints().size(), -1);
    ctx.leaf[flows.endpoints().Find(IpAddr::FromV4(0x0a000001))] = 0;
    ctx.leaf[flows.endpoints().Find(IpAddr::FromV4(0x0a000002))] = 1;
  }
};

TEST(GridElements, RouteKeysNameTheElementsOfRouteElementsInItsOrder) {
  const SmallFabric f;
  const SwitchIds switches(f.rc);
  std::vector<uint32_t> points = {kNoPoint};
  for (uint32_t p = 0; p < f.points.size(); ++p) points.push_back(p);
  size_t routes = 0, links = 0;
  for (const uint32_t point : points) {
    for (const int leaf_src : {-1, 0, 1}) {
      for (const int leaf_dst : {-1, 0, 1}) {
        std::vector<uint64_t> keys;
        AppendRouteKeys(switches, point, leaf_src, leaf_dst, &keys);
        const std::vector<Element> named = RouteElements(f.rc, point, leaf_src, leaf_dst);
        ASSERT_EQ(keys.size(), named.size()) << "point " << point << " leaves " << leaf_src << ","
                                             << leaf_dst;
        for (size_t i = 0; i < keys.size(); ++i) {
          const Element e = NameElement(f.rc, switches, keys[i]);
          EXPECT_EQ(e.name, named[i].name);
          EXPECT_EQ(e.kind, named[i].kind);
          EXPECT_EQ(e.a, named[i].a);
          EXPECT_EQ(e.b, named[i].b);
          links += e.kind == ElementKind::kFabricLink;
        }
        ++routes;
      }
    }
  }
  EXPECT_EQ(routes, 6u * 9u);
  EXPECT_GT(links, 0u);  // spines were crossed on their links
}

TEST(GridElements, KeysOfDistinctElementsDifferAndAccessLinksAreNamedByAddressAndLeaf) {
  const SmallFabric f;
  const SwitchIds switches(f.rc);
  std::set<uint64_t> keys;
  std::set<std::string> names;
  for (EndpointId end = 0; end < f.flows.endpoints().size(); ++end) {
    keys.insert(AccessLinkKey(end));
    names.insert(NameElement(f.rc, switches, AccessLinkKey(end)).name);
  }
  const int32_t leaf_a = switches.OfLeaf(0), spine01 = switches.OfPoint(3);
  ASSERT_GE(leaf_a, 0);
  ASSERT_GE(spine01, 0);
  EXPECT_EQ(switches.OfPoint(4), leaf_a);  // the leaf observed is the same switch
  EXPECT_EQ(switches.OfPoint(2), -1);      // a point with no name is no switch
  for (uint64_t k : {SwitchKey(leaf_a), SwitchKey(spine01), FabricLinkKey(leaf_a, spine01),
                     FabricLinkKey(spine01, leaf_a)}) {
    keys.insert(k);
    names.insert(NameElement(f.rc, switches, k).name);
  }
  EXPECT_EQ(keys.size(), 7u);
  EXPECT_EQ(names.size(), 7u);
  const EndpointId third = f.flows.endpoints().Find(IpAddr::FromV4(0x0a000003));
  const Element unknown_leaf = NameElement(f.rc, switches, AccessLinkKey(third));
  EXPECT_EQ(unknown_leaf.name, "10.0.0.3|");
  EXPECT_EQ(unknown_leaf.endpoint, third);
  EXPECT_EQ(NameElement(f.rc, switches, FabricLinkKey(leaf_a, spine01)).name, "leaf-a|spine01");
}

}  // namespace
}  // namespace prism::diagnosis
