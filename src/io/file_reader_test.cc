#include "io/file_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdio>
#include <string>

namespace prism::io {
namespace {

// A file of its own per test, removed at the end.
class TempFile {
 public:
  explicit TempFile(const std::string& bytes) {
    char name[] = "/tmp/prism_file_reader_XXXXXX";
    const int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    path_ = name;
    EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    close(fd);
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Bytes that differ from place to place, so that a chunk read twice or skipped shows.
std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

// `bytes` as one zstd frame; empty if zstd fails.
std::string ZstdOf(const std::string& bytes) {
  std::string packed(ZSTD_compressBound(bytes.size()), '\0');
  const size_t n = ZSTD_compress(packed.data(), packed.size(), bytes.data(), bytes.size(), 3);
  packed.resize(ZSTD_isError(n) ? 0 : n);
  return packed;
}

TEST(ReadWholeFile, ReadsAFileSeveralTimesItsFirstBufferWhole) {
  const std::string bytes = Pattern(300'000);  // past 64 KiB, doubled three times
  const TempFile file(bytes);
  const StatusOr<std::string> data = ReadWholeFile(file.path());
  ASSERT_TRUE(data) << data.error().message;
  EXPECT_EQ(*data, bytes);
}

TEST(ReadWholeFile, ReadsAnEmptyFileAndOneOfExactlyTheFirstBuffer) {
  const TempFile empty("");
  const StatusOr<std::string> none = ReadWholeFile(empty.path());
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  const std::string bytes = Pattern(size_t{1} << 16);
  const TempFile exact(bytes);
  const StatusOr<std::string> data = ReadWholeFile(exact.path());
  ASSERT_TRUE(data);
  EXPECT_EQ(*data, bytes);
}

TEST(ReadWholeFile, DecompressesAZstdFile) {
  const std::string bytes = Pattern(200'000);
  const std::string packed = ZstdOf(bytes);
  ASSERT_FALSE(packed.empty());
  const TempFile file(packed);
  const StatusOr<std::string> data = ReadWholeFile(file.path());
  ASSERT_TRUE(data) << data.error().message;
  EXPECT_EQ(*data, bytes);
}

TEST(ReadWholeFile, ATruncatedZstdFileIsAnError) {
  const std::string packed = ZstdOf(Pattern(200'000));
  ASSERT_FALSE(packed.empty());
  const TempFile file(packed.substr(0, packed.size() / 2));
  const StatusOr<std::string> data = ReadWholeFile(file.path());
  ASSERT_FALSE(data);
  EXPECT_EQ(data.error().code, ErrorCode::kDataLoss);
}

TEST(ReadWholeFile, AMissingFileIsNotFound) {
  const StatusOr<std::string> data = ReadWholeFile("/nonexistent/prism_file_reader");
  ASSERT_FALSE(data);
  EXPECT_EQ(data.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace prism::io
