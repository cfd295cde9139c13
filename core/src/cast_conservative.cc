// Conservative advancement for casts without a closed form (capsule-box,
// capsule-cylinder, box-cylinder, cylinder-anything): van den Bergen,
// "Ray casting against general convex objects with application to continuous
// collision detection" (2004), in its distance-driven form.
//
// Under a pure translation the distance d(t) = dist(A + t v, B) is a convex
// function of t (the distance from the point t v to the convex Minkowski
// difference B - A), differentiable while d > 0 with d'(t) = n . v, n the unit
// direction from B towards A. The step t <- t + d / (-n . v) is Newton's
// method on d, and on a convex function it never passes the first root:
// every iterate is a lower bound of the time of impact. Convergence is
// quadratic at a transversal contact and linear (ratio 1/2) at a tangent.
// Distances come from GJK on the shapes' cores with the sphere / capsule
// radius as a margin (gjk.h), so a capsule costs no more than a segment.
//
// Tolerance: the loop stops once d <= CastSettings::linear_tolerance (1e-9 m
// by default) and takes one last Newton step, which leaves the fraction
// within about (linear_tolerance / |v|)^2 * curvature of the exact value, far
// below 1e-7. It gives up (miss) when the shapes stop approaching, when t
// passes 1, or after CastSettings::max_iterations steps with d still above
// the tolerance.
#include <algorithm>
#include <cmath>

#include "cast_internal.h"
#include "gjk.h"

namespace hitbox::internal {

LocalCast CastConservative(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                           const CastSettings& settings) {
  const ConvexCore core_a = ConvexCore::FromShape(a);
  const ConvexCore core_b = ConvexCore::FromShape(b);
  // GJK in B's frame: B is GJK's first shape (at the origin), A the second.
  // GJK's normal then points from B towards A, as the cast's does.
  Pose placed = a_in_b;
  GjkResult g = GjkDistance(core_b, core_a, placed);
  // Touching within the tolerance at the start counts as overlapping.
  if (g.state == GjkState::kOverlapping || g.distance <= settings.linear_tolerance) {
    LocalCast r;
    r.state = CastState::kStartedOverlapping;
    r.t = 0.0;
    r.normal = g.cores_overlap ? UnitOr(a_in_b.position, -v) : g.normal;
    r.point = (g.point_a + g.point_b) * 0.5;
    return r;
  }
  const double tol = std::max(settings.linear_tolerance, 0.0);
  const int cap = std::max(settings.max_iterations, 1);
  double t = 0.0;
  double last_closing = 0.0;
  Vec3 last_normal = g.normal;
  for (int it = 0; it < cap; ++it) {
    const bool touching = g.state == GjkState::kOverlapping || g.distance <= tol;
    if (!touching) {
      last_closing = -Dot(g.normal, v);
      last_normal = g.normal;
    }
    if (touching) {
      // One last Newton step (still a lower bound) unless already in contact.
      if (g.state != GjkState::kOverlapping && last_closing > 0.0) {
        const double next = t + g.distance / last_closing;
        if (next <= 1.0) {
          t = next;
          placed.position = a_in_b.position + v * t;
          g = GjkDistance(core_b, core_a, placed);
        }
      }
      LocalCast r;
      r.state = CastState::kHit;
      r.t = t;
      r.point = (g.point_a + g.point_b) * 0.5;
      // The direction between closest points is unreliable at a ~1e-9 m gap
      // (it is a difference of nearly equal points): take it where the gap
      // is kNormalGap instead, one GJK call back along the path. The normal
      // of a curved contact then deviates by about kNormalGap / curvature radius.
      constexpr double kNormalGap = 1e-6;
      r.normal = last_normal;
      if (last_closing > 0.0) {
        placed.position = a_in_b.position + v * std::max(0.0, t - kNormalGap / last_closing);
        const GjkResult back = GjkDistance(core_b, core_a, placed);
        if (back.state != GjkState::kOverlapping && !back.cores_overlap) r.normal = back.normal;
      }
      return r;
    }
    if (last_closing <= 0.0) return {};  // not approaching: d is non-decreasing from here
    const double next = t + g.distance / last_closing;
    if (!(next <= 1.0)) return {};
    if (next <= t) return {};  // no progress in floating point while still apart
    t = next;
    placed.position = a_in_b.position + v * t;
    g = GjkDistance(core_b, core_a, placed);
  }
  return {};
}

}  // namespace hitbox::internal
