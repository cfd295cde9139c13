#include "inspector_api.h"

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

// One session's summary fields (no braces), read under its shared lock.
void AppendSummary(std::string* out, const Session& s) {
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
  std::shared_lock<std::shared_mutex> lock(s.mutex());
  *out += ",\"revision\":" + std::to_string(s.set().revision());
  *out += ",\"watches\":" + std::to_string(s.set().watch_count());
  *out += ",\"history_ticks\":" + std::to_string(s.set().history_ticks());
  if (const std::optional<TickRange> r = s.set().Ticks()) {
    *out += ",\"oldest_tick\":" + std::to_string(r->oldest);
    *out += ",\"newest_tick\":" + std::to_string(r->newest);
  } else {
    *out += ",\"oldest_tick\":null,\"newest_tick\":null";
  }
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

std::string HttpPeer(const std::string& address, int port) {
  if (address.find(':') != std::string::npos) {
    return "ipv6:[" + address + "]:" + std::to_string(port);
  }
  return "ipv4:" + address + ":" + std::to_string(port);
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
    AppendSummary(&a.body, *s);
    a.body += '}';
    return a;
  }
  if (rest == "/world" || rest == "/queries") {
    // Its queries are recorded while a page reads it (kWatchHoldNs on).
    s->recorder().Watch(SteadyNowNs() + kWatchHoldNs);
    return rest == "/world" ? World(*s, req) : Queries(*s, req);
  }
  if (rest == "/map") return Map(*s);
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
  for (size_t i = 0; i < shown.size(); ++i) {
    if (i != 0) a.body += ',';
    a.body += '{';
    AppendSummary(&a.body, *shown[i]);
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
                ",\"memory_bytes\":" + std::to_string(m->memory_bytes) + '}';
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
  {
    std::shared_lock<std::shared_mutex> lock(s.mutex());
    revision = s.set().revision();
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
  a.body += "]}";
  return a;
}

InspectorAnswer InspectorApi::Map(const Session& s) const {
  const ColliderSet* base = s.set().base();  // fixed before publication: no lock
  const std::string& name = s.set().base_name();
  if (base == nullptr) return {200, "application/json", "{\"map\":null}"};
  {
    std::lock_guard<std::mutex> lock(map_cache_mu_);
    if (auto it = map_cache_.find(name); it != map_cache_.end()) {
      return {200, "application/json", *it->second};
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
  return {200, "application/json", *body};
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
    const RecordedTick& t = *ticks[i];
    if (i != 0) a.body += ',';
    a.body += "{\"tick\":" + (t.tick ? std::to_string(*t.tick) : std::string("null")) +
              ",\"revision\":" + std::to_string(t.revision) +
              ",\"query_count\":" + std::to_string(t.query_count) + ",\"queries\":[";
    for (size_t j = 0; j < t.queries.size(); ++j) {
      const RecordedQuery& q = t.queries[j];
      if (j != 0) a.body += ',';
      // Fields a query kind lacks are left out (shape of a ray, end of
      // all but moves): a live page reads these twice a second.
      a.body += "{\"kind\":\"";
      a.body += q.kind;
      a.body += "\",\"tag\":" + std::to_string(q.tag);
      if (q.shape) {
        a.body += ",\"shape\":";
        AppendShape(&a.body, *q.shape);
        a.body += ",\"q\":";
        AppendQuat(&a.body, q.pose.rotation);
      }
      a.body += ",\"p\":";
      AppendVec(&a.body, q.pose.position);
      a.body += ",\"translation\":";
      AppendVec(&a.body, q.translation);
      if (q.end) {
        a.body += ",\"end\":";
        AppendVec(&a.body, *q.end);
      }
      a.body += ",\"hits\":[";
      for (uint32_t k = 0; k < q.hit_count; ++k) {
        const RecordedHit& h = t.hits[q.hit_begin + k];
        if (k != 0) a.body += ',';
        a.body += "{\"id\":" + std::to_string(h.id) + ",\"point\":";
        AppendVec(&a.body, h.point);
        a.body += ",\"normal\":";
        AppendVec(&a.body, h.normal);
        a.body += ",\"fraction\":";
        AppendFloat(&a.body, static_cast<float>(h.fraction));
        a.body += '}';
      }
      a.body += "]}";
    }
    a.body += "]}";
  }
  a.body += "]}";
  return a;
}

}  // namespace hitbox::server
