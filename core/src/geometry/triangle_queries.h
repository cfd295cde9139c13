// Closed-form sphere and capsule queries against one triangle (internal to
// hitbox_core), shared by TriangleMesh and Heightfield so that both give
// bit-identical answers for the same triangles.
#pragma once

#include <cmath>
#include <cstdint>

#include "geometry/closest_points.h"
#include "geometry/triangle.h"
#include "hitbox/math/math.h"
#include "geometry/ray_primitives.h"

namespace hitbox {

/// Unit normal of triangle abc (winding order a, b, c); zero when degenerate.
inline Vec3 TriangleNormal(const Vec3& a, const Vec3& b, const Vec3& c) {
  return Cross(b - a, c - a).Normalized();
}

/// The unit normal of triangle (a, b, c) facing against `dir`: a two-sided
/// surface shows a ray (or a moving shape) the side it comes from.
inline Vec3 FacingNormal(const Vec3& a, const Vec3& b, const Vec3& c, const Vec3& dir) {
  const Vec3 n = TriangleNormal(a, b, c);
  return Dot(n, dir) > 0.0 ? -n : n;
}

/// Closest points of triangle abc and point p: returns |p - q|^2, q on the triangle.
inline double PointTriangleDistanceSq(const Vec3& p, const Vec3& a, const Vec3& b, const Vec3& c,
                                      Vec3* q) {
  *q = ClosestPointOnTriangle(p, a, b, c);
  return (p - *q).LengthSq();
}

/// Closest points of segment [p0, p1] (point `on_segment`) and triangle abc
/// (point `on_triangle`); returns the squared distance (0 when they meet;
/// the segment crossing the triangle is found by the watertight ray test).
inline double SegmentTriangleDistanceSq(const Vec3& p0, const Vec3& p1, const Vec3& a,
                                        const Vec3& b, const Vec3& c, Vec3* on_segment,
                                        Vec3* on_triangle) {
  const Vec3 d = p1 - p0;
  if (d.LengthSq() > 0.0) {
    TriangleRayHit h;
    if (RayTriangleWatertight(WatertightRay(p0, d), a, b, c, 1.0, &h)) {
      *on_segment = p0 + d * h.t;
      *on_triangle = a * h.u + b * h.v + c * h.w;
      return 0.0;
    }
  }
  Vec3 q;
  double best = PointTriangleDistanceSq(p0, a, b, c, &q);
  *on_segment = p0;
  *on_triangle = q;
  const double d1 = PointTriangleDistanceSq(p1, a, b, c, &q);
  if (d1 < best) { best = d1; *on_segment = p1; *on_triangle = q; }
  const Vec3 v[3] = {a, b, c};
  for (int i = 0; i < 3; ++i) {
    const internal::ClosestPair cp = internal::ClosestSegmentSegment(p0, p1, v[i], v[(i + 1) % 3]);
    if (cp.distance_sq < best) { best = cp.distance_sq; *on_segment = cp.p; *on_triangle = cp.q; }
  }
  return best;
}

/// Contact of a ball (centre `center_point`, radius r) whose closest point on
/// triangle abc is `q` at squared distance d2 <= r^2.
inline void BallTriangleContact(const Vec3& center_point, const Vec3& q, double d2, double r,
                                const Vec3& face_normal, Vec3* normal, double* depth,
                                Vec3* point_on_query) {
  const double d = std::sqrt(d2);
  *normal = d > 0.0 ? (center_point - q) / d : face_normal;
  *depth = r - d;
  *point_on_query = center_point - *normal * r;
}

/// Result of a sphere sweep against one triangle.
struct TriangleSweep {
  bool hit = false;
  bool started_inside = false;
  double t = 1.0;
  Vec3 normal{0, 1, 0};
  Vec3 point;
};

/// First contact of a sphere (centre c, radius r) moving by v, t in [0, t_max],
/// with triangle abc. `active`: the triangle's active-edge flags (bit i = edge
/// from vertex i to vertex i+1); a contact on an inactive edge, or on a vertex
/// whose two edges in this triangle are inactive, reports the face normal.
/// Face: the plane offset by r; edges and vertices: capsules around the edges
/// (RaySegmentCapsule, Ericson RTCD 5.3.7) — together the Minkowski sum of the
/// triangle and the ball.
inline TriangleSweep SweepSphereTriangle(const Vec3& c, double r, const Vec3& v, double t_max,
                                         const Vec3& a, const Vec3& b, const Vec3& cc,
                                         uint8_t active) {
  TriangleSweep out;
  const Vec3 n = TriangleNormal(a, b, cc);
  Vec3 q;
  const double d2 = PointTriangleDistanceSq(c, a, b, cc, &q);
  if (d2 <= r * r) {
    out.hit = out.started_inside = true;
    out.t = 0.0;
    const double d = std::sqrt(d2);
    const double side = Dot(c - a, n) >= 0.0 ? 1.0 : -1.0;
    out.normal = d > 0.0 ? (c - q) / d : n * side;
    out.point = q;
    return out;
  }
  double best = t_max;
  bool found = false;
  // Face: the sphere's centre reaches the plane offset by r on its side.
  const double s0 = Dot(c - a, n);
  const double side = s0 >= 0.0 ? 1.0 : -1.0;
  const double closing = -Dot(v, n) * side;  // > 0 when moving towards the plane
  if (closing > 0.0 && std::fabs(s0) > r) {
    const double t = (std::fabs(s0) - r) / closing;
    if (t <= best) {
      const Vec3 p = c + v * t - n * (side * r);
      TriangleFeature f;
      const Vec3 on = ClosestPointOnTriangle(p, a, b, cc, &f);
      if (f == TriangleFeature::kFace || (on - p).LengthSq() <= 1e-24 * (1.0 + p.LengthSq())) {
        best = t;
        found = true;
        out.normal = n * side;
        out.point = p;
      }
    }
  }
  const Vec3 vs[3] = {a, b, cc};
  for (int i = 0; i < 3; ++i) {
    internal::RayEntry e;
    if (internal::RaySegmentCapsule(c, v, vs[i], vs[(i + 1) % 3], r, &e) ==
            internal::RayOutcome::kHit &&
        e.t < best) {
      best = e.t;
      found = true;
      out.normal = e.normal;
      out.point = c + v * e.t - e.normal * r;
    }
  }
  if (!found) return out;
  out.hit = true;
  out.t = best;
  // Inactive edge or vertex: report the face normal (Jolt's active edges).
  TriangleFeature f;
  int idx = 0;
  const Vec3 centre_at = c + v * best;
  ClosestPointOnTriangle(centre_at, a, b, cc, &f, &idx);
  bool use_face = false;
  if (f == TriangleFeature::kEdge) {
    use_face = ((active >> idx) & 1u) == 0;
  } else if (f == TriangleFeature::kVertex) {
    use_face = ((active >> idx) & 1u) == 0 && ((active >> ((idx + 2) % 3)) & 1u) == 0;
  }
  if (use_face) {
    const Vec3 face = n * (Dot(centre_at - a, n) >= 0.0 ? 1.0 : -1.0);
    if (Dot(face, v) <= 0.0) out.normal = face;
  }
  return out;
}

}  // namespace hitbox
