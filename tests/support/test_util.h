// Shared helpers for Hitbox tests: approximate equality for vectors and poses,
// seeded random shapes and poses, and full-precision printing of failing cases.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "hitbox/collision/collide.h"
#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"
#include "hitbox/world/collider_set.h"

namespace hitbox::testing {

inline ::testing::AssertionResult VecNear(const Vec3& a, const Vec3& b, double tol) {
  if ((a - b).Length() <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << ToString(a) << " vs " << ToString(b)
                                       << " differ by " << (a - b).Length() << " > " << tol;
}

inline ::testing::AssertionResult PoseNear(const Pose& a, const Pose& b, double tol) {
  const double dq = std::min((Quat{a.rotation.x - b.rotation.x, a.rotation.y - b.rotation.y,
                                   a.rotation.z - b.rotation.z, a.rotation.w - b.rotation.w})
                                 .Length(),
                             (Quat{a.rotation.x + b.rotation.x, a.rotation.y + b.rotation.y,
                                   a.rotation.z + b.rotation.z, a.rotation.w + b.rotation.w})
                                 .Length());
  if ((a.position - b.position).Length() <= tol && dq <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << ToString(a) << " vs " << ToString(b);
}

/// Scenario helpers for hand-made cases: valid shapes (aborting the test
/// binary on a bad literal is fine here) and poses from plain numbers.
inline Shape SphereR(double r) { return *Shape::MakeSphere(r); }
inline Shape BoxH(double x, double y, double z) { return *Shape::MakeBox({x, y, z}); }
inline Shape CapsuleRH(double r, double h) { return *Shape::MakeCapsule(r, h); }
inline Shape CylinderRH(double r, double h) { return *Shape::MakeCylinder(r, h); }
inline Pose At(double x, double y, double z) { return Pose{Vec3{x, y, z}}; }
inline Pose AtRot(double x, double y, double z, const Vec3& axis, double angle) {
  return Pose{Vec3{x, y, z}, Quat::FromAxisAngle(axis, angle)};
}

/// Deterministic random source for property tests.
class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  double Uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  Vec3 InBox(double h) { return {Uniform(-h, h), Uniform(-h, h), Uniform(-h, h)}; }
  Vec3 UnitVector() {
    for (;;) {
      const Vec3 v = InBox(1.0);
      const double l = v.LengthSq();
      if (l > 1e-6 && l <= 1.0) return v / std::sqrt(l);
    }
  }
  Quat Rotation() {
    std::normal_distribution<double> n(0.0, 1.0);
    return Quat{n(rng_), n(rng_), n(rng_), n(rng_)}.Normalized();
  }
  Shape MakeShape(ShapeKind kind, double lo = 0.1, double hi = 2.0) {
    switch (kind) {
      case ShapeKind::kSphere: return *Shape::MakeSphere(Uniform(lo, hi));
      case ShapeKind::kBox: return *Shape::MakeBox({Uniform(lo, hi), Uniform(lo, hi), Uniform(lo, hi)});
      case ShapeKind::kCapsule: return *Shape::MakeCapsule(Uniform(lo, hi), Uniform(0.0, hi));
      case ShapeKind::kCylinder: return *Shape::MakeCylinder(Uniform(lo, hi), Uniform(lo, hi));
      case ShapeKind::kConvexHull: return MakeHull(Int(4, 24), Uniform(lo, hi));
      default: break;  // surfaces: see MakeTerrain-style helpers in the surface tests
    }
    return {};
  }
  /// A random convex hull of `n` points in a random ellipsoid-ish cloud of
  /// radius ~`size`, with a random offset (the origin need not be inside).
  Shape MakeHull(int n, double size) {
    const Vec3 scale{Uniform(0.4, 1.0) * size, Uniform(0.4, 1.0) * size, Uniform(0.4, 1.0) * size};
    const Vec3 offset = InBox(size * 0.5);
    for (;;) {
      ConvexHull h;
      for (int i = 0; i < n; ++i) {
        const Vec3 u = InBox(1.0);
        h.points.push_back(offset + Vec3{u.x * scale.x, u.y * scale.y, u.z * scale.z});
      }
      Result<Shape> r = Shape::Make(h);
      if (r.ok()) return *r;
    }
  }
  std::mt19937_64& engine() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

/// Distance in metres from world point `p` to the solid shape at `pose` (0
/// inside), in closed form; a reference for narrow-phase tests.
inline double PointToShapeDistance(const Shape& s, const Pose& pose, const Vec3& p) {
  const Vec3 q = pose.InverseTransformPoint(p);
  switch (s.kind()) {
    case ShapeKind::kSphere: return std::max(0.0, q.Length() - s.radius());
    case ShapeKind::kBox: return Max(q.Abs() - s.half_extents(), Vec3{}).Length();
    case ShapeKind::kCapsule: {
      const double y = std::clamp(q.y, -s.half_height(), s.half_height());
      return std::max(0.0, (q - Vec3{0, y, 0}).Length() - s.radius());
    }
    case ShapeKind::kCylinder: {
      const double dr = std::max(0.0, std::sqrt(q.x * q.x + q.z * q.z) - s.radius());
      const double dy = std::max(0.0, std::fabs(q.y) - s.half_height());
      return std::sqrt(dr * dr + dy * dy);
    }
    case ShapeKind::kConvexHull: {
      // Brute force over the boundary's features: 0 inside every face plane;
      // else the least of the distances to the vertices, to the edges, and to
      // each face plane where the projection lies inside the hull.
      const ConvexHullData& h = *s.hull();
      double worst = -1e300;
      for (const HullPlane& pl : h.planes()) worst = std::max(worst, Dot(pl.normal, q) - pl.offset);
      if (worst <= 0.0) return 0.0;
      double best = 1e300;
      for (const Vec3& v : h.vertices()) best = std::min(best, (q - v).Length());
      for (const auto& [i, j] : h.edges()) {
        const Vec3 a = h.vertices()[i], e = h.vertices()[j] - a;
        const double t = std::clamp(Dot(q - a, e) / e.LengthSq(), 0.0, 1.0);
        best = std::min(best, (q - (a + e * t)).Length());
      }
      const double tol = 1e-12 * (h.bounding_radius() + q.Length());
      for (const HullPlane& pl : h.planes()) {
        const double d = Dot(pl.normal, q) - pl.offset;
        if (d <= 0.0) continue;
        const Vec3 foot = q - pl.normal * d;
        bool inside = true;
        for (const HullPlane& o : h.planes()) {
          if (Dot(o.normal, foot) - o.offset > tol) inside = false;
        }
        if (inside) best = std::min(best, d);
      }
      return best;
    }
    default: break;
  }
  return 0.0;
}

/// The 25 ordered pairs of convex shape kinds.
inline std::vector<std::pair<ShapeKind, ShapeKind>> AllKindPairs() {
  std::vector<std::pair<ShapeKind, ShapeKind>> out;
  for (int i = 0; i < kConvexKindCount; ++i) {
    for (int j = 0; j < kConvexKindCount; ++j) {
      out.emplace_back(static_cast<ShapeKind>(i), static_cast<ShapeKind>(j));
    }
  }
  return out;
}

/// "sphere_box" style name of an ordered pair, for test and benchmark labels.
inline std::string PairName(ShapeKind a, ShapeKind b) {
  return std::string(ShapeKindName(a)) + "_" + ShapeKindName(b);
}

/// A random shape of `kind`: usually sizes in [0.1, 2] m; one in five is thin
/// or tiny (a dimension of ~1e-3 m, aspect ratios up to ~1000:1).
inline Shape VariedShape(Random& rng, ShapeKind kind) {
  if (rng.Int(0, 4) != 0) return rng.MakeShape(kind);
  const double tiny = rng.Uniform(5e-4, 2e-3);
  const double big = rng.Uniform(0.2, 1.0);
  const bool tiny_first = rng.Int(0, 1) == 0;
  switch (kind) {
    case ShapeKind::kSphere: return *Shape::MakeSphere(tiny);
    case ShapeKind::kBox: {
      Vec3 h{big, big, big};
      h[rng.Int(0, 2)] = tiny;
      if (rng.Int(0, 1) == 0) h[rng.Int(0, 2)] = tiny;
      return *Shape::MakeBox(h);
    }
    case ShapeKind::kCapsule:
      return tiny_first ? *Shape::MakeCapsule(tiny, big) : *Shape::MakeCapsule(big, tiny);
    case ShapeKind::kCylinder:
      return tiny_first ? *Shape::MakeCylinder(tiny, big) : *Shape::MakeCylinder(big, tiny);
    case ShapeKind::kConvexHull: {
      // A thin slab-like hull: one dimension ~tiny.
      ConvexHull h;
      const int n = rng.Int(6, 16);
      const int axis = rng.Int(0, 2);
      for (int i = 0; i < n; ++i) {
        Vec3 p = rng.InBox(big);
        p[axis] = rng.Uniform(-tiny, tiny);
        h.points.push_back(p);
      }
      Result<Shape> r = Shape::Make(h);
      return r.ok() ? *r : rng.MakeShape(ShapeKind::kConvexHull);
    }
    default: break;
  }
  return {};
}

/// Poses for a pair placed around `origin`: random rotations, B's centre at a
/// random distance up to 1.3x the sum of bounding radii from A's, so that a
/// good share of pairs overlap and the rest are near misses.
inline std::pair<Pose, Pose> NearbyPoses(Random& rng, const Shape& a, const Shape& b,
                                         const Vec3& origin = {}) {
  const double reach = a.BoundingRadius() + b.BoundingRadius();
  const Pose pa{origin + rng.InBox(1.0), rng.Rotation()};
  const Pose pb{pa.position + rng.UnitVector() * (reach * rng.Uniform(0.0, 1.3)), rng.Rotation()};
  return {pa, pb};
}

/// `pose` moved by `offset`.
inline Pose Translated(const Pose& pose, const Vec3& offset) {
  return Pose{pose.position + offset, pose.rotation};
}

/// "A=<shape> @ <pose>, B=<shape> @ <pose>" at full precision, for pasting a
/// failing random case into a regression test.
inline std::string DescribePair(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb) {
  return "A=" + a.ToString() + " @ " + ToString(pa) + ", B=" + b.ToString() + " @ " + ToString(pb);
}

/// Exactly the same answer, hit by hit (ids, user data, triangles,
/// fractions, normals, points, depths, contacts): a batch against the single
/// query it must equal.
inline void ExpectSameResult(const QueryResult& one, const QueryResult& batch,
                             const std::string& where) {
  ASSERT_EQ(one.overlaps.size(), batch.overlaps.size()) << where;
  for (size_t k = 0; k < one.overlaps.size(); ++k) {
    const OverlapHit& a = one.overlaps[k];
    const OverlapHit& b = batch.overlaps[k];
    ASSERT_EQ(a.id, b.id) << where;
    ASSERT_EQ(a.sub_shape, b.sub_shape) << where;
    ASSERT_EQ(a.user_data, b.user_data) << where;
    ASSERT_EQ(a.contact.has_value(), b.contact.has_value()) << where;
    if (a.contact) {
      ASSERT_EQ(a.contact->depth, b.contact->depth) << where;
      ASSERT_EQ(a.contact->normal, b.contact->normal) << where;
    }
  }
  ASSERT_EQ(one.hits.size(), batch.hits.size()) << where;
  for (size_t k = 0; k < one.hits.size(); ++k) {
    const CastHit& a = one.hits[k];
    const CastHit& b = batch.hits[k];
    ASSERT_EQ(a.id, b.id) << where;
    ASSERT_EQ(a.sub_shape, b.sub_shape) << where;
    ASSERT_EQ(a.user_data, b.user_data) << where;
    ASSERT_EQ(a.fraction, b.fraction) << where;
    ASSERT_EQ(a.normal, b.normal) << where;
    ASSERT_EQ(a.point, b.point) << where;
    ASSERT_EQ(a.started_overlapping(), b.started_overlapping()) << where;
    ASSERT_EQ(a.depth, b.depth) << where;
  }
}

}  // namespace hitbox::testing
