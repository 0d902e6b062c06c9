#include "pipeline/analyze_window.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "core/big_blocks.h"

namespace prism::pipeline {
namespace {

constexpr size_t kRecords = size_t{3} << 20;  // record classes of 6 MiB: a big block

// Once transfers are built, the transfer-only columns (4 bytes per record each) are freed and one
// block of their pages stays kept for diagnosis's record classes: the classes then take it, not
// fresh pages, and nothing more stays resident beside classification and the timelines.
TEST(AnalyzeWindow, TheBlockKeptForDiagnosisIsWhatItsRecordClassesTake) {
  ReleaseBigBlocks();
  {
    BigVector<uint32_t> qp(kRecords, 1), sampling_rate(kRecords, 1);
  }
  ASSERT_GE(KeptBigBlockBytes(), 2 * sizeof(uint32_t) * kRecords);
  KeepBlocksForDiagnosis(kRecords);
  EXPECT_EQ(KeptBigBlockBytes(), sizeof(uint16_t) * kRecords);
  {
    BigVector<uint16_t> classes(kRecords);
    EXPECT_EQ(KeptBigBlockBytes(), 0u);  // taken whole: no fresh mapping
  }
  ReleaseBigBlocks();
}

// Before diagnosis only the classes' block stays kept, whatever else the analysis left kept.
TEST(AnalyzeWindow, BeforeDiagnosisOnlyTheRecordClassesBlockStaysKept) {
  ReleaseBigBlocks();
  {
    BigVector<uint64_t> large(kRecords);
    BigVector<uint32_t> medium(kRecords);
  }
  KeepBlocksForDiagnosis(kRecords);
  EXPECT_EQ(KeptBigBlockBytes(), sizeof(uint16_t) * kRecords);
  EXPECT_EQ(KeptBigBlocks(), 1u);
  KeepBlocksForDiagnosis(0);  // a window too small for big blocks keeps none
  EXPECT_EQ(KeptBigBlockBytes(), 0u);
  ReleaseBigBlocks();
}

}  // namespace
}  // namespace prism::pipeline
