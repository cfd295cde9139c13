#include "hitbox/rpc_status.h"

namespace hitbox {

const char* RpcCodeName(RpcCode code) {
  switch (code) {
    case RpcCode::kOk: return "OK";
    case RpcCode::kCancelled: return "CANCELLED";
    case RpcCode::kUnknown: return "UNKNOWN";
    case RpcCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case RpcCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case RpcCode::kNotFound: return "NOT_FOUND";
    case RpcCode::kAlreadyExists: return "ALREADY_EXISTS";
    case RpcCode::kPermissionDenied: return "PERMISSION_DENIED";
    case RpcCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case RpcCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case RpcCode::kAborted: return "ABORTED";
    case RpcCode::kOutOfRange: return "OUT_OF_RANGE";
    case RpcCode::kUnimplemented: return "UNIMPLEMENTED";
    case RpcCode::kInternal: return "INTERNAL";
    case RpcCode::kUnavailable: return "UNAVAILABLE";
    case RpcCode::kDataLoss: return "DATA_LOSS";
    case RpcCode::kUnauthenticated: return "UNAUTHENTICATED";
  }
  return "CODE_OUT_OF_RANGE";
}

RpcCode ToRpcCode(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return RpcCode::kInvalidArgument;
    case ErrorCode::kNotFound: return RpcCode::kNotFound;
    case ErrorCode::kAlreadyExists: return RpcCode::kAlreadyExists;
    case ErrorCode::kResourceExhausted: return RpcCode::kResourceExhausted;
    case ErrorCode::kFailedPrecondition: return RpcCode::kFailedPrecondition;
    case ErrorCode::kDeadlineExceeded: return RpcCode::kDeadlineExceeded;
    case ErrorCode::kCancelled: return RpcCode::kCancelled;
    case ErrorCode::kOutOfRange: return RpcCode::kOutOfRange;
    case ErrorCode::kUnavailable: return RpcCode::kUnavailable;
    case ErrorCode::kInternal: return RpcCode::kInternal;
  }
  return RpcCode::kInternal;
}

RpcStatus RpcStatus::FromStatus(const Status& status) {
  if (status.ok()) return {};
  return {ToRpcCode(status.code()), status.message()};
}

std::string RpcStatus::ToString() const {
  if (ok()) return "OK";
  std::string out = RpcCodeName(code_);
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

}  // namespace hitbox
