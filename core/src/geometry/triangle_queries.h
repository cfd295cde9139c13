// Distances and contacts of points and segments with one triangle (internal
// to hitbox_core), shared by TriangleMesh and Heightfield.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "geometry/closest_points.h"
#include "geometry/triangle.h"
#include "hitbox/math/math.h"
#include "geometry/ray_primitives.h"

namespace hitbox {

/// Unit normal of a triangle whose edges e1, e2 (from one vertex) are
/// collinear to rounding: square to the longer edge and to the other's part
/// across it (Gram-Schmidt, twice), so the plane holds all three vertices;
/// any normal square to the edge when that part is 0; zero for a point.
/// Out of line and cold, so TriangleNormal stays small where it inlines.
[[gnu::noinline, gnu::cold]] inline Vec3 CollinearTriangleNormal(Vec3 e1, Vec3 e2) {
  if (e2.LengthSq() > e1.LengthSq()) std::swap(e1, e2);
  const double l1 = e1.LengthSq();
  if (!(l1 > 0.0)) return Vec3{};
  Vec3 w = e2 - e1 * (Dot(e1, e2) / l1);
  w = w - e1 * (Dot(e1, w) / l1);
  const Vec3 n = Cross(e1, w);
  return n.LengthSq() > 0.0 ? n.Normalized() : AnyPerpendicular(e1 / std::sqrt(l1));
}

/// Unit normal of triangle abc (winding order a, b, c); zero when a, b, c
/// coincide. Collinear to rounding (sin^2 of the angle at a below 1e-12),
/// the cross product is noise whose plane misses b or c: see above.
inline Vec3 TriangleNormal(const Vec3& a, const Vec3& b, const Vec3& c) {
  const Vec3 e1 = b - a, e2 = c - a;
  const Vec3 n = Cross(e1, e2);
  if (n.LengthSq() > 1e-12 * e1.LengthSq() * e2.LengthSq()) return n.Normalized();
  return CollinearTriangleNormal(e1, e2);
}

/// False for a sliver: the triangle of edges ab = b - a, ac = c - a and
/// bc = c - b, |ab x ac|^2 = face2, is wide enough for the closed forms that
/// use its plane when face2 is at least 1e-6 of its longest edge^4 (the one
/// test TriangleTouchContact, TriangleConvexEpa's inner axis and the
/// capsule's deepest-contact bound share).
inline bool WideFace(const Vec3& ab, const Vec3& ac, const Vec3& bc, double face2) {
  const double longest = std::max(ab.LengthSq(), std::max(ac.LengthSq(), bc.LengthSq()));
  return face2 >= 1e-6 * longest * longest;
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
  *normal = d > 0.0 ? (center_point - q).Normalized() : face_normal;
  *depth = r - d;
  *point_on_query = center_point - *normal * r;
}

/// Whether a rounded shape (core points whose heights above the plane of
/// triangle abc, unit normal n, span [lo, hi]; radius r) moving by v stays
/// clear of that plane for t in [0, t_max]: wholly on one side by more than
/// a rounding margin, and not closing enough to reach it by t_max. Then it
/// cannot touch the triangle: a miss without the closed forms' work.
inline bool ClearOfPlane(double lo, double hi, double r, const Vec3& v, const Vec3& n,
                         double t_max) {
  const double margin = 1e-12 * (r + std::max(std::fabs(lo), std::fabs(hi)));
  const double dv = Dot(v, n);
  if (lo - r > margin) return !(-dv * t_max >= lo - r - margin);
  if (-hi - r > margin) return !(dv * t_max >= -hi - r - margin);
  return false;
}

/// Whether boxes `x` and `y` are certainly apart (false with a NaN bound).
inline bool BoxesApart(const Aabb& x, const Aabb& y) {
  return x.min.x > y.max.x || x.max.x < y.min.x || x.min.y > y.max.y || x.max.y < y.min.y ||
         x.min.z > y.max.z || x.max.z < y.min.z;
}

}  // namespace hitbox
