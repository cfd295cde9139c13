// ComputeDistance(): hand-made cases per pair; seeded random property tests
// for every ordered pair (witness points on the shapes and `distance` apart,
// agreement with GJK and with Overlap, mirror symmetry, 20 km translation).
#include <gtest/gtest.h>

#include <cmath>

#include "geometry/gjk.h"
#include "hitbox/collision/collide.h"
#include "shape/convex_core.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::AllKindPairs;
using testing::DescribePair;
using testing::NearbyPoses;
using testing::PairName;
using testing::PointToShapeDistance;
using testing::Random;
using testing::Translated;
using testing::VariedShape;
using testing::VecNear;

using testing::At;
using testing::BoxH;
using testing::CapsuleRH;
using testing::CylinderRH;
using testing::SphereR;

// Distances with known answers, in both argument orders.
TEST(DistanceTest, HandMade) {
  struct Case {
    Shape a;
    Pose pa;
    Shape b;
    Pose pb;
    double expected;
  };
  const Pose rot45{Vec3{3, 0, 0}, Quat::FromAxisAngle({0, 0, 1}, M_PI / 4)};
  const Case cases[] = {
      {SphereR(1), At(0, 0, 0), SphereR(0.5), At(3, 0, 0), 1.5},
      {BoxH(1, 1, 1), At(0, 0, 0), BoxH(1, 1, 1), At(2.5, 0.3, -0.2), 0.5},
      {BoxH(1, 1, 1), At(0, 0, 0), BoxH(1, 1, 1), At(3, 3, 0), std::sqrt(2.0)},
      // B's edge points at A's face: 3 - sqrt(2) - 1.
      {BoxH(1, 1, 1), At(0, 0, 0), BoxH(1, 1, 1), rot45, 2.0 - std::sqrt(2.0)},
      {SphereR(0.5), At(0, 3, 0), CapsuleRH(0.5, 1), At(0, 0, 0), 1.0},
      {CapsuleRH(0.25, 1), At(0, 0, 0), BoxH(1, 1, 1), At(2, 0, 0), 0.75},
      {CylinderRH(0.5, 1), At(0, 0, 0), CylinderRH(0.5, 1), At(0.2, 2.5, 0), 0.5},
      {CylinderRH(0.5, 1), At(0, 0, 0), CylinderRH(0.5, 1), At(1.5, 0, 0), 0.5},
      {SphereR(0.5), At(1, 1.5, 0), CylinderRH(0.5, 1), At(0, 0, 0), std::sqrt(0.5) - 0.5},
      {CapsuleRH(0.5, 1), At(0, 0, 0), CapsuleRH(0.5, 1), At(2, 0, 0), 1.0},
      {BoxH(1, 1, 1), At(0, 0, 0), CylinderRH(0.5, 1), At(0, 3, 0), 1.0},
      {CapsuleRH(0.1, 1), At(0, 0, 0), CylinderRH(0.5, 1), At(0, 0, 0), 0.0},
  };
  for (const Case& c : cases) {
    const DistanceResult r = ComputeDistance(c.a, c.pa, c.b, c.pb);
    EXPECT_NEAR(r.distance, c.expected, 1e-9) << DescribePair(c.a, c.pa, c.b, c.pb);
    const DistanceResult m = ComputeDistance(c.b, c.pb, c.a, c.pa);
    EXPECT_NEAR(m.distance, c.expected, 1e-9) << "mirrored " << DescribePair(c.a, c.pa, c.b, c.pb);
    if (c.expected > 0.0) {
      EXPECT_LE(PointToShapeDistance(c.a, c.pa, r.point_a), 1e-9);
      EXPECT_LE(PointToShapeDistance(c.b, c.pb, r.point_b), 1e-9);
      EXPECT_NEAR((r.point_b - r.point_a).Length(), c.expected, 1e-9);
    }
  }
}

// Every ordered pair, 10,000 random poses each (a fifth thin or tiny): the
// witness points lie on their shapes and are `distance` apart, the distance
// matches GJK, Overlap agrees outside a 1e-9 m band, and the mirrored call and
// the pair 20 km from the origin give the same distance and valid witnesses.
TEST(DistanceTest, RandomPairs) {
  const Vec3 far{20000.0, 12000.0, -20000.0};
  for (const auto& [ka, kb] : AllKindPairs()) {
    Random rng(5000 + 16 * static_cast<int>(ka) + static_cast<int>(kb));
    int separated = 0;
    for (int i = 0; i < 10000; ++i) {
      const Shape a = VariedShape(rng, ka);
      const Shape b = VariedShape(rng, kb);
      const auto [pa, pb] = NearbyPoses(rng, a, b);
      const DistanceResult r = ComputeDistance(a, pa, b, pb);
      const std::string where = PairName(ka, kb) + " " + DescribePair(a, pa, b, pb);
      ASSERT_TRUE(std::isfinite(r.distance) && r.distance >= 0.0) << where;
      const bool overlap = Overlap(a, pa, b, pb);
      if (r.distance > 1e-9) {
        ASSERT_FALSE(overlap) << where << " distance " << r.distance;
      }
      if (r.distance == 0.0) {
        ASSERT_TRUE(overlap) << where;
      }
      const internal::GjkResult g = internal::GjkDistance(a, pa, b, pb);
      ASSERT_NEAR(r.distance, g.distance, 1e-9) << where;
      const DistanceResult m = ComputeDistance(b, pb, a, pa);
      ASSERT_NEAR(r.distance, m.distance, 1e-9) << where;
      const DistanceResult f = ComputeDistance(a, Translated(pa, far), b, Translated(pb, far));
      ASSERT_NEAR(r.distance, f.distance, 1e-6) << where;
      if (r.distance <= 0.0) continue;
      ++separated;
      ASSERT_NEAR((r.point_b - r.point_a).Length(), r.distance, 1e-9) << where;
      ASSERT_LE(PointToShapeDistance(a, pa, r.point_a), 1e-9) << where;
      ASSERT_LE(PointToShapeDistance(b, pb, r.point_b), 1e-9) << where;
      // Closest points need not be unique (parallel faces): check the mirrored
      // and far witnesses by the same properties instead of equality.
      ASSERT_LE(PointToShapeDistance(a, pa, m.point_b), 1e-9) << where;
      ASSERT_LE(PointToShapeDistance(b, pb, m.point_a), 1e-9) << where;
      ASSERT_LE(PointToShapeDistance(a, Translated(pa, far), f.point_a), 1e-6) << where;
      ASSERT_LE(PointToShapeDistance(b, Translated(pb, far), f.point_b), 1e-6) << where;
      ASSERT_NEAR((f.point_b - f.point_a).Length(), f.distance, 1e-6) << where;
    }
    EXPECT_GT(separated, 500) << PairName(ka, kb);
  }
}

}  // namespace
}  // namespace hitbox
