// Internals shared by client.cc and tick_stream.cc (not installed).
#pragma once

#include <memory>
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

/// Opens a Tick stream with the callback API on `channel` (kept alive by the
/// stream), sending `token` (when not empty) as `authorization: Bearer` metadata.
std::unique_ptr<TickStream> StartTickStream(std::shared_ptr<grpc::Channel> channel,
                                            std::string session_id,
                                            const TickStreamOptions& options,
                                            bool wait_for_ready, std::string token);

}  // namespace hitbox::internal
