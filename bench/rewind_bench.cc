// Lag compensation (issue 15): a rewound raycast against a shooter's world
// (50,000 static colliders + 64 moving player capsules, 64 ticks of history)
// versus the same raycast at the present time; the cost of recording one
// tick of 64 moves; history memory per tick.
//
//   ./build/bin/hitbox-rewind-bench   (or bench/hitbox-rewind-bench in ./build)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "hitbox/world/collider_set.h"

namespace hitbox {
namespace {

constexpr int kStatics = 50'000;
constexpr int kPlayers = 64;
constexpr uint32_t kHistory = 64;
constexpr uint64_t kPlayerIdBase = 1'000'000;

/// The world: statics over 500 m x 500 m, players walking in the middle
/// 120 m x 120 m, `kHistory` ticks recorded after the first.
struct World {
  ColliderSet set;
  std::mt19937_64 rng{42};
  std::vector<Vec3> player_pos;
  std::vector<Vec3> player_vel;
  uint64_t tick = 1;

  double U(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

  World() {
    set.SetHistoryTicks(kHistory);
    std::vector<Collider> all;
    all.reserve(kStatics + kPlayers);
    for (int i = 0; i < kStatics; ++i) {
      Collider c;
      c.id = static_cast<uint64_t>(i + 1);
      switch (i % 3) {
        case 0: c.shape = *Shape::MakeBox({U(0.3, 2.0), U(0.3, 3.0), U(0.3, 2.0)}); break;
        case 1: c.shape = *Shape::MakeSphere(U(0.3, 1.5)); break;
        default: c.shape = *Shape::MakeCapsule(U(0.2, 0.8), U(0.3, 2.0)); break;
      }
      c.pose = Pose({U(-250, 250), U(0, 8), U(-250, 250)},
                    Quat::FromAxisAngle({0, 1, 0}, U(0, 6.283)));
      all.push_back(c);
    }
    for (int p = 0; p < kPlayers; ++p) {
      Collider c;
      c.id = kPlayerIdBase + static_cast<uint64_t>(p);
      c.shape = *Shape::MakeCapsule(0.4, 0.5);
      player_pos.push_back({U(-60, 60), 0.9, U(-60, 60)});
      player_vel.push_back({U(-0.1, 0.1), 0.0, U(-0.1, 0.1)});
      c.pose = Pose(player_pos.back());
      c.layer = 1;
      all.push_back(c);
    }
    (void)set.AddBulk(all, tick);
    for (uint32_t k = 0; k < kHistory; ++k) (void)RecordTick();
  }

  /// The 64 players' moves of the next tick.
  std::vector<ColliderChange> Moves() {
    std::vector<ColliderChange> moves;
    moves.reserve(kPlayers);
    for (int p = 0; p < kPlayers; ++p) {
      player_vel[p].x = std::clamp(player_vel[p].x + U(-0.02, 0.02), -0.15, 0.15);
      player_vel[p].z = std::clamp(player_vel[p].z + U(-0.02, 0.02), -0.15, 0.15);
      player_pos[p] = player_pos[p] + player_vel[p];
      moves.push_back(ColliderChange::Move(kPlayerIdBase + static_cast<uint64_t>(p),
                                           Pose(player_pos[p], Quat::FromAxisAngle(
                                                                   {0, 1, 0}, U(0, 6.283)))));
    }
    return moves;
  }
  Status RecordTick() { return set.Apply(Moves(), ++tick); }

  /// Shots: from one player's eye towards another's chest (+10 m beyond),
  /// each at a random real tick of the window when `rewound`.
  std::vector<Query> Shots(size_t n, bool rewound) {
    std::vector<Query> out;
    const TickRange r = *set.Ticks();
    for (size_t i = 0; i < n; ++i) {
      const int a = static_cast<int>(rng() % kPlayers);
      int b = static_cast<int>(rng() % kPlayers);
      if (b == a) b = (b + 1) % kPlayers;
      RayQuery q;
      q.origin = player_pos[a] + Vec3{0, 0.7, 0};
      const Vec3 d = player_pos[b] + Vec3{U(-0.5, 0.5), U(-0.3, 0.6), U(-0.5, 0.5)} - q.origin;
      q.translation = d * ((d.Length() + 10.0) / d.Length());
      q.filter.ignore.push_back(kPlayerIdBase + static_cast<uint64_t>(a));
      if (rewound) q.at_tick = U(static_cast<double>(r.oldest), static_cast<double>(r.newest));
      out.push_back(q);
    }
    return out;
  }
};

World& TheWorld() {
  static World* w = new World();
  return *w;
}

// One raycast at a time (ColliderSet::Raycast), present vs rewound.
void RunRays(benchmark::State& state, bool rewound) {
  World& w = TheWorld();
  const std::vector<Query> shots = w.Shots(4096, rewound);
  std::vector<CastHit> hits;
  size_t i = 0, hit = 0;
  for (auto _ : state) {
    w.set.Raycast(std::get<RayQuery>(shots[i]), &hits);
    hit += !hits.empty();
    benchmark::DoNotOptimize(hits.data());
    i = (i + 1) % shots.size();
  }
  state.counters["hit_rate"] =
      benchmark::Counter(static_cast<double>(hit) / static_cast<double>(state.iterations()));
}
void BM_RaycastPresent(benchmark::State& state) { RunRays(state, false); }
void BM_RaycastRewound(benchmark::State& state) { RunRays(state, true); }
BENCHMARK(BM_RaycastPresent);
BENCHMARK(BM_RaycastRewound);

// A batch of 1024 shots through RunBatch on one thread, present vs rewound.
void RunRayBatch(benchmark::State& state, bool rewound) {
  World& w = TheWorld();
  const std::vector<Query> shots = w.Shots(1024, rewound);
  std::vector<QueryResult> results(shots.size());
  for (auto _ : state) {
    w.set.RunBatch(shots, results, nullptr);
    benchmark::DoNotOptimize(results.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(shots.size()));
}
void BM_RaycastBatchPresent(benchmark::State& state) { RunRayBatch(state, false); }
void BM_RaycastBatchRewound(benchmark::State& state) { RunRayBatch(state, true); }
BENCHMARK(BM_RaycastBatchPresent);
BENCHMARK(BM_RaycastBatchRewound);

// Recording one tick of 64 moves (Apply with a tick), with the history of
// 64 ticks (arg 64) or none (arg 1: only the newest tick is kept); reports
// the history's memory per kept tick.
void BM_RecordTick(benchmark::State& state) {
  World w;  // its own world: ticks keep advancing
  w.set.SetHistoryTicks(static_cast<uint32_t>(state.range(0)));
  for (uint32_t k = 0; k < kHistory; ++k) (void)w.RecordTick();
  std::vector<std::vector<ColliderChange>> ticks;
  for (int k = 0; k < 256; ++k) ticks.push_back(w.Moves());
  size_t k = 0;
  for (auto _ : state) {
    const Status s = w.set.Apply(ticks[k], ++w.tick);
    benchmark::DoNotOptimize(s.ok());
    k = (k + 1) % ticks.size();
  }
  const ColliderSet::HistoryStats h = w.set.GetHistoryStats();
  state.counters["history_bytes"] = static_cast<double>(h.bytes);
  state.counters["bytes_per_tick"] = static_cast<double>(h.bytes) / static_cast<double>(kHistory);
  state.counters["samples"] = static_cast<double>(h.samples);
  state.counters["tracked"] = static_cast<double>(h.tracked);
  state.counters["set_bytes"] = static_cast<double>(w.set.MemoryBytes());
}
BENCHMARK(BM_RecordTick)->Arg(64)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace hitbox

BENCHMARK_MAIN();
