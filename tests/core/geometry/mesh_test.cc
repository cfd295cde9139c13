// TriangleMesh: build validation, active edges, memory, and every query
// against brute force over every triangle; watertightness on closed meshes;
// 20 km from the origin like at the origin; the raycasts of the next/ case
// files evaluated directly on the mesh colliders.
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collision/triangles/surface_deepest_contact.h"
#include "collision/triangles/surface_sweep.h"
#include "geometry/heightfield.h"
#include "geometry/mesh_parts.h"
#include "geometry/sah_split.h"
#include "geometry/triangle_mesh.h"
#include "mesh_util.h"
#include "shape/convex_core.h"
#include "shape/surface_data.h"
#include "surface_sweep_any.h"
#include "test_util.h"

namespace hitbox {
namespace {

using testing::BoxMesh;
using testing::BruteOverlapCapsule;
using testing::BruteOverlapSphere;
using testing::BruteRaycast;
using testing::BruteRaycastAll;
using testing::BruteSweepSphere;
using testing::IcoSphere;
using testing::MeshData;
using testing::Random;
using testing::VecNear;
using testing::WavyGrid;

TriangleMesh MustBuild(const MeshData& m) {
  auto r = TriangleMesh::Build(m.vertices, m.triangles);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

// The mesh's closest hit of ray o + t d is the brute force's (fraction and
// triangle); true when it hits.
bool ExpectClosestAsBruteForce(const TriangleMesh& mesh, const Vec3& o, const Vec3& d) {
  MeshRayHit got, want;
  const bool g = mesh.RaycastClosest(o, d, &got);
  EXPECT_EQ(g, BruteRaycast(mesh, o, d, &want)) << ToString(o) << " " << ToString(d);
  if (!g) return false;
  EXPECT_EQ(got.fraction, want.fraction) << ToString(o) << " " << ToString(d);
  EXPECT_EQ(got.triangle, want.triangle) << ToString(o) << " " << ToString(d);
  return true;
}

// The mesh's Input() is `m` to the bit: every vertex, every triangle.
void ExpectInputIs(const TriangleMesh& mesh, const MeshData& m) {
  std::vector<Vec3> vertices;
  std::vector<TriangleMesh::Indices> triangles;
  mesh.Input(&vertices, &triangles);
  ASSERT_EQ(vertices.size(), m.vertices.size());
  EXPECT_EQ(std::memcmp(vertices.data(), m.vertices.data(), vertices.size() * sizeof(Vec3)), 0);
  EXPECT_EQ(triangles, m.triangles);
}

// Bad input names the triangle and corner, or the vertex and axis.
// The build's boxes on the hierarchy's 16-bit grid: a grid value
// quantizes back to its own step, either way, and a stored box holds the
// box given (rounded outwards), on grids far from the origin and of tiny
// steps too.
TEST(MeshBuild, BuildBoxesKeepTheirBoxesOnTheGrid) {
  Random rng(4101);
  for (const double lo : {0.0, -3.7, 12345.678, -1e6 + 0.1}) {
    for (const double step : {0x1p-20, 0x1p-7, 0x1p-1, 0x1p4}) {
      for (int i = 0; i < 2000; ++i) {
        const auto q = static_cast<uint32_t>(rng.Uniform(0.0, 65535.999));
        const double v = GridValue(q, lo, step);
        ASSERT_EQ(GridQuantize(v, lo, step, false), q) << lo << " " << step << " " << q;
        ASSERT_EQ(GridQuantize(v, lo, step, true), q) << lo << " " << step << " " << q;
      }
      const Vec3 origin = Vec3::Splat(lo), steps = Vec3::Splat(step);
      BuildBoxes boxes(500, origin, steps);
      std::vector<Aabb> given;
      for (size_t i = 0; i < 500; ++i) {
        const Vec3 a = origin + Mul(Vec3{rng.Uniform(0, 1), rng.Uniform(0, 1), rng.Uniform(0, 1)},
                                    steps * 60000.0);
        const Aabb box = Aabb().Union(a).Union(a + rng.InBox(1.0).Abs() * step * 100.0);
        boxes.Set(i, box);
        given.push_back(box);
      }
      for (size_t i = 0; i < 500; ++i) {
        const Aabb b = boxes[i];
        for (int a = 0; a < 3; ++a) {
          ASSERT_LE(b.min[a], given[i].min[a]) << i;
          ASSERT_GE(b.max[a], given[i].max[a]) << i;
          ASSERT_LE(given[i].min[a] - b.min[a], step) << i;  // the nearest grid value out
          ASSERT_LE(b.max[a] - given[i].max[a], step) << i;
        }
      }
    }
  }
}

TEST(MeshBuild, InvalidInputIsNamed) {
  MeshData m = IcoSphere(1.0, 2);  // 162 vertices
  m.triangles[17][2] = 900;
  auto r = TriangleMesh::Build(m.vertices, m.triangles);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message, "triangles[17][2]: vertex index 900 out of range (162 vertices)");

  m = IcoSphere(1.0, 1);
  m.vertices[5].y = std::nan("");
  r = TriangleMesh::Build(m.vertices, m.triangles);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("vertices[5][1]: y is not finite", 0), 0u) << r.error().message;

  m = IcoSphere(1.0, 1);
  m.vertices[3].z = 2e9;
  r = TriangleMesh::Build(m.vertices, m.triangles);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("vertices[3][2]: z = 2000000000 out of range", 0), 0u)
      << r.error().message;

  r = TriangleMesh::Build(m.vertices, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "triangles: mesh has no triangles");
  r = TriangleMesh::Build({}, m.triangles);
  ASSERT_FALSE(r.ok());

  const std::vector<Vec3> line = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}};
  const std::vector<TriangleMesh::Indices> flat = {{0, 1, 2}, {0, 0, 1}};
  r = TriangleMesh::Build(line, flat);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "triangles: all 2 triangles have zero area");
}

// Zero-area triangles are dropped and counted; survivors keep their input index.
TEST(MeshBuild, DropsZeroAreaTriangles) {
  MeshData m = BoxMesh(1.0);
  m.triangles.insert(m.triangles.begin() + 3, {0, 0, 1});
  m.triangles.push_back({2, 2, 2});
  const TriangleMesh mesh = MustBuild(m);
  EXPECT_EQ(mesh.dropped_triangles(), 2u);
  EXPECT_EQ(mesh.triangle_count(), 12u);
  MeshRayHit hit;
  // The +y face is input triangles 6, 7 shifted by one (the inserted one at 3).
  ASSERT_TRUE(mesh.RaycastClosest({0.2, 5, 0.7}, {0, -10, 0}, &hit));
  EXPECT_NE(hit.triangle, 3u);
  EXPECT_DOUBLE_EQ(hit.fraction, 0.4);
  EXPECT_EQ(hit.normal, (Vec3{0, 1, 0}));
}

/// Fatal failures unless `b` is the mesh `a` is: the same triangles,
/// flags, original indices, bytes and input to the bit.
void ExpectSameMesh(const Result<Shape>& a, const Result<Shape>& b) {
  ASSERT_TRUE(a.ok() && b.ok());
  const TriangleMesh& ma = *a->surface()->mesh();
  const TriangleMesh& mb = *b->surface()->mesh();
  ASSERT_EQ(ma.triangle_count(), mb.triangle_count());
  EXPECT_EQ(ma.dropped_triangles(), mb.dropped_triangles());
  EXPECT_EQ(ma.MemoryBytes(), mb.MemoryBytes());
  for (uint32_t k = 0; k < ma.triangle_count(); ++k) {
    Vec3 va[3], vb[3];
    ma.TriangleVertices(k, va);
    mb.TriangleVertices(k, vb);
    for (int c = 0; c < 3; ++c) ASSERT_EQ(va[c], vb[c]) << k;
    ASSERT_EQ(ma.OriginalIndex(k), mb.OriginalIndex(k)) << k;
    ASSERT_EQ(ma.ActiveEdges(k), mb.ActiveEdges(k)) << k;
  }
  MeshData input;
  ma.Input(&input.vertices, &input.triangles);
  ExpectInputIs(mb, input);
}

/// `grid` with zero-area triangles added first, in the middle and last.
MeshData WithDrops(MeshData grid) {
  grid.triangles.insert(grid.triangles.begin(), {5, 5, 6});
  grid.triangles.insert(grid.triangles.begin() + 700, {7, 8, 8});
  grid.triangles.push_back({9, 9, 9});
  return grid;
}

// A mesh given as float32 vertices builds the mesh its doubles build: the
// same triangles, flags, original indices and bytes, with zero-area
// triangles dropped first, in the middle and last, or none.
TEST(MeshBuild, FloatVerticesBuildTheMeshOfTheirDoubles) {
  // The grid's coordinates rounded to float32 (stored as floats, then widened).
  const MeshData wavy = WavyGrid(40, 0.37);
  std::vector<float> xyz;
  for (const Vec3& v : wavy.vertices) {
    xyz.insert(xyz.end(),
               {static_cast<float>(v.x), static_cast<float>(v.y), static_cast<float>(v.z)});
  }
  MeshData grid;
  for (size_t i = 0; i < xyz.size(); i += 3) {
    grid.vertices.push_back({xyz[i], xyz[i + 1], xyz[i + 2]});
  }
  grid.triangles = wavy.triangles;
  for (const bool drops : {false, true}) {
    const MeshData m = drops ? WithDrops(grid) : grid;
    FloatTriangleMeshShape floats{xyz, m.triangles};
    const Result<Shape> a = Shape::Make(TriangleMeshShape{m.vertices, m.triangles});
    const Result<Shape> b = Shape::Make(std::move(floats));
    EXPECT_TRUE(floats.vertices.empty() && floats.triangles.empty());  // given up
    ASSERT_NO_FATAL_FAILURE(ExpectSameMesh(a, b));
    ExpectInputIs(*b->surface()->mesh(), m);
    EXPECT_EQ(b->surface()->mesh()->dropped_triangles(), drops ? 3u : 0u);
  }
}

// A mesh given as decimal vertices (q / 10^6, -0 among them) builds the
// mesh their doubles build (which keeps no -0), with or without zero-area
// triangles.
TEST(MeshBuild, DecimalVerticesBuildTheMeshOfTheirDoubles) {
  const MeshData wavy = WavyGrid(40, 0.37);
  constexpr double kDivisor = 1e6;
  std::vector<int32_t> q;
  MeshData grid;
  for (const Vec3& v : wavy.vertices) {
    for (int a = 0; a < 3; ++a) {
      q.push_back(static_cast<int32_t>(std::llround(v[a] * kDivisor)));
      if (q.back() == 0 && q.size() % 2 == 0) q.back() = kDecimalNegativeZero;
    }
    const size_t i = q.size() - 3;
    grid.vertices.push_back({DecimalValue(q[i], kDivisor), DecimalValue(q[i + 1], kDivisor),
                             DecimalValue(q[i + 2], kDivisor)});
  }
  ASSERT_NE(std::count(q.begin(), q.end(), kDecimalNegativeZero), 0);
  grid.triangles = wavy.triangles;
  for (const bool drops : {false, true}) {
    const MeshData m = drops ? WithDrops(grid) : grid;
    DecimalTriangleMeshShape decimals{q, kDivisor, m.triangles};
    const Result<Shape> a = Shape::Make(TriangleMeshShape{m.vertices, m.triangles});
    const Result<Shape> b = Shape::Make(std::move(decimals));
    EXPECT_TRUE(decimals.vertices.empty() && decimals.triangles.empty());  // given up
    ASSERT_NO_FATAL_FAILURE(ExpectSameMesh(a, b));
    EXPECT_EQ(b->surface()->mesh()->dropped_triangles(), drops ? 3u : 0u);
  }
}

// Flat internal edges are inactive; the box's cube edges and a grid's border active.
TEST(MeshBuild, ActiveEdges) {
  const TriangleMesh box = MustBuild(BoxMesh(1.0));
  int active = 0;
  for (uint32_t k = 0; k < box.triangle_count(); ++k) {
    for (int e = 0; e < 3; ++e) active += (box.ActiveEdges(k) >> e) & 1;
  }
  EXPECT_EQ(active, 24);  // 12 cube edges, each seen from two triangles; diagonals inactive
  const int n = 8;
  const TriangleMesh grid = MustBuild(WavyGrid(n, 1.0, /*flat=*/true));
  active = 0;
  for (uint32_t k = 0; k < grid.triangle_count(); ++k) {
    for (int e = 0; e < 3; ++e) active += (grid.ActiveEdges(k) >> e) & 1;
  }
  EXPECT_EQ(active, 4 * n);  // only the border
}

// A fan's spokes (many edges through its centre, coplanar faces) are
// inactive and its rim active; an edge three triangles share is active in
// all three.
TEST(MeshBuild, ActiveEdgesOfFansAndSharedEdges) {
  MeshData fan;
  const int spokes = 40;
  fan.vertices.push_back({0, 0, 0});
  for (int i = 0; i < spokes; ++i) {
    const double a = 2.0 * M_PI * i / spokes;
    fan.vertices.push_back({std::cos(a), 0, std::sin(a)});
  }
  for (int i = 0; i < spokes; ++i) {
    fan.triangles.push_back({0, static_cast<uint32_t>(1 + (i + 1) % spokes),
                             static_cast<uint32_t>(1 + i)});
  }
  const auto count_active = [](const TriangleMesh& m) {
    int active = 0;
    for (uint32_t k = 0; k < m.triangle_count(); ++k) {
      for (int e = 0; e < 3; ++e) active += (m.ActiveEdges(k) >> e) & 1;
    }
    return active;
  };
  EXPECT_EQ(count_active(MustBuild(fan)), spokes);
  fan.vertices.push_back({0, 1, 0});
  fan.triangles.push_back({0, 1, static_cast<uint32_t>(spokes + 1)});  // on spoke 0-1
  EXPECT_EQ(count_active(MustBuild(fan)), spokes + 2 + 3);
}

// A mesh large enough that its edges are grouped a run of vertices at a
// time (more edges than triangles): every flag equals the rule applied to
// all edges at once, fins (an edge three triangles share) included.
TEST(MeshBuild, ActiveEdgesOfALargeMeshMatchEveryEdgeAtOnce) {
  MeshData m = WavyGrid(190, 0.6);
  const uint32_t grid_vertices = static_cast<uint32_t>(m.vertices.size());
  for (uint32_t i = 0; i < 50; ++i) {  // fins on the edges (a, a + 1) of row 0 and up
    const uint32_t a = 191 * (3 * i) + 2 * i;
    m.vertices.push_back(m.vertices[a] + Vec3{0.3, 2.0, 0.0});
    m.triangles.push_back({a, a + 1, grid_vertices + i});
  }
  const TriangleMesh mesh = MustBuild(m);
  ASSERT_GT(3 * mesh.triangle_count(), 2 * (1u << 16));
  std::map<std::pair<uint32_t, uint32_t>, std::vector<std::pair<uint32_t, uint32_t>>> shared;
  for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
    uint32_t idx[3];
    mesh.TriangleIndices(k, idx);
    for (uint32_t s = 0; s < 3; ++s) {
      const uint32_t a = idx[s], b = idx[(s + 1) % 3];
      shared[{std::min(a, b), std::max(a, b)}].push_back({k, s});
    }
  }
  const auto normal = [&](uint32_t k) {
    Vec3 v[3];
    mesh.TriangleVertices(k, v);
    return Cross(v[1] - v[0], v[2] - v[0]).Normalized();
  };
  std::vector<uint8_t> want(mesh.triangle_count(), 0);
  int inactive = 0;
  for (const auto& [edge, sides] : shared) {
    bool active = true;
    if (sides.size() == 2) {
      uint32_t a[3], b[3];
      mesh.TriangleIndices(sides[0].first, a);
      mesh.TriangleIndices(sides[1].first, b);
      const double flip = a[sides[0].second] == b[sides[1].second] ? -1.0 : 1.0;
      active =
          flip * Dot(normal(sides[0].first), normal(sides[1].first)) < std::cos(kActiveEdgeAngle);
    }
    inactive += active ? 0 : 1;
    for (const auto& [k, s] : sides) want[k] |= static_cast<uint8_t>(active ? 1u << s : 0u);
  }
  ASSERT_GT(inactive, 1000);
  ASSERT_LT(inactive, static_cast<int>(shared.size()) - 1000);
  for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
    ASSERT_EQ(static_cast<uint32_t>(mesh.ActiveEdges(k)), want[k]) << "triangle " << k;
  }
}

// A moved mesh keeps its block: move construction and assignment (which
// frees the block it replaces) leave one owner, whose Input() is the data.
TEST(MeshBuild, MovedMeshOwnsItsBlock) {
  const MeshData grid = WavyGrid(10, 0.731);
  TriangleMesh a = MustBuild(IcoSphere(1.0, 1));
  a = MustBuild(grid);
  TriangleMesh b(std::move(a));
  std::vector<Vec3> vertices;
  std::vector<TriangleMesh::Indices> triangles;
  b.Input(&vertices, &triangles);
  EXPECT_EQ(triangles, grid.triangles);
  ASSERT_EQ(vertices.size(), grid.vertices.size());
  EXPECT_EQ(std::memcmp(vertices.data(), grid.vertices.data(), vertices.size() * sizeof(Vec3)), 0);
}

// Memory: vertices, triangles (with original index and flags) and hierarchy.
TEST(MeshBuild, MemoryPerTriangle) {
  for (int n : {32, 100, 224}) {
    // Heights rounded to micrometres (like the case files): 32-bit vertices.
    MeshData data = WavyGrid(n, 0.5);
    for (Vec3& v : data.vertices) v.y = std::nearbyint(v.y * 1e6) / 1e6;
    const TriangleMesh grid = MustBuild(data);
    EXPECT_TRUE(grid.quantized_vertices());
    const double per = static_cast<double>(grid.MemoryBytes()) / grid.triangle_count();
    std::printf("wavy grid %u triangles: %zu bytes, %.2f bytes/triangle, %zu nodes, "
                "quantized vertices: %d\n",
                grid.triangle_count(), grid.MemoryBytes(), per, grid.node_count(),
                grid.quantized_vertices());
    EXPECT_LE(per, 14.0);
  }
  const TriangleMesh ico = MustBuild(IcoSphere(3.0, 4));
  const double per_ico = static_cast<double>(ico.MemoryBytes()) / ico.triangle_count();
  std::printf("icosphere %u triangles: %.2f bytes/triangle (double vertices)\n",
              ico.triangle_count(), per_ico);
  EXPECT_FALSE(ico.quantized_vertices());
  EXPECT_LE(per_ico, 40.0);
}

// MemoryBytes() is exactly the storage the mesh's form implies: float32 or
// double vertices, the packed triangle records (and their 16 bytes of
// padding), 64-byte inner and 32-byte bottom nodes, the dropped triangles and
// the room for the mesh object behind them (one block, padded to 8 bytes);
// no array kept with spare capacity, none left out; Storage() splits it so.
TEST(MeshBuild, MemoryBytesIsTheStorage) {
  // Float vertices: 12 bytes each, or packed records and their codes.
  const auto float_bytes = [](const TriangleMesh& m) -> size_t {
    if (m.float_record_bits() == 0) return 3 * sizeof(float) * m.vertex_count();
    return (size_t{m.vertex_count()} * m.float_record_bits() + 7) / 8 + 16 +
           4 * size_t{m.float_code_count()};
  };
  // MemoryBytes() and its split (Storage), each part from the mesh's counts.
  const auto expected = [](const TriangleMesh& m, size_t vertex_bytes) {
    const size_t records = (static_cast<size_t>(m.triangle_count()) * m.record_bits() + 7) / 8 +
                           16 + m.EscapeBytes();
    const size_t nodes = 64 * (m.node_count() - m.bottom_node_count()) + 32 * m.bottom_node_count();
    const size_t triangles = records + 16 * m.dropped_triangles() + 4 * m.original_base_count();
    const size_t arrays = vertex_bytes + triangles + nodes;
    const TriangleMesh::StorageBytes split = m.Storage();
    EXPECT_EQ(split.hierarchy, nodes);
    EXPECT_EQ(split.triangles, triangles);
    EXPECT_EQ(split.vertices, vertex_bytes);
    EXPECT_EQ(split.fixed, (arrays + 7) / 8 * 8 - arrays + TriangleMesh::FixedBytes());
    EXPECT_EQ(split.hierarchy + split.triangles + split.vertices + split.fixed, m.MemoryBytes());
    return (arrays + 7) / 8 * 8 + TriangleMesh::FixedBytes();
  };
  // Float32 coordinates of scattered exponents (no grid of at most 33 bits
  // an axis holds them), and one zero-area triangle that is dropped.
  MeshData data = WavyGrid(40, 0.731);
  std::mt19937 rng(29);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-30, 10);
  for (Vec3& v : data.vertices) {
    for (int a = 0; a < 3; ++a) v[a] = static_cast<float>(std::ldexp(unit(rng), exponent(rng)));
  }
  data.triangles.push_back({0, 0, 1});
  const TriangleMesh floats = MustBuild(data);
  ASSERT_TRUE(floats.float_vertices());
  EXPECT_EQ(floats.dropped_triangles(), 1u);
  EXPECT_GT(floats.original_base_count(), 0u);  // a grid's rows: predicted originals
  EXPECT_GT(floats.float_record_bits(), 0u);  // packed: fewer exponents than 2^9 an axis
  EXPECT_EQ(floats.MemoryBytes(), expected(floats, float_bytes(floats)));
  // Few vertices: their codes would cost more than plain floats save.
  MeshData few = data;
  few.vertices.resize(5);
  few.triangles = {{0, 1, 2}, {2, 3, 4}};
  const TriangleMesh plain = MustBuild(few);
  ASSERT_TRUE(plain.float_vertices());
  EXPECT_EQ(plain.float_record_bits(), 0u);
  EXPECT_EQ(plain.MemoryBytes(), expected(plain, float_bytes(plain)));
  const TriangleMesh doubles = MustBuild(IcoSphere(3.0, 3));
  ASSERT_FALSE(doubles.float_vertices());
  ASSERT_FALSE(doubles.quantized_vertices());
  EXPECT_EQ(doubles.MemoryBytes(), expected(doubles, sizeof(Vec3) * doubles.vertex_count()));
}

// Stored triangles give back exactly the input vertices, in order, whether the
// index differences are small (a grid), wrap around (shuffled vertices of a
// large mesh), the mesh is a single triangle (a root node with one leaf) or
// its records are wide (over 2^20 vertices: indices beyond one 64-bit load;
// nanometre coordinates over +-2000 m: 32 bits an axis); and whether the
// original indices are predicted from the first vertex (a grid's rows, one
// triangle turned so that its block's base wraps below zero) or kept whole
// (the triangles shuffled).
TEST(MeshBuild, TrianglesRoundTripExactly) {
  Random rng(7);
  MeshData grid = WavyGrid(40, 0.5);
  MeshData shuffled = grid;
  std::vector<uint32_t> perm(shuffled.vertices.size());
  for (uint32_t i = 0; i < perm.size(); ++i) perm[i] = i;
  for (size_t i = perm.size() - 1; i > 0; --i) {
    std::swap(perm[i], perm[static_cast<size_t>(rng.Int(0, static_cast<int>(i)))]);
  }
  for (size_t i = 0; i < perm.size(); ++i) shuffled.vertices[perm[i]] = grid.vertices[i];
  for (auto& tri : shuffled.triangles) {
    for (uint32_t& v : tri) v = perm[v];
  }
  MeshData one;
  one.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 0, 1}, {5, 5, 5}};
  one.triangles = {{2, 0, 1}};
  MeshData wide;
  wide.vertices.resize((1u << 20) + 5);
  for (Vec3& v : wide.vertices) {
    for (int a = 0; a < 3; ++a) v[a] = static_cast<double>(rng.Int(-2000000000, 2000000000)) / 1e9;
  }
  while (wide.triangles.size() < 300) {
    const int last = static_cast<int>(wide.vertices.size()) - 1;
    const std::array<uint32_t, 3> tri = {static_cast<uint32_t>(rng.Int(0, last)),
                                         static_cast<uint32_t>(rng.Int(0, last)),
                                         static_cast<uint32_t>(rng.Int(0, last))};
    if (tri[0] != tri[1] && tri[1] != tri[2] && tri[0] != tri[2]) wide.triangles.push_back(tri);
  }
  MeshData reordered = grid;
  for (size_t i = reordered.triangles.size() - 1; i > 0; --i) {
    std::swap(reordered.triangles[i],
              reordered.triangles[static_cast<size_t>(rng.Int(0, static_cast<int>(i)))]);
  }
  MeshData turned = grid;
  turned.triangles[0] = {turned.triangles[0][1], turned.triangles[0][2], turned.triangles[0][0]};
  ASSERT_GE(turned.triangles[0][0], 40u);  // original 0 below its block's slope term
  const TriangleMesh predicted = MustBuild(grid), whole = MustBuild(reordered);
  EXPECT_GT(predicted.original_base_count(), 0u);
  EXPECT_EQ(whole.original_base_count(), 0u);
  EXPECT_LE(predicted.record_bits() + 8, whole.record_bits());  // 3 residual bits, not 12
  EXPECT_GT(MustBuild(turned).original_base_count(), 0u);
  for (const MeshData* data : {&grid, &shuffled, &one, &wide, &reordered, &turned}) {
    const TriangleMesh mesh = MustBuild(*data);
    if (data == &wide) {
      EXPECT_TRUE(mesh.quantized_vertices());
      EXPECT_GT(mesh.record_bits(), 64u);
    }
    ASSERT_EQ(mesh.triangle_count(), data->triangles.size());
    std::vector<int> seen(data->triangles.size(), 0);
    for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
      const uint32_t t = mesh.OriginalIndex(k);
      ASSERT_LT(t, data->triangles.size());
      ++seen[t];
      Vec3 v[3];
      mesh.TriangleVertices(k, v);
      for (int c = 0; c < 3; ++c) {
        const Vec3& want = data->vertices[data->triangles[t][c]];
        EXPECT_TRUE(v[c].x == want.x && v[c].y == want.y && v[c].z == want.z)
            << "triangle " << t << " corner " << c;
      }
    }
    for (size_t t = 0; t < seen.size(); ++t) EXPECT_EQ(seen[t], 1) << "triangle " << t;
  }
}

// A grid of side `side` in 8 x 8 tiles, its vertices numbered in first use
// (an exporter's vertex-cache order): records escape there.
MeshData TiledGrid(uint32_t side) {
  constexpr uint32_t kTile = 8;
  const MeshData rows = WavyGrid(side, 0.731);
  MeshData tiles;
  std::vector<uint32_t> number(rows.vertices.size(), UINT32_MAX);
  const auto renumber = [&](uint32_t v) {
    if (number[v] == UINT32_MAX) {
      number[v] = static_cast<uint32_t>(tiles.vertices.size());
      tiles.vertices.push_back(rows.vertices[v]);
    }
    return number[v];
  };
  const uint32_t w = side + 1;
  for (uint32_t tr = 0; tr < side; tr += kTile) {
    for (uint32_t tc = 0; tc < side; tc += kTile) {
      for (uint32_t r = tr; r < std::min(tr + kTile, side); ++r) {
        for (uint32_t c = tc; c < std::min(tc + kTile, side); ++c) {
          const uint32_t a = r * w + c;
          tiles.triangles.push_back({renumber(a), renumber(a + w), renumber(a + 1)});
          tiles.triangles.push_back({renumber(a + 1), renumber(a + w), renumber(a + w + 1)});
        }
      }
    }
  }
  return tiles;
}

// A grid listed tile by tile with its vertices in first use order (as
// exporters that optimise for the vertex cache write meshes): the triangles
// on a tile's edge reach back to vertices numbered a tile row earlier, so
// their records escape (kept apart in full) instead of widening every
// record. Indices, originals, Input() and rays stay exact, and the memory
// estimate (its hierarchy approximate) counts the escapes.
TEST(MeshBuild, EscapedRecordsStayExact) {
  constexpr uint32_t kSide = 60;
  const MeshData rows = WavyGrid(kSide, 0.731);
  const MeshData tiles = TiledGrid(kSide);
  ASSERT_EQ(tiles.vertices.size(), rows.vertices.size());
  const TriangleMesh mesh = MustBuild(tiles);
  EXPECT_GT(mesh.escaped_triangles(), 0u);
  EXPECT_LT(mesh.escaped_triangles(), mesh.triangle_count() / 4);
  const double predicted =
      static_cast<double>(TriangleMesh::PredictMemoryBytes(tiles.vertices, tiles.triangles));
  EXPECT_NEAR(predicted / static_cast<double>(mesh.MemoryBytes()), 1.0, 0.05);
  std::vector<int> seen(tiles.triangles.size(), 0);
  for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
    const uint32_t t = mesh.OriginalIndex(k);
    ASSERT_LT(t, tiles.triangles.size());
    ++seen[t];
    uint32_t idx[3];
    mesh.TriangleIndices(k, idx);
    for (int c = 0; c < 3; ++c) EXPECT_EQ(idx[c], tiles.triangles[t][c]) << "triangle " << t;
  }
  for (size_t t = 0; t < seen.size(); ++t) EXPECT_EQ(seen[t], 1) << "triangle " << t;
  std::vector<Vec3> vertices;
  std::vector<TriangleMesh::Indices> triangles;
  mesh.Input(&vertices, &triangles);
  EXPECT_EQ(vertices, tiles.vertices);
  EXPECT_EQ(triangles, tiles.triangles);
  // Dropped triangles widen an escape entry's original index (4,100 input
  // triangles need 13 bits, the 4,050 kept 12): the block holds the wider
  // entries (the seal counted them without the dropped ones, and aborted).
  MeshData with_dropped = TiledGrid(45);  // 4,050 triangles: 12 bits
  for (int i = 0; i < 50; ++i) with_dropped.triangles.push_back({0, 0, 0});
  const TriangleMesh widened = MustBuild(with_dropped);
  EXPECT_GT(widened.escaped_triangles(), 0u);
  EXPECT_EQ(widened.dropped_triangles(), 50u);
  widened.Input(&vertices, &triangles);
  EXPECT_EQ(triangles, with_dropped.triangles);
  Random rng(31);
  const Aabb b = mesh.bounds();
  for (int i = 0; i < 2000; ++i) {
    const Vec3 o = b.Center() + Mul(rng.InBox(1.5), b.Extents() + Vec3::Splat(1.0));
    const Vec3 d = (b.Center() + Mul(rng.InBox(1.0), b.Extents()) - o) * rng.Uniform(0.3, 2.0);
    MeshRayHit got, want;
    const bool g = mesh.RaycastClosest(o, d, &got);
    ASSERT_EQ(g, BruteRaycast(mesh, o, d, &want)) << ToString(o) << " " << ToString(d);
    if (!g) continue;
    EXPECT_EQ(got.fraction, want.fraction);
    EXPECT_EQ(got.triangle, want.triangle);
  }
}

// x rounded to float32 (through memory: GCC 12 at -O3 was seen to fold a
// double -> float -> double round trip in vectorised loops).
double ToFloat(double x) {
  volatile float f = static_cast<float>(x);
  return static_cast<double>(f);
}

// x as a text of six decimals reads ("%.6f", as Blender writes an OBJ).
double SixPlaces(double x) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.6f", x);
  return std::strtod(text, nullptr);
}

// Input() gives back the mesh as given, to the bit: every vertex (unused ones
// too) and every triangle in input order, the dropped zero-area ones included,
// whatever the vertices' storage: short decimals, float32 binary fractions
// (glTF and OBJ levels), integers, and doubles of no such form.
TEST(MeshBuild, InputRoundTripsExactly) {
  Random rng(5);
  auto level_like = [&](auto coord) {
    MeshData m = WavyGrid(20, 0.5);
    m.vertices.emplace_back();  // unused
    for (Vec3& v : m.vertices) {
      for (int a = 0; a < 3; ++a) v[a] = coord(rng);
    }
    m.triangles.insert(m.triangles.begin() + 7, {3, 3, 4});      // dropped
    return m;
  };
  const MeshData decimal = level_like([](Random& r) { return r.Int(-900000, 900000) / 1e4; });
  MeshData float32 = level_like([](Random& r) {
    return ToFloat(r.Uniform(-300.0, 300.0));
  });
  // Floats of every kind keep their bits (packed floats: sign and exponent codes).
  float32.vertices[1].x = -0.0;
  float32.vertices[2].y = ToFloat(1e-40);  // subnormal
  float32.vertices[3].z = 0.0;
  float32.vertices[4].x = ToFloat(-3e-30);
  const MeshData integers =
      level_like([](Random& r) { return static_cast<double>(r.Int(-5000, 5000)); });
  const MeshData doubles = level_like([](Random& r) { return r.Uniform(-300.0, 300.0); });
  const MeshData* const meshes[] = {&decimal, &float32, &integers, &doubles};
  for (int i = 0; i < 4; ++i) {
    const MeshData* data = meshes[i];
    const TriangleMesh mesh = MustBuild(*data);
    EXPECT_EQ(mesh.quantized_vertices() || mesh.float_vertices(), data != &doubles) << i;
    if (data == &float32) {
      EXPECT_GT(mesh.float_record_bits(), 0u);
    }
    EXPECT_EQ(mesh.dropped_triangles(), 1u);
    std::vector<Vec3> vertices;
    std::vector<TriangleMesh::Indices> triangles;
    mesh.Input(&vertices, &triangles);
    ASSERT_EQ(vertices.size(), data->vertices.size());
    ASSERT_EQ(triangles.size(), data->triangles.size());
    EXPECT_EQ(std::memcmp(vertices.data(), data->vertices.data(), vertices.size() * sizeof(Vec3)),
              0);
    EXPECT_EQ(triangles, data->triangles);
  }
}

// A mesh over parts (a merged mesh, BuildOverParts) stores no vertices and
// no triangle records of its own and answers as the mesh built from the
// parts' inputs joined, to the bit: parts of every vertex form (short
// decimals, float32, doubles, with zero-area triangles dropped) and runs of
// single-triangle parts, so that one block of the part tables spans many
// parts. Its leaves are the parts' own (none mixes two parts), but for a
// loose leaf's, taken one triangle each (a part of small triangles far
// apart); its input round-trips, and its triangles read back their parts'
// indices, originals and active edges.
TEST(MeshBuild, MeshOverPartsAnswersAsTheJoinedInput) {
  Random rng(39);
  std::vector<MeshData> parts;
  const auto add = [&](MeshData m, auto coord) {
    for (Vec3& v : m.vertices) {
      for (int a = 0; a < 3; ++a) v[a] = coord(v[a]);
    }
    parts.push_back(std::move(m));
  };
  add(WavyGrid(12, 0.5), [&](double x) { return std::round(x * 1e3) / 1e3 + 0.25; });
  add(WavyGrid(8, 0.4),  // decimals stored as the floats they were written from
      [&](double x) {
        return SixPlaces(std::ldexp(std::nearbyint(std::ldexp(x * 2.3, 10)), -10));
      });
  add(WavyGrid(9, 0.7), [&](double x) { return ToFloat(x * 1.37 - 2.0); });
  parts.back().triangles.push_back({0, 0, 1});  // dropped: zero area
  for (int k = 0; k < 70; ++k) {
    MeshData one;
    const Vec3 at = rng.InBox(6.0);
    one.vertices = {at, at + rng.InBox(0.8), at + rng.InBox(0.8)};
    one.triangles = {{0, 1, 2}};
    parts.push_back(std::move(one));
  }
  add(IcoSphere(2.0, 2), [&](double x) { return x + rng.Uniform(-1e-3, 1e-3); });
  // Small triangles far apart, beside the rest: their leaves are loose, so
  // the merged hierarchy takes their triangles one by one (below).
  MeshData scattered;
  for (uint32_t k = 0; k < 60; ++k) {
    const Vec3 at = rng.InBox(8.0) + Vec3{100.0, 0.0, 0.0};
    for (int c = 0; c < 3; ++c) scattered.vertices.push_back(at + rng.InBox(0.3));
    scattered.triangles.push_back({3 * k, 3 * k + 1, 3 * k + 2});
  }
  parts.push_back(std::move(scattered));
  std::vector<TriangleMesh> built;
  MeshData joined;
  std::vector<uint32_t> first;
  for (const MeshData& m : parts) {
    built.push_back(MustBuild(m));
    const auto base = static_cast<uint32_t>(joined.vertices.size());
    first.push_back(static_cast<uint32_t>(joined.triangles.size()));
    joined.vertices.insert(joined.vertices.end(), m.vertices.begin(), m.vertices.end());
    for (const auto& t : m.triangles) {
      joined.triangles.push_back({t[0] + base, t[1] + base, t[2] + base});
    }
  }
  EXPECT_EQ(built[1].decimal_places(), 6);
  std::vector<const TriangleMesh*> pointers;
  for (const TriangleMesh& m : built) pointers.push_back(&m);
  const internal::MeshParts table(pointers);
  EXPECT_EQ(table.input_triangle_count(), joined.triangles.size());
  const TriangleMesh own = MustBuild(joined);
  auto over = TriangleMesh::BuildOverParts(&table);
  ASSERT_TRUE(over.ok()) << over.status().ToString();
  EXPECT_FALSE(own.part_vertices() || own.part_triangles());
  EXPECT_TRUE(over->part_vertices() && over->part_triangles());
  EXPECT_EQ(over->triangle_count(), own.triangle_count());
  EXPECT_LT(2 * over->MemoryBytes(), own.MemoryBytes());
  EXPECT_TRUE(over->LeavesWithinParts(first));
  ExpectInputIs(*over, joined);
  for (uint32_t k = 0; k < over->triangle_count(); ++k) {
    uint32_t local;
    const uint32_t p = table.LocateTriangle(k, &local);
    uint32_t idx[3], part_idx[3];
    over->TriangleIndices(k, idx);
    built[p].TriangleIndices(local, part_idx);
    for (int c = 0; c < 3; ++c) ASSERT_EQ(idx[c], part_idx[c] + table.vertex_base(p)) << k;
    ASSERT_EQ(over->OriginalIndex(k), built[p].OriginalIndex(local) + first[p]) << k;
    ASSERT_EQ(over->ActiveEdges(k), built[p].ActiveEdges(local)) << k;
  }
  const Aabb b = own.bounds();
  EXPECT_EQ(over->bounds().min, b.min);
  EXPECT_EQ(over->bounds().max, b.max);
  int hits = 0;
  for (int i = 0; i < 4000; ++i) {
    // Half the rays across the parts near the origin, half at the
    // scattered triangles.
    Vec3 target = rng.InBox(8.0);
    if (i % 2 == 1) {
      const MeshData& far = parts.back();
      const auto& t = far.triangles[static_cast<size_t>(i / 2) % far.triangles.size()];
      target = (far.vertices[t[0]] + far.vertices[t[1]] + far.vertices[t[2]]) / 3.0;
    }
    const Vec3 o = target + rng.InBox(6.0);
    const Vec3 d = (target - o) * rng.Uniform(1.1, 2.0);
    MeshRayHit x, y;
    const bool hx = own.RaycastClosest(o, d, &x), hy = over->RaycastClosest(o, d, &y);
    ASSERT_EQ(hx, hy) << i;
    if (!hx) continue;
    ++hits;
    EXPECT_EQ(std::bit_cast<uint64_t>(x.fraction), std::bit_cast<uint64_t>(y.fraction)) << i;
    EXPECT_EQ(x.triangle, y.triangle) << i;
    EXPECT_EQ(x.normal, y.normal) << i;
  }
  EXPECT_GT(hits, 2000);
  // A box around one scattered triangle reaches its leaf alone in the
  // merged mesh, where the part's own leaves hold about four apart.
  const MeshData& far = parts.back();
  int over_visits = 0, part_visits = 0;
  for (const auto& t : far.triangles) {
    const Aabb box = Aabb().Union(far.vertices[t[0]]).Union(far.vertices[t[1]])
                         .Union(far.vertices[t[2]]);
    over->VisitOverlapping(box, [&](uint32_t) { return ++over_visits, true; });
    built.back().VisitOverlapping(box, [&](uint32_t) { return ++part_visits, true; });
  }
  EXPECT_LT(over_visits, 90);
  EXPECT_GT(part_visits, 150);
  EXPECT_FALSE(TriangleMesh::BuildOverParts(nullptr).ok());
}

// A leaf whose triangles lie in two far-apart pairs is split under a node of
// its own (SplitLeaf): a box around one pair visits that pair only, while a
// grid's compact leaves stay whole (its query boxes visit whole leaves).
TEST(MeshBuild, LooseLeavesAreSplit) {
  MeshData m = WavyGrid(30, 0.7);
  const size_t grid_triangles = m.triangles.size();
  std::vector<Vec3> pairs;
  for (int c = 0; c < 8; ++c) {
    const Vec3 at{100.0 + 10.0 * c, 0.0, 0.0};
    const auto base = static_cast<uint32_t>(m.vertices.size());
    for (const Vec3& d : {Vec3{}, Vec3{0.1, 0, 0}, Vec3{0, 0.1, 0}, Vec3{0, 0, 0.1}}) {
      m.vertices.push_back(at + d);
    }
    m.triangles.push_back({base, base + 1, base + 2});
    m.triangles.push_back({base, base + 1, base + 3});
    pairs.push_back(at);
  }
  const TriangleMesh mesh = MustBuild(m);
  for (const Vec3& at : pairs) {
    int visited = 0;
    mesh.VisitOverlapping(Aabb(at - Vec3::Splat(0.05), at + Vec3::Splat(0.15)), [&](uint32_t k) {
      EXPECT_GE(mesh.OriginalIndex(k), grid_triangles);
      ++visited;
      return true;
    });
    EXPECT_EQ(visited, 2) << ToString(at);
  }
  // On the grid a point's box meets a whole leaf of kMeshLeafSize triangles.
  int whole = 0;
  for (uint32_t k = 0; k < 200; ++k) {
    Vec3 v[3];
    mesh.TriangleVertices(k, v);
    const Vec3 c = (v[0] + v[1] + v[2]) / 3.0;
    int visited = 0;
    mesh.VisitOverlapping(Aabb(c, c), [&](uint32_t) {
      ++visited;
      return true;
    });
    whole += visited >= static_cast<int>(kMeshLeafSize);
  }
  EXPECT_GT(whole, 150);
}

// A mesh settled into the end of its own block (as shapes hold meshes) is
// the mesh as built: the same storage, the same input back to the bit, the
// same ray answers.
TEST(MeshBuild, SettledMeshIsTheBuiltMesh) {
  MeshData data = WavyGrid(24, 0.731);
  data.triangles.push_back({0, 0, 1});  // dropped
  const TriangleMesh built = MustBuild(data);
  const TriangleMesh* settled = TriangleMesh::Settle(MustBuild(data));
  EXPECT_EQ(settled->MemoryBytes(), built.MemoryBytes());
  ExpectInputIs(*settled, data);
  Random rng(29);
  const Aabb& b = built.bounds();
  for (int i = 0; i < 2000; ++i) {
    Vec3 from, to;
    for (int a = 0; a < 3; ++a) {
      from[a] = rng.Uniform(b.min[a] - 1.0, b.max[a] + 1.0);
      to[a] = rng.Uniform(b.min[a] - 1.0, b.max[a] + 1.0);
    }
    MeshRayHit want, got;
    const bool hit = built.RaycastClosest(from, to - from, &want);
    ASSERT_EQ(settled->RaycastClosest(from, to - from, &got), hit) << i;
    if (!hit) continue;
    EXPECT_EQ(got.fraction, want.fraction) << i;
    EXPECT_EQ(got.triangle, want.triangle) << i;
  }
  TriangleMesh::DestroySettled(settled);
}

// Each triangle of `mesh` has exactly its input vertices.
void ExpectSameTriangles(const TriangleMesh& mesh, const MeshData& m) {
  for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
    Vec3 v[3];
    mesh.TriangleVertices(k, v);
    for (int c = 0; c < 3; ++c) {
      const Vec3& want = m.vertices[m.triangles[mesh.OriginalIndex(k)][c]];
      ASSERT_TRUE(v[c].x == want.x && v[c].y == want.y && v[c].z == want.z);
    }
  }
}

// Vertices that are float32, as every glTF level's are, are stored losslessly:
// as integers of a power of two when their fraction bits allow (a level on a
// grid of 1/32 units), else as floats; in fewer bytes than doubles either way.
TEST(MeshBuild, Float32VerticesArePacked) {
  MeshData grid = WavyGrid(40, 0.37);
  MeshData any = grid;
  const auto on_13_bits = [](double c) {
    return std::ldexp(std::nearbyint(std::ldexp(c * 3.1 + 17.3, 13)), -13);
  };
  const auto to_float = [](double c) { return ToFloat(c * 3.1 - 2.3); };
  for (Vec3& v : grid.vertices) v = {on_13_bits(v.x), on_13_bits(v.y), on_13_bits(v.z)};
  for (Vec3& v : any.vertices) v = {to_float(v.x), to_float(v.y), to_float(v.z)};
  any.vertices[7].x = ToFloat(1.2345e-7);  // fraction bits beyond any 33-bit span
  const TriangleMesh on_grid = MustBuild(grid);
  EXPECT_TRUE(on_grid.quantized_vertices());
  const TriangleMesh floats = MustBuild(any);
  EXPECT_TRUE(floats.float_vertices());
  for (const auto& [m, mesh] : {std::pair{&grid, &on_grid}, std::pair{&any, &floats}}) {
    // The same mesh with every vertex moved off float32: kept as doubles.
    MeshData off = *m;
    for (Vec3& v : off.vertices) v.y += 1e-12;
    const TriangleMesh doubles = MustBuild(off);
    EXPECT_FALSE(doubles.quantized_vertices() || doubles.float_vertices());
    EXPECT_EQ(doubles.fine_vertex_count(), 0u);
    const double per = static_cast<double>(mesh->MemoryBytes()) / mesh->triangle_count();
    std::printf("float32 grid %u triangles: %.2f bytes/triangle, %.2f as doubles\n",
                mesh->triangle_count(), per,
                static_cast<double>(doubles.MemoryBytes()) / doubles.triangle_count());
    EXPECT_LT(mesh->MemoryBytes(), doubles.MemoryBytes());
    ExpectSameTriangles(*mesh, *m);
    ExpectSameTriangles(doubles, off);
  }
}

// A few vertices far off the grid of the rest (a level's curved patches, one
// stray coordinate) are kept apart, as float32 or doubles, and the rest stay
// packed on their grid: fewer bytes than storing every vertex alike, and
// every vertex decodes to its input to the bit.
TEST(MeshBuild, FineVerticesAreKeptApart) {
  Random rng(17);
  MeshData grid = WavyGrid(40, 0.37);
  const auto on_5_bits = [](double c) {  // (+ 0.0: no negative zero, which packs as +0)
    return std::ldexp(std::nearbyint(std::ldexp(c, 5)), -5) + 0.0;
  };
  for (Vec3& v : grid.vertices) v = {on_5_bits(v.x * 3.1), on_5_bits(v.y), on_5_bits(v.z * 3.1)};
  MeshData floats = grid, doubles = grid;
  std::vector<uint32_t> moved;
  for (uint32_t i = 0; i < grid.vertices.size(); i += 13) moved.push_back(i);
  for (uint32_t i : moved) {
    const double dy = rng.Uniform(-0.01, 0.01);
    floats.vertices[i].y = ToFloat(floats.vertices[i].y + dy);
    doubles.vertices[i].y += dy + 1e-9;
  }
  for (const MeshData* m : {&floats, &doubles}) {
    const TriangleMesh mesh = MustBuild(*m);
    EXPECT_TRUE(mesh.quantized_vertices());
    EXPECT_EQ(mesh.fine_vertex_count(), moved.size());
    // Every vertex stored alike: as float32 (or doubles), more bytes.
    MeshData alike = *m;
    for (Vec3& v : alike.vertices) v.x = ToFloat(v.x + 1e-3);
    if (m == &doubles) {
      for (Vec3& v : alike.vertices) v.x += 1e-12;
    }
    const TriangleMesh uniform = MustBuild(alike);
    EXPECT_EQ(uniform.fine_vertex_count(), 0u);
    std::printf("%zu of %zu vertices apart: %.2f bytes/triangle, %.2f stored alike\n",
                moved.size(), m->vertices.size(),
                static_cast<double>(mesh.MemoryBytes()) / mesh.triangle_count(),
                static_cast<double>(uniform.MemoryBytes()) / uniform.triangle_count());
    EXPECT_LT(mesh.MemoryBytes(), uniform.MemoryBytes());
    const double predicted = static_cast<double>(
        TriangleMesh::PredictMemoryBytes(m->vertices, m->triangles));
    EXPECT_NEAR(predicted / static_cast<double>(mesh.MemoryBytes()), 1.0, 0.15);
    ExpectSameTriangles(mesh, *m);
    std::vector<Vec3> vertices;
    std::vector<TriangleMesh::Indices> triangles;
    mesh.Input(&vertices, &triangles);
    ASSERT_EQ(vertices.size(), m->vertices.size());
    EXPECT_EQ(std::memcmp(vertices.data(), m->vertices.data(), vertices.size() * sizeof(Vec3)), 0);
    // Rays decode the same vertices: their hits match brute force.
    const Aabb& b = mesh.bounds();
    for (int i = 0; i < 300; ++i) {
      const Vec3 o{rng.Uniform(b.min.x, b.max.x), b.max.y + 1.0, rng.Uniform(b.min.z, b.max.z)};
      const Vec3 d{rng.Uniform(-2, 2), -3.0, rng.Uniform(-2, 2)};
      MeshRayHit hit, want;
      const bool got = mesh.RaycastClosest(o, d, &hit);
      ASSERT_EQ(got, BruteRaycast(mesh, o, d, &want)) << i;
      if (got) {
        EXPECT_EQ(hit.fraction, want.fraction) << i;
        EXPECT_EQ(hit.triangle, want.triangle) << i;
      }
    }
  }
}

// The float32 a decimal was written from, with the fewest fraction bits,
// reads back as the decimal to the bit (its sign too); a decimal no float
// rounds to has none.
TEST(MeshVertices, FloatOfDecimalReadsBackExactly) {
  using mesh_vertices::DecimalOfFloat;
  using mesh_vertices::FloatOfDecimal;
  EXPECT_EQ(FloatOfDecimal(0.007812, 1e6), 0.0078125f);  // 2^-7, written to six places
  EXPECT_EQ(FloatOfDecimal(-14.5, 1e6), -14.5f);
  EXPECT_EQ(FloatOfDecimal(0.1, 10.0), 0.125f);
  const float negative_zero = FloatOfDecimal(-0.0, 1e6);
  EXPECT_TRUE(negative_zero == 0.0f && std::signbit(negative_zero));
  EXPECT_TRUE(std::isnan(FloatOfDecimal(1000.000001, 1e6)));  // floats 6e-5 apart there
  EXPECT_TRUE(std::isnan(FloatOfDecimal(0.1234567, 1e6)));    // not six places
  Random rng(23);
  for (int i = 0; i < 20000; ++i) {
    const float f = static_cast<float>(rng.Uniform(-300.0, 300.0));
    const double x = SixPlaces(f);
    const float g = FloatOfDecimal(x, 1e6);
    ASSERT_FALSE(std::isnan(g)) << x;
    ASSERT_EQ(std::bit_cast<uint64_t>(DecimalOfFloat(g, 1e6)), std::bit_cast<uint64_t>(x)) << x;
  }
}

// A level written as an OBJ of six-place decimals of its float32 vertices
// (mostly on a binary grid finer than 10^-6 can write, a few off it) is
// stored as those floats, in the bytes the floats take, and reads back as
// the decimals to the bit: its input, its triangles and its rays' hits; the
// same decimals of doubles no float rounds to are stored as themselves.
TEST(MeshBuild, DecimalsOfFloatsAreStoredAsTheirFloats) {
  Random rng(29);
  MeshData floats = WavyGrid(40, 0.37);
  const auto on_10_bits = [](double c) {
    return std::ldexp(std::nearbyint(std::ldexp(c, 10)), -10);
  };
  for (Vec3& v : floats.vertices)
    v = {on_10_bits(v.x * 7.1), on_10_bits(v.y), on_10_bits(v.z * 7.1)};
  for (size_t i = 0; i < floats.vertices.size(); i += 11) {
    floats.vertices[i].y = ToFloat(floats.vertices[i].y + rng.Uniform(-0.01, 0.01));
  }
  MeshData written = floats;
  for (Vec3& v : written.vertices) v = {SixPlaces(v.x), SixPlaces(v.y), SixPlaces(v.z)};
  MeshData far = written;  // six places at 3 km: floats there are 2.4e-4 apart
  for (Vec3& v : far.vertices) v.x = SixPlaces(v.x + 3000.0 + rng.Uniform(0.0, 1e-3));
  const TriangleMesh from_floats = MustBuild(floats);
  const TriangleMesh mesh = MustBuild(written);
  const TriangleMesh doubles = MustBuild(far);
  EXPECT_EQ(from_floats.decimal_places(), -1);
  EXPECT_EQ(mesh.decimal_places(), 6);
  EXPECT_EQ(doubles.decimal_places(), -1);
  std::printf("six-place decimals of floats: %.2f bytes/triangle (their floats %.2f)\n",
              static_cast<double>(mesh.MemoryBytes()) / mesh.triangle_count(),
              static_cast<double>(from_floats.MemoryBytes()) / from_floats.triangle_count());
  EXPECT_LE(mesh.Storage().vertices, from_floats.Storage().vertices);
  EXPECT_LT(mesh.Storage().vertices, doubles.Storage().vertices);
  const double predicted =
      static_cast<double>(TriangleMesh::PredictMemoryBytes(written.vertices, written.triangles));
  EXPECT_NEAR(predicted / static_cast<double>(mesh.MemoryBytes()), 1.0, 0.15);
  for (const auto& [m, built] : {std::pair{&written, &mesh}, std::pair{&far, &doubles}}) {
    ExpectSameTriangles(*built, *m);
    std::vector<Vec3> vertices;
    std::vector<TriangleMesh::Indices> triangles;
    built->Input(&vertices, &triangles);
    ASSERT_EQ(vertices.size(), m->vertices.size());
    EXPECT_EQ(std::memcmp(vertices.data(), m->vertices.data(), vertices.size() * sizeof(Vec3)), 0);
    const Aabb& b = built->bounds();
    for (int i = 0; i < 300; ++i) {
      const Vec3 o{rng.Uniform(b.min.x, b.max.x), b.max.y + 1.0, rng.Uniform(b.min.z, b.max.z)};
      const Vec3 d{rng.Uniform(-2, 2), -3.0, rng.Uniform(-2, 2)};
      MeshRayHit hit, want;
      const bool got = built->RaycastClosest(o, d, &hit);
      ASSERT_EQ(got, BruteRaycast(*built, o, d, &want)) << i;
      if (got) {
        EXPECT_EQ(hit.fraction, want.fraction) << i;
        EXPECT_EQ(hit.triangle, want.triangle) << i;
      }
    }
  }
  // A mesh over 65,536 vertices keeps its decimals (its floats would be a
  // second copy of its vertices while it loads).
  MeshData big = WavyGrid(257, 0.37);
  for (Vec3& v : big.vertices) {
    v = {SixPlaces(on_10_bits(v.x * 7.1)), SixPlaces(on_10_bits(v.y)), SixPlaces(on_10_bits(v.z))};
  }
  ASSERT_GT(big.vertices.size(), 65536u);
  EXPECT_EQ(MustBuild(big).decimal_places(), -1);
  big.vertices.resize(65536);
  std::erase_if(big.triangles, [](const TriangleMesh::Indices& t) {
    return t[0] >= 65536 || t[1] >= 65536 || t[2] >= 65536;
  });
  EXPECT_EQ(MustBuild(big).decimal_places(), 6);
  // The importer's form (int32 decimals) builds the same mesh.
  std::vector<int32_t> q;
  for (const Vec3& v : written.vertices) {
    for (int a = 0; a < 3; ++a) q.push_back(static_cast<int32_t>(std::llround(v[a] * 1e6)));
  }
  const Result<Shape> a = Shape::Make(TriangleMeshShape{written.vertices, written.triangles});
  const Result<Shape> c = Shape::Make(DecimalTriangleMeshShape{q, 1e6, written.triangles});
  ASSERT_NO_FATAL_FAILURE(ExpectSameMesh(a, c));
  EXPECT_EQ(c->surface()->mesh()->decimal_places(), 6);
}

// Triangles of every size (a floor, walls, nested ever smaller details: the
// surface area heuristic splits the biggest off one at a time) keep the
// hierarchy within kMeshMaxDepth, and rays through all of them match brute
// force.
TEST(MeshBuild, MixedSizesStayWithinTheDepthLimit) {
  MeshData m;
  for (int i = 0; i < 3000; ++i) {
    const double s = std::ldexp(1.0, -(i % 60));  // 1 m down to 1e-18 m
    const double x = std::ldexp(1.0, -(i % 60)) + (i / 60) * 1e-3;
    const uint32_t b = static_cast<uint32_t>(m.vertices.size());
    m.vertices.push_back({x, 0, 0});
    m.vertices.push_back({x + s, 0, 0});
    m.vertices.push_back({x, s, s});
    m.triangles.push_back({b, b + 1, b + 2});
  }
  const TriangleMesh mesh = MustBuild(m);
  std::printf("mixed sizes: %u triangles, height %u\n", mesh.triangle_count(), mesh.height());
  EXPECT_LE(mesh.height(), kMeshMaxDepth);
  Random rng(3);
  for (int i = 0; i < 300; ++i) {
    const Vec3 origin{rng.Uniform(-0.1, 1.2), rng.Uniform(-0.5, 1.5), -1.0};
    const Vec3 translation{rng.Uniform(-0.5, 0.5), rng.Uniform(-0.5, 0.5), 3.0};
    MeshRayHit hit, want;
    const bool got = mesh.RaycastClosest(origin, translation, &hit);
    ASSERT_EQ(got, BruteRaycast(mesh, origin, translation, &want));
    if (got) {
      EXPECT_EQ(hit.fraction, want.fraction);
      EXPECT_EQ(hit.triangle, want.triangle);
    }
  }
}

// The box of each triangle of `mesh`, by triangle index.
std::vector<Aabb> TriangleBoxes(const TriangleMesh& mesh) {
  std::vector<Aabb> boxes(mesh.triangle_count());
  for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
    Vec3 v[3];
    mesh.TriangleVertices(k, v);
    boxes[k] = Aabb().Union(v[0]).Union(v[1]).Union(v[2]);
  }
  return boxes;
}

// The hierarchy is conservative: every triangle whose box meets a query box
// is visited (exactly once), and every triangle whose box a ray or a grown
// path enters before max_t is visited; VisitSweptClosestFirst visits them in
// the order the path enters their boxes.
TEST(MeshBuild, HierarchyVisitsEveryCandidate) {
  Random rng(11);
  for (const MeshData& data : {WavyGrid(30, 0.7), IcoSphere(2.0, 3)}) {
    const TriangleMesh mesh = MustBuild(data);
    EXPECT_GT(mesh.bottom_node_count(), mesh.node_count() / 2);  // walked below too
    const std::vector<Aabb> tri_boxes = TriangleBoxes(mesh);
    const Aabb& b = mesh.bounds();
    for (int i = 0; i < 2000; ++i) {
      const Vec3 c{rng.Uniform(b.min.x - 1, b.max.x + 1), rng.Uniform(b.min.y - 1, b.max.y + 1),
                   rng.Uniform(b.min.z - 1, b.max.z + 1)};
      // Zero-size boxes on a triangle's corner test the rounding of the bounds.
      Aabb box = i % 4 == 0 ? Aabb().Union(tri_boxes[static_cast<size_t>(rng.Int(
                                  0, static_cast<int>(mesh.triangle_count()) - 1))].max)
                            : Aabb::FromCenterExtents(c, Vec3{rng.Uniform(0, 1.5),
                                                              rng.Uniform(0, 1.5),
                                                              rng.Uniform(0, 1.5)});
      std::vector<int> visits(mesh.triangle_count(), 0);
      mesh.VisitOverlapping(box, [&](uint32_t k) {
        ++visits[k];
        return true;
      });
      for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
        EXPECT_LE(visits[k], 1);
        if (tri_boxes[k].Overlaps(box)) {
          ASSERT_EQ(visits[k], 1) << "box " << i << " triangle " << k;
        }
      }
      // A path from c along a random direction, boxes grown by g.
      const Vec3 d = rng.UnitVector() * rng.Uniform(0.0, 8.0);
      const Vec3 g = i % 2 ? Vec3{} : Vec3::Splat(rng.Uniform(0.0, 0.5));
      const BvhRay path(c, d);
      const double max_t = rng.Uniform(0.2, 1.0);
      std::fill(visits.begin(), visits.end(), 0);
      mesh.VisitSwept(box, d, path, g, &max_t, [&](uint32_t k) {
        ++visits[k];
        return true;
      });
      for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
        EXPECT_LE(visits[k], 1);
        double t;
        if (path.Enter(tri_boxes[k].Expanded(g), max_t, &t)) {
          ASSERT_EQ(visits[k], 1) << "path " << i << " triangle " << k;
        }
      }
      // Closest first: the same triangles, each once, in increasing entry
      // fraction; then with the limit lowered as a sweep's
      // hits do, none entered past the limit of its turn.
      std::vector<double> enter_t(mesh.triangle_count(), -1.0);
      std::fill(visits.begin(), visits.end(), 0);
      double last = 0.0;
      mesh.VisitSweptClosestFirst(
          path, g, &max_t,
          [&](uint32_t k, const uint32_t idx[3], double* t, bool*) {
            // The walk hands over the triangle's own vertex indices.
            uint32_t own[3];
            mesh.TriangleIndices(k, own);
            EXPECT_TRUE(std::equal(own, own + 3, idx)) << "triangle " << k;
            if (!path.Enter(tri_boxes[k].Expanded(g), max_t, t)) return false;
            enter_t[k] = *t;
            return true;
          },
          [&](uint32_t k, uint32_t n) {
            EXPECT_EQ(visits[k]++, 0) << "path " << i << " triangle " << k;
            EXPECT_LT(n, mesh.triangle_count());
            EXPECT_GE(enter_t[k], last) << "path " << i << " triangle " << k;
            last = enter_t[k];
            return true;
          });
      for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
        double t;
        EXPECT_EQ(visits[k], path.Enter(tri_boxes[k].Expanded(g), max_t, &t) ? 1 : 0)
            << "path " << i << " triangle " << k;
      }
      double limit = max_t;
      mesh.VisitSweptClosestFirst(
          path, g, &limit,
          [&](uint32_t k, const uint32_t*, double* t, bool*) {
            return path.Enter(tri_boxes[k].Expanded(g), max_t, t);
          },
          [&](uint32_t k, uint32_t) {
            double t;
            path.Enter(tri_boxes[k].Expanded(g), max_t, &t);
            EXPECT_LE(t, limit) << "path " << i << " triangle " << k;
            limit = std::min(limit, t + 0.05);
            return true;
          });
    }
  }
}

// A mesh of 2^18 triangles and more splits its root on coarse boxes and
// builds each child on exact boxes of its own: every triangle is still
// found by a query box at its centroid, its record is its input triangle's
// (some input triangles dropped), and rays answer as brute force.
TEST(MeshBuild, HugeMeshesSplitTheirRootOnCoarseBoxes) {
  MeshData m = WavyGrid(400, 0.5);  // root children over 2^16: split on coarse boxes too
  for (size_t t = 0; t < m.triangles.size(); t += 997) {  // zero area: dropped
    m.triangles.insert(m.triangles.begin() + static_cast<std::ptrdiff_t>(t),
                       {m.triangles[t][0], m.triangles[t][0], m.triangles[t][1]});
  }
  const TriangleMesh mesh = MustBuild(m);
  ASSERT_GE(mesh.triangle_count(), kMeshCoarseRootTriangles);
  ASSERT_GT(mesh.dropped_triangles(), 200u);
  ExpectInputIs(mesh, m);
  const std::vector<Aabb> tri_boxes = TriangleBoxes(mesh);
  for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
    uint32_t idx[3];
    mesh.TriangleIndices(k, idx);
    const TriangleMesh::Indices& in = m.triangles[mesh.OriginalIndex(k)];
    ASSERT_TRUE(std::equal(idx, idx + 3, in.begin())) << "triangle " << k;
    bool found = false;
    mesh.VisitOverlapping(Aabb().Union(tri_boxes[k].Center()), [&](uint32_t j) {
      found = found || j == k;
      return !found;
    });
    ASSERT_TRUE(found) << "triangle " << k;
  }
  Random rng(29);
  const Aabb& b = mesh.bounds();
  int hits = 0;
  for (int i = 0; i < 40; ++i) {
    const Vec3 o{rng.Uniform(b.min.x, b.max.x), 3.0, rng.Uniform(b.min.z, b.max.z)};
    const Vec3 d = Vec3{rng.Uniform(-40, 40), rng.Uniform(-6, -2), rng.Uniform(-40, 40)};
    hits += ExpectClosestAsBruteForce(mesh, o, d) ? 1 : 0;
  }
  EXPECT_GT(hits, 20);
}

// A grid whose heights span nothing (a flat axis, step 0), a subnormal range
// (steps below 2^-1022), a tiny normal one or a metre: the quantized boxes
// (steps kept as exponents) still hold every triangle, which a query box on
// the triangle's own box, or on its corner, visits.
TEST(MeshBuild, FlatAndTinyExtentsKeepEveryTriangle) {
  for (const double h : {0.0, 1e-310, 1e-300, 1.0}) {
    MeshData m;
    constexpr uint32_t kSide = 12;
    for (uint32_t r = 0; r <= kSide; ++r) {
      for (uint32_t c = 0; c <= kSide; ++c) {
        m.vertices.push_back({0.5 * c, h * static_cast<double>((r * 7 + c * 3) % 5), 0.5 * r});
      }
    }
    for (uint32_t r = 0; r < kSide; ++r) {
      for (uint32_t c = 0; c < kSide; ++c) {
        const uint32_t v = r * (kSide + 1) + c;
        m.triangles.push_back({v, v + kSide + 1, v + 1});
        m.triangles.push_back({v + 1, v + kSide + 1, v + kSide + 2});
      }
    }
    const TriangleMesh mesh = MustBuild(m);
    const std::vector<Aabb> tri_boxes = TriangleBoxes(mesh);
    for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
      for (const Aabb& box : {tri_boxes[k], Aabb().Union(tri_boxes[k].max)}) {
        bool seen = false;
        mesh.VisitOverlapping(box, [&](uint32_t j) {
          seen = seen || j == k;
          return true;
        });
        ASSERT_TRUE(seen) << "height range " << h << " triangle " << k;
      }
    }
    // Rays down onto every triangle's centre and across at heights within
    // the range: the decoded boxes let them reach the hit brute force finds.
    const Aabb& b = mesh.bounds();
    std::vector<std::pair<Vec3, Vec3>> rays;
    for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
      const Vec3 c = (tri_boxes[k].min + tri_boxes[k].max) * 0.5;
      // Oblique: a box clipped on any axis would be missed.
      rays.push_back({{c.x - 0.1, b.max.y + 1.0, c.z - 0.05}, {0.2, -2.0 - 2.0 * b.max.y, 0.1}});
      const double y = b.min.y + (b.max.y - b.min.y) * (0.25 * (k % 5));
      rays.push_back({{b.min.x - 1.0, y, c.z - 0.1},
                      {b.max.x - b.min.x + 2.0, (b.max.y - b.min.y) * 0.1, 0.2}});
    }
    for (const auto& [o, d] : rays) {
      MeshRayHit hit, want;
      const bool got = mesh.RaycastClosest(o, d, &hit);
      ASSERT_EQ(got, BruteRaycast(mesh, o, d, &want)) << "height range " << h << " " << ToString(o);
      if (got) {
        EXPECT_EQ(hit.fraction, want.fraction);
        EXPECT_EQ(hit.triangle, want.triangle);
      }
    }
  }
}

// A sweep's vertex cache gives TriangleVertices' vertices to the bit, for
// decimal (micrometre) and double vertices, over runs of neighbouring
// triangles (cache hits) and random ones (slots taken over by other vertices).
TEST(MeshBuild, VertexCacheGivesTheDecodedVertices) {
  Random rng(41);
  MeshData decimal = WavyGrid(40, 0.5);
  MeshData of_floats = decimal;  // stored as the floats the decimals were written from
  for (Vec3& v : decimal.vertices) v.y = std::nearbyint(v.y * 1e6) / 1e6;
  for (Vec3& v : of_floats.vertices) {
    v.y = SixPlaces(std::ldexp(std::nearbyint(std::ldexp(v.y * 3.7, 10)), -10));
  }
  const MeshData sphere = IcoSphere(2.0, 3);
  const MeshData* const meshes[] = {&decimal, &of_floats, &sphere};
  for (const MeshData* data : meshes) {
    const TriangleMesh mesh = MustBuild(*data);
    EXPECT_EQ(mesh.decimal_places() == 6, data == &of_floats);
    TriangleMesh::VertexCache cache;
    for (int i = 0; i < 20000; ++i) {
      const uint32_t k = i % 3 == 0 ? static_cast<uint32_t>(rng.Int(
                                          0, static_cast<int>(mesh.triangle_count()) - 1))
                                    : static_cast<uint32_t>(i / 3) % mesh.triangle_count();
      Vec3 want[3], got[3];
      mesh.TriangleVertices(k, want);
      mesh.TriangleVertices(k, got, &cache);
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(std::memcmp(&got[c], &want[c], sizeof(Vec3)), 0) << "triangle " << k;
      }
    }
  }
}

// A path whose grown boxes take in much of the mesh at once: the closest-first
// walk holds far more than its sorted buffer of entries at a time (its queue
// then becomes a heap) and still visits every entered triangle once, in
// increasing entry fraction.
TEST(MeshBuild, ClosestFirstKeepsItsOrderWithManyWaiting) {
  Random rng(12);
  const TriangleMesh mesh = MustBuild(WavyGrid(30, 0.7));
  const std::vector<Aabb> tri_boxes = TriangleBoxes(mesh);
  const Aabb& b = mesh.bounds();
  size_t most_waiting = 0;
  for (int i = 0; i < 200; ++i) {
    const Vec3 c{rng.Uniform(b.min.x - 1, b.max.x + 1), rng.Uniform(b.min.y - 1, b.max.y + 1),
                 rng.Uniform(b.min.z - 1, b.max.z + 1)};
    const Vec3 d = rng.UnitVector() * rng.Uniform(0.0, 20.0);
    const Vec3 g = Vec3::Splat(rng.Uniform(0.5, 12.0));
    const BvhRay path(c, d);
    const double max_t = rng.Uniform(0.2, 1.0);
    std::vector<double> enter_t(mesh.triangle_count(), -1.0);
    std::vector<int> visits(mesh.triangle_count(), 0);
    size_t entered = 0, visited = 0;
    double last = 0.0;
    mesh.VisitSweptClosestFirst(
        path, g, &max_t,
        [&](uint32_t k, const uint32_t*, double* t, bool*) {
          if (!path.Enter(tri_boxes[k].Expanded(g), max_t, t)) return false;
          enter_t[k] = *t;
          most_waiting = std::max(most_waiting, ++entered - visited);
          return true;
        },
        [&](uint32_t k, uint32_t) {
          ++visited;
          EXPECT_EQ(visits[k]++, 0) << "path " << i << " triangle " << k;
          EXPECT_GE(enter_t[k], last) << "path " << i << " triangle " << k;
          last = enter_t[k];
          return true;
        });
    for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
      double t;
      ASSERT_EQ(visits[k], path.Enter(tri_boxes[k].Expanded(g), max_t, &t) ? 1 : 0)
          << "path " << i << " triangle " << k;
    }
  }
  EXPECT_GT(most_waiting, 100u);
}

// The sweeps' SSE2 triangle test gives BvhRay::Enter's answer and entry
// fraction to the bit (the order of a sweep's triangles depends on it):
// directions with zero, tiny, subnormal and huge components, boxes grazed on a face or
// corner, shared and signed-zero coordinates, no growth, limits of 0.
TEST(MeshBuild, GrownTrianglePathMatchesBvhRay) {
  Random rng(31);
  const auto coordinate = [&](double reach) {
    switch (rng.Int(0, 5)) {
      case 0: return 0.0;
      case 1: return -0.0;
      case 2: return static_cast<double>(rng.Int(-3, 3));
      default: return rng.Uniform(-reach, reach);
    }
  };
  const auto component = [&]() {
    switch (rng.Int(0, 7)) {
      case 0: return 0.0;
      case 1: return rng.Uniform(-1.0, 1.0) * 1e-300;
      case 2: return rng.Uniform(-1.0, 1.0) * 1e8;
      case 3: return rng.Uniform(-1.0, 1.0) * 1e-310;  // subnormal: 1 / d is infinite
      default: return rng.Uniform(-6.0, 6.0);
    }
  };
  int entered = 0;
  for (int i = 0; i < 200000; ++i) {
    Vec3 v[3];
    for (Vec3& p : v) p = {coordinate(3.0), coordinate(3.0), coordinate(3.0)};
    const Vec3 origin{coordinate(5.0), coordinate(5.0), coordinate(5.0)};
    const Vec3 d{component(), component(), component()};
    const Vec3 grow = i % 5 == 0 ? Vec3{}
                                 : Vec3{rng.Uniform(0.0, 2.0), rng.Uniform(0.0, 2.0),
                                        rng.Uniform(0.0, 2.0)};
    const double t_max = i % 7 == 0 ? 0.0 : rng.Uniform(0.0, 1.0);
    const BvhRay ray(origin, d);
    double t_want = -1.0, t_got = -2.0;
    const bool want = ray.Enter(Aabb().Union(v[0]).Union(v[1]).Union(v[2]).Expanded(grow), t_max,
                                &t_want);
    const bool got = GrownTrianglePath(ray, grow).Enter(v, t_max, &t_got);
    ASSERT_EQ(got, want) << "case " << i;
    if (!want) continue;
    ++entered;
    ASSERT_EQ(t_got, t_want) << "case " << i;
    ASSERT_EQ(std::signbit(t_got), std::signbit(t_want)) << "case " << i;
  }
  EXPECT_GT(entered, 20000);
}

// Rays grazing a triangle box's corner or face (through vertices and edges
// shared by several triangles), with zero or tiny direction components (one
// lying in a flat mesh's plane), near and 20 km from the origin: the rays'
// float walk (VisitRay) visits every triangle whose box the double slab test
// of bvh_ray.h keeps (the exact test widened by 1e-12), and the closest hit
// equals brute force over every triangle, fraction and triangle, whatever
// order the triangles are visited in.
TEST(MeshRaycast, GrazingRaysMatchBruteForce) {
  Random rng(23);
  const Vec3 far{20000, -30, -8000};
  std::vector<MeshData> meshes = {WavyGrid(24, 0.7), WavyGrid(12, 1.3, /*flat=*/true),
                                  IcoSphere(2.0, 3, far)};
  meshes.push_back(meshes[0]);
  for (Vec3& v : meshes.back().vertices) v += far;
  int visited = 0, hits = 0;
  for (const MeshData& data : meshes) {
    const TriangleMesh mesh = MustBuild(data);
    const std::vector<Aabb> tri_boxes = TriangleBoxes(mesh);
    const Aabb& b = mesh.bounds();
    for (int i = 0; i < 4000; ++i) {
      Vec3 d = rng.UnitVector() * rng.Uniform(0.5, 20.0);
      for (int a = 0; a < 3; ++a) {
        const int pick = rng.Int(0, 9);
        if (pick == 0) d[a] = 0.0;
        if (pick == 1) d[a] *= 1e-9;
      }
      if (d.LengthSq() == 0.0) d.y = -1.0;
      // Aim at a corner of a triangle's box (or a point of a face) at t0.
      const Aabb& box = tri_boxes[static_cast<size_t>(
          rng.Int(0, static_cast<int>(mesh.triangle_count()) - 1))];
      Vec3 p;
      for (int a = 0; a < 3; ++a) {
        const int pick = rng.Int(0, 2);
        p[a] = pick == 0 ? box.min[a] : pick == 1 ? box.max[a] : rng.Uniform(box.min[a], box.max[a]);
      }
      const double t0 = rng.Uniform(-0.2, 1.2);
      Vec3 o = p - d * t0;
      // A component the ray does not move along sits on the box's face.
      for (int a = 0; a < 3; ++a) {
        if (d[a] == 0.0) o[a] = p[a];
      }
      if (i % 5 == 0) o = b.Center() + Mul(rng.InBox(1.2), b.Extents() + Vec3::Splat(1.0));
      const double max_t = i % 3 == 0 ? 1.0 : rng.Uniform(0.0, 1.0);
      std::vector<int> visits(mesh.triangle_count(), 0);
      mesh.VisitRay(o, d, &max_t, [&](uint32_t k) {
        ++visits[k];
        return true;
      });
      const BvhRay path(o, d);
      for (uint32_t k = 0; k < mesh.triangle_count(); ++k) {
        EXPECT_LE(visits[k], 1);
        double t;
        if (path.Enter(tri_boxes[k], max_t, &t)) {
          ASSERT_EQ(visits[k], 1) << "ray " << i << " " << ToString(o) << " " << ToString(d)
                                  << " triangle " << k;
          ++visited;
        }
      }
      hits += ExpectClosestAsBruteForce(mesh, o, d);
    }
  }
  std::printf("%d triangle boxes met, %d closest hits\n", visited, hits);
  EXPECT_GT(hits, 4000);
}

// ShearVertex, its axes fixed at compile time per largest axis of the ray,
// gives the values of Woop et al.'s form with run-time axis indices to the
// bit (rays along every axis, both signs, points near and 20 km out).
TEST(MeshRaycast, ShearVertexMatchesIndexedForm) {
  Random rng(59);
  for (int i = 0; i < 20000; ++i) {
    const Vec3 o = rng.InBox(i % 2 ? 30.0 : 20000.0);
    Vec3 d = rng.InBox(10.0);
    d[i % 3] *= 40.0;  // each axis the largest in turn
    const Vec3 p = o + rng.InBox(50.0);
    const WatertightRay ray(o, d);
    const double diff[3] = {p.x - o.x, p.y - o.y, p.z - o.z};
    const ShearedVertex got = ShearVertex(ray, p);
    EXPECT_EQ(got.x, diff[ray.kx] - ray.sx * diff[ray.kz]);
    EXPECT_EQ(got.y, diff[ray.ky] - ray.sy * diff[ray.kz]);
    ASSERT_EQ(got.z, ray.sz * diff[ray.kz]) << ToString(o) << " " << ToString(d);
  }
}

// RayTrianglesPassSigns on four triangles for `ray`, checked against the
// whole test: a cleared bit must be a miss. Counts the cleared bits and the
// hits.
void CheckSignTest(const WatertightRay& ray, const Vec3 (&tris)[4][3], int* rejected, int* hits) {
  ShearedVertex s[4][3];
  ShearedTriangles4 lanes;
  for (uint32_t k = 0; k < 4; ++k) {
    for (int j = 0; j < 3; ++j) s[k][j] = ShearVertex(ray, tris[k][j]);
    lanes.Set(k, s[k][0], s[k][1], s[k][2]);
  }
  const uint32_t pass = RayTrianglesPassSigns(lanes);
  for (uint32_t k = 0; k < 4; ++k) {
    const bool whole = RayTriangleSheared(s[k][0], s[k][1], s[k][2], 1.0, nullptr);
    *hits += whole;
    if ((pass >> k & 1u) == 0) {
      ++*rejected;
      EXPECT_FALSE(whole) << "triangle " << k << " of " << ToString(ray.origin) << " + t "
                          << ToString(ray.dir);
    }
  }
}

// The four-at-once sign test clears a triangle's bit only where the whole
// test misses, on random triangles and rays through their vertices and
// edges, and on a grid's triangles around a vertex with rays straight down
// through its vertices and edges (edge functions exactly 0, which the whole
// test recomputes); it clears most of the bits of triangles a ray passes
// beside.
TEST(MeshRaycast, FourAtOnceSignTestRejectsOnlyMisses) {
  Random rng(61);
  int rejected = 0, hits = 0;
  constexpr int kRays = 20000;
  for (int i = 0; i < kRays; ++i) {
    const Vec3 o = rng.InBox(i % 2 ? 30.0 : 20000.0);
    Vec3 v[4][3];
    for (auto& t : v) {
      for (Vec3& p : t) p = o + rng.InBox(20.0);
    }
    // Half the rays aim at a vertex or an edge's midpoint of triangle 0.
    const int aim = i % 4;
    const Vec3 target = aim == 0   ? v[0][i % 3]
                        : aim == 1 ? (v[0][0] + v[0][1]) * 0.5
                                   : o + rng.InBox(20.0);
    CheckSignTest(WatertightRay(o, (target - o) * 2.0), v, &rejected, &hits);
  }
  std::printf("%d of %d rejected, %d hit\n", rejected, 4 * kRays, hits);
  EXPECT_GT(rejected, 2 * kRays);
  EXPECT_GT(hits, kRays / 5);
  const Vec3 grid[4][3] = {{{0, 0, 0}, {1, 0, 0}, {1, 1, 0}}, {{0, 0, 0}, {1, 1, 0}, {0, 1, 0}},
                           {{0, 0, 0}, {0, 1, 0}, {-1, 0, 0}}, {{0, 0, 0}, {-1, 0, 0}, {0, -1, 0}}};
  int grid_hits = 0, grid_rejected = 0;
  for (const Vec3& at : {Vec3{0, 0, 0}, Vec3{0.5, 0, 0}, Vec3{0.5, 0.5, 0}, Vec3{0, 0.5, 0},
                         Vec3{1, 1, 0}, Vec3{-0.5, -0.5, 0}}) {
    CheckSignTest(WatertightRay(at + Vec3{0, 0, 2}, Vec3{0, 0, -4}), grid, &grid_rejected,
                  &grid_hits);
  }
  EXPECT_GE(grid_hits, 6);  // watertight: each ray hits at least one
}

// Closest ray hits equal brute force over every triangle, exactly.
TEST(MeshRaycast, MatchesBruteForce) {
  Random rng(101);
  const std::vector<MeshData> meshes = {IcoSphere(2.0, 3), WavyGrid(24, 0.7), BoxMesh(1.5)};
  int hits = 0, total = 0;
  for (const MeshData& m : meshes) {
    const TriangleMesh mesh = MustBuild(m);
    const Aabb b = mesh.bounds();
    for (int i = 0; i < 3000; ++i) {
      const Vec3 o = b.Center() + Mul(rng.InBox(1.5), b.Extents() + Vec3::Splat(1.0));
      const Vec3 target = b.Center() + Mul(rng.InBox(1.0), b.Extents());
      const Vec3 d = (target - o) * rng.Uniform(0.3, 2.0);
      MeshRayHit got, want;
      const bool g = mesh.RaycastClosest(o, d, &got);
      const bool w = BruteRaycast(mesh, o, d, &want);
      ASSERT_EQ(g, w) << ToString(o) << " " << ToString(d);
      ++total;
      if (!g) continue;
      ++hits;
      EXPECT_EQ(got.fraction, want.fraction);
      EXPECT_EQ(got.triangle, want.triangle);
      EXPECT_NEAR(got.normal.Length(), 1.0, 1e-12);
      EXPECT_LE(Dot(got.normal, d), 0.0);
      // RaycastAll holds the same closest hit, and one entry per hit triangle.
      std::vector<MeshRayHit> all;
      BruteRaycastAll(mesh, o, d, &all);
      double min_t = 2.0;
      for (const MeshRayHit& h : all) min_t = std::min(min_t, h.fraction);
      EXPECT_EQ(min_t, got.fraction);
    }
  }
  std::printf("%d of %d rays hit\n", hits, total);
  EXPECT_GT(hits, total / 4);
}

// Shoots a ray from outside through `p` (on the closed convex surface) towards
// the interior point `m`: it must hit, at p.
void ExpectThrough(const TriangleMesh& mesh, const Vec3& p, const Vec3& m, double dist,
                   int* count) {
  const Vec3 o = p + (p - m).Normalized() * dist;
  const Vec3 d = m - o;
  MeshRayHit hit;
  ASSERT_TRUE(mesh.RaycastClosest(o, d, &hit)) << "slipped through at " << ToString(p)
                                               << " from " << ToString(o);
  EXPECT_LE(Distance(o + d * hit.fraction, p), 1e-9 * (1.0 + p.Length())) << ToString(p);
  ++*count;
}

// Watertight: rays through every vertex, every edge midpoint and random edge
// points of closed meshes all hit; axis-aligned rays through a box's edges,
// diagonals and corners too (edge functions exactly zero).
TEST(MeshRaycast, WatertightOnClosedMeshes) {
  Random rng(7);
  int count = 0;
  for (const Vec3& offset : {Vec3{0, 0, 0}, Vec3{20000, 0, -8000}}) {
    for (const MeshData& m : {IcoSphere(1.7, 3, offset), BoxMesh(1.25, offset),
                              IcoSphere(0.9, 1, offset)}) {
      const TriangleMesh mesh = MustBuild(m);
      for (const Vec3& v : m.vertices) {
        for (int i = 0; i < 4; ++i) ExpectThrough(mesh, v, offset + rng.InBox(0.3), 3.0, &count);
      }
      for (const auto& t : m.triangles) {
        for (int e = 0; e < 3; ++e) {
          const Vec3 a = m.vertices[t[e]], b = m.vertices[t[(e + 1) % 3]];
          ExpectThrough(mesh, (a + b) * 0.5, offset + rng.InBox(0.3), 5.0, &count);
          ExpectThrough(mesh, a + (b - a) * rng.Uniform(0, 1), offset + rng.InBox(0.3), 2.0,
                        &count);
        }
      }
    }
  }
  // Axis-aligned rays on a lattice of the box's faces (edges and diagonals exact).
  const TriangleMesh box = MustBuild(BoxMesh(1.0));
  for (int axis = 0; axis < 3; ++axis) {
    for (int i = -4; i <= 4; ++i) {
      for (int j = -4; j <= 4; ++j) {
        for (double dir : {-1.0, 1.0}) {
          Vec3 o, d;
          o[(axis + 1) % 3] = i * 0.25;
          o[(axis + 2) % 3] = j * 0.25;
          o[axis] = -3.0 * dir;
          d[axis] = 6.0 * dir;
          MeshRayHit hit;
          ASSERT_TRUE(box.RaycastClosest(o, d, &hit)) << ToString(o) << " " << ToString(d);
          EXPECT_DOUBLE_EQ(hit.fraction, 2.0 / 6.0);
          ++count;
        }
      }
    }
  }
  std::printf("%d rays through vertices and edges, all hit\n", count);
}

// A mesh 20 km from the origin answers like the same mesh at the origin.
TEST(MeshRaycast, FarFromOriginLikeAtOrigin) {
  Random rng(33);
  const Vec3 far{20000, 0, -8000};
  MeshData near_data = WavyGrid(20, 0.5);
  MeshData far_data = near_data;
  for (Vec3& v : far_data.vertices) v += far;
  const TriangleMesh near_mesh = MustBuild(near_data);
  const TriangleMesh far_mesh = MustBuild(far_data);
  int hits = 0;
  for (int i = 0; i < 3000; ++i) {
    const Vec3 o{rng.Uniform(-1, 11), rng.Uniform(1, 4), rng.Uniform(-1, 11)};
    const Vec3 d{rng.Uniform(-6, 6), rng.Uniform(-8, -1), rng.Uniform(-6, 6)};
    MeshRayHit a, b;
    const bool ha = near_mesh.RaycastClosest(o, d, &a);
    const bool hb = far_mesh.RaycastClosest(o + far, d, &b);
    ASSERT_EQ(ha, hb) << ToString(o) << " " << ToString(d);
    if (!ha) continue;
    ++hits;
    EXPECT_NEAR(a.fraction, b.fraction, 1e-9);
    EXPECT_TRUE(VecNear(a.normal, b.normal, 1e-9));
  }
  EXPECT_GT(hits, 1000);
}

// Sphere and capsule overlaps equal brute force over every triangle.
TEST(MeshOverlap, SphereAndCapsuleMatchBruteForce) {
  Random rng(5);
  const TriangleMesh mesh = MustBuild(WavyGrid(16, 0.8));
  const TriangleMesh ico = MustBuild(IcoSphere(2.0, 3));
  int touched = 0;
  for (const TriangleMesh* m : {&mesh, &ico}) {
    const Aabb b = m->bounds();
    for (int i = 0; i < 2000; ++i) {
      const Vec3 c = b.Center() + Mul(rng.InBox(1.2), b.Extents());
      const double r = rng.Uniform(0.05, 1.5);
      const Vec3 p1 = c + rng.InBox(1.0);
      std::vector<SurfaceContactHit> sph, cap;
      const bool s = BruteOverlapSphere(*m, c, r, false, &sph);
      const bool k = BruteOverlapCapsule(*m, c, p1, r, false, &cap);
      std::vector<uint32_t> want_s, want_c;
      for (uint32_t t = 0; t < m->triangle_count(); ++t) {
        Vec3 v[3], q, qs;
        m->TriangleVertices(t, v);
        if (PointTriangleDistanceSq(c, v[0], v[1], v[2], &q) <= r * r) {
          want_s.push_back(m->OriginalIndex(t));
        }
        if (SegmentTriangleDistanceSq(c, p1, v[0], v[1], v[2], &qs, &q) <= r * r) {
          want_c.push_back(m->OriginalIndex(t));
        }
      }
      auto ids = [](const std::vector<SurfaceContactHit>& cs) {
        std::vector<uint32_t> r2;
        for (const SurfaceContactHit& x : cs) r2.push_back(x.triangle);
        std::sort(r2.begin(), r2.end());
        return r2;
      };
      std::sort(want_s.begin(), want_s.end());
      std::sort(want_c.begin(), want_c.end());
      EXPECT_EQ(ids(sph), want_s);
      EXPECT_EQ(ids(cap), want_c);
      EXPECT_EQ(s, !want_s.empty());
      EXPECT_EQ(k, !want_c.empty());
      EXPECT_EQ(BruteOverlapSphere(*m, c, r, true, nullptr), s);
      touched += s;
      // Contacts: pushing the sphere out by depth along the normal separates it.
      for (const SurfaceContactHit& x : sph) {
        EXPECT_NEAR(x.normal.Length(), 1.0, 1e-12);
        EXPECT_GE(x.depth, 0.0);
        EXPECT_LE(Distance(x.point_on_mesh, c), r + 1e-12);
      }
    }
  }
  EXPECT_GT(touched, 500);
}

// Sphere sweeps equal brute force; the sphere is apart just before the
// fraction and touching at it.
TEST(MeshSweep, SphereMatchesBruteForceAndTouches) {
  Random rng(11);
  const TriangleMesh mesh = MustBuild(WavyGrid(16, 0.8));
  const TriangleMesh ico = MustBuild(IcoSphere(2.0, 3));
  int hits = 0;
  for (const TriangleMesh* m : {&mesh, &ico}) {
    const Aabb b = m->bounds();
    for (int i = 0; i < 2000; ++i) {
      const Vec3 c = b.Center() + Mul(rng.InBox(1.5), b.Extents() + Vec3::Splat(1.0));
      const Vec3 d = b.Center() + Mul(rng.InBox(1.0), b.Extents()) - c;
      const double r = rng.Uniform(0.05, 1.0);
      const CastResult got = BruteSweepSphere(*m, c, r, d);
      double best = 1.0;
      bool found = false;
      for (uint32_t t = 0; t < m->triangle_count(); ++t) {
        Vec3 v[3];
        m->TriangleVertices(t, v);
        const CastResult s = SweepSphereTriangle(c, r, d, 1.0, v[0], v[1], v[2], 7);
        if (s.hit() && (!found || s.fraction < best)) {
          best = s.fraction;
          found = true;
        }
      }
      ASSERT_EQ(got.state != CastState::kMiss, found) << ToString(c) << ToString(d);
      if (!found) continue;
      ++hits;
      EXPECT_EQ(got.fraction, best);
      if (got.fraction > 0.0) {
        EXPECT_LE(Dot(got.normal, d), 1e-12);
        EXPECT_FALSE(BruteOverlapSphere(*m, c + d * (got.fraction * (1 - 1e-9) - 1e-9), r, true,
                                      nullptr));
        EXPECT_TRUE(BruteOverlapSphere(*m, c + d * got.fraction, r * (1 + 1e-9) + 1e-12, true,
                                     nullptr));
      }
    }
  }
  EXPECT_GT(hits, 1000);
}

// Sliding on a flat tessellated floor reports the face normal, even where the
// first contact is an internal edge or vertex.
TEST(MeshSweep, SlidingOnFlatFloorReportsFaceNormal) {
  Random rng(21);
  const TriangleMesh floor = MustBuild(WavyGrid(10, 1.0, /*flat=*/true));
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    const double r = rng.Uniform(0.2, 0.6);
    // Start just above the floor, move mostly sideways and slightly down;
    // start on lattice points now and then so the contact is a vertex or edge.
    Vec3 c{rng.Uniform(2, 8), r + rng.Uniform(1e-6, 1e-3), rng.Uniform(2, 8)};
    if (i % 3 == 0) c.x = std::round(c.x);
    if (i % 5 == 0) c.z = std::round(c.z);
    const Vec3 d{rng.Uniform(-1, 1), -rng.Uniform(1e-3, 0.05), rng.Uniform(-1, 1)};
    const CastResult hit = BruteSweepSphere(floor, c, r, d);
    ASSERT_EQ(hit.state, CastState::kHit);
    EXPECT_TRUE(VecNear(hit.normal, {0, 1, 0}, 1e-12)) << ToString(c) << " " << ToString(d);
    ++checked;
  }
  EXPECT_EQ(checked, 3000);
}

// The next/ case files evaluated on their mesh and heightfield colliders
// alone (primitive colliders are not this component's): raycasts, sweeps and
// overlaps of every query shape (a convex_hull query through the support
// function of its points). Sweeps and rays: where the expected first hit is a
// surface we find it (or an `also`) within the tolerance; where it is a
// primitive or nothing, no surface is hit before it. Overlaps: every surface
// in `hits` is reported, none outside `hits` and `maybe`.
struct CaseStats {
  int checked[3] = {0, 0, 0};  // raycast, sweep, overlap
  int agree[3] = {0, 0, 0};
  int capped = 0;  // sweeps whose first contact hit the advancement cap
};

/// The solid convex hull of points placed in a surface's frame, as a support
/// function (margin 0) for the generic surface queries.
class PlacedPoints {
 public:
  PlacedPoints(const std::vector<Vec3>& points, const Pose& pose) {
    double r = 0.0;
    for (const Vec3& p : points) {
      pts_.push_back(pose.TransformPoint(p));
      bounds_ = bounds_.Union(pts_.back());
      r = std::max(r, p.Length());
    }
    scale_ = r + pose.position.Length();
  }
  Vec3 operator()(const Vec3& d) const {
    size_t best = 0;
    double bd = Dot(pts_[0], d);
    for (size_t i = 1; i < pts_.size(); ++i) {
      const double x = Dot(pts_[i], d);
      if (x > bd) { bd = x; best = i; }
    }
    return pts_[best];
  }
  double margin() const { return 0.0; }
  const Aabb& bounds() const { return bounds_; }
  double scale() const { return scale_; }

 private:
  std::vector<Vec3> pts_;
  Aabb bounds_;
  double scale_ = 0.0;
};

void CheckCaseFile(const std::string& name, CaseStats* stats) {
  const std::string path = std::string(HITBOX_CASES_DIR) + "/next/" + name;
  std::ifstream in(path);
  if (!in) GTEST_SKIP() << "no case file " << path;
  const nlohmann::json doc = nlohmann::json::parse(in);
  struct Surface {
    uint64_t id;
    int layer;
    Pose pose;
    std::unique_ptr<TriangleMesh> mesh;
    std::unique_ptr<Heightfield> field;
  };
  auto vec = [](const nlohmann::json& j) {
    return Vec3{j[0].get<double>(), j[1].get<double>(), j[2].get<double>()};
  };
  auto quat = [](const nlohmann::json& q) {
    return Quat{q[0].get<double>(), q[1].get<double>(), q[2].get<double>(), q[3].get<double>()};
  };
  std::vector<Surface> surfaces;
  for (const auto& c : doc["colliders"]) {
    const auto& s = c["shape"];
    Surface surf;
    surf.id = c["id"].get<uint64_t>();
    surf.layer = c["layer"].get<int>();
    surf.pose = Pose{vec(c["position"]), quat(c["rotation"])};
    if (s.contains("mesh")) {
      std::vector<Vec3> v;
      std::vector<TriangleMesh::Indices> t;
      for (const auto& p : s["mesh"]["vertices"]) v.push_back(vec(p));
      for (const auto& p : s["mesh"]["triangles"]) {
        t.push_back({p[0].get<uint32_t>(), p[1].get<uint32_t>(), p[2].get<uint32_t>()});
      }
      auto r = TriangleMesh::Build(v, t);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      surf.mesh = std::make_unique<TriangleMesh>(std::move(r).value());
    } else if (s.contains("heightfield")) {
      const auto& h = s["heightfield"];
      auto r = Heightfield::Build(h["rows"].get<uint32_t>(), h["cols"].get<uint32_t>(),
                                  h["cell_size"][0].get<double>(), h["cell_size"][1].get<double>(),
                                  h["heights"].get<std::vector<double>>());
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      surf.field = std::make_unique<Heightfield>(std::move(r).value());
    } else {
      continue;
    }
    surfaces.push_back(std::move(surf));
  }
  std::map<uint64_t, bool> is_surface;
  for (const Surface& s : surfaces) is_surface[s.id] = true;

  // A query shape in a surface's frame: sweep / overlap through the generic
  // support-function queries (spheres too, so the GJK path is what is checked).
  struct QueryShape {
    bool hull = false;
    internal::ConvexCore core;
    std::vector<Vec3> points;
  };
  auto parse_shape = [&](const nlohmann::json& s) {
    QueryShape q;
    using K = internal::ConvexCore::Kind;
    if (s.contains("sphere")) {
      q.core.kind = K::kPoint;
      q.core.margin = s["sphere"]["radius"].get<double>();
    } else if (s.contains("capsule")) {
      q.core.kind = K::kSegment;
      q.core.margin = s["capsule"]["radius"].get<double>();
      q.core.half_height = s["capsule"]["half_height"].get<double>();
    } else if (s.contains("box")) {
      q.core.kind = K::kBox;
      q.core.half_extents = vec(s["box"]["half_extents"]);
    } else if (s.contains("cylinder")) {
      q.core.kind = K::kCylinder;
      q.core.radius = s["cylinder"]["radius"].get<double>();
      q.core.half_height = s["cylinder"]["half_height"].get<double>();
    } else {
      q.hull = true;
      for (const auto& p : s["convex_hull"]["points"]) q.points.push_back(vec(p));
    }
    return q;
  };
  auto contains = [](const nlohmann::json& list, uint64_t id) {
    for (const auto& x : list) {
      if (x.get<uint64_t>() == id) return true;
    }
    return false;
  };

  const auto& queries = doc["queries"];
  const auto& expected = doc["expected"];
  for (size_t i = 0; i < queries.size(); ++i) {
    const auto& qj = queries[i];
    const auto& e = expected[i];
    const uint32_t mask = qj.value("mask", 0xffffffffu);
    auto candidate = [&](const Surface& s) { return (mask & (1u << s.layer)) != 0; };
    int kind;
    bool ok = true;
    std::string got;
    if (qj.contains("overlap")) {
      kind = 2;
      const auto& o = qj["overlap"];
      const QueryShape qs = parse_shape(o["shape"]);
      const Pose pose{vec(o["position"]), quat(o["rotation"])};
      for (const Surface& s : surfaces) {
        if (!candidate(s)) continue;
        const Pose local = s.pose.RelativeTo(pose);
        bool hit;
        if (qs.hull) {
          const PlacedPoints pp(qs.points, local);
          hit = s.mesh ? SurfaceOverlapConvex(*s.mesh, pp, true, nullptr)
                       : SurfaceOverlapConvex(*s.field, pp, true, nullptr);
        } else {
          const PlacedConvex pc(qs.core, local);
          hit = s.mesh ? SurfaceOverlapConvex(*s.mesh, pc, true, nullptr)
                       : SurfaceOverlapConvex(*s.field, pc, true, nullptr);
        }
        const bool must = contains(e["hits"], s.id);
        const bool may = contains(e["maybe"], s.id);
        if ((must && !hit) || (hit && !must && !may)) {
          ok = false;
          got += " collider " + std::to_string(s.id) + (hit ? " reported" : " missed");
        }
      }
    } else {
      const bool ray = qj.contains("raycast");
      kind = ray ? 0 : 1;
      const auto& r = ray ? qj["raycast"] : qj["sweep"];
      const Vec3 o = vec(ray ? r["origin"] : r["position"]);
      const Vec3 d = vec(r["translation"]);
      QueryShape qs;
      Quat rot;
      if (!ray) {
        qs = parse_shape(r["shape"]);
        rot = quat(r["rotation"]);
      }
      bool found = false;
      double best = 2.0;
      uint64_t best_id = 0;
      for (const Surface& s : surfaces) {
        if (!candidate(s)) continue;
        const Vec3 ld = s.pose.InverseTransformDirection(d);
        double f = 2.0;
        if (ray) {
          const Vec3 lo = s.pose.InverseTransformPoint(o);
          MeshRayHit h;
          if (s.mesh ? s.mesh->RaycastClosest(lo, ld, &h) : s.field->RaycastClosest(lo, ld, &h)) {
            f = h.fraction;
          }
        } else {
          const Pose local = s.pose.RelativeTo(Pose{o, rot});
          CastResult h;
          if (qs.hull) {
            const PlacedPoints pp(qs.points, local);
            h = s.mesh ? testing::SweepAnyCore(*s.mesh, pp, ld)
                       : testing::SweepAnyCore(*s.field, pp, ld);
          } else {
            const PlacedConvex pc(qs.core, local);
            h = s.mesh ? testing::SweepAnyCore(*s.mesh, pc, ld)
                       : testing::SweepAnyCore(*s.field, pc, ld);
          }
          if (h.state != CastState::kMiss) {
            f = h.fraction;
            stats->capped += h.state == CastState::kFailed;
          }
        }
        if (f < best) { best = f; best_id = s.id; found = true; }
      }
      got = found ? std::to_string(best_id) + " at " + std::to_string(best) : "none";
      if (e["hit"].is_null()) {
        ok = !found;
      } else {
        const uint64_t want = e["hit"].get<uint64_t>();
        const double f = e["fraction"].get<double>();
        const double tol = e["tolerance"].get<double>();
        const nlohmann::json also = e.contains("also") ? e["also"] : nlohmann::json::array();
        if (is_surface.count(want) > 0) {
          ok = found && std::fabs(best - f) <= tol && (best_id == want || contains(also, best_id));
        } else {
          ok = !found || best >= f - tol || contains(also, best_id);
        }
      }
    }
    ++stats->checked[kind];
    if (ok) {
      ++stats->agree[kind];
    } else {
      ADD_FAILURE() << name << " query " << qj["id"] << ": got " << got << ", expected "
                    << e.dump();
    }
  }
}

void PrintStats(const char* name, const CaseStats& s) {
  std::printf("%s: raycasts %d/%d, sweeps %d/%d, overlaps %d/%d agree (%d capped sweeps)\n",
              name, s.agree[0], s.checked[0], s.agree[1], s.checked[1], s.agree[2], s.checked[2],
              s.capped);
}

TEST(MeshCaseFiles, MeshLevel) {
  CaseStats stats;
  CheckCaseFile("mesh_level.json", &stats);
  PrintStats("mesh_level.json", stats);
}

TEST(MeshCaseFiles, Heightfield) {
  CaseStats stats;
  CheckCaseFile("heightfield.json", &stats);
  PrintStats("heightfield.json", stats);
}

TEST(MeshCaseFiles, BigLevel) {
  CaseStats stats;
  CheckCaseFile("big_level.json", &stats);
  PrintStats("big_level.json", stats);
}

}  // namespace
}  // namespace hitbox

namespace hitbox {
namespace {

using internal::ConvexCore;
using testing::IcoSphere;
using testing::MeshData;
using testing::Random;
using testing::VecNear;
using testing::WavyGrid;

ConvexCore Core(ConvexCore::Kind kind, const Vec3& he, double hh, double r, double margin) {
  ConvexCore c;
  c.kind = kind;
  c.half_extents = he;
  c.half_height = hh;
  c.radius = r;
  c.margin = margin;
  return c;
}

/// Box-triangle overlap by the separating axis test (13 axes; Akenine-Moller
/// 2001), box in the triangle's frame as a pose: the reference for GJK.
bool BoxTriangleSat(const Vec3& he, const Pose& box, const Vec3 tri[3]) {
  Vec3 v[3];
  for (int i = 0; i < 3; ++i) v[i] = box.InverseTransformPoint(tri[i]);
  const Vec3 e[3] = {v[1] - v[0], v[2] - v[1], v[0] - v[2]};
  std::vector<Vec3> axes = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, Cross(e[0], e[1])};
  for (int a = 0; a < 3; ++a) {
    for (const Vec3& ed : e) axes.push_back(Cross(Vec3{a == 0 ? 1.0 : 0, a == 1 ? 1.0 : 0, a == 2 ? 1.0 : 0}, ed));
  }
  for (const Vec3& ax : axes) {
    if (ax.LengthSq() < 1e-24) continue;
    const double r = he.x * std::fabs(ax.x) + he.y * std::fabs(ax.y) + he.z * std::fabs(ax.z);
    const double p0 = Dot(v[0], ax), p1 = Dot(v[1], ax), p2 = Dot(v[2], ax);
    if (std::min({p0, p1, p2}) > r || std::max({p0, p1, p2}) < -r) return false;
  }
  return true;
}

// SurfaceOverlapLowestConvex (the overlap query's sub_shape) tests near
// triangles in input order and stops at the first touched: it equals the
// least of every touched triangle, on meshes whose input order is shuffled
// against the hierarchy's.
TEST(MeshConvex, OverlapLowestIsTheLeastTouched) {
  Random rng(78);
  MeshData grid = WavyGrid(12, 0.9);
  std::shuffle(grid.triangles.begin(), grid.triangles.end(), rng.engine());
  MeshData ico = IcoSphere(2.0, 2);
  std::shuffle(ico.triangles.begin(), ico.triangles.end(), rng.engine());
  const TriangleMesh meshes[2] = {MustBuild(grid), MustBuild(ico)};
  int touched = 0, several = 0;
  for (const TriangleMesh& m : meshes) {
    const Aabb b = m.bounds();
    for (int i = 0; i < 1500; ++i) {
      const Vec3 c = b.Center() + Mul(rng.InBox(1.1), b.Extents() + Vec3::Splat(0.5));
      const Pose pose{c, Quat::FromAxisAngle(rng.UnitVector(), rng.Uniform(0, 6.3))};
      const double r = rng.Uniform(0.1, 1.0), hh = rng.Uniform(0.0, 1.0);
      const Vec3 he{rng.Uniform(0.1, 1), rng.Uniform(0.1, 1), rng.Uniform(0.1, 1)};
      const PlacedConvex cores[3] = {
          PlacedConvex(Core(ConvexCore::Kind::kPoint, {}, 0, 0, r), pose),
          PlacedConvex(Core(ConvexCore::Kind::kSegment, {}, hh, 0, r), pose),
          PlacedConvex(Core(ConvexCore::Kind::kBox, he, 0, 0, 0), pose)};
      for (const PlacedConvex& q : cores) {
        std::vector<uint32_t> all;
        SurfaceOverlapConvex(m, q, false, &all);
        const uint32_t least = all.empty() ? UINT32_MAX : *std::min_element(all.begin(), all.end());
        ASSERT_EQ(SurfaceOverlapLowestConvex(m, q), least) << "case " << i;
        touched += !all.empty();
        several += all.size() > 1;
      }
    }
  }
  EXPECT_GT(touched, 1000);
  EXPECT_GT(several, 500);
}

// GJK overlaps: a point core + radius equals the closed-form sphere test, a
// segment core the capsule test, a box the SAT test (away from touching).
TEST(MeshConvex, OverlapMatchesClosedFormAndSat) {
  Random rng(77);
  const TriangleMesh mesh = MustBuild(WavyGrid(12, 0.9));
  const TriangleMesh ico = MustBuild(IcoSphere(2.0, 2));
  int hits = 0, compared = 0;
  for (const TriangleMesh* m : {&mesh, &ico}) {
    const Aabb b = m->bounds();
    for (int i = 0; i < 1500; ++i) {
      const Vec3 c = b.Center() + Mul(rng.InBox(1.1), b.Extents() + Vec3::Splat(0.5));
      const Quat q = Quat::FromAxisAngle(rng.UnitVector(), rng.Uniform(0, 6.3));
      const Pose pose{c, q};
      const double r = rng.Uniform(0.1, 1.0), hh = rng.Uniform(0.0, 1.0);
      const Vec3 he{rng.Uniform(0.1, 1), rng.Uniform(0.1, 1), rng.Uniform(0.1, 1)};
      std::vector<uint32_t> gs, gc, gb;
      SurfaceOverlapConvex(*m, PlacedConvex(Core(ConvexCore::Kind::kPoint, {}, 0, 0, r), pose), false, &gs);
      SurfaceOverlapConvex(*m, PlacedConvex(Core(ConvexCore::Kind::kSegment, {}, hh, 0, r), pose), false, &gc);
      SurfaceOverlapConvex(*m, PlacedConvex(Core(ConvexCore::Kind::kBox, he, 0, 0, 0), pose), false, &gb);
      std::vector<SurfaceContactHit> cs, cc;
      BruteOverlapSphere(*m, c, r, false, &cs);
      const Vec3 axis = q.Rotate({0, hh, 0});
      BruteOverlapCapsule(*m, c - axis, c + axis, r, false, &cc);
      std::vector<uint32_t> ws, wc, wb;
      for (const auto& x : cs) ws.push_back(x.triangle);
      for (const auto& x : cc) wc.push_back(x.triangle);
      // Closed-form and GJK agree except within 1e-9 of touching.
      for (uint32_t k = 0; k < m->triangle_count(); ++k) {
        Vec3 v[3], qq, qs;
        m->TriangleVertices(k, v);
        const uint32_t orig = m->OriginalIndex(k);
        const double ds = std::sqrt(PointTriangleDistanceSq(c, v[0], v[1], v[2], &qq)) - r;
        const double dc = std::sqrt(SegmentTriangleDistanceSq(c - axis, c + axis, v[0], v[1], v[2], &qs, &qq)) - r;
        const bool in_gs = std::count(gs.begin(), gs.end(), orig) > 0;
        const bool in_gc = std::count(gc.begin(), gc.end(), orig) > 0;
        const bool in_gb = std::count(gb.begin(), gb.end(), orig) > 0;
        if (std::fabs(ds) > 1e-9) { EXPECT_EQ(in_gs, ds <= 0.0) << ds; ++compared; }
        if (std::fabs(dc) > 1e-9) { EXPECT_EQ(in_gc, dc <= 0.0) << dc; ++compared; }
        // SAT with the box grown / shrunk by 1e-9 brackets the GJK answer.
        const bool grown = BoxTriangleSat(he + Vec3::Splat(1e-9), pose, v);
        const bool shrunk = BoxTriangleSat(he - Vec3::Splat(1e-9), pose, v);
        if (grown == shrunk) { EXPECT_EQ(in_gb, grown); ++compared; }
        hits += in_gb;
      }
    }
  }
  std::printf("%d triangle decisions compared, %d box-triangle overlaps\n", compared, hits);
  EXPECT_GT(hits, 1000);
}

/// Penetration depth of a box (half-extents he at `box`) into a triangle by
/// SAT: the smallest overlap over the 13 axes (exact for two polytopes).
double BoxTriangleSatDepth(const Vec3& he, const Pose& box, const Vec3 tri[3]) {
  Vec3 v[3];
  for (int i = 0; i < 3; ++i) v[i] = box.InverseTransformPoint(tri[i]);
  const Vec3 e[3] = {v[1] - v[0], v[2] - v[1], v[0] - v[2]};
  std::vector<Vec3> axes = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, Cross(e[0], e[1])};
  for (int a = 0; a < 3; ++a) {
    Vec3 u;
    u[a] = 1.0;
    for (const Vec3& ed : e) axes.push_back(Cross(u, ed));
  }
  double depth = std::numeric_limits<double>::infinity();
  for (Vec3 ax : axes) {
    if (ax.LengthSq() < 1e-20) continue;
    ax = ax.Normalized();
    const double r = he.x * std::fabs(ax.x) + he.y * std::fabs(ax.y) + he.z * std::fabs(ax.z);
    const double p0 = Dot(v[0], ax), p1 = Dot(v[1], ax), p2 = Dot(v[2], ax);
    const double mn = std::min({p0, p1, p2}), mx = std::max({p0, p1, p2});
    depth = std::min(depth, std::min(mx + r, r - mn));
  }
  return depth;
}

// Contacts of boxes and cylinders (EPA when the cores overlap): a box's depth
// equals the SAT depth; moving the query by depth along the normal separates
// it from that triangle, and 1e-6 less does not.
TEST(MeshConvex, ContactsSeparateByDepth) {
  Random rng(66);
  const TriangleMesh mesh = MustBuild(WavyGrid(8, 1.0));
  const Aabb b = mesh.bounds();
  int contacts = 0, epa = 0, loose = 0;
  for (int i = 0; i < 1500; ++i) {
    const Vec3 c = b.Center() + Mul(rng.InBox(0.9), b.Extents() + Vec3{0, 0.3, 0});
    const Quat q = Quat::FromAxisAngle(rng.UnitVector(), rng.Uniform(0, 6.3));
    const Vec3 he{rng.Uniform(0.1, 0.7), rng.Uniform(0.1, 0.7), rng.Uniform(0.1, 0.7)};
    const double r = rng.Uniform(0.1, 0.7), hh = rng.Uniform(0.05, 0.7);
    const ConvexCore cores[2] = {Core(ConvexCore::Kind::kBox, he, 0, 0, 0),
                                 Core(ConvexCore::Kind::kCylinder, {}, hh, r, 0)};
    for (int k = 0; k < 2; ++k) {
      const Pose pose{c, q};
      std::vector<SurfaceContactHit> cs;
      const bool any = SurfaceContactsConvex(mesh, PlacedConvex(cores[k], pose), &cs);
      std::vector<uint32_t> ids;
      EXPECT_EQ(any, SurfaceOverlapConvex(mesh, PlacedConvex(cores[k], pose), false, &ids));
      EXPECT_EQ(cs.size(), ids.size());
      for (const SurfaceContactHit& x : cs) {
        ++contacts;
        Vec3 v[3];
        const uint32_t kk = [&] {
          for (uint32_t t = 0; t < mesh.triangle_count(); ++t) {
            if (mesh.OriginalIndex(t) == x.triangle) return t;
          }
          return 0u;
        }();
        mesh.TriangleVertices(kk, v);
        EXPECT_NEAR(x.normal.Length(), 1.0, 1e-9);
        EXPECT_GE(x.depth, 0.0);
        if (k == 0) {
          EXPECT_NEAR(x.depth, std::max(BoxTriangleSatDepth(he, pose, v), 0.0), 1e-6)
              << ToString(pose);
        }
        if (x.depth > 1e-5) ++epa;
        // Separated after moving by depth (+1e-7), still touching 1e-6 short of it.
        const PlacedConvex moved(cores[k], Pose{c + x.normal * (x.depth + 1e-7), q});
        EXPECT_GT(TriangleConvexGjk(v, moved, 0.0, moved.scale()).distance, 0.0) << k;
        if (x.depth > 2e-6) {
          // Box depths are exact (SAT above). On a cylinder's curved rim EPA
          // converges linearly and may stop short of 1e-6: then the depth is
          // still a separating move (checked above) and within 5e-3 of the
          // shortest; count how often.
          const PlacedConvex shy(cores[k], Pose{c + x.normal * (x.depth - 1e-6), q});
          const bool touching = TriangleConvexGjk(v, shy, 0.0, shy.scale()).distance_lower <= 0.0;
          if (k == 0) {
            EXPECT_TRUE(touching) << ToString(pose);
          } else if (!touching) {
            ++loose;
            const PlacedConvex shy2(cores[k], Pose{c + x.normal * (x.depth - 5e-3), q});
            EXPECT_LE(TriangleConvexGjk(v, shy2, 0.0, shy2.scale()).distance_lower, 0.0);
          }
        }
      }
    }
  }
  std::printf("%d contacts checked, %d deeper than 1e-5, %d cylinder depths more than 1e-6 "
              "above the shortest\n", contacts, epa, loose);
  EXPECT_GT(epa, 1000);
  EXPECT_LE(loose, contacts / 200);
}

// SurfaceDeepestContactConvex against the deepest of SurfaceContactsConvex's
// contacts (ties: the lowest triangle), field for field, for query `i` at
// `pose`. Returns whether any triangle is touched; counts in *several the
// queries touching more than one.
bool ExpectDeepestOfAll(const TriangleMesh& mesh, const PlacedConvex& placed, int i,
                        const Pose& pose, int* several) {
  std::vector<SurfaceContactHit> all;
  const bool any = SurfaceContactsConvex(mesh, placed, &all);
  SurfaceContactHit deepest;
  EXPECT_EQ(SurfaceDeepestContactConvex(mesh, placed, &deepest), any) << i;
  if (!any) return false;
  const SurfaceContactHit* want = &all[0];
  for (const SurfaceContactHit& x : all) {
    if (x.depth > want->depth || (x.depth == want->depth && x.triangle < want->triangle)) {
      want = &x;
    }
  }
  if (all.size() > 1) ++*several;
  EXPECT_EQ(deepest.triangle, want->triangle) << i << " " << ToString(pose);
  EXPECT_EQ(deepest.depth, want->depth) << i;
  EXPECT_EQ(deepest.normal, want->normal) << i;
  EXPECT_EQ(deepest.point_on_mesh, want->point_on_mesh) << i;
  EXPECT_EQ(deepest.point_on_query, want->point_on_query) << i;
  return true;
}

// The deepest contact found by bounds (SurfaceDeepestContactConvex: triangles
// whose overlap along their normal, along the axis from the core's inside
// (TriangleInnerOverlap), (box) their SAT depth or (cylinder) along its own
// axes (CylinderTriangleOverlap) is below the deepest so far are skipped) is the deepest of all the contacts (SurfaceContactsConvex;
// ties: lowest triangle), field for field: spheres, capsules, boxes, rounded
// boxes, cylinders and convex hulls (4 to 40 points, some sliver-thin) on a
// flat floor (coplanar ties), a wavy grid and a closed sphere, touching,
// grazing and deep.
TEST(MeshConvex, DeepestContactMatchesAllContacts) {
  Random rng(67);
  const TriangleMesh meshes[3] = {MustBuild(WavyGrid(8, 1.0, /*flat=*/true)),
                                  MustBuild(WavyGrid(8, 1.0)), MustBuild(IcoSphere(2.0, 2))};
  std::vector<Shape> hulls;
  while (hulls.size() < 24) {
    std::vector<Vec3> points(4 + hulls.size() * 36 / 24);
    const Vec3 squash{rng.Uniform(0.05, 1.0), rng.Uniform(0.05, 1.0), rng.Uniform(0.05, 1.0)};
    for (Vec3& p : points) p = Mul(rng.InBox(0.8), squash) + Vec3{0.3, -0.2, 0.1};
    Result<Shape> hull = Shape::Make(ConvexHull{points});
    if (hull.ok()) hulls.push_back(std::move(hull).value());
  }
  int compared = 0, several = 0, none = 0;
  for (int i = 0; i < 9000; ++i) {
    const TriangleMesh& mesh = meshes[i % 3];
    const Aabb b = mesh.bounds();
    const Vec3 c = b.Center() + Mul(rng.InBox(0.9), b.Extents() + Vec3{0, 0.3, 0});
    const Quat q = i % 5 == 0 ? Quat{} : Quat::FromAxisAngle(rng.UnitVector(), rng.Uniform(0, 6.3));
    const Vec3 he{rng.Uniform(0.05, 0.9), rng.Uniform(0.05, 0.9), rng.Uniform(0.05, 0.9)};
    const double r = rng.Uniform(0.05, 0.9), hh = rng.Uniform(0.05, 0.9);
    const ConvexCore cores[5] = {Core(ConvexCore::Kind::kPoint, {}, 0, 0, r),
                                 Core(ConvexCore::Kind::kSegment, {}, hh, 0, r),
                                 Core(ConvexCore::Kind::kBox, he, 0, 0, 0),
                                 Core(ConvexCore::Kind::kBox, he, 0, 0, 0.1 * r),
                                 Core(ConvexCore::Kind::kCylinder, {}, hh, r, 0)};
    const ConvexCore hull = internal::CoreOf(hulls[(i / 18) % hulls.size()]);
    const ConvexCore& core = (i / 3) % 6 == 5 ? hull : cores[(i / 3) % 6];
    Pose pose{c, q};
    if (i % 7 == 0) {
      // Resting on the flat floor's plane (y = 0) within rounding: grazing ties.
      const PlacedConvex probe(core, pose);
      pose.position.y -= probe.bounds().min.y - rng.Uniform(-1e-9, 1e-9);
    }
    const PlacedConvex placed(core, pose);
    if (!ExpectDeepestOfAll(mesh, placed, i, pose, &several)) {
      ++none;
      continue;
    }
    ++compared;
  }
  std::printf("%d deepest contacts compared (%d among several triangles), %d apart\n", compared,
              several, none);
  EXPECT_GT(several, 3000);
  EXPECT_GT(none, 300);
}

// SurfaceDeepestContactConvex's first bound for boxes (the overlaps along x,
// y and z of its bounds; the normal's only on triangles without a SAT answer):
// the same deepest contact as the deepest of SurfaceContactsConvex's, to the
// bit, for tilted, axis-aligned and turned boxes (sharp and rounded, 1 mm to
// 1 km) on tessellated floors, wavy grids and inside a closed box's corners,
// at the origin and 20 km out; a seventh rest on the flat floor within
// rounding (ties between the floor's triangles).
TEST(MeshConvex, BoxDeepestContactMatchesAllContactsAtAnyScale) {
  Random rng(73);
  struct Placed {
    TriangleMesh mesh;
    double scale;
  };
  std::vector<Placed> meshes;
  for (const double s : {1e-3, 1.0, 1e3}) {
    for (const Vec3& origin : {Vec3{}, Vec3{2e4, -1e4, 2e4}}) {
      for (MeshData m : {WavyGrid(8, 1.0, /*flat=*/true), WavyGrid(8, 1.0), BoxMesh(2.0)}) {
        for (Vec3& p : m.vertices) p = origin + p * s;
        meshes.push_back({MustBuild(m), s});
      }
    }
  }
  int compared = 0, several = 0;
  for (int i = 0; i < 9000; ++i) {
    const Placed& at = meshes[i % meshes.size()];
    const double s = at.scale;
    const Aabb b = at.mesh.bounds();
    const bool closed_box = i % 3 == 2;  // inside, near its walls and corners
    const Vec3 c = closed_box ? b.Center() + Mul(rng.InBox(1.0), b.Extents() * 0.8)
                              : b.Center() + Mul(rng.InBox(0.9), b.Extents() + Vec3{0, 0.3 * s, 0});
    const Quat q = i % 4 == 0   ? Quat{}
                   : i % 4 == 1 ? Quat::FromAxisAngle({0, 1, 0}, rng.Uniform(0, 6.3))
                                : Quat::FromAxisAngle(rng.UnitVector(), rng.Uniform(0, 6.3));
    const Vec3 he =
        Vec3{rng.Uniform(0.05, 0.9), rng.Uniform(0.05, 0.9), rng.Uniform(0.05, 0.9)} * s;
    const ConvexCore core =
        Core(ConvexCore::Kind::kBox, he, 0, 0, i % 2 == 0 ? 0.0 : rng.Uniform(0.0, 0.1) * s);
    Pose pose{c, q};
    if (i % 7 == 0 && i % 3 == 0) {
      // Resting on the flat floor's plane within rounding.
      const PlacedConvex probe(core, pose);
      pose.position.y -= probe.bounds().min.y - b.min.y - rng.Uniform(-1e-9, 1e-9) * s;
    }
    const PlacedConvex placed(core, pose);
    if (!ExpectDeepestOfAll(at.mesh, placed, i, pose, &several)) continue;
    ++compared;
  }
  std::printf("%d deepest box contacts compared (%d among several triangles)\n", compared,
              several);
  EXPECT_GT(several, 2000);
}

// TriangleInnerOverlap (SurfaceDeepestContactConvex's bound along the axis
// from the core's inner segment to the triangle): below the margin, the
// cores are apart (GJK) and every contact is at most max(overlap, 0) deep;
// a box's contact is at most the overlap whenever the triangle has a SAT
// answer, a cylinder's or a hull's on a triangle that is not a sliver
// (TriangleConvexEpa takes the axis). And it often proves triangles apart whose overlap along their
// normal does not: boxes, rounded boxes, cylinders and hulls over a wavy
// grid and a closed sphere.
TEST(MeshConvex, InnerOverlapBoundsContactDepth) {
  Random rng(71);
  const TriangleMesh meshes[2] = {MustBuild(WavyGrid(8, 1.0)), MustBuild(IcoSphere(2.0, 2))};
  std::vector<Shape> hulls;
  while (hulls.size() < 12) {
    std::vector<Vec3> points(4 + hulls.size() * 3);
    const Vec3 squash{rng.Uniform(0.05, 1.0), rng.Uniform(0.05, 1.0), rng.Uniform(0.05, 1.0)};
    for (Vec3& p : points) p = Mul(rng.InBox(0.8), squash) + Vec3{0.3, -0.2, 0.1};
    Result<Shape> hull = Shape::Make(ConvexHull{points});
    if (hull.ok()) hulls.push_back(std::move(hull).value());
  }
  int apart = 0, apart_by_normal = 0, bounded = 0, curved_bounded = 0;
  for (int i = 0; i < 3000; ++i) {
    const TriangleMesh& mesh = meshes[i % 2];
    const Aabb b = mesh.bounds();
    const Vec3 c = b.Center() + Mul(rng.InBox(0.9), b.Extents() + Vec3{0, 0.3, 0});
    const Quat q = Quat::FromAxisAngle(rng.UnitVector(), rng.Uniform(0, 6.3));
    const Vec3 he{rng.Uniform(0.05, 0.9), rng.Uniform(0.05, 0.9), rng.Uniform(0.05, 0.9)};
    const double r = rng.Uniform(0.05, 0.9), hh = rng.Uniform(0.05, 0.9);
    const ConvexCore cores[3] = {Core(ConvexCore::Kind::kBox, he, 0, 0, 0),
                                 Core(ConvexCore::Kind::kBox, he, 0, 0, 0.1 * r),
                                 Core(ConvexCore::Kind::kCylinder, {}, hh, r, 0)};
    const ConvexCore hull = internal::CoreOf(hulls[(i / 4) % hulls.size()]);
    const ConvexCore& core = i % 4 == 3 ? hull : cores[i % 4];
    const bool box = core.kind == ConvexCore::Kind::kBox;
    const PlacedConvex placed(core, Pose{c, q});
    Vec3 inner[2];
    placed.InnerSegment(inner);
    const double tol = 1e-9 * placed.scale();
    for (uint32_t t = 0; t < mesh.triangle_count(); ++t) {
      Vec3 v[3];
      mesh.TriangleVertices(t, v);
      if (!Aabb().Union(v[0]).Union(v[1]).Union(v[2]).Overlaps(placed.bounds())) continue;
      const double overlap = TriangleInnerOverlap(v, placed, inner);
      TriangleConvexPenetration sat;
      TrianglePolytopeCore polytope;
      if (box && placed.PolytopeCore(&polytope)) {
        sat = TrianglePolytopePenetration(v, polytope, placed.margin());
      }
      SurfaceContactHit m;
      const bool touching = TriangleTouchContact(v, t, placed, box ? &sat : nullptr, &m);
      if (overlap < placed.margin() - tol) {
        ++apart;
        EXPECT_FALSE(TriangleConvexGjk(v, placed, placed.margin(), placed.scale()).cores_overlap)
            << i << " " << t;
        if (touching) {
          EXPECT_LE(m.depth, std::max(overlap, 0.0) + 1e-12) << i << " " << t;
        }
        // The triangle's normal alone: both sides overlap.
        const Vec3 n = Cross(v[1] - v[0], v[2] - v[0]).Normalized();
        const double d = Dot(n, v[0]);
        const double along = std::min(Dot(n, placed(n)) + placed.margin() - d,
                                      d - Dot(n, placed(-n)) + placed.margin());
        if (along > placed.margin()) ++apart_by_normal;
      } else if (box && sat.valid && touching) {
        ++bounded;
        EXPECT_LE(m.depth, overlap + tol) << i << " " << t;
      } else if (!box && touching && EpaTakesInnerAxis(v)) {
        // A cylinder's or a hull's EPA counts the axis: at most the overlap.
        ++curved_bounded;
        EXPECT_LE(m.depth, std::max(overlap, placed.margin()) + tol) << i << " " << t;
      }
    }
  }
  std::printf("%d triangles apart by the inner axis (%d overlapping along their normal), %d box "
              "and %d cylinder or hull contacts bounded\n", apart, apart_by_normal, bounded,
              curved_bounded);
  EXPECT_GT(apart_by_normal, 5000);
  EXPECT_GT(bounded, 5000);
  EXPECT_GT(curved_bounded, 5000);
}

// SegmentTriangleDistanceLower (SurfaceDeepestContactConvex's bound for
// capsules): never above the segment-triangle distance, on segments across,
// beside, above and through triangles (0 on slivers), and most often well
// above 0 where the two are apart.
TEST(MeshConvex, SegmentTriangleDistanceLowerBoundsTheDistance) {
  Random rng(79);
  int apart = 0, bounded_away = 0;
  for (int i = 0; i < 20000; ++i) {
    Vec3 v[3] = {rng.InBox(1.0), rng.InBox(1.0), rng.InBox(1.0)};
    if (i % 5 == 4) v[2] = v[0] + (v[1] - v[0]) * rng.Uniform(0.2, 0.8) + rng.UnitVector() * 1e-6;
    const Vec3 p0 = rng.InBox(2.0);
    const Vec3 p1 = i % 7 == 0 ? p0 : p0 + rng.UnitVector() * rng.Uniform(0.0, 2.0);
    Vec3 on_seg, on_tri;
    const double d =
        std::sqrt(SegmentTriangleDistanceSq(p0, p1, v[0], v[1], v[2], &on_seg, &on_tri));
    const double lower = surface_detail::SegmentTriangleDistanceLower(p0, p1, v);
    EXPECT_LE(lower, d + 1e-12) << i;
    EXPECT_GE(lower, 0.0) << i;
    if (d > 1e-3) {
      ++apart;
      bounded_away += lower > 0.25 * d;
    }
  }
  EXPECT_GT(bounded_away, apart / 2);
}

// Convex sweeps (box, cylinder, capsule, sphere by GJK): apart at every
// sample before the reported fraction, within the gap at it; a point core
// with a radius matches the closed-form sphere sweep.
TEST(MeshConvex, SweepsTouchAtFractionAndNotBefore) {
  Random rng(88);
  const TriangleMesh mesh = MustBuild(WavyGrid(12, 0.9));
  const TriangleMesh ico = MustBuild(IcoSphere(2.0, 2));
  int hits = 0;
  for (const TriangleMesh* m : {&mesh, &ico}) {
    const Aabb b = m->bounds();
    for (int i = 0; i < 600; ++i) {
      const Vec3 c = b.Center() + Mul(rng.InBox(1.4), b.Extents() + Vec3::Splat(1.5));
      const Vec3 d = b.Center() + Mul(rng.InBox(1.0), b.Extents()) - c;
      const Quat q = Quat::FromAxisAngle(rng.UnitVector(), rng.Uniform(0, 6.3));
      const double r = rng.Uniform(0.1, 0.8), hh = rng.Uniform(0.0, 0.8);
      const Vec3 he{rng.Uniform(0.1, 0.8), rng.Uniform(0.1, 0.8), rng.Uniform(0.1, 0.8)};
      const ConvexCore cores[4] = {Core(ConvexCore::Kind::kPoint, {}, 0, 0, r),
                                   Core(ConvexCore::Kind::kSegment, {}, hh, 0, r),
                                   Core(ConvexCore::Kind::kBox, he, 0, 0, 0),
                                   Core(ConvexCore::Kind::kCylinder, {}, hh, r, 0)};
      for (const ConvexCore& core : cores) {
        const CastResult hit = testing::SweepAnyCore(*m, PlacedConvex(core, Pose{c, q}), d);
        const double f = hit.state == CastState::kMiss ? 1.0 : hit.fraction;
        // Apart at samples before f (a margin of 1e-7 of the path for rounding).
        for (int s = 0; s < 40; ++s) {
          const double t = f * s / 40.0 - 1e-7;
          if (t < 0.0) continue;
          EXPECT_FALSE(SurfaceOverlapConvex(*m, PlacedConvex(core, Pose{c + d * t, q}), true, nullptr))
              << "overlap at " << t << " before " << f << " kind " << static_cast<int>(core.kind);
        }
        if (hit.state == CastState::kMiss) continue;
        ++hits;
        ConvexCore grown = core;
        grown.margin += 1e-7;
        EXPECT_TRUE(SurfaceOverlapConvex(*m, PlacedConvex(grown, Pose{c + d * f, q}), true, nullptr));
        EXPECT_NEAR(hit.normal.Length(), 1.0, 1e-9);
        if (f > 0.0) {
          EXPECT_LE(Dot(hit.normal, d), 1e-9);
        }
        if (core.kind == ConvexCore::Kind::kPoint) {
          const CastResult exact = BruteSweepSphere(*m, c, r, d);
          EXPECT_NEAR(exact.fraction, f, 1e-7);
        }
      }
    }
  }
  EXPECT_GT(hits, 1500);
}

// Every convex kind swept through a mesh (SurfaceSweepConvex, with its culls
// and early outs) against brute force over every triangle (SweepTriangle with
// the full path): the same miss, fraction, started-inside state and triangle.
// Most shapes start near or inside the surface, so several triangles often
// touch at fraction 0 and the lowest input index must win.
TEST(MeshConvex, SweepsMatchBruteForceOverTriangles) {
  Random rng(4242);
  const TriangleMesh grid = MustBuild(WavyGrid(10, 0.9));
  const TriangleMesh ico = MustBuild(IcoSphere(2.0, 2));
  const ShapeKind kinds[5] = {ShapeKind::kSphere, ShapeKind::kCapsule, ShapeKind::kBox,
                              ShapeKind::kCylinder, ShapeKind::kConvexHull};
  int started = 0, several_at_zero = 0, hits = 0;
  for (int i = 0; i < 5000; ++i) {
    const TriangleMesh& m = i % 2 == 0 ? grid : ico;
    const Aabb b = m.bounds();
    const Shape shape = rng.MakeShape(kinds[i % 5], 0.05, 0.8);
    const ConvexCore core = internal::CoreOf(shape);
    // Near a random triangle's point, moving a short way or across the mesh.
    Vec3 tv[3];
    m.TriangleVertices(static_cast<uint32_t>(rng.Int(0, static_cast<int>(m.triangle_count()) - 1)),
                       tv);
    const Vec3 c = (tv[0] + tv[1] + tv[2]) / 3.0 + rng.InBox(i % 3 == 0 ? 2.0 : 0.6);
    const Vec3 d = i % 4 == 0 ? b.Center() + Mul(rng.InBox(1.0), b.Extents()) - c
                              : rng.UnitVector() * rng.Uniform(0.0, 1.5);
    const PlacedConvex q(core, Pose{c, rng.Rotation()});
    const CastResult got = testing::SweepAnyCore(m, q, d);
    const double scale = q.scale() + d.Length();
    const double tie = d.Length() > 0.0 ? 1e-9 / d.Length() : 0.0;
    double best = 2.0;
    bool inside = false;
    std::vector<std::pair<double, uint32_t>> found;
    for (uint32_t k = 0; k < m.triangle_count(); ++k) {
      Vec3 v[3];
      m.TriangleVertices(k, v);
      const CastResult s = testing::SweepTriangleAnyCore(v, q, d, 1.0, scale, m.ActiveEdges(k));
      if (!s.hit()) continue;
      found.push_back({s.fraction, m.OriginalIndex(k)});
      best = std::min(best, s.fraction);
      inside = inside || (s.state == CastState::kStartedOverlapping) || s.fraction == 0.0;
    }
    ASSERT_EQ(got.state != CastState::kMiss, !found.empty()) << "case " << i;
    if (found.empty()) continue;
    ++hits;
    EXPECT_NEAR(got.fraction, best, 2.0 * tie + 1e-12) << "case " << i;
    if (inside) {
      ++started;
      EXPECT_EQ(got.state, CastState::kStartedOverlapping) << "case " << i;
      uint32_t lowest = UINT32_MAX;
      int at_zero = 0;
      for (const auto& [t, orig] : found) {
        if (t <= tie) {
          lowest = std::min(lowest, orig);
          ++at_zero;
        }
      }
      several_at_zero += at_zero > 1;
      EXPECT_EQ(got.sub_shape, lowest) << "case " << i;
    } else {
      // A hit of the brute force within the ties of the best.
      bool listed = false;
      for (const auto& [t, orig] : found)
        listed = listed || (orig == got.sub_shape && t <= best + 2.0 * tie);
      EXPECT_TRUE(listed) << "case " << i << " triangle " << got.sub_shape;
    }
  }
  std::printf("hits %d, started inside %d (several triangles at 0: %d)\n", hits, started,
              several_at_zero);
  EXPECT_GT(hits, 2500);
  EXPECT_GT(several_at_zero, 500);
}

// Capsules, boxes and cylinders sliding on a flat tessellated floor report
// the face normal, including contacts on internal edges and vertices.
// A sweep that enters thousands of triangles grows the thread's scratch (the
// closest-first heap and the entered triangles' vertices); once it returns,
// the thread keeps no more than kMeshScratchKept entries of either (fails
// without ScratchRelease: ~720 KB kept here).
TEST(MeshConvex, SweepScratchIsReleasedAfterALargeSweep) {
  const TriangleMesh floor = MustBuild(WavyGrid(160, 1.0, /*flat=*/true));  // 51200 triangles
  const double r = 30.0;
  const ConvexCore ball = Core(ConvexCore::Kind::kPoint, {}, 0, 0, r);
  // Warm-up: whatever a first sweep on this thread allocates and keeps.
  testing::SweepAnyCore(floor, PlacedConvex(ball, Pose{{80, 2 * r, 80}, Quat()}), {1, 0, 0});
  // Bytes in use: from the heap and from mmap (large blocks).
  const auto in_use = [] {
    const struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
  };
  const size_t before = in_use();
  // The ball's bounds reach the floor's plane halfway, above ~7200
  // triangles at once, all entered at that fraction before the first of
  // them is swept.
  const CastResult hit = testing::SweepAnyCore(
      floor, PlacedConvex(ball, Pose{{-40, r + 0.001, 80}, Quat()}), {240, -0.002, 0});
  const size_t after = in_use();
  ASSERT_EQ(hit.state, CastState::kHit);
  EXPECT_NEAR(hit.fraction, 0.5, 1e-9);
  EXPECT_LT(after, before + 64 * 1024) << before << " -> " << after;
}

TEST(MeshConvex, SlidingOnFlatFloorReportsFaceNormal) {
  Random rng(99);
  const TriangleMesh floor = MustBuild(WavyGrid(10, 1.0, /*flat=*/true));
  int checked = 0;
  for (int i = 0; i < 1500; ++i) {
    const double r = rng.Uniform(0.2, 0.5), hh = rng.Uniform(0.2, 0.8);
    const ConvexCore cores[3] = {Core(ConvexCore::Kind::kSegment, {}, hh, 0, r),
                                 Core(ConvexCore::Kind::kBox, {r, hh, r}, 0, 0, 0),
                                 Core(ConvexCore::Kind::kCylinder, {}, hh, r, 0)};
    for (int k = 0; k < 3; ++k) {
      const double bottom = k == 0 ? hh + r : hh;
      Vec3 c{rng.Uniform(2, 8), bottom + rng.Uniform(1e-6, 1e-3), rng.Uniform(2, 8)};
      if (i % 2 == 0) { c.x = std::round(c.x); c.z = std::round(c.z); }
      // Boxes and cylinders upright but turned about Y so their corners land anywhere.
      const Quat q = Quat::FromAxisAngle({0, 1, 0}, rng.Uniform(0, 6.3));
      const Vec3 d{rng.Uniform(-1, 1), -rng.Uniform(2e-3, 0.05), rng.Uniform(-1, 1)};
      const CastResult hit = testing::SweepAnyCore(floor, PlacedConvex(cores[k], Pose{c, q}), d);
      ASSERT_EQ(hit.state, CastState::kHit) << k << " " << ToString(c) << ToString(d);
      EXPECT_TRUE(VecNear(hit.normal, {0, 1, 0}, 1e-9)) << k << " " << ToString(c) << " " << ToString(d);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4500);
}

// A ray descending by a denormal amount onto a nearly flat heightfield with
// denormal heights (in range: coordinates have no smallest value): the
// watertight test's determinant was denormal, 1 / det overflowed and the
// fraction came out infinite (found by the geometry fuzzer,
// fuzz/corpus/geometry/regress-heightfield-denormal-ray). The same surface as
// a mesh takes the same triangle test.
// Raycast() takes an unrotated mesh's local ray without making the rotation
// matrix: every field of its answer, to the bit (signs of zero included),
// equals the answer through the matrix, for rays along the axes too.
TEST(MeshRaycast, UnrotatedPoseAnswersAsItsMatrix) {
  Random rng(404);
  const MeshData data = WavyGrid(16, 0.6);
  TriangleMeshShape shape_data;
  shape_data.vertices = data.vertices;
  for (const auto& t : data.triangles) shape_data.triangles.push_back({t[0], t[1], t[2]});
  const Result<Shape> shape = Shape::Make(shape_data);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  const TriangleMesh mesh = MustBuild(data);
  const auto same = [](double a, double b) {
    return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
  };
  int hits = 0;
  for (int i = 0; i < 4000; ++i) {
    const Pose pose(i % 3 == 0 ? Vec3{} : Vec3{rng.Uniform(-2, 2), -0.0, rng.Uniform(-2, 2)});
    Vec3 o{rng.Uniform(-2, 10), rng.Uniform(-1, 3), rng.Uniform(-2, 10)};
    Vec3 d{rng.Uniform(-8, 8), rng.Uniform(-6, 2), rng.Uniform(-8, 8)};
    if (i % 4 == 1) o[i % 3] = -0.0;
    if (i % 5 == 2) d[(i / 5) % 3] = (i % 2 == 0) ? 0.0 : -0.0;
    const CastResult got = Raycast(o, d, *shape, pose);
    const Mat33 rb = pose.rotation.ToMatrix();
    MeshRayHit want;
    const bool hit = mesh.RaycastClosest(rb.TransposeMul(o - pose.position), rb.TransposeMul(d),
                                         &want);
    ASSERT_EQ(got.hit(), hit) << ToString(o) << " " << ToString(d);
    if (!hit) continue;
    ++hits;
    const Vec3 normal = rb * want.normal;
    const Vec3 point = o + d * want.fraction;
    EXPECT_TRUE(same(got.fraction, want.fraction)) << got.fraction << " " << want.fraction;
    EXPECT_EQ(got.sub_shape, want.triangle);
    for (int a = 0; a < 3; ++a) {
      EXPECT_TRUE(same(got.normal[a], normal[a])) << a << ": " << ToString(got.normal);
      EXPECT_TRUE(same(got.point[a], point[a])) << a << ": " << ToString(got.point);
    }
  }
  EXPECT_GT(hits, 500);
}

TEST(MeshRaycast, DenormalDeterminantGivesFiniteFraction) {
  const double p = 2.85e-321, q = -5.253807105667518e-287;
  HeightfieldShape h{6, 7, 0.75, 0.5, std::vector<double>(42, 0.0)};
  for (int i : {0, 10, 17, 19, 23, 25, 28}) h.heights[i] = p;
  for (int i : {18, 20, 26, 27}) h.heights[i] = q;
  TriangleMeshShape m;
  for (uint32_t r = 0; r < h.rows; ++r) {
    for (uint32_t c = 0; c < h.cols; ++c) {
      m.vertices.push_back({c * h.cell_size_x, h.heights[r * h.cols + c], r * h.cell_size_z});
    }
  }
  for (uint32_t r = 0; r + 1 < h.rows; ++r) {
    for (uint32_t c = 0; c + 1 < h.cols; ++c) {
      const uint32_t a = r * h.cols + c, b = a + h.cols;
      m.triangles.push_back({a, b, b + 1});
      m.triangles.push_back({a, b + 1, a + 1});
    }
  }
  const Vec3 origin{0.5, 3.1277183485880018e-309, 0};
  const Vec3 dir{2.69140625, -6.2554366971760037e-309, 4.3359375};
  for (const Result<Shape>& s : {Shape::Make(h), Shape::Make(m)}) {
    ASSERT_TRUE(s.ok()) << s.error().message;
    const CastResult r = Raycast(origin, dir, *s, Pose());
    ASSERT_TRUE(r.hit()) << s->ToString();
    EXPECT_TRUE(std::isfinite(r.fraction) && r.fraction >= 0.0 && r.fraction <= 1.0)
        << s->ToString() << ": fraction " << r.fraction;
    EXPECT_TRUE(r.point.IsFinite()) << ToString(r.point);
  }
}

}  // namespace
}  // namespace hitbox
