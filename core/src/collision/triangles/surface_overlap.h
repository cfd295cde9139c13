// Convex overlap and contacts against a triangle surface (TriangleMesh or
// Heightfield): candidates from the surface's hierarchy, each triangle decided
// by GJK, SAT or EPA; `sub_shape` answers are input triangle indices.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "collision/triangles/cylinder_triangle_penetration.h"
#include "collision/triangles/triangle_penetration.h"
#include "collision/triangles/placed_convex.h"
#include "collision/triangles/surface_hits.h"
#include "collision/work_meter.h"
#include "geometry/triangle_mesh.h"
#include "geometry/triangle_queries.h"
#include "hitbox/math/math.h"

namespace hitbox {

template <typename Surface, typename Convex, typename Fn>
void VisitNearTriangles(const Surface& surface, const Convex& convex, Fn&& fn) {
  const Aabb near_box = convex.bounds().Expanded(kSweepGap);
  internal::WorkTally tally;
  // A mesh leaf's triangles share vertices: each decoded once.
  constexpr bool kMesh = std::is_same_v<Surface, TriangleMesh>;
  [[maybe_unused]] std::conditional_t<kMesh, TriangleMesh::VertexCache, bool> cache{};
  // Leaves reaching near_box, so the triangles kept are those whose own box
  // meets it whatever the hierarchy (a merged mesh's members keep their own).
  const auto near = [&](uint32_t k, const Vec3 v[3]) {
    if (!Aabb().Union(v[0]).Union(v[1]).Union(v[2]).Overlaps(near_box)) return true;
    return fn(k, v);
  };
  if constexpr (kMesh) {
    surface.VisitOverlappingLeaves(near_box, [&](uint32_t first, uint32_t end) {
      uint32_t idx[8][3];  // a leaf word holds at most 8
      surface.LeafIndices(first, end - first, idx);
      for (uint32_t k = first; k < end; ++k) {
        if (!tally.Count()) return false;  // the batch stops (budget, deadline)
        Vec3 v[3];
        surface.IndexedVertices(idx[k - first], v, &cache);
        if (!near(k, v)) return false;
      }
      return true;
    });
  } else {
    surface.VisitOverlapping(near_box, [&](uint32_t k) {
      if (!tally.Count()) return false;  // the batch stops (budget, deadline)
      Vec3 v[3];
      surface.TriangleVertices(k, v);
      return near(k, v);
    });
  }
}

/// Triangles of `surface` touched by the convex (touching counts; a pair GJK
/// cannot prove apart, lower bound <= 0, counts as touching). Appends input triangle indices to
/// `triangles` (when given; else stops at the first when `first_only`).
template <typename Surface, typename Convex>
bool SurfaceOverlapConvex(const Surface& surface, const Convex& convex, bool first_only,
                          std::vector<uint32_t>* triangles) {
  bool any = false;
  VisitNearTriangles(surface, convex, [&](uint32_t k, const Vec3 v[3]) {
    const TriangleConvexDistance g = TriangleConvexGjk(v, convex, convex.margin(), convex.scale());
    if (g.distance_lower > 0.0) return true;  // certainly apart
    any = true;
    if (triangles != nullptr) triangles->push_back(surface.OriginalIndex(k));
    return !first_only || triangles != nullptr;
  });
  return any;
}

/// SurfaceOverlapLowestConvex for each member of a merged mesh (MeshGroups)
/// whose input triangles are the surface's [first[m], first[m + 1]) (one
/// member, the whole surface, when `first` is empty): found(m, t) with t
/// the lowest input index the convex touches, in the member's own input.
/// The near triangles are tested in increasing input index, a member's rest
/// passed over once one touches, so each member answers as its own mesh.
template <typename Surface, typename Convex, typename Found>
void SurfaceOverlapLowestPerMember(const Surface& surface, const Convex& convex,
                                   std::span<const uint32_t> first, Found&& found) {
  struct Near {
    uint32_t triangle;
    Vec3 v[3];
  };
  static thread_local std::vector<Near> near;
  near.clear();
  const ScratchRelease<Near> release{&near};
  VisitNearTriangles(surface, convex, [&](uint32_t k, const Vec3 v[3]) {
    near.push_back({surface.OriginalIndex(k), {v[0], v[1], v[2]}});
    return true;
  });
  std::sort(near.begin(), near.end(),
            [](const Near& a, const Near& b) { return a.triangle < b.triangle; });
  uint32_t next_member = 0;  // input index where the undecided triangles start
  for (const Near& t : near) {
    if (t.triangle < next_member) continue;
    const TriangleConvexDistance g = TriangleConvexGjk(t.v, convex, convex.margin(), convex.scale());
    if (g.distance_lower > 0.0) continue;
    if (first.empty()) {
      found(0u, t.triangle);
      return;
    }
    const auto m = static_cast<uint32_t>(
        std::upper_bound(first.begin(), first.end(), t.triangle) - first.begin() - 1);
    found(m, t.triangle - first[m]);
    if (m + 1 == first.size()) return;
    next_member = first[m + 1];
  }
}

/// The lowest input index of the triangles of `surface` the convex touches
/// (as SurfaceOverlapConvex counts touching), UINT32_MAX when none: the
/// triangles near it are tested in increasing input index, stopping at the
/// first touched, so the others need no GJK.
template <typename Surface, typename Convex>
uint32_t SurfaceOverlapLowestConvex(const Surface& surface, const Convex& convex) {
  uint32_t lowest = UINT32_MAX;
  SurfaceOverlapLowestPerMember(surface, convex, {}, [&](uint32_t, uint32_t triangle) {
    lowest = triangle;
  });
  return lowest;
}

/// The contact a valid penetration `e` of the cores gives with triangle
/// `triangle` (input index).
inline SurfaceContactHit PenetrationContact(uint32_t triangle, const TriangleConvexPenetration& e) {
  SurfaceContactHit c;
  c.triangle = triangle;
  c.normal = e.normal;
  c.depth = e.depth;
  c.point_on_mesh = e.point_on_triangle;
  c.point_on_query = e.point_on_convex;
  return c;
}

/// The contact of the convex with triangle `v` (input index `triangle`)
/// given their GJK result `g` (touching: g.distance_lower <= 0): when the
/// cores are apart, GJK's closest points (depth = margin - distance); when
/// they overlap, TriangleCoresPenetration (SAT for polytope cores, else EPA
/// from GJK's enclosing tetrahedron), or `penetration` when the caller has
/// already computed that for this triangle and convex. Should EPA fail (a flat Minkowski
/// difference), the face normal with the depth that clears the triangle's
/// plane: a separating move, not necessarily the shortest.
template <typename Convex>
SurfaceContactHit TriangleContact(const Vec3 v[3], uint32_t triangle, const Convex& convex,
                            const TriangleConvexDistance& g,
                            const TriangleConvexPenetration* penetration = nullptr) {
  SurfaceContactHit c;
  c.triangle = triangle;
  if (!g.cores_overlap) {
    c.normal = g.normal;
    c.depth = std::max(-g.distance, 0.0);
    c.point_on_mesh = g.point_on_triangle;
    c.point_on_query = g.point_on_convex;
    return c;
  }
  const TriangleConvexPenetration e =
      penetration != nullptr ? *penetration : TriangleCoresPenetration(v, convex, g);
  if (e.valid) return PenetrationContact(triangle, e);
  Vec3 n = Cross(v[1] - v[0], v[2] - v[0]).Normalized();
  const Vec3 centre = convex(n) * 0.5 + convex(-n) * 0.5;
  if (Dot(centre - v[0], n) < 0.0) n = -n;
  const Vec3 deepest = convex(-n) - n * convex.margin();
  c.normal = n;
  c.depth = std::max(Dot(v[0] - deepest, n), 0.0);
  c.point_on_query = deepest;
  c.point_on_mesh = deepest + n * c.depth;
  return c;
}

/// The contact of a cylinder or hull core with triangle `v` (input index
/// `triangle`) when the cores certainly overlap by more than 1e-9 * scale:
/// for a cylinder its closed form when that answers
/// (CylinderTrianglePenetration), else when EPA started from the prism along
/// the triangle's normal holds the origin (TriangleConvexEpa, kPrismOnly).
/// False otherwise (TriangleTouchAfterPrism decides). `prism_supports`: the
/// core's supports along -n and +n, when the caller has them
/// (TriangleConvexEpa).
template <typename Convex>
bool TrianglePrismContact(const Vec3 v[3], uint32_t triangle, const Convex& convex,
                          SurfaceContactHit* out, const Vec3* prism_supports = nullptr) {
  if constexpr (requires { convex.is_cylinder(); }) {
    // A cylinder overlapping by more than 1e-9 * scale: its closed form.
    TriangleConvexPenetration closed;
    if (convex.is_cylinder() &&
        CylinderTrianglePenetration(v, convex.cylinder(), convex.scale(), &closed)) {
      *out = PenetrationContact(triangle, closed);
      return true;
    }
  }
  const TriangleConvexPenetration e = TriangleConvexEpa(
      v, convex, convex.margin(), convex.scale(), TriangleConvexDistance{},
      TriangleEpaStart::kPrismOnly, -std::numeric_limits<double>::infinity(), prism_supports);
  if (!e.valid) return false;
  *out = PenetrationContact(triangle, e);
  return true;
}

/// TriangleTouchContact of a cylinder or hull core after TrianglePrismContact
/// found no contact: GJK, then TriangleContact with EPA from GJK's
/// tetrahedron. kShallower (no contact given) when EPA finds the depth
/// certainly below `stop_below` (TriangleConvexEpa).
enum class TouchAnswer : uint8_t { kApart, kTouching, kShallower };
template <typename Convex>
TouchAnswer TriangleTouchAfterPrism(
    const Vec3 v[3], uint32_t triangle, const Convex& convex, SurfaceContactHit* out,
    double stop_below = -std::numeric_limits<double>::infinity()) {
  const TriangleConvexDistance g = TriangleConvexGjk(v, convex, convex.margin(), convex.scale());
  if (g.distance_lower > 0.0) return TouchAnswer::kApart;
  TriangleConvexPenetration e;
  if (g.cores_overlap) {
    e = TriangleConvexEpa(v, convex, convex.margin(), convex.scale(), g,
                          TriangleEpaStart::kTetrahedronOnly, stop_below);
    if (e.failure == 6) return TouchAnswer::kShallower;
  }
  *out = TriangleContact(v, triangle, convex, g, &e);
  return TouchAnswer::kTouching;
}

/// Whether the convex touches triangle `v` (input index `triangle`), and
/// then their contact (*out): as GJK (touching: distance_lower <= 0) and
/// TriangleContact decide, but without GJK when the cores certainly overlap
/// by more than 1e-9 * scale, where GJK finds them overlapping and the
/// contact is the cores' penetration: for a box core its SAT depth (`sat`,
/// the caller's TrianglePolytopePenetration for this triangle, or null),
/// for a cylinder or hull TrianglePrismContact's (a cylinder's closed form,
/// or EPA started from the prism along the triangle's normal). Every
/// surface contact (SurfaceContactsConvex, SurfaceDeepestContactConvex)
/// goes through here, so all of them answer alike.
template <typename Convex>
bool TriangleTouchContact(const Vec3 v[3], uint32_t triangle, const Convex& convex,
                          const TriangleConvexPenetration* sat, SurfaceContactHit* out) {
  if constexpr (requires { convex.rounded(); }) {
    if (convex.rounded() != Convex::Rounded::kNone) {
      // A ball or a capsule: GJK on its point or segment core iterates to
      // the closest points of core and triangle, found here in closed form
      // (PointTriangleDistanceSq, SegmentTriangleDistanceSq), the contact as
      // BallTriangleContact gives it. The Voronoi tests lose ~1e-16 / sin^2
      // of the triangle's flatness (|ab x ac|^2 against the longest edge^4)
      // and of a segment's angle to the plane and the edges, where the
      // closest points slide (not unique when parallel: GJK's pick stands):
      // below 1e-6 (a 1e-10 relative error) they go the general way, as do a
      // NaN distance and a core within 1e-4 * scale of the triangle: GJK's
      // closest points are good to its 1e-13 * scale, so its normal to
      // 1e-13 * scale / distance (0.3 at 1e-12, 1e-7 at 1e-6 of the scale),
      // and from 1e-4 on the two agree to 1e-9; within 1e-13 * scale its
      // cores overlap (SAT).
      const Vec3 ab = v[1] - v[0], ac = v[2] - v[0], bc = v[2] - v[1];
      const Vec3 face = Cross(ab, ac);
      const double face2 = face.LengthSq();
      const Vec3* seg = convex.segment();
      Vec3 p = seg[0], q;
      double d2 = 0.0;
      if (WideFace(ab, ac, bc, face2)) {
        if (convex.rounded() == Convex::Rounded::kBall) {
          d2 = PointTriangleDistanceSq(p, v[0], v[1], v[2], &q);
        } else {
          const Vec3 d = seg[1] - seg[0];
          const double dd = d.LengthSq();
          const double along = Dot(d, face);
          auto skew = [&](const Vec3& e) {
            return Cross(d, e).LengthSq() >= 1e-6 * dd * e.LengthSq();
          };
          if (along * along >= 1e-6 * dd * face2 && skew(ab) && skew(ac) && skew(bc)) {
            d2 = SegmentTriangleDistanceSq(seg[0], seg[1], v[0], v[1], v[2], &p, &q);
          }
        }
      }
      const double near = 1e-4 * convex.scale();
      if (d2 > near * near) {
        const double r = convex.margin();
        if (!(d2 <= r * r)) return false;
        out->triangle = triangle;
        out->point_on_mesh = q;
        BallTriangleContact(p, q, d2, r, Vec3{}, &out->normal, &out->depth,
                            &out->point_on_query);
        return true;
      }
    }
  }
  const double tol = 1e-9 * convex.scale();
  if (sat != nullptr) {
    if (sat->valid && sat->depth - convex.margin() > tol) {
      *out = PenetrationContact(triangle, *sat);
      return true;
    }
  } else {
    TrianglePolytopeCore polytope;
    bool polytope_core = false;
    if constexpr (requires { convex.PolytopeCore(&polytope); }) {
      polytope_core = convex.PolytopeCore(&polytope);
    }
    if (!polytope_core) {
      if (TrianglePrismContact(v, triangle, convex, out)) return true;
      return TriangleTouchAfterPrism(v, triangle, convex, out) == TouchAnswer::kTouching;
    }
  }
  const TriangleConvexDistance g = TriangleConvexGjk(v, convex, convex.margin(), convex.scale());
  if (g.distance_lower > 0.0) return false;
  *out = TriangleContact(v, triangle, convex, g, sat != nullptr && sat->valid ? sat : nullptr);
  return true;
}

/// Contacts of the convex with every triangle of `surface` it touches (one
/// SurfaceContactHit each, appended; TriangleContact). Returns true when any
/// triangle is touched.
template <typename Surface, typename Convex>
bool SurfaceContactsConvex(const Surface& surface, const Convex& convex,
                           std::vector<SurfaceContactHit>* contacts) {
  bool any = false;
  // A box core: SAT first (TriangleTouchContact), as SurfaceDeepestContactConvex.
  TrianglePolytopeCore polytope;
  bool box_core = false;
  if constexpr (requires { convex.PolytopeCore(&polytope); }) {
    box_core = convex.PolytopeCore(&polytope) && polytope.axes == 3;
  }
  VisitNearTriangles(surface, convex, [&](uint32_t k, const Vec3 v[3]) {
    TriangleConvexPenetration sat;
    if (box_core) sat = TrianglePolytopePenetration(v, polytope, convex.margin());
    SurfaceContactHit m;
    if (!TriangleTouchContact(v, surface.OriginalIndex(k), convex, box_core ? &sat : nullptr,
                              &m)) {
      return true;
    }
    any = true;
    contacts->push_back(m);
    return true;
  });
  return any;
}

/// The overlap of the convex and triangle `v` along the axis from the
/// nearest point of segment `inner` (inside the core, PlacedConvex::
/// InnerSegment) to the triangle: an upper bound on their penetration depth
/// (infinite when the segment meets the triangle). A triangle off to the
/// side of the core, touching it at an edge or not at all, is nearly
/// separated along this axis, where the overlap along the triangle's normal
/// stays large (as along its edges' in-plane normals, six support calls that
/// this one axis replaces).
template <typename Convex>
double TriangleInnerOverlap(const Vec3 v[3], const Convex& convex, const Vec3 inner[2]) {
  Vec3 p = inner[0], q;
  const double d2 = inner[0] == inner[1]
                        ? PointTriangleDistanceSq(p, v[0], v[1], v[2], &q)
                        : SegmentTriangleDistanceSq(inner[0], inner[1], v[0], v[1], v[2], &p, &q);
  if (!(d2 > 0.0)) return std::numeric_limits<double>::infinity();
  const Vec3 u = (q - p) / std::sqrt(d2);
  const double lo = std::min(Dot(u, v[0]), std::min(Dot(u, v[1]), Dot(u, v[2])));
  return Dot(u, convex(u)) + convex.margin() - lo;
}

}  // namespace hitbox
