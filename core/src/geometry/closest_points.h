// Closed-form closest points between simple primitives (internal to
// hitbox_core): segment-segment, point-segment, segment-box, point-cylinder.
// All inputs and outputs are in one common frame chosen by the caller.
#pragma once

#include "hitbox/math/math.h"

namespace hitbox::internal {

/// Closest points of two primitives and their squared distance.
struct ClosestPair {
  /// Point on the first primitive.
  Vec3 p;
  /// Point on the second primitive.
  Vec3 q;
  /// |p - q|^2 in square metres.
  double distance_sq = 0.0;
};

/// Closest point to `p` on segment [a, b] (a == b allowed).
Vec3 ClosestPointOnSegment(const Vec3& p, const Vec3& a, const Vec3& b);

/// Closest points of segments [p1, q1] and [p2, q2]; degenerate segments allowed.
/// Ericson, "Real-Time Collision Detection" (RTCD) 5.1.9.
ClosestPair ClosestSegmentSegment(const Vec3& p1, const Vec3& q1, const Vec3& p2, const Vec3& q2);

/// Closest points of segment [a, b] (first) and the solid box |x_i| <= h_i
/// centred on the origin (second), in the box frame. Exact: the squared
/// distance is a convex piecewise quadratic in the segment parameter with at
/// most 6 breakpoints (where the segment crosses a slab plane); each piece is
/// minimised in closed form. distance_sq is 0 when the segment meets the box.
ClosestPair ClosestSegmentBox(const Vec3& a, const Vec3& b, const Vec3& half_extents);

/// Closest point of the solid cylinder (axis Y, radius r, caps at +-h) to `p`,
/// in the cylinder frame; `p` itself when inside.
Vec3 ClosestPointOnCylinder(const Vec3& p, double radius, double half_height);

}  // namespace hitbox::internal
