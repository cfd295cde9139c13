// Triangle against convex (triangle_convex.h, surface_queries.h): the
// closed-form SAT penetration of polytope cores against EPA and against the
// separating move, the bounded cost of EPA on flat and sliver inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "cast_reference.h"
#include "collision/triangles/cylinder_triangle_penetration.h"
#include "collision/triangles/box_triangle_sweep.h"
#include "collision/triangles/surface_deepest_contact.h"
#include "collision/triangles/surface_sweep.h"
#include "collision/triangles/triangle_epa.h"
#include "collision/triangles/triangle_polytope_sat.h"
#include "geometry/gjk.h"
#include "geometry/sat.h"
#include "geometry/triangle_mesh.h"
#include "hitbox/collision/collide.h"
#include "mesh_util.h"
#include "shape/convex_core.h"
#include "test_util.h"

namespace hitbox {
namespace {

using internal::ConvexCore;
using testing::Random;
using testing::SweepAgreesWithGap;
using testing::VecNear;

ConvexCore Core(ConvexCore::Kind kind, const Vec3& he, double hh, double r, double margin) {
  ConvexCore c;
  c.kind = kind;
  c.half_extents = he;
  c.half_height = hh;
  c.radius = r;
  c.margin = margin;
  return c;
}

/// A random core of kind k (0 sphere, 1 capsule, 2 box with or without a
/// rounding margin), sizes in [0.05, 1].
ConvexCore RandomPolytopeCore(Random& rng, int k) {
  switch (k) {
    case 0: return Core(ConvexCore::Kind::kPoint, {}, 0, 0, rng.Uniform(0.05, 1.0));
    case 1:
      return Core(ConvexCore::Kind::kSegment, {}, rng.Uniform(0.05, 1.0), 0, rng.Uniform(0.05, 1.0));
    default:
      return Core(ConvexCore::Kind::kBox,
                  {rng.Uniform(0.05, 1.0), rng.Uniform(0.05, 1.0), rng.Uniform(0.05, 1.0)}, 0, 0,
                  rng.Int(0, 1) == 0 ? 0.0 : rng.Uniform(0.0, 0.3));
  }
}

/// A random triangle of edge lengths ~0.1..3 near the origin; every fourth
/// a sliver (one side ~1e-5 wide).
void RandomTriangle(Random& rng, int i, Vec3 tri[3]) {
  tri[0] = rng.InBox(1.0);
  tri[1] = tri[0] + rng.UnitVector() * rng.Uniform(0.1, 3.0);
  if (i % 4 == 3) {
    tri[2] = tri[0] + (tri[1] - tri[0]) * rng.Uniform(0.2, 0.8) + rng.UnitVector() * 1e-5;
  } else {
    tri[2] = tri[0] + rng.UnitVector() * rng.Uniform(0.1, 3.0);
  }
}

/// RandomTriangle, every fifth made a floor (level in y), scaled by `s`
/// about the origin and moved to `origin`.
void RandomScaledTriangle(Random& rng, int i, const Vec3& origin, double s, Vec3 tri[3]) {
  RandomTriangle(rng, i, tri);
  if (i % 5 == 4) {  // a floor
    tri[1].y = tri[0].y;
    tri[2].y = tri[0].y;
  }
  for (int k = 0; k < 3; ++k) tri[k] = origin + tri[k] * s;
}

// PlacedConvex's bounds of sphere, capsule and box cores (closed form) and
// of hulls (one pass over the vertices up to ConvexHullData::kScanVertices,
// the supports beyond; cubes turned by quarter turns tie) are the supports
// along +-each axis plus the margin, to the bit.
TEST(PlacedConvex, BoundsAreTheAxisSupports) {
  Random rng(77);
  std::vector<Shape> hulls;
  size_t scanned = 0;  // hulls of at most kScanVertices vertices
  for (const int n : {4, 9, 20, 32, 48, 90}) {  // points on a sphere: most are vertices
    for (int k = 0; k < 6; ++k) {
      std::vector<Vec3> points(n);
      for (Vec3& p : points) p = rng.UnitVector() * 2.0 + Vec3{0.5, -0.3, 0.2};
      Result<Shape> hull = Shape::Make(ConvexHull{points});
      if (!hull.ok()) continue;
      scanned += hull->hull()->vertices().size() <= ConvexHullData::kScanVertices;
      hulls.push_back(std::move(hull).value());
    }
  }
  std::vector<Vec3> cube;
  for (int k = 0; k < 8; ++k) {
    cube.push_back({k & 1 ? 1.0 : -1.0, k & 2 ? 1.0 : -1.0, k & 4 ? 1.0 : -1.0});
  }
  hulls.push_back(*Shape::Make(ConvexHull{cube}));
  EXPECT_GT(scanned, 12u);
  EXPECT_GT(hulls.size() - scanned, 6u);
  const Quat quarter = Quat::FromAxisAngle({0, 0, 1}, 1.5707963267948966);
  for (int i = 0; i < 3000; ++i) {
    ConvexCore core = RandomPolytopeCore(rng, i % 3);
    if (i % 4 == 3) {
      core = internal::CoreOf(hulls[(i / 4) % hulls.size()]);
      core.margin = i % 8 == 3 ? 0.0 : rng.Uniform(0.0, 0.2);
    }
    const Quat rot = i % 7 == 0 ? Quat{} : i % 7 == 1 ? quarter : rng.Rotation();
    const Pose pose{rng.InBox(50.0), rot};
    const PlacedConvex q(core, pose);
    const internal::PlacedCore placed(core, pose);
    for (int a = 0; a < 3; ++a) {
      Vec3 d;
      d[a] = 1.0;
      EXPECT_EQ(q.bounds().max[a], placed.CoreSupport(d)[a] + core.margin) << i;
      d[a] = -1.0;
      EXPECT_EQ(q.bounds().min[a], placed.CoreSupport(d)[a] - core.margin) << i;
    }
  }
}

// Polytope cores (sphere, capsule, box) whose cores overlap a triangle: the
// SAT depth and normal equal EPA's where EPA converged; moving the shape by
// depth (+1e-7) along the normal separates it, and 1e-7 short of that it
// still touches (the SAT depth is the shortest move, not just a separating one).
TEST(TrianglePolytopePenetration, MatchesEpaAndSeparatesExactly) {
  Random rng(2026);
  int overlapping = 0, compared = 0, normal_ties = 0;
  int per_kind[3] = {0, 0, 0};
  for (int i = 0; i < 30000; ++i) {
    Vec3 tri[3];
    RandomTriangle(rng, i, tri);
    const int kind = i % 3;
    const ConvexCore core = RandomPolytopeCore(rng, kind);
    // Centre near a random point of the triangle, so the cores often overlap.
    double l0 = rng.Uniform(0, 1), l1 = rng.Uniform(0, 1);
    if (l0 + l1 > 1.0) l0 = 1.0 - l0, l1 = 1.0 - l1;
    const Vec3 on = tri[0] + (tri[1] - tri[0]) * l0 + (tri[2] - tri[0]) * l1;
    const double reach = kind == 0 ? 0.0 : kind == 1 ? 0.05 : 0.5;
    const Pose pose{kind == 0 ? on : on + rng.InBox(reach), rng.Rotation()};
    const PlacedConvex convex(core, pose);
    const TriangleConvexDistance g = TriangleConvexGjk(tri, convex, convex.margin(), convex.scale());
    if (!g.cores_overlap) continue;
    ++overlapping;
    ++per_kind[kind];
    TrianglePolytopeCore poly;
    ASSERT_TRUE(convex.PolytopeCore(&poly));
    const TriangleConvexPenetration sat = TrianglePolytopePenetration(tri, poly, convex.margin());
    ASSERT_TRUE(sat.valid);
    EXPECT_NEAR(sat.normal.Length(), 1.0, 1e-12);
    EXPECT_GE(sat.depth, convex.margin() - 1e-9);
    // The contact points are depth apart along the normal.
    EXPECT_LE((sat.point_on_triangle - sat.point_on_convex - sat.normal * sat.depth).Length(), 1e-9);
    // Separated after the move (+1e-7: GJK may call a pair 1e-9 apart
    // overlapping, its tetrahedron test rounding), touching 1e-7 before it.
    const PlacedConvex moved(core, Pose{pose.position + sat.normal * (sat.depth + 1e-7), pose.rotation});
    const TriangleConvexDistance gm = TriangleConvexGjk(tri, moved, moved.margin(), moved.scale());
    EXPECT_FALSE(gm.cores_overlap) << i;
    EXPECT_GE(gm.distance, 0.0) << i << " depth " << sat.depth;
    if (sat.depth > 2e-7) {
      const PlacedConvex shy(core, Pose{pose.position + sat.normal * (sat.depth - 1e-7), pose.rotation});
      EXPECT_LE(TriangleConvexGjk(tri, shy, shy.margin(), shy.scale()).distance_lower, 0.0) << i;
    }
    // EPA, where it converged (flat differences of point cores make it fail).
    const TriangleConvexPenetration epa =
        TriangleConvexEpa(tri, convex, convex.margin(), convex.scale(), g);
    if (!epa.valid || epa.failure != 0) continue;
    ++compared;
    EXPECT_NEAR(epa.depth, sat.depth, 1e-6 * convex.scale()) << i;
    EXPECT_GE(epa.depth, sat.depth - 1e-9) << i;  // SAT is the least
    if (Dot(epa.normal, sat.normal) < 1.0 - 1e-6) ++normal_ties;
  }
  std::printf("%d overlapping cores (sphere %d, capsule %d, box %d), %d compared with EPA, "
              "%d normals differing at equal depth\n",
              overlapping, per_kind[0], per_kind[1], per_kind[2], compared, normal_ties);
  EXPECT_GT(per_kind[0], 1000);
  EXPECT_GT(per_kind[1], 3000);
  EXPECT_GT(per_kind[2], 3000);
  EXPECT_GT(compared, 5000);
  // Two axes of (nearly) the same depth are the only way the normals differ.
  EXPECT_LE(normal_ties, compared / 100);
}

// Sixteen hulls of 4 to 34 random points in a 1.4 m box (the property tests'
// hull shapes).
std::vector<Shape> RandomHulls(Random* rng) {
  std::vector<Shape> hulls;
  while (hulls.size() < 16) {
    std::vector<Vec3> points(4 + hulls.size() * 2);
    for (Vec3& p : points) p = rng->InBox(0.7);
    Result<Shape> hull = Shape::Make(ConvexHull{points});
    if (hull.ok()) hulls.push_back(std::move(hull).value());
  }
  return hulls;
}

// TriangleTouchContact (every surface contact goes through it) against GJK
// and TriangleContact: the same touching decision; for a box whose core
// SAT says overlapping (no GJK) the same contact field for field; for a
// cylinder overlapping by more than 1e-9 * scale its closed form
// (CylinderTrianglePenetration), for the others and a hull when EPA
// started from the prism along the triangle's normal holds the origin (no
// GJK) that EPA's, a depth within 1e-6 of EPA from GJK's tetrahedron, and a
// separating move (moving out by depth + 1e-7 leaves them apart).
TEST(TriangleTouchContact, MatchesGjkAndTriangleContact) {
  Random rng(77);
  const std::vector<Shape> hulls = RandomHulls(&rng);
  int touching = 0, box_sat = 0, prism = 0, closed = 0, apart = 0;
  for (int i = 0; i < 30000; ++i) {
    Vec3 tri[3];
    RandomTriangle(rng, i, tri);
    const int kind = i % 3;
    const ConvexCore core = kind == 0   ? RandomPolytopeCore(rng, 2)
                            : kind == 1 ? Core(ConvexCore::Kind::kCylinder, {},
                                               rng.Uniform(0.05, 1.0), rng.Uniform(0.05, 1.0), 0.0)
                                        : internal::CoreOf(hulls[i % hulls.size()]);
    double l0 = rng.Uniform(0, 1), l1 = rng.Uniform(0, 1);
    if (l0 + l1 > 1.0) l0 = 1.0 - l0, l1 = 1.0 - l1;
    const Vec3 on = tri[0] + (tri[1] - tri[0]) * l0 + (tri[2] - tri[0]) * l1;
    const Pose pose{on + rng.InBox(0.8), rng.Rotation()};
    const PlacedConvex convex(core, pose);
    TrianglePolytopeCore poly;
    TriangleConvexPenetration sat;
    const bool box = convex.PolytopeCore(&poly);
    if (box) sat = TrianglePolytopePenetration(tri, poly, convex.margin());
    SurfaceContactHit m;
    const bool touch = TriangleTouchContact(tri, 7, convex, box ? &sat : nullptr, &m);
    const TriangleConvexDistance g = TriangleConvexGjk(tri, convex, convex.margin(), convex.scale());
    ASSERT_EQ(touch, g.distance_lower <= 0.0) << i;
    if (!touch) {
      ++apart;
      continue;
    }
    ++touching;
    EXPECT_EQ(m.triangle, 7u);
    const SurfaceContactHit want = TriangleContact(tri, 7, convex, g);
    if (box) {
      if (sat.valid && sat.depth - convex.margin() > 1e-9 * convex.scale()) ++box_sat;
      EXPECT_EQ(m.depth, want.depth) << i;
      EXPECT_EQ(m.normal, want.normal) << i;
      EXPECT_EQ(m.point_on_mesh, want.point_on_mesh) << i;
      EXPECT_EQ(m.point_on_query, want.point_on_query) << i;
      continue;
    }
    // A cylinder overlapping by more than 1e-9 * scale: the closed form.
    TriangleConvexPenetration from_prism;
    const bool closed_form = kind == 1 && CylinderTrianglePenetration(tri, convex.cylinder(),
                                                                      convex.scale(), &from_prism);
    if (closed_form) {
      ++closed;
    } else {
      from_prism = TriangleConvexEpa(tri, convex, convex.margin(), convex.scale(),
                                     TriangleConvexDistance{}, TriangleEpaStart::kPrismOnly);
    }
    if (!from_prism.valid) continue;
    ++prism;
    ASSERT_TRUE(g.cores_overlap) << i;
    EXPECT_EQ(m.depth, from_prism.depth) << i;
    const TriangleConvexPenetration from_tet = TriangleConvexEpa(
        tri, convex, convex.margin(), convex.scale(), g, TriangleEpaStart::kTetrahedronOnly);
    if (closed_form && from_tet.valid) {
      // Exact: never longer than EPA's (which stalls on the curved side).
      EXPECT_LE(m.depth, from_tet.depth + 1e-9 * convex.scale()) << i;
    } else if (from_tet.valid && from_tet.failure == 0 && from_prism.failure == 0) {
      EXPECT_NEAR(m.depth, from_tet.depth, 1e-6) << i;
    }
    const PlacedConvex moved(core, Pose{pose.position + m.normal * (m.depth + 1e-7), pose.rotation});
    EXPECT_GT(TriangleConvexGjk(tri, moved, moved.margin(), moved.scale()).distance, 0.0) << i;
  }
  std::printf(
      "%d touching (%d boxes by SAT, %d cylinders or hulls from the prism or, %d, the "
      "cylinder's closed form), %d apart\n",
      touching, box_sat, prism, closed, apart);
  EXPECT_GT(box_sat, 2000);
  EXPECT_GT(prism, 2000);
  EXPECT_GT(closed, 1000);
  EXPECT_GT(apart, 3000);
}

// The worst differences of closed-form touch contacts from GJK's, relative
// to the shape's scale (normals absolute).
struct TouchWorst {
  double normal = 0.0, depth = 0.0, point = 0.0;
};

// Case `i` of a closed-form TriangleTouchContact test: whether it touches
// (`touch`, contact `m`) must be GJK's `g` (but within 1e-12 * scale of
// grazing, `d` the distance of the cores and `r` the radius: then either
// answer stands and the case is skipped), and the contact TriangleContact's:
// depth within 1e-12, normal and points within 1e-9 of the scale. Returns
// 1 for a touching case, 0 for an apart one, -1 for one skipped; counts the
// grazing ones.
int ExpectTouchAsGjk(const Vec3 tri[3], const PlacedConvex& convex,
                      const TriangleConvexDistance& g, bool touch, const SurfaceContactHit& m,
                      double d, double r, int i, int* grazing, TouchWorst* worst) {
  const double scale = convex.scale();
  if (std::fabs(d - r) <= 1e-12 * scale) {
    ++*grazing;
    if (touch != (g.distance_lower <= 0.0)) return -1;
  }
  EXPECT_EQ(touch, g.distance_lower <= 0.0) << i << " " << d - r;
  if (!touch) return 0;
  if (g.distance_lower > 0.0) return -1;  // failed above
  const SurfaceContactHit want = TriangleContact(tri, 7, convex, g);
  EXPECT_EQ(m.triangle, 7u);
  worst->depth = std::max(worst->depth, std::fabs(m.depth - want.depth) / scale);
  worst->normal = std::max(worst->normal, (m.normal - want.normal).Length());
  worst->point =
      std::max(worst->point, (m.point_on_query - want.point_on_query).Length() / scale);
  EXPECT_NEAR(m.depth, want.depth, 1e-12 * scale) << i;
  EXPECT_TRUE(VecNear(m.normal, want.normal, 1e-9)) << i;
  EXPECT_TRUE(VecNear(m.point_on_mesh, want.point_on_mesh, 1e-9 * scale)) << i;
  EXPECT_TRUE(VecNear(m.point_on_query, want.point_on_query, 1e-9 * scale)) << i;
  return 1;
}

// A ball's TriangleTouchContact (closed form: the closest point of the
// triangle) against GJK and TriangleContact, which it replaces: random
// triangles (a quarter slivers), centres anywhere near them, grazing (the
// closest point at the radius +-1e-12), on the triangle (within 1e-14:
// GJK's cores overlapping, the SAT face answer) and 1e-13..1e-2 from it.
// The same touching decision (but within 1e-12 of grazing), depth within
// 1e-12, the same normal and points within 1e-9 (seen: 3e-11 and 2e-16;
// without the sliver guard, normals 4e-5 apart and flipped on slivers 1e-5
// wide; with the closed form down to 1e-13 * scale, normals 0.3 apart).
TEST(TriangleTouchContact, BallMatchesGjk) {
  Random rng(83);
  int touching = 0, apart = 0, on_triangle = 0, grazing = 0;
  TouchWorst worst;
  for (int i = 0; i < 30000; ++i) {
    Vec3 tri[3];
    RandomTriangle(rng, i, tri);
    const double r = rng.Uniform(0.05, 1.0);
    double l0 = rng.Uniform(0, 1), l1 = rng.Uniform(0, 1);
    if (l0 + l1 > 1.0) l0 = 1.0 - l0, l1 = 1.0 - l1;
    const Vec3 on = tri[0] + (tri[1] - tri[0]) * l0 + (tri[2] - tri[0]) * l1;
    Vec3 centre = on + rng.InBox(1.2);
    if (i % 5 == 1) {
      // Grazing: the closest point at the radius, within 1e-12.
      const Vec3 q = ClosestPointOnTriangle(centre, tri[0], tri[1], tri[2]);
      const Vec3 out = (centre - q).Normalized();
      if (out.LengthSq() > 0.0) centre = q + out * (r + rng.Uniform(-1e-12, 1e-12));
    } else if (i % 5 == 2) {
      centre = on + rng.UnitVector() * rng.Uniform(0.0, 1e-14);
    } else if (i % 5 == 3 && i % 2 == 0) {
      centre = on + rng.UnitVector() * std::pow(10.0, rng.Uniform(-13.0, -2.0));
    }
    const ConvexCore core = Core(ConvexCore::Kind::kPoint, {}, 0, 0, r);
    const PlacedConvex convex(core, Pose{centre, rng.Rotation()});
    SurfaceContactHit m;
    const bool touch = TriangleTouchContact(tri, 7, convex, nullptr, &m);
    const TriangleConvexDistance g =
        TriangleConvexGjk(tri, convex, convex.margin(), convex.scale());
    Vec3 q;
    const double d = std::sqrt(PointTriangleDistanceSq(centre, tri[0], tri[1], tri[2], &q));
    const int compared = ExpectTouchAsGjk(tri, convex, g, touch, m, d, r, i, &grazing, &worst);
    if (compared == 0) ++apart;
    if (compared <= 0) continue;
    ++touching;
    if (g.cores_overlap) ++on_triangle;
  }
  std::printf("%d touching (%d on the triangle), %d apart, %d grazing; normals within %.3g, "
              "depths %.3g of the scale\n",
              touching, on_triangle, apart, grazing, worst.normal, worst.depth);
  EXPECT_GT(touching, 8000);
  EXPECT_GT(on_triangle, 3000);
  EXPECT_GT(apart, 5000);
}

// A capsule's TriangleTouchContact (closed form: the closest points of its
// segment and the triangle) against GJK and TriangleContact, as for the
// ball: random triangles (a quarter slivers) and segments, some grazing
// (closest points at the radius +-1e-12), some through the triangle, some
// 1e-13..1e-2 from it, some within 1e-2..1e-9 of parallel to its plane or
// an edge (the closed form from 1e-3 on; closer, GJK's pick of the sliding
// closest points stands).
TEST(TriangleTouchContact, CapsuleMatchesGjk) {
  Random rng(89);
  int touching = 0, apart = 0, cores = 0, grazing = 0;
  TouchWorst worst;
  for (int i = 0; i < 30000; ++i) {
    Vec3 tri[3];
    RandomTriangle(rng, i, tri);
    const double r = rng.Uniform(0.05, 1.0), hh = rng.Uniform(0.05, 1.0);
    double l0 = rng.Uniform(0, 1), l1 = rng.Uniform(0, 1);
    if (l0 + l1 > 1.0) l0 = 1.0 - l0, l1 = 1.0 - l1;
    const Vec3 on = tri[0] + (tri[1] - tri[0]) * l0 + (tri[2] - tri[0]) * l1;
    Vec3 centre = on + rng.InBox(1.5);
    Vec3 axis = rng.UnitVector();
    if (i % 7 == 3 || i % 7 == 4) {
      // Near parallel to the plane (3) or to an edge (4).
      const Vec3 n = Cross(tri[1] - tri[0], tri[2] - tri[0]).Normalized();
      const Vec3 base = i % 7 == 3 ? (axis - n * Dot(axis, n)).Normalized()
                                   : (tri[1] - tri[0]).Normalized();
      const double tilt = std::pow(10.0, rng.Uniform(-9.0, -2.0));
      if (base.LengthSq() > 0.0) axis = (base + rng.UnitVector() * tilt).Normalized();
    }
    // The capsule's Y axis along `axis`.
    const Quat q = Quat::FromTo(Vec3{0, 1, 0}, axis);
    if (i % 5 != 0 && i % 5 != 4) {
      Vec3 p, t;
      const Vec3 s0 = centre - axis * hh, s1 = centre + axis * hh;
      const double d = std::sqrt(SegmentTriangleDistanceSq(s0, s1, tri[0], tri[1], tri[2], &p, &t));
      if (i % 5 == 1 && d > 0.0) {
        centre += (p - t) * ((r + rng.Uniform(-1e-12, 1e-12)) / d - 1.0);  // grazing
      } else if (i % 5 == 2) {
        centre += t - p;  // through the triangle
      } else if (d > 0.0) {
        centre += (p - t) * (std::pow(10.0, rng.Uniform(-13.0, -2.0)) / d - 1.0);  // nearly
      }
    }
    const ConvexCore core = Core(ConvexCore::Kind::kSegment, {}, hh, 0, r);
    const PlacedConvex convex(core, Pose{centre, q});
    SurfaceContactHit m;
    const bool touch = TriangleTouchContact(tri, 7, convex, nullptr, &m);
    const TriangleConvexDistance g =
        TriangleConvexGjk(tri, convex, convex.margin(), convex.scale());
    Vec3 p, t;
    const Vec3* seg = convex.segment();
    const double d =
        std::sqrt(SegmentTriangleDistanceSq(seg[0], seg[1], tri[0], tri[1], tri[2], &p, &t));
    const int compared = ExpectTouchAsGjk(tri, convex, g, touch, m, d, r, i, &grazing, &worst);
    if (compared == 0) ++apart;
    if (compared <= 0) continue;
    ++touching;
    if (g.cores_overlap) ++cores;
  }
  std::printf("%d touching (%d cores overlapping), %d apart, %d grazing; normals within %.3g, "
              "depths %.3g, points %.3g of the scale\n",
              touching, cores, apart, grazing, worst.normal, worst.depth, worst.point);
  EXPECT_GT(touching, 8000);
  EXPECT_GT(cores, 3000);
  EXPECT_GT(apart, 5000);
}

// A sphere centred on a sliver triangle (the fuzz finding of issue 9): the
// contact is the radius along the face normal, without EPA.
TEST(TrianglePolytopePenetration, SphereOnSliver) {
  const Vec3 tri[3] = {{0, -10, 0}, {0, 0.5, 0}, {1.4e-5, 0.5, 1.4e-5}};  // the origin on an edge
  const ConvexCore core = Core(ConvexCore::Kind::kPoint, {}, 0, 0, 1.0);
  const PlacedConvex convex(core, Pose{{0, 0, 0}, Quat{}});
  const TriangleConvexDistance g = TriangleConvexGjk(tri, convex, convex.margin(), convex.scale());
  ASSERT_TRUE(g.cores_overlap);
  const TriangleConvexPenetration p = TriangleCoresPenetration(tri, convex, g);
  ASSERT_TRUE(p.valid);
  EXPECT_EQ(p.failure, 0);
  EXPECT_NEAR(p.depth, 1.0, 1e-12);
  const Vec3 face = Cross(tri[1] - tri[0], tri[2] - tri[0]).Normalized();
  EXPECT_NEAR(std::fabs(Dot(p.normal, face)), 1.0, 1e-12);
}

// Edges ~1e-162 long (a sliver mesh the geometry fuzzer built) have a cross
// product whose squares are subnormal: its axis is still a unit vector
// (was 0.9992 long: regress-tiny-sat-cross-axis, a sphere's contact normal).
TEST(SatCrossAxis, TinyEdgesGiveAUnitAxis) {
  Random rng(5);
  for (int i = 0; i < 1000; ++i) {
    const double s = std::pow(10.0, rng.Uniform(-165, -150));
    const Vec3 a = Vec3{rng.Uniform(-1, 1), rng.Uniform(-1, 1), rng.Uniform(-1, 1)} * s;
    const Vec3 b{rng.Uniform(-1, 1) * s, rng.Uniform(1, 200), rng.Uniform(-1, 1) * s};
    Vec3 axis;
    if (!internal::SatCrossAxis(a, b, &axis)) continue;
    ASSERT_NEAR(axis.Length(), 1.0, 1e-12) << i << " " << ToString(a) << " " << ToString(b);
  }
}

// A degenerate (zero-area) triangle has no normal: not valid, so the caller
// falls back to EPA instead of answering a made-up contact.
TEST(TrianglePolytopePenetration, DegenerateTriangleIsNotValid) {
  const Vec3 tri[3] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}};
  TrianglePolytopeCore core;
  EXPECT_FALSE(TrianglePolytopePenetration(tri, core, 1.0).valid);
}

/// The mesh of the slow fuzz input (fuzz/corpus/geometry/regress-slow-mesh-contact):
/// a 37 x 37 grid of 3.90625e-7 m quads with heights 0.5, -10 and 0, so 2738
/// steep slivers (10.5 m tall, < 1.5e-5 m wide) next to the origin.
testing::MeshData SliverGrid() {
  testing::MeshData m;
  const double h[4] = {0.5, -10.0, 0.0, 0.5};
  const uint32_t n = 37;
  for (uint32_t i = 0; i <= n; ++i) {
    for (uint32_t j = 0; j <= n; ++j) m.vertices.push_back({i * 3.90625e-7, h[(i * 7 + j * 3) % 4], j * 3.90625e-7});
  }
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t a = i * (n + 1) + j, b = a + 1, c = a + n + 1, d = c + 1;
      if (((i + j) * 31 + 4) & 4) {
        m.triangles.push_back({a, b, d});
        m.triangles.push_back({a, d, c});
      } else {
        m.triangles.push_back({a, b, c});
        m.triangles.push_back({b, d, c});
      }
    }
  }
  return m;
}

// EPA on a curved core against slivers (the slow fuzz input's geometry with a
// unit cylinder through it): every contact is a separating move within 0.1%
// of the shortest (the radius along the sliver's normal), though most calls
// end capped (kTriangleEpaMax*: ~0.1M instructions a call, 1.25M before).
TEST(TriangleConvexEpa, CylinderOnSliversSeparatesNearTheShortest) {
  auto built = TriangleMesh::Build(SliverGrid().vertices, SliverGrid().triangles);
  ASSERT_TRUE(built.ok());
  const TriangleMesh& mesh = *built;
  ASSERT_EQ(mesh.triangle_count(), 2738u);
  const ConvexCore core = Core(ConvexCore::Kind::kCylinder, {}, 1.0, 1.0, 0.0);
  int contacts = 0;
  for (const Quat& q : {Quat{}, Quat::FromAxisAngle({0, 0, 1}, 0.3), Quat::FromAxisAngle({1, 0, 1}, 1.1)}) {
    const PlacedConvex convex(core, Pose{{0, 0, 0}, q});
    for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
      Vec3 v[3];
      mesh.TriangleVertices(k, v);
      const TriangleConvexDistance g = TriangleConvexGjk(v, convex, 0.0, convex.scale());
      if (!g.cores_overlap) continue;
      const TriangleConvexPenetration e = TriangleCoresPenetration(v, convex, g);
      if (!e.valid) continue;  // no tetrahedron: the caller's face-normal answer
      ++contacts;
      // The cylinder's extent along the sliver's normal, within the sliver's width.
      const Vec3 face = Cross(v[1] - v[0], v[2] - v[0]).Normalized();
      const Vec3 rim = convex(face);
      const double shortest = std::fabs(Dot(rim, face));
      EXPECT_LE(e.depth, shortest * 1.001 + 2e-5) << k;
      const PlacedConvex moved(core, Pose{e.normal * (e.depth + 1e-7), q});
      const TriangleConvexDistance gm = TriangleConvexGjk(v, moved, 0.0, moved.scale());
      EXPECT_FALSE(gm.cores_overlap) << k;
      EXPECT_GT(gm.distance, 0.0) << k;
    }
  }
  std::printf("%d cylinder contacts on slivers\n", contacts);
  EXPECT_GT(contacts, 3000);
}

// TriangleConvexEpa's stop_below (SurfaceDeepestContactConvex's skip of
// triangles shallower than the deepest contact so far): EPA from GJK's
// tetrahedron on cylinders and hulls (random triangles, a quarter slivers,
// and the sliver grid where EPA mostly ends capped) stops only when its
// full answer is below the threshold, and otherwise gives that answer field
// for field. Thresholds around the full depth, within 1e-9 of it on a few.
TEST(TriangleConvexEpa, StopsOnlyBelowTheDepth) {
  Random rng(91);
  const std::vector<Shape> hulls = RandomHulls(&rng);
  auto built = TriangleMesh::Build(SliverGrid().vertices, SliverGrid().triangles);
  ASSERT_TRUE(built.ok());
  const TriangleMesh& slivers = *built;
  int stopped = 0, full = 0, close = 0;
  for (int i = 0; i < 12000; ++i) {
    Vec3 tri[3];
    const bool on_grid = i % 6 == 5;
    if (on_grid) {
      slivers.TriangleVertices(static_cast<uint32_t>(rng.Int(0, 2737)), tri);
    } else {
      RandomTriangle(rng, i, tri);
    }
    const ConvexCore core =
        i % 2 == 0 ? Core(ConvexCore::Kind::kCylinder, {}, rng.Uniform(0.05, 1.0),
                          rng.Uniform(0.05, 1.0), i % 4 == 0 ? 0.0 : rng.Uniform(0.0, 0.1))
                   : internal::CoreOf(hulls[i % hulls.size()]);
    double l0 = rng.Uniform(0, 1), l1 = rng.Uniform(0, 1);
    if (l0 + l1 > 1.0) l0 = 1.0 - l0, l1 = 1.0 - l1;
    const Vec3 on = tri[0] + (tri[1] - tri[0]) * l0 + (tri[2] - tri[0]) * l1;
    const PlacedConvex convex(core, Pose{on + rng.InBox(on_grid ? 0.3 : 0.8), rng.Rotation()});
    const TriangleConvexDistance g =
        TriangleConvexGjk(tri, convex, convex.margin(), convex.scale());
    if (!g.cores_overlap || g.tetrahedron != 4) continue;
    const TriangleConvexPenetration want = TriangleConvexEpa(
        tri, convex, convex.margin(), convex.scale(), g, TriangleEpaStart::kTetrahedronOnly);
    if (!want.valid) continue;
    const double below = i % 10 == 0 ? want.depth + rng.Uniform(-1e-9, 1e-9)
                                     : want.depth * rng.Uniform(0.5, 1.5);
    if (std::fabs(below - want.depth) <= 1e-9) ++close;
    const TriangleConvexPenetration got =
        TriangleConvexEpa(tri, convex, convex.margin(), convex.scale(), g,
                          TriangleEpaStart::kTetrahedronOnly, below);
    if (got.failure == 6) {
      ++stopped;
      EXPECT_FALSE(got.valid) << i;
      EXPECT_LT(want.depth, below) << i << " " << want.depth - below << " failure "
                                   << want.failure << (on_grid ? " (sliver grid)" : "");
      continue;
    }
    ++full;
    EXPECT_EQ(got.valid, want.valid) << i;
    EXPECT_EQ(got.failure, want.failure) << i;
    EXPECT_EQ(got.depth, want.depth) << i;
    EXPECT_EQ(got.normal, want.normal) << i;
    EXPECT_EQ(got.point_on_convex, want.point_on_convex) << i;
    EXPECT_EQ(got.point_on_triangle, want.point_on_triangle) << i;
  }
  std::printf("%d stopped below the threshold, %d full answers (%d thresholds within 1e-9)\n",
              stopped, full, close);
  EXPECT_GT(stopped, 1000);
  EXPECT_GT(full, 1000);
}

// The contact queries of the fuzz input: cylinders 43 km wide around the
// sliver mesh, 61 km from the origin. Answers come quickly (EPA capped) and
// moving the cylinder out by the depth (+1e-9 of the scale) separates it.
TEST(TriangleConvexEpa, HugeCylindersAroundSliversSeparate) {
  TriangleMeshShape ms;
  const testing::MeshData grid = SliverGrid();
  ms.vertices = grid.vertices;
  for (const auto& t : grid.triangles) ms.triangles.push_back({t[0], t[1], t[2]});
  const Result<Shape> mesh = Shape::Make(ms);
  ASSERT_TRUE(mesh.ok());
  const Pose target{{43167.96875, 43167.96875, 43167.96875},
                    Quat{0.54657990386658772, 0.54657990386658772, 0.54657990386658772, 0.3221043713884913}};
  const Shape probes[2] = {*Shape::MakeCylinder(43167.96875, 43167.96875),
                           *Shape::MakeCylinder(43167.96875, 43507.8125)};
  const Pose poses[2] = {
      Pose{{0x1.513ffp+15, 0x1.513ffp+15, 0x1.53e7ap+15},
           Quat{0x1.56be55fc5c906p-1, 0x1.56be55fc5c906p-1, 0x1.47f1abbf35117p-12, 0x1.49d5ba740c805p-2}},
      Pose{{0x1.513ffp+15, 0x1.513ffp+15, 0x1.513ffp+15},
           Quat{-0x1.21a18501114b4p-13, -0x1.21a18501114b4p-13, 0x1.b7b4f6506bc6cp-35, 0x1.ffffff5c28f5dp-1}}};
  for (int i = 0; i < 2; ++i) {
    Contact c;
    ASSERT_TRUE(ComputeContact(probes[i], poses[i], *mesh, target, &c));
    EXPECT_TRUE(std::isfinite(c.depth));
    EXPECT_GT(c.depth, 0.0);
    EXPECT_NEAR(c.normal.Length(), 1.0, 1e-9);
    // Contact::normal moves B (the mesh) away from A: move A the other way.
    const Pose out{poses[i].position - c.normal * (c.depth + 1e-4), poses[i].rotation};
    EXPECT_FALSE(Overlap(probes[i], out, *mesh, target)) << i;
  }
}

namespace sweep_box_sat {

/// The closed-form box sweep against the GJK cast on one case: kApart only
/// where the cast misses; kHit where the cast hits, started_inside alike.
/// The fractions agree within 2e-7 m of approach along the normal (the
/// cast declares contact within kSweepStallGap when it stalls, so a
/// near-tangent motion may stop it earlier); at the same moment (1e-8 m of
/// travel apart) normals within 1e-3 (the cast's direction at a gap of
/// ~1e-9 m carries ~1e-7 of rounding, more for nearly parallel edges; a
/// wrong feature or active-edge choice is far off). Every closed-form hit
/// touches at its fraction (the box grown by 1e-7) and is apart 1e-6 m of
/// approach before it; its point is on the triangle and on the box's
/// surface; its normal never points along the motion.
struct Tally {
  int apart = 0, hit = 0, same_moment = 0, started = 0, undecided = 0, gjk_hits = 0;
  int cast_on_face = 0;
};

void Compare(const Vec3 tri[3], const ConvexCore& core, const Pose& pose, const Vec3& v,
             double t_max, uint8_t active, Tally* tally, const char* what, int i) {
  const PlacedConvex q(core, pose);
  const double scale = q.scale() + v.Length();
  ASSERT_NE(q.oriented_box(), nullptr);
  const SweepSatResult sat = SweepBoxSat(tri, *q.oriented_box(), q.margin(), v, t_max, scale, active);
  const CastResult gjk = SweepConvexTriangle(tri, q, q.margin(), v, t_max, scale, active);
  tally->gjk_hits += gjk.hit() ? 1 : 0;
  const std::string where = std::string(what) + " " + std::to_string(i);
  switch (sat.state) {
    case SweepSatResult::State::kApart:
      ++tally->apart;
      EXPECT_FALSE(gjk.hit()) << where << " t " << gjk.fraction << " capped "
                              << (gjk.state == CastState::kFailed);
      return;
    case SweepSatResult::State::kUndecided: ++tally->undecided; return;
    case SweepSatResult::State::kHit: break;
  }
  const CastResult& s = sat.hit;
  ASSERT_TRUE(gjk.hit()) << where << " sat t " << s.fraction;
  EXPECT_EQ((s.state == CastState::kStartedOverlapping),
            (gjk.state == CastState::kStartedOverlapping))
      << where << " " << s.fraction << " " << gjk.fraction;
  EXPECT_NEAR(s.normal.Length(), 1.0, 1e-12) << where;
  if (s.state == CastState::kStartedOverlapping) {
    ++tally->started;
    EXPECT_EQ(s.fraction, 0.0);
    // The cast's started-inside normal: the face normal against the motion.
    EXPECT_TRUE(VecNear(s.normal, gjk.normal, 1e-9)) << where;
    return;
  }
  ++tally->hit;
  const double len = v.Length();
  const double approach = std::max(-Dot(s.normal, v), -Dot(gjk.normal, v));
  EXPECT_LE(std::fabs(s.fraction - gjk.fraction) * approach, 2e-7)
      << where << " " << s.fraction << " " << gjk.fraction;
  EXPECT_LE(Dot(s.normal, v), 0.0) << where;
  const Vec3 face = Cross(tri[1] - tri[0], tri[2] - tri[0]).Normalized();
  // Touching at s.fraction (grown by 1e-7), apart 1e-6 m of approach before.
  ConvexCore grown = core;
  grown.margin += 1e-7;
  const PlacedConvex at(grown, Pose{pose.position + v * s.fraction, pose.rotation});
  EXPECT_LE(TriangleConvexGjk(tri, at, at.margin(), at.scale()).distance, 0.0) << where;
  // (The face normal of an inactive edge may lie across the motion.)
  const double closing = -Dot(s.normal, v);
  const double before = closing > 0.0 ? s.fraction - 1e-6 / closing : -1.0;
  if (before > 0.0) {
    const PlacedConvex early(core, Pose{pose.position + v * before, pose.rotation});
    EXPECT_GT(TriangleConvexGjk(tri, early, early.margin(), early.scale()).distance, 0.0)
        << where;
  }
  // The point: on the triangle and on the box's surface at s.fraction (the cast's
  // own point: SweepConvexTriangle.PointOnTriangleAndConvex).
  // (In the plane and the triangle's bounds: ClosestPointOnTriangle itself
  // rounds by ~1e-6 on the slivers.)
  EXPECT_LE(std::fabs(Dot(face, s.point - tri[0])), 1e-9) << where;
  EXPECT_TRUE(Aabb().Union(tri[0]).Union(tri[1]).Union(tri[2]).Expanded(1e-9).Contains(s.point))
      << where;
  const OrientedBox& box = *q.oriented_box();
  const Vec3 rel = s.point - (box.center + v * s.fraction);
  double outside = -1e9;
  for (int k = 0; k < 3; ++k) {
    outside = std::max(outside, std::fabs(Dot(rel, box.axis[k])) - box.half[k]);
  }
  EXPECT_LE(std::fabs(outside), 1e-7) << where << " " << ToString(s.point);
  if (std::fabs(s.fraction - gjk.fraction) * len > 1e-8) return;
  ++tally->same_moment;
  // On an active edge the cast's fallback (conservative advancement) can
  // find the cores overlapping at the contact by rounding (GJK's
  // tetrahedron at a gap of ~1e-9 m) and then reports the face normal
  // against the motion; the closed form keeps the active edge's normal.
  // Allowed where the point is within 1e-9 of an active edge and the cast's
  // normal is the face normal.
  bool on_active_edge = false;
  for (int e = 0; e < 3; ++e) {
    if (!((active >> e) & 1u)) continue;
    const Vec3 a = tri[e], ab = tri[(e + 1) % 3] - tri[e];
    const double u = std::clamp(Dot(s.point - a, ab) / ab.LengthSq(), 0.0, 1.0);
    on_active_edge = on_active_edge || (a + ab * u - s.point).Length() <= 1e-9;
  }
  if (on_active_edge && std::fabs(std::fabs(Dot(gjk.normal, face)) - 1.0) <= 1e-12 &&
      !VecNear(s.normal, gjk.normal, 1e-3)) {
    ++tally->cast_on_face;
    return;
  }
  EXPECT_TRUE(VecNear(s.normal, gjk.normal, 1e-3))
      << where << " " << ToString(s.normal) << " vs " << ToString(gjk.normal);
}

ConvexCore RandomBox(Random& rng) {
  return Core(ConvexCore::Kind::kBox,
              {rng.Uniform(0.05, 1.0), rng.Uniform(0.05, 1.0), rng.Uniform(0.05, 1.0)}, 0, 0, 0);
}

}  // namespace sweep_box_sat

// The box sweep's separating axes (SweepBoxSat) against the GJK cast
// (SweepConvexTriangle) on seeded random boxes, triangles (slivers among
// them), motions and active-edge flags; then from each cast's contact:
// starting there (touching), a hair before or after it along the normal,
// sliding along the contact plane (grazing), and starting inside; and flat
// floors with upright boxes (parallel faces, ties). Culls never drop a hit;
// closed-form answers are the cast's.
TEST(SweepBoxSat, MatchesGjkCast) {
  using namespace sweep_box_sat;
  Random rng(1010);
  Tally tally;
  for (int i = 0; i < 12000; ++i) {
    Vec3 tri[3];
    RandomTriangle(rng, i, tri);
    const ConvexCore core = RandomBox(rng);
    const Quat rot = rng.Rotation();
    const Vec3 c = rng.InBox(3.0);
    const Vec3 v = rng.UnitVector() * rng.Uniform(0.5, 6.0);
    const uint8_t active = static_cast<uint8_t>(rng.Int(0, 7));
    const double t_max = i % 3 == 0 ? rng.Uniform(0.2, 1.0) : 1.0;
    Compare(tri, core, Pose{c, rot}, v, t_max, active, &tally, "random", i);
    // Derived cases from the cast's contact.
    const PlacedConvex q(core, Pose{c, rot});
    const CastResult g = SweepConvexTriangle(tri, q, 0.0, v, 1.0, q.scale() + v.Length(), active);
    if (!g.hit() || (g.state == CastState::kStartedOverlapping)) continue;
    const Vec3 at = c + v * g.fraction;
    const Vec3 n = g.normal;
    Vec3 side = Cross(n, rng.UnitVector());
    if (side.LengthSq() < 1e-6) continue;
    side = side.Normalized() * rng.Uniform(0.1, 3.0);
    Compare(tri, core, Pose{at, rot}, v, 1.0, active, &tally, "touching", i);
    Compare(tri, core, Pose{at, rot}, side, 1.0, active, &tally, "sliding", i);
    for (const double off : {-1e-6, -1e-8, 1e-8, 1e-6, 1e-4}) {
      Compare(tri, core, Pose{at + n * off, rot}, side, 1.0, active, &tally, "grazing", i);
      Compare(tri, core, Pose{at + n * off, rot}, v * 0.5, 1.0, active, &tally, "near", i);
    }
    Compare(tri, core, Pose{at + v * 0.05, rot}, v, 1.0, active, &tally, "inside", i);
    Compare(tri, core, Pose{at + v * 0.05, rot}, Vec3{}, 1.0, active, &tally, "still", i);
  }
  // Flat floor triangles and upright boxes turned about Y: face-face contacts.
  for (int i = 0; i < 1500; ++i) {
    const Vec3 tri[3] = {{0, 0, 0}, {2, 0, 0}, {0, 0, 2}};
    const ConvexCore core = RandomBox(rng);
    const Quat rot = Quat::FromAxisAngle({0, 1, 0}, rng.Uniform(0, 6.3));
    const Vec3 c{rng.Uniform(-0.5, 1.5), core.half_extents.y + rng.Uniform(1e-6, 1e-2),
                 rng.Uniform(-0.5, 1.5)};
    const Vec3 v{rng.Uniform(-1, 1), -rng.Uniform(0.0, 0.05), rng.Uniform(-1, 1)};
    Compare(tri, core, Pose{c, rot}, v, 1.0, static_cast<uint8_t>(rng.Int(0, 7)), &tally, "floor", i);
  }
  std::printf(
      "apart %d, closed-form hits %d (%d at the cast's moment, %d where the cast rounded onto the "
      "face), started %d, undecided %d (cast hits %d)\n",
      tally.apart, tally.hit, tally.same_moment, tally.cast_on_face, tally.started,
      tally.undecided, tally.gjk_hits);
  EXPECT_LT(tally.cast_on_face * 50, tally.same_moment);
  EXPECT_GT(tally.apart, 3000);
  EXPECT_GT(tally.same_moment, 1000);
  EXPECT_GT(tally.started, 1000);
}

// A closed-form box sweep answers the same, to the bit, whatever the limit
// t_max at or past its fraction (a mesh sweep lowers the limit as it finds
// hits, in an order of its own), and is not kHit for a limit below it.
TEST(SweepBoxSat, AnswerDoesNotDependOnTheLimit) {
  using namespace sweep_box_sat;
  Random rng(2020);
  int checked = 0;
  for (int i = 0; i < 20000; ++i) {
    Vec3 tri[3];
    RandomTriangle(rng, i, tri);
    const ConvexCore core = RandomBox(rng);
    const PlacedConvex q(core, Pose{rng.InBox(3.0), rng.Rotation()});
    const Vec3 v = rng.UnitVector() * rng.Uniform(0.5, 6.0);
    const uint8_t active = static_cast<uint8_t>(rng.Int(0, 7));
    const double scale = q.scale() + v.Length();
    const SweepSatResult full = SweepBoxSat(tri, *q.oriented_box(), q.margin(), v, 1.0, scale, active);
    if (full.state != SweepSatResult::State::kHit || full.hit.fraction == 0.0) continue;
    ++checked;
    const double t = full.hit.fraction;
    for (const double t_max : {t, t + (1.0 - t) * 1e-6, t + (1.0 - t) * rng.Uniform(0.0, 1.0)}) {
      const SweepSatResult r = SweepBoxSat(tri, *q.oriented_box(), q.margin(), v, t_max, scale, active);
      ASSERT_EQ(r.state, SweepSatResult::State::kHit) << i << " t " << t << " t_max " << t_max;
      EXPECT_EQ(r.hit.fraction, t) << i;
      EXPECT_EQ(r.hit.normal, full.hit.normal) << i;
      EXPECT_EQ(r.hit.point, full.hit.point) << i;
    }
    const SweepSatResult below =
        SweepBoxSat(tri, *q.oriented_box(), q.margin(), v, t * 0.999, scale, active);
    EXPECT_NE(below.state, SweepSatResult::State::kHit) << i;
  }
  std::printf("closed-form hits checked %d\n", checked);
  EXPECT_GT(checked, 800);
}

namespace sweep_box_sat_gap {

/// Signed distance of a box core (no margin) and a triangle: the GJK distance
/// when apart; when they overlap, less the least penetration over the 13
/// separating axes (exact for polytopes).
double BoxCoreTriangleGap(const Vec3 tri[3], const ConvexCore& core, const Pose& pose,
                          double scale) {
  const Mat33 m = pose.rotation.ToMatrix();
  const Vec3 ax[3] = {m.Column(0), m.Column(1), m.Column(2)};
  const Vec3& h = core.half_extents;
  const Vec3 e[3] = {tri[1] - tri[0], tri[2] - tri[1], tri[0] - tri[2]};
  std::vector<Vec3> axes = {Cross(e[0], tri[2] - tri[0]), ax[0], ax[1], ax[2]};
  for (const Vec3& a : ax) {
    for (const Vec3& ej : e) axes.push_back(Cross(a, ej));
  }
  double sat = -std::numeric_limits<double>::infinity();
  for (const Vec3& axis : axes) {
    const double len = axis.Length();
    if (!(len > 1e-12 * scale * scale)) continue;
    const Vec3 n = axis / len;
    const double r = std::fabs(Dot(n, ax[0])) * h.x + std::fabs(Dot(n, ax[1])) * h.y +
                     std::fabs(Dot(n, ax[2])) * h.z;
    const double p0 = Dot(n, tri[0] - pose.position), p1 = Dot(n, tri[1] - pose.position),
                 p2 = Dot(n, tri[2] - pose.position);
    sat = std::max(sat, std::max(std::min(p0, std::min(p1, p2)) - r,
                                 -std::max(p0, std::max(p1, p2)) - r));
  }
  // GJK decides whether they overlap (SAT skips the crosses of parallel
  // edges, which may be the only separating axes).
  ConvexCore bare = core;
  bare.margin = 0.0;
  const PlacedConvex q(bare, pose);
  const TriangleConvexDistance g = TriangleConvexGjk(tri, q, 0.0, scale);
  return g.cores_overlap ? std::min(sat, 0.0) : g.distance;
}

struct Tally {
  int apart = 0, hits = 0, started = 0, undecided = 0;
};

/// SweepBoxSat on one case against the signed distance along the path
/// (SweepAgreesWithGap): kApart a miss, kHit a first contact, kUndecided
/// claims nothing. A hit's normal is a unit vector not along the motion,
/// its point on the triangle's plane.
void CheckAgainstGap(const Vec3 tri[3], const ConvexCore& core, const Pose& pose, const Vec3& v,
                     double t_max, uint8_t active, int i, Tally* tally) {
  const PlacedConvex q(core, pose);
  const OrientedBox& box = *q.oriented_box();
  const double scale = 10.0 * (box.half.x + box.half.y + box.half.z + core.margin) +
                       box.center.Length() + v.Length();
  const SweepSatResult got = SweepBoxSat(tri, box, core.margin, v, t_max, scale, active);
  if (got.state == SweepSatResult::State::kUndecided) {
    ++tally->undecided;
    return;
  }
  const double size = box.half.Length() + core.margin + v.Length() + (tri[1] - tri[0]).Length() +
                      (tri[2] - tri[0]).Length();
  const double tol = 1e-9 + 1e-9 * size + 1e-12 * box.center.Length();
  auto gap = [&](double f) {
    return BoxCoreTriangleGap(tri, core, Pose{pose.position + v * f, pose.rotation}, scale) -
           core.margin;
  };
  const bool hit = got.state == SweepSatResult::State::kHit;
  EXPECT_TRUE(SweepAgreesWithGap(gap, t_max, v.Length(), tol, hit,
                                 hit && got.hit.state == CastState::kStartedOverlapping,
                                 got.hit.fraction))
      << "case " << i;
  if (!hit) {
    ++tally->apart;
    return;
  }
  ++(got.hit.state == CastState::kStartedOverlapping ? tally->started : tally->hits);
  EXPECT_NEAR(got.hit.normal.Length(), 1.0, 1e-9) << "case " << i;
  if (got.hit.state == CastState::kStartedOverlapping) return;
  EXPECT_LE(Dot(got.hit.normal, v), 1e-9 * v.Length()) << "case " << i;
  const Vec3 face = Cross(tri[1] - tri[0], tri[2] - tri[0]).Normalized();
  EXPECT_LE(std::fabs(Dot(face, got.hit.point - tri[0])), tol) << "case " << i;
}

}  // namespace sweep_box_sat_gap

// SweepBoxSat against the signed distance along the path on seeded boxes
// (1 mm to 1 km, some 20 km from the origin, some axis-aligned so the box's
// frame has exact zeros, some rounded) and triangles (slivers among them),
// random motions and motions along an axis or none; then touching at,
// grazing past and starting inside from each closed-form hit.
TEST(SweepBoxSat, MatchesTheDistanceAtAnyScale) {
  using namespace sweep_box_sat_gap;
  Random rng(3030);
  Tally tally;
  for (int i = 0; i < 4000; ++i) {
    const double s = std::pow(10.0, rng.Uniform(-3.0, 3.0));
    const Vec3 origin = i % 3 == 0 ? rng.UnitVector() * 2e4 : Vec3{};
    Vec3 tri[3];
    RandomScaledTriangle(rng, i, origin, s, tri);
    const Quat rot = i % 4 == 1   ? Quat{}
                     : i % 4 == 2 ? Quat::FromAxisAngle({0, 1, 0}, rng.Uniform(0.0, 6.3))
                                  : rng.Rotation();
    const Vec3 half =
        Vec3{rng.Uniform(0.05, 1.0), rng.Uniform(0.05, 1.0), rng.Uniform(0.05, 1.0)} * s;
    const double margin = i % 2 == 0 ? 0.0 : s * rng.Uniform(0.0, 0.1);
    const ConvexCore core = Core(ConvexCore::Kind::kBox, half, 0, 0, margin);
    const Pose pose{origin + rng.InBox(3.0) * s, rot};
    Vec3 v = rng.UnitVector() * (s * rng.Uniform(0.5, 6.0));
    if (i % 7 == 0) v = Vec3{0, -s * rng.Uniform(0.5, 6.0), 0};
    if (i % 13 == 0) v = Vec3{};
    const uint8_t active = static_cast<uint8_t>(rng.Int(0, 7));
    const double t_max = i % 3 == 0 ? rng.Uniform(0.2, 1.0) : 1.0;
    CheckAgainstGap(tri, core, pose, v, t_max, active, i, &tally);
    const PlacedConvex q(core, pose);
    const SweepSatResult first = SweepBoxSat(tri, *q.oriented_box(), margin, v, 1.0, s, active);
    if (first.state != SweepSatResult::State::kHit ||
        first.hit.state == CastState::kStartedOverlapping) {
      continue;
    }
    const Vec3 n = first.hit.normal;
    const Vec3 side = Cross(n, rng.UnitVector()).Normalized() * s;
    for (const double off : {0.0, -1e-7, 1e-7, 1e-4}) {
      const Pose at{pose.position + v * first.hit.fraction + n * (off * s), rot};
      CheckAgainstGap(tri, core, at, v, 1.0, active, i, &tally);
      CheckAgainstGap(tri, core, at, side, 1.0, active, i, &tally);
    }
    const Pose inside{pose.position + v * std::min(1.0, first.hit.fraction + 0.05), rot};
    CheckAgainstGap(tri, core, inside, v, 1.0, active, i, &tally);
    if (HasFailure()) return;
  }
  std::printf("apart %d, hits %d, started inside %d, undecided %d\n", tally.apart, tally.hits,
              tally.started, tally.undecided);
  EXPECT_GT(tally.hits, 300);
  EXPECT_GT(tally.started, 300);
  EXPECT_GT(tally.apart, 1000);
}

namespace triangle_epa_check {

// How far the convex must move along unit `n` to clear the triangle along n:
// the triangle's support less the convex's least extent (margin included).
// The penetration depth is the least of it over all directions.
double SeparatingMove(const Vec3 tri[3], const PlacedConvex& convex, const Vec3& n) {
  const double top = std::max(Dot(tri[0], n), std::max(Dot(tri[1], n), Dot(tri[2], n)));
  return top - (Dot(convex(-n), n) - convex.margin());
}

// Two EPA answers of case i, start s, that must agree to the bit (`how`
// names the variant): validity and failure first (fatal), then every field.
void ExpectSameBits(const TriangleConvexPenetration& a, const TriangleConvexPenetration& b, int i,
                    int s, const char* how) {
  ASSERT_EQ(a.valid, b.valid) << i << " start " << s << " (" << how << ")";
  ASSERT_EQ(a.failure, b.failure) << i << " start " << s << " (" << how << ")";
  EXPECT_EQ(a.depth, b.depth) << i << " start " << s << " (" << how << ")";
  EXPECT_EQ(a.normal, b.normal) << i << " start " << s << " (" << how << ")";
  EXPECT_EQ(a.point_on_convex, b.point_on_convex) << i << " start " << s << " (" << how << ")";
  EXPECT_EQ(a.point_on_triangle, b.point_on_triangle) << i << " start " << s << " (" << how << ")";
}

// One EPA answer against the support functions: its normal is a unit vector;
// moving the convex out by depth along it clears the triangle (within
// `tol`); for a converged answer (failure 0) GJK still finds them
// overlapping at a move `slack` shorter, and no move along 256 directions
// (random, near its normal, the triangle's normals) is `slack` shorter. The
// fallback answers (failures 2 to 5), and a negative slack, check only the
// separating move.
::testing::AssertionResult CheckPenetration(const Vec3 tri[3], const PlacedConvex& convex,
                                            const TriangleConvexPenetration& got, double tol,
                                            double slack, Random& rng) {
  auto fail = [&](const char* what, double value) {
    return ::testing::AssertionFailure() << what << " " << value << " (depth " << got.depth
                                         << ", failure " << got.failure << ", tol " << tol << ")";
  };
  if (!(std::fabs(got.normal.Length() - 1.0) <= 1e-9)) {
    return fail("normal length", got.normal.Length());
  }
  const double along = SeparatingMove(tri, convex, got.normal);
  if (!(along <= got.depth + tol)) return fail("not clear after the move: needs", along);
  if (got.failure != 0 || slack < 0.0) return ::testing::AssertionSuccess();
  const double shorter = got.depth - tol - slack;
  if (shorter > 0.0) {
    const Vec3 shift = got.normal * shorter;
    auto moved = [&](const Vec3& dir) { return convex(dir) + shift; };
    const TriangleConvexDistance d = TriangleConvexGjk(tri, moved, convex.margin(), convex.scale());
    if (!(d.distance_lower <= 0.0)) return fail("apart before the full move: gap", d.distance_lower);
  }
  if (!(got.depth <= along + tol)) return fail("deeper than its own direction needs", along);
  const Vec3 face = Cross(tri[1] - tri[0], tri[2] - tri[0]).Normalized();
  for (int k = 0; k < 256; ++k) {
    Vec3 n = k == 0 ? face : k == 1 ? -face : rng.UnitVector();
    if (k >= 128) n = (got.normal + rng.UnitVector() * std::pow(10.0, rng.Uniform(-6.0, -1.0)))
                          .Normalized();
    const double move = SeparatingMove(tri, convex, n);
    if (!(got.depth <= move + tol + slack)) return fail("a shorter move along a direction:", move);
  }
  return ::testing::AssertionSuccess();
}

// TriangleConvexEpa on one input from every start (and for the tetrahedron
// with a stop threshold near the depth) against CheckPenetration; a stopped
// call (failure 6) only where the unstopped depth is below its threshold;
// the caller's prism supports change nothing. Counts answers by failure.
// `slack`: the shortest move's accuracy relative to the depth; negative:
// none (on a curved core EPA may stop at its caps on its best face, which
// failure 0 does not tell apart: a separating move, perhaps longer).
void CheckEpa(const Vec3 tri[3], const PlacedConvex& convex, double slack, Random& rng, int i,
              int counts[8]) {
  const TriangleConvexDistance g = TriangleConvexGjk(tri, convex, convex.margin(), convex.scale());
  const double tol = 1e-7 * convex.scale();
  for (int s = 0; s < 4; ++s) {
    const TriangleEpaStart start = s == 0   ? TriangleEpaStart::kPrismOrTetrahedron
                                   : s == 1 ? TriangleEpaStart::kPrismOnly
                                            : TriangleEpaStart::kTetrahedronOnly;
    const TriangleConvexPenetration full =
        TriangleConvexEpa(tri, convex, convex.margin(), convex.scale(), g, start);
    if (full.valid) {
      ++counts[full.failure];
      EXPECT_TRUE(CheckPenetration(tri, convex, full, tol, slack * full.depth, rng))
          << i << " start " << s;
    }
    // The inner axis worked out first (a finite stop_below reads it at
    // once, this one never stops) or only when the fallback reads it: the
    // same answer, bit for bit.
    const TriangleConvexPenetration eager =
        TriangleConvexEpa(tri, convex, convex.margin(), convex.scale(), g, start,
                          -std::numeric_limits<double>::max());
    ExpectSameBits(eager, full, i, s, "inner axis first");
    if (::testing::Test::HasFatalFailure()) return;
    double below = -std::numeric_limits<double>::infinity();
    if (s == 3) below = full.valid ? full.depth * rng.Uniform(0.7, 1.3) : rng.Uniform(0.0, 1.0);
    const TriangleConvexPenetration got =
        s == 3 ? TriangleConvexEpa(tri, convex, convex.margin(), convex.scale(), g, start, below)
               : full;
    if (s == 3 && got.failure == 6) {
      ++counts[6];
      EXPECT_FALSE(got.valid);
      if (full.valid && full.failure == 0) {
        EXPECT_LT(full.depth, below + tol) << i;
      }
    } else if (s == 3) {
      EXPECT_EQ(got.valid, full.valid) << i;
      if (got.valid && got.failure == 0) {
        EXPECT_GE(got.depth, below - tol) << i;
      }
    }
    // The prism's supports given by the caller (SurfaceDeepestContactConvex's
    // candidates have them from their bound): the same answer, bit for bit.
    const Vec3 cross = Cross(tri[1] - tri[0], tri[2] - tri[0]);
    if (start == TriangleEpaStart::kTetrahedronOnly || !(cross.Length() > 1e-150)) continue;
    const Vec3 n = cross / cross.Length();
    const Vec3 supports[2] = {convex(-n), convex(n)};
    const TriangleConvexPenetration given = TriangleConvexEpa(
        tri, convex, convex.margin(), convex.scale(), g, start, below, supports);
    ExpectSameBits(given, got, i, s, "supports given");
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace triangle_epa_check

// TriangleConvexEpa against the support functions (CheckEpa): every answer
// clears the triangle by its move and no shorter move along it does; a
// converged one is the shortest found; from every start and with a stop
// threshold, on cylinders and hulls (and boxes and capsules, which take the
// same code) 1 mm to 1 km, some 20 km from the origin, some axis-aligned,
// against random triangles (a quarter slivers), floors and the sliver grid
// (where EPA mostly ends capped or stalled); a tenth with the core's deepest
// point 1e-13 to 1e-5 inside or outside an edge (the prism's side faces).
TEST(TriangleConvexEpa, DepthIsTheShortestSeparatingMove) {
  using namespace triangle_epa_check;
  Random rng(4040);
  const std::vector<Shape> hulls = RandomHulls(&rng);
  auto built = TriangleMesh::Build(SliverGrid().vertices, SliverGrid().triangles);
  ASSERT_TRUE(built.ok());
  const TriangleMesh& slivers = *built;
  int counts[8] = {};
  for (int i = 0; i < 12000; ++i) {
    const bool on_grid = i % 6 == 5;
    const bool hull = i % 8 >= 3 && i % 8 < 6;  // a hull's own size, 0.1 to 1.4
    const double s = on_grid || hull ? 1.0 : std::pow(10.0, rng.Uniform(-3.0, 3.0));
    const Vec3 origin = !on_grid && i % 3 == 0 ? rng.UnitVector() * 2e4 : Vec3{};
    Vec3 tri[3];
    if (on_grid) {
      slivers.TriangleVertices(static_cast<uint32_t>(rng.Int(0, 2737)), tri);
    } else {
      RandomScaledTriangle(rng, i, origin, s, tri);
    }
    ConvexCore core;
    if (hull) {
      core = internal::CoreOf(hulls[i % hulls.size()]);
    } else if (i % 8 < 3) {
      core = Core(ConvexCore::Kind::kCylinder, {}, rng.Uniform(0.05, 1.0) * s,
                  rng.Uniform(0.05, 1.0) * s, i % 4 == 0 ? 0.0 : rng.Uniform(0.0, 0.1) * s);
    } else {
      core = RandomPolytopeCore(rng, 1 + i % 2);
      core.half_extents = core.half_extents * s;
      core.half_height *= s;
      core.margin *= s;
    }
    double l0 = rng.Uniform(0, 1), l1 = rng.Uniform(0, 1);
    if (l0 + l1 > 1.0) l0 = 1.0 - l0, l1 = 1.0 - l1;
    const Vec3 on = tri[0] + (tri[1] - tri[0]) * l0 + (tri[2] - tri[0]) * l1;
    const Quat rot = i % 7 == 1   ? Quat{}
                     : i % 7 == 2 ? Quat::FromAxisAngle({0, 1, 0}, rng.Uniform(0.0, 6.3))
                                  : rng.Rotation();
    Pose pose{on + rng.InBox(on_grid ? 0.3 : 0.8 * s), rot};
    if (i % 10 == 9) {
      // The core's deepest point along the triangle's normal just inside or
      // outside an edge (the prism's side faces at the origin), below the plane.
      const Vec3 n = Cross(tri[1] - tri[0], tri[2] - tri[0]).Normalized();
      const int e = rng.Int(0, 2);
      const Vec3 a0 = tri[e], a1 = tri[(e + 1) % 3], opposite = tri[(e + 2) % 3];
      const Vec3 at = a0 + (a1 - a0) * rng.Uniform(0.1, 0.9);
      Vec3 out = Cross(a1 - a0, n).Normalized();
      if (Dot(out, opposite - a0) > 0.0) out = -out;
      const double off = (rng.Int(0, 1) == 0 ? 1.0 : -1.0) * std::pow(10.0, rng.Uniform(-13, -5));
      const Vec3 lo = PlacedConvex(core, pose)(-n);
      const Vec3 target = at + out * (off * std::max(s, 1.0)) - n * (rng.Uniform(0.01, 0.3) * s);
      pose.position += target - lo;
    }
    const PlacedConvex convex(core, pose);
    // Polytope cores: the shortest move to the tolerance, within 0.1% on the
    // slivers (as CylinderOnSliversSeparatesNearTheShortest).
    const double slack = i % 8 < 3 ? -1.0 : on_grid ? 1e-3 : 0.0;
    CheckEpa(tri, convex, slack, rng, i, counts);
    if (HasFatalFailure()) return;
  }
  std::printf("valid answers by failure: converged %d, flat %d, breakdown %d, no face %d, "
              "outside %d; stopped %d\n",
              counts[0], counts[2], counts[3], counts[4], counts[5], counts[6]);
  EXPECT_GT(counts[0], 12000);
  EXPECT_GT(counts[6], 1000);
}

namespace cast_point {

/// Distance (metres) from `p` to the convex `core` at `pose` (margin
/// included; 0 inside): GJK of a point against the convex.
double DistanceToConvex(const ConvexCore& core, const Pose& pose, const Vec3& p) {
  ConvexCore point;  // a point core, no margin
  return internal::GjkDistance(core, point, pose.RelativeTo(Pose{p})).distance;
}

/// How far `p` is off triangle `tri` (metres, 0 on it): its distance to the
/// plane, or past an edge within the plane (robust on slivers, unlike the
/// Voronoi regions of ClosestPointOnTriangle).
double OffTriangle(const Vec3 tri[3], const Vec3& p) {
  const Vec3 face = Cross(tri[1] - tri[0], tri[2] - tri[0]).Normalized();
  double off = std::fabs(Dot(face, p - tri[0]));
  for (int e = 0; e < 3; ++e) {
    const Vec3 inward = Cross(face, tri[(e + 1) % 3] - tri[e]).Normalized();
    off = std::max(off, -Dot(inward, p - tri[e]));
  }
  return off;
}

struct Counts {
  int hits = 0, advanced = 0, bad = 0;
};

/// One cast of `shape` at `pose` by `v` against `tri`; for a hit (not
/// started inside), its point must be on the triangle and on the convex's
/// surface at the hit pose. Not inside beyond the cast's gap: the moved
/// convex only touches the triangle, so a point of the triangle within
/// `tol` of it is on its surface within `tol`.
void CheckPoint(const Vec3 tri[3], const Shape& shape, const Pose& pose, const Vec3& v,
                uint8_t active, Counts* counts, int i) {
  const ConvexCore core = internal::CoreOf(shape);
  const PlacedConvex q(core, pose);
  const double scale = q.scale() + v.Length();
  const CastResult s = SweepConvexTriangle(tri, q, q.margin(), v, 1.0, scale, active);
  if (!s.hit() || (s.state == CastState::kStartedOverlapping) || (s.state == CastState::kFailed))
    return;
  ++counts->hits;
  if (s.fraction > 0.0) ++counts->advanced;
  const double tol = 1e-6 * scale;
  const double off_triangle = OffTriangle(tri, s.point);
  const double off_convex =
      DistanceToConvex(core, Pose{pose.position + v * s.fraction, pose.rotation}, s.point);
  const bool ok = off_triangle <= tol && off_convex <= tol;
  counts->bad += ok ? 0 : 1;
  EXPECT_TRUE(ok) << ShapeKindName(shape.kind()) << " " << i << " t " << s.fraction
                  << " off triangle " << off_triangle << " off convex " << off_convex;
}

}  // namespace cast_point

// The GJK cast's contact point (SweepConvexTriangle) on seeded boxes,
// cylinders and hulls against random triangles (slivers among them), with
// motions at random, aimed at the triangle and grazing its plane: every hit's
// point is on the triangle and on the moved convex's surface (1e-6 of the
// scale), after any number of advances.
TEST(SweepConvexTriangle, PointOnTriangleAndConvex) {
  using namespace cast_point;
  Random rng(2024);
  Counts counts;
  const ShapeKind kinds[3] = {ShapeKind::kBox, ShapeKind::kCylinder, ShapeKind::kConvexHull};
  for (int i = 0; i < 20000; ++i) {
    Vec3 tri[3];
    RandomTriangle(rng, i, tri);
    const Shape shape = rng.MakeShape(kinds[i % 3], 0.05, 1.0);
    const Pose pose{rng.InBox(3.0), rng.Rotation()};
    const uint8_t active = static_cast<uint8_t>(rng.Int(0, 7));
    const Vec3 target = tri[0] * 0.2 + tri[1] * 0.3 + tri[2] * 0.5 + rng.InBox(0.5);
    Vec3 v;
    switch (i / 3 % 3) {
      case 0: v = rng.UnitVector() * rng.Uniform(0.5, 6.0); break;
      case 1: v = (target - pose.position) * rng.Uniform(1.0, 2.0); break;
      default: {
        // Mostly along the triangle's plane, slightly into it.
        const Vec3 face = Cross(tri[1] - tri[0], tri[2] - tri[0]).Normalized();
        const Vec3 to = target - pose.position;
        v = (to - face * Dot(face, to)) * rng.Uniform(1.0, 2.0) + face * rng.Uniform(-0.3, 0.3);
        break;
      }
    }
    CheckPoint(tri, shape, pose, v, active, &counts, i);
  }
  std::printf("hits %d (after an advance %d), bad points %d\n", counts.hits, counts.advanced,
              counts.bad);
  EXPECT_GT(counts.advanced, 5000);
}

// The GJK cast (SweepConvexTriangle) of seeded cylinders, hulls and boxes
// against triangles far from the origin (coordinates ~200 m, as in a level's
// meshes: GJK's rounding there, ~1e-14 m, leaves a weighted-sum direction
// ~1e-6 off when |v| is ~1e-9 m), aimed at the triangle's edges and face.
// Every hit converges: not capped (a capped cast reports only a lower bound
// of the time of impact), its point on the triangle (1e-9 m) and on the moved
// convex (kSweepStallGap), whose core does not overlap the triangle.
TEST(SweepConvexTriangle, ConvergesFarFromTheOrigin) {
  using namespace cast_point;
  Random rng(4711);
  int hits = 0, capped = 0, bad = 0;
  const ShapeKind kinds[3] = {ShapeKind::kCylinder, ShapeKind::kConvexHull, ShapeKind::kBox};
  for (int i = 0; i < 6000; ++i) {
    const Vec3 far = Vec3{-207.0, 16.0, -44.0} + rng.InBox(20.0);
    Vec3 tri[3];
    RandomTriangle(rng, i, tri);
    for (Vec3& x : tri) x += far;
    const Shape shape = rng.MakeShape(kinds[i % 3], 0.2, 1.0);
    const Pose pose{far + rng.InBox(3.0), rng.Rotation()};
    const uint8_t active = static_cast<uint8_t>(rng.Int(0, 7));
    // At a random point of an edge (half of them) or of the face.
    const int e = rng.Int(0, 2);
    const double a = rng.Uniform(0.0, 1.0);
    const Vec3 on_edge = tri[e] + (tri[(e + 1) % 3] - tri[e]) * a;
    const Vec3 target = i % 2 == 0 ? on_edge : tri[0] * 0.2 + tri[1] * 0.3 + tri[2] * 0.5;
    const Vec3 v = (target - pose.position) * rng.Uniform(1.0, 2.0) + rng.InBox(0.2);
    const ConvexCore core = internal::CoreOf(shape);
    const PlacedConvex q(core, pose);
    const double scale = q.scale() + v.Length();
    const CastResult s = SweepConvexTriangle(tri, q, q.margin(), v, 1.0, scale, active);
    if (!s.hit() || (s.state == CastState::kStartedOverlapping)) continue;
    ++hits;
    if (s.state == CastState::kFailed) {
      ++capped;
      ADD_FAILURE() << ShapeKindName(shape.kind()) << " " << i << " capped at t " << s.fraction;
      continue;
    }
    // At the hit the moved convex touches the triangle at the point (within
    // kSweepStallGap), its core not overlapping the triangle (GJK).
    const Vec3 shift = v * s.fraction;
    auto moved = [&](const Vec3& d) { return q(d) + shift; };
    const TriangleConvexDistance g = TriangleConvexGjk(tri, moved, q.margin(), scale);
    const double off_triangle = OffTriangle(tri, s.point);
    const double off_convex =
        DistanceToConvex(core, Pose{pose.position + shift, pose.rotation}, s.point);
    const bool ok = off_triangle <= 1e-9 && off_convex <= kSweepStallGap && !g.cores_overlap;
    bad += ok ? 0 : 1;
    EXPECT_TRUE(ok) << ShapeKindName(shape.kind()) << " " << i << " t " << s.fraction
                    << " distance " << g.distance << (g.cores_overlap ? " (cores overlap)" : "")
                    << " off triangle " << off_triangle << " off convex " << off_convex;
  }
  std::printf("hits %d, capped %d, bad %d\n", hits, capped, bad);
  EXPECT_GT(hits, 2000);
}

// Conservative advancement (AdvanceConvexTriangle) that gives up reports its
// fraction as a lower bound (capped) with a contact point on the triangle:
// the closest point of its last GJK, or the centroid when GJK gives none.
// The triangle lies metres from its frame's origin (a point left at its
// default would be off it by ~14 m).
namespace capped_point {

const Vec3 kTri[3] = {{10, 10, 0}, {12, 10, 0}, {10, 12, 0}};

/// The triangle's vertex farthest along d, with TriangleConvexGjk's ties.
Vec3 TriangleSupport(const Vec3& d) {
  const double x0 = Dot(kTri[0], d), x1 = Dot(kTri[1], d), x2 = Dot(kTri[2], d);
  return kTri[(x0 >= x1 && x0 >= x2) ? 0 : (x1 >= x2 ? 1 : 2)];
}

CastResult Advance(const std::function<Vec3(const Vec3&)>& support) {
  const Vec3 face = Cross(kTri[1] - kTri[0], kTri[2] - kTri[0]).Normalized();
  return triangle_convex_detail::AdvanceConvexTriangle(kTri, support, 0.0, Vec3{0, 0, -1}, 0.0,
                                                       1.0, 15.0, 7, face);
}

}  // namespace capped_point

// A box core overlapping the triangle whose support lies once: GJK's first
// support point sits 1e-10 m beyond the triangle along its search direction
// (and 1 m aside), a lower bound of 1e-10 m that the later (true) points
// never raise, while GJK ends with the origin enclosed, its upper bound
// standing at the simplex before: no advance is possible (the lower bound
// within half the gap, the upper one far above kSweepStallGap), and the
// advancement gives up at t = 0.
TEST(AdvanceConvexTriangle, GivenUpReportsTheLastGjkPointOnTheTriangle) {
  using namespace capped_point;
  int calls = 0;
  const Vec3 center{10.5, 10.5, 0.25};
  auto support = [&](const Vec3& d) {
    const int call = calls++;
    const Vec3 box = center + Vec3{d.x >= 0 ? 0.5 : -0.5, d.y >= 0 ? 0.5 : -0.5,
                                   d.z >= 0 ? 0.5 : -0.5};
    if (call != 2) return box;  // 0, 1: GJK's start; 2: its first iteration
    const Vec3 v = -d;          // the search direction (triangle towards convex)
    const Vec3 aside = Cross(v, Vec3{0, 0, 1}).Normalized();
    return TriangleSupport(v) + v.Normalized() * 1e-10 + aside;
  };
  const CastResult s = Advance(support);
  ASSERT_TRUE(s.hit());
  ASSERT_TRUE(s.state == CastState::kFailed);  // the set-up reaches the give-up path
  EXPECT_EQ(s.fraction, 0.0);
  EXPECT_TRUE(s.point.IsFinite());
  EXPECT_LE(cast_point::OffTriangle(kTri, s.point), 1e-9 * 15.0)
      << s.point.x << " " << s.point.y << " " << s.point.z;
}

// A point core that recedes by each advance (a new position at each GJK,
// whose first support call is along +x): always 1 mm from the triangle, the
// advancement runs out of iterations at t ~0.128, its point that of a GJK
// at that t, below the core.
TEST(AdvanceConvexTriangle, OutOfIterationsReportsThePointAtT) {
  using namespace capped_point;
  int runs = 0;
  const CastResult s = Advance([&](const Vec3& d) {
    if (d == Vec3{1, 0, 0}) ++runs;
    return Vec3{10.5, 10.75, 1e-3 * runs};
  });
  ASSERT_TRUE(s.hit());
  ASSERT_TRUE(s.state == CastState::kFailed);
  EXPECT_EQ(runs, kTriangleSweepMaxIterations + 1);
  EXPECT_NEAR(s.fraction, kTriangleSweepMaxIterations * 1e-3, 1e-6);
  EXPECT_TRUE(VecNear(s.point, Vec3{10.5, 10.75, 0}, 1e-9 * 15.0))
      << s.point.x << " " << s.point.y << " " << s.point.z;
}

// A support giving NaN (bad input), from GJK's first iteration on or from
// the start: the advancement gives up, its point a vertex of the triangle
// (GJK's weights stay those of its first support point).
TEST(AdvanceConvexTriangle, GivenUpOnNanSupportReportsAPointOfTheTriangle) {
  using namespace capped_point;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const int honest : {2, 0}) {
    int calls = 0;
    const CastResult s = Advance([&](const Vec3&) {
      return calls++ < honest ? Vec3{10.5, 10.5, 1.0} : Vec3{nan, nan, nan};
    });
    ASSERT_TRUE(s.hit()) << honest;
    ASSERT_TRUE(s.state == CastState::kFailed) << honest;
    EXPECT_TRUE(s.point.IsFinite()) << honest;
    EXPECT_LE(cast_point::OffTriangle(kTri, s.point), 1e-9 * 15.0) << honest;
  }
}

}  // namespace
}  // namespace hitbox
