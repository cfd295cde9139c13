// What the surface overlap queries (a mesh or heightfield against a convex)
// answer (internal to hitbox_core); sweeps answer with CastResult.
#pragma once

#include <cstdint>

#include "hitbox/math/math.h"

namespace hitbox {

/// One triangle touched by an overlap query, with its contact where asked.
struct SurfaceContactHit {
  /// Index of the triangle in the input (`sub_shape`).
  uint32_t triangle = 0;
  /// Penetration depth in metres (>= 0): moving the query by depth * normal
  /// separates it from this triangle.
  double depth = 0.0;
  /// Unit direction from the triangle towards the query (push-out direction).
  Vec3 normal{0, 1, 0};
  /// Deepest point of the query (local frame of the mesh).
  Vec3 point_on_query;
  /// Matching point on the triangle (local frame of the mesh).
  Vec3 point_on_mesh;
};

}  // namespace hitbox
