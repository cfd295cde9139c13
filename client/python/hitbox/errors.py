"""Errors of the Hitbox client: one exception class per gRPC status code.

Every failed call raises a HitboxError subclass carrying the gRPC code and the
server's message unchanged; the message names the field that was wrong
(e.g. "queries[3].raycast.translation.x must be finite ..."). Bad arguments
caught before anything is sent raise ValueError or TypeError naming the argument.
"""
from __future__ import annotations

import grpc


class HitboxError(Exception):
    """A call or tick that failed: `code` (grpc.StatusCode), `message` (the server's), `method`."""

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str, *, code: grpc.StatusCode | None = None, method: str = ""):
        super().__init__(f"{method}: {message}" if method else message)
        if code is not None:
            self.code = code
        self.message = message
        self.method = method


class Cancelled(HitboxError):
    code = grpc.StatusCode.CANCELLED


class InvalidArgument(HitboxError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(HitboxError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFound(HitboxError):
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(HitboxError):
    code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(HitboxError):
    code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(HitboxError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPrecondition(HitboxError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class OutOfRange(HitboxError):
    code = grpc.StatusCode.OUT_OF_RANGE


class Unavailable(HitboxError):
    code = grpc.StatusCode.UNAVAILABLE


class Unauthenticated(HitboxError):
    code = grpc.StatusCode.UNAUTHENTICATED


_BY_CODE = {c.code: c for c in (Cancelled, InvalidArgument, DeadlineExceeded, NotFound,
                                 AlreadyExists, PermissionDenied, ResourceExhausted,
                                 FailedPrecondition, OutOfRange, Unavailable, Unauthenticated)}
_BY_NUMBER = {code.value[0]: code for code in grpc.StatusCode}


def error_for(code: grpc.StatusCode | int, message: str, method: str = "") -> HitboxError:
    """The exception for a status code (a grpc.StatusCode or its number, as TickError.code)."""
    if isinstance(code, int):
        code = _BY_NUMBER.get(code, grpc.StatusCode.UNKNOWN)
    cls = _BY_CODE.get(code, HitboxError)
    return cls(message, code=code, method=method)


def from_rpc_error(e: grpc.RpcError, method: str) -> HitboxError:
    """The exception for a failed gRPC call."""
    code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
    details = e.details() if hasattr(e, "details") else str(e)
    return error_for(code or grpc.StatusCode.UNKNOWN, details or "", method)
