// Convex query shapes against compound colliders (the pair table's compound
// entries, the kCompound cast method, rays): the query in the compound's
// frame, each child its bounds can reach answered by the convex pair. Per
// collider the touched, deepest, nearest or first child wins (ties: the
// lowest child index, reported as sub_shape).
#include <bit>
#include <cstdint>
#include <limits>

#include "collision/cast_internal.h"
#include "collision/work_meter.h"
#include "hitbox/collision/collide.h"

namespace hitbox::internal {

namespace {

/// Calls f(i) for each set bit i of `mask`, lowest first, while f returns
/// true; each child counts as a pair test of the batch (work_meter.h).
template <typename F>
void ForEachChild(uint64_t mask, F&& f) {
  WorkTally tally;
  while (mask != 0) {
    if (!tally.Count() || !f(static_cast<uint32_t>(std::countr_zero(mask)))) return;
    mask &= mask - 1;
  }
}

/// Distance between two boxes (0 when they overlap): a lower bound on the
/// distance between anything inside them.
double BoxDistance(const Aabb& x, const Aabb& y) {
  double sq = 0.0;
  for (int a = 0; a < 3; ++a) {
    const double gap = std::max(x.min[a] - y.max[a], y.min[a] - x.max[a]);
    if (gap > 0.0) sq += gap * gap;
  }
  return std::sqrt(sq);
}

}  // namespace

uint32_t CompoundOverlapLowest(const Shape& a, const Pose& pose_a, const Shape& b,
                               const Pose& pose_b) {
  const CompoundData& c = *b.compound();
  const Pose a_local = pose_b.RelativeTo(pose_a);
  uint32_t found = UINT32_MAX;
  ForEachChild(c.Candidates(a.WorldBounds(a_local), Vec3{}), [&](uint32_t i) {
    const CompoundChild& child = c.children()[i];
    if (!Overlap(a, a_local, child.shape, child.pose)) return true;
    found = i;
    return false;
  });
  return found;
}

bool CompoundContact(const Shape& a, const Pose& pose_a, const Shape& b, const Pose& pose_b,
                     Contact* contact, uint32_t* child_index) {
  const CompoundData& c = *b.compound();
  const Pose a_local = pose_b.RelativeTo(pose_a);
  bool any = false;
  Contact best;
  uint32_t best_index = 0;
  ForEachChild(c.Candidates(a.WorldBounds(a_local), Vec3{}), [&](uint32_t i) {
    const CompoundChild& child = c.children()[i];
    Contact k;
    if (ComputeContact(a, a_local, child.shape, child.pose, &k) && (!any || k.depth > best.depth)) {
      best = k;
      best_index = i;
      any = true;
    }
    return true;
  });
  if (!any) return false;
  contact->depth = best.depth;
  contact->normal = pose_b.TransformDirection(best.normal);
  contact->point_a = pose_b.TransformPoint(best.point_a);
  contact->point_b = pose_b.TransformPoint(best.point_b);
  if (child_index != nullptr) *child_index = best_index;
  return true;
}

DistanceResult CompoundDistance(const Shape& a, const Pose& pose_a, const Shape& b,
                                const Pose& pose_b) {
  const CompoundData& c = *b.compound();
  const Pose a_local = pose_b.RelativeTo(pose_a);
  const Aabb a_box = a.WorldBounds(a_local);
  DistanceResult best;
  best.distance = std::numeric_limits<double>::infinity();
  WorkTally tally;
  for (size_t i = 0; i < c.children().size() && best.distance > 0.0 && tally.Count(); ++i) {
    // Children whose boxes are already farther than the best cannot beat it.
    if (BoxDistance(a_box, c.child_bounds()[i]) >= best.distance) continue;
    const CompoundChild& child = c.children()[i];
    const DistanceResult d = ComputeDistance(a, a_local, child.shape, child.pose);
    if (d.distance < best.distance) best = d;
  }
  best.point_a = pose_b.TransformPoint(best.point_a);
  best.point_b = pose_b.TransformPoint(best.point_b);
  return best;
}

CastResult CastCompound(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                        const CastSettings& settings) {
  const CompoundData& c = *b.compound();
  const double bound = FractionBound(settings);
  CastResult best;
  ForEachChild(c.Candidates(a.WorldBounds(a_in_b), v * bound), [&](uint32_t i) {
    const CompoundChild& child = c.children()[i];
    // A in the child's frame; a later child need only beat the best so far
    // (a tie keeps the lower index, visited first).
    CastSettings s = settings;
    s.max_fraction = best.state == CastState::kMiss ? bound : best.fraction;
    const CastResult lc = CastLocal(a, child.pose.RelativeTo(a_in_b),
                                    child.pose.InverseTransformDirection(v), child.shape, s);
    if (lc.state == CastState::kMiss) return true;
    if (best.state == CastState::kMiss || lc.fraction < best.fraction) {
      best = lc;
      best.normal = child.pose.TransformDirection(lc.normal);
      best.point = child.pose.TransformPoint(lc.point);
      best.sub_shape = i;
    }
    // Nothing comes before a start inside the lowest child doing so.
    return best.state != CastState::kStartedOverlapping;
  });
  return best;
}

CastResult RaycastCompound(const Vec3& o, const Vec3& d, const Shape& b, double max_fraction) {
  const CompoundData& c = *b.compound();
  CastResult best;
  ForEachChild(c.Candidates(Aabb(o, o), d), [&](uint32_t i) {
    const CompoundChild& child = c.children()[i];
    const CastResult r = Raycast(o, d, child.shape, child.pose, max_fraction);
    if (r.hit() && (!best.hit() || r.fraction < best.fraction)) {
      best = r;
      best.sub_shape = i;
    }
    return best.state != CastState::kStartedOverlapping;
  });
  return best;
}

}  // namespace hitbox::internal
