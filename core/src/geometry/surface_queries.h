// Convex queries against a triangle surface (TriangleMesh or Heightfield),
// generic over the query's support function (internal to hitbox_core).
//
// A query shape is given in the surface's local frame as a core support
// function plus a margin (PlacedConvex wraps gjk.h's ConvexCore: sphere =
// point + radius, capsule = segment + radius, box, cylinder; a convex hull
// plugs in with its own support function). Candidates come from the surface's
// hierarchy (VisitOverlapping); each triangle is decided by GJK
// (triangle_convex.h), or for a sweep of a sphere or capsule by the closed
// forms of triangle_queries.h. `sub_shape` answers are input triangle indices.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "geometry/bvh_ray.h"
#include "geometry/cylinder_triangle.h"
#include "geometry/triangle_convex.h"
#include "geometry/triangle_mesh.h"
#include "geometry/triangle_queries.h"
#include "geometry/gjk.h"
#include "geometry/work_meter.h"
#include "hitbox/math/math.h"

namespace hitbox {

/// A ConvexCore placed in a surface's local frame (its pose relative to the
/// surface: surface_pose.RelativeTo(shape_pose)); callable as a core support.
class PlacedConvex {
 public:
  PlacedConvex(const internal::ConvexCore& core, const Pose& pose_in_surface)
      : placed_(core, pose_in_surface), margin_(core.margin) {
    using Kind = internal::ConvexCore::Kind;
    if (core.kind == Kind::kPoint || core.kind == Kind::kSegment || core.kind == Kind::kBox) {
      // The supports along +-each axis in closed form: the core's half-extents
      // (a segment's along Y, none for a point) times |row a| of the rotation,
      // summed in CoreSupport's order, so the same bounds to the bit.
      const Vec3 he = core.kind == Kind::kBox       ? core.half_extents
                      : core.kind == Kind::kSegment ? Vec3{0.0, core.half_height, 0.0}
                                                    : Vec3{};
      for (int a = 0; a < 3; ++a) {
        const Vec3& r = placed_.rotation.row[a];
        const double reach = std::fabs(r.x) * he.x + std::fabs(r.y) * he.y + std::fabs(r.z) * he.z;
        bounds_.max[a] = placed_.position[a] + reach + margin_;
        bounds_.min[a] = placed_.position[a] - reach - margin_;
      }
    } else {
      for (int a = 0; a < 3; ++a) {
        Vec3 d;
        d[a] = 1.0;
        bounds_.max[a] = placed_.CoreSupport(d)[a] + margin_;
        d[a] = -1.0;
        bounds_.min[a] = placed_.CoreSupport(d)[a] - margin_;
      }
    }
    scale_ = core.CoreBoundingRadius() + margin_ + pose_in_surface.position.Length();
    if (core.kind == Kind::kPoint || core.kind == Kind::kSegment) {
      const Vec3 half = core.kind == Kind::kSegment
                            ? placed_.rotation * Vec3{0.0, core.half_height, 0.0}
                            : Vec3{};
      segment_[0] = pose_in_surface.position - half;
      segment_[1] = pose_in_surface.position + half;
      rounded_ = core.kind == Kind::kPoint ? Rounded::kBall : Rounded::kCapsule;
    } else if (core.kind == Kind::kBox) {
      is_box_ = true;
      box_.center = pose_in_surface.position;
      for (int k = 0; k < 3; ++k) box_.axis[k] = placed_.rotation.Column(k);
      box_.half = core.half_extents;
    }
  }
  /// Core support point along `dir`, surface frame.
  Vec3 operator()(const Vec3& dir) const { return placed_.CoreSupport(dir); }
  double margin() const { return margin_; }
  /// Bounds including the margin, surface frame.
  const Aabb& bounds() const { return bounds_; }
  /// Length scale for GJK tolerances (metres).
  double scale() const { return scale_; }
  /// The core as a polytope in the surface frame (point, segment or box), for
  /// TrianglePolytopePenetration; false for a cylinder or a hull.
  bool PolytopeCore(TrianglePolytopeCore* out) const {
    const internal::ConvexCore& c = *placed_.core;
    out->center = placed_.position;
    switch (c.kind) {
      case internal::ConvexCore::Kind::kPoint: out->axes = 0; return true;
      case internal::ConvexCore::Kind::kSegment:
        out->axes = 1;
        out->axis[0] = placed_.rotation.Column(1);
        out->half[0] = c.half_height;
        return true;
      case internal::ConvexCore::Kind::kBox:
        out->axes = 3;
        for (int k = 0; k < 3; ++k) {
          out->axis[k] = placed_.rotation.Column(k);
          out->half[k] = c.half_extents[k];
        }
        return true;
      default: return false;
    }
  }
  /// A box core in the surface frame, for SweepBoxSat; null for the others.
  const OrientedBox* oriented_box() const { return is_box_ ? &box_ : nullptr; }
  /// True for a cylinder core without margin, which cylinder() gives in the
  /// surface frame for CylinderTriangleSweep (made when asked: a member
  /// would be set up with every query's PlacedConvex).
  bool is_cylinder() const {
    return placed_.core->kind == internal::ConvexCore::Kind::kCylinder && margin_ == 0.0;
  }
  PlacedCylinder cylinder() const {
    return {placed_.position, placed_.rotation, placed_.core->radius, placed_.core->half_height};
  }
  /// Which closed form fits: a ball (point core) or a capsule (segment core)
  /// around segment(), radius margin(); kNone for other cores.
  enum class Rounded : uint8_t { kNone, kBall, kCapsule };
  Rounded rounded() const { return rounded_; }
  /// The core's segment, surface frame (both ends the centre for a ball).
  const Vec3* segment() const { return segment_; }
  /// A segment inside the core, surface frame, for TriangleInnerOverlap: a
  /// capsule's or a cylinder's axis; the centre at both ends of a ball, a
  /// box or (its interior point) a hull.
  void InnerSegment(Vec3 out[2]) const {
    const internal::ConvexCore& c = *placed_.core;
    using Kind = internal::ConvexCore::Kind;
    const bool axis = c.kind == Kind::kSegment || c.kind == Kind::kCylinder;
    const Vec3 half = axis ? placed_.rotation * Vec3{0.0, c.half_height, 0.0} : Vec3{};
    const Vec3 mid = placed_.position + placed_.rotation * c.InteriorPoint();
    out[0] = mid - half;
    out[1] = mid + half;
  }

 private:
  internal::PlacedCore placed_;
  double margin_;
  Aabb bounds_;
  double scale_;
  Rounded rounded_ = Rounded::kNone;
  Vec3 segment_[2];
  bool is_box_ = false;
  OrientedBox box_;
};

/// Penetration of the convex into triangle `tri` when GJK found their cores
/// overlapping (`g.cores_overlap`): exact and closed-form by SAT for polytope
/// cores (sphere, capsule, box: TrianglePolytopePenetration), EPA from GJK's
/// tetrahedron for the others (cylinder, convex hull). Every triangle contact
/// with overlapping cores (surface contacts, the contact offset of sweeps
/// started inside) goes through here.
template <typename Convex>
TriangleConvexPenetration TriangleCoresPenetration(
    const Vec3 tri[3], const Convex& convex, const TriangleConvexDistance& g,
    TriangleEpaStart start = TriangleEpaStart::kPrismOrTetrahedron) {
  TrianglePolytopeCore polytope;
  if constexpr (requires { convex.PolytopeCore(&polytope); }) {
    if (convex.PolytopeCore(&polytope)) {
      const TriangleConvexPenetration p =
          TrianglePolytopePenetration(tri, polytope, convex.margin());
      if (p.valid) return p;
    }
  }
  return TriangleConvexEpa(tri, convex, convex.margin(), convex.scale(), g, start);
}

/// One triangle's part of SurfaceSweepConvex: the first contact of the
/// convex translating by `translation` for t in [0, t_max]. A sphere or a
/// capsule (PlacedConvex::rounded()) takes the closed forms (exact, no
/// iteration: SweepSphereTriangle, SweepCapsuleTriangle); any other convex the
/// GJK ray cast (SweepConvexTriangle), for a box after its separating axes
/// (SweepBoxSat), for a cylinder with its closed form (CylinderTriangleSweep).
template <typename Convex>
TriangleConvexSweep SweepTriangle(const Vec3 v[3], const Convex& convex, const Vec3& translation,
                                  double t_max, double scale, uint8_t active) {
  if constexpr (requires { convex.rounded(); }) {
    if (convex.rounded() != Convex::Rounded::kNone) {
      const Vec3* seg = convex.segment();
      const TriangleSweep s =
          convex.rounded() == Convex::Rounded::kBall
              ? SweepSphereTriangle(seg[0], convex.margin(), translation, t_max, v[0], v[1],
                                    v[2], active)
              : SweepCapsuleTriangle(seg[0], seg[1], convex.margin(), translation, t_max, v[0],
                                     v[1], v[2], active);
      TriangleConvexSweep out;
      out.hit = s.hit;
      out.started_inside = s.started_inside;
      out.t = s.t;
      out.normal = s.normal;
      out.point = s.point;
      return out;
    }
  }
  if constexpr (requires { convex.oriented_box(); }) {
    if (const OrientedBox* box = convex.oriented_box()) {
      const SweepSatResult sat =
          SweepBoxSat(v, *box, convex.margin(), translation, t_max, scale, active);
      if (sat.state == SweepSatResult::State::kApart) return TriangleConvexSweep{};
      if (sat.state == SweepSatResult::State::kHit) return sat.hit;
    }
  }
  if constexpr (requires { convex.is_cylinder(); }) {
    if (convex.is_cylinder()) {
      const PlacedCylinder cyl = convex.cylinder();
      // Apart in the cylinder's frame (CylinderTriangleApart): a miss. Else
      // the cast decides starts inside and the misses it sees at once; once
      // it has advanced, a hit or miss comes in closed form when it proves
      // itself.
      if (CylinderTriangleApart(v, cyl, translation, t_max)) return TriangleConvexSweep{};
      auto closed_form = [&](const Vec3& face, TriangleConvexSweep* out) {
        return CylinderTriangleSweep(v, cyl, translation, t_max, active, face, out);
      };
      return SweepConvexTriangle(v, convex, convex.margin(), translation, t_max, scale, active,
                                 closed_form);
    }
  }
  return SweepConvexTriangle(v, convex, convex.margin(), translation, t_max, scale, active);
}

/// Calls fn(k, v) for each triangle k of `surface` (vertices v) whose box
/// meets the convex's bounds grown by kSweepGap: the hierarchy's leaves hold
/// several triangles, and a triangle whose own box is apart is certainly
/// apart (no GJK). Every triangle visited counts against the batch's budget
/// (WorkTally), which stops the walk when spent; fn returns false to stop.
template <typename Surface, typename Convex, typename Fn>
void VisitNearTriangles(const Surface& surface, const Convex& convex, Fn&& fn) {
  const Aabb near_box = convex.bounds().Expanded(kSweepGap);
  internal::WorkTally tally;
  // A mesh leaf's triangles share vertices: each decoded once.
  constexpr bool kMesh = std::is_same_v<Surface, TriangleMesh>;
  [[maybe_unused]] std::conditional_t<kMesh, TriangleMesh::VertexCache, bool> cache{};
  surface.VisitOverlapping(convex.bounds(), [&](uint32_t k) {
    if (!tally.Count()) return false;  // the batch stops (budget, deadline)
    Vec3 v[3];
    if constexpr (kMesh) {
      surface.TriangleVertices(k, v, &cache);
    } else {
      surface.TriangleVertices(k, v);
    }
    if (!Aabb().Union(v[0]).Union(v[1]).Union(v[2]).Overlaps(near_box)) return true;
    return fn(k, v);
  });
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

/// The contact a valid penetration `e` of the cores gives with triangle
/// `triangle` (input index).
inline MeshContact PenetrationContact(uint32_t triangle, const TriangleConvexPenetration& e) {
  MeshContact c;
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
MeshContact TriangleContact(const Vec3 v[3], uint32_t triangle, const Convex& convex,
                            const TriangleConvexDistance& g,
                            const TriangleConvexPenetration* penetration = nullptr) {
  MeshContact c;
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
/// `triangle`) when EPA started from the prism along the triangle's normal
/// holds the origin (TriangleConvexEpa, kPrismOnly): then the cores
/// certainly overlap by more than 1e-9 * scale. False when the prism does not
/// hold the origin (TriangleTouchAfterPrism decides). `prism_supports`: the
/// core's supports along -n and +n, when the caller has them
/// (TriangleConvexEpa).
template <typename Convex>
bool TrianglePrismContact(const Vec3 v[3], uint32_t triangle, const Convex& convex,
                          MeshContact* out, const Vec3* prism_supports = nullptr) {
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
    const Vec3 v[3], uint32_t triangle, const Convex& convex, MeshContact* out,
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
/// for a cylinder or hull EPA started from the prism along the triangle's
/// normal when that holds the origin (TrianglePrismContact). Every
/// surface contact (SurfaceContactsConvex, SurfaceDeepestContactConvex)
/// goes through here, so all of them answer alike.
template <typename Convex>
bool TriangleTouchContact(const Vec3 v[3], uint32_t triangle, const Convex& convex,
                          const TriangleConvexPenetration* sat, MeshContact* out) {
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
      const double longest = std::max(ab.LengthSq(), std::max(ac.LengthSq(), bc.LengthSq()));
      const Vec3 face = Cross(ab, ac);
      const double face2 = face.LengthSq();
      const Vec3* seg = convex.segment();
      Vec3 p = seg[0], q;
      double d2 = 0.0;
      if (face2 >= 1e-6 * longest * longest) {
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
/// MeshContact each, appended; TriangleContact). Returns true when any
/// triangle is touched.
template <typename Surface, typename Convex>
bool SurfaceContactsConvex(const Surface& surface, const Convex& convex,
                           std::vector<MeshContact>* contacts) {
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
    MeshContact m;
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
/// stays large, and so did those along its edges' in-plane normals (six
/// support calls a triangle, which cost big_level's sweeps more than they
/// saved once this axis was tried).
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

namespace surface_detail {
/// A triangle waiting in SurfaceDeepestContactConvex's heap.
struct DeepestCandidate {
  Vec3 v[3];
  uint32_t triangle;
  uint8_t stage;  // refinements of its bound done so far
  int32_t sat;    // index of its box SAT result in DeepestScratch::sats, or -1
  bool sat_answer;  // a box core, and TrianglePolytopePenetration answers (not flat)
  bool supports;  // the core's supports along -n and +n (its unit normal) in `support`
  Vec3 support[2];
};
/// A heap entry: an upper bound on the triangle's contact depth.
struct DeepestEntry {
  double bound;
  uint32_t triangle;
  uint32_t index;  // into DeepestScratch::candidates
};
struct DeepestScratch {
  std::vector<DeepestCandidate> candidates;
  std::vector<DeepestEntry> heap;
  std::vector<TriangleConvexPenetration> sats;
  std::vector<DeepestEntry> deferred;
};
}  // namespace surface_detail

/// The deepest of SurfaceContactsConvex's contacts (ties: the lowest input
/// triangle), without computing every one. Each candidate triangle's depth
/// is bounded above, first by the overlap of the two along the triangle's
/// normal (two support calls; any axis's overlap bounds the penetration
/// depth, and GJK, SAT and EPA stay within this one: EPA's converged depth
/// to its 1e-9 * scale tolerance, its fallbacks and SAT try that axis
/// themselves), or for a box core on a triangle that TrianglePolytopePenetration
/// answers (all but degenerate ones, where EPA may decide) by the overlaps
/// along x, y and z of its bounds (no support calls: its SAT depth is exact,
/// and GJK's when the cores are apart is less, so neither exceeds any axis's
/// overlap; on big_level's boxes this looser bound cost less than the normal's
/// support calls it saves), then, each time the triangle comes up, by a tighter one: for
/// a box core the overlaps along its face normals, then along the axis from
/// its centre to the triangle (TriangleInnerOverlap), then the SAT depth
/// itself (TrianglePolytopePenetration: exactly the contact's depth when the
/// cores overlap, else the contact's depth is at most it, up to rounding),
/// for a cylinder or hull core the overlap along the axis from its axis or
/// interior point to the triangle when that shows the cores apart.
/// Triangles are decided (TriangleTouchContact) in order of their tightest
/// bound, highest first (a max-heap, refined lazily: a triangle whose bound
/// tightens goes back in the heap), and once the highest bound left is
/// below the deepest contact so far by more than 4e-9 * scale, the rest are
/// passed over. Returns false when no triangle is touched. The same contact
/// as the deepest of SurfaceContactsConvex's: the deepest-then-lowest choice
/// does not depend on the order, and a skipped triangle's contact cannot win
/// (its depths can exceed the bound only by rounding, or EPA's tolerance).
template <typename Surface, typename Convex>
bool SurfaceDeepestContactConvex(const Surface& surface, const Convex& convex, MeshContact* out) {
  using Candidate = surface_detail::DeepestCandidate;
  using Entry = surface_detail::DeepestEntry;
  // Scratch kept per thread between calls (no allocation per query).
  static thread_local surface_detail::DeepestScratch scratch;
  std::vector<Candidate>& candidates = scratch.candidates;
  std::vector<Entry>& heap = scratch.heap;
  std::vector<TriangleConvexPenetration>& sats = scratch.sats;
  std::vector<Entry>& deferred = scratch.deferred;
  candidates.clear();
  heap.clear();
  sats.clear();
  deferred.clear();
  bool any = false;
  // The deepest contact wins; on equal depths, the lowest triangle.
  const auto keep = [&](const MeshContact& m) {
    if (!any || m.depth > out->depth || (m.depth == out->depth && m.triangle < out->triangle)) {
      *out = m;
    }
    any = true;
  };
  if constexpr (requires { convex.rounded(); }) {
    if (convex.rounded() != Convex::Rounded::kNone) {
      // A ball or a capsule: GJK on a point or segment core and its contact
      // cost little more than the bounds would; every touching triangle is
      // decided in the hierarchy's order.
      VisitNearTriangles(surface, convex, [&](uint32_t k, const Vec3 v[3]) {
        MeshContact m;
        if (TriangleTouchContact(v, surface.OriginalIndex(k), convex, nullptr, &m)) keep(m);
        return true;
      });
      return any;
    }
  }
  TrianglePolytopeCore polytope;
  bool polytope_core = false;
  if constexpr (requires { convex.PolytopeCore(&polytope); }) {
    polytope_core = convex.PolytopeCore(&polytope) && polytope.axes == 3;
  }
  // Should the batch stop (budget, deadline), the triangles visited so far
  // are decided, as SurfaceContactsConvex does.
  const Aabb& bounds = convex.bounds();
  VisitNearTriangles(surface, convex, [&](uint32_t k, const Vec3 v[3]) {
    Candidate c;
    c.supports = false;
    std::copy(v, v + 3, c.v);
    double bound = std::numeric_limits<double>::infinity();
    // A box on a triangle TrianglePolytopePenetration answers (its own
    // test, SatCrossAxis's).
    c.sat_answer = false;
    if (polytope_core) {
      const Vec3 e1 = c.v[1] - c.v[0], e2 = c.v[2] - c.v[0];
      c.sat_answer = internal::SatNotParallel(Cross(e1, e2).LengthSq(), e1, e2);
    }
    if (c.sat_answer) {
      // The overlaps along x, y and z of the bounds (no support calls).
      for (int a = 0; a < 3; ++a) {
        const double lo = std::min(c.v[0][a], std::min(c.v[1][a], c.v[2][a]));
        const double hi = std::max(c.v[0][a], std::max(c.v[1][a], c.v[2][a]));
        bound = std::min(bound, std::min(bounds.max[a] - lo, hi - bounds.min[a]));
      }
    } else {
      const Vec3 cross = Cross(c.v[1] - c.v[0], c.v[2] - c.v[0]);
      const double len = cross.Length();
      // Vec3::Normalized() written out: its length also tells whether this n
      // is TriangleConvexEpa's cross / length (for the supports below).
      const Vec3 n = len > 1e-150 ? cross / len : cross.Normalized();
      if (n.LengthSq() > 0.0) {
        const double d = Dot(n, c.v[0]);
        c.support[1] = convex(n);
        c.support[0] = convex(-n);
        const double above = Dot(n, c.support[1]) + convex.margin() - d;
        const double below = d - Dot(n, c.support[0]) + convex.margin();
        bound = std::min(above, below);
        // The prism's n (TriangleConvexEpa's cross / its length) is this one.
        c.supports = len > 1e-150;
      }
    }
    c.triangle = surface.OriginalIndex(k);
    c.stage = 0;
    c.sat = -1;
    heap.push_back({bound, c.triangle, static_cast<uint32_t>(candidates.size())});
    candidates.push_back(c);
    return true;
  });
  // Max-heap on the bound; ties: the lowest triangle first.
  const auto lower = [](const Entry& a, const Entry& b) {
    return a.bound < b.bound || (a.bound == b.bound && a.triangle > b.triangle);
  };
  std::make_heap(heap.begin(), heap.end(), lower);
  // Refinements: a box's face normals, its overlap along the axis from its
  // centre, then its SAT depth; a cylinder's or a hull's overlap along the
  // axis from its inner segment (TriangleInnerOverlap).
  Vec3 inner[2];
  convex.InnerSegment(inner);
  const uint8_t final_stage = polytope_core ? 3 : 1;
  const double slack = 4e-9 * convex.scale();
  const double apart = 1e-9 * convex.scale();
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower);
    Entry e = heap.back();
    heap.pop_back();
    if (any && e.bound + slack < out->depth) break;  // no deeper contact remains
    Candidate& c = candidates[e.index];
    // Its turn on a loose bound: tighten it, and decide it now only if it
    // stays the highest.
    bool requeued = false, done = false;
    while (c.stage < final_stage) {
      double tight = std::numeric_limits<double>::infinity();
      if (!polytope_core || c.stage == 1) {
        // A bound on the contact's depth when the cores are certainly apart
        // along the axis (then GJK's closest points give the contact, no
        // deeper than the overlap, nor than 0), or for a box when the
        // triangle has a SAT answer (TrianglePolytopePenetration valid: the
        // exact depth, at most any axis's overlap); else none: EPA stalled
        // on a cylinder's or a hull's curved or sliver faces reports more
        // than the depth, up to the overlap along its last normal or the
        // triangle's own (with the overlap as a bound, DeepestContactMatches-
        // AllContacts over 180000 queries saw cylinder contacts go to a
        // triangle up to 7e-5 less deep).
        const double overlap = TriangleInnerOverlap(c.v, convex, inner);
        if (overlap < convex.margin() - apart) {
          tight = std::max(overlap, 0.0);
        } else if (c.sat_answer) {  // (a box core only)
          tight = overlap;
        }
      } else if (c.stage == 0) {
        // The box's own face normals (three axes, no support calls).
        for (int k = 0; k < 3; ++k) {
          const Vec3& a = polytope.axis[k];
          const double t0 = Dot(a, c.v[0]), t1 = Dot(a, c.v[1]), t2 = Dot(a, c.v[2]);
          const double mid = Dot(a, polytope.center);
          const double reach = polytope.half[k] + convex.margin();
          tight = std::min(tight, std::min(std::max(t0, std::max(t1, t2)) - (mid - reach),
                                           mid + reach - std::min(t0, std::min(t1, t2))));
        }
      } else {
        const TriangleConvexPenetration sat =
            TrianglePolytopePenetration(c.v, polytope, convex.margin());
        if (sat.valid) {
          tight = sat.depth;
          c.sat = static_cast<int32_t>(sats.size());
          sats.push_back(sat);
        }
      }
      ++c.stage;
      if (!(tight < e.bound)) continue;
      e.bound = tight;
      if (!heap.empty() && lower(e, heap.front())) {
        heap.push_back(e);
        std::push_heap(heap.begin(), heap.end(), lower);
        requeued = true;
        break;
      }
      // Still the highest: every bound left is at most this one.
      if (any && e.bound + slack < out->depth) {
        done = true;
        break;
      }
    }
    if (done) break;
    if (requeued) continue;
    MeshContact m;
    if (!polytope_core) {
      // A cylinder or a hull: the prism's contact now (a face contact,
      // exactly the bound along the normal); when the prism does not hold
      // the origin (an edge or vertex contact, typically shallower than the
      // bound), GJK and EPA later, when the deepest contact so far can stop
      // EPA early (TriangleConvexEpa's stop_below).
      if (!TrianglePrismContact(c.v, c.triangle, convex, &m,
                                c.supports ? c.support : nullptr)) {
        deferred.push_back(e);
        continue;
      }
    } else if (!TriangleTouchContact(c.v, c.triangle, convex,
                                     c.sat >= 0 ? &sats[c.sat] : nullptr, &m)) {
      continue;
    }
    keep(m);
  }
  // Highest bound first, as they came out of the heap.
  for (const Entry& e : deferred) {
    if (any && e.bound + slack < out->depth) break;
    const Candidate& c = candidates[e.index];
    MeshContact m;
    const TouchAnswer t = TriangleTouchAfterPrism(
        c.v, c.triangle, convex, &m,
        any ? out->depth - slack : -std::numeric_limits<double>::infinity());
    if (t == TouchAnswer::kTouching) keep(m);
  }
  return any;
}

/// Whether the contact offset `skin` > 0 keeps the first contact `s` of the
/// convex translating by `translation` with triangle `tri`
/// (CastSettings::contact_offset): its depth when started inside (GJK, or
/// TriangleCoresPenetration when the cores overlap) plus the approach over the rest of the
/// translation must reach the skin.
template <typename Convex>
bool TriangleSkinKeeps(const Vec3 tri[3], const Convex& convex, const Vec3& translation,
                       const TriangleConvexSweep& s, double skin) {
  double depth = 0.0;
  Vec3 n = s.normal;
  if (s.started_inside) {
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
  return depth + (1.0 - s.t) * approach >= skin;
}

/// First contact of the convex translating by `translation` with `surface`;
/// with a contact offset `skin` > 0, triangles it does not keep
/// (TriangleSkinKeeps) are passed over. A mesh's triangles are swept in the
/// order the centre path enters their grown boxes (VisitSweptClosestFirst),
/// a heightfield's in its walk's order; the answer does not depend on the
/// order beyond the rounding of ties (the earliest, then the lowest input
/// triangle among those within a nanometre of travel).
template <typename Surface, typename Convex>
MeshSweepHit SurfaceSweepConvex(const Surface& surface, const Convex& convex,
                                const Vec3& translation, double skin = 0.0) {
  MeshSweepHit out;
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
  double best = 1.0;    // fraction of the best hit so far
  double limit = 1.0;   // visit and sweep up to here (best + tie once hit)
  uint32_t best_orig = UINT32_MAX;
  internal::WorkTally tally;
  // Once a triangle touches at fraction 0, only a lower input index can
  // change the answer (a tie at 0; nothing comes earlier).
  auto passed_over = [&](uint32_t k) {
    return best == 0.0 && best_orig != UINT32_MAX && surface.OriginalIndex(k) > best_orig;
  };
  const GrownTrianglePath triangle_path(centre_path, grow);
  auto enter = [&](const Vec3 v[3], double* t_enter) {
    return triangle_path.Enter(v, limit, t_enter);
  };
  auto sweep = [&](uint32_t k, const Vec3 v[3]) {
    const TriangleConvexSweep s =
        SweepTriangle(v, convex, translation, limit, scale, surface.ActiveEdges(k));
    if (!s.hit) return;
    if (skin > 0.0 && !TriangleSkinKeeps(v, convex, translation, s, skin)) return;
    const uint32_t orig = surface.OriginalIndex(k);
    const bool first = best_orig == UINT32_MAX;
    const bool earlier = s.t < best - tie;
    const bool tied = !earlier && s.t <= best + tie;
    if (first || earlier || (tied && orig < best_orig)) {
      best = first || earlier ? s.t : std::min(best, s.t);
      best_orig = orig;
      limit = std::min(1.0, best + tie);
      out.state = s.started_inside || best == 0.0 ? MeshSweepHit::State::kStartedInside
                                                  : MeshSweepHit::State::kHit;
      out.fraction = best;
      out.normal = s.normal;
      out.point = s.point;
      out.triangle = orig;
      out.capped = s.capped;
    } else if (tied) {
      best = std::min(best, s.t);
      out.fraction = best;
      if (best == 0.0) out.state = MeshSweepHit::State::kStartedInside;
    }
  };
  if constexpr (std::is_same_v<Surface, TriangleMesh>) {
    // Closest first: the earliest contacts tend to come first, so the
    // limit shrinks before the later triangles are swept, and those end at
    // their first support plane or box axis instead of in a converged cast
    // (big_level: 5637 triangle hits of 13763 sweeps walked in hierarchy
    // order, 1818 of them superseded by an earlier hit found after them).
    // The entered triangles' vertices, by entry count (decoded once).
    static thread_local std::vector<std::array<Vec3, 3>> entered;
    entered.clear();
    const ScratchRelease<std::array<Vec3, 3>> release{&entered};
    // A leaf's triangles and their neighbours share vertices: each decoded
    // once (big_level sweeps: 126.42M instructions with 32 slots, 126.35M
    // with 16, 126.61M with 8).
    TriangleMesh::VertexCache vertex_cache;
    surface.VisitSweptClosestFirst(
        centre_path, grow, &limit,
        [&](uint32_t k, double* t_enter, bool* stop) {
          if (!tally.Count()) {  // the batch stops (budget, deadline)
            *stop = true;
            return false;
          }
          // Passed over now, passed over at its turn (best and best_orig
          // only fall): not decoded nor kept.
          if (passed_over(k)) return false;
          std::array<Vec3, 3> v;
          surface.TriangleVertices(k, v.data(), &vertex_cache);
          if (!enter(v.data(), t_enter)) return false;
          entered.push_back(v);
          return true;
        },
        [&](uint32_t k, uint32_t i) {
          if (!passed_over(k)) sweep(k, entered[i].data());
          return true;
        });
  } else {
    surface.VisitSwept(box, translation, centre_path, grow, &limit, [&](uint32_t k) {
      if (!tally.Count()) return false;  // the batch stops (budget, deadline)
      if (passed_over(k)) return true;
      Vec3 v[3];
      surface.TriangleVertices(k, v);
      double t_enter;
      if (enter(v, &t_enter)) sweep(k, v);
      return true;
    });
  }
  return out;
}

}  // namespace hitbox
