// File: io/ipfix_file_framer.h
// Frames an IPFIX file (RFC 5655: messages back to back) into messages for ingest's export
// decoder (ingest/ipfix/export_decoder.h), resynchronizing after a bad message header by scanning
// for the next plausible one. Fed a buffer at a time; a message cut by the buffer's end is offered
// again with more data. Shared by ReadIpfixFile (io/ipfix_file.h, the whole file in one pass) and
// the reader of a file in runs of whole messages side by side (io/ipfix_file_runs.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

#include <fmt/format.h>

#include "core/big_endian.h"
#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "core/status.h"
#include "ingest/ipfix/export_decoder.h"
#include "io/csv_util.h"

namespace prism::io {

inline constexpr uint16_t kIpfixFileVersion = 10;
inline constexpr size_t kIpfixFileHeaderBytes = 16;

class IpfixFileFramer {
 public:
  IpfixFileFramer(const std::string& name, FlowSink* sink, PointTable* points, Stats* stats)
      : name_(name), stats_(stats), log_(name), decoder_(name, sink, points, stats) {
    decoder_.AddExporter(IpAddr(), 0, "");
  }

  // Decodes the complete messages at the front of `data`, whose first byte is at file offset
  // `base`. Returns the bytes consumed; the caller keeps the rest and offers it again with more
  // data. With at_eof everything is consumed.
  size_t Decode(const uint8_t* data, size_t n, uint64_t base, bool at_eof) {
    size_t pos = 0;
    for (;;) {
      if (resyncing_) {
        bool found = false;
        for (; pos + 4 <= n; ++pos) {
          if (LoadBe16(data + pos) != kIpfixFileVersion) continue;
          size_t len = LoadBe16(data + pos + 2);
          if (len < kIpfixFileHeaderBytes) continue;
          // Plausible when the message ends exactly at the end of the input or right before
          // another version-10 header.
          if (pos + len + 2 <= n) {
            if (LoadBe16(data + pos + len) == kIpfixFileVersion) {
              found = true;
              break;
            }
          } else if (!at_eof) {
            return pos;  // cannot judge yet: wait for more data
          } else if (pos + len == n) {
            found = true;
            break;
          }
        }
        if (!found) return at_eof ? n : pos;
        resyncing_ = false;
      }
      if (pos == n) return n;
      const uint8_t* msg = data + pos;
      size_t avail = n - pos;
      uint64_t offset = base + pos;
      if (avail < kIpfixFileHeaderBytes) {
        if (!at_eof) return pos;
        BadMessage(offset, "a 16-byte message header", fmt::format("{} bytes at the end", avail));
        return n;
      }
      uint16_t version = LoadBe16(msg);
      size_t len = LoadBe16(msg + 2);
      if (version != kIpfixFileVersion) {
        BadMessage(offset, "IPFIX version 10", fmt::format("{}", version));
      } else if (len < kIpfixFileHeaderBytes) {
        BadMessage(offset, "a message length >= 16", fmt::format("{}", len));
      } else if (len > avail) {
        if (!at_eof) return pos;
        BadMessage(offset, fmt::format("a message of {} bytes", len),
                   fmt::format("{} bytes before the end (truncated)", avail));
      } else {
        DecodeMessage(msg, len, offset);
        pos += len;
        continue;
      }
      resyncing_ = true;
      ++pos;
    }
  }

  // The export decoder behind the framing (a run of a file: io/ipfix_file_runs.h).
  ingest::ExportDecoder& decoder() { return decoder_; }
  // The first run of a file takes a later run's counts (its decoder's:
  // ExportDecoder::TakeOverFrom).
  void TakeOverFrom(IpfixFileFramer* later) {
    decoder_.TakeOverFrom(&later->decoder_);
    messages_ += later->messages_;
  }

  StatusOr<uint64_t> Finish(uint64_t total_bytes) {
    log_.Finish();
    decoder_.Finish();
    const uint64_t delivered_ = decoder_.records();
    if (total_bytes == 0) return MakeError(ErrorCode::kDataLoss, "{}: empty file", name_);
    if (delivered_ == 0) {
      return MakeError(ErrorCode::kDataLoss,
                       "{}: no usable IPFIX flow record in {} bytes ({} messages decoded)", name_,
                       total_bytes, messages_);
    }
    return delivered_;
  }

 private:
  template <typename E, typename G>
  void BadMessage(uint64_t offset, const E& expected, const G& got) {
    if (stats_ != nullptr) stats_->Add(Stat::ipfix_bad_message);
    if (log_.Want()) {
      fmt::print(stderr, "{}: byte {}: expected {}, got {}\n", name_, offset, expected, got);
    }
  }

  void DecodeMessage(const uint8_t* msg, size_t len, uint64_t offset) {
    ++messages_;
    decoder_.DecodeMessage(std::span<const uint8_t>(msg, len), 0, offset);
  }

  const std::string& name_;
  Stats* stats_;
  internal::ProblemLog log_;
  ingest::ExportDecoder decoder_;
  bool resyncing_ = false;
  uint64_t messages_ = 0;
};

}  // namespace prism::io
