// Narrow-phase micro-benchmarks: BM_Overlap_<A>_<B>, BM_Contact_<A>_<B> and
// BM_Distance_<A>_<B> for every ordered pair of shape kinds. Each runs over
// 1024 pre-generated random pairs (sizes 0.1..2 m, random rotations, centres
// up to 1.3x the sum of bounding radii apart: roughly half overlap), so it
// measures the real mix of early-outs, closed forms, GJK and EPA.
// Counter `overlap_share` is the fraction of the pairs that overlap.
#include <benchmark/benchmark.h>

#include <cctype>
#include <random>
#include <string>
#include <vector>

#include "hitbox/collision/collide.h"

namespace hitbox {
namespace {

struct PairCase {
  Shape a;
  Pose pa;
  Shape b;
  Pose pb;
};

Shape RandomShape(ShapeKind kind, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> size(0.1, 2.0);
  switch (kind) {
    case ShapeKind::kSphere: return *Shape::MakeSphere(size(rng));
    case ShapeKind::kBox: return *Shape::MakeBox({size(rng), size(rng), size(rng)});
    case ShapeKind::kCapsule: return *Shape::MakeCapsule(size(rng), size(rng));
    case ShapeKind::kCylinder: return *Shape::MakeCylinder(size(rng), size(rng));
    default: break;  // only the four primitives here
  }
  return {};
}

Quat RandomRotation(std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  return Quat{n(rng), n(rng), n(rng), n(rng)}.Normalized();
}

Vec3 RandomUnit(std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  return Vec3{n(rng), n(rng), n(rng)}.Normalized();
}

std::vector<PairCase> MakeCases(ShapeKind ka, ShapeKind kb) {
  std::mt19937_64 rng(42 + 16 * static_cast<int>(ka) + static_cast<int>(kb));
  std::uniform_real_distribution<double> u(0.0, 1.3);
  std::vector<PairCase> cases;
  cases.reserve(1024);
  for (int i = 0; i < 1024; ++i) {
    PairCase c{RandomShape(ka, rng), {}, RandomShape(kb, rng), {}};
    const double reach = c.a.BoundingRadius() + c.b.BoundingRadius();
    c.pa = Pose{RandomUnit(rng), RandomRotation(rng)};
    c.pb = Pose{c.pa.position + RandomUnit(rng) * (reach * u(rng)), RandomRotation(rng)};
    cases.push_back(c);
  }
  return cases;
}

double OverlapShare(const std::vector<PairCase>& cases) {
  int n = 0;
  for (const PairCase& c : cases) n += Overlap(c.a, c.pa, c.b, c.pb) ? 1 : 0;
  return static_cast<double>(n) / static_cast<double>(cases.size());
}

void BM_Overlap(benchmark::State& state, ShapeKind ka, ShapeKind kb) {
  const std::vector<PairCase> cases = MakeCases(ka, kb);
  size_t i = 0;
  for (auto _ : state) {
    const PairCase& c = cases[i++ & 1023];
    benchmark::DoNotOptimize(Overlap(c.a, c.pa, c.b, c.pb));
  }
  state.counters["overlap_share"] = OverlapShare(cases);
}

void BM_Contact(benchmark::State& state, ShapeKind ka, ShapeKind kb) {
  const std::vector<PairCase> cases = MakeCases(ka, kb);
  size_t i = 0;
  for (auto _ : state) {
    const PairCase& c = cases[i++ & 1023];
    Contact contact;
    benchmark::DoNotOptimize(ComputeContact(c.a, c.pa, c.b, c.pb, &contact));
    benchmark::DoNotOptimize(contact);
  }
  state.counters["overlap_share"] = OverlapShare(cases);
}

void BM_Distance(benchmark::State& state, ShapeKind ka, ShapeKind kb) {
  const std::vector<PairCase> cases = MakeCases(ka, kb);
  size_t i = 0;
  for (auto _ : state) {
    const PairCase& c = cases[i++ & 1023];
    benchmark::DoNotOptimize(ComputeDistance(c.a, c.pa, c.b, c.pb));
  }
  state.counters["overlap_share"] = OverlapShare(cases);
}

std::string Title(ShapeKind kind) {
  std::string s = ShapeKindName(kind);
  s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

/// Registers the three benchmarks for all 16 ordered pairs.
int RegisterAll() {
  for (int i = 0; i < kConvexKindCount; ++i) {
    for (int j = 0; j < kConvexKindCount; ++j) {
      const auto ka = static_cast<ShapeKind>(i);
      const auto kb = static_cast<ShapeKind>(j);
      const std::string pair = Title(ka) + "_" + Title(kb);
      benchmark::RegisterBenchmark(("BM_Overlap_" + pair).c_str(), BM_Overlap, ka, kb);
      benchmark::RegisterBenchmark(("BM_Contact_" + pair).c_str(), BM_Contact, ka, kb);
      benchmark::RegisterBenchmark(("BM_Distance_" + pair).c_str(), BM_Distance, ka, kb);
    }
  }
  return 0;
}

const int kRegistered = RegisterAll();

}  // namespace
}  // namespace hitbox

BENCHMARK_MAIN();
