// Penetration of a convex into one triangle when their cores overlap: SAT for
// polytope cores, EPA for the others.
#pragma once


#include "collision/triangles/triangle_epa.h"
#include "collision/triangles/triangle_polytope_sat.h"
#include "hitbox/math/math.h"

namespace hitbox {

template <typename Convex>
TriangleConvexPenetration TriangleCoresPenetration(
    const Vec3 tri[3], const Convex& convex, const TriangleConvexDistance& g,
    TriangleEpaStart start = TriangleEpaStart::kPrismOrTetrahedron) {
  TrianglePolytopeCore polytope;
  if constexpr (requires { convex.PolytopeCore(&polytope); }) {
    if (convex.PolytopeCore(&polytope)) {
      const TriangleConvexPenetration p =
          TrianglePolytopePenetration(tri, polytope, convex.margin());
      if (p.valid) return p;
    }
  }
  return TriangleConvexEpa(tri, convex, convex.margin(), convex.scale(), g, start);
}

/// One triangle's part of SurfaceSweepConvex: the first contact of the
/// convex translating by `translation` for t in [0, t_max]. A sphere or a
/// capsule (PlacedConvex::rounded()) takes the closed forms (exact, no
/// iteration: SweepSphereTriangle, SweepCapsuleTriangle); any other convex the
/// GJK ray cast (SweepConvexTriangle), for a box after its separating axes
/// (SweepBoxSat), for a cylinder with its closed form (CylinderTriangleSweep).

}  // namespace hitbox
