// Sessions of hitboxd: one authoritative ColliderSet each, with its limits and
// a reader/writer lock, and the registry that maps session ids to them.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "hitbox/world/collider_set.h"
#include "hitbox/status.h"
#include "query_recorder.h"

namespace hitbox::server {

/// Limits that apply per session (a session may lower the server's, never raise them).
struct SessionLimits {
  /// Most colliders the session may hold.
  uint64_t max_colliders = 1'000'000;
  /// Most changes in one ApplyChanges request or tick.
  uint32_t max_changes_per_message = 65'536;
  /// Most queries in one Query request or tick.
  uint32_t max_queries_per_message = 65'536;
  /// Most hits reported per query (QueryFilter.max_hits is clamped to it).
  uint32_t max_hits_per_query = 1'024;
  /// Work budget of one Query request or tick: tree nodes all its queries
  /// may visit together. The default is ~0.25-0.5 s of one core, and ~400
  /// nodes for each of 65,536 queries (ordinary queries visit 10-100).
  uint64_t max_nodes_per_message = 25'000'000;
  /// Work budget of one Query request or tick: narrow-phase pair tests
  /// (the default: ~0.2-0.5 s of one core, ~75 per query of a full message).
  uint64_t max_pair_tests_per_message = 5'000'000;
  /// Milliseconds without a call or tick after which the session is deleted;
  /// 0: never. Server default one hour (--session-idle-timeout).
  uint64_t idle_timeout_ms = 3'600'000;
  /// Ticks of pose history for queries with at_tick (lag compensation); the
  /// default of sessions that do not ask (the maximum is
  /// ServerLimits::max_history_ticks).
  uint32_t history_ticks = kDefaultHistoryTicks;
  /// Largest triangle mesh one collider may be (input triangles).
  uint32_t max_mesh_triangles = 1u << 20;
  /// Largest heightfield one collider may be (rows x cols samples).
  uint32_t max_heightfield_samples = 1u << 22;
  /// Most input points of one convex hull (a collider's or a compound child's).
  uint32_t max_hull_points = 256;
  /// Work budget of one ApplyChanges request or tick with changes: units of
  /// build work of its shapes together (wire::ChangeCost::build_work: mesh
  /// triangles + hull points + compound children + heightfield samples / 16;
  /// about 1 s of one core per million), checked before anything is built.
  uint64_t max_build_work_per_message = 4'194'304;
  /// Most watches (standing overlap queries) the session may hold.
  uint32_t max_watches = 4'096;
  /// Most watch events one batch reports; more set `events_truncated`.
  uint32_t max_watch_events_per_batch = 65'536;
};

/// Server-wide limits: the per-session maxima plus the global ones.
struct ServerLimits {
  /// Most sessions at once.
  uint64_t max_sessions = 256;
  /// Largest request message accepted, bytes (gRPC max receive message size).
  uint64_t max_message_bytes = 64ull << 20;
  /// Largest ListColliders page (colliders per message).
  uint32_t max_page_size = 4'096;
  /// Bytes that the answers of all calls in flight may hold together (query
  /// results and their response messages); a call that would pass it is
  /// RESOURCE_EXHAUSTED, to be retried.
  uint64_t max_inflight_bytes = 1ull << 30;
  /// Most bytes all sessions together may hold (Session::memory_bytes()
  /// summed); growth past it is refused. 0: no cap (--max-memory).
  uint64_t max_memory_bytes = 0;
  /// Bytes of geometry (priced shape data) that the change batches being
  /// built at once may hold together, server-wide; a batch that would pass
  /// it is RESOURCE_EXHAUSTED (retry) before it builds anything (--max-build-bytes).
  uint64_t max_build_bytes = 1ull << 30;
  /// Defaults and maxima of every session.
  SessionLimits session;
  /// Most ticks of pose history a session may ask for (--max-history-ticks).
  uint32_t max_history_ticks = 1'024;
};

/// The bounds of a session's watch updates (ColliderSet::SetWatchBudget):
/// the per-message work budget, as for a Query; memory is bounded per batch
/// by SessionTxn from --max-memory.
inline WatchBudget WatchBudgetOf(const SessionLimits& l) {
  WatchBudget b;
  b.max_nodes = l.max_nodes_per_message;
  b.max_pair_tests = l.max_pair_tests_per_message;
  b.work_limits = "limits.max_nodes_per_message, limits.max_pair_tests_per_message";
  return b;
}

/// Bytes a session costs besides its collider set: the Session object, its
/// locks, id and registry entry (an estimate, counted once per session).
inline constexpr uint64_t kSessionOverheadBytes = 1024;

/// Something bound to a session that must hear when it is deleted or expires
/// (an open Tick stream). Called on the deleting thread, after the session is
/// marked deleted and with no session lock held; must be quick.
class SessionObserver {
 public:
  virtual ~SessionObserver() = default;
  /// `why`: "session_id: session 'x' was deleted" or "... expired after N s idle".
  virtual void OnSessionGone(const std::string& why) = 0;
  /// The watch events of a batch just applied (a WatchEvents stream), called
  /// under the session's exclusive lock: must be quick and must not call
  /// back into the session.
  virtual void OnWatchEvents(const std::vector<WatchEvent>& /*events*/, bool /*truncated*/,
                             uint64_t /*revision*/) {}
};

/// Steady-clock now in nanoseconds (the clock of Session::last_active_ns()).
int64_t SteadyNowNs();

/// One game session. Queries take `mutex()` shared, changes take it
/// exclusively, so queries never see half a batch and run concurrently with
/// each other; sessions never share a lock.
class Session {
 public:
  Session(std::string id, const SessionLimits& limits, int64_t created_unix_ms,
          std::string token = {})
      : id_(std::move(id)), limits_(limits), created_unix_ms_(created_unix_ms),
        token_(std::move(token)) {
    set_.SetHistoryTicks(limits.history_ticks);
    set_.SetMaxWatchEvents(limits.max_watch_events_per_batch);
    set_.SetWatchBudget(WatchBudgetOf(limits));
  }

  /// The session id (1..128 of [A-Za-z0-9._:-]).
  const std::string& id() const { return id_; }
  /// The limits in force.
  const SessionLimits& limits() const { return limits_; }
  /// Creation time, milliseconds since the Unix epoch.
  int64_t created_unix_ms() const { return created_unix_ms_; }
  /// The secret a caller presents to use this session (auth.h); empty: none
  /// (only the admin token may use it).
  const std::string& token() const { return token_; }
  /// Guards set(): shared for reads and queries, exclusive for changes.
  std::shared_mutex& mutex() const { return mutex_; }
  /// The collider set; hold mutex() while using it. Its base (the session's
  /// map, set().base() and base_name()) is fixed before the session is
  /// published, so those two may be read without the lock.
  ColliderSet& set() { return set_; }
  const ColliderSet& set() const { return set_; }
  /// True once DeleteSession removed it; set under the exclusive lock.
  bool deleted() const { return deleted_.load(std::memory_order_acquire); }
  void MarkDeleted() { deleted_.store(true, std::memory_order_release); }

  /// Records activity now (any call on the session, any tick): one clock read
  /// and one relaxed atomic store.
  void Touch() const { last_active_ns_.store(SteadyNowNs(), std::memory_order_relaxed); }
  /// Steady-clock time of the last activity (SteadyNowNs()), creation counting as one.
  int64_t last_active_ns() const { return last_active_ns_.load(std::memory_order_relaxed); }
  /// The same instant in milliseconds since the Unix epoch.
  int64_t last_active_unix_ms() const;

  /// Bytes the session holds: kSessionOverheadBytes + set().MemoryBytes() as
  /// of the last applied batch, moved since by the caches its query batches
  /// made or dropped (ColliderSet::SetCacheReserve).
  uint64_t memory_bytes() const { return memory_bytes_.load(std::memory_order_relaxed); }
  /// set().size() as of the last applied batch, readable without the lock (metrics).
  uint64_t collider_count() const { return collider_count_.load(std::memory_order_relaxed); }

  /// The queries of the last transactions, for the inspector (--record-queries).
  QueryRecorder& recorder() const { return recorder_; }

  /// Registers an observer until the session is gone; false (and not
  /// registered) when it is gone already. Expired observers are dropped.
  bool AddObserver(std::weak_ptr<SessionObserver> observer);
  /// Why the session is gone ("" while it lives).
  std::string gone_reason() const;
  /// Hands the events of the batch just applied to every observer (its
  /// exclusive lock held); nothing when there are none.
  void PublishWatchEvents(const std::vector<WatchEvent>& events, bool truncated,
                          uint64_t revision);

 private:
  friend class SessionRegistry;
  // Marks the session gone for observers (once) and returns those to notify.
  std::vector<std::weak_ptr<SessionObserver>> TakeObservers(const std::string& why);

  const std::string id_;
  const SessionLimits limits_;
  const int64_t created_unix_ms_;
  const std::string token_;
  mutable std::shared_mutex mutex_;
  ColliderSet set_;
  std::atomic<bool> deleted_{false};
  mutable std::atomic<int64_t> last_active_ns_{SteadyNowNs()};
  // Written by the registry under the exclusive lock (or before publication),
  // and by the set's cache reserve under the shared one (one at a time).
  std::atomic<uint64_t> memory_bytes_{0};
  std::atomic<uint64_t> collider_count_{0};  // written with memory_bytes_
  mutable QueryRecorder recorder_;
  mutable std::mutex observers_mu_;
  std::vector<std::weak_ptr<SessionObserver>> observers_;  // guarded by observers_mu_
  std::string gone_reason_;                                // guarded by observers_mu_
};

/// The sessions of one server, by id, and the memory they hold together.
/// Thread-safe; the map lock is held only for lookups, inserts and erases,
/// never while a session is used.
class SessionRegistry {
 public:
  /// `max_memory_bytes`: cap on the sum of memory_bytes() (0: none).
  explicit SessionRegistry(uint64_t max_sessions, uint64_t max_memory_bytes = 0)
      : max_sessions_(max_sessions), max_memory_bytes_(max_memory_bytes) {}

  /// Creates a session. Empty id: a fresh unique one is picked. Errors:
  /// kInvalidArgument (bad id), kAlreadyExists, kResourceExhausted (max
  /// sessions, or its kSessionOverheadBytes would pass the memory cap).
  /// `token` is the session's secret (Session::token()); `created_unix_ms`
  /// its creation time (0: now; a restored session keeps its own).
  /// `map` (may be null): a shared map's set the session's set is layered
  /// over (ColliderSet::SetBase) before the session is published, named `map_id`.
  Result<std::shared_ptr<Session>> Create(const std::string& id, const SessionLimits& limits,
                                          std::string token = {}, int64_t created_unix_ms = 0,
                                          std::shared_ptr<const ColliderSet> map = nullptr,
                                          const std::string& map_id = {});
  /// The session, or nullptr. Finding a session counts as activity (Touch).
  std::shared_ptr<Session> Find(std::string_view id) const;
  /// Removes and returns the session (nullptr when unknown): waits for work
  /// in flight on it, marks it deleted, releases its memory and tells its
  /// observers "session_id: session 'x' was deleted".
  std::shared_ptr<Session> Remove(std::string_view id);
  /// Removes `session` like Remove, with observers told it expired, if it is
  /// still registered and has had no activity for its idle timeout as of
  /// `now_ns` (SteadyNowNs()). Returns whether it was removed; `idle_ns`
  /// (optional) gets how long it had been idle.
  bool RemoveIfIdle(const std::shared_ptr<Session>& session, int64_t now_ns,
                    int64_t* idle_ns = nullptr);
  /// Every session, sorted by id.
  std::vector<std::shared_ptr<Session>> List() const;
  /// Number of sessions.
  size_t size() const;

  /// New sessions' sets build their query caches in the background
  /// (ColliderSet::SetBackgroundCaches); set before the first Create.
  void set_background_caches(bool background) { background_caches_ = background; }

  /// Bytes all sessions hold, plus growth reserved by batches being applied.
  uint64_t memory_bytes() const { return memory_bytes_.load(std::memory_order_relaxed); }
  /// The cap on memory_bytes() (0: none).
  uint64_t max_memory_bytes() const { return max_memory_bytes_; }
  /// Reserves `bytes` of growth before a batch is applied: kResourceExhausted,
  /// naming the cap and the current use, when memory_bytes() + bytes would
  /// pass the cap. Every successful reservation must be settled.
  Status ReserveMemory(uint64_t bytes);
  /// Reserves as much of `bytes` as fits under the cap (all of it without
  /// one) and returns it; settled or released like ReserveMemory's.
  uint64_t ReserveUpTo(uint64_t bytes);
  /// Gives back `bytes` of a reservation that will not be settled (a batch
  /// refused or failed before it was applied).
  void ReleaseMemory(uint64_t bytes) { memory_bytes_.fetch_sub(bytes, std::memory_order_relaxed); }
  /// After a batch on `s` was applied (or failed), with its exclusive lock
  /// held: sets s.memory_bytes() from its set and moves the total by the
  /// change, releasing the `reserved` bytes.
  void SettleMemory(Session& s, uint64_t reserved);

 private:
  // Tail of Remove / RemoveIfIdle once the session left the map.
  void Retire(Session& s, const std::string& why);

  const uint64_t max_sessions_;
  const uint64_t max_memory_bytes_;
  bool background_caches_ = false;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Session>, std::less<>> sessions_;
  uint64_t next_auto_id_ = 1;
  std::atomic<uint64_t> memory_bytes_{0};
};

}  // namespace hitbox::server
