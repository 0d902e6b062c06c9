// File: flow/endpoint_cache.h
// A small direct-mapped cache of endpoint ids in front of an EndpointTable's hash map, for the
// FlowTable's appends: one GPU's address recurs record after record (every record of a transfer,
// every switch it crosses), and a slot that already holds its id answers with one compare
// instead of the map's hash and node chase. A slot keeps only an id and is checked against the
// table's own address for that id, so it can never answer wrongly, even for a table that was
// replaced or refilled since; a miss interns through the table, so ids are handed out in exactly
// the order the table alone would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/ip_addr.h"
#include "core/name_table.h"

namespace prism::flow {

class EndpointCache {
 public:
  EndpointId Intern(const IpAddr& addr, EndpointTable* table) {
    if (slots_.empty()) slots_.assign(kSlots, kEmpty);
    EndpointId& slot = slots_[Slot(addr)];
    if (slot < table->size() && table->Addr(slot) == addr) return slot;
    slot = table->Intern(addr);
    return slot;
  }

 private:
  static constexpr size_t kSlotBits = 14;  // 64 KiB of ids: in L2 beside the columns' tails
  static constexpr size_t kSlots = size_t{1} << kSlotBits;
  static constexpr EndpointId kEmpty = std::numeric_limits<EndpointId>::max();

  // The top bits of a multiplicative hash of both halves: IPv4 addresses differ only in the last
  // 4 bytes, and within them mostly in the last ones.
  static size_t Slot(const IpAddr& addr) {
    uint64_t lo, hi;
    std::memcpy(&lo, addr.bytes().data(), 8);
    std::memcpy(&hi, addr.bytes().data() + 8, 8);
    const uint64_t h = (hi * 0x9E3779B97F4A7C15ull) ^ (lo * 0xC2B2AE3D27D4EB4Full);
    return static_cast<size_t>(h >> (64 - kSlotBits));
  }

  std::vector<EndpointId> slots_;  // allocated on first use: a table that is only copied needs none
};

}  // namespace prism::flow
