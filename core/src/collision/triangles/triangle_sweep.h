// One triangle's part of a convex sweep: picks the closed form (ball, capsule,
// box SAT, cylinder) or the GJK cast for the query's core.
#pragma once

#include <cstdint>

#include "collision/triangles/ball_triangle_sweep.h"
#include "collision/triangles/box_triangle_sweep.h"
#include "collision/triangles/cylinder_triangle.h"
#include "collision/triangles/triangle_gjk_cast.h"
#include "hitbox/math/math.h"

namespace hitbox {

template <typename Convex>
TriangleCastHit SweepTriangle(const Vec3 v[3], const Convex& convex, const Vec3& translation,
                              double t_max, double scale, uint8_t active) {
  if constexpr (requires { convex.rounded(); }) {
    if (convex.rounded() != Convex::Rounded::kNone) {
      const Vec3* seg = convex.segment();
      return convex.rounded() == Convex::Rounded::kBall
                 ? SweepSphereTriangle(seg[0], convex.margin(), translation, t_max, v[0], v[1],
                                       v[2], active)
                 : SweepCapsuleTriangle(seg[0], seg[1], convex.margin(), translation, t_max,
                                        v[0], v[1], v[2], active);
    }
  }
  if constexpr (requires { convex.oriented_box(); }) {
    if (const OrientedBox* box = convex.oriented_box()) {
      const SweepSatResult sat =
          SweepBoxSat(v, *box, convex.margin(), translation, t_max, scale, active);
      if (sat.state == SweepSatResult::State::kApart) return TriangleCastHit{};
      if (sat.state == SweepSatResult::State::kHit) return sat.hit;
    }
  }
  if constexpr (requires { convex.is_cylinder(); }) {
    if (convex.is_cylinder()) {
      const PlacedCylinder cyl = convex.cylinder();
      // Apart in the cylinder's frame (CylinderTriangleApart): a miss. Else
      // the cast decides starts inside and the misses it sees at once; once
      // it has advanced, a hit or miss comes in closed form when it proves
      // itself.
      if (CylinderTriangleApart(v, cyl, translation, t_max)) return TriangleCastHit{};
      auto closed_form = [&](const Vec3& face, TriangleCastHit* out) {
        return CylinderTriangleSweep(v, cyl, translation, t_max, active, face, out);
      };
      return SweepConvexTriangle(v, convex, convex.margin(), translation, t_max, scale, active,
                                 closed_form);
    }
  }
  return SweepConvexTriangle(v, convex, convex.margin(), translation, t_max, scale, active);
}

/// Calls fn(k, v) for each triangle k of `surface` (vertices v) whose box
/// meets the convex's bounds grown by kSweepGap: the hierarchy's leaves hold
/// several triangles, and a triangle whose own box is apart is certainly
/// apart (no GJK). Every triangle visited counts against the batch's budget
/// (WorkTally), which stops the walk when spent; fn returns false to stop.

}  // namespace hitbox
