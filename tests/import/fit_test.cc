// Fitting helpers of the importer (import/src/fit.h): transform splitting
// and the quaternion of a rotation matrix, on seeded random cases.
#include <gtest/gtest.h>

#include <random>

#include "fit.h"
#include "test_util.h"

namespace hitbox::import {
namespace {

using hitbox::testing::VecNear;

Quat RandomRotation(std::mt19937& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  return Quat{n(rng), n(rng), n(rng), n(rng)}.Normalized();
}

// QuatFromMatrix inverts Quat::ToMatrix (up to sign) for any rotation.
TEST(Fit, QuatFromMatrixInvertsToMatrix) {
  std::mt19937 rng(5);
  for (int i = 0; i < 2000; ++i) {
    const Quat q = RandomRotation(rng);
    const Quat back = QuatFromMatrix(q.ToMatrix());
    const double dot = q.x * back.x + q.y * back.y + q.z * back.z + q.w * back.w;
    EXPECT_NEAR(std::fabs(dot), 1.0, 1e-12) << ToString(q) << " vs " << ToString(back);
  }
}

// Rotation * axis scale (mirrors included) splits into a pose and a diagonal
// bake that reproduce every point.
TEST(Fit, SplitReproducesTheTransform) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> s(0.2, 3.0);
  std::uniform_real_distribution<double> t(-50.0, 50.0);
  for (int i = 0; i < 500; ++i) {
    const Quat q = RandomRotation(rng);
    Vec3 scale{s(rng), s(rng), s(rng)};
    if (i % 3 == 0) scale.y = -scale.y;  // a mirror
    Affine a;
    const Mat33 r = q.ToMatrix();
    for (int k = 0; k < 3; ++k) a.linear.row[k] = {r.row[k][0] * scale.x, r.row[k][1] * scale.y, r.row[k][2] * scale.z};
    a.translation = {t(rng), t(rng), t(rng)};
    auto split = Split(a);
    ASSERT_TRUE(split.ok()) << split.error().message;
    EXPECT_FALSE(split->shear);
    EXPECT_TRUE(split->pose.rotation.IsNormalized(1e-12));
    const Vec3 p{t(rng), t(rng), t(rng)};
    EXPECT_TRUE(VecNear(split->pose.TransformPoint(split->bake * p), a.Apply(p), 1e-9));
  }
}

// A shearing transform is baked whole; a zero scale is refused.
TEST(Fit, SplitShearAndZeroScale) {
  Affine shear;
  shear.linear.row[0] = {1, 0.5, 0};
  auto split = Split(shear);
  ASSERT_TRUE(split.ok());
  EXPECT_TRUE(split->shear);
  EXPECT_TRUE(VecNear(split->pose.TransformPoint(split->bake * Vec3{1, 2, 3}), shear.Apply({1, 2, 3}), 1e-12));
  Affine flat;
  flat.linear.row[1] = {0, 0, 0};
  EXPECT_FALSE(Split(flat).ok());
}

// Degenerate triangles: repeated vertices and collinear points; slivers that
// still have area are kept.
TEST(Fit, DegenerateTriangles) {
  EXPECT_TRUE(IsDegenerate({0, 0, 0}, {0, 0, 0}, {1, 0, 0}));
  EXPECT_TRUE(IsDegenerate({0, 0, 0}, {1, 0, 0}, {2, 0, 0}));
  EXPECT_TRUE(IsDegenerate({0, 0, 0}, {1, 1e-12, 0}, {2, 0, 0}));
  EXPECT_FALSE(IsDegenerate({0, 0, 0}, {1, 1e-6, 0}, {2, 0, 0}));
  EXPECT_FALSE(IsDegenerate({0, 0, 0}, {1, 0, 0}, {0, 1, 0}));
}

}  // namespace
}  // namespace hitbox::import
