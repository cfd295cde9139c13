// Heightfield: validation, storage per sample, FORMAT.md triangle numbering,
// and every query against the same surface built as a TriangleMesh.
#include "geometry/heightfield.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "mesh_util.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::Random;
using testing::VecNear;
using testing::WavyHeight;

/// Heights of a rows x cols wavy terrain, rounded to `digits` decimals (-1: not rounded).
std::vector<double> WavyHeights(uint32_t rows, uint32_t cols, double dx, double dz, int digits) {
  std::vector<double> h;
  const double p = std::pow(10.0, digits);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t c = 0; c < cols; ++c) {
      const double v = 2.0 * WavyHeight(c * dx, r * dz);
      h.push_back(digits >= 0 ? std::nearbyint(v * p) / p : v);
    }
  }
  return h;
}

Heightfield MustBuild(uint32_t rows, uint32_t cols, double dx, double dz,
                      const std::vector<double>& h) {
  auto r = Heightfield::Build(rows, cols, dx, dz, h);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

// Bad sizes and heights are named.
TEST(HeightfieldBuild, InvalidInputIsNamed) {
  std::vector<double> h(12, 0.0);
  EXPECT_FALSE(Heightfield::Build(1, 12, 1, 1, h).ok());
  auto r = Heightfield::Build(3, 5, 1, 1, h);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "heights: 12 values, expected rows * cols = 15");
  r = Heightfield::Build(3, 4, 0.0, 1, h);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("cell_size[0]", 0), 0u);
  // Cell sizes are sizes: [1e-7, 1e6]. A denormal one (found by the geometry
  // fuzzer, fuzz/corpus/geometry/regress-heightfield-denormal-cell) gave NaN
  // raycast fractions.
  r = Heightfield::Build(3, 4, 1, 2.3e-316, h);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("cell_size[1]: must be in [1e-7, 1e6], got 2.29", 0), 0u)
      << r.error().message;
  EXPECT_FALSE(Heightfield::Build(3, 4, 9e-8, 1, h).ok());
  EXPECT_FALSE(Heightfield::Build(3, 4, 1, 2e6, h).ok());
  EXPECT_TRUE(Heightfield::Build(3, 4, 1e-7, 1e6, h).ok());
  h[7] = std::nan("");
  r = Heightfield::Build(3, 4, 1, 1, h);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("heights[7]: nan", 0), 0u) << r.error().message;
}

// Samples take 4 bytes when decimal (micrometres) or float-exact, 8 otherwise.
TEST(HeightfieldBuild, StoragePerSample) {
  const Heightfield dec = MustBuild(129, 129, 1, 1, WavyHeights(129, 129, 1, 1, 6));
  EXPECT_EQ(dec.bytes_per_sample(), 4);
  std::vector<double> fl = WavyHeights(33, 33, 1, 1, -1);
  for (double& v : fl) v = static_cast<double>(static_cast<float>(v) * 1.0009765625f);
  EXPECT_EQ(MustBuild(33, 33, 1, 1, fl).bytes_per_sample(), 4);
  EXPECT_EQ(MustBuild(33, 33, 1, 1, WavyHeights(33, 33, 1, 1, -1)).bytes_per_sample(), 8);
  const double samples = 129.0 * 129.0;
  std::printf("129 x 129 heightfield: %.2f bytes/sample (4 sample + %.2f hierarchy)\n",
              static_cast<double>(dec.MemoryBytes()) / samples,
              static_cast<double>(dec.HierarchyBytes()) / samples);
  EXPECT_LE(static_cast<double>(dec.MemoryBytes()) / samples, 7.0);
  // Decoded heights (q / 1e6) are exactly the micrometre input.
  const std::vector<double> h = WavyHeights(129, 129, 1, 1, 6);
  for (uint32_t i = 0; i < h.size(); ++i) ASSERT_EQ(dec.Height(i / 129, i % 129), h[i]);
}

// Triangle numbering and diagonal follow FORMAT.md.
TEST(HeightfieldBuild, TriangleNumberingFollowsFormat) {
  const std::vector<double> h = {0, 1, 2, 3, 4, 5};  // 2 rows x 3 cols
  const Heightfield hf = MustBuild(2, 3, 1.0, 2.0, h);
  Vec3 v[3];
  hf.TriangleVertices(2, v);  // cell (0, 1), first triangle: p(0,1), p(1,1), p(1,2)
  EXPECT_EQ(v[0], (Vec3{1, 1, 0}));
  EXPECT_EQ(v[1], (Vec3{1, 4, 2}));
  EXPECT_EQ(v[2], (Vec3{2, 5, 2}));
  hf.TriangleVertices(3, v);  // second triangle: p(0,1), p(1,2), p(0,2)
  EXPECT_EQ(v[1], (Vec3{2, 5, 2}));
  EXPECT_EQ(v[2], (Vec3{2, 2, 0}));
  MeshRayHit hit;
  // Straight down through cell (0, 1) on the p(0,2) side of the diagonal.
  ASSERT_TRUE(hf.RaycastClosest({1.8, 10, 0.4}, {0, -20, 0}, &hit));
  EXPECT_EQ(hit.triangle, 3u);
}

// Rays, overlaps and sweeps answer like the equivalent mesh, within 1e-9;
// near origin and 20 km away; square and rectangular cells.
TEST(HeightfieldQueries, SameAsEquivalentMesh) {
  Random rng(404);
  struct Setup {
    uint32_t rows, cols;
    double dx, dz;
    Vec3 offset;
  };
  int ray_hits = 0, overlaps = 0, sweeps = 0;
  for (const Setup& s : {Setup{65, 65, 1.0, 1.0, {}}, Setup{33, 47, 0.5, 0.75, {}},
                         Setup{20, 9, 2.0, 0.3, {}}, Setup{65, 65, 1.0, 1.0, {20000, 0, -8000}}}) {
    const Heightfield hf = MustBuild(s.rows, s.cols, s.dx, s.dz,
                                     WavyHeights(s.rows, s.cols, s.dx, s.dz, 6));
    auto mr = hf.ToMesh();
    ASSERT_TRUE(mr.ok());
    const TriangleMesh& mesh = *mr;
    ASSERT_EQ(mesh.triangle_count(), hf.triangle_count());
    // Same active edges for every triangle.
    std::vector<EdgeFlags> mesh_flags(mesh.triangle_count());
    for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
      mesh_flags[mesh.OriginalIndex(k)] = mesh.ActiveEdges(k);
    }
    for (uint32_t t = 0; t < hf.triangle_count(); ++t) ASSERT_EQ(hf.ActiveEdges(t), mesh_flags[t]);
    const Aabb b = hf.bounds();
    for (int i = 0; i < 3000; ++i) {
      // Queries in the field's frame; 20 km away the caller's world point
      // (offset + local) is transformed back, as a collider would.
      const Vec3 local_o = b.Center() + Mul(rng.InBox(1.3), b.Extents() + Vec3{1, 3, 1});
      const Vec3 world_o = s.offset + local_o;
      const Vec3 o = world_o - s.offset;
      const Vec3 target = b.Center() + Mul(rng.InBox(1.0), b.Extents());
      const Vec3 d = (target - o) * rng.Uniform(0.2, 1.5);
      MeshRayHit a, m;
      const bool ha = hf.RaycastClosest(o, d, &a);
      const bool hm = mesh.RaycastClosest(o, d, &m);
      ASSERT_EQ(ha, hm) << ToString(o) << " " << ToString(d);
      if (ha) {
        ++ray_hits;
        EXPECT_NEAR(a.fraction, m.fraction, 1e-9);
        if (a.triangle != m.triangle) {
          // A shared edge: both triangles hit at the same fraction.
          Vec3 v[3];
          hf.TriangleVertices(m.triangle, v);
          EXPECT_TRUE(RayTriangleWatertight(WatertightRay(o, d), v[0], v[1], v[2], 1.0, nullptr));
        } else {
          EXPECT_TRUE(VecNear(a.normal, m.normal, 1e-12));
        }
        std::vector<MeshRayHit> all_a, all_m;
        testing::BruteRaycastAll(hf, o, d, &all_a);
        testing::BruteRaycastAll(mesh, o, d, &all_m);
        EXPECT_EQ(all_a.size(), all_m.size());
      }
      const double r = rng.Uniform(0.05, 1.2);
      const Vec3 c = b.Center() + Mul(rng.InBox(1.1), b.Extents() + Vec3{0, r, 0});
      std::vector<SurfaceContactHit> ca, cm;
      const bool oa = testing::BruteOverlapSphere(hf, c, r, false, &ca);
      EXPECT_EQ(oa, testing::BruteOverlapSphere(mesh, c, r, false, &cm));
      EXPECT_EQ(ca.size(), cm.size());
      const Vec3 p1 = c + rng.InBox(1.0);
      ca.clear();
      cm.clear();
      EXPECT_EQ(testing::BruteOverlapCapsule(hf, c, p1, r, false, &ca), testing::BruteOverlapCapsule(mesh, c, p1, r, false, &cm));
      EXPECT_EQ(ca.size(), cm.size());
      overlaps += oa;
      const CastResult sa = testing::BruteSweepSphere(hf, o, r, d);
      const CastResult sm = testing::BruteSweepSphere(mesh, o, r, d);
      ASSERT_EQ(sa.state, sm.state) << ToString(o) << " " << ToString(d) << " r " << r;
      if (sa.state != CastState::kMiss) {
        ++sweeps;
        EXPECT_NEAR(sa.fraction, sm.fraction, 1e-9);
        if (sa.sub_shape == sm.sub_shape) {
          EXPECT_TRUE(VecNear(sa.normal, sm.normal, 1e-9));
        }
      }
    }
  }
  std::printf("%d ray hits, %d sphere overlaps, %d sweep hits compared\n", ray_hits, overlaps,
              sweeps);
  EXPECT_GT(ray_hits, 3000);
  EXPECT_GT(overlaps, 1000);
  EXPECT_GT(sweeps, 3000);
}

// Watertight on a heightfield: rays straight down and slanted through every
// vertex and edge midpoint of a patch all hit.
TEST(HeightfieldQueries, WatertightThroughVerticesAndEdges) {
  const Heightfield hf = MustBuild(17, 17, 0.5, 0.5, WavyHeights(17, 17, 0.5, 0.5, 6));
  int count = 0;
  for (uint32_t t = 0; t < hf.triangle_count(); ++t) {
    Vec3 v[3];
    hf.TriangleVertices(t, v);
    for (int e = 0; e < 3; ++e) {
      for (const Vec3& p : {v[e], (v[e] + v[(e + 1) % 3]) * 0.5}) {
        if (p.x <= 0.0 || p.z <= 0.0 || p.x >= 8.0 || p.z >= 8.0) continue;  // interior only
        for (const Vec3& dir : {Vec3{0, -1, 0}, Vec3{0.2, -1, -0.15}, Vec3{-0.25, -1, 0.2}}) {
          MeshRayHit hit;
          ASSERT_TRUE(hf.RaycastClosest(p - dir * 5.0, dir * 10.0, &hit)) << ToString(p);
          ++count;
        }
      }
    }
  }
  std::printf("%d rays through heightfield vertices and edges, all hit\n", count);
}

// Rays through vertices and edge points (shared by several triangles) from
// random directions, a few straight down: the closest hit equals brute force
// over the triangles of the same surface as a mesh, fraction and triangle,
// whatever order the blocks are visited in.
TEST(HeightfieldQueries, RaysThroughSharedVerticesMatchBruteForce) {
  Random rng(41);
  const Heightfield hf = MustBuild(17, 23, 0.5, 0.75, WavyHeights(17, 23, 0.5, 0.75, 6));
  auto mr = hf.ToMesh();
  ASSERT_TRUE(mr.ok());
  const TriangleMesh& mesh = *mr;
  int hits = 0;
  for (int i = 0; i < 6000; ++i) {
    Vec3 v[3];
    hf.TriangleVertices(static_cast<uint32_t>(rng.Int(0, static_cast<int>(hf.triangle_count()) - 1)),
                        v);
    const int e = rng.Int(0, 2);
    const Vec3 p = i % 2 ? v[e] : v[e] + (v[(e + 1) % 3] - v[e]) * rng.Uniform(0.0, 1.0);
    const Vec3 d = i % 7 == 0 ? Vec3{0, -3, 0} : rng.UnitVector() * rng.Uniform(0.5, 6.0);
    const Vec3 o = p - d * rng.Uniform(0.1, 0.9);
    MeshRayHit got, want;
    const bool g = hf.RaycastClosest(o, d, &got);
    ASSERT_EQ(g, testing::BruteRaycast(mesh, o, d, &want)) << ToString(o) << " " << ToString(d);
    if (!g) continue;
    ++hits;
    EXPECT_EQ(got.fraction, want.fraction);
    EXPECT_EQ(got.triangle, want.triangle) << ToString(o) << " " << ToString(d);
  }
  EXPECT_GT(hits, 3000);
}

}  // namespace
}  // namespace hitbox
