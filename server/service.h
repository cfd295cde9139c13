// The hitbox.v1.Hitbox service on the gRPC callback API: a thin adapter from
// the wire messages (hitbox_wire) to sessions, with admission, auth and the
// log. What a request does to a session is SessionTxn's (session_txn.h); the
// streaming reactors are in reactors.h, the budgets in memory_budget.h, the
// idle reaper in reaper.h.
//
// Locking: the session map lock is held only for lookups; each session's
// shared_mutex is taken shared by queries and reads, exclusively by changes
// (so a batch is atomic and queries never see half of it). Validation and
// proto conversion happen outside every lock. A tick with changes runs its
// queries under the same exclusive lock, so they see exactly its changes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "hitbox/v1/hitbox.grpc.pb.h"
#include "hitbox/world/collider_set.h"
#include "auth.h"
#include "maps.h"
#include "memory_budget.h"
#include "metrics.h"
#include "persistence.h"
#include "reaper.h"
#include "session.h"
#include "session_txn.h"

namespace hitbox::server {

/// Configuration of the service.
struct ServiceOptions {
  ServerLimits limits;
  /// Worker threads of the query pool for large batches (0: the CPUs the
  /// process may use, see ProcessCpuBudget; 1: no pool, batches run on the
  /// calling thread).
  size_t threads = 0;
  /// Who may do what (auth.h) and the in-flight request cap.
  AuthOptions auth;
  /// The shared maps sessions may be created on (--maps; may be null: none).
  std::shared_ptr<const MapLibrary> maps;
  /// Give freed memory back to the system after big frees (MemoryTrimmer;
  /// --malloc-trim).
  bool malloc_trim = true;
  /// Transactions with queries each session keeps, with their hits, for the
  /// inspector (--record-queries N; 0: none recorded).
  uint32_t record_query_ticks = 0;
  /// Sessions build the merged meshes of their query batches on a thread of
  /// their own (ColliderSet::SetBackgroundCaches); false: in the batch that
  /// makes them (tests that look at them).
  bool background_caches = true;
};

class HitboxService final : public v1::Hitbox::CallbackService {
 public:
  /// `store`: the session files of --data-dir (null: no persistence).
  explicit HitboxService(const ServiceOptions& options, std::unique_ptr<SessionStore> store = nullptr);
  ~HitboxService() override;

  grpc::ServerUnaryReactor* CreateSession(grpc::CallbackServerContext* ctx,
                                          const v1::CreateSessionRequest* req,
                                          v1::SessionInfo* resp) override;
  grpc::ServerUnaryReactor* GetSession(grpc::CallbackServerContext* ctx,
                                       const v1::GetSessionRequest* req,
                                       v1::SessionInfo* resp) override;
  grpc::ServerUnaryReactor* ListSessions(grpc::CallbackServerContext* ctx,
                                         const v1::ListSessionsRequest* req,
                                         v1::ListSessionsResponse* resp) override;
  grpc::ServerUnaryReactor* DeleteSession(grpc::CallbackServerContext* ctx,
                                          const v1::DeleteSessionRequest* req,
                                          v1::DeleteSessionResponse* resp) override;
  grpc::ServerUnaryReactor* ApplyChanges(grpc::CallbackServerContext* ctx,
                                         const v1::ApplyChangesRequest* req,
                                         v1::ApplyChangesResponse* resp) override;
  grpc::ServerUnaryReactor* GetColliders(grpc::CallbackServerContext* ctx,
                                         const v1::GetCollidersRequest* req,
                                         v1::GetCollidersResponse* resp) override;
  grpc::ServerWriteReactor<v1::ListCollidersResponse>* ListColliders(
      grpc::CallbackServerContext* ctx, const v1::ListCollidersRequest* req) override;
  grpc::ServerUnaryReactor* Query(grpc::CallbackServerContext* ctx, const v1::QueryRequest* req,
                                  v1::QueryResponse* resp) override;
  grpc::ServerBidiReactor<v1::TickRequest, v1::TickResponse>* Tick(
      grpc::CallbackServerContext* ctx) override;
  grpc::ServerWriteReactor<v1::WatchEventsResponse>* WatchEvents(
      grpc::CallbackServerContext* ctx, const v1::WatchEventsRequest* req) override;
  // Maps (service_maps.cc).
  grpc::ServerUnaryReactor* ListMaps(grpc::CallbackServerContext* ctx,
                                     const v1::ListMapsRequest* req,
                                     v1::ListMapsResponse* resp) override;
  grpc::ServerUnaryReactor* GetMap(grpc::CallbackServerContext* ctx, const v1::GetMapRequest* req,
                                   v1::MapInfo* resp) override;
  /// What this server takes (ServerInfo: the packed tick form).
  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* ctx,
                                          const v1::GetServerInfoRequest* req,
                                          v1::ServerInfo* resp) override;
  grpc::Status DoListMaps(v1::ListMapsResponse* resp) const;
  grpc::Status DoGetMap(const v1::GetMapRequest& req, v1::MapInfo* resp) const;
  /// The map named `id` for a new session: NOT_FOUND naming it when unknown.
  grpc::Status ResolveMap(const std::string& id, std::shared_ptr<const Map>* out) const;

  // The rpc bodies, callable directly (tests, the demo world, the tick reactor).
  grpc::Status DoCreateSession(const v1::CreateSessionRequest& req, v1::SessionInfo* resp);
  grpc::Status DoGetSession(const v1::GetSessionRequest& req, v1::SessionInfo* resp);
  grpc::Status DoListSessions(v1::ListSessionsResponse* resp);
  grpc::Status DoDeleteSession(const v1::DeleteSessionRequest& req);
  /// `call` stops the batch's builds between shapes (its deadline, its cancellation).
  grpc::Status DoApplyChanges(const v1::ApplyChangesRequest& req, v1::ApplyChangesResponse* resp,
                              const CallControl& call = {});
  grpc::Status DoGetColliders(const v1::GetCollidersRequest& req, v1::GetCollidersResponse* resp);
  /// `mem` (may be null: a reservation local to the call) holds the bytes of
  /// the answer when it returns, to be given back once the response is sent.
  grpc::Status DoQuery(const v1::QueryRequest& req, v1::QueryResponse* resp,
                       const CallControl& call = {}, MemoryReservation* mem = nullptr);
  /// Stops serving Query on the callback API, for a service that serves it on
  /// completion queues beside this one (CqQueryServer); before registration.
  void LeaveQueryToCompletionQueues();
  /// The Query rpc as either API serves it (the callback entry point, the
  /// completion-queue server of cq_server.h): the in-flight slot, the
  /// caller's right to the session, DoQuery, the log of a rejection.
  grpc::Status AnswerQuery(const grpc::ServerContextBase& ctx, const v1::QueryRequest& req,
                           v1::QueryResponse* resp, const CallControl& call,
                           MemoryReservation* mem);

  /// Per-stream state of a Tick stream; its transaction buffers (TxnScratch)
  /// are reused from tick to tick (they keep their capacity).
  struct TickStream : TxnScratch {
    /// Session id bound by the first tick that named a valid one.
    std::string session_id;
    /// The session, once resolved.
    std::shared_ptr<Session> session;
    /// The session was deleted or expired: the stream must end (DoTick
    /// returns NOT_FOUND) and no longer holds the session's memory.
    bool session_deleted = false;
    /// When set, registered with the session once bound, so that deleting
    /// the session ends the stream at once (the tick reactor).
    std::weak_ptr<SessionObserver> observer;
    /// The bytes of the last tick's answer (given back at the next tick).
    MemoryReservation memory;
  };
  /// The auth check of a Tick stream whose tick names `session_id` (auth.h).
  grpc::Status AuthorizeTick(grpc::CallbackServerContext* ctx, const std::string& session_id);
  /// Runs one tick and counts as activity on the session. OK: resp holds the
  /// results, or `error` for a rejected tick (the stream goes on). NOT_FOUND:
  /// the stream's session was deleted or expired, the stream must end with
  /// this status (resp is left empty). `call` stops its queries early.
  grpc::Status DoTick(TickStream* stream, const v1::TickRequest& req, v1::TickResponse* resp,
                      const CallControl& call = {});
  /// The budget of answers in flight.
  InflightMemory& answer_memory() { return answer_memory_; }
  /// The budget of geometry being built at once (--max-build-bytes).
  InflightMemory& build_memory() { return build_memory_; }
  /// Gives freed memory back to the system (see MemoryTrimmer).
  MemoryTrimmer& trimmer() { return trimmer_; }
  /// Shapes that change batches started to build (hulls, meshes,
  /// heightfields, compounds), since start: a batch refused by its price or
  /// its checks adds none.
  uint64_t shapes_built() const { return txn_->shapes_built(); }

  /// Deletes every session idle past its idle timeout as of `now_ns`
  /// (SteadyNowNs()), like DeleteSession, logging each. Returns the steady
  /// time (ns) at which the next session could expire, INT64_MAX for none.
  /// The reaper thread calls it; tests may too.
  int64_t ReapIdleSessions(int64_t now_ns);
  /// Bytes one more collider is assumed to add to a session (measured on an
  /// actual ColliderSet at start), for the --max-memory check before a batch.
  uint64_t bytes_per_collider() const { return bytes_per_collider_; }

  /// Loads the sessions of the store (persistence.h) before serving; none without one.
  size_t RecoverSessions();
  /// The session files of --data-dir, or null.
  SessionStore* store() { return store_.get(); }

  /// The server's sessions.
  SessionRegistry& sessions() { return sessions_; }
  /// The auth decisions of every rpc entry point.
  const Authorizer& authorizer() const { return auth_; }
  const ServiceOptions& options() const { return options_; }
  /// Query threads in use (options().threads, or the usable CPUs when that is 0).
  size_t threads() const { return threads_; }
  /// The server's counters (metrics.h); the rpc counts come from its interceptor.
  Metrics& metrics() { return metrics_; }

 private:
  // Finds a session by id: INVALID_ARGUMENT for a malformed id, NOT_FOUND.
  grpc::Status Resolve(const std::string& id, std::shared_ptr<Session>* out) const;
  // Fills a SessionInfo; takes the shared lock.
  void Describe(const Session& s, v1::SessionInfo* info) const;
  // The gate of every rpc entry point: the in-flight slot, then the caller's
  // right to `access` (auth.h). Denials are logged (never the token).
  // `slot` is the outcome of taking the call's in-flight slot.
  grpc::Status Admit(const grpc::ServerContextBase& ctx, const grpc::Status& slot,
                     Access access, const std::string& session_id, const char* rpc) const;
  // Logs a rejected request at warning level and passes the status through.
  grpc::Status Rejected(const char* rpc, const std::string& session, grpc::Status status) const;

  // Wakes the reaper to recompute its deadline (a session was created).
  void KickReaper();
  // Frees the collider set of a session just removed (deleted or expired)
  // at once, and asks for a trim when it held much.
  void ReleaseSessionMemory(Session& s);

  const ServiceOptions options_;
  mutable InflightMemory answer_memory_;
  InflightMemory build_memory_;
  MemoryTrimmer trimmer_;
  mutable Metrics metrics_;
  size_t threads_ = 1;
  uint64_t bytes_per_collider_ = 0;
  SessionRegistry sessions_;
  Authorizer auth_;
  mutable InFlightLimiter in_flight_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<SessionStore> store_;  // null without --data-dir
  std::unique_ptr<SessionTxn> txn_;      // set up last in the constructor
  std::unique_ptr<IdleReaper> reaper_;  // calls ReapIdleSessions; started last
};

/// Most inside ids one WatchInfo lists (inside_count says how many there are).
inline constexpr size_t kMaxListedInside = 256;
/// Appends the set's watches to info->watches, sorted by id (its lock held).
void DescribeWatches(const ColliderSet& set, v1::SessionInfo* info);

/// Converts core results to proto, tagging each with its query's tag.
void ResultsToProto(const std::vector<QueryResult>& results,
                    const google::protobuf::RepeatedPtrField<v1::Query>& queries,
                    google::protobuf::RepeatedPtrField<v1::QueryResult>* out);

}  // namespace hitbox::server
