// File: core/stats.h
// Data-quality counters. Bad data is not an error: a reader bumps a counter and skips the record.
// The CLI, the report's "input" object and /metrics show every non-zero counter, so nothing is
// dropped silently. Defined once as an X-macro: name, severity, description.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace prism {

enum class StatSeverity { kInfo, kDataLoss, kError };

// clang-format off
#define PRISM_STATS(F)                                                                          \
  F(records_read,            kInfo,     "flow records accepted from all inputs")                \
  F(csv_bad_row,             kDataLoss, "CSV rows skipped: wrong column count or unparsable field") \
  F(csv_bad_time,            kDataLoss, "CSV rows skipped: end_ns before start_ns")             \
  F(record_bad_duration,     kDataLoss, "records skipped: ending before they start, or lasting longer than the longest plausible record (--max-record-s)") \
  F(topology_bad_row,        kDataLoss, "topology rows skipped: unparsable")                    \
  F(topology_duplicate_ip,   kDataLoss, "topology rows skipped: IP listed twice")               \
  F(jobs_map_bad_line,       kDataLoss, "--jobs-map lines skipped: neither host_or_ip,job_id,user,name nor JOBID|USER|NAME|NODELIST, or a bad host list") \
  F(ipfix_bad_message,       kDataLoss, "IPFIX messages skipped: bad header or length")         \
  F(ipfix_bad_set,           kDataLoss, "IPFIX sets skipped: bad length")                       \
  F(ipfix_unknown_template,  kDataLoss, "IPFIX data sets skipped: no template seen for the id") \
  F(ipfix_bad_record,        kDataLoss, "IPFIX records skipped: missing fields or bad times")   \
  F(ipfix_bad_template,      kDataLoss, "IPFIX templates skipped: malformed")                   \
  F(ipfix_options_record,    kInfo,     "IPFIX/NetFlow v9 options records (metadata such as sampling, not flows)") \
  F(ipfix_template_limit,    kDataLoss, "IPFIX/NetFlow v9 templates dropped: template cache full")  \
  F(ipfix_template_quota,    kDataLoss, "IPFIX/NetFlow v9 templates dropped: their exporter address or source (address + observation domain) holds its quota") \
  F(ipfix_template_withdrawn, kInfo,    "IPFIX templates withdrawn by their exporter (RFC 7011)") \
  F(ipfix_template_expired,  kInfo,     "IPFIX/NetFlow v9 templates expired: not resent within the UDP template lifetime") \
  F(netflow_v9_packets,      kInfo,     "NetFlow v9 export packets decoded")                    \
  F(ipfix_messages,          kInfo,     "IPFIX messages decoded from captures or datagrams")    \
  F(ipfix_records_lost,      kDataLoss, "IPFIX data records the exporter sent that never arrived (gaps in message sequence numbers)") \
  F(netflow_v9_packets_lost, kDataLoss, "NetFlow v9 export packets the exporter sent that never arrived (gaps in packet sequence numbers)") \
  F(export_sequence_went_back, kInfo,   "IPFIX/NetFlow v9 messages numbered behind their predecessor (exporter restart or reordering; not counted as loss)") \
  F(collector_datagrams_dropped, kDataLoss, "UDP datagrams dropped: collector queue full")      \
  F(collector_bad_datagram,  kDataLoss, "UDP datagrams skipped: neither IPFIX nor NetFlow v9")  \
  F(sflow_datagrams,         kInfo,     "sFlow v5 datagrams decoded (captures and UDP)")        \
  F(record_batches,          kInfo,     "record batches read from a NATS JetStream stream")     \
  F(record_batches_bad,      kDataLoss, "record batches skipped: did not decode (all their records)") \
  F(sflow_bad_datagram,      kDataLoss, "sFlow datagrams skipped: bad header or sample framing (all their samples)") \
  F(sflow_bad_sample,        kDataLoss, "sFlow samples or records skipped: malformed")          \
  F(sflow_flow_samples,      kInfo,     "sFlow flow samples with a raw packet header: 1-in-N sampled packets") \
  F(sflow_sample_no_header,  kDataLoss, "sFlow flow samples skipped: no raw packet header record to build flows from") \
  F(sflow_header_unsupported, kDataLoss, "sFlow packet headers skipped: header protocol other than Ethernet, IPv4, IPv6") \
  F(sflow_other_records,     kInfo,     "sFlow flow records other than the raw packet header (extended switch/router data): not needed") \
  F(sflow_other_samples,     kInfo,     "sFlow samples of enterprise or format llmprism does not read") \
  F(sflow_counter_samples,   kInfo,     "sFlow counter samples decoded (their interface counters feed analyze --sflow-counters)") \
  F(sflow_interface_counters, kInfo,    "sFlow generic interface counter records decoded: port polls for analyze --sflow-counters") \
  F(sflow_other_counter_records, kInfo, "sFlow counter records other than generic interface counters (Ethernet, processor, ...): not needed") \
  F(sflow_samples_lost,      kDataLoss, "sFlow flow samples the agents sent that never arrived (gaps in sample sequence numbers)") \
  F(sflow_samples_dropped,   kDataLoss, "sFlow flow samples the agents dropped for lack of resources (growth of the drops field)") \
  F(sflow_datagrams_lost,    kInfo,     "sFlow datagrams that never arrived (gaps in datagram sequence numbers; their flow samples are in sflow_samples_lost)") \
  F(sflow_sequence_went_back, kInfo,    "sFlow datagrams or samples numbered behind their predecessor (agent restart or reordering; not loss)") \
  F(sflow_collector_bad_datagram, kDataLoss, "UDP datagrams skipped by the sFlow collector: not sFlow v5") \
  F(pcap_packets,            kInfo,     "packets read from pcap/pcapng captures")               \
  F(pcap_file_truncated,     kDataLoss, "captures that end inside a packet record (the rest is lost)") \
  F(pcap_export_packets,     kInfo,     "IPFIX/NetFlow v9/sFlow export datagrams found in captures and decoded") \
  F(packet_truncated,        kDataLoss, "packets skipped: headers cut by the capture length before the fields needed") \
  F(packet_malformed,        kDataLoss, "packets skipped: inconsistent header or length fields") \
  F(packet_unsupported_link, kDataLoss, "packets skipped: link type other than Ethernet, raw IP, Linux SLL") \
  F(packet_non_ip,           kInfo,     "frames skipped: not IPv4/IPv6 (ARP, LLDP, ...)")       \
  F(packet_ip_fragment,      kDataLoss, "IP fragments skipped: no transport header (non-first fragment)") \
  F(packet_other_proto,      kInfo,     "packets skipped: IP protocol other than TCP, UDP, GRE") \
  F(packet_gre_unsupported,  kInfo,     "GRE packets skipped: payload other than ERSPAN, IP, Ethernet, or GRE flags we do not parse") \
  F(packet_too_deep,         kDataLoss, "packets skipped: more than 12 nested headers")         \
  F(erspan_packets,          kInfo,     "ERSPAN II/III packets decapsulated")                    \
  F(tcp_no_payload,          kInfo,     "TCP segments without payload (pure ACK/SYN/FIN): not flow bytes") \
  F(udp_no_payload,          kInfo,     "UDP datagrams without payload: not flow bytes")        \
  F(roce_ack,                kInfo,     "RoCEv2 ACK packets (counted, not flows)")              \
  F(roce_nak,                kInfo,     "RoCEv2 NAK packets: PSN sequence error, RNR or remote error") \
  F(roce_cnp,                kInfo,     "RoCEv2 congestion notification packets (CNP)")         \
  F(roce_read_request,       kInfo,     "RoCEv2 RDMA READ requests (the responses are the flows)") \
  F(roce_other_opcode,       kInfo,     "RoCEv2 packets with atomic or unknown opcodes: not flows") \
  F(roce_bad_length,         kDataLoss, "RoCEv2 packets skipped: UDP length below BTH + extension headers + ICRC") \
  F(roce_message_incomplete, kInfo,     "RoCEv2 messages closed without LAST (idle timeout, new FIRST, end of capture)") \
  F(roce_message_headless,   kInfo,     "RoCEv2 messages whose first packet seen was MIDDLE or LAST") \
  F(sampled_psn_span_estimates, kInfo, "sampled RoCEv2 flowlets whose bytes are estimated from the BTH PSN span of their samples") \
  F(sampled_psn_span_unusable, kInfo,  "sampled RoCEv2 flowlets of 2+ samples counted as bytes x N: PSN repeated or went back (retransmission), missing, or a span the sampling rate cannot explain") \
  F(flow_table_evictions,    kInfo,     "open messages/flowlets closed early: open-flow table at its bound") \
  F(records_non_gpu,         kInfo,     "records to or from endpoints marked non-GPU")          \
  F(counters_rows,           kInfo,     "port counter polls accepted (counters mode)")          \
  F(counters_bad_row,        kDataLoss, "port counter rows skipped: wrong column count or unparsable field") \
  F(counters_out_of_order,   kDataLoss, "port counter rows skipped: timestamp not after the port's previous poll") \
  F(counters_wrap,           kInfo,     "cumulative counters that wrapped at 2^32 or 2^64 (delta recovered)") \
  F(counters_reset,          kInfo,     "cumulative counters that went backwards (reset; the new value taken as the delta)") \
  F(counters_stale_zero,     kInfo,     "zero deltas followed by a non-zero one within the refresh period (switch refreshed slower than polled)") \
  F(counters_gap,            kInfo,     "poll gaps longer than the gap limit (bytes spread, bins marked missing)") \
  F(counters_unmapped_port,  kInfo,     "ports without a server in the port topology (not analysed)")
// clang-format on

enum class Stat : int {
#define PRISM_STAT_ENUM(name, sev, desc) name,
  PRISM_STATS(PRISM_STAT_ENUM)
#undef PRISM_STAT_ENUM
      kCount
};

struct StatInfo {
  const char* name;
  StatSeverity severity;
  const char* description;
};

inline constexpr std::array<StatInfo, static_cast<size_t>(Stat::kCount)> kStatInfo = {{
#define PRISM_STAT_INFO(name, sev, desc) {#name, StatSeverity::sev, desc},
    PRISM_STATS(PRISM_STAT_INFO)
#undef PRISM_STAT_INFO
}};

class Stats {
 public:
  void Add(Stat s, uint64_t n = 1) { values_[static_cast<size_t>(s)] += n; }
  uint64_t Get(Stat s) const { return values_[static_cast<size_t>(s)]; }
  void Merge(const Stats& other) {
    for (size_t i = 0; i < values_.size(); ++i) values_[i] += other.values_[i];
  }
  // Total of counters with severity kDataLoss or kError: records we could not use.
  uint64_t SkippedTotal() const {
    uint64_t n = 0;
    for (size_t i = 0; i < values_.size(); ++i)
      if (kStatInfo[i].severity != StatSeverity::kInfo) n += values_[i];
    return n;
  }
  const std::array<uint64_t, static_cast<size_t>(Stat::kCount)>& values() const { return values_; }

 private:
  std::array<uint64_t, static_cast<size_t>(Stat::kCount)> values_{};
};

}  // namespace prism
