// Shape construction, validation, bounds and support functions.
#include "hitbox/shape/shapes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

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

// A mesh the caller gives up (Make(TriangleMeshShape&&)) has its vertices
// and triangles freed by the build, and builds the same mesh as from a copy:
// the same input back to the bit, the same bytes; a bad one gives the same
// error.
TEST(ShapeTest, MeshGivenUpFreesItsArraysAndBuildsTheSame) {
  TriangleMeshShape m;
  for (int i = 0; i <= 20; ++i) {
    for (int j = 0; j <= 20; ++j) {
      m.vertices.push_back({0.37 * i, std::sin(0.3 * i + 0.2 * j), 0.41 * j + 1e-7 * i});
    }
  }
  for (uint32_t i = 0; i < 20; ++i) {
    for (uint32_t j = 0; j < 20; ++j) {
      const uint32_t a = i * 21 + j;
      m.triangles.push_back({a, a + 1, a + 21});
      m.triangles.push_back({a + 1, a + 22, a + 21});
    }
  }
  const TriangleMeshShape copy = m;
  const Result<Shape> kept = Shape::Make(copy);
  const Result<Shape> given = Shape::Make(std::move(m));
  ASSERT_TRUE(kept.ok() && given.ok());
  // NOLINTNEXTLINE(bugprone-use-after-move): the point
  EXPECT_EQ(m.vertices.capacity() + m.triangles.capacity(), 0u);
  EXPECT_EQ(given->DataBytes(), kept->DataBytes());
  const TriangleMeshShape a = *kept->mesh_input(), b = *given->mesh_input();
  ASSERT_EQ(a.vertices.size(), b.vertices.size());
  EXPECT_EQ(std::memcmp(a.vertices.data(), b.vertices.data(), a.vertices.size() * sizeof(Vec3)), 0);
  EXPECT_EQ(a.triangles, b.triangles);
  TriangleMeshShape bad = copy;
  bad.triangles[7][1] = 9999;
  const Result<Shape> refused_copy = Shape::Make(bad);
  const Result<Shape> refused = Shape::Make(std::move(bad));
  ASSERT_FALSE(refused.ok() || refused_copy.ok());
  EXPECT_EQ(refused.error().message, refused_copy.error().message);
  EXPECT_NE(refused.error().message.find("triangles[7][1]"), std::string::npos);
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

// A hull's world box is, to the bit, the union of its rotated vertices
// (Mat33 * Vec3, Aabb::Union) moved by the position, as the scalar loop gave
// it: random hulls and rotations, exact ties (axis-aligned rotations, equal
// vertex coordinates), signed zeros, and non-finite rotations (whose box,
// NaN or not, must come out the same too).
TEST(ShapeTest, HullWorldBoundsAreTheRotatedVerticesToTheBit) {
  testing::Random rng(11);
  const auto same = [](double a, double b) {
    return std::memcmp(&a, &b, sizeof(double)) == 0 || (std::isnan(a) && std::isnan(b));
  };
  const Quat turns[] = {Quat{}, Quat::FromAxisAngle({0, 0, 1}, M_PI / 2),
                        Quat::FromAxisAngle({1, 0, 0}, M_PI), Quat{0, 0, 0, -1}};
  for (int i = 0; i < 3000; ++i) {
    const int kind = i % 3;
    std::vector<Vec3> points;
    if (kind == 0) {
      const Shape s = rng.MakeShape(ShapeKind::kConvexHull);
      points = s.hull()->vertices();
    } else {
      // A box of integer corners (ties on every axis), some at zero.
      const Vec3 e{static_cast<double>(rng.Int(0, 3)) + 1, static_cast<double>(rng.Int(0, 3)),
                   static_cast<double>(rng.Int(0, 3)) + 0.5};
      for (int c = 0; c < 8; ++c) {
        points.push_back({c & 1 ? e.x : -e.x, c & 2 ? e.y + 1 : -0.0, c & 4 ? e.z : -e.z});
      }
    }
    const Result<Shape> hull = Shape::Make(ConvexHull{points});
    ASSERT_TRUE(hull.ok()) << i;
    Quat rot = kind == 1 ? turns[rng.Int(0, 3)] : rng.Rotation();
    if (i % 50 == 7) rot.y = kNaN;
    if (i % 50 == 9) rot.w = kInf;
    const Pose pose(kind == 2 ? Vec3{} : rng.InBox(100.0), rot);
    const Mat33 r = pose.rotation.ToMatrix();
    Aabb want{Vec3::Splat(kInf), Vec3::Splat(-kInf)};
    for (const Vec3& v : hull->hull()->vertices()) want = want.Union(r * v);
    want = {want.min + pose.position, want.max + pose.position};
    const Aabb got = hull->WorldBounds(pose);
    for (int a = 0; a < 3; ++a) {
      ASSERT_TRUE(same(got.min[a], want.min[a])) << i << " min " << a << " " << got.min[a];
      ASSERT_TRUE(same(got.max[a], want.max[a])) << i << " max " << a << " " << got.max[a];
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
