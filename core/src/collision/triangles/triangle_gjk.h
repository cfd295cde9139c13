// GJK distance between a triangle and a convex given by its support function
// (a core grown by a ball of radius `margin`; GJK runs on the core and the
// margin is subtracted, so spheres and capsules are exact). Gilbert, Johnson,
// Keerthi (1988) with van den Bergen's termination (2003, ch. 4); the
// simplex's closest point by simplex.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "geometry/simplex.h"
#include "geometry/triangle.h"
#include "hitbox/math/math.h"

namespace hitbox {

/// Contact gap at which a sweep stops (metres): the fraction is at most
/// kSweepGap / closing speed before the exact time of impact.
inline constexpr double kSweepGap = 1e-9;
/// Upper bound of the remaining gap (metres) accepted as contact when GJK
/// stalls in rounding with its lower bound already within kSweepGap.
inline constexpr double kSweepStallGap = 1e-7;
/// Iteration caps.
inline constexpr int kTriangleGjkMaxIterations = 64;
inline constexpr int kTriangleSweepMaxIterations = 128;

/// Closest points of a triangle and a convex core (+ margin), mesh frame.
struct TriangleConvexDistance {
  /// Distance including the margin (an upper bound: GJK's |v| minus the
  /// margin; <= 0 when they touch or overlap, only the sign meaningful then).
  double distance = 0.0;
  /// A lower bound of the same distance (van den Bergen's v.w / |v| minus the
  /// margin): > 0 means certainly apart. On a curved core (cylinder) GJK may
  /// stall before the bounds meet; overlap decisions and sweeps use this bound.
  double distance_lower = 0.0;
  /// The unit axis of that lower bound (triangle towards convex): every point
  /// of the core minus the triangle lies at least distance_lower + margin along it.
  Vec3 lower_axis{0, 1, 0};
  /// True when the cores themselves overlap (distance then -margin, normal undefined).
  bool cores_overlap = false;
  /// Unit direction from the triangle towards the convex (valid when !cores_overlap).
  Vec3 normal{0, 1, 0};
  /// Closest point on the triangle, and its barycentric weights (a, b, c).
  Vec3 point_on_triangle;
  double bary[3] = {1, 0, 0};
  /// Closest point on the convex (core point moved by the margin towards the triangle).
  Vec3 point_on_convex;
  int iterations = 0;
  /// When the cores overlap with the origin enclosed by a GJK tetrahedron:
  /// its points (core point minus triangle point), core points and triangle
  /// barycentric weights, the start polytope of EPA. 0 otherwise.
  int tetrahedron = 0;
  Vec3 tet_w[4], tet_p[4];
  double tet_l[4][3];
};

namespace triangle_convex_detail {

struct SimplexPoint {
  Vec3 w;       // support of (convex core - triangle)
  Vec3 p;       // point of the convex core
  double l[3];  // barycentric weights of the triangle point
};

/// The closest point to the origin of the simplex s[0..n) (simplex.h).
inline internal::SimplexClosest Closest(const SimplexPoint* s, int n) {
  return internal::ClosestToOriginOf([s](int i) -> const Vec3& { return s[i].w; }, n);
}

/// Closest in the form of the cast (SweepConvexTriangle): the origin's
/// projection on any triangle but a sliver (kProjectionUnlessSliver).
inline internal::SimplexClosest CastClosest(const SimplexPoint* s, int n) {
  return internal::ClosestToOriginOf<internal::ClosestPointForm::kProjectionUnlessSliver>(
      [s](int i) -> const Vec3& { return s[i].w; }, n);
}

/// Reduces s to the points `r` kept, in place, with their weights in `lam`.
inline void Keep(const internal::SimplexClosest& r, SimplexPoint* s, int* n, double* lam) {
  internal::CopyWeights(r, lam);
  for (int k = 0; k < r.count; ++k) {
    if (r.index[k] != k) s[k] = s[r.index[k]];
  }
  *n = r.count;
}

}  // namespace triangle_convex_detail

/// GJK distance between triangle `tri` and a convex given by
/// `core_support(dir)` (a point of the core farthest along dir, mesh frame)
/// grown by `margin`. `scale`: length scale of the pair for tolerances.
template <typename CoreSupport>
TriangleConvexDistance TriangleConvexGjk(const Vec3 tri[3], const CoreSupport& core_support,
                                         double margin, double scale) {
  using triangle_convex_detail::SimplexPoint;
  TriangleConvexDistance out;
  // The vertices as locals, not reloaded after each out-of-line call (as in
  // SweepConvexTriangle).
  const Vec3 tri0 = tri[0], tri1 = tri[1], tri2 = tri[2];
  auto tri_support = [&](const Vec3& d, double l[3]) {
    const double x0 = Dot(tri0, d), x1 = Dot(tri1, d), x2 = Dot(tri2, d);
    const int i = (x0 >= x1 && x0 >= x2) ? 0 : (x1 >= x2 ? 1 : 2);
    l[0] = l[1] = l[2] = 0.0;
    l[i] = 1.0;
    return i == 0 ? tri0 : (i == 1 ? tri1 : tri2);
  };
  SimplexPoint s[4];
  int n = 0;
  double lam[4] = {1, 0, 0, 0};
  // Start from the centroid direction.
  Vec3 dir = (tri[0] + tri[1] + tri[2]) * (1.0 / 3.0) - core_support(Vec3{1, 0, 0});
  if (dir.LengthSq() == 0.0) dir = {1, 0, 0};
  {
    SimplexPoint p;
    p.p = core_support(dir * -1.0);
    p.w = p.p - tri_support(dir, p.l);
    s[n++] = p;
  }
  Vec3 v = s[0].w;
  const double eps_abs = 1e-13 * scale;
  bool overlap = false;
  double lower = -std::numeric_limits<double>::infinity();
  int it = 0;
  for (; it < kTriangleGjkMaxIterations; ++it) {
    const double vv = v.LengthSq();
    if (vv <= eps_abs * eps_abs) { overlap = true; break; }
    SimplexPoint p;
    p.p = core_support(-v);
    p.w = p.p - tri_support(v, p.l);
    // Upper bound |v|, lower bound v.w / |v|.
    const double lb = Dot(v, p.w) / std::sqrt(vv);
    if (lb > lower) {
      lower = lb;
      out.lower_axis = v / std::sqrt(vv);
    }
    if (vv - Dot(v, p.w) <= 1e-12 * vv + eps_abs * eps_abs) break;
    bool dup = false;
    for (int i = 0; i < n; ++i) dup = dup || s[i].w == p.w;
    if (dup) break;
    // The new point goes after the simplex of v, which stands (s[0..n), lam)
    // unless the step makes progress.
    s[n] = p;
    const internal::SimplexClosest r = triangle_convex_detail::Closest(s, n + 1);
    if (r.inside) {
      // The tetrahedron holds the origin, unless rounding on a flat one says
      // so while the lower bound already proves separation (v stands).
      if (lower > eps_abs) break;
      overlap = true;
      out.tetrahedron = 4;
      n = 4;
      for (int k = 0; k < 4; ++k) {
        lam[k] = r.weight[k];  // the origin's weights: the core points meet
        out.tet_w[k] = s[k].w;
        out.tet_p[k] = s[k].p;
        for (int j = 0; j < 3; ++j) out.tet_l[k][j] = s[k].l[j];
      }
      break;
    }
    // No progress (rounding): v and its simplex stand.
    if (r.vv >= vv) break;
    triangle_convex_detail::Keep(r, s, &n, lam);
    v = r.v;
  }
  out.iterations = it;
  // Recover the closest points from the simplex weights.
  Vec3 on_core;
  double l[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    on_core += s[i].p * lam[i];
    for (int k = 0; k < 3; ++k) l[k] += s[i].l[k] * lam[i];
  }
  out.bary[0] = l[0]; out.bary[1] = l[1]; out.bary[2] = l[2];
  out.point_on_triangle = tri[0] * l[0] + tri[1] * l[1] + tri[2] * l[2];
  const double dist = overlap ? 0.0 : v.Length();
  if (overlap || dist <= eps_abs) {
    out.cores_overlap = true;
    out.distance = -margin;
    out.distance_lower = -margin;
    out.point_on_convex = on_core;
    return out;
  }
  out.normal = v / dist;
  out.distance = dist - margin;
  out.distance_lower = std::min(std::max(lower, 0.0), dist) - margin;
  out.point_on_convex = on_core - out.normal * margin;
  return out;
}

}  // namespace hitbox
