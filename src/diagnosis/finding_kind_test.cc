#include "diagnosis/finding_kind.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace prism::diagnosis {
namespace {

constexpr int kKinds = static_cast<int>(FindingKind::kTelemetryLoss) + 1;

TEST(FindingKind, EveryNameParsesBackToItsKind) {
  for (int i = 0; i < kKinds; ++i) {
    const auto kind = static_cast<FindingKind>(i);
    const auto back = ParseFindingKind(FindingKindName(kind));
    ASSERT_TRUE(back) << FindingKindName(kind);
    EXPECT_EQ(*back, kind);
  }
  // The names reports, the API and the database have always carried.
  EXPECT_STREQ(FindingKindName(FindingKind::kStragglerGpu), "straggler_gpu");
  EXPECT_STREQ(FindingKindName(FindingKind::kDegradedLink), "degraded_link");
  EXPECT_STREQ(FindingKindName(FindingKind::kTelemetryLoss), "telemetry_loss");
  EXPECT_STREQ(FindingKindName(FindingKind::kJobStarted), "job_started");
  EXPECT_FALSE(ParseFindingKind("straggler"));
  EXPECT_FALSE(ParseFindingKind("straggler_gpu "));
  EXPECT_FALSE(ParseFindingKind(""));
}

// Sorting findings by kind must give the order of their names (the reports' order).
TEST(FindingKind, OrderedAsTheirNames) {
  for (int i = 1; i < kKinds; ++i) {
    const auto a = static_cast<FindingKind>(i - 1), b = static_cast<FindingKind>(i);
    EXPECT_LT(a, b);
    EXPECT_LT(std::strcmp(FindingKindName(a), FindingKindName(b)), 0)
        << FindingKindName(a) << " " << FindingKindName(b);
  }
}

}  // namespace
}  // namespace prism::diagnosis
