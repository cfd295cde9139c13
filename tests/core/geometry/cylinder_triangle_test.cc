// The closed-form cylinder-triangle sweep (cylinder_triangle.h) against the
// GJK cast it stands in for (SweepConvexTriangle without its shortcut), on
// seeded random pairs and on the degenerate ones (a cap on a flat triangle,
// the axis along an edge, a rim grazing an edge, a vertex on a rim, starting
// touching or inside, far from the origin, slivers); and the cull before
// the cast (CylinderTriangleApart), which must never drop a pair it hits.
#include "collision/triangles/cylinder_triangle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "geometry/gjk.h"
#include "collision/triangles/surface_deepest_contact.h"
#include "collision/triangles/surface_sweep.h"
#include "collision/triangles/box_triangle_sweep.h"
#include "collision/triangles/triangle_epa.h"
#include "collision/triangles/triangle_polytope_sat.h"
#include "test_util.h"

namespace hitbox {
namespace {

using internal::ConvexCore;
using testing::Random;

ConvexCore Cylinder(double r, double h) {
  ConvexCore c;
  c.kind = ConvexCore::Kind::kCylinder;
  c.radius = r;
  c.half_height = h;
  return c;
}

struct Tally {
  int pairs = 0;
  int closed_hits = 0;    // proven hits (the cast hit too)
  int closed_misses = 0;  // proven misses past t_max
  int cast_hits = 0;
  int cast_capped = 0;    // proven where the cast gave up (its t a lower bound)
  double max_gap = 0.0;   // |t - cast t| times the closing speed (metres)
  double max_travel = 0.0;  // |t - cast t| * |v| (metres)
  double max_angle = 0.0;
  double max_point = 0.0;  // over max(1, size)
  int beyond_tie = 0;      // |t - cast t| * |v| > kSweepGap (the mesh sweep's tie window)
  int cast_on_face = 0;    // the cast's weights rounded into the face (face normal)
  int cast_off = 0;        // the cast's direction off (it separates less)
  int mesh_closed = 0;     // SweepTriangle answered by the closed form
  int apart = 0;           // culled by CylinderTriangleApart
};

// One pair: the closed form, when it answers, is the cast's answer; the
// mesh path (SweepTriangle, which tries it once the cast has advanced) too.
void Compare(const Vec3 tri[3], const ConvexCore& core, const Pose& pose, const Vec3& v,
             double t_max, uint8_t active, double size, Tally* tally, const char* what, int i) {
  const PlacedConvex q(core, pose);
  const double scale = q.scale() + v.Length();
  // The reference: the cast in the cylinder's frame translated to the
  // origin, the differences the closed form starts from (far from the
  // origin the cast's ~1e-9 m closest-point vector carries the rounding of
  // the coordinates, ~1e-11 m at 20 km: its normal there is off by ~1e-2).
  const Vec3 local[3] = {tri[0] - pose.position, tri[1] - pose.position, tri[2] - pose.position};
  const PlacedConvex q0(core, Pose{Vec3{}, pose.rotation});
  CastResult g = SweepConvexTriangle(local, q0, 0.0, v, t_max, q0.scale() + v.Length(), active);
  g.point = g.point + pose.position;
  const CastResult gw = SweepConvexTriangle(tri, q, 0.0, v, t_max, scale, active);
  ++tally->pairs;
  if (g.hit()) ++tally->cast_hits;
  const Vec3 face = Cross(tri[1] - tri[0], tri[2] - tri[0]).Normalized();
  ASSERT_TRUE(q.is_cylinder());
  // The box cull never drops a pair the cast hits (a capped cast's hit is
  // only a lower bound where it gave up).
  if (CylinderTriangleApart(tri, q.cylinder(), v, t_max)) {
    ++tally->apart;
    EXPECT_TRUE(!g.hit() || (g.state == CastState::kFailed)) << what << " " << i << " apart";
    EXPECT_TRUE(!gw.hit() || (gw.state == CastState::kFailed)) << what << " " << i << " apart";
  }
  CastResult c;
  const bool proven = CylinderTriangleSweep(tri, q.cylinder(), v, t_max, active, face, &c);
  const CastResult m = SweepTriangle<TriangleRoutine::kCylinder>(tri, q, v, t_max, scale, active);
  const std::string where = std::string(what) + " " + std::to_string(i);
  // The mesh path: the cast's answer, or the closed form's when it proved one.
  EXPECT_EQ(m.hit(), gw.hit()) << where;
  EXPECT_EQ(m.state == CastState::kStartedOverlapping, gw.state == CastState::kStartedOverlapping)
      << where;
  if (!proven) {
    EXPECT_EQ(m.fraction, gw.fraction) << where;
    return;
  }
  if (g.state == CastState::kFailed) {
    // The cast gave up with a lower bound: the proof stands (no contact
    // before its t); the cast's t only bounds it.
    ++tally->cast_capped;
    if (c.hit()) {
      EXPECT_LE(g.fraction, c.fraction + 1e-12) << where;
    }
    return;
  }
  ASSERT_EQ(c.hit(), g.hit()) << where << " t " << g.fraction << " closed " << c.fraction;
  EXPECT_FALSE(c.state == CastState::kStartedOverlapping) << where;
  EXPECT_FALSE(g.state == CastState::kStartedOverlapping) << where;
  EXPECT_FALSE(c.state == CastState::kFailed) << where;
  if (!c.hit()) {
    ++tally->closed_misses;
    return;
  }
  ++tally->closed_hits;
  // The cast stops half a kSweepGap short along the normal when converged,
  // up to kSweepStallGap when stalled in rounding: so does the closed form
  // (half a gap), so their fractions differ by at most kSweepStallGap of
  // closing travel.
  // (at least kCylinderTriangleSine of the speed along the contact's own
  // normal; the reported one may be the face normal by the active-edge rule)
  const double closing = std::max(-Dot(v, c.normal), kCylinderTriangleSine * v.Length());
  const double gap = std::fabs(c.fraction - g.fraction) * closing;
  EXPECT_LE(gap, kSweepStallGap + 1e-12 * scale)
      << where << " t " << g.fraction << " closed " << c.fraction;
  tally->max_gap = std::max(tally->max_gap, gap);
  const double travel = std::fabs(c.fraction - g.fraction) * v.Length();
  tally->max_travel = std::max(tally->max_travel, travel);
  if (travel > kSweepGap) ++tally->beyond_tie;
  // Separation along n (triangle towards cylinder) at t, local frame.
  auto separation = [&](const Vec3& n, double t) {
    double tri_max = -std::numeric_limits<double>::infinity();
    for (const Vec3& p : local) tri_max = std::max(tri_max, Dot(p, n));
    return Dot(q0(n * -1.0) + v * t, n) - tri_max;
  };
  const double rounding = 1e-12 * std::max(1.0, size);
  const bool c_face = std::fabs(Dot(c.normal, face)) > 1.0 - 1e-12;
  if (!c_face) {
    // Independently of the cast: the contact normal separates them by half
    // a gap at t (where the cast stops).
    const double sep = separation(c.normal, c.fraction);
    EXPECT_NEAR(sep, 0.5 * kSweepGap, 1e-11 + rounding) << where;
  }
  const double angle = std::acos(std::clamp(Dot(c.normal, g.normal), -1.0, 1.0));
  if (angle > 1e-4) {
    if (std::fabs(Dot(g.normal, face)) > 1.0 - 1e-12 && !c_face) {
      // A vertex or edge contact whose cast weights rounded into the face
      // (or whose direction pointed along the motion): the face normal.
      ++tally->cast_on_face;
    } else if (angle > 4.0 * std::sqrt(kSweepGap / core.radius)) {
      // (Within that, directions separate a curve of radius r at half a
      // gap too: the cast's is that at its stop, a little before contact.)
      // The cast stalled with its direction off (curved rims and sides): it
      // separates less than the closed form's.
      ++tally->cast_off;
      EXPECT_FALSE(c_face) << where;
      EXPECT_LT(separation(g.normal, g.fraction), separation(c.normal, c.fraction) - 1e-10)
          << where << " normal " << c.normal.x << " " << c.normal.y << " " << c.normal.z << " cast "
          << g.normal.x << " " << g.normal.y << " " << g.normal.z;
    }
  } else {
    tally->max_angle = std::max(tally->max_angle, angle);
  }
  const double point = (c.point - g.point).Length() / std::max(1.0, size);
  EXPECT_LE(point, 1e-5) << where;
  tally->max_point = std::max(tally->max_point, point);
  // The mesh path took either answer.
  EXPECT_TRUE(m.fraction == gw.fraction || m.fraction == c.fraction) << where;
  if (m.fraction == c.fraction && m.fraction != gw.fraction) ++tally->mesh_closed;
}

void Print(const char* name, const Tally& t) {
  std::printf(
      "%s: %d pairs, cast hits %d, closed-form hits %d, proven misses %d, cast capped %d; max "
      "gap %.3g m, travel %.3g m (%d beyond the tie window), angle %.3g rad (the cast on the "
      "face %d, off %d), point %.3g; the mesh path closed %d; apart %d\n",
      name, t.pairs, t.cast_hits, t.closed_hits, t.closed_misses, t.cast_capped, t.max_gap,
      t.max_travel, t.beyond_tie, t.max_angle, t.cast_on_face, t.cast_off, t.max_point,
      t.mesh_closed, t.apart);
  EXPECT_LE((t.cast_on_face + t.cast_off) * 100, t.closed_hits);
}

/// A random point of triangle `tri`.
Vec3 PointOn(Random& rng, const Vec3 tri[3]) {
  double a = rng.Uniform(0, 1), b = rng.Uniform(0, 1);
  if (a + b > 1.0) {
    a = 1.0 - a;
    b = 1.0 - b;
  }
  return tri[0] + (tri[1] - tri[0]) * a + (tri[2] - tri[0]) * b;
}

// Case i of a seeded run: a cylinder of radius r and half-height h around
// `size` (1 mm to 100 m) and a triangle of comparable or very different
// size `tsize` (every fifth a sliver, every fourth 20 km from the origin).
struct RandomCase {
  double size, r, h, tsize;
  Vec3 tri[3];
};
RandomCase MakeRandomCase(Random& rng, int i) {
  RandomCase c;
  c.size = std::pow(10.0, rng.Uniform(-3.0, 2.0));
  c.r = c.size * rng.Uniform(0.1, 1.0);
  c.h = c.size * rng.Uniform(0.05, 1.0);
  c.tsize = c.size * std::pow(10.0, rng.Uniform(-1.0, 1.0));
  const double tsize = c.tsize;
  const Vec3 far = i % 4 == 3 ? rng.UnitVector() * 2e4 : Vec3{};
  c.tri[0] = far + rng.InBox(tsize);
  c.tri[1] = c.tri[0] + rng.UnitVector() * tsize * rng.Uniform(0.3, 2.0);
  if (i % 5 == 4) {
    c.tri[2] = c.tri[0] + (c.tri[1] - c.tri[0]) * rng.Uniform(0.2, 0.8) +
               rng.UnitVector() * tsize * 1e-5;
  } else {
    c.tri[2] = c.tri[0] + rng.UnitVector() * tsize * rng.Uniform(0.3, 2.0);
  }
  return c;
}

// Random cylinders of 1 mm to 100 m, tilted every way, against triangles
// of comparable or very different size (every fifth a sliver), aimed at the
// triangle; then from each cast's contact: starting there (touching), a
// hair before or after it, sliding along the contact plane, and inside;
// and the same 20 km from the origin.
TEST(CylinderTriangleSweep, MatchesTheGjkCast) {
  Random rng(4242);
  Tally tally;
  for (int i = 0; i < 6000; ++i) {
    const RandomCase rc = MakeRandomCase(rng, i);
    const double size = rc.size, r = rc.r, h = rc.h;
    const Vec3* tri = rc.tri;
    const ConvexCore core = Cylinder(r, h);
    const Quat rot = rng.Rotation();
    const Vec3 target = PointOn(rng, tri) + rng.InBox(size * 0.7);
    const Vec3 v = rng.UnitVector() * size * rng.Uniform(1.0, 8.0);
    const Vec3 c = target - v * rng.Uniform(0.2, 0.9);
    const uint8_t active = static_cast<uint8_t>(rng.Int(0, 7));
    const double t_max = i % 3 == 0 ? rng.Uniform(0.2, 1.0) : 1.0;
    const double s = std::max(size, rc.tsize);
    Compare(tri, core, Pose{c, rot}, v, t_max, active, s, &tally, "random", i);
    if (::testing::Test::HasFatalFailure()) return;
    const PlacedConvex q(core, Pose{c, rot});
    const CastResult g = SweepConvexTriangle(tri, q, 0.0, v, 1.0, q.scale() + v.Length(), active);
    if (!g.hit() || (g.state == CastState::kStartedOverlapping)) continue;
    const Vec3 at = c + v * g.fraction;
    const Vec3 n = g.normal;
    Vec3 side = Cross(n, rng.UnitVector());
    if (side.LengthSq() < 1e-6) continue;
    side = side.Normalized() * size * rng.Uniform(0.5, 4.0);
    Compare(tri, core, Pose{at, rot}, v, 1.0, active, s, &tally, "touching", i);
    for (const double off : {-1e-6, -1e-9, 1e-9, 1e-7, 1e-4}) {
      const Vec3 o = n * (off * size);
      Compare(tri, core, Pose{at + o, rot}, side, 1.0, active, s, &tally, "grazing", i);
      Compare(tri, core, Pose{at + o, rot}, side - n * (size * 1e-3), 1.0, active, s, &tally,
              "skimming", i);
      Compare(tri, core, Pose{at + o, rot}, v * 0.5, 1.0, active, s, &tally, "near", i);
    }
    Compare(tri, core, Pose{at + v * 0.05, rot}, v, 1.0, active, s, &tally, "inside", i);
  }
  Print("random", tally);
  EXPECT_GT(tally.closed_hits, 2000);
  EXPECT_GT(tally.closed_misses, 20);
  EXPECT_GT(tally.mesh_closed, 1000);
  EXPECT_GT(tally.apart, 1000);
}

// The degenerate pairs: an upright cylinder on a flat triangle (cap parallel
// to the face), lying on it (side along the face), its axis along an edge,
// an edge grazing a rim and a vertex coming onto a rim; none may take a
// wrong answer, most are left to the cast.
TEST(CylinderTriangleSweep, DegeneratePairsMatchTheGjkCast) {
  Random rng(77);
  Tally tally;
  const Vec3 floor[3] = {{0, 0, 0}, {0, 0, 2}, {2, 0, 0}};
  for (int i = 0; i < 3000; ++i) {
    const double r = rng.Uniform(0.05, 1.0), h = rng.Uniform(0.05, 1.0);
    const ConvexCore core = Cylinder(r, h);
    const uint8_t active = static_cast<uint8_t>(rng.Int(0, 7));
    const Vec3 drift{rng.Uniform(-1, 1), -rng.Uniform(0.5, 2.0), rng.Uniform(-1, 1)};
    switch (i % 5) {
      case 0: {  // upright: the cap comes down flat onto the floor
        const Quat rot = Quat::FromAxisAngle({0, 1, 0}, rng.Uniform(0, 6.3));
        const Vec3 c{rng.Uniform(-0.5, 2.0), h + rng.Uniform(1e-6, 0.5), rng.Uniform(-0.5, 2.0)};
        Compare(floor, core, Pose{c, rot}, drift, 1.0, active, 2.0, &tally, "upright", i);
        break;
      }
      case 1: {  // lying: the side comes down along the floor
        const Quat rot = Quat::FromAxisAngle({0, 0, 1}, 1.5707963267948966) *
                         Quat::FromAxisAngle({0, 1, 0}, rng.Uniform(0, 6.3));
        const Vec3 c{rng.Uniform(-0.5, 2.0), r + rng.Uniform(1e-6, 0.5), rng.Uniform(-0.5, 2.0)};
        Compare(floor, core, Pose{c, rot}, drift, 1.0, active, 2.0, &tally, "lying", i);
        break;
      }
      case 2: {  // axis along an edge (X), the side moving onto it
        const Quat rot = Quat::FromAxisAngle({0, 0, 1}, 1.5707963267948966);
        const Vec3 dir = Vec3{0, rng.Uniform(-1, 1), rng.Uniform(-1, 1)}.Normalized();
        const Vec3 c = Vec3{1.0, 0, 0} + dir * (r + rng.Uniform(1e-6, 0.5));
        const Vec3 tri[3] = {{0, 0, 0}, {2, 0, 0}, {1, rng.Uniform(-1, 1), rng.Uniform(-1, 1)}};
        Compare(tri, core, Pose{c, rot}, dir * -rng.Uniform(0.6, 2.0), 1.0, active, 2.0, &tally,
                "along", i);
        break;
      }
      case 3: {  // an upright cylinder's bottom rim passing over an edge (along X), a hair
                 // above or below it
        const Vec3 tri[3] = {{-2, 0, 0}, {2, 0, 0}, {rng.Uniform(-1, 1), -1, rng.Uniform(-1, 1)}};
        const Vec3 c{rng.Uniform(-1.5, 1.5), h + rng.Uniform(-1e-7, 1e-7), 3.0};
        Compare(tri, core, Pose{c, Quat{}}, Vec3{0, 0, -5}, 1.0, active, 3.0, &tally, "rim", i);
        break;
      }
      default: {  // a vertex coming straight onto the bottom rim
        const Quat rot = rng.Rotation();
        const double a = rng.Uniform(0, 6.3);
        const Vec3 rim = rot.Rotate(Vec3{r * std::cos(a), -h, r * std::sin(a)});
        const Vec3 out = rot.Rotate(Vec3{std::cos(a), -1.0, std::sin(a)}).Normalized();
        const Vec3 p = rim + out * 0.5;
        const Vec3 tri[3] = {p, p + rng.UnitVector() * 0.5 + out * 0.5,
                             p + rng.UnitVector() * 0.5 + out * 0.5};
        Compare(tri, core, Pose{Vec3{}, rot}, out * 0.8, 1.0, active, 1.0, &tally, "vertex", i);
        break;
      }
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
  Print("degenerate", tally);
}

// Bad input never crashes nor proves anything: NaN or infinite motion,
// zero motion, a zero-size cylinder, a degenerate triangle.
TEST(CylinderTriangleSweep, BadInputProvesNothing) {
  const Vec3 tri[3] = {{-5, 0, -5}, {10, 0, -5}, {-5, 0, 10}};
  const Vec3 face = Cross(tri[1] - tri[0], tri[2] - tri[0]).Normalized();
  PlacedCylinder cyl;
  cyl.center = {0.2, 2.0, 0.2};
  cyl.rotation = Quat::FromAxisAngle({1, 0, 0}, 0.5).ToMatrix();
  cyl.radius = 0.5;
  cyl.half_height = 0.5;
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  CastResult out;
  // Sane input first: a rim onto the face.
  ASSERT_TRUE(CylinderTriangleSweep(tri, cyl, {0, -3, 0}, 1.0, 7, face, &out));
  EXPECT_TRUE(out.hit());
  EXPECT_FALSE(CylinderTriangleApart(tri, cyl, {0, -3, 0}, 1.0));
  PlacedCylinder high = cyl;
  high.center.y = 20.0;
  EXPECT_TRUE(CylinderTriangleApart(tri, high, {0, 3, 0}, 1.0));
  EXPECT_FALSE(CylinderTriangleApart(tri, high, {0, -30, 0}, 1.0));
  for (const Vec3& v : {Vec3{0, nan, 0}, Vec3{0, -inf, 0}, Vec3{}, Vec3{nan, nan, nan}}) {
    EXPECT_FALSE(CylinderTriangleSweep(tri, cyl, v, 1.0, 7, face, &out));
    if (!(v.LengthSq() == 0.0)) {
      EXPECT_FALSE(CylinderTriangleApart(tri, cyl, v, 1.0));
    }
  }
  PlacedCylinder zero = cyl;
  zero.radius = 0.0;
  EXPECT_FALSE(CylinderTriangleSweep(tri, zero, {0, -3, 0}, 1.0, 7, face, &out));
  PlacedCylinder bad = cyl;
  bad.radius = nan;
  EXPECT_FALSE(CylinderTriangleSweep(tri, bad, {0, -3, 0}, 1.0, 7, face, &out));
  const Vec3 flat[3] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}};
  EXPECT_FALSE(CylinderTriangleSweep(flat, cyl, {0, -3, 0}, 1.0, 7, Vec3{nan, nan, nan}, &out));
}

// CylinderTriangleOverlap, the deepest contact's bound on the depth: its
// move (the cylinder along the axis of the least overlap, by that overlap
// and a hair more) leaves the two apart, so the shortest separating move is
// no longer; where the bound is not positive GJK finds them apart or just
// touching. On seeded random pairs, half with a point of the triangle inside
// the cylinder, a fifth slivers, some 20 km from the origin. Counts how
// often the bound is within 1e-6 of the size of EPA's depth, and how often
// EPA's depth (when EPA reports no failure) is above the bound by more than
// SurfaceDeepestContactConvex's slack: EPA capped on a curved core stops a
// little above the shortest move.
TEST(CylinderTriangleOverlap, ItsMoveSeparates) {
  Random rng(2929);
  int overlapping = 0, tight = 0, epa_above = 0, apart = 0;
  for (int i = 0; i < 20000; ++i) {
    const RandomCase rc = MakeRandomCase(rng, i);
    const double size = rc.size, r = rc.r, h = rc.h;
    const Vec3* tri = rc.tri;
    const Vec3 c = PointOn(rng, tri) + rng.InBox(i % 2 == 0 ? 0.5 * std::min(r, h) : size);
    const ConvexCore core = Cylinder(r, h);  // (PlacedConvex keeps a pointer to it)
    const Quat rot = rng.Rotation();
    const PlacedConvex q(core, Pose{c, rot});
    ASSERT_TRUE(q.is_cylinder());
    Vec3 move;
    const double bound = CylinderTriangleOverlap(tri, q.cylinder(), &move);
    ASSERT_NEAR(move.Length(), std::fabs(bound), 1e-12 * q.scale()) << i;
    const double hair = 1e-7 * q.scale();
    const TriangleConvexDistance g = TriangleConvexGjk(tri, q, q.margin(), q.scale());
    if (!(bound > 0.0)) {
      ++apart;
      EXPECT_GE(g.distance_lower, bound - hair) << i << " apart";
      continue;
    }
    ++overlapping;
    const PlacedConvex moved(core, Pose{c + move + move.Normalized() * hair, rot});
    const TriangleConvexDistance after =
        TriangleConvexGjk(tri, moved, moved.margin(), moved.scale());
    // (GJK's lower bound on a curved core may stall at 0: then its distance,
    // GJK's |v|, near the hair.)
    EXPECT_FALSE(after.cores_overlap) << i << " bound " << bound;
    EXPECT_TRUE(after.distance_lower > 0.0 || after.distance > 0.5 * hair)
        << i << " bound " << bound << " distance " << after.distance;
    if (!g.cores_overlap) continue;
    const TriangleConvexPenetration e = TriangleConvexEpa(tri, q, q.margin(), q.scale(), g);
    if (!e.valid || e.failure != 0) continue;
    if (bound <= e.depth + 1e-6 * size) ++tight;
    if (e.depth > bound + 4e-9 * q.scale()) ++epa_above;  // (beyond the deepest contact's slack)
  }
  std::printf("CylinderTriangleOverlap: %d overlapping, %d tight, %d with EPA above, %d apart\n",
              overlapping, tight, epa_above, apart);
  EXPECT_GT(overlapping, 5000);
  EXPECT_GT(tight, 500);
  EXPECT_GT(apart, 1000);
  // A horizontal edge 0.1 inside an upright cylinder's side (radius 1),
  // the triangle reaching out away from the axis: the depth is 0.1, along x.
  PlacedCylinder cyl;
  cyl.radius = 1.0;
  cyl.half_height = 2.0;
  const Vec3 edge[3] = {{0.9, 0, -1}, {0.9, 0, 1}, {3, 0.5, 0}};
  Vec3 move;
  EXPECT_NEAR(CylinderTriangleOverlap(edge, cyl, &move), 0.1, 1e-12);
  EXPECT_NEAR(move.x, -0.1, 1e-12);
}

}  // namespace
}  // namespace hitbox
