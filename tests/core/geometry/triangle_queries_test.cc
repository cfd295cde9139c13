// The closed-form sweeps of a sphere and a capsule against one triangle
// (geometry/triangle_queries.h) against the generic GJK ray cast
// (SweepConvexTriangle) and against the distance itself, on seeded random
// triangles: hits, grazing passes and starts inside.
#include "geometry/triangle_queries.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "collision/triangles/ball_triangle_sweep.h"
#include "collision/triangles/box_triangle_sweep.h"
#include "collision/triangles/triangle_epa.h"
#include "collision/triangles/triangle_polytope_sat.h"
#include "cast_reference.h"
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

CastResult ClosedForm(const SweepCase& c, bool sphere) {
  return sphere ? SweepSphereTriangle(c.p0, c.r, c.v, 1.0, c.tri[0], c.tri[1], c.tri[2], c.active)
                : SweepCapsuleTriangle(c.p0, c.p1, c.r, c.v, 1.0, c.tri[0], c.tri[1], c.tri[2],
                                       c.active);
}

CastResult Generic(const SweepCase& c) {
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
    const CastResult got = ClosedForm(c, sphere);
    const CastResult ref = Generic(c);
    const double speed = c.v.Length();
    if (got.hit() != ref.hit()) {
      // Only a grazing pass may differ: the reported contact is touching and
      // the least distance over the sweep is r (up to rounding).
      const double t = got.hit() ? got.fraction : ref.fraction;
      const Vec3 at = c.v * t;
      EXPECT_NEAR(SegmentTriangleDistance(c.p0 + at, c.p1 + at, c.tri), c.r, 1e-6)
          << "case " << i << " got " << got.hit() << " ref " << ref.hit();
      double least = 1e300;
      for (int k = 0; k <= 400; ++k) {
        const Vec3 s = c.v * (k / 400.0);
        least = std::min(least, SegmentTriangleDistance(c.p0 + s, c.p1 + s, c.tri));
      }
      EXPECT_GT(least, c.r - 1e-6) << "case " << i;
      ++disagree[i % 4 == 2 ? 1 : 0];
      continue;
    }
    if (!got.hit()) continue;
    ++hits;
    EXPECT_EQ((got.state == CastState::kStartedOverlapping),
              (ref.state == CastState::kStartedOverlapping))
        << "case " << i;
    if (got.state == CastState::kStartedOverlapping) {
      ++inside;
      EXPECT_EQ(got.fraction, 0.0);
      EXPECT_LE(SegmentTriangleDistance(c.p0, c.p1, c.tri), c.r * (1.0 + 1e-12)) << "case " << i;
      continue;
    }
    // GJK stops short of contact (half a kSweepGap, or a stall within
    // kSweepStallGap): never after the exact fraction, and there within its
    // gap of touching (a grazing contact, where the gap grows with the
    // square of the travel, may leave it some micrometres short).
    EXPECT_LE(ref.fraction, got.fraction + 1e-12) << "case " << i;
    const Vec3 at_ref = c.v * ref.fraction;
    EXPECT_LE(SegmentTriangleDistance(c.p0 + at_ref, c.p1 + at_ref, c.tri) - c.r,
              kSweepStallGap + 1e-9)
        << "case " << i;
    if (i % 4 != 2) {
      // Aimed: within ten micrometres of travel (a near-grazing contact
      // leaves GJK more than its gap short; a wrong piece would be far off).
      EXPECT_NEAR(got.fraction, ref.fraction, 1e-5 / speed) << "case " << i;
    }
    // Touching at t, apart before it.
    const Vec3 at = c.v * got.fraction;
    const double gap_at = SegmentTriangleDistance(c.p0 + at, c.p1 + at, c.tri) - c.r;
    EXPECT_NEAR(gap_at, 0.0, 1e-9) << "case " << i;
    for (int k = 0; k < 16; ++k) {
      const Vec3 s = c.v * (got.fraction * k / 16.0);
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
  const CastResult s =
      SweepCapsuleTriangle(p0, p1, 0.5, {0, -4, 0}, 1.0, tri[0], tri[1], tri[2], 7);
  ASSERT_TRUE(s.hit());
  EXPECT_FALSE(s.state == CastState::kStartedOverlapping);
  EXPECT_NEAR(s.fraction, 1.5 / 4.0, 1e-15);
  EXPECT_NEAR(s.normal.y, 1.0, 1e-12);
}

// A capsule whose ends stay clear of the triangle's plane all the way is a
// miss; one starting across the triangle is inside at t = 0.
TEST(TriangleSweepClosedForm, CapsuleMissAndStartInside) {
  const Vec3 tri[3] = {{0, 0, 0}, {1, 0, 0}, {0, 0, 1}};
  EXPECT_FALSE(SweepCapsuleTriangle({0.2, 1, 0.2}, {0.2, 2, 0.2}, 0.3, {0, 0.5, 0}, 1.0, tri[0],
                                    tri[1], tri[2], 7)
                   .hit());
  EXPECT_FALSE(SweepCapsuleTriangle({0.2, 1, 0.2}, {0.2, 2, 0.2}, 0.3, {0, -0.69, 0}, 1.0,
                                    tri[0], tri[1], tri[2], 7)
                   .hit());
  const CastResult in = SweepCapsuleTriangle({0.2, -1, 0.2}, {0.2, 1, 0.2}, 0.1, {1, 0, 0}, 1.0,
                                             tri[0], tri[1], tri[2], 7);
  EXPECT_EQ(in.state, CastState::kStartedOverlapping);
  EXPECT_EQ(in.fraction, 0.0);
}

// A ball touching a face at the start (its height over the plane is r; the
// distance test rounds to just over r) and moving 2 m through it hits at
// t = 0; it was a miss while BallReachesPlane wanted the height above r.
TEST(TriangleSweepClosedForm, SphereTouchingTheFaceAtTheStartHitsAtOnce) {
  const Vec3 a{0, 0, 0}, b{30, 0, 10}, cc{0, 20, 10};
  const Vec3 c{5.7172857142857145, 5.5714285714285712, 5.8581428571428562};
  const double r = 0.99999999999999911;
  const Vec3 v{0.5714285714285714, 0.8571428571428571, -1.7142857142857142};  // -2 n
  const CastResult s = SweepSphereTriangle(c, r, v, 1.0, a, b, cc, 7);
  ASSERT_TRUE(s.hit());
  EXPECT_EQ(s.fraction, 0.0);
  EXPECT_NEAR(Dot(s.normal, TriangleNormal(a, b, cc)), 1.0, 1e-12);
}

// A triangle collinear to rounding (c = a + (b - a) / 2, cross product 1e-32,
// kept by TriangleMesh) is its segment: a ball whose centre crosses the
// segment's middle at t = 0.5 hits it before then, and the same ball moved
// 0.6 m (more than its radius) along the triangle's normal passes by.
TEST(TriangleSweep, BallAgainstACollinearTriangleHitsItsSegment) {
  const Vec3 a{0, -2, -0.90000000000000002}, b{0.80000000000000004, -0.30000000000000004,
                                                1.6000000000000001};
  const Vec3 cc = a + (b - a) * 0.5;
  ASSERT_GT(Cross(b - a, cc - a).LengthSq(), 0.0);
  const Vec3 c{-1.5133408786470435, -0.62737448222140946, 0.60688372907761234};
  const Vec3 v{3.8266817572940868, -1.0452510355571809, -0.51376745815522462};
  const CastResult s = SweepSphereTriangle(c, 0.5, v, 1.0, a, b, cc, 7);
  ASSERT_TRUE(s.hit());
  EXPECT_LT(s.fraction, 0.5);
  EXPECT_NEAR(PointSegmentDistance(c + v * s.fraction, a, b), 0.5, 1e-9);
  // Off the segment's line, square to the path and to the segment.
  const Vec3 away = Cross(b - a, v).Normalized() * 0.6;
  EXPECT_FALSE(SweepSphereTriangle(c + away, 0.5, v, 1.0, a, b, cc, 7).hit());
  EXPECT_FALSE(SweepCapsuleTriangle(c + away, c + away + v.Normalized() * 0.1, 0.5, v, 1.0, a, b,
                                    cc, 7)
                   .hit());
  EXPECT_TRUE(SweepCapsuleTriangle(c, c - v.Normalized() * 0.1, 0.5, v, 1.0, a, b, cc, 7).hit());
}

// A case for the early misses: a triangle of size s about `origin`, the
// sweep passing near its face, edges or vertices (by r times 1 + 1e-6,
// 1e-9, 1e-12, 0 or less; also axis-aligned, on the sweep's box), grazing
// the plane, touching at the start, or anywhere near its box; slivers,
// degenerate triangles, no motion, t_max < 1.
struct ExactCase {
  SweepCase c;
  double t_max = 1.0;
};

ExactCase MakeExactCase(Random& rng, bool sphere, int i) {
  ExactCase x;
  SweepCase& c = x.c;
  const double s = std::pow(10.0, rng.Uniform(-3.0, 3.0));  // 1 mm to 1 km
  const Vec3 origin = i % 3 == 0 ? rng.UnitVector() * 2e4 : rng.InBox(s);
  for (Vec3& p : c.tri) p = origin + rng.InBox(s);
  if (i % 11 == 0) {
    c.tri[2] = c.tri[0] + (c.tri[1] - c.tri[0]) * rng.Uniform(0.2, 0.8) + rng.InBox(1e-3 * s);
  } else if (i % 23 == 0) {
    c.tri[2] = c.tri[0] + (c.tri[1] - c.tri[0]) * 0.5;  // collinear
  } else if (i % 29 == 0) {
    c.tri[1] = c.tri[2] = c.tri[0];  // a point
  }
  c.r = s * rng.Uniform(0.01, 1.0);
  Vec3 axis = sphere ? Vec3{} : rng.UnitVector() * (s * rng.Uniform(0.0, 1.5));
  const double near[5] = {1e-6, 1e-9, 1e-12, 0.0, -1e-9};
  const double dr = c.r * near[rng.Int(0, 4)];
  if (i % 6 == 5) {
    // Axis-aligned: the core along y moving along x, a vertex (or an edge
    // along x and y) passing r + dr from it along z, the rest of the
    // triangle beyond: on the face of the box the sweep covers.
    const double side = rng.Int(0, 1) == 0 ? -1.0 : 1.0;
    const double len = s * rng.Uniform(0.5, 4.0), half = sphere ? 0.0 : s * rng.Uniform(0.0, 1.5);
    axis = {0, half, 0};
    c.v = {len, 0, 0};
    c.tri[0] = origin + Vec3{len * rng.Uniform(0.1, 0.9), half * rng.Uniform(-1.0, 1.0),
                             side * (c.r + dr)};
    c.tri[1] = c.tri[0] + Vec3{rng.Uniform(-s, s), rng.Uniform(-s, s),
                               rng.Int(0, 1) == 0 ? 0.0 : side * s * rng.Uniform(0.1, 1.0)};
    c.tri[2] = c.tri[0] + Vec3{rng.Uniform(-s, s), rng.Uniform(-s, s),
                               side * s * rng.Uniform(0.1, 1.0)};
    c.p0 = origin - axis;
    c.p1 = origin + axis;
    c.active = static_cast<uint8_t>(rng.Int(0, 7));
    x.t_max = rng.Int(0, 2) == 0 ? rng.Uniform(0.0, 1.0) : 1.0;
    return x;
  }
  const Vec3 n = TriangleNormal(c.tri[0], c.tri[1], c.tri[2]);
  Vec3 centre;
  switch (i % 5) {
    case 0: {  // passing an edge line (or a vertex) at r + dr, across or along it
      const int e = rng.Int(0, 2);
      const Vec3 p = c.tri[e], q = c.tri[(e + 1) % 3];
      const Vec3 u = (q - p).Normalized();
      const Vec3 w = u.LengthSq() > 0.0 ? Cross(u, rng.UnitVector()).Normalized()
                                        : rng.UnitVector();
      const Vec3 dir = Cross(w, u).LengthSq() > 0.0 && rng.Int(0, 1) == 0
                           ? Cross(w, u).Normalized()
                           : Cross(w, rng.UnitVector()).Normalized();
      const Vec3 at = p + (q - p) * rng.Uniform(-0.2, 1.2) + w * (c.r + dr);
      const double len = s * rng.Uniform(0.5, 4.0);
      centre = at - dir * (len * rng.Uniform(0.2, 0.8));
      c.v = dir * len;
      break;
    }
    case 1: {  // grazing: parallel to the plane at height r + dr
      const Vec3 flat = Cross(n, rng.UnitVector()).Normalized() * (s * rng.Uniform(1.0, 4.0));
      const double wa = rng.Uniform(-0.3, 1.0), wb = rng.Uniform(-0.3, 1.0 - wa);
      const Vec3 aim = c.tri[0] * wa + c.tri[1] * wb + c.tri[2] * (1.0 - wa - wb);
      centre = aim - flat * 0.5 + n * ((rng.Int(0, 1) == 0 ? -1.0 : 1.0) * (c.r + dr));
      c.v = flat;
      break;
    }
    case 2: {  // touching at the start (r + dr from a point of the triangle), any motion
      const double wa = rng.Uniform(0.0, 1.0), wb = rng.Uniform(0.0, 1.0 - wa);
      const Vec3 on = c.tri[0] * wa + c.tri[1] * wb + c.tri[2] * (1.0 - wa - wb);
      centre = on + (rng.Int(0, 1) == 0 ? n : rng.UnitVector()) * (c.r + dr);
      c.v = rng.InBox(2.0 * s);
      break;
    }
    default:  // anywhere near the triangle's box, any motion (often none)
      centre = origin + rng.InBox(2.0 * s);
      c.v = i % 17 == 0 ? Vec3{} : rng.InBox(3.0 * s);
      break;
  }
  // A capsule's axis across the path or the edge; its centre where the ball's was.
  c.p0 = centre - axis;
  c.p1 = centre + axis;
  c.active = static_cast<uint8_t>(rng.Int(0, 7));
  x.t_max = rng.Int(0, 2) == 0 ? rng.Uniform(0.0, 1.0) : 1.0;
  return x;
}

// The sweeps against the distance along the path (SweepAgreesWithGap: the
// first contact by bisection on the segment-triangle distance), 30000 cases each; a hit's normal is a unit vector not along the motion and its
// point lies on the triangle. The box test alone calls a good part of them
// apart: each is a miss of the reference.
void CheckAgainstDistance(bool sphere, uint64_t seed) {
  Random rng(seed);
  constexpr int kCases = 30000;
  int hits = 0, inside = 0, apart = 0, collinear = 0;
  for (int i = 0; i < kCases; ++i) {
    const ExactCase x = MakeExactCase(rng, sphere, i);
    const SweepCase& c = x.c;
    const Vec3* t = c.tri;
    // Zero-area triangles never reach a sweep: TriangleMesh::Build drops them.
    if (Cross(t[1] - t[0], t[2] - t[0]).LengthSq() == 0.0) continue;
    // A triangle collinear to rounding keeps its vertices on its plane.
    const Vec3 n = TriangleNormal(t[0], t[1], t[2]);
    const double off = std::max(std::fabs(Dot(t[1] - t[0], n)), std::fabs(Dot(t[2] - t[0], n)));
    EXPECT_LE(off, 1e-12 * ((t[1] - t[0]).Length() + (t[2] - t[0]).Length())) << "case " << i;
    collinear += i % 23 == 0 && i % 11 != 0;
    const CastResult got =
        sphere ? SweepSphereTriangle(c.p0, c.r, c.v, x.t_max, t[0], t[1], t[2], c.active)
               : SweepCapsuleTriangle(c.p0, c.p1, c.r, c.v, x.t_max, t[0], t[1], t[2], c.active);
    // Rounding: relative to the sizes involved and to the distance from the origin.
    const double size = c.r + (c.p1 - c.p0).Length() + c.v.Length() + (t[1] - t[0]).Length() +
                        (t[2] - t[0]).Length();
    const double far = std::max(c.p0.Length(), t[0].Length());
    const double tol = 1e-9 * size + 1e-12 * far;
    auto gap = [&](double f) {
      const Vec3 at = c.v * f;
      return SegmentTriangleDistance(c.p0 + at, c.p1 + at, c.tri) - c.r;
    };
    EXPECT_TRUE(testing::SweepAgreesWithGap(gap, x.t_max, c.v.Length(), tol, got.hit(),
                                            (got.state == CastState::kStartedOverlapping),
                                            got.fraction))
        << "case " << i;
    const Aabb box(Min(t[0], Min(t[1], t[2])), Max(t[0], Max(t[1], t[2])));
    Aabb reach;
    if (!SweptCoreBox(c.p0, c.p1, Dot(c.p0 - t[0], n), Dot(c.p1 - t[0], n), c.r, c.v, x.t_max,
                      t[0], t[1], t[2], n, box, &reach) ||
        BoxesApart(reach, box)) {
      ++apart;
      EXPECT_FALSE(got.hit()) << "case " << i;
    }
    if (!got.hit()) continue;
    ++hits;
    EXPECT_NEAR(got.normal.Length(), 1.0, 1e-9) << "case " << i;
    if (got.state == CastState::kStartedOverlapping) {
      ++inside;
      continue;
    }
    EXPECT_LE(Dot(got.normal, c.v), 1e-9 * c.v.Length()) << "case " << i;
    // On the triangle (a grazing contact's point moves by the square root of
    // the distance's rounding times r).
    const Vec3 on = ClosestPointOnTriangle(got.point, t[0], t[1], t[2]);
    EXPECT_LE((on - got.point).Length(), tol + std::sqrt(tol * c.r)) << "case " << i;
  }
  std::printf("hits %d (started inside %d), apart by the box test %d, collinear %d\n", hits,
              inside, apart, collinear);
  EXPECT_GT(hits, kCases / 5);
  EXPECT_GT(inside, kCases / 20);
  EXPECT_GT(apart, kCases / 10);
  EXPECT_GT(collinear, kCases / 50);
}

TEST(TriangleSweepAgainstDistance, Sphere) { CheckAgainstDistance(true, 303); }

TEST(TriangleSweepAgainstDistance, Capsule) { CheckAgainstDistance(false, 404); }

// The same bits, every field.
bool SameResult(const CastResult& a, const CastResult& b) {
  auto same = [](const Vec3& x, const Vec3& y) { return std::memcmp(&x, &y, sizeof(Vec3)) == 0; };
  return a.state == b.state && std::memcmp(&a.fraction, &b.fraction, sizeof(double)) == 0 &&
         same(a.normal, b.normal) && same(a.point, b.point) && a.sub_shape == b.sub_shape;
}

// A capsule standing on a floor of 2 m cells (two triangles each) at a
// random height near the skin, moving by a character's step (down, along,
// or both), the triangle any of the cells around it: the character moves'
// common case, mostly triangles beside the capsule.
ExactCase MakeFloorCase(Random& rng) {
  ExactCase x;
  SweepCase& c = x.c;
  const double cx = 2.0 * rng.Int(-1, 1), cz = 2.0 * rng.Int(-1, 1);
  const Vec3 corner[4] = {{cx, 0, cz}, {cx + 2, 0, cz}, {cx + 2, 0, cz + 2}, {cx, 0, cz + 2}};
  const int half = rng.Int(0, 1);
  c.tri[0] = corner[0];
  c.tri[1] = half == 0 ? corner[2] : corner[1];
  c.tri[2] = half == 0 ? corner[1] : corner[2];
  if (rng.Int(0, 1) == 0) std::swap(c.tri[1], c.tri[2]);  // either winding
  c.r = 0.4;
  const Vec3 base{rng.Uniform(0.0, 2.0), c.r + rng.Uniform(-1e-3, 0.03), rng.Uniform(0.0, 2.0)};
  c.p0 = base;
  c.p1 = base + Vec3{0, 1.0, 0};
  const Vec3 walk = Vec3{rng.Uniform(-1, 1), 0, rng.Uniform(-1, 1)} * 0.1;
  switch (rng.Int(0, 2)) {
    case 0: c.v = {0, -rng.Uniform(0.0, 0.05), 0}; break;
    case 1: c.v = walk; break;
    default: c.v = walk + Vec3{0, -rng.Uniform(0.0, 0.05), 0}; break;
  }
  c.active = static_cast<uint8_t>(rng.Int(0, 7));
  x.t_max = rng.Int(0, 2) == 0 ? rng.Uniform(0.0, 1.0) : 1.0;
  return x;
}

// A random triangle of size s (1 cm to 100 m), returned, a quarter of them
// 10 km from the origin.
double RandomTriangle(Random& rng, Vec3 tri[3]) {
  const double s = std::pow(10.0, rng.Uniform(-2.0, 2.0));
  const Vec3 origin = rng.Int(0, 3) == 0 ? rng.UnitVector() * 1e4 : rng.InBox(s);
  for (int k = 0; k < 3; ++k) tri[k] = origin + rng.InBox(s);
  return s;
}

// A capsule beside an edge of a random triangle, in the triangle's plane
// (its core's nearest point r times 1 + 1e-6, 1e-9, 1e-12, 0, -1e-9 or
// -1e-3 out along the edge's outward normal), its axis along the plane's
// normal, the edge or anywhere, moving along the edge, towards or away
// from it, or not at all: where the test beside an edge is tight.
ExactCase MakeBesideEdgeCase(Random& rng) {
  ExactCase x;
  SweepCase& c = x.c;
  const double s = RandomTriangle(rng, c.tri);
  const Vec3 n = TriangleNormal(c.tri[0], c.tri[1], c.tri[2]);
  const int e = rng.Int(0, 2);
  const Vec3 p = c.tri[e], q = c.tri[(e + 1) % 3], o = c.tri[(e + 2) % 3];
  Vec3 out = Cross(q - p, n).Normalized();
  if (Dot(o - p, out) > 0.0) out = -out;
  c.r = s * rng.Uniform(0.01, 1.0);
  const double near[6] = {1e-6, 1e-9, 1e-12, 0.0, -1e-9, -1e-3};
  const Vec3 on = p + (q - p) * rng.Uniform(-0.2, 1.2);
  const Vec3 axes[3] = {n, (q - p).Normalized(), rng.UnitVector()};
  const Vec3 axis = axes[rng.Int(0, 2)] * (s * rng.Uniform(0.0, 1.0));
  // The core's end nearest the edge line at the chosen distance.
  const double lean = std::fabs(Dot(axis, out));
  const Vec3 centre = on + out * (c.r * (1.0 + near[rng.Int(0, 5)]) + lean);
  c.p0 = centre - axis;
  c.p1 = centre + axis;
  switch (rng.Int(0, 3)) {
    case 0: c.v = (q - p) * rng.Uniform(-2.0, 2.0); break;
    case 1: c.v = out * (-s * rng.Uniform(0.0, 2.0)) + rng.InBox(0.1 * s); break;
    case 2: c.v = out * (s * rng.Uniform(0.0, 2.0)); break;
    default: c.v = Vec3{}; break;
  }
  c.active = static_cast<uint8_t>(rng.Int(0, 7));
  x.t_max = rng.Int(0, 2) == 0 ? rng.Uniform(0.0, 1.0) : 1.0;
  return x;
}

// A capsule moving past a random triangle: on the axis square to its
// motion and to an edge (or to its motion and its own segment) the swept
// core's span lies r times 1 + 1e-6, 1e-9, 1e-12, 0, -1e-9 or -1e-3 beyond
// the triangle's, the motion from anywhere along it: where the test beside
// the triangle's corners and edges (PathBesideTriangle) is tight.
ExactCase MakePastCornerCase(Random& rng) {
  ExactCase x;
  SweepCase& c = x.c;
  const double s = RandomTriangle(rng, c.tri);
  c.r = s * rng.Uniform(0.01, 1.0);
  const Vec3 travel = rng.UnitVector() * (s * rng.Uniform(0.1, 3.0));
  const Vec3 half = rng.UnitVector() * (s * rng.Uniform(0.0, 1.0));
  const int e = rng.Int(0, 3);  // 3: the segment's own axis
  const Vec3 along = e == 3 ? half : c.tri[(e + 1) % 3] - c.tri[e];
  Vec3 m = Cross(travel, along).Normalized();
  if (rng.Int(0, 1) == 0) m = -m;
  double hi = Dot(c.tri[0], m);
  for (const Vec3& p : c.tri) hi = std::max(hi, Dot(p, m));
  const double near[6] = {1e-6, 1e-9, 1e-12, 0.0, -1e-9, -1e-3};
  const double lean = std::fabs(Dot(half, m));
  // The core's nearest point on m at the chosen distance beyond the triangle;
  // the path's start anywhere from well before to past the triangle.
  const Vec3 centre_tri = (c.tri[0] + c.tri[1] + c.tri[2]) / 3.0;
  const Vec3 start = centre_tri - travel * rng.Uniform(0.0, 1.2);
  const Vec3 centre =
      start + m * (hi + c.r * (1.0 + near[rng.Int(0, 5)]) + lean - Dot(start, m));
  c.p0 = centre - half;
  c.p1 = centre + half;
  c.v = travel;
  c.active = static_cast<uint8_t>(rng.Int(0, 7));
  x.t_max = rng.Int(0, 2) == 0 ? rng.Uniform(0.0, 1.0) : 1.0;
  return x;
}

// SweepCapsuleTriangle's cheap misses beside a triangle (SegmentBeyondAnEdge,
// PathBesideTriangle) change no answer: every field is the closed form's
// alone (behind the plane test) on near misses of edges and vertices at
// 1e-6 to 0 of r, grazes, starts inside, capsules beside an edge in its
// plane, paths past a corner and a character's floor; each case either
// calls a miss is one. They do call a good part of the floor and corner
// cases misses. (Either test 1e-3 of r too tight, or with no margin, fails here.)
TEST(TriangleSweepClosedForm, CapsuleMissBesideAnEdgeChangesNoAnswer) {
  Random rng(505);
  int beside = 0, floor_beside = 0, past = 0, hits = 0;
  for (int i = 0; i < 120000; ++i) {
    const bool floor = i % 4 == 1;
    const ExactCase x = floor        ? MakeFloorCase(rng)
                        : i % 4 == 2 ? MakeBesideEdgeCase(rng)
                        : i % 4 == 3 ? MakePastCornerCase(rng)
                                     : MakeExactCase(rng, false, i / 4);
    const SweepCase& c = x.c;
    const Vec3* t = c.tri;
    if (Cross(t[1] - t[0], t[2] - t[0]).LengthSq() == 0.0) continue;  // never in a mesh
    const Vec3 n = TriangleNormal(t[0], t[1], t[2]);
    const double h0 = Dot(c.p0 - t[0], n), h1 = Dot(c.p1 - t[0], n);
    const CastResult closed_form =
        ClearOfPlane(std::min(h0, h1), std::max(h0, h1), c.r, c.v, n, x.t_max)
            ? CastResult{}
            : SweepCapsuleTriangleAt(c.p0, c.p1, h0, h1, c.r, c.v, x.t_max, t[0], t[1], t[2], n,
                                     c.active);
    const CastResult got =
        SweepCapsuleTriangle(c.p0, c.p1, c.r, c.v, x.t_max, t[0], t[1], t[2], c.active);
    ASSERT_TRUE(SameResult(got, closed_form)) << "case " << i;
    hits += got.hit();
    if (SegmentBeyondAnEdge(c.p0, c.p1, h0, h1, c.r, c.v, x.t_max, t[0], t[1], t[2], n)) {
      ++beside;
      floor_beside += floor;
      EXPECT_FALSE(closed_form.hit()) << "case " << i;
    }
    if (PathBesideTriangle(c.p0, c.p1, c.r, c.v, x.t_max, t[0], t[1], t[2])) {
      ++past;
      EXPECT_FALSE(closed_form.hit()) << "case " << i;
    }
  }
  std::printf("hits %d, beside an edge %d (floor %d), past the triangle %d\n", hits, beside,
              floor_beside, past);
  EXPECT_GT(hits, 6000);
  EXPECT_GT(floor_beside, 6000);
  EXPECT_GT(beside - floor_beside, 3000);
  EXPECT_GT(past, 6000);
}

// A ball's centre beyond r of a triangle's plane (by SweepSphereTriangle's
// margin, relative to the coordinates: 1e-12 of r + |h| was too little far
// from the origin) is beyond r of the triangle: the distance test it then
// skips would have said so, on the near misses and starts inside above.
TEST(TriangleSweepClosedForm, BallOffThePlaneIsOffTheTriangle) {
  Random rng(606);
  int off = 0;
  for (int i = 0; i < 30000; ++i) {
    const ExactCase x = MakeExactCase(rng, true, i);
    const SweepCase& c = x.c;
    const Vec3* t = c.tri;
    if (Cross(t[1] - t[0], t[2] - t[0]).LengthSq() == 0.0) continue;
    const Vec3 n = TriangleNormal(t[0], t[1], t[2]);
    for (const Vec3& centre : {c.p0, c.p0 + c.v * 0.5}) {
      const double h = Dot(centre - t[0], n);
      const double coords =
          std::max({centre.Abs().MaxComponent(), t[0].Abs().MaxComponent(),
                    t[1].Abs().MaxComponent(), t[2].Abs().MaxComponent()});
      if (!(std::fabs(h) - c.r > 1e-9 * (c.r + std::fabs(h) + coords))) continue;
      ++off;
      Vec3 q;
      EXPECT_GT(PointTriangleDistanceSq(centre, t[0], t[1], t[2], &q), c.r * c.r) << "case " << i;
    }
  }
  EXPECT_GT(off, 10000);
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
  // Collinear: a unit normal square to the segment; a point: zero.
  const Vec3 n = TriangleNormal({0, 0, 0}, {1, 0, 0}, {2, 0, 0});
  EXPECT_NEAR(n.Length(), 1.0, 1e-12);
  EXPECT_EQ(n.x, 0.0);
  EXPECT_EQ(TriangleNormal({1, 2, 3}, {1, 2, 3}, {1, 2, 3}), Vec3{});
}

}  // namespace hitbox
