// File: ingest/ipfix/export_decoder.h
// One decoder for IPFIX (RFC 7011) messages and NetFlow v9 (RFC 3954) export packets, sharing one
// template cache (as ipfixcol2 and goflow2 do). Templates and options templates are kept per
// (exporter, observation domain / source id, template id); an exporter is whatever the caller
// says it is (a file, a UDP source address and port). Handles reduced-size and variable-length
// fields, skips enterprise and unknown elements by length, and reads every timestamp form:
// IPFIX IE 150-157 (s, ms, µs/ns NTP), 158/159 (µs before export time), 21/22 relative to
// systemInitTimeMilliseconds (IE 160), and NetFlow v9 21/22 relative to the header's sysUptime
// and unix_secs. Sampling comes from the record (IE 34, 50, 305, 309/310) or, through samplerId /
// selectorId (48, 302) or per domain, from options records; it is carried on the records.
//
// Bad data is counted (ipfix_* counters), skipped, and the first few problems are printed on
// stderr as "NAME: byte OFFSET: expected ..., got ...". Templates live in a TemplateCache
// (template_cache.h): bounded in all and per exporter and source, withdrawn as RFC 7011 says,
// expired after TemplateLimits::timeout_ns of the clock given to SetClock (UDP). No Status, no
// exceptions: fed straight from files, captures, sockets and the fuzzer. Message framing (file
// resync, datagram boundaries) is the caller's. docs/design.md, IPFIX and NetFlow v9.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/flow_record.h"
#include "core/ip_addr.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "ingest/ipfix/template_cache.h"
#include "ingest/packet/packet_meta.h"

namespace prism::ingest {

inline constexpr size_t kMaxExporters = 4096;
inline constexpr size_t kIpfixHeaderBytes = 16;
inline constexpr size_t kNetflowV9HeaderBytes = 20;

// True when `payload` (a UDP payload of `udp_payload_bytes` on the wire, perhaps captured in
// part) is framed like an IPFIX message (version 10, length = datagram) or a NetFlow v9 packet
// (version 9, flowsets that tile the datagram).
bool LooksLikeExportDatagram(std::span<const uint8_t> payload, size_t udp_payload_bytes);

class ExportDecoder {
 public:
  // `name` prefixes problem messages (a file name or "collector"). `sink` gets every record.
  // `limits` bound the template cache; the defaults (no expiry) suit files and captures, a UDP
  // collector sets TemplateLimits::timeout_ns (kUdpTemplateTimeoutNs).
  ExportDecoder(std::string name, FlowSink* sink, PointTable* points, Stats* stats,
                int problem_log_cap = 5, TemplateLimits limits = {});
  ~ExportDecoder();
  ExportDecoder(const ExportDecoder&) = delete;
  ExportDecoder& operator=(const ExportDecoder&) = delete;

  // Registers an exporter (or finds it again); records without a point-name field get
  // `point_name` as their observation point ("" = none). Returns its handle. Beyond
  // kMaxExporters, new exporters share the last handle (bounded memory).
  uint32_t AddExporter(const IpAddr& addr, uint16_t port, const std::string& point_name);

  // The collector's clock (ns, monotonic), against which templates expire: the time the next
  // messages were received. Without calls it stays 0 (no expiry needed without a timeout).
  void SetClock(int64_t now_ns);

  // Decodes one whole IPFIX message (version 10) or NetFlow v9 packet (version 9) from
  // `exporter`. `offset` is where the message starts in its file, for messages.
  void DecodeMessage(std::span<const uint8_t> msg, uint32_t exporter, uint64_t offset = 0);

  // For captures: if the UDP datagram in `meta` looks like an export packet, decodes it as from
  // exporter (source address, source port) and returns true; else returns false.
  bool OnCapturedDatagram(const PacketMeta& meta);

  // Prints "N more problems not shown" if problems were capped.
  void Finish();

  // For a file read in runs of whole messages, one decoder per run, side by side (io/
  // ipfix_file_runs.h). A later run's decoder first learns the templates an earlier run's message
  // holds, silently (no counter, no problem): its data sets are left to that run.
  void LearnTemplates(std::span<const uint8_t> msg, uint32_t exporter);
  // A later run's decoder keeps its problems' text (up to the cap) instead of printing them and
  // its messages' sequence numbers instead of following them: both depend on the runs before.
  void DeferToEarlierRun();
  // Run by the first run's decoder after every run is decoded, for each later run in order:
  // prints `later`'s kept problems as far as the cap allows, follows its sequence numbers
  // (counting losses into this decoder's stats) and takes its record and message counts. What
  // the serial decoder would have printed and counted; `later`'s other counters are in its stats.
  void TakeOverFrom(ExportDecoder* later);
  // The fewest bytes a data record takes under any template this decoder was given, stored or
  // not (a variable-length field counts 1 byte; SIZE_MAX before any): a set of B bytes holds at
  // most B / this many records (io/ipfix_file_runs.h bounds a run's rows so).
  size_t SmallestTemplateRecordBytes() const;

  uint64_t records() const { return records_; }
  uint64_t messages() const { return messages_; }

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  uint64_t records_ = 0;
  uint64_t messages_ = 0;
};

}  // namespace prism::ingest
