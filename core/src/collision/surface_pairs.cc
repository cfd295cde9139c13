// Convex query shapes against mesh and heightfield colliders (the pair
// table's surface entries and the kSurface* cast methods): the query in the
// surface's frame, answered by collision/triangles/. Per collider the
// touched, deepest, nearest or first triangle wins (ties: the lowest input
// triangle, reported as sub_shape); distance visits every triangle (tools).
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "collision/cast_internal.h"
#include "collision/placed_query.h"
#include "collision/triangles/surface_deepest_contact.h"
#include "collision/triangles/surface_sweep.h"
#include "collision/work_meter.h"
#include "geometry/gjk.h"
#include "hitbox/collision/collide.h"
#include "shape/convex_core.h"
#include "shape/surface_data.h"

namespace hitbox::internal {

namespace {

#define HITBOX_PLACE(q, a, a_in_b) const PlacedConvex& q = PlaceQuery(a, a_in_b)

}  // namespace

bool SurfaceOverlap(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb) {
  HITBOX_PLACE(q, a, pb.RelativeTo(pa));
  return b.surface()->Visit(
      [&](const auto& s) { return SurfaceOverlapConvex(s, q, true, nullptr); });
}

uint32_t SurfaceOverlapLowest(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb) {
  HITBOX_PLACE(q, a, pb.RelativeTo(pa));
  return b.surface()->Visit([&](const auto& s) { return SurfaceOverlapLowestConvex(s, q); });
}

void SurfaceOverlapMembers(const Shape& a, const Pose& pa, const Shape& merged, const Pose& pb,
                           std::span<const uint32_t> first,
                           std::vector<std::pair<uint32_t, uint32_t>>* out) {
  HITBOX_PLACE(q, a, pb.RelativeTo(pa));
  SurfaceOverlapLowestPerMember(*merged.surface()->mesh(), q, first,
                                [&](uint32_t m, uint32_t t) { out->emplace_back(m, t); });
}

bool SurfaceContact(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,
                    Contact* contact, uint32_t* triangle) {
  HITBOX_PLACE(q, a, pb.RelativeTo(pa));
  SurfaceContactHit deepest;
  if (!b.surface()->Visit(
          [&](const auto& s) { return SurfaceDeepestContactConvex(s, q, &deepest); })) {
    return false;
  }
  // SurfaceContactHit::normal pushes the query (A) out; Contact::normal moves B away from A.
  const Mat33 rb = pb.rotation.ToMatrix();
  contact->depth = deepest.depth;
  contact->normal = -(rb * deepest.normal);
  contact->point_a = pb.position + rb * deepest.point_on_query;
  contact->point_b = pb.position + rb * deepest.point_on_mesh;
  if (triangle != nullptr) *triangle = deepest.triangle;
  return true;
}

DistanceResult SurfaceDistance(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb) {
  HITBOX_PLACE(q, a, pb.RelativeTo(pa));
  DistanceResult out;
  out.distance = std::numeric_limits<double>::infinity();
  Vec3 pa_local, pb_local;
  WorkTally tally;
  b.surface()->Visit([&](const auto& s) {
    Aabb everything = s.bounds();
    everything = everything.Union(q.bounds());
    return s.VisitOverlapping(everything, [&](uint32_t k) {
      if (!tally.Count()) return false;  // the batch stops (budget, deadline)
      Vec3 v[3];
      s.TriangleVertices(k, v);
      const TriangleConvexDistance g = TriangleConvexGjk(v, q, q.margin(), q.scale());
      const double d = g.distance_lower > 0.0 ? std::max(g.distance, 0.0) : 0.0;
      if (d < out.distance) {
        out.distance = d;
        pa_local = g.point_on_convex;
        pb_local = g.point_on_triangle;
      }
      return out.distance > 0.0;
    });
  });
  const Mat33 rb = pb.rotation.ToMatrix();
  out.point_a = pb.position + rb * pa_local;
  out.point_b = pb.position + rb * pb_local;
  return out;
}

namespace {

// The triangle routine of each kSurface* cast method.
constexpr TriangleRoutine RoutineOf(CastMethod m) {
  switch (m) {
    case CastMethod::kSurfaceBall: return TriangleRoutine::kBall;
    case CastMethod::kSurfaceCapsule: return TriangleRoutine::kCapsule;
    case CastMethod::kSurfaceBox: return TriangleRoutine::kBox;
    case CastMethod::kSurfaceCylinder: return TriangleRoutine::kCylinder;
    default: return TriangleRoutine::kConvex;
  }
}

}  // namespace

template <CastMethod kMethod>
CastResult CastSurface(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                       double contact_offset, MergedSweep* merged) {
  static_assert(IsSurfaceMethod(kMethod));
  HITBOX_PLACE(q, a, a_in_b);
  return b.surface()->Visit([&](const auto& s) {
    return SurfaceSweepConvex<RoutineOf(kMethod)>(s, q, v, contact_offset, merged);
  });
}


template CastResult CastSurface<CastMethod::kSurfaceBall>(const Shape&, const Pose&, const Vec3&,
                                                          const Shape&, double, MergedSweep*);
template CastResult CastSurface<CastMethod::kSurfaceCapsule>(const Shape&, const Pose&, const Vec3&,
                                                             const Shape&, double, MergedSweep*);
template CastResult CastSurface<CastMethod::kSurfaceBox>(const Shape&, const Pose&, const Vec3&,
                                                         const Shape&, double, MergedSweep*);
template CastResult CastSurface<CastMethod::kSurfaceCylinder>(const Shape&, const Pose&,
                                                              const Vec3&, const Shape&, double,
                                                              MergedSweep*);
template CastResult CastSurface<CastMethod::kSurfaceHull>(const Shape&, const Pose&, const Vec3&,
                                                          const Shape&, double, MergedSweep*);

}  // namespace hitbox::internal
