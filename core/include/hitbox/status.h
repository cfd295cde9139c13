// Status and Result<T>: how Hitbox reports failures without exceptions.
// The codes mirror the gRPC status codes the service maps them to.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace hitbox {

/// Why an operation failed. Maps 1:1 onto the gRPC code of the same name.
enum class ErrorCode {
  kInvalidArgument,     ///< malformed input: NaN, negative size, non-unit quaternion, ...
  kNotFound,            ///< an unknown id (collider, session)
  kAlreadyExists,       ///< a duplicate id
  kResourceExhausted,   ///< a configured limit would be exceeded
  kFailedPrecondition,  ///< the operation is not valid in the current state
  kDeadlineExceeded,    ///< the caller's deadline passed before the work finished
  kCancelled,           ///< the caller cancelled the work
  kOutOfRange,          ///< a value outside what is available now (a tick outside the history)
  kUnavailable,         ///< a resource the work needs failed for now (the session log's disk)
  kInternal,            ///< a bug: never expected
};

/// Name of an error code, e.g. "INVALID_ARGUMENT".
const char* ErrorCodeName(ErrorCode code);

/// A failure: a code plus a message naming what was wrong (field, index, value).
struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

/// Success, or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : ok_(false), error_(std::move(error)) {}  // NOLINT: implicit by design
  Status(ErrorCode code, std::string message) : ok_(false), error_{code, std::move(message)} {}

  static Status Ok() { return {}; }
  bool ok() const { return ok_; }
  const Error& error() const { return error_; }
  ErrorCode code() const { return error_.code; }
  const std::string& message() const { return error_.message; }
  /// "OK" or "CODE: message".
  std::string ToString() const;

 private:
  bool ok_ = true;
  Error error_;
};

/// A value of type T, or an Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Error error) : data_(std::move(error)) {}    // NOLINT: implicit by design
  Result(ErrorCode code, std::string message) : data_(Error{code, std::move(message)}) {}
  Result(const Status& status) : data_(status.error()) {}  // NOLINT: from a failed Status only

  bool ok() const { return std::holds_alternative<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T& value() & { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  /// The error; only meaningful when !ok().
  const Error& error() const { return std::get<Error>(data_); }
  Status status() const { return ok() ? Status::Ok() : Status(error()); }

 private:
  std::variant<T, Error> data_;
};

}  // namespace hitbox
