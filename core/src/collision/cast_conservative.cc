// Casts without a closed form (capsule-cylinder, box-cylinder and cylinder
// against box / capsule / cylinder): bounding spheres and bounding capsules
// first (closed-form sweeps: a miss of the bounds is a miss, and the capsules'
// time of impact is a lower bound to start from; a cylinder against a box,
// capsule or cylinder by separating axes instead, box_cylinder_cast.cc,
// capsule_cylinder_cast.cc and cylinder_cylinder_cast.cc, which also answer
// the contacts they certify), then the GJK ray cast of
// gjk_raycast.h (van den Bergen 2004) on the shapes' cores with the sphere /
// capsule radius as a margin, and, if that stalls, Newton's method on the GJK
// distance (gjk.h).
//
// Tolerance: the ray cast stops when the remaining gap would move the
// fraction by less than 1e-7 * clamp(|translation|, 1, 4) (and the gap is
// below 1e-6 m), or below CastSettings::linear_tolerance. The fraction is a
// lower bound of the exact one within that bound (<= 1e-7 * max(1, |v|), the
// target), except at near-grazing contacts where the time of impact itself is
// ill-conditioned. At most CastSettings::max_iterations iterations per loop.
#include <algorithm>
#include <cmath>

#include "collision/cast_internal.h"
#include "geometry/gjk.h"
#include "geometry/gjk_raycast.h"
#include "shape/convex_core.h"

namespace hitbox::internal {
namespace {

// A capsule holding `shape` (segment [p0, p1] in the shape's local frame,
// radius r): itself for a capsule, (r, h) for a cylinder, the longest axis
// with the diagonal of the other two for a box, a point for a sphere.
void BoundingCapsule(const Shape& shape, Vec3* p0, Vec3* p1, double* r) {
  switch (shape.kind()) {
    case ShapeKind::kSphere:
      *p0 = *p1 = Vec3{};
      *r = shape.radius();
      return;
    case ShapeKind::kBox: {
      const Vec3 e = shape.half_extents();
      const int k = (e.x >= e.y && e.x >= e.z) ? 0 : (e.y >= e.z ? 1 : 2);
      Vec3 axis;
      axis[k] = e[k];
      *p0 = -axis;
      *p1 = axis;
      *r = std::sqrt(e[(k + 1) % 3] * e[(k + 1) % 3] + e[(k + 2) % 3] * e[(k + 2) % 3]);
      return;
    }
    case ShapeKind::kCapsule:
    case ShapeKind::kCylinder:
      *p0 = {0, -shape.half_height(), 0};
      *p1 = {0, shape.half_height(), 0};
      *r = shape.radius();
      return;
    case ShapeKind::kConvexHull:
      *p0 = *p1 = shape.hull()->center();
      *r = shape.hull()->center_radius();
      return;
    case ShapeKind::kMesh:
    case ShapeKind::kHeightfield:
    case ShapeKind::kCompound:
      // (Surfaces and compounds are cast by their own methods, never
      // conservatively.)
      *p0 = *p1 = Vec3{};
      *r = shape.BoundingRadius();
      return;
  }
}

// A bound that is a ball (a sphere's or a hull's; BoundingCapsule's p0 == p1).
bool BoundIsBall(ShapeKind kind) {
  return kind == ShapeKind::kSphere || kind == ShapeKind::kConvexHull;
}

// The cast of A's bounding capsule against B's (B frame): a miss is a miss of
// the shapes, a hit's fraction a lower bound of theirs (started overlapping:
// no bound). With a ball on either side it is one ray against the other
// capsule grown by the ball's radius, the segment-segment sweep's cases for
// a zero-length segment.
CastResult CastBounds(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b) {
  Vec3 a0, a1, b0, b1;
  double ra, rb;
  BoundingCapsule(a, &a0, &a1, &ra);
  BoundingCapsule(b, &b0, &b1, &rb);
  a0 = a_in_b.TransformPoint(a0);
  a1 = a_in_b.TransformPoint(a1);
  const bool ball_a = BoundIsBall(a.kind());
  if (!ball_a && !BoundIsBall(b.kind())) return CastSegmentSegment(a0, a1, ra, v, b0, b1, rb);
  // A's centre moving by v against B's capsule grown by ra, or B's centre
  // moving by -v against A's (normals from B towards A either way).
  RayEntry e;
  const RayOutcome out = ball_a ? RaySegmentCapsule(a0, v, b0, b1, ra + rb, &e)
                                : RaySegmentCapsule(b0, -v, a0, a1, ra + rb, &e);
  CastResult r;
  if (out == RayOutcome::kMiss) return r;
  r.state = out == RayOutcome::kInside ? CastState::kStartedOverlapping : CastState::kHit;
  r.fraction = e.t;
  r.normal = ball_a ? e.normal : -e.normal;
  return r;
}

// Fallback when the GJK ray cast stalls (rare: sliver simplices on curved
// cylinder rims): Newton's method on the convex distance d(t) = dist(A + t v,
// B) from GJK (gjk.h), from the lower bound t0. d is convex in t, so the step
// t += d / (-d'(t)), d'(t) = n . v, never passes the time of impact. Stops at
// d <= linear_tolerance, then takes the normal at a 1e-6 m gap (one GJK call
// back along the path), where the difference of the closest points is not
// dominated by rounding. Out of iterations: kFailed at the lower bound t.
CastResult CastNewton(const ConvexCore& core_a, const Pose& a_in_b, const Vec3& v,
                      const ConvexCore& core_b, double t0, const Vec3& n0,
                      const CastSettings& settings) {
  const double tol = std::max(settings.linear_tolerance, 0.0);
  Pose placed = a_in_b;
  double t = t0;
  placed.position = a_in_b.position + v * t;
  GjkResult g = GjkDistance(core_b, core_a, placed);
  if (t0 == 0.0 && (g.state == GjkState::kOverlapping || g.distance <= tol)) {
    CastResult r;  // touching at the start: started overlapping, as everywhere
    r.state = CastState::kStartedOverlapping;
    r.fraction = 0.0;
    r.normal = g.cores_overlap ? n0 : g.normal;
    r.point = (g.point_a + g.point_b) * 0.5;
    return r;
  }
  double last_closing = 0.0;
  Vec3 last_normal = n0;
  for (int it = 0; it < std::max(settings.max_iterations, 1); ++it) {
    const bool touching = g.state == GjkState::kOverlapping || g.distance <= tol;
    if (!touching) {
      last_closing = -Dot(g.normal, v);
      last_normal = g.normal;
    } else {
      if (g.state != GjkState::kOverlapping && last_closing > 0.0) {
        const double next = t + g.distance / last_closing;
        if (next <= 1.0) t = next;
      }
      CastResult r;
      r.state = CastState::kHit;
      r.fraction = t;
      r.point = (g.point_a + g.point_b) * 0.5;
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
    if (!(next <= FractionBound(settings)) || next <= t) return {};
    t = next;
    placed.position = a_in_b.position + v * t;
    g = GjkDistance(core_b, core_a, placed);
  }
  // Iteration cap while still apart: not a miss. t is a lower bound of the
  // time of impact (Newton from the left never passes it).
  CastResult r;
  r.state = CastState::kFailed;
  r.fraction = t;
  r.normal = last_normal;
  r.point = (g.point_a + g.point_b) * 0.5;
  return r;
}

}  // namespace

CastResult CastConservative(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                            const CastSettings& settings) {
  // Bounding capsules first (closed form): a miss of the bounds is a miss, and
  // their time of impact is a lower bound to start the iteration from.
  double t_start = 0.0;
  Vec3 n_start{0, 1, 0};
  const ShapeKind ka = a.kind(), kb = b.kind();
  // The cylinder's partner, when a cylinder is in the pair.
  const ShapeKind other = ka == ShapeKind::kCylinder   ? kb
                          : kb == ShapeKind::kCylinder ? ka
                                                       : ShapeKind::kConvexHull;
  if (other == ShapeKind::kBox || other == ShapeKind::kCapsule ||
      other == ShapeKind::kCylinder) {
    // Separating axes: a miss, the exact time of impact, or a bound to start from.
    const double t_max = FractionBound(settings);
    const AxisCast axes = other == ShapeKind::kBox ? CastBoxCylinderAxes(a, a_in_b, v, b, t_max)
                          : other == ShapeKind::kCapsule
                              ? CastCapsuleCylinderAxes(a, a_in_b, v, b, t_max)
                              : CastCylinderCylinderAxes(a, a_in_b, v, b, t_max);
    switch (axes.state) {
      case AxisCast::State::kMiss: return {};
      case AxisCast::State::kHit: return axes.hit;
      case AxisCast::State::kLowerBound:
        t_start = axes.t;
        n_start = axes.normal;
        break;
    }
  } else {
    const CastResult bound = CastBounds(a, a_in_b, v, b);
    if (bound.state == CastState::kMiss) return {};
    if (bound.state == CastState::kHit) {
      // The bounds' time of impact is a lower bound: past max_fraction, so is the cast's.
      if (bound.fraction > FractionBound(settings)) return {};
      t_start = bound.fraction;
      n_start = bound.normal;
    }
  }
  const ConvexCore core_a = internal::CoreOf(a);
  const ConvexCore core_b = internal::CoreOf(b);
  const GjkRaycastResult g =
      GjkRaycast(core_a, a_in_b, v, core_b, t_start, n_start, settings.linear_tolerance,
                 std::max(settings.max_iterations, 1), FractionBound(settings));
  CastResult r;
  switch (g.state) {
    case GjkRaycastResult::State::kMiss: return r;
    case GjkRaycastResult::State::kHit: r.state = CastState::kHit; break;
    case GjkRaycastResult::State::kStartedOverlapping:
      r.state = CastState::kStartedOverlapping;
      break;
    case GjkRaycastResult::State::kFailed:
      return CastNewton(core_a, a_in_b, v, core_b, g.lambda, g.normal, settings);
  }
  r.fraction = g.lambda;
  r.normal = g.normal;
  r.point = g.point;
  return r;
}

}  // namespace hitbox::internal
