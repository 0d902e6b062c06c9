#include "counters/sflow_counters.h"

#include <fmt/format.h>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "ingest/pcap/pcap_reader.h"

namespace prism::counters {
namespace {

// The flows of the capture's flow samples are not needed in counters mode.
struct DiscardSink : FlowSink {
  void OnRecord(const FlowRecord&) override {}
};

}  // namespace

std::string SflowPortName(uint32_t if_index) { return fmt::format("{}", if_index); }

void SflowCountersBuilder::Add(const ingest::SflowInterfacePoll& poll) {
  auto it = agent_names_.find(poll.agent);
  if (it == agent_names_.end()) it = agent_names_.emplace(poll.agent, poll.agent.ToString()).first;
  // Floor division: captures before 1970 do not exist, but a negative time must not round up.
  const int64_t ts_ms = poll.ts_ns >= 0 ? poll.ts_ns / 1'000'000 : (poll.ts_ns - 999'999) / 1'000'000;
  builder_.Add(it->second, SflowPortName(poll.counters.if_index), ts_ms, poll.counters.in_octets,
               poll.counters.out_octets);
  ++polls_;
}

StatusOr<CountersData> ReadSflowCounters(const std::string& path, Stats* stats) {
  Stats local;
  Stats* st = stats != nullptr ? stats : &local;
  SflowCountersBuilder builder(st);
  ingest::PcapReadOptions options;
  options.sflow_counters = [&](const ingest::SflowInterfacePoll& p) { builder.Add(p); };
  DiscardSink discard;
  PointTable points;
  const uint64_t datagrams_before = st->Get(Stat::sflow_datagrams);
  const uint64_t samples_before = st->Get(Stat::sflow_counter_samples);
  auto read = ingest::ReadPcapFile(path, options, &discard, &points, st);
  if (!read) return std::unexpected(read.error());
  if (builder.polls() == 0) {
    return MakeError(ErrorCode::kDataLoss,
                     "{}: no sFlow generic interface counters (counter format 1) to read port "
                     "counters from: {} sFlow datagrams, {} counter samples",
                     path, st->Get(Stat::sflow_datagrams) - datagrams_before,
                     st->Get(Stat::sflow_counter_samples) - samples_before);
  }
  return builder.Finish();
}

}  // namespace prism::counters
