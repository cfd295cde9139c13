#include "geometry/closest_points.h"

#include <algorithm>
#include <cmath>

namespace hitbox::internal {

Vec3 ClosestPointOnSegment(const Vec3& p, const Vec3& a, const Vec3& b) {
  const Vec3 ab = b - a;
  const double len_sq = ab.LengthSq();
  if (len_sq <= 0.0) return a;
  const double t = std::clamp(Dot(p - a, ab) / len_sq, 0.0, 1.0);
  return a + ab * t;
}

ClosestPair ClosestSegmentSegment(const Vec3& p1, const Vec3& q1, const Vec3& p2, const Vec3& q2) {
  // Minimise |p1 + s d1 - (p2 + t d2)|^2 over s, t in [0, 1] (RTCD 5.1.9):
  // solve the unclamped 2x2 system for s, then take the best t for that s and,
  // if t had to be clamped, the best s for that t.
  const Vec3 d1 = q1 - p1;
  const Vec3 d2 = q2 - p2;
  const Vec3 r = p1 - p2;
  const double a = d1.LengthSq();
  const double e = d2.LengthSq();
  const double f = Dot(d2, r);
  double s = 0.0;
  double t = 0.0;
  if (a <= 0.0 && e <= 0.0) {
    // Two points.
  } else if (a <= 0.0) {
    t = std::clamp(f / e, 0.0, 1.0);
  } else {
    const double c = Dot(d1, r);
    if (e <= 0.0) {
      s = std::clamp(-c / a, 0.0, 1.0);
    } else {
      const double b = Dot(d1, d2);
      const double denom = a * e - b * b;
      // Parallel (or nearly): any s works; start at 0 and let the clamps fix it.
      s = denom > 1e-14 * a * e ? std::clamp((b * f - c * e) / denom, 0.0, 1.0) : 0.0;
      t = (b * s + f) / e;
      if (t < 0.0) {
        t = 0.0;
        s = std::clamp(-c / a, 0.0, 1.0);
      } else if (t > 1.0) {
        t = 1.0;
        s = std::clamp((b - c) / a, 0.0, 1.0);
      }
    }
  }
  ClosestPair out;
  out.p = p1 + d1 * s;
  out.q = p2 + d2 * t;
  out.distance_sq = (out.p - out.q).LengthSq();
  return out;
}

ClosestPair ClosestSegmentBox(const Vec3& a, const Vec3& b, const Vec3& half_extents) {
  const Vec3 d = b - a;
  // Breakpoints: parameters where the segment crosses a slab plane x_i = +-h_i.
  double knots[8];
  int count = 0;
  knots[count++] = 0.0;
  for (int i = 0; i < 3; ++i) {
    if (d[i] == 0.0) continue;
    for (double side : {-1.0, 1.0}) {
      const double t = (side * half_extents[i] - a[i]) / d[i];
      if (t > 0.0 && t < 1.0) knots[count++] = t;
    }
  }
  knots[count++] = 1.0;
  // Insertion sort: at most 8 values.
  for (int i = 1; i < count; ++i) {
    const double k = knots[i];
    int j = i - 1;
    while (j >= 0 && knots[j] > k) {
      knots[j + 1] = knots[j];
      --j;
    }
    knots[j + 1] = k;
  }

  auto evaluate = [&](double t) {
    ClosestPair c;
    c.p = a + d * t;
    c.q = Max(Min(c.p, half_extents), -half_extents);
    c.distance_sq = (c.p - c.q).LengthSq();
    return c;
  };

  ClosestPair best = evaluate(0.0);
  for (int k = 0; k + 1 < count; ++k) {
    const double t0 = knots[k];
    const double t1 = knots[k + 1];
    // On this piece each coordinate is below, inside or above its slab; the
    // squared distance is sum over outside axes of (a_i + t d_i - s_i h_i)^2.
    const double mid = 0.5 * (t0 + t1);
    double qa = 0.0;
    double qb = 0.0;
    for (int i = 0; i < 3; ++i) {
      const double x = a[i] + d[i] * mid;
      double bound;
      if (x > half_extents[i]) {
        bound = half_extents[i];
      } else if (x < -half_extents[i]) {
        bound = -half_extents[i];
      } else {
        continue;
      }
      qa += d[i] * d[i];
      qb += d[i] * (a[i] - bound);
    }
    const double t = qa > 0.0 ? std::clamp(-qb / qa, t0, t1) : t0;
    const ClosestPair c = evaluate(t);
    if (c.distance_sq < best.distance_sq) best = c;
    if (best.distance_sq == 0.0) break;
  }
  const ClosestPair last = evaluate(1.0);
  if (last.distance_sq < best.distance_sq) best = last;
  return best;
}

Vec3 ClosestPointOnCylinder(const Vec3& p, double radius, double half_height) {
  Vec3 q = p;
  q.y = std::clamp(p.y, -half_height, half_height);
  const double radial_sq = p.x * p.x + p.z * p.z;
  if (radial_sq > radius * radius) {
    const double s = radius / std::sqrt(radial_sq);
    q.x = p.x * s;
    q.z = p.z * s;
  }
  return q;
}

}  // namespace hitbox::internal
