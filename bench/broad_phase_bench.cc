// Broad phase and world query micro-benchmarks on a seeded random scene like
// shared/cases/big.json (50,000 colliders of size 0.2..2 m in a 300 m cube):
// raw tree traversals (no narrow phase), ColliderSet queries, bulk build and
// tree updates. hitbox-bench measures the same on the real case files.
#include <benchmark/benchmark.h>

#include <chrono>
#include <random>
#include <vector>

#include "broad_phase/dynamic_tree.h"
#include "hitbox/world/collider_set.h"

namespace hitbox {
namespace {

constexpr int kColliders = 50000;
constexpr double kHalfWorld = 150.0;

struct Scene {
  std::vector<Collider> colliders;
  std::vector<Query> overlaps, sweeps, rays;
  ColliderSet set;
  DynamicTree tree;
  std::vector<uint32_t> leaves;
};

Shape RandomShape(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> size(0.2, 2.0);
  switch (rng() % 4) {
    case 0: return *Shape::MakeSphere(size(rng));
    case 1: return *Shape::MakeBox({size(rng), size(rng), size(rng)});
    case 2: return *Shape::MakeCapsule(size(rng) * 0.5, size(rng));
    default: return *Shape::MakeCylinder(size(rng), size(rng));
  }
}

Quat RandomRotation(std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  return Quat{n(rng), n(rng), n(rng), n(rng)}.Normalized();
}

const Scene& GetScene() {
  static Scene* scene = [] {
    auto* s = new Scene;
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> pos(-kHalfWorld, kHalfWorld), dir(-20.0, 20.0);
    for (int i = 0; i < kColliders; ++i) {
      Collider c;
      c.id = static_cast<uint64_t>(i) + 1;
      c.shape = RandomShape(rng);
      c.pose = Pose({pos(rng), pos(rng), pos(rng)}, RandomRotation(rng));
      c.layer = static_cast<uint32_t>(rng() % 4);
      s->colliders.push_back(c);
    }
    (void)s->set.AddBulk(s->colliders);
    std::vector<DynamicTree::BuildItem> items;
    for (size_t i = 0; i < s->colliders.size(); ++i) {
      const Collider& c = s->colliders[i];
      items.push_back({c.shape.WorldBounds(c.pose), static_cast<uint32_t>(i), c.layer});
    }
    s->leaves.resize(items.size());
    s->tree.Build(items, &s->leaves);
    for (int i = 0; i < 4096; ++i) {
      const Pose p({pos(rng), pos(rng), pos(rng)}, RandomRotation(rng));
      const Vec3 d{dir(rng), dir(rng), dir(rng)};
      s->overlaps.push_back(OverlapQuery{RandomShape(rng), p, {}, false});
      s->sweeps.push_back(CastQuery{RandomShape(rng), p, d, {}, false});
      s->rays.push_back(RayQuery{p.position, d, {}, false});
    }
    return s;
  }();
  return *scene;
}

// Tree only: world box of the query shape against the nodes.
void BM_TreeOverlapTraversal(benchmark::State& state) {
  const Scene& s = GetScene();
  std::vector<FloatAabb> boxes;
  for (const Query& q : s.overlaps) {
    const auto& o = std::get<OverlapQuery>(q);
    boxes.push_back(FloatAabb::Outward(o.shape.WorldBounds(o.pose)));
  }
  size_t i = 0, found = 0;
  for (auto _ : state) {
    QueryTree(s.tree, boxes[i++ % boxes.size()], ~0u, [&](uint32_t, uint32_t) { ++found; });
  }
  benchmark::DoNotOptimize(found);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TreeOverlapTraversal);

// Tree only: every leaf box a ray reaches (no pruning: the worst case).
void BM_TreeRayTraversal(benchmark::State& state) {
  const Scene& s = GetScene();
  size_t i = 0, found = 0;
  for (auto _ : state) {
    const auto& r = std::get<RayQuery>(s.rays[i++ % s.rays.size()]);
    CastTree(s.tree, SegmentSetup(r.origin, r.translation, {}), ~0u, 1.0,
             [&](uint32_t, uint32_t, double t) {
               ++found;
               return t;
             });
  }
  benchmark::DoNotOptimize(found);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TreeRayTraversal);

void RunQueries(benchmark::State& state, const std::vector<Query>& qs) {
  const Scene& s = GetScene();
  QueryResult r;
  size_t i = 0;
  for (auto _ : state) {
    s.set.Run(qs[i++ % qs.size()], &r);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_SetOverlap(benchmark::State& state) { RunQueries(state, GetScene().overlaps); }
void BM_SetSweep(benchmark::State& state) { RunQueries(state, GetScene().sweeps); }
void BM_SetRaycast(benchmark::State& state) { RunQueries(state, GetScene().rays); }
BENCHMARK(BM_SetOverlap);
BENCHMARK(BM_SetSweep);
BENCHMARK(BM_SetRaycast);

// Batched on one thread: RunBatch interleaves the traversals of same-kind
// queries (compare with the one-query-at-a-time figures above).
void RunBatchOneThread(benchmark::State& state, const std::vector<Query>& qs) {
  const Scene& s = GetScene();
  std::vector<QueryResult> results(qs.size());
  for (auto _ : state) s.set.RunBatch(qs, results, nullptr);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(qs.size()));
}
void BM_SetOverlapBatch(benchmark::State& state) { RunBatchOneThread(state, GetScene().overlaps); }
void BM_SetSweepBatch(benchmark::State& state) { RunBatchOneThread(state, GetScene().sweeps); }
void BM_SetRaycastBatch(benchmark::State& state) { RunBatchOneThread(state, GetScene().rays); }
BENCHMARK(BM_SetOverlapBatch);
BENCHMARK(BM_SetSweepBatch);
BENCHMARK(BM_SetRaycastBatch);

// Batched on a pool of all cores.
void BM_SetRaycastBatchPool(benchmark::State& state) {
  const Scene& s = GetScene();
  static ThreadPool pool(0);
  std::vector<QueryResult> results(s.rays.size());
  for (auto _ : state) s.set.RunBatch(s.rays, results, &pool);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(s.rays.size()));
}
BENCHMARK(BM_SetRaycastBatchPool)->UseRealTime();

// How soon a long batch stops after its deadline: 400 overlaps of a 1 km
// sphere (every collider a candidate) with a deadline 1 ms after the start,
// on one thread (arg 0) or a pool of all cores (arg 1). The counter
// late_us is the mean time from the deadline to RunBatch's return.
void BM_SetOverlapBatchPastDeadline(benchmark::State& state) {
  const Scene& s = GetScene();
  static ThreadPool pool(0);
  ThreadPool* p = state.range(0) != 0 ? &pool : nullptr;
  OverlapQuery big;
  big.shape = *Shape::MakeSphere(1000.0);
  const std::vector<Query> qs(400, big);
  std::vector<QueryResult> results(qs.size());
  double late_us = 0.0;
  for (auto _ : state) {
    QueryBudget budget;
    budget.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
    benchmark::DoNotOptimize(s.set.RunBatch(qs, results, p, budget).code());
    late_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() -
                                                         budget.deadline)
                   .count();
  }
  state.counters["late_us"] = benchmark::Counter(late_us, benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_SetOverlapBatchPastDeadline)->Arg(0)->Arg(1)->UseRealTime();

// Bulk top-down build of 50,000 colliders.
void BM_AddBulk(benchmark::State& state) {
  const Scene& s = GetScene();
  for (auto _ : state) {
    ColliderSet set;
    benchmark::DoNotOptimize(set.AddBulk(s.colliders).ok());
  }
  state.SetItemsProcessed(state.iterations() * kColliders);
}
BENCHMARK(BM_AddBulk)->Unit(benchmark::kMillisecond);

// Moves of 1,000 colliders per batch by up to `range` metres per axis.
void BM_Move(benchmark::State& state) {
  const Scene& s = GetScene();
  const double range = static_cast<double>(state.range(0)) / 100.0;
  ColliderSet set;
  (void)set.AddBulk(s.colliders);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> off(-range, range);
  std::vector<Pose> poses;
  for (const Collider& c : s.colliders) poses.push_back(c.pose);
  std::vector<ColliderChange> batch(1000);
  size_t next = 0;
  for (auto _ : state) {
    for (ColliderChange& ch : batch) {
      const size_t k = next++ % poses.size();
      poses[k].position += Vec3{off(rng), off(rng), off(rng)};
      ch = ColliderChange::Move(s.colliders[k].id, poses[k]);
    }
    benchmark::DoNotOptimize(set.Apply(batch).ok());
  }
  state.SetItemsProcessed(state.iterations() * 1000);
}
BENCHMARK(BM_Move)->Arg(5)->Arg(2000);  // 0.05 m and 20 m

}  // namespace
}  // namespace hitbox

BENCHMARK_MAIN();
