// The closed-form cylinder-triangle penetration (cylinder_triangle_penetration.h).
//
// In the cylinder's frame (axis y, radius r, caps at +-hh) the Minkowski
// difference D = cylinder - triangle holds the origin, and the depth is the
// distance from the origin to D's boundary: the least support h(n) over unit
// n, reached at the normal n* of D's nearest boundary point x*. Which pair of
// features meets there follows from n*: the cap (n* = +-y), the face (the
// triangle's normal), the side and an edge (n* square to both), the side and
// a vertex (n* horizontal, towards the vertex from the axis), a rim and a
// vertex (x* the nearest rim point to the vertex), a rim and an edge (x* a
// critical point of the distance between the edge and the rim's circle).
// Every one of those directions is a candidate; each candidate's h(n) is at
// least the depth, and n* is among them, so their least h is the depth.
// With -x / |x| too for each critical point x, the least h is at most 0 when
// D does not hold the origin (the two apart): then there is no contact.
#include "collision/triangles/cylinder_triangle_penetration.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "geometry/closest_points.h"
#include "geometry/triangle_queries.h"

namespace hitbox {

namespace {

/// A candidate direction n (unit, cylinder frame) and the support h there.
struct Candidate {
  double h = std::numeric_limits<double>::infinity();
  Vec3 n;
};

/// The cylinder and the triangle p in the cylinder's frame, and the least
/// candidate so far.
struct Difference {
  Vec3 p[3];
  double r = 0.0, hh = 0.0;
  Candidate best;

  /// The support of cylinder - triangle along unit n.
  double Support(const Vec3& n) const {
    const double lo = std::min(Dot(n, p[0]), std::min(Dot(n, p[1]), Dot(n, p[2])));
    return r * std::sqrt(n.x * n.x + n.z * n.z) + hh * std::fabs(n.y) - lo;
  }
  /// A point of the cylinder farthest along n (any length).
  Vec3 SupportPoint(const Vec3& n) const {
    const double horizontal = std::sqrt(n.x * n.x + n.z * n.z);
    const double y = n.y >= 0.0 ? hh : -hh;
    if (!(horizontal > 0.0)) return {0.0, y, 0.0};
    return {r * (n.x / horizontal), y, r * (n.z / horizontal)};
  }
  /// Takes direction d (any length but 0) when its support is the least so far.
  void Consider(const Vec3& d) {
    const double len2 = d.LengthSq();
    if (!(len2 > 0.0)) return;
    const Vec3 n = d / std::sqrt(len2);
    const double h = Support(n);
    if (h < best.h) best = {h, n};
  }
  /// Both d and -d: a critical point x of the distance from the origin
  /// gives the normal x / |x| when D holds the origin, -x / |x| when not.
  void ConsiderBoth(const Vec3& d) {
    Consider(d);
    Consider(-d);
  }
};

/// c[0] + c[1] t + ... + c[deg] t^deg.
double Poly(const double* c, int deg, double t) {
  switch (deg) {  // Horner's rule, written out
    case 4: return (((c[4] * t + c[3]) * t + c[2]) * t + c[1]) * t + c[0];
    case 3: return ((c[3] * t + c[2]) * t + c[1]) * t + c[0];
    case 2: return (c[2] * t + c[1]) * t + c[0];
    case 1: return c[1] * t + c[0];
    default: return c[0];
  }
}

/// The root in (a, b) of polynomial c (degree deg >= 1, derivative dc),
/// monotone there, whose values at a (fa) and b have opposite signs:
/// Newton's steps while they stay inside the shrinking bracket, else
/// halving, to 1e-7 (RimEdgeCandidates settles its roots on the geometry).
double MonotoneRoot(const double* c, const double* dc, int deg, double a, double b, double fa) {
  double t = 0.5 * (a + b);
  for (int it = 0; it < 64; ++it) {
    const double f = Poly(c, deg, t);
    if (f == 0.0) return t;
    if ((f < 0.0) == (fa < 0.0)) {
      a = t;
    } else {
      b = t;
    }
    double next = t - f / Poly(dc, deg - 1, t);
    if (!(next > a && next < b)) next = 0.5 * (a + b);
    const double step_limit = 1e-7 * std::max(1.0, std::fabs(t));
    if (std::fabs(next - t) <= step_limit || b - a <= step_limit) return next;
    t = next;
  }
  return t;
}

/// Where polynomial c of degree deg (<= 4) changes sign in (lo, hi),
/// ascending, into out (at most deg); returns the count. Between the sign
/// changes of its derivative (into turns, when given: at most deg - 1, their
/// count in *n_turns) it is monotone: one bracketed root at most.
int SignChanges(const double* c, int deg, double lo, double hi, double* out,
                double* turns = nullptr, int* n_turns = nullptr) {
  while (deg > 0 && c[deg] == 0.0) --deg;
  if (n_turns != nullptr) *n_turns = 0;
  if (deg == 0) return 0;
  if (deg <= 2 && turns == nullptr) {
    // In closed form: the line's root, or the parabola's two (without
    // cancellation) when they are distinct.
    if (deg == 1) {
      const double t = -c[0] / c[1];
      if (!(t > lo && t < hi)) return 0;
      out[0] = t;
      return 1;
    }
    const double disc = c[1] * c[1] - 4.0 * c[2] * c[0];
    if (!(disc > 0.0)) return 0;
    const double q = -0.5 * (c[1] + std::copysign(std::sqrt(disc), c[1]));
    double r0 = q / c[2], r1 = q != 0.0 ? c[0] / q : r0;
    if (r1 < r0) std::swap(r0, r1);
    int n = 0;
    if (r0 > lo && r0 < hi) out[n++] = r0;
    if (r1 > lo && r1 < hi && r1 != r0) out[n++] = r1;
    return n;
  }
  double dc[4] = {};
  for (int i = 1; i <= deg; ++i) dc[i - 1] = i * c[i];
  double cuts[6];
  int n_cuts = 0;
  cuts[n_cuts++] = lo;
  const int n_dc = SignChanges(dc, deg - 1, lo, hi, cuts + 1);
  n_cuts += n_dc;
  cuts[n_cuts++] = hi;
  if (turns != nullptr) {
    std::copy(cuts + 1, cuts + 1 + n_dc, turns);
    *n_turns = n_dc;
  }
  int n = 0;
  double fa = Poly(c, deg, lo);
  for (int k = 1; k < n_cuts; ++k) {
    const double fb = Poly(c, deg, cuts[k]);
    if ((fa < 0.0 && fb > 0.0) || (fa > 0.0 && fb < 0.0)) {
      out[n++] = MonotoneRoot(c, dc, deg, cuts[k - 1], cuts[k], fa);
    }
    fa = fb;
  }
  return n;
}

/// The rim x edge candidates of edge [p0, p1] and the rim at height `rim`,
/// for t in [lo, hi]: along the edge, the distance from p(t) to the rim's
/// circle has its critical points where rho(t) s(t) = +-r (A t + B) (rho
/// the distance from the axis, s = (p(t) - centre) . e, A t + B = the
/// horizontal part of s), the roots of the quartic rho^2 s^2 - r^2 (A t +
/// B)^2; each towards the rim point nearest p(t). rho(t)^2 = a t^2 + 2 b t
/// + c, the caller's.
void RimEdgeCandidates(Difference* d, int edge, double rim, double a, double b, double c, double lo,
                       double hi) {
  const Vec3& p0 = d->p[edge];
  const Vec3 e = d->p[(edge + 1) % 3] - p0;
  const Vec3 d0 = p0 - Vec3{0.0, rim, 0.0};
  const double s0 = Dot(d0, e), s1 = e.LengthSq(), r2 = d->r * d->r;
  const double q[5] = {c * s0 * s0 - r2 * b * b,
                       2.0 * b * s0 * s0 + 2.0 * c * s0 * s1 - 2.0 * r2 * a * b,
                       a * s0 * s0 + 4.0 * b * s0 * s1 + c * s1 * s1 - r2 * a * a,
                       2.0 * a * s0 * s1 + 2.0 * b * s1 * s1, a * s1 * s1};
  // Its sign changes, and the turning points where it nearly vanishes (its
  // double roots, where it may not change sign). The interval's ends need
  // none: there the pair is a rim and a vertex, or the direction is the
  // axis or square to it, each a candidate of its own.
  double ts[4 + 3];
  int n_turns = 0;
  int n = SignChanges(q, 4, lo, hi, ts, ts + 4, &n_turns);
  const double flat = 1e-8 * (std::fabs(q[0]) + std::fabs(q[1]) + std::fabs(q[2]) +
                              std::fabs(q[3]) + std::fabs(q[4]));
  for (int i = 0; i < n_turns; ++i) {
    if (std::fabs(Poly(q, 4, ts[4 + i])) <= flat) ts[n++] = ts[4 + i];
  }
  for (int i = 0; i < n; ++i) {
    // The quartic's roots are good to its rounding, not to the triangle's:
    // Newton's steps on (p(t) - k(t)) . e (k(t) the rim point nearest p(t),
    // half the distance's derivative) settle the pair square to the edge, as
    // the support along its direction needs (the triangle's deepest vertex
    // changes across it).
    double t = ts[i];
    Vec3 k, at;
    bool placed = false;
    for (int pass = 0; pass < 4; ++pass) {
      at = p0 + e * t;
      const double rho = std::sqrt(at.x * at.x + at.z * at.z);
      placed = rho > 0.0;
      if (!placed) break;
      const Vec3 u{at.x / rho, 0.0, at.z / rho};
      k = Vec3{d->r * u.x, rim, d->r * u.z};
      if (pass == 3) break;
      const double across = u.x * e.x + u.z * e.z;
      const double slope = s1 - d->r * (a - across * across) / rho;
      const double step = Dot(at - k, e) / slope;
      // Settled (the pair as it is), or flat or far (as it is too).
      if (!(std::fabs(step) > 1e-16 * std::max(1.0, std::fabs(t)) && std::fabs(step) < 1.0)) break;
      t -= step;
    }
    if (placed) d->ConsiderBoth(k - at);
  }
}

}  // namespace

bool CylinderTrianglePenetration(const Vec3 tri[3], const PlacedCylinder& cyl, double scale,
                                 TriangleConvexPenetration* out) {
  const Vec3 ab = tri[1] - tri[0], ac = tri[2] - tri[0], bc = tri[2] - tri[1];
  const Vec3 face = Cross(ab, ac);
  if (!WideFace(ab, ac, bc, face.LengthSq())) return false;
  Difference d;
  for (int i = 0; i < 3; ++i) d.p[i] = cyl.rotation.TransposeMul(tri[i] - cyl.center);
  d.r = cyl.radius;
  d.hh = cyl.half_height;
  const double tol = 1e-9 * scale, near_axis = 1e-6 * scale;
  // The cap and the face (their supports exact along their normals), the
  // side and each edge.
  d.Consider({0.0, 1.0, 0.0});
  d.Consider({0.0, -1.0, 0.0});
  const Vec3 normal = Cross(d.p[1] - d.p[0], d.p[2] - d.p[0]);
  d.Consider(normal);
  d.Consider(-normal);
  for (int i = 0; i < 3; ++i) {
    const Vec3 e = d.p[(i + 1) % 3] - d.p[i];
    d.Consider({e.z, 0.0, -e.x});
    d.Consider({-e.z, 0.0, e.x});
  }
  // The side and each vertex (towards the vertex from the axis), the rims
  // and each vertex (the rim point nearest it). Within near_axis of the
  // axis those directions are rounding: such a vertex decides below.
  double ill = std::numeric_limits<double>::infinity();  // least bound of what was not tried
  for (int i = 0; i < 3; ++i) {
    const Vec3& p = d.p[i];
    const double rho = std::sqrt(p.x * p.x + p.z * p.z);
    if (!(rho >= near_axis)) {
      ill = std::min(ill, std::fabs(d.r - rho));  // |x| on both patches is at least this
      continue;
    }
    const Vec3 u{p.x / rho, 0.0, p.z / rho};
    d.ConsiderBoth(u * (d.r - rho));
    for (const double rim : {-d.hh, d.hh}) d.ConsiderBoth(Vec3{d.r * u.x, rim, d.r * u.z} - p);
  }
  // Apart (or touching) along one of the directions so far: no contact.
  if (!(d.best.h > tol)) return false;
  // Whether the cores certainly overlap: the triangle's point nearest the
  // axis lies in the cylinder. The depth is then the least support of the
  // candidates x / |x| alone, which the rims and edges below narrow down.
  Vec3 on_axis, on_triangle_near;
  SegmentTriangleDistanceSq({0.0, -d.hh, 0.0}, {0.0, d.hh, 0.0}, d.p[0], d.p[1], d.p[2], &on_axis,
                            &on_triangle_near);
  const Vec3& q = on_triangle_near;
  bool overlapping = std::fabs(q.y) <= d.hh && q.x * q.x + q.z * q.z <= d.r * d.r;
  if (!overlapping) {
    // Or where the segment between the cylinder's deepest points on either
    // side of the triangle's plane crosses it, inside the triangle.
    const Vec3 lo = d.SupportPoint(-normal), hi = d.SupportPoint(normal);
    const double a = Dot(normal, lo - d.p[0]), b = Dot(normal, hi - d.p[0]);
    if (a < 0.0 && b > 0.0) {
      const Vec3 m = lo + (hi - lo) * (a / (a - b));
      overlapping = Dot(Cross(d.p[1] - d.p[0], m - d.p[0]), normal) >= 0.0 &&
                    Dot(Cross(d.p[2] - d.p[1], m - d.p[1]), normal) >= 0.0 &&
                    Dot(Cross(d.p[0] - d.p[2], m - d.p[2]), normal) >= 0.0;
    }
  }
  // The rims and each edge: when the cores overlap, only where the edge
  // runs inside the radius on the cap's inner side, and unless every point
  // of it there stays farther from the rim than the least support so far
  // (the height from the rim's plane and the distance from its circle
  // across, each at their least).
  for (int i = 0; i < 3; ++i) {
    const Vec3& p0 = d.p[i];
    const Vec3 e = d.p[(i + 1) % 3] - p0;
    const Vec3 p1 = p0 + e;
    // rho(t)^2 = a t^2 + 2 b t + c, the squared distance of p(t) from the axis.
    const double a = e.x * e.x + e.z * e.z, b = p0.x * e.x + p0.z * e.z;
    const double c = p0.x * p0.x + p0.z * p0.z;
    const double along = a > 0.0 ? std::clamp(-b / a, 0.0, 1.0) : 0.0;
    const Vec3 nearest = p0 + e * along;
    const double rho_min = std::sqrt(nearest.x * nearest.x + nearest.z * nearest.z);
    const double rho_max = std::sqrt(std::max(c, p1.x * p1.x + p1.z * p1.z));
    const double across = d.r < rho_min ? rho_min - d.r : d.r > rho_max ? d.r - rho_max : 0.0;
    // Where the edge runs within the cylinder's radius: with the cores
    // overlapping, a rim x edge pair's nearest point lies there (the rim
    // point is the cylinder's deepest along x / |x| only if p(t) is inside
    // the radius, and on the cap's inner side: see below), widened a little.
    double in_lo = 0.0, in_hi = 1.0;
    if (overlapping) {
      const double disc = b * b - a * (c - d.r * d.r);
      if (a > 0.0) {
        if (!(disc > 0.0)) continue;
        const double sq = std::sqrt(disc);
        in_lo = std::max(0.0, (-b - sq) / a - 1e-6);
        in_hi = std::min(1.0, (-b + sq) / a + 1e-6);
      } else if (!(c < d.r * d.r)) {
        continue;
      }
      if (!(in_lo <= in_hi)) continue;
    }
    for (const double rim : {-d.hh, d.hh}) {
      double lo = in_lo, hi = in_hi;
      if (overlapping) {
        // On the cap's inner side: (rim - p(t).y) has the rim's sign.
        const double h0 = rim - p0.y, dh = -e.y;
        const double side = rim > 0.0 ? 1.0 : -1.0;
        if (dh != 0.0) {
          const double cross = -h0 / dh;
          if (side * dh > 0.0) {
            lo = std::max(lo, cross - 1e-6);
          } else {
            hi = std::min(hi, cross + 1e-6);
          }
        } else if (!(side * h0 > 0.0)) {
          continue;
        }
        if (!(lo <= hi)) continue;
        const double h_lo = p0.y + e.y * lo - rim, h_hi = p0.y + e.y * hi - rim;
        const double height = h_lo * h_hi <= 0.0 ? 0.0 : std::min(std::fabs(h_lo), std::fabs(h_hi));
        const double reach = d.best.h - tol;
        if (reach > 0.0 && height * height + across * across >= reach * reach) continue;
      }
      if (!(rho_min >= near_axis)) {
        ill = std::min(ill, across);
        continue;
      }
      RimEdgeCandidates(&d, i, rim, a, b, c, lo, hi);
    }
  }
  const Candidate& best = d.best;
  if (!(best.h > tol) || ill < best.h - tol) return false;
  // The deepest points: the features of each shape farthest along n (of
  // the triangle along -n), within tol; a witness pair of them lies depth
  // apart along n. Unique but for flat contacts (a cap or the side against
  // an edge or the face, the side along an edge): EPA's then.
  const Vec3 n = best.n;
  double along[3];
  for (int i = 0; i < 3; ++i) along[i] = Dot(n, d.p[i]);
  const int k = along[0] <= along[1] && along[0] <= along[2] ? 0 : along[1] <= along[2] ? 1 : 2;
  int deepest = 0, other = k;
  for (int i = 0; i < 3; ++i) {
    if (along[i] <= along[k] + tol) {
      ++deepest;
      if (i != k) other = i;
    }
  }
  const double horizontal = std::sqrt(n.x * n.x + n.z * n.z);
  const Vec3 u = horizontal > 0.0 ? Vec3{n.x / horizontal, 0.0, n.z / horizontal} : Vec3{};
  Vec3 on_cylinder, on_triangle;
  if (2.0 * d.r * horizontal <= tol) {
    // A cap: the triangle's one deepest vertex.
    if (deepest != 1) return false;
    on_triangle = d.p[k];
    on_cylinder = on_triangle + n * best.h;
  } else if (2.0 * d.hh * std::fabs(n.y) <= tol) {
    // The side's line at u: against a vertex, or the crossing with an edge.
    if (deepest == 1) {
      on_triangle = d.p[k];
      on_cylinder = on_triangle + n * best.h;
    } else if (deepest == 2) {
      const Vec3 e = d.p[other] - d.p[k];
      if (!(e.x * e.x + e.z * e.z > 1e-18 * e.LengthSq())) return false;  // along the side
      const internal::ClosestPair cp = internal::ClosestSegmentSegment(
          Vec3{d.r * u.x, -d.hh, d.r * u.z}, Vec3{d.r * u.x, d.hh, d.r * u.z}, d.p[k], d.p[other]);
      on_cylinder = cp.p;
      on_triangle = cp.q;
    } else {
      return false;
    }
  } else {
    // A rim point.
    on_cylinder = d.SupportPoint(n);
    on_triangle = on_cylinder - n * best.h;
  }
  // Where the direction is ill-conditioned for the points (nearly the
  // axis's, an edge nearly flat against a cap, so the rim point drifts
  // along it), they may not meet the depth: EPA's then.
  Vec3 on_plane;
  const double off_cylinder =
      std::max(std::sqrt(on_cylinder.x * on_cylinder.x + on_cylinder.z * on_cylinder.z) - d.r,
               std::fabs(on_cylinder.y) - d.hh);
  if (!(off_cylinder <= tol) ||
      !(PointTriangleDistanceSq(on_triangle, d.p[0], d.p[1], d.p[2], &on_plane) <= tol * tol) ||
      !((on_cylinder - on_triangle - n * best.h).LengthSq() <= tol * tol)) {
    return false;
  }
  *out = TriangleConvexPenetration{};
  out->valid = true;
  out->depth = best.h;
  out->normal = -(cyl.rotation * n);
  out->point_on_convex = cyl.center + cyl.rotation * on_cylinder;
  out->point_on_triangle = cyl.center + cyl.rotation * on_triangle;
  return true;
}

}  // namespace hitbox
