// Tests of Cast(): hand-made cases per ordered pair, seeded random property
// tests against bisection on the overlap test, and the shared conformance
// case files checked by brute force.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>

#include "cast_conformance.h"
#include "cast_reference.h"
#include "collision/cast_internal.h"
#include "geometry/gjk_raycast.h"
#include "hitbox/collision/collide.h"
#include "shape/convex_core.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::DescribePair;
using testing::Random;

constexpr std::array<ShapeKind, 4> kKinds = {ShapeKind::kSphere, ShapeKind::kBox,
                                             ShapeKind::kCapsule, ShapeKind::kCylinder};

// A fixed shape of each kind: extent along local X is 1 (sphere, capsule,
// cylinder radius; box half-extent), along Y it is 1.5 for all but the sphere.
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

std::string PairName(ShapeKind a, ShapeKind b) {
  return std::string(ShapeKindName(a)) + "-" + ShapeKindName(b);
}

void ExpectUnit(const Vec3& n, const std::string& what) {
  EXPECT_NEAR(n.Length(), 1.0, 1e-12) << what << " normal " << ToString(n);
}

// Head-on along X, every pair: the gap 6 - 1 - 1 closes after 4 of 12 m.
TEST(CastTest, HeadOnHitEveryPair) {
  for (ShapeKind ka : kKinds) {
    for (ShapeKind kb : kKinds) {
      const Shape a = Fixed(ka), b = Fixed(kb);
      const Pose pa({-6, 0, 0}), pb({0, 0, 0});
      const CastResult r = Cast(a, pa, {12, 0, 0}, b, pb);
      ASSERT_EQ(r.state, CastState::kHit) << PairName(ka, kb);
      EXPECT_NEAR(r.fraction, 4.0 / 12.0, 1e-9) << PairName(ka, kb);
      EXPECT_TRUE(testing::VecNear(r.normal, {-1, 0, 0}, 1e-9)) << PairName(ka, kb);
      EXPECT_NEAR(r.point.x, -1.0, 1e-6) << PairName(ka, kb);
      EXPECT_EQ(r.depth, 0.0);
    }
  }
}

// The same head-on cast with both shapes rotated about the motion axis by 90
// degrees still hits; with an offset well above it misses.
TEST(CastTest, SeparatedMissEveryPair) {
  for (ShapeKind ka : kKinds) {
    for (ShapeKind kb : kKinds) {
      const Shape a = Fixed(ka), b = Fixed(kb);
      const CastResult r = Cast(a, Pose({-6, 10, 0}), {12, 0, 0}, b, Pose({0, 0, 0}));
      EXPECT_EQ(r.state, CastState::kMiss) << PairName(ka, kb);
      EXPECT_EQ(r.fraction, 1.0);
      // Short of the target.
      const CastResult s = Cast(a, Pose({-6, 0, 0}), {3.5, 0, 0}, b, Pose({0, 0, 0}));
      EXPECT_EQ(s.state, CastState::kMiss) << PairName(ka, kb);
      // Moving away.
      const CastResult t = Cast(a, Pose({-6, 0, 0}), {-3, 0, 0}, b, Pose({0, 0, 0}));
      EXPECT_EQ(t.state, CastState::kMiss) << PairName(ka, kb);
    }
  }
}

// Start inside: every pair reports kStartedOverlapping at fraction 0 with a
// unit normal; a zero translation is an overlap test.
TEST(CastTest, StartInsideAndZeroTranslationEveryPair) {
  for (ShapeKind ka : kKinds) {
    for (ShapeKind kb : kKinds) {
      const Shape a = Fixed(ka), b = Fixed(kb);
      const Pose pa({0.3, 0.2, -0.1}, Quat::FromAxisAngle({1, 2, 3}, 0.4));
      const CastResult r = Cast(a, pa, {5, 0, 0}, b, Pose({0, 0, 0}));
      EXPECT_EQ(r.state, CastState::kStartedOverlapping) << PairName(ka, kb);
      EXPECT_EQ(r.fraction, 0.0);
      EXPECT_GT(r.depth, 0.1) << PairName(ka, kb);  // deep overlap: ComputeContact's depth
      ExpectUnit(r.normal, PairName(ka, kb));
      // Moving A out by depth along the normal leaves the shapes (nearly) touching.
      const Pose out(pa.position + r.normal * (r.depth + 1e-6), pa.rotation);
      EXPECT_FALSE(Overlap(a, out, b, Pose({0, 0, 0}))) << PairName(ka, kb);
      const CastResult z = Cast(a, pa, {0, 0, 0}, b, Pose({0, 0, 0}));
      EXPECT_EQ(z.state, CastState::kStartedOverlapping) << PairName(ka, kb);
      const CastResult m = Cast(a, Pose({0, 9, 0}), {0, 0, 0}, b, Pose({0, 0, 0}));
      EXPECT_EQ(m.state, CastState::kMiss) << PairName(ka, kb);
      // Exactly touching at the start counts as overlapping.
      const CastResult touch = Cast(a, Pose({-2, 0, 0}), {0, 0, 0}, b, Pose({0, 0, 0}));
      EXPECT_EQ(touch.state, CastState::kStartedOverlapping) << PairName(ka, kb);
    }
  }
}

// Grazing: sliding along a tangent plane (or sphere tangent) is a hit.
TEST(CastTest, GrazingCountsAsHit) {
  const Shape s1 = *Shape::MakeSphere(1.0), s2 = *Shape::MakeSphere(0.5);
  // Sphere passing exactly tangent over a sphere: touch at x = 0.
  CastResult r = Cast(s1, Pose({-4, 1.5, 0}), {8, 0, 0}, s2, Pose({0, 0, 0}));
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, 0.5, 1e-7);
  EXPECT_TRUE(testing::VecNear(r.normal, {0, 1, 0}, 1e-6));
  // Box sliding on top of a box: touches when the x-ranges meet.
  const Shape box = *Shape::MakeBox({1, 1, 1});
  r = Cast(box, Pose({-5, 2, 0}), {10, 0, 0}, box, Pose({0, 0, 0}));
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, 0.3, 1e-12);
  EXPECT_LE(Dot(r.normal, Vec3{10, 0, 0}), 1e-6);
  // Sphere sliding on top of a box: touches when its centre is above the box.
  r = Cast(s1, Pose({-5, 2, 0}), {10, 0, 0}, box, Pose({0, 0, 0}));
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, 0.4, 1e-9);
  // Capsule lying along X sliding over a capsule along Z.
  const Shape cap = *Shape::MakeCapsule(0.5, 1.0);
  const Quat along_x = Quat::FromAxisAngle({0, 0, 1}, M_PI / 2);
  const Quat along_z = Quat::FromAxisAngle({1, 0, 0}, M_PI / 2);
  r = Cast(cap, Pose({-6, 1, 0}, along_x), {12, 0, 0}, cap, Pose({0, 0, 0}, along_z));
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, 5.0 / 12.0, 1e-7);
  // Cylinder sliding on top of a cylinder (flat caps): discs meet at |dx| = 2.
  const Shape cyl = *Shape::MakeCylinder(1.0, 1.0);
  r = Cast(cyl, Pose({-6, 2, 0}), {12, 0, 0}, cyl, Pose({0, 0, 0}));
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, 4.0 / 12.0, 1e-6);
  EXPECT_LE(Dot(r.normal, Vec3{12, 0, 0}), 1e-6);
  // Just above: a miss.
  r = Cast(s1, Pose({-4, 1.5 + 1e-6, 0}), {8, 0, 0}, s2, Pose({0, 0, 0}));
  EXPECT_EQ(r.state, CastState::kMiss);
}

// Parallel faces: a rotated box meets a rotated box face to face.
TEST(CastTest, ParallelFacesOfRotatedBoxes) {
  const Shape box = *Shape::MakeBox({1, 2, 3});
  const Quat q = Quat::FromAxisAngle({0.3, -1, 0.2}, 0.9);
  const Vec3 dir = q.Rotate({1, 0, 0});
  const Pose pb({4, -3, 7}, q);
  const Pose pa(pb.position - dir * 5.0, q);
  const CastResult r = Cast(box, pa, dir * 6.0, box, pb);
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, 0.5, 1e-12);
  EXPECT_TRUE(testing::VecNear(r.normal, -dir, 1e-9));
}

// Capsule against capsule: crossing segments meet on the parallelogram face.
TEST(CastTest, CapsuleCapsuleFace) {
  const Shape a = *Shape::MakeCapsule(0.25, 2.0), b = *Shape::MakeCapsule(0.5, 3.0);
  const Quat along_x = Quat::FromAxisAngle({0, 0, 1}, M_PI / 2);
  const CastResult r = Cast(a, Pose({0.5, 0.3, 5}, along_x), {0, 0, -10}, b, Pose());
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, (5.0 - 0.75) / 10.0, 1e-12);
  EXPECT_TRUE(testing::VecNear(r.normal, {0, 0, 1}, 1e-12));
  EXPECT_TRUE(testing::VecNear(r.point, {0, 0.3, 0.5}, 1e-9));
  // Parallel capsules side by side.
  const CastResult p = Cast(a, Pose({3, 0.5, 0}), {-4, 0, 0}, b, Pose());
  ASSERT_EQ(p.state, CastState::kHit);
  EXPECT_NEAR(p.fraction, (3.0 - 0.75) / 4.0, 1e-12);
}

// A sphere meeting a box corner and a cylinder rim (the rounded parts of the
// grown targets: three capsule-like pieces and the torus), and the same
// contacts with the roles swapped.
TEST(CastTest, SphereOnBoxCornerAndCylinderRim) {
  const Shape ball = *Shape::MakeSphere(1.0);
  const Shape box = *Shape::MakeBox({1, 1, 1});
  // Along the diagonal: the centre stops 1 m short of the corner (-1, -1, -1).
  const double f_corner = (4.0 * std::sqrt(3.0) - 1.0) / (10.0 * std::sqrt(3.0));
  CastResult r = Cast(ball, Pose({-5, -5, -5}), {10, 10, 10}, box, Pose());
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, f_corner, 1e-12);
  EXPECT_TRUE(testing::VecNear(r.normal, Vec3{-1, -1, -1} / std::sqrt(3.0), 1e-12));
  EXPECT_TRUE(testing::VecNear(r.point, {-1, -1, -1}, 1e-12));
  r = Cast(box, Pose({5, 5, 5}), {-10, -10, -10}, ball, Pose());
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, f_corner, 1e-12);
  EXPECT_TRUE(testing::VecNear(r.normal, Vec3{1, 1, 1} / std::sqrt(3.0), 1e-12));
  // Towards the rim point (-1, 1, 0) of a cylinder: the centre stops 0.5 m away.
  const Shape small = *Shape::MakeSphere(0.5);
  const Shape cyl = *Shape::MakeCylinder(1.0, 1.0);
  const double f_rim = 0.5 - 0.5 / (4.0 * std::sqrt(2.0));
  r = Cast(small, Pose({-3, 3, 0}), {4, -4, 0}, cyl, Pose());
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, f_rim, 1e-12);
  EXPECT_TRUE(testing::VecNear(r.normal, Vec3{-1, 1, 0} / std::sqrt(2.0), 1e-9));
  EXPECT_TRUE(testing::VecNear(r.point, {-1, 1, 0}, 1e-9));
  r = Cast(cyl, Pose({3, -3, 0}), {-4, 4, 0}, small, Pose());
  ASSERT_EQ(r.state, CastState::kHit);
  EXPECT_NEAR(r.fraction, f_rim, 1e-12);
}

// Bad input never crashes and reports a miss.
TEST(CastTest, NonFiniteInputIsAMiss) {
  const Shape s = *Shape::MakeSphere(1.0);
  const double nan = std::nan("");
  EXPECT_EQ(Cast(s, Pose({nan, 0, 0}), {1, 0, 0}, s, Pose()).state, CastState::kMiss);
  EXPECT_EQ(Cast(s, Pose(), {INFINITY, 0, 0}, s, Pose({3, 0, 0})).state, CastState::kMiss);
}

// Each of the 17 coordinates (both poses, the translation) is checked: one
// NaN or infinity anywhere is a miss, even where the answer would not read
// it (a sphere's rotation), while finite values, however large, are cast.
TEST(CastTest, EveryNonFiniteCoordinateIsAMiss) {
  const Shape s = *Shape::MakeSphere(1.0);
  const Pose a({0, 0, 0}, Quat::FromAxisAngle({0, 1, 0}, 0.3));
  const Pose b({0.5, 0.25, 0}, Quat::FromAxisAngle({1, 0, 0}, 0.2));
  const Vec3 v{0.5, -0.25, 0.125};
  ASSERT_EQ(Cast(s, a, v, s, b).state, CastState::kStartedOverlapping);
  const auto coords = [](Pose& pa, Pose& pb, Vec3& t) {
    return std::array<double*, 17>{
        &pa.position.x, &pa.position.y, &pa.position.z, &pa.rotation.x, &pa.rotation.y,
        &pa.rotation.z, &pa.rotation.w, &pb.position.x, &pb.position.y, &pb.position.z,
        &pb.rotation.x, &pb.rotation.y, &pb.rotation.z, &pb.rotation.w, &t.x, &t.y, &t.z};
  };
  for (int k = 0; k < 17; ++k) {
    for (const double bad : {std::nan(""), double{INFINITY}, -double{INFINITY}}) {
      Pose pa = a, pb = b;
      Vec3 t = v;
      *coords(pa, pb, t)[k] = bad;
      EXPECT_EQ(Cast(s, pa, t, s, pb).state, CastState::kMiss) << "coordinate " << k << " " << bad;
    }
  }
  // Finite extremes pass the check: the same overlapping pair 1e300 m out.
  const Pose far_a({1e300, 0, 0}, a.rotation);
  EXPECT_EQ(Cast(s, far_a, v, s, Pose({1e300, 0, 0}, b.rotation)).state,
            CastState::kStartedOverlapping);
}

// An iteration cap is not a miss: with max_iterations = 1 the iterative
// methods (GJK ray cast then Newton; Newton on the segment-box distance) give
// up with kFailed at a lower bound of the exact time of impact. (The box
// meets the cylinder at an edge and a rim, which box-cylinder casts answer
// in closed form; as a hull it goes through the GJK ray cast.)
TEST(CastTest, IterationCapIsFailedNotMiss) {
  const Shape cyl = *Shape::MakeCylinder(0.8, 1.2);
  const Shape box = *Shape::MakeBox({0.7, 0.4, 0.9});
  ConvexHull corners;
  for (int i = 0; i < 8; ++i) {
    corners.points.push_back({(i & 1) ? 0.7 : -0.7, (i & 2) ? 0.4 : -0.4, (i & 4) ? 0.9 : -0.9});
  }
  const Shape hull = *Shape::Make(corners);
  const Shape cap = *Shape::MakeCapsule(0.5, 0.9);
  const Pose pb({0.2, -0.1, 0.3}, Quat::FromAxisAngle(Vec3{1, 2, 3}.Normalized(), 0.7));
  const Pose pa({-5, 2.5, 1.5}, Quat::FromAxisAngle(Vec3{-2, 1, 1}.Normalized(), 1.1));
  const Vec3 v{9, -4.5, -2.4};
  struct Pair {
    const Shape* a;
    const Shape* b;
    internal::CastMethod method;
  };
  for (const Pair& p : {Pair{&cyl, &hull, internal::CastMethod::kConservative},
                        Pair{&hull, &cyl, internal::CastMethod::kConservative},
                        Pair{&cap, &box, internal::CastMethod::kCapsuleBox},
                        Pair{&box, &cap, internal::CastMethod::kCapsuleBox}}) {
    const std::string name = PairName(p.a->kind(), p.b->kind());
    ASSERT_EQ(internal::MethodFor(p.a->kind(), p.b->kind()), p.method) << name;
    const CastResult exact = Cast(*p.a, pa, v, *p.b, pb);
    ASSERT_EQ(exact.state, CastState::kHit) << name;
    CastSettings capped;
    capped.max_iterations = 1;
    const CastResult r = Cast(*p.a, pa, v, *p.b, pb, capped);
    ASSERT_EQ(r.state, CastState::kFailed) << name;
    EXPECT_TRUE(r.hit()) << name;
    EXPECT_GE(r.fraction, 0.0) << name;
    EXPECT_LE(r.fraction, exact.fraction + 1e-12) << name;
    ExpectUnit(r.normal, name);
    EXPECT_TRUE(r.point.IsFinite()) << name;
    // Still apart at the reported fraction: a safe place to stop.
    EXPECT_FALSE(Overlap(*p.a, Pose(pa.position + v * (r.fraction * (1 - 1e-9)), pa.rotation),
                         *p.b, pb))
        << name;
  }
}

// ---------------------------------------------------------------------------
// Random property tests.

struct RandomCase {
  Shape a, b;
  Pose pa, pb;
  Vec3 v;
};

RandomCase MakeCase(Random& rng, ShapeKind ka, ShapeKind kb) {
  RandomCase c;
  c.a = rng.MakeShape(ka, 0.1, 2.0);
  c.b = rng.MakeShape(kb, 0.1, 2.0);
  c.pb = Pose(rng.InBox(1.0), rng.Rotation());
  c.pa = Pose(c.pb.position + rng.InBox(6.0), rng.Rotation());
  const Vec3 target = c.pb.position + rng.InBox(2.5);
  c.v = (target - c.pa.position) * rng.Uniform(0.2, 1.6);
  if (rng.Int(0, 9) == 0) c.v = rng.InBox(4.0);  // some arbitrary directions
  return c;
}

std::string Describe(const RandomCase& c) {
  return DescribePair(c.a, c.pa, c.b, c.pb) + ", translation=" + ToString(c.v);
}

Pose Moved(const Pose& p, const Vec3& d) { return Pose(p.position + d, p.rotation); }

// The cast's fraction equals the first overlapping t found by bisection on the
// overlap test (GJK), the normal is a unit contact normal that does not point
// along the motion, and 20 km from the origin the fraction is unchanged.
void RunPropertyTest(ShapeKind ka, ShapeKind kb, int count, uint64_t seed) {
  Random rng(seed);
  int hits = 0, misses = 0, started = 0, failures = 0;
  for (int i = 0; i < count && failures < 5; ++i) {
    const RandomCase c = MakeCase(rng, ka, kb);
    const CastResult r = Cast(c.a, c.pa, c.v, c.b, c.pb);
    const auto dist = [&](double t) {
      return testing::GjkSeparation(c.a, Moved(c.pa, c.v * t), c.b, c.pb);
    };
    // Bisection on the public Overlap test (closed forms / GJK of the narrow phase).
    const auto overlap = [&](double t) { return Overlap(c.a, Moved(c.pa, c.v * t), c.b, c.pb); };
    const testing::RefCast ref = testing::ReferenceFirstContact(dist, overlap);
    // Cases within 1e-9 m of touching are ambiguous for either side.
    const double d0 = dist(0.0);
    if (std::fabs(d0) < 1e-9 && d0 > 0.0) continue;
    if (!ref.hit && ref.min_gap < 1e-7) continue;
    bool ok = true;
    std::string why;
    if (ref.started) {
      ++started;
      ok = r.state == CastState::kStartedOverlapping && r.fraction == 0.0 &&
           std::fabs(r.normal.Length() - 1.0) < 1e-9;
      why = "expected started overlapping";
    } else if (!ref.hit) {
      ++misses;
      ok = r.state == CastState::kMiss && r.fraction == 1.0;
      why = "expected miss";
    } else {
      ++hits;
      if (r.state != CastState::kHit) {
        ok = false;
        why = "expected hit";
      } else {
        const double tol = 1e-6;
        // Near-tangent contacts are ill-conditioned: the distance at the
        // reference time tells how far off the fraction may be.
        if (std::fabs(r.fraction - ref.t) > tol) {
          const double gap_at_cast = dist(r.fraction);
          const double gap_before = dist(std::max(0.0, r.fraction - 1e-7));
          if (!(gap_at_cast <= 1e-8 && gap_before > 0.0)) {
            ok = false;
            why = "fraction " + std::to_string(r.fraction) + " vs reference " +
                  std::to_string(ref.t);
          }
        }
        const double len = r.normal.Length();
        if (std::fabs(len - 1.0) > 1e-9) {
          ok = false;
          why += " normal not unit";
        }
        if (r.fraction > 0.0 && Dot(r.normal, c.v) > 1e-6) {
          ok = false;
          why += " normal along motion";
        }
        const double gap =
            testing::SupportGap(c.a, Moved(c.pa, c.v * r.fraction), c.b, c.pb, r.normal);
        // The normal is a supporting normal of both shapes at the contact
        // (closed forms exactly; the GJK ray cast by the plane that set t).
        const double gap_tol = 1e-6;
        if (std::fabs(gap) > gap_tol) {
          ok = false;
          why += " normal is not a contact normal (support gap " + std::to_string(gap) + ")";
        }
        const Vec3 far = Vec3{20000.0, -13000.0, 8000.0};
        const CastResult rf = Cast(c.a, Moved(c.pa, far), c.v, c.b, Moved(c.pb, far));
        // Near-tangent contacts: both fractions must at least be valid contact times.
        const bool far_ok =
            rf.state == CastState::kHit &&
            (std::fabs(rf.fraction - r.fraction) <= 1e-6 ||
             (dist(rf.fraction) <= 1e-8 && dist(std::max(0.0, rf.fraction - 1e-7)) > 0.0));
        if (!far_ok) {
          ok = false;
          why += " far from origin: fraction " + std::to_string(rf.fraction);
        }
      }
    }
    if (!ok) {
      ++failures;
      ADD_FAILURE() << PairName(ka, kb) << " case " << i << ": " << why << "; got state "
                    << static_cast<int>(r.state) << " fraction " << r.fraction << " normal "
                    << ToString(r.normal) << "\n  " << Describe(c);
    }
  }
  EXPECT_GT(hits, count / 10) << PairName(ka, kb);
  EXPECT_GT(misses, count / 10) << PairName(ka, kb);
  EXPECT_GT(started, 0) << PairName(ka, kb);
}

class CastPairTest : public ::testing::TestWithParam<std::pair<ShapeKind, ShapeKind>> {};

TEST_P(CastPairTest, MatchesBisectionOnOverlap) {
  const auto [ka, kb] = GetParam();
  RunPropertyTest(ka, kb, 10000, 1000 + 10 * static_cast<int>(ka) + static_cast<int>(kb));
}

// The closed forms agree with the generic conservative-advancement path.
TEST_P(CastPairTest, ClosedFormMatchesConservative) {
  const auto [ka, kb] = GetParam();
  if (internal::MethodFor(ka, kb) == internal::CastMethod::kConservative) GTEST_SKIP();
  Random rng(77 + 10 * static_cast<int>(ka) + static_cast<int>(kb));
  int failures = 0;
  for (int i = 0; i < 3000 && failures < 5; ++i) {
    const RandomCase c = MakeCase(rng, ka, kb);
    const Pose a_in_b = c.pb.RelativeTo(c.pa);
    const Vec3 v = c.pb.InverseTransformDirection(c.v);
    const CastResult x = internal::CastLocal(c.a, a_in_b, v, c.b, {});
    const CastResult y = internal::CastConservative(c.a, a_in_b, v, c.b, {});
    if (x.state != y.state || std::fabs(x.fraction - y.fraction) > 1e-6) {
      // Allow disagreement only within 1e-9 m of touching.
      const double g = testing::GjkSeparation(
          c.a, Moved(c.pa, c.v * std::min(x.fraction, y.fraction)), c.b, c.pb);
      if (g < 1e-9 && x.state != CastState::kMiss && y.state != CastState::kMiss) continue;
      ++failures;
      ADD_FAILURE() << PairName(ka, kb) << " closed form " << static_cast<int>(x.state)
                    << " t=" << x.fraction << " vs conservative " << static_cast<int>(y.state)
                    << " t=" << y.fraction << "\n  " << Describe(c);
    }
  }
}

// Extreme scales (sizes 1e-3..1e2 m, translations up to 1e4 m, flat discs,
// zero-length capsules): results stay finite, fractions in [0, 1], unit normals.
TEST_P(CastPairTest, ExtremeInputsStayWellFormed) {
  const auto [ka, kb] = GetParam();
  Random rng(99 + 10 * static_cast<int>(ka) + static_cast<int>(kb));
  for (int i = 0; i < 2000; ++i) {
    const double scale = std::pow(10.0, rng.Uniform(-3.0, 2.0));
    Shape a = rng.MakeShape(ka, 0.01 * scale, scale);
    Shape b = rng.MakeShape(kb, 0.01 * scale, scale);
    if (rng.Int(0, 4) == 0 && kb == ShapeKind::kCylinder) b = *Shape::MakeCylinder(scale, 0.0);
    if (rng.Int(0, 4) == 0 && ka == ShapeKind::kCapsule) a = *Shape::MakeCapsule(scale, 0.0);
    const Pose pb(rng.InBox(scale), rng.Rotation());
    const Pose pa(pb.position + rng.InBox(4.0 * scale), rng.Rotation());
    const Vec3 v = (pb.position - pa.position) * rng.Uniform(0.0, 3.0) +
                   rng.InBox(rng.Int(0, 1) ? 1e4 : scale);
    const CastResult r = Cast(a, pa, v, b, pb);
    ASSERT_TRUE(r.fraction >= 0.0 && r.fraction <= 1.0) << Describe({a, b, pa, pb, v});
    ASSERT_TRUE(r.normal.IsFinite() && std::fabs(r.normal.Length() - 1.0) < 1e-9)
        << Describe({a, b, pa, pb, v});
    ASSERT_TRUE(r.point.IsFinite() && std::isfinite(r.depth)) << Describe({a, b, pa, pb, v});
    if (r.state == CastState::kHit && r.fraction > 0.0) {
      ASSERT_LE(Dot(r.normal, v), 1e-6) << Describe({a, b, pa, pb, v});
    }
  }
}

// CastSettings::max_fraction: a hit at or before the bound is reported exactly
// as without it; one after it is either that same hit or a miss; a miss stays
// a miss. Bounds just below, at and above the unbounded fraction, and random.
TEST_P(CastPairTest, MaxFractionOnlyDropsLaterHits) {
  const auto [ka, kb] = GetParam();
  Random rng(4242 + 10 * static_cast<int>(ka) + static_cast<int>(kb));
  int dropped = 0;
  for (int i = 0; i < 3000; ++i) {
    const RandomCase c = MakeCase(rng, ka, kb);
    const CastResult full = Cast(c.a, c.pa, c.v, c.b, c.pb);
    const double bounds[] = {full.fraction, std::nextafter(full.fraction, 0.0),
                             full.fraction * 0.5, full.fraction + 1e-9, rng.Uniform(0.0, 1.0), 0.0};
    for (double m : bounds) {
      CastSettings settings;
      settings.max_fraction = m;
      const CastResult r = Cast(c.a, c.pa, c.v, c.b, c.pb, settings);
      const std::string what = PairName(ka, kb) + " max_fraction=" + ToString(Vec3{m, 0, 0}) +
                               " full t=" + ToString(Vec3{full.fraction, 0, 0}) + "\n  " +
                               Describe(c);
      if (!full.hit()) {
        ASSERT_FALSE(r.hit()) << what;
        continue;
      }
      if (full.fraction <= m || r.hit()) {
        ASSERT_EQ(r.state, full.state) << what;
        ASSERT_EQ(r.fraction, full.fraction) << what;
        ASSERT_EQ(r.normal, full.normal) << what;
        ASSERT_EQ(r.point, full.point) << what;
      } else {
        ++dropped;
      }
    }
  }
  // The bound does prune (later hits exist among the bounds above) for every
  // method but the sphere closed forms (which ignore it: no cheaper bound).
  const internal::CastMethod method = internal::MethodFor(ka, kb);
  if (method != internal::CastMethod::kSphereRay &&
      method != internal::CastMethod::kRayFromSphereB) {
    EXPECT_GT(dropped, 0) << PairName(ka, kb);
  }
}

std::vector<std::pair<ShapeKind, ShapeKind>> AllPairs() {
  std::vector<std::pair<ShapeKind, ShapeKind>> v;
  for (ShapeKind a : kKinds) {
    for (ShapeKind b : kKinds) v.emplace_back(a, b);
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllPairs, CastPairTest, ::testing::ValuesIn(AllPairs()),
                         [](const auto& param_info) {
                           return std::string(ShapeKindName(param_info.param.first)) + "_" +
                                  ShapeKindName(param_info.param.second);
                         });

// Distance (metres) from `p` to `shape` at `pose` (0 inside): GJK of a
// point core against the shape's core plus margin.
double DistanceToShape(const Shape& shape, const Pose& pose, const Vec3& p) {
  const internal::ConvexCore point;  // a point core, no margin
  return internal::GjkDistance(internal::CoreOf(shape), point, pose.RelativeTo(Pose{p})).distance;
}

// The GJK ray cast (CastConservative) of boxes, cylinders and hulls against
// each other, seeded, motions at random and aimed at B: every hit's point is
// on B's surface and on A's at the hit pose (1e-6 of the scale; the pair only
// touches there, so a point near both is on both surfaces), B's frame.
TEST(CastPointTest, GjkCastPointOnBothShapes) {
  const ShapeKind kinds[3] = {ShapeKind::kBox, ShapeKind::kCylinder, ShapeKind::kConvexHull};
  Random rng(31337);
  int hits = 0, bad = 0;
  for (int i = 0; i < 9000 && bad < 10; ++i) {
    const ShapeKind ka = kinds[i % 3], kb = kinds[i / 3 % 3];
    const Shape a = rng.MakeShape(ka, 0.05, 1.5);
    const Shape b = rng.MakeShape(kb, 0.05, 1.5);
    const Pose a_in_b(rng.InBox(4.0), rng.Rotation());
    const Vec3 v = i % 2 == 0 ? (rng.InBox(0.5) - a_in_b.position) * rng.Uniform(1.0, 2.0)
                              : rng.UnitVector() * rng.Uniform(0.5, 8.0);
    const CastResult r = internal::CastConservative(a, a_in_b, v, b, {});
    if (r.state != CastState::kHit) continue;
    ++hits;
    const double tol = 1e-6 * (a_in_b.position.Length() + v.Length() + 3.0);
    const double off_b = DistanceToShape(b, Pose{}, r.point);
    const double off_a = DistanceToShape(a, Moved(a_in_b, v * r.fraction), r.point);
    if (off_a > tol || off_b > tol) {
      ++bad;
      ADD_FAILURE() << PairName(ka, kb) << " case " << i << " t " << r.fraction << ": point "
                    << ToString(r.point) << " off A " << off_a << ", off B " << off_b;
    }
  }
  EXPECT_GT(hits, 2000);
}

// The separating-axes casts (CastBoxCylinderAxes, CastCapsuleCylinderAxes,
// CastCylinderCylinderAxes),
// seeded, against the GJK ray cast from the start: an exact hit is the GJK
// fraction (a lower bound within 1e-6) with the same normal (at or after the
// bound of a GJK cast that stalls) and a point on both shapes, a miss is a
// GJK miss, a lower bound is never past the GJK fraction; each of the three
// answers occurs.
using AxesCastFn = internal::AxisCast (*)(const Shape&, const Pose&, const Vec3&, const Shape&,
                                          double);
void CheckAxesAgainstGjk(ShapeKind ka, ShapeKind kb, AxesCastFn cast, uint64_t seed) {
  Random rng(seed);
  int hits = 0, misses = 0, bounds = 0, bad = 0;
  for (int i = 0; i < 20000 && bad < 10; ++i) {
    const Shape a = rng.MakeShape(ka, 0.05, 1.5);
    const Shape b = rng.MakeShape(kb, 0.05, 1.5);
    const Pose a_in_b(rng.InBox(4.0), rng.Rotation());
    const Vec3 v = i % 4 < 2 ? (rng.InBox(0.5) - a_in_b.position) * rng.Uniform(1.0, 2.0)
                             : rng.UnitVector() * rng.Uniform(0.5, 8.0);
    const double t_max = i % 8 == 7 ? rng.Uniform(0.0, 1.0) : 1.0;
    const internal::AxisCast ax = cast(a, a_in_b, v, b, t_max);
    const internal::GjkRaycastResult g =
        internal::GjkRaycast(internal::CoreOf(a), a_in_b, v, internal::CoreOf(b), 0.0,
                             {0, 1, 0}, 1e-9, 64, t_max);
    using GjkState = internal::GjkRaycastResult::State;
    const std::string what = PairName(a.kind(), b.kind()) + " case " + std::to_string(i) +
                             ": GJK state " + std::to_string(static_cast<int>(g.state)) +
                             " fraction " + std::to_string(g.lambda) + "\n  " +
                             DescribePair(a, a_in_b, b, Pose{}) + ", v=" + ToString(v);
    switch (ax.state) {
      case internal::AxisCast::State::kMiss:
        ++misses;
        if (g.state != GjkState::kMiss) {
          ++bad;
          ADD_FAILURE() << "axes miss; " << what;
        }
        break;
      case internal::AxisCast::State::kHit: {
        ++hits;
        const CastResult& r = ax.hit;
        const double tol = 1e-6 * (a_in_b.position.Length() + v.Length() + 3.0);
        const double off_b = DistanceToShape(b, Pose{}, r.point);
        const double off_a = DistanceToShape(a, Moved(a_in_b, v * r.fraction), r.point);
        // (A GJK cast that stalls, kFailed, still gives a lower bound: the
        // point on both shapes is then the check.)
        const bool gjk_hit = g.state == GjkState::kHit;
        if ((!gjk_hit && g.state != GjkState::kFailed) || !(r.fraction >= g.lambda - 1e-12) ||
            (gjk_hit && !(r.fraction <= g.lambda + 1e-6)) ||
            (gjk_hit && !(Dot(r.normal, g.normal) > 0.999)) ||
            std::fabs(r.normal.Length() - 1.0) > 1e-12 || off_a > tol || off_b > tol) {
          ++bad;
          ADD_FAILURE() << "axes hit at " << r.fraction << " normal " << ToString(r.normal)
                        << " (GJK " << ToString(g.normal) << "), point off A " << off_a
                        << ", off B " << off_b << "; " << what;
        }
        break;
      }
      case internal::AxisCast::State::kLowerBound:
        ++bounds;
        // (Both are lower bounds of the time of impact; the GJK one within 1e-6.)
        if ((g.state == GjkState::kHit && !(ax.t <= g.lambda + 1e-6)) ||
            (g.state == GjkState::kStartedOverlapping && ax.t != 0.0)) {
          ++bad;
          ADD_FAILURE() << "axes bound " << ax.t << "; " << what;
        }
        break;
    }
  }
  EXPECT_GT(hits, 1000) << PairName(ka, kb);
  EXPECT_GT(misses, 1000) << PairName(ka, kb);
  EXPECT_GT(bounds, 1000) << PairName(ka, kb);
}

TEST(CastAxesTest, BoxCylinderAgreesWithGjkCast) {
  CheckAxesAgainstGjk(ShapeKind::kBox, ShapeKind::kCylinder, internal::CastBoxCylinderAxes, 2935);
  CheckAxesAgainstGjk(ShapeKind::kCylinder, ShapeKind::kBox, internal::CastBoxCylinderAxes, 2936);
}

TEST(CastAxesTest, CapsuleCylinderAgreesWithGjkCast) {
  CheckAxesAgainstGjk(ShapeKind::kCapsule, ShapeKind::kCylinder,
                      internal::CastCapsuleCylinderAxes, 2938);
  CheckAxesAgainstGjk(ShapeKind::kCylinder, ShapeKind::kCapsule,
                      internal::CastCapsuleCylinderAxes, 2939);
}

TEST(CastAxesTest, CylinderCylinderAgreesWithGjkCast) {
  CheckAxesAgainstGjk(ShapeKind::kCylinder, ShapeKind::kCylinder,
                      internal::CastCylinderCylinderAxes, 2937);
}

// ---------------------------------------------------------------------------
// Conformance case files, pairwise brute force (big.json is left to the
// world-level conformance test).

class CastConformanceTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CastConformanceTest, Sweeps) {
  const std::string path = std::string(HITBOX_CASES_DIR) + "/" + GetParam() + ".json";
  const testing::ConformanceStats s = testing::CheckCaseFile(path, /*sweeps=*/true);
  EXPECT_GT(s.sweeps, 0);
  EXPECT_EQ(s.failures, 0) << s.failures << " of " << s.sweeps << " sweeps wrong";
}

TEST_P(CastConformanceTest, Raycasts) {
  const std::string path = std::string(HITBOX_CASES_DIR) + "/" + GetParam() + ".json";
  const testing::ConformanceStats s = testing::CheckCaseFile(path, /*sweeps=*/false);
  EXPECT_GT(s.raycasts, 0);
  EXPECT_EQ(s.failures, 0) << s.failures << " of " << s.raycasts << " raycasts wrong";
}

INSTANTIATE_TEST_SUITE_P(CaseFiles, CastConformanceTest,
                         ::testing::Values("mixed", "far_from_origin", "thin_and_tiny",
                                           "start_inside", "grazing", "layers", "axis_aligned"));

}  // namespace
}  // namespace hitbox
