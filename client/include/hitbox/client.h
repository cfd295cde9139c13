// hitbox::Client: the C++ client of hitbox.v1 in core's types (no protobuf
// or gRPC type here). Every call returns RpcStatus or RpcResult<T> and has a
// deadline; UNAVAILABLE is retried for idempotent calls only; session tokens
// are remembered. docs/client.md has the details; thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hitbox/world/collider_set.h"
#include "hitbox/math/math.h"
#include "hitbox/rpc_status.h"
#include "hitbox/shape/shapes.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace hitbox {

/// How UNAVAILABLE is retried on idempotent calls: attempt n (n >= 2) waits
/// min(max_backoff, initial_backoff * multiplier^(n-2)) scaled by a random
/// factor in [1 - jitter, 1 + jitter], never past the call's deadline.
struct RetryPolicy {
  /// Total attempts including the first, >= 1; 1 disables retries.
  int max_attempts = 5;
  /// Wait before the second attempt.
  std::chrono::milliseconds initial_backoff{50};
  /// Upper bound of one wait (before jitter).
  std::chrono::milliseconds max_backoff{2000};
  /// Growth of the wait per attempt, >= 1.
  double multiplier = 2.0;
  /// Relative jitter in [0, 1]: each wait is scaled by a uniform factor in [1 - jitter, 1 + jitter].
  double jitter = 0.2;
};

/// Called before each retry wait (for logging or tests): the rpc name
/// (e.g. "GetSession"), the attempt that failed (1-based), its status and the
/// wait before the next attempt. Runs on the calling thread; must not throw.
using RetryObserver = std::function<void(std::string_view method, int failed_attempt,
                                         const RpcStatus& status,
                                         std::chrono::milliseconds backoff)>;

/// TLS of the channel the address constructor makes (gRPC SSL credentials).
struct TlsOptions {
  /// Use TLS; implied when any file below is set.
  bool enabled = false;
  /// CA bundle (PEM file) that signed the server's certificate; empty: the system's roots.
  std::string ca_file{};
  /// Client certificate chain and private key (PEM files) for mutual TLS; both or neither.
  std::string cert_file{};
  std::string key_file{};
  /// Name the server's certificate must carry, instead of the address's host; empty: that host.
  std::string server_name{};
  /// True when TLS is on (enabled or any file given).
  bool active() const {
    return enabled || !ca_file.empty() || !cert_file.empty() || !key_file.empty();
  }
};

/// Options of a Client, fixed at construction.
struct ClientOptions {
  /// Deadline of a call that sets no CallOptions::timeout, retries included. > 0.
  std::chrono::milliseconds default_timeout{5000};
  /// Retry of UNAVAILABLE on idempotent calls.
  RetryPolicy retry;
  /// Largest message sent or received, bytes (gRPC's default receive cap is
  /// 4 MiB). Applies to the channel the address constructor makes; an
  /// injected channel keeps its own settings.
  int max_message_bytes = 64 << 20;
  /// true: every call and tick stream waits (up to its deadline) for the
  /// channel to connect instead of failing fast with UNAVAILABLE (so retries
  /// rarely happen). See also CallOptions::wait_for_ready.
  bool wait_for_ready = false;
  /// Shortest reconnect backoff of the channel the address constructor makes.
  std::chrono::milliseconds min_reconnect_backoff{100};
  /// Longest reconnect backoff of that channel (gRPC's default, 120 s, would
  /// leave a client offline for minutes after a server restart).
  std::chrono::milliseconds max_reconnect_backoff{2000};
  /// Seed of the retry jitter; 0 draws one from std::random_device.
  uint64_t jitter_seed = 0;
  /// Optional hook run before each retry.
  RetryObserver on_retry;
  /// Token sent on every call that has no session token of its own (Client::SetSessionToken,
  /// sessions this Client created): typically hitboxd's admin token. Empty: none.
  std::string token;
  /// TLS of the channel the address constructor makes; an injected channel keeps its own.
  /// An unreadable file fails every call with FAILED_PRECONDITION naming it.
  TlsOptions tls;
};

/// Per-call overrides.
struct CallOptions {
  /// This call's deadline, from now, covering retries; unset: ClientOptions::default_timeout.
  std::optional<std::chrono::nanoseconds> timeout;
  /// false: no retry for this call even if it is idempotent.
  bool allow_retry = true;
  /// true: wait (up to the deadline) for the server to be reachable instead of
  /// failing fast with UNAVAILABLE, e.g. right after a server restart.
  /// ClientOptions::wait_for_ready makes every call do so.
  bool wait_for_ready = false;
};

/// Serving status from the standard gRPC health check (grpc.health.v1).
enum class HealthStatus : int {
  kUnknown = 0,
  kServing = 1,
  kNotServing = 2,    ///< e.g. while hitboxd shuts down
  kServiceUnknown = 3,
};
/// "UNKNOWN", "SERVING", "NOT_SERVING" or "SERVICE_UNKNOWN".
const char* HealthStatusName(HealthStatus status);

/// Per-session limits; 0 in a field means "the server's default".
struct SessionLimits {
  /// Most colliders the session may hold.
  uint64_t max_colliders = 0;
  /// Most changes in one ApplyChanges call or tick.
  uint32_t max_changes_per_message = 0;
  /// Most queries in one Query call or tick.
  uint32_t max_queries_per_message = 0;
  /// Most hits reported per query (QueryFilter::max_hits of 0 or above it is clamped to it).
  uint32_t max_hits_per_query = 0;
  /// Work budget of one Query call or tick: tree nodes visited by all its queries.
  uint64_t max_nodes_per_message = 0;
  /// Work budget of one Query call or tick: narrow-phase pair tests of all its queries.
  uint64_t max_pair_tests_per_message = 0;
  /// Milliseconds without a call or tick after which the server deletes the
  /// session (may only lower the server's); in SessionInfo, 0 means never.
  uint64_t idle_timeout_ms = 0;
  /// Ticks of pose history kept for queries at a past tick (server default 64).
  uint32_t history_ticks = 0;
  /// Largest triangle mesh one collider may be, input triangles.
  uint32_t max_mesh_triangles = 0;
  /// Largest heightfield one collider may be, rows x cols samples.
  uint32_t max_heightfield_samples = 0;
  /// Most input points of one convex hull (a collider's or a compound child's).
  uint32_t max_hull_points = 0;
  /// Work budget of one ApplyChanges call or tick with changes: build work of
  /// its shapes (mesh triangles + hull points + compound children + heightfield samples / 16).
  uint64_t max_build_work_per_message = 0;
  /// Most watches the session may hold.
  uint32_t max_watches = 0;
  /// Most watch events one batch reports (more: events_truncated).
  uint32_t max_watch_events_per_batch = 0;
};

/// What CreateSession asks for.
struct SessionSpec {
  /// Wanted id: 1..128 characters of [A-Za-z0-9._:-]; empty: the server picks one.
  std::string session_id;
  /// Limits; zero fields take the server defaults.
  SessionLimits limits;
  /// A shared map (ListMaps) the session's world starts from; empty: none.
  std::string map_id{};
};

/// A shared map of the server (hitboxd --maps DIR), as ListMaps reports it.
struct MapInfo {
  /// The file name without extension.
  std::string map_id;
  /// The file the server loaded it from.
  std::string source;
  /// SHA-256 of the file, 64 lower-case hex digits.
  std::string sha256;
  /// Size of the file, bytes.
  uint64_t file_bytes = 0;
  uint64_t collider_count = 0;
  /// Colliders per shape kind name ("sphere", "mesh", ...); kinds with none absent.
  std::map<std::string, uint64_t> colliders_by_kind;
  /// Triangles of its mesh and heightfield colliders.
  uint64_t triangles = 0;
  /// Union of the colliders' world bounds, metres; unset when it has none.
  std::optional<Aabb> bounds;
  /// Bytes the map holds in the server (once, whatever the sessions on it).
  uint64_t memory_bytes = 0;
  /// Sessions on it now.
  uint64_t session_count = 0;
};

/// A session's state, as the server reports it.
struct SessionInfo {
  std::string session_id;
  /// Number of colliders in the set.
  uint64_t collider_count = 0;
  /// Number of change batches applied since creation (0 when new).
  uint64_t revision = 0;
  /// Union of the colliders' world bounds, metres; unset when the set is empty.
  std::optional<Aabb> bounds;
  /// The limits in force, server defaults filled in.
  SessionLimits limits;
  /// Creation time, milliseconds since the Unix epoch.
  int64_t created_unix_ms = 0;
  /// The session's secret: only set in CreateSession's answer (the Client
  /// remembers it for its own calls; pass it on to other processes that use the session).
  std::string token;
  /// Bytes the session holds on the server (what --max-memory caps).
  uint64_t memory_bytes = 0;
  /// Last call on the session or tick on it, milliseconds since the Unix epoch.
  int64_t last_active_unix_ms = 0;
  /// Ticks that queries with at_tick may ask for; unset before the first tick.
  std::optional<TickRange> ticks;
  /// The map the session is on (empty: none) and that map's collider count
  /// (not part of collider_count).
  std::string map_id;
  uint64_t map_collider_count = 0;
  /// The session's watches, sorted by id (WatchState::inside lists at most
  /// the first 256 colliders; inside_count says how many there are).
  struct WatchInfo {
    WatchState state;
    uint64_t inside_count = 0;
  };
  std::vector<WatchInfo> watches;
};

/// Outcome of an accepted change batch.
struct ApplyResult {
  /// The session's revision after the batch.
  uint64_t revision = 0;
  /// Number of colliders after the batch.
  uint64_t collider_count = 0;
  /// The batch's watch events (ColliderChange::AddWatch / RemoveWatch),
  /// sorted by (watch, collider); `events_truncated`: the session's
  /// max_watch_events_per_batch left some out.
  std::vector<WatchEvent> events;
  bool events_truncated = false;
};

/// One message of a WatchEvents stream: the events of one applied batch.
struct WatchEventBatch {
  /// The session's revision after the batch.
  uint64_t revision = 0;
  /// Sorted by (watch, collider).
  std::vector<WatchEvent> events;
  /// The batch had more events than the session's limit.
  bool events_truncated = false;
};
/// Called with each batch of a WatchEvents stream on the calling thread;
/// return false to stop.
using WatchEventCallback = std::function<bool(const WatchEventBatch& batch)>;

/// Colliders read at one revision (GetColliders: in requested order;
/// ListColliders: the whole set sorted by id).
struct ColliderSnapshot {
  uint64_t revision = 0;
  std::vector<Collider> colliders;
};

/// One page of a ListColliders stream.
struct ColliderPage {
  /// Revision of the snapshot being streamed (the same for every page).
  uint64_t revision = 0;
  /// Number of colliders in the whole snapshot.
  uint64_t total = 0;
  /// This page's colliders, sorted by id across the stream.
  std::vector<Collider> colliders;
};

/// Called with each page of ListColliders on the calling thread; return false to stop early.
using ColliderPageCallback = std::function<bool(const ColliderPage& page)>;

/// Answers of a Query batch.
struct QueryBatchResult {
  /// The revision every query was answered at.
  uint64_t revision = 0;
  /// results[i] answers queries[i].
  std::vector<QueryResult> results;
};

/// Answer of one tick of a TickStream.
struct TickResult {
  /// The tick number: the caller's (TickAt) or the stream's (1, 2, 3, ...).
  uint64_t tick = 0;
  /// The session's revision after this tick's changes; the queries saw it.
  uint64_t revision = 0;
  /// results[i] answers the tick's queries[i].
  std::vector<QueryResult> results;
  /// The watch events of this tick's changes and applied moves, sorted by
  /// (watch, collider); `events_truncated` as in ApplyResult.
  std::vector<WatchEvent> events;
  bool events_truncated = false;
};

/// Options of a tick stream.
struct TickStreamOptions {
  /// Deadline of the whole stream from when it opens; unset: none (a stream lives as long as the game).
  std::optional<std::chrono::nanoseconds> timeout;
  /// Most ticks in flight (sent, not yet answered); Tick() beyond it fails at
  /// once with RESOURCE_EXHAUSTED. >= 1.
  size_t max_in_flight = 1024;
  /// Send the ticks' queries and receive their answers as columns
  /// (TickRequest.packed, packed_results): the same answers at a fraction of
  /// the CPU, when the server takes them. Before its first tick the stream
  /// asks the server (GetServerInfo, once per Client, kept; within
  /// ClientOptions::default_timeout and this stream's timeout) and sends
  /// messages to a server that says no or does not know the rpc; a failed
  /// ask (unreachable, denied) makes this stream send messages and the next
  /// stream ask again. false: one Query / QueryResult message each, never asked.
  bool packed = true;
  /// One tick at a time, run on the calling thread (gRPC's synchronous API:
  /// the caller writes the tick and reads its answer itself, with no hand-off
  /// to gRPC's threads), for a game loop that waits on each tick: every Tick
  /// form returns once the tick is answered (its future ready, its callback
  /// called on the caller's thread); calls from several threads take turns;
  /// max_in_flight does not apply. The stream opens on its first tick.
  /// false: ticks are pipelined and answered on gRPC's threads.
  bool blocking = false;
};

/// Sweep by collider id: query `query_index` of a call takes its shape and
/// start pose from collider `collider_id` of the session as the server holds
/// it then (after the tick's changes), so they are not sent; the collider is
/// never reported by that query. For overlap, cast and move queries (their
/// own shape and pose are ignored). An unknown id fails the call (or the
/// tick) with NOT_FOUND naming queries[i].shape_from_collider; a raycast, or
/// an index past the queries, with INVALID_ARGUMENT.
struct ShapeFromCollider {
  size_t query_index = 0;
  uint64_t collider_id = 0;
};

/// Called once with a tick's outcome, on a gRPC thread (or on the caller's
/// thread when the tick fails before it is sent, or the stream is blocking:
/// TickStreamOptions::blocking). Must be quick and must not
/// throw; it may call Tick() again but must not destroy its TickStream.
using TickCallback = std::function<void(RpcResult<TickResult> result)>;

/// Called once with the outcome of a tick answered into a caller's
/// TickResult (TickStream::Tick with `out`): OK once *out holds the answer,
/// else the tick's error (*out's contents are then unspecified). Called on a
/// gRPC thread, or on the caller's when the tick fails before it is sent or
/// the stream is blocking;
/// must be quick, must not throw, may call Tick() again but must not destroy
/// its TickStream.
using TickDoneCallback = std::function<void(const RpcStatus& status)>;

/// A Tick stream bound to one session: each Tick() sends changes and queries
/// and yields that tick's results; several may be in flight (one at a time on
/// a blocking stream, TickStreamOptions::blocking). A rejected tick
/// fails alone; a broken stream fails every pending and later tick with its
/// status and never reconnects. Destroying it cancels it. Thread-safe.
class TickStream {
 public:
  virtual ~TickStream() = default;

  /// Sends one tick; the future yields its result or its error.
  virtual std::future<RpcResult<TickResult>> Tick(std::span<const ColliderChange> changes,
                                                  std::span<const Query> queries) = 0;
  /// Sends one tick; `done` is called once with its result or its error.
  virtual void Tick(std::span<const ColliderChange> changes, std::span<const Query> queries,
                    TickCallback done) = 0;
  /// Sends one tick whose queries named in `shapes_from` are sweeps by
  /// collider id (ShapeFromCollider).
  virtual std::future<RpcResult<TickResult>> Tick(
      std::span<const ColliderChange> changes, std::span<const Query> queries,
      std::span<const ShapeFromCollider> shapes_from) = 0;
  virtual void Tick(std::span<const ColliderChange> changes, std::span<const Query> queries,
                    std::span<const ShapeFromCollider> shapes_from, TickCallback done) = 0;
  /// Sends game tick `tick`: its changes become the session's history for
  /// that tick (queries with at_tick see them). The ticks of a stream must
  /// increase (else INVALID_ARGUMENT at once); Tick() without a number
  /// continues after the last one, and numbers a new stream's ticks from 1.
  /// A session refuses a tick with changes below its newest tick, so a game
  /// that opens a new stream on a session it already ticked (a reconnect)
  /// sends TickAt with its own game tick, not Tick().
  virtual std::future<RpcResult<TickResult>> TickAt(uint64_t tick,
                                                    std::span<const ColliderChange> changes,
                                                    std::span<const Query> queries) = 0;
  virtual void TickAt(uint64_t tick, std::span<const ColliderChange> changes,
                      std::span<const Query> queries, TickCallback done) = 0;

  /// Caller-owned results: sends one tick (its `shapes_from` queries sweeps
  /// by collider id, may be empty) and decodes its answer into `*out`, then
  /// calls `done`. *out must stay alive, and be neither read nor given to
  /// another tick, until `done` runs. The decode reuses *out's buffers
  /// (results resized to the tick's queries, their hit vectors cleared and
  /// refilled, a move's contacts too), so a TickResult kept from tick to tick
  /// makes a steady-state tick allocate (next to) nothing on the client. A
  /// null `out` fails the tick at once with INVALID_ARGUMENT.
  virtual void Tick(std::span<const ColliderChange> changes, std::span<const Query> queries,
                    std::span<const ShapeFromCollider> shapes_from, TickResult* out,
                    TickDoneCallback done) = 0;
  /// The same for game tick `tick` (TickAt).
  virtual void TickAt(uint64_t tick, std::span<const ColliderChange> changes,
                      std::span<const Query> queries, TickResult* out, TickDoneCallback done) = 0;
  /// Sends one tick and waits for its answer in `*out` (as the Tick above);
  /// returns its status. Blocks the calling thread: never call it from a
  /// tick callback (gRPC's threads).
  virtual RpcStatus TickInto(std::span<const ColliderChange> changes,
                             std::span<const Query> queries,
                             std::span<const ShapeFromCollider> shapes_from, TickResult* out) = 0;
  /// Number of ticks sent and not yet answered.
  virtual size_t pending() const = 0;
  /// True once the stream has ended (broken, cancelled or finished).
  virtual bool done() const = 0;
  /// The status the stream ended with; OK while it is running.
  virtual RpcStatus status() const = 0;
  /// Half-closes the stream, waits for every pending tick to be answered, and
  /// returns the final status. Tick() afterwards fails with FAILED_PRECONDITION.
  virtual RpcStatus Finish() = 0;
  /// Cancels the stream: pending ticks fail with CANCELLED. Returns at once.
  virtual void Cancel() = 0;
};

/// Client of one Hitbox server (or of whatever the channel balances over).
class Client {
 public:
  /// Connects (lazily) to `address` ("host:port", "unix:/path", ...) without TLS.
  explicit Client(const std::string& address, ClientOptions options = {});
  /// Uses an existing channel (in-process server, custom credentials, tests).
  explicit Client(std::shared_ptr<grpc::Channel> channel, ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// The options in force.
  const ClientOptions& options() const;
  /// The address given at construction; empty for an injected channel.
  const std::string& address() const;

  // --- Server -------------------------------------------------------------

  /// The server's health (grpc.health.v1.Health/Check); an empty `service`
  /// asks about the whole server. An unreachable server is an error
  /// (UNAVAILABLE / DEADLINE_EXCEEDED), not a status. Idempotent: retried.
  RpcResult<HealthStatus> CheckHealth(std::string_view service = {}, const CallOptions& call = {});

  // --- Sessions -----------------------------------------------------------

  /// Creates an empty session (spec.session_id empty: the server picks the id).
  RpcResult<SessionInfo> CreateSession(const SessionSpec& spec = {}, const CallOptions& call = {});
  /// Creates an empty session with this id and the server's default limits.
  RpcResult<SessionInfo> CreateSession(std::string session_id, const CallOptions& call = {});
  /// Describes one session (NOT_FOUND when unknown).
  RpcResult<SessionInfo> GetSession(std::string_view session_id, const CallOptions& call = {});
  /// Every session of the server, sorted by id.
  RpcResult<std::vector<SessionInfo>> ListSessions(const CallOptions& call = {});
  /// Deletes a session and its colliders (NOT_FOUND when unknown). Never retried.
  RpcStatus DeleteSession(std::string_view session_id, const CallOptions& call = {});

  // --- Maps ---------------------------------------------------------------
  /// Every shared map of the server, sorted by id (empty: none). Sends
  /// ClientOptions::token (a session's or the admin token).
  RpcResult<std::vector<MapInfo>> ListMaps(const CallOptions& call = {});
  /// One map (NOT_FOUND when unknown).
  RpcResult<MapInfo> GetMap(std::string_view map_id, const CallOptions& call = {});

  /// Sends `token` on every later call on `session_id` (a session created by
  /// another process); an empty token forgets it (ClientOptions::token is sent again).
  void SetSessionToken(std::string session_id, std::string token);
  /// The token this Client sends for `session_id` (its own or ClientOptions::token).
  std::string SessionToken(std::string_view session_id) const;

  // --- Colliders ----------------------------------------------------------

  /// Applies a batch atomically, in order. With `expected_revision` the batch
  /// applies only at that revision (else FAILED_PRECONDITION). Never retried.
  RpcResult<ApplyResult> ApplyChanges(std::string_view session_id,
                                      std::span<const ColliderChange> changes,
                                      std::optional<uint64_t> expected_revision = std::nullopt,
                                      const CallOptions& call = {});
  /// Applies a batch as the changes of game tick `tick` (lag compensation:
  /// queries with at_tick see each tick's world). A tick lower than the
  /// session's newest is INVALID_ARGUMENT. Never retried.
  RpcResult<ApplyResult> ApplyTick(std::string_view session_id, uint64_t tick,
                                   std::span<const ColliderChange> changes,
                                   const CallOptions& call = {});
  /// Adds new colliders (one atomic batch).
  RpcResult<ApplyResult> AddColliders(std::string_view session_id,
                                      std::span<const Collider> colliders,
                                      const CallOptions& call = {});
  /// Sets the pose of one existing collider.
  RpcResult<ApplyResult> MoveCollider(std::string_view session_id, uint64_t collider_id,
                                      const Pose& pose, const CallOptions& call = {});
  /// Removes colliders by id (one atomic batch; any unknown id: NOT_FOUND, nothing removed).
  RpcResult<ApplyResult> RemoveColliders(std::string_view session_id,
                                         std::span<const uint64_t> collider_ids,
                                         const CallOptions& call = {});
  /// Reads colliders by id, in the requested order (any unknown id: NOT_FOUND).
  RpcResult<ColliderSnapshot> GetColliders(std::string_view session_id,
                                           std::span<const uint64_t> collider_ids,
                                           const CallOptions& call = {});
  /// Reads the whole set (all pages collected), sorted by id. page_size 0: server default.
  /// `include_map`: also the colliders of the session's map (merged by id).
  RpcResult<ColliderSnapshot> ListColliders(std::string_view session_id, uint32_t page_size = 0,
                                            const CallOptions& call = {},
                                            bool include_map = false);
  /// Streams the whole set page by page into `on_page` (return false to stop;
  /// stopping early is OK). Retried on UNAVAILABLE only before the first page.
  RpcStatus ListColliders(std::string_view session_id, const ColliderPageCallback& on_page,
                          uint32_t page_size = 0, const CallOptions& call = {});

  // --- Watches ------------------------------------------------------------
  // Watches are added and removed as changes (ColliderChange::AddWatch,
  // ColliderChange::RemoveWatch) in ApplyChanges or a tick; their events come
  // back in ApplyResult and TickResult.

  /// Reads the session's watch events as batches apply, until `on_batch`
  /// returns false (then OK), the call's deadline, or the session goes
  /// (NOT_FOUND). `watch_ids` empty: every watch. Never retried.
  /// `on_registered` (may be empty) is called once the server has registered
  /// the stream: the events of every batch applied after that reach it.
  RpcStatus WatchEvents(std::string_view session_id, std::span<const uint64_t> watch_ids,
                        const WatchEventCallback& on_batch, const CallOptions& call = {},
                        const std::function<void()>& on_registered = {});

  // --- Queries ------------------------------------------------------------

  /// Answers a batch of mixed queries, in order, all at one revision. A batch
  /// with a move that names apply_to_id changes the session: never retried.
  /// Each query's tag (OverlapQuery::tag, CastQuery::tag, ...) is sent and
  /// comes back as results[i].tag; results[i].truncated is set when
  /// filter.max_hits, or the session's max_hits_per_query (which a max_hits
  /// of 0 stands for), left hits out. A cast's contact_offset (skin) is sent
  /// as is (the server refuses one outside [0, 1000] metres).
  RpcResult<QueryBatchResult> Query(std::string_view session_id, std::span<const hitbox::Query> queries,
                                    const CallOptions& call = {});
  /// The same, the queries named in `shapes_from` being sweeps by collider id
  /// (ShapeFromCollider).
  RpcResult<QueryBatchResult> Query(std::string_view session_id,
                                    std::span<const hitbox::Query> queries,
                                    std::span<const ShapeFromCollider> shapes_from,
                                    const CallOptions& call = {});
  /// The same, decoded into the caller's `*out` (its revision and results;
  /// kept from call to call, its results' vectors are cleared and refilled,
  /// not freed): `client.Query(id, queries, {}, &kept)`. On an error *out's
  /// contents are unspecified; a null `out` is INVALID_ARGUMENT.
  RpcStatus Query(std::string_view session_id, std::span<const hitbox::Query> queries,
                  std::span<const ShapeFromCollider> shapes_from, QueryBatchResult* out,
                  const CallOptions& call = {});
  /// Colliders that `shape` at `pose` overlaps (touching counts), sorted by
  /// id; at most max_hits of them (0: the session's max_hits_per_query). Use
  /// Query() to learn whether the list was cut (QueryResult::truncated).
  RpcResult<std::vector<OverlapHit>> Overlap(std::string_view session_id, const Shape& shape,
                                             const Pose& pose, const QueryFilter& filter = {},
                                             bool want_contact = false,
                                             const CallOptions& call = {});
  /// The first collider `shape` hits when moved from `pose` by `translation`
  /// (world, metres, no rotation); nullopt when nothing is hit.
  RpcResult<std::optional<CastHit>> Sweep(std::string_view session_id, const Shape& shape,
                                          const Pose& pose, const Vec3& translation,
                                          const QueryFilter& filter = {},
                                          const CallOptions& call = {});
  /// Every collider hit along the sweep, sorted by (fraction, id); cut as
  /// Overlap() is (Query() tells whether it was).
  RpcResult<std::vector<CastHit>> SweepAll(std::string_view session_id, const Shape& shape,
                                           const Pose& pose, const Vec3& translation,
                                           const QueryFilter& filter = {},
                                           const CallOptions& call = {});
  /// The first collider the ray origin -> origin + translation hits; nullopt when none.
  RpcResult<std::optional<CastHit>> Raycast(std::string_view session_id, const Vec3& origin,
                                            const Vec3& translation,
                                            const QueryFilter& filter = {},
                                            const CallOptions& call = {});

  /// Character movement (collide-and-slide, hitbox/world/character.h): where
  /// `query.shape` at `query.pose` ends up when it wants to move by
  /// `query.displacement`. With query.apply_to_id the server also moves that
  /// collider to the final pose in the same call (then never retried).
  RpcResult<MoveResult> Move(std::string_view session_id, const MoveQuery& query,
                             const CallOptions& call = {});

  /// The queries above against the world as it was at `tick` (a real
  /// number within the session's history, else OUT_OF_RANGE):
  /// `client.Rewind(1017.4).Raycast(session, origin, translation)`. Queries
  /// that carry their own at_tick keep it. The view refers to this Client.
  class Rewound {
   public:
    RpcResult<QueryBatchResult> Query(std::string_view session_id,
                                      std::span<const hitbox::Query> queries,
                                      const CallOptions& call = {}) const;
    RpcResult<std::vector<OverlapHit>> Overlap(std::string_view session_id, const Shape& shape,
                                               const Pose& pose, const QueryFilter& filter = {},
                                               bool want_contact = false,
                                               const CallOptions& call = {}) const;
    RpcResult<std::optional<CastHit>> Sweep(std::string_view session_id, const Shape& shape,
                                            const Pose& pose, const Vec3& translation,
                                            const QueryFilter& filter = {},
                                            const CallOptions& call = {}) const;
    RpcResult<std::optional<CastHit>> Raycast(std::string_view session_id, const Vec3& origin,
                                              const Vec3& translation,
                                              const QueryFilter& filter = {},
                                              const CallOptions& call = {}) const;

   private:
    friend class Client;
    Rewound(Client* client, double tick) : client_(client), tick_(tick) {}
    Client* client_;
    double tick_;
  };
  Rewound Rewind(double tick) { return Rewound(this, tick); }

  // --- Tick stream --------------------------------------------------------

  /// Opens a Tick stream on `session_id`. Never fails here: an unreachable
  /// server or unknown session shows up as the error of the first tick(s).
  std::unique_ptr<TickStream> OpenTickStream(std::string session_id,
                                             const TickStreamOptions& options = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hitbox
