// Minimum-overlap separating axis test (internal to hitbox_core).
//
// Separating axis theorem (Gottschalk, Lin, Manocha, "OBBTree", SIGGRAPH
// 1996; Ericson, "Real-Time Collision Detection" 4.4): two convex sets are
// apart when their projections onto some axis are disjoint. For two
// polytopes the candidate axes are the face normals of each and the crosses
// of an edge of one with an edge of the other (the face normals of their
// Minkowski difference); over those axes the least overlap of the
// projections, with its signed axis, is the exact penetration depth and its
// direction. Any other unit axis gives an upper bound that still separates.
#pragma once

#include <cmath>
#include <limits>

#include "hitbox/math/math.h"

namespace hitbox::internal {

/// Cross-product axes shorter than this (the sine of the angle between two
/// edges) are skipped by SAT tests: the edges are parallel and the face axes decide.
inline constexpr double kSatParallelEpsilon = 1e-12;

/// The least projection overlap over the axes tried so far: `depth` is how far
/// B must move along `normal` (unit, from A towards B) to be apart from A
/// (negative when some axis already separates them).
struct SatMinimum {
  double depth = std::numeric_limits<double>::infinity();
  Vec3 normal{0, 1, 0};
  /// Index given with the best axis (the caller's tag for its kind).
  int tag = -1;

  /// Unit axis `n` with A projecting onto [a_lo, a_hi] and B onto [b_lo,
  /// b_hi]: B pushed along +n clears A after a_hi - b_lo, along -n after
  /// b_hi - a_lo. Returns the smaller (negative: n separates them). Ties go to +n.
  double Axis(const Vec3& n, double a_lo, double a_hi, double b_lo, double b_hi, int axis_tag = 0) {
    const double up = a_hi - b_lo;
    const double down = b_hi - a_lo;
    const double pen = up <= down ? up : down;
    if (pen < depth) {
      depth = pen;
      normal = up <= down ? n : -n;
      tag = axis_tag;
    }
    return pen;
  }
  /// The symmetric form: A projects onto [-ra, ra], B onto [proj - rb, proj + rb].
  double Centered(const Vec3& n, double ra, double rb, double proj, int axis_tag = 0) {
    const double pen = ra + rb - std::fabs(proj);
    if (pen < depth) {
      depth = pen;
      normal = proj < 0.0 ? -n : n;
      tag = axis_tag;
    }
    return pen;
  }
};

/// Half-width of the projection onto `n` of a box with half-extents `h` along
/// the unit axes `axis[3]`: sum of h_k |n . axis_k|.
inline double BoxProjectionRadius(const Vec3 axis[3], const Vec3& h, const Vec3& n) {
  return h.x * std::fabs(Dot(n, axis[0])) + h.y * std::fabs(Dot(n, axis[1])) +
         h.z * std::fabs(Dot(n, axis[2]));
}

/// SatCrossAxis's test: edge directions a and b, whose cross has squared
/// length `len_sq`, are not parallel (|sin| > kSatParallelEpsilon).
inline bool SatNotParallel(double len_sq, const Vec3& a, const Vec3& b) {
  return len_sq > kSatParallelEpsilon * kSatParallelEpsilon * (a.LengthSq() * b.LengthSq());
}

/// The unit cross of two edge directions, or false when they are parallel
/// (|sin| <= kSatParallelEpsilon).
inline bool SatCrossAxis(const Vec3& a, const Vec3& b, Vec3* axis) {
  const Vec3 c = Cross(a, b);
  const double len_sq = c.LengthSq();
  if (!SatNotParallel(len_sq, a, b)) return false;
  // A tiny cross (edges ~1e-160 and below) has subnormal squares and an
  // inexact length: Normalized() scales it first.
  *axis = len_sq > 1e-300 ? c / std::sqrt(len_sq) : c.Normalized();
  return true;
}

}  // namespace hitbox::internal
