// Ray and sweep cost against one triangle mesh (and the same surface as a
// heightfield) of 1k, 10k, 100k and 1M triangles: a wavy grid of 1 m cells,
// queries of a fixed length at random places over it, so the cost should grow
// with log(triangles) (hierarchy depth), not with triangles.
//
//   build/bin/hitbox-mesh-bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

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
  if (!slot) slot = std::make_unique<TriangleMesh>(*Field(triangles).ToMesh());
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

#define HITBOX_MESH_SIZES ->Arg(1000)->Arg(10000)->Arg(100000)->Arg(1000000)
BENCHMARK(BM_MeshRaycast) HITBOX_MESH_SIZES;
BENCHMARK(BM_MeshSphereSweep) HITBOX_MESH_SIZES;
BENCHMARK(BM_MeshCapsuleSweep) HITBOX_MESH_SIZES;
BENCHMARK(BM_HeightfieldRaycast) HITBOX_MESH_SIZES;
BENCHMARK(BM_HeightfieldSphereSweep) HITBOX_MESH_SIZES;
BENCHMARK(BM_MeshBuild) HITBOX_MESH_SIZES->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace hitbox

BENCHMARK_MAIN();
