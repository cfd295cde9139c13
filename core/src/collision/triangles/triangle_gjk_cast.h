// First contact of a translating convex with a triangle: the GJK ray cast
// (van den Bergen 2004), conservative advancement (Mirtich 1996) as its
// fallback, and the active-edge rule for the contact normal.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "collision/triangles/triangle_gjk.h"
#include "hitbox/collision/collide.h"
#include "hitbox/math/math.h"

namespace hitbox {

namespace triangle_convex_detail {

/// Whether the triangle's point of weights `l` lies on an edge whose flag is
/// set in `active` (edge e runs from vertex e to e + 1 and holds the point
/// when the opposite weight is 0; a vertex lies on its two edges).
inline bool OnActiveEdge(const double l[3], uint8_t active) {
  for (int e = 0; e < 3; ++e) {
    if (l[(e + 2) % 3] <= 0.0 && ((active >> e) & 1u)) return true;
  }
  return false;
}

/// The normal the cast (SweepConvexTriangle) reports for a contact at the
/// triangle's point of weights `l` with direction `nrm` (unit, triangle
/// towards the convex), for triangle unit normal `face`, active-edge flags
/// `active` and motion `v`: the face normal inside the face; on an inactive
/// edge or vertex the face normal too (Jolt's active edges) when it does not
/// point along the motion; never a normal along the motion.
inline Vec3 CastNormal(const Vec3& face, Vec3 nrm, const double l[3], uint8_t active,
                       const Vec3& v) {
  const bool on_face = l[0] > 0.0 && l[1] > 0.0 && l[2] > 0.0;
  if (on_face) {
    // Closest point inside the face: the direction is the face normal
    // exactly (GJK's |v| of ~1e-9 carries only its rounding).
    nrm = face * (Dot(face, nrm) >= 0.0 ? 1.0 : -1.0);
  } else if (!OnActiveEdge(l, active)) {
    // An inactive edge or vertex: the face normal, unless along the motion.
    const Vec3 fn = face * (Dot(face, nrm) >= 0.0 ? 1.0 : -1.0);
    if (Dot(fn, v) <= 0.0) nrm = fn;
  }
  // A direction from a simplex stalled within kSweepStallGap may be off;
  // never report one along the motion: the face normal facing it instead.
  if (Dot(nrm, v) > 0.0) nrm = face * (Dot(face, v) > 0.0 ? -1.0 : 1.0);
  return nrm;
}

/// Conservative advancement (the fallback of SweepConvexTriangle): from
/// `t_start` (a fraction the convex is known not to have reached the
/// triangle before), a full GJK at each step and t += distance / closing
/// speed (Mirtich 1996), stopped within kSweepGap of contact. Given up (no
/// advance possible, or out of iterations): kFailed at t, with the closest
/// point on the triangle of a GJK at t.
template <typename CoreSupport>
CastResult AdvanceConvexTriangle(const Vec3 tri[3], const CoreSupport& core_support, double margin,
                                 const Vec3& v, double t_start, double t_max, double scale,
                                 uint8_t active, const Vec3& face) {
  CastResult out;
  double t = t_start;
  int i = 0;
  for (; i < kTriangleSweepMaxIterations; ++i) {
    const Vec3 shift = v * t;
    auto moved = [&](const Vec3& d) { return core_support(d) + shift; };
    const TriangleConvexDistance g = TriangleConvexGjk(tri, moved, margin, scale);
    // Contact: within the gap; or GJK stalled (rounding) with its lower bound
    // already within the gap and its upper bound within kSweepStallGap, where
    // no further advance is possible.
    if (g.distance <= kSweepGap ||
        (g.distance_lower <= 0.5 * kSweepGap && g.distance <= kSweepStallGap)) {
      out.state = t == 0.0 ? CastState::kStartedOverlapping : CastState::kHit;
      out.fraction = t;
      out.point = g.point_on_triangle;
      Vec3 n = g.cores_overlap ? face * (Dot(face, v) > 0.0 ? -1.0 : 1.0) : g.normal;
      // Inactive edge or vertex: the face normal (Jolt's active edges).
      const bool on_face = g.bary[0] > 0.0 && g.bary[1] > 0.0 && g.bary[2] > 0.0;
      if (on_face && !g.cores_overlap) {
        // Closest point inside the face: the direction is the face normal
        // exactly (GJK's |v| of ~1e-9 carries only its rounding).
        n = face * (Dot(face, n) >= 0.0 ? 1.0 : -1.0);
      } else if (!g.cores_overlap) {
        bool use_face = true;
        for (int e = 0; e < 3; ++e) {
          // Edge e (vertex e to e+1) holds the point when the opposite weight is 0.
          if (g.bary[(e + 2) % 3] <= 0.0 && ((active >> e) & 1u)) use_face = false;
        }
        if (use_face) {
          const Vec3 fn = face * (Dot(face, n) >= 0.0 ? 1.0 : -1.0);
          if (Dot(fn, v) <= 0.0) n = fn;
        }
      }
      out.normal = n;
      return out;
    }
    // Given up below (a break): this GJK at t gives the contact point.
    out.point = g.point_on_triangle;
    if (g.cores_overlap) break;  // cannot happen with distance > gap
    const double closing = -Dot(v, g.lower_axis);
    // The plane at the lower bound separates: never crossed when not closing.
    if (closing <= 0.0 && g.distance_lower > 0.0) return CastResult{};
    if (closing <= 0.0) break;
    const double dt = (g.distance_lower - 0.5 * kSweepGap) / closing;
    // No advance possible: the next step would repeat this one exactly
    // (the same GJK at the same t) until the cap, with the same answer.
    if (!(dt > 0.0)) break;
    t += dt;
    if (t > t_max) return CastResult{};
  }
  if (i == kTriangleSweepMaxIterations) {
    // Out of iterations after an advance (t <= t_max): the point of a GJK
    // at t, where the convex is reported (a rare path: one more GJK).
    const Vec3 shift = v * t;
    auto moved = [&](const Vec3& d) { return core_support(d) + shift; };
    out.point = TriangleConvexGjk(tri, moved, margin, scale).point_on_triangle;
  }
  // Capped: report the lower bound as the contact.
  out.state = CastState::kFailed;
  out.fraction = std::min(t, t_max);
  out.normal = face * (Dot(face, v) > 0.0 ? -1.0 : 1.0);
  return out;
}

}  // namespace triangle_convex_detail

/// The cast alone (SweepConvexTriangle's default shortcut).
struct NoCastShortcut {};

/// First contact of the convex (core_support, grown by `margin`) moving by
/// `v` for t in [0, t_max] with triangle `tri`; `active`: active-edge flags
/// (an inactive edge or vertex reports the face normal); `shortcut`, tried
/// once the cast has advanced, may prove a closed-form answer. GJK ray cast
/// (van den Bergen 2004; Jolt's GJKClosestPoint::CastShape): one simplex of
/// core - triangle kept across conservative advances, a hit once GJK
/// converged within kSweepGap of the margin; the simplex projects the origin
/// on any triangle but a sliver (kProjectionUnlessSliver) for stable bounds.
template <typename CoreSupport, typename Shortcut = NoCastShortcut>
CastResult SweepConvexTriangle(const Vec3 tri[3], const CoreSupport& core_support, double margin,
                               const Vec3& v_in, double t_max, double scale, uint8_t active,
                               const Shortcut& shortcut = {}) {
  using triangle_convex_detail::SimplexPoint;
  // The motion as a local: read through the reference, it would be reloaded
  // after every out-of-line call of the loop (the simplex solver, a support).
  const Vec3 v = v_in;
  CastResult out;
  const Vec3 face = Cross(tri[1] - tri[0], tri[2] - tri[0]).Normalized();
  // The triangle's plane first (two support calls): the convex must reach
  // the plane to touch the triangle, so wholly on one side and not reaching
  // it within t_max is a miss. The lower of the two support points starts
  // the simplex.
  SimplexPoint first;
  first.l[0] = 1.0;
  first.l[1] = first.l[2] = 0.0;
  // Wholly on one side, the cast starts where the convex comes within half
  // the gap of the plane (the advance its first support plane would give).
  double t_plane = 0.0;
  {
    const double d = Dot(face, tri[0]);
    // Height of the convex's lowest point above the plane, and depth of its
    // highest point below it (one of them positive when wholly on one side;
    // the highest point is not needed above the plane).
    const Vec3 low = core_support(-face);
    const double lowest_above = Dot(face, low) - margin - d;
    const bool above = lowest_above > kSweepGap;
    const Vec3 high = above ? low : core_support(face);
    const double highest_below = above ? 0.0 : d - Dot(face, high) - margin;
    const double dv = Dot(face, v);
    const double side = above ? lowest_above : highest_below;
    const double closing = above ? -dv : dv;
    if (side > kSweepGap) {
      if (!(closing > 0.0)) return out;
      t_plane = (side - 0.5 * kSweepGap) / closing;
      if (t_plane > t_max) return out;
    }
    first.p = above || !(highest_below > kSweepGap) ? low : high;
    first.w = first.p + v * t_plane - tri[0];
  }
  const Vec3 tri0 = tri[0], tri1 = tri[1], tri2 = tri[2];  // (see v above)
  auto tri_support = [&](const Vec3& d, double l[3]) {
    const double x0 = Dot(tri0, d), x1 = Dot(tri1, d), x2 = Dot(tri2, d);
    const int i = (x0 >= x1 && x0 >= x2) ? 0 : (x1 >= x2 ? 1 : 2);
    l[0] = l[1] = l[2] = 0.0;
    l[i] = 1.0;
    return i == 0 ? tri0 : (i == 1 ? tri1 : tri2);
  };
  auto tri_point = [&](const double l[3]) {
    return tri0 * l[0] + tri1 * l[1] + tri2 * l[2];
  };
  // Simplex points w = core point + v t - triangle point (relative to the
  // moving point); p: the core point at t = 0, l: triangle weights.
  SimplexPoint s[4];
  s[0] = first;
  int n = 1;
  double lam[4] = {1, 0, 0, 0};
  Vec3 dir = s[0].w;  // closest point of the simplex to the origin
  double t = t_plane;
  const double eps_abs = 1e-13 * scale;
  double prev_vv = std::numeric_limits<double>::infinity();
  bool overlap = false;
  bool contact = false;
  bool restarted = false;
  SimplexPoint last = s[0];  // the latest support point
  auto restart = [&] {
    restarted = true;
    s[0] = last;
    n = 1;
    lam[0] = 1.0;
    dir = s[0].w;
    prev_vv = std::numeric_limits<double>::infinity();
  };
  // Stalled in rounding after a restart, with no support plane beyond
  // half the gap (the caller's condition): contact when the distance is
  // within kSweepStallGap (the normal is then checked against the motion).
  double vlen = 0.0;
  auto stalled = [&] { return vlen - margin <= kSweepStallGap; };
  bool tried = false;  // the shortcut, once
  for (int it = 0; it < 2 * kTriangleSweepMaxIterations; ++it) {
    if constexpr (!std::is_same_v<Shortcut, NoCastShortcut>) {
      // Once the cast has advanced (apart at t = 0, closing): a pair it has
      // not advanced mostly starts inside or touching, which the shortcut
      // does not answer.
      if (!tried && t > 0.0) {
        tried = true;
        CastResult closed;
        if (shortcut(face, &closed)) return closed;
      }
    }
    const double vv = dir.LengthSq();
    if (vv <= eps_abs * eps_abs) {
      overlap = true;
      break;
    }
    vlen = std::sqrt(vv);
    SimplexPoint p;
    p.p = core_support(-dir);
    p.w = p.p + v * t - tri_support(dir, p.l);
    const double vw = Dot(dir, p.w);
    const double lower = vw / vlen;
    // The same core point and triangle vertex as a simplex point: nothing new.
    bool dup = false;
    for (int i = 0; i < n; ++i) {
      dup = dup || (s[i].p == p.p && s[i].l[0] == p.l[0] && s[i].l[1] == p.l[1]);
    }
    // The support plane separates by more than the margin: advance to it,
    // unless the step is below t's rounding (converged onto the plane: the
    // same step again would loop to the cap) or its distance below the
    // convergence test's tolerance (|v|^2 - v.w <= 1e-12 |v|^2 + eps^2, over
    // |v|): such a step only restarts the descent, ~1e-15 m at a time.
    bool advance = lower - margin > 0.5 * kSweepGap;
    double dt = 0.0;
    if (advance) {
      const double closing = -Dot(v, dir) / vlen;
      if (!(closing > 0.0)) return out;
      const double step = lower - margin - 0.5 * kSweepGap;
      dt = step / closing;
      advance = t + dt != t && step * vlen > 1e-12 * vv + eps_abs * eps_abs;
    }
    if (advance) {
      t += dt;
      if (t > t_max) return out;
      // Simplex points recomputed at the new t (not shifted: no drift).
      const Vec3 at = v * t;
      for (int i = 0; i < n; ++i) s[i].w = s[i].p + at - tri_point(s[i].l);
      p.w = p.p + at - tri_point(p.l);
      prev_vv = std::numeric_limits<double>::infinity();
      restarted = false;
    } else {
      if (vv - vw <= 1e-12 * vv + eps_abs * eps_abs) {
        // Converged at t without a separating plane beyond the gap: contact
        // when the distance is within kSweepStallGap (rounding keeps some
        // pairs a little above kSweepGap); otherwise the fallback below.
        contact = vlen - margin <= kSweepStallGap;
        break;
      }
      if (dup) {
        // The support point is already in the simplex (converged up to
        // rounding): contact within kSweepGap, else one restart below.
        if (vlen - margin <= kSweepGap) {
          contact = true;
          break;
        }
        if (restarted) {
          contact = stalled();
          break;
        }
        restart();
        continue;
      }
    }
    last = p;
    // The new point goes after the simplex of `dir`, which stands (s[0..n),
    // lam) unless the step makes progress: a step without progress after a
    // restart ends the cast at `dir`, whose triangle point is the contact
    // point (not that of the step's rejected simplex, up to the convex's
    // size away).
    if (!dup) s[n] = p;
    const internal::SimplexClosest r =
        triangle_convex_detail::CastClosest(s, dup ? n : n + 1);
    if (r.inside) {
      overlap = true;  // the tetrahedron holds the moving point
      n = 4;
      for (int k = 0; k < 4; ++k) lam[k] = r.weight[k];
      break;
    }
    if (r.vv >= prev_vv) {
      // No progress (rounding, typically a flat simplex near a face-face
      // contact): GJK again from the latest support point, once per advance
      // (as Jolt's CastShape), then the fallback below; within kSweepGap
      // already, contact (as for a repeated support point above).
      if (restarted || vlen - margin <= kSweepGap) {
        contact = stalled();
        break;
      }
      restart();
      continue;
    }
    triangle_convex_detail::Keep(r, s, &n, lam);
    prev_vv = r.vv;
    dir = r.v;
  }
  if ((!contact && !overlap) || (overlap && t > 0.0)) {
    // Stalled in rounding farther than kSweepStallGap (a flat simplex near a
    // face-face contact), capped, or a tetrahedron holding the moving point
    // after an advance (which kept it apart, so also rounding): conservative
    // advancement from t, a proven lower bound, decides.
    return triangle_convex_detail::AdvanceConvexTriangle(tri, core_support, margin, v, t, t_max,
                                                         scale, active, face);
  }
  out.state = t == 0.0 ? CastState::kStartedOverlapping : CastState::kHit;
  out.fraction = t;
  double l[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) l[k] += s[i].l[k] * lam[i];
  }
  out.point = tri[0] * l[0] + tri[1] * l[1] + tri[2] * l[2];
  if (overlap) {
    out.normal = face * (Dot(face, v) > 0.0 ? -1.0 : 1.0);
    return out;
  }
  out.normal = triangle_convex_detail::CastNormal(face, dir.Normalized(), l, active, v);
  return out;
}

}  // namespace hitbox
