// Shared maps at scale: one procedural map of ~200k triangles (a 2 x 2 grid
// of terrain mesh tiles of 160 x 160 quads = 204,800 triangles, 2,000 boxes
// and 500 convex hulls) written as a JSON scene and loaded the way
// `hitboxd --maps DIR` loads it, then, in-process through HitboxService:
//   BM_HundredSessions      100 sessions on the map, each adding 100 boxes:
//                           the map's bytes (once), the bytes the sessions
//                           hold (their own only) and the process RSS growth
//   BM_CreateSessionOnMap   CreateSession naming the map (DeleteSession untimed)
//   BM_Query/map            a batch of 64 mixed queries (rays down onto the
//                           terrain, sphere sweeps, box overlaps) on a
//                           session on the map with 100 own boxes
//   BM_Query/own            the same batch on a session holding the map's
//                           colliders and the 100 boxes itself
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include <spdlog/spdlog.h>

#include "hitbox/wire/convert.h"
#include "maps.h"
#include "service.h"

namespace hitbox::server {
namespace {

namespace fs = std::filesystem;

constexpr int kTiles = 2;         // kTiles x kTiles terrain meshes
constexpr int kQuads = 160;       // quads per tile side: 2 * 160^2 = 51,200 triangles a tile
constexpr double kCell = 1.0;     // metres per quad
constexpr int kBoxes = 2000;
constexpr int kHulls = 500;
constexpr int kSessions = 100;
constexpr int kOwnPerSession = 100;
constexpr uint64_t kOwnFirstId = 1'000'000;
constexpr double kSize = kTiles * kQuads * kCell;  // world side, metres

double Height(double x, double z) { return 2.0 * std::sin(x * 0.05) * std::cos(z * 0.07); }

/// Resident set size of this process, bytes (/proc/self/status VmRSS).
uint64_t RssBytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      uint64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}

/// Writes the map as a JSON scene file; returns its directory.
fs::path WriteMap() {
  const fs::path dir = fs::temp_directory_path() / ("hitbox_maps_bench_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::FILE* f = std::fopen((dir / "bigmap.json").c_str(), "w");
  std::fprintf(f, "{\"colliders\": [\n");
  uint64_t id = 1;
  for (int tx = 0; tx < kTiles; ++tx) {
    for (int tz = 0; tz < kTiles; ++tz) {
      std::fprintf(f, "{\"id\": %llu, \"shape\": {\"mesh\": {\"vertices\": [",
                   static_cast<unsigned long long>(id++));
      for (int z = 0; z <= kQuads; ++z) {
        for (int x = 0; x <= kQuads; ++x) {
          const double wx = (tx * kQuads + x) * kCell, wz = (tz * kQuads + z) * kCell;
          std::fprintf(f, "%s[%.3f,%.3f,%.3f]", (x | z) ? "," : "", wx, Height(wx, wz), wz);
        }
      }
      std::fprintf(f, "], \"triangles\": [");
      for (int z = 0; z < kQuads; ++z) {
        for (int x = 0; x < kQuads; ++x) {
          const int a = z * (kQuads + 1) + x, b = a + 1, c = a + kQuads + 1, d = c + 1;
          std::fprintf(f, "%s[%d,%d,%d],[%d,%d,%d]", (x | z) ? "," : "", a, c, b, b, c, d);
        }
      }
      std::fprintf(f, "]}}},\n");
    }
  }
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> pos(0.0, kSize), size(0.3, 2.0);
  for (int i = 0; i < kBoxes; ++i) {
    const double x = pos(rng), z = pos(rng);
    std::fprintf(f,
                 "{\"id\": %llu, \"shape\": {\"box\": {\"half_extents\": [%.3f,%.3f,%.3f]}}, "
                 "\"position\": [%.3f,%.3f,%.3f], \"layer\": 1},\n",
                 static_cast<unsigned long long>(id++), size(rng), size(rng), size(rng), x,
                 Height(x, z) + 1.0, z);
  }
  for (int i = 0; i < kHulls; ++i) {
    const double x = pos(rng), z = pos(rng);
    std::fprintf(f, "{\"id\": %llu, \"shape\": {\"convex_hull\": {\"points\": [",
                 static_cast<unsigned long long>(id++));
    for (int k = 0; k < 12; ++k) {
      std::fprintf(f, "%s[%.3f,%.3f,%.3f]", k ? "," : "", size(rng) - 1.15, size(rng) - 1.15,
                   size(rng) - 1.15);
    }
    std::fprintf(f, "]}}, \"position\": [%.3f,%.3f,%.3f], \"layer\": 2}%s\n", x,
                 Height(x, z) + 1.0, z, i + 1 < kHulls ? "," : "");
  }
  std::fprintf(f, "]}\n");
  std::fclose(f);
  return dir;
}

/// The map library, loaded once for all benchmarks (the RSS it cost is kept).
struct Shared {
  std::shared_ptr<const MapLibrary> maps;
  uint64_t rss_before = 0, rss_after = 0;
  Shared() {
    const fs::path dir = WriteMap();
    rss_before = RssBytes();
    maps = MapLibrary::Load(dir.string()).value();
    rss_after = RssBytes();
    fs::remove_all(dir);
  }
};
Shared& TheMap() {
  static Shared s;
  return s;
}

std::unique_ptr<HitboxService> MakeService() {
  ServiceOptions o;
  o.threads = 1;
  o.limits.max_sessions = 1024;
  o.maps = TheMap().maps;
  return std::make_unique<HitboxService>(o);
}

void Create(HitboxService& service, const std::string& id, const std::string& map) {
  v1::CreateSessionRequest req;
  req.set_session_id(id);
  req.set_map_id(map);
  v1::SessionInfo info;
  if (!service.DoCreateSession(req, &info).ok()) std::abort();
}

/// Adds `n` boxes (ids from kOwnFirstId) scattered over the world.
void AddOwn(HitboxService& service, const std::string& id, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> pos(0.0, kSize), size(0.3, 1.0);
  v1::ApplyChangesRequest req;
  req.set_session_id(id);
  for (int i = 0; i < n; ++i) {
    Collider c;
    c.id = kOwnFirstId + static_cast<uint64_t>(i);
    c.shape = *Shape::MakeBox({size(rng), size(rng), size(rng)});
    const double x = pos(rng), z = pos(rng);
    c.pose = Pose({x, Height(x, z) + 1.5, z});
    wire::ToProto(c, req.add_changes()->mutable_add());
  }
  v1::ApplyChangesResponse resp;
  if (!service.DoApplyChanges(req, &resp).ok()) std::abort();
}

void BM_HundredSessions(benchmark::State& state) {
  const Shared& shared = TheMap();
  for (auto _ : state) {
    const uint64_t rss0 = RssBytes();
    auto service = MakeService();
    for (int s = 0; s < kSessions; ++s) {
      // Appended, not "s" + ...: gcc 12 -O3 warns there (-Wrestrict, PR 105651).
      std::string id = "s";
      id += std::to_string(s);
      Create(*service, id, "bigmap");
      AddOwn(*service, id, kOwnPerSession, static_cast<uint64_t>(s));
    }
    const uint64_t rss1 = RssBytes();
    state.counters["map_bytes"] = static_cast<double>(shared.maps->memory_bytes());
    state.counters["map_triangles"] = static_cast<double>(shared.maps->maps()[0]->triangles);
    state.counters["map_rss_bytes"] = static_cast<double>(shared.rss_after - shared.rss_before);
    state.counters["sessions_bytes"] = static_cast<double>(service->sessions().memory_bytes());
    state.counters["sessions_rss_bytes"] = static_cast<double>(rss1 - rss0);
    state.counters["server_bytes"] =
        static_cast<double>(shared.maps->memory_bytes() + service->sessions().memory_bytes());
  }
}
BENCHMARK(BM_HundredSessions)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_CreateSessionOnMap(benchmark::State& state) {
  auto service = MakeService();
  v1::CreateSessionRequest req;
  req.set_map_id("bigmap");
  v1::SessionInfo info;
  v1::DeleteSessionRequest del;
  for (auto _ : state) {
    req.set_session_id("c");
    if (!service->DoCreateSession(req, &info).ok()) std::abort();
    state.PauseTiming();
    del.set_session_id("c");
    (void)service->DoDeleteSession(del);
    state.ResumeTiming();
  }
}
BENCHMARK(BM_CreateSessionOnMap)->Unit(benchmark::kMicrosecond);

/// 64 mixed queries over the world.
v1::QueryRequest QueryBatch(const std::string& session) {
  v1::QueryRequest req;
  req.set_session_id(session);
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> pos(0.0, kSize);
  for (int i = 0; i < 64; ++i) {
    const double x = pos(rng), z = pos(rng);
    v1::Query* q = req.add_queries();
    switch (i % 3) {
      case 0: {
        v1::RayQuery* r = q->mutable_raycast();
        wire::ToProto(Vec3{x, 20, z}, r->mutable_origin());
        wire::ToProto(Vec3{0, -40, 0}, r->mutable_translation());
        break;
      }
      case 1: {
        CastQuery c{*Shape::MakeSphere(0.5), Pose({x, Height(x, z) + 1.0, z}), {10, 0, 5}, {}, false};
        wire::ToProto(Query{c}, q);
        break;
      }
      default: {
        OverlapQuery o{*Shape::MakeBox({2, 2, 2}), Pose({x, Height(x, z), z}), {}, false};
        wire::ToProto(Query{o}, q);
        break;
      }
    }
  }
  return req;
}

void BM_Query(benchmark::State& state) {
  const bool on_map = state.range(0) == 1;
  auto service = MakeService();
  if (on_map) {
    Create(*service, "q", "bigmap");
  } else {
    Create(*service, "q", "");
    v1::ApplyChangesRequest load;
    load.set_session_id("q");
    TheMap().maps->maps()[0]->set->ForEach(
        [&](const Collider& c) { wire::ToProto(c, load.add_changes()->mutable_add()); });
    v1::ApplyChangesResponse resp;
    if (!service->DoApplyChanges(load, &resp).ok()) std::abort();
  }
  AddOwn(*service, "q", kOwnPerSession, 1);
  const v1::QueryRequest req = QueryBatch("q");
  uint64_t hits = 0;
  for (auto _ : state) {
    v1::QueryResponse resp;
    if (!service->DoQuery(req, &resp).ok()) std::abort();
    for (const auto& r : resp.results()) hits += static_cast<uint64_t>(r.hits_size() + r.overlaps_size());
  }
  state.SetItemsProcessed(state.iterations() * req.queries_size());
  state.counters["hits_per_batch"] =
      static_cast<double>(hits) / static_cast<double>(std::max<int64_t>(1, state.iterations()));
  state.SetLabel(on_map ? "session on the map" : "session holding the colliders itself");
}
BENCHMARK(BM_Query)->ArgName("on_map")->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace hitbox::server

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);  // not a line per created session
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
