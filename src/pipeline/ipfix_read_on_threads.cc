#include "pipeline/ipfix_read_on_threads.h"

#include <memory>
#include <thread>
#include <vector>

#include "io/ipfix_file_runs.h"
#include "pipeline/record_duration.h"

namespace prism::pipeline {
namespace {

// A run after the first: its rows go into the room the table keeps for it past the earlier runs'
// (flow::FlowTableTail); its counters, point names and endpoint ids are its own until it is
// joined.
struct LaterRun {
  LaterRun(const io::IpfixFileRuns& plan, size_t run, int64_t max_record_ns,
           flow::FlowTableTail&& rows)
      : tail(std::move(rows)), filter(&tail, max_record_ns, &stats),
        reader(plan, run, &filter, &points, &stats) {}
  Stats stats;
  PointTable points;
  flow::FlowTableTail tail;
  DurationFilter filter;
  io::IpfixRunReader reader;
  Status status = OkStatus();
};

// The later run's records after `table`'s, its counters into `stats`, its names into `points`.
void Join(LaterRun* run, io::IpfixRunReader* first, flow::FlowTable* table, PointTable* points,
          Stats* stats, int threads) {
  first->TakeOverFrom(&run->reader);
  if (stats != nullptr) stats->Merge(run->stats);
  std::vector<PointId> point_of(run->points.size());
  for (size_t p = 0; p < point_of.size(); ++p) {
    point_of[p] = points->Intern(run->points.Name(static_cast<PointId>(p)));
  }
  table->AppendTail(std::move(run->tail), point_of, threads);
}

}  // namespace

StatusOr<std::optional<uint64_t>> ReadIpfixFileOnThreads(const std::string& path, int threads,
                                                         FlowSink* sink, flow::FlowTable* table,
                                                         int64_t max_record_ns, PointTable* points,
                                                         Stats* stats, uint64_t min_run_bytes) {
  PRISM_ASSIGN_OR_RETURN(std::optional<io::IpfixFileRuns> plan,
                         io::PlanIpfixFileRuns(path, threads, min_run_bytes));
  if (!plan) return std::nullopt;
  // Each run's rows are bounded (IpfixFileRuns::MaxRecords), so each later run can write its rows
  // straight into the table past the room of the runs before it, as they are decoded.
  std::vector<size_t> tail_rows;
  for (size_t run = 1; run < plan->starts.size(); ++run) tail_rows.push_back(plan->MaxRecords(run));
  std::vector<flow::FlowTableTail> tails = table->MakeTails(plan->MaxRecords(0), tail_rows);
  std::vector<std::unique_ptr<LaterRun>> later;
  for (size_t run = 1; run < plan->starts.size(); ++run) {
    later.push_back(
        std::make_unique<LaterRun>(*plan, run, max_record_ns, std::move(tails[run - 1])));
  }
  std::vector<std::thread> workers;
  for (auto& run : later) {
    workers.emplace_back([r = run.get()] { r->status = r->reader.Read(); });
  }
  io::IpfixRunReader first(*plan, 0, sink, points, stats);
  Status status = first.Read();
  for (std::thread& w : workers) w.join();
  PRISM_RETURN_IF_ERROR(status);
  for (auto& run : later) PRISM_RETURN_IF_ERROR(run->status);
  for (auto& run : later) {
    Join(run.get(), &first, table, points, stats, threads);
    run.reset();
  }
  PRISM_ASSIGN_OR_RETURN(uint64_t records, first.Finish());
  return records;
}

}  // namespace prism::pipeline
