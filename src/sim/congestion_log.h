// File: sim/congestion_log.h
// Where the simulated fabric itself, with no fault injected, squeezed transfers: ECMP puts several
// large transfers on one leaf<->spine link, and the network model (sim/network.h) gives each a
// share of it. Such a link really is congested in the simulation, and a report that says so is
// right even though the scenario injected nothing there; the truth lists these as
// `fabric_events` so that eval counts such a finding neither false nor missed
// (docs/truth-schema.md).
//
// A transfer is squeezed on a link when the link's share left it under kSqueezedShare of the rate
// its NICs allowed. A link-second is congested when at least kMinTransfers transfers started on
// the link in it and squeezed ones carried at least kMinSqueezedBytesShare of their bytes (bytes,
// not transfers: a few large transfers piled on one link are the congestion, the many small ones
// beside them do not dilute it); an event is a run of at least kMinSeconds seconds from its first
// congested second to its last, with no two clear seconds in a row.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace prism::sim {

struct CongestionEvent {
  int leaf = 0, spine = 0;  // switch ids (Cluster::SwitchName)
  bool up = true;           // leaf -> spine (else spine -> leaf)
  int64_t start_ns = 0, end_ns = 0;
  double squeezed_share = 0;  // of the bytes started on the link in the event's congested seconds
};

class CongestionLog {
 public:
  static constexpr double kSqueezedShare = 0.3;
  static constexpr double kMinSqueezedBytesShare = 0.2;
  static constexpr int kMinTransfers = 4;
  static constexpr int kMinSeconds = 3;

  // One transfer of `bytes` starting at `start_ns` crosses the link; `squeezed` as above.
  void Note(int leaf, int spine, bool up, int64_t start_ns, uint64_t bytes, bool squeezed);
  // The events, in (leaf, spine, up, start) order.
  std::vector<CongestionEvent> Events() const;

 private:
  struct Second {
    uint32_t transfers = 0;
    uint64_t bytes = 0, squeezed_bytes = 0;
  };
  // Key: leaf (20 bits), spine (19), up (1), then the second after first_second_ - 2^23 (24
  // bits): one hash lookup per transfer and link, as the network model's own load map does
  // (a map of maps cost the simulator a quarter more time on `faults`).
  static constexpr int kSecondBits = 24;
  uint64_t Key(int leaf, int spine, bool up, int64_t second);
  std::optional<int64_t> first_second_;
  std::unordered_map<uint64_t, Second> seconds_;
  // The last cell noted per direction: a collective's transfers start together and share links,
  // so most notes hit it (unordered_map nodes do not move on rehash).
  uint64_t last_key_[2] = {~uint64_t(0), ~uint64_t(0)};
  Second* last_[2] = {nullptr, nullptr};
};

}  // namespace prism::sim
