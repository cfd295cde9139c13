// The closed-form cylinder-triangle penetration (cylinder_triangle_penetration.h)
// on seeded random pairs (near the origin and far from it, small triangles
// and level-sized ones, edges square to the axis and along it, rims across
// edges): its depth is the support of cylinder - triangle along its normal,
// no sampled direction and no EPA answer separates them by less (EPA is
// longer where it stalls on the curved side), and its points lie on each
// shape, depth apart along the normal.
#include "collision/triangles/cylinder_triangle_penetration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "collision/triangles/placed_convex.h"
#include "collision/triangles/triangle_gjk.h"
#include "geometry/closest_points.h"
#include "geometry/triangle_queries.h"
#include "shape/convex_core.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::Random;

/// The support of cylinder - triangle along unit n (surface frame).
double Support(const PlacedConvex& cyl, const Vec3 tri[3], const Vec3& n) {
  const double lo = std::min(Dot(n, tri[0]), std::min(Dot(n, tri[1]), Dot(n, tri[2])));
  return Dot(n, cyl(n)) - lo;
}

/// A triangle near the cylinder (cylinder frame, then placed): random
/// vertices, or one whose edges run square to the axis, along it, or across
/// a rim, small or level-sized.
void MakeTriangle(Random& rng, double r, double hh, int kind, Vec3 out[3]) {
  const double reach = r + hh;
  switch (kind) {
    case 0:  // anywhere around it
      for (int i = 0; i < 3; ++i) out[i] = rng.InBox(1.2 * reach);
      return;
    case 1: {  // a floor (edges square to the axis) near a cap
      const double y = rng.Uniform(-hh - 0.3 * r, -hh + 0.3 * r) * (rng.Int(0, 1) ? 1 : -1);
      for (int i = 0; i < 3; ++i) out[i] = {rng.Uniform(-2, 2) * r, y, rng.Uniform(-2, 2) * r};
      return;
    }
    case 2: {  // a wall (an edge along the axis) near the side
      const double x = rng.Uniform(0.6, 1.1) * r;
      out[0] = {x, rng.Uniform(-2, 0) * hh, rng.Uniform(-1, 1) * r};
      out[1] = {x, rng.Uniform(0, 2) * hh, out[0].z};
      out[2] = {x + rng.Uniform(-0.5, 0.5) * r, rng.Uniform(-2, 2) * hh, rng.Uniform(-2, 2) * r};
      return;
    }
    case 3: {  // an edge across a rim, the third vertex inside or out
      const double y = (rng.Int(0, 1) ? hh : -hh) + rng.Uniform(-0.2, 0.2) * r;
      const Vec3 dir = rng.UnitVector();
      const Vec3 mid{r * rng.Uniform(0.7, 1.1), y, rng.Uniform(-0.3, 0.3) * r};
      out[0] = mid - dir * rng.Uniform(0.2, 2.0) * r;
      out[1] = mid + dir * rng.Uniform(0.2, 2.0) * r;
      out[2] = rng.InBox(1.5 * reach);
      return;
    }
    default: {  // level-sized, through the cylinder
      const Vec3 n = rng.UnitVector();
      const Vec3 u = Cross(n, std::fabs(n.x) < 0.9 ? Vec3{1, 0, 0} : Vec3{0, 1, 0}).Normalized();
      const Vec3 w = Cross(n, u);
      const Vec3 at = rng.InBox(0.8 * reach);
      const double size = rng.Uniform(5.0, 60.0);
      out[0] = at + u * size;
      out[1] = at + (u * -0.5 + w * 0.87) * size;
      out[2] = at + (u * -0.5 - w * 0.87) * size;
      return;
    }
  }
}

TEST(CylinderTrianglePenetration, IsTheLeastSeparatingMove) {
  int answered = 0, rim_edge = 0, epa_checked = 0;
  int declined[5] = {};  // overlapping (by GJK) but left to EPA, by kind of triangle
  int shorter_than_epa = 0;
  double most_shorter = 0.0;
  for (uint64_t seed = 1; seed <= 200000; ++seed) {
    Random rng(seed);
    const double r = rng.Uniform(0.1, 2.0), hh = rng.Uniform(0.05, 2.0);
    const internal::ConvexCore core = internal::CoreOf(*Shape::MakeCylinder(r, hh));
    const Vec3 origin = seed % 5 == 0 ? rng.InBox(2000.0) : rng.InBox(3.0);
    const Pose pose(origin, rng.Rotation());
    const PlacedConvex cyl(core, pose);
    Vec3 local[3], tri[3];
    MakeTriangle(rng, r, hh, static_cast<int>(seed % 5), local);
    for (int i = 0; i < 3; ++i) tri[i] = pose.position + pose.rotation.Rotate(local[i]);
    const double scale = cyl.scale(), tol = 1e-9 * scale;
    const TriangleConvexDistance g = TriangleConvexGjk(tri, cyl, 0.0, scale);
    TriangleConvexPenetration got;
    const bool ok = CylinderTrianglePenetration(tri, cyl.cylinder(), scale, &got);
    const std::string what = "seed " + std::to_string(seed);
    if (!ok) {
      // Declined: apart or touching (GJK agrees to its tolerance), or left to EPA.
      declined[seed % 5] += g.cores_overlap;
      continue;
    }
    ++answered;
    ASSERT_TRUE(got.valid) << what;
    ASSERT_GT(got.depth, tol) << what;
    ASSERT_LE(g.distance_lower, 0.0) << what << ": a contact where GJK finds them apart";
    ASSERT_NEAR(got.normal.Length(), 1.0, 1e-12) << what;
    const Vec3 n = -got.normal;  // outward of cylinder - triangle
    ASSERT_NEAR(Support(cyl, tri, n), got.depth, 1e-12 * scale) << what;
    // No direction separates them by less: sampled ones...
    for (int k = 0; k < 64; ++k) {
      const Vec3 m = rng.UnitVector();
      ASSERT_GE(Support(cyl, tri, m), got.depth - 1e-12 * scale) << what << " along " << k;
    }
    // ...nor EPA's (converged to 1e-9 * scale, or stalled on the curved
    // side: longer then). The depth being a support, it is never shorter
    // than the least move.
    const TriangleConvexPenetration epa = TriangleConvexEpa(tri, cyl, 0.0, scale, g);
    if (epa.valid) {
      ++epa_checked;
      ASSERT_LE(got.depth, epa.depth + tol) << what << ": EPA found a shorter move";
      shorter_than_epa += got.depth < epa.depth - tol;
      most_shorter = std::max(most_shorter, (epa.depth - got.depth) / scale);
    }
    // The points: on the cylinder's surface and on the triangle, depth apart
    // along the normal.
    const Vec3 c = pose.rotation.Conjugate().Rotate(got.point_on_convex - pose.position);
    const double rho = std::sqrt(c.x * c.x + c.z * c.z);
    ASSERT_LE(rho, r + tol) << what;
    ASSERT_LE(std::fabs(c.y), hh + tol) << what;
    ASSERT_TRUE(std::fabs(rho - r) <= tol || std::fabs(std::fabs(c.y) - hh) <= tol) << what;
    Vec3 q;
    ASSERT_LE(PointTriangleDistanceSq(got.point_on_triangle, tri[0], tri[1], tri[2], &q), tol * tol)
        << what;
    ASSERT_LE(Distance(got.point_on_convex - got.point_on_triangle, n * got.depth), 2.0 * tol)
        << what;
    // A rim against an edge's inside: the contact the quartic finds.
    const Vec3 on = pose.rotation.Conjugate().Rotate(got.point_on_triangle - pose.position);
    bool inside_edge = false;
    for (int i = 0; i < 3; ++i) {
      const Vec3 a = local[i], b = local[(i + 1) % 3];
      const internal::ClosestPair cp = internal::ClosestSegmentSegment(on, on, a, b);
      const double s = Dot(cp.q - a, b - a) / (b - a).LengthSq();
      inside_edge |= cp.distance_sq <= tol * tol && s > 1e-6 && s < 1 - 1e-6;
    }
    rim_edge += inside_edge && std::fabs(rho - r) <= tol && std::fabs(std::fabs(c.y) - hh) <= tol;
  }
  std::printf(
      "%d answered, overlapping ones left to EPA %d / %d / %d / %d / %d, %d rim x edge, %d "
      "against EPA (%d shorter, by up to %.3g of the scale)\n",
      answered, declined[0], declined[1], declined[2], declined[3], declined[4], rim_edge,
      epa_checked, shorter_than_epa, most_shorter);
  EXPECT_GE(answered, 80000);
  // Only flat contacts (a floor against a cap, a wall along the side) and
  // contacts within 1e-9 of touching go to EPA.
  EXPECT_LE(declined[0] + declined[3] + declined[4], answered / 100);
  EXPECT_GE(rim_edge, 10000);
  EXPECT_GE(epa_checked, answered / 2);
}

}  // namespace
}  // namespace hitbox
