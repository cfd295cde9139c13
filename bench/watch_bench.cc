// Watches (issue 32) against re-running the overlap queries each tick; the
// world and the benchmarks are in docs/benchmarks.md ("hitbox-watch-bench").
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "hitbox/world/collider_set.h"

namespace hitbox {
namespace {

constexpr int kStatics = 10'000;
constexpr int kPlayers = 1'000;
constexpr int kMovedPerTick = 50;
constexpr int kTriggers = 100;
constexpr double kAreaRadius = 30.0;
constexpr double kHalfWorld = 500.0;  // metres: the world is 1 km x 1 km
constexpr uint64_t kPlayerIdBase = 1'000'000;

struct World {
  ColliderSet set;
  std::mt19937_64 rng{7};
  std::vector<Vec3> player_pos;
  uint64_t tick = 1;
  int next_mover = 0;

  double U(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

  explicit World(bool with_watches) {
    std::vector<Collider> all;
    for (int i = 0; i < kStatics; ++i) {
      Collider c;
      c.id = static_cast<uint64_t>(i + 1);
      c.shape = i % 2 == 0 ? *Shape::MakeBox({U(0.3, 2.0), U(0.3, 3.0), U(0.3, 2.0)})
                           : *Shape::MakeSphere(U(0.3, 1.5));
      c.pose = Pose({U(-kHalfWorld, kHalfWorld), U(0, 8), U(-kHalfWorld, kHalfWorld)},
                    Quat::FromAxisAngle({0, 1, 0}, U(0, 6.283)));
      all.push_back(c);
    }
    for (int p = 0; p < kPlayers; ++p) {
      Collider c;
      c.id = kPlayerIdBase + static_cast<uint64_t>(p);
      c.shape = *Shape::MakeCapsule(0.4, 0.5);
      player_pos.push_back({U(-kHalfWorld, kHalfWorld), 0.9, U(-kHalfWorld, kHalfWorld)});
      c.pose = Pose(player_pos.back());
      c.layer = 1;
      all.push_back(c);
    }
    (void)set.AddBulk(all, tick);
    if (with_watches) (void)set.Apply(Watches(), ++tick);
  }

  /// The 100 trigger boxes and the players' areas of interest.
  std::vector<ColliderChange> Watches() {
    std::vector<ColliderChange> out;
    for (int t = 0; t < kTriggers; ++t) {
      Watch w;
      w.id = static_cast<uint64_t>(t + 1);
      w.shape = *Shape::MakeBox({U(2, 10), 3, U(2, 10)});
      w.pose = Pose({U(-kHalfWorld, kHalfWorld), 1.5, U(-kHalfWorld, kHalfWorld)});
      w.mask = 1u << 1;  // players only
      out.push_back(ColliderChange::AddWatch(w));
    }
    for (int p = 0; p < kPlayers; ++p) out.push_back(ColliderChange::AddWatch(AreaOf(p)));
    return out;
  }
  static Watch AreaOf(int p) {
    Watch w;
    w.id = 1000 + static_cast<uint64_t>(p);
    w.shape = *Shape::MakeSphere(kAreaRadius);
    w.attach_to = kPlayerIdBase + static_cast<uint64_t>(p);
    return w;
  }

  /// The next 50 players each walk up to 0.5 m.
  std::vector<ColliderChange> Moves() {
    std::vector<ColliderChange> moves;
    for (int k = 0; k < kMovedPerTick; ++k) {
      const int p = next_mover;
      next_mover = (next_mover + 1) % kPlayers;
      Vec3& pos = player_pos[static_cast<size_t>(p)];
      pos.x = std::clamp(pos.x + U(-0.5, 0.5), -kHalfWorld, kHalfWorld);
      pos.z = std::clamp(pos.z + U(-0.5, 0.5), -kHalfWorld, kHalfWorld);
      moves.push_back(ColliderChange::Move(kPlayerIdBase + static_cast<uint64_t>(p), Pose(pos)));
    }
    return moves;
  }

  /// Every watch as an overlap query at its pose now (the re-query baseline).
  std::vector<Query> AllQueries(const World& watched) const {
    std::vector<Query> qs;
    watched.set.ForEachWatch([&](const WatchState& s) {
      OverlapQuery q;
      q.shape = s.watch.shape;
      q.pose = s.watch.attach_to ? set.Find(*s.watch.attach_to)->pose * s.watch.pose : s.watch.pose;
      q.filter.mask = s.watch.mask;
      if (s.watch.attach_to) q.filter.ignore.push_back(*s.watch.attach_to);
      q.tag = s.watch.id;
      qs.push_back(q);
    });
    return qs;
  }
};

void BM_WatchTickIncremental(benchmark::State& state) {
  World w(true);
  uint64_t events = 0, ticks = 0;
  for (auto _ : state) {
    const std::vector<ColliderChange> moves = w.Moves();
    if (!w.set.Apply(moves, ++w.tick).ok()) state.SkipWithError("apply failed");
    events += w.set.watch_events().size();
    benchmark::DoNotOptimize(w.set.watch_events().data());
    ++ticks;
  }
  // Bytes per watch: two fresh worlds, with and without watches, after the
  // same number of ticks (their histories hold as many poses).
  World with(true), bare(false);
  for (int t = 0; t < 8; ++t) {
    (void)with.set.Apply(with.Moves(), ++with.tick);
    (void)bare.set.Apply(bare.Moves(), ++bare.tick);
  }
  const double per_watch =
      (static_cast<double>(with.set.MemoryBytes()) - static_cast<double>(bare.set.MemoryBytes())) /
      static_cast<double>(with.set.watch_count());
  state.counters["events_per_tick"] = static_cast<double>(events) / static_cast<double>(ticks);
  state.counters["memory_per_watch"] = per_watch;
  state.counters["full_queries"] = static_cast<double>(w.set.last_watch_work().full_queries);
  state.counters["pair_tests"] = static_cast<double>(w.set.last_watch_work().pair_tests);
}
BENCHMARK(BM_WatchTickIncremental)->Unit(benchmark::kMicrosecond);

// The same ticks under hitboxd's default watch budget (25,000,000 nodes,
// 5,000,000 pair tests, a 64 MiB growth bound): what bounding costs.
void BM_WatchTickIncrementalBounded(benchmark::State& state) {
  World w(true);
  WatchBudget budget;
  budget.max_nodes = 25'000'000;
  budget.max_pair_tests = 5'000'000;
  budget.max_growth_bytes = 64ull << 20;
  w.set.SetWatchBudget(budget);
  for (auto _ : state) {
    const std::vector<ColliderChange> moves = w.Moves();
    if (!w.set.Apply(moves, ++w.tick).ok()) state.SkipWithError("apply failed");
    benchmark::DoNotOptimize(w.set.watch_events().data());
  }
  const WatchWork work = w.set.last_watch_work();
  state.counters["query_nodes"] = static_cast<double>(work.query_nodes);
  state.counters["pairs_counted"] = static_cast<double>(work.query_pair_tests + work.candidates);
  state.counters["growth_bytes"] = static_cast<double>(work.growth_bytes);
}
BENCHMARK(BM_WatchTickIncrementalBounded)->Unit(benchmark::kMicrosecond);

// The 50 moves alone on a set without watches: what both ticks above share.
void BM_WatchTickMovesOnly(benchmark::State& state) {
  World w(false);
  for (auto _ : state) {
    const std::vector<ColliderChange> moves = w.Moves();
    if (!w.set.Apply(moves, ++w.tick).ok()) state.SkipWithError("apply failed");
  }
}
BENCHMARK(BM_WatchTickMovesOnly)->Unit(benchmark::kMicrosecond);

void BM_WatchTickRequery(benchmark::State& state) {
  World watched(true);  // only for the list of watches
  World w(false);
  std::vector<Query> queries = w.AllQueries(watched);
  std::vector<QueryResult> last(queries.size()), now(queries.size());
  w.set.RunBatch(queries, last);
  uint64_t events = 0, ticks = 0;
  for (auto _ : state) {
    const std::vector<ColliderChange> moves = w.Moves();
    if (!w.set.Apply(moves, ++w.tick).ok()) state.SkipWithError("apply failed");
    for (Query& q : queries) {  // the areas of interest follow their players
      auto& o = std::get<OverlapQuery>(q);
      if (o.tag > kTriggers) o.pose = w.set.Find(kPlayerIdBase + o.tag - 1000)->pose;
    }
    w.set.RunBatch(queries, now);
    for (size_t i = 0; i < now.size(); ++i) {  // the differences: sorted by id
      const auto& a = last[i].overlaps;
      const auto& b = now[i].overlaps;
      size_t x = 0, y = 0;
      while (x < a.size() || y < b.size()) {
        if (y == b.size() || (x < a.size() && a[x].id < b[y].id)) {
          ++events, ++x;
        } else if (x == a.size() || b[y].id < a[x].id) {
          ++events, ++y;
        } else {
          ++x, ++y;
        }
      }
    }
    std::swap(last, now);
    ++ticks;
  }
  state.counters["events_per_tick"] = static_cast<double>(events) / static_cast<double>(ticks);
}
BENCHMARK(BM_WatchTickRequery)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace hitbox

BENCHMARK_MAIN();
