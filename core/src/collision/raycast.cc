// Raycast(): a ray against one posed shape, computed in the shape's local frame
// with the closed forms of ray_primitives.h (slab test for the box, quadratic
// plus caps for the cylinder, sphere plus cylinder parts for the capsule,
// clipping against every face half-space for a convex hull).
#include "shape/surface_data.h"
#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include "collision/cast_internal.h"
#include "hitbox/collision/collide.h"
#include "collision/pair_dispatch.h"
#include "geometry/ray_primitives.h"

namespace hitbox {
namespace internal {
namespace {

// The identity rotation with +0 parts, whose ToMatrix() has entries 1 and +0.
bool IsUnrotated(const Quat& q) {
  return std::bit_cast<uint64_t>(q.x) == 0 && std::bit_cast<uint64_t>(q.y) == 0 &&
         std::bit_cast<uint64_t>(q.z) == 0 && q.w == 1.0;
}

// Mat33::TransposeMul by that matrix, rounded as it rounds (1 * x == x; the
// +0 products keep the signs of zero the same), without making the matrix.
Vec3 UnrotatedTransposeMul(const Vec3& v) {
  return {(v.x + 0.0 * v.y) + 0.0 * v.z, (0.0 * v.x + v.y) + 0.0 * v.z,
          (0.0 * v.x + 0.0 * v.y) + v.z};
}

// The ray in B's local frame (origin - position first keeps 20 km
// coordinates exact). Level meshes mostly sit unrotated and most rays that
// reach a collider miss it, so an unrotated pose makes no matrix.
void LocalRay(const Vec3& origin, const Vec3& translation, const Pose& pose, Vec3* o, Vec3* d) {
  const Vec3 rel = origin - pose.position;
  if (IsUnrotated(pose.rotation)) {
    *o = UnrotatedTransposeMul(rel);
    *d = UnrotatedTransposeMul(translation);
    return;
  }
  const Mat33 rb = pose.rotation.ToMatrix();
  *o = rb.TransposeMul(rel);
  *d = rb.TransposeMul(translation);
}

}  // namespace

RayOutcome RayConvexHull(const Vec3& o, const Vec3& d, const ConvexHullData& hull,
                         RayEntry* out) {
  // Clip [0, 1] against every face half-space Dot(n, x) <= offset (Cyrus-Beck;
  // Ericson RTCD 5.3.8): closed form, one pass over the planes.
  double tmin = 0.0, tmax = 1.0;
  int entry = -1;
  int nearest = 0;
  double nearest_gap = -std::numeric_limits<double>::infinity();
  const std::vector<HullPlane>& planes = hull.planes();
  for (int i = 0; i < static_cast<int>(planes.size()); ++i) {
    const HullPlane& p = planes[i];
    const double s0 = Dot(p.normal, o) - p.offset;  // > 0: origin outside this face
    const double sd = Dot(p.normal, d);
    if (s0 > nearest_gap) nearest_gap = s0, nearest = i;
    if (sd == 0.0) {
      if (s0 > 0.0) return RayOutcome::kMiss;
      continue;
    }
    const double t = -s0 / sd;
    if (sd < 0.0) {
      if (t > tmin) tmin = t, entry = i;
    } else if (t < tmax) {
      tmax = t;
    }
    if (tmin > tmax) return RayOutcome::kMiss;
  }
  if (entry < 0) {
    // Every face has the origin on its inner side (s0 <= 0): inside or on.
    if (nearest_gap > 0.0) return RayOutcome::kMiss;  // (only reachable through rounding)
    out->t = 0.0;
    out->normal = planes[nearest].normal;
    return RayOutcome::kInside;
  }
  out->t = tmin;
  out->normal = planes[entry].normal;
  return RayOutcome::kHit;
}

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
    case ShapeKind::kConvexHull:
      // Only rays (rho == 0) reach here: hull casts use the GJK ray cast.
      if (rho > 0.0) MissingPair(ShapeKind::kSphere, ShapeKind::kConvexHull);
      return RayConvexHull(o, d, *shape.hull(), out);
    case ShapeKind::kMesh:
    case ShapeKind::kHeightfield:
    case ShapeKind::kCompound:
      // Surface and compound rays go through Raycast()'s own branches.
      MissingPair(ShapeKind::kSphere, shape.kind());
  }
  return RayOutcome::kMiss;
}

}  // namespace internal

CastResult Raycast(const Vec3& origin, const Vec3& translation, const Shape& b,
                   const Pose& pose_b, double max_fraction) {
  if (!origin.IsFinite() || !translation.IsFinite() || !pose_b.IsFinite()) return CastResult();
  return internal::RaycastFinite(origin, translation, b, pose_b, max_fraction);
}

CastResult internal::RaycastFinite(const Vec3& origin, const Vec3& translation, const Shape& b,
                                   const Pose& pose_b, double max_fraction) {
  CastResult result;
  Vec3 o, d;
  LocalRay(origin, translation, pose_b, &o, &d);
  // B's rotation as a matrix, made only for a hit.
  const auto to_world = [&](const Vec3& local) { return pose_b.rotation.ToMatrix() * local; };
  if (IsSurfaceKind(b.kind())) [[unlikely]] {
    // Two-sided surface: the closest triangle crossed (watertight), local frame.
    MeshRayHit hit;
    const bool any = b.surface()->Visit(
        [&](const auto& surface) { return surface.RaycastClosest(o, d, &hit, max_fraction); });
    if (!any) return result;
    result.state = hit.fraction > 0.0 ? CastState::kHit : CastState::kStartedOverlapping;
    result.fraction = hit.fraction;
    result.normal = to_world(hit.normal);
    result.point = origin + translation * hit.fraction;
    result.sub_shape = hit.triangle;
    return result;
  }
  if (b.kind() == ShapeKind::kCompound) [[unlikely]] {
    // The first child crossed, found in the compound's local frame.
    const CastResult local = internal::RaycastCompound(o, d, b, max_fraction);
    if (!local.hit()) return result;
    result = local;
    result.normal = to_world(local.normal);
    result.point = origin + translation * local.fraction;
    return result;
  }
  internal::RayEntry entry;
  switch (internal::RayInflated(o, d, b, 0.0, &entry)) {
    case internal::RayOutcome::kMiss: return result;
    case internal::RayOutcome::kInside:
      result.state = CastState::kStartedOverlapping;
      result.fraction = 0.0;
      result.normal = to_world(entry.normal);
      result.point = origin;
      result.depth = 0.0;
      return result;
    case internal::RayOutcome::kHit:
      result.state = CastState::kHit;
      result.fraction = entry.t;
      result.normal = internal::FixImpactNormal(to_world(entry.normal), translation, entry.t);
      result.point = origin + translation * entry.t;
      return result;
  }
  return result;
}

}  // namespace hitbox
