// Exact penetration of a polytope core (point, segment, box) grown by a margin
// into a triangle, by the separating axis test: no iteration.
#pragma once

#include <algorithm>
#include <cmath>

#include "collision/triangles/triangle_epa.h"
#include "geometry/sat.h"
#include "hitbox/math/math.h"

namespace hitbox {

/// A polytope core in the mesh frame: the points centre + sum of s_k *
/// half[k] * axis[k] for s_k in [-1, 1] and k < axes. A point has no axis, a
/// segment (capsule core) one, a box three (unit, orthogonal).
struct TrianglePolytopeCore {
  Vec3 center;
  Vec3 axis[3];
  double half[3] = {0, 0, 0};
  int axes = 0;

  /// Half-width of the core's projection onto unit `n`.
  double Radius(const Vec3& n) const {
    double r = 0.0;
    for (int k = 0; k < axes; ++k) r += half[k] * std::fabs(Dot(n, axis[k]));
    return r;
  }
  /// Support point along `dir`.
  Vec3 Support(const Vec3& dir) const {
    Vec3 p = center;
    for (int k = 0; k < axes; ++k) p += axis[k] * (Dot(dir, axis[k]) >= 0.0 ? half[k] : -half[k]);
    return p;
  }
};

/// Exact penetration of a polytope core grown by `margin` (sphere: a point,
/// capsule: a segment, box) into triangle `tri`, by the separating axis test
/// (sat.h) over the face normals of their Minkowski difference: the
/// triangle's normal, the core's face normals (a box's axes) and the crosses
/// of the core's edges with the triangle's edges (parallel pairs skipped). A
/// flat difference (a point core, or a segment in the triangle's plane) is
/// decided by the triangle's normal alone. No iteration; 4 (point), 7
/// (segment) or 16 (box) axes. Meant for cores GJK found overlapping; for
/// apart cores the depth is negative (not a contact). Not valid for a
/// degenerate (zero-normal) triangle.
inline TriangleConvexPenetration TrianglePolytopePenetration(const Vec3 tri[3],
                                                             const TrianglePolytopeCore& core,
                                                             double margin) {
  TriangleConvexPenetration out;
  const Vec3 e[3] = {tri[1] - tri[0], tri[2] - tri[1], tri[0] - tri[2]};
  Vec3 face;
  if (!internal::SatCrossAxis(e[0], tri[2] - tri[0], &face)) return out;
  // A is the triangle, B the core: the normal moves the core away.
  internal::SatMinimum sat;
  auto axis = [&](const Vec3& n) {
    const double t0 = Dot(tri[0], n), t1 = Dot(tri[1], n), t2 = Dot(tri[2], n);
    const double c = Dot(core.center, n), r = core.Radius(n);
    sat.Axis(n, std::min(t0, std::min(t1, t2)), std::max(t0, std::max(t1, t2)), c - r, c + r);
  };
  axis(face);
  for (int k = 0; k < core.axes; ++k) {
    if (core.axes == 3) axis(core.axis[k]);  // a box's face normals
    for (const Vec3& edge : e) {
      Vec3 n;
      if (internal::SatCrossAxis(core.axis[k], edge, &n)) axis(n);
    }
  }
  out.valid = true;
  out.depth = std::max(sat.depth + margin, 0.0);
  out.normal = sat.normal;
  // The core's deepest point against the normal, grown by the margin; the
  // triangle's point follows from point_on_convex + depth * normal.
  out.point_on_convex = core.Support(-sat.normal) - sat.normal * margin;
  out.point_on_triangle = out.point_on_convex + sat.normal * out.depth;
  return out;
}

}  // namespace hitbox
