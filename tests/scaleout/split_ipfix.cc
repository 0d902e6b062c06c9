// split_ipfix: split_records.py for IPFIX files, for the scale-out tests on scenarios too large for
// a flow CSV (`faults`: 7.3 M records, 460 MB of IPFIX; a Python splitter would take minutes).
// Cuts the records into parts by start time and deals each part's records in turn to collectors,
// keeping the file's order within a part. Writes OUT/p<kk>-c<c>.ipfix (kk from 01, two digits so
// the names sort in part order; c from 1) and prints each part's size and the last record's start
// (seconds after the first, or after the aligned origin), as split_records.py does.
//
// Usage: split_ipfix FLOWS_IPFIX OUT CUTS COLLECTORS [ALIGN]
//   CUTS        seconds after the first record's start where a part ends, comma-separated
//               ("5,10": three parts); the last part holds everything after.
//   COLLECTORS  a part's records dealt in turn to this many files (2: every other record).
//   ALIGN       count CUTS from the first start rounded down to a multiple of ALIGN seconds since
//               the epoch: with ALIGN the analysis step, parts begin on the windows' grid.
// Reads the file twice (the first start, then the parts) rather than holding 600 MB of records.
// Exit 1 with a message on stderr when the input cannot be read or a part cannot be written.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/flow_record.h"
#include "core/name_table.h"
#include "core/stats.h"
#include "io/ipfix_file.h"

namespace {

using prism::FlowRecord;

// "5,10" -> 5 s and 10 s, as ascending offsets in ns.
std::vector<int64_t> ParseCuts(const std::string& text) {
  std::vector<int64_t> cuts;
  for (size_t at = 0; at <= text.size();) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    cuts.push_back(int64_t(std::stod(text.substr(at, comma - at)) * 1e9));
    at = comma + 1;
  }
  return cuts;
}

class FirstStart : public prism::FlowSink {
 public:
  void OnRecord(const FlowRecord& r) override { first_ns = std::min(first_ns, r.start_ns); }
  int64_t first_ns = std::numeric_limits<int64_t>::max();
};

// One IPFIX writer per (part, collector); a part's records go to its collectors in turn.
class PartWriter : public prism::FlowSink {
 public:
  PartWriter(const std::string& out, const std::vector<int64_t>& cuts, int collectors,
             int64_t origin_ns, const prism::PointTable* points)
      : cuts_(cuts), collectors_(collectors), origin_ns_(origin_ns) {
    const size_t parts = cuts.size() + 1;
    dealt_.assign(parts, 0);
    sizes_.assign(parts, 0);
    for (size_t k = 1; k <= parts; ++k) {
      for (int c = 1; c <= collectors; ++c) {
        files_.push_back(std::make_unique<std::ofstream>(
            fmt::format("{}/p{:02}-c{}.ipfix", out, k, c), std::ios::binary));
        writers_.push_back(
            std::make_unique<prism::io::IpfixFileWriter>(files_.back().get(), points));
      }
    }
  }

  void OnRecord(const FlowRecord& r) override {
    const int64_t offset = r.start_ns - origin_ns_;
    size_t part = 0;
    while (part < cuts_.size() && offset >= cuts_[part]) ++part;
    const size_t collector = dealt_[part]++ % size_t(collectors_);
    writers_[part * size_t(collectors_) + collector]->OnRecord(r);
    ++sizes_[part];
    last_offset_ns_ = std::max(last_offset_ns_, offset);
  }

  // Finishes every file; false (and a message) when one could not be written.
  bool Finish() {
    bool ok = true;
    for (size_t i = 0; i < writers_.size(); ++i) {
      const prism::Status s = writers_[i]->Finish();
      files_[i]->flush();
      if (!s || !*files_[i]) {
        fmt::print(stderr, "split_ipfix: cannot write part file {}: {}\n", i,
                   s ? "stream error" : s.error().message);
        ok = false;
      }
    }
    return ok;
  }

  const std::vector<uint64_t>& sizes() const { return sizes_; }
  int64_t last_offset_ns() const { return last_offset_ns_; }

 private:
  std::vector<int64_t> cuts_;
  int collectors_;
  int64_t origin_ns_;
  int64_t last_offset_ns_ = 0;
  std::vector<uint64_t> dealt_, sizes_;
  std::vector<std::unique_ptr<std::ofstream>> files_;
  std::vector<std::unique_ptr<prism::io::IpfixFileWriter>> writers_;
};

}  // namespace

int Split(int argc, char** argv) {
  if ((argc != 5 && argc != 6) || std::atoi(argv[4]) < 1) {
    fmt::print(stderr, "usage: split_ipfix FLOWS_IPFIX OUT CUTS COLLECTORS [ALIGN]\n");
    return 1;
  }
  const std::string in = argv[1], out = argv[2];
  const std::vector<int64_t> cuts = ParseCuts(argv[3]);
  prism::PointTable points;
  prism::Stats stats;
  FirstStart first;
  auto read = prism::io::ReadIpfixFile(in, &first, &points, &stats);
  if (!read) {
    fmt::print(stderr, "split_ipfix: {}\n", read.error().message);
    return 1;
  }
  const int64_t align_ns = argc == 6 ? std::max<int64_t>(1, int64_t(std::stod(argv[5]) * 1e9)) : 1;
  const int64_t origin_ns = first.first_ns / align_ns * align_ns;  // starts are > 0: no rounding up
  PartWriter parts(out, cuts, std::atoi(argv[4]), origin_ns, &points);
  read = prism::io::ReadIpfixFile(in, &parts, &points, &stats);
  if (!read) {
    fmt::print(stderr, "split_ipfix: {}\n", read.error().message);
    return 1;
  }
  if (!parts.Finish()) return 1;
  for (size_t k = 0; k < parts.sizes().size(); ++k)
    fmt::print("part {}: {} records\n", k + 1, parts.sizes()[k]);
  fmt::print("last start: {:.3f} s\n", double(parts.last_offset_ns()) / 1e9);
  return 0;
}

int main(int argc, char** argv) {
  try {
    return Split(argc, argv);
  } catch (const std::exception& e) {  // a CUTS or ALIGN that is no number (std::stod)
    fmt::print(stderr, "split_ipfix: bad argument: {}\n", e.what());
    return 1;
  }
}
