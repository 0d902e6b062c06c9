#include "service/memory_plan.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/flow_record.h"
#include "service/record_segment.h"

namespace prism::service {
namespace {

// Bytes a UDP datagram of a typical exporter takes in the collector's queue (MTU-sized).
constexpr int64_t kDatagramBytes = 1500;

int64_t ReadMemAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

// One integer from a cgroup file; 0 when missing or "max" (no limit).
int64_t ReadCgroupValue(const std::string& path) {
  std::ifstream in(path);
  std::string v;
  if (!(in >> v) || v == "max") return 0;
  try {
    return std::stoll(v);
  } catch (...) {
    return 0;
  }
}

// This process's cgroup v2 directory, from /proc/self/cgroup ("0::/path").
std::string CgroupV2Dir() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  }
  return "/sys/fs/cgroup";
}

}  // namespace

std::string MemoryPlan::Describe() const {
  return fmt::format(
      "memory limit {:.0f} MB: {:.0f} MB for queues and state, {:.0f} MB for the window buffer, "
      "windows of up to {} records analysed; whole windows up to {:.0f} records/s",
      static_cast<double>(limit_bytes) / 1e6, static_cast<double>(reserve_bytes) / 1e6,
      static_cast<double>(buffer_bytes) / 1e6, window_records, whole_window_rate);
}

StatusOr<MemoryPlan> PlanMemory(const MemoryPlanInputs& in) {
  MemoryPlan p;
  p.limit_bytes = in.limit_bytes;
  p.reserve_bytes = static_cast<int64_t>(in.queue_records * sizeof(FlowRecord)) +
                    static_cast<int64_t>(in.udp_collectors * in.udp_queue_datagrams) *
                        kDatagramBytes +
                    kStateReserveBytes;
  const int64_t left = in.limit_bytes - p.reserve_bytes;
  const double w = static_cast<double>(in.window_ns) / 1e9;
  const double held = static_cast<double>(in.window_ns + in.step_ns + in.reorder_ns) / 1e9;
  const double per_rate = static_cast<double>(sizeof(BufferedRecord)) * held +
                          static_cast<double>(kAnalysisBytesPerRecord) * w;
  // The least that works: one step of records buffered (plus the reorder allowance) and analysed.
  const double step = static_cast<double>(in.step_ns) / 1e9;
  const double min_per_record_s = static_cast<double>(sizeof(BufferedRecord)) *
                                      (step + static_cast<double>(in.reorder_ns) / 1e9) +
                                  static_cast<double>(kAnalysisBytesPerRecord) * step;
  if (left <= 0 || per_rate <= 0 || static_cast<double>(left) < min_per_record_s * 1000) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "--memory-limit {:.0f} MB cannot hold the queues and state ({:.0f} MB) and "
                     "the records of one step",
                     static_cast<double>(in.limit_bytes) / 1e6,
                     static_cast<double>(p.reserve_bytes) / 1e6);
  }
  p.whole_window_rate = static_cast<double>(left) / per_rate;
  p.buffer_bytes = static_cast<int64_t>(p.whole_window_rate *
                                        static_cast<double>(sizeof(BufferedRecord)) * held);
  p.window_records = static_cast<uint64_t>((left - p.buffer_bytes) / kAnalysisBytesPerRecord);
  return p;
}

int64_t DefaultMemoryLimit(std::string* why) {
  const int64_t avail = ReadMemAvailable();
  int64_t free_in_cgroup = 0;
  const std::string dir = CgroupV2Dir();
  if (const int64_t max = ReadCgroupValue(dir + "/memory.max"); max > 0) {
    free_in_cgroup = std::max<int64_t>(0, max - ReadCgroupValue(dir + "/memory.current"));
  } else if (const int64_t v1 = ReadCgroupValue("/sys/fs/cgroup/memory/memory.limit_in_bytes");
             v1 > 0 && v1 < (int64_t{1} << 60)) {
    free_in_cgroup = std::max<int64_t>(
        0, v1 - ReadCgroupValue("/sys/fs/cgroup/memory/memory.usage_in_bytes"));
  }
  int64_t base = avail;
  std::string from = "MemAvailable";
  if (free_in_cgroup > 0 && (base == 0 || free_in_cgroup < base)) {
    base = free_in_cgroup;
    from = "the cgroup's memory limit minus its usage";
  }
  if (why != nullptr) {
    *why = fmt::format("half of {} ({:.0f} MB)", from, static_cast<double>(base) / 1e6);
  }
  return base / 2;
}

StatusOr<int64_t> ParseByteSize(const std::string& text) {
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (...) {
    return MakeError(ErrorCode::kInvalidArgument, "expected a size such as 4G or 512M, got '{}'",
                     text);
  }
  std::string unit = text.substr(pos);
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (unit.ends_with("IB")) unit.resize(unit.size() - 2);
  else if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();
  double mul = 1;
  if (unit.empty() || unit == "B") mul = 1;
  else if (unit == "K") mul = 1024.0;
  else if (unit == "M") mul = 1024.0 * 1024;
  else if (unit == "G") mul = 1024.0 * 1024 * 1024;
  else if (unit == "T") mul = 1024.0 * 1024 * 1024 * 1024;
  else {
    return MakeError(ErrorCode::kInvalidArgument, "expected a size such as 4G or 512M, got '{}'",
                     text);
  }
  if (v <= 0) {
    return MakeError(ErrorCode::kInvalidArgument, "expected a positive size, got '{}'", text);
  }
  return static_cast<int64_t>(v * mul);
}

}  // namespace prism::service
