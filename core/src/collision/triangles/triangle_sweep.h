// One triangle's part of a convex sweep: the routine of the query's core
// (ball, capsule, box SAT, cylinder or the GJK cast), chosen at compile time.
#pragma once

#include <cstdint>

#include "collision/triangles/ball_triangle_sweep.h"
#include "collision/triangles/box_triangle_sweep.h"
#include "collision/triangles/cylinder_triangle.h"
#include "collision/triangles/triangle_gjk_cast.h"
#include "hitbox/math/math.h"

namespace hitbox {

/// The triangle routine of each query core; the pair table picks it once per
/// query kind (CastMethod::kSurfaceBall ... kSurfaceHull).
enum class TriangleRoutine : uint8_t {
  kBall,      ///< point core: SweepSphereTriangle
  kCapsule,   ///< segment core: SweepCapsuleTriangle
  kBox,       ///< box core: SweepBoxSat, else the GJK cast
  kCylinder,  ///< cylinder core: the GJK cast with CylinderTriangleSweep's closed form
  kConvex,    ///< any core (a hull): the GJK cast
};

/// First contact of `convex` (its core must fit kRoutine) translating by
/// `translation` for t in [0, t_max] with triangle v: normal from the
/// triangle towards the convex, point on the triangle; kFailed where the GJK
/// cast gave up (fraction a lower bound, point the closest there).
template <TriangleRoutine kRoutine, typename Convex>
CastResult SweepTriangle(const Vec3 v[3], const Convex& convex, const Vec3& translation,
                         double t_max, double scale, uint8_t active) {
  if constexpr (kRoutine == TriangleRoutine::kBall) {
    return SweepSphereTriangle(convex.segment()[0], convex.margin(), translation, t_max, v[0],
                               v[1], v[2], active);
  } else if constexpr (kRoutine == TriangleRoutine::kCapsule) {
    const Vec3* seg = convex.segment();
    return SweepCapsuleTriangle(seg[0], seg[1], convex.margin(), translation, t_max, v[0], v[1],
                                v[2], active);
  } else if constexpr (kRoutine == TriangleRoutine::kBox) {
    const SweepSatResult sat =
        SweepBoxSat(v, *convex.oriented_box(), convex.margin(), translation, t_max, scale, active);
    if (sat.state == SweepSatResult::State::kApart) return CastResult{};
    if (sat.state == SweepSatResult::State::kHit) return sat.hit;
    return SweepConvexTriangle(v, convex, convex.margin(), translation, t_max, scale, active);
  } else if constexpr (kRoutine == TriangleRoutine::kCylinder) {
    const PlacedCylinder cyl = convex.cylinder();
    // Apart in the cylinder's frame (CylinderTriangleApart): a miss. Else
    // the cast decides starts inside and the misses it sees at once; once
    // it has advanced, a hit or miss comes in closed form when it proves
    // itself.
    if (CylinderTriangleApart(v, cyl, translation, t_max)) return CastResult{};
    auto closed_form = [&](const Vec3& face, CastResult* out) {
      return CylinderTriangleSweep(v, cyl, translation, t_max, active, face, out);
    };
    return SweepConvexTriangle(v, convex, convex.margin(), translation, t_max, scale, active,
                               closed_form);
  } else {
    return SweepConvexTriangle(v, convex, convex.margin(), translation, t_max, scale, active);
  }
}

}  // namespace hitbox
