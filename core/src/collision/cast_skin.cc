// The contact offset (skin) of casts, CastSettings::contact_offset: a piece
// of B first met at fraction t0 with depth d0 and normal n (B towards A) is a
// hit only when d0 + (1 - t0) * max(0, -n . v) >= skin.
//
// Why passing over the others is safe: the signed distance of a convex A
// translating against a convex piece is a convex function of the fraction
// (the signed distance to the convex Minkowski difference along a line), so
// it lies above its tangent at t0, whose slope is n . v: the depth after t0
// is at most d0 + (t - t0) * max(0, -n . v) < skin for every t <= 1.
// (The same rule in the spirit of Unity's CharacterController skin width and
// Jolt's character padding: shallow resting contacts are not obstacles.)
#include <algorithm>

#include "collision/cast_internal.h"
#include "hitbox/collision/collide.h"

namespace hitbox::internal {

bool SkinKeeps(double depth, double t, const Vec3& normal, const Vec3& v, double skin) {
  const double approach = std::max(0.0, -Dot(normal, v));
  return depth + (1.0 - t) * approach >= skin;
}

CastResult ApplyContactOffset(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                              const CastResult& lc, double skin) {
  if (lc.state == CastState::kMiss) return lc;
  double depth = 0.0;
  Vec3 n = lc.normal;
  if (lc.state == CastState::kStartedOverlapping) {
    Contact c;
    // Within the solvers' tolerance of touching there is no contact: depth 0
    // and the cast's own normal.
    if (ComputeContact(a, a_in_b, b, Pose{}, &c)) {
      depth = c.depth;
      n = -c.normal;  // Contact::normal moves B away from A
    }
  }
  return SkinKeeps(depth, lc.fraction, n, v, skin) ? lc : CastResult{};
}

}  // namespace hitbox::internal
