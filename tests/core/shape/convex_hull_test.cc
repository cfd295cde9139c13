// Convex hulls: construction and its errors, and every query against a hull
// checked against independent answers (a box built as a hull against the box
// primitive's closed forms; hull raycasts against bisection on GJK).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "collision/cast_internal.h"
#include "hitbox/collision/collide.h"
#include "hitbox/shape/shapes.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::Random;

Shape BoxAsHull(const Vec3& h, Random* rng = nullptr, int interior = 0) {
  ConvexHull hull;
  for (int i = 0; i < 8; ++i) {
    hull.points.push_back({(i & 1) ? h.x : -h.x, (i & 2) ? h.y : -h.y, (i & 4) ? h.z : -h.z});
  }
  for (int i = 0; i < interior; ++i) {
    const Vec3 u = rng->InBox(0.999);
    hull.points.push_back({u.x * h.x, u.y * h.y, u.z * h.z});
  }
  Result<Shape> r = Shape::Make(hull);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return *r;
}

std::string MakeError(const ConvexHull& h) {
  Result<Shape> r = Shape::Make(h);
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  return r.error().message;
}

// A cube with interior points: 8 vertices, 6 merged faces, 12 edges, tight bounds.
TEST(ConvexHullTest, CubeWithInteriorPoints) {
  Random rng(1);
  const Shape s = BoxAsHull({1, 2, 3}, &rng, 40);
  ASSERT_EQ(s.kind(), ShapeKind::kConvexHull);
  EXPECT_EQ(s.hull()->vertices().size(), 8u);
  EXPECT_EQ(s.hull()->planes().size(), 6u);
  EXPECT_EQ(s.hull()->edges().size(), 12u);
  EXPECT_TRUE(testing::VecNear(s.LocalBounds().min, {-1, -2, -3}, 0));
  EXPECT_TRUE(testing::VecNear(s.LocalBounds().max, {1, 2, 3}, 0));
  EXPECT_DOUBLE_EQ(s.BoundingRadius(), std::sqrt(14.0));
  EXPECT_GT(s.DataBytes(), 8 * sizeof(Vec3));
  EXPECT_EQ(s.hull()->input_points().size(), 48u);
}

// Copies share the data (one build); equality compares the input points.
TEST(ConvexHullTest, CopiesShareData) {
  const Shape a = BoxAsHull({1, 1, 1});
  Shape b = a;
  EXPECT_EQ(a.hull(), b.hull());
  EXPECT_EQ(a, b);
  Shape c = std::move(b);
  EXPECT_EQ(c.hull(), a.hull());
  c = *Shape::MakeSphere(1.0);
  EXPECT_EQ(c.hull(), nullptr);
  EXPECT_EQ(a, BoxAsHull({1, 1, 1}));
  EXPECT_FALSE(a == BoxAsHull({1, 1, 2}));
}

// Every invalid input is rejected with a message naming the problem.
TEST(ConvexHullTest, InvalidInputsRejected) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_NE(MakeError({{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}}}).find("at least 4 points, got 3"),
            std::string::npos);
  ConvexHull many;
  for (int i = 0; i < 257; ++i) many.points.push_back({std::cos(i * 1.0), std::sin(i * 1.0), i * 0.01});
  EXPECT_NE(MakeError(many).find("at most 256 points, got 257"), std::string::npos);
  EXPECT_NE(MakeError({{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, nan}}}).find("points[3].z is not finite"),
            std::string::npos);
  EXPECT_NE(MakeError({{{0, 0, 0}, {inf, 0, 0}, {0, 1, 0}, {0, 0, 1}}}).find("points[1].x is not finite"),
            std::string::npos);
  EXPECT_NE(MakeError({{{0, 0, 0}, {1, 0, 0}, {0, 2e6, 0}, {0, 0, 1}}}).find("points[2].y must be in"),
            std::string::npos);
  EXPECT_NE(MakeError({{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}, {0.5, 0.2, 0}}}).find("coplanar"),
            std::string::npos);
  EXPECT_NE(MakeError({{{0, 0, 0}, {1, 1, 1}, {2, 2, 2}, {3, 3, 3}}}).find("collinear"),
            std::string::npos);
  EXPECT_NE(MakeError({{{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}}}).find("coincide"),
            std::string::npos);
  // Nearly flat (1e-12 relative) is degenerate too.
  EXPECT_NE(MakeError({{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0.3, 0.3, 1e-13}}}).find("coplanar"),
            std::string::npos);
  // A valid tetrahedron, far from its local origin.
  EXPECT_EQ(MakeError({{{100, 0, 0}, {101, 0, 0}, {100, 1, 0}, {100, 0, 1}}}), "");
}

// Random hulls: every input point is inside every face plane; every vertex
// is an input point; support is the max over the input points.
TEST(ConvexHullTest, PlanesHoldEveryPointAndSupportIsExact) {
  Random rng(2);
  for (int i = 0; i < 2000; ++i) {
    ConvexHull h;
    const int n = rng.Int(4, 64);
    for (int k = 0; k < n; ++k) h.points.push_back(rng.InBox(rng.Uniform(0.1, 5.0)));
    Result<Shape> r = Shape::Make(h);
    if (!r.ok()) continue;
    const ConvexHullData& d = *r->hull();
    const double tol = 1e-12 * d.bounding_radius();
    for (const HullPlane& p : d.planes()) {
      EXPECT_NEAR(p.normal.Length(), 1.0, 1e-12);
      for (const Vec3& q : h.points) EXPECT_LE(Dot(p.normal, q), p.offset + tol);
    }
    for (int k = 0; k < 20; ++k) {
      const Vec3 dir = rng.UnitVector();
      double best = -1e300;
      for (const Vec3& q : h.points) best = std::max(best, Dot(q, dir));
      EXPECT_NEAR(Dot(r->Support(dir), dir), best, tol);
    }
  }
}

// Up to 32 vertices Support scans them two at a time: the same vertex as
// the one-at-a-time scan (the first of the largest products, vertex 0 when
// its product is NaN), to the bit, on random hulls and on directions with
// ties (axes of a box, zero), NaN and infinite components. Half the hulls lie
// between the planes x = 0 and x = 1, so that an infinite x multiplies a 0
// (NaN) for some vertices and not for others.
TEST(ConvexHullTest, ScanSupportIsTheFirstLargestProduct) {
  Random rng(7);
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto first_largest = [](const std::vector<Vec3>& v, const Vec3& dir) {
    size_t best = 0;
    double best_dot = Dot(v[0], dir);
    for (size_t i = 1; i < v.size(); ++i) {
      const double d = Dot(v[i], dir);
      if (d > best_dot) best_dot = d, best = i;
    }
    return v[best];
  };
  int hulls = 0, nan_first = 0;
  for (int i = 0; i < 3000; ++i) {
    ConvexHull h;
    const bool slab = i % 2 == 1;
    const int n = i % 3 == 0 ? 8 : rng.Int(4, 32);
    for (int k = 0; k < n; ++k) {
      if (i % 3 == 0) {
        // A box's corners: every axis direction ties four vertices.
        const Vec3 e{1.0, 2.0, 0.5};
        h.points.push_back({(k & 1) ? e.x : -e.x, (k & 2) ? e.y : -e.y, (k & 4) ? e.z : -e.z});
      } else if (slab) {
        const Vec3 u = rng.InBox(2.0);
        h.points.push_back({static_cast<double>(k % 2), u.y, u.z});
      } else {
        h.points.push_back(rng.InBox(rng.Uniform(0.1, 5.0)));
      }
    }
    Result<Shape> r = Shape::Make(h);
    if (!r.ok()) continue;
    const std::vector<Vec3>& v = r->hull()->vertices();
    ASSERT_LE(v.size(), ConvexHullData::kScanVertices);
    ++hulls;
    std::vector<Vec3> dirs = {{1, 0, 0},   {-1, 0, 0},  {0, 1, 0},    {0, -1, 0},  {0, 0, 1},
                              {0, 0, -1},  {0, 0, 0},   {1, 1, 0},    {nan, 0, 0}, {0, nan, 1},
                              {inf, 1, 0}, {-inf, 0, 1}, {inf, 0.5, -1}, {1e300, 1e300, 0}};
    for (int k = 0; k < 30; ++k) dirs.push_back(rng.UnitVector() * rng.Uniform(1e-3, 1e3));
    for (const Vec3& dir : dirs) {
      const Vec3 want = first_largest(v, dir);
      const Vec3 got = r->hull()->Support(dir);
      EXPECT_TRUE(got.x == want.x && got.y == want.y && got.z == want.z)
          << "hull " << i << " dir " << dir.x << " " << dir.y << " " << dir.z;
      if (std::isnan(Dot(v[0], dir)) && !std::isnan(Dot(v.back(), dir))) ++nan_first;
    }
  }
  EXPECT_GT(hulls, 2500);
  EXPECT_GT(nan_first, 100);  // vertex 0's product NaN, not every product
}

// 256 points on a sphere (all vertices): hill-climbing support finds the
// true maximum over the points in every direction.
TEST(ConvexHullTest, HillClimbingSupportOnLargeHulls) {
  Random rng(6);
  for (int i = 0; i < 50; ++i) {
    ConvexHull h;
    for (int k = 0; k < 256; ++k) h.points.push_back(rng.UnitVector() * 2.0 + Vec3{1, 0, 0});
    const Shape s = *Shape::Make(h);
    ASSERT_GT(s.hull()->vertices().size(), 32u);
    for (int k = 0; k < 200; ++k) {
      const Vec3 dir = rng.UnitVector();
      double best = -1e300;
      for (const Vec3& q : h.points) best = std::max(best, Dot(q, dir));
      EXPECT_NEAR(Dot(s.Support(dir), dir), best, 1e-12);
    }
  }
}

// The box built as a hull answers every query as the box primitive does
// (against every kind, random poses): overlap away from touching, distance,
// contact depth, sweeps (both as target and as the moving shape) and rays.
TEST(ConvexHullTest, BoxAsHullMatchesBoxPrimitive) {
  Random rng(3);
  int checked = 0;
  for (int i = 0; i < 4000; ++i) {
    const Vec3 h{rng.Uniform(0.2, 2), rng.Uniform(0.2, 2), rng.Uniform(0.2, 2)};
    const Shape box = *Shape::MakeBox(h);
    const Shape hull = BoxAsHull(h, &rng, rng.Int(0, 6));
    const auto kind = static_cast<ShapeKind>(rng.Int(0, 3));
    const Shape other = rng.MakeShape(kind);
    const Pose pb(rng.InBox(2.0), rng.Rotation());
    const Pose po(rng.InBox(2.0), rng.Rotation());
    const std::string what = other.ToString() + " at " + ToString(po) + " vs box " +
                             ToString(h) + " at " + ToString(pb);
    const DistanceResult dref = ComputeDistance(other, po, box, pb);
    const DistanceResult dh = ComputeDistance(other, po, hull, pb);
    EXPECT_NEAR(dh.distance, dref.distance, 1e-7) << what;
    if (dref.distance > 1e-7 || dref.distance == 0.0) {
      const bool ref = Overlap(other, po, box, pb);
      if (ref || dref.distance > 1e-7) {
        EXPECT_EQ(Overlap(other, po, hull, pb), ref) << what;
        EXPECT_EQ(Overlap(hull, pb, other, po), ref) << what;
      }
    }
    Contact cref, ch;
    if (ComputeContact(other, po, box, pb, &cref) && cref.depth > 1e-6) {
      ASSERT_TRUE(ComputeContact(other, po, hull, pb, &ch)) << what;
      EXPECT_NEAR(ch.depth, cref.depth, 1e-6 * (1 + cref.depth)) << what;
      ++checked;
    }
    // Sweeps: other moving against the hull, and the hull moving against other.
    const Vec3 v = rng.InBox(6.0);
    const CastResult sref = Cast(other, po, v, box, pb);
    const CastResult sh = Cast(other, po, v, hull, pb);
    const CastResult sref2 = Cast(box, pb, v, other, po);
    const CastResult sh2 = Cast(hull, pb, v, other, po);
    if (sref.state == CastState::kHit && sh.state == CastState::kHit) {
      EXPECT_NEAR(sh.fraction, sref.fraction, 1e-6) << what << " v " << ToString(v);
    }
    if (sref2.state == CastState::kHit && sh2.state == CastState::kHit) {
      EXPECT_NEAR(sh2.fraction, sref2.fraction, 1e-6) << what << " v " << ToString(v);
    }
    // Hit vs miss may only differ at grazing contacts: check with margins.
    if (sref.hit() != sh.hit()) {
      const double graze = ComputeDistance(other, Pose(po.position + v * sref.fraction, po.rotation),
                                           box, pb).distance;
      EXPECT_LT(graze, 1e-6) << what;
    }
    // Rays.
    const Vec3 o = pb.position + rng.InBox(4.0);
    const Vec3 d = rng.InBox(8.0);
    const CastResult rref = Raycast(o, d, box, pb);
    const CastResult rh = Raycast(o, d, hull, pb);
    EXPECT_EQ(rh.state, rref.state) << what;
    if (rh.hit() && rref.hit()) {
      EXPECT_NEAR(rh.fraction, rref.fraction, 1e-12 * (1 + d.Length())) << what;
      EXPECT_TRUE(testing::VecNear(rh.normal, rref.normal, 1e-9)) << what;
    }
  }
  EXPECT_GT(checked, 200);
}

// Hull raycasts (plane clipping) against bisection on GJK (the hull's support
// over its points): a hit's point is on the hull (distance ~0 just after, > 0
// just before); a miss never comes within 1e-9 of the hull.
TEST(ConvexHullTest, RaycastMatchesGjkBisection) {
  Random rng(4);
  const Shape probe = *Shape::MakeSphere(1e-7);
  for (int i = 0; i < 5000; ++i) {
    const Shape hull = rng.MakeShape(ShapeKind::kConvexHull, 0.2, 3.0);
    const Pose pose(rng.InBox(5.0), rng.Rotation());
    const Vec3 o = pose.position + rng.InBox(6.0);
    const Vec3 d = rng.InBox(12.0);
    const CastResult r = Raycast(o, d, hull, pose);
    auto dist = [&](double t) {
      return testing::PointToShapeDistance(hull, pose, o + d * t);
    };
    const std::string what = hull.ToString() + " at " + ToString(pose) + " ray " + ToString(o) +
                             " + t " + ToString(d);
    if (r.state == CastState::kStartedOverlapping) {
      EXPECT_LE(dist(0.0), 1e-9) << what;
    } else if (r.state == CastState::kHit) {
      EXPECT_LE(dist(r.fraction), 1e-9) << what;
      if (r.fraction > 1e-6) {
        EXPECT_GT(dist(r.fraction - 1e-6), 0.0) << what;
      }
      EXPECT_NEAR(r.normal.Length(), 1.0, 1e-12);
      EXPECT_LE(Dot(r.normal, d), 1e-9) << what;
      // GJK agrees: a tiny sphere there touches.
      EXPECT_TRUE(Overlap(probe, Pose(o + d * r.fraction), hull, pose)) << what;
    } else {
      // Miss: sampled points along the ray stay outside.
      for (int k = 0; k <= 64; ++k) EXPECT_GT(dist(k / 64.0), 0.0) << what;
    }
  }
}

// Random hulls against every kind: GJK distance equals the brute-force
// point-feature distance for a sphere, overlap agrees with distance, and
// sweeps end touching.
TEST(ConvexHullTest, HullQueriesAgreeWithBruteForce) {
  Random rng(5);
  for (int i = 0; i < 4000; ++i) {
    const Shape hull = rng.MakeShape(ShapeKind::kConvexHull, 0.2, 2.0);
    const Pose ph(rng.InBox(2.0), rng.Rotation());
    const Shape sphere = rng.MakeShape(ShapeKind::kSphere);
    const Pose ps(rng.InBox(4.0));
    const double ref = std::max(0.0, testing::PointToShapeDistance(hull, ph, ps.position) -
                                         sphere.radius());
    const std::string what = hull.ToString() + " at " + ToString(ph) + " vs " +
                             sphere.ToString() + " at " + ToString(ps);
    EXPECT_NEAR(ComputeDistance(sphere, ps, hull, ph).distance, ref, 1e-9) << what;
    EXPECT_NEAR(ComputeDistance(hull, ph, sphere, ps).distance, ref, 1e-9) << what;
    if (ref > 1e-9) {
      EXPECT_FALSE(Overlap(hull, ph, sphere, ps)) << what;
    }
    if (ref == 0.0 && testing::PointToShapeDistance(hull, ph, ps.position) < sphere.radius() - 1e-9) {
      EXPECT_TRUE(Overlap(sphere, ps, hull, ph)) << what;
      Contact c;
      ASSERT_TRUE(ComputeContact(sphere, ps, hull, ph, &c)) << what;
      // Moving the hull by depth along the normal leaves them touching.
      const Pose moved(ph.position + c.normal * (c.depth + 1e-6), ph.rotation);
      EXPECT_FALSE(Overlap(sphere, ps, hull, moved)) << what;
    }
    // Hull vs hull and hull vs other kinds: a sweep that hits ends touching.
    const auto kind = static_cast<ShapeKind>(rng.Int(0, 4));
    const Shape other = rng.MakeShape(kind);
    const Pose po(ph.position + rng.InBox(5.0), rng.Rotation());
    const Vec3 v = ph.position - po.position + rng.InBox(1.0);
    const CastResult c = Cast(other, po, v, hull, ph);
    if (c.state == CastState::kHit) {
      const Pose at(po.position + v * c.fraction, po.rotation);
      EXPECT_LT(ComputeDistance(other, at, hull, ph).distance, 1e-6) << what;
      if (c.fraction > 1e-5) {
        const Pose before(po.position + v * (c.fraction - 1e-5), po.rotation);
        EXPECT_FALSE(Overlap(other, before, hull, ph) &&
                     ComputeDistance(other, before, hull, ph).distance == 0.0 &&
                     [&] { Contact k; return ComputeContact(other, before, hull, ph, &k) && k.depth > 1e-6; }())
            << what;
      }
    }
  }
}

}  // namespace
}  // namespace hitbox
