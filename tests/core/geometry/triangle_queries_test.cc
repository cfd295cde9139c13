// The closed-form sweeps of a sphere and a capsule against one triangle
// (geometry/triangle_queries.h) against the generic GJK ray cast
// (SweepConvexTriangle) and against the distance itself, on seeded random
// triangles: hits, grazing passes and starts inside.
#include "geometry/triangle_queries.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "collision/triangles/ball_triangle_sweep.h"
#include "collision/triangles/box_triangle_sweep.h"
#include "collision/triangles/triangle_epa.h"
#include "collision/triangles/triangle_polytope_sat.h"
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

TriangleCastHit ClosedForm(const SweepCase& c, bool sphere) {
  return sphere ? SweepSphereTriangle(c.p0, c.r, c.v, 1.0, c.tri[0], c.tri[1], c.tri[2], c.active)
                : SweepCapsuleTriangle(c.p0, c.p1, c.r, c.v, 1.0, c.tri[0], c.tri[1], c.tri[2],
                                       c.active);
}

TriangleCastHit Generic(const SweepCase& c) {
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
    const TriangleCastHit got = ClosedForm(c, sphere);
    const TriangleCastHit ref = Generic(c);
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
  const TriangleCastHit s =
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
  const TriangleCastHit in = SweepCapsuleTriangle({0.2, -1, 0.2}, {0.2, 1, 0.2}, 0.1, {1, 0, 0},
                                                1.0, tri[0], tri[1], tri[2], 7);
  EXPECT_TRUE(in.hit && in.started_inside);
  EXPECT_EQ(in.t, 0.0);
}

// The closed forms as they were before their early misses (SweptCoreBox:
// the triangle's or an edge's box apart from the ball's path near the
// plane; a vertex outside the box the capsule sweeps; the end balls sharing
// the capsule's normal), kept verbatim as the reference those must match.
TriangleCastHit RefSweepSphereTriangle(const Vec3& c, double r, const Vec3& v, double t_max,
                                     const Vec3& a, const Vec3& b, const Vec3& cc,
                                     uint8_t active) {
  TriangleCastHit out;
  const Vec3 n = TriangleNormal(a, b, cc);
  const double h = Dot(c - a, n);
  if (ClearOfPlane(h, h, r, v, n, t_max)) return out;
  Vec3 q;
  const double d2 = PointTriangleDistanceSq(c, a, b, cc, &q);
  if (d2 <= r * r) {
    out.hit = out.started_inside = true;
    out.t = 0.0;
    const double side = Dot(c - a, n) >= 0.0 ? 1.0 : -1.0;
    out.normal = d2 > 0.0 ? (c - q).Normalized() : n * side;
    out.point = q;
    return out;
  }
  double best = t_max;
  bool found = false;
  // Face: the sphere's centre reaches the plane offset by r on its side.
  BallPlaneEntry at_plane;
  if (BallReachesPlane(c, h, r, v, n, best, &at_plane)) {
    TriangleFeature f;
    const Vec3 on = ClosestPointOnTriangle(at_plane.point, a, b, cc, &f);
    if (f == TriangleFeature::kFace) {
      // Inside the face: every other piece of the triangle's Minkowski sum
      // with the ball (the edge capsules) lies within r of the plane, so
      // none is entered before the plane is reached; and the face's normal
      // needs no active-edge check.
      out.hit = true;
      out.t = at_plane.t;
      out.normal = n * at_plane.side;
      out.point = at_plane.point;
      return out;
    }
    if ((on - at_plane.point).LengthSq() <= 1e-24 * (1.0 + at_plane.point.LengthSq())) {
      best = at_plane.t;
      found = true;
      out.normal = n * at_plane.side;
      out.point = at_plane.point;
    }
  }
  const Vec3 vs[3] = {a, b, cc};
  for (int i = 0; i < 3; ++i) {
    internal::RayEntry e;
    if (internal::RaySegmentCapsule(c, v, vs[i], vs[(i + 1) % 3], r, &e) ==
            internal::RayOutcome::kHit &&
        e.t < best) {
      best = e.t;
      found = true;
      out.normal = e.normal;
      out.point = c + v * e.t - e.normal * r;
    }
  }
  if (!found) return out;
  out.hit = true;
  out.t = best;
  // Inactive edge or vertex: report the face normal (Jolt's active edges).
  TriangleFeature f;
  int idx = 0;
  const Vec3 centre_at = c + v * best;
  ClosestPointOnTriangle(centre_at, a, b, cc, &f, &idx);
  bool use_face = false;
  if (f == TriangleFeature::kEdge) {
    use_face = ((active >> idx) & 1u) == 0;
  } else if (f == TriangleFeature::kVertex) {
    use_face = ((active >> idx) & 1u) == 0 && ((active >> ((idx + 2) % 3)) & 1u) == 0;
  }
  if (use_face) {
    const Vec3 face = n * (Dot(centre_at - a, n) >= 0.0 ? 1.0 : -1.0);
    if (Dot(face, v) <= 0.0) out.normal = face;
  }
  return out;
}

TriangleCastHit RefSweepCapsuleTriangle(const Vec3& p0, const Vec3& p1, double r, const Vec3& v,
                                      double t_max, const Vec3& a, const Vec3& b,
                                      const Vec3& cc, uint8_t active) {
  TriangleCastHit out;
  const Vec3 n = TriangleNormal(a, b, cc);
  const double h0 = Dot(p0 - a, n), h1 = Dot(p1 - a, n);
  if (ClearOfPlane(std::min(h0, h1), std::max(h0, h1), r, v, n, t_max)) return out;
  // Both ends beyond r on one side of the plane: not touching at the start
  // (the closest-points test is the costliest piece).
  const double clear = 1e-12 * (r + std::max(std::fabs(h0), std::fabs(h1)));
  const bool apart = std::min(h0, h1) - r > clear || -std::max(h0, h1) - r > clear;
  Vec3 on_seg, on_tri;
  const double d2 =
      apart ? 2.0 * r * r + 1.0 : SegmentTriangleDistanceSq(p0, p1, a, b, cc, &on_seg, &on_tri);
  if (d2 <= r * r) {
    out.hit = out.started_inside = true;
    out.t = 0.0;
    out.normal = d2 > 0.0 ? (on_seg - on_tri).Normalized() : n * (Dot(n, v) > 0.0 ? -1.0 : 1.0);
    out.point = on_tri;
    return out;
  }
  if (apart) {
    // Wholly on one side: the end nearer the plane reaches it first (p0 on a
    // tie, as the loop below), and when that is inside the face it is the
    // first contact (every piece of the Minkowski sum lies within r of the
    // plane): SweepSphereTriangle's face answer for that end.
    const bool near1 = std::fabs(h1) < std::fabs(h0);
    BallPlaneEntry at_plane;
    if (BallReachesPlane(near1 ? p1 : p0, near1 ? h1 : h0, r, v, n, t_max, &at_plane)) {
      TriangleFeature f;
      ClosestPointOnTriangle(at_plane.point, a, b, cc, &f);
      if (f == TriangleFeature::kFace) {
        out.hit = true;
        out.t = at_plane.t;
        out.normal = n * at_plane.side;
        out.point = at_plane.point;
        return out;
      }
    }
  }
  double best = t_max;
  bool found = false;
  // Feature of a vertex or side contact (-1: from an end ball, whose normal
  // SweepSphereTriangle has already settled).
  TriangleFeature feature = TriangleFeature::kFace;
  int index = -1;
  for (const Vec3& end : {p0, p1}) {
    const TriangleCastHit s = RefSweepSphereTriangle(end, r, v, best, a, b, cc, active);
    if (s.hit && (!found || s.t < best)) {
      best = s.t;
      found = true;
      out.normal = s.normal;
      out.point = s.point;
    }
  }
  const Vec3 vs[3] = {a, b, cc};
  for (int i = 0; i < 3; ++i) {
    internal::RayEntry e;
    if (internal::RaySegmentCapsule(vs[i], -v, p0, p1, r, &e) == internal::RayOutcome::kHit &&
        e.t < best) {
      best = e.t;
      found = true;
      out.normal = -e.normal;  // e.normal leaves the capsule towards the vertex
      out.point = vs[i];
      feature = TriangleFeature::kVertex;
      index = i;
    }
  }
  const Vec3 d = p1 - p0;
  const double dd = d.LengthSq();
  for (int i = 0; i < 3; ++i) {
    const Vec3 e = vs[(i + 1) % 3] - vs[i];
    const double ee = e.LengthSq();
    const Vec3 m = Cross(d, e);
    const double mm = m.LengthSq();
    // Near-parallel (sin^2 of the angle below 1e-12) or a point segment: left
    // to the ends and vertices above.
    if (!(mm > 1e-12 * dd * ee)) continue;
    const Vec3 axis = m / std::sqrt(mm);
    const double s0 = Dot(p0 - vs[i], axis);
    const double side = s0 >= 0.0 ? 1.0 : -1.0;
    const double gap = std::fabs(s0) - r;
    const double closing = -Dot(v, axis) * side;
    if (!(gap > 0.0 && closing > 0.0)) continue;
    const double t = gap / closing;
    if (!(t < best)) continue;
    // Closest points of the two lines at t (Ericson RTCD 5.1.8, unclamped).
    const Vec3 w = p0 + v * t - vs[i];
    const double de = Dot(d, e), dw = Dot(d, w), ew = Dot(e, w);
    const double den = dd * ee - de * de;
    if (!(den > 0.0)) continue;
    const double sc = (de * ew - ee * dw) / den;
    const double uc = (dd * ew - de * dw) / den;
    if (sc < 0.0 || sc > 1.0 || uc < 0.0 || uc > 1.0) continue;
    best = t;
    found = true;
    out.normal = axis * side;
    out.point = vs[i] + e * uc;
    feature = TriangleFeature::kEdge;
    index = i;
  }
  if (!found) return out;
  out.hit = true;
  out.t = best;
  // Inactive edge or vertex: the face normal (Jolt's active edges), as
  // SweepSphereTriangle.
  bool use_face = false;
  if (index >= 0 && feature == TriangleFeature::kEdge) {
    use_face = ((active >> index) & 1u) == 0;
  } else if (index >= 0 && feature == TriangleFeature::kVertex) {
    use_face = ((active >> index) & 1u) == 0 && ((active >> ((index + 2) % 3)) & 1u) == 0;
  }
  if (use_face) {
    const Vec3 face = n * (Dot(n, out.normal) >= 0.0 ? 1.0 : -1.0);
    if (Dot(face, v) <= 0.0) out.normal = face;
  }
  return out;
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

// The sweeps with their early misses against the reference, 30000 cases
// each: bit for bit the same hit, fraction, normal and point. The box test
// alone calls a good part of them apart, each a miss of the reference.
void CheckEarlyMisses(bool sphere, uint64_t seed) {
  Random rng(seed);
  constexpr int kCases = 30000;
  int hits = 0, apart = 0;
  for (int i = 0; i < kCases; ++i) {
    const ExactCase x = MakeExactCase(rng, sphere, i);
    const SweepCase& c = x.c;
    const Vec3* t = c.tri;
    const TriangleCastHit got =
        sphere ? SweepSphereTriangle(c.p0, c.r, c.v, x.t_max, t[0], t[1], t[2], c.active)
               : SweepCapsuleTriangle(c.p0, c.p1, c.r, c.v, x.t_max, t[0], t[1], t[2], c.active);
    const TriangleCastHit ref =
        sphere ? RefSweepSphereTriangle(c.p0, c.r, c.v, x.t_max, t[0], t[1], t[2], c.active)
               : RefSweepCapsuleTriangle(c.p0, c.p1, c.r, c.v, x.t_max, t[0], t[1], t[2],
                                         c.active);
    ASSERT_EQ(got.hit, ref.hit) << "case " << i;
    const Vec3 n = TriangleNormal(t[0], t[1], t[2]);
    const Aabb box(Min(t[0], Min(t[1], t[2])), Max(t[0], Max(t[1], t[2])));
    Aabb reach;
    if (!SweptCoreBox(c.p0, c.p1, Dot(c.p0 - t[0], n), Dot(c.p1 - t[0], n), c.r, c.v, x.t_max,
                      t[0], t[1], t[2], n, box, &reach) ||
        BoxesApart(reach, box)) {
      ++apart;
      EXPECT_FALSE(ref.hit) << "case " << i;
    }
    if (!got.hit) continue;
    ++hits;
    EXPECT_EQ(got.started_inside, ref.started_inside) << "case " << i;
    EXPECT_EQ(got.t, ref.t) << "case " << i;
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(got.normal[k], ref.normal[k]) << "case " << i;
      EXPECT_EQ(got.point[k], ref.point[k]) << "case " << i;
    }
  }
  EXPECT_GT(hits, kCases / 5);
  EXPECT_GT(apart, kCases / 10);
}

TEST(TriangleSweepEarlyMisses, SphereSameAsBefore) { CheckEarlyMisses(true, 303); }

TEST(TriangleSweepEarlyMisses, CapsuleSameAsBefore) { CheckEarlyMisses(false, 404); }

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
