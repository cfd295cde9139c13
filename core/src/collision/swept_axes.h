// Separating axes swept along a motion: the times at which two convex
// shapes' projections overlap on every axis tried (the moving-box test of
// Ericson, RTCD 5.5.8, one axis at a time).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

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
};

}  // namespace hitbox::internal
