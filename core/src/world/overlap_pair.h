// The pair test of an overlap query, shared by OverlapJob (every overlap
// query) and the watches' incremental update, so both decide a pair alike.
#pragma once

#include <cstdint>

#include "collision/cast_internal.h"
#include "hitbox/collision/collide.h"
#include "hitbox/world/collider_set.h"

namespace hitbox::internal {

/// OverlapPiece's answer when the shapes do not touch.
inline constexpr uint32_t kNoOverlap = UINT32_MAX;

/// Query shape `qs` at `qpose` (normalized) against collider `c`: kNoOverlap
/// when their bounding spheres (radii r_q, slack included, and leaf_radius)
/// are apart or the narrow phase finds no contact, else the piece touched
/// (OverlapHit::sub_shape: the lowest triangle or child; 0 for the convex
/// kinds). *tested is set when the narrow phase ran (a pair test counted).
inline uint32_t OverlapPiece(const Shape& qs, const Pose& qpose, double r_q, const Collider& c,
                             float leaf_radius, bool* tested) {
  *tested = false;
  const double r = r_q + leaf_radius;
  if ((c.pose.position - qpose.position).LengthSq() > r * r) return kNoOverlap;
  *tested = true;
  if (!IsConvexKind(c.shape.kind())) [[unlikely]] {
    // One hit per surface or compound collider: the lowest input triangle or
    // child touched.
    return OverlapLowestPiece(qs, qpose, c.shape, c.pose);
  }
  return hitbox::Overlap(qs, qpose, c.shape, c.pose) ? 0 : kNoOverlap;
}

}  // namespace hitbox::internal
