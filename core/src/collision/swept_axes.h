// Separating axes swept along a motion: the times at which two convex
// shapes' projections overlap on every axis tried (the moving-box test of
// Ericson, RTCD 5.5.8, one axis at a time).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "collision/cast_internal.h"
#include "hitbox/math/math.h"

namespace hitbox::internal {

/// On each axis l (any length) A's projection, relative to B's, moves from
/// s0 at rate sv and overlaps B's while |s| <= rsum (the shapes' radii along
/// l summed). Entry and exit times are ratios of projections, so an axis
/// needs no normalising; only the winning one is normalised by the caller.
struct SweptAxes {
  double t_enter = -std::numeric_limits<double>::infinity();  ///< latest entry
  double t_exit = std::numeric_limits<double>::infinity();    ///< earliest exit
  Vec3 normal;             ///< t_enter's axis, from B towards A (unnormalised)
  int won = -1;            ///< t_enter's axis id
  bool separated = false;  ///< some axis is apart at the start
  bool miss = false;       ///< some axis is apart and not closing: never in contact

  /// Axis l with id `id`. A later entry wins when it comes more than
  /// `later_by` times max(1, |entry|) after the latest so far (0: any later),
  /// so that axes tried first keep ties.
  void Add(const Vec3& l, int id, double rsum, double s0, double sv, double later_by = 0.0) {
    if (std::fabs(s0) <= rsum) {
      if (sv != 0.0) t_exit = std::min(t_exit, ((sv > 0.0 ? rsum : -rsum) - s0) / sv);
      return;
    }
    separated = true;
    const double sgn = s0 > 0.0 ? 1.0 : -1.0;
    const double approach = -sgn * sv;
    if (approach <= 0.0) {
      miss = true;
      return;
    }
    const double te = (std::fabs(s0) - rsum) / approach;
    const double need = later_by > 0.0 ? later_by * std::max(1.0, std::fabs(te)) : 0.0;
    if (te > t_enter + need) {
      t_enter = te;
      normal = l * sgn;
      won = id;
    }
    t_exit = std::min(t_exit, (std::fabs(s0) + rsum) / approach);
  }
  /// Whether the entry comes by t_max with no exit before it (beyond rounding).
  bool EntersBy(double t_max) const { return !(t_enter > t_exit + 1e-9 || t_enter > t_max); }
  /// The cast's answer from the axes alone into *out: false when that is
  /// final (a miss, or no axis apart at the start: a lower bound of 0);
  /// true with the entry as the lower bound, its axis as the unit normal.
  bool Bound(double t_max, AxisCast* out) const {
    *out = AxisCast{};
    if (miss) return false;
    out->state = AxisCast::State::kLowerBound;
    if (!separated) return false;
    if (!EntersBy(t_max)) {  // exit before entry: no common time
      out->state = AxisCast::State::kMiss;
      return false;
    }
    out->t = t_enter;
    out->normal = normal / normal.Length();
    return true;
  }
};

/// The half-extent along axis l (any length, ll = |l|^2) of a cylinder of
/// radius r about local Y with caps at +-h, scaled by |l|.
inline double CylinderReach(const Vec3& l, double ll, double r, double h) {
  return h * std::fabs(l.y) + r * std::sqrt(std::max(ll - l.y * l.y, 0.0));
}

/// The closest points of the line along Y through the origin and the line
/// along unit k through p (Ericson RTCD 5.1.8): Y * s and p + k * u. The
/// lines must not be parallel (|k x Y|^2 well above 0).
inline void AxisLinesClosest(const Vec3& p, const Vec3& k, double* s, double* u) {
  const double den = 1.0 - k.y * k.y;  // |k x Y|^2
  const double pk = Dot(p, k);
  *s = (p.y - k.y * pk) / den;
  *u = (k.y * p.y - pk) / den;
}

/// True when p lies in the cylinder (radius r about local Y, caps at +-h)
/// grown by tol.
inline bool InCylinder(const Vec3& p, double r, double h, double tol) {
  return std::fabs(p.y) <= h + tol && p.x * p.x + p.z * p.z <= (r + tol) * (r + tol);
}

/// Whether a contact point within tol of both shapes, unit normal n, motion
/// w, certifies the axes' entry as the time of impact: the true one lies
/// within 2 tol / closing of it, here within 1e-8 of the fraction (a tenth
/// of the GJK ray cast's margin or less).
inline bool Certified(const Vec3& n, const Vec3& w, double tol) {
  const double closing = -Dot(n, w);
  return closing > 0.0 && 2.0 * tol <= 1e-8 * closing;
}

/// `out` as the exact hit at t (normal n, point p), given in the frame the
/// cast worked in: B's when A moved (a_moves), else A's, where rm is A's
/// rotation in B and v the motion.
inline AxisCast AxisHit(AxisCast out, bool a_moves, const Mat33& rm, const Pose& a_in_b,
                        const Vec3& v, double t, const Vec3& n, const Vec3& p) {
  out.state = AxisCast::State::kHit;
  out.hit.state = CastState::kHit;
  out.hit.fraction = t;
  out.hit.normal = a_moves ? n : -(rm * n);
  out.hit.point = a_moves ? p : a_in_b.TransformPoint(p) + v * t;
  return out;
}

}  // namespace hitbox::internal
