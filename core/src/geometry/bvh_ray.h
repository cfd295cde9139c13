// Conservative ray / box slab test for hierarchy traversal (internal): a box
// the exact ray touches is never culled (Ize, "Robust BVH Ray Traversal",
// JCGT 2(2), 2013: the far distance is widened by a few ulps' worth; here by
// a relative 1e-12, far more than the rounding of the slab distances).
#pragma once

#include <emmintrin.h>

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

/// The box of triangle v, Aabb().Union(v[0]).Union(v[1]).Union(v[2]) to the
/// bit, in SSE2 pairs: x and y in *lo_xy / *hi_xy, z in the low lanes of
/// *lo_z / *hi_z.
__attribute__((always_inline)) inline void TriangleBoxLanes(const Vec3 v[3], __m128d* lo_xy,
                                                            __m128d* hi_xy, __m128d* lo_z,
                                                            __m128d* hi_z) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // Aabb().Union(p) takes std::min(min, p) = p < min ? p : min, which is
  // _mm_min_pd(p, min); std::max(max, p) likewise _mm_max_pd(p, max).
  *lo_xy = _mm_set1_pd(kInf);
  *hi_xy = _mm_set1_pd(-kInf);
  *lo_z = _mm_set_sd(kInf);
  *hi_z = _mm_set_sd(-kInf);
  for (int c = 0; c < 3; ++c) {
    const __m128d p_xy = _mm_loadu_pd(&v[c].x), p_z = _mm_load_sd(&v[c].z);
    *lo_xy = _mm_min_pd(p_xy, *lo_xy);
    *hi_xy = _mm_max_pd(p_xy, *hi_xy);
    *lo_z = _mm_min_sd(p_z, *lo_z);
    *hi_z = _mm_max_sd(p_z, *hi_z);
  }
}

/// A BvhRay against triangles' boxes grown by `grow`: Enter(v, ...) is
/// ray.Enter(Aabb().Union(v[0]).Union(v[1]).Union(v[2]).Expanded(grow), ...)
/// to the bit (the same operations on the same operands, no early exits,
/// which change no answer: lo only rises and hi only falls), in SSE2 pairs
/// (x and y together, then z) without branches; a mesh sweep tests every
/// triangle of the leaves it enters this way.
class GrownTrianglePath {
 public:
  GrownTrianglePath(const BvhRay& ray, const Vec3& grow)
      : origin_xy_(_mm_set_pd(ray.origin.y, ray.origin.x)),
        inv_xy_(_mm_set_pd(ray.inv.y, ray.inv.x)),
        grow_xy_(_mm_set_pd(grow.y, grow.x)),
        zero_xy_(_mm_castsi128_pd(_mm_set_epi64x(ray.zero[1] ? -1 : 0, ray.zero[0] ? -1 : 0))),
        origin_z_(_mm_set_sd(ray.origin.z)),
        inv_z_(_mm_set_sd(ray.inv.z)),
        grow_z_(_mm_set_sd(grow.z)),
        zero_z_(_mm_castsi128_pd(_mm_set_epi64x(0, ray.zero[2] ? -1 : 0))) {}

  __attribute__((always_inline)) bool Enter(const Vec3 v[3], double t_max,
                                            double* t_enter) const {
    __m128d lo_xy, hi_xy, lo_z, hi_z;
    TriangleBoxLanes(v, &lo_xy, &hi_xy, &lo_z, &hi_z);
    lo_xy = _mm_sub_pd(lo_xy, grow_xy_);
    hi_xy = _mm_add_pd(hi_xy, grow_xy_);
    lo_z = _mm_sub_sd(lo_z, grow_z_);
    hi_z = _mm_add_sd(hi_z, grow_z_);
    __m128d in_xy, out_xy, in_z, out_z;
    const __m128d outside_xy = Slab(lo_xy, hi_xy, origin_xy_, inv_xy_, zero_xy_, &in_xy, &out_xy);
    const __m128d outside_z = Slab(lo_z, hi_z, origin_z_, inv_z_, zero_z_, &in_z, &out_z);
    // lo = std::max(lo, t_in) = t_in > lo ? t_in : lo, axis by axis in
    // order; hi = std::min(hi, t_out) likewise.
    __m128d lo = _mm_max_sd(in_xy, _mm_setzero_pd());
    lo = _mm_max_sd(_mm_unpackhi_pd(in_xy, in_xy), lo);
    lo = _mm_max_sd(in_z, lo);
    __m128d hi = _mm_min_sd(out_xy, _mm_set_sd(t_max));
    hi = _mm_min_sd(_mm_unpackhi_pd(out_xy, out_xy), hi);
    hi = _mm_min_sd(out_z, hi);
    const int outside = _mm_movemask_pd(_mm_or_pd(outside_xy, outside_z)) |
                        _mm_movemask_pd(_mm_cmpgt_sd(lo, hi));
    *t_enter = _mm_cvtsd_f64(lo);
    return outside == 0;
  }

 private:
  /// BvhRay::Slab on the lanes of [lo, hi]: the widened range [*t_in,
  /// *t_out] (-inf, inf on the `zero` lanes, which leave lo and hi as they
  /// are); returns the `zero` lanes whose origin lies outside.
  __attribute__((always_inline)) static __m128d Slab(__m128d lo, __m128d hi, __m128d origin,
                                                     __m128d inv, __m128d zero, __m128d* t_in,
                                                     __m128d* t_out) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    const __m128d t1 = _mm_mul_pd(_mm_sub_pd(lo, origin), inv);
    const __m128d t2 = _mm_mul_pd(_mm_sub_pd(hi, origin), inv);
    // if (t1 > t2) swap: the lesser is t2 < t1 ? t2 : t1, the greater
    // t1 > t2 ? t1 : t2.
    const __m128d near = _mm_min_pd(t2, t1), far = _mm_max_pd(t1, t2);
    const __m128d abs = _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffff));
    const __m128d eps = _mm_set1_pd(1e-12);
    const __m128d in = _mm_sub_pd(near, _mm_mul_pd(_mm_and_pd(near, abs), eps));
    const __m128d out = _mm_add_pd(far, _mm_mul_pd(_mm_and_pd(far, abs), eps));
    *t_in = _mm_or_pd(_mm_andnot_pd(zero, in), _mm_and_pd(zero, _mm_set1_pd(-kInf)));
    *t_out = _mm_or_pd(_mm_andnot_pd(zero, out), _mm_and_pd(zero, _mm_set1_pd(kInf)));
    return _mm_and_pd(zero, _mm_or_pd(_mm_cmplt_pd(origin, lo), _mm_cmpgt_pd(origin, hi)));
  }

  __m128d origin_xy_, inv_xy_, grow_xy_, zero_xy_;
  __m128d origin_z_, inv_z_, grow_z_, zero_z_;
};

}  // namespace hitbox
