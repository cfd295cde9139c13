// Surface and triangle sweeps for a convex of any core: the triangle routine
// the pair table would pick for it, read from the core (tests only).
#pragma once

#include <cstdint>
#include <type_traits>

#include "collision/triangles/surface_sweep.h"
#include "hitbox/math/math.h"

namespace hitbox::testing {

/// fn(std::integral_constant<TriangleRoutine, R>{}) for the routine R of
/// `convex`'s core (kConvex for a convex without closed forms).
template <typename Convex, typename Fn>
decltype(auto) WithRoutineOf(const Convex& convex, Fn&& fn) {
  using R = TriangleRoutine;
  if constexpr (requires { convex.rounded(); }) {
    if (convex.rounded() == Convex::Rounded::kBall) {
      return fn(std::integral_constant<R, R::kBall>{});
    }
    if (convex.rounded() == Convex::Rounded::kCapsule) {
      return fn(std::integral_constant<R, R::kCapsule>{});
    }
    if (convex.oriented_box() != nullptr) return fn(std::integral_constant<R, R::kBox>{});
    if (convex.is_cylinder()) return fn(std::integral_constant<R, R::kCylinder>{});
  }
  return fn(std::integral_constant<R, R::kConvex>{});
}

/// SurfaceSweepConvex with the routine of `convex`'s core.
template <typename Surface, typename Convex>
CastResult SweepAnyCore(const Surface& surface, const Convex& convex, const Vec3& translation,
                        double skin = 0.0) {
  return WithRoutineOf(convex, [&](auto r) {
    return SurfaceSweepConvex<decltype(r)::value>(surface, convex, translation, skin);
  });
}

/// SweepTriangle with the routine of `convex`'s core.
template <typename Convex>
CastResult SweepTriangleAnyCore(const Vec3 v[3], const Convex& convex, const Vec3& translation,
                                double t_max, double scale, uint8_t active) {
  return WithRoutineOf(convex, [&](auto r) {
    return SweepTriangle<decltype(r)::value>(v, convex, translation, t_max, scale, active);
  });
}

}  // namespace hitbox::testing
