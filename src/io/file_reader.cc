#include "io/file_reader.h"

#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <optional>

namespace prism::io {
namespace {

constexpr unsigned char kZstdMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};

}  // namespace

StatusOr<std::unique_ptr<FileReader>> FileReader::Open(const std::string& path) {
  std::unique_ptr<FileReader> r(new FileReader());
  r->path_ = path;
  r->file_ = std::fopen(path.c_str(), "rb");
  if (r->file_ == nullptr) {
    return MakeError(ErrorCode::kNotFound, "{}: cannot open: {}", path, std::strerror(errno));
  }
  r->head_.resize(4);
  PRISM_ASSIGN_OR_RETURN(size_t n, r->ReadRaw(r->head_));
  r->head_.resize(n);
  if (n == 4 && std::memcmp(r->head_.data(), kZstdMagic, 4) == 0) {
    ZSTD_DStream* ds = ZSTD_createDStream();
    if (ds == nullptr) return MakeError(ErrorCode::kInternal, "{}: zstd: out of memory", path);
    ZSTD_initDStream(ds);
    r->zstd_ = ds;
    r->zin_.resize(ZSTD_DStreamInSize());
    std::memcpy(r->zin_.data(), r->head_.data(), 4);
    r->zin_size_ = 4;
    r->head_.clear();
  }
  return r;
}

FileReader::~FileReader() {
  if (zstd_ != nullptr) ZSTD_freeDStream(static_cast<ZSTD_DStream*>(zstd_));
  if (file_ != nullptr) std::fclose(file_);
}

StatusOr<size_t> FileReader::ReadRaw(std::span<std::byte> out) {
  size_t n = std::fread(out.data(), 1, out.size(), file_);
  if (n < out.size() && std::ferror(file_)) {
    return MakeError(ErrorCode::kDataLoss, "{}: read error: {}", path_, std::strerror(errno));
  }
  return n;
}

StatusOr<size_t> FileReader::Read(std::span<std::byte> out) {
  if (zstd_ != nullptr) return ReadZstd(out);
  size_t done = 0;
  if (head_pos_ < head_.size()) {
    size_t n = std::min(out.size(), head_.size() - head_pos_);
    std::memcpy(out.data(), head_.data() + head_pos_, n);
    head_pos_ += n;
    done = n;
  }
  if (done == out.size()) return done;
  PRISM_ASSIGN_OR_RETURN(size_t n, ReadRaw(out.subspan(done)));
  return done + n;
}

StatusOr<size_t> FileReader::ReadZstd(std::span<std::byte> out) {
  auto* ds = static_cast<ZSTD_DStream*>(zstd_);
  ZSTD_outBuffer ob{out.data(), out.size(), 0};
  while (ob.pos < ob.size) {
    // Decompress first even without new input: zstd may hold output from the last call.
    ZSTD_inBuffer ib{zin_.data(), zin_size_, zin_pos_};
    size_t out_before = ob.pos;
    size_t in_before = ib.pos;
    size_t ret = ZSTD_decompressStream(ds, &ob, &ib);
    zin_pos_ = ib.pos;
    if (ZSTD_isError(ret)) {
      return MakeError(ErrorCode::kDataLoss, "{}: corrupt zstd stream: {}", path_,
                       ZSTD_getErrorName(ret));
    }
    if (ob.pos != out_before || ib.pos != in_before) {
      frame_open_ = ret != 0;  // 0: a frame just ended (a call without input says nothing)
      continue;
    }
    // No progress: zstd needs more input.
    if (zin_pos_ < zin_size_) {
      return MakeError(ErrorCode::kDataLoss, "{}: zstd stream stalled", path_);
    }
    if (raw_eof_) break;
    PRISM_ASSIGN_OR_RETURN(size_t n, ReadRaw(zin_));
    zin_pos_ = 0;
    zin_size_ = n;
    if (n == 0) raw_eof_ = true;
  }
  if (ob.pos == 0 && raw_eof_ && frame_open_) {
    return MakeError(ErrorCode::kDataLoss, "{}: truncated zstd stream", path_);
  }
  return ob.pos;
}

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  PRISM_ASSIGN_OR_RETURN(auto reader, FileReader::Open(path));
  // Read straight into the string's spare capacity, doubled when full: resizing by 1 MiB before
  // each read zero-filled 2 MiB for a 400 KB topology (500 page faults at start-up).
  std::string data;
  size_t capacity = size_t{1} << 16;
  for (bool end = false; !end;) {
    std::optional<Error> error;
    const size_t old = data.size();
    if (old == capacity) capacity *= 2;
    data.resize_and_overwrite(capacity, [&](char* p, size_t n) {
      const StatusOr<size_t> read =
          reader->Read(std::as_writable_bytes(std::span<char>(p + old, n - old)));
      if (!read) {
        error = read.error();
        return old;
      }
      end = *read == 0;
      return old + *read;
    });
    if (error) return std::unexpected(*error);
  }
  return data;
}

}  // namespace prism::io
