#include "service/store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "service/api_json.h"

namespace prism::service {

using nlohmann::json;

namespace {

constexpr const char* kSchema = R"sql(
-- number: the job's number in stores written while ids were "job<n>"; NULL since ids are derived.
CREATE TABLE IF NOT EXISTS jobs(
  id TEXT PRIMARY KEY, number INTEGER, gpus TEXT, hosts TEXT, layout TEXT,
  first_seen_ns INTEGER, last_seen_ns INTEGER, active INTEGER, windows INTEGER);
CREATE TABLE IF NOT EXISTS steps(
  job TEXT, start_ns INTEGER, end_ns INTEGER, step_s REAL, PRIMARY KEY(job, start_ns));
CREATE TABLE IF NOT EXISTS findings(
  id INTEGER PRIMARY KEY, kind TEXT, severity TEXT, job TEXT, start_ns INTEGER, end_ns INTEGER,
  doc TEXT, first_window_end_ns INTEGER);
CREATE TABLE IF NOT EXISTS baselines(key TEXT PRIMARY KEY, median REAL, sigma REAL, samples INTEGER);
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
)sql";

// A prepared statement that finalizes itself.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  bool ok() const { return s_ != nullptr; }
  sqlite3_stmt* get() { return s_; }
  void Text(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void Int(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void Real(int i, double v) { sqlite3_bind_double(s_, i, v); }
  int Step() { return sqlite3_step(s_); }
  void Reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  std::string ColText(int i) {
    const unsigned char* t = sqlite3_column_text(s_, i);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  }
  int64_t ColInt(int i) { return sqlite3_column_int64(s_, i); }
  double ColReal(int i) { return sqlite3_column_double(s_, i); }

 private:
  sqlite3_stmt* s_ = nullptr;
};

}  // namespace

StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  std::unique_ptr<Store> s(new Store());
  s->path_ = path;
  // One service per database: two would interleave their windows, jobs and findings. The lock is
  // a file of its own (not the database: closing any other descriptor of the database file would
  // drop SQLite's POSIX locks), held until the store closes; the kernel frees it if we die.
  const std::string lock_path = path + ".lock";
  s->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (s->lock_fd_ < 0) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: cannot create the lock file {}: {}", path,
                     lock_path, std::strerror(errno));
  }
  if (::flock(s->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    const ssize_t n = ::pread(s->lock_fd_, pid, sizeof pid - 1, 0);
    std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : std::string("?");
    while (!holder.empty() && std::isspace(static_cast<unsigned char>(holder.back()))) {
      holder.pop_back();
    }
    return MakeError(ErrorCode::kInvalidArgument,
                     "{}: in use by another llmprism serve (pid {}, lock {}); one database "
                     "serves one process: give this one its own --db",
                     path, holder, lock_path);
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(s->lock_fd_, 0) != 0 ||
      ::pwrite(s->lock_fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // The lock holds without the pid; only the message above would miss it.
  }
  // The database holds the cluster's jobs and findings: created readable by its owner only
  // (SQLite gives its -wal and -shm files the database's mode). An existing file keeps its mode.
  if (const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600); fd >= 0) {
    ::close(fd);
  }
  if (sqlite3_open_v2(path.c_str(), &s->db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = s->db_ ? sqlite3_errmsg(s->db_) : "out of memory";
    return MakeError(ErrorCode::kInvalidArgument, "{}: cannot open the database: {}", path, msg);
  }
  // Another process (a backup, a sqlite3 shell) holding a write lock: a window's write waits up
  // to 2 s, then fails and is retried later (service.cc).
  sqlite3_busy_timeout(s->db_, 2000);
  auto setup = [&]() -> Status {
    PRISM_RETURN_IF_ERROR(s->Exec("PRAGMA journal_mode=WAL"));
    PRISM_RETURN_IF_ERROR(s->Exec("PRAGMA synchronous=NORMAL"));
    PRISM_RETURN_IF_ERROR(s->Exec(kSchema));
    PRISM_RETURN_IF_ERROR(s->AddFindingOrder());
    return s->QuickCheck();
  };
  if (auto st = setup(); !st) {
    const int code = sqlite3_errcode(s->db_) & 0xff;
    const bool check_failed = st.error().code == ErrorCode::kDataLoss;
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT || check_failed) {
      return MakeError(ErrorCode::kDataLoss,
                       "{}: not a usable llmprism database ({}); it is left as it is: move it "
                       "away to start afresh, or restore a copy",
                       path, check_failed ? st.error().message : sqlite3_errmsg(s->db_));
    }
    return MakeError(ErrorCode::kInternal, "{}: cannot use the database: {}", path,
                     st.error().message);
  }
  return s;
}

Store::~Store() {
  if (db_ != nullptr) sqlite3_close(db_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

// Every page of the file read and its structure checked (b-trees, free list; not index contents
// against their tables: that is integrity_check, much slower): a corrupt page anywhere is found
// at start, not by a read months later.
Status Store::QuickCheck() {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, "PRAGMA quick_check(5)", -1, &st, nullptr) != SQLITE_OK) {
    return MakeError(ErrorCode::kDataLoss, "integrity check failed: {}", sqlite3_errmsg(db_));
  }
  std::string problems;
  int rc = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    const std::string row = text != nullptr ? text : "";
    if (row != "ok") problems += (problems.empty() ? "" : "; ") + row;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    return MakeError(ErrorCode::kDataLoss, "integrity check failed: {}", sqlite3_errmsg(db_));
  }
  if (!problems.empty()) {
    return MakeError(ErrorCode::kDataLoss, "integrity check failed: {}", problems);
  }
  return OkStatus();
}

// Findings are ordered by their first window, then id (ids are hashes, no longer in the order
// findings were made). A store written before has no such column: it is added, and its rows keep
// NULL there, which sorts first: they are older than any finding written since, and among
// themselves their ids (numbered from 1) are in the order they were made.
Status Store::AddFindingOrder() {
  bool has_column = false;
  {
    Stmt q(db_, "SELECT 1 FROM pragma_table_info('findings') WHERE name = 'first_window_end_ns'");
    if (!q.ok()) return MakeError(ErrorCode::kInternal, "{}", sqlite3_errmsg(db_));
    has_column = q.Step() == SQLITE_ROW;
  }
  if (!has_column) {
    PRISM_RETURN_IF_ERROR(Exec("ALTER TABLE findings ADD COLUMN first_window_end_ns INTEGER"));
  }
  return Exec("CREATE INDEX IF NOT EXISTS findings_by_first_window "
              "ON findings(first_window_end_ns, id)");
}

Status Store::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return MakeError(ErrorCode::kInternal, "{}: {}", path_, msg);
  }
  return OkStatus();
}

StatusOr<LoadedState> Store::Load() {
  LoadedState out;
  // A read that ends in anything but SQLITE_DONE (a corrupt page, an I/O error) fails the load:
  // starting with part of the state would let the next writes overwrite the rest.
  int rc = SQLITE_DONE;
  auto failed = [&](const char* what) {
    const int code = rc & 0xff;
    return MakeError(code == SQLITE_CORRUPT || code == SQLITE_NOTADB ? ErrorCode::kDataLoss
                                                                      : ErrorCode::kInternal,
                     "{}: cannot read the {} back: {}; the database is left as it is", path_,
                     what, sqlite3_errmsg(db_));
  };
  {
    Stmt q(db_, "SELECT id, number, gpus, hosts, layout, first_seen_ns, last_seen_ns, active, "
                "windows FROM jobs ORDER BY first_seen_ns, id");
    if (!q.ok()) return MakeError(ErrorCode::kInternal, "{}: {}", path_, sqlite3_errmsg(db_));
    while ((rc = q.Step()) == SQLITE_ROW) {
      JobState j;
      j.id = q.ColText(0);
      try {
        json gpus = json::parse(q.ColText(2));
        for (const json& g : gpus) {
          if (auto ip = IpAddr::Parse(g.get<std::string>())) j.gpus.push_back(*ip);
        }
        j.hosts = json::parse(q.ColText(3)).get<std::vector<std::string>>();
        j.layout = LayoutFromJson(json::parse(q.ColText(4)));
      } catch (const json::exception&) {
        ++out.bad_rows;
        continue;
      }
      j.first_seen_ns = q.ColInt(5);
      j.last_seen_ns = q.ColInt(6);
      j.active = q.ColInt(7) != 0;
      j.windows = static_cast<uint64_t>(q.ColInt(8));
      out.jobs.push_back(std::move(j));
    }
    if (rc != SQLITE_DONE) return failed("jobs");
  }
  {
    Stmt q(db_, "SELECT start_ns, end_ns, step_s FROM (SELECT * FROM steps WHERE job = ?1 "
                "ORDER BY start_ns DESC LIMIT ?2) ORDER BY start_ns");
    for (JobState& j : out.jobs) {
      q.Text(1, j.id);
      q.Int(2, static_cast<int64_t>(kMaxStepsInMemory));
      while ((rc = q.Step()) == SQLITE_ROW) {
        j.steps.push_back({q.ColInt(0), q.ColInt(1), q.ColReal(2)});
      }
      if (rc != SQLITE_DONE) return failed("steps");
      q.Reset();
    }
  }
  {
    Stmt q(db_, "SELECT doc FROM (SELECT first_window_end_ns AS w, id, doc FROM findings "
                "ORDER BY w DESC, id DESC LIMIT ?1) ORDER BY w, id");
    q.Int(1, static_cast<int64_t>(kMaxFindings));
    while ((rc = q.Step()) == SQLITE_ROW) {
      std::optional<StoredFinding> f;
      try {
        f = FindingFromJson(json::parse(q.ColText(0)));
      } catch (const json::exception&) {
      }
      if (f) {
        out.findings.push_back(std::move(*f));
      } else {
        ++out.bad_rows;
      }
    }
    if (rc != SQLITE_DONE) return failed("findings");
  }
  {
    Stmt q(db_, "SELECT key, median, sigma, samples FROM baselines");
    while ((rc = q.Step()) == SQLITE_ROW) {
      diagnosis::Baseline b;
      b.median = q.ColReal(1);
      b.sigma = q.ColReal(2);
      b.samples = static_cast<int>(q.ColInt(3));
      out.baselines[q.ColText(0)] = b;
    }
    if (rc != SQLITE_DONE) return failed("baselines");
  }
  PRISM_ASSIGN_OR_RETURN(out.stream_position, LoadStreamPosition());
  return out;
}

StatusOr<std::optional<StreamPosition>> Store::LoadStreamPosition() {
  Stmt q(db_, "SELECT value FROM meta WHERE key = 'stream_position'");
  if (q.Step() != SQLITE_ROW) return std::optional<StreamPosition>();
  const json j = json::parse(q.ColText(0), nullptr, false);
  if (!j.is_object() || !j.contains("resume_sequence") || !j.contains("committed_end_ns") ||
      !j["resume_sequence"].is_number_unsigned() || !j["committed_end_ns"].is_number_integer()) {
    // The position cannot be guessed: reading the stream again from its start would count
    // every record twice. Refuse, naming the row.
    return MakeError(ErrorCode::kDataLoss,
                     "{}: meta row 'stream_position' is not a stream position: {}", path_,
                     q.ColText(0));
  }
  StreamPosition p;
  p.stream = j.value("stream", "");
  p.subject = j.value("subject", "");
  p.resume_sequence = j["resume_sequence"].get<uint64_t>();
  p.committed_end_ns = j["committed_end_ns"].get<int64_t>();
  return std::optional<StreamPosition>(p);
}

Status Store::Write(const WindowWrite& w) {
  PRISM_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  auto fail = [&](const char* what) {
    std::string msg = sqlite3_errmsg(db_);
    // Best effort: the statement's error is the one to report; a ROLLBACK that fails too finds
    // the transaction already rolled back by SQLite, and nothing more can be undone.
    (void)Exec("ROLLBACK");
    return MakeError(ErrorCode::kInternal, "{}: {}: {}", path_, what, msg);
  };
  {
    Stmt q(db_, "INSERT OR REPLACE INTO jobs(id, gpus, hosts, layout, first_seen_ns, "
                "last_seen_ns, active, windows) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    for (const JobState* j : w.jobs) {
      json gpus = json::array();
      for (const IpAddr& ip : j->gpus) gpus.push_back(ip.ToString());
      q.Text(1, j->id);
      q.Text(2, gpus.dump());
      q.Text(3, json(j->hosts).dump());
      q.Text(4, LayoutToJson(j->layout).dump());
      q.Int(5, j->first_seen_ns);
      q.Int(6, j->last_seen_ns);
      q.Int(7, j->active ? 1 : 0);
      q.Int(8, static_cast<int64_t>(j->windows));
      if (q.Step() != SQLITE_DONE) return fail("jobs");
      q.Reset();
    }
  }
  {
    Stmt q(db_, "INSERT OR REPLACE INTO steps(job, start_ns, end_ns, step_s) VALUES(?1,?2,?3,?4)");
    for (const auto& [job, p] : w.steps) {
      q.Text(1, job);
      q.Int(2, p.start_ns);
      q.Int(3, p.end_ns);
      q.Real(4, p.step_s);
      if (q.Step() != SQLITE_DONE) return fail("steps");
      q.Reset();
    }
  }
  {
    Stmt q(db_, "INSERT OR REPLACE INTO findings(id, kind, severity, job, start_ns, end_ns, doc, "
                "first_window_end_ns) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)");
    for (const StoredFinding* f : w.findings) {
      q.Int(1, f->id);
      q.Text(2, diagnosis::FindingKindName(f->finding.kind));
      q.Text(3, diagnosis::SeverityName(f->finding.severity));
      q.Text(4, f->finding.job);
      q.Int(5, f->finding.start_ns);
      q.Int(6, f->finding.end_ns);
      q.Text(7, FindingToJson(*f).dump());
      q.Int(8, f->first_window_end_ns);
      if (q.Step() != SQLITE_DONE) return fail("findings");
      q.Reset();
    }
  }
  if (w.baselines != nullptr) {
    Stmt q(db_, "INSERT OR REPLACE INTO baselines(key, median, sigma, samples) VALUES(?1,?2,?3,?4)");
    for (const auto& [key, b] : *w.baselines) {
      q.Text(1, key);
      q.Real(2, b.median);
      q.Real(3, b.sigma);
      q.Int(4, b.samples);
      if (q.Step() != SQLITE_DONE) return fail("baselines");
      q.Reset();
    }
  }
  if (const StreamPosition* p = w.stream_position) {
    Stmt q(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES('stream_position', ?1)");
    q.Text(1, json{{"stream", p->stream},
                   {"subject", p->subject},
                   {"resume_sequence", p->resume_sequence},
                   {"committed_end_ns", p->committed_end_ns}}.dump());
    if (q.Step() != SQLITE_DONE) return fail("meta");
  }
  if (auto st = Exec("COMMIT"); !st) {
    // Disk full, I/O error: nothing of this window is in the database; the caller keeps it.
    // The COMMIT error is the one to report; a failed ROLLBACK leaves SQLite to roll back.
    if (sqlite3_get_autocommit(db_) == 0) (void)Exec("ROLLBACK");
    return st;
  }
  return OkStatus();
}

}  // namespace prism::service
