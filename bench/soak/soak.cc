// hitbox-soak: drives a real hitboxd (a child process) and checks what issue
// 28 promises about untrusted change batches and memory; its modes, checks
// and exit status are in docs/benchmarks.md ("hitbox-soak").
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "hitbox/v1/hitbox.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
namespace v1 = hitbox::v1;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// VmRSS and VmHWM (peak) of a process, bytes; 0 when unreadable.
struct Rss {
  uint64_t now = 0, peak = 0;
};
Rss ReadRss(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  Rss r;
  std::string line;
  while (std::getline(in, line)) {
    uint64_t kb = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %lu kB", &kb) == 1) r.now = kb << 10;
    if (std::sscanf(line.c_str(), "VmHWM: %lu kB", &kb) == 1) r.peak = kb << 10;
  }
  return r;
}
double Mb(uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// hitboxd as a child process on a free loopback port; killed on destruction.
class Hitboxd {
 public:
  Hitboxd(const std::string& binary, std::vector<std::string> args) {
    char dir_template[] = "/tmp/hitbox-soak-XXXXXX";
    dir_ = mkdtemp(dir_template);
    const std::string port_file = dir_ + "/port";
    log_ = dir_ + "/hitboxd.log";
    std::vector<std::string> argv = {binary, "--listen", "127.0.0.1:0", "--port-file", port_file,
                                     "--log-level", "warn"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = fork();
    if (pid_ == 0) {
      FILE* out = std::freopen(log_.c_str(), "a", stdout);
      (void)out;
      dup2(fileno(stdout), 2);
      std::vector<char*> cargv;
      for (std::string& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    const auto deadline = Clock::now() + 60s;
    while (Clock::now() < deadline) {
      std::ifstream in(port_file);
      int port = 0;
      if (in >> port && port > 0) {
        address_ = "127.0.0.1:" + std::to_string(port);
        break;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
  }
  ~Hitboxd() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::remove((dir_ + "/port").c_str());
    std::remove(log_.c_str());
    rmdir(dir_.c_str());
  }
  bool ok() const { return pid_ > 0 && !address_.empty(); }
  pid_t pid() const { return pid_; }
  const std::string& address() const { return address_; }
  std::unique_ptr<v1::Hitbox::Stub> Stub() const {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    return v1::Hitbox::NewStub(
        grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), args));
  }
  std::string LogTail() const {
    std::ifstream in(log_);
    std::stringstream s;
    s << in.rdbuf();
    const std::string t = s.str();
    return t.size() > 4000 ? t.substr(t.size() - 4000) : t;
  }

 private:
  std::string dir_, log_, address_;
  pid_t pid_ = -1;
};

void SetVec(v1::Vec3* v, double x, double y, double z) {
  v->set_x(x);
  v->set_y(y);
  v->set_z(z);
}

// `tris` copies of one triangle.
v1::Collider IdenticalMesh(uint64_t id, int tris, double x) {
  v1::Collider c;
  c.set_id(id);
  SetVec(c.mutable_pose()->mutable_position(), x, 0, 0);
  v1::TriangleMesh* m = c.mutable_shape()->mutable_mesh();
  SetVec(m->add_vertices(), 0, 0, 0);
  SetVec(m->add_vertices(), 1, 0, 0);
  SetVec(m->add_vertices(), 0, 0, 1);
  m->mutable_indices()->Resize(3 * tris, 0);
  for (int i = 0; i < tris; ++i) {
    m->set_indices(3 * i + 1, 1);
    m->set_indices(3 * i + 2, 2);
  }
  return c;
}

// A side x side grid terrain of float32 coordinates (like a glTF level).
v1::Collider GridMesh(uint64_t id, int side, double x, uint32_t seed) {
  v1::Collider c;
  c.set_id(id);
  SetVec(c.mutable_pose()->mutable_position(), x, 0, 0);
  v1::TriangleMesh* m = c.mutable_shape()->mutable_mesh();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> h(0.0f, 0.7f);
  for (int r = 0; r < side; ++r) {
    for (int k = 0; k < side; ++k) {
      SetVec(m->add_vertices(), static_cast<float>(k) * 0.5f, h(rng), static_cast<float>(r) * 0.5f);
    }
  }
  for (int r = 0; r + 1 < side; ++r) {
    for (int k = 0; k + 1 < side; ++k) {
      const uint32_t a = static_cast<uint32_t>(r * side + k), b = a + 1,
                     d = a + static_cast<uint32_t>(side), e = d + 1;
      for (uint32_t i : {a, d, b, b, d, e}) m->add_indices(i);
    }
  }
  return c;
}

v1::Collider Primitive(uint64_t id, std::mt19937* rng, double spread) {
  std::uniform_real_distribution<double> u(-spread, spread), s(0.2, 2.0);
  v1::Collider c;
  c.set_id(id);
  SetVec(c.mutable_pose()->mutable_position(), u(*rng), u(*rng) * 0.1, u(*rng));
  switch ((*rng)() % 4) {
    case 0: c.mutable_shape()->mutable_sphere()->set_radius(s(*rng)); break;
    case 1: SetVec(c.mutable_shape()->mutable_box()->mutable_half_extents(), s(*rng), s(*rng), s(*rng)); break;
    case 2: {
      v1::ConvexHull* h = c.mutable_shape()->mutable_convex_hull();
      std::normal_distribution<double> g(0, 1);
      for (int i = 0; i < 24; ++i) {
        const double x = g(*rng), y = g(*rng), z = g(*rng), n = std::sqrt(x * x + y * y + z * z);
        SetVec(h->add_points(), x / n, y / n, z / n);
      }
      break;
    }
    default:
      c.mutable_shape()->mutable_capsule()->set_radius(s(*rng));
      c.mutable_shape()->mutable_capsule()->set_half_height(s(*rng));
  }
  c.set_layer(static_cast<uint32_t>((*rng)() % 4));
  return c;
}

grpc::Status Call(v1::Hitbox::Stub* stub, const v1::ApplyChangesRequest& req,
                  std::chrono::seconds timeout = 120s) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::ApplyChangesResponse resp;
  return stub->ApplyChanges(&ctx, req, &resp);
}
// `idle_timeout_ms` 0: the server's (the soak's server never expires).
grpc::Status Create(v1::Hitbox::Stub* stub, const std::string& id, const std::string& map = {},
                    uint64_t idle_timeout_ms = 0) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  v1::CreateSessionRequest req;
  req.set_session_id(id);
  req.set_map_id(map);
  req.mutable_limits()->set_idle_timeout_ms(idle_timeout_ms);
  v1::SessionInfo info;
  return stub->CreateSession(&ctx, req, &info);
}
grpc::Status Delete(v1::Hitbox::Stub* stub, const std::string& id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  v1::DeleteSessionRequest req;
  req.set_session_id(id);
  v1::DeleteSessionResponse resp;
  return stub->DeleteSession(&ctx, req, &resp);
}
const char* CodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    default: return "OTHER";
  }
}

// RSS of `pid` once it has settled (the trimmer runs ~0.1 s after a big
// free): the lowest reading over `wait`, returning early once under `goal`.
uint64_t SettledRss(pid_t pid, uint64_t goal, Clock::duration wait = 3s) {
  const auto until = Clock::now() + wait;
  uint64_t best = ReadRss(pid).now;
  while (best > goal && Clock::now() < until) {
    std::this_thread::sleep_for(50ms);
    best = std::min(best, ReadRss(pid).now);
  }
  return best;
}

// --------------------------------------------------------------------------
// guard

int Guard(const std::string& binary, bool check_times, int rounds) {
  bool ok = true;
  const auto expect = [&](bool cond, const std::string& what) {
    std::printf("  %s: %s\n", cond ? "ok  " : "FAIL", what.c_str());
    ok = ok && cond;
  };
  v1::ApplyChangesRequest batch;
  batch.set_session_id("big");
  for (uint64_t i = 1; i <= 20; ++i) {
    *batch.add_changes()->mutable_add() = IdenticalMesh(i, 1 << 20, 10.0 * static_cast<double>(i));
  }
  std::printf("the batch: 20 meshes of 1048576 identical triangles, %.1f MB on the wire\n",
              Mb(batch.ByteSizeLong()));
  const std::vector<std::string> no_work_cap = {"--max-build-work-per-message", "1099511627776",
                                                "--max-message-bytes", "134217728"};
  {  // 1. Over --max-memory 128M.
    std::vector<std::string> args = no_work_cap;
    args.insert(args.end(), {"--max-memory", "128M"});
    Hitboxd d(binary, args);
    if (!d.ok()) return std::fprintf(stderr, "hitboxd did not start\n"), 2;
    auto stub = d.Stub();
    if (!Create(stub.get(), "big").ok()) return 2;
    const uint64_t start = ReadRss(d.pid()).now;
    const auto t0 = Clock::now();
    const grpc::Status st = Call(stub.get(), batch);
    const double took = Seconds(Clock::now() - t0);
    const Rss after = ReadRss(d.pid());
    const uint64_t settled = SettledRss(d.pid(), start + (16 << 20));
    std::printf("1. under --max-memory 128M: %s in %.2f s (\"%s\"); hitboxd RSS %.0f MB before, "
                "peak %.0f MB, %.0f MB after, %.0f MB settled\n",
                CodeName(st.error_code()), took, st.error_message().c_str(), Mb(start),
                Mb(after.peak), Mb(after.now), Mb(settled));
    expect(st.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED, "refused RESOURCE_EXHAUSTED");
    expect(st.error_message().find("--max-memory") != std::string::npos, "naming --max-memory");
    expect(after.peak < (512ull << 20), "peak RSS under 512 MB");
    if (check_times) expect(took < 5.0, "within 5 s");
  }
  {  // 2. A bad last entry, no memory cap.
    Hitboxd d(binary, no_work_cap);
    if (!d.ok()) return std::fprintf(stderr, "hitboxd did not start\n"), 2;
    auto stub = d.Stub();
    if (!Create(stub.get(), "big").ok()) return 2;
    v1::ApplyChangesRequest bad = batch;
    v1::Collider* nan = bad.add_changes()->mutable_add();
    nan->set_id(999);
    nan->mutable_shape()->mutable_sphere()->set_radius(std::nan(""));
    const uint64_t start = ReadRss(d.pid()).now;
    const auto t0 = Clock::now();
    const grpc::Status st = Call(stub.get(), bad);
    const double took = Seconds(Clock::now() - t0);
    const Rss after = ReadRss(d.pid());
    const uint64_t settled = SettledRss(d.pid(), start + (16 << 20));
    std::printf("2. bad last entry (sphere radius NaN): %s in %.2f s (\"%s\"); hitboxd RSS %.0f MB "
                "before, peak %.0f MB, %.0f MB settled\n",
                CodeName(st.error_code()), took, st.error_message().c_str(), Mb(start),
                Mb(after.peak), Mb(settled));
    expect(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT, "refused INVALID_ARGUMENT");
    expect(st.error_message().find("changes[20]") != std::string::npos, "naming changes[20]");
    expect(settled < start + (150ull << 20), "RSS back within 150 MB of the start");
    if (check_times) expect(took < 3.0, "within 3 s");
  }
  {  // 3. Rounds of create / load big meshes / delete.
    Hitboxd d(binary, {});
    if (!d.ok()) return std::fprintf(stderr, "hitboxd did not start\n"), 2;
    auto stub = d.Stub();
    const uint64_t start = ReadRss(d.pid()).now;
    std::printf("3. %d rounds of create / load 8 meshes of 524288 triangles / delete; RSS at "
                "start %.0f MB\n",
                rounds, Mb(start));
    uint64_t last = 0, most = 0;
    for (int r = 0; r < rounds; ++r) {
      const std::string id = "round" + std::to_string(r);
      if (!Create(stub.get(), id).ok()) return 2;
      bool loaded = true;
      for (int b = 0; b < 4; ++b) {  // 2 meshes a batch: 1M triangles of build work
        v1::ApplyChangesRequest req;
        req.set_session_id(id);
        for (int k = 0; k < 2; ++k) {
          const uint64_t cid = static_cast<uint64_t>(2 * b + k + 1);
          *req.add_changes()->mutable_add() =
              GridMesh(cid, 513, 300.0 * static_cast<double>(cid), static_cast<uint32_t>(r * 8 + cid));
        }
        const grpc::Status st = Call(stub.get(), req);
        if (!st.ok()) {
          std::printf("   round %d batch %d: %s %s\n", r, b, CodeName(st.error_code()),
                      st.error_message().c_str());
          loaded = false;
        }
      }
      const uint64_t loaded_rss = ReadRss(d.pid()).now;
      if (!Delete(stub.get(), id).ok()) return 2;
      last = SettledRss(d.pid(), start + (48ull << 20));
      most = std::max(most, loaded_rss);
      std::printf("   round %d: loaded %s, RSS %.0f MB loaded, %.0f MB after delete\n", r,
                  loaded ? "ok" : "FAILED", Mb(loaded_rss), Mb(last));
      ok = ok && loaded;
    }
    expect(last < start + (150ull << 20),
           "RSS after the rounds within 150 MB of the start (+" +
               std::to_string(static_cast<int>(Mb(last) - Mb(start))) + " MB)");
  }
  std::printf("%s\n", ok ? "guard: all checks held" : "guard: FAILED");
  return ok ? 0 : 1;
}

// --------------------------------------------------------------------------
// soak

struct Counts {
  std::map<std::string, uint64_t> n;
  void Add(const std::string& what, grpc::StatusCode code = grpc::StatusCode::OK) {
    ++n[what + (code == grpc::StatusCode::OK ? "" : std::string(" ") + CodeName(code))];
  }
};

// The probe: a fixed world and fixed queries whose answers must never change.
struct Probe {
  v1::QueryRequest queries;
  std::string answers;  // the serialized results at the start
};

Probe MakeProbe(v1::Hitbox::Stub* stub) {
  std::mt19937 rng(42);
  Create(stub, "probe");
  v1::ApplyChangesRequest world;
  world.set_session_id("probe");
  for (uint64_t i = 1; i <= 300; ++i) *world.add_changes()->mutable_add() = Primitive(i, &rng, 40);
  *world.add_changes()->mutable_add() = GridMesh(1000, 101, -25, 7);
  world.mutable_changes(300)->mutable_add()->mutable_pose()->mutable_position()->set_y(-3);
  Call(stub, world);
  Probe p;
  p.queries.set_session_id("probe");
  std::uniform_real_distribution<double> u(-40, 40);
  for (int i = 0; i < 64; ++i) {
    v1::Query* q = p.queries.add_queries();
    q->set_tag(static_cast<uint64_t>(i));
    switch (i % 3) {
      case 0: {
        v1::RayQuery* r = q->mutable_raycast();
        SetVec(r->mutable_origin(), u(rng), 20, u(rng));
        SetVec(r->mutable_translation(), u(rng), -40, u(rng));
        r->set_all_hits(true);
        break;
      }
      case 1: {
        v1::OverlapQuery* o = q->mutable_overlap();
        o->mutable_shape()->mutable_sphere()->set_radius(3);
        SetVec(o->mutable_pose()->mutable_position(), u(rng), 0, u(rng));
        o->set_want_contact(true);
        break;
      }
      default: {
        v1::CastQuery* c = q->mutable_cast();
        c->mutable_shape()->mutable_capsule()->set_radius(0.5);
        c->mutable_shape()->mutable_capsule()->set_half_height(0.9);
        SetVec(c->mutable_pose()->mutable_position(), u(rng), 5, u(rng));
        SetVec(c->mutable_translation(), u(rng) * 0.5, -10, u(rng) * 0.5);
      }
    }
  }
  grpc::ClientContext ctx;
  v1::QueryResponse resp;
  stub->Query(&ctx, p.queries, &resp);
  for (const v1::QueryResult& r : resp.results()) p.answers += r.SerializeAsString();
  return p;
}

bool ProbeHolds(v1::Hitbox::Stub* stub, const Probe& p) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  v1::QueryResponse resp;
  if (const grpc::Status st = stub->Query(&ctx, p.queries, &resp); !st.ok()) {
    std::printf("probe query failed: %s %s\n", CodeName(st.error_code()),
                st.error_message().c_str());
    return false;
  }
  std::string got;
  for (const v1::QueryResult& r : resp.results()) got += r.SerializeAsString();
  return got == p.answers;
}

uint64_t SessionsMemory(v1::Hitbox::Stub* stub, size_t* count) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  v1::ListSessionsResponse resp;
  uint64_t sum = 0;
  if (stub->ListSessions(&ctx, v1::ListSessionsRequest(), &resp).ok()) {
    for (const v1::SessionInfo& s : resp.sessions()) sum += s.memory_bytes();
  }
  *count = static_cast<size_t>(resp.sessions_size());
  return sum;
}

int Soak(const std::string& binary, double duration_s, double sample_s, const std::string& maps) {
  // Sessions of the mix ask for a 20 s idle timeout; the probe keeps the
  // server's (none), so a slow stretch can never expire it.
  std::vector<std::string> args = {"--max-memory", "1G", "--session-idle-timeout", "0"};
  if (!maps.empty()) args.insert(args.end(), {"--maps", maps});
  Hitboxd d(binary, args);
  if (!d.ok()) return std::fprintf(stderr, "hitboxd did not start\n"), 2;
  auto stub = d.Stub();
  const uint64_t idle = ReadRss(d.pid()).now;
  const Probe probe = MakeProbe(stub.get());
  std::string map_id;
  {
    grpc::ClientContext ctx;
    v1::ListMapsResponse resp;
    if (stub->ListMaps(&ctx, v1::ListMapsRequest(), &resp).ok() && resp.maps_size() > 0) {
      map_id = resp.maps(0).map_id();
    }
  }
  std::printf("soak: %.0f s against hitboxd (pid %d, --max-memory 1G, idle timeout 20 s%s); "
              "idle RSS %.0f MB; bound: RSS <= idle + 2 x sum(memory_bytes) + 512 MiB\n",
              duration_s, d.pid(), map_id.empty() ? "" : (", map " + map_id).c_str(), Mb(idle));
  std::printf("sample  t_s  rss_mb  sessions  sessions_mb  bound_mb\n");
  std::mt19937 rng(1234);
  Counts counts;
  std::vector<std::string> live;
  uint64_t next = 0, probe_checks = 0, probe_fails = 0, bound_fails = 0, samples = 0;
  uint64_t worst_rss = 0;
  const auto start = Clock::now();
  auto next_sample = start;
  auto next_probe = start;
  std::map<std::string, uint64_t> ticks;  // the next tick of each live session
  while (Seconds(Clock::now() - start) < duration_s) {
    if (Clock::now() >= next_sample) {
      size_t n = 0;
      const uint64_t mem = SessionsMemory(stub.get(), &n);
      const uint64_t rss = ReadRss(d.pid()).now;
      const uint64_t bound = idle + 2 * mem + (512ull << 20);
      worst_rss = std::max(worst_rss, rss);
      const bool held = rss <= bound;
      bound_fails += held ? 0 : 1;
      std::printf("sample %5.0f  %6.0f  %8zu  %11.1f  %8.0f%s\n", Seconds(Clock::now() - start),
                  Mb(rss), n, Mb(mem), Mb(bound), held ? "" : "  OVER");
      std::fflush(stdout);
      ++samples;
      next_sample += std::chrono::milliseconds(static_cast<int64_t>(sample_s * 1000));
    }
    if (Clock::now() >= next_probe) {  // also keeps the probe session from expiring
      ++probe_checks;
      if (!ProbeHolds(stub.get(), probe)) {
        ++probe_fails;
        std::printf("probe WRONG at %.0f s\n", Seconds(Clock::now() - start));
      }
      next_probe = Clock::now() + 5s;
    }
    const int action = static_cast<int>(rng() % 100);
    const std::string pick = live.empty() ? std::string() : live[rng() % live.size()];
    if (action < 10 || live.empty()) {  // create (sometimes on the map), with a world
      const std::string id = "s" + std::to_string(next++);
      const bool on_map = !map_id.empty() && rng() % 3 == 0;
      grpc::Status st = Create(stub.get(), id, on_map ? map_id : "", 20'000);
      counts.Add(on_map ? "create on map" : "create", st.error_code());
      if (!st.ok()) continue;
      live.push_back(id);
      v1::ApplyChangesRequest req;
      req.set_session_id(id);
      for (uint64_t i = 1; i <= 200; ++i) {
        *req.add_changes()->mutable_add() = Primitive(1'000'000 + i, &rng, 60);
      }
      req.set_tick(1);
      ticks[id] = 2;
      counts.Add("populate", Call(stub.get(), req).error_code());
    } else if (action < 18) {  // delete
      counts.Add("delete", Delete(stub.get(), pick).error_code());
      live.erase(std::find(live.begin(), live.end(), pick));
    } else if (action < 26) {  // a big mesh batch: accepted, or refused by a cap
      v1::ApplyChangesRequest req;
      req.set_session_id(pick);
      const int meshes = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < meshes; ++k) {
        *req.add_changes()->mutable_add() =
            GridMesh(2'000'000 + next++, 300 + static_cast<int>(rng() % 300), 500.0 + 200.0 * k,
                     static_cast<uint32_t>(rng()));
      }
      counts.Add("big batch", Call(stub.get(), req).error_code());
    } else if (action < 32) {  // a bad batch: big meshes, a bad last entry
      v1::ApplyChangesRequest req;
      req.set_session_id(pick);
      for (int k = 0; k < 3; ++k) {
        *req.add_changes()->mutable_add() = IdenticalMesh(3'000'000 + next++, 1 << 18, 0);
      }
      v1::Collider* bad = req.add_changes()->mutable_add();
      bad->set_id(4'000'000 + next++);
      if (rng() % 2 == 0) {
        bad->mutable_shape()->mutable_sphere()->set_radius(std::nan(""));
      } else {
        *bad = IdenticalMesh(bad->id(), 10, 0);
        bad->mutable_shape()->mutable_mesh()->set_indices(5, 99);
      }
      counts.Add("bad batch", Call(stub.get(), req).error_code());
    } else if (action < 38) {  // over the build-work budget
      v1::ApplyChangesRequest req;
      req.set_session_id(pick);
      for (int k = 0; k < 5; ++k) {
        *req.add_changes()->mutable_add() = IdenticalMesh(5'000'000 + next++, 1 << 20, 0);
      }
      counts.Add("over-budget batch", Call(stub.get(), req).error_code());
    } else if (action < 65) {  // a tick stream: moves and queries
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + 30s);
      auto stream = stub->Tick(&ctx);
      bool good = true;
      for (int t = 0; t < 20 && good; ++t) {
        v1::TickRequest tick;
        tick.set_session_id(pick);
        tick.set_tick(ticks[pick]++);
        for (int k = 0; k < 8; ++k) {
          v1::ColliderChange* c = tick.add_changes();
          c->mutable_move()->set_id(1'000'001 + rng() % 200);
          std::uniform_real_distribution<double> u(-60, 60);
          SetVec(c->mutable_move()->mutable_pose()->mutable_position(), u(rng), 0, u(rng));
        }
        for (int k = 0; k < 8; ++k) {
          v1::RayQuery* r = tick.add_queries()->mutable_raycast();
          SetVec(r->mutable_origin(), 0, 10, 0);
          SetVec(r->mutable_translation(), static_cast<double>(k) * 5 - 20, -20, 3);
        }
        v1::TickResponse resp;
        good = stream->Write(tick) && stream->Read(&resp);
        counts.Add(resp.has_error() ? "tick (refused)" : "tick");
      }
      stream->WritesDone();
      const grpc::Status st = stream->Finish();
      counts.Add("tick stream", st.error_code());
    } else if (action < 85) {  // queries, present and rewound
      v1::QueryRequest req;
      req.set_session_id(pick);
      const bool rewind = rng() % 2 == 0;
      for (int k = 0; k < 32; ++k) {
        v1::Query* q = req.add_queries();
        v1::OverlapQuery* o = q->mutable_overlap();
        o->mutable_shape()->mutable_sphere()->set_radius(4);
        std::uniform_real_distribution<double> u(-60, 60);
        SetVec(o->mutable_pose()->mutable_position(), u(rng), 0, u(rng));
        if (rewind && ticks[pick] > 3) q->set_at_tick(static_cast<double>(ticks[pick] - 2) - 0.5);
      }
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + 30s);
      v1::QueryResponse resp;
      counts.Add(rewind ? "rewound query" : "query", stub->Query(&ctx, req, &resp).error_code());
    } else if (action < 90 && !map_id.empty()) {  // maps
      grpc::ClientContext ctx;
      v1::GetMapRequest req;
      req.set_map_id(map_id);
      v1::MapInfo info;
      counts.Add("get map", stub->GetMap(&ctx, req, &info).error_code());
    } else {  // remove some of a session's colliders (frees shapes)
      v1::ApplyChangesRequest req;
      req.set_session_id(pick);
      for (uint64_t i = 1; i <= 20; ++i) req.add_changes()->set_remove(1'000'000 + rng() % 200 + 1);
      counts.Add("removes", Call(stub.get(), req).error_code());
    }
    // Sessions may have expired (idle timeout 20 s): forget those.
    if (rng() % 50 == 0) {
      grpc::ClientContext ctx;
      v1::ListSessionsResponse resp;
      if (stub->ListSessions(&ctx, v1::ListSessionsRequest(), &resp).ok()) {
        std::vector<std::string> still;
        for (const v1::SessionInfo& s : resp.sessions()) {
          if (std::find(live.begin(), live.end(), s.session_id()) != live.end()) {
            still.push_back(s.session_id());
          }
        }
        counts.n["expired (seen)"] += live.size() - still.size();
        live = still;
      }
    }
  }
  ++probe_checks;
  if (!ProbeHolds(stub.get(), probe)) ++probe_fails;
  const bool alive = kill(d.pid(), 0) == 0;
  std::printf("counts:\n");
  for (const auto& [what, n] : counts.n) std::printf("  %-36s %lu\n", what.c_str(), n);
  std::printf("samples %lu, over the bound %lu; probe checks %lu, wrong %lu; worst RSS %.0f MB; "
              "hitboxd %s\n",
              samples, bound_fails, probe_checks, probe_fails, Mb(worst_rss),
              alive ? "alive" : "DEAD");
  if (!alive) std::printf("%s\n", d.LogTail().c_str());
  const bool ok = alive && bound_fails == 0 && probe_fails == 0;
  std::printf("%s\n", ok ? "soak: all checks held" : "soak: FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  std::string binary, maps;
  double duration = 60, sample = 5;
  bool check_times = false;
  int rounds = 6;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--hitboxd") binary = value();
    else if (a == "--duration") duration = std::atof(value().c_str());
    else if (a == "--sample-seconds") sample = std::atof(value().c_str());
    else if (a == "--maps") maps = value();
    else if (a == "--rounds") rounds = std::atoi(value().c_str());
    else if (a == "--check-times") check_times = true;
    else mode = "";
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (binary.empty() || (mode != "guard" && mode != "soak")) {
    std::fprintf(stderr,
                 "usage: hitbox-soak guard --hitboxd PATH [--check-times] [--rounds N]\n"
                 "       hitbox-soak soak --hitboxd PATH [--duration S] [--sample-seconds S] "
                 "[--maps DIR]\n");
    return 2;
  }
  return mode == "guard" ? Guard(binary, check_times, rounds) : Soak(binary, duration, sample, maps);
}
