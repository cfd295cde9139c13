// Single-triangle primitives shared by TriangleMesh and Heightfield (internal
// to hitbox_core): a watertight ray test, closest points, and sphere and
// capsule tests in closed form. A triangle is a two-sided SURFACE (see
// ../shared/cases/FORMAT.md): it has no inside and is hit from either side.
//
// Every file that includes it is compiled with -ffp-contract=off (the whole
// build is: see the top CMakeLists.txt): the watertight edge functions rely
// on a*b - c*d being computed the same way (no fused multiply-add) for both
// triangles that share an edge.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <immintrin.h>

#include "hitbox/math/math.h"

namespace hitbox {

/// A ray prepared for the watertight ray-triangle test: Woop, Benthin, Wald,
/// "Watertight Ray/Triangle Intersection", JCGT 2(1), 2013. The ray is
/// `origin + t * dir`, t in [0, t_max]; `dir` may be any non-zero length (a
/// whole translation: t is then the fraction of it).
struct WatertightRay {
  Vec3 origin;
  Vec3 dir;
  /// Axis of the largest |dir| component, and the two others (kx, ky keep a
  /// right-handed order; the test is two-sided so winding never matters).
  int kx = 0, ky = 1, kz = 2;
  /// Shear and scale constants: Sx = dir[kx] / dir[kz], Sy = dir[ky] / dir[kz], Sz = 1 / dir[kz].
  double sx = 0.0, sy = 0.0, sz = 1.0;

  WatertightRay(const Vec3& o, const Vec3& d) : origin(o), dir(d) {
    const Vec3 a = d.Abs();
    kz = (a.x >= a.y && a.x >= a.z) ? 0 : (a.y >= a.z ? 1 : 2);
    kx = (kz + 1) % 3;
    ky = (kx + 1) % 3;
    sz = 1.0 / d[kz];
    sx = d[kx] * sz;
    sy = d[ky] * sz;
  }
};

/// Hit of a ray on one triangle.
struct TriangleRayHit {
  /// Ray parameter of the hit (fraction of `dir`).
  double t = 0.0;
  /// Barycentric weights of the hit point for vertices a, b, c (sum 1).
  double u = 0.0, v = 0.0, w = 0.0;
};

/// A vertex in the frame of a WatertightRay (Woop et al. 2013, section 3):
/// translated to the ray origin, sheared so that the ray runs along +z from
/// (0, 0), z scaled by 1 / dir[kz]. It depends only on the ray and the
/// vertex, so a triangle walk may compute it once per vertex and reuse it for
/// every triangle that shares the vertex (same values to the bit).
struct ShearedVertex {
  // No default member initializers: a cache of these stays uninitialised
  // until filled, so a ray does not pay for zeroing it.
  double x, y, z;
};

/// ShearVertex for a ray whose largest axis kz is kZ (ray.kz == kZ): the
/// axes are known at compile time, so no component is picked by a run-time
/// index. A walk that shears many vertices dispatches on ray.kz once.
template <int kZ>
inline ShearedVertex ShearVertexAxes(const WatertightRay& ray, const Vec3& p) {
  constexpr int kX = (kZ + 1) % 3, kY = (kX + 1) % 3;
  const double dx = p[kX] - ray.origin[kX], dy = p[kY] - ray.origin[kY];
  const double dz = p[kZ] - ray.origin[kZ];
  return {dx - ray.sx * dz, dy - ray.sy * dz, ray.sz * dz};
}

inline ShearedVertex ShearVertex(const WatertightRay& ray, const Vec3& p) {
  switch (ray.kz) {
    case 0: return ShearVertexAxes<0>(ray, p);
    case 1: return ShearVertexAxes<1>(ray, p);
    default: return ShearVertexAxes<2>(ray, p);
  }
}

/// Watertight two-sided ray-triangle test on sheared vertices (ShearVertex):
/// the 2D edge functions of the three edges decide the hit. An edge function
/// that rounds to exactly 0 is recomputed in extended precision (long
/// double), as the paper does in double for float input. A point of a shared
/// edge or vertex is inside (edge function 0) for at least one of the
/// triangles that share it, because the edge functions of a shared edge are
/// computed from the same transformed vertices by the same expression and are
/// exact negatives of each other. Hits with t in [0, t_max] count; a ray
/// lying in the triangle's plane (det 0) misses.
inline bool RayTriangleSheared(const ShearedVertex& sa, const ShearedVertex& sb,
                               const ShearedVertex& sc, double t_max, TriangleRayHit* hit) {
  const double ax = sa.x, ay = sa.y, bx = sb.x, by = sb.y, cx = sc.x, cy = sc.y;
  double u = cx * by - cy * bx;
  double v = ax * cy - ay * cx;
  double w = bx * ay - by * ax;
  if (u == 0.0 || v == 0.0 || w == 0.0) [[unlikely]] {
    using LD = long double;
    u = static_cast<double>(static_cast<LD>(cx) * static_cast<LD>(by) -
                            static_cast<LD>(cy) * static_cast<LD>(bx));
    v = static_cast<double>(static_cast<LD>(ax) * static_cast<LD>(cy) -
                            static_cast<LD>(ay) * static_cast<LD>(cx));
    w = static_cast<double>(static_cast<LD>(bx) * static_cast<LD>(ay) -
                            static_cast<LD>(by) * static_cast<LD>(ax));
  }
  if ((u < 0.0 || v < 0.0 || w < 0.0) && (u > 0.0 || v > 0.0 || w > 0.0)) return false;
  const double det = u + v + w;
  if (det == 0.0) return false;
  const double t_scaled = u * sa.z + v * sb.z + w * sc.z;
  // t = t_scaled / det must lie in [0, t_max]; compare without dividing first.
  if (det > 0.0) {
    if (t_scaled < 0.0 || t_scaled > t_max * det) return false;
  } else {
    if (t_scaled > 0.0 || t_scaled < t_max * det) return false;
  }
  if (hit != nullptr) {
    if (std::fabs(det) >= 0x1p-1000) {
      const double inv = 1.0 / det;
      hit->t = t_scaled * inv;
      hit->u = u * inv;
      hit->v = v * inv;
      hit->w = w * inv;
    } else {
      // 1 / det would overflow (denormal coordinates, a ray nearly in the
      // plane): t was infinite or NaN. Divide each instead.
      hit->t = t_scaled / det;
      hit->u = u / det;
      hit->v = v / det;
      hit->w = w / det;
    }
    hit->t = std::clamp(hit->t, 0.0, t_max);  // the tests above hold up to rounding
  }
  return true;
}

/// Four triangles' sheared vertices by coordinate, one triangle a lane:
/// a.x, a.y, b.x, b.y, c.x, c.y (RayTrianglesPassSigns).
struct ShearedTriangles4 {
  alignas(32) double c[6][4];

  void Set(uint32_t lane, const ShearedVertex& a, const ShearedVertex& b,
           const ShearedVertex& c_) {
    c[0][lane] = a.x;
    c[1][lane] = a.y;
    c[2][lane] = b.x;
    c[3][lane] = b.y;
    c[4][lane] = c_.x;
    c[5][lane] = c_.y;
  }
};

/// The edge functions of four triangles at once: bit i is clear when
/// RayTriangleSheared certainly misses triangle i at its sign test (no edge
/// function 0, some negative and some positive), set when it must run. The
/// values are RayTriangleSheared's own (the same products and differences,
/// no fused multiply-add), so a clear bit is its answer: a ray through a
/// leaf runs the whole test on the few set ones, without a branch for each.
inline uint32_t RayTrianglesPassSigns(const ShearedTriangles4& t) {
#ifdef __AVX__
  const __m256d ax = _mm256_load_pd(t.c[0]), ay = _mm256_load_pd(t.c[1]);
  const __m256d bx = _mm256_load_pd(t.c[2]), by = _mm256_load_pd(t.c[3]);
  const __m256d cx = _mm256_load_pd(t.c[4]), cy = _mm256_load_pd(t.c[5]);
  const __m256d u = _mm256_sub_pd(_mm256_mul_pd(cx, by), _mm256_mul_pd(cy, bx));
  const __m256d v = _mm256_sub_pd(_mm256_mul_pd(ax, cy), _mm256_mul_pd(ay, cx));
  const __m256d w = _mm256_sub_pd(_mm256_mul_pd(bx, ay), _mm256_mul_pd(by, ax));
  const __m256d zero = _mm256_setzero_pd();
  const __m256d neg = _mm256_or_pd(
      _mm256_or_pd(_mm256_cmp_pd(u, zero, _CMP_LT_OQ), _mm256_cmp_pd(v, zero, _CMP_LT_OQ)),
      _mm256_cmp_pd(w, zero, _CMP_LT_OQ));
  const __m256d pos = _mm256_or_pd(
      _mm256_or_pd(_mm256_cmp_pd(u, zero, _CMP_GT_OQ), _mm256_cmp_pd(v, zero, _CMP_GT_OQ)),
      _mm256_cmp_pd(w, zero, _CMP_GT_OQ));
  const __m256d flat = _mm256_or_pd(
      _mm256_or_pd(_mm256_cmp_pd(u, zero, _CMP_EQ_OQ), _mm256_cmp_pd(v, zero, _CMP_EQ_OQ)),
      _mm256_cmp_pd(w, zero, _CMP_EQ_OQ));
  const __m256d miss = _mm256_andnot_pd(flat, _mm256_and_pd(neg, pos));
  return ~static_cast<uint32_t>(_mm256_movemask_pd(miss)) & 15u;
#else
  (void)t;
  return 15u;
#endif
}

/// Watertight two-sided ray-triangle test (Woop, Benthin, Wald, JCGT 2013):
/// RayTriangleSheared on the three vertices sheared into the ray's frame.
inline bool RayTriangleWatertight(const WatertightRay& ray, const Vec3& a, const Vec3& b,
                                  const Vec3& c, double t_max, TriangleRayHit* hit) {
  return RayTriangleSheared(ShearVertex(ray, a), ShearVertex(ray, b), ShearVertex(ray, c), t_max,
                            hit);
}

/// Feature of a triangle nearest to a point: its interior, an edge (0: ab,
/// 1: bc, 2: ca) or a vertex (0: a, 1: b, 2: c).
enum class TriangleFeature : uint8_t { kFace, kEdge, kVertex };

/// Closest point to p of the three edges of triangle abc, with the feature
/// it lies on: ClosestPointOnTriangle's answer for a triangle collinear to
/// rounding. Out of line and cold, so the common path stays small.
[[gnu::noinline, gnu::cold]] inline Vec3 ClosestPointOnTriangleEdges(
    const Vec3& p, const Vec3& a, const Vec3& b, const Vec3& c, TriangleFeature* feature,
    int* index) {
  auto set = [&](TriangleFeature f, int i) {
    if (feature != nullptr) *feature = f;
    if (index != nullptr) *index = i;
  };
  const Vec3 v[3] = {a, b, c};
  Vec3 best = a;
  double best_d2 = (p - a).LengthSq();
  set(TriangleFeature::kVertex, 0);
  for (int i = 0; i < 3; ++i) {
    const Vec3 e = v[(i + 1) % 3] - v[i];
    const double ee = e.LengthSq();
    const double s = ee > 0.0 ? std::clamp(Dot(p - v[i], e) / ee, 0.0, 1.0) : 0.0;
    const Vec3 q = v[i] + e * s;
    const double dq = (p - q).LengthSq();
    if (dq < best_d2) { best = q; best_d2 = dq; set(TriangleFeature::kEdge, i); }
  }
  return best;
}

/// Closest point of triangle abc to p, with the feature it lies on
/// (Ericson, "Real-Time Collision Detection" 5.1.5, Voronoi regions).
inline Vec3 ClosestPointOnTriangle(const Vec3& p, const Vec3& a, const Vec3& b, const Vec3& c,
                                   TriangleFeature* feature = nullptr, int* index = nullptr) {
  auto set = [&](TriangleFeature f, int i) {
    if (feature != nullptr) *feature = f;
    if (index != nullptr) *index = i;
  };
  const Vec3 ab = b - a, ac = c - a, ap = p - a;
  const double d1 = Dot(ab, ap), d2 = Dot(ac, ap);
  if (d1 <= 0.0 && d2 <= 0.0) { set(TriangleFeature::kVertex, 0); return a; }
  const Vec3 bp = p - b;
  const double d3 = Dot(ab, bp), d4 = Dot(ac, bp);
  if (d3 >= 0.0 && d4 <= d3) { set(TriangleFeature::kVertex, 1); return b; }
  const double vc = d1 * d4 - d3 * d2;
  if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0) {
    set(TriangleFeature::kEdge, 0);
    return a + ab * (d1 / (d1 - d3));
  }
  const Vec3 cp = p - c;
  const double d5 = Dot(ab, cp), d6 = Dot(ac, cp);
  if (d6 >= 0.0 && d5 <= d6) { set(TriangleFeature::kVertex, 2); return c; }
  const double vb = d5 * d2 - d1 * d6;
  if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0) {
    set(TriangleFeature::kEdge, 2);
    return a + ac * (d2 / (d2 - d6));
  }
  const double va = d3 * d6 - d5 * d4;
  if (va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0) {
    set(TriangleFeature::kEdge, 1);
    return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)));
  }
  // va + vb + vc = |ab x ac|^2: collinear to rounding (sin^2 below 1e-12),
  // the weights are noise and the triangle is its three edges.
  const double sum = va + vb + vc;
  if (!(sum > 1e-12 * ab.LengthSq() * ac.LengthSq())) {
    return ClosestPointOnTriangleEdges(p, a, b, c, feature, index);
  }
  set(TriangleFeature::kFace, 0);
  const double denom = 1.0 / sum;
  return a + ab * (vb * denom) + ac * (vc * denom);
}

}  // namespace hitbox
