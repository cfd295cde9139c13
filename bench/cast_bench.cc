// Micro-benchmarks of Cast() for every ordered shape pair (BM_Cast_<A>_<B>) and
// Raycast() for every shape (BM_Raycast_<A>), on pre-generated seeded random
// inputs aimed near the target (a mix of hits, misses and a few starts inside).
//
//   build/bin/hitbox-cast-bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "hitbox/collision/collide.h"

namespace hitbox {
namespace {

constexpr int kInputs = 1024;

struct CastInput {
  Shape a, b;
  Pose pa, pb;
  Vec3 v;
};

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  double U(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  Vec3 InBox(double h) { return {U(-h, h), U(-h, h), U(-h, h)}; }
  Quat Rot() {
    std::normal_distribution<double> n(0.0, 1.0);
    return Quat{n(rng_), n(rng_), n(rng_), n(rng_)}.Normalized();
  }
  Shape MakeShape(ShapeKind k) {
    switch (k) {
      case ShapeKind::kSphere: return *Shape::MakeSphere(U(0.2, 2.0));
      case ShapeKind::kBox: return *Shape::MakeBox({U(0.2, 2.0), U(0.2, 2.0), U(0.2, 2.0)});
      case ShapeKind::kCapsule: return *Shape::MakeCapsule(U(0.2, 2.0), U(0.0, 2.0));
      case ShapeKind::kCylinder: return *Shape::MakeCylinder(U(0.2, 2.0), U(0.2, 2.0));
      default: break;  // only the four primitives here
    }
    return {};
  }

 private:
  std::mt19937_64 rng_;
};

std::vector<CastInput> MakeInputs(ShapeKind ka, ShapeKind kb) {
  Gen g(1234 + 10 * static_cast<int>(ka) + static_cast<int>(kb));
  std::vector<CastInput> in(kInputs);
  for (CastInput& c : in) {
    c.a = g.MakeShape(ka);
    c.b = g.MakeShape(kb);
    c.pb = Pose(g.InBox(1.0), g.Rot());
    c.pa = Pose(c.pb.position + g.InBox(8.0), g.Rot());
    c.v = (c.pb.position + g.InBox(3.0) - c.pa.position) * g.U(0.3, 1.5);
    // Casts that start overlapping cost a ComputeContact (EPA), measured by
    // the narrow-phase benches: keep only casts that start apart.
    if (Overlap(c.a, c.pa, c.b, c.pb)) c.pa.position = c.pb.position + Vec3{9, 9, 9};
  }
  return in;
}

void BM_Cast(benchmark::State& state, ShapeKind ka, ShapeKind kb) {
  const std::vector<CastInput> in = MakeInputs(ka, kb);
  int hits = 0;
  for (const CastInput& c : in) hits += Cast(c.a, c.pa, c.v, c.b, c.pb).hit() ? 1 : 0;
  size_t i = 0;
  for (auto _ : state) {
    const CastInput& c = in[i++ & (kInputs - 1)];
    benchmark::DoNotOptimize(Cast(c.a, c.pa, c.v, c.b, c.pb));
  }
  state.counters["hit_ratio"] = static_cast<double>(hits) / kInputs;
}

void BM_Raycast(benchmark::State& state, ShapeKind kb) {
  Gen g(99 + static_cast<int>(kb));
  struct RayInput {
    Vec3 o, d;
    Shape b;
    Pose pb;
  };
  std::vector<RayInput> in(kInputs);
  int hits = 0;
  for (RayInput& r : in) {
    r.b = g.MakeShape(kb);
    r.pb = Pose(g.InBox(1.0), g.Rot());
    r.o = r.pb.position + g.InBox(8.0);
    r.d = (r.pb.position + g.InBox(3.0) - r.o) * g.U(0.3, 1.5);
    if (Raycast(r.o, {}, r.b, r.pb).hit()) r.o = r.pb.position + Vec3{9, 9, 9};
    hits += Raycast(r.o, r.d, r.b, r.pb).hit() ? 1 : 0;
  }
  size_t i = 0;
  for (auto _ : state) {
    const RayInput& r = in[i++ & (kInputs - 1)];
    benchmark::DoNotOptimize(Raycast(r.o, r.d, r.b, r.pb));
  }
  state.counters["hit_ratio"] = static_cast<double>(hits) / kInputs;
}

#define HITBOX_CAST_BENCH(A, B)                                                   \
  void BM_Cast_##A##_##B(benchmark::State& s) {                                 \
    BM_Cast(s, ShapeKind::k##A, ShapeKind::k##B);                                 \
  }                                                                               \
  BENCHMARK(BM_Cast_##A##_##B)
#define HITBOX_CAST_ROW(A)          \
  HITBOX_CAST_BENCH(A, Sphere);     \
  HITBOX_CAST_BENCH(A, Box);        \
  HITBOX_CAST_BENCH(A, Capsule);    \
  HITBOX_CAST_BENCH(A, Cylinder)

HITBOX_CAST_ROW(Sphere);
HITBOX_CAST_ROW(Box);
HITBOX_CAST_ROW(Capsule);
HITBOX_CAST_ROW(Cylinder);

#define HITBOX_RAY_BENCH(A)                                                               \
  void BM_Raycast_##A(benchmark::State& s) { BM_Raycast(s, ShapeKind::k##A); }          \
  BENCHMARK(BM_Raycast_##A)
HITBOX_RAY_BENCH(Sphere);
HITBOX_RAY_BENCH(Box);
HITBOX_RAY_BENCH(Capsule);
HITBOX_RAY_BENCH(Cylinder);

}  // namespace
}  // namespace hitbox

BENCHMARK_MAIN();
