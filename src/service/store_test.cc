#include "service/store.h"

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "service/api_json.h"
#include "testing/temp_path.h"

namespace prism::service {
namespace {

TEST(Store, WritesAndReadsBackAcrossReopen) {
  const std::string path =
      prism::testing::UniqueTempPath("prism_store_test", ".sqlite");
  std::filesystem::remove(path);
  JobState job;
  job.id = "job3";
  job.gpus = {*IpAddr::Parse("10.0.0.1"), *IpAddr::Parse("10.0.0.2")};
  job.hosts = {"h1"};
  job.layout.dp = 2;
  job.layout.pp = 1;
  job.layout.tp = 1;
  job.layout.consistent = true;
  job.layout.stages = {job.gpus};
  job.first_seen_ns = 10;
  job.last_seen_ns = 20;
  StoredFinding f;
  f.id = 7;
  f.finding.kind = diagnosis::FindingKind::kStragglerGpu;
  f.finding.severity = diagnosis::Severity::kCritical;
  f.finding.job = "job3";
  f.finding.gpus = {job.gpus[1]};
  f.finding.start_ns = 100;
  f.finding.end_ns = 200;
  f.finding.summary = "slow";
  f.windows = 3;
  diagnosis::BaselineStore baselines{{"10.0.0.1", {1.5, 0.1, 30}}};
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store) << store.error().message;
    Store::WindowWrite w;
    w.jobs = {&job};
    w.steps = {{"job3", {100, 200, 0.1}}, {"job3", {200, 300, 0.1}}};
    w.findings = {&f};
    w.baselines = &baselines;
    ASSERT_TRUE((*store)->Write(w));
  }
  auto store = Store::Open(path);
  ASSERT_TRUE(store);
  auto loaded = (*store)->Load();
  ASSERT_TRUE(loaded);
  ASSERT_EQ(loaded->jobs.size(), 1u);
  EXPECT_EQ(loaded->jobs[0].id, "job3");
  EXPECT_EQ(loaded->jobs[0].gpus, job.gpus);
  EXPECT_EQ(loaded->jobs[0].layout.stages, job.layout.stages);
  EXPECT_EQ(loaded->jobs[0].steps.size(), 2u);
  ASSERT_EQ(loaded->findings.size(), 1u);
  EXPECT_EQ(loaded->findings[0].id, 7);
  EXPECT_EQ(loaded->findings[0].finding.severity, diagnosis::Severity::kCritical);
  EXPECT_EQ(loaded->findings[0].finding.gpus, f.finding.gpus);
  EXPECT_EQ(loaded->findings[0].windows, 3);
  EXPECT_DOUBLE_EQ(loaded->baselines.at("10.0.0.1").median, 1.5);
  store->reset();
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
}

// A corrupt page deep in the file (not the header SQLite reads at open): the integrity check at
// start refuses the database and leaves it as it is; a fresh database is created owner-only.
TEST(Store, CorruptPageRefusedAtStartAndFileUntouched) {
  const std::string path = prism::testing::UniqueTempPath("prism_store_corrupt", ".sqlite");
  std::filesystem::remove(path);
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store) << store.error().message;
    EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    JobState job;
    job.id = "job1";
    job.gpus = {*IpAddr::Parse("10.0.0.1"), *IpAddr::Parse("10.0.0.2")};
    Store::WindowWrite w;
    w.jobs = {&job};
    for (int64_t i = 0; i < 5000; ++i) w.steps.push_back({"job1", {i * 100, i * 100 + 90, 0.1}});
    ASSERT_TRUE((*store)->Write(w));
  }
  ASSERT_GT(std::filesystem::file_size(path), 8u * 4096);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(5 * 4096);  // page 6: a b-tree page of the steps
    const std::string garbage(4096, '\xab');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  auto read_all = [&] {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string before = read_all();
  auto store = Store::Open(path);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::kDataLoss);
  EXPECT_NE(store.error().message.find("integrity check failed"), std::string::npos)
      << store.error().message;
  EXPECT_NE(store.error().message.find("left as it is"), std::string::npos);
  EXPECT_EQ(read_all(), before);
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".lock");
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
}

// An analyser's stream position comes back as written, and a row that is not one stops the
// load (reading the stream again from its start would count every record twice).
TEST(Store, StreamPositionRoundTripAndRefusal) {
  const std::string path = prism::testing::UniqueTempPath("prism_store_stream", ".sqlite");
  std::filesystem::remove(path);
  StreamPosition p;
  p.stream = "LLMPRISM_RECORDS";
  p.subject = "records.>";
  p.resume_sequence = 42;
  p.committed_end_ns = 1'700'000'025'000'000'000;
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store) << store.error().message;
    auto fresh = (*store)->Load();
    ASSERT_TRUE(fresh);
    EXPECT_FALSE(fresh->stream_position.has_value());
    Store::WindowWrite w;
    w.stream_position = &p;
    ASSERT_TRUE((*store)->Write(w));
  }
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store);
    auto loaded = (*store)->Load();
    ASSERT_TRUE(loaded) << loaded.error().message;
    ASSERT_TRUE(loaded->stream_position.has_value());
    EXPECT_EQ(loaded->stream_position->stream, p.stream);
    EXPECT_EQ(loaded->stream_position->subject, p.subject);
    EXPECT_EQ(loaded->stream_position->resume_sequence, 42u);
    EXPECT_EQ(loaded->stream_position->committed_end_ns, p.committed_end_ns);
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "UPDATE meta SET value = '{\"resume_sequence\": -1}' "
                         "WHERE key = 'stream_position'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store);
    auto loaded = (*store)->Load();
    ASSERT_FALSE(loaded);
    EXPECT_EQ(loaded.error().code, ErrorCode::kDataLoss);
    EXPECT_NE(loaded.error().message.find("stream_position"), std::string::npos);
  }
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) std::filesystem::remove(path + suffix);
}

// A store written while ids were numbers (jobs "job<n>" ordered by a number column, findings
// numbered from 1, no first-window column) loads as it was; findings written since sort after its
// rows, by first window, whatever their (hashed) ids.
TEST(Store, AStoreOfNumberedIdsLoadsAndNewFindingsSortByFirstWindow) {
  const std::string path = prism::testing::UniqueTempPath("prism_store_numbered", ".sqlite");
  std::filesystem::remove(path);
  StoredFinding old;
  old.id = 2;
  old.finding.kind = diagnosis::FindingKind::kSlowStep;
  old.finding.job = "job0";
  old.first_window_end_ns = old.last_window_end_ns = 500;
  old.windows = 1;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string old_schema =
      "CREATE TABLE jobs(id TEXT PRIMARY KEY, number INTEGER, gpus TEXT, hosts TEXT, layout TEXT, "
      "first_seen_ns INTEGER, last_seen_ns INTEGER, active INTEGER, windows INTEGER);"
      "CREATE TABLE findings(id INTEGER PRIMARY KEY, kind TEXT, severity TEXT, job TEXT, "
      "start_ns INTEGER, end_ns INTEGER, doc TEXT);"
      "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
      "INSERT INTO jobs VALUES('job0', 0, '[\"10.0.0.1\"]', '[\"h1\"]', '{}', 10, 500, 1, 3);"
      "INSERT INTO meta VALUES('next_job_number', '1');"
      "INSERT INTO findings VALUES(2, 'slow_step', 'warning', 'job0', 0, 0, '" +
      FindingToJson(old).dump() + "');";
  ASSERT_EQ(sqlite3_exec(db, old_schema.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  StoredFinding later = old, earlier = old;  // ids in the opposite order of their first windows
  later.id = int64_t{5} << 32;
  later.first_window_end_ns = 700;
  earlier.id = later.id + 1;
  earlier.first_window_end_ns = 600;
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store) << store.error().message;
    auto loaded = (*store)->Load();
    ASSERT_TRUE(loaded) << loaded.error().message;
    ASSERT_EQ(loaded->jobs.size(), 1u);
    EXPECT_EQ(loaded->jobs[0].id, "job0");
    EXPECT_EQ(loaded->jobs[0].windows, 3u);
    ASSERT_EQ(loaded->findings.size(), 1u);
    EXPECT_EQ(loaded->findings[0].id, 2);
    Store::WindowWrite w;
    w.findings = {&later, &earlier};
    ASSERT_TRUE((*store)->Write(w));
  }
  auto store = Store::Open(path);
  ASSERT_TRUE(store) << store.error().message;
  auto loaded = (*store)->Load();
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_EQ(loaded->findings.size(), 3u);
  EXPECT_EQ(loaded->findings[0].id, 2);
  EXPECT_EQ(loaded->findings[1].id, earlier.id);
  EXPECT_EQ(loaded->findings[2].id, later.id);
  store->reset();
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) std::filesystem::remove(path + suffix);
}

}  // namespace
}  // namespace prism::service
