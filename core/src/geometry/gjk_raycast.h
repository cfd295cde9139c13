// GJK ray cast: the first time a translating convex core (plus margin)
// touches another (van den Bergen 2004), the simplex kept across advances.
// Each advance stops at a support plane, so the fraction is a lower bound of
// the time of impact (within 4e-7) and that plane's normal the contact's;
// a stall beyond the gap restarts once, then kFailed hands on the bound.
#pragma once

#include "geometry/gjk.h"
#include "hitbox/math/math.h"

namespace hitbox::internal {

/// Outcome of GjkRaycast.
struct GjkRaycastResult {
  /// kFailed: stalled (rounding on a sliver simplex) or out of iterations
  /// while still apart by more than the tolerance; `lambda` is then a valid
  /// lower bound of the time of impact to continue from by other means.
  enum class State : uint8_t { kMiss, kHit, kStartedOverlapping, kFailed };
  State state = State::kMiss;
  /// Time of impact in [l_start, 1] (l_start when started overlapping).
  double lambda = 1.0;
  /// Unit normal from B towards A at the contact (B frame).
  Vec3 normal{0, 1, 0};
  /// Contact point on B's surface (B frame).
  Vec3 point;
  /// Iterations used (<= max_iterations).
  int iterations = 0;
};

/// Casts core `a` (placed by `a_in_b`, moving by `v`, B frame) against core
/// `b` at the origin of B's frame, starting at l = `lambda_start` (a known
/// lower bound, 0 when none) with `normal_start` as the contact normal should
/// the shapes already touch there. `tolerance`: gap in metres accepted as
/// contact. `lambda_max` in [0, 1]: once the lower bound passes it, the cast
/// stops with kMiss (the time of impact is later than the caller cares for).
GjkRaycastResult GjkRaycast(const ConvexCore& a, const Pose& a_in_b, const Vec3& v,
                            const ConvexCore& b, double lambda_start, const Vec3& normal_start,
                            double tolerance, int max_iterations, double lambda_max = 1.0);

}  // namespace hitbox::internal
