// Ray and sweep cost against one triangle mesh (and the same surface as a
// heightfield) of 1k, 10k, 100k and 1M triangles: a wavy grid of 1 m cells,
// queries of a fixed length at random places over it, so the cost should grow
// with log(triangles) (hierarchy depth), not with triangles.
//
//   build/bin/hitbox-mesh-bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "geometry/heightfield.h"
#include "collision/triangles/surface_deepest_contact.h"
#include "collision/triangles/surface_sweep.h"
#include "geometry/triangle_mesh.h"
#include "geometry/gjk.h"
#include "shape/surface_data.h"
#include "hitbox/shape/shapes.h"
#include "hitbox/world/collider_set.h"

namespace hitbox {
namespace {

constexpr int kInputs = 4096;

double Wavy(double x, double z) {
  return 0.8 * std::sin(0.37 * x) * std::cos(0.23 * z) + 0.3 * std::sin(1.1 * x + 0.7 * z);
}

/// Cells per side for about `triangles` triangles (2 per cell).
int Side(int64_t triangles) {
  return static_cast<int>(std::lround(std::sqrt(static_cast<double>(triangles) / 2.0)));
}

std::vector<double> Heights(int side) {
  std::vector<double> h;
  for (int r = 0; r <= side; ++r) {
    for (int c = 0; c <= side; ++c) h.push_back(std::nearbyint(Wavy(c, r) * 1e6) / 1e6);
  }
  return h;
}

const Heightfield& Field(int64_t triangles) {
  static std::map<int64_t, std::unique_ptr<Heightfield>> cache;
  auto& slot = cache[triangles];
  if (!slot) {
    const int side = Side(triangles);
    const uint32_t n = static_cast<uint32_t>(side + 1);
    slot = std::make_unique<Heightfield>(*Heightfield::Build(n, n, 1.0, 1.0, Heights(side)));
  }
  return *slot;
}

const TriangleMesh& Mesh(int64_t triangles) {
  static std::map<int64_t, std::unique_ptr<TriangleMesh>> cache;
  auto& slot = cache[triangles];
  if (!slot) slot = std::make_unique<TriangleMesh>(std::move(Field(triangles).ToMesh()).value());
  return *slot;
}

struct Query {
  Vec3 origin, translation;
};

/// Rays (or sweep paths) from 4 m above a random point, 8 m long, downwards at a slant.
std::vector<Query> Queries(int64_t triangles, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double extent = Side(triangles);
  std::uniform_real_distribution<double> pos(1.0, extent - 1.0), off(-3.0, 3.0);
  std::vector<Query> q(kInputs);
  for (Query& x : q) {
    x.origin = {pos(rng), 4.0, pos(rng)};
    x.translation = {off(rng), -8.0, off(rng)};
  }
  return q;
}

void SetLabels(benchmark::State& state, const TriangleMesh& mesh) {
  state.counters["triangles"] = mesh.triangle_count();
  state.counters["bytes_per_tri"] =
      static_cast<double>(mesh.MemoryBytes()) / mesh.triangle_count();
  state.SetItemsProcessed(state.iterations());
}

/// A sphere of `radius` as a convex core (a point grown by the radius).
internal::ConvexCore BallCore(double radius) {
  internal::ConvexCore core;
  core.margin = radius;
  return core;
}

void BM_MeshRaycast(benchmark::State& state) {
  const TriangleMesh& mesh = Mesh(state.range(0));
  const std::vector<Query> q = Queries(state.range(0), 1);
  size_t i = 0;
  int hits = 0;
  for (auto _ : state) {
    MeshRayHit hit;
    const Query& x = q[i++ % q.size()];
    hits += mesh.RaycastClosest(x.origin, x.translation, &hit);
    benchmark::DoNotOptimize(hit);
  }
  benchmark::DoNotOptimize(hits);
  SetLabels(state, mesh);
}

void BM_MeshSphereSweep(benchmark::State& state) {
  const TriangleMesh& mesh = Mesh(state.range(0));
  const std::vector<Query> q = Queries(state.range(0), 2);
  size_t i = 0;
  for (auto _ : state) {
    const Query& x = q[i++ % q.size()];
    benchmark::DoNotOptimize(SurfaceSweepConvex<TriangleRoutine::kBall>(
        mesh, PlacedConvex(BallCore(0.5), Pose{x.origin}), x.translation));
  }
  SetLabels(state, mesh);
}

void BM_MeshCapsuleSweep(benchmark::State& state) {
  const TriangleMesh& mesh = Mesh(state.range(0));
  const std::vector<Query> q = Queries(state.range(0), 3);
  internal::ConvexCore core;
  core.kind = internal::ConvexCore::Kind::kSegment;
  core.half_height = 0.6;
  core.margin = 0.4;
  size_t i = 0;
  for (auto _ : state) {
    const Query& x = q[i++ % q.size()];
    benchmark::DoNotOptimize(SurfaceSweepConvex<TriangleRoutine::kCapsule>(
        mesh, PlacedConvex(core, Pose{x.origin}), x.translation));
  }
  SetLabels(state, mesh);
}

void BM_HeightfieldRaycast(benchmark::State& state) {
  const Heightfield& field = Field(state.range(0));
  const std::vector<Query> q = Queries(state.range(0), 1);
  size_t i = 0;
  for (auto _ : state) {
    MeshRayHit hit;
    const Query& x = q[i++ % q.size()];
    benchmark::DoNotOptimize(field.RaycastClosest(x.origin, x.translation, &hit));
  }
  state.counters["triangles"] = field.triangle_count();
  state.counters["bytes_per_sample"] =
      static_cast<double>(field.MemoryBytes()) / (field.rows() * field.cols());
  state.SetItemsProcessed(state.iterations());
}

void BM_HeightfieldSphereSweep(benchmark::State& state) {
  const Heightfield& field = Field(state.range(0));
  const std::vector<Query> q = Queries(state.range(0), 2);
  size_t i = 0;
  for (auto _ : state) {
    const Query& x = q[i++ % q.size()];
    benchmark::DoNotOptimize(SurfaceSweepConvex<TriangleRoutine::kBall>(
        field, PlacedConvex(BallCore(0.5), Pose{x.origin}), x.translation));
  }
  state.counters["triangles"] = field.triangle_count();
  state.SetItemsProcessed(state.iterations());
}

void BM_MeshBuild(benchmark::State& state) {
  const Heightfield& field = Field(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(field.ToMesh());
  state.counters["triangles"] = field.triangle_count();
}

/// A world of many small meshes (issue 29: per-collider overhead <= 256 B):
/// state.range(0) distinct box-like meshes of 12 triangles (8 float32
/// vertices each, off any short decimal grid), bulk loaded into a set.
/// bytes_per_collider: the set's MemoryBytes() per collider; mesh_payload:
/// its meshes' blocks per collider (vertices, triangles, hierarchy and, at
/// the end, the mesh object: mesh_fixed bytes of it); overhead: the difference
/// (collider record, tree, shape data record); heap: the allocator's bytes
/// in use per collider (mallinfo2), headers included.
void BM_SmallMeshColliders(benchmark::State& state) {
  const int count = static_cast<int>(state.range(0));
  size_t set_bytes = 0, payload = 0, heap = 0;
  for (auto _ : state) {
    const size_t heap_before = mallinfo2().uordblks;
    std::vector<Collider> colliders(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
      TriangleMeshShape m;
      const float s = 0.5f + 0.001f * static_cast<float>(i % 997) + 1e-7f;
      for (int v = 0; v < 8; ++v) {
        m.vertices.push_back({(v & 1) ? s : -s, (v & 2) ? s * 1.3f : -s * 0.7f, (v & 4) ? s : -s});
      }
      m.triangles = {{0, 2, 1}, {1, 2, 3}, {4, 5, 6}, {5, 7, 6}, {0, 1, 4}, {1, 5, 4},
                     {2, 6, 3}, {3, 6, 7}, {0, 4, 2}, {2, 4, 6}, {1, 3, 5}, {3, 7, 5}};
      colliders[i].id = static_cast<uint64_t>(i) + 1;
      colliders[i].shape = *Shape::Make(m);
      colliders[i].pose = Pose({4.0 * (i % 100), 0.0, 4.0 * (i / 100)});
    }
    ColliderSet set;
    if (!set.AddBulk(colliders).ok()) state.SkipWithError("AddBulk failed");
    colliders.clear();
    colliders.shrink_to_fit();
    heap = mallinfo2().uordblks - heap_before;
    set_bytes = set.MemoryBytes();
    payload = 0;
    set.ForEach([&](const Collider& c) { payload += c.shape.surface()->mesh()->MemoryBytes(); });
  }
  const double n = static_cast<double>(count);
  state.counters["bytes_per_collider"] = static_cast<double>(set_bytes) / n;
  state.counters["mesh_payload"] = static_cast<double>(payload) / n;
  state.counters["overhead"] = static_cast<double>(set_bytes - payload) / n;
  state.counters["heap_per_collider"] = static_cast<double>(heap) / n;
  state.counters["mesh_fixed"] = static_cast<double>(TriangleMesh::FixedBytes());
}

#define HITBOX_MESH_SIZES ->Arg(1000)->Arg(10000)->Arg(100000)->Arg(1000000)
BENCHMARK(BM_MeshRaycast) HITBOX_MESH_SIZES;
BENCHMARK(BM_MeshSphereSweep) HITBOX_MESH_SIZES;
BENCHMARK(BM_MeshCapsuleSweep) HITBOX_MESH_SIZES;
BENCHMARK(BM_HeightfieldRaycast) HITBOX_MESH_SIZES;
BENCHMARK(BM_HeightfieldSphereSweep) HITBOX_MESH_SIZES;
BENCHMARK(BM_MeshBuild) HITBOX_MESH_SIZES->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_SmallMeshColliders)->Arg(10000)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace hitbox

BENCHMARK_MAIN();
