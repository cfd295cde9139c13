// StartNearSets: a sweep that starts inside a mesh records the triangles
// around its start, and the deepest contact taken from them is the one the
// hierarchy walk gives, to the bit.
#include "collision/triangles/start_near.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "collision/cast_internal.h"
#include "collision/placed_query.h"
#include "geometry/same_bits.h"
#include "geometry/triangle_mesh.h"
#include "shape/surface_data.h"
#include "mesh_util.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::JitteredGrid;
using testing::Random;

// Every convex kind started inside wavy meshes, near the origin and 1e4 to
// 1e6 away from it: the contact of the started sweep, taken from its
// recorded triangles inside a scope, is the walk's outside any, bit for bit;
// and the scope did find the recorded set (the walk is not what answered).
TEST(StartNear, StartedContactIsTheWalks) {
  const ShapeKind kinds[] = {ShapeKind::kSphere, ShapeKind::kCapsule, ShapeKind::kBox,
                             ShapeKind::kCylinder, ShapeKind::kConvexHull};
  int started = 0, found = 0, far = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Random rng(seed);
    const double cell = rng.Uniform(0.3, 1.5);
    const Shape mesh = JitteredGrid(rng, 8, cell, rng.Int(0, 1) * 0.2 * cell);
    const TriangleMesh& tm = *mesh.surface()->mesh();
    const double away = seed % 3 == 0 ? 0.0 : std::pow(10.0, rng.Uniform(4.0, 6.0));
    const Pose pose_b(rng.InBox(3.0) + Vec3{away, -away, away * 0.5},
                      seed % 2 == 0 ? Quat() : rng.Rotation());
    for (int q = 0; q < 40; ++q) {
      const Shape a = rng.MakeShape(kinds[q % 5], 0.1, 0.8);
      const double x = rng.Uniform(0.0, 8 * cell), z = rng.Uniform(0.0, 8 * cell);
      const Vec3 local{x, testing::WavyHeight(x, z) + rng.Uniform(-0.5, 0.5) * a.BoundingRadius(),
                       z};
      const Pose pose_a(pose_b.TransformPoint(local), rng.Rotation());
      const Vec3 translation = rng.UnitVector() * rng.Uniform(0.0, 2.0);
      CastResult from_set, from_walk;
      {
        const ScopedStartNear scope;
        from_set = internal::CastWithoutContact(a, pose_a, translation, mesh, pose_b, {});
        if (from_set.state != CastState::kStartedOverlapping) continue;
        const PlacedConvex& placed = internal::PlaceQuery(a, pose_b.RelativeTo(pose_a));
        found += FindStartNear(&tm, placed.bounds().Expanded(kSweepGap)) != nullptr;
        from_walk = from_set;
        internal::AddStartedContact(a, pose_a, mesh, pose_b, &from_set);
      }
      internal::AddStartedContact(a, pose_a, mesh, pose_b, &from_walk);  // no scope: walks
      const std::string where = "seed " + std::to_string(seed) + " query " + std::to_string(q);
      ASSERT_TRUE(SameBits(from_set.normal, from_walk.normal)) << where;
      ASSERT_TRUE(SameBits(from_set.point, from_walk.point)) << where;
      ASSERT_TRUE(SameBits(from_set.depth, from_walk.depth)) << where;
      ++started;
      far += away > 0.0;
    }
  }
  std::printf("started %d (far %d), set found %d\n", started, far, found);
  EXPECT_GT(started, 800);
  EXPECT_GT(far, 500);
  EXPECT_GT(found, started * 9 / 10);
}

// Outside a scope nothing is recorded; the outermost scope's end drops the
// sets (a mesh's address may be reused by another).
TEST(StartNear, SetsLiveInScope) {
  Random rng(3);
  const Shape mesh = JitteredGrid(rng, 4, 1.0, 0.0);
  const TriangleMesh& tm = *mesh.surface()->mesh();
  const Shape ball = *Shape::MakeSphere(0.5);
  const Pose pose_a({2.0, testing::WavyHeight(2.0, 2.0), 2.0}, Quat());
  const Aabb near_box = Aabb(pose_a.position, pose_a.position).Expanded(0.5 + kSweepGap);
  const auto sweep = [&] {
    const CastResult r =
        internal::CastWithoutContact(ball, pose_a, {0.0, -1.0, 0.0}, mesh, Pose(), {});
    ASSERT_EQ(r.state, CastState::kStartedOverlapping);
  };
  sweep();
  {
    const ScopedStartNear outer;
    EXPECT_EQ(FindStartNear(&tm, near_box), nullptr);
    {
      const ScopedStartNear inner;
      sweep();
      EXPECT_NE(FindStartNear(&tm, near_box), nullptr);
    }
    EXPECT_NE(FindStartNear(&tm, near_box), nullptr);  // the outer scope still holds it
  }
  const ScopedStartNear again;
  EXPECT_EQ(FindStartNear(&tm, near_box), nullptr);
}

// A query around more than kMaxTriangles triangles records none (its
// contact walks the hierarchy): the per-thread sets stay small whatever the
// query, and the contact is the walk's.
TEST(StartNear, BigQueriesAreNotRecorded) {
  Random rng(5);
  const Shape mesh = JitteredGrid(rng, 16, 0.25, 0.0);  // 512 triangles over 4 x 4 m
  const TriangleMesh& tm = *mesh.surface()->mesh();
  const Shape box = *Shape::MakeBox({1.8, 0.5, 1.8});  // over ~400 of them
  const Pose pose_a({2.0, testing::WavyHeight(2.0, 2.0), 2.0}, Quat());
  const ScopedStartNear scope;
  CastResult r = internal::CastWithoutContact(box, pose_a, {0.0, -1.0, 0.0}, mesh, Pose(), {});
  ASSERT_EQ(r.state, CastState::kStartedOverlapping);
  const PlacedConvex& placed = internal::PlaceQuery(box, Pose().RelativeTo(pose_a));
  EXPECT_EQ(FindStartNear(&tm, placed.bounds().Expanded(kSweepGap)), nullptr);
  CastResult walked = r;
  internal::AddStartedContact(box, pose_a, mesh, Pose(), &r);
  internal::AddStartedContact(box, pose_a, mesh, Pose(), &walked);
  EXPECT_GT(r.depth, 0.0);
  EXPECT_TRUE(SameBits(r.normal, walked.normal) && SameBits(r.depth, walked.depth));
}

}  // namespace
}  // namespace hitbox
