#include "io/ipfix_file_runs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <span>
#include <utility>

#include "core/big_endian.h"
#include "io/ipfix_file.h"

namespace prism::io {
namespace {

constexpr uint16_t kTemplateSetId = 2;
constexpr uint16_t kOptionsTemplateSetId = 3;
// Each domain has its own state in the decoder, bounded in number; far below the bound, every
// run's decoder keeps every domain's state as the one-pass decoder would.
constexpr size_t kMaxDomains = 256;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

StatusOr<Fd> OpenForReading(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return MakeError(ErrorCode::kNotFound, "{}: cannot open: {}", path, std::strerror(errno));
  return Fd(fd);
}

// Up to out.size() bytes at `offset` (fewer only at the end of the file).
StatusOr<size_t> ReadAt(int fd, const std::string& path, std::span<uint8_t> out, uint64_t offset) {
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n =
        pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return MakeError(ErrorCode::kDataLoss, "{}: read error: {}", path, std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

// What the plan needs to know of one message: its sets' ids, read header by header.
struct MessageSets {
  bool templates = false;
  bool options_templates = false;
};

// `first_set`: the message's first 4 bytes after its header, read with the header (null: not
// read). A message of data holds one set, so most messages cost the plan one read: a read per
// header was ~9,600 reads and 11.6 ms for scale-10k's 4,788 messages, before either thread
// decodes.
StatusOr<MessageSets> ReadSetIds(int fd, const std::string& path, uint64_t msg, size_t len,
                                 const uint8_t* first_set) {
  MessageSets sets;
  size_t p = kIpfixFileHeaderBytes;
  while (len - p >= 4) {  // framed as the decoder frames it: a bad set ends the message
    uint8_t bytes[4];
    const uint8_t* head = first_set;
    if (p != kIpfixFileHeaderBytes || head == nullptr) {
      PRISM_ASSIGN_OR_RETURN(size_t n, ReadAt(fd, path, bytes, msg + p));
      if (n < 4) break;
      head = bytes;
    }
    const uint16_t id = LoadBe16(head);
    const size_t set_len = LoadBe16(head + 2);
    if (set_len < 4 || set_len > len - p) break;
    sets.templates |= id == kTemplateSetId;
    sets.options_templates |= id == kOptionsTemplateSetId;
    p += set_len;
  }
  return sets;
}

// The fewest bytes a record takes under any template in `messages` (the template sets' messages),
// as the decoder parses them.
StatusOr<size_t> SmallestRecordBytes(int fd, const std::string& path,
                                     const std::vector<std::pair<uint64_t, uint32_t>>& messages) {
  PointTable points;
  ingest::ExportDecoder decoder(path, nullptr, &points, nullptr);
  std::vector<uint8_t> msg;
  for (const auto& [offset, len] : messages) {
    msg.resize(len);
    PRISM_ASSIGN_OR_RETURN(size_t n, ReadAt(fd, path, msg, offset));
    decoder.LearnTemplates(std::span<const uint8_t>(msg.data(), n), 0);
  }
  return decoder.SmallestTemplateRecordBytes();
}

}  // namespace

StatusOr<std::optional<IpfixFileRuns>> PlanIpfixFileRuns(const std::string& path, int runs,
                                                         uint64_t min_run_bytes) {
  if (runs < 2) return std::nullopt;
  PRISM_ASSIGN_OR_RETURN(Fd fd, OpenForReading(path));
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  IpfixFileRuns plan;
  plan.path = path;
  plan.file_bytes = static_cast<uint64_t>(st.st_size);
  runs = static_cast<int>(
      std::min<uint64_t>(runs, plan.file_bytes / std::max<uint64_t>(1, min_run_bytes)));
  if (runs < 2) return std::nullopt;
  std::vector<uint32_t> domains;
  uint64_t pos = 0;
  while (pos < plan.file_bytes) {
    const size_t k = plan.starts.size();
    if (k < static_cast<size_t>(runs) && pos >= plan.file_bytes * k / runs)
      plan.starts.push_back(pos);
    // The message's header and its first set's header (ReadSetIds).
    uint8_t head[kIpfixFileHeaderBytes + 4];
    PRISM_ASSIGN_OR_RETURN(size_t n, ReadAt(fd.get(), path, head, pos));
    // Anything the one-pass reader would resynchronize after (a zstd frame's magic included).
    if (n < kIpfixFileHeaderBytes || LoadBe16(head) != kIpfixFileVersion) return std::nullopt;
    const size_t len = LoadBe16(head + 2);
    if (len < kIpfixFileHeaderBytes || len > plan.file_bytes - pos) return std::nullopt;
    const uint32_t domain = LoadBe32(head + 12);
    if (std::find(domains.begin(), domains.end(), domain) == domains.end()) {
      if (domains.size() == kMaxDomains) return std::nullopt;
      domains.push_back(domain);
    }
    const uint8_t* first_set = n == sizeof(head) ? head + kIpfixFileHeaderBytes : nullptr;
    PRISM_ASSIGN_OR_RETURN(MessageSets sets, ReadSetIds(fd.get(), path, pos, len, first_set));
    if (sets.options_templates) return std::nullopt;
    if (sets.templates) plan.template_messages.emplace_back(pos, static_cast<uint32_t>(len));
    pos += len;
  }
  if (plan.starts.size() < 2) return std::nullopt;
  PRISM_ASSIGN_OR_RETURN(plan.smallest_record_bytes,
                         SmallestRecordBytes(fd.get(), path, plan.template_messages));
  return plan;
}

IpfixRunReader::IpfixRunReader(const IpfixFileRuns& plan, size_t run, FlowSink* sink,
                               PointTable* points, Stats* stats)
    : plan_(plan), run_(run), framer_(plan.path, sink, points, stats) {
  if (run_ > 0) framer_.decoder().DeferToEarlierRun();
}

Status IpfixRunReader::LearnEarlierTemplates(int fd) {
  std::vector<uint8_t> msg;
  for (const auto& [offset, len] : plan_.template_messages) {
    if (offset >= plan_.starts[run_]) break;
    msg.resize(len);
    PRISM_ASSIGN_OR_RETURN(size_t n, ReadAt(fd, plan_.path, msg, offset));
    framer_.decoder().LearnTemplates(std::span<const uint8_t>(msg.data(), n), 0);
  }
  return OkStatus();
}

Status IpfixRunReader::Read() {
  PRISM_ASSIGN_OR_RETURN(Fd fd, OpenForReading(plan_.path));
  PRISM_RETURN_IF_ERROR(LearnEarlierTemplates(fd.get()));
  // The last run reads to the end of the file, as the one-pass reader does.
  const bool last = run_ + 1 == plan_.starts.size();
  const uint64_t end = last ? UINT64_MAX : plan_.starts[run_ + 1];
  // As ReadIpfixFile's buffer (io/ipfix_file.h).
  const std::unique_ptr<uint8_t[]> storage(new uint8_t[kIpfixReadBufferBytes]);
  const std::span<uint8_t> buf(storage.get(), kIpfixReadBufferBytes);
  size_t filled = 0;
  uint64_t base = plan_.starts[run_];
  for (;;) {
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(buf.size() - filled, end - base - filled));
    PRISM_ASSIGN_OR_RETURN(size_t n,
                           ReadAt(fd.get(), plan_.path, buf.subspan(filled, want), base + filled));
    filled += n;
    const bool at_end = n < want || base + filled == end;
    const size_t used = framer_.Decode(buf.data(), filled, base, at_end);
    if (at_end) return OkStatus();
    std::memmove(buf.data(), buf.data() + used, filled - used);
    filled -= used;
    base += used;
  }
}

}  // namespace prism::io
