// The hitbox.v1.Hitbox service on the gRPC callback API: a thin adapter from
// the wire messages (hitbox_wire) to sessions of ColliderSets, with limits,
// status codes and threading.
//
// Locking: the session map lock is held only for lookups; each session's
// shared_mutex is taken shared by queries and reads, exclusively by changes
// (so a batch is atomic and queries never see half of it). Validation and
// proto conversion happen outside every lock. A tick with changes runs its
// queries under the same exclusive lock, so they see exactly its changes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "hitbox/world/collider_set.h"
#include "hitbox/v1/hitbox.grpc.pb.h"
#include "auth.h"
#include "maps.h"
#include "persistence.h"
#include "metrics.h"
#include "session.h"

namespace hitbox::server {

/// A server-wide byte budget for the answers of calls in flight (query
/// results and the response messages built from them). Thread-safe.
class InflightMemory {
 public:
  explicit InflightMemory(uint64_t cap) : cap_(cap) {}
  /// Takes `bytes` if they fit under the cap; false (nothing taken) otherwise.
  bool TryTake(uint64_t bytes);
  void Give(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t cap() const { return cap_; }

 private:
  const uint64_t cap_;
  std::atomic<uint64_t> used_{0};
};

/// Bytes one call holds of an InflightMemory, given back when it is reset or
/// destroyed (so an early return can never leak budget).
class MemoryReservation {
 public:
  MemoryReservation() = default;
  explicit MemoryReservation(InflightMemory* pool) : pool_(pool) {}
  MemoryReservation(const MemoryReservation&) = delete;
  MemoryReservation& operator=(const MemoryReservation&) = delete;
  ~MemoryReservation() { Reset(); }
  /// Holds `bytes` in total from now on (taking or giving back the
  /// difference); false when growing would pass the cap (nothing changes).
  bool Resize(uint64_t bytes);
  void Reset() { Resize(0); }
  uint64_t bytes() const { return bytes_; }
  void set_pool(InflightMemory* pool) { pool_ = pool; }

 private:
  InflightMemory* pool_ = nullptr;
  uint64_t bytes_ = 0;
};

/// Heap bytes freed at once from which hitboxd asks for a trim (MemoryTrimmer).
inline constexpr uint64_t kTrimThresholdBytes = 1ull << 20;

/// What a change batch holds between its pricing and its application
/// (HitboxService::PrepareChanges): its growth reserved against --max-memory
/// (settled by ApplyLocked) and its priced geometry in the build budget
/// (--max-build-bytes). Whatever is still held is given back when it is
/// destroyed, so a refused or failed batch can never leak either.
class BatchReservation {
 public:
  BatchReservation(SessionRegistry* sessions, InflightMemory* build_pool)
      : building(build_pool), sessions_(sessions) {}
  BatchReservation(const BatchReservation&) = delete;
  BatchReservation& operator=(const BatchReservation&) = delete;
  ~BatchReservation() { ReleaseMemory(); }
  /// Gives back the --max-memory reservation still held.
  void ReleaseMemory() {
    if (memory > 0) sessions_->ReleaseMemory(memory);
    memory = 0;
  }

  /// The build budget's share (the priced shape bytes), held until the
  /// batch is applied or refused.
  MemoryReservation building;
  /// The batch was priced (its shapes need a build): `memory` is its growth
  /// estimate, reserved; ApplyLocked settles it instead of estimating again.
  bool priced = false;
  /// Bytes reserved against --max-memory, not yet settled.
  uint64_t memory = 0;
  /// The priced bytes of its shapes (Shape::DataBytes once built).
  uint64_t shape_bytes = 0;
  /// About the bytes its parsed request holds in meshes and heightfields
  /// (freed after the call, refused or not: a reason to trim).
  uint64_t request_bytes = 0;
  /// Whether the call's end should ask for a trim (MemoryTrimmer).
  bool WorthTrimming() const;

 private:
  SessionRegistry* sessions_;
};

/// Gives freed heap memory back to the system after big frees (a session
/// deleted or expired, a big batch applied or refused, a map dropped):
/// glibc keeps freed memory in its arenas until trimmed, so without it RSS
/// only grows. Requests are served on a thread of its own, `delay` after the
/// first request (so the call that asked has freed its messages too) and at
/// most once per `delay`. Disabled: Request does nothing.
class MemoryTrimmer {
 public:
  MemoryTrimmer(bool enabled, std::chrono::milliseconds delay);
  ~MemoryTrimmer();
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;
  /// Asks for a trim soon (cheap; never blocks on a trim in progress).
  void Request();
  /// Trims now on the calling thread (tests, benchmarks).
  static void TrimNow();
  /// Trims done so far.
  uint64_t trims() const { return trims_.load(std::memory_order_relaxed); }
  bool enabled() const { return enabled_; }

 private:
  void Loop();
  const bool enabled_;
  const std::chrono::milliseconds delay_;
  std::atomic<uint64_t> trims_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool requested_ = false;  // guarded by mu_
  bool stop_ = false;       // guarded by mu_
  std::thread thread_;
};


/// What may stop a call's queries early: its deadline and its cancellation.
struct CallControl {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// True once the call was cancelled (may be empty: never).
  std::function<bool()> cancelled;
  /// The deadline and cancellation of a gRPC call (callback API; on the
  /// completion-queue API the caller replaces `cancelled`, see cq_server.h).
  static CallControl Of(grpc::ServerContextBase* ctx);
};

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
  // Maps (service_maps.cc).
  grpc::ServerUnaryReactor* ListMaps(grpc::CallbackServerContext* ctx,
                                     const v1::ListMapsRequest* req,
                                     v1::ListMapsResponse* resp) override;
  grpc::ServerUnaryReactor* GetMap(grpc::CallbackServerContext* ctx, const v1::GetMapRequest* req,
                                   v1::MapInfo* resp) override;
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
  /// The Query rpc as either API serves it (the callback entry point, the
  /// completion-queue server of cq_server.h): the in-flight slot, the
  /// caller's right to the session, DoQuery, the log of a rejection.
  grpc::Status AnswerQuery(const grpc::ServerContextBase& ctx, const v1::QueryRequest& req,
                           v1::QueryResponse* resp, const CallControl& call,
                           MemoryReservation* mem);

  /// Per-stream state of a Tick stream.
  struct TickStream {
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
    /// Scratch reused from tick to tick (keeps its capacity).
    std::vector<ColliderChange> changes;
    std::vector<hitbox::Query> queries;
    std::vector<QueryResult> results;
    std::vector<size_t> applies;
    std::vector<ColliderChange> moved;
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
  uint64_t shapes_built() const { return shapes_built_.load(std::memory_order_relaxed); }

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
  // Converts and checks a query list, clamping max_hits (no lock needed).
  grpc::Status ConvertQueries(const Session& s,
                              const google::protobuf::RepeatedPtrField<v1::Query>& in,
                              std::vector<hitbox::Query>* out) const;
  // Converts a change list, pricing it first when its shapes need a build
  // (no lock held on entry): the whole batch is checked without building
  // (wire::CheckChanges), then its geometry against the session's limits and
  // build-work budget, then its ids, revision, tick and collider count
  // against the set (shared lock), then its growth (colliders plus priced
  // shape bytes) is reserved against --max-memory and its shape bytes
  // against --max-build-bytes; only then are its shapes built, one by one,
  // with `call`'s deadline and cancellation checked before each. `held`
  // keeps the reservations for ApplyLocked. Batches without such shapes are
  // converted as before (ApplyLocked prices their collider growth).
  grpc::Status PrepareChanges(const Session& s,
                              const google::protobuf::RepeatedPtrField<v1::ColliderChange>& in,
                              std::optional<uint64_t> tick,
                              std::optional<uint64_t> expected_revision, const CallControl& call,
                              std::vector<ColliderChange>* out, BatchReservation* held);
  // Applies converted changes; the caller holds the exclusive lock. Growth
  // in colliders is checked against --max-memory before anything changes,
  // unless `held` holds the batch's priced reservation (settled here).
  grpc::Status ApplyLocked(Session& s, const std::vector<ColliderChange>& changes,
                           std::optional<uint64_t> tick,
                           std::optional<uint64_t> expected_revision,
                           BatchReservation* held = nullptr);
  // Commits an applied batch to the store's log (exclusive lock held; no-op
  // without a store or for an empty batch); `moved` (applied character moves)
  // follow `changes` in the same record, with the batch's `tick`. On a write failure the batch is
  // undone in memory from `before` / `revision` (as RollBack), so memory and
  // disk agree, and UNAVAILABLE naming the data dir is returned.
  grpc::Status PersistLocked(
      Session& s, const google::protobuf::RepeatedPtrField<v1::ColliderChange>& changes,
      const std::vector<ColliderChange>& moved, std::optional<uint64_t> tick,
      const std::vector<std::pair<uint64_t, std::optional<Collider>>>& before, uint64_t revision);
  // Runs converted queries in chunks; the caller holds the session lock
  // (either mode). RESOURCE_EXHAUSTED as soon as the answers hold more hits
  // than fit in max_message_bytes, when the session's work budget runs out,
  // or when a chunk's worst-case answer does not fit in the server's
  // in-flight memory (held in `mem`); DEADLINE_EXCEEDED / CANCELLED from
  // `call`. On error the results are released.
  grpc::Status RunLocked(const Session& s, const std::vector<hitbox::Query>& queries,
                         std::vector<QueryResult>* results, const CallControl& call,
                         MemoryReservation* mem) const;
  // Reserves the bytes of the response message built from `results` on top
  // of theirs; RESOURCE_EXHAUSTED when the in-flight memory is full.
  grpc::Status ReserveResponse(const std::vector<QueryResult>& results,
                               MemoryReservation* mem) const;
  // RESOURCE_EXHAUSTED: the answers in flight are full; "<field>: ... <needs>
  // <bytes> more: <advice>".
  grpc::Status AnswerMemoryFull(const std::string& field, const std::string& needs,
                                uint64_t bytes, const char* advice) const;
  // Most hits one response may carry: max_message_bytes / kBytesPerHit.
  uint64_t HitBudget() const;
  // Fills a SessionInfo; takes the shared lock.
  void Describe(const Session& s, v1::SessionInfo* info) const;
  // The gate of every rpc entry point: the in-flight slot, then the caller's
  // right to `access` (auth.h). Denials are logged (never the token).
  // `slot` is the outcome of taking the call's in-flight slot.
  grpc::Status Admit(const grpc::ServerContextBase& ctx, const grpc::Status& slot,
                     Access access, const std::string& session_id, const char* rpc) const;
  // Logs a rejected request at warning level and passes the status through.
  grpc::Status Rejected(const char* rpc, const std::string& session, grpc::Status status) const;

  // The reaper thread: sleeps until the next session could expire (or a new
  // session is created), then calls ReapIdleSessions.
  void ReaperLoop();
  // Wakes the reaper to recompute its deadline (a session was created).
  void KickReaper();
  // Frees the collider set of a session just removed (deleted or expired)
  // at once, and asks for a trim when it held much.
  void ReleaseSessionMemory(Session& s);

  const ServiceOptions options_;
  mutable InflightMemory answer_memory_;
  InflightMemory build_memory_;
  MemoryTrimmer trimmer_;
  std::atomic<uint64_t> shapes_built_{0};
  mutable Metrics metrics_;
  size_t threads_ = 1;
  uint64_t bytes_per_collider_ = 0;
  SessionRegistry sessions_;
  Authorizer auth_;
  mutable InFlightLimiter in_flight_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<SessionStore> store_;  // null without --data-dir
  std::mutex reaper_mu_;
  std::condition_variable reaper_cv_;
  bool reaper_stop_ = false;  // guarded by reaper_mu_
  bool reaper_kick_ = false;  // guarded by reaper_mu_
  std::thread reaper_;
};

/// Converts core results to proto, tagging each with its query's tag.
void ResultsToProto(const std::vector<QueryResult>& results,
                    const google::protobuf::RepeatedPtrField<v1::Query>& queries,
                    google::protobuf::RepeatedPtrField<v1::QueryResult>* out);

}  // namespace hitbox::server
