// The closest point of a simplex (point, segment, triangle, tetrahedron) to
// the origin, the one solver of hitbox_core's GJKs and EPA: tetrahedra by
// signed volumes (Montanari et al., ACM TOG 2017, S3D), triangles by Voronoi
// regions (Ericson RTCD 5.1.5). It answers with the kept points' indices and
// weights; degenerate simplices (kSimplex* below) fall back to their faces.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "hitbox/math/math.h"

namespace hitbox::internal {

/// A triangle whose squared area (times 4) is at most this fraction of
/// |e1|^2 |e2|^2 (a squared sine of its angle, ~1e-13 rad) is a sliver:
/// its closest point is that of its closest edge.
inline constexpr double kSimplexSliverSine2 = 1e-26;
/// A triangle whose squared area (times 4) is above this fraction of
/// |e1|^2 |e2|^2 is well shaped: its closest point is the origin's projection.
inline constexpr double kSimplexWellShapedSine2 = 1e-8;
/// A tetrahedron whose volume (times 6) is at most this fraction of |e1| |e2|
/// |e3| (edges from point 0) is flat: it never holds the origin.
inline constexpr double kSimplexFlatVolume = 1e-13;

/// A tetrahedron whose squared volume (times 6) is at most this fraction of
/// r^6, r the largest distance of its points from the origin, is too thin for
/// its distance: its cofactors' rounding (~1e-16 r^3, however short its
/// edges) could move its weights by more than ~1e-4, and the parents they
/// weigh (GJK's points on each shape) apart by as much. It is handled as flat.
/// (1e-18, weights to ~1e-7, also drops thin tetrahedra that do hold the
/// origin: with GJK distance and the ray cast on this solver, casts then
/// stall and end early by ~1e-6, CastPairTest.MatchesBisectionOnOverlap.)
inline constexpr double kSimplexThinVolume2 = 1e-24;

/// Closest point of a simplex to the origin.
struct SimplexClosest {
  /// Points of the smallest sub-simplex holding the closest point (1..4).
  int count = 0;
  /// Their indices into the input, ascending (index[i] >= i); entries from
  /// `count` on are unspecified (left unset: the solver's hot paths would
  /// spend more on zeroing them than on the answer).
  int index[4];
  /// Their barycentric weights (> 0, summing to 1); from `count` on unspecified.
  double weight[4];
  /// The closest point and its squared length (0 when inside).
  Vec3 v;
  double vv = 0.0;
  /// True when a (non-flat) tetrahedron holds the origin strictly inside;
  /// the weights are then the origin's barycentric coordinates in it.
  bool inside = false;
};

/// What ClosestToOrigin returns as `v` for a triangle's interior.
enum class ClosestPointForm : uint8_t {
  /// The weighted sum of the kept points (progress checks compare |v| of
  /// successive simplices; a projection would tie within one plane).
  kWeightedSum,
  /// On a well-shaped triangle (|e1 x e2|^2 > kSimplexWellShapedSine2
  /// |e1|^2 |e2|^2) the origin's projection onto its plane: its direction is
  /// the plane's normal, accurate even when |v| is far below the points'
  /// size (the weighted sum's direction is then rounding noise).
  kProjection,
  /// As kProjection on any triangle that is not a sliver (|e1 x e2|^2 >
  /// kSimplexSliverSine2 |e1|^2 |e2|^2): on a thin one the weights lose
  /// ~eps / sine^2 to cancellation, the projection's direction only ~eps / sine.
  kProjectionUnlessSliver,
};

namespace simplex_detail {

// Vertex, Edge and Segment are always inlined, also into the copy of
// Triangle the linker keeps.
__attribute__((always_inline)) inline void Vertex(int i, const Vec3& a, SimplexClosest* r) {
  r->count = 1;
  r->index[0] = i;
  r->weight[0] = 1.0;
  r->v = a;
  r->vv = a.LengthSq();
}

/// The point (1 - t) a + t b of segment (i, j), i < j; t clamped to [0, 1],
/// an end point when t is at (or beyond) it.
__attribute__((always_inline)) inline void Edge(int i, int j, const Vec3& a, const Vec3& b,
                                                double t, SimplexClosest* r) {
  if (!(t > 0.0)) return Vertex(i, a, r);
  if (t >= 1.0) return Vertex(j, b, r);
  r->count = 2;
  r->index[0] = i;
  r->index[1] = j;
  r->weight[0] = 1.0 - t;
  r->weight[1] = t;
  r->v = a * (1.0 - t) + b * t;
  r->vv = r->v.LengthSq();
}

/// Segment (i, j), i < j. A zero-length one answers a.
__attribute__((always_inline)) inline void Segment(int i, int j, const Vec3& a, const Vec3& b,
                                                   SimplexClosest* r) {
  const Vec3 ab = b - a;
  const double den = ab.LengthSq();
  const double num = -Dot(a, ab);
  if (!(den > 0.0) || num <= 0.0) return Vertex(i, a, r);
  Edge(i, j, a, b, num / den, r);
}

/// Triangle (i, j, k), i < j < k: the origin's Voronoi region (Ericson,
/// "Real-Time Collision Detection" 5.1.5: vertex and edge regions decided by
/// dot products, no division), barycentric weights inside.
template <ClosestPointForm kPoint>
inline void Triangle(int i, int j, int k, const Vec3& a, const Vec3& b, const Vec3& c,
                     SimplexClosest* r) {
  // Ericson's d1 .. d6 for the query point p = 0: d1 = ab.(p - a) = -ab.a
  // (negating the dot product, not a, rounds the same).
  const Vec3 ab = b - a, ac = c - a;
  const double d1 = -Dot(ab, a), d2 = -Dot(ac, a);
  if (d1 <= 0.0 && d2 <= 0.0) return Vertex(i, a, r);
  const double d3 = -Dot(ab, b), d4 = -Dot(ac, b);
  if (d3 >= 0.0 && d4 <= d3) return Vertex(j, b, r);
  const double vc = d1 * d4 - d3 * d2;
  if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0) return Edge(i, j, a, b, d1 / (d1 - d3), r);
  const double d5 = -Dot(ab, c), d6 = -Dot(ac, c);
  if (d6 >= 0.0 && d5 <= d6) return Vertex(k, c, r);
  const double vb = d5 * d2 - d1 * d6;
  if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0) return Edge(i, k, a, c, d2 / (d2 - d6), r);
  const double va = d3 * d6 - d5 * d4;
  if (va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0) {
    return Edge(j, k, b, c, (d4 - d3) / ((d4 - d3) + (d5 - d6)), r);
  }
  // va + vb + vc = |ab x ac|^2 (Lagrange's identity).
  const double den = va + vb + vc;
  const double ee = ab.LengthSq() * ac.LengthSq();
  if (!(den > kSimplexSliverSine2 * ee)) {
    // A sliver: the closest of its edges.
    Segment(i, j, a, b, r);
    SimplexClosest e;
    Segment(j, k, b, c, &e);
    if (e.vv < r->vv) *r = e;
    Segment(i, k, a, c, &e);
    if (e.vv < r->vv) *r = e;
    return;
  }
  const double inv = 1.0 / den;
  double w1 = vb * inv, w2 = vc * inv, w0 = 1.0 - w1 - w2;
  if constexpr (kPoint == ClosestPointForm::kProjectionUnlessSliver) {
    // The projection's weights as triple products, n.(b x c) / |n|^2 and
    // around: on a thin triangle Lagrange's products above cancel (their
    // weights lose ~eps / sine^2, ~1e-8 at a sine of 1e-4), these do not.
    // Divided by their sum (|n|^2 up to rounding), so that they sum to 1.
    const Vec3 n = Cross(ab, ac);
    const double t0 = Dot(n, Cross(b, c)), t1 = Dot(n, Cross(c, a)), t2 = Dot(n, Cross(a, b));
    const double sum = t0 + t1 + t2;
    if (sum > 0.0) {
      w0 = t0 / sum;
      w1 = t1 / sum;
      w2 = t2 / sum;
    }
  }
  if (w0 > 0.0 && w1 > 0.0 && w2 > 0.0) {
    // The interior (the common case): all three points kept, and in the
    // projection form the weighted sum is not formed at all.
    r->count = 3;
    r->index[0] = i;
    r->index[1] = j;
    r->index[2] = k;
    r->weight[0] = w0;
    r->weight[1] = w1;
    r->weight[2] = w2;
    if constexpr (kPoint != ClosestPointForm::kWeightedSum) {
      const Vec3 n = Cross(ab, ac);
      const double nn = n.LengthSq();
      const double min_sine2 = kPoint == ClosestPointForm::kProjection ? kSimplexWellShapedSine2
                                                                       : kSimplexSliverSine2;
      if (nn > min_sine2 * ee) {
        r->v = n * (Dot(a, n) / nn);
        r->vv = r->v.LengthSq();
        return;
      }
    }
    r->v = a * w0 + b * w1 + c * w2;
    r->vv = r->v.LengthSq();
    return;
  }
  // Rounding left a weight at or below 0 (the point on an edge): that point
  // is dropped, like any zero weight.
  const double wt[3] = {w0, w1, w2};
  const int idx[3] = {i, j, k};
  const Vec3* p[3] = {&a, &b, &c};
  r->count = 0;
  r->v = Vec3{};
  for (int m = 0; m < 3; ++m) {
    if (!(wt[m] > 0.0)) continue;
    r->index[r->count] = idx[m];
    r->weight[r->count] = wt[m];
    r->v += *p[m] * wt[m];
    ++r->count;
  }
  r->vv = r->v.LengthSq();
}

/// Signed volumes of the tetrahedron w[0..3] (Montanari et al. 2017, S3D):
/// `vol` (6 times its volume) and the cofactors c[m], the volumes with the
/// origin in place of point m; c[m] / vol are the origin's barycentric
/// coordinates, and c[m] * vol <= 0 when the origin lies outside face m (the
/// face opposite point m) or on it. `size`: |e1| |e2| |e3| (edges from w[0]).
template <typename At>
inline void TetrahedronVolumes(const At& w, double* vol, double c[4], double* size) {
  const Vec3 e1 = w(1) - w(0);
  const Vec3 e2 = w(2) - w(0);
  const Vec3 e3 = w(3) - w(0);
  const Vec3 e23 = Cross(e2, e3);
  *vol = Dot(e1, e23);
  c[0] = Dot(w(1), Cross(w(2), w(3)));
  c[1] = -Dot(w(0), e23);
  c[2] = -Dot(e1, Cross(w(0), e3));
  c[3] = -Dot(e1, Cross(e2, w(0)));
  *size = std::sqrt(e1.LengthSq() * e2.LengthSq() * e3.LengthSq());
}

/// Tetrahedron w(0..3) (`w`: index -> const Vec3&): by its signed volumes,
/// inside or the closest of the faces the origin lies outside of.
template <ClosestPointForm kPoint, typename At>
inline void Tetrahedron(const At& w, SimplexClosest* out) {
  double vol, c[4], size;
  TetrahedronVolumes(w, &vol, c, &size);
  bool flat = std::fabs(vol) <= kSimplexFlatVolume * size || vol == 0.0;
  bool inside = !flat && c[0] * vol > 0.0 && c[1] * vol > 0.0 && c[2] * vol > 0.0 &&
                c[3] * vol > 0.0;
  if (inside) {
    // Too thin for its distance from the origin: the cofactors' rounding
    // (~eps |w|^3) swamps vol, so `inside` and its weights are noise.
    // (Checked only here: a tetrahedron that cannot hold the origin
    // keeps its cheaper face test.)
    double r2 = 0.0;
    for (int m = 0; m < 4; ++m) r2 = std::max(r2, w(m).LengthSq());
    flat = vol * vol <= kSimplexThinVolume2 * (r2 * r2 * r2);
    inside = !flat;
  }
  if (inside) {
    out->count = 4;
    out->inside = true;
    const double inv = 1.0 / vol;
    for (int m = 0; m < 4; ++m) {
      out->index[m] = m;
      out->weight[m] = c[m] * inv;
    }
    out->vv = 0.0;
    return;
  }
  // The faces the origin lies outside of (every face of a flat one):
  // the closest of their closest points (one below infinity; none, as
  // for NaN points, leaves count 0). Face m is opposite point m, its
  // points ascending. Each face is solved into whichever of `*out` and
  // `f` does not hold the best so far, so the best is copied at most
  // once, at the end.
  static constexpr int kFace[4][3] = {{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}};
  SimplexClosest f;
  f.vv = std::numeric_limits<double>::infinity();
  SimplexClosest* best = &f;
  SimplexClosest* next = out;
  for (int m = 0; m < 4; ++m) {
    if (!flat && c[m] * vol > 0.0) continue;
    const int* t = kFace[m];
    Triangle<kPoint>(t[0], t[1], t[2], w(t[0]), w(t[1]), w(t[2]), next);
    if (next->vv < best->vv) std::swap(best, next);
  }
  if (best != out) *out = *best;
}

}  // namespace simplex_detail

/// Closest point to the origin of the simplex of the `n` (1..4) points
/// `w(0) .. w(n-1)` (`w`: index -> const Vec3&, so a caller's points may sit
/// in its own structs). Degenerate cases: see the top of this file.
template <ClosestPointForm kPoint = ClosestPointForm::kWeightedSum, typename At>
inline SimplexClosest ClosestToOriginOf(const At& w, int n) {
  using namespace simplex_detail;
  SimplexClosest out;
  switch (n) {
    case 1: Vertex(0, w(0), &out); break;
    case 2: Segment(0, 1, w(0), w(1), &out); break;
    case 3: Triangle<kPoint>(0, 1, 2, w(0), w(1), w(2), &out); break;
    default: Tetrahedron<kPoint>(w, &out); break;
  }
  if (!(out.count > 0 && out.vv == out.vv)) Vertex(0, w(0), &out);  // NaN points
  return out;
}

/// ClosestToOriginOf the points w[0 .. n-1].
template <ClosestPointForm kPoint = ClosestPointForm::kWeightedSum>
inline SimplexClosest ClosestToOrigin(const Vec3* w, int n) {
  return ClosestToOriginOf<kPoint>([w](int i) -> const Vec3& { return w[i]; }, n);
}

/// Copies r's `count` weights to out[0 .. count), as stores one by one: a
/// copy loop would become a call of memcpy for at most 32 bytes.
inline void CopyWeights(const SimplexClosest& r, double* out) {
  switch (r.count) {
    case 4: out[3] = r.weight[3]; [[fallthrough]];
    case 3: out[2] = r.weight[2]; [[fallthrough]];
    case 2: out[1] = r.weight[1]; [[fallthrough]];
    case 1: out[0] = r.weight[0]; [[fallthrough]];
    default: break;
  }
}

/// True when the tetrahedron w[0..3] holds the origin strictly inside and is
/// not flat by `flat_volume` (as kSimplexFlatVolume; EPA asks for more);
/// `weights` (optional) then receives the origin's barycentric coordinates.
inline bool TetrahedronHoldsOrigin(const Vec3* w, double flat_volume,
                                   double* weights = nullptr) {
  double vol, c[4], size;
  simplex_detail::TetrahedronVolumes([w](int i) -> const Vec3& { return w[i]; }, &vol, c, &size);
  if (!(std::fabs(vol) > flat_volume * size)) return false;
  for (double ci : c) {
    if (!(ci * vol > 0.0)) return false;
  }
  if (weights != nullptr) {
    for (int m = 0; m < 4; ++m) weights[m] = c[m] / vol;
  }
  return true;
}

}  // namespace hitbox::internal
