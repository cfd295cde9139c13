// Penetration depth of two overlapping support-mapped convex sets (internal):
// EPA (van den Bergen, GDC 2001; 2003, 4.3.8) from the GJK simplex plus the
// supports along A's axes and diagonals. The depth is the support value along
// the final normal, so moving B by depth * normal leaves them touching or apart.
#pragma once

#include "geometry/gjk.h"
#include "hitbox/math/math.h"

namespace hitbox::internal {

/// Outcome of Epa.
enum class EpaState : uint8_t {
  kConverged,  ///< support gap of the closest face below the tolerance
  kCapped,     ///< iteration or size cap hit; best face so far
  kDegenerate, ///< no full-dimensional start polytope (flat difference): depth 0
};

/// Penetration of two overlapping shapes, A's frame.
struct EpaResult {
  EpaState state = EpaState::kDegenerate;
  /// Penetration depth (metres, >= 0) along `normal`.
  double depth = 0.0;
  /// Unit direction to move B by `depth` to separate it from A (A's frame).
  Vec3 normal{0, 1, 0};
  /// Deepest point of A inside B (A's frame).
  Vec3 point_a;
  /// Deepest point of B inside A (A's frame); point_b = point_a - depth * normal.
  Vec3 point_b;
  /// Iterations used.
  int iterations = 0;
};

/// Relative support gap at which EPA stops, as a fraction of the pair's scale.
inline constexpr double kEpaTolerance = 1e-9;
/// Iteration cap of EPA.
inline constexpr int kEpaMaxIterations = 96;

/// EPA on the full sets (cores grown by their margins) of `a` and `b` (B at
/// `b_in_a`), seeded by a GJK result `gjk` of the same pair that found overlap.
EpaResult Epa(const ConvexCore& a, const ConvexCore& b, const Pose& b_in_a, const GjkResult& gjk);

}  // namespace hitbox::internal
