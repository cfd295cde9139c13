// Raycast(): a ray against one posed shape, computed in the shape's local frame
// with the closed forms of ray_primitives.h (slab test for the box, quadratic
// plus caps for the cylinder, sphere plus cylinder parts for the capsule).
#include "cast_internal.h"
#include "hitbox/collide.h"
#include "ray_primitives.h"

namespace hitbox {
namespace internal {

RayOutcome RayInflated(const Vec3& o, const Vec3& d, const Shape& shape, double rho,
                       RayEntry* out) {
  switch (shape.kind()) {
    case ShapeKind::kSphere: return RaySphere(o, d, shape.radius() + rho, out);
    case ShapeKind::kBox:
      return rho > 0.0 ? RayRoundedBox(o, d, shape.half_extents(), rho, out)
                       : RayBox(o, d, shape.half_extents(), out);
    case ShapeKind::kCapsule: {
      const double h = shape.half_height();
      return RaySegmentCapsule(o, d, {0, -h, 0}, {0, h, 0}, shape.radius() + rho, out);
    }
    case ShapeKind::kCylinder:
      return rho > 0.0 ? RayRoundedCylinder(o, d, shape.radius(), shape.half_height(), rho, out)
                       : RayCylinder(o, d, shape.radius(), shape.half_height(), out);
  }
  return RayOutcome::kMiss;
}

}  // namespace internal

CastResult Raycast(const Vec3& origin, const Vec3& translation, const Shape& b,
                   const Pose& pose_b) {
  CastResult result;
  if (!origin.IsFinite() || !translation.IsFinite() || !pose_b.IsFinite()) return result;
  // Local frame of B; origin - position first keeps 20 km coordinates exact.
  const Mat33 rb = pose_b.rotation.ToMatrix();
  const Vec3 o = rb.TransposeMul(origin - pose_b.position);
  const Vec3 d = rb.TransposeMul(translation);
  internal::RayEntry entry;
  switch (internal::RayInflated(o, d, b, 0.0, &entry)) {
    case internal::RayOutcome::kMiss: return result;
    case internal::RayOutcome::kInside:
      result.state = CastState::kStartedOverlapping;
      result.fraction = 0.0;
      result.normal = rb * entry.normal;
      result.point = origin;
      result.depth = 0.0;
      return result;
    case internal::RayOutcome::kHit:
      result.state = CastState::kHit;
      result.fraction = entry.t;
      result.normal = internal::FixImpactNormal(rb * entry.normal, translation, entry.t);
      result.point = origin + translation * entry.t;
      return result;
  }
  return result;
}

}  // namespace hitbox
