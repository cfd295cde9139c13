// First contact of a translating sphere or capsule with a triangle in closed
// form (no iteration), shared by meshes and heightfields.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "geometry/closest_points.h"
#include "geometry/ray_primitives.h"
#include "geometry/triangle.h"
#include "geometry/triangle_queries.h"
#include "hitbox/collision/collide.h"
#include "hitbox/math/math.h"

namespace hitbox {

/// The times [*t0, *t1] of [0, t_max] when heights [c_lo, c_hi] moving by
/// dn t come within rr of heights [lo, hi] (the whole of it when dn is 0;
/// empty, t0 > t1, when they never do while moving).
[[gnu::always_inline]] inline void HeightsWithin(double c_lo, double c_hi, double dn, double lo,
                                                 double hi, double rr, double t_max, double* t0,
                                                 double* t1) {
  *t0 = 0.0;
  *t1 = t_max;
  if (dn > 0.0) {
    *t0 = std::max(*t0, (lo - rr - c_hi) / dn);
    *t1 = std::min(*t1, (hi + rr - c_lo) / dn);
  } else if (dn < 0.0) {
    *t0 = std::max(*t0, (hi + rr - c_lo) / dn);
    *t1 = std::min(*t1, (lo - rr - c_hi) / dn);
  }
}

/// The box a rounded segment (core [p0, p1] at heights h0, h1 above the plane
/// of triangle abc through a, unit normal n, as TriangleNormal; a ball when
/// p0 == p1; radius r) sweeps moving by v for t in [0, t_max] while its core
/// is within r of that plane (the vertices' own heights, rounding off the
/// plane included), grown by r plus a margin far above the closed forms'
/// rounding and grazes (1e-9 of the coordinates, travel and r). Every piece
/// of the triangle's Minkowski sum with the rounded segment lies within r of
/// the plane, so a feature (the triangle, an edge, a vertex) whose box is
/// apart from this one cannot be touched: a cheap miss before the closed
/// forms, not a changed answer. False (empty) when the core never comes
/// within r of the plane.
[[gnu::always_inline]] inline bool SweptCoreBox(const Vec3& p0, const Vec3& p1, double h0,
                                                double h1, double r, const Vec3& v,
                                                double t_max, const Vec3& a, const Vec3& b,
                                                const Vec3& cc, const Vec3& n,
                                                const Aabb& triangle_box, Aabb* box) {
  const double coords =
      std::max(triangle_box.min.Abs().MaxComponent(), triangle_box.max.Abs().MaxComponent()) +
      std::max(p0.Abs().MaxComponent(), p1.Abs().MaxComponent()) +
      v.Abs().MaxComponent() * t_max;
  const double rr = r + 1e-9 * (r + coords);
  // The triangle's heights [lo, hi] (a's is 0), the core's [c_lo, c_hi] + dn t.
  const double hb = Dot(b - a, n), hc = Dot(cc - a, n);
  const double lo = std::min(0.0, std::min(hb, hc)), hi = std::max(0.0, std::max(hb, hc));
  const double c_lo = std::min(h0, h1), c_hi = std::max(h0, h1);
  const double dn = Dot(v, n);
  double t0, t1;
  HeightsWithin(c_lo, c_hi, dn, lo, hi, rr, t_max, &t0, &t1);
  if (dn == 0.0 && (c_lo > hi + rr || c_hi < lo - rr)) return false;
  if (t0 > t1) return false;
  const Vec3 s0 = v * t0, s1 = v * t1;
  const Vec3 core_lo = Min(p0, p1), core_hi = Max(p0, p1);
  const Vec3 grow = Vec3::Splat(rr);
  *box = Aabb(Min(core_lo + s0, core_lo + s1) - grow, Max(core_hi + s0, core_hi + s1) + grow);
  return true;
}

/// Where a ball (centre `c` at signed height `h` = Dot(c - a, n) over a
/// triangle's plane, unit normal `n`, radius r) moving by v first reaches the
/// plane offset by r on its side.
struct BallPlaneEntry {
  double t = 0.0;
  /// +1 when the ball is on the side n points to (h >= 0), else -1.
  double side = 1.0;
  /// The ball's point on the plane at t.
  Vec3 point;
};
/// False when the ball moves away from (or along) the plane or reaches it
/// after t_max; t = 0 when it starts within r of it (touching, when the
/// distance test rounded the other way).
inline bool BallReachesPlane(const Vec3& c, double h, double r, const Vec3& v, const Vec3& n,
                             double t_max, BallPlaneEntry* e) {
  e->side = h >= 0.0 ? 1.0 : -1.0;
  const double closing = -Dot(v, n) * e->side;  // > 0 when moving towards the plane
  if (!(closing > 0.0)) return false;
  e->t = std::max(0.0, (std::fabs(h) - r) / closing);
  if (!(e->t <= t_max)) return false;
  e->point = c + v * e->t - n * (e->side * r);
  return true;
}

/// Whether a ball's centre c moving by v for t in [0, t_max] stays farther
/// than rr from the line through edge pq of a triangle (unit normal n), given
/// `over`, how far the path's heights stay beyond the triangle's (0 when they
/// meet): on the axis m = Cross(q - p, n), square to the edge and to n, the
/// path spans c's projection widened by the motion and the line one value,
/// so every point of the path is at least sqrt(over^2 + (gap / |m|)^2) from
/// the line. Then the edge's capsule (radius r, rr a margin far above
/// RaySegmentCapsule's rounding and grazes) is passed by: a cheap miss. The
/// box test misses it for an edge across the box, such as the edge of a
/// floor cell beside a character's foot that comes down too little.
[[gnu::always_inline]] inline bool PathBeyondEdgeLine(const Vec3& c, const Vec3& v, double t_max,
                                                      const Vec3& p, const Vec3& q, const Vec3& n,
                                                      double rr, double over) {
  const Vec3 m = Cross(q - p, n);
  const double d0 = Dot(c - p, m), dv = Dot(v, m) * t_max;
  const double gap = std::max(d0 + std::min(0.0, dv), -(d0 + std::max(0.0, dv)));
  return gap > 0.0 && gap * gap > (rr * rr - over * over) * m.LengthSq();
}

/// How far heights [c_lo, c_hi] moving by dn (for the whole motion) stay
/// beyond heights [lo, hi]: 0 when the two ranges meet.
inline double HeightsApart(double c_lo, double c_hi, double dn, double lo, double hi) {
  return std::max(0.0, std::max(c_lo + std::min(0.0, dn) - hi, lo - (c_hi + std::max(0.0, dn))));
}

/// Whether the rounded segment [p0, p1] (radius r) moving by v for t in
/// [0, t_max] stays farther than r from triangle abc along an axis square to
/// the motion and the segment, or to the motion and an edge: the swept core
/// and the triangle span their corners' projections there, and a gap
/// between the two of more than r plus a margin far above the closed forms'
/// rounding (as SweptCoreBox's) means no contact. A cheap miss for a
/// capsule passing beside a triangle's corner or edge, which the plane and
/// in-plane edge axes (ClearOfPlane, SegmentBeyondAnEdge) do not separate.
[[gnu::always_inline]] inline bool PathBesideTriangle(const Vec3& p0, const Vec3& p1, double r,
                                                      const Vec3& v, double t_max, const Vec3& a,
                                                      const Vec3& b, const Vec3& cc) {
  const Vec3 travel = v * t_max, d = p1 - p0;
  const Vec3 ra = a - p0, rb = b - p0, rc = cc - p0;  // relative to p0: the core's corner at 0
  const double coords =
      std::max(std::max(a.Abs().MaxComponent(), b.Abs().MaxComponent()), cc.Abs().MaxComponent()) +
      std::max(p0.Abs().MaxComponent(), p1.Abs().MaxComponent()) + travel.Abs().MaxComponent();
  const double rr = r + 1e-9 * (r + coords);
  const Vec3 axes[4] = {Cross(travel, d), Cross(travel, rb - ra), Cross(travel, rc - rb),
                        Cross(travel, ra - rc)};
  for (const Vec3& m : axes) {
    // The core's corners 0, d, travel and d + travel (travel's is 0 but for
    // the cross product's rounding), the triangle's vertices.
    const double sd = Dot(d, m), sv = Dot(travel, m);
    const double lo = std::min(0.0, sd) + std::min(0.0, sv);
    const double hi = std::max(0.0, sd) + std::max(0.0, sv);
    const double ta = Dot(ra, m), tb = Dot(rb, m), tc = Dot(rc, m);
    const double gap =
        std::max(lo - std::max(ta, std::max(tb, tc)), std::min(ta, std::min(tb, tc)) - hi);
    if (gap > 0.0 && gap * gap > rr * rr * m.LengthSq()) return true;
  }
  return false;
}

/// Where a ball's centre reaches the plane offset by r and the triangle's
/// feature nearest that point (BallReachesPlane, then ClosestPointOnTriangle),
/// worked out once for a capsule's end ball and handed to its sphere sweep.
struct BallFaceProbe {
  bool reaches = false;  ///< BallReachesPlane with the capsule's t_max
  BallPlaneEntry at_plane;
  TriangleFeature feature = TriangleFeature::kFace;
  Vec3 on;  ///< the triangle's point nearest at_plane.point
};

/// The face probe of a ball (centre c at height h, radius r) moving by v,
/// t in [0, t_max].
inline BallFaceProbe ProbeBallFace(const Vec3& c, double h, double r, const Vec3& v, const Vec3& n,
                                   double t_max, const Vec3& a, const Vec3& b, const Vec3& cc) {
  BallFaceProbe probe;
  probe.reaches = BallReachesPlane(c, h, r, v, n, t_max, &probe.at_plane);
  if (probe.reaches) {
    probe.on = ClosestPointOnTriangle(probe.at_plane.point, a, b, cc, &probe.feature);
  }
  return probe;
}

/// SweepSphereTriangleAt past the start: `probe` (ProbeBallFace's with a
/// t_max at least this one) saves the face's work; `ends_apart` says the ball
/// is known to start beyond r of the triangle (by the identical distance
/// test), which is then skipped.
inline CastResult SweepSphereTriangleProbed(const Vec3& c, double h, double r, const Vec3& v,
                                            double t_max, const Vec3& a, const Vec3& b,
                                            const Vec3& cc, const Vec3& n, uint8_t active,
                                            const BallFaceProbe* probe, bool ends_apart) {
  CastResult out;
  if (ClearOfPlane(h, h, r, v, n, t_max)) return out;
  // Most triangles near the path are passed by: their box, or their edges',
  // apart from where the ball can meet them.
  const Aabb tri_box(Min(a, Min(b, cc)), Max(a, Max(b, cc)));
  Aabb reach;
  if (!SweptCoreBox(c, c, h, h, r, v, t_max, a, b, cc, n, tri_box, &reach) ||
      BoxesApart(reach, tri_box)) {
    return out;
  }
  // A centre beyond r of the plane (by far more than the rounding of both
  // distances, which grows with the coordinates) is beyond r of the
  // triangle: the distance test, the costliest piece, is skipped.
  const double coords = std::max(c.Abs().MaxComponent(), std::max(tri_box.min.Abs().MaxComponent(),
                                                                   tri_box.max.Abs().MaxComponent()));
  const bool off_plane = ends_apart || std::fabs(h) - r > 1e-9 * (r + std::fabs(h) + coords);
  Vec3 q;
  const double d2 = off_plane ? 2.0 * r * r + 1.0 : PointTriangleDistanceSq(c, a, b, cc, &q);
  if (d2 <= r * r) {
    out.state = CastState::kStartedOverlapping;
    out.fraction = 0.0;
    const double side = Dot(c - a, n) >= 0.0 ? 1.0 : -1.0;
    out.normal = d2 > 0.0 ? (c - q).Normalized() : n * side;
    out.point = q;
    return out;
  }
  double best = t_max;
  bool found = false;
  // Face: the sphere's centre reaches the plane offset by r on its side.
  // (The probe's entry time is the same whatever the t_max: within this one
  // exactly when BallReachesPlane with it would say so.)
  BallFaceProbe own;
  if (probe == nullptr) {
    own = ProbeBallFace(c, h, r, v, n, best, a, b, cc);
    probe = &own;
  }
  if (probe->reaches && probe->at_plane.t <= best) {
    const BallPlaneEntry& at_plane = probe->at_plane;
    const TriangleFeature f = probe->feature;
    const Vec3& on = probe->on;
    if (f == TriangleFeature::kFace) {
      // Inside the face: every other piece of the triangle's Minkowski sum
      // with the ball (the edge capsules) lies within r of the plane, so
      // none is entered before the plane is reached; and the face's normal
      // needs no active-edge check.
      out.state = CastState::kHit;
      out.fraction = at_plane.t;
      out.normal = n * at_plane.side;
      out.point = at_plane.point;
      return out;
    }
    if ((on - at_plane.point).LengthSq() <= 1e-24 * (1.0 + at_plane.point.LengthSq())) {
      best = at_plane.t;
      found = true;
      out.normal = n * at_plane.side;
      out.point = at_plane.point;
    }
  }
  const Vec3 vs[3] = {a, b, cc};
  const double rr = r + 1e-9 * (r + coords + v.Abs().MaxComponent() * t_max);
  const double hb = Dot(b - a, n), hc = Dot(cc - a, n);
  const double over = HeightsApart(h, h, Dot(v, n) * t_max, std::min(0.0, std::min(hb, hc)),
                                   std::max(0.0, std::max(hb, hc)));
  for (int i = 0; i < 3; ++i) {
    const Vec3& p = vs[i];
    const Vec3& q_end = vs[(i + 1) % 3];
    if (BoxesApart(reach, Aabb(Min(p, q_end), Max(p, q_end)))) continue;
    if (PathBeyondEdgeLine(c, v, best, p, q_end, n, rr, over)) continue;
    internal::RayEntry e;
    if (internal::RaySegmentCapsule(c, v, p, q_end, r, &e) ==
            internal::RayOutcome::kHit &&
        e.t < best) {
      best = e.t;
      found = true;
      out.normal = e.normal;
      out.point = c + v * e.t - e.normal * r;
    }
  }
  if (!found) return out;
  out.state = CastState::kHit;
  out.fraction = best;
  // Inactive edge or vertex: report the face normal (Jolt's active edges).
  TriangleFeature f;
  int idx = 0;
  const Vec3 centre_at = c + v * best;
  ClosestPointOnTriangle(centre_at, a, b, cc, &f, &idx);
  bool use_face = false;
  if (f == TriangleFeature::kEdge) {
    use_face = ((active >> idx) & 1u) == 0;
  } else if (f == TriangleFeature::kVertex) {
    use_face = ((active >> idx) & 1u) == 0 && ((active >> ((idx + 2) % 3)) & 1u) == 0;
  }
  if (use_face) {
    const Vec3 face = n * (Dot(centre_at - a, n) >= 0.0 ? 1.0 : -1.0);
    if (Dot(face, v) <= 0.0) out.normal = face;
  }
  return out;
}

/// SweepSphereTriangle given the triangle's unit normal n (TriangleNormal)
/// and the centre's height h = Dot(c - a, n): SweepCapsuleTriangle's end
/// balls share its own.
inline CastResult SweepSphereTriangleAt(const Vec3& c, double h, double r, const Vec3& v,
                                        double t_max, const Vec3& a, const Vec3& b, const Vec3& cc,
                                        const Vec3& n, uint8_t active) {
  return SweepSphereTriangleProbed(c, h, r, v, t_max, a, b, cc, n, active, nullptr, false);
}

/// First contact of a sphere (centre c, radius r) moving by v, t in [0, t_max],
/// with triangle abc. `active`: the triangle's active-edge flags (bit i = edge
/// from vertex i to vertex i+1); a contact on an inactive edge, or on a vertex
/// whose two edges in this triangle are inactive, reports the face normal.
/// Face: the plane offset by r; edges and vertices: capsules around the edges
/// (RaySegmentCapsule, Ericson RTCD 5.3.7) — together the Minkowski sum of the
/// triangle and the ball.
inline CastResult SweepSphereTriangle(const Vec3& c, double r, const Vec3& v, double t_max,
                                      const Vec3& a, const Vec3& b, const Vec3& cc,
                                      uint8_t active) {
  const Vec3 n = TriangleNormal(a, b, cc);
  return SweepSphereTriangleAt(c, Dot(c - a, n), r, v, t_max, a, b, cc, n, active);
}

/// Whether the rounded segment [p0, p1] (heights h0, h1 over the plane of
/// triangle abc through a, unit normal n; radius r) moving by v for t in
/// [0, t_max] stays farther than r from the triangle beyond one of its
/// edges: on the axis m = Cross(edge, n) the triangle spans its vertices'
/// projections and the swept core the ends' projections widened by the
/// motion; with a gap between the two, every point of the swept core is at
/// least sqrt(over^2 + (gap / |m|)^2) from every point of the triangle, over
/// how far the core's heights stay beyond the triangle's (m is square to n).
/// More than r plus a margin far above the closed forms' rounding (as
/// SweptCoreBox's) means no contact: a cheap miss for the triangles a capsule
/// passes beside or above (a floor cell beside a character's foot), not a
/// changed answer.
[[gnu::always_inline]] inline bool SegmentBeyondAnEdge(const Vec3& p0, const Vec3& p1, double h0,
                                                       double h1, double r, const Vec3& v,
                                                       double t_max, const Vec3& a, const Vec3& b,
                                                       const Vec3& cc, const Vec3& n) {
  const double coords =
      std::max(std::max(a.Abs().MaxComponent(), b.Abs().MaxComponent()),
               cc.Abs().MaxComponent()) +
      std::max(p0.Abs().MaxComponent(), p1.Abs().MaxComponent()) +
      v.Abs().MaxComponent() * t_max;
  const double rr = r + 1e-9 * (r + coords);
  const double hb = Dot(b - a, n), hc = Dot(cc - a, n);
  const double tri_lo = std::min(0.0, std::min(hb, hc)), tri_hi = std::max(0.0, std::max(hb, hc));
  const double c_lo = std::min(h0, h1), c_hi = std::max(h0, h1), dn = Dot(v, n);
  const double over = HeightsApart(c_lo, c_hi, dn * t_max, tri_lo, tri_hi);
  const double room = rr * rr - over * over;  // the in-plane gap that still touches, squared
  // The times [t0, t1] when the core's heights are within rr of the
  // triangle's (as SweptCoreBox): only then can the two touch, so the
  // in-plane gap need only hold over them (a capsule coming down beside
  // the triangle, onto its neighbour, is beyond an edge when it gets there).
  double t0, t1;
  HeightsWithin(c_lo, c_hi, dn, tri_lo, tri_hi, rr, t_max, &t0, &t1);
  const bool window = t0 <= t1;
  const Vec3 vs[3] = {a, b, cc};
  for (int i = 0; i < 3; ++i) {
    const Vec3& o = vs[i];
    const Vec3 m = Cross(vs[(i + 1) % 3] - o, n);
    // The triangle on m (relative to o): [min(0, w), max(0, w)].
    const double w = Dot(vs[(i + 2) % 3] - o, m);
    const double d0 = Dot(p0 - o, m), d1 = Dot(p1 - o, m), vm = Dot(v, m), dv = vm * t_max;
    const double lo = std::min(d0, d1) + std::min(0.0, dv);
    const double hi = std::max(d0, d1) + std::max(0.0, dv);
    const double gap = std::max(lo - std::max(0.0, w), std::min(0.0, w) - hi);
    const double mm = m.LengthSq();
    if (gap > 0.0 && gap * gap > room * mm) return true;
    if (!window) continue;
    // Over [t0, t1] only, the heights meeting within rr at most.
    const double lo_w = std::min(d0, d1) + std::min(vm * t0, vm * t1);
    const double hi_w = std::max(d0, d1) + std::max(vm * t0, vm * t1);
    const double gap_w = std::max(lo_w - std::max(0.0, w), std::min(0.0, w) - hi_w);
    if (gap_w > 0.0 && gap_w * gap_w > rr * rr * mm) return true;
  }
  return false;
}

/// SweepCapsuleTriangle past its cheap misses (ClearOfPlane,
/// SegmentBeyondAnEdge), given the triangle's unit normal n and the ends'
/// heights h0, h1 over its plane; the same answer whenever those misses
/// hold, which tests check.
inline CastResult SweepCapsuleTriangleAt(const Vec3& p0, const Vec3& p1, double h0, double h1,
                                         double r, const Vec3& v, double t_max, const Vec3& a,
                                         const Vec3& b, const Vec3& cc, const Vec3& n,
                                         uint8_t active) {
  CastResult out;
  // Both ends beyond r on one side of the plane: not touching at the start
  // (the closest-points test is the costliest piece).
  const double clear = 1e-12 * (r + std::max(std::fabs(h0), std::fabs(h1)));
  const bool apart = std::min(h0, h1) - r > clear || -std::max(h0, h1) - r > clear;
  Vec3 on_seg, on_tri;
  const double d2 =
      apart ? 2.0 * r * r + 1.0 : SegmentTriangleDistanceSq(p0, p1, a, b, cc, &on_seg, &on_tri);
  if (d2 <= r * r) {
    out.state = CastState::kStartedOverlapping;
    out.fraction = 0.0;
    out.normal = d2 > 0.0 ? (on_seg - on_tri).Normalized() : n * (Dot(n, v) > 0.0 ? -1.0 : 1.0);
    out.point = on_tri;
    return out;
  }
  // The end nearer the plane when apart, and its face probe (shared with
  // its sphere sweep below).
  int near_end = -1;
  BallFaceProbe near_probe;
  if (apart) {
    // Wholly on one side: the end nearer the plane reaches it first (p0 on a
    // tie, as the loop below), and when that is inside the face it is the
    // first contact (every piece of the Minkowski sum lies within r of the
    // plane): SweepSphereTriangle's face answer for that end.
    near_end = std::fabs(h1) < std::fabs(h0) ? 1 : 0;
    near_probe = ProbeBallFace(near_end == 1 ? p1 : p0, near_end == 1 ? h1 : h0, r, v, n, t_max,
                               a, b, cc);
    const BallPlaneEntry& at_plane = near_probe.at_plane;
    if (near_probe.reaches && near_probe.feature == TriangleFeature::kFace) {
      out.state = CastState::kHit;
      out.fraction = at_plane.t;
      out.normal = n * at_plane.side;
      out.point = at_plane.point;
      return out;
    }
  }
  double best = t_max;
  bool found = false;
  // Feature of a vertex or side contact (-1: from an end ball, whose normal
  // SweepSphereTriangle has already settled).
  TriangleFeature feature = TriangleFeature::kFace;
  int index = -1;
  for (int k = 0; k < 2; ++k) {
    // Not apart, the ends are beyond r of the triangle: the distance test
    // above takes the minimum of the ends' own (PointTriangleDistanceSq).
    const CastResult s = SweepSphereTriangleProbed(k == 0 ? p0 : p1, k == 0 ? h0 : h1, r, v, best,
                                                   a, b, cc, n, active,
                                                   k == near_end ? &near_probe : nullptr, !apart);
    if (s.hit() && (!found || s.fraction < best)) {
      best = s.fraction;
      found = true;
      out.normal = s.normal;
      out.point = s.point;
    }
  }
  // A vertex outside the box the capsule sweeps (grown by r plus a margin
  // far above RaySegmentCapsule's rounding and grazes) cannot be touched: a
  // cheap miss for most of them.
  const Vec3 core_lo = Min(p0, p1), core_hi = Max(p0, p1), travel = v * best;
  const double rr = r + 1e-9 * (r + core_lo.Abs().MaxComponent() + core_hi.Abs().MaxComponent() +
                                travel.Abs().MaxComponent());
  const Vec3 grow = Vec3::Splat(rr);
  const Aabb swept(core_lo + Min(travel, Vec3{}) - grow, core_hi + Max(travel, Vec3{}) + grow);
  const Vec3 vs[3] = {a, b, cc};
  for (int i = 0; i < 3; ++i) {
    if (BoxesApart(swept, Aabb(vs[i], vs[i]))) continue;
    internal::RayEntry e;
    if (internal::RaySegmentCapsule(vs[i], -v, p0, p1, r, &e) == internal::RayOutcome::kHit &&
        e.t < best) {
      best = e.t;
      found = true;
      out.normal = -e.normal;  // e.normal leaves the capsule towards the vertex
      out.point = vs[i];
      feature = TriangleFeature::kVertex;
      index = i;
    }
  }
  const Vec3 d = p1 - p0;
  const double dd = d.LengthSq();
  for (int i = 0; i < 3; ++i) {
    const Vec3 e = vs[(i + 1) % 3] - vs[i];
    const double ee = e.LengthSq();
    const Vec3 m = Cross(d, e);
    const double mm = m.LengthSq();
    // Near-parallel (sin^2 of the angle below 1e-12) or a point segment: left
    // to the ends and vertices above.
    if (!(mm > 1e-12 * dd * ee)) continue;
    const Vec3 axis = m / std::sqrt(mm);
    const double s0 = Dot(p0 - vs[i], axis);
    const double side = s0 >= 0.0 ? 1.0 : -1.0;
    const double gap = std::fabs(s0) - r;
    const double closing = -Dot(v, axis) * side;
    if (!(gap > 0.0 && closing > 0.0)) continue;
    const double t = gap / closing;
    if (!(t < best)) continue;
    // Closest points of the two lines at t (Ericson RTCD 5.1.8, unclamped).
    const Vec3 w = p0 + v * t - vs[i];
    const double de = Dot(d, e), dw = Dot(d, w), ew = Dot(e, w);
    const double den = dd * ee - de * de;
    if (!(den > 0.0)) continue;
    const double sc = (de * ew - ee * dw) / den;
    const double uc = (dd * ew - de * dw) / den;
    if (sc < 0.0 || sc > 1.0 || uc < 0.0 || uc > 1.0) continue;
    best = t;
    found = true;
    out.normal = axis * side;
    out.point = vs[i] + e * uc;
    feature = TriangleFeature::kEdge;
    index = i;
  }
  if (!found) return out;
  out.state = CastState::kHit;
  out.fraction = best;
  // Inactive edge or vertex: the face normal (Jolt's active edges), as
  // SweepSphereTriangle.
  bool use_face = false;
  if (index >= 0 && feature == TriangleFeature::kEdge) {
    use_face = ((active >> index) & 1u) == 0;
  } else if (index >= 0 && feature == TriangleFeature::kVertex) {
    use_face = ((active >> index) & 1u) == 0 && ((active >> ((index + 2) % 3)) & 1u) == 0;
  }
  if (use_face) {
    const Vec3 face = n * (Dot(n, out.normal) >= 0.0 ? 1.0 : -1.0);
    if (Dot(face, v) <= 0.0) out.normal = face;
  }
  return out;
}

/// SweepCapsuleTriangle given the triangle's unit normal n (TriangleNormal).
inline CastResult SweepCapsuleTriangleN(const Vec3& p0, const Vec3& p1, double r, const Vec3& v,
                                        double t_max, const Vec3& a, const Vec3& b,
                                        const Vec3& cc, const Vec3& n, uint8_t active) {
  const double h0 = Dot(p0 - a, n), h1 = Dot(p1 - a, n);
  if (ClearOfPlane(std::min(h0, h1), std::max(h0, h1), r, v, n, t_max)) return CastResult{};
  if (SegmentBeyondAnEdge(p0, p1, h0, h1, r, v, t_max, a, b, cc, n)) return CastResult{};
  if (PathBesideTriangle(p0, p1, r, v, t_max, a, b, cc)) return CastResult{};
  return SweepCapsuleTriangleAt(p0, p1, h0, h1, r, v, t_max, a, b, cc, n, active);
}

/// First contact of a capsule (segment [p0, p1], radius r) moving by v, t in
/// [0, t_max], with triangle abc; `active` and the answer as for
/// SweepSphereTriangle. The Minkowski sum of the triangle and the capsule is
/// covered by pieces each solved in closed form, and the first contact is the
/// earliest of theirs: each end ball against the triangle
/// (SweepSphereTriangle); each triangle vertex against the capsule (a ray
/// along -v, RaySegmentCapsule); the capsule's side against each triangle
/// edge (the distance of two skew lines is linear in t and reaches r once: a
/// contact when both closest points then lie inside the segment and the edge;
/// near-parallel lines touch first, to within (length * angle)^2 / r, at an
/// end or a vertex). The side reaches the face's interior first only when
/// parallel to it, and then touches an edge or has an end inside the face at
/// the same time.
inline CastResult SweepCapsuleTriangle(const Vec3& p0, const Vec3& p1, double r, const Vec3& v,
                                       double t_max, const Vec3& a, const Vec3& b, const Vec3& cc,
                                       uint8_t active) {
  return SweepCapsuleTriangleN(p0, p1, r, v, t_max, a, b, cc, TriangleNormal(a, b, cc), active);
}

}  // namespace hitbox
