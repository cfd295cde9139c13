// What the surface queries (a mesh or heightfield against a convex) answer
// (internal to hitbox_core).
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

/// First contact of a shape cast against a mesh or heightfield.
struct SurfaceCastHit {
  enum class State : uint8_t { kMiss, kHit, kStartedInside };
  State state = State::kMiss;
  /// Fraction of the translation in [0, 1] at first contact (0 when started inside).
  double fraction = 1.0;
  /// Unit contact normal from the triangle towards the moving shape (never
  /// along the motion unless the fraction is 0); the face normal when the
  /// contact lies on an inactive edge or vertex.
  Vec3 normal{0, 1, 0};
  /// Contact point on the triangle (local frame).
  Vec3 point;
  /// Index of the triangle in the input (`sub_shape`).
  uint32_t triangle = 0;
  /// True when the conservative advancement gave up on this triangle
  /// (iteration cap, or no advance possible): `fraction` is then a lower
  /// bound of the time of impact, not a proven contact, and `point` the
  /// triangle's closest point to the convex there (generic convex sweeps only).
  bool capped = false;
};

}  // namespace hitbox
