// RpcStatus and RpcResult<T>: how the Hitbox client reports the outcome of a
// remote call without exceptions. Unlike core's Status (which only knows the
// errors the collision library itself can produce), an RpcStatus carries any
// gRPC status code number (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, ...) and
// the server's message byte for byte.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "hitbox/status.h"

namespace hitbox {

/// A gRPC status code. The numeric values are the gRPC code numbers
/// (https://grpc.github.io/grpc/core/md_doc_statuscodes.html), stable on the wire.
enum class RpcCode : int {
  kOk = 0,                   ///< success
  kCancelled = 1,            ///< the call was cancelled (by the caller or a closed stream)
  kUnknown = 2,              ///< an error the server did not classify
  kInvalidArgument = 3,      ///< malformed input; the message names the field
  kDeadlineExceeded = 4,     ///< the call's deadline passed before an answer came
  kNotFound = 5,             ///< unknown session or collider id
  kAlreadyExists = 6,        ///< duplicate session or collider id
  kPermissionDenied = 7,     ///< not allowed
  kResourceExhausted = 8,    ///< a limit would be exceeded (sessions, colliders, batch, message size)
  kFailedPrecondition = 9,   ///< e.g. expected_revision does not match
  kAborted = 10,             ///< concurrency conflict
  kOutOfRange = 11,          ///< out of range
  kUnimplemented = 12,       ///< the server does not implement this rpc
  kInternal = 13,            ///< a bug on either side
  kUnavailable = 14,         ///< the server cannot be reached (down, restarting, network)
  kDataLoss = 15,            ///< unrecoverable data loss
  kUnauthenticated = 16,     ///< missing or bad credentials
};

/// Name of a code as gRPC spells it, e.g. "UNAVAILABLE"; "CODE_OUT_OF_RANGE" for other numbers.
const char* RpcCodeName(RpcCode code);

/// The RpcCode of a core error code (kInvalidArgument -> INVALID_ARGUMENT, ...).
RpcCode ToRpcCode(ErrorCode code);

/// Success, or a gRPC code plus the message (the server's, unchanged, when the
/// server produced the error).
class [[nodiscard]] RpcStatus {
 public:
  /// OK.
  RpcStatus() = default;
  /// A status with `code` and `message`; kOk ignores the message.
  RpcStatus(RpcCode code, std::string message)
      : code_(code), message_(code == RpcCode::kOk ? std::string() : std::move(message)) {}
  /// A core Status as an RpcStatus (OK stays OK; codes map by name).
  static RpcStatus FromStatus(const Status& status);

  static RpcStatus Ok() { return {}; }
  bool ok() const { return code_ == RpcCode::kOk; }
  RpcCode code() const { return code_; }
  /// The gRPC code number, 0..16.
  int code_number() const { return static_cast<int>(code_); }
  /// The error message; empty when ok().
  const std::string& message() const { return message_; }
  /// "OK" or "CODE: message", e.g. "NOT_FOUND: session 'arena-7' does not exist".
  std::string ToString() const;

  bool operator==(const RpcStatus& o) const = default;

 private:
  RpcCode code_ = RpcCode::kOk;
  std::string message_;
};

/// A value of type T, or a non-OK RpcStatus.
template <typename T>
class [[nodiscard]] RpcResult {
 public:
  RpcResult(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design
  /// From a failed status. An OK status without a value becomes INTERNAL
  /// (a programming error, reported rather than crashing).
  RpcResult(RpcStatus status)  // NOLINT: implicit by design
      : data_(status.ok() ? RpcStatus(RpcCode::kInternal, "RpcResult built from OK without a value")
                          : std::move(status)) {}
  RpcResult(RpcCode code, std::string message) : RpcResult(RpcStatus(code, std::move(message))) {}

  bool ok() const { return std::holds_alternative<T>(data_); }
  /// The value; only valid when ok() (otherwise std::bad_variant_access).
  const T& value() const& { return std::get<T>(data_); }
  T& value() & { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  /// OK when ok(), else the error.
  RpcStatus status() const { return ok() ? RpcStatus() : std::get<RpcStatus>(data_); }
  /// The error's code (kOk when ok()).
  RpcCode code() const { return ok() ? RpcCode::kOk : std::get<RpcStatus>(data_).code(); }

 private:
  std::variant<T, RpcStatus> data_;
};

}  // namespace hitbox
