// File: service/loss_tally.h
// Every record `llmprism serve` lost before analysis, summed over its sources by reason
// (service/window_loss.h names them): what /api/v1/health, the log, the dashboard and each
// window's WindowLoss are made of. Datagrams lost before decoding (the kernel's socket buffer,
// the collector's queue) are converted to records at the source's own records-per-datagram so
// far (an estimate; the datagram counts are exact and shown beside it).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "service/ingest_counters.h"

namespace prism::service {

struct LossTally {
  std::map<std::string, uint64_t> records;  // by reason
  uint64_t socket_datagrams = 0, collector_datagrams = 0;
  uint64_t accepted = 0;  // records placed in windows
  uint64_t ingested = 0;  // records decoded

  uint64_t Total() const;
  // this - earlier, reason by reason.
  std::map<std::string, uint64_t> Since(const LossTally& earlier) const;
};

LossTally TallyLoss(const std::vector<SourceCounters*>& sources, const PipelineCounters& pipeline);

// Kernel receive-queue drops of the UDP socket bound to `port` (/proc/net/udp{,6}); 0 if unknown.
uint64_t UdpSocketDrops(uint16_t port);

}  // namespace prism::service
