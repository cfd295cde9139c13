// The one simplex solver (core/src/geometry/simplex.h): closest points of
// random simplices checked by the optimality condition of a closest point,
// the documented degenerate cases one by one, and the triangle-vs-convex GJK
// that maps its payload through the solver's weights.
#include "geometry/simplex.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "geometry/gjk.h"
#include "collision/triangles/box_triangle_sweep.h"
#include "collision/triangles/triangle_epa.h"
#include "collision/triangles/triangle_polytope_sat.h"
#include "test_util.h"

namespace hitbox {
namespace {

using internal::ClosestPointForm;
using internal::ClosestToOrigin;
using internal::SimplexClosest;
using internal::TetrahedronHoldsOrigin;
using testing::Random;

/// Checks the answer's form (ascending indices, positive weights summing to
/// 1, v their weighted sum) and that v is the closest point of the simplex:
/// no point w of it has Dot(v, w - v) < 0 (else a point between v and w
/// would be closer). Returns a description of the first violation, or "".
std::string Check(const Vec3* w, int n, const SimplexClosest& r, double tol) {
  if (r.count < 1 || r.count > n) return "count out of range";
  double sum = 0.0;
  Vec3 v;
  for (int k = 0; k < r.count; ++k) {
    if (r.index[k] < k || r.index[k] >= n) return "index out of range";
    if (k > 0 && r.index[k] <= r.index[k - 1]) return "indices not ascending";
    if (!(r.weight[k] > 0.0)) return "non-positive weight";
    sum += r.weight[k];
    v += w[r.index[k]] * r.weight[k];
  }
  if (std::fabs(sum - 1.0) > 1e-9) return "weights do not sum to 1";
  if ((v - r.v).Length() > tol) return "v is not the weighted sum";
  if (std::fabs(r.vv - r.v.LengthSq()) > tol) return "vv is not |v|^2";
  if (r.inside) return v.Length() <= tol ? "" : "inside, but the weights miss the origin";
  for (int i = 0; i < n; ++i) {
    if (Dot(r.v, w[i] - r.v) < -tol) return "a simplex point is closer than v";
  }
  return "";
}

// Random simplices of 1..4 points around (and away from) the origin: every
// answer is a closest point, in the documented form.
TEST(SimplexTest, RandomSimplicesGiveTheClosestPoint) {
  Random rng(1001);
  int inside = 0;
  for (int i = 0; i < 40000; ++i) {
    const int n = 1 + i % 4;
    const Vec3 centre = rng.InBox(i % 3 == 0 ? 0.2 : 2.0);
    Vec3 w[4];
    for (int k = 0; k < n; ++k) w[k] = centre + rng.InBox(1.0);
    const SimplexClosest r = ClosestToOrigin(w, n);
    const std::string err = Check(w, n, r, 1e-12);
    ASSERT_EQ(err, "") << "case " << i << " n " << n;
    inside += r.inside;
  }
  EXPECT_GT(inside, 100);  // the inside case is exercised
}

// The projection form answers the same weights; v points along the normal.
TEST(SimplexTest, ProjectionOfAWellShapedTriangleIsOnItsNormal) {
  Random rng(1002);
  for (int i = 0; i < 5000; ++i) {
    Vec3 w[3];
    for (Vec3& p : w) p = rng.InBox(1.0);
    const SimplexClosest a = ClosestToOrigin(w, 3);
    const SimplexClosest b = ClosestToOrigin<ClosestPointForm::kProjection>(w, 3);
    ASSERT_EQ(a.count, b.count);
    for (int k = 0; k < a.count; ++k) ASSERT_EQ(a.weight[k], b.weight[k]);
    ASSERT_LE((a.v - b.v).Length(), 1e-12);
    if (b.count == 3) {
      const Vec3 n = Cross(w[1] - w[0], w[2] - w[0]).Normalized();
      ASSERT_LE(Cross(b.v, n).Length(), 1e-14 * (1.0 + b.v.Length()));
    }
  }
}

// Repeated points: a zero-length segment answers its first point; a
// triangle with a repeated point answers as its segment.
TEST(SimplexTest, RepeatedPoints) {
  const Vec3 seg[2] = {{1, 2, 3}, {1, 2, 3}};
  const SimplexClosest r = ClosestToOrigin(seg, 2);
  ASSERT_EQ(r.count, 1);
  EXPECT_EQ(r.index[0], 0);
  EXPECT_EQ(r.weight[0], 1.0);
  const Vec3 tri[3] = {{-1, 1, 0}, {1, 1, 0}, {1, 1, 0}};
  const SimplexClosest t = ClosestToOrigin(tri, 3);
  EXPECT_EQ(Check(tri, 3, t, 1e-15), "");
  EXPECT_NEAR(t.vv, 1.0, 1e-15);
  EXPECT_LE(t.count, 2);
}

// A sliver (collinear) triangle: the closest of its edges, exactly.
TEST(SimplexTest, SliverTriangleAnswersItsEdges) {
  const Vec3 tri[3] = {{-1, 1, 0}, {3, 1, 0}, {1, 1, 1e-300}};
  const SimplexClosest r = ClosestToOrigin(tri, 3);
  EXPECT_EQ(Check(tri, 3, r, 1e-15), "");
  EXPECT_LE(r.count, 2);
  EXPECT_NEAR(r.v.x, 0.0, 1e-15);
  EXPECT_NEAR(r.vv, 1.0, 1e-15);
}

// A flat tetrahedron (four points in the plane z = 0 around the origin)
// holds nothing: not inside; the closest point is on a face, at distance 0.
TEST(SimplexTest, FlatTetrahedronIsNeverInside) {
  const Vec3 w[4] = {{-1, -1, 0}, {2, -1, 0}, {0, 2, 0}, {0.1, 0.2, 1e-16}};
  const SimplexClosest r = ClosestToOrigin(w, 4);
  EXPECT_FALSE(r.inside);
  EXPECT_LE(r.count, 3);
  EXPECT_LE(r.vv, 1e-30);
  EXPECT_EQ(Check(w, 4, r, 1e-15), "");
  EXPECT_FALSE(TetrahedronHoldsOrigin(w, internal::kSimplexFlatVolume));
}

// The origin exactly on a face of a tetrahedron: not inside; the face is
// kept (its opposite point dropped), at distance 0.
TEST(SimplexTest, OriginOnAFaceKeepsTheFace) {
  const Vec3 w[4] = {{-1, -1, 0}, {2, -1, 0}, {0, 2, 0}, {0, 0, 1}};
  const SimplexClosest r = ClosestToOrigin(w, 4);
  EXPECT_FALSE(r.inside);
  ASSERT_EQ(r.count, 3);
  EXPECT_EQ(r.index[0], 0);
  EXPECT_EQ(r.index[1], 1);
  EXPECT_EQ(r.index[2], 2);
  EXPECT_LE(r.vv, 1e-30);
}

// A tetrahedron around the origin: inside, with the origin's barycentric
// weights; TetrahedronHoldsOrigin agrees and gives the same weights.
TEST(SimplexTest, InsideGivesBarycentricWeights) {
  const Vec3 w[4] = {{-1, -1, -1}, {2, -1, -1}, {0, 2, -1}, {0.1, 0.3, 2}};
  const SimplexClosest r = ClosestToOrigin(w, 4);
  ASSERT_TRUE(r.inside);
  ASSERT_EQ(r.count, 4);
  EXPECT_EQ(Check(w, 4, r, 1e-15), "");
  double weights[4];
  ASSERT_TRUE(TetrahedronHoldsOrigin(w, 1e-9, weights));
  for (int k = 0; k < 4; ++k) EXPECT_DOUBLE_EQ(weights[k], r.weight[k]);
}

// A tetrahedron from GJK distance in a box-cylinder cast (CastPointTest
// case 1299): two parallel edges 1e-5 m long, 2 m apart, 6 x volume 2.5e-16
// with its points ~1 m from the origin. The cofactors' rounding (~1e-16)
// swamps that volume: `inside` with its weights 0.07..0.3 off the exact
// ones moved the contact point 0.23 m off a shape. Now it answers as flat
// (a face at distance ~0) or, if inside, with the exact weights.
TEST(SimplexTest, ThinTetrahedronFarFromTheOriginIsNotInsideWithNoise) {
  const Vec3 w[4] = {{0.58692046132669984, 0.31317982031091007, 0.78746849450449585},
                     {-0.76274301932136235, -0.40699798961788802, -1.0233674717260179},
                     {0.58692730553020023, 0.31317982031091007, 0.78746716395261673},
                     {-0.76275328562029499, -0.40699798961788802, -1.0233654758491784}};
  // Exact barycentric coordinates of the origin (rational arithmetic).
  const double exact[4] = {0.266309879213714, 0.2726943819818215, 0.29882554152096086,
                           0.16217019728350365};
  const SimplexClosest r = ClosestToOrigin(w, 4);
  if (r.inside) {
    for (int k = 0; k < 4; ++k) EXPECT_NEAR(r.weight[k], exact[k], 1e-6) << k;
  } else {
    EXPECT_LE(r.vv, 1e-20);
    EXPECT_EQ(Check(w, 4, r, 1e-9), "");
  }
}

// NaN points: a defined answer (the first point), no crash or empty set.
TEST(SimplexTest, NanPointsAnswerTheFirstPoint) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int n = 2; n <= 4; ++n) {
    Vec3 w[4] = {{nan, 0, 0}, {1, nan, 0}, {0, 1, nan}, {nan, nan, nan}};
    const SimplexClosest r = ClosestToOrigin(w, n);
    ASSERT_EQ(r.count, 1) << n;
    EXPECT_EQ(r.index[0], 0);
    EXPECT_EQ(r.weight[0], 1.0);
  }
}

// A tetrahedron with one NaN point: its finite face answers (a NaN face,
// solved first, never counts as the closest).
TEST(SimplexTest, NanPointLeavesTheFiniteFace) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Vec3 w[4] = {{nan, 0, 0}, {-1, -1, 1}, {2, -1, 1}, {0, 2, 1}};
  const SimplexClosest r = ClosestToOrigin(w, 4);
  EXPECT_FALSE(r.inside);
  ASSERT_EQ(r.count, 3);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(r.index[k], k + 1);
  EXPECT_NEAR(r.vv, 1.0, 1e-15);
  EXPECT_NEAR(r.v.z, 1.0, 1e-15);
}

// TriangleConvexGjk with the cores overlapping inside a GJK tetrahedron: the
// reported points are the tetrahedron's barycentric combination of its
// payloads, so the point on the convex and on the triangle coincide (with a
// stale fourth weight, they were the previous simplex's v apart).
TEST(SimplexTest, TriangleGjkInsideTetrahedronPointsMeet) {
  Random rng(1003);
  int tetrahedra = 0;
  for (int i = 0; i < 20000; ++i) {
    Vec3 tri[3];
    tri[0] = rng.InBox(1.0);
    tri[1] = tri[0] + rng.UnitVector() * rng.Uniform(0.3, 2.0);
    tri[2] = tri[0] + rng.UnitVector() * rng.Uniform(0.3, 2.0);
    const Vec3 he{rng.Uniform(0.1, 1.0), rng.Uniform(0.1, 1.0), rng.Uniform(0.1, 1.0)};
    const Vec3 at = (tri[0] + tri[1] + tri[2]) * (1.0 / 3.0) + rng.InBox(0.5);
    const Mat33 rot = rng.Rotation().ToMatrix();
    auto support = [&](const Vec3& d) {
      const Vec3 l = rot.TransposeMul(d);
      return at + rot * Vec3{l.x >= 0 ? he.x : -he.x, l.y >= 0 ? he.y : -he.y,
                             l.z >= 0 ? he.z : -he.z};
    };
    const TriangleConvexDistance g = TriangleConvexGjk(tri, support, 0.0, 5.0);
    if (g.tetrahedron != 4) continue;
    ++tetrahedra;
    ASSERT_TRUE(g.cores_overlap);
    ASSERT_LE((g.point_on_convex - g.point_on_triangle).Length(), 1e-9) << "case " << i;
    double sum = 0.0;
    for (double b : g.bary) {
      ASSERT_GE(b, 0.0);
      sum += b;
    }
    ASSERT_NEAR(sum, 1.0, 1e-9);
  }
  EXPECT_GT(tetrahedra, 100);
}

// CopyWeights copies the kept points' weights, count of them, and writes
// nothing past them (callers keep other state there).
TEST(SimplexTest, CopyWeightsCopiesTheKeptWeightsOnly) {
  for (int count = 0; count <= 4; ++count) {
    SimplexClosest r;
    r.count = count;
    for (int k = 0; k < 4; ++k) r.weight[k] = 0.125 * (k + 1);
    double out[5] = {-1, -1, -1, -1, -1};
    internal::CopyWeights(r, out);
    for (int k = 0; k < 5; ++k) EXPECT_EQ(out[k], k < count ? 0.125 * (k + 1) : -1.0) << count;
  }
}

}  // namespace
}  // namespace hitbox
