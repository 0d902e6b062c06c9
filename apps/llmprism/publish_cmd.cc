// File: apps/llmprism/publish_cmd.cc
// `llmprism publish INPUT... --nats URL [--subject records.NAME] [--batch N] [--replicas R]`:
// reads flow files (any kind `analyze` reads) and publishes their records to the JetStream stream
// LLMPRISM_RECORDS as record batches, as a collector will (docs/scale-out.md). The stream is
// created if absent. Batch ids are "<subject>-<n>-<hash>", so publishing the same files again on
// the same subject stores nothing twice; `analyze nats://HOST:PORT` reads the stream back. Exit 1
// with the message when a file cannot be read or the server refuses.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_checks.h"

#include "core/name_table.h"
#include "core/stats.h"
#include "pipeline/input_registry.h"
#include "scaleout/record_stream.h"

namespace {

struct PublishArgs {
  std::vector<std::string> inputs;
  std::string nats;
  std::string subject = "records.publish";
  size_t batch = 4096;
  int replicas = 1;
};

int RunPublish(const PublishArgs& args) {
  namespace so = prism::scaleout;
  auto fail = [](const prism::Error& e) {
    fmt::print(stderr, "llmprism publish: {}\n", e.message);
    return 1;
  };
  auto js = so::JetStream::Connect(args.nats, std::chrono::seconds(5));
  if (!js) return fail(js.error());
  if (auto st = (*js)->EnsureStream({so::kRecordStream, {so::kRecordSubjects}, args.replicas},
                                    std::chrono::seconds(30));
      !st)
    return fail(st.error());
  prism::PointTable points;
  prism::Stats stats;
  so::BatchPublisher publisher(js->get(), args.subject, args.subject, &points, args.batch);
  for (const std::string& path : args.inputs) {
    auto read = prism::pipeline::InputRegistry::Default().Read(path, {}, &publisher, &points,
                                                               &stats);
    if (!read) return fail(read.error());
  }
  if (auto st = publisher.Finish(); !st) return fail(st.error());
  fmt::print("published {} records in {} batches to {} {} ({} batches already there)\n",
             publisher.records(), publisher.batches(), so::kRecordStream, args.subject,
             publisher.duplicates());
  return 0;
}

}  // namespace

void RegisterPublishCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<PublishArgs>();
  CLI::App* cmd = app.add_subcommand(
      "publish", "Publish flow files' records to NATS JetStream as record batches, as a collector "
                 "does (docs/scale-out.md)");
  cmd->add_option("inputs", args->inputs, "Flow CSV, IPFIX, pcap or pcapng files (.zst is fine)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--nats", args->nats, "NATS server URL, e.g. nats://127.0.0.1:4222")
      ->required();
  cmd->add_option("--subject", args->subject,
                  "Subject under records.> (also the batch id prefix: the same files on the same "
                  "subject are stored once)")
      ->capture_default_str();
  cmd->add_option("--batch", args->batch, "Records per batch")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--replicas", args->replicas,
                  "Copies of the stream when this creates it (3 on a 3-node cluster)")
      ->capture_default_str()
      ->check(CLI::Range(1, 5));
  cmd->callback([args, exit_code] { *exit_code = RunPublish(*args); });
}
