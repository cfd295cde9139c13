// Tests of Raycast(): hand-made rays per shape (hit with known fraction, miss,
// grazing, start inside, zero length, far from the origin) and seeded random
// rays against bisection on a closed-form point-in-shape test.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>

#include "cast_reference.h"
#include "geometry/gjk.h"
#include "hitbox/collision/collide.h"
#include "shape/convex_core.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::Random;

constexpr std::array<ShapeKind, 4> kKinds = {ShapeKind::kSphere, ShapeKind::kBox,
                                             ShapeKind::kCapsule, ShapeKind::kCylinder};

// Extent 1 along local X for every kind, 1.5 along Y except the sphere.
Shape Fixed(ShapeKind k) {
  switch (k) {
    case ShapeKind::kSphere: return *Shape::MakeSphere(1.0);
    case ShapeKind::kBox: return *Shape::MakeBox({1.0, 1.5, 0.75});
    case ShapeKind::kCapsule: return *Shape::MakeCapsule(1.0, 0.5);
    case ShapeKind::kCylinder: return *Shape::MakeCylinder(1.0, 1.5);
    default: break;  // only the four primitives here
  }
  return {};
}

// A ray along +X from x = -5 meets every shape's side at x = -1.
TEST(RaycastTest, HeadOnEveryShape) {
  for (ShapeKind k : kKinds) {
    const CastResult r = Raycast({-5, 0, 0}, {8, 0, 0}, Fixed(k), Pose());
    ASSERT_EQ(r.state, CastState::kHit) << ShapeKindName(k);
    EXPECT_NEAR(r.fraction, 0.5, 1e-15) << ShapeKindName(k);
    EXPECT_TRUE(testing::VecNear(r.normal, {-1, 0, 0}, 1e-15)) << ShapeKindName(k);
    EXPECT_TRUE(testing::VecNear(r.point, {-1, 0, 0}, 1e-14)) << ShapeKindName(k);
  }
}

// Down the Y axis: sphere at 1, box and cylinder at their half-height 1.5,
// capsule at its cap 0.5 + 1.
TEST(RaycastTest, AlongAxisHitsCaps) {
  for (ShapeKind k : kKinds) {
    const CastResult r = Raycast({0, 5, 0}, {0, -10, 0}, Fixed(k), Pose());
    ASSERT_EQ(r.state, CastState::kHit) << ShapeKindName(k);
    const double top = k == ShapeKind::kSphere ? 1.0 : 1.5;
    EXPECT_NEAR(r.fraction, (5.0 - top) / 10.0, 1e-15) << ShapeKindName(k);
    EXPECT_TRUE(testing::VecNear(r.normal, {0, 1, 0}, 1e-15)) << ShapeKindName(k);
  }
}

TEST(RaycastTest, MissShortAndAway) {
  for (ShapeKind k : kKinds) {
    const Shape s = Fixed(k);
    EXPECT_EQ(Raycast({-5, 3, 0}, {10, 0, 0}, s, Pose()).state, CastState::kMiss);
    EXPECT_EQ(Raycast({-5, 0, 0}, {3.9, 0, 0}, s, Pose()).state, CastState::kMiss);
    EXPECT_EQ(Raycast({-5, 0, 0}, {-3, 0, 0}, s, Pose()).state, CastState::kMiss);
    EXPECT_EQ(Raycast({-5, 0, 0}, {-3, 0, 0}, s, Pose()).fraction, 1.0);
  }
}

// A ray exactly tangent to the surface touches it (touching counts).
TEST(RaycastTest, GrazingCountsAsHit) {
  // Tangent to the sphere at (0, 1, 0).
  CastResult r = Raycast({-4, 1, 0}, {8, 0, 0}, Fixed(ShapeKind::kSphere), Pose());
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, 0.5, 1e-7);
  EXPECT_LE(Dot(r.normal, Vec3{8, 0, 0}), 1e-6);
  // Along the top face of the box.
  r = Raycast({-4, 1.5, 0}, {8, 0, 0}, Fixed(ShapeKind::kBox), Pose());
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, 3.0 / 8.0, 1e-15);
  // Along the side line of the cylinder (tangent to the infinite cylinder).
  r = Raycast({-4, 0, 1}, {8, 0, 0}, Fixed(ShapeKind::kCylinder), Pose());
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, 0.5, 1e-7);
  // Tangent to the capsule's side.
  r = Raycast({-4, 0.25, 1}, {8, 0, 0}, Fixed(ShapeKind::kCapsule), Pose());
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, 0.5, 1e-7);
  // Just outside: misses.
  r = Raycast({-4, 1.5 + 1e-9, 0}, {8, 0, 0}, Fixed(ShapeKind::kBox), Pose());
  EXPECT_EQ(r.state, CastState::kMiss);
}

// A ray starting inside reports kStartedOverlapping at fraction 0 with the
// nearest face's outward normal; a zero-length ray is a point-in-shape test.
TEST(RaycastTest, StartInsideAndZeroLength) {
  for (ShapeKind k : kKinds) {
    const Shape s = Fixed(k);
    const Pose p({3, -2, 1}, Quat::FromAxisAngle({1, 1, 0}, 0.7));
    const Vec3 inside = p.TransformPoint({0.8, 0.0, 0.0});
    const CastResult r = Raycast(inside, {5, 5, 5}, s, p);
    EXPECT_EQ(r.state, CastState::kStartedOverlapping) << ShapeKindName(k);
    EXPECT_EQ(r.fraction, 0.0);
    EXPECT_EQ(r.depth, 0.0);
    EXPECT_TRUE(testing::VecNear(r.normal, p.TransformDirection({1, 0, 0}), 1e-9))
        << ShapeKindName(k);
    EXPECT_EQ(Raycast(inside, {0, 0, 0}, s, p).state, CastState::kStartedOverlapping);
    EXPECT_EQ(Raycast(p.TransformPoint({3, 0, 0}), {0, 0, 0}, s, p).state, CastState::kMiss);
    // On the surface counts as inside.
    EXPECT_EQ(Raycast({1, 0, 0}, {0, 0, 0}, s, Pose()).state, CastState::kStartedOverlapping);
  }
}

TEST(RaycastTest, NonFiniteInputIsAMiss) {
  EXPECT_EQ(Raycast({std::nan(""), 0, 0}, {1, 0, 0}, Fixed(ShapeKind::kBox), Pose()).state,
            CastState::kMiss);
  EXPECT_EQ(Raycast({0, 0, 0}, {INFINITY, 0, 0}, Fixed(ShapeKind::kBox), Pose()).state,
            CastState::kMiss);
}

// Random rays: the fraction equals bisection on the closed-form point-in-shape
// test (the distance to minimise comes from GJK with a point), the normal is
// unit, faces the ray, and the shape's support along it is the hit point; 20 km
// from the origin the fraction is unchanged.
class RaycastShapeTest : public ::testing::TestWithParam<ShapeKind> {};

TEST_P(RaycastShapeTest, MatchesBisection) {
  const ShapeKind kind = GetParam();
  Random rng(4242 + static_cast<int>(kind));
  const internal::ConvexCore point{};  // a point core, no margin
  int hits = 0, misses = 0, inside = 0, failures = 0;
  for (int i = 0; i < 10000 && failures < 5; ++i) {
    const Shape s = rng.MakeShape(kind, 0.1, 2.0);
    const Pose p(rng.InBox(1.0), rng.Rotation());
    const Vec3 o = p.position + rng.InBox(rng.Int(0, 3) == 0 ? 1.5 : 5.0);
    Vec3 d = (p.position + rng.InBox(2.0) - o) * rng.Uniform(0.2, 1.8);
    if (rng.Int(0, 9) == 0) d = rng.InBox(5.0);
    const CastResult r = Raycast(o, d, s, p);
    const internal::ConvexCore core = internal::CoreOf(s);
    const auto dist = [&](double t) {
      const Pose at(p.InverseTransformPoint(o + d * t));
      const internal::GjkResult g = internal::GjkDistance(core, point, at);
      return g.state == internal::GjkState::kOverlapping ? 0.0 : g.distance;
    };
    const auto contains = [&](double t) {
      return testing::ContainsLocalPoint(s, p.InverseTransformPoint(o + d * t));
    };
    const testing::RefCast ref = testing::ReferenceFirstContact(dist, contains);
    if (!ref.hit && ref.min_gap < 1e-9) continue;  // grazing within rounding
    std::string why;
    if (ref.started) {
      ++inside;
      if (r.state != CastState::kStartedOverlapping || r.fraction != 0.0) why = "expected inside";
    } else if (!ref.hit) {
      ++misses;
      if (r.state != CastState::kMiss) why = "expected miss";
    } else {
      ++hits;
      if (r.state != CastState::kHit) {
        why = "expected hit at " + std::to_string(ref.t);
      } else {
        if (std::fabs(r.fraction - ref.t) > 1e-9 * std::max(1.0, 1.0 / d.Length()) &&
            std::fabs(r.fraction - ref.t) > 1e-7) {
          why = "fraction " + std::to_string(r.fraction) + " vs " + std::to_string(ref.t);
        }
        if (std::fabs(r.normal.Length() - 1.0) > 1e-12) why += " normal not unit";
        if (Dot(r.normal, d) > 1e-6) why += " normal along the ray";
        // The hit point is extreme along the normal: a supporting plane.
        const Vec3 sp = p.TransformPoint(s.Support(p.InverseTransformDirection(r.normal)));
        if (std::fabs(Dot(r.normal, sp - r.point)) > 1e-9) why += " normal not a surface normal";
        const Vec3 far{-19000.0, 7000.0, 20000.0};
        const CastResult rf = Raycast(o + far, d, s, Pose(p.position + far, p.rotation));
        if (rf.state != CastState::kHit || std::fabs(rf.fraction - r.fraction) > 1e-9) {
          why += " far from origin: " + std::to_string(rf.fraction);
        }
      }
    }
    if (!why.empty()) {
      ++failures;
      ADD_FAILURE() << ShapeKindName(kind) << " ray " << i << ": " << why << "; got state "
                    << static_cast<int>(r.state) << " fraction " << r.fraction
                    << "\n  shape=" << s.ToString() << " pose=" << ToString(p)
                    << " origin=" << ToString(o) << " translation=" << ToString(d);
    }
  }
  EXPECT_GT(hits, 1000);
  EXPECT_GT(misses, 1000);
  EXPECT_GT(inside, 100);
}

// Extreme scales and flat discs: finite results, fraction in [0, 1], unit
// normal that never points along the ray after the start.
TEST_P(RaycastShapeTest, ExtremeInputsStayWellFormed) {
  const ShapeKind kind = GetParam();
  Random rng(7 + static_cast<int>(kind));
  for (int i = 0; i < 5000; ++i) {
    const double scale = std::pow(10.0, rng.Uniform(-3.0, 2.0));
    Shape s = rng.MakeShape(kind, 0.01 * scale, scale);
    if (kind == ShapeKind::kCylinder && rng.Int(0, 3) == 0) s = *Shape::MakeCylinder(scale, 0.0);
    const Pose p(rng.InBox(scale), rng.Rotation());
    const Vec3 o = p.position + rng.InBox(3.0 * scale);
    const Vec3 d =
        (p.position - o) * rng.Uniform(0.0, 3.0) + rng.InBox(rng.Int(0, 1) ? 1e4 : scale);
    const CastResult r = Raycast(o, d, s, p);
    ASSERT_TRUE(r.fraction >= 0.0 && r.fraction <= 1.0) << s.ToString();
    ASSERT_TRUE(r.normal.IsFinite() && std::fabs(r.normal.Length() - 1.0) < 1e-9)
        << s.ToString() << " " << ToString(p) << " o=" << ToString(o) << " d=" << ToString(d);
    if (r.state == CastState::kHit && r.fraction > 0.0) {
      ASSERT_LE(Dot(r.normal, d), 1e-6);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllShapes, RaycastShapeTest, ::testing::ValuesIn(kKinds),
                         [](const auto& param_info) {
                           return std::string(ShapeKindName(param_info.param));
                         });

}  // namespace
}  // namespace hitbox
