// The closed-form sphere- and capsule-triangle sweeps
// (collision/triangles/ball_triangle_sweep.h) against the routines as they
// were before their early outs were reworked (ball_triangle_sweep_reference.h):
// every field the same to the bit, on seeded random cases built where early
// outs are tight.
#include "collision/triangles/ball_triangle_sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "collision/triangles/ball_triangle_sweep_reference.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::Random;

struct Case {
  Vec3 tri[3];
  Vec3 p0, p1;
  double r = 0.0;
  Vec3 v;
  double t_max = 1.0;
  uint8_t active = 7;
};

// The same bits, every field.
bool SameResult(const CastResult& a, const CastResult& b) {
  auto same = [](const Vec3& x, const Vec3& y) { return std::memcmp(&x, &y, sizeof(Vec3)) == 0; };
  return a.state == b.state && std::memcmp(&a.fraction, &b.fraction, sizeof(double)) == 0 &&
         same(a.normal, b.normal) && same(a.point, b.point) && a.sub_shape == b.sub_shape;
}

// A relative offset from an exact contact: just clear, touching, just in.
double Near(Random& rng) {
  static constexpr double kNear[8] = {1e-3, 1e-6, 1e-9, 1e-12, 0.0, -1e-12, -1e-9, -1e-3};
  return kNear[rng.Int(0, 7)];
}

// A point of the triangle, or (weights beyond [0, 1]) just off an edge or
// vertex of it.
Vec3 OnOrNear(Random& rng, const Vec3 tri[3], double spill) {
  const double wa = rng.Uniform(-spill, 1.0 + spill);
  const double wb = rng.Uniform(-spill, 1.0 + spill - std::max(wa, 0.0));
  return tri[0] * wa + tri[1] * wb + tri[2] * (1.0 - wa - wb);
}

// A triangle at scale s about `origin`: general, a sliver, nearly collinear,
// right-angled and axis-aligned (a floor or wall cell), or tiny.
void MakeTriangle(Random& rng, const Vec3& origin, double s, Vec3 tri[3]) {
  for (int k = 0; k < 3; ++k) tri[k] = origin + rng.InBox(s);
  switch (rng.Int(0, 9)) {
    case 0:  // a sliver
      tri[2] = tri[0] + (tri[1] - tri[0]) * rng.Uniform(0.1, 0.9) + rng.InBox(1e-3 * s);
      break;
    case 1:  // collinear to rounding
      tri[2] = tri[0] + (tri[1] - tri[0]) * rng.Uniform(0.1, 0.9) + rng.InBox(1e-9 * s);
      break;
    case 2:
    case 3: {  // an axis-aligned cell half (floor, ceiling or wall), either winding
      const int up = rng.Int(0, 2), u = (up + 1) % 3, w = (up + 2) % 3;
      Vec3 d1, d2;
      d1[u] = s * rng.Uniform(0.5, 2.0);
      d2[w] = s * rng.Uniform(0.5, 2.0);
      if (rng.Int(0, 1) == 0) d2[u] = d1[u];
      tri[0] = origin;
      tri[1] = origin + d1;
      tri[2] = origin + d2;
      if (rng.Int(0, 1) == 0) std::swap(tri[1], tri[2]);
      break;
    }
    case 4:  // tiny against the capsule
      for (int k = 1; k < 3; ++k) tri[k] = tri[0] + rng.InBox(1e-3 * s);
      break;
    default:
      break;
  }
}

// One random case at scale s; kind picks the set-up.
Case MakeCase(Random& rng, int kind) {
  Case c;
  const double s = std::pow(10.0, rng.Uniform(-2.0, 2.0));
  const Vec3 origin = rng.Int(0, 4) == 0 ? rng.UnitVector() * (1e4 * rng.Uniform(0.0, 1.0))
                                         : rng.InBox(s);
  MakeTriangle(rng, origin, s, c.tri);
  const Vec3* t = c.tri;
  const Vec3 n = TriangleNormal(t[0], t[1], t[2]);
  c.r = s * rng.Uniform(0.01, 1.0);
  const double half = rng.Int(0, 5) == 0 ? 0.0 : s * rng.Uniform(0.0, 2.0);
  // The core's axis: along the normal (upright on a floor), in the plane
  // (lying beside a wall), or any.
  const Vec3 flat = n.LengthSq() > 0.0 ? Cross(n, rng.UnitVector()).Normalized() : rng.UnitVector();
  const Vec3 axes[3] = {n, flat, rng.UnitVector()};
  Vec3 axis = axes[rng.Int(0, 2)] * half;
  if (axis.LengthSq() == 0.0) axis = Vec3{};
  const double side = rng.Int(0, 1) == 0 ? -1.0 : 1.0;
  const double gap = c.r * (1.0 + Near(rng));
  Vec3 centre;
  switch (kind) {
    case 0: {  // an end just above (or below) the face, moving into it, along it or away
      const Vec3 on = OnOrNear(rng, t, 0.3);
      const Vec3 up = n * side;
      const double lean = std::fabs(Dot(axis, up));
      centre = on + up * (gap + lean);
      switch (rng.Int(0, 3)) {
        case 0: c.v = up * (-s * rng.Uniform(0.0, 2.0)); break;
        case 1: c.v = Cross(up, rng.UnitVector()) * (s * rng.Uniform(0.0, 2.0)); break;
        case 2: c.v = up * (-s * rng.Uniform(0.0, 0.1)) + rng.InBox(s); break;
        default: c.v = up * (s * rng.Uniform(0.0, 1.0)); break;
      }
      break;
    }
    case 1: {  // the core passing an edge or a vertex at r, across or along it
      const int e = rng.Int(0, 2);
      const Vec3 p = t[e], q = t[(e + 1) % 3];
      const Vec3 at = rng.Int(0, 3) == 0 ? p : p + (q - p) * rng.Uniform(-0.2, 1.2);
      const Vec3 w = rng.UnitVector();
      const Vec3 dir = rng.Int(0, 1) == 0 ? Cross(w, rng.UnitVector()).Normalized()
                                          : (q - p).Normalized();
      const double lean = std::fabs(Dot(axis, w));
      const Vec3 pass = at + w * (gap + lean);
      const double len = s * rng.Uniform(0.2, 4.0);
      centre = pass - dir * (len * rng.Uniform(-0.2, 1.2));
      c.v = dir * len;
      break;
    }
    case 2: {  // grazing: moving parallel to the plane at height r
      const Vec3 aim = OnOrNear(rng, t, 0.5);
      const Vec3 along = flat * (s * rng.Uniform(0.5, 4.0));
      const Vec3 a = rng.Int(0, 1) == 0 ? flat * half : axis;
      axis = a;
      const double lean = std::fabs(Dot(axis, n));
      centre = aim - along * rng.Uniform(0.0, 1.0) + n * (side * (gap + lean));
      c.v = along;
      break;
    }
    case 3: {  // starting inside, through or touching
      centre = OnOrNear(rng, t, 0.1) + rng.UnitVector() * (c.r * rng.Uniform(0.0, 1.2));
      c.v = rng.Int(0, 5) == 0 ? Vec3{} : rng.InBox(2.0 * s);
      break;
    }
    case 4: {  // a character: upright on or beside a floor cell or at a wall,
               // stepping along, down or into it
      const Vec3 up = n * side;
      const Vec3 foot = OnOrNear(rng, t, 0.6);
      axis = up * (0.5 * half);
      centre = foot + up * (c.r * (1.0 + Near(rng)) + 0.5 * half + rng.Uniform(0.0, 0.05 * s));
      const Vec3 walk = Cross(up, rng.UnitVector()) * (0.1 * s * rng.Uniform(0.0, 1.0));
      switch (rng.Int(0, 2)) {
        case 0: c.v = up * (-0.05 * s * rng.Uniform(0.0, 1.0)); break;
        case 1: c.v = walk; break;
        default: c.v = walk - up * (0.05 * s * rng.Uniform(0.0, 1.0)); break;
      }
      if (rng.Int(0, 3) == 0) {
        // Upright beside a wall: the wall's normal across the axis.
        const Vec3 out = flat;
        axis = Cross(out, rng.UnitVector()).Normalized() * half;
        const double lean = std::fabs(Dot(axis, out));
        centre = foot + out * (c.r * (1.0 + Near(rng)) + lean);
        c.v = out * (-0.1 * s * rng.Uniform(0.0, 1.0)) + walk;
      }
      break;
    }
    default:  // anywhere near, any motion (often none)
      centre = origin + rng.InBox(2.0 * s);
      c.v = rng.Int(0, 9) == 0 ? Vec3{} : rng.InBox(3.0 * s);
      break;
  }
  c.p0 = centre - axis;
  c.p1 = centre + axis;
  if (rng.Int(0, 1) == 0) std::swap(c.p0, c.p1);
  c.active = static_cast<uint8_t>(rng.Int(0, 7));
  c.t_max = rng.Int(0, 2) == 0 ? rng.Uniform(0.0, 1.0) : 1.0;
  return c;
}

// Every field of the sphere and capsule sweeps is the reference's, on
// 400,000 cases each (starts inside, grazes, near edges and vertices,
// characters on floors and at walls, far from the origin); hits of every
// kind are among them, and the quick miss beside or above an edge
// (SegmentBeyondAnEdge) passes by many cases the reference's did not.
TEST(BallTriangleSweep, SameBitsAsTheReference) {
  Random rng(2929);
  constexpr int kCases = 400000;
  int hits = 0, inside = 0, sphere_hits = 0, capsule_hits = 0, beyond = 0, beyond_new = 0;
  for (int i = 0; i < kCases; ++i) {
    const Case c = MakeCase(rng, i % 6);
    const Vec3* t = c.tri;
    if (Cross(t[1] - t[0], t[2] - t[0]).LengthSq() == 0.0) continue;  // never in a mesh
    const CastResult want = reference::SweepCapsuleTriangle(c.p0, c.p1, c.r, c.v, c.t_max, t[0],
                                                            t[1], t[2], c.active);
    const CastResult got =
        SweepCapsuleTriangle(c.p0, c.p1, c.r, c.v, c.t_max, t[0], t[1], t[2], c.active);
    ASSERT_TRUE(SameResult(got, want)) << "capsule case " << i;
    const CastResult want_ball =
        reference::SweepSphereTriangle(c.p0, c.r, c.v, c.t_max, t[0], t[1], t[2], c.active);
    const CastResult got_ball =
        SweepSphereTriangle(c.p0, c.r, c.v, c.t_max, t[0], t[1], t[2], c.active);
    ASSERT_TRUE(SameResult(got_ball, want_ball)) << "sphere case " << i;
    const Vec3 n = TriangleNormal(t[0], t[1], t[2]);
    const double h0 = Dot(c.p0 - t[0], n), h1 = Dot(c.p1 - t[0], n);
    if (!ClearOfPlane(std::min(h0, h1), std::max(h0, h1), c.r, c.v, n, c.t_max) &&
        SegmentBeyondAnEdge(c.p0, c.p1, h0, h1, c.r, c.v, c.t_max, t[0], t[1], t[2], n)) {
      ++beyond;
      beyond_new +=
          !reference::SegmentBeyondAnEdge(c.p0, c.p1, c.r, c.v, c.t_max, t[0], t[1], t[2], n);
    }
    hits += want.state == CastState::kHit;
    inside += want.state == CastState::kStartedOverlapping;
    capsule_hits += want.hit();
    sphere_hits += want_ball.hit();
  }
  std::printf("capsule hits %d (started inside %d), sphere hits %d, beyond an edge %d (%d new)\n",
              capsule_hits, inside, sphere_hits, beyond, beyond_new);
  EXPECT_GT(hits, kCases / 10);
  EXPECT_GT(inside, kCases / 20);
  EXPECT_GT(sphere_hits, kCases / 10);
  EXPECT_GT(beyond_new, kCases / 50);
}

}  // namespace
}  // namespace hitbox
