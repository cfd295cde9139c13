// The JSON API behind the inspector page (docs/inspector.md): sessions, a
// session's world now or at a past tick, its map's geometry as triangle
// arrays and its recorded queries. Plain requests in, answers out, so the
// access rules and the JSON are tested without a socket; inspector_http.cc
// serves it. Access follows the rpcs (auth.h): protected mode serves
// loopback only; with credentials, a bearer token (the admin's: every
// session; a session's: that one) is required for everything.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

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

/// An answer: HTTP status, content type and body (JSON: {"error": "..."} on failure).
struct InspectorAnswer {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

/// The peer string of auth.h for an HTTP client's address and port.
std::string HttpPeer(const std::string& address, int port);

/// Answers GET /api/... requests. Thread-safe.
class InspectorApi {
 public:
  explicit InspectorApi(HitboxService* service) : service_(service) {}

  /// Routes: /api/sessions, /api/sessions/ID, /api/sessions/ID/world
  /// [?tick=T], /api/sessions/ID/map, /api/sessions/ID/queries[?tick=T]
  /// [&last=K].
  InspectorAnswer Handle(const InspectorRequest& req) const;

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

  HitboxService* const service_;
  mutable std::mutex shape_cache_mu_;
  mutable std::map<const void*, std::pair<Shape, std::shared_ptr<const std::string>>>
      shape_cache_;
  // Map geometry answers by map name, built once (maps never change).
  mutable std::mutex map_cache_mu_;
  mutable std::map<std::string, std::shared_ptr<const std::string>, std::less<>> map_cache_;
};

}  // namespace hitbox::server
