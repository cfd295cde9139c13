// Triangle against convex (triangle_convex.h, surface_queries.h): the
// closed-form SAT penetration of polytope cores against EPA and against the
// separating move, the bounded cost of EPA on flat and sliver inputs.
#include "geometry/triangle_convex.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "geometry/gjk.h"
#include "geometry/surface_queries.h"
#include "geometry/triangle_mesh.h"
#include "hitbox/collision/collide.h"
#include "mesh_util.h"
#include "test_util.h"

namespace hitbox {
namespace {

using internal::ConvexCore;
using testing::Random;

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

// TriangleTouchContact (every surface contact goes through it) against GJK
// and TriangleContact: the same touching decision; for a box whose core
// SAT says overlapping (no GJK) the same contact field for field; for a
// cylinder or a hull whose EPA starts from the prism along the triangle's
// normal (no GJK), a depth within 1e-6 of EPA from GJK's tetrahedron, and a
// separating move (moving out by depth + 1e-7 leaves them apart).
TEST(TriangleTouchContact, MatchesGjkAndTriangleContact) {
  Random rng(77);
  std::vector<Shape> hulls;
  while (hulls.size() < 16) {
    std::vector<Vec3> points(4 + hulls.size() * 2);
    for (Vec3& p : points) p = rng.InBox(0.7);
    Result<Shape> hull = Shape::Make(ConvexHull{points});
    if (hull.ok()) hulls.push_back(std::move(hull).value());
  }
  int touching = 0, box_sat = 0, prism = 0, apart = 0;
  for (int i = 0; i < 30000; ++i) {
    Vec3 tri[3];
    RandomTriangle(rng, i, tri);
    const int kind = i % 3;
    const ConvexCore core =
        kind == 0   ? RandomPolytopeCore(rng, 2)
        : kind == 1 ? Core(ConvexCore::Kind::kCylinder, {}, rng.Uniform(0.05, 1.0),
                           rng.Uniform(0.05, 1.0), 0.0)
                    : ConvexCore::FromShape(hulls[i % hulls.size()]);
    double l0 = rng.Uniform(0, 1), l1 = rng.Uniform(0, 1);
    if (l0 + l1 > 1.0) l0 = 1.0 - l0, l1 = 1.0 - l1;
    const Vec3 on = tri[0] + (tri[1] - tri[0]) * l0 + (tri[2] - tri[0]) * l1;
    const Pose pose{on + rng.InBox(0.8), rng.Rotation()};
    const PlacedConvex convex(core, pose);
    TrianglePolytopeCore poly;
    TriangleConvexPenetration sat;
    const bool box = convex.PolytopeCore(&poly);
    if (box) sat = TrianglePolytopePenetration(tri, poly, convex.margin());
    MeshContact m;
    const bool touch = TriangleTouchContact(tri, 7, convex, box ? &sat : nullptr, &m);
    const TriangleConvexDistance g = TriangleConvexGjk(tri, convex, convex.margin(), convex.scale());
    ASSERT_EQ(touch, g.distance_lower <= 0.0) << i;
    if (!touch) {
      ++apart;
      continue;
    }
    ++touching;
    EXPECT_EQ(m.triangle, 7u);
    const MeshContact want = TriangleContact(tri, 7, convex, g);
    if (box) {
      if (sat.valid && sat.depth - convex.margin() > 1e-9 * convex.scale()) ++box_sat;
      EXPECT_EQ(m.depth, want.depth) << i;
      EXPECT_EQ(m.normal, want.normal) << i;
      EXPECT_EQ(m.point_on_mesh, want.point_on_mesh) << i;
      EXPECT_EQ(m.point_on_query, want.point_on_query) << i;
      continue;
    }
    const TriangleConvexPenetration from_prism = TriangleConvexEpa(
        tri, convex, convex.margin(), convex.scale(), TriangleConvexDistance{},
        TriangleEpaStart::kPrismOnly);
    if (!from_prism.valid) continue;
    ++prism;
    ASSERT_TRUE(g.cores_overlap) << i;
    EXPECT_EQ(m.depth, from_prism.depth) << i;
    const TriangleConvexPenetration from_tet = TriangleConvexEpa(
        tri, convex, convex.margin(), convex.scale(), g, TriangleEpaStart::kTetrahedronOnly);
    if (from_tet.valid && from_tet.failure == 0 && from_prism.failure == 0) {
      EXPECT_NEAR(m.depth, from_tet.depth, 1e-6) << i;
    }
    const PlacedConvex moved(core, Pose{pose.position + m.normal * (m.depth + 1e-7), pose.rotation});
    EXPECT_GT(TriangleConvexGjk(tri, moved, moved.margin(), moved.scale()).distance, 0.0) << i;
  }
  std::printf("%d touching (%d boxes by SAT, %d cylinders or hulls from the prism), %d apart\n",
              touching, box_sat, prism, apart);
  EXPECT_GT(box_sat, 2000);
  EXPECT_GT(prism, 2000);
  EXPECT_GT(apart, 3000);
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

}  // namespace
}  // namespace hitbox
