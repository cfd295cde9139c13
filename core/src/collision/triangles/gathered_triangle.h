// A mesh triangle gathered once for several sweeps near it (a character
// move's: internal::GatheredCast).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "geometry/triangle_queries.h"
#include "hitbox/math/math.h"

namespace hitbox {

/// A mesh triangle: its vertices in the mesh's frame, unit normal
/// (TriangleNormal), input index and active edges (TriangleMesh::OriginalIndex,
/// ActiveEdges); and the terms of a capsule's cheap misses (ClearOfPlane,
/// SegmentBeyondAnEdge) that depend on the triangle alone, worked out once
/// when it is decoded (GatherTriangle) rather than on every sweep.
struct GatheredTriangle {
  std::array<Vec3, 3> v;
  Vec3 n;
  uint32_t original = 0;
  uint8_t active = 0;
  /// The vertices' box (mesh frame).
  Aabb box;
  /// Four planes in lanes, a coordinate an array: lanes 0-2 edge k's, its
  /// origin v[k] and in-plane normal Cross(v[k+1] - v[k], n); lane 3 the
  /// face's, origin v[0] and normal n (a point's heights over all four at
  /// once).
  alignas(32) std::array<double, 4> origin_x;
  alignas(32) std::array<double, 4> origin_y;
  alignas(32) std::array<double, 4> origin_z;
  alignas(32) std::array<double, 4> normal_x;
  alignas(32) std::array<double, 4> normal_y;
  alignas(32) std::array<double, 4> normal_z;
  /// Lanes 0-2: the edge normal's squared length and the far vertex's
  /// offset along it, Dot(v[k+2] - v[k], normal); lane 3 zero.
  alignas(32) std::array<double, 4> normal_sq;
  alignas(32) std::array<double, 4> far_offset;
  /// The heights of the vertices over v[0] along n, as [below, above] with 0.
  double below = 0.0;
  double above = 0.0;
  /// The largest absolute coordinate of the vertices (metres).
  double extent = 0.0;
};

/// *t: the triangle (a, b, c) of input index `original` and active edges
/// `active`, with its normal and its cheap-miss terms.
inline void GatherTriangle(const Vec3& a, const Vec3& b, const Vec3& c, uint32_t original,
                           uint8_t active, GatheredTriangle* t) {
  t->v = {a, b, c};
  t->n = TriangleNormal(a, b, c);
  t->original = original;
  t->active = active;
  t->box = Aabb(Min(a, Min(b, c)), Max(a, Max(b, c)));
  for (int k = 0; k < 4; ++k) {
    const Vec3& o = t->v[k % 3];
    const Vec3 m = k < 3 ? Cross(t->v[(k + 1) % 3] - o, t->n) : t->n;
    t->origin_x[k] = o.x;
    t->origin_y[k] = o.y;
    t->origin_z[k] = o.z;
    t->normal_x[k] = m.x;
    t->normal_y[k] = m.y;
    t->normal_z[k] = m.z;
    t->normal_sq[k] = k < 3 ? m.LengthSq() : 0.0;
    t->far_offset[k] = k < 3 ? Dot(t->v[(k + 2) % 3] - o, m) : 0.0;
  }
  const double hb = Dot(b - a, t->n), hc = Dot(c - a, t->n);
  t->below = std::min(0.0, std::min(hb, hc));
  t->above = std::max(0.0, std::max(hb, hc));
  t->extent = std::max(std::max(a.Abs().MaxComponent(), b.Abs().MaxComponent()),
                       c.Abs().MaxComponent());
}

}  // namespace hitbox
