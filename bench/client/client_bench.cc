// Client-side costs: rendezvous routing, one Sweep round trip, and Tick
// streams with one or many ticks in flight, against an in-process hitbox_server
// (no network: the figures are the client + gRPC + server overhead floor).
//
//   build/bin/hitbox-client-bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>

#include <deque>
#include <future>
#include <string>
#include <vector>

#include "hitbox/client.h"
#include "hitbox/client_pool.h"
#include "server.h"

namespace hitbox {
namespace {

// Pick the owner of a session among N addresses.
void BM_RendezvousPick(benchmark::State& state) {
  std::vector<std::string> addresses;
  for (int i = 0; i < state.range(0); ++i) addresses.push_back("10.0.0." + std::to_string(i) + ":50051");
  uint64_t n = 0;
  for (auto _ : state) {
    const std::string id = "match-" + std::to_string(n++ & 1023);
    benchmark::DoNotOptimize(RendezvousPick(addresses, id));
  }
}
BENCHMARK(BM_RendezvousPick)->Arg(3)->Arg(16);

// A server with session "bench": a grid of 1024 boxes.
struct Fixture {
  std::unique_ptr<server::HitboxServer> server;
  std::unique_ptr<Client> client;

  Fixture() {
    spdlog::set_level(spdlog::level::warn);
    server::ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.service.threads = 1;
    server = server::HitboxServer::Start(options).value();
    client = std::make_unique<Client>(server->InProcessChannel());
    (void)client->CreateSession("bench");
    std::vector<Collider> colliders;
    for (uint64_t i = 0; i < 1024; ++i) {
      Collider c;
      c.id = i;
      c.shape = *Shape::MakeBox({0.5, 0.5, 0.5});
      c.pose = Pose({static_cast<double>(i % 32) * 2.0, 0.0, static_cast<double>(i / 32) * 2.0});
      colliders.push_back(c);
    }
    (void)client->AddColliders("bench", colliders);
  }
  ~Fixture() {
    client.reset();
    server->Shutdown(std::chrono::milliseconds(0));
    server->Wait();
  }
};

Fixture& Shared() {
  static Fixture* f = new Fixture();  // lives until exit
  return *f;
}

// One Sweep call (unary Query with one cast) end to end.
void BM_SweepRoundTrip(benchmark::State& state) {
  Fixture& f = Shared();
  const Shape capsule = *Shape::MakeCapsule(0.4, 0.5);
  for (auto _ : state) {
    auto hit = f.client->Sweep("bench", capsule, Pose({-3, 0, 1}), Vec3{70, 0, 0});
    if (!hit.ok()) state.SkipWithError(hit.status().ToString().c_str());
    benchmark::DoNotOptimize(hit);
  }
}
BENCHMARK(BM_SweepRoundTrip)->UseRealTime();

// Ticks of one move + one ray, with range(0) ticks kept in flight. Each run
// opens a new stream on the shared session, whose ticks with changes must keep
// increasing across streams: numbered from a counter that outlives the runs.
void BM_TickPipelined(benchmark::State& state) {
  static uint64_t next_tick = 1;
  Fixture& f = Shared();
  std::unique_ptr<TickStream> stream = f.client->OpenTickStream("bench");
  const size_t depth = static_cast<size_t>(state.range(0));
  const std::vector<Query> ray = {RayQuery{{-3, 0, 1}, {70, 0, 0}, {}, false}};
  std::deque<std::future<RpcResult<TickResult>>> inflight;
  uint64_t n = 0;
  for (auto _ : state) {
    const std::vector<ColliderChange> move = {
        ColliderChange::Move(5, Pose({10.0, static_cast<double>(n++ % 2), 0.0}))};
    inflight.push_back(stream->TickAt(next_tick++, move, ray));
    if (inflight.size() >= depth) {
      RpcResult<TickResult> r = inflight.front().get();
      inflight.pop_front();
      if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    }
  }
  while (!inflight.empty()) {
    (void)inflight.front().get();
    inflight.pop_front();
  }
  (void)stream->Finish();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TickPipelined)->Arg(1)->Arg(16)->UseRealTime();

}  // namespace
}  // namespace hitbox

BENCHMARK_MAIN();
