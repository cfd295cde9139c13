// First contact of a translating box with a triangle by separating axes
// (Ericson, RTCD 5.5.8; Eberly): a cull and a closed form ahead of the GJK cast.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "collision/triangles/triangle_gjk_cast.h"
#include "geometry/sat.h"
#include "hitbox/math/math.h"

namespace hitbox {

/// A box core in a mesh's frame, for SweepBoxSat: centre, unit orthogonal
/// axes and half-extents along them (metres).
struct OrientedBox {
  Vec3 center;
  Vec3 axis[3];
  Vec3 half;
};

/// Slack (metres) of SweepBoxSat's cull beyond the contact gaps of
/// SweepConvexTriangle: a pair it calls apart is farther than
/// kSweepStallGap (the loosest contact the GJK cast declares) plus this
/// plus rounding (1e-12 * scale) along some axis at every fraction.
inline constexpr double kSweepSatSlack = 1e-7;
/// Least travel or depth (metres) by which SweepBoxSat's latest axis entry
/// must follow the next latest (and precede the earliest exit), or the
/// start overlap must reach on every axis, for a closed-form answer; closer
/// ones are contacts of degenerate feature pairs (a vertex on an edge,
/// parallel faces), grazes or touches, left to the GJK cast.
inline constexpr double kSweepSatDistinct = 1e-7;

/// Least sine of the angle between a box face or edge and the triangle
/// feature it touches (face, edge) for SweepBoxSat's closed form: a flatter
/// pair touches along a segment or patch, where the GJK cast's contact point
/// and normal are decided by its rounding; those are left to it.
inline constexpr double kSweepSatSine = 1e-3;

/// Outcome of SweepBoxSat for one triangle.
struct SweepSatResult {
  enum class State : uint8_t {
    kApart,      ///< certainly no contact for t in [0, t_max]: a miss
    kHit,        ///< `hit` is the GJK cast's answer in closed form
    kUndecided,  ///< the GJK cast (SweepConvexTriangle) decides
  };
  State state = State::kUndecided;
  CastResult hit;
};

/// Separating axes of a box (grown by `margin`, moving by v for t in
/// [0, t_max]) and a triangle, in the box's frame (Ericson RTCD 5.5.8; the 13
/// box-triangle axes). kApart: some axis keeps them apart at every t even
/// with the GJK cast's gaps added (a cull that never drops a hit); kHit: they
/// overlap by kSweepSatDistinct at t = 0, or one generic feature pair enters
/// last, answered as the cast would; kUndecided otherwise (touching, grazing,
/// ties, a normal in the face's plane, a degenerate triangle).
inline SweepSatResult SweepBoxSat(const Vec3 tri[3], const OrientedBox& box, double margin,
                                  const Vec3& v, double t_max, double scale, uint8_t active) {
  SweepSatResult out;
  // Box frame: the triangle relative to the centre, the motion.
  Vec3 p[3];
  for (int i = 0; i < 3; ++i) {
    const Vec3 d = tri[i] - box.center;
    p[i] = {Dot(d, box.axis[0]), Dot(d, box.axis[1]), Dot(d, box.axis[2])};
  }
  const Vec3 lv{Dot(v, box.axis[0]), Dot(v, box.axis[1]), Dot(v, box.axis[2])};
  const Vec3& h = box.half;
  const double gap = margin + 0.5 * kSweepGap;
  const double pad = kSweepStallGap + kSweepSatSlack + 1e-12 * scale;
  double lo = 0.0, hi = t_max;      // fractions not proven apart (grown by pad)
  // Latest entry, earliest exit (grown by gap; the exit not cut at t_max).
  double lo_x = 0.0, hi_x = std::numeric_limits<double>::infinity();
  double next = 0.0;                // the entry before lo_x (0: the start)
  bool exact_apart = false;         // apart on a static axis within the pad
  bool deep = true;  // overlapping at t = 0 by more than kSweepSatDistinct on every axis
  bool clear = false;  // apart at t = 0 by more than kSweepSatDistinct on some axis
  int entry = -1;    // axis of lo_x (-1: none after the start)
  Vec3 entry_n;      // its unit normal (box frame), triangle towards the box
  // Axis n of length len > 0 (box frame; the box at the origin), with the
  // triangle's projections p0, p1, p2 on it, the box's radius rb and the
  // motion's projection d: true when the pair is proven apart. Entry and
  // exit fractions do not depend on len.
  auto axis = [&](const Vec3& n, double len, int id, double p0, double p1, double p2, double rb,
                  double d) __attribute__((always_inline)) {
    const double r = rb + gap * len;
    // Overlap at t: below <= d t <= above.
    const double below = std::min(p0, std::min(p1, p2)) - r;
    const double above = std::max(p0, std::max(p1, p2)) + r;
    const double distinct = kSweepSatDistinct * len;
    deep = deep && below < -distinct && above > distinct;
    clear = clear || below > distinct || above < -distinct;
    if (d != 0.0) {
      const double inv = 1.0 / d;
      const double enter = (d > 0.0 ? below : above) * inv;
      const double leave = (d > 0.0 ? above : below) * inv;
      const double slack = pad * len * std::fabs(inv);
      lo = std::max(lo, enter - slack);
      hi = std::min(hi, leave + slack);
      if (enter > lo_x) {
        next = lo_x;
        lo_x = enter;
        entry = id;
        entry_n = n * ((d > 0.0 ? -1.0 : 1.0) / len);
      } else {
        next = std::max(next, enter);
      }
      hi_x = std::min(hi_x, leave);
    } else {
      const double pad_n = pad * len;
      if (below > pad_n || above < -pad_n) return true;
      exact_apart = exact_apart || below > 0.0 || above < 0.0;
    }
    return !(lo <= hi);
  };
  auto apart = [&] {
    out.state = SweepSatResult::State::kApart;
    return out;
  };
  const Vec3 e[3] = {p[1] - p[0], p[2] - p[1], p[0] - p[2]};
  const Vec3 nf = Cross(e[0], p[2] - p[0]);
  const double nf_sq = nf.LengthSq();
  const bool has_face = nf_sq > 0.0;
  if (has_face && axis(nf, std::sqrt(nf_sq), 0, Dot(p[0], nf), Dot(p[1], nf), Dot(p[2], nf),
                      std::fabs(nf.x) * h.x + std::fabs(nf.y) * h.y + std::fabs(nf.z) * h.z,
                      Dot(lv, nf))) {
    return apart();
  }
  // The box's axes and the crosses with them have zero coordinates: their
  // dot products skip those terms (the same sums: x + 0 is x).
  if (axis({1, 0, 0}, 1.0, 1, p[0].x, p[1].x, p[2].x, h.x, lv.x) ||
      axis({0, 1, 0}, 1.0, 2, p[0].y, p[1].y, p[2].y, h.y, lv.y) ||
      axis({0, 0, 1}, 1.0, 3, p[0].z, p[1].z, p[2].z, h.z, lv.z)) {
    return apart();
  }
  // Cross of box axis k and triangle edge j: n[k] is 0, i and l the others.
  auto cross = [&](const Vec3& n, double min_sq, int id, double Vec3::*i, double Vec3::*l)
                   __attribute__((always_inline)) {
    auto dot = [&](const Vec3& x) { return x.*i * n.*i + x.*l * n.*l; };
    const double len_sq = dot(n);
    return len_sq > min_sq &&
           axis(n, std::sqrt(len_sq), id, dot(p[0]), dot(p[1]), dot(p[2]),
                std::fabs(n.*i) * h.*i + std::fabs(n.*l) * h.*l, dot(lv));
  };
  for (int j = 0; j < 3; ++j) {
    const Vec3& ej = e[j];
    const double min_sq = 1e-20 * ej.LengthSq();  // near-parallel below this
    if (cross({0.0, -ej.z, ej.y}, min_sq, 4 + j, &Vec3::y, &Vec3::z) ||
        cross({ej.z, 0.0, -ej.x}, min_sq, 7 + j, &Vec3::x, &Vec3::z) ||
        cross({-ej.y, ej.x, 0.0}, min_sq, 10 + j, &Vec3::x, &Vec3::y)) {
      return apart();
    }
  }
  if (!has_face) return out;
  auto face = [&] { return Cross(tri[1] - tri[0], tri[2] - tri[0]).Normalized(); };
  auto to_mesh = [&](const Vec3& n) {
    return box.axis[0] * n.x + box.axis[1] * n.y + box.axis[2] * n.z;
  };
  if (deep) {
    const Vec3 f = face();
    out.state = SweepSatResult::State::kHit;
    out.hit.state = CastState::kStartedOverlapping;
    out.hit.fraction = 0.0;
    out.hit.normal = f * (Dot(f, v) > 0.0 ? -1.0 : 1.0);
    out.hit.point = ClosestPointOnTriangle(box.center, tri[0], tri[1], tri[2]);
    return out;
  }
  // A closed-form hit: one generic feature pair entering last.
  const double len = v.Length();
  if (exact_apart || !clear || entry < 0 || !(lo_x <= hi_x) || !(lo_x <= t_max) ||
      !((hi_x - lo_x) * len > kSweepSatDistinct) || !((lo_x - next) * len > kSweepSatDistinct)) {
    return out;
  }
  const double t = lo_x;
  const Vec3 at = lv * t;  // the box's centre at t, box frame
  const double tiny = 1e-9 * scale;
  // The box's vertex towards the triangle (farthest along -entry_n), with
  // the coordinate along axis `free` (3: none) left at the centre; false
  // when a box face or edge lies across the normal (no single vertex).
  Vec3 q = at;
  auto towards = [&](int free) {
    for (int k = 0; k < 3; ++k) {
      if (k == free) continue;
      if (!(std::fabs(entry_n[k]) > kSweepSatSine)) return false;
      q[k] += entry_n[k] > 0.0 ? -h[k] : h[k];
    }
    return true;
  };
  Vec3 point;
  bool use_face = false;  // a vertex or edge of the triangle with no active edge through it
  if (entry == 0) {
    // A box vertex on the face: strictly inside the triangle.
    if (!towards(3)) return out;
    q -= entry_n * margin;
    double w[3];  // w[j]: weight of vertex j + 2, times |nf|^2
    for (int j = 0; j < 3; ++j) {
      w[j] = Dot(Cross(e[j], q - p[j]), nf);
      if (!(w[j] > 1e-9 * nf_sq)) return out;
    }
    const double sum = w[0] + w[1] + w[2];
    point = tri[0] * (w[1] / sum) + tri[1] * (w[2] / sum) + tri[2] * (w[0] / sum);
  } else if (entry <= 3) {
    // A box face on a triangle vertex: the one nearest the box along the
    // normal, strictly inside the face.
    const int k = entry - 1;
    const double ht[3] = {Dot(p[0], entry_n), Dot(p[1], entry_n), Dot(p[2], entry_n)};
    const int i = (ht[0] >= ht[1] && ht[0] >= ht[2]) ? 0 : (ht[1] >= ht[2] ? 1 : 2);
    for (int j = 1; j < 3; ++j) {
      // Each edge from vertex i must leave the box's face by a clear angle.
      const int o = (i + j) % 3;
      if (!(ht[i] - ht[o] > kSweepSatSine * (p[i] - p[o]).Length())) return out;
    }
    for (int j = 0; j < 3; ++j) {
      if (j != k && !(std::fabs(p[i][j] - at[j]) < h[j] - tiny)) return out;
    }
    point = tri[i];
    // Edges i (i to i+1) and i+2 (i+2 to i) hold the vertex.
    use_face = !((active >> i) & 1u) && !((active >> ((i + 2) % 3)) & 1u);
  } else {
    // A box edge along axis k on triangle edge j (vertex j to j+1): the
    // closest points of the two lines (Ericson, RTCD 5.1.8) strictly inside both.
    const int k = (entry - 4) / 3, j = (entry - 4) % 3;
    if (!towards(k)) return out;
    const Vec3 rr = q - p[j];
    const double b = e[j][k], c = rr[k], ee = Dot(e[j], e[j]), f = Dot(e[j], rr);
    const double den = ee - b * b;  // |e|^2 sin^2 of the edges' angle
    if (!(den > kSweepSatSine * kSweepSatSine * ee)) return out;  // a contact segment
    const double s = (f - b * c) / den;       // along the triangle's edge, in [0, 1]
    const double u = (b * f - c * ee) / den;  // along the box's edge, in [-h, h]
    const double el = std::sqrt(ee);
    if (!(s * el > tiny && (1.0 - s) * el > tiny && std::fabs(u) < h[k] - tiny)) return out;
    point = tri[j] + (tri[(j + 1) % 3] - tri[j]) * s;
    use_face = !((active >> j) & 1u);
  }
  Vec3 normal = to_mesh(entry_n);
  if (entry == 0 || use_face) {
    // The face normal on the face; on an inactive edge or vertex when it
    // does not point along the motion (SweepConvexTriangle).
    const Vec3 f = face();
    const double side = Dot(f, normal);
    // A normal in the face's plane leaves the face's side to rounding.
    if (entry != 0 && !(std::fabs(side) > 1e-6)) return out;
    const Vec3 fn = f * (side >= 0.0 ? 1.0 : -1.0);
    if (entry == 0 || Dot(fn, v) <= 0.0) normal = fn;
  }
  out.state = SweepSatResult::State::kHit;
  out.hit.state = CastState::kHit;
  out.hit.fraction = t;
  out.hit.normal = normal;
  out.hit.point = point;
  return out;
}

}  // namespace hitbox
