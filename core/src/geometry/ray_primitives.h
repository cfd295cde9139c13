// Closed-form ray primitives in a shape's local frame, shared by Raycast() and
// the closed-form shape casts (a sphere cast is a ray against the target grown
// by the sphere's radius).
//
// Every function takes a ray `o + t * d`, t in [0, 1] (d is the whole
// translation, any length including zero) and reports the first t at which
// the ray touches the solid, with the solid's outward unit normal there.
// A ray whose origin is inside or on the solid reports RayOutcome::kInside,
// t = 0 and the outward normal of the nearest surface (the direction to leave
// by). Touching counts: a tangent ray hits at the tangent point. Discriminants
// that round to slightly below zero at a tangent are clamped to zero.
#pragma once

#include <algorithm>
#include <cmath>

#include "hitbox/math/math.h"

namespace hitbox::internal {

/// Outcome of a primitive ray test.
enum class RayOutcome { kMiss, kHit, kInside };

/// First contact of a ray with a solid (local frame of the solid).
struct RayEntry {
  /// Ray parameter in [0, 1] at first contact (0 when inside).
  double t = 0.0;
  /// Outward unit normal of the solid at the contact (nearest face when inside).
  Vec3 normal{0, 1, 0};
};

/// A relative discriminant above -kGrazeTol counts as a tangent touch (0).
inline constexpr double kGrazeTol = 1e-12;

/// `v` normalised, or `fallback` normalised when `v` is (nearly) zero.
inline Vec3 UnitOr(const Vec3& v, const Vec3& fallback) {
  const double l2 = v.LengthSq();
  if (l2 > 1e-300) return v / std::sqrt(l2);
  const double f2 = fallback.LengthSq();
  if (f2 > 1e-300) return fallback / std::sqrt(f2);
  return {0, 1, 0};
}

/// Smaller root of a*t^2 + 2*b*t + c = 0 for a ray entering a quadric from
/// outside (c > 0, b < 0, a > 0), given e = (b^2 - a*c) / a >= 0 computed
/// stably by the caller. Cancellation-free form c / (-b + sqrt(a * e)).
inline double EntryRoot(double b, double c, double a_times_e) {
  return c / (-b + std::sqrt(std::max(a_times_e, 0.0)));
}

/// Ray against a sphere of radius `r` about the origin.
inline RayOutcome RaySphere(const Vec3& o, const Vec3& d, double r, RayEntry* out) {
  const double c = o.LengthSq() - r * r;
  if (c <= 0.0) {
    out->t = 0.0;
    out->normal = UnitOr(o, -d);
    return RayOutcome::kInside;
  }
  const double b = Dot(o, d);
  if (b >= 0.0) return RayOutcome::kMiss;  // outside and not approaching
  const double a = d.LengthSq();
  // Squared distance of closest approach, computed from the closest point
  // itself (more accurate than b^2 - a*c near tangency).
  const Vec3 q = o - d * (b / a);
  const double e = r * r - q.LengthSq();
  if (e < -kGrazeTol * r * r) return RayOutcome::kMiss;
  const double t = EntryRoot(b, c, a * e);
  if (!(t <= 1.0)) return RayOutcome::kMiss;
  out->t = t;
  out->normal = UnitOr(o + d * t, -d);
  return RayOutcome::kHit;
}

/// Ray against the capsule around segment [p0, p1] with radius `r`
/// (Ericson, RTCD 5.3.7: infinite cylinder about the axis, then end spheres).
inline RayOutcome RaySegmentCapsule(const Vec3& o, const Vec3& d, const Vec3& p0, const Vec3& p1,
                                    double r, RayEntry* out) {
  const Vec3 u = p1 - p0;
  const double uu = u.LengthSq();
  const Vec3 m = o - p0;
  // Origin inside: distance from o to the segment.
  const double sm = uu > 0.0 ? std::clamp(Dot(m, u) / uu, 0.0, 1.0) : 0.0;
  const Vec3 off = m - u * sm;
  if (off.LengthSq() <= r * r) {
    out->t = 0.0;
    out->normal = UnitOr(off, uu > 0.0 ? AnyPerpendicular(u / std::sqrt(uu)) : -d);
    return RayOutcome::kInside;
  }
  if (uu > 0.0) {
    // Components perpendicular to the axis.
    const Vec3 dp = d - u * (Dot(d, u) / uu);
    const Vec3 mp = m - u * (Dot(m, u) / uu);
    const double a = dp.LengthSq();
    const double c = mp.LengthSq() - r * r;
    const double b = Dot(mp, dp);
    if (c > 0.0 && b < 0.0 && a > 0.0) {
      const Vec3 q = mp - dp * (b / a);
      const double e = r * r - q.LengthSq();
      if (e < -kGrazeTol * r * r) return RayOutcome::kMiss;  // misses the infinite cylinder
      const double t = EntryRoot(b, c, a * e);
      const double s = Dot(m + d * t, u) / uu;
      if (s >= 0.0 && s <= 1.0) {
        if (!(t <= 1.0)) return RayOutcome::kMiss;
        out->t = t;
        out->normal = UnitOr(mp + dp * t, -dp);
        return RayOutcome::kHit;
      }
      // Entered the infinite cylinder beyond an end: only that end's sphere can be hit.
      const Vec3& end = s < 0.0 ? p0 : p1;
      return RaySphere(o - end, d, r, out) == RayOutcome::kMiss ? RayOutcome::kMiss
                                                                : RayOutcome::kHit;
    }
    if (c > 0.0) return RayOutcome::kMiss;  // outside the infinite cylinder, not approaching
  }
  // Origin inside the infinite cylinder (beyond an end) or degenerate segment: end spheres.
  RayEntry e0, e1;
  const bool h0 = RaySphere(o - p0, d, r, &e0) != RayOutcome::kMiss;
  const bool h1 = uu > 0.0 && RaySphere(o - p1, d, r, &e1) != RayOutcome::kMiss;
  if (!h0 && !h1) return RayOutcome::kMiss;
  *out = (h0 && (!h1 || e0.t <= e1.t)) ? e0 : e1;
  return RayOutcome::kHit;
}

/// Ray against the box [-e, e] (slab test; Kay-Kajiya, Ericson RTCD 5.3.3).
inline RayOutcome RayBox(const Vec3& o, const Vec3& d, const Vec3& e, RayEntry* out) {
  double tmin = 0.0, tmax = 1.0;
  int axis = -1;
  for (int i = 0; i < 3; ++i) {
    if (d[i] == 0.0) {
      if (std::fabs(o[i]) > e[i]) return RayOutcome::kMiss;
      continue;
    }
    const double inv = 1.0 / d[i];
    double ta = (-e[i] - o[i]) * inv;
    double tb = (e[i] - o[i]) * inv;
    if (ta > tb) std::swap(ta, tb);
    if (ta > tmin) {
      tmin = ta;
      axis = i;
    }
    tmax = std::min(tmax, tb);
    if (tmin > tmax) return RayOutcome::kMiss;
  }
  if (axis < 0) {
    // Inside (or on) the box at t = 0 with the ray not leaving first: the
    // origin is inside exactly when every |o_i| <= e_i.
    if (std::fabs(o.x) > e.x || std::fabs(o.y) > e.y || std::fabs(o.z) > e.z) {
      return RayOutcome::kMiss;  // (only reachable through rounding)
    }
    int best = 0;
    double best_gap = e[0] - std::fabs(o[0]);
    for (int i = 1; i < 3; ++i) {
      const double gap = e[i] - std::fabs(o[i]);
      if (gap < best_gap) {
        best_gap = gap;
        best = i;
      }
    }
    Vec3 n;
    n[best] = o[best] >= 0.0 ? 1.0 : -1.0;
    out->t = 0.0;
    out->normal = n;
    return RayOutcome::kInside;
  }
  Vec3 n;
  n[axis] = d[axis] > 0.0 ? -1.0 : 1.0;
  out->t = tmin;
  out->normal = n;
  return RayOutcome::kHit;
}

/// Interval of a ray (t in (-inf, inf)) inside the infinite cylinder
/// x^2 + z^2 <= r^2; false when the line never enters it. Tangent lines
/// enter for an instant.
inline bool LineInfiniteCylinder(const Vec3& o, const Vec3& d, double r, double* t_in,
                                 double* t_out) {
  const double a = d.x * d.x + d.z * d.z;
  const double b = o.x * d.x + o.z * d.z;
  const double c = o.x * o.x + o.z * o.z - r * r;
  if (a == 0.0) {
    if (c > 0.0) return false;
    *t_in = -std::numeric_limits<double>::infinity();
    *t_out = std::numeric_limits<double>::infinity();
    return true;
  }
  const double qx = o.x - d.x * (b / a), qz = o.z - d.z * (b / a);
  const double e = r * r - (qx * qx + qz * qz);
  if (e < -kGrazeTol * r * r) return false;
  const double s = std::sqrt(a * std::max(e, 0.0));
  // Roots (-b -+ s) / a without cancellation.
  if (b <= 0.0) {
    const double qq = -b + s;  // > 0 unless a tangent at the closest point with b = 0
    *t_out = qq / a;
    *t_in = qq > 0.0 ? c / qq : -b / a;
  } else {
    const double qq = -b - s;  // < 0
    *t_in = qq / a;
    *t_out = c / qq;
  }
  if (*t_in > *t_out) std::swap(*t_in, *t_out);
  return true;
}

/// Ray against the cylinder of radius r, axis Y, caps at y = +-h: the
/// intersection of the infinite cylinder and the slab |y| <= h.
inline RayOutcome RayCylinder(const Vec3& o, const Vec3& d, double r, double h, RayEntry* out) {
  const double q2 = o.x * o.x + o.z * o.z;
  if (q2 <= r * r && std::fabs(o.y) <= h) {
    const double side_gap = r - std::sqrt(q2);
    const double cap_gap = h - std::fabs(o.y);
    out->t = 0.0;
    out->normal = side_gap < cap_gap ? UnitOr({o.x, 0, o.z}, {1, 0, 0})
                                     : Vec3{0, o.y >= 0.0 ? 1.0 : -1.0, 0};
    return RayOutcome::kInside;
  }
  double side_in, side_out;
  if (!LineInfiniteCylinder(o, d, r, &side_in, &side_out)) return RayOutcome::kMiss;
  double cap_in, cap_out;
  if (d.y == 0.0) {
    if (std::fabs(o.y) > h) return RayOutcome::kMiss;
    cap_in = -std::numeric_limits<double>::infinity();
    cap_out = std::numeric_limits<double>::infinity();
  } else {
    cap_in = (-h - o.y) / d.y;
    cap_out = (h - o.y) / d.y;
    if (cap_in > cap_out) std::swap(cap_in, cap_out);
  }
  const double t_in = std::max(side_in, cap_in);
  const double t_out = std::min(side_out, cap_out);
  if (t_in > t_out || t_out < 0.0 || t_in > 1.0) return RayOutcome::kMiss;
  const double t = std::max(t_in, 0.0);
  out->t = t;
  if (side_in >= cap_in) {
    const Vec3 p = o + d * t;
    out->normal = UnitOr({p.x, 0, p.z}, {-d.x, 0, -d.z});
  } else {
    out->normal = {0, d.y > 0.0 ? -1.0 : 1.0, 0};
  }
  return RayOutcome::kHit;
}

/// Sorts up to 8 values in place (insertion sort; tiny n).
inline void SortSmall(double* v, int n) {
  for (int i = 1; i < n; ++i) {
    const double x = v[i];
    int j = i - 1;
    while (j >= 0 && v[j] > x) {
      v[j + 1] = v[j];
      --j;
    }
    v[j + 1] = x;
  }
}

/// Smallest t in [lo, hi] with f(t) = a t^2 + 2 b t + c <= 0 (lo itself when
/// f(lo) <= 0), for a ray entering the set f <= 0. Tangent roots count.
inline bool FirstQuadraticRoot(double a, double b, double c, double lo, double hi, double* t) {
  if ((a * lo + 2.0 * b) * lo + c <= 0.0) {
    *t = lo;  // already touching at the start of the piece (rounding at a boundary)
    return true;
  }
  if (a <= 0.0) {
    // Linear (a == 0): 2 b t + c = 0.
    if (b >= 0.0) return false;
    const double r = -c / (2.0 * b);
    if (r < lo || r > hi) return false;
    *t = std::max(r, lo);
    return true;
  }
  double disc = b * b - a * c;
  if (disc < 0.0) {
    if (disc < -kGrazeTol * (b * b + std::fabs(a * c))) return false;
    disc = 0.0;
  }
  const double s = std::sqrt(disc);
  // Smaller root (-b - s) / a, cancellation-free.
  const double r = b > 0.0 ? (-b - s) / a : (-b + s > 0.0 ? c / (-b + s) : -b / a);
  if (r > hi) return false;
  if (r < lo) {
    // The smaller root lies before the interval: f(lo) > 0 means the whole
    // parabola's negative part is before lo too.
    return false;
  }
  *t = r;
  return true;
}

/// Ray against a box [-e, e] rounded by radius rho (the Minkowski sum of the
/// box and a sphere): the moving-sphere-vs-box test (Ericson, RTCD 5.5.7).
/// Fast path: slab test on the box grown by rho, exact when entering through a
/// face region. Otherwise the ray is split at the planes |p_i| = e_i into at
/// most 7 pieces; on each the squared distance to the box is one quadratic
/// in t (the Voronoi region is fixed), solved in closed form.
inline RayOutcome RayRoundedBox(const Vec3& o, const Vec3& d, const Vec3& e, double rho,
                                RayEntry* out) {
  // Distance from o to the box decides "inside".
  {
    Vec3 g;
    for (int i = 0; i < 3; ++i) {
      const double a = std::fabs(o[i]) - e[i];
      g[i] = a > 0.0 ? (o[i] > 0.0 ? a : -a) : 0.0;
    }
    const double g2 = g.LengthSq();
    if (g2 <= rho * rho) {
      if (g2 > 0.0) {
        out->t = 0.0;
        out->normal = g / std::sqrt(g2);
        return RayOutcome::kInside;
      }
      return RayBox(o, d, e + Vec3::Splat(rho), out) == RayOutcome::kMiss ? RayOutcome::kMiss
                                                                         : RayOutcome::kInside;
    }
  }
  // (The origin may be inside the grown box yet outside the rounded one: then
  // the walk below starts at t = 0.)
  RayEntry grown;
  const RayOutcome grown_out = RayBox(o, d, e + Vec3::Splat(rho), &grown);
  if (grown_out == RayOutcome::kMiss) return RayOutcome::kMiss;
  const Vec3 p = o + d * grown.t;
  int outside = 0;
  for (int i = 0; i < 3; ++i) outside += std::fabs(p[i]) > e[i] ? 1 : 0;
  if (grown_out == RayOutcome::kHit && outside <= 1) {
    *out = grown;
    return RayOutcome::kHit;
  }
  // Edge or corner region: walk the Voronoi pieces from the grown box's entry.
  double bp[8];
  int n = 0;
  bp[n++] = grown.t;
  for (int i = 0; i < 3; ++i) {
    if (d[i] == 0.0) continue;
    for (double sgn : {-1.0, 1.0}) {
      const double t = (sgn * e[i] - o[i]) / d[i];
      if (t > grown.t && t < 1.0) bp[n++] = t;
    }
  }
  bp[n++] = 1.0;
  SortSmall(bp + 1, n - 2);
  for (int k = 0; k + 1 < n; ++k) {
    const double lo = bp[k], hi = bp[k + 1];
    if (hi < lo) continue;
    const double mid = 0.5 * (lo + hi);
    double a = 0.0, b = 0.0, c = -rho * rho;
    Vec3 s;
    int outs = 0;
    for (int i = 0; i < 3; ++i) {
      const double pm = o[i] + d[i] * mid;
      s[i] = pm > e[i] ? 1.0 : (pm < -e[i] ? -1.0 : 0.0);
      if (s[i] == 0.0) continue;
      ++outs;
      const double u = s[i] * o[i] - e[i];
      const double w = s[i] * d[i];
      a += w * w;
      b += u * w;
      c += u * u;
    }
    double t;
    if (outs == 0) {
      t = lo;  // inside the box itself (only reachable through rounding)
    } else if (!FirstQuadraticRoot(a, b, c, lo, hi, &t)) {
      // Distance along a line is convex: once it grows it never returns.
      if (2.0 * (a * hi + b) >= 0.0 && a * hi * hi + 2.0 * b * hi + c > 0.0) break;
      continue;
    }
    const Vec3 ph = o + d * t;
    Vec3 g;
    for (int i = 0; i < 3; ++i) {
      const double x = std::fabs(ph[i]) - e[i];
      g[i] = x > 0.0 ? (ph[i] > 0.0 ? x : -x) : 0.0;
    }
    out->t = t;
    out->normal = UnitOr(g, -d);
    return RayOutcome::kHit;
  }
  return RayOutcome::kMiss;
}

/// Distance from `p` to the solid cylinder (radius r, axis Y, half-height h)
/// and the outward unit direction from the cylinder's closest point to `p`.
inline double PointCylinderDistance(const Vec3& p, double r, double h, Vec3* dir) {
  const double q = std::sqrt(p.x * p.x + p.z * p.z);
  const double dq = q - r;
  const double dy = std::fabs(p.y) - h;
  if (dq <= 0.0 && dy <= 0.0) return 0.0;
  const double sx = q > 0.0 ? p.x / q : 1.0, sz = q > 0.0 ? p.z / q : 0.0;
  const double sy = p.y >= 0.0 ? 1.0 : -1.0;
  const double gq = std::max(dq, 0.0), gy = std::max(dy, 0.0);
  const double dist = std::sqrt(gq * gq + gy * gy);
  if (dir) *dir = Vec3{sx * gq, sy * gy, sz * gq} / dist;
  return dist;
}

/// Ray against a cylinder (radius r, axis Y, half-height h) rounded by radius
/// rho: the moving-sphere-vs-cylinder test. Fast path: the cylinder grown to
/// (r + rho, h + rho), exact when entering through its side band |y| <= h or
/// a cap disc of radius r. Otherwise the ray is split where it crosses the
/// planes |y| = h and the surface x^2 + z^2 = r^2; on side and cap pieces the
/// first contact is a quadratic / linear root; on a rim piece (torus) it is
/// the first root of the convex distance-minus-rho, found by Newton's method
/// from the left, which is monotone on a convex function (<= 40 steps).
inline RayOutcome RayRoundedCylinder(const Vec3& o, const Vec3& d, double r, double h,
                                     double rho, RayEntry* out) {
  {
    Vec3 dir;
    const double dist0 = PointCylinderDistance(o, r, h, &dir);
    if (dist0 <= rho) {
      if (dist0 > 0.0) {
        out->t = 0.0;
        out->normal = dir;
        return RayOutcome::kInside;
      }
      RayCylinder(o, d, r + rho, h + rho, out);  // nearest-face normal of the grown cylinder
      out->t = 0.0;
      return RayOutcome::kInside;
    }
  }
  RayEntry grown;
  const RayOutcome grown_out = RayCylinder(o, d, r + rho, h + rho, &grown);
  if (grown_out == RayOutcome::kMiss) return RayOutcome::kMiss;
  if (grown_out == RayOutcome::kHit) {
    const Vec3 p = o + d * grown.t;
    if (std::fabs(p.y) <= h || p.x * p.x + p.z * p.z <= r * r) {
      *out = grown;
      return RayOutcome::kHit;
    }
  }
  double bp[8];
  int n = 0;
  bp[n++] = grown.t;
  if (d.y != 0.0) {
    for (double sgn : {-1.0, 1.0}) {
      const double t = (sgn * h - o.y) / d.y;
      if (t > grown.t && t < 1.0) bp[n++] = t;
    }
  }
  {
    double t0, t1;
    if (LineInfiniteCylinder(o, d, r, &t0, &t1)) {
      if (t0 > grown.t && t0 < 1.0) bp[n++] = t0;
      if (t1 > grown.t && t1 < 1.0) bp[n++] = t1;
    }
  }
  bp[n++] = 1.0;
  SortSmall(bp + 1, n - 2);
  const double a_xz = d.x * d.x + d.z * d.z;
  const double b_xz = o.x * d.x + o.z * d.z;
  for (int k = 0; k + 1 < n; ++k) {
    const double lo = bp[k], hi = bp[k + 1];
    if (hi < lo) continue;
    const Vec3 pm = o + d * (0.5 * (lo + hi));
    const bool out_side = pm.x * pm.x + pm.z * pm.z > r * r;
    const bool out_cap = std::fabs(pm.y) > h;
    double t = lo;
    bool found = false;
    if (!out_side && !out_cap) {
      found = true;  // inside the cylinder (only reachable through rounding)
    } else if (out_side && !out_cap) {
      const double c = o.x * o.x + o.z * o.z - (r + rho) * (r + rho);
      found = FirstQuadraticRoot(a_xz, b_xz, c, lo, hi, &t);
    } else if (!out_side && out_cap) {
      const double sy = pm.y > 0.0 ? 1.0 : -1.0;
      // sy * y(t) - h - rho = 0, i.e. linear with slope sy * d.y.
      found = FirstQuadraticRoot(0.0, 0.5 * sy * d.y, sy * o.y - h - rho, lo, hi, &t);
    } else {
      // Rim piece: Newton from the left on f(t) = dist(p(t), cylinder) - rho.
      t = lo;
      for (int it = 0; it < 40; ++it) {
        const Vec3 p = o + d * t;
        const double q = std::sqrt(p.x * p.x + p.z * p.z);
        const double gq = q - r;
        const double gy = std::fabs(p.y) - h;
        const double dist = std::sqrt(gq * gq + gy * gy);
        const double f = dist - rho;
        if (f <= 1e-13 * std::max(1.0, rho)) {
          found = true;
          break;
        }
        const double dq = q > 0.0 ? (p.x * d.x + p.z * d.z) / q : 0.0;
        const double dy = p.y >= 0.0 ? d.y : -d.y;
        const double fp = (gq * dq + gy * dy) / dist;
        if (fp >= 0.0) break;  // distance no longer decreasing: no contact ahead
        const double next = t - f / fp;
        if (next > hi) {
          t = hi;
          break;
        }
        if (next <= t) {  // no progress in floating point: converged onto a tangent
          found = f <= 1e-9 * std::max(1.0, rho);
          break;
        }
        t = next;
      }
      if (!found) {
        const Vec3 p = o + d * t;
        Vec3 dir;
        if (t < hi && PointCylinderDistance(p, r, h, &dir) > rho) return RayOutcome::kMiss;
        if (t < hi) found = true;
      }
    }
    if (!found) continue;
    Vec3 dir;
    const double dist = PointCylinderDistance(o + d * t, r, h, &dir);
    out->t = t;
    out->normal = dist > 0.0 ? dir : UnitOr(-d, {0, 1, 0});
    return RayOutcome::kHit;
  }
  return RayOutcome::kMiss;
}

}  // namespace hitbox::internal
