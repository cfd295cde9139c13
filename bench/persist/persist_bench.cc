// What persistence costs the 64-player tick: one session of 10,000 colliders
// (64 of them players), each tick moves the 64 players and runs 64 queries
// (raycasts and sphere overlaps around the players), in-process through
// HitboxService::DoTick, without --data-dir (BM_Tick64/none) and with it per
// --fsync policy; BM_Compact10k is one compaction of that session (a new
// snapshot: write, fsync, rename, fsync dir). The data dir is a fresh
// directory under $TMPDIR (default /tmp): its file system decides what
// fsync costs.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "hitbox/wire/convert.h"
#include "persistence.h"
#include "service.h"

namespace hitbox::server {
namespace {

namespace fs = std::filesystem;

constexpr int kColliders = 10'000;
constexpr int kPlayers = 64;
constexpr double kHalfWorld = 100.0;

/// A service (with or without a data dir) holding session "bench".
struct World {
  explicit World(int policy) {
    dir = fs::temp_directory_path() / ("hitbox_persist_bench_" + std::to_string(getpid()));
    fs::remove_all(dir);
    std::unique_ptr<SessionStore> store;
    if (policy >= 0) {
      PersistOptions p;
      p.data_dir = dir.string();
      p.fsync = static_cast<FsyncPolicy>(policy);
      store = std::move(SessionStore::Open(p).value());
    }
    ServiceOptions o;
    o.threads = 1;
    service = std::make_unique<HitboxService>(o, std::move(store));
    v1::CreateSessionRequest create;
    create.set_session_id("bench");
    v1::SessionInfo info;
    (void)service->DoCreateSession(create, &info);
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> pos(-kHalfWorld, kHalfWorld), size(0.3, 2.0);
    v1::ApplyChangesRequest load;
    load.set_session_id("bench");
    for (int i = 1; i <= kColliders; ++i) {
      Collider c;
      c.id = static_cast<uint64_t>(i);
      c.shape = i <= kPlayers ? *Shape::MakeCapsule(0.4, 0.9) : *Shape::MakeBox({size(rng), size(rng), size(rng)});
      c.pose = Pose({pos(rng), pos(rng) * 0.1, pos(rng)});
      wire::ToProto(c, load.add_changes()->mutable_add());
    }
    v1::ApplyChangesResponse resp;
    (void)service->DoApplyChanges(load, &resp);
  }
  ~World() {
    service.reset();
    fs::remove_all(dir);
  }

  // Tick `t`: every player moves a little; 32 rays and 32 overlaps around them.
  void FillTick(uint64_t t, v1::TickRequest* req) {
    req->Clear();
    req->set_session_id("bench");
    req->set_tick(t);
    for (int p = 1; p <= kPlayers; ++p) {
      const double a = 0.01 * static_cast<double>(t) + p;
      const Vec3 at(std::cos(a) * 50 + p, 1, std::sin(a) * 50 - p);
      v1::MoveCollider* m = req->add_changes()->mutable_move();
      m->set_id(static_cast<uint64_t>(p));
      wire::ToProto(Pose(at), m->mutable_pose());
      v1::Query* q = req->add_queries();
      if (p % 2 == 0) {
        wire::ToProto(at, q->mutable_raycast()->mutable_origin());
        wire::ToProto(Vec3(30, 0, 10), q->mutable_raycast()->mutable_translation());
      } else {
        q->mutable_overlap()->mutable_shape()->mutable_sphere()->set_radius(3);
        wire::ToProto(Pose(at), q->mutable_overlap()->mutable_pose());
      }
    }
  }

  fs::path dir;
  std::unique_ptr<HitboxService> service;
};

// Arg: -1 no data dir, else the FsyncPolicy (0 always, 1 everysec, 2 no).
void BM_Tick64(benchmark::State& state) {
  World w(static_cast<int>(state.range(0)));
  auto stream = std::make_unique<HitboxService::TickStream>();
  v1::TickRequest req;
  v1::TickResponse resp;
  uint64_t t = 0;
  for (auto _ : state) {
    w.FillTick(++t, &req);
    resp.Clear();
    if (!w.service->DoTick(stream.get(), req, &resp).ok() || resp.has_error()) {
      state.SkipWithError("tick failed");
      break;
    }
    benchmark::DoNotOptimize(resp);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(state.range(0) < 0 ? "no data dir"
                                    : std::string("--fsync ") +
                                          FsyncPolicyName(static_cast<FsyncPolicy>(state.range(0))));
}
BENCHMARK(BM_Tick64)->ArgName("policy")->Arg(-1)->Arg(0)->Arg(1)->Arg(2)->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// One compaction of the 10,000-collider session (a ~0.5 MB snapshot).
void BM_Compact10k(benchmark::State& state) {
  World w(static_cast<int>(FsyncPolicy::kEverySec));
  std::shared_ptr<Session> s = w.service->sessions().Find("bench");
  for (auto _ : state) {
    std::shared_lock<std::shared_mutex> lock(s->mutex());
    if (!w.service->store()->Compact(*s).ok()) {
      state.SkipWithError("compaction failed");
      break;
    }
  }
  state.counters["snapshot_bytes"] =
      static_cast<double>(fs::file_size(w.dir / *SessionStore::SnapshotName("bench")));
}
BENCHMARK(BM_Compact10k)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hitbox::server

BENCHMARK_MAIN();
