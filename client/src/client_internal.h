// Internals shared by client.cc and tick_stream.cc (not installed).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <grpcpp/support/status.h>

#include "hitbox/client.h"
#include "hitbox/v1/hitbox.grpc.pb.h"
#include "hitbox/wire/convert.h"

namespace hitbox::internal {

/// The gRPC status as an RpcStatus: same code number, message unchanged.
RpcStatus FromGrpc(const grpc::Status& status);

/// Query results of an answer into `out`; INTERNAL when their count is not `expected`.
RpcStatus ResultsFromProto(const wire::Repeated<v1::QueryResult>& in, size_t expected,
                           std::vector<QueryResult>* out);

/// Fills a TickRequest (query tags are their indices); the queries named in
/// `shapes_from` name their collider instead of carrying shape and pose.
/// INVALID_ARGUMENT (nothing usable written) for an index past the queries.
RpcStatus TickToProto(const std::string& session_id, uint64_t tick,
                      std::span<const ColliderChange> changes,
                      std::span<const hitbox::Query> queries,
                      std::span<const ShapeFromCollider> shapes_from, v1::TickRequest* out);

/// As TickToProto, the queries packed (TickRequest.packed, asking for packed
/// answers); `from` is a buffer kept by the caller.
RpcStatus TickToPacked(const std::string& session_id, uint64_t tick,
                       std::span<const ColliderChange> changes,
                       std::span<const hitbox::Query> queries,
                       std::span<const ShapeFromCollider> shapes_from,
                       std::vector<std::optional<uint64_t>>* from, v1::TickRequest* out);

/// Queries into `out` (tags are their indices), as TickToProto.
RpcStatus QueriesToProto(std::span<const hitbox::Query> queries,
                         std::span<const ShapeFromCollider> shapes_from,
                         wire::Repeated<v1::Query>* out);

/// What the server behind one channel takes (GetServerInfo), asked on first
/// use and kept; one per Client, shared with its tick streams (which may
/// outlive it). Thread-safe.
class ServerFeatures {
 public:
  explicit ServerFeatures(std::shared_ptr<grpc::Channel> channel);
  /// Whether tick streams may send the packed form. The first call asks the
  /// server (sending `token` when not empty, within `timeout`); its answer,
  /// or UNIMPLEMENTED (a server older than the rpc: false), is kept. Any
  /// other failure (unreachable, denied, deadline) is false for this caller
  /// only: the next call asks again.
  bool PackedTicks(const std::string& token, std::chrono::nanoseconds timeout,
                   bool wait_for_ready);

 private:
  std::unique_ptr<v1::Hitbox::Stub> stub_;
  std::mutex mu_;
  std::optional<bool> packed_ticks_;  // unset: not known yet
};

/// Calls a tick's callback (when set) with its outcome; an exception it
/// throws stops here.
void CallTickCallback(const TickCallback& done, RpcResult<TickResult> result);
void CallTickDone(const TickDoneCallback& done, const RpcStatus& status);

/// A tick's answer `r` into `*out` (its buffers reused); the tick's error
/// when it has one, INTERNAL when the results are not `query_count`.
RpcStatus DecodeTickResponse(const v1::TickResponse& r, size_t query_count, TickResult* out);

/// What a Tick stream opens with (Client::OpenTickStream), and the steps
/// both kinds of stream take alike.
struct TickStreamSetup {
  std::shared_ptr<grpc::Channel> channel;  // kept alive by the stream
  std::string session_id;
  TickStreamOptions options;
  bool wait_for_ready = false;
  std::string token;  // sent as `authorization: Bearer` metadata when not empty
  std::shared_ptr<ServerFeatures> features;
  std::chrono::nanoseconds probe_timeout{0};  // of the packed form's ask

  /// Readies `ctx` for the stream opening now: the stream's deadline
  /// (options.timeout from now), wait_for_ready and the token.
  void Prepare(grpc::ClientContext* ctx) const;
  /// Whether the stream sends the packed form: asked for, and the server
  /// takes it (`features`, within `probe_timeout`); called before the
  /// first tick, a server without the packed form gets messages.
  bool SendsPacked() const;
  /// Tick `tick` as a request of that form (TickToPacked, `from` its
  /// buffer, or TickToProto).
  RpcStatus Encode(bool packed, uint64_t tick, std::span<const ColliderChange> changes,
                   std::span<const hitbox::Query> queries,
                   std::span<const ShapeFromCollider> shapes_from,
                   std::vector<std::optional<uint64_t>>* from, v1::TickRequest* out) const;
};

/// Opens a Tick stream with the callback API; with options.blocking,
/// StartBlockingTickStream's.
std::unique_ptr<TickStream> StartTickStream(TickStreamSetup setup);

/// The same stream on gRPC's synchronous API (TickStreamOptions::blocking):
/// each tick written and its answer read on the calling thread.
std::unique_ptr<TickStream> StartBlockingTickStream(TickStreamSetup setup);

}  // namespace hitbox::internal
