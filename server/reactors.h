// The callback-API reactors of the rpcs that are more than one answer: the
// ListColliders stream, the Tick stream, and the Query call that holds its
// answer's bytes until it is sent. HitboxService's entry points make them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "hitbox/v1/hitbox.grpc.pb.h"
#include "hitbox/world/collider_set.h"
#include "auth.h"
#include "memory_budget.h"
#include "service.h"

namespace hitbox::server {

/// Default ListColliders page size (colliders per message).
inline constexpr uint32_t kDefaultPageSize = 1024;

/// Streams `snapshot` (sorted by id, taken at `revision`) in pages of
/// `page_size`, each built once the previous write completed (flow control);
/// holds `slot` and `memory` until the stream is done.
grpc::ServerWriteReactor<v1::ListCollidersResponse>* NewListCollidersReactor(
    std::vector<Collider> snapshot, uint64_t revision, uint32_t page_size,
    std::unique_ptr<InFlightSlot> slot, std::unique_ptr<MemoryReservation> memory);
/// Ends a ListColliders call at once with `error`.
grpc::ServerWriteReactor<v1::ListCollidersResponse>* NewListCollidersReactor(
    const grpc::Status& error);

/// One Tick stream (HitboxService::DoTick per tick): reads a tick only after
/// the previous answer was written, and ends at once when its session is
/// deleted or expires. Holds `slot` (--max-in-flight) for its whole life.
grpc::ServerBidiReactor<v1::TickRequest, v1::TickResponse>* StartTickReactor(
    HitboxService* service, grpc::CallbackServerContext* ctx, std::unique_ptr<InFlightSlot> slot);

/// Most events a WatchEvents stream may have queued for a slow client; past
/// it the stream ends with RESOURCE_EXHAUSTED (a gap is never silent).
inline constexpr size_t kMaxQueuedWatchEvents = 65'536;

/// One WatchEvents stream on `session`: each applied batch with events for
/// `watch_ids` (empty: all) becomes one message, written in order; ends
/// with NOT_FOUND when the session goes. Holds `slot` for its whole life.
grpc::ServerWriteReactor<v1::WatchEventsResponse>* StartWatchEventsReactor(
    std::shared_ptr<Session> session, std::vector<uint64_t> watch_ids,
    std::unique_ptr<InFlightSlot> slot);
/// Ends a WatchEvents call at once with `error`.
grpc::ServerWriteReactor<v1::WatchEventsResponse>* NewWatchEventsReactor(
    const grpc::Status& error);

/// One Query call: holds the bytes of its answer in the in-flight budget until
/// the response has been sent.
class QueryReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit QueryReactor(InflightMemory* inflight) : memory_(inflight) {}
  MemoryReservation* memory() { return &memory_; }
  void OnDone() override { delete this; }

 private:
  MemoryReservation memory_;
};

}  // namespace hitbox::server
