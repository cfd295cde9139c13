// Conservative ray / box slab test for hierarchy traversal (internal): a box
// the exact ray touches is never culled (Ize, "Robust BVH Ray Traversal",
// JCGT 2(2), 2013: the far distance is widened by a few ulps' worth; here by
// a relative 1e-12, far more than the rounding of the slab distances).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "hitbox/math/math.h"

namespace hitbox {

/// A ray origin + t * dir, t in [0, t_max], prepared for box tests.
struct BvhRay {
  Vec3 origin;
  Vec3 inv;
  bool zero[3];

  BvhRay(const Vec3& o, const Vec3& d) : origin(o) {
    for (int a = 0; a < 3; ++a) {
      zero[a] = d[a] == 0.0;
      inv[a] = zero[a] ? 0.0 : 1.0 / d[a];
    }
  }

  /// The widened range [*t_in, *t_out] of t over which the ray lies within
  /// [lo, hi] on axis `a` (everything when it does not move along `a` and
  /// lies inside); false when it does not move along `a` and lies outside.
  /// Enter's step per axis: a walk whose boxes share an axis's range
  /// computes it once.
  __attribute__((always_inline)) bool Slab(int a, double lo, double hi, double* t_in,
                                           double* t_out) const {
    if (zero[a]) {
      *t_in = -std::numeric_limits<double>::infinity();
      *t_out = std::numeric_limits<double>::infinity();
      return !(origin[a] < lo || origin[a] > hi);
    }
    double t1 = (lo - origin[a]) * inv[a];
    double t2 = (hi - origin[a]) * inv[a];
    if (t1 > t2) std::swap(t1, t2);
    *t_in = t1 - std::fabs(t1) * 1e-12;
    *t_out = t2 + std::fabs(t2) * 1e-12;
    return true;
  }

  /// True when the ray meets `box` for some t in [0, t_max]; `t_enter` is a
  /// lower bound of the first such t (for front-to-back ordering). Always
  /// inlined: called once per node and triangle by the surface traversals.
  __attribute__((always_inline)) bool Enter(const Aabb& box, double t_max, double* t_enter) const {
    double lo = 0.0, hi = t_max;
    for (int a = 0; a < 3; ++a) {
      double t1, t2;
      if (!Slab(a, box.min[a], box.max[a], &t1, &t2)) return false;
      if (zero[a]) continue;
      lo = std::max(lo, t1);
      hi = std::min(hi, t2);
      if (lo > hi) return false;
    }
    *t_enter = lo;
    return true;
  }
};

}  // namespace hitbox
