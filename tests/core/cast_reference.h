// Independent references for cast and raycast tests: the first time of
// contact found by bisection on an overlap predicate, with the minimum of the
// (convex) distance along the path located by golden-section search first.
#pragma once

#include <cmath>
#include <functional>

#include "geometry/gjk.h"
#include "hitbox/collision/collide.h"
#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"

namespace hitbox::testing {

/// Reference answer for a sweep.
struct RefCast {
  bool started = false;  ///< overlapping at t = 0
  bool hit = false;      ///< touches at some t in [0, 1]
  double t = 1.0;        ///< first contact (bisection)
  double min_gap = 0.0;  ///< minimum distance along the path (0 when it touches)
};

/// `dist(t)`: separation at t (<= 0 when overlapping), convex in t.
/// `overlap(t)`: the overlap predicate used for bisection.
inline RefCast ReferenceFirstContact(const std::function<double(double)>& dist,
                                     const std::function<bool(double)>& overlap) {
  RefCast r;
  if (overlap(0.0)) {
    r.started = r.hit = true;
    r.t = 0.0;
    return r;
  }
  // Golden-section search for the minimum of the convex distance.
  double lo = 0.0, hi = 1.0;
  const double g = 0.5 * (std::sqrt(5.0) - 1.0);
  double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
  double f1 = dist(x1), f2 = dist(x2);
  double tmin = overlap(1.0) ? 1.0 : -1.0;
  for (int i = 0; i < 80 && tmin < 0.0; ++i) {
    if (f1 <= 0.0) {
      tmin = x1;
      break;
    }
    if (f2 <= 0.0) {
      tmin = x2;
      break;
    }
    if (f1 < f2) {
      hi = x2;
      x2 = x1;
      f2 = f1;
      x1 = hi - g * (hi - lo);
      f1 = dist(x1);
    } else {
      lo = x1;
      x1 = x2;
      f1 = f2;
      x2 = lo + g * (hi - lo);
      f2 = dist(x2);
    }
  }
  if (tmin < 0.0) {
    const double end = std::min(dist(0.0), dist(1.0));
    r.min_gap = std::min(std::min(f1, f2), end);
    const double m = 0.5 * (lo + hi);
    if (overlap(m)) {
      tmin = m;
    } else {
      return r;
    }
  }
  // Bisection for the first overlapping t in [0, tmin].
  double a = 0.0, b = tmin;
  for (int i = 0; i < 60; ++i) {
    const double m = 0.5 * (a + b);
    if (overlap(m)) {
      b = m;
    } else {
      a = m;
    }
    if (b - a < 1e-12) break;
  }
  r.hit = true;
  r.t = b;
  return r;
}

/// Separation of two posed shapes via GJK (margins included); negative never.
inline double GjkSeparation(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb) {
  const internal::GjkResult g = internal::GjkDistance(a, pa, b, pb);
  return g.state == internal::GjkState::kOverlapping ? 0.0 : g.distance;
}

/// True when point p (shape's local frame) lies in the solid shape; closed forms.
inline bool ContainsLocalPoint(const Shape& s, const Vec3& p) {
  switch (s.kind()) {
    case ShapeKind::kSphere: return p.LengthSq() <= s.radius() * s.radius();
    case ShapeKind::kBox: {
      const Vec3 e = s.half_extents();
      return std::fabs(p.x) <= e.x && std::fabs(p.y) <= e.y && std::fabs(p.z) <= e.z;
    }
    case ShapeKind::kCapsule: {
      const double y = std::clamp(p.y, -s.half_height(), s.half_height());
      return (p - Vec3{0, y, 0}).LengthSq() <= s.radius() * s.radius();
    }
    case ShapeKind::kCylinder:
      return p.x * p.x + p.z * p.z <= s.radius() * s.radius() &&
             std::fabs(p.y) <= s.half_height();
    case ShapeKind::kConvexHull:
      for (const HullPlane& pl : s.hull()->planes()) {
        if (Dot(pl.normal, p) > pl.offset) return false;
      }
      return true;
    default: break;
  }
  return false;
}

/// Separation between A placed on the contact normal and B: min over A of
/// n.a minus max over B of n.b (both world frame), ~0 when n is a valid
/// contact normal (in the normal cone) at the moment of touching.
inline double SupportGap(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,
                         const Vec3& n) {
  const Vec3 sa = pa.TransformPoint(a.Support(pa.InverseTransformDirection(-n)));
  const Vec3 sb = pb.TransformPoint(b.Support(pb.InverseTransformDirection(n)));
  return Dot(n, sa - sb);
}

}  // namespace hitbox::testing
