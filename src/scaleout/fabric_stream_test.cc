#include "scaleout/fabric_stream.h"

#include <gtest/gtest.h>

namespace prism::scaleout {
namespace {

TEST(FabricStream, SubjectsAndIdsNameTheWindowAndShard) {
  const FabricKey k{1'700'000'020'000'000'000, 3, 1, 4};
  EXPECT_EQ(FabricSubject(k), "fabric.1700000020000000000.3.1.4");
  EXPECT_EQ(FabricMessageId(k), "1700000020000000000.3.1.4");
  EXPECT_EQ(ParseFabricSubject(FabricSubject(k)), k);
  const FabricKey whole{20, 0};
  EXPECT_EQ(FabricSubject(whole), "fabric.20.0.0.1");
  EXPECT_EQ(ParseFabricSubject(FabricSubject(whole)), whole);
}

TEST(FabricStream, OtherSubjectsAreNotKeys) {
  for (const char* s : {"fabric.", "fabric.12", "fabric.12.", "fabric.x.1.0.1", "fabric.12.-1.0.1",
                        "fabric.12.1", "fabric.12.1.2", "fabric.12.1.2.2", "fabric.12.1.0.0",
                        "fabric.12.1.0.1.5", "records.12.1.0.1", "fabric.+12.1.0.1",
                        "fabric.12.1.0.1."}) {
    EXPECT_FALSE(ParseFabricSubject(s).has_value()) << s;
  }
}

TEST(FabricStream, OneShardsRecordSubjectNamesItsShard) {
  EXPECT_EQ(ShardOfRecordSubject("records.shard.0.>"), 0);
  EXPECT_EQ(ShardOfRecordSubject("records.shard.12.jobs"), 12);
  EXPECT_FALSE(ShardOfRecordSubject("records.shard.>").has_value());
  EXPECT_FALSE(ShardOfRecordSubject("records.>").has_value());
  EXPECT_FALSE(ShardOfRecordSubject("records.shard.x.>").has_value());
}

}  // namespace
}  // namespace prism::scaleout
