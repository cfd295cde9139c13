// ComputeContact(): hand-made deep, contained and touching cases per pair;
// seeded random property tests for every ordered pair: moving B by
// depth * normal leaves the shapes touching (within 1e-6 m), moving it a bit
// less leaves them overlapping, closed forms agree with EPA, and the pair
// translated 20 km from the origin gives the same depth.
#include <gtest/gtest.h>

#include <cmath>

#include "geometry/epa.h"
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
using testing::Random;
using testing::Translated;
using testing::VariedShape;
using testing::VecNear;

using testing::At;
using testing::BoxH;
using testing::CapsuleRH;
using testing::CylinderRH;
using testing::SphereR;

/// Checks the contract of a contact: finite, unit normal, point_b = point_a -
/// depth * normal, and moving B by depth * normal leaves A and B touching
/// (distance <= 1e-6 and penetration <= 1e-6). Returns the contact.
::testing::AssertionResult ContactSeparates(const Shape& a, const Pose& pa, const Shape& b,
                                            const Pose& pb, Contact* out = nullptr) {
  Contact c;
  if (!ComputeContact(a, pa, b, pb, &c)) {
    return ::testing::AssertionFailure() << "no contact: " << DescribePair(a, pa, b, pb);
  }
  if (out != nullptr) *out = c;
  const auto fail = [&]() {
    return ::testing::AssertionFailure()
           << "depth=" << c.depth << " normal=" << ToString(c.normal) << " point_a="
           << ToString(c.point_a) << " point_b=" << ToString(c.point_b) << " for "
           << DescribePair(a, pa, b, pb) << ": ";
  };
  if (!std::isfinite(c.depth) || c.depth < 0.0 || !c.normal.IsFinite() ||
      !c.point_a.IsFinite() || !c.point_b.IsFinite()) {
    return fail() << "not finite";
  }
  if (std::fabs(c.normal.Length() - 1.0) > 1e-12) return fail() << "normal not unit";
  if ((c.point_b - (c.point_a - c.normal * c.depth)).Length() > 1e-9) {
    return fail() << "point_b != point_a - depth * normal";
  }
  const Pose moved = Translated(pb, c.normal * c.depth);
  const double gap = ComputeDistance(a, pa, b, moved).distance;
  if (gap > 1e-6) return fail() << "moved apart by " << gap;
  Contact after;
  if (ComputeContact(a, pa, b, moved, &after) && after.depth > 1e-6) {
    return fail() << "still overlapping by " << after.depth;
  }
  if (c.depth > 2e-6) {
    const Pose short_move = Translated(pb, c.normal * (c.depth - 1e-6));
    if (!Overlap(a, pa, b, short_move)) return fail() << "a shorter move already separates";
  }
  return ::testing::AssertionSuccess();
}

// Coincident centres: finite contacts along a deterministic axis, for every pair.
TEST(ContactTest, CoincidentCentresAreFinite) {
  const Shape shapes[4] = {SphereR(0.7), BoxH(0.5, 1, 1.5), CapsuleRH(0.4, 1), CylinderRH(0.6, 0.8)};
  for (const Shape& a : shapes) {
    for (const Shape& b : shapes) {
      Contact c;
      EXPECT_TRUE(ContactSeparates(a, At(1, 2, 3), b, At(1, 2, 3), &c));
      Contact again;
      ASSERT_TRUE(ComputeContact(a, At(1, 2, 3), b, At(1, 2, 3), &again));
      EXPECT_TRUE(VecNear(c.normal, again.normal, 0.0)) << "not deterministic";
    }
  }
}

// Sphere-sphere: depth is the radius sum minus the centre distance, normal from A to B.
TEST(ContactTest, SphereSphere) {
  Contact c;
  ASSERT_TRUE(ContactSeparates(SphereR(1), At(0, 0, 0), SphereR(0.5), At(1, 0, 0), &c));
  EXPECT_NEAR(c.depth, 0.5, 1e-12);
  EXPECT_TRUE(VecNear(c.normal, {1, 0, 0}, 1e-12));
  EXPECT_TRUE(VecNear(c.point_a, {1, 0, 0}, 1e-12));
  EXPECT_TRUE(VecNear(c.point_b, {0.5, 0, 0}, 1e-12));
  // Exactly touching: depth 0.
  ASSERT_TRUE(ContactSeparates(SphereR(1), At(0, 0, 0), SphereR(0.5), At(0, 1.5, 0), &c));
  EXPECT_NEAR(c.depth, 0.0, 1e-12);
  EXPECT_FALSE(ComputeContact(SphereR(1), At(0, 0, 0), SphereR(0.5), At(0, 1.5 + 1e-9, 0), &c));
}

// Sphere-box: centre outside (near a face) and inside (nearest face decides).
TEST(ContactTest, SphereBox) {
  Contact c;
  const Shape box = BoxH(1, 2, 3);
  ASSERT_TRUE(ContactSeparates(SphereR(0.5), At(1.25, 0, 0), box, At(0, 0, 0), &c));
  EXPECT_NEAR(c.depth, 0.25, 1e-12);
  EXPECT_TRUE(VecNear(c.normal, {-1, 0, 0}, 1e-12));  // the box moves away along -X
  ASSERT_TRUE(ContactSeparates(SphereR(0.5), At(0.2, 1.7, 0.1), box, At(0, 0, 0), &c));
  EXPECT_NEAR(c.depth, 0.3 + 0.5, 1e-12);
  EXPECT_TRUE(VecNear(c.normal, {0, -1, 0}, 1e-12));
  // Mirrored: the sphere is B, so it moves out through +Y.
  ASSERT_TRUE(ContactSeparates(box, At(0, 0, 0), SphereR(0.5), At(0.2, 1.7, 0.1), &c));
  EXPECT_TRUE(VecNear(c.normal, {0, 1, 0}, 1e-12));
}

// Capsule-capsule crossing at their centres: depth is the radius sum along the common perpendicular.
TEST(ContactTest, CrossingCapsules) {
  Contact c;
  const Pose along_x{Vec3{0, 0, 0.1}, Quat::FromAxisAngle({0, 0, 1}, M_PI / 2)};
  ASSERT_TRUE(ContactSeparates(CapsuleRH(0.3, 1), At(0, 0, 0), CapsuleRH(0.2, 1), along_x, &c));
  EXPECT_NEAR(c.depth, 0.4, 1e-12);
  EXPECT_TRUE(VecNear(c.normal, {0, 0, 1}, 1e-12));
  // Collinear overlapping capsules: pushed sideways by the radius sum.
  ASSERT_TRUE(ContactSeparates(CapsuleRH(0.3, 1), At(0, 0, 0), CapsuleRH(0.2, 1), At(0, 0.5, 0), &c));
  EXPECT_NEAR(c.depth, 0.5, 1e-12);
}

// Box-box: face contact and an exactly touching stack.
TEST(ContactTest, BoxBox) {
  Contact c;
  ASSERT_TRUE(ContactSeparates(BoxH(1, 1, 1), At(0, 0, 0), BoxH(1, 1, 1), At(0.2, 1.9, -0.3), &c));
  EXPECT_NEAR(c.depth, 0.1, 1e-12);
  EXPECT_TRUE(VecNear(c.normal, {0, 1, 0}, 1e-12));
  ASSERT_TRUE(ContactSeparates(BoxH(1, 1, 1), At(0, 0, 0), BoxH(1, 1, 1), At(0.2, 2.0, -0.3), &c));
  EXPECT_NEAR(c.depth, 0.0, 1e-12);
}

// Cylinders (EPA): stacked caps, side by side, a contained cylinder, a box.
TEST(ContactTest, Cylinders) {
  Contact c;
  const Shape cyl = CylinderRH(0.5, 1);
  ASSERT_TRUE(ContactSeparates(cyl, At(0, 0, 0), cyl, At(0.1, 1.9, 0), &c));
  EXPECT_NEAR(c.depth, 0.1, 1e-7);
  EXPECT_TRUE(VecNear(c.normal, {0, 1, 0}, 1e-6));
  ASSERT_TRUE(ContactSeparates(cyl, At(0, 0, 0), cyl, At(0.9, 0.2, 0), &c));
  EXPECT_NEAR(c.depth, 0.1, 1e-7);
  EXPECT_TRUE(ContactSeparates(CylinderRH(0.1, 0.1), At(0.1, 0.2, 0), cyl, At(0, 0, 0), &c));
  EXPECT_TRUE(ContactSeparates(cyl, At(0, 0, 0), BoxH(1, 1, 1), At(0, 1.95, 0), &c));
  EXPECT_NEAR(c.depth, 0.05, 1e-7);
  EXPECT_TRUE(ContactSeparates(CapsuleRH(0.2, 0.5), At(0.6, 0, 0), cyl, At(0, 0, 0), &c));
  EXPECT_NEAR(c.depth, 0.1, 1e-7);
  EXPECT_TRUE(ContactSeparates(CapsuleRH(0.2, 0.5), At(0.1, 0, 0), cyl, At(0, 0, 0), &c));
  // Exactly touching rims: depth 0 up to EPA's tolerance (1e-9 * scale).
  EXPECT_TRUE(ContactSeparates(cyl, At(0, 0, 0), cyl, At(1.0, 0.0, 0), &c));
  EXPECT_NEAR(c.depth, 0.0, 1e-8);
}

// Every ordered pair, 10,000 random overlapping configurations each (a fifth
// thin or tiny): the contact contract holds, and at 20 km the depth is the same.
TEST(ContactTest, RandomPairsSeparateExactly) {
  const Vec3 far{-20000.0, 20000.0, 10000.0};
  for (const auto& [ka, kb] : AllKindPairs()) {
    Random rng(3000 + 16 * static_cast<int>(ka) + static_cast<int>(kb));
    int tested = 0;
    for (int attempt = 0; tested < 10000 && attempt < 100000; ++attempt) {
      const Shape a = VariedShape(rng, ka);
      const Shape b = VariedShape(rng, kb);
      const auto [pa, pb] = NearbyPoses(rng, a, b);
      if (!Overlap(a, pa, b, pb)) continue;
      ++tested;
      Contact c;
      ASSERT_TRUE(ContactSeparates(a, pa, b, pb, &c)) << PairName(ka, kb);
      Contact f;
      ASSERT_TRUE(ComputeContact(a, Translated(pa, far), b, Translated(pb, far), &f))
          << PairName(ka, kb) << " far: " << DescribePair(a, pa, b, pb);
      ASSERT_NEAR(c.depth, f.depth, 1e-6) << PairName(ka, kb) << " " << DescribePair(a, pa, b, pb);
    }
    EXPECT_EQ(tested, 10000) << PairName(ka, kb);
  }
}

/// Penetration depth by the generic path (GJK on the cores, margins for
/// shallow contacts, EPA on the cores plus the margins for deep ones).
double GenericDepth(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb, bool* overlap) {
  internal::ConvexCore ca = internal::CoreOf(a);
  internal::ConvexCore cb = internal::CoreOf(b);
  const Pose rel = pa.RelativeTo(pb);
  const internal::GjkResult g = internal::GjkDistance(ca, cb, rel);
  *overlap = g.state == internal::GjkState::kOverlapping;
  const double margins = ca.margin + cb.margin;
  if (!g.cores_overlap && g.core_distance > 1e-12 * g.scale) return margins - g.core_distance;
  ca.margin = 0.0;
  cb.margin = 0.0;
  return internal::Epa(ca, cb, rel, g).depth + margins;
}

// Closed-form contacts (every pair but box-cylinder, capsule-cylinder and
// cylinder-cylinder) agree with the generic GJK + EPA path within 1e-6 m.
TEST(ContactTest, ClosedFormsMatchEpa) {
  for (const auto& [ka, kb] : AllKindPairs()) {
    const bool generic = (ka == ShapeKind::kCylinder && kb != ShapeKind::kSphere) ||
                         (kb == ShapeKind::kCylinder && ka != ShapeKind::kSphere);
    if (generic) continue;
    Random rng(4000 + 16 * static_cast<int>(ka) + static_cast<int>(kb));
    int tested = 0;
    for (int attempt = 0; tested < 2000 && attempt < 20000; ++attempt) {
      const Shape a = rng.MakeShape(ka);
      const Shape b = rng.MakeShape(kb);
      const auto [pa, pb] = NearbyPoses(rng, a, b);
      Contact c;
      if (!ComputeContact(a, pa, b, pb, &c)) continue;
      bool overlap = false;
      const double depth = GenericDepth(a, pa, b, pb, &overlap);
      if (!overlap) continue;  // within GJK's tolerance of touching
      ++tested;
      ASSERT_NEAR(c.depth, depth, 1e-6) << PairName(ka, kb) << " " << DescribePair(a, pa, b, pb);
    }
    EXPECT_GT(tested, 1000) << PairName(ka, kb);
  }
}

}  // namespace
}  // namespace hitbox
