#include "pipeline/ipfix_read_on_threads.h"

#include <gtest/gtest.h>

#include <array>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/big_endian.h"
#include "io/ipfix_file.h"
#include "io/ipfix_file_runs.h"
#include "pipeline/record_duration.h"
#include "testing/temp_path.h"

namespace prism::pipeline {
namespace {

constexpr int64_t kMaxRecordNs = 3'600'000'000'000;

// Records over many messages, with what the general path and the duration filter must handle:
// an end before the start (ipfix_bad_record) and records lasting two hours (record_bad_duration);
// IPv4 and IPv6 (two templates), point names that first appear late in the file.
std::string WriteFlows(PointTable* points) {
  std::ostringstream out;
  io::IpfixFileWriter writer(&out, points);
  for (int i = 0; i < 30'000; ++i) {
    FlowRecord r;
    const bool v6 = i % 97 == 0;
    std::array<uint8_t, 16> a{}, b{};
    a[0] = 0xfd, a[15] = static_cast<uint8_t>(i % 211), b[0] = 0xfd,
    b[14] = static_cast<uint8_t>(i % 37);
    r.src = v6 ? IpAddr::FromV6(a.data())
               : IpAddr::FromV4(0x0a000000u + static_cast<uint32_t>(i * 7919 % 5000));
    r.dst = v6 ? IpAddr::FromV6(b.data())
               : IpAddr::FromV4(0x0a100000u + static_cast<uint32_t>(i % 3001));
    r.start_ns = 1'700'000'000'000'000'000 + int64_t{i} * 1'000'003;
    r.end_ns = r.start_ns + 5'000 + i % 900;
    if (i % 4999 == 17) r.end_ns = r.start_ns - 1;                // end before start
    if (i % 7001 == 3) r.end_ns = r.start_ns + 2 * kMaxRecordNs;  // implausibly long
    r.bytes = 1000 + static_cast<uint64_t>(i);
    r.qp = static_cast<uint32_t>(i % 13);
    r.sampling_rate = i % 5 == 0 ? 4 : 1;
    r.point =
        i % 3 == 0 ? kNoPoint : points->Intern("leaf" + std::to_string(i * i % (50 + i / 300)));
    writer.OnRecord(r);
  }
  EXPECT_TRUE(writer.Finish().has_value());
  return out.str();
}

std::vector<size_t> MessageOffsets(const std::string& file) {
  std::vector<size_t> offsets;
  for (size_t p = 0; p + 16 <= file.size();
       p += LoadBe16(reinterpret_cast<const uint8_t*>(&file[p + 2]))) {
    offsets.push_back(p);
  }
  return offsets;
}

void Put16(std::string* file, size_t at, uint16_t v) {
  (*file)[at] = static_cast<char>(v >> 8);
  (*file)[at + 1] = static_cast<char>(v);
}

// What a read leaves: the table (with endpoint addresses and point names), counters, stderr.
struct Result {
  std::vector<std::string> rows;
  std::vector<std::string> points;
  std::vector<uint64_t> stats;
  std::string stderr_text;
  std::string outcome;
  bool split = false;
};

Result Read(const std::string& path, int threads) {
  Result out;
  flow::FlowTable table;
  PointTable points;
  Stats stats;
  DurationFilter filter(&table, kMaxRecordNs, &stats);
  ::testing::internal::CaptureStderr();
  StatusOr<std::optional<uint64_t>> n = std::optional<uint64_t>();
  if (threads > 1)
    n = ReadIpfixFileOnThreads(path, threads, &filter, &table, kMaxRecordNs, &points, &stats, 1);
  out.split = n.has_value() && n->has_value();
  if (n.has_value() && !n->has_value()) {
    StatusOr<uint64_t> one = io::ReadIpfixFile(path, &filter, &points, &stats);
    n = one.has_value() ? StatusOr<std::optional<uint64_t>>(*one) : std::unexpected(one.error());
  }
  out.stderr_text = ::testing::internal::GetCapturedStderr();
  out.outcome = n.has_value() ? std::to_string(**n) : n.error().message;
  for (size_t r = 0; r < table.size(); ++r) {
    out.rows.push_back(
        fmt::format("{} {} {}={} {}={} {} {} {} {}", table.start_ns()[r], table.EndNs(r),
                    table.src()[r], table.endpoints().Addr(table.src()[r]).ToString(),
                    table.dst()[r], table.endpoints().Addr(table.dst()[r]).ToString(),
                    table.Bytes(r), table.qp()[r], table.point()[r], table.SamplingRate(r)));
  }
  out.rows.push_back(fmt::format("bounds {} {}", table.min_start_ns(), table.max_end_ns()));
  for (size_t p = 0; p < points.size(); ++p)
    out.points.push_back(points.Name(static_cast<PointId>(p)));
  out.stats.assign(stats.values().begin(), stats.values().end());
  return out;
}

TEST(IpfixReadOnThreads, CorruptedFilesGiveTheOneThreadResult) {
  PointTable written_points;
  const std::string clean = WriteFlows(&written_points);
  const std::vector<size_t> msgs = MessageOffsets(clean);
  ASSERT_GT(msgs.size(), 20u);
  const size_t late = msgs[msgs.size() * 3 / 4], later = msgs[msgs.size() * 4 / 5];
  struct Variant {
    std::string name;
    std::string bytes;
    bool splits;
  };
  std::vector<Variant> variants;
  variants.push_back({"clean", clean, true});
  std::string bad_set = clean;  // a set length below 4 in a late message, and in an early one
  Put16(&bad_set, late + 18, 2);
  Put16(&bad_set, msgs[2] + 18, 2);
  variants.push_back({"bad set", bad_set, true});
  std::string unknown = clean;  // data sets of a template never defined, early and late
  Put16(&unknown, later + 16, 300);
  Put16(&unknown, msgs[1] + 16, 301);
  variants.push_back({"unknown template", unknown, true});
  std::string gap = clean;  // messages lost: the sequence numbers jump (counted at the next one)
  gap.erase(msgs[msgs.size() / 2], msgs[msgs.size() / 2 + 2] - msgs[msgs.size() / 2]);
  gap.erase(msgs[5], msgs[6] - msgs[5]);
  variants.push_back({"sequence gap", gap, true});
  std::string many = bad_set;  // more problems than are described (5)
  for (size_t i = 3; i < msgs.size(); i += 4) Put16(&many, msgs[i] + 16, 302);
  variants.push_back({"many problems", many, true});
  // The first message's template set moved behind its data sets: the plan must find templates
  // in any set of a message, not only the first (the later runs learn them from it).
  std::string templates_last = clean;
  {
    const size_t set_len = LoadBe16(reinterpret_cast<const uint8_t*>(&clean[16 + 2]));
    ASSERT_EQ(LoadBe16(reinterpret_cast<const uint8_t*>(&clean[16])), 2);  // a template set
    const size_t msg_len = msgs[1] - msgs[0];
    ASSERT_GT(msg_len, 16 + set_len);  // and data sets after it
    templates_last.replace(16, msg_len - 16,
                           clean.substr(16 + set_len, msg_len - 16 - set_len) +
                               clean.substr(16, set_len));
  }
  variants.push_back({"templates after data", templates_last, true});
  variants.push_back({"truncated", clean.substr(0, clean.size() - 1000), false});
  std::string bad_header = clean;  // a message header the one-pass reader resynchronizes after
  Put16(&bad_header, late, 9);
  variants.push_back({"bad message header", bad_header, false});

  const std::string path =
      prism::testing::UniqueTempPath("ipfix_on_threads", ".ipfix");
  std::vector<uint64_t> clean_stats;
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    {
      std::ofstream f(path, std::ios::binary);
      f << v.bytes;
    }
    const Result one = Read(path, 1);
    EXPECT_GT(one.rows.size(), 20'000u);
    if (v.name == "clean")
      clean_stats = one.stats;
    else
      EXPECT_NE(one.stats, clean_stats);  // the corruption is seen
    for (int threads : {2, 3}) {
      SCOPED_TRACE(threads);
      const Result many_threads = Read(path, threads);
      EXPECT_EQ(many_threads.split, v.splits);
      EXPECT_EQ(many_threads.outcome, one.outcome);
      EXPECT_EQ(many_threads.rows, one.rows);
      EXPECT_EQ(many_threads.points, one.points);
      EXPECT_EQ(many_threads.stats, one.stats);
      EXPECT_EQ(many_threads.stderr_text, one.stderr_text);
    }
  }
  std::filesystem::remove(path);
}

// The later runs write their rows into room of MaxRecords rows each: a run that decoded more
// would stop the process. Each run's records (before any filter) fit its bound, and the bound is
// not far above them (room past the rows is reserved, never touched, but it is address space).
TEST(IpfixReadOnThreads, EachRunsRecordsFitItsBound) {
  PointTable written_points;
  const std::string path = prism::testing::UniqueTempPath("ipfix_run_bounds", ".ipfix");
  {
    std::ofstream f(path, std::ios::binary);
    f << WriteFlows(&written_points);
  }
  StatusOr<std::optional<io::IpfixFileRuns>> plan = io::PlanIpfixFileRuns(path, 3, 1);
  ASSERT_TRUE(plan.has_value() && plan->has_value());
  const io::IpfixFileRuns& runs = **plan;
  ASSERT_EQ(runs.starts.size(), 3u);
  EXPECT_LT(runs.smallest_record_bytes, SIZE_MAX);
  struct Count : FlowSink {
    void OnRecord(const FlowRecord&) override { ++records; }
    uint64_t records = 0;
  };
  uint64_t total = 0;
  for (size_t run = 0; run < runs.starts.size(); ++run) {
    SCOPED_TRACE(run);
    Count count;
    PointTable points;
    io::IpfixRunReader reader(runs, run, &count, &points, nullptr);
    ASSERT_TRUE(reader.Read().has_value());
    EXPECT_GT(count.records, 5'000u);
    EXPECT_LE(count.records, runs.MaxRecords(run));
    EXPECT_LT(runs.MaxRecords(run), count.records * 3 / 2);
    total += count.records;
  }
  EXPECT_EQ(total, 30'000u - 30'000u / 4999);  // every record but those ending before they start
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace prism::pipeline
