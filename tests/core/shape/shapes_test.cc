// Shape construction, validation, bounds and support functions.
#include "hitbox/shape/shapes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test_util.h"

namespace hitbox {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Invalid parameters are errors that name the field, never UB.
TEST(ShapeTest, RejectsBadParameters) {
  for (double bad : {0.0, -1.0, kNaN, kInf, -kInf}) {
    EXPECT_FALSE(Shape::MakeSphere(bad).ok());
    EXPECT_FALSE(Shape::MakeBox({1, bad, 1}).ok());
    EXPECT_FALSE(Shape::MakeCapsule(bad, 1).ok());
    EXPECT_FALSE(Shape::MakeCylinder(bad, 1).ok());
  }
  EXPECT_FALSE(Shape::MakeCapsule(1, -0.1).ok());
  EXPECT_FALSE(Shape::MakeCylinder(1, kNaN).ok());
  EXPECT_TRUE(Shape::MakeCapsule(1, 0).ok());
  const auto r = Shape::MakeBox({1, -2, 1});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("half_extents.y"), std::string::npos) << r.error().message;
}

// World bounds contain every support point in every direction, and touch them.
TEST(ShapeTest, WorldBoundsAreTightAroundSupport) {
  testing::Random rng(7);
  for (int i = 0; i < 2000; ++i) {
    const Shape s = rng.MakeShape(static_cast<ShapeKind>(i % kConvexKindCount));
    const Pose pose(rng.InBox(100.0), rng.Rotation());
    const Aabb box = s.WorldBounds(pose);
    for (int axis = 0; axis < 3; ++axis) {
      for (double sign : {-1.0, 1.0}) {
        Vec3 d;
        d[axis] = sign;
        const Vec3 p = pose.TransformPoint(s.Support(pose.InverseTransformDirection(d)));
        const double bound = sign > 0 ? box.max[axis] : box.min[axis];
        EXPECT_NEAR(p[axis], bound, 1e-9) << s.ToString() << " " << ToString(pose);
      }
    }
  }
}

// Pose composition and inverse round-trip far from the origin.
TEST(MathTest, PoseRoundTripFarFromOrigin) {
  testing::Random rng(3);
  for (int i = 0; i < 1000; ++i) {
    const Pose a(rng.InBox(1e5), rng.Rotation());
    const Pose b(rng.InBox(1e5), rng.Rotation());
    const Vec3 p = rng.InBox(1e5);
    EXPECT_TRUE(testing::VecNear(a.InverseTransformPoint(a.TransformPoint(p)), p, 1e-9));
    EXPECT_TRUE(testing::PoseNear(a * a.RelativeTo(b), b, 1e-9));
    EXPECT_TRUE(testing::PoseNear(a.Inverse() * a, Pose::Identity(), 1e-12));
  }
}

}  // namespace
}  // namespace hitbox
