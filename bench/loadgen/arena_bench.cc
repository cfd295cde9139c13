// The 64-player arena tick (loadgen.h: 64 character moves applied to the
// players' colliders, 64 rays, 16 overlaps), in-process (ColliderSet, as
// hitboxd runs a tick, without gRPC) and through the Tick stream of an
// in-process hitbox_server. Arg 1: the full tick; arg 0: the same tick
// without its moves, so (full - without) / 64 is the cost of one move.
// ns_per_move (the moves-only benchmark) is its in-process cost alone.
//
//   build/bin/hitbox-arena-bench --benchmark_min_time=1
#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <vector>

#include "hitbox/client.h"
#include "hitbox/loadgen.h"
#include "server.h"

namespace hitbox {
namespace {

using loadgen::kArenaPlayerBase;

struct ArenaRun {
  loadgen::ArenaOptions options;
  loadgen::Arena arena = loadgen::GenerateArena(options);
  std::vector<Vec3> positions = arena.spawn;
  uint64_t tick = 0;

  // The next tick's queries; with `moves` false, without the moves.
  std::vector<Query> Next(bool moves, bool others = true) {
    std::vector<Query> q = loadgen::ArenaTickQueries(arena, options, positions, ++tick);
    if (!moves) q.erase(q.begin(), q.begin() + static_cast<ptrdiff_t>(positions.size()));
    if (!others && moves) q.resize(positions.size());
    return q;
  }
  // Takes the moves' end positions from the results.
  void Advance(const std::vector<QueryResult>& results) {
    for (size_t i = 0; i < positions.size(); ++i) positions[i] = results[i].move->position;
  }
};

// One tick in-process: RunBatch (one thread), then the moves applied.
void ArenaInProcess(benchmark::State& state, bool moves, bool others) {
  ArenaRun run;
  ColliderSet set;
  if (!set.AddBulk(run.arena.colliders).ok()) state.SkipWithError("arena");
  std::vector<QueryResult> results;
  std::vector<ColliderChange> applied;
  for (auto _ : state) {
    const std::vector<Query> queries = run.Next(moves, others);
    results.resize(queries.size());
    set.RunBatch(queries, results);
    if (moves) {
      run.Advance(results);
      applied.clear();
      for (size_t i = 0; i < run.positions.size(); ++i) {
        applied.push_back(ColliderChange::Move(kArenaPlayerBase + i, Pose(run.positions[i])));
      }
      if (!set.Apply(applied).ok()) state.SkipWithError("apply");
    }
  }
  if (moves) {
    state.counters["ns_per_move"] = benchmark::Counter(
        static_cast<double>(state.iterations() * run.positions.size()) * 1e-9,
        benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  }
}

void BM_ArenaTickInProcess(benchmark::State& state) {
  ArenaInProcess(state, state.range(0) != 0, true);
}
BENCHMARK(BM_ArenaTickInProcess)->Arg(1)->Arg(0);

void BM_ArenaMovesInProcess(benchmark::State& state) { ArenaInProcess(state, true, false); }
BENCHMARK(BM_ArenaMovesInProcess);

// One tick through the Tick stream of an in-process server (one tick in flight).
void BM_ArenaTickStream(benchmark::State& state) {
  const bool moves = state.range(0) != 0;
  spdlog::set_level(spdlog::level::warn);
  server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.service.threads = 1;
  std::unique_ptr<server::HitboxServer> srv = server::HitboxServer::Start(options).value();
  {
    Client client(srv->InProcessChannel());
    ArenaRun run;
    if (!client.CreateSession("arena").ok() ||
        !client.AddColliders("arena", run.arena.colliders).ok()) {
      state.SkipWithError("arena");
    }
    std::unique_ptr<TickStream> stream = client.OpenTickStream("arena");
    for (auto _ : state) {
      const std::vector<Query> queries = run.Next(moves);
      RpcResult<TickResult> r = stream->Tick({}, queries).get();
      if (!r.ok()) {
        state.SkipWithError(r.status().ToString().c_str());
        break;
      }
      if (moves) run.Advance(r->results);
    }
    (void)stream->Finish();
  }
  srv->Shutdown(std::chrono::milliseconds(0));
  srv->Wait();
}
BENCHMARK(BM_ArenaTickStream)->Arg(1)->Arg(0)->UseRealTime();

}  // namespace
}  // namespace hitbox

BENCHMARK_MAIN();
