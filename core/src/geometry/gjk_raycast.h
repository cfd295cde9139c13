// GJK ray cast: the first time a translating convex core (plus margin) touches
// another. Gino van den Bergen, "Ray casting against general convex objects
// with application to continuous collision detection" (2004): the simplex is
// kept across advances (its points stay points of C, only x moves).
//
// The moving shape A (placed by a_in_b in B's frame) touches B at time l when
// the point x(l) = l * v lies in C + ball(R), with C = B - A the Minkowski
// difference of the cores and R the sum of the margins. Each iteration takes
// the support point c of C towards x; if x lies beyond the plane of c grown
// by R, l advances to that plane (a plane bounds C + R, so l stays a lower
// bound of the time of impact) and the plane's normal becomes the contact
// normal; otherwise c joins the simplex, whose closest point to x gives the
// next direction. It stops when x is within R + gap of the simplex (hence of
// C), gap = max(tolerance, min(1e-6 m, 1e-7 * clamp(|v|, 1, 4) * closing
// speed)), so the fraction is within 1e-7 * clamp(|v|, 1, 4) <= 4e-7 of the
// time of impact (and never after it). On a curved rim GJK converges linearly
// and may stall in rounding: a stall within the gap is accepted; beyond it the
// simplex is restarted once, then kFailed hands the lower bound l to a
// fallback. The plane that set l touches C + R at x(l), so the normal is a
// supporting normal at the contact.
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
