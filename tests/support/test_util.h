// Shared helpers for Hitbox tests: approximate equality for vectors and poses,
// seeded random shapes and poses, and full-precision printing of failing cases.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "hitbox/collide.h"
#include "hitbox/math.h"
#include "hitbox/shapes.h"

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
    }
    return {};
  }
  std::mt19937_64& engine() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

/// "A=<shape> @ <pose>, B=<shape> @ <pose>" at full precision, for pasting a
/// failing random case into a regression test.
inline std::string DescribePair(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb) {
  return "A=" + a.ToString() + " @ " + ToString(pa) + ", B=" + b.ToString() + " @ " + ToString(pb);
}

}  // namespace hitbox::testing
