// GatheredCast: a ball or capsule placed once in a mesh's frame answers each
// sweep against gathered triangles as Cast() does, to the bit.
#include "collision/gathered_cast.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "collision/cast_internal.h"
#include "geometry/triangle_mesh.h"
#include "shape/surface_data.h"
#include "mesh_util.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::JitteredGrid;
using testing::Random;

bool SameBits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}
bool SameBits(const Vec3& a, const Vec3& b) {
  return SameBits(a.x, b.x) && SameBits(a.y, b.y) && SameBits(a.z, b.z);
}

// Every field of two cast results, bit for bit; "" when equal.
std::string CastDiff(const CastResult& a, const CastResult& b) {
  if (a.state != b.state) return "state";
  if (!SameBits(a.fraction, b.fraction)) return "fraction";
  if (!SameBits(a.normal, b.normal)) return "normal";
  if (!SameBits(a.point, b.point)) return "point";
  if (!SameBits(a.depth, b.depth)) return "depth";
  if (a.sub_shape != b.sub_shape) return "sub_shape";
  return "";
}

// The mesh's triangles whose boxes meet `region` (its frame), as a move gathers them.
std::vector<GatheredTriangle> Gather(const TriangleMesh& mesh, const Aabb& region) {
  std::vector<GatheredTriangle> out;
  mesh.VisitOverlapping(region, [&](uint32_t k) {
    Vec3 v[3];
    mesh.TriangleVertices(k, v);
    if (!Aabb().Union(v[0]).Union(v[1]).Union(v[2]).Overlaps(region)) return true;
    out.emplace_back();
    GatherTriangle(v[0], v[1], v[2], mesh.OriginalIndex(k), mesh.ActiveEdges(k), &out.back());
    return true;
  });
  return out;
}

// No turn, a turn about one coordinate axis, or any (kind 0, 1, 2).
Quat TurnOfKind(Random& rng, int kind) {
  if (kind == 0) return Quat();
  if (kind == 1) {
    Vec3 axis;
    axis[rng.Int(0, 2)] = 1.0;
    return Quat::FromAxisAngle(axis, rng.Uniform(-3.0, 3.0));
  }
  return rng.Rotation();
}

// Thousands of balls and capsules at random rotations swept near, onto,
// along and out of wavy meshes at random poses, over the triangles gathered
// for regions about them (some too small: it declines): Cast()'s answer
// with the same settings wherever it answers, the turned meshes and shapes
// included (the build fuses no multiply-add, so the placement is Cast()'s
// to the bit whatever the rotations).
TEST(GatheredCast, AnswersAsCast) {
  int answered = 0, hits = 0, started = 0, declined = 0, turned = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Random rng(seed);
    const double cell = rng.Uniform(0.3, 1.5);
    const Shape mesh = JitteredGrid(rng, 8, cell, rng.Int(0, 1) * 0.2 * cell);
    const int mesh_turn = static_cast<int>(seed % 3);
    const Pose pose_b(rng.InBox(3.0), TurnOfKind(rng, mesh_turn));
    const TriangleMesh& tm = *mesh.surface()->mesh();
    for (int q = 0; q < 40; ++q) {
      const bool ball = q % 3 == 0;
      const Shape a = ball ? *Shape::MakeSphere(rng.Uniform(0.1, 0.6))
                           : *Shape::MakeCapsule(rng.Uniform(0.1, 0.6), rng.Uniform(0.0, 0.8));
      const int turn = q % 4 == 3 ? 2 : q % 2;
      const Quat rotation = TurnOfKind(rng, turn);
      // Near a random point of the grid, in its frame, then in the world.
      const double x = rng.Uniform(0.0, 8 * cell), z = rng.Uniform(0.0, 8 * cell);
      const Vec3 local{x, testing::WavyHeight(x, z) + a.BoundingRadius() + rng.Uniform(-0.4, 0.8),
                       z};
      const Vec3 from = pose_b.TransformPoint(local);
      // Mostly down towards the grid (in its frame), some any way.
      Vec3 way = rng.UnitVector();
      if (q % 4 != 1) way.y = -std::fabs(way.y) - 0.5;
      const Vec3 translation = pose_b.TransformDirection(way) * rng.Uniform(0.0, 1.5);
      const Aabb region = Aabb(local, local).Expanded(rng.Uniform(0.3, 3.5));
      const std::vector<GatheredTriangle> tris = Gather(tm, region);
      std::vector<const GatheredTriangle*> refs;
      for (const GatheredTriangle& t : tris) refs.push_back(&t);
      CastSettings settings;
      if (q % 5 == 4) settings.max_fraction = rng.Uniform(0.0, 1.0);
      internal::GatheredCast cast;
      ASSERT_TRUE(cast.Prepare(a, rotation, mesh, pose_b)) << "seed " << seed << " query " << q;
      turned += mesh_turn != 0 || turn != 0;
      CastResult got;
      if (!cast.Cast(from, translation, internal::FractionBound(settings), refs.data(),
                     refs.size(), region, &got)) {
        ++declined;
        continue;
      }
      const CastResult want = Cast(a, Pose(from, rotation), translation, mesh, pose_b, settings);
      ASSERT_EQ(CastDiff(got, want), "") << "seed " << seed << " query " << q;
      ++answered;
      hits += got.state == CastState::kHit;
      started += got.state == CastState::kStartedOverlapping;
    }
  }
  std::printf("answered %d (hits %d, started %d, turned %d), declined %d\n", answered, hits,
              started, turned, declined);
  EXPECT_GT(answered, 4000);
  EXPECT_GT(turned, 9000);
  EXPECT_GT(hits, 1000);
  EXPECT_GT(started, 500);
  EXPECT_GT(declined, 500);
}

// Only a ball or a capsule against a mesh is prepared.
TEST(GatheredCast, PreparesBallsAndCapsulesAgainstMeshes) {
  Random rng(7);
  const Shape mesh = JitteredGrid(rng, 2, 1.0, 0.0);
  internal::GatheredCast cast;
  EXPECT_TRUE(cast.Prepare(testing::SphereR(0.5), Quat(), mesh, Pose()));
  EXPECT_TRUE(cast.Prepare(testing::CapsuleRH(0.5, 0.5), Quat(), mesh, Pose()));
  EXPECT_FALSE(cast.Prepare(testing::BoxH(0.5, 0.5, 0.5), Quat(), mesh, Pose()));
  EXPECT_FALSE(cast.Prepare(testing::SphereR(0.5), Quat(), testing::BoxH(1, 1, 1), Pose()));
}

}  // namespace
}  // namespace hitbox
