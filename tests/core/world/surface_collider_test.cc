// Mesh and heightfield as collider kinds of Shape: world queries through
// ColliderSet against the standalone surface components (geometry/) and each
// other, query-shape rejection, 20 km accuracy, pair-table entries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "collision/pair_dispatch.h"
#include "collision/triangles/surface_deepest_contact.h"
#include "collision/triangles/surface_sweep.h"
#include "geometry/gjk.h"
#include "geometry/heightfield.h"
#include "geometry/triangle_mesh.h"
#include "hitbox/collision/collide.h"
#include "hitbox/world/collider_set.h"
#include "mesh_util.h"
#include "shape/convex_core.h"
#include "shape/surface_data.h"
#include "surface_sweep_any.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::MeshData;
using testing::Random;

Shape MeshShape(const MeshData& m) {
  TriangleMeshShape s;
  s.vertices = m.vertices;
  for (const auto& t : m.triangles) s.triangles.push_back({t[0], t[1], t[2]});
  Result<Shape> r = Shape::Make(s);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return *r;
}

constexpr int kGrid = 24;
constexpr double kCell = 0.5;

Shape WavyField() {
  HeightfieldShape h;
  h.rows = h.cols = kGrid + 1;
  h.cell_size_x = h.cell_size_z = kCell;
  for (int r = 0; r <= kGrid; ++r) {
    for (int c = 0; c <= kGrid; ++c) h.heights.push_back(testing::WavyHeight(c * kCell, r * kCell));
  }
  Result<Shape> s = Shape::Make(h);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return *s;
}

ColliderSet OneCollider(const Shape& shape, const Pose& pose) {
  ColliderSet set;
  Collider c;
  c.id = 7;
  c.shape = shape;
  c.pose = pose;
  const ColliderChange ch = ColliderChange::Add(c);
  EXPECT_TRUE(set.Apply({&ch, 1}).ok());
  return set;
}

TEST(SurfaceShape, KindsBoundsAndSharing) {
  const MeshData box = testing::BoxMesh(1.0, {2, 0, 0});
  const Shape mesh = MeshShape(box);
  EXPECT_EQ(mesh.kind(), ShapeKind::kMesh);
  EXPECT_STREQ(ShapeKindName(mesh.kind()), "mesh");
  EXPECT_TRUE(IsSurfaceKind(mesh.kind()));
  EXPECT_EQ(mesh.LocalBounds().min, (Vec3{1, -1, -1}));
  EXPECT_EQ(mesh.LocalBounds().max, (Vec3{3, 1, 1}));
  EXPECT_NEAR(mesh.BoundingRadius(), std::sqrt(11.0), 1e-12);
  const Aabb wb = mesh.WorldBounds({{10, 0, 0}, Quat::FromAxisAngle({0, 0, 1}, M_PI / 2)});
  EXPECT_NEAR(wb.min.x, 9, 1e-12);
  EXPECT_NEAR(wb.max.y, 3, 1e-12);
  EXPECT_GT(mesh.DataBytes(), 0u);
  const Shape copy = mesh;  // shared, not rebuilt
  EXPECT_EQ(copy.surface(), mesh.surface());
  EXPECT_EQ(copy, mesh);
  Shape moved = std::move(Shape(copy));
  EXPECT_EQ(moved.surface(), mesh.surface());
  const Shape field = WavyField();
  EXPECT_EQ(field.kind(), ShapeKind::kHeightfield);
  EXPECT_EQ(field.surface()->input_triangles(), 2u * kGrid * kGrid);
}

TEST(SurfaceShape, InvalidInputIsNamed) {
  TriangleMeshShape m;
  m.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
  m.triangles = {{0, 1, 2}, {0, 1, 900}};
  Result<Shape> r = Shape::Make(m);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("mesh.triangles[1][2]"), std::string::npos)
      << r.error().message;
  HeightfieldShape h;
  h.rows = 2;
  h.cols = 2;
  h.cell_size_x = 1;
  h.cell_size_z = 0;
  h.heights = {0, 0, 0, 0};
  EXPECT_FALSE(Shape::Make(h).ok());
}

TEST(SurfaceShape, PairTableCoversSurfaces) {
  for (int a = 0; a < kConvexKindCount; ++a) {
    for (ShapeKind s : {ShapeKind::kMesh, ShapeKind::kHeightfield}) {
      const internal::PairEntry& e = internal::PairFor(static_cast<ShapeKind>(a), s);
      EXPECT_TRUE(e.registered);
      EXPECT_TRUE(internal::IsSurfaceMethod(e.cast));
    }
  }
}

TEST(SurfaceShape, SurfacesAreNotQueryShapes) {
  const Shape mesh = MeshShape(testing::BoxMesh(1.0));
  OverlapQuery o;
  o.shape = mesh;
  Status s = ColliderSet::ValidateQuery(o, "queries[3].overlap");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message.find("queries[3].overlap.shape"), std::string::npos)
      << s.error().message;
  CastQuery c;
  c.shape = WavyField();
  c.translation = {1, 0, 0};
  EXPECT_FALSE(ColliderSet::ValidateQuery(c, "q").ok());
}

// Rays, sphere overlaps and box / hull sweeps through a ColliderSet with a
// mesh collider equal the standalone TriangleMesh queries in the local frame.
TEST(SurfaceCollider, MeshMatchesComponent) {
  const MeshData ico = testing::IcoSphere(3.0, 2);
  Result<TriangleMesh> ref = TriangleMesh::Build(ico.vertices, ico.triangles);
  ASSERT_TRUE(ref.ok());
  const Shape mesh = MeshShape(ico);
  Random rng(11);
  const Pose pose{{20000.0, -3.0, 20000.0}, rng.Rotation()};
  const ColliderSet set = OneCollider(mesh, pose);
  int ray_hits = 0, overlaps = 0, sweeps = 0;
  for (int i = 0; i < 300; ++i) {
    // Ray (local frame reference).
    const Vec3 lo = rng.InBox(6.0), ld = rng.InBox(8.0);
    RayQuery rq;
    rq.origin = pose.TransformPoint(lo);
    rq.translation = pose.TransformDirection(ld);
    std::vector<CastHit> hits;
    set.Raycast(rq, &hits);
    MeshRayHit mh;
    const bool want = ref->RaycastClosest(lo, ld, &mh);
    ASSERT_EQ(!hits.empty(), want) << i;
    if (want) {
      ++ray_hits;
      EXPECT_NEAR(hits[0].fraction, mh.fraction, 1e-9);
      EXPECT_EQ(hits[0].sub_shape, mh.triangle);
    }
    // Sphere overlap: sub_shape = lowest triangle touched.
    const Vec3 c = rng.InBox(4.0);
    const double radius = rng.Uniform(0.1, 1.0);
    OverlapQuery oq;
    oq.shape = *Shape::MakeSphere(radius);
    oq.pose = {pose.TransformPoint(c), Quat{}};
    std::vector<OverlapHit> ohits;
    set.Overlap(oq, &ohits);
    std::vector<SurfaceContactHit> tris;
    testing::BruteOverlapSphere(*ref, c, radius, false, &tris);
    ASSERT_EQ(ohits.size(), tris.empty() ? 0u : 1u) << i;
    if (!tris.empty()) {
      ++overlaps;
      uint32_t lowest = UINT32_MAX;
      for (const SurfaceContactHit& t : tris) lowest = std::min(lowest, t.triangle);
      EXPECT_EQ(ohits[0].sub_shape, lowest);
    }
    // Box sweep against the component's generic sweep.
    const Shape box = *Shape::MakeBox({rng.Uniform(0.1, 0.6), rng.Uniform(0.1, 0.6), 0.3});
    const Pose local_start{rng.InBox(7.0), rng.Rotation()};
    const Vec3 local_move = rng.InBox(8.0);
    CastQuery cq;
    cq.shape = box;
    cq.pose = pose * local_start;
    cq.translation = pose.TransformDirection(local_move);
    set.Cast(cq, &hits);
    const internal::ConvexCore core = internal::CoreOf(box);
    const PlacedConvex placed(core, local_start);
    const CastResult sh = testing::SweepAnyCore(*ref, placed, local_move);
    ASSERT_EQ(!hits.empty(), sh.state != CastState::kMiss) << i;
    if (!hits.empty()) {
      ++sweeps;
      EXPECT_NEAR(hits[0].fraction, sh.fraction, 1e-7);
      EXPECT_EQ(hits[0].sub_shape, sh.sub_shape);
      EXPECT_EQ(hits[0].started_overlapping(), sh.state == CastState::kStartedOverlapping);
    }
  }
  EXPECT_GT(ray_hits, 30);
  EXPECT_GT(overlaps, 30);
  EXPECT_GT(sweeps, 30);
}

// A heightfield collider answers as the mesh collider of the same surface.
TEST(SurfaceCollider, HeightfieldEqualsMesh) {
  const Shape field = WavyField();
  const Shape mesh = MeshShape(testing::WavyGrid(kGrid, kCell));
  Random rng(5);
  const Pose pose{{-20000.0, 100.0, 20000.0}, rng.Rotation()};
  const ColliderSet a = OneCollider(field, pose), b = OneCollider(mesh, pose);
  const double extent = kGrid * kCell;
  auto local_point = [&] {
    return Vec3{rng.Uniform(-1, extent + 1), rng.Uniform(-2, 2), rng.Uniform(-1, extent + 1)};
  };
  int hit_count = 0;
  for (int i = 0; i < 300; ++i) {
    const Shape q = i % 3 == 0   ? *Shape::MakeSphere(rng.Uniform(0.1, 0.8))
                    : i % 3 == 1 ? *Shape::MakeCapsule(0.2, rng.Uniform(0.1, 0.8))
                                 : rng.MakeShape(ShapeKind::kConvexHull, 0.2, 0.8);
    const Pose qp = pose * Pose{local_point(), rng.Rotation()};
    OverlapQuery oq;
    oq.shape = q;
    oq.pose = qp;
    oq.want_contact = true;
    std::vector<OverlapHit> ha, hb;
    a.Overlap(oq, &ha);
    b.Overlap(oq, &hb);
    ASSERT_EQ(ha.size(), hb.size()) << i;
    if (!ha.empty()) {
      ++hit_count;
      EXPECT_EQ(ha[0].sub_shape, hb[0].sub_shape);
      ASSERT_TRUE(ha[0].contact && hb[0].contact);
      EXPECT_NEAR(ha[0].contact->depth, hb[0].contact->depth, 1e-6);
    }
    CastQuery cq;
    cq.shape = q;
    cq.pose = qp;
    cq.translation = pose.TransformDirection(rng.InBox(4.0));
    std::vector<CastHit> ca, cb;
    a.Cast(cq, &ca);
    b.Cast(cq, &cb);
    ASSERT_EQ(ca.size(), cb.size()) << i;
    if (!ca.empty()) {
      EXPECT_NEAR(ca[0].fraction, cb[0].fraction, 1e-7);
      EXPECT_NEAR(Dot(ca[0].normal, cb[0].normal), 1.0, 1e-6);
    }
    RayQuery rq;
    rq.origin = pose.TransformPoint(local_point() + Vec3{0, 3, 0});
    rq.translation = pose.TransformDirection(rng.InBox(6.0) - Vec3{0, 6, 0});
    a.Raycast(rq, &ca);
    b.Raycast(rq, &cb);
    ASSERT_EQ(ca.size(), cb.size()) << i;
    if (!ca.empty()) {
      EXPECT_NEAR(ca[0].fraction, cb[0].fraction, 1e-9);
      EXPECT_EQ(ca[0].sub_shape, cb[0].sub_shape);
    }
  }
  EXPECT_GT(hit_count, 30);
}

// The same query against the same mesh at the origin and 20 km out.
TEST(SurfaceCollider, TwentyKilometresOut) {
  const Shape mesh = MeshShape(testing::IcoSphere(2.0, 2));
  Random rng(3);
  const Quat rot = rng.Rotation();
  const Vec3 far{20000.0, 0.0, -20000.0};
  const ColliderSet near_set = OneCollider(mesh, {{}, rot});
  const ColliderSet far_set = OneCollider(mesh, {far, rot});
  for (int i = 0; i < 100; ++i) {
    CastQuery q;
    q.shape = *Shape::MakeCapsule(0.3, 0.5);
    q.pose = {rng.InBox(5.0), rng.Rotation()};
    q.translation = rng.InBox(6.0);
    std::vector<CastHit> hn, hf;
    near_set.Cast(q, &hn);
    q.pose.position = q.pose.position + far;
    far_set.Cast(q, &hf);
    ASSERT_EQ(hn.size(), hf.size()) << i;
    if (!hn.empty()) {
      EXPECT_NEAR(hn[0].fraction, hf[0].fraction, 1e-7);
      EXPECT_EQ(hn[0].sub_shape, hf[0].sub_shape);
    }
  }
}

TEST(SurfaceCollider, DistanceAndConvexSubShapeZero) {
  const Shape mesh = MeshShape(testing::BoxMesh(1.0));
  const Shape ball = *Shape::MakeSphere(0.5);
  const DistanceResult d = ComputeDistance(ball, {{3, 0, 0}, Quat{}}, mesh, {});
  EXPECT_NEAR(d.distance, 1.5, 1e-9);
  EXPECT_NEAR(d.point_b.x, 1.0, 1e-9);
  // Enclosed by the closed mesh: no overlap (a surface has no inside)...
  EXPECT_FALSE(Overlap(ball, {}, mesh, {}));
  // ...but a sweep hits the triangles from inside.
  const CastResult c = Cast(ball, {}, {2, 0, 0}, mesh, {});
  ASSERT_EQ(c.state, CastState::kHit);
  EXPECT_NEAR(c.fraction, 0.25, 1e-7);
  // Convex colliders report sub_shape 0.
  const CastResult r = Raycast({-3, 0, 0}, {6, 0, 0}, ball, {});
  EXPECT_EQ(r.sub_shape, 0u);
}

}  // namespace
}  // namespace hitbox
