// Test meshes for the triangle-mesh and heightfield tests: a closed box, an
// icosphere, a wavy grid, plus brute-force references over every triangle.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "collision/triangles/ball_triangle_sweep.h"
#include "collision/triangles/surface_hits.h"
#include "geometry/ray_primitives.h"
#include "geometry/triangle.h"
#include "geometry/triangle_mesh.h"
#include "geometry/triangle_queries.h"
#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"
#include "test_util.h"

namespace hitbox::testing {

struct MeshData {
  std::vector<Vec3> vertices;
  std::vector<TriangleMesh::Indices> triangles;
};

/// The closed surface of the box [-h, h]^3 (+ offset): 8 vertices, 12 triangles.
inline MeshData BoxMesh(double h, const Vec3& offset = {}) {
  MeshData m;
  for (int i = 0; i < 8; ++i) {
    m.vertices.push_back(offset + Vec3{(i & 1) ? h : -h, (i & 2) ? h : -h, (i & 4) ? h : -h});
  }
  const uint32_t q[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4},
                            {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
  for (const auto& f : q) {
    m.triangles.push_back({f[0], f[1], f[2]});
    m.triangles.push_back({f[0], f[2], f[3]});
  }
  return m;
}

/// A closed icosphere of `radius` about `center`, `levels` subdivisions
/// (20 * 4^levels triangles, shared vertices).
inline MeshData IcoSphere(double radius, int levels, const Vec3& center = {}) {
  const double t = (1.0 + std::sqrt(5.0)) / 2.0;
  std::vector<Vec3> v = {{-1, t, 0}, {1, t, 0}, {-1, -t, 0}, {1, -t, 0}, {0, -1, t}, {0, 1, t},
                         {0, -1, -t}, {0, 1, -t}, {t, 0, -1}, {t, 0, 1}, {-t, 0, -1}, {-t, 0, 1}};
  for (Vec3& p : v) p = p.Normalized();
  std::vector<TriangleMesh::Indices> f = {
      {0, 11, 5}, {0, 5, 1}, {0, 1, 7}, {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4},
      {11, 10, 2}, {10, 7, 6}, {7, 1, 8}, {3, 9, 4}, {3, 4, 2}, {3, 2, 6}, {3, 6, 8},
      {3, 8, 9}, {4, 9, 5}, {2, 4, 11}, {6, 2, 10}, {8, 6, 7}, {9, 8, 1}};
  for (int l = 0; l < levels; ++l) {
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> mid;
    auto midpoint = [&](uint32_t a, uint32_t b) {
      const auto key = std::minmax(a, b);
      auto it = mid.find(key);
      if (it != mid.end()) return it->second;
      v.push_back(((v[a] + v[b]) * 0.5).Normalized());
      const uint32_t i = static_cast<uint32_t>(v.size() - 1);
      mid[key] = i;
      return i;
    };
    std::vector<TriangleMesh::Indices> g;
    for (const auto& tri : f) {
      const uint32_t a = midpoint(tri[0], tri[1]), b = midpoint(tri[1], tri[2]),
                     c = midpoint(tri[2], tri[0]);
      g.push_back({tri[0], a, c});
      g.push_back({tri[1], b, a});
      g.push_back({tri[2], c, b});
      g.push_back({a, b, c});
    }
    f = std::move(g);
  }
  MeshData m;
  for (const Vec3& p : v) m.vertices.push_back(center + p * radius);
  m.triangles = f;
  return m;
}

/// Height of the wavy test terrain at (x, z).
inline double WavyHeight(double x, double z) {
  return 0.8 * std::sin(0.37 * x) * std::cos(0.23 * z) + 0.3 * std::sin(1.1 * x + 0.7 * z);
}

/// A grid of n x n cells of size `cell` (2 n^2 triangles) over the wavy
/// terrain, split like a heightfield (diagonal p(r,c)..p(r+1,c+1)).
inline MeshData WavyGrid(int n, double cell, bool flat = false) {
  MeshData m;
  for (int r = 0; r <= n; ++r) {
    for (int c = 0; c <= n; ++c) {
      const double x = c * cell, z = r * cell;
      m.vertices.push_back({x, flat ? 0.0 : WavyHeight(x, z), z});
    }
  }
  const uint32_t cols = static_cast<uint32_t>(n + 1);
  for (uint32_t r = 0; r < static_cast<uint32_t>(n); ++r) {
    for (uint32_t c = 0; c < static_cast<uint32_t>(n); ++c) {
      // FORMAT.md's heightfield split: (p(r,c), p(r+1,c), p(r+1,c+1)), (p(r,c), p(r+1,c+1), p(r,c+1)).
      const uint32_t a = r * cols + c, b = (r + 1) * cols + c, d = (r + 1) * cols + c + 1,
                     e = r * cols + c + 1;
      m.triangles.push_back({a, b, d});
      m.triangles.push_back({a, d, e});
    }
  }
  return m;
}

/// A mesh of WavyGrid(n, cell), its vertices jittered by up to `jitter`.
inline Shape JitteredGrid(Random& rng, int n, double cell, double jitter) {
  const MeshData d = WavyGrid(n, cell);
  TriangleMeshShape m;
  for (const Vec3& v : d.vertices) m.vertices.push_back(v + rng.InBox(jitter));
  for (const auto& t : d.triangles) m.triangles.push_back({t[0], t[1], t[2]});
  return *Shape::Make(m);
}

/// Reference closest ray hit over every triangle (same tie-break as the mesh:
/// smallest fraction, then smallest triangle index).
inline bool BruteRaycast(const TriangleMesh& mesh, const Vec3& o, const Vec3& d, MeshRayHit* out) {
  const WatertightRay ray(o, d);
  bool found = false;
  for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
    Vec3 v[3];
    mesh.TriangleVertices(k, v);
    TriangleRayHit h;
    if (!RayTriangleWatertight(ray, v[0], v[1], v[2], 1.0, &h)) continue;
    const uint32_t orig = mesh.OriginalIndex(k);
    if (!found || h.t < out->fraction || (h.t == out->fraction && orig < out->triangle)) {
      found = true;
      out->fraction = h.t;
      out->triangle = orig;
    }
  }
  return found;
}

/// Every triangle of `surface` (TriangleMesh or Heightfield) the ray
/// o + t * d, t in [0, 1], hits, one entry each (brute force over the
/// triangles whose boxes meet the ray's box).
template <typename Surface>
void BruteRaycastAll(const Surface& surface, const Vec3& o, const Vec3& d,
                     std::vector<MeshRayHit>* hits) {
  if (d.LengthSq() == 0.0) return;
  const WatertightRay ray(o, d);
  surface.VisitOverlapping(Aabb().Union(o).Union(o + d), [&](uint32_t k) {
    Vec3 v[3];
    surface.TriangleVertices(k, v);
    TriangleRayHit h;
    if (RayTriangleWatertight(ray, v[0], v[1], v[2], 1.0, &h)) {
      hits->push_back({h.t, FacingNormal(v[0], v[1], v[2], d), surface.OriginalIndex(k)});
    }
    return true;
  });
}

/// Triangles of `surface` within `radius` of segment [p0, p1] (a sphere when
/// p0 == p1), with one contact each when `contacts` is given; else stops at
/// the first when `first_only`. True when any is touched.
template <typename Surface>
bool BruteOverlapCapsule(const Surface& surface, const Vec3& p0, const Vec3& p1, double radius,
                         bool first_only, std::vector<SurfaceContactHit>* contacts) {
  bool any = false;
  const double r2 = radius * radius;
  surface.VisitOverlapping(Aabb().Union(p0).Union(p1).Expanded(radius), [&](uint32_t k) {
    Vec3 v[3];
    surface.TriangleVertices(k, v);
    Vec3 on_seg = p0, on_tri;
    const double d2 = p0 == p1
                          ? PointTriangleDistanceSq(p0, v[0], v[1], v[2], &on_tri)
                          : SegmentTriangleDistanceSq(p0, p1, v[0], v[1], v[2], &on_seg, &on_tri);
    if (d2 > r2) return true;
    any = true;
    if (contacts != nullptr) {
      SurfaceContactHit c;
      c.triangle = surface.OriginalIndex(k);
      c.point_on_mesh = on_tri;
      BallTriangleContact(on_seg, on_tri, d2, radius, TriangleNormal(v[0], v[1], v[2]),
                          &c.normal, &c.depth, &c.point_on_query);
      contacts->push_back(c);
    }
    return !first_only || contacts != nullptr;
  });
  return any;
}

/// BruteOverlapCapsule for the sphere of `radius` about `center`.
template <typename Surface>
bool BruteOverlapSphere(const Surface& surface, const Vec3& center, double radius,
                        bool first_only, std::vector<SurfaceContactHit>* contacts) {
  return BruteOverlapCapsule(surface, center, center, radius, first_only, contacts);
}

/// First contact of a sphere moving from `center` by `translation` with
/// `surface`: the closed form on every triangle whose box meets the swept
/// box (earliest, then the lowest input triangle).
template <typename Surface>
CastResult BruteSweepSphere(const Surface& surface, const Vec3& center, double radius,
                            const Vec3& translation) {
  CastResult out;
  const Aabb box = Aabb::FromCenterExtents(center, Vec3::Splat(radius))
                       .Swept(translation)
                       .Expanded(1e-9 * radius);
  bool found = false;
  surface.VisitOverlapping(box, [&](uint32_t k) {
    Vec3 v[3];
    surface.TriangleVertices(k, v);
    const CastResult s = SweepSphereTriangle(center, radius, translation, 1.0, v[0], v[1], v[2],
                                             surface.ActiveEdges(k));
    const uint32_t orig = surface.OriginalIndex(k);
    if (s.hit() && (!found || s.fraction < out.fraction ||
                    (s.fraction == out.fraction && orig < out.sub_shape))) {
      found = true;
      out.state = s.state;  // kHit or kStartedOverlapping
      out.fraction = s.fraction;
      out.normal = s.normal;
      out.point = s.point;
      out.sub_shape = orig;
    }
    return true;
  });
  return out;
}

}  // namespace hitbox::testing
