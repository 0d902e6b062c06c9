// File: io/ipfix_file.h
// IPFIX files: RFC 7011 messages stored back to back (RFC 5655). IpfixFileWriter turns FlowRecords
// into such a file; ReadIpfixFile/ReadIpfixBuffer turn any exporter's IPFIX file back into
// FlowRecords, parsing templates generically.
//
// What the writer emits (one observation domain, templates once, in the first message):
//   template 256 (IPv4) / 257 (IPv6), fields in this order:
//     sourceIPv4Address(8) / sourceIPv6Address(27)            4 / 16 bytes
//     destinationIPv4Address(12) / destinationIPv6Address(28) 4 / 16
//     flowStartNanoseconds(156), flowEndNanoseconds(157)      8 each, NTP format (RFC 7011 6.1.10)
//     octetDeltaCount(1), packetDeltaCount(2)                 8 each
//     sourceTransportPort(7), destinationTransportPort(11)    2 each
//     protocolIdentifier(4)                                   1
//     samplingPacketInterval(305)                             4 (1 = unsampled)
//     enterprise kPrismEnterpriseNumber element 1: RoCE destination QP, unsigned32
//     enterprise kPrismEnterpriseNumber element 2: observation point (switch) name, string,
//                                                  variable length (RFC 7011 7), empty = none
// Timestamps: Unix ns <-> NTP seconds since 1900 (era 0, values below 2^31 read as era 1, so
// 1968..2104 round-trips) and fraction = ceil(ns * 2^32 / 1e9), decoded as
// floor(frac * 1e9 / 2^32): exact to the ns (core/ntp_time.h).
//
// The reader frames the file into messages (and resynchronizes after a bad header); the messages
// themselves are decoded by ingest/ipfix/export_decoder.h, shared with captures and the UDP
// collector (NetFlow v9 too, options records with sampling, every timestamp form).
// The reader keys templates by (observation domain, template id), accepts fields in any order and
// of reduced size (RFC 7011 6.2), skips unknown and enterprise fields by length, understands
// IPv4/IPv6 addresses, timestamps in s (150/151), ms (152/153), µs (154/155) and ns (156/157),
// octet/packet delta or total counts (1/2, 85/86), sampling (305, 34, 50), and skips data of
// options templates (ipfix_options_record). Bad data is counted (ipfix_bad_message, ipfix_bad_set,
// ipfix_unknown_template, ipfix_bad_template, ipfix_bad_record), skipped, and the first 5 problems
// are described on stderr as "FILE: byte OFFSET: expected ..., got ...". After a bad message
// header the reader scans forward for the next plausible message header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "core/status.h"

namespace prism::io {

// Private enterprise number of llmprism's own information elements. 32473 is the PEN that
// RFC 5612 reserves for documentation; replace it if the project registers its own with IANA.
inline constexpr uint32_t kPrismEnterpriseNumber = 32473;
inline constexpr uint16_t kPrismIeRoceDestQp = 1;        // unsigned32
inline constexpr uint16_t kPrismIeObservationPoint = 2;  // string (switch name)
inline constexpr uint16_t kIpfixTemplateV4 = 256;
inline constexpr uint16_t kIpfixTemplateV6 = 257;

// What a file is read in, at most: larger than one message (64 KiB) plus the 2 bytes of
// look-ahead used to resynchronize, and small enough to stay in the L2 cache, where the decoder
// reads what the kernel just copied. Left uninitialized: zeroing it and the page faults of its
// first touch were a third of a small file's read (4 MiB buffer, 65,000 records).
inline constexpr size_t kIpfixReadBufferBytes = size_t{256} << 10;

// Moves every record of one message written by IpfixFileWriter later by `seconds` (its start and
// end, in place): a sender can resend the same encoded messages as new traffic without encoding
// them again. Whole seconds are one add to the NTP seconds field (exact). Returns the records
// shifted, or an error for a message this writer did not produce (bad lengths, other sets).
StatusOr<size_t> ShiftWrittenMessageTimes(std::span<uint8_t> message, uint32_t seconds);

class IpfixFileWriter : public FlowSink {
 public:
  IpfixFileWriter(std::ostream* out, const PointTable* points, uint32_t observation_domain = 1);
  // Calls Finish() if it was not called.
  ~IpfixFileWriter() override;
  IpfixFileWriter(const IpfixFileWriter&) = delete;
  IpfixFileWriter& operator=(const IpfixFileWriter&) = delete;

  // Buffers the record into the current message (<= 65535 bytes), writing a full message out
  // first when it would not fit. Point names longer than 1024 bytes are cut.
  void OnRecord(const FlowRecord& r) override;
  // Writes the last message (a templates-only message when no record came) and reports stream
  // errors (kDataLoss). Further calls do nothing.
  Status Finish();

 private:
  void StartMessage();
  void CloseSet();
  void FlushMessage();

  std::ostream* out_;
  const PointTable* points_;
  uint32_t domain_;
  std::string msg_;
  size_t set_start_ = 0;  // offset of the open data set's header in msg_; 0 = none
  uint16_t set_id_ = 0;
  uint32_t sequence_ = 0;  // data records exported before the current message (RFC 7011 3.1)
  uint32_t records_in_msg_ = 0;
  uint32_t export_time_s_ = 0;
  bool templates_written_ = false;
  bool finished_ = false;
};

// Errors: kNotFound (cannot open), kDataLoss (no usable record, read error). Each delivered
// record bumps records_read. Returns the number of records delivered. `stats` may be null.
StatusOr<uint64_t> ReadIpfixFile(const std::string& path, FlowSink* sink, PointTable* points,
                                 Stats* stats);
StatusOr<uint64_t> ReadIpfixBuffer(std::span<const std::byte> data, const std::string& name,
                                   FlowSink* sink, PointTable* points, Stats* stats);

}  // namespace prism::io
