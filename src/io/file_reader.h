// File: io/file_reader.h
// Sequential, chunked reading of an input file for the io readers (flow CSV, topology CSV, IPFIX).
// Files compressed with zstd (detected by the frame magic, whatever the name) are decompressed on
// the fly, so `flows.csv.zst` reads like `flows.csv`. Not thread-safe; one reader per file.
#pragma once

#include <cstddef>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace prism::io {

class FileReader {
 public:
  // kNotFound when the file cannot be opened.
  static StatusOr<std::unique_ptr<FileReader>> Open(const std::string& path);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Fills up to out.size() bytes (fewer only at the end of the file); 0 means end of file.
  // kDataLoss on a read error or a corrupt / truncated zstd stream.
  StatusOr<size_t> Read(std::span<std::byte> out);

  const std::string& path() const { return path_; }
  bool compressed() const { return zstd_ != nullptr; }

 private:
  FileReader() = default;
  StatusOr<size_t> ReadRaw(std::span<std::byte> out);
  StatusOr<size_t> ReadZstd(std::span<std::byte> out);

  std::string path_;
  std::FILE* file_ = nullptr;
  // Bytes read ahead to sniff the zstd magic; handed out before anything else.
  std::vector<std::byte> head_;
  size_t head_pos_ = 0;
  // zstd state (ZSTD_DStream*), kept opaque so the header does not pull in zstd.h.
  void* zstd_ = nullptr;
  std::vector<std::byte> zin_;
  size_t zin_pos_ = 0;
  size_t zin_size_ = 0;
  bool raw_eof_ = false;
  bool frame_open_ = false;  // inside a zstd frame that has not ended yet
};

// Reads the whole (possibly zstd-compressed) file into memory. For small inputs (topology).
StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace prism::io
