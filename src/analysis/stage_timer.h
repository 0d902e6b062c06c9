// File: analysis/stage_timer.h
// CPU time, wall time and peak RSS of the named stages of an analysis, for `analyze --timings`
// and the end-to-end harness (bench/e2e.py, docs/performance.md). CPU time is the whole
// process's (every thread), so it stays meaningful on a loaded machine where wall time is not.
#pragma once

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace prism::analysis {

struct StageTime {
  std::string name;
  uint64_t items = 0;  // what the stage went through (records, transfers), for the rate
  double cpu_s = 0, wall_s = 0;
  int64_t peak_rss_bytes = 0;  // of the process, at the end of the stage
  int64_t rss_bytes = 0;       // resident at the end of the stage (what the stage left behind)
};

// Each Lap(name, items) closes the stage that began at the previous Lap (or construction) and
// appends it to `out`. A null `out` turns the timer off (two branches per stage).
class StageTimer {
 public:
  explicit StageTimer(std::vector<StageTime>* out) : out_(out) {
    if (out_ != nullptr) Now(&cpu_, &wall_);
  }
  void Lap(const char* name, uint64_t items) {
    if (out_ == nullptr) return;
    double cpu, wall;
    Now(&cpu, &wall);
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    out_->push_back({name, items, cpu - cpu_, wall - wall_, int64_t{ru.ru_maxrss} * 1024, ResidentBytes()});
    cpu_ = cpu;
    wall_ = wall;
  }

 private:
  static void Now(double* cpu_s, double* wall_s) {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    *cpu_s = double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
    *wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  static int64_t ResidentBytes() {
    long pages_total = 0, pages_resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
      std::fclose(f);
    }
    return int64_t{pages_resident} * sysconf(_SC_PAGESIZE);
  }

  std::vector<StageTime>* out_;
  double cpu_ = 0, wall_ = 0;
};

}  // namespace prism::analysis
