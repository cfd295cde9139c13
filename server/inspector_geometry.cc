#include "inspector_geometry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace hitbox::server {
namespace {

// Appends one vertex, placed at `pose` when given.
void PushVertex(Triangles* out, const Vec3& local, const Pose* pose) {
  const Vec3 p = pose != nullptr ? pose->TransformPoint(local) : local;
  out->positions.push_back(static_cast<float>(p.x));
  out->positions.push_back(static_cast<float>(p.y));
  out->positions.push_back(static_cast<float>(p.z));
}

// A hull's faces as triangle fans: the vertices on each face plane, in
// angular order about their centroid (faces are convex polygons).
bool HullTriangles(const ConvexHullData& hull, const Pose* pose, size_t max_triangles,
                   Triangles* out) {
  const std::vector<Vec3>& v = hull.vertices();
  const double scale = std::max(1.0, (hull.bounds().max - hull.bounds().min).Length());
  Triangles t;
  for (const HullPlane& plane : hull.planes()) {
    std::vector<uint32_t> face;
    for (uint32_t i = 0; i < v.size(); ++i) {
      if (std::abs(Dot(plane.normal, v[i]) - plane.offset) <= 1e-6 * scale) face.push_back(i);
    }
    if (face.size() < 3) continue;
    Vec3 centre;
    for (uint32_t i : face) centre = centre + v[i];
    centre = centre * (1.0 / static_cast<double>(face.size()));
    // An in-plane basis (u, w) with u x w along the outward normal.
    const Vec3 n = plane.normal;
    const Vec3 u = (std::abs(n.x) < 0.9 ? Cross(n, Vec3{1, 0, 0}) : Cross(n, Vec3{0, 1, 0})).Normalized();
    const Vec3 w = Cross(n, u);
    std::sort(face.begin(), face.end(), [&](uint32_t a, uint32_t b) {
      const Vec3 da = v[a] - centre, db = v[b] - centre;
      return std::atan2(Dot(da, w), Dot(da, u)) < std::atan2(Dot(db, w), Dot(db, u));
    });
    const auto base = static_cast<uint32_t>(t.positions.size() / 3);
    for (uint32_t i : face) PushVertex(&t, v[i], pose);
    for (uint32_t k = 1; k + 1 < face.size(); ++k) {
      t.indices.insert(t.indices.end(), {base, base + k, base + k + 1});
    }
  }
  if (t.triangle_count() > max_triangles) return false;
  const auto offset = static_cast<uint32_t>(out->positions.size() / 3);
  out->positions.insert(out->positions.end(), t.positions.begin(), t.positions.end());
  for (uint32_t i : t.indices) out->indices.push_back(offset + i);
  return true;
}

}  // namespace

void AppendFloat(std::string* out, float v) {
  if (!std::isfinite(v)) {
    *out += "null";
    return;
  }
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

void AppendNumber(std::string* out, double v) {
  if (!std::isfinite(v)) {
    *out += "null";
    return;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}


void AppendJsonString(std::string* out, std::string_view s) {
  *out += '"';
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      *out += buf;
    } else {
      *out += c;
    }
  }
  *out += '"';
}

void AppendVec(std::string* out, const Vec3& v) {
  *out += '[';
  AppendFloat(out, static_cast<float>(v.x));
  *out += ',';
  AppendFloat(out, static_cast<float>(v.y));
  *out += ',';
  AppendFloat(out, static_cast<float>(v.z));
  *out += ']';
}

void AppendQuat(std::string* out, const Quat& q) {
  *out += '[';
  AppendFloat(out, static_cast<float>(q.x));
  *out += ',';
  AppendFloat(out, static_cast<float>(q.y));
  *out += ',';
  AppendFloat(out, static_cast<float>(q.z));
  *out += ',';
  AppendFloat(out, static_cast<float>(q.w));
  *out += ']';
}

bool AppendShapeTriangles(const Shape& shape, const Pose* pose, size_t max_triangles,
                          Triangles* out) {
  if (const ConvexHullData* hull = shape.hull()) {
    return HullTriangles(*hull, pose, max_triangles, out);
  }
  if (shape.kind() == ShapeKind::kMesh) {
    if (shape.mesh_input_triangles() > max_triangles) return false;
    const std::optional<TriangleMeshShape> mesh = shape.mesh_input();
    if (!mesh) return false;
    const auto base = static_cast<uint32_t>(out->positions.size() / 3);
    for (const Vec3& p : mesh->vertices) PushVertex(out, p, pose);
    for (const auto& tri : mesh->triangles) {
      out->indices.insert(out->indices.end(), {base + tri[0], base + tri[1], base + tri[2]});
    }
    return true;
  }
  if (const HeightfieldShape* h = shape.heightfield_input()) {
    if (h->rows < 2 || h->cols < 2) return false;
    if (2ull * (h->rows - 1) * (h->cols - 1) > max_triangles) return false;
    const auto base = static_cast<uint32_t>(out->positions.size() / 3);
    for (uint32_t r = 0; r < h->rows; ++r) {
      for (uint32_t c = 0; c < h->cols; ++c) {
        PushVertex(out,
                   {c * h->cell_size_x, h->heights[static_cast<size_t>(r) * h->cols + c],
                    r * h->cell_size_z},
                   pose);
      }
    }
    for (uint32_t r = 0; r + 1 < h->rows; ++r) {
      for (uint32_t c = 0; c + 1 < h->cols; ++c) {
        const uint32_t a = base + r * h->cols + c, b = a + 1, d = a + h->cols, e = d + 1;
        out->indices.insert(out->indices.end(), {a, d, b, b, d, e});
      }
    }
    return true;
  }
  return false;
}

void AppendTrianglesJson(std::string* out, const Triangles& t) {
  out->reserve(out->size() + t.positions.size() * 9 + t.indices.size() * 7);
  *out += "\"positions\":[";
  for (size_t i = 0; i < t.positions.size(); ++i) {
    if (i != 0) *out += ',';
    AppendFloat(out, t.positions[i]);
  }
  *out += "],\"indices\":[";
  char buf[16];
  for (size_t i = 0; i < t.indices.size(); ++i) {
    if (i != 0) *out += ',';
    const auto r = std::to_chars(buf, buf + sizeof buf, t.indices[i]);
    out->append(buf, r.ptr);
  }
  *out += ']';
}

void AppendShapeJson(std::string* out, const Shape& shape, size_t max_triangles) {
  *out += "{\"kind\":";
  AppendJsonString(out, ShapeKindName(shape.kind()));
  switch (shape.kind()) {
    case ShapeKind::kSphere:
      *out += ",\"radius\":";
      AppendNumber(out, shape.radius());
      break;
    case ShapeKind::kBox:
      *out += ",\"half\":";
      AppendVec(out, shape.half_extents());
      break;
    case ShapeKind::kCapsule:
    case ShapeKind::kCylinder:
      *out += ",\"radius\":";
      AppendNumber(out, shape.radius());
      *out += ",\"half_height\":";
      AppendNumber(out, shape.half_height());
      break;
    case ShapeKind::kCompound:
      *out += ",\"children\":[";
      if (const CompoundData* c = shape.compound()) {
        bool first = true;
        for (const CompoundChild& child : c->children()) {
          if (!first) *out += ',';
          first = false;
          *out += "{\"shape\":";
          AppendShapeJson(out, child.shape, max_triangles);
          *out += ",\"p\":";
          AppendVec(out, child.pose.position);
          *out += ",\"q\":";
          AppendQuat(out, child.pose.rotation);
          *out += '}';
        }
      }
      *out += ']';
      break;
    default: {
      Triangles t;
      if (AppendShapeTriangles(shape, nullptr, max_triangles, &t)) {
        *out += ',';
        AppendTrianglesJson(out, t);
      } else {
        const Aabb b = shape.LocalBounds();
        *out += ",\"bounds\":[";
        AppendVec(out, b.min);
        *out += ',';
        AppendVec(out, b.max);
        *out += ']';
      }
    }
  }
  *out += '}';
}

}  // namespace hitbox::server
