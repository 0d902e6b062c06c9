// File: apps/llmprism/replay_cmd.cc
// `llmprism replay FILE --to ADDR:PORT [--rate R] [--records-per-datagram N] [--cidr PREFIX]...
//  [--loop N]`: sends the records of a flow file (IPFIX, flow CSV) as IPFIX datagrams over UDP,
// like a switch exporting them: a test peer for `serve` and the ingest benchmark. Each datagram
// is one IPFIX message with its template (written by io::IpfixFileWriter), so loss of one
// datagram loses only its records. --rate paces records per second (0 = as fast as possible);
// --cidr keeps records whose source and destination both fall in one of the prefixes;
// --loop N sends the file N times (timestamps shifted by the file's span each time, so later
// loops look like later traffic); --preload encodes everything before sending. Prints records and datagrams sent and the achieved rate.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_checks.h"

#include "core/ip_addr.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "io/flow_csv.h"
#include "io/input_kind.h"
#include "io/ipfix_file.h"

namespace {

struct ReplayArgs {
  std::string input;
  std::string to;
  double rate = 0;
  size_t per_datagram = 20;
  std::vector<std::string> cidrs;
  int loops = 1;
  bool preload = false;  // encode every datagram first, then send (measures the receiver, not us)
  int repeat = 1;         // with preload: send the encoded datagrams this many times, shifted later
};

struct Prefix {
  prism::IpAddr addr;
  int bits = 0;  // over the 16-byte form (IPv4 prefixes get +96)
  bool Contains(const prism::IpAddr& a) const {
    const auto& x = a.bytes();
    const auto& p = addr.bytes();
    int b = bits;
    for (size_t i = 0; i < 16 && b > 0; ++i, b -= 8) {
      const uint8_t mask = b >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - b));
      if ((x[i] & mask) != (p[i] & mask)) return false;
    }
    return true;
  }
};

class UdpSender : public prism::FlowSink {
 public:
  UdpSender(int fd, const sockaddr_in& to, const ReplayArgs& args, const prism::PointTable* points,
            const std::vector<Prefix>& prefixes)
      : fd_(fd), to_(to), args_(args), points_(points), prefixes_(prefixes) {
    start_ = std::chrono::steady_clock::now();
  }
  void OnRecord(const prism::FlowRecord& r) override {
    if (!prefixes_.empty() && !(Keep(r.src) && Keep(r.dst))) return;
    prism::FlowRecord s = r;
    s.start_ns += shift_ns_;
    s.end_ns += shift_ns_;
    pending_.push_back(s);
    min_ns_ = std::min(min_ns_, r.start_ns);
    max_ns_ = std::max(max_ns_, r.end_ns);
    if (pending_.size() >= args_.per_datagram) Send();
  }
  void Send() {
    if (pending_.empty()) return;
    std::ostringstream out;
    {
      prism::io::IpfixFileWriter w(&out, points_);
      for (const prism::FlowRecord& r : pending_) w.OnRecord(r);
      (void)w.Finish();
    }
    if (args_.preload) {
      preloaded_.push_back({out.str(), pending_.size()});
      pending_.clear();
      return;
    }
    std::string msg = out.str();
    SendOne(msg, pending_.size());
    pending_.clear();
  }
  // Sends what --preload encoded, paced like the rest; restarts the clock first. With --repeat,
  // sends it again and again, each time moved later by the whole span of what was encoded (whole
  // seconds, patched into the encoded records), so the receiver sees new traffic at a rate no
  // encoder could sustain. False (message in *error) if a datagram cannot be patched.
  bool SendPreloaded(std::string* error) {
    start_ = std::chrono::steady_clock::now();
    const uint32_t shift_s = static_cast<uint32_t>((shift_ns_ + 999'999'999) / 1'000'000'000) + 1;
    for (int rep = 0; rep < args_.repeat; ++rep) {
      for (auto& [msg, n] : preloaded_) {
        if (rep > 0) {
          auto shifted = prism::io::ShiftWrittenMessageTimes(
              std::span<uint8_t>(reinterpret_cast<uint8_t*>(msg.data()), msg.size()), shift_s);
          if (!shifted) {
            *error = shifted.error().message;
            return false;
          }
        }
        SendOne(msg, n);
      }
    }
    preloaded_.clear();
    return true;
  }

 private:
  // `msg` is one IPFIX message of `records` data records; its header's sequence number is set to
  // the data records sent before it on this stream (RFC 7011 3.1: collectors such as nfcapd count
  // a gap as lost records). Each message was written on its own, so it says 0.
  void SendOne(std::string& msg, size_t records) {
    if (msg.size() >= 16) {
      const uint32_t sequence = static_cast<uint32_t>(sent_records_);  // modulo 2^32
      for (int i = 0; i < 4; ++i) msg[8 + size_t(i)] = static_cast<char>(sequence >> (24 - 8 * i));
    }
    sent_records_ += records;
    if (args_.rate > 0) {
      const auto due = start_ + std::chrono::duration<double>(
                                    static_cast<double>(sent_records_) / args_.rate);
      std::this_thread::sleep_until(due);
    }
    // A receiver that cannot keep up loses datagrams in its socket buffer (its drop counter),
    // not here.
    if (sendto(fd_, msg.data(), msg.size(), 0, reinterpret_cast<const sockaddr*>(&to_),
               sizeof(to_)) < 0) {
      ++send_errors_;
    } else {
      ++datagrams_;
    }
  }

 public:
  void NextLoop() {
    Send();
    if (max_ns_ > min_ns_) shift_ns_ += (max_ns_ - min_ns_) + 1'000'000'000;
  }
  uint64_t records() const { return sent_records_; }
  uint64_t datagrams() const { return datagrams_; }
  uint64_t send_errors() const { return send_errors_; }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  bool Keep(const prism::IpAddr& a) const {
    for (const Prefix& p : prefixes_)
      if (p.Contains(a)) return true;
    return false;
  }
  int fd_;
  sockaddr_in to_;
  const ReplayArgs& args_;
  const prism::PointTable* points_;
  const std::vector<Prefix>& prefixes_;
  std::vector<prism::FlowRecord> pending_;
  std::vector<std::pair<std::string, size_t>> preloaded_;
  uint64_t sent_records_ = 0, datagrams_ = 0, send_errors_ = 0;
  int64_t shift_ns_ = 0, min_ns_ = INT64_MAX, max_ns_ = INT64_MIN;
  std::chrono::steady_clock::time_point start_;
};

// A decimal number of at most `max`, every character a digit (std::stoi would take "12abc" and
// throw on "abc").
std::optional<unsigned long> ParseUnsigned(const std::string& s, unsigned long max) {
  if (s.empty() || s.size() > 10 ||
      !std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    return std::nullopt;
  }
  const unsigned long v = std::stoul(s);
  if (v > max) return std::nullopt;
  return v;
}

int RunReplay(const ReplayArgs& args) {
  auto fail = [](const std::string& m) {
    fmt::print(stderr, "llmprism replay: {}\n", m);
    return 2;
  };
  std::vector<Prefix> prefixes;
  for (const std::string& c : args.cidrs) {
    const size_t slash = c.find('/');
    auto ip = prism::IpAddr::Parse(c.substr(0, slash));
    if (!ip) return fail(fmt::format("--cidr {}: bad address", c));
    Prefix p{*ip, 128};
    if (slash != std::string::npos) {
      const int max_len = ip->is_v4() ? 32 : 128;
      auto len = ParseUnsigned(c.substr(slash + 1), max_len);
      if (!len) {
        return fail(fmt::format("--cidr {}: the prefix length must be 0-{}", c, max_len));
      }
      p.bits = ip->is_v4() ? 96 + static_cast<int>(*len) : static_cast<int>(*len);
    }
    prefixes.push_back(p);
  }
  const size_t colon = args.to.rfind(':');
  const auto port =
      colon == std::string::npos ? std::nullopt : ParseUnsigned(args.to.substr(colon + 1), 65535);
  if (!port || *port == 0) {
    return fail(fmt::format("--to {}: expected IPv4ADDR:PORT with a port of 1-65535", args.to));
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(*port));
  if (inet_pton(AF_INET, args.to.substr(0, colon).c_str(), &to.sin_addr) != 1) {
    return fail(fmt::format("--to {}: expected IPv4ADDR:PORT", args.to));
  }
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return fail("socket failed");
  int sndbuf = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
  auto kind = prism::io::SniffInputKind(args.input);
  if (!kind) return fail(kind.error().message);
  prism::PointTable points;
  prism::Stats stats;
  UdpSender sender(fd, to, args, &points, prefixes);
  for (int loop = 0; loop < args.loops; ++loop) {
    prism::StatusOr<uint64_t> n = 0;
    if (*kind == prism::io::InputKind::kIpfix) {
      n = prism::io::ReadIpfixFile(args.input, &sender, &points, &stats);
    } else if (*kind == prism::io::InputKind::kFlowCsv) {
      n = prism::io::ReadFlowCsv(args.input, &sender, &points, &stats);
    } else {
      close(fd);
      return fail(fmt::format("{}: expected an IPFIX file or a flow CSV", args.input));
    }
    if (!n) {
      close(fd);
      return fail(n.error().message);
    }
    sender.NextLoop();
  }
  if (args.repeat > 1 && !args.preload) {
    close(fd);
    return fail("--repeat needs --preload (it resends the encoded datagrams)");
  }
  if (args.preload) {
    std::string error;
    if (!sender.SendPreloaded(&error)) {
      close(fd);
      return fail(fmt::format("--repeat: {}", error));
    }
  }
  close(fd);
  const double secs = sender.seconds();
  fmt::print("replay: {} records in {} datagrams in {:.2f} s ({:.0f} records/s), {} send errors\n",
             sender.records(), sender.datagrams(), secs,
             secs > 0 ? static_cast<double>(sender.records()) / secs : 0, sender.send_errors());
  return sender.send_errors() == 0 ? 0 : 1;
}

}  // namespace

void RegisterReplayCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ReplayArgs>();
  CLI::App* cmd = app.add_subcommand(
      "replay", "Send a flow file's records as IPFIX datagrams over UDP (test peer for serve)");
  cmd->add_option("input", args->input, "IPFIX file or flow CSV")->required();
  cmd->add_option("--to", args->to, "Destination IPv4ADDR:PORT")->required();
  cmd->add_option("--rate", args->rate, "Records per second (0 = as fast as possible)")
      ->capture_default_str()->check(cli_checks::kNonNegative);
  cmd->add_option("--records-per-datagram", args->per_datagram, "Records per IPFIX message")
      ->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_option("--cidr", args->cidrs,
                  "Keep only records whose source and destination are in one of these prefixes");
  cmd->add_option("--loop", args->loops, "Send the file this many times, shifted in time")
      ->capture_default_str()->check(cli_checks::kPositive);
  cmd->add_option("--repeat", args->repeat,
                  "With --preload: send the encoded datagrams this many times, each time shifted "
                  "later by their whole time span (offered load beyond what encoding allows)")
      ->capture_default_str()->check(cli_checks::kPositive);
  cmd->add_flag("--preload", args->preload,
                "Encode every datagram before sending any (to measure the receiver, not the encoder)");
  cmd->callback([args, exit_code] { *exit_code = RunReplay(*args); });
}
