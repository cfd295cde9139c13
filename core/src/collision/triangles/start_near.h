// The triangles a mesh sweep met around its start, kept for the deepest
// contact of the same mesh (a sweep that starts inside: its contact comes
// next) so that contact need not walk the hierarchy again.
#pragma once

#include <emmintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "collision/triangles/triangle_gjk.h"
#include "geometry/bvh_ray.h"
#include "hitbox/math/math.h"

namespace hitbox {

class TriangleMesh;

/// A triangle (kept index `k`) and its vertices as the mesh decodes them.
struct StartNearTriangle {
  uint32_t k;
  Vec3 v[3];
};

/// Every triangle of `mesh` whose box meets `covered`, in no set order: a
/// surface sweep records them while it walks (StartNearRecorder), and a
/// deepest contact whose near box lies inside `covered` takes them for the
/// walk it would do (VisitNearTriangles keeps those whose box meets its near
/// box: the same triangles, to the bit).
struct StartNearSet {
  const TriangleMesh* mesh = nullptr;
  Aabb covered;
  std::vector<StartNearTriangle> triangles;
};

namespace start_near_detail {
/// Sets kept per thread: the last started sweeps' (a batch steps several
/// queries in turn, each finishing with its winner's contact).
inline constexpr int kSets = 16;
/// A set holding more triangles than this is dropped (the contact walks).
inline constexpr size_t kMaxTriangles = 128;
struct Ring {
  int scopes = 0;
  int next = 0;  // the set the next sweep records into
  StartNearSet set[kSets];
};
Ring& ThisThread();
}  // namespace start_near_detail

/// Records and finds StartNearSets on this thread while in scope (a batch,
/// or one Cast), whose meshes outlive it; the sets are dropped when the
/// outermost scope ends (a mesh's address may then be reused).
class ScopedStartNear {
 public:
  ScopedStartNear();
  ~ScopedStartNear();
  ScopedStartNear(const ScopedStartNear&) = delete;
  ScopedStartNear& operator=(const ScopedStartNear&) = delete;
};

/// A sweep's recording. The box a convex's bounds `bounds` meet, grown by
/// kSweepGap and a margin m (1e-9 of the coordinates, far above the rounding
/// between two placements of one query): the sweep walks nodes grown by
/// m more than its own (walk_grow), so that every triangle meeting the
/// bounds grown by kSweepGap + m / 2 lies in a leaf it enters at fraction 0
/// (by m / 2 more than the walk's rounding) and is recorded; a contact whose
/// near box lies within kSweepGap + m / 4 of the bounds finds them all.
class StartNearRecorder {
 public:
  /// Inactive (records nothing) outside a ScopedStartNear.
  StartNearRecorder(const TriangleMesh* mesh, const Aabb& bounds) {
    start_near_detail::Ring& ring = start_near_detail::ThisThread();
    if (ring.scopes == 0 || mesh == nullptr) return;
    const double coords =
        std::max(bounds.min.Abs().MaxComponent(), bounds.max.Abs().MaxComponent());
    const double m = 1e-9 * (1.0 + coords);
    margin_ = m;
    set_ = &ring.set[ring.next];
    set_->mesh = nullptr;  // not to be found until Finish keeps it
    set_->triangles.clear();
    set_->covered = bounds.Expanded(kSweepGap + m / 4);
    collect_ = bounds.Expanded(kSweepGap + m / 2);
  }
  bool active() const { return set_ != nullptr; }
  /// How much more than the sweep's own growth its walk grows nodes.
  double walk_margin() const { return margin_; }
  /// A triangle the walk decoded (kept index k).
  __attribute__((always_inline)) void Add(uint32_t k, const Vec3 v[3]) {
    if (set_ == nullptr) return;
    // Its box meets collect_ (Aabb::Overlaps of the vertices' box), in SSE2
    // pairs: x and y together, then z.
    __m128d lo_xy, hi_xy, lo_z, hi_z;
    TriangleBoxLanes(v, &lo_xy, &hi_xy, &lo_z, &hi_z);
    const __m128d apart_xy = _mm_or_pd(_mm_cmpgt_pd(lo_xy, _mm_loadu_pd(&collect_.max.x)),
                                       _mm_cmplt_pd(hi_xy, _mm_loadu_pd(&collect_.min.x)));
    const __m128d apart_z = _mm_or_pd(_mm_cmpgt_sd(lo_z, _mm_load_sd(&collect_.max.z)),
                                      _mm_cmplt_sd(hi_z, _mm_load_sd(&collect_.min.z)));
    if ((_mm_movemask_pd(apart_xy) | (_mm_movemask_pd(apart_z) & 1)) != 0) return;
    if (set_->triangles.size() >= start_near_detail::kMaxTriangles) {
      set_->triangles.clear();
      set_ = nullptr;  // too many: the contact walks
      return;
    }
    set_->triangles.push_back({k, {v[0], v[1], v[2]}});
  }
  /// The walk has ended: `keep` when it went through every leaf it entered
  /// at fraction 0 and started inside (a contact comes next).
  void Finish(const TriangleMesh* mesh, bool keep) {
    if (set_ == nullptr || !keep) return;
    set_->mesh = mesh;
    start_near_detail::Ring& ring = start_near_detail::ThisThread();
    ring.next = (ring.next + 1) % start_near_detail::kSets;
  }

 private:
  StartNearSet* set_ = nullptr;
  Aabb collect_;
  double margin_ = 0.0;
};

/// The recorded set of `mesh` covering `near_box`, or null.
inline const StartNearSet* FindStartNear(const TriangleMesh* mesh, const Aabb& near_box) {
  start_near_detail::Ring& ring = start_near_detail::ThisThread();
  if (ring.scopes == 0) return nullptr;
  for (const StartNearSet& s : ring.set) {
    if (s.mesh == mesh && s.covered.Contains(near_box)) return &s;
  }
  return nullptr;
}

}  // namespace hitbox
