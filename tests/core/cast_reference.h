// Independent references for cast and raycast tests: the first time of
// contact found by bisection on an overlap predicate, with the minimum of the
// (convex) distance along the path located by golden-section search first.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include "geometry/gjk.h"
#include "hitbox/collision/collide.h"
#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"
#include "shape/convex_core.h"

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

/// The least of a convex `f` over [lo, hi] and where it is (golden-section search).
inline std::pair<double, double> ConvexMin(const std::function<double(double)>& f, double lo,
                                           double hi) {
  std::pair<double, double> best = std::min(std::pair{f(lo), lo}, std::pair{f(hi), hi});
  if (!(hi > lo)) return best;
  const double g = 0.5 * (std::sqrt(5.0) - 1.0);
  double a = lo, b = hi;
  double x1 = b - g * (b - a), x2 = a + g * (b - a);
  double f1 = f(x1), f2 = f(x2);
  for (int i = 0; i < 120 && b > a; ++i) {
    if (f1 < f2) {
      b = x2, x2 = x1, f2 = f1, x1 = b - g * (b - a), f1 = f(x1);
    } else {
      a = x1, x1 = x2, f1 = f2, x2 = a + g * (b - a), f2 = f(x2);
    }
  }
  return std::min(best, std::min(std::pair{f1, x1}, std::pair{f2, x2}));
}

/// One sweep's answer against `gap(t)`, the signed separation in metres of
/// the moving shape and the other at fraction t (convex in t; <= 0
/// touching), moving at `speed` m per unit fraction, within `tol` metres: a
/// miss never comes within -tol over [0, t_max]; a start inside has t 0 and
/// gap(0) <= tol; any other hit is apart at the start, touches at t
/// (|gap(t)| <= tol), is not deeper before it, and where the path crosses
/// the surface clearly lies within 2 tol of travel of the first contact
/// found by bisection on gap <= 0.
inline ::testing::AssertionResult SweepAgreesWithGap(const std::function<double(double)>& gap,
                                                     double t_max, double speed, double tol,
                                                     bool hit, bool started_inside, double t) {
  auto fail = [&](const char* what, double value) {
    return ::testing::AssertionFailure() << what << " " << value << " (tol " << tol << ", hit "
                                         << hit << ", started " << started_inside << ", t " << t
                                         << ", t_max " << t_max << ")";
  };
  const auto [least, at_least] = ConvexMin(gap, 0.0, t_max);
  if (!hit) return least > -tol ? ::testing::AssertionSuccess() : fail("a miss reaches", least);
  if (started_inside) {
    if (t != 0.0) return fail("started inside at t", t);
    return gap(0.0) <= tol ? ::testing::AssertionSuccess() : fail("started inside at gap", gap(0));
  }
  if (!(t >= 0.0 && t <= t_max)) return fail("a hit outside [0, t_max] at", t);
  if (!(gap(0.0) > -tol)) return fail("a hit not started inside is inside at", gap(0.0));
  if (!(std::fabs(gap(t)) <= tol)) return fail("not touching at its fraction: gap", gap(t));
  const double before = ConvexMin(gap, 0.0, t).first;
  if (!(before > -tol)) return fail("deeper before the hit", before);
  if (least < -tol && gap(0.0) > 0.0) {
    // gap falls from gap(0) > 0 to its least, crossing 0 once.
    double lo = 0.0, hi = at_least;
    for (int i = 0; i < 200; ++i) {
      const double m = 0.5 * (lo + hi);
      if (!(m > lo && m < hi)) break;
      (gap(m) > 0.0 ? lo : hi) = m;
    }
    // A clear crossing: the gap falls by tol / 2 within tol of travel past it.
    const double step = tol / speed;
    if (hi + step <= t_max && gap(hi + step) < -0.5 * tol &&
        !(std::fabs(t - hi) * speed <= 2.0 * tol)) {
      return fail("first contact by bisection at", hi);
    }
  }
  return ::testing::AssertionSuccess();
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
