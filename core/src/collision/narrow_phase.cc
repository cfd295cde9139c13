// Narrow phase: Overlap, ComputeContact and ComputeDistance for every ordered
// pair of convex kinds, and the pair table (pair_dispatch.h) at the end of
// this file. Each unordered pair is written once, for kind(A) <= kind(B), in
// one shape's local frame; closed forms where they exist, else GJK (gjk.h)
// with EPA (epa.h) when the cores overlap.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "collision/cast_internal.h"
#include "collision/pair_dispatch.h"
#include "geometry/closest_points.h"
#include "geometry/epa.h"
#include "geometry/gjk.h"
#include "geometry/sat.h"
#include "hitbox/collision/collide.h"
#include "shape/convex_core.h"

namespace hitbox {
namespace {

using internal::ClosestPair;
using internal::ConvexCore;
using internal::GjkResult;
using internal::GjkSettings;
using internal::GjkState;

/// Below this fraction of the pair's scale a closest-point difference is too
/// short to give a reliable direction; the "deep" branch of each pair is used.
constexpr double kDirectionEpsilon = 1e-12;
/// Cross-product axes shorter than this (sine of the angle between two edges)
/// are skipped by the SATs: the edges are parallel and the face axes decide.
constexpr double kParallelEpsilon = internal::kSatParallelEpsilon;

/// Which query a pair function answers.
enum class Query { kOverlap, kContact, kDistance };

/// The answer of one pair, in the world frame.
struct PairAnswer {
  bool overlap = false;
  Contact contact;
  DistanceResult distance;
};

/// |x| + |y| + |z|: a cheap length scale (>= the Euclidean length).
double Norm1(const Vec3& v) { return std::fabs(v.x) + std::fabs(v.y) + std::fabs(v.z); }

/// Fills a contact in the frame `frame` (local -> world), given local normal,
/// depth and point_a; point_b follows from the contract point_b = point_a - depth * n.
void SetContact(const Pose& frame, const Vec3& normal, double depth, const Vec3& point_a,
                PairAnswer* out) {
  out->overlap = true;
  out->contact.depth = std::max(0.0, depth);
  out->contact.normal = frame.TransformDirection(normal);
  out->contact.point_a = frame.TransformPoint(point_a);
  out->contact.point_b = frame.TransformPoint(point_a - normal * out->contact.depth);
}

void SetDistance(const Pose& frame, double distance, const Vec3& point_a, const Vec3& point_b,
                 PairAnswer* out) {
  out->overlap = distance <= 0.0;
  out->distance.distance = std::max(0.0, distance);
  out->distance.point_a = frame.TransformPoint(point_a);
  out->distance.point_b = frame.TransformPoint(point_b);
}

// ---------------------------------------------------------------------------
// Rounded point/segment pairs: the core closest points (p on A's core, q on
// B's core) and the sum of the radii decide everything. `deep_normal` is the
// direction used when the cores touch (difference too short to normalise).

template <Query query, typename DeepNormal>
void RoundedPair(const Pose& frame, const Vec3& p, const Vec3& q, double ra,
                 double rb, double scale, const DeepNormal& deep_normal, PairAnswer* out) {
  const Vec3 diff = q - p;
  const double radii = ra + rb;
  const double d_sq = diff.LengthSq();
  if constexpr (query == Query::kOverlap) {
    out->overlap = d_sq <= radii * radii;
    return;
  }
  const double d = std::sqrt(d_sq);
  if constexpr (query == Query::kDistance) {
    const Vec3 n = d > 0.0 ? diff / d : deep_normal();
    SetDistance(frame, d - radii, p + n * ra, q - n * rb, out);
    return;
  }
  if (d_sq > radii * radii) return;
  const Vec3 n = d > kDirectionEpsilon * scale ? diff / d : deep_normal();
  SetContact(frame, n, radii - d, p + n * ra, out);
}

Vec3 UnitY() { return {0, 1, 0}; }
Vec3 UnitX() { return {1, 0, 0}; }

/// Sphere A, sphere B: centre distance.
template <Query query>
void SphereSphere(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,
                  PairAnswer* out) {
  // Rotations do not matter: work in a frame parallel to the world's at A's centre.
  const Vec3 c = pb.position - pa.position;
  const double scale = a.radius() + b.radius() + Norm1(c);
  RoundedPair<query>(Pose{pa.position}, {}, c, a.radius(), b.radius(), scale, UnitY, out);
}

/// Sphere A, capsule B: in B's frame, sphere centre against B's segment.
template <Query query>
void SphereCapsule(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,
                   PairAnswer* out) {
  const Vec3 c = pb.RelativeTo(pa).position;
  const double h = b.half_height();
  const Vec3 q{0.0, std::clamp(c.y, -h, h), 0.0};
  const double scale = a.radius() + b.radius() + h + Norm1(c);
  // Deep: push the capsule sideways, perpendicular to its axis.
  RoundedPair<query>(pb, c, q, a.radius(), b.radius(), scale, UnitX, out);
}

/// Capsule A, capsule B: in A's frame, segment against segment (RTCD 5.1.9).
template <Query query>
void CapsuleCapsule(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,
                    PairAnswer* out) {
  const Pose rel = pa.RelativeTo(pb);
  const Vec3 axis_b = rel.rotation.Rotate({0, 1, 0});
  const Vec3 hb = axis_b * b.half_height();
  const Vec3 ha{0, a.half_height(), 0};
  const ClosestPair cp = internal::ClosestSegmentSegment(-ha, ha, rel.position - hb,
                                                         rel.position + hb);
  const double scale = a.radius() + b.radius() + a.half_height() + b.half_height() +
                       Norm1(rel.position);
  // Deep: the common perpendicular of the axes (any perpendicular when parallel).
  const auto deep = [&]() {
    Vec3 n = Cross(Vec3{0, 1, 0}, axis_b);
    n = n.LengthSq() > kParallelEpsilon * kParallelEpsilon ? n.Normalized() : Vec3{1, 0, 0};
    return Dot(n, rel.position) < 0.0 ? -n : n;
  };
  RoundedPair<query>(pa, cp.p, cp.q, a.radius(), b.radius(), scale, deep, out);
}

/// Sphere A, box B: in B's frame, centre clamped into the box.
template <Query query>
void SphereBox(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,
               PairAnswer* out) {
  const Vec3 c = pb.RelativeTo(pa).position;
  const Vec3& h = b.half_extents();
  const Vec3 q = Max(Min(c, h), -h);
  const double r = a.radius();
  const double d_sq = (c - q).LengthSq();
  if constexpr (query == Query::kOverlap) {
    out->overlap = d_sq <= r * r;
    return;
  }
  const double d = std::sqrt(d_sq);
  const double scale = r + Norm1(h) + Norm1(c);
  if constexpr (query == Query::kDistance) {
    const Vec3 n = d > 0.0 ? (q - c) / d : Vec3{0, 1, 0};
    SetDistance(pb, d - r, c + n * r, q, out);
    return;
  }
  if (d_sq > r * r) return;
  if (d > kDirectionEpsilon * scale) {
    const Vec3 n = (q - c) / d;  // from the sphere centre into the box
    SetContact(pb, n, r - d, c + n * r, out);
    return;
  }
  // Centre inside (or on) the box: leave through the nearest face.
  int axis = 0;
  double face = h.x - std::fabs(c.x);
  for (int i = 1; i < 3; ++i) {
    const double f = h[i] - std::fabs(c[i]);
    if (f < face) face = f, axis = i;
  }
  Vec3 e{};
  e[axis] = 1.0;
  const Vec3 n = c[axis] < 0.0 ? e : -e;  // the box moves away from the centre's side
  SetContact(pb, n, std::max(0.0, face) + r, c + n * r, out);
}

/// Sphere A, cylinder B: in B's frame, closest point on the solid cylinder.
template <Query query>
void SphereCylinder(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,
                    PairAnswer* out) {
  const Vec3 c = pb.RelativeTo(pa).position;
  const double rc = b.radius();
  const double h = b.half_height();
  const Vec3 q = internal::ClosestPointOnCylinder(c, rc, h);
  const double r = a.radius();
  const double d_sq = (c - q).LengthSq();
  if constexpr (query == Query::kOverlap) {
    out->overlap = d_sq <= r * r;
    return;
  }
  const double d = std::sqrt(d_sq);
  const double scale = r + rc + h + Norm1(c);
  if constexpr (query == Query::kDistance) {
    const Vec3 n = d > 0.0 ? (q - c) / d : Vec3{0, 1, 0};
    SetDistance(pb, d - r, c + n * r, q, out);
    return;
  }
  if (d_sq > r * r) return;
  if (d > kDirectionEpsilon * scale) {
    const Vec3 n = (q - c) / d;
    SetContact(pb, n, r - d, c + n * r, out);
    return;
  }
  // Centre inside (or on) the cylinder: leave through the nearest cap or the side.
  const double radial = std::sqrt(c.x * c.x + c.z * c.z);
  const double side = rc - radial;
  const double cap = h - std::fabs(c.y);
  Vec3 n;
  double inner;
  if (cap <= side) {
    n = c.y < 0.0 ? Vec3{0, 1, 0} : Vec3{0, -1, 0};
    inner = cap;
  } else {
    n = radial > 0.0 ? Vec3{-c.x / radial, 0.0, -c.z / radial} : Vec3{-1, 0, 0};
    inner = side;
  }
  SetContact(pb, n, std::max(0.0, inner) + r, c + n * r, out);
}

/// Box A, capsule B: in A's frame, exact segment-box closest points; when the
/// segment touches the box, the 6-axis SAT of box against segment (3 face
/// normals, 3 edge x segment axes) plus the radius gives the exact depth.
template <Query query>
void BoxCapsule(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,
                PairAnswer* out) {
  const Pose rel = pa.RelativeTo(pb);
  const Vec3 u = rel.rotation.Rotate({0, b.half_height(), 0});
  const Vec3& h = a.half_extents();
  const double r = b.radius();
  if constexpr (query == Query::kOverlap) {
    // Quick answers first: the capsule's bounding box in A's frame misses the
    // box grown by r (separated), or the segment's midpoint is in the box.
    const Vec3 c = rel.position.Abs();
    const Vec3 reach = h + u.Abs() + Vec3::Splat(r);
    if (c.x > reach.x || c.y > reach.y || c.z > reach.z) {
      out->overlap = false;
      return;
    }
    if (c.x <= h.x && c.y <= h.y && c.z <= h.z) {
      out->overlap = true;
      return;
    }
  }
  const ClosestPair cp = internal::ClosestSegmentBox(rel.position - u, rel.position + u, h);
  if constexpr (query == Query::kOverlap) {
    out->overlap = cp.distance_sq <= r * r;
    return;
  }
  const double d = std::sqrt(cp.distance_sq);
  const double scale = r + Norm1(h) + b.half_height() + Norm1(rel.position);
  if constexpr (query == Query::kDistance) {
    const Vec3 n = d > 0.0 ? (cp.p - cp.q) / d : Vec3{0, 1, 0};
    SetDistance(pa, d - r, cp.q, cp.p - n * r, out);
    return;
  }
  if (cp.distance_sq > r * r) return;
  if (d > kDirectionEpsilon * scale) {
    const Vec3 n = (cp.p - cp.q) / d;  // from the box towards the segment
    SetContact(pa, n, r - d, cp.q, out);
    return;
  }
  const Vec3& c = rel.position;
  internal::SatMinimum sat;
  auto try_axis = [&](const Vec3& n) {
    sat.Centered(n, h.x * std::fabs(n.x) + h.y * std::fabs(n.y) + h.z * std::fabs(n.z),
                 std::fabs(Dot(u, n)), Dot(c, n));
  };
  for (int i = 0; i < 3; ++i) {
    Vec3 e{};
    e[i] = 1.0;
    try_axis(e);
  }
  for (int i = 0; i < 3; ++i) {
    Vec3 e{};
    e[i] = 1.0;
    Vec3 axis;
    if (internal::SatCrossAxis(e, u, &axis)) try_axis(axis);
  }
  const double best_pen = sat.depth;
  const Vec3 best_n = sat.normal;
  const double depth = std::max(0.0, best_pen) + r;
  // Deepest point of the capsule inside the box: its support along -n.
  const Vec3 seg_end = Dot(u, best_n) > 0.0 ? c - u : c + u;
  const Vec3 point_b = seg_end - best_n * r;
  SetContact(pa, best_n, depth, point_b + best_n * depth, out);
}

/// The overlap-only SAT of two boxes in A's frame, in the matrix form of
/// RTCD 4.4.1: r[i][j] = A axis i . B axis j, t = B's centre. Cross axes
/// A_i x B_j are used unnormalised (only the sign of the gap matters) and
/// skipped when the two edges are parallel (|sin| < kParallelEpsilon).
bool BoxBoxOverlap(const Vec3& ha, const Vec3& hb, const Mat33& r, const Vec3& t) {
  double abs_r[3][3];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) abs_r[i][j] = std::fabs(r.row[i][j]);
  }
  for (int i = 0; i < 3; ++i) {
    const double rb = hb.x * abs_r[i][0] + hb.y * abs_r[i][1] + hb.z * abs_r[i][2];
    if (std::fabs(t[i]) > ha[i] + rb) return false;
  }
  for (int j = 0; j < 3; ++j) {
    const double ra = ha.x * abs_r[0][j] + ha.y * abs_r[1][j] + ha.z * abs_r[2][j];
    const double proj = t.x * r.row[0][j] + t.y * r.row[1][j] + t.z * r.row[2][j];
    if (std::fabs(proj) > ra + hb[j]) return false;
  }
  constexpr double kParallelSq = kParallelEpsilon * kParallelEpsilon;
  for (int i = 0; i < 3; ++i) {
    const int i1 = (i + 1) % 3;
    const int i2 = (i + 2) % 3;
    for (int j = 0; j < 3; ++j) {
      // |A_i x B_j|^2 = 1 - r[i][j]^2: the components of B_j off A_i.
      if (r.row[i1][j] * r.row[i1][j] + r.row[i2][j] * r.row[i2][j] <= kParallelSq) continue;
      const int j1 = (j + 1) % 3;
      const int j2 = (j + 2) % 3;
      const double ra = ha[i1] * abs_r[i2][j] + ha[i2] * abs_r[i1][j];
      const double rb = hb[j1] * abs_r[i][j2] + hb[j2] * abs_r[i][j1];
      const double proj = t[i2] * r.row[i1][j] - t[i1] * r.row[i2][j];
      if (std::fabs(proj) > ra + rb) return false;
    }
  }
  return true;
}

/// Box A, box B: 15-axis separating axis test in A's frame (Gottschalk, Lin,
/// Manocha, "OBBTree", SIGGRAPH 1996; RTCD 4.4.1). Cross axes are normalised,
/// and skipped when the two edges are parallel (|sin| < kParallelEpsilon),
/// instead of RTCD's epsilon on |R|, so no axis ever reports a false separation.
/// The minimum-overlap axis is the exact penetration depth of two boxes.
template <Query query>
void BoxBox(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,
            PairAnswer* out) {
  const Pose rel = pa.RelativeTo(pb);
  if constexpr (query == Query::kDistance) {
    const GjkResult g = internal::GjkDistance(internal::CoreOf(a), internal::CoreOf(b), rel);
    SetDistance(pa, g.state == GjkState::kOverlapping ? 0.0 : g.distance, g.point_a, g.point_b,
                out);
    return;
  }
  const Vec3& ha = a.half_extents();
  const Vec3& hb = b.half_extents();
  const Mat33 m = rel.rotation.ToMatrix();
  const Vec3& t = rel.position;
  if constexpr (query == Query::kOverlap) {
    out->overlap = BoxBoxOverlap(ha, hb, m, t);
    return;
  }
  const Vec3 bx[3] = {m.Column(0), m.Column(1), m.Column(2)};  // B's axes in A's frame
  // Tag of the best axis: kind * 9 + i * 3 + j (kind 0: A face, 1: B face, 2: edge pair).
  internal::SatMinimum sat;
  // Returns false when `n` separates (early out for overlap queries).
  auto test = [&](const Vec3& n, int kind, int i, int j) {
    const double ra = ha.x * std::fabs(n.x) + ha.y * std::fabs(n.y) + ha.z * std::fabs(n.z);
    return sat.Centered(n, ra, internal::BoxProjectionRadius(bx, hb, n), Dot(t, n),
                        kind * 9 + i * 3 + j) >= 0.0;
  };
  for (int i = 0; i < 3; ++i) {
    Vec3 e{};
    e[i] = 1.0;
    if (!test(e, 0, i, 0)) return;
  }
  for (int j = 0; j < 3; ++j) {
    if (!test(bx[j], 1, j, 0)) return;
  }
  for (int i = 0; i < 3; ++i) {
    Vec3 e{};
    e[i] = 1.0;
    for (int j = 0; j < 3; ++j) {
      const Vec3 axis = Cross(e, bx[j]);
      const double len_sq = axis.LengthSq();
      if (len_sq <= kParallelEpsilon * kParallelEpsilon) continue;
      // Overlap only needs the sign of the gap: no need to normalise.
      if (!test(query == Query::kOverlap ? axis : axis / std::sqrt(len_sq), 2, i, j)) return;
    }
  }
  out->overlap = true;
  if constexpr (query == Query::kOverlap) return;

  const Vec3 n = sat.normal;
  const double depth = sat.depth;
  const int best_kind = sat.tag / 9, best_i = sat.tag / 3 % 3, best_j = sat.tag % 3;
  // Support vertex of B along -n (in A's frame) and of A along n.
  auto b_support = [&](const Vec3& dir) {
    Vec3 p = t;
    for (int k = 0; k < 3; ++k) p += bx[k] * (Dot(dir, bx[k]) >= 0.0 ? hb[k] : -hb[k]);
    return p;
  };
  const Vec3 a_vertex{n.x >= 0.0 ? ha.x : -ha.x, n.y >= 0.0 ? ha.y : -ha.y,
                      n.z >= 0.0 ? ha.z : -ha.z};
  Vec3 point_a;
  if (best_kind == 0) {
    point_a = b_support(-n) + n * depth;  // B's deepest vertex, lifted onto A's face
  } else if (best_kind == 1) {
    point_a = a_vertex;
  } else {
    // Edge of A along axis i through A's support vertex, edge of B along b_j
    // through B's support vertex: their closest points.
    Vec3 ea = a_vertex;
    ea[best_i] = 0.0;
    Vec3 a0 = ea, a1 = ea;
    a0[best_i] = -ha[best_i];
    a1[best_i] = ha[best_i];
    const Vec3 vb = b_support(-n);
    const Vec3 eb = vb - bx[best_j] * (Dot(vb - t, bx[best_j]));
    const ClosestPair cp = internal::ClosestSegmentSegment(a0, a1, eb - bx[best_j] * hb[best_j],
                                                           eb + bx[best_j] * hb[best_j]);
    point_a = cp.p;
  }
  SetContact(pa, n, depth, point_a, out);
}

/// Pairs with no closed form (box-cylinder, capsule-cylinder,
/// cylinder-cylinder): GJK on the cores with the capsule radius as margin;
/// EPA on the full shapes when the cores themselves overlap.
template <Query query>
void GjkPair(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,
             PairAnswer* out) {
  const Pose rel = pa.RelativeTo(pb);
  const ConvexCore ca = internal::CoreOf(a);
  const ConvexCore cb = internal::CoreOf(b);
  GjkSettings settings;
  settings.decide_only = query != Query::kDistance;
  GjkResult g = internal::GjkDistance(ca, cb, rel, settings);
  if (query == Query::kContact && g.state == GjkState::kOverlapping && !g.cores_overlap &&
      ca.margin + cb.margin > 0.0) {
    // Only the margins may overlap: the shallow contact needs the exact core distance.
    settings.decide_only = false;
    g = internal::GjkDistance(ca, cb, rel, settings);
  }
  // A capped run decides by its best estimate (upper bound on the distance).
  const bool overlap = g.state == GjkState::kOverlapping;
  if constexpr (query == Query::kOverlap) {
    out->overlap = overlap;
    return;
  }
  if constexpr (query == Query::kDistance) {
    SetDistance(pa, overlap ? 0.0 : g.distance, g.point_a, g.point_b, out);
    return;
  }
  if (!overlap) return;
  const double margins = ca.margin + cb.margin;
  if (!g.cores_overlap && g.core_distance > kDirectionEpsilon * g.scale) {
    // Only the margins overlap: the core normal is exact.
    SetContact(pa, g.normal, margins - g.core_distance, g.core_point_a + g.normal * ca.margin,
               out);
    return;
  }
  // The cores overlap: EPA on the cores alone, then add the margins. For a
  // point p inside a convex core C, the distance to the boundary of C grown
  // by a ball of radius m is exactly the distance to C's boundary plus m, so
  // only the flat and cylindrical parts go through EPA.
  ConvexCore core_a = ca;
  ConvexCore core_b = cb;
  core_a.margin = 0.0;
  core_b.margin = 0.0;
  const internal::EpaResult e = internal::Epa(core_a, core_b, rel, g);
  SetContact(pa, e.normal, e.depth + margins, e.point_a + e.normal * ca.margin, out);
}

}  // namespace
namespace internal {
// surface_pairs.cc
bool SurfaceOverlap(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb);
bool SurfaceContact(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,
                    Contact* contact, uint32_t* triangle);
DistanceResult SurfaceDistance(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb);
// compound_pairs.cc
bool CompoundContact(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,
                     Contact* contact, uint32_t* child_index);
DistanceResult CompoundDistance(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb);
inline bool CompoundOverlap(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb) {
  return CompoundOverlapLowest(a, pa, b, pb) != UINT32_MAX;
}
}  // namespace internal
namespace {

/// Convex A against a collider made of parts, each answered in B's local
/// frame by the given functions: a mesh or heightfield (surface_pairs.cc)
/// or a compound (compound_pairs.cc).
template <auto kOverlap, auto kContact, auto kDistance>
struct PartsPairEntry {
  template <Query query>
  static void Run(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,
                  PairAnswer* out) {
    if constexpr (query == Query::kOverlap) {
      out->overlap = kOverlap(a, pa, b, pb);
    } else if constexpr (query == Query::kContact) {
      out->overlap = kContact(a, pa, b, pb, &out->contact, nullptr);
    } else {
      out->distance = kDistance(a, pa, b, pb);
      out->overlap = out->distance.distance <= 0.0;
    }
  }
};

/// Two collider-only shapes (surfaces, compounds): never asked (neither is
/// ever a query shape; validation rejects them), answered as no overlap, no
/// contact, distance +inf.
template <Query query>
void ColliderOnlyPair(const Shape&, const Pose&, const Shape&, const Pose&, PairAnswer* out) {
  out->overlap = false;
  out->distance.distance = std::numeric_limits<double>::infinity();
}

// ---------------------------------------------------------------------------
// The pair table: one entry per ordered pair of kinds. Each unordered pair is
// registered once, for kind(A) <= kind(B); the mirrored entry is generated
// from it (arguments swapped, normal and witness points flipped back). A
// missing entry fails to compile (static_assert below), and PairFor() aborts
// on a kind outside the table.

/// Adapts a pair function template to the table's entry points.
#define HITBOX_PAIR(Impl)                                                              \
  struct Impl##Entry {                                                                 \
    template <Query q>                                                                 \
    static void Run(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,    \
                    PairAnswer* out) {                                                 \
      Impl<q>(a, pa, b, pb, out);                                                      \
    }                                                                                  \
  };
HITBOX_PAIR(SphereSphere)
HITBOX_PAIR(SphereBox)
HITBOX_PAIR(SphereCapsule)
HITBOX_PAIR(SphereCylinder)
HITBOX_PAIR(BoxBox)
HITBOX_PAIR(BoxCapsule)
HITBOX_PAIR(CapsuleCapsule)
HITBOX_PAIR(GjkPair)
HITBOX_PAIR(ColliderOnlyPair)
#undef HITBOX_PAIR
using SurfacePairEntry = PartsPairEntry<&internal::SurfaceOverlap, &internal::SurfaceContact,
                                        &internal::SurfaceDistance>;
using CompoundPairEntry = PartsPairEntry<&internal::CompoundOverlap, &internal::CompoundContact,
                                         &internal::CompoundDistance>;

template <class P>
bool OverlapAB(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb) {
  PairAnswer out;
  P::template Run<Query::kOverlap>(a, pa, b, pb, &out);
  return out.overlap;
}
template <class P>
bool OverlapBA(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb) {
  return OverlapAB<P>(b, pb, a, pa);
}
template <class P>
bool ContactAB(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb, Contact* c) {
  PairAnswer out;
  P::template Run<Query::kContact>(a, pa, b, pb, &out);
  if (!out.overlap) return false;
  if (c != nullptr) *c = out.contact;
  return true;
}
template <class P>
bool ContactBA(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb, Contact* c) {
  PairAnswer out;
  P::template Run<Query::kContact>(b, pb, a, pa, &out);
  if (!out.overlap) return false;
  if (c != nullptr) {
    *c = out.contact;
    std::swap(c->point_a, c->point_b);
    c->normal = -c->normal;
  }
  return true;
}
template <class P>
DistanceResult DistanceAB(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb) {
  PairAnswer out;
  P::template Run<Query::kDistance>(a, pa, b, pb, &out);
  return out.distance;
}
template <class P>
DistanceResult DistanceBA(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb) {
  DistanceResult d = DistanceAB<P>(b, pb, a, pa);
  std::swap(d.point_a, d.point_b);
  return d;
}

using internal::CastMethod;
using internal::PairEntry;
using internal::PairTable;

constexpr int Idx(ShapeKind k) { return static_cast<int>(k); }

/// Registers the unordered pair {a, b} (a <= b) with implementation P, and the
/// cast methods of both orders (A moving against B, B moving against A).
template <class P>
constexpr void Register(PairTable& t, ShapeKind a, ShapeKind b, CastMethod cast_ab,
                        CastMethod cast_ba) {
  t[Idx(a)][Idx(b)] = {&OverlapAB<P>, &ContactAB<P>, &DistanceAB<P>, cast_ab, a, b, true};
  if (a != b) {
    t[Idx(b)][Idx(a)] = {&OverlapBA<P>, &ContactBA<P>, &DistanceBA<P>, cast_ba, b, a, true};
  }
}

constexpr PairTable BuildTable() {
  using K = ShapeKind;
  using M = CastMethod;
  PairTable t{};
  Register<SphereSphereEntry>(t, K::kSphere, K::kSphere, M::kSphereRay, M::kSphereRay);
  Register<SphereBoxEntry>(t, K::kSphere, K::kBox, M::kSphereRay, M::kRayFromSphereB);
  Register<SphereCapsuleEntry>(t, K::kSphere, K::kCapsule, M::kSphereRay, M::kRayFromSphereB);
  Register<SphereCylinderEntry>(t, K::kSphere, K::kCylinder, M::kSphereRay, M::kRayFromSphereB);
  Register<BoxBoxEntry>(t, K::kBox, K::kBox, M::kBoxBox, M::kBoxBox);
  Register<BoxCapsuleEntry>(t, K::kBox, K::kCapsule, M::kCapsuleBox, M::kCapsuleBox);
  Register<GjkPairEntry>(t, K::kBox, K::kCylinder, M::kConservative, M::kConservative);
  Register<CapsuleCapsuleEntry>(t, K::kCapsule, K::kCapsule, M::kCapsuleCapsule,
                                M::kCapsuleCapsule);
  Register<GjkPairEntry>(t, K::kCapsule, K::kCylinder, M::kConservative, M::kConservative);
  Register<GjkPairEntry>(t, K::kCylinder, K::kCylinder, M::kConservative, M::kConservative);
  // Convex hulls: GJK / EPA on the hull's support, casts by the GJK ray cast
  // (a sphere against a hull too: no closed-form ray against a rounded hull).
  for (K k : {K::kSphere, K::kBox, K::kCapsule, K::kCylinder, K::kConvexHull}) {
    Register<GjkPairEntry>(t, k, K::kConvexHull, M::kConservative, M::kConservative);
  }
  // Surfaces (mesh, heightfield): every convex kind against each by the
  // per-triangle surface queries; compounds: every convex kind against each
  // by its children. The mirrored order (a surface or compound moving) is
  // unsupported: they are colliders only (validation rejects them as query
  // shapes).
  // A surface cast names the query kind's triangle routine.
  const std::pair<K, M> surface_casts[] = {
      {K::kSphere, M::kSurfaceBall},       {K::kBox, M::kSurfaceBox},
      {K::kCapsule, M::kSurfaceCapsule},   {K::kCylinder, M::kSurfaceCylinder},
      {K::kConvexHull, M::kSurfaceHull}};
  for (const auto& [k, cast] : surface_casts) {
    Register<SurfacePairEntry>(t, k, K::kMesh, cast, M::kUnsupported);
    Register<SurfacePairEntry>(t, k, K::kHeightfield, cast, M::kUnsupported);
    Register<CompoundPairEntry>(t, k, K::kCompound, M::kCompound, M::kUnsupported);
  }
  // Two collider-only kinds never meet in a query.
  const K collider_only[] = {K::kMesh, K::kHeightfield, K::kCompound};
  for (int i = 0; i < 3; ++i) {
    for (int j = i; j < 3; ++j) {
      Register<ColliderOnlyPairEntry>(t, collider_only[i], collider_only[j], M::kUnsupported,
                                      M::kUnsupported);
    }
  }
  return t;
}

constexpr bool TableComplete(const PairTable& t) {
  for (int a = 0; a < kShapeKindCount; ++a) {
    for (int b = 0; b < kShapeKindCount; ++b) {
      const PairEntry& e = t[a][b];
      // (The registered flag, not the function pointers: comparing those is
      // not a constant expression under -fsanitize=undefined.)
      if (!e.registered || Idx(e.a) != a || Idx(e.b) != b) return false;
    }
  }
  return true;
}
static_assert(TableComplete(BuildTable()),
              "every ordered pair of shape kinds needs an entry in the pair table");

}  // namespace

namespace internal {

constinit const PairTable kPairTable = BuildTable();

[[noreturn]] void MissingPair(ShapeKind a, ShapeKind b) {
  std::fprintf(stderr, "hitbox: internal error: no pair entry for shape kinds %d and %d\n",
               static_cast<int>(a), static_cast<int>(b));
  std::abort();
}

}  // namespace internal

bool Overlap(const Shape& a, const Pose& pose_a, const Shape& b, const Pose& pose_b) {
  return internal::PairFor(a.kind(), b.kind()).overlap(a, pose_a, b, pose_b);
}

bool ComputeContact(const Shape& a, const Pose& pose_a, const Shape& b, const Pose& pose_b,
                    Contact* contact) {
  return internal::PairFor(a.kind(), b.kind()).contact(a, pose_a, b, pose_b, contact);
}

DistanceResult ComputeDistance(const Shape& a, const Pose& pose_a, const Shape& b,
                               const Pose& pose_b) {
  return internal::PairFor(a.kind(), b.kind()).distance(a, pose_a, b, pose_b);
}

}  // namespace hitbox
