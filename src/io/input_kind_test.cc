#include "io/input_kind.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace prism::io {
namespace {

std::vector<std::byte> Bytes(std::string_view s) {
  std::vector<std::byte> out(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = static_cast<std::byte>(s[i]);
  return out;
}

TEST(GuessInputKind, Csv) {
  EXPECT_EQ(GuessInputKind(Bytes("src,dst,start_ns,end_ns,bytes\n10.0.0.1,")), InputKind::kFlowCsv);
  // Column order free, case and spaces ignored, BOM and leading blank lines skipped.
  EXPECT_EQ(GuessInputKind(Bytes("\xEF\xBB\xBF\n\r\n start_ns , DST,Src ,bytes\r\n")),
            InputKind::kFlowCsv);
  EXPECT_EQ(GuessInputKind(Bytes("ip,host,gpu,leaf\n10.0.0.1,h0,0,leaf0\n")),
            InputKind::kTopologyCsv);
  EXPECT_EQ(GuessInputKind(Bytes("hello world\n")), InputKind::kUnknown);
  EXPECT_EQ(GuessInputKind(Bytes("source,destination\n")), InputKind::kUnknown);
  EXPECT_EQ(GuessInputKind(Bytes("\n\n")), InputKind::kEmpty);
  EXPECT_EQ(GuessInputKind({}), InputKind::kEmpty);
}

TEST(GuessInputKind, Binary) {
  EXPECT_EQ(GuessInputKind(Bytes(std::string_view("\x00\x0a\x00\x30", 4))), InputKind::kIpfix);
  EXPECT_EQ(GuessInputKind(Bytes(std::string_view("\x00\x09\x00\x01", 4))), InputKind::kNetflowV9);
  EXPECT_EQ(GuessInputKind(Bytes(std::string_view("\xd4\xc3\xb2\xa1\x02\x00", 6))), InputKind::kPcap);
  EXPECT_EQ(GuessInputKind(Bytes(std::string_view("\x0a\x0d\x0d\x0a", 4))), InputKind::kPcapng);
  EXPECT_EQ(GuessInputKind(Bytes(std::string_view("\x7f" "ELF\x02\x01", 6))), InputKind::kUnknown);
  // Every pcap magic: µs and ns resolution, both byte orders.
  for (std::string_view m : {std::string_view("\xa1\xb2\xc3\xd4", 4), std::string_view("\xd4\xc3\xb2\xa1", 4),
                             std::string_view("\xa1\xb2\x3c\x4d", 4), std::string_view("\x4d\x3c\xb2\xa1", 4)}) {
    EXPECT_EQ(GuessInputKind(Bytes(m)), InputKind::kPcap);
  }
  // pcapng: section header block type, then (when present) the byte-order magic at offset 8.
  EXPECT_EQ(GuessInputKind(Bytes(std::string_view("\x0a\x0d\x0d\x0a\x1c\0\0\0\x4d\x3c\x2b\x1a", 12))),
            InputKind::kPcapng);
  EXPECT_EQ(GuessInputKind(Bytes(std::string_view("\x0a\x0d\x0d\x0a\0\0\0\x1c\x1a\x2b\x3c\x4d", 12))),
            InputKind::kPcapng);
  EXPECT_EQ(GuessInputKind(Bytes(std::string_view("\x0a\x0d\x0d\x0a\x1c\0\0\0\x00\x00\x00\x00", 12))),
            InputKind::kUnknown);
}

TEST(DescribeHead, TextAndBinary) {
  EXPECT_EQ(DescribeHead({}), "an empty file");
  EXPECT_NE(DescribeHead(Bytes("foo,bar\n1,2\n")).find("foo,bar"), std::string::npos);
  EXPECT_EQ(DescribeHead(Bytes(std::string_view("\x7f" "ELF\x02", 5))),
            "binary data starting 7f 45 4c 46 02");
}

}  // namespace
}  // namespace prism::io
