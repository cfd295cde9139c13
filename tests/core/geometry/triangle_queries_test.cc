// The closed-form sweeps of a sphere and a capsule against one triangle
// (geometry/triangle_queries.h) against the generic GJK ray cast
// (SweepConvexTriangle) and against the distance itself, on seeded random
// triangles: hits, grazing passes and starts inside.
#include "geometry/triangle_queries.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "geometry/triangle_convex.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::Random;

// Distance from segment [p0, p1] (a point when equal) to triangle tri.
double SegmentTriangleDistance(const Vec3& p0, const Vec3& p1, const Vec3 tri[3]) {
  Vec3 on_seg, on_tri;
  return std::sqrt(SegmentTriangleDistanceSq(p0, p1, tri[0], tri[1], tri[2], &on_seg, &on_tri));
}

// Distance from point p to segment [p0, p1].
double PointSegmentDistance(const Vec3& p, const Vec3& p0, const Vec3& p1) {
  const Vec3 d = p1 - p0;
  const double dd = d.LengthSq();
  const double s = dd > 0.0 ? std::clamp(Dot(p - p0, d) / dd, 0.0, 1.0) : 0.0;
  return (p - (p0 + d * s)).Length();
}

// One random case: a triangle, a capsule (a sphere when p0 == p1) and a
// translation, in one of four set-ups.
struct SweepCase {
  Vec3 tri[3];
  Vec3 p0, p1;
  double r = 0.0;
  Vec3 v;
  uint8_t active = 7;
};

SweepCase MakeCase(Random& rng, bool sphere, int i) {
  SweepCase c;
  for (Vec3& p : c.tri) p = rng.InBox(2.0);
  if (i % 7 == 0) c.tri[2] = c.tri[0] + (c.tri[1] - c.tri[0]) * rng.Uniform(0.2, 0.8) +
                             rng.InBox(0.05);  // a sliver
  c.r = rng.Uniform(0.05, 1.0);
  const Vec3 axis = rng.UnitVector() * (sphere ? 0.0 : rng.Uniform(0.0, 1.5));
  const Vec3 n = Cross(c.tri[1] - c.tri[0], c.tri[2] - c.tri[0]).Normalized();
  // A point of the triangle (weights may leave it: aimed near its edges too).
  const double wa = rng.Uniform(-0.2, 1.0), wb = rng.Uniform(-0.2, 1.0 - wa);
  const Vec3 aim = c.tri[0] * wa + c.tri[1] * wb + c.tri[2] * (1.0 - wa - wb);
  Vec3 centre;
  switch (i % 4) {
    case 0:  // from anywhere, aimed at the triangle
    case 1:
      centre = aim + rng.UnitVector() * rng.Uniform(1.0, 5.0);
      c.v = aim + rng.InBox(0.5) - centre;
      break;
    case 2: {  // grazing: moving parallel to the plane at height r (+- rounding)
      const double side = rng.Uniform(0.0, 1.0) < 0.5 ? -1.0 : 1.0;
      const Vec3 flat = Cross(n, rng.UnitVector()).Normalized() * rng.Uniform(2.0, 6.0);
      const Vec3 a = sphere ? Vec3{} : Cross(n, rng.UnitVector()).Normalized() * axis.Length();
      centre = aim - flat * 0.5 + n * (side * (c.r + rng.Uniform(-1e-9, 1e-9)));
      c.p0 = centre - a;
      c.p1 = centre + a;
      c.v = flat;
      c.active = static_cast<uint8_t>(rng.Int(0, 7));
      return c;
    }
    default:  // starting inside or touching
      centre = aim + rng.UnitVector() * rng.Uniform(0.0, c.r);
      c.v = rng.InBox(3.0);
      break;
  }
  c.p0 = centre - axis;
  c.p1 = centre + axis;
  c.active = static_cast<uint8_t>(rng.Int(0, 7));
  return c;
}

TriangleSweep ClosedForm(const SweepCase& c, bool sphere) {
  return sphere ? SweepSphereTriangle(c.p0, c.r, c.v, 1.0, c.tri[0], c.tri[1], c.tri[2], c.active)
                : SweepCapsuleTriangle(c.p0, c.p1, c.r, c.v, 1.0, c.tri[0], c.tri[1], c.tri[2],
                                       c.active);
}

TriangleConvexSweep Generic(const SweepCase& c) {
  const Vec3 d = c.p1 - c.p0;
  auto support = [&](const Vec3& dir) { return Dot(dir, d) >= 0.0 ? c.p1 : c.p0; };
  const double scale = d.Length() + c.r + c.p0.Length() + c.v.Length();
  return SweepConvexTriangle(c.tri, support, c.r, c.v, 1.0, scale, c.active);
}

// Closed form against the GJK ray cast and the distance, thousands of cases:
// the same hits (up to grazing), the same fraction within GJK's stopping gap,
// touching at the fraction and apart before it, the normal a unit vector
// from the triangle's contact point to the core, never along the motion.
void CheckClosedForm(bool sphere, uint64_t seed) {
  Random rng(seed);
  int hits = 0, inside = 0, disagree[2] = {0, 0};  // aimed, grazing
  constexpr int kCases = 6000;
  for (int i = 0; i < kCases; ++i) {
    const SweepCase c = MakeCase(rng, sphere, i);
    const TriangleSweep got = ClosedForm(c, sphere);
    const TriangleConvexSweep ref = Generic(c);
    const double speed = c.v.Length();
    if (got.hit != ref.hit) {
      // Only a grazing pass may differ: the reported contact is touching and
      // the least distance over the sweep is r (up to rounding).
      const double t = got.hit ? got.t : ref.t;
      const Vec3 at = c.v * t;
      EXPECT_NEAR(SegmentTriangleDistance(c.p0 + at, c.p1 + at, c.tri), c.r, 1e-6)
          << "case " << i << " got " << got.hit << " ref " << ref.hit;
      double least = 1e300;
      for (int k = 0; k <= 400; ++k) {
        const Vec3 s = c.v * (k / 400.0);
        least = std::min(least, SegmentTriangleDistance(c.p0 + s, c.p1 + s, c.tri));
      }
      EXPECT_GT(least, c.r - 1e-6) << "case " << i;
      ++disagree[i % 4 == 2 ? 1 : 0];
      continue;
    }
    if (!got.hit) continue;
    ++hits;
    EXPECT_EQ(got.started_inside, ref.started_inside) << "case " << i;
    if (got.started_inside) {
      ++inside;
      EXPECT_EQ(got.t, 0.0);
      EXPECT_LE(SegmentTriangleDistance(c.p0, c.p1, c.tri), c.r * (1.0 + 1e-12)) << "case " << i;
      continue;
    }
    // GJK stops short of contact (half a kSweepGap, or a stall within
    // kSweepStallGap): never after the exact fraction, and there within its
    // gap of touching (a grazing contact, where the gap grows with the
    // square of the travel, may leave it some micrometres short).
    EXPECT_LE(ref.t, got.t + 1e-12) << "case " << i;
    const Vec3 at_ref = c.v * ref.t;
    EXPECT_LE(SegmentTriangleDistance(c.p0 + at_ref, c.p1 + at_ref, c.tri) - c.r,
              kSweepStallGap + 1e-9)
        << "case " << i;
    if (i % 4 != 2) {
      // Aimed: within ten micrometres of travel (a near-grazing contact
      // leaves GJK more than its gap short; a wrong piece would be far off).
      EXPECT_NEAR(got.t, ref.t, 1e-5 / speed) << "case " << i;
    }
    // Touching at t, apart before it.
    const Vec3 at = c.v * got.t;
    const double gap_at = SegmentTriangleDistance(c.p0 + at, c.p1 + at, c.tri) - c.r;
    EXPECT_NEAR(gap_at, 0.0, 1e-9) << "case " << i;
    for (int k = 0; k < 16; ++k) {
      const Vec3 s = c.v * (got.t * k / 16.0);
      EXPECT_GT(SegmentTriangleDistance(c.p0 + s, c.p1 + s, c.tri) - c.r, -1e-9)
          << "case " << i << " step " << k;
    }
    EXPECT_NEAR(got.normal.Length(), 1.0, 1e-9);
    EXPECT_LE(Dot(got.normal, c.v), 1e-9 * speed) << "case " << i;
    // The contact point is on the triangle and the core r away from it
    // (the reported normal may be the face's on an inactive edge: then only
    // the distance is checked).
    Vec3 on_tri;
    TriangleFeature f;
    on_tri = ClosestPointOnTriangle(got.point, c.tri[0], c.tri[1], c.tri[2], &f);
    EXPECT_LE((on_tri - got.point).Length(), 1e-9) << "case " << i;
    EXPECT_NEAR(PointSegmentDistance(got.point, c.p0 + at, c.p1 + at), c.r, 1e-8) << "case " << i;
    if (c.active == 7) {
      EXPECT_NEAR(PointSegmentDistance(got.point + got.normal * c.r, c.p0 + at, c.p1 + at), 0.0,
                  1e-8)
          << "case " << i;
    }
  }
  // The set-ups give hits and starts inside; hit or miss differ (each a
  // grazing pass, checked above) almost only in the grazing set-up.
  EXPECT_GT(hits, kCases / 3);
  EXPECT_GT(inside, kCases / 8);
  EXPECT_LE(disagree[0], kCases / 1000);
  EXPECT_LT(disagree[1], kCases / 4 / 3);
}

// Sphere: SweepSphereTriangle against SweepConvexTriangle on a point core.
TEST(TriangleSweepClosedForm, SphereMatchesGjkSweep) { CheckClosedForm(true, 101); }

// Capsule: SweepCapsuleTriangle against SweepConvexTriangle on a segment core.
TEST(TriangleSweepClosedForm, CapsuleMatchesGjkSweep) { CheckClosedForm(false, 202); }

// A capsule lying parallel to a triangle's face and dropped onto it, its ends
// beyond the triangle on both sides: the side meets an edge at the plane's
// time, found though neither end nor vertex touches then.
TEST(TriangleSweepClosedForm, CapsuleSideAcrossTriangleMeetsFace) {
  const Vec3 tri[3] = {{0, 0, 0}, {1, 0, 0}, {0, 0, 1}};
  const Vec3 p0{-1.0, 2.0, 0.25}, p1{2.0, 2.0, 0.25};
  const TriangleSweep s =
      SweepCapsuleTriangle(p0, p1, 0.5, {0, -4, 0}, 1.0, tri[0], tri[1], tri[2], 7);
  ASSERT_TRUE(s.hit);
  EXPECT_FALSE(s.started_inside);
  EXPECT_NEAR(s.t, 1.5 / 4.0, 1e-15);
  EXPECT_NEAR(s.normal.y, 1.0, 1e-12);
}

// A capsule whose ends stay clear of the triangle's plane all the way is a
// miss; one starting across the triangle is inside at t = 0.
TEST(TriangleSweepClosedForm, CapsuleMissAndStartInside) {
  const Vec3 tri[3] = {{0, 0, 0}, {1, 0, 0}, {0, 0, 1}};
  EXPECT_FALSE(SweepCapsuleTriangle({0.2, 1, 0.2}, {0.2, 2, 0.2}, 0.3, {0, 0.5, 0}, 1.0, tri[0],
                                    tri[1], tri[2], 7)
                   .hit);
  EXPECT_FALSE(SweepCapsuleTriangle({0.2, 1, 0.2}, {0.2, 2, 0.2}, 0.3, {0, -0.69, 0}, 1.0,
                                    tri[0], tri[1], tri[2], 7)
                   .hit);
  const TriangleSweep in = SweepCapsuleTriangle({0.2, -1, 0.2}, {0.2, 1, 0.2}, 0.1, {1, 0, 0},
                                                1.0, tri[0], tri[1], tri[2], 7);
  EXPECT_TRUE(in.hit && in.started_inside);
  EXPECT_EQ(in.t, 0.0);
}

}  // namespace
// Found by the geometry fuzzer: a mesh triangle 4e-162 m wide and 245 m tall
// gave a raycast normal of length 0.9991 (the cross product's squares were
// denormals). Tiny triangles at every scale down to 1e-300 get unit normals.
TEST(TriangleNormal, TinyTrianglesHaveUnitNormals) {
  for (double s : {1e-100, 1e-155, 4.0532657133499189e-162, 1e-200, 1e-300}) {
    const Vec3 a{0, 0, 0}, b{s, 244.953125, 0}, c{0, 1.3e-163, s};
    const Vec3 n = TriangleNormal(a, b, c);
    EXPECT_NEAR(n.Length(), 1.0, 1e-12) << s;
    const Vec3 f = FacingNormal(a, b, c, Vec3{1e-6, 1e-6, 0});
    EXPECT_NEAR(f.Length(), 1.0, 1e-12) << s;
  }
  EXPECT_EQ(TriangleNormal({0, 0, 0}, {1, 0, 0}, {2, 0, 0}), Vec3{});
}

}  // namespace hitbox
