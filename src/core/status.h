// File: core/status.h
// The one error type of llmprism. Fallible setup and I/O return Status or StatusOr<T>
// (std::expected, [[nodiscard]]). Bad *data* is not an error: it is counted in Stats
// (core/stats.h) and skipped. Only input that is unusable as a whole becomes an Error; the CLI
// maps it to exit code 2 (docs/design.md, Error policy).
#pragma once

#include <expected>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace prism {

enum class ErrorCode {
  kInvalidArgument,  // bad flag, bad config
  kNotFound,         // missing file
  kDataLoss,         // input exists but holds nothing usable (bad magic, no valid record)
  kInternal,
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;  // names the file and, where known, the line or byte offset
};

// Status and StatusOr<T> are std::expected with one addition: they are [[nodiscard]], so a call
// whose error is dropped does not compile (the build makes -Wunused-result an error). Discard one
// on purpose only with a cast and a comment saying why: `(void)Foo();  // reason`.
template <typename T>
class [[nodiscard("handle the error or discard it explicitly: (void)expr; // why")]] StatusOr
    : public std::expected<T, Error> {
 public:
  using Base = std::expected<T, Error>;
  using Base::Base;
  using Base::operator=;
  StatusOr() = default;
  StatusOr(const Base& b) : Base(b) {}       // NOLINT: implicit, as std::expected converts
  StatusOr(Base&& b) : Base(std::move(b)) {}  // NOLINT
};

class [[nodiscard("handle the error or discard it explicitly: (void)expr; // why")]] Status
    : public std::expected<void, Error> {
 public:
  using Base = std::expected<void, Error>;
  using Base::Base;
  using Base::operator=;
  Status() = default;
  Status(const Base& b) : Base(b) {}       // NOLINT
  Status(Base&& b) : Base(std::move(b)) {}  // NOLINT
};

inline Status OkStatus() { return {}; }

template <typename... Args>
std::unexpected<Error> MakeError(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
  return std::unexpected(Error{code, fmt::format(f, std::forward<Args>(args)...)});
}

}  // namespace prism

// Propagates an error from an expression returning Status / StatusOr.
#define PRISM_RETURN_IF_ERROR(expr)                                 \
  do {                                                              \
    auto prism_status_ = (expr);                                    \
    if (!prism_status_) return std::unexpected(prism_status_.error()); \
  } while (0)

#define PRISM_CONCAT_INNER_(a, b) a##b
#define PRISM_CONCAT_(a, b) PRISM_CONCAT_INNER_(a, b)
#define PRISM_ASSIGN_OR_RETURN(lhs, expr)                                  \
  auto PRISM_CONCAT_(prism_or_, __LINE__) = (expr);                        \
  if (!PRISM_CONCAT_(prism_or_, __LINE__))                                 \
    return std::unexpected(PRISM_CONCAT_(prism_or_, __LINE__).error());    \
  lhs = std::move(*PRISM_CONCAT_(prism_or_, __LINE__))

// Always-on invariant check for bugs (never for bad input).
#define PRISM_CHECK(cond)                                                          \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fmt::print(stderr, "{}:{}: PRISM_CHECK failed: {}\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                \
    }                                                                              \
  } while (0)
