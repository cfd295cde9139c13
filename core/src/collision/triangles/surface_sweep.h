// First contact of a translating convex with a triangle surface, triangles
// visited closest first along the path.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "collision/triangles/gathered_triangle.h"
#include "collision/triangles/start_near.h"
#include "collision/triangles/surface_overlap.h"
#include "collision/triangles/sweep_ties.h"
#include "collision/triangles/triangle_sweep.h"
#include "geometry/bvh_ray.h"
#include "hitbox/math/math.h"

namespace hitbox {

template <typename Convex>
bool TriangleSkinKeeps(const Vec3 tri[3], const Convex& convex, const Vec3& translation,
                       const CastResult& s, double skin) {
  double depth = 0.0;
  Vec3 n = s.normal;
  if (s.state == CastState::kStartedOverlapping) {
    const TriangleConvexDistance g =
        TriangleConvexGjk(tri, convex, convex.margin(), convex.scale());
    if (!g.cores_overlap) {
      // The contact's own normal: the sweep's faces the motion by design
      // (SweepConvexTriangle), which would count a shape leaving the
      // triangle as approaching it.
      depth = std::max(-g.distance, 0.0);
      n = g.normal;
    } else {
      const TriangleConvexPenetration e = TriangleCoresPenetration(tri, convex, g);
      if (!e.valid) return true;  // depth unknown: a hit, as without the skin
      depth = e.depth;
      n = e.normal;
    }
  }
  const double approach = std::max(0.0, -Dot(n, translation));
  return depth + (1.0 - s.fraction) * approach >= skin;
}

/// First contact of the convex translating by `translation` with `surface`;
/// with a contact offset `skin` > 0, triangles it does not keep
/// (TriangleSkinKeeps) are passed over. A mesh's triangles are swept in the
/// order the centre path enters their grown boxes (VisitSweptClosestFirst),
/// a heightfield's in its walk's order; the answer does not depend on the
/// order (SweepTies: the earliest, then the lowest input triangle among
/// those within a nanometre of travel of it, as sub_shape). With `merged`,
/// the rule holds per member and sub_shape is the merged input index.
/// kRoutine is the triangle routine of the convex's core (the pair table's).
template <TriangleRoutine kRoutine, typename Surface, typename Convex>
CastResult SurfaceSweepConvex(const Surface& surface, const Convex& convex, const Vec3& translation,
                              double skin = 0.0, MergedSweep* merged = nullptr) {
  const Aabb box = convex.bounds().Swept(translation).Expanded(kSweepGap);
  const double scale = convex.scale() + translation.Length();
  // The centre of the convex's bounds moving by `translation`, against each
  // triangle's box grown by the bounds' half-size (plus the gap): a triangle
  // the bounds do not reach before the best fraction so far is skipped
  // without a GJK cast (conservative slab test, bvh_ray.h).
  const BvhRay centre_path(convex.bounds().Center(), translation);
  const Vec3 grow = convex.bounds().Extents() + Vec3::Splat(kSweepGap);
  // Contacts within a nanometre of travel of each other are ties, won by
  // the lowest input triangle: a shape meeting a shared edge or vertex
  // touches both triangles at once, and their per-triangle fractions differ
  // only by rounding (which depends on the frame the query came in).
  const double len = translation.Length();
  const double tie = len > 0.0 ? kSweepGap / len : 0.0;
  SweepTies ties = merged != nullptr ? SweepTies(tie, merged->first, merged->bound + tie)
                                     : SweepTies(tie, {});
  double limit = ties.limit();  // visit and sweep up to here
  internal::WorkTally tally;
  const GrownTrianglePath triangle_path(centre_path, grow);
  auto enter = [&](const Vec3 v[3], double* t_enter) {
    return triangle_path.Enter(v, limit, t_enter);
  };
  auto sweep = [&](uint32_t k, const Vec3 v[3]) {
    const CastResult s =
        SweepTriangle<kRoutine>(v, convex, translation, limit, scale, surface.ActiveEdges(k));
    if (!s.hit()) return;
    if (skin > 0.0 && !TriangleSkinKeeps(v, convex, translation, s, skin)) return;
    ties.Add(surface.OriginalIndex(k), s);
    limit = ties.limit();
  };
  if constexpr (std::is_same_v<Surface, TriangleMesh>) {
    // Closest first: the earliest contacts tend to come first, so the
    // limit shrinks before the later triangles are swept, and those end at
    // their first support plane or box axis instead of in a converged cast.
    // The entered triangles' vertices, by entry count (decoded once).
    static thread_local std::vector<std::array<Vec3, 3>> entered;
    entered.clear();
    const ScratchRelease<std::array<Vec3, 3>> release{&entered};
    // A leaf's triangles and their neighbours share vertices: each decoded once.
    TriangleMesh::VertexCache vertex_cache;
    // SweepTies::PassedOver, its original index worked out only once a hit
    // at fraction 0 can pass triangles over.
    const auto passed_over = [&](uint32_t k) {
      return !ties.PassesNone() && ties.PassedOver(surface.OriginalIndex(k));
    };
    // The triangles around the start, for a started sweep's contact (a
    // merged sweep's contact is its member's, of another mesh).
    StartNearRecorder near(merged == nullptr ? &surface : nullptr, convex.bounds());
    const Vec3 walk_grow = grow + Vec3::Splat(near.walk_margin());
    bool stopped = false;
    surface.VisitSweptClosestFirst(
        centre_path, walk_grow, &limit,
        [&](uint32_t k, const uint32_t idx[3], double* t_enter, bool* stop) {
          if (!tally.Count()) {  // the batch stops (budget, deadline)
            *stop = stopped = true;
            return false;
          }
          // Passed over now, passed over at its turn: not kept (nor
          // decoded, unless recorded).
          const bool passed = passed_over(k);
          if (passed && !near.active()) return false;
          std::array<Vec3, 3> v;
          surface.IndexedVertices(idx, v.data(), &vertex_cache);
          near.Add(k, v.data());
          if (passed || !enter(v.data(), t_enter)) return false;
          entered.push_back(v);
          return true;
        },
        [&](uint32_t k, uint32_t i) {
          if (!passed_over(k)) sweep(k, entered[i].data());
          return true;
        });
    const CastResult r = ties.Result(merged != nullptr ? &merged->member : nullptr);
    near.Finish(&surface, !stopped && r.state == CastState::kStartedOverlapping);
    return r;
  } else {
    surface.VisitSwept(box, translation, centre_path, grow, &limit, [&](uint32_t k) {
      if (!tally.Count()) return false;  // the batch stops (budget, deadline)
      if (ties.PassedOver(surface.OriginalIndex(k))) return true;
      Vec3 v[3];
      surface.TriangleVertices(k, v);
      double t_enter;
      if (enter(v, &t_enter)) sweep(k, v);
      return true;
    });
  }
  return ties.Result(merged != nullptr ? &merged->member : nullptr);
}

}  // namespace hitbox
