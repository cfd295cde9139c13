// The 64-player arena tick (loadgen.h), in-process and through the Tick
// stream of a hitbox server, and the inspector's cost on it; what each
// benchmark and counter measures is in docs/benchmarks.md ("hitbox-arena-bench").
#include <benchmark/benchmark.h>
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "hitbox/client.h"
#include "hitbox/loadgen.h"
#include "inspector_api.h"
#include "server.h"

// ---------------------------------------------------------------------------
// Counting allocator: every malloc, calloc and realloc of the process (new
// and protobuf included) bumps one counter. glibc's own entry points do the work.
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* p, size_t size);
void __libc_free(void* p);
}
namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace
extern "C" {
void* malloc(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(count, size);
}
void* realloc(void* p, size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, size);
}
void free(void* p) { __libc_free(p); }
}

namespace hitbox {
namespace {

using loadgen::kArenaPlayerBase;

// CPU seconds of this process (all threads) and of the calling thread.
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}
double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
uint64_t Allocations() { return g_allocations.load(std::memory_order_relaxed); }

struct ArenaRun {
  loadgen::ArenaOptions options;
  loadgen::Arena arena = loadgen::GenerateArena(options);
  std::vector<Vec3> positions = arena.spawn;
  uint64_t tick = 0;

  // The next tick's queries; with `moves` false, without the moves; with
  // `others` false, the moves alone (the rest not even made).
  std::vector<Query> Next(bool moves, bool others = true) {
    ++tick;
    if (!others && moves) return loadgen::ArenaMoveQueries(arena, options, positions, tick);
    std::vector<Query> q = loadgen::ArenaTickQueries(arena, options, positions, tick);
    if (!moves) q.erase(q.begin(), q.begin() + static_cast<ptrdiff_t>(positions.size()));
    return q;
  }
  // Takes the moves' end positions from the results.
  void Advance(const std::vector<QueryResult>& results) {
    for (size_t i = 0; i < positions.size(); ++i) positions[i] = results[i].move->position;
  }
  // The sweeps of a full tick (moves first) as sweeps by collider id.
  std::vector<ShapeFromCollider> SweepsById() const {
    std::vector<ShapeFromCollider> out;
    for (size_t k = 0; k < options.casts_per_tick; ++k) {
      out.push_back({positions.size() + k,
                     kArenaPlayerBase + loadgen::ArenaSweepPlayer(options, k)});
    }
    return out;
  }
};

// One tick in-process, as hitboxd runs it: RunBatch (one thread), then the
// moves applied.
struct InProcessTick {
  ColliderSet set;
  std::vector<QueryResult> results, others;
  std::vector<ColliderChange> applied;

  bool Run(ArenaRun& run, const std::vector<Query>& queries, bool moves) {
    results.resize(queries.size());
    set.RunBatch(queries, results);
    if (!moves) return true;
    run.Advance(results);
    return ApplyMoves(run, &set);
  }
  // The tick's other queries timed without its moves, which run outside
  // the timing on `shadow` (the same world, kept in step), then the moves
  // applied as Run does: the players go where the full tick takes them,
  // and the caches `set` makes (the tree's wide copy) are made in the
  // timed batch as in the full tick.
  bool RunOthers(ArenaRun& run, const std::vector<Query>& queries, ColliderSet* shadow,
                 benchmark::State& state) {
    state.PauseTiming();
    const size_t players = run.positions.size();
    const std::span<const Query> all(queries);
    results.resize(players);
    shadow->RunBatch(all.first(players), results);
    run.Advance(results);
    const bool shadow_ok = ApplyMoves(run, shadow);
    others.resize(queries.size() - players);
    state.ResumeTiming();
    set.RunBatch(all.subspan(players), others);
    return ApplyMoves(run, &set) && shadow_ok;
  }
  bool ApplyMoves(const ArenaRun& run, ColliderSet* to) {
    applied.clear();
    for (size_t i = 0; i < run.positions.size(); ++i) {
      applied.push_back(ColliderChange::Move(kArenaPlayerBase + i, Pose(run.positions[i])));
    }
    return to->Apply(applied).ok();
  }
};

// What an in-process arena benchmark times of each tick.
enum class Timed {
  kFullTick,      // the moves and the other queries in one batch, then Apply
  kWithoutMoves,  // the other queries alone; the players stay at their spawns
  kOthers,        // the full tick with its moves outside the timing (RunOthers)
  kMovesOnly,     // the moves alone, then Apply
};

void ArenaInProcess(benchmark::State& state, Timed timed) {
  const bool moves = timed != Timed::kWithoutMoves, others = timed != Timed::kMovesOnly;
  const bool moves_untimed = timed == Timed::kOthers;
  ArenaRun run;
  InProcessTick t;
  if (!t.set.AddBulk(run.arena.colliders).ok()) state.SkipWithError("arena");
  ColliderSet shadow;
  if (moves_untimed && !shadow.AddBulk(run.arena.colliders).ok()) state.SkipWithError("arena");
  const uint64_t allocs = Allocations();
  for (auto _ : state) {
    const std::vector<Query> queries = run.Next(moves, others);
    const bool ok =
        moves_untimed ? t.RunOthers(run, queries, &shadow, state) : t.Run(run, queries, moves);
    if (!ok) state.SkipWithError("apply");
  }
  state.counters["allocs_per_tick"] = benchmark::Counter(
      static_cast<double>(Allocations() - allocs), benchmark::Counter::kAvgIterations);
  if (moves && !moves_untimed) {
    state.counters["ns_per_move"] = benchmark::Counter(
        static_cast<double>(state.iterations() * run.positions.size()) * 1e-9,
        benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  }
}

// Arg 1: the full tick; 0: without its moves (the players stay at their
// spawns); 2: the full tick with its moves outside the timing (the players
// move as in 1), so (1 - 2) / 64 is what a move adds to the tick's batch
// (both apply the moves).
void BM_ArenaTickInProcess(benchmark::State& state) {
  const Timed timed[] = {Timed::kWithoutMoves, Timed::kFullTick, Timed::kOthers};
  ArenaInProcess(state, timed[state.range(0)]);
}
BENCHMARK(BM_ArenaTickInProcess)->Arg(1)->Arg(0)->Arg(2);

void BM_ArenaMovesInProcess(benchmark::State& state) { ArenaInProcess(state, Timed::kMovesOnly); }
BENCHMARK(BM_ArenaMovesInProcess);
// The first 50 ticks' moves, a fixed amount of work for instruction counts
// (callgrind --toggle-collect='hitbox::ColliderSet::RunBatch*').
BENCHMARK(BM_ArenaMovesInProcess)->Iterations(50);

// An in-process server on one service thread, recording `record_ticks`
// ticks of queries per session (--record-queries).
std::unique_ptr<server::HitboxServer> StartArenaServer(uint32_t record_ticks) {
  spdlog::set_level(spdlog::level::warn);
  server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.service.threads = 1;
  options.service.record_query_ticks = record_ticks;
  return server::HitboxServer::Start(options).value();
}

// Creates the session "arena" holding the run's colliders; skips the
// benchmark and returns false when that fails.
bool CreateArena(Client& client, const ArenaRun& run, benchmark::State& state) {
  if (client.CreateSession("arena").ok() &&
      client.AddColliders("arena", run.arena.colliders).ok()) {
    return true;
  }
  state.SkipWithError("arena");
  return false;
}

// One tick through the Tick stream of an in-process server (one tick in flight).
void BM_ArenaTickStream(benchmark::State& state) {
  const bool moves = state.range(0) != 0;
  const bool buffers = state.range(1) != 0;  // answers into one kept TickResult (TickInto)
  std::unique_ptr<server::HitboxServer> srv = StartArenaServer(0);
  {
    Client client(srv->InProcessChannel());
    ArenaRun run;
    CreateArena(client, run, state);
    std::unique_ptr<TickStream> stream = client.OpenTickStream("arena");
    TickResult kept;
    for (auto _ : state) {
      const std::vector<Query> queries = run.Next(moves);
      if (buffers) {
        const RpcStatus st = stream->TickInto({}, queries, {}, &kept);
        if (!st.ok()) {
          state.SkipWithError(st.ToString().c_str());
          break;
        }
        if (moves) run.Advance(kept.results);
        continue;
      }
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
BENCHMARK(BM_ArenaTickStream)
    ->ArgNames({"moves", "buffers"})
    ->Args({1, 0})
    ->Args({0, 0})
    ->Args({1, 1})
    ->UseRealTime();

// What an open inspector page costs the server per poll (server/inspector_api.h):
// the arena's world, and every 5th poll the newest 4 recorded ticks of queries
// (--record-queries 64), as the page asks 10 times a second. Runs the API
// on this thread, so cpu_time is its CPU; the arena's ticks, 64 of them
// recorded, are played first on an in-process Tick stream.
void BM_InspectorPoll(benchmark::State& state) {
  const bool with_queries = state.range(0) != 0;  // 0: the world alone
  std::unique_ptr<server::HitboxServer> srv = StartArenaServer(64);
  {
    Client client(srv->InProcessChannel());
    ArenaRun run;
    CreateArena(client, run, state);
    std::unique_ptr<TickStream> stream = client.OpenTickStream("arena");
    TickResult kept;
    for (uint64_t t = 1; t <= 64; ++t) {
      if (!stream->TickInto({}, run.Next(true), {}, &kept).ok()) state.SkipWithError("tick");
      run.Advance(kept.results);
    }
    (void)stream->Finish();
  }
  const server::InspectorApi api(&srv->service());
  server::InspectorRequest world;
  world.path = "/api/sessions/arena/world";
  world.peer = "ipv4:127.0.0.1:1";
  server::InspectorRequest queries = world;
  queries.path = "/api/sessions/arena/queries";
  queries.params["last"] = "4";
  uint64_t n = 0, world_bytes = 0, query_bytes = 0;
  for (auto _ : state) {
    world_bytes = api.Handle(world).body.size();
    if (with_queries && n++ % 5 == 0) query_bytes = api.Handle(queries).body.size();
  }
  state.counters["world_bytes"] = static_cast<double>(world_bytes);
  state.counters["queries_bytes"] = static_cast<double>(query_bytes);
  srv->Shutdown(std::chrono::milliseconds(0));
  srv->Wait();
}
BENCHMARK(BM_InspectorPoll)->ArgName("queries")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// What an open live page costs the server per event of its stream
// (InspectorStream::Event, 10 a second): between two events the arena plays
// 3 ticks (30 ticks/s), untimed; each event sends what changed (the 64
// players' poses) and the newest recorded tick of queries. cpu_time is the
// event's CPU; inspector_cpu_ms_per_s = 10 events' CPU per second, to set
// against the arena tick's server CPU per second at 30 Hz
// (BM_ArenaTickService's server_cpu x 30).
void BM_InspectorStream(benchmark::State& state) {
  std::unique_ptr<server::HitboxServer> srv = StartArenaServer(0);
  {
    Client client(srv->InProcessChannel());
    ArenaRun run;
    CreateArena(client, run, state);
    std::unique_ptr<TickStream> stream = client.OpenTickStream("arena");
    TickResult kept;
    const server::InspectorApi api(&srv->service());
    server::InspectorRequest req;
    req.path = "/api/sessions/arena/stream";
    req.peer = "ipv4:127.0.0.1:1";
    server::InspectorAnswer open = api.Handle(req);
    if (open.stream == nullptr) state.SkipWithError(open.body.c_str());
    std::string event;
    uint64_t bytes = 0, events = 0;
    double cpu_ns = 0;
    for (auto _ : state) {
      state.PauseTiming();
      for (int t = 0; t < 3; ++t) {
        if (!stream->TickInto({}, run.Next(true), {}, &kept).ok()) state.SkipWithError("tick");
        run.Advance(kept.results);
      }
      event.clear();  // its capacity is kept, as the HTTP layer's buffer
      state.ResumeTiming();
      timespec a{}, b{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
      if (open.stream != nullptr) open.stream->Event(&event);
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
      cpu_ns += static_cast<double>(b.tv_sec - a.tv_sec) * 1e9 +
                static_cast<double>(b.tv_nsec - a.tv_nsec);
      bytes += event.size();
      ++events;
    }
    (void)stream->Finish();
    const double n = events ? static_cast<double>(events) : 1.0;
    state.counters["event_bytes"] = static_cast<double>(bytes) / n;
    state.counters["inspector_cpu_ms_per_s"] = cpu_ns / n * 10 / 1e6;
  }
  srv->Shutdown(std::chrono::milliseconds(0));
  srv->Wait();
}
BENCHMARK(BM_InspectorStream)->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// A hitbox server in a child process (this program with --serve-arena): it
// prints its port, then answers each line "stats" on its stdin with
// "<allocations> <cpu seconds>" and stops at end of input.

int ServeArena() {
  spdlog::set_level(spdlog::level::warn);
  server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.service.threads = 1;
  if (const char* api = std::getenv("HITBOX_ARENA_RPC_API"); api != nullptr) {
    const std::optional<server::RpcApi> parsed = server::ParseRpcApi(api);
    if (!parsed) {
      std::fprintf(stderr, "--serve-arena: HITBOX_ARENA_RPC_API=%s: callback or cq\n", api);
      return 1;
    }
    options.rpc_api = *parsed;
  }
  const char* record = std::getenv("HITBOX_ARENA_RECORD");
  const char* poll = std::getenv("HITBOX_ARENA_POLL");
  if (record != nullptr) options.service.record_query_ticks = std::atoi(record);
  if (poll != nullptr) options.http_listen = "127.0.0.1:0";
  Result<std::unique_ptr<server::HitboxServer>> srv = server::HitboxServer::Start(options);
  if (!srv.ok()) {
    std::fprintf(stderr, "--serve-arena: %s\n", srv.status().ToString().c_str());
    return 1;
  }
  std::atomic<bool> stop{false};
  std::thread inspector;
  if (poll != nullptr) {
    inspector = std::thread([&stop, port = (*srv)->metrics_port()] {
      httplib::Client http("127.0.0.1", port);
      for (uint64_t n = 0; !stop.load(); ++n) {
        http.Get("/api/sessions/arena/world");
        if (n % 5 == 0) http.Get("/api/sessions/arena/queries?last=4");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  std::printf("%d\n", (*srv)->port());
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "stats") {
      std::printf("%llu %.9f\n", static_cast<unsigned long long>(Allocations()),
                  ProcessCpuSeconds());
      std::fflush(stdout);
    }
  }
  stop.store(true);
  if (inspector.joinable()) inspector.join();
  (*srv)->Shutdown(std::chrono::milliseconds(0));
  (*srv)->Wait();
  return 0;
}

class ServerChild {
 public:
  ServerChild() {
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from[1], 1);
    posix_spawn_file_actions_addclose(&fa, to[1]);
    posix_spawn_file_actions_addclose(&fa, from[0]);
    // The program's own path (readlink, not /proc/self/exe itself: under
    // valgrind that is valgrind's tool binary, which fails to start alone).
    char exe[4096] = "/proc/self/exe";
    const ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (len > 0) exe[len] = '\0';
    char flag[] = "--serve-arena";
    char* argv[] = {exe, flag, nullptr};
    const int rc = posix_spawn(&pid_, exe, &fa, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(to[0]);
    close(from[1]);
    in_ = fdopen(to[1], "w");
    out_ = fdopen(from[0], "r");
    if (rc != 0) {
      pid_ = 0;
      return;
    }
    if (std::fscanf(out_, "%d", &port_) != 1) port_ = 0;
  }
  ~ServerChild() {
    if (in_ != nullptr) std::fclose(in_);
    if (out_ != nullptr) std::fclose(out_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  int port() const { return port_; }
  // The child's allocations and CPU seconds so far.
  bool Stats(uint64_t* allocations, double* cpu) {
    std::fputs("stats\n", in_);
    std::fflush(in_);
    unsigned long long a = 0;
    if (std::fscanf(out_, "%llu %lf", &a, cpu) != 2) return false;
    *allocations = a;
    return true;
  }

 private:
  pid_t pid_ = 0;
  int port_ = 0;
  FILE* in_ = nullptr;
  FILE* out_ = nullptr;
};

// The in-process CPU seconds and allocations of one arena tick, averaged over
// `ticks` ticks after a warm-up (from the same start as the service's ticks:
// its answers are bit-identical, so the players walk the same way).
bool InProcessCost(int ticks, double* cpu, double* allocs) {
  constexpr int kWarmup = 20;
  ArenaRun run;
  InProcessTick t;
  if (!t.set.AddBulk(run.arena.colliders).ok()) return false;
  double total_cpu = 0;
  uint64_t total_allocs = 0;
  for (int i = 0; i < kWarmup + ticks; ++i) {
    const std::vector<Query> queries = run.Next(true);
    const double c0 = ThreadCpuSeconds();
    const uint64_t a0 = Allocations();
    if (!t.Run(run, queries, true)) return false;
    if (i >= kWarmup) {
      total_cpu += ThreadCpuSeconds() - c0;
      total_allocs += Allocations() - a0;
    }
  }
  *cpu = total_cpu / ticks;
  *allocs = static_cast<double>(total_allocs) / ticks;
  return true;
}

// The arena's ticks through the Tick stream of a hitboxd child, as a game
// sends them; counts the game's own work (making queries, reading
// positions) apart from the client's.
class ServiceTicks {
 public:
  ServiceTicks(bool by_id, bool buffers, bool packed = true, bool blocking = false)
      : buffers_(buffers) {
    if (child_.port() == 0) {
      error_ = "could not start the server child";
      return;
    }
    ClientOptions options;
    // Under valgrind the setup is slow and the first connection attempt may
    // fail: wait for it rather than fail fast.
    options.default_timeout = std::chrono::minutes(10);
    options.wait_for_ready = true;
    client_ = std::make_unique<Client>("127.0.0.1:" + std::to_string(child_.port()), options);
    RpcStatus st = client_->CreateSession("arena").status();
    if (st.ok()) st = client_->AddColliders("arena", run_.arena.colliders).status();
    if (!st.ok()) {
      error_ = "arena: " + st.ToString();
      return;
    }
    if (by_id) sweeps_ = run_.SweepsById();
    TickStreamOptions tick_options;
    tick_options.packed = packed;
    tick_options.blocking = blocking;
    stream_ = client_->OpenTickStream("arena", tick_options);
  }
  ~ServiceTicks() {
    if (stream_) (void)stream_->Finish();
  }
  const std::string& error() const { return error_; }
  ServerChild& child() { return child_; }

  // One tick; false (error() says why) when it failed.
  bool Tick() {
    if (!error_.empty()) return false;
    double c0 = ThreadCpuSeconds();
    uint64_t a0 = Allocations();
    const std::vector<Query> queries = run_.Next(true);
    game_cpu_ += ThreadCpuSeconds() - c0;
    game_allocs_ += Allocations() - a0;
    RpcStatus st;
    RpcResult<TickResult> owned = RpcStatus(RpcCode::kInternal, "unset");
    const std::vector<QueryResult>* results = &kept_.results;
    if (buffers_) {
      st = stream_->TickInto({}, queries, sweeps_, &kept_);
    } else {
      owned = stream_->Tick({}, queries, sweeps_).get();
      if (owned.ok()) {
        results = &owned->results;
      } else {
        st = owned.status();
      }
    }
    if (!st.ok()) {
      error_ = st.ToString();
      return false;
    }
    c0 = ThreadCpuSeconds();
    a0 = Allocations();
    run_.Advance(*results);
    game_cpu_ += ThreadCpuSeconds() - c0;
    game_allocs_ += Allocations() - a0;
    return true;
  }
  // Starts counting the client's CPU and allocations (less the game's) anew.
  void StartCounting() {
    game_cpu_ = 0;
    game_allocs_ = 0;
    cpu0_ = ProcessCpuSeconds();
    allocs0_ = Allocations();
  }
  double client_cpu() const { return ProcessCpuSeconds() - cpu0_ - game_cpu_; }
  uint64_t client_allocs() const { return Allocations() - allocs0_ - game_allocs_; }

 private:
  ServerChild child_;
  std::unique_ptr<Client> client_;
  ArenaRun run_;
  std::vector<ShapeFromCollider> sweeps_;
  std::unique_ptr<TickStream> stream_;
  const bool buffers_;
  TickResult kept_;  // buffers: the game's own, reused every tick
  std::string error_;
  double game_cpu_ = 0;
  uint64_t game_allocs_ = 0;
  double cpu0_ = 0;
  uint64_t allocs0_ = 0;
};

void BM_ArenaTickService(benchmark::State& state) {
  const bool by_id = state.range(0) != 0;
  const bool buffers = state.range(1) != 0;
  const bool packed = state.range(2) != 0;    // TickStreamOptions::packed
  const bool blocking = state.range(3) != 0;  // TickStreamOptions::blocking
  spdlog::set_level(spdlog::level::warn);
  constexpr int kInProcessTicks = 300, kWarmup = 20;
  double inproc_cpu = 0, inproc_allocs = 0;
  if (!InProcessCost(kInProcessTicks, &inproc_cpu, &inproc_allocs)) {
    state.SkipWithError("arena");
    return;
  }
  ServiceTicks s(by_id, buffers, packed, blocking);
  bool failed = !s.error().empty();
  for (int i = 0; i < kWarmup && !failed; ++i) failed = !s.Tick();
  if (failed) {
    state.SkipWithError(s.error().c_str());
    return;
  }
  uint64_t server_allocs0 = 0, server_allocs1 = 0;
  double server_cpu0 = 0, server_cpu1 = 0;
  if (!s.child().Stats(&server_allocs0, &server_cpu0)) state.SkipWithError("server stats");
  s.StartCounting();
  for (auto _ : state) {
    if (failed) break;
    if (!s.Tick()) {
      state.SkipWithError(s.error().c_str());
      failed = true;
    }
  }
  const double client_cpu = s.client_cpu();
  const uint64_t client_allocs = s.client_allocs();
  if (!s.child().Stats(&server_allocs1, &server_cpu1)) state.SkipWithError("server stats");

  const double ticks = static_cast<double>(std::max<int64_t>(1, state.iterations()));
  const double inproc_us = inproc_cpu * 1e6;
  const double server_us = (server_cpu1 - server_cpu0) / ticks * 1e6;
  state.counters["server_cpu_us"] = server_us;
  state.counters["client_cpu_us"] = client_cpu / ticks * 1e6;
  state.counters["server_allocs"] = static_cast<double>(server_allocs1 - server_allocs0) / ticks;
  state.counters["client_allocs"] = static_cast<double>(client_allocs) / ticks;
  state.counters["inproc_cpu_us"] = inproc_us;
  state.counters["inproc_allocs"] = inproc_allocs;
  state.counters["server_over_inproc"] = server_us / inproc_us;
}
BENCHMARK(BM_ArenaTickService)
    ->ArgNames({"by_id", "buffers", "packed", "blocking"})
    ->Args({0, 0, 1, 0})
    ->Args({1, 0, 1, 0})
    ->Args({1, 1, 1, 0})
    ->Args({1, 1, 0, 0})
    ->Args({1, 1, 1, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// --service-ticks N: 20 warm-up ticks, then N ticks through a hitboxd child
// (sweeps by id, answers into kept buffers), with no in-process part and no
// timing loop, so that callgrind (--trace-children=yes) counts a fixed
// amount of work; two runs with different N give the instructions per tick
// of each process. Prints the per-tick CPU and allocations. `packed` false
// (--message-form): one message per query and answer, as before the packed
// form; `blocking` (--blocking): TickStreamOptions::blocking.
int ServiceTicksOnly(int n, bool packed, bool blocking) {
  spdlog::set_level(spdlog::level::warn);
  ServiceTicks s(/*by_id=*/true, /*buffers=*/true, packed, blocking);
  for (int i = 0; i < 20; ++i) {
    if (!s.Tick()) break;
  }
  uint64_t a0 = 0, a1 = 0;
  double c0 = 0, c1 = 0;
  if (!s.child().Stats(&a0, &c0)) return 1;
  s.StartCounting();
  for (int i = 0; i < n; ++i) {
    if (!s.Tick()) break;
  }
  if (!s.error().empty()) {
    std::fprintf(stderr, "--service-ticks: %s\n", s.error().c_str());
    return 1;
  }
  const double client_cpu = s.client_cpu();
  const uint64_t client_allocs = s.client_allocs();
  if (!s.child().Stats(&a1, &c1)) return 1;
  std::printf("ticks %d server_cpu_us %.1f client_cpu_us %.1f server_allocs %.2f client_allocs %.2f\n",
              n, (c1 - c0) / n * 1e6, client_cpu / n * 1e6, static_cast<double>(a1 - a0) / n,
              static_cast<double>(client_allocs) / n);
  return 0;
}

// --move-digest N: the arena's first N ticks of moves in-process (as
// BM_ArenaMovesInProcess), every field of every move's answer folded into
// one FNV-1a digest and printed: two builds that print the same digest
// moved every player the same to the bit.
int MoveDigest(int n) {
  ArenaRun run;
  InProcessTick t;
  if (!t.set.AddBulk(run.arena.colliders).ok()) return 1;
  uint64_t digest = 0xcbf29ce484222325ull;
  const auto fold = [&digest](const void* p, size_t size) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < size; ++i) digest = (digest ^ b[i]) * 0x100000001b3ull;
  };
  const auto fold_vec = [&fold](const Vec3& v) {
    const double xyz[3] = {v.x, v.y, v.z};
    fold(xyz, sizeof(xyz));
  };
  uint64_t moves = 0, contacts = 0, stepped = 0, blocked = 0;
  for (int i = 0; i < n; ++i) {
    if (!t.Run(run, run.Next(true, false), true)) return 1;
    for (size_t p = 0; p < run.positions.size(); ++p) {
      const MoveResult& m = *t.results[p].move;
      fold_vec(m.position);
      fold_vec(m.displacement);
      for (const MoveContact& c : m.contacts) {
        fold(&c.id, sizeof(c.id));
        fold(&c.sub_shape, sizeof(c.sub_shape));
        fold_vec(c.normal);
        fold_vec(c.point);
      }
      const uint8_t flags[4] = {m.on_ground, m.stepped, m.blocked, 0};
      fold(flags, sizeof(flags));
      fold(&m.ground_id, sizeof(m.ground_id));
      fold(&m.ground_sub_shape, sizeof(m.ground_sub_shape));
      fold_vec(m.ground_normal);
      ++moves;
      contacts += m.contacts.size();
      stepped += m.stepped;
      blocked += m.blocked;
    }
  }
  std::printf("ticks %d moves %llu contacts %llu stepped %llu blocked %llu digest %016llx\n", n,
              static_cast<unsigned long long>(moves), static_cast<unsigned long long>(contacts),
              static_cast<unsigned long long>(stepped), static_cast<unsigned long long>(blocked),
              static_cast<unsigned long long>(digest));
  return 0;
}

}  // namespace
}  // namespace hitbox

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--serve-arena") == 0) return hitbox::ServeArena();
  if (argc > 2 && std::strcmp(argv[1], "--move-digest") == 0) {
    return hitbox::MoveDigest(std::atoi(argv[2]));
  }
  if (argc > 2 && std::strcmp(argv[1], "--service-ticks") == 0) {
    bool message_form = false, blocking = false;
    for (int i = 3; i < argc; ++i) {
      if (std::strcmp(argv[i], "--message-form") == 0) {
        message_form = true;
      } else if (std::strcmp(argv[i], "--blocking") == 0) {
        blocking = true;
      } else {
        std::fprintf(stderr, "--service-ticks N [--message-form] [--blocking]: unknown %s\n",
                     argv[i]);
        return 2;
      }
    }
    return hitbox::ServiceTicksOnly(std::atoi(argv[2]), !message_form, blocking);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
