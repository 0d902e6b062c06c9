#include "service/fabric_stage_reader.h"

#include <time.h>

#include <algorithm>

#include <fmt/format.h>

#include "diagnosis/rules/fabric_contribution_codec.h"
#include "diagnosis/rules/fabric_evaluation.h"
#include "scaleout/fabric_stream.h"

namespace prism::service {
namespace {

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

StatusOr<std::unique_ptr<FabricStageReader>> FabricStageReader::Open(
    const FabricStageReaderOptions& options, const std::optional<StreamPosition>& resumed) {
  uint64_t first = 1;
  int64_t judged_up_to = INT64_MIN;
  if (resumed) {
    if (resumed->stream != scaleout::kFabricStream) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "the database holds the position of stream {}, not of {}: use another "
                       "--db for the fabric stage", resumed->stream, scaleout::kFabricStream);
    }
    first = std::max<uint64_t>(1, resumed->resume_sequence);
    judged_up_to = resumed->committed_end_ns;
  }
  auto r = std::unique_ptr<FabricStageReader>(
      new FabricStageReader(options, first, judged_up_to, resumed.has_value()));
  PRISM_ASSIGN_OR_RETURN(r->js_, scaleout::JetStream::Connect(options.url, std::chrono::seconds(5)));
  PRISM_RETURN_IF_ERROR(
      r->js_->EnsureStream(scaleout::FabricStreamSpec(options.replicas), std::chrono::seconds(30)));
  PRISM_RETURN_IF_ERROR(r->Reconnect());
  return r;
}

FabricStageReader::FabricStageReader(const FabricStageReaderOptions& options,
                                     uint64_t next_sequence, int64_t judged_up_to_ns,
                                     bool resumed)
    : options_(options),
      windows_(options.windows, judged_up_to_ns),
      next_sequence_(next_sequence),
      resumed_(resumed) {}

std::string FabricStageReader::name() const {
  return fmt::format("stream:{}/{}", scaleout::kFabricStream, scaleout::kFabricSubjects);
}

Status FabricStageReader::Reconnect() {
  consumer_.reset();
  PRISM_ASSIGN_OR_RETURN(consumer_, js_->ReadFrom(scaleout::kFabricStream,
                                                  scaleout::kFabricSubjects, next_sequence_));
  return OkStatus();
}

FabricVerdict FabricStageReader::Judge(FabricWindows::Ready ready) {
  const double cpu0 = ThreadCpuSeconds();
  const diagnosis::FabricContribution merged = diagnosis::MergeFabricContributions(ready.parts);
  const diagnosis::NetworkFindings found = diagnosis::EvaluateFabric(merged, options_.diagnosis);
  FabricVerdict v;
  v.end_ns = ready.window_end_ns;
  v.start_ns = ready.window_end_ns - options_.window_ns;
  v.records = merged.records();
  v.records_by_shard.assign(size_t(std::max(options_.windows.shards, 0)), 0);
  for (size_t i = 0; i < ready.parts.size(); ++i) {
    if (size_t(ready.shards[i]) < v.records_by_shard.size())
      v.records_by_shard[size_t(ready.shards[i])] = ready.parts[i].records();
  }
  v.findings = FabricReportFindings(merged, found);
  v.missing_shards = std::move(ready.missing);
  v.shards = options_.windows.shards;
  v.judge_seconds = ThreadCpuSeconds() - cpu0;
  counters_.judge_cpu_seconds += v.judge_seconds;
  ++counters_.windows_judged;
  if (!v.missing_shards.empty()) {
    ++counters_.windows_incomplete;
    fmt::print(stderr,
               "llmprism serve: fabric: window ending {:.0f} s judged WITHOUT shard(s) {} of {} "
               "({}): counted as incomplete, a telemetry_loss finding says so\n",
               static_cast<double>(v.end_ns) / 1e9, fmt::join(v.missing_shards, ", "), v.shards,
               ready.waited_out ? "nothing came within the wait"
                                : "they sent later windows only");
  }
  return v;
}

Status FabricStageReader::Poll(std::chrono::milliseconds wait, const OnJudged& judged) {
  if (!consumer_) PRISM_RETURN_IF_ERROR(Reconnect());
  auto messages = consumer_->Fetch(8, wait);
  if (!messages) return std::unexpected(messages.error());
  const auto now = FabricWindows::Clock::now();
  for (const scaleout::DeliveredMessage& m : *messages) {
    const uint64_t seq = m.stream_sequence();
    if (seq < next_sequence_) continue;  // delivered again after a reconnect: read once
    next_sequence_ = seq + 1;
    const std::string subject = m.subject();
    const auto key = scaleout::ParseFabricSubject(subject);
    if (!key) {
      ++counters_.bad;
      fmt::print(stderr, "llmprism serve: fabric: skipped message {} on {}: not a "
                 "fabric.<window end>.<shard>.<piece>.<pieces> subject\n", seq, subject);
      continue;
    }
    ++counters_.pieces;
    if (key->window_end_ns <= windows_.judged_up_to_ns()) {
      ++counters_.already_judged;
      continue;
    }
    if (windows_.Has(key->window_end_ns, key->shard)) {
      ++counters_.duplicates;
      continue;
    }
    FabricPieces::Whole whole;
    switch (pieces_.Add(*key, m.data(), seq, &whole)) {
      case FabricPieces::AddResult::kPartial: continue;
      case FabricPieces::AddResult::kDuplicate: ++counters_.duplicates; continue;
      case FabricPieces::AddResult::kWhole: break;
    }
    auto contribution = diagnosis::DecodeFabricContribution(
        {reinterpret_cast<const uint8_t*>(whole.bytes.data()), whole.bytes.size()});
    if (!contribution) {
      ++counters_.bad;
      fmt::print(stderr, "llmprism serve: fabric: skipped the contribution of shard {} for the "
                 "window ending {} (up to message {}): {}\n", key->shard, key->window_end_ns,
                 seq, contribution.error().message);
      continue;
    }
    const size_t bytes = whole.bytes.size();
    const bool empty = contribution->empty();
    switch (windows_.Add(key->window_end_ns, key->shard, std::move(*contribution),
                         whole.first_sequence, now)) {
      case FabricWindows::AddResult::kAdded:
        ++counters_.received;
        counters_.empty += empty ? 1 : 0;
        counters_.bytes += bytes;
        break;
      case FabricWindows::AddResult::kDuplicate: ++counters_.duplicates; break;
      case FabricWindows::AddResult::kAlreadyJudged: ++counters_.already_judged; break;
      case FabricWindows::AddResult::kBadShard:
        ++counters_.bad;
        fmt::print(stderr, "llmprism serve: fabric: skipped message {} on {}: shard {} is not "
                   "one of the {} of --shards\n", seq, subject, key->shard,
                   options_.windows.shards);
        break;
    }
  }
  if (auto last = js_->LastSequence(scaleout::kFabricStream)) last_sequence_ = *last;
  while (auto ready = windows_.TakeReady(FabricWindows::Clock::now())) {
    const FabricVerdict v = Judge(std::move(*ready));
    StreamPosition position;
    position.stream = scaleout::kFabricStream;
    position.subject = scaleout::kFabricSubjects;
    pieces_.DropUpTo(windows_.judged_up_to_ns());
    position.resume_sequence =
        std::min(windows_.ResumeSequence(next_sequence_), pieces_.ResumeSequence(next_sequence_));
    position.committed_end_ns = v.end_ns;
    judged(v, position);
  }
  return OkStatus();
}

}  // namespace prism::service
