// Tests of the internal GJK distance routine (core/src/geometry/gjk.h) against
// closed-form distances, on seeded random poses.
#include "geometry/gjk.h"

#include <gtest/gtest.h>

#include <cmath>

#include "shape/convex_core.h"
#include "test_util.h"

namespace hitbox {
namespace {

using internal::GjkDistance;
using internal::GjkResult;
using internal::GjkState;
using testing::DescribePair;
using testing::Random;

/// Distance from world point `p` to a posed shape with a closed form
/// (sphere, box, cylinder, capsule), 0 inside.
double PointDistance(const Shape& s, const Pose& pose, const Vec3& p) {
  const Vec3 q = pose.InverseTransformPoint(p);
  switch (s.kind()) {
    case ShapeKind::kSphere: return std::max(0.0, q.Length() - s.radius());
    case ShapeKind::kBox: {
      const Vec3 h = s.half_extents();
      const Vec3 d = Max(q.Abs() - h, Vec3{});
      return d.Length();
    }
    case ShapeKind::kCapsule: {
      const double y = std::clamp(q.y, -s.half_height(), s.half_height());
      return std::max(0.0, (q - Vec3{0, y, 0}).Length() - s.radius());
    }
    case ShapeKind::kCylinder: {
      const double radial = std::sqrt(q.x * q.x + q.z * q.z);
      const double dr = std::max(0.0, radial - s.radius());
      const double dy = std::max(0.0, std::fabs(q.y) - s.half_height());
      return std::sqrt(dr * dr + dy * dy);
    }
    case ShapeKind::kConvexHull: return testing::PointToShapeDistance(s, pose, p);
    default: break;
  }
  return 0.0;
}

Pose RandomPose(Random& rng, double spread) { return Pose{rng.InBox(spread), rng.Rotation()}; }

// A sphere against every kind: GJK matches the closed-form point distance
// minus the radius, the witness points lie on both shapes and are `distance` apart.
TEST(GjkTest, SphereAgainstEveryKindMatchesClosedForm) {
  Random rng(101);
  for (int k = 0; k < kConvexKindCount; ++k) {
    const auto kind = static_cast<ShapeKind>(k);
    for (int i = 0; i < 5000; ++i) {
      const Shape a = rng.MakeShape(kind);
      const Shape b = rng.MakeShape(ShapeKind::kSphere);
      const Pose pa = RandomPose(rng, 3.0);
      const Pose pb = RandomPose(rng, 3.0);
      const double expected = std::max(0.0, PointDistance(a, pa, pb.position) - b.radius());
      const GjkResult r = GjkDistance(a, pa, b, pb);
      ASSERT_NE(r.state, GjkState::kFailed) << DescribePair(a, pa, b, pb);
      ASSERT_NEAR(r.distance, expected, 1e-9) << DescribePair(a, pa, b, pb);
      if (r.state == GjkState::kSeparated) {
        ASSERT_NEAR((r.point_b - r.point_a).Length(), r.distance, 1e-9)
            << DescribePair(a, pa, b, pb);
        ASSERT_NEAR(PointDistance(a, pa, r.point_a), 0.0, 1e-9) << DescribePair(a, pa, b, pb);
        ASSERT_NEAR(PointDistance(b, pb, r.point_b), 0.0, 1e-9) << DescribePair(a, pa, b, pb);
      }
    }
  }
}

// Two unrotated boxes: the distance of two AABBs is the length of the gap vector.
TEST(GjkTest, AxisAlignedBoxesMatchGapLength) {
  Random rng(102);
  for (int i = 0; i < 10000; ++i) {
    const Shape a = rng.MakeShape(ShapeKind::kBox);
    const Shape b = rng.MakeShape(ShapeKind::kBox);
    const Pose pa{rng.InBox(4.0)};
    const Pose pb{rng.InBox(4.0)};
    const Aabb ba = a.WorldBounds(pa);
    const Aabb bb = b.WorldBounds(pb);
    const Vec3 gap = Max(Max(ba.min - bb.max, bb.min - ba.max), Vec3{});
    const GjkResult r = GjkDistance(a, pa, b, pb);
    ASSERT_NE(r.state, GjkState::kFailed) << DescribePair(a, pa, b, pb);
    ASSERT_NEAR(r.distance, gap.Length(), 1e-9) << DescribePair(a, pa, b, pb);
  }
}

// The same pair 20 km from the origin gives the same distance and relative
// witness points within 1e-9 m.
TEST(GjkTest, FarFromOriginMatchesOrigin) {
  Random rng(103);
  const Vec3 far{20000.0, -15000.0, 12000.0};
  for (int i = 0; i < 20000; ++i) {
    const Shape a = rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, 3)));
    const Shape b = rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, 3)));
    const Pose pa = RandomPose(rng, 3.0);
    const Pose pb = RandomPose(rng, 3.0);
    const GjkResult r0 = GjkDistance(a, pa, b, pb);
    const GjkResult r1 =
        GjkDistance(a, Pose{pa.position + far, pa.rotation}, b, Pose{pb.position + far, pb.rotation});
    ASSERT_NE(r0.state, GjkState::kFailed) << DescribePair(a, pa, b, pb);
    ASSERT_NE(r1.state, GjkState::kFailed) << DescribePair(a, pa, b, pb);
    ASSERT_EQ(r0.state == GjkState::kOverlapping, r1.state == GjkState::kOverlapping)
        << DescribePair(a, pa, b, pb);
    ASSERT_NEAR(r0.distance, r1.distance, 1e-9) << DescribePair(a, pa, b, pb);
  }
}

// Coincident centres are overlapping without iterating; decide_only agrees with the full run.
TEST(GjkTest, DecideOnlyAgreesWithFullRun) {
  Random rng(104);
  internal::GjkSettings decide;
  decide.decide_only = true;
  for (int i = 0; i < 20000; ++i) {
    const Shape a = rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, 3)));
    const Shape b = rng.MakeShape(static_cast<ShapeKind>(rng.Int(0, 3)));
    const Pose pa = RandomPose(rng, 3.0);
    const Pose pb = RandomPose(rng, 3.0);
    const GjkResult full = GjkDistance(a, pa, b, pb);
    const GjkResult quick = GjkDistance(a, pa, b, pb, decide);
    if (std::fabs(full.distance) > 1e-9) {
      ASSERT_EQ(full.state, quick.state) << DescribePair(a, pa, b, pb);
    }
  }
  const Shape box = *Shape::MakeBox({1, 2, 3});
  const GjkResult same = GjkDistance(box, Pose{}, box, Pose{});
  EXPECT_EQ(same.state, GjkState::kOverlapping);
  EXPECT_TRUE(same.cores_overlap);
}

}  // namespace
}  // namespace hitbox
