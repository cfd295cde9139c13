// The session transaction: how one request's changes and queries happen on a
// session, the same for ApplyChanges, Query (either rpc API) and each tick of
// a Tick stream. Changes are checked, priced and built outside every lock,
// then applied under the session's exclusive lock; the queries run against
// the result, the moves they apply to their colliders follow, and the whole
// request becomes one revision and one log record. Any failure on the way
// takes the changes back, so a refused request changes nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <google/protobuf/repeated_ptr_field.h>
#include <grpcpp/grpcpp.h>

#include "hitbox/v1/hitbox.pb.h"
#include "hitbox/wire/packed.h"
#include "hitbox/world/collider_set.h"
#include "memory_budget.h"
#include "metrics.h"
#include "persistence.h"
#include "session.h"

namespace hitbox::server {

/// What may stop a call's work early: its deadline and its cancellation.
struct CallControl {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// True once the call was cancelled (may be empty: never).
  std::function<bool()> cancelled;
  /// The deadline and cancellation of a gRPC call (callback API; on the
  /// completion-queue API the caller replaces `cancelled`, see cq_server.h).
  static CallControl Of(grpc::ServerContextBase* ctx);
};

/// Buffers of a transaction, reusable from one to the next (a Tick stream
/// keeps them, so a warm stream allocates little).
struct TxnScratch {
  std::vector<ColliderChange> changes;
  std::vector<hitbox::Query> queries;
  /// The answers, one per query, after a successful Run.
  std::vector<QueryResult> results;
  /// The queries whose shape and pose come from a collider: (index, id).
  std::vector<std::pair<size_t, uint64_t>> shapes_from;
  /// Indices of the moves that apply to their collider.
  std::vector<size_t> applies;
  /// The applied moves as changes.
  std::vector<ColliderChange> moved;
  /// The packed decoder's buffers (its shapes table).
  wire::PackedScratch packed;
};

/// One request to Run: a tick's changes (none for Query) and its queries.
struct TxnRequest {
  const google::protobuf::RepeatedPtrField<v1::ColliderChange>& changes;
  const google::protobuf::RepeatedPtrField<v1::Query>& queries;
  /// The tick of the changes (Tick), none for Query.
  std::optional<uint64_t> tick;
  /// A tick's packed queries (TickRequest.packed; `queries` are then its
  /// PACKED_MESSAGE entries); null: the queries are `queries`.
  const v1::PackedQueries* packed = nullptr;
};

/// How a transaction ended besides its status.
struct TxnOutcome {
  /// The session's revision after it (when it succeeded).
  uint64_t revision = 0;
  /// The session's collider count after it (Apply).
  uint64_t collider_count = 0;
  /// It failed because the session was deleted (NOT_FOUND) when its lock was
  /// taken; a Tick stream then ends.
  bool session_gone = false;
  /// The watch events of its batch (ColliderSet::watch_events()), and
  /// whether the session's limit cut them.
  std::vector<WatchEvent> events;
  bool events_truncated = false;
};

/// What the transactions of one server share.
struct TxnEnv {
  SessionRegistry* sessions = nullptr;
  /// Answers in flight (--max-inflight-bytes).
  InflightMemory* answer_memory = nullptr;
  /// Geometry being built (--max-build-bytes).
  InflightMemory* build_memory = nullptr;
  MemoryTrimmer* trimmer = nullptr;
  /// The session files (--data-dir); null: none.
  SessionStore* store = nullptr;
  /// Query threads for large batches; null: the calling thread.
  ThreadPool* pool = nullptr;
  Metrics* metrics = nullptr;
  /// Bytes one more collider is assumed to add to a session (--max-memory).
  uint64_t bytes_per_collider = 0;
  /// Largest message, bytes: bounds the hits of one answer.
  uint64_t max_message_bytes = 0;
  /// Transactions with queries each session records for the inspector
  /// (--record-queries; 0: none).
  uint32_t record_query_ticks = 0;
};

/// Runs the transactions of a server's sessions. Thread-safe.
class SessionTxn {
 public:
  explicit SessionTxn(const TxnEnv& env) : env_(env) {}

  /// ApplyChanges: `changes` as one batch, checked against `tick` and
  /// `expected_revision` (either may be unset); `call` stops its builds.
  Status Apply(Session& s, const google::protobuf::RepeatedPtrField<v1::ColliderChange>& changes,
               std::optional<uint64_t> tick, std::optional<uint64_t> expected_revision,
               const CallControl& call, TxnOutcome* out);

  /// Query or a tick: the request's changes, its queries against them, and
  /// the moves they apply, as one batch; answers in scratch->results. `mem`
  /// holds their bytes (and the response's) on success and nothing on
  /// failure; `call` stops the builds and the queries.
  Status Run(Session& s, const TxnRequest& req, const CallControl& call, TxnScratch* scratch,
             MemoryReservation* mem, TxnOutcome* out);

  /// Shapes that change batches started to build, since start.
  uint64_t shapes_built() const { return shapes_built_.load(std::memory_order_relaxed); }

 private:
  // Converts and checks a query list, clamping max_hits (no lock needed).
  Status ConvertQueries(const Session& s, const TxnRequest& req, TxnScratch* scratch) const;
  // Converts a change list, pricing it first when its shapes need a build
  // (no lock held on entry): the whole batch is checked without building
  // (wire::CheckChanges), then its geometry against the session's limits and
  // build-work budget, then its ids, revision, tick and collider count
  // against the set (shared lock), then its growth (colliders plus priced
  // shape bytes) is reserved against --max-memory and its shape bytes
  // against --max-build-bytes; only then are its shapes built, one by one,
  // with `call`'s deadline and cancellation checked before each. `held`
  // keeps the reservations for ApplyLocked. Batches without such shapes are
  // converted as they are (ApplyLocked prices their collider growth).
  Status Prepare(const Session& s, const google::protobuf::RepeatedPtrField<v1::ColliderChange>& in,
                 std::optional<uint64_t> tick, std::optional<uint64_t> expected_revision,
                 const CallControl& call, std::vector<ColliderChange>* out, BatchReservation* held);
  // Applies converted changes; the caller holds the exclusive lock. Growth
  // in colliders is checked against --max-memory before anything changes,
  // unless `held` holds the batch's priced reservation (settled here). The
  // watch update stops at the call's deadline or cancellation (the batch is
  // then refused whole).
  Status ApplyLocked(Session& s, const std::vector<ColliderChange>& changes,
                     std::optional<uint64_t> tick, std::optional<uint64_t> expected_revision,
                     const CallControl& call, BatchReservation* held = nullptr);
  // Commits an applied batch to the store's log (exclusive lock held; no-op
  // without a store or for an empty batch); `moved` (applied character moves)
  // follow `changes` in the same record, with the batch's `tick`. On a write
  // failure the batch is undone in memory from `before` / `revision`, so
  // memory and disk agree, and UNAVAILABLE naming the data dir is returned.
  Status PersistLocked(Session& s,
                       const google::protobuf::RepeatedPtrField<v1::ColliderChange>& changes,
                       const std::vector<ColliderChange>& moved, std::optional<uint64_t> tick,
                       const std::vector<std::pair<uint64_t, std::optional<Collider>>>& before,
                       uint64_t revision);
  // Runs converted queries in chunks; the caller holds the session lock
  // (either mode). RESOURCE_EXHAUSTED as soon as the answers hold more hits
  // than fit in max_message_bytes, when the session's work budget runs out,
  // or when a chunk's worst-case answer does not fit in the server's
  // in-flight memory (held in `mem`); DEADLINE_EXCEEDED / CANCELLED from
  // `call`. On error the results are released.
  Status RunLocked(const Session& s, const std::vector<hitbox::Query>& queries,
                   std::vector<QueryResult>* results, const CallControl& call,
                   MemoryReservation* mem) const;
  // Records the queries of a finished transaction (--record-queries, or
  // while an inspector watches the session), with no session lock held: a
  // no-op when neither holds or there were none.
  void Record(const Session& s, std::optional<uint64_t> tick, uint64_t revision,
              const TxnScratch& scratch) const;
  // Reserves the bytes of the response message built from `results` on top
  // of theirs; RESOURCE_EXHAUSTED when the in-flight memory is full.
  Status ReserveResponse(const std::vector<QueryResult>& results, MemoryReservation* mem) const;
  // Most hits one response may carry: max_message_bytes / kBytesPerHit.
  uint64_t HitBudget() const;

  const TxnEnv env_;
  std::atomic<uint64_t> shapes_built_{0};
};

/// Bytes the hits of a result hold now.
uint64_t HeldBytes(const QueryResult& r);

}  // namespace hitbox::server
