#include "inspector_api.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <shared_mutex>
#include <vector>

#include "auth.h"
#include "hitbox/wire/convert.h"
#include "inspector_geometry.h"

namespace hitbox::server {
namespace {

InspectorAnswer Fail(int status, const std::string& message) {
  InspectorAnswer a;
  a.status = status;
  a.body = "{\"error\":";
  AppendJsonString(&a.body, message);
  a.body += '}';
  return a;
}

// The HTTP status of an access refusal (auth.h's gRPC codes).
InspectorAnswer Refused(const grpc::Status& st) {
  return Fail(st.error_code() == grpc::StatusCode::UNAUTHENTICATED ? 401 : 403,
              st.error_message());
}

// The token of "Bearer <token>"; nullopt when absent or another scheme.
std::optional<std::string> BearerToken(const std::optional<std::string>& header) {
  if (!header || header->rfind(kBearerPrefix, 0) != 0) return std::nullopt;
  return header->substr(kBearerPrefix.size());
}

InspectorAnswer Json(std::string body) {
  InspectorAnswer a;
  a.body = std::move(body);
  return a;
}

// Appends one end event of a stream: why it ended.
void AppendEnd(std::string* out, const std::string& why) {
  *out += "event: end\ndata: {\"reason\":";
  AppendJsonString(out, why);
  *out += "}\n\n";
}

bool SameButPose(const Collider& a, const Collider& b) {
  return a.layer == b.layer && a.shape == b.shape;
}

bool SamePose(const Pose& a, const Pose& b) {
  return a.position == b.position && a.rotation == b.rotation;
}

// The shared data that identifies a shape's geometry; null for primitives.
const void* SharedData(const Shape& shape) {
  if (shape.hull() != nullptr) return shape.hull();
  if (shape.surface() != nullptr) return shape.surface();
  return shape.compound();
}

}  // namespace

void InspectorApi::AppendShape(std::string* out, const Shape& shape) const {
  const void* key = SharedData(shape);
  if (key == nullptr) {
    AppendShapeJson(out, shape, kMaxInspectorShapeTriangles);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(shape_cache_mu_);
    if (auto it = shape_cache_.find(key); it != shape_cache_.end()) {
      *out += *it->second.second;
      return;
    }
  }
  auto json = std::make_shared<std::string>();
  AppendShapeJson(json.get(), shape, kMaxInspectorShapeTriangles);
  *out += *json;
  std::lock_guard<std::mutex> lock(shape_cache_mu_);
  if (shape_cache_.size() >= kMaxInspectorCachedShapes) shape_cache_.clear();
  shape_cache_.emplace(key, std::make_pair(shape, std::move(json)));
}

// {"id":..,"layer":..,"shape":{..},"p":[..],"q":[..]}
void InspectorApi::AppendCollider(std::string* out, const Collider& c) const {
  *out += "{\"id\":" + std::to_string(c.id) + ",\"layer\":" + std::to_string(c.layer) +
          ",\"shape\":";
  AppendShape(out, c.shape);
  *out += ",\"p\":";
  AppendVec(out, c.pose.position);
  *out += ",\"q\":";
  AppendQuat(out, c.pose.rotation);
  *out += '}';
}

// One session's summary fields (no braces), read under its shared lock;
// its rates measured over the last second or more of `now_ns`.
void InspectorApi::AppendSummary(std::string* out, const Session& s, int64_t now_ns) const {
  *out += "\"id\":";
  AppendJsonString(out, s.id());
  *out += ",\"map\":";
  if (s.set().base_name().empty()) {
    *out += "null";
  } else {
    AppendJsonString(out, s.set().base_name());
  }
  *out += ",\"colliders\":" + std::to_string(s.collider_count());
  *out += ",\"memory_bytes\":" + std::to_string(s.memory_bytes());
  *out += ",\"recorded\":" + std::to_string(s.recorder().size());
  *out += ",\"streams\":" + std::to_string(open_streams(s.id()));
  std::optional<TickRange> range;
  {
    std::shared_lock<std::shared_mutex> lock(s.mutex());
    *out += ",\"revision\":" + std::to_string(s.set().revision());
    *out += ",\"watches\":" + std::to_string(s.set().watch_count());
    *out += ",\"history_ticks\":" + std::to_string(s.set().history_ticks());
    range = s.set().Ticks();
  }
  if (range) {
    *out += ",\"oldest_tick\":" + std::to_string(range->oldest);
    *out += ",\"newest_tick\":" + std::to_string(range->newest);
  } else {
    *out += ",\"oldest_tick\":null,\"newest_tick\":null";
  }
  // Rates: from the sample of a second ago or more (null until there is one).
  const uint64_t tick = range ? range->newest : 0;
  const uint64_t queries = s.recorder().queries_run();
  double tps = -1, qps = -1;
  {
    std::lock_guard<std::mutex> lock(rates_mu_);
    RateSample& r = rates_[s.id()];
    if (r.t_ns == 0) {
      r = {now_ns, tick, queries, -1, -1};
    } else if (now_ns - r.t_ns >= 1'000'000'000) {
      const double dt = static_cast<double>(now_ns - r.t_ns) * 1e-9;
      r.ticks_per_s = tick >= r.tick ? static_cast<double>(tick - r.tick) / dt : 0.0;
      r.queries_per_s = queries >= r.queries ? static_cast<double>(queries - r.queries) / dt : 0.0;
      r.t_ns = now_ns;
      r.tick = tick;
      r.queries = queries;
    }
    tps = r.ticks_per_s;
    qps = r.queries_per_s;
  }
  *out += ",\"ticks_per_s\":";
  if (tps < 0) *out += "null"; else AppendNumber(out, std::round(tps * 10) / 10);
  *out += ",\"queries_per_s\":";
  if (qps < 0) *out += "null"; else AppendNumber(out, std::round(qps * 10) / 10);
}

// "watches":[{"id":..,"shape":{..},"p":[..],"q":[..],"attach_to":id|null,
// "inside_count":n,"inside":[ids]}] (its world pose; inside capped).
void InspectorApi::AppendWatches(std::string* out, const ColliderSet& set) const {
  *out += "\"watches\":[";
  bool first = true;
  set.ForEachWatch([&](const WatchState& w) {
    if (!first) *out += ',';
    first = false;
    *out += "{\"id\":" + std::to_string(w.watch.id) + ",\"shape\":";
    AppendShape(out, w.watch.shape);
    *out += ",\"p\":";
    AppendVec(out, w.world_pose.position);
    *out += ",\"q\":";
    AppendQuat(out, w.world_pose.rotation);
    *out += ",\"attach_to\":" +
            (w.watch.attach_to ? std::to_string(*w.watch.attach_to) : std::string("null"));
    *out += ",\"inside_count\":" + std::to_string(w.inside.size()) + ",\"inside\":[";
    const size_t n = std::min(w.inside.size(), kMaxInspectorWatchInside);
    for (size_t i = 0; i < n; ++i) {
      if (i != 0) *out += ',';
      *out += std::to_string(w.inside[i].id);
    }
    *out += "]}";
  });
  *out += ']';
}

std::string HttpPeer(const std::string& address, int port) {
  if (address.find(':') != std::string::npos) {
    return "ipv6:[" + address + "]:" + std::to_string(port);
  }
  return "ipv4:" + address + ":" + std::to_string(port);
}

InspectorApi::InspectorApi(HitboxService* service, InspectorClock clock)
    : service_(service), clock_(clock ? std::move(clock) : InspectorClock(SteadyNowNs)) {}

InspectorApi::~InspectorApi() { Stop(); }

void InspectorApi::Stop() {
  std::unique_lock<std::mutex> lock(streams_mu_);
  stopping_ = true;
  streams_cv_.notify_all();
  // A stream's worker wakes, writes its end event and closes (its
  // destructor counts it out); a client that stopped reading is not waited
  // for beyond the bound.
  streams_cv_.wait_for(lock, std::chrono::milliseconds(kInspectorStopWaitMs),
                       [&] { return streams_total_ == 0; });
}

size_t InspectorApi::open_streams(const std::string& id) const {
  std::lock_guard<std::mutex> lock(streams_mu_);
  auto it = streams_.find(id);
  return it == streams_.end() ? 0 : it->second;
}

size_t InspectorApi::open_streams() const {
  std::lock_guard<std::mutex> lock(streams_mu_);
  return streams_total_;
}

InspectorAnswer InspectorApi::OpenStream(const std::shared_ptr<Session>& s) const {
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    if (stopping_) return Fail(503, "the server is stopping");
    size_t& mine = streams_[s->id()];
    if (mine >= kMaxInspectorStreamsPerSession) {
      return Fail(429, "too many open streams on session '" + s->id() + "': at most " +
                           std::to_string(kMaxInspectorStreamsPerSession) +
                           " per session; close another inspector page");
    }
    if (streams_total_ >= kMaxInspectorStreams) {
      return Fail(429, "too many open streams: at most " + std::to_string(kMaxInspectorStreams) +
                           " on this server; close another inspector page");
    }
    ++mine;
    ++streams_total_;
  }
  InspectorAnswer a;
  a.content_type = "text/event-stream";
  a.stream.reset(new InspectorStream(this, s));
  return a;
}

InspectorAnswer InspectorApi::Handle(const InspectorRequest& req) const {
  const Authorizer& auth = service_->authorizer();
  if (grpc::Status st = auth.CheckPeer(req.peer); !st.ok()) return Refused(st);
  constexpr std::string_view kSessions = "/api/sessions";
  std::string_view path = req.path;
  if (path == kSessions || path == "/api/sessions/") return Sessions(req);
  if (path.rfind("/api/sessions/", 0) != 0) return Fail(404, "no such API path: " + req.path);
  path.remove_prefix(kSessions.size() + 1);
  const size_t slash = path.find('/');
  const std::string id(path.substr(0, slash));
  const std::string_view rest = slash == std::string_view::npos ? "" : path.substr(slash);
  const std::optional<std::string> token = BearerToken(req.authorization);
  if (grpc::Status st =
          auth.Decide(req.peer, token ? &*token : nullptr, Access::kSession, id);
      !st.ok()) {
    return Refused(st);
  }
  if (!wire::ValidateSessionId(id).ok()) return Fail(400, "session id: not a valid id");
  const std::shared_ptr<Session> s = service_->sessions().Find(id);
  if (s == nullptr || s->deleted()) return Fail(404, "no session '" + id + "'");
  if (rest.empty() || rest == "/") {
    InspectorAnswer a;
    a.body = "{";
    AppendSummary(&a.body, *s, clock_());
    a.body += '}';
    return a;
  }
  if (rest == "/world" || rest == "/queries") {
    // Its queries are recorded while a page reads it (kWatchHoldNs on).
    s->recorder().Watch(SteadyNowNs() + kWatchHoldNs);
    return rest == "/world" ? World(*s, req) : Queries(*s, req);
  }
  if (rest == "/map") return Map(*s);
  if (rest == "/stream") return OpenStream(s);
  return Fail(404, "no such API path: " + req.path);
}

InspectorAnswer InspectorApi::Sessions(const InspectorRequest& req) const {
  const Authorizer& auth = service_->authorizer();
  const std::optional<std::string> token = BearerToken(req.authorization);
  const std::vector<std::shared_ptr<Session>> all = service_->sessions().List();
  std::vector<std::shared_ptr<Session>> shown;
  bool admin = false;
  if (!auth.credentials_configured()) {
    shown = all;
    admin = true;
  } else if (!token) {
    return Fail(401, "missing token: send 'Authorization: Bearer <token>' with the admin "
                     "token or a session's token");
  } else if (auth.Decide(req.peer, &*token, Access::kAdmin, "").ok()) {
    shown = all;
    admin = true;
  } else {
    // A session's token opens that session: every one compared, in time
    // independent of which matched.
    for (const std::shared_ptr<Session>& s : all) {
      const bool match = !s->token().empty() && TokensEqual(*token, s->token());
      if (match) shown.push_back(s);
    }
    if (shown.empty()) return Fail(403, "the token is neither a session's nor the admin token");
  }
  InspectorAnswer a;
  a.body = "{\"admin\":";
  a.body += admin ? "true" : "false";
  a.body += ",\"auth\":";
  a.body += auth.credentials_configured() ? "true" : "false";
  a.body += ",\"sessions\":[";
  const int64_t now = clock_();
  if (admin) {  // rates of sessions gone are dropped
    std::lock_guard<std::mutex> lock(rates_mu_);
    std::vector<std::string_view> ids;  // sorted, as List() is
    for (const std::shared_ptr<Session>& x : all) ids.push_back(x->id());
    std::erase_if(rates_, [&](const auto& r) {
      return !std::binary_search(ids.begin(), ids.end(), std::string_view(r.first));
    });
  }
  for (size_t i = 0; i < shown.size(); ++i) {
    if (i != 0) a.body += ',';
    a.body += '{';
    AppendSummary(&a.body, *shown[i], now);
    a.body += '}';
  }
  a.body += "],\"maps\":[";
  if (const auto& maps = service_->options().maps; maps != nullptr && admin) {
    bool first = true;
    for (const auto& m : maps->maps()) {
      if (!first) a.body += ',';
      first = false;
      a.body += "{\"id\":";
      AppendJsonString(&a.body, m->id);
      a.body += ",\"colliders\":" + std::to_string(m->set->size()) +
                ",\"triangles\":" + std::to_string(m->triangles) +
                ",\"memory_bytes\":" + std::to_string(m->memory_bytes()) + '}';
    }
  }
  a.body += "]}";
  return a;
}

InspectorAnswer InspectorApi::World(const Session& s, const InspectorRequest& req) const {
  std::optional<double> tick;
  if (auto it = req.params.find("tick"); it != req.params.end()) {
    char* end = nullptr;
    const double t = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || end != it->second.c_str() + it->second.size() ||
        !std::isfinite(t) || t < 0) {
      return Fail(400, "tick: expected a tick number >= 0, got '" + it->second + "'");
    }
    tick = t;
  }
  // Copied under the shared lock (a few microseconds per thousand colliders),
  // formatted after it is released, so a tick waits as little as possible.
  std::vector<Collider> colliders;
  uint64_t revision = 0;
  uint64_t total = 0;
  std::optional<TickRange> range;
  std::string watches;
  {
    std::shared_lock<std::shared_mutex> lock(s.mutex());
    revision = s.set().revision();
    if (!tick) AppendWatches(&watches, s.set());  // watches keep no history
    range = s.set().Ticks();
    colliders.reserve(std::min<size_t>(s.set().size(), kMaxInspectorColliders));
    const auto keep = [&](const Collider& c) {
      ++total;
      if (colliders.size() < kMaxInspectorColliders) colliders.push_back(c);
    };
    if (tick) {
      if (Status st = s.set().ForEachAtTick(*tick, keep); !st.ok()) {
        return Fail(400, "tick: " + st.error().message);
      }
    } else {
      s.set().ForEach(keep);
    }
  }
  std::sort(colliders.begin(), colliders.end(),
            [](const Collider& a, const Collider& b) { return a.id < b.id; });
  InspectorAnswer a;
  a.body.reserve(128 + 160 * colliders.size());
  a.body = "{\"id\":";
  AppendJsonString(&a.body, s.id());
  a.body += ",\"revision\":" + std::to_string(revision) + ",\"tick\":";
  if (tick) {
    AppendNumber(&a.body, *tick);
  } else if (range) {
    a.body += std::to_string(range->newest);
  } else {
    a.body += "null";
  }
  a.body += ",\"oldest_tick\":" + (range ? std::to_string(range->oldest) : std::string("null"));
  a.body += ",\"newest_tick\":" + (range ? std::to_string(range->newest) : std::string("null"));
  a.body += ",\"total\":" + std::to_string(total) + ",\"truncated\":";
  a.body += total > colliders.size() ? "true" : "false";
  a.body += ",\"colliders\":[";
  for (size_t i = 0; i < colliders.size(); ++i) {
    if (i != 0) a.body += ',';
    AppendCollider(&a.body, colliders[i]);
  }
  a.body += ']';
  if (!watches.empty()) a.body += ',' + watches;
  a.body += '}';
  return a;
}

InspectorAnswer InspectorApi::Map(const Session& s) const {
  const ColliderSet* base = s.set().base();  // fixed before publication: no lock
  const std::string& name = s.set().base_name();
  if (base == nullptr) return Json("{\"map\":null}");
  {
    std::lock_guard<std::mutex> lock(map_cache_mu_);
    if (auto it = map_cache_.find(name); it != map_cache_.end()) {
      return Json(*it->second);
    }
  }
  // Surfaces as one world-space triangle soup; the convex colliders as shapes.
  Triangles surfaces;
  std::string convex;
  size_t skipped = 0;
  base->ForEach([&](const Collider& c) {
    if (IsSurfaceKind(c.shape.kind())) {
      const size_t left = kMaxInspectorMapTriangles - surfaces.triangle_count();
      if (!AppendShapeTriangles(c.shape, &c.pose, left, &surfaces)) ++skipped;
      return;
    }
    if (!convex.empty()) convex += ',';
    AppendCollider(&convex, c);
  });
  auto body = std::make_shared<std::string>("{\"map\":");
  AppendJsonString(body.get(), name);
  *body += ",\"colliders\":[" + convex + "],\"triangles\":" +
           std::to_string(surfaces.triangle_count()) + ",\"skipped\":" + std::to_string(skipped) +
           ',';
  AppendTrianglesJson(body.get(), surfaces);
  *body += '}';
  std::lock_guard<std::mutex> lock(map_cache_mu_);
  map_cache_.emplace(name, body);
  return Json(*body);
}

InspectorAnswer InspectorApi::Queries(const Session& s, const InspectorRequest& req) const {
  // ?tick=T: the entries of tick T only; ?last=K: the newest K entries.
  std::optional<uint64_t> only_tick;
  size_t last = SIZE_MAX;
  for (const auto& [name, value] : req.params) {
    if (name != "tick" && name != "last") continue;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || value[0] == '-' || end != value.c_str() + value.size()) {
      return Fail(400, name + ": expected a whole number >= 0, got '" + value + "'");
    }
    if (name == "tick") {
      only_tick = v;
    } else {
      last = static_cast<size_t>(v);
    }
  }
  std::vector<std::shared_ptr<const RecordedTick>> ticks = s.recorder().Snapshot();
  if (only_tick) {
    std::erase_if(ticks, [&](const auto& t) { return t->tick != only_tick; });
  }
  if (ticks.size() > last) ticks.erase(ticks.begin(), ticks.end() - static_cast<ptrdiff_t>(last));
  size_t queries = 0, hits = 0;
  for (const auto& t : ticks) {
    queries += t->queries.size();
    hits += t->hits.size();
  }
  InspectorAnswer a;
  a.body.reserve(64 + 160 * queries + 96 * hits);  // about what it takes: no regrowth
  a.body = "{\"recording\":" +
           std::to_string(s.recorder().Capacity(service_->options().record_query_ticks,
                                                SteadyNowNs())) +
           ",\"ticks\":[";
  for (size_t i = 0; i < ticks.size(); ++i) {
    if (i != 0) a.body += ',';
    AppendRecordedTick(&a.body, *ticks[i]);
  }
  a.body += "]}";
  return a;
}

// {"tick":..,"revision":..,"query_count":..,"queries":[..]}
void InspectorApi::AppendRecordedTick(std::string* out, const RecordedTick& t) const {
  std::string& body = *out;
    body += "{\"tick\":" + (t.tick ? std::to_string(*t.tick) : std::string("null")) +
              ",\"revision\":" + std::to_string(t.revision) +
              ",\"query_count\":" + std::to_string(t.query_count) + ",\"queries\":[";
    for (size_t j = 0; j < t.queries.size(); ++j) {
      const RecordedQuery& q = t.queries[j];
      if (j != 0) body += ',';
      // Fields a query kind lacks are left out (shape of a ray, end of
      // all but moves): a live page reads these twice a second.
      body += "{\"kind\":\"";
      body += q.kind;
      body += "\",\"tag\":" + std::to_string(q.tag);
      if (q.shape) {
        body += ",\"shape\":";
        AppendShape(&body, *q.shape);
        body += ",\"q\":";
        AppendQuat(&body, q.pose.rotation);
      }
      body += ",\"p\":";
      AppendVec(&body, q.pose.position);
      body += ",\"translation\":";
      AppendVec(&body, q.translation);
      if (q.end) {
        body += ",\"end\":";
        AppendVec(&body, *q.end);
      }
      body += ",\"hits\":[";
      for (uint32_t k = 0; k < q.hit_count; ++k) {
        const RecordedHit& h = t.hits[q.hit_begin + k];
        if (k != 0) body += ',';
        body += "{\"id\":" + std::to_string(h.id) + ",\"point\":";
        AppendVec(&body, h.point);
        body += ",\"normal\":";
        AppendVec(&body, h.normal);
        body += ",\"fraction\":";
        AppendFloat(&body, static_cast<float>(h.fraction));
        body += '}';
      }
      body += "]}";
    }
  body += "]}";
}


InspectorStream::InspectorStream(const InspectorApi* api, std::shared_ptr<Session> session)
    : api_(api), session_(std::move(session)), next_ns_(api->clock_()) {}

InspectorStream::~InspectorStream() {
  std::lock_guard<std::mutex> lock(api_->streams_mu_);
  auto it = api_->streams_.find(session_->id());
  if (it != api_->streams_.end() && --it->second == 0) api_->streams_.erase(it);
  --api_->streams_total_;
  api_->streams_cv_.notify_all();  // Stop waits for the last one
}

bool InspectorStream::Next(std::string* out) {
  if (ended_) return false;
  const int64_t wait = next_ns_ - api_->clock_();
  if (wait > 0) {
    std::unique_lock<std::mutex> lock(api_->streams_mu_);
    api_->streams_cv_.wait_for(lock, std::chrono::nanoseconds(wait),
                               [&] { return api_->stopping_; });
  }
  next_ns_ = std::max(next_ns_ + kInspectorStreamIntervalNs, api_->clock_());
  return Event(out);
}

bool InspectorStream::Event(std::string* out) {
  if (ended_) return false;
  Session& s = *session_;
  bool stopping = false;
  {
    std::lock_guard<std::mutex> lock(api_->streams_mu_);
    stopping = api_->stopping_;
  }
  if (stopping || s.deleted()) {
    ended_ = true;
    const std::string why = s.gone_reason();
    AppendEnd(out, stopping ? "the server is stopping"
                   : why.empty() ? "session '" + s.id() + "' was deleted" : why);
    return false;
  }
  s.recorder().Watch(SteadyNowNs() + kWatchHoldNs);  // recorded while streamed
  const bool first = events_ == 0;
  uint64_t revision = 0;
  uint64_t total = 0;
  std::optional<TickRange> range;
  bool changed = false;
  std::string watches;
  {
    std::shared_lock<std::shared_mutex> lock(s.mutex());
    revision = s.set().revision();
    range = s.set().Ticks();
    changed = first || revision != revision_;
    if (changed) {
      now_.clear();
      s.set().ForEach([&](const Collider& c) {
        ++total;
        if (now_.size() < kMaxInspectorColliders) now_.push_back(c);
      });
      api_->AppendWatches(&watches, s.set());
    }
  }
  ++events_;
  *out += "event: world\ndata: {\"seq\":" + std::to_string(events_) +
          ",\"revision\":" + std::to_string(revision);
  *out += ",\"oldest_tick\":" + (range ? std::to_string(range->oldest) : std::string("null"));
  *out += ",\"newest_tick\":" + (range ? std::to_string(range->newest) : std::string("null"));
  *out += ",\"full\":";
  *out += first ? "true" : "false";
  if (changed) {
    // What changed since the last event: a merge of two id-sorted lists.
    std::sort(now_.begin(), now_.end(),
              [](const Collider& a, const Collider& b) { return a.id < b.id; });
    *out += ",\"total\":" + std::to_string(total) + ",\"truncated\":";
    *out += total > now_.size() ? "true" : "false";
    std::string& moved = moved_;
    std::string& removed = removed_;
    moved.clear();
    removed.clear();
    *out += ",\"added\":[";
    bool first_added = true;
    size_t i = 0, j = 0;
    while (i < now_.size() || j < sent_.size()) {
      if (j == sent_.size() || (i < now_.size() && now_[i].id < sent_[j].id) ||
          (i < now_.size() && now_[i].id == sent_[j].id && !SameButPose(now_[i], sent_[j]))) {
        if (!first_added) *out += ',';
        first_added = false;
        api_->AppendCollider(out, now_[i]);
        if (j < sent_.size() && now_[i].id == sent_[j].id) ++j;
        ++i;
      } else if (i == now_.size() || sent_[j].id < now_[i].id) {
        if (!removed.empty()) removed += ',';
        removed += std::to_string(sent_[j].id);
        ++j;
      } else {
        if (!SamePose(now_[i].pose, sent_[j].pose)) {
          if (!moved.empty()) moved += ',';
          moved += '[' + std::to_string(now_[i].id) + ',';
          AppendVec(&moved, now_[i].pose.position);
          moved += ',';
          AppendQuat(&moved, now_[i].pose.rotation);
          moved += ']';
        }
        ++i;
        ++j;
      }
    }
    *out += "],\"moved\":[" + moved + "],\"removed\":[" + removed + "],";
    *out += watches;
    sent_.swap(now_);
    revision_ = revision;
  }
  // The newest recorded tick of queries, when new, at most every
  // kInspectorStreamQueriesEvery events.
  if (std::shared_ptr<const RecordedTick> t =
          sent_queries_ == nullptr || events_ - queries_event_ >= kInspectorStreamQueriesEvery
              ? s.recorder().Newest()
              : nullptr;
      t != nullptr && t != sent_queries_) {
    queries_event_ = events_;
    *out += ",\"queries\":";
    api_->AppendRecordedTick(out, *t);
    sent_queries_ = std::move(t);
  }
  *out += "}\n\n";
  return true;
}

}  // namespace hitbox::server
