#include "service/loss_tally.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "service/window_loss.h"

namespace prism::service {

uint64_t LossTally::Total() const {
  uint64_t n = 0;
  for (const auto& [reason, v] : records) n += v;
  return n;
}

std::map<std::string, uint64_t> LossTally::Since(const LossTally& earlier) const {
  std::map<std::string, uint64_t> out;
  for (const auto& [reason, v] : records) {
    auto it = earlier.records.find(reason);
    const uint64_t before = it == earlier.records.end() ? 0 : it->second;
    out[reason] = v >= before ? v - before : 0;
  }
  return out;
}

LossTally TallyLoss(const std::vector<SourceCounters*>& sources, const PipelineCounters& p) {
  LossTally t;
  for (const char* r : {kLossSocket, kLossCollectorQueue, kLossQueueFull, kLossLate,
                        kLossImplausible, kLossBufferFull, kLossSkipped, kLossUnpublished}) {
    t.records[r] = 0;
  }
  for (const SourceCounters* s : sources) {
    t.records[kLossQueueFull] += s->dropped_queue_full.load();
    t.records[kLossLate] += s->dropped_late.load();
    t.records[kLossBufferFull] += s->dropped_buffer_full.load();
    t.records[kLossImplausible] += s->dropped_implausible.load();
    t.accepted += s->accepted.load();
    t.ingested += s->records.load();
    if (!s->is_udp()) continue;
    const uint64_t socket = UdpSocketDrops(s->udp_port);
    const uint64_t queue = s->GetStats().Get(Stat::collector_datagrams_dropped);
    t.socket_datagrams += socket;
    t.collector_datagrams += queue;
    const uint64_t datagrams = s->datagrams.load();
    const double per = datagrams > 0 ? static_cast<double>(s->records.load()) /
                                           static_cast<double>(datagrams)
                                     : 1.0;
    t.records[kLossSocket] += static_cast<uint64_t>(static_cast<double>(socket) * per + 0.5);
    t.records[kLossCollectorQueue] += static_cast<uint64_t>(static_cast<double>(queue) * per + 0.5);
  }
  t.records[kLossBufferFull] += p.records_given_up.load();
  t.records[kLossSkipped] += p.records_skipped.load();
  t.records[kLossUnpublished] += p.publish_lost_records.load();
  return t;
}

uint64_t UdpSocketDrops(uint16_t port) {
  if (port == 0) return 0;
  uint64_t total = 0;
  for (const char* path : {"/proc/net/udp", "/proc/net/udp6"}) {
    std::FILE* f = std::fopen(path, "r");
    if (f == nullptr) continue;
    char line[512];
    if (std::fgets(line, sizeof line, f) == nullptr) {  // header
      std::fclose(f);
      continue;
    }
    while (std::fgets(line, sizeof line, f) != nullptr) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      // ref pointer drops
      char local[64];
      if (std::sscanf(line, "%*s %63s", local) != 1) continue;
      const char* colon = std::strrchr(local, ':');
      if (colon == nullptr || std::strtoul(colon + 1, nullptr, 16) != port) continue;
      // drops is the last field (lines may end in spaces)
      std::string_view v(line);
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
      const size_t sp = v.find_last_of(" \t");
      if (sp != std::string_view::npos) {
        total += std::strtoull(std::string(v.substr(sp + 1)).c_str(), nullptr, 10);
      }
    }
    std::fclose(f);
  }
  return total;
}

}  // namespace prism::service
