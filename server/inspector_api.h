// The JSON API behind the inspector page (docs/inspector.md): sessions, a
// session's world now or at a past tick, its map's geometry as triangle
// arrays and its recorded queries. Plain requests in, answers out, so the
// access rules and the JSON are tested without a socket; inspector_http.cc
// serves it. Access follows the rpcs (auth.h): protected mode serves
// loopback only; with credentials, a bearer token (the admin's: every
// session; a session's: that one) is required for everything.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "service.h"

namespace hitbox::server {

/// Most colliders one world answer lists (the rest are counted).
inline constexpr size_t kMaxInspectorColliders = 200'000;
/// Most triangles one collider's own geometry carries (bigger: its bounds).
inline constexpr size_t kMaxInspectorShapeTriangles = 65'536;
/// Shapes with shared data whose JSON is kept (beyond: the cache starts over).
inline constexpr size_t kMaxInspectorCachedShapes = 4096;
/// Most map triangles a map answer carries.
inline constexpr size_t kMaxInspectorMapTriangles = 4'000'000;

/// Time between two events of a stream (10 a second).
inline constexpr int64_t kInspectorStreamIntervalNs = 100'000'000;
/// How long Stop waits for open streams to end (a client not reading any more
/// is not waited for beyond it).
inline constexpr int64_t kInspectorStopWaitMs = 1000;
/// A stream sends recorded queries at most every this many events (twice a
/// second): one tick of them is most of an event's bytes and CPU.
inline constexpr uint64_t kInspectorStreamQueriesEvery = 5;
/// Most open streams per session and in all (more: 429 with the limit named).
inline constexpr size_t kMaxInspectorStreamsPerSession = 4;
inline constexpr size_t kMaxInspectorStreams = 16;
/// Most inside-set ids listed per watch (the rest are counted).
inline constexpr size_t kMaxInspectorWatchInside = 4096;

/// One HTTP request as the API needs it.
struct InspectorRequest {
  /// Path without the query string ("/api/sessions/demo/world").
  std::string path;
  /// Query parameters ("tick" -> "12.5").
  std::map<std::string, std::string> params;
  /// The peer as auth.h spells it ("ipv4:127.0.0.1:5555", "ipv6:[::1]:5").
  std::string peer;
  /// The Authorization header, when sent.
  std::optional<std::string> authorization;
};

class InspectorStream;

/// An answer: HTTP status, content type and body (JSON: {"error": "..."} on
/// failure); or, for /stream, an open stream whose events follow.
struct InspectorAnswer {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::unique_ptr<InspectorStream> stream;
};

class InspectorApi;

/// One open event stream of a session (GET /api/sessions/ID/stream,
/// text/event-stream). Each event is what changed since the one before:
/// colliders added (whole), moved (id and pose only) and removed (ids), the
/// newest recorded tick of queries when new, the watches when the revision
/// moved; the first event carries everything. Counted against the stream
/// limits until destroyed. Used by one thread at a time.
class InspectorStream {
 public:
  ~InspectorStream();
  InspectorStream(const InspectorStream&) = delete;
  InspectorStream& operator=(const InspectorStream&) = delete;

  /// Waits until the next event is due (kInspectorStreamIntervalNs after
  /// the last) or the API stops, then appends it to *out ("event: ...\n
  /// data: {...}\n\n"). False when the stream is over: the session is gone
  /// or the server stops (an "end" event naming why was appended).
  bool Next(std::string* out);
  /// Appends the next event now, without waiting (tests, benchmarks).
  bool Event(std::string* out);
  /// Events made so far.
  uint64_t events() const { return events_; }

 private:
  friend class InspectorApi;
  InspectorStream(const InspectorApi* api, std::shared_ptr<Session> session);

  const InspectorApi* const api_;
  const std::shared_ptr<Session> session_;
  uint64_t events_ = 0;
  int64_t next_ns_ = 0;
  uint64_t revision_ = 0;
  std::vector<Collider> sent_;  // the colliders as the last event left them, by id
  std::vector<Collider> now_;   // scratch: the colliders now (capacity kept)
  std::string moved_, removed_;  // scratch (capacity kept)
  std::shared_ptr<const RecordedTick> sent_queries_;
  uint64_t queries_event_ = 0;  // the event that last sent queries
  bool ended_ = false;
};

/// A clock in nanoseconds (SteadyNowNs(); tests pass their own).
using InspectorClock = std::function<int64_t()>;

/// The peer string of auth.h for an HTTP client's address and port.
std::string HttpPeer(const std::string& address, int port);

/// Answers GET /api/... requests. Thread-safe.
class InspectorApi {
 public:
  /// `clock`: the time of rates and stream pacing (default SteadyNowNs).
  explicit InspectorApi(HitboxService* service, InspectorClock clock = {});
  ~InspectorApi();

  /// Routes: /api/sessions, /api/sessions/ID, /api/sessions/ID/world
  /// [?tick=T], /api/sessions/ID/map, /api/sessions/ID/queries[?tick=T]
  /// [&last=K], /api/sessions/ID/stream (answer.stream set).
  InspectorAnswer Handle(const InspectorRequest& req) const;

  /// Ends every open stream (their next Next returns false at once) and
  /// refuses new ones, then waits up to kInspectorStopWaitMs for the open
  /// streams to have written their end event and closed: called before the
  /// HTTP endpoint stops, which would otherwise cut a stream between two
  /// events without it.
  void Stop();
  /// Open streams of session `id`, and in all.
  size_t open_streams(const std::string& id) const;
  size_t open_streams() const;

 private:
  InspectorAnswer Sessions(const InspectorRequest& req) const;
  InspectorAnswer World(const Session& s, const InspectorRequest& req) const;
  InspectorAnswer Map(const Session& s) const;
  InspectorAnswer Queries(const Session& s, const InspectorRequest& req) const;

  // A shape's JSON; that of shapes with shared data (hulls, meshes,
  // heightfields, compounds) is built once and kept with a copy of the
  // shape, so its data (the key) cannot be freed and reused meanwhile.
  void AppendShape(std::string* out, const Shape& shape) const;
  void AppendCollider(std::string* out, const Collider& c) const;
  void AppendWatches(std::string* out, const ColliderSet& set) const;
  void AppendRecordedTick(std::string* out, const RecordedTick& t) const;
  InspectorAnswer OpenStream(const std::shared_ptr<Session>& s) const;
  void AppendSummary(std::string* out, const Session& s, int64_t now_ns) const;

  friend class InspectorStream;

  HitboxService* const service_;
  const InspectorClock clock_;
  // Open streams by session id, and stopping; cv wakes waiting streams.
  mutable std::mutex streams_mu_;
  mutable std::condition_variable streams_cv_;
  mutable std::map<std::string, size_t, std::less<>> streams_;
  mutable size_t streams_total_ = 0;
  bool stopping_ = false;
  // Per session: the sample its rates are measured from (time, newest
  // tick, queries run), renewed once it is a second old.
  struct RateSample {
    int64_t t_ns = 0;
    uint64_t tick = 0;
    uint64_t queries = 0;
    double ticks_per_s = -1;  // < 0: not yet measured
    double queries_per_s = -1;
  };
  mutable std::mutex rates_mu_;
  mutable std::map<std::string, RateSample, std::less<>> rates_;
  mutable std::mutex shape_cache_mu_;
  mutable std::map<const void*, std::pair<Shape, std::shared_ptr<const std::string>>>
      shape_cache_;
  // Map geometry answers by map name, built once (maps never change).
  mutable std::mutex map_cache_mu_;
  mutable std::map<std::string, std::shared_ptr<const std::string>, std::less<>> map_cache_;
};

}  // namespace hitbox::server
