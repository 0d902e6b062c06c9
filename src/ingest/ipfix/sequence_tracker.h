// File: ingest/ipfix/sequence_tracker.h
// Loss on the way from an exporter to the collector, from the export headers' sequence numbers.
//
// An IPFIX message's sequence number counts the data records its observation domain sent before
// it (RFC 7011 3.1); a NetFlow v9 packet's counts the export packets sent before it (RFC 3954 5.1).
// A message whose number is ahead of what its predecessors account for follows lost records (or
// packets): UDP drops them in the network or at a full socket, and nothing else on the
// collector's side shows it. A number behind is an exporter restart or a reordered datagram: not
// loss, counted apart.
//
// Exporters do not all count as the RFC says: softflowd numbers an IPFIX message with the data
// records sent up to and including it, and leaves its options records out. So each stream's
// convention is learned before any loss is counted: of the four (records before / through this
// message, with / without options records), those that explain three consecutive messages; until
// one does, and again after a restart, nothing is counted. After a message whose data sets could
// not all be framed (a data set without its template) the count is unknown and the next message
// starts afresh. Streams are (exporter, domain).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace prism::ingest {

class SequenceTracker {
 public:
  explicit SequenceTracker(size_t max_streams = 65536) : max_streams_(max_streams) {}

  struct Gap {
    uint64_t lost = 0;       // records (IPFIX) or packets (NetFlow v9) that never arrived
    bool went_back = false;  // the number was behind: a restart or a reordered message
  };

  // A message of `stream` numbered `sequence` carrying `data` data records and `options` options
  // records (NetFlow v9: 1 and 0, one packet); `countable` is false when its records could not all
  // be counted. Streams beyond max_streams are not followed.
  Gap Observe(uint64_t stream, uint32_t sequence, uint32_t data, uint32_t options, bool countable);

  static constexpr int kTransitionsToLearn = 3;

 private:
  struct State {
    bool have_previous = false;     // the previous message was counted
    uint32_t sequence = 0;          // the previous message's number
    uint32_t data = 0, options = 0; // and what it carried
    uint8_t alive = 0xF;            // conventions still consistent (bit per convention)
    int agreed = 0;                 // consecutive transitions they explained
  };
  size_t max_streams_;
  std::unordered_map<uint64_t, State> streams_;
};

}  // namespace prism::ingest
