// The GJK core of a convex shape (geometry/gjk.h works on cores, not shapes),
// and GJK between two posed shapes.
#pragma once

#include "geometry/gjk.h"
#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"

namespace hitbox::internal {

/// The core of `shape` with its rounding as the margin: sphere -> point +
/// radius, capsule -> segment + radius, box and cylinder -> themselves, margin 0.
ConvexCore CoreOf(const Shape& shape);

/// World-frame convenience: GJK between two posed shapes. Points and normal in
/// the result are transformed to the world frame.
GjkResult GjkDistance(const Shape& a, const Pose& pose_a, const Shape& b, const Pose& pose_b,
                      const GjkSettings& settings = {});

}  // namespace hitbox::internal
