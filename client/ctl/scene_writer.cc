#include "scene_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hitbox::ctl {
namespace {

nlohmann::json Vec(const Vec3& v) { return nlohmann::json::array({v.x, v.y, v.z}); }

Result<nlohmann::json> ShapeToJson(const Shape& s) {
  using nlohmann::json;
  switch (s.kind()) {
    case ShapeKind::kSphere: return json{{"sphere", {{"radius", s.radius()}}}};
    case ShapeKind::kBox: return json{{"box", {{"half_extents", Vec(s.half_extents())}}}};
    case ShapeKind::kCapsule:
      return json{{"capsule", {{"radius", s.radius()}, {"half_height", s.half_height()}}}};
    case ShapeKind::kCylinder:
      return json{{"cylinder", {{"radius", s.radius()}, {"half_height", s.half_height()}}}};
    case ShapeKind::kConvexHull: {
      json points = json::array();
      for (const Vec3& p : s.hull()->input_points()) points.push_back(Vec(p));
      return json{{"convex_hull", {{"points", std::move(points)}}}};
    }
    case ShapeKind::kMesh: {
      const TriangleMeshShape m = *s.mesh_input();
      json vertices = json::array();
      for (const Vec3& v : m.vertices) vertices.push_back(Vec(v));
      json triangles = json::array();
      for (const auto& t : m.triangles) triangles.push_back({t[0], t[1], t[2]});
      return json{{"mesh", {{"vertices", std::move(vertices)}, {"triangles", std::move(triangles)}}}};
    }
    case ShapeKind::kHeightfield: {
      const HeightfieldShape& h = *s.heightfield_input();
      return json{{"heightfield",
                   {{"rows", h.rows},
                    {"cols", h.cols},
                    {"cell_size", {h.cell_size_x, h.cell_size_z}},
                    {"heights", h.heights}}}};
    }
    default: break;
  }
  return Error{ErrorCode::kInvalidArgument,
               std::string("a ") + ShapeKindName(s.kind()) + " has no scene-file form yet"};
}

}  // namespace

Result<nlohmann::json> ColliderToJson(const Collider& c) {
  auto shape = ShapeToJson(c.shape);
  if (!shape.ok()) return Error{shape.error().code, "collider " + std::to_string(c.id) + ": " + shape.error().message};
  const Quat& q = c.pose.rotation;
  return nlohmann::json{{"id", c.id},
                        {"layer", c.layer},
                        {"shape", std::move(*shape)},
                        {"position", Vec(c.pose.position)},
                        {"rotation", {q.x, q.y, q.z, q.w}},
                        {"user_data", c.user_data}};
}

Result<nlohmann::json> SceneToJson(const std::vector<Collider>& colliders) {
  nlohmann::json entries = nlohmann::json::array();
  for (const Collider& c : colliders) {
    auto j = ColliderToJson(c);
    if (!j.ok()) return j.error();
    entries.push_back(std::move(*j));
  }
  return nlohmann::json{{"colliders", std::move(entries)}};
}

Status WriteJsonFile(const std::string& path, const nlohmann::json& doc) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return Status(ErrorCode::kInvalidArgument, "cannot write " + path + ": " + std::strerror(errno));
  }
  // One collider a line: readable in a diff, and far smaller than indent(2).
  std::string text;
  if (doc.is_object() && doc.contains("colliders") && doc.size() == 1) {
    text = "{\"colliders\": [\n";
    const auto& entries = doc.at("colliders");
    for (size_t i = 0; i < entries.size(); ++i) {
      text += entries[i].dump();
      text += i + 1 < entries.size() ? ",\n" : "\n";
    }
    text += "]}\n";
  } else {
    text = doc.dump(2) + "\n";
  }
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) return Status(ErrorCode::kInvalidArgument, "error writing " + path);
  return Status::Ok();
}

}  // namespace hitbox::ctl
