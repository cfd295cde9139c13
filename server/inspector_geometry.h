// Geometry for the inspector's 3D view: shapes as JSON (primitives by their
// dimensions, hulls, meshes and heightfields as triangle arrays) and
// appended world-space triangles of a map's surfaces; points, poses and
// triangles as floats in their shortest round-trip form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hitbox/shape/shapes.h"

namespace hitbox::server {

/// Appends `v` in its shortest round-trip decimal form ("null" if not finite).
void AppendNumber(std::string* out, double v);
/// The same for a float: half the digits, enough for drawing (poses and
/// points are drawn in float32, and sent so to halve their bytes).
void AppendFloat(std::string* out, float v);
/// Appends `s` as a JSON string (quoted, escaped).
void AppendJsonString(std::string* out, std::string_view s);
/// Appends "[x,y,z]" (as floats).
void AppendVec(std::string* out, const Vec3& v);
/// Appends "[x,y,z,w]" of a rotation (as floats).
void AppendQuat(std::string* out, const Quat& q);

/// Triangles: 3 floats per vertex, 3 vertex indices per triangle.
struct Triangles {
  std::vector<float> positions;
  std::vector<uint32_t> indices;
  size_t triangle_count() const { return indices.size() / 3; }
};

/// Appends the triangles of a hull, mesh or heightfield shape (local frame,
/// or at `pose` when given) to `out`; false (nothing appended) for other
/// kinds or when it has more than `max_triangles`.
bool AppendShapeTriangles(const Shape& shape, const Pose* pose, size_t max_triangles,
                          Triangles* out);

/// Appends a shape as JSON: {"kind":"sphere","radius":r}, box "half",
/// capsule and cylinder "radius" and "half_height", hull/mesh/heightfield
/// "positions" and "indices" (local frame; past `max_triangles`: only
/// "bounds"), compound "children" [{shape, p, q}].
void AppendShapeJson(std::string* out, const Shape& shape, size_t max_triangles);

/// Appends "positions":[...],"indices":[...] of `t`.
void AppendTrianglesJson(std::string* out, const Triangles& t);

}  // namespace hitbox::server
