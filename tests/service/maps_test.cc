// Shared maps (hitboxd --maps DIR): loading and describing them (ListMaps,
// GetMap), sessions created on a map (queries over map + own, read-only map
// colliders, memory counted once), access, persistence, and a bad map file
// refusing the start of the in-process server and of the hitboxd binary.
#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "hitbox/wire/convert.h"
#include "memory_budget.h"
#include "process.h"
#include "server.h"
#include "service_util.h"

namespace hitbox {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing_service::SphereMsg;

// A directory of map files: "arena.json" (3 spheres, ids 1..3, and a
// 4-triangle mesh floor, id 4) and "crate.obj" (a UBX box, id 1).
class MapDir {
 public:
  MapDir() {
    static int counter = 0;
    dir_ = fs::temp_directory_path() /
           ("hitbox_maps_test_" + std::to_string(getpid()) + "_" + std::to_string(++counter));
    fs::create_directories(dir_);
    Write("arena.json", R"({"colliders": [
      {"id": 1, "shape": {"sphere": {"radius": 1}}, "position": [0, 0, 0]},
      {"id": 2, "shape": {"sphere": {"radius": 1}}, "position": [10, 0, 0], "layer": 1},
      {"id": 3, "shape": {"sphere": {"radius": 1}}, "position": [20, 0, 0]},
      {"id": 4, "shape": {"mesh": {"vertices": [[-50,-5,-50],[50,-5,-50],[50,-5,50],[-50,-5,50],[0,-5,0]],
        "triangles": [[0,4,1],[1,4,2],[2,4,3],[3,4,0]]}}}]})");
    Write("crate.obj",
          "o UBX_crate\nv -1 -1 -1\nv 1 -1 -1\nv 1 1 -1\nv -1 1 -1\nv -1 -1 1\nv 1 -1 1\n"
          "v 1 1 1\nv -1 1 1\nf 1 2 3 4\nf 5 6 7 8\n");
    Write("notes.txt", "not a map\n");
  }
  ~MapDir() { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  std::string path() const { return dir_.string(); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

class MapsTest : public ::testing::Test {
 protected:
  void Start(const std::string& admin_token = "", const std::string& data_dir = "") {
    server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.service.threads = 1;
    o.maps_dir = maps_.path();
    o.service.auth.admin_token = admin_token;
    o.service.auth.open_create = true;  // sessions are created without the admin token
    o.persist.data_dir = data_dir;
    Result<std::unique_ptr<server::HitboxServer>> s = server::HitboxServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(*s);
    stub_ = v1::Hitbox::NewStub(server_->InProcessChannel());
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::milliseconds(100));
  }
  grpc::Status Create(const std::string& id, const std::string& map, v1::SessionInfo* info) {
    v1::CreateSessionRequest req;
    req.set_session_id(id);
    req.set_map_id(map);
    grpc::ClientContext ctx;
    return stub_->CreateSession(&ctx, req, info);
  }
  grpc::Status Apply(const std::string& id, const v1::ColliderChange& change) {
    v1::ApplyChangesRequest req;
    req.set_session_id(id);
    *req.add_changes() = change;
    v1::ApplyChangesResponse resp;
    grpc::ClientContext ctx;
    return stub_->ApplyChanges(&ctx, req, &resp);
  }
  v1::QueryResult Ray(const std::string& id, const Vec3& from, const Vec3& d, bool all) {
    v1::QueryRequest req;
    req.set_session_id(id);
    v1::RayQuery* r = req.add_queries()->mutable_raycast();
    wire::ToProto(from, r->mutable_origin());
    wire::ToProto(d, r->mutable_translation());
    r->set_all_hits(all);
    v1::QueryResponse resp;
    grpc::ClientContext ctx;
    EXPECT_TRUE(stub_->Query(&ctx, req, &resp).ok());
    return resp.results_size() == 1 ? resp.results(0) : v1::QueryResult();
  }

  MapDir maps_;
  std::unique_ptr<server::HitboxServer> server_;
  std::unique_ptr<v1::Hitbox::Stub> stub_;
};

// The checksum as coreutils' sha256sum prints it.
std::string Sha256Sum(const std::string& path) {
  const testing::RunResult r = testing::RunProcess({"/usr/bin/sha256sum", path});
  EXPECT_EQ(r.code, 0) << r.err;
  return r.out.substr(0, 64);
}

// ListMaps lists every scene and level file by stem, sorted, with checksum,
// counts, triangles, bounds and bytes; GetMap answers the same; other files
// are skipped; an unknown map is NOT_FOUND.
TEST_F(MapsTest, ListAndGet) {
  Start();
  v1::ListMapsResponse list;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub_->ListMaps(&ctx, v1::ListMapsRequest(), &list).ok());
  }
  ASSERT_EQ(list.maps_size(), 2);
  const v1::MapInfo& arena = list.maps(0);
  EXPECT_EQ(arena.map_id(), "arena");
  EXPECT_EQ(list.maps(1).map_id(), "crate");
  EXPECT_EQ(arena.source(), maps_.file("arena.json"));
  EXPECT_EQ(arena.sha256(), Sha256Sum(maps_.file("arena.json")));
  EXPECT_EQ(arena.file_bytes(), fs::file_size(maps_.file("arena.json")));
  EXPECT_EQ(arena.collider_count(), 4u);
  EXPECT_EQ(arena.colliders_by_kind().at("sphere"), 3u);
  EXPECT_EQ(arena.colliders_by_kind().at("mesh"), 1u);
  EXPECT_EQ(arena.triangles(), 4u);
  EXPECT_DOUBLE_EQ(arena.bounds().max().x(), 50.0);
  EXPECT_GT(arena.memory_bytes(), 0u);
  EXPECT_EQ(list.maps(1).colliders_by_kind().at("box"), 1u);

  v1::GetMapRequest req;
  req.set_map_id("arena");
  v1::MapInfo got;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub_->GetMap(&ctx, req, &got).ok());
  }
  // (Compared as messages: map fields serialize in no fixed order.)
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(got, arena))
      << got.DebugString() << "\nvs\n" << arena.DebugString();
  req.set_map_id("nope");
  grpc::ClientContext ctx;
  const grpc::Status missing = stub_->GetMap(&ctx, req, &got);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(missing.error_message(), HasSubstr("map 'nope'"));
}

// A session on a map: its queries see map and own colliders in one sorted
// answer; GetSession shows the map; map colliders are read-only (FAILED_PRECONDITION
// naming the map), their ids taken (ALREADY_EXISTS); the session's memory is
// its own; ListColliders adds the map's only when asked.
TEST_F(MapsTest, SessionOnMap) {
  Start();
  v1::SessionInfo info, plain;
  ASSERT_TRUE(Create("m", "arena", &info).ok());
  ASSERT_TRUE(Create("plain", "", &plain).ok());
  EXPECT_EQ(info.map_id(), "arena");
  EXPECT_EQ(info.map_collider_count(), 4u);
  EXPECT_EQ(info.collider_count(), 0u);
  EXPECT_EQ(info.memory_bytes(), plain.memory_bytes());
  v1::SessionInfo unknown;
  EXPECT_EQ(Create("x", "nope", &unknown).error_code(), grpc::StatusCode::NOT_FOUND);

  v1::ColliderChange add;
  *add.mutable_add() = SphereMsg(100, 1.0, {5, 0, 0});
  ASSERT_TRUE(Apply("m", add).ok());
  // All hits along +x: map 1 (inside), own 100 at x=4, map 2 at x=9, map 3 at x=19.
  v1::QueryResult all = Ray("m", {0, 0, 0}, {30, 0, 0}, true);
  ASSERT_EQ(all.hits_size(), 4);
  EXPECT_EQ(all.hits(0).id(), 1u);
  EXPECT_EQ(all.hits(1).id(), 100u);
  EXPECT_EQ(all.hits(2).id(), 2u);
  EXPECT_EQ(all.hits(3).id(), 3u);
  // Closest from x=3: the own sphere wins over the map's farther ones.
  v1::QueryResult closest = Ray("m", {3, 0, 0}, {30, 0, 0}, false);
  ASSERT_EQ(closest.hits_size(), 1);
  EXPECT_EQ(closest.hits(0).id(), 100u);
  // Down onto the floor mesh of the map.
  v1::QueryResult floor = Ray("m", {30, 10, 30}, {0, -20, 0}, false);
  ASSERT_EQ(floor.hits_size(), 1);
  EXPECT_EQ(floor.hits(0).id(), 4u);
  // The other session has none of it.
  EXPECT_EQ(Ray("plain", {0, 0, 0}, {30, 0, 0}, true).hits_size(), 0);

  v1::ColliderChange move;
  move.mutable_move()->set_id(2);
  wire::ToProto(Vec3{1, 1, 1}, move.mutable_move()->mutable_pose()->mutable_position());
  v1::ColliderChange remove;
  remove.set_remove(3);
  v1::ColliderChange replace;
  *replace.mutable_replace() = SphereMsg(1, 2.0);
  for (const v1::ColliderChange& ch : {move, remove, replace}) {
    const grpc::Status st = Apply("m", ch);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << st.error_message();
    EXPECT_THAT(st.error_message(), HasSubstr("map 'arena'"));
  }
  v1::ColliderChange clash;
  *clash.mutable_add() = SphereMsg(2, 1.0);
  const grpc::Status st = Apply("m", clash);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_THAT(st.error_message(), HasSubstr("map 'arena'"));
  // The map is untouched for everyone.
  v1::SessionInfo other;
  ASSERT_TRUE(Create("m2", "arena", &other).ok());
  EXPECT_EQ(Ray("m2", {0, 0, 0}, {30, 0, 0}, true).hits_size(), 3);

  v1::GetSessionRequest gr;
  gr.set_session_id("m");
  v1::SessionInfo got;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub_->GetSession(&ctx, gr, &got).ok());
  }
  EXPECT_EQ(got.map_id(), "arena");
  EXPECT_EQ(got.collider_count(), 1u);
  EXPECT_LT(got.memory_bytes() - plain.memory_bytes(), 4096u);

  for (bool include : {false, true}) {
    v1::ListCollidersRequest lr;
    lr.set_session_id("m");
    lr.set_include_map(include);
    grpc::ClientContext ctx;
    auto reader = stub_->ListColliders(&ctx, lr);
    v1::ListCollidersResponse page;
    std::vector<uint64_t> ids;
    while (reader->Read(&page)) {
      for (const v1::Collider& c : page.colliders()) ids.push_back(c.id());
    }
    ASSERT_TRUE(reader->Finish().ok());
    EXPECT_EQ(ids, include ? std::vector<uint64_t>({1, 2, 3, 4, 100}) : std::vector<uint64_t>({100}));
  }
  v1::GetMapRequest mr;
  mr.set_map_id("arena");
  v1::MapInfo map;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub_->GetMap(&ctx, mr, &map).ok());
  EXPECT_EQ(map.session_count(), 2u);
  EXPECT_THAT(server_->RenderMetrics(), HasSubstr("hitbox_maps 2"));
}

// With credentials configured, ListMaps needs a token: any session's or the admin's.
TEST_F(MapsTest, MapsNeedAnyToken) {
  Start("admin-secret");
  v1::ListMapsResponse list;
  {
    grpc::ClientContext ctx;
    EXPECT_EQ(stub_->ListMaps(&ctx, v1::ListMapsRequest(), &list).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer wrong");
    EXPECT_EQ(stub_->ListMaps(&ctx, v1::ListMapsRequest(), &list).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  v1::SessionInfo info;
  ASSERT_TRUE(Create("s", "crate", &info).ok());
  for (const std::string& token : {info.token(), std::string("admin-secret")}) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + token);
    EXPECT_TRUE(stub_->ListMaps(&ctx, v1::ListMapsRequest(), &list).ok());
  }
}

// A session on a map is restored on that map from --data-dir.
TEST_F(MapsTest, PersistedSessionKeepsItsMap) {
  const fs::path data = fs::path(maps_.path() + "_data");
  Start("", data.string());
  v1::SessionInfo info;
  ASSERT_TRUE(Create("p", "arena", &info).ok());
  v1::ColliderChange add;
  *add.mutable_add() = SphereMsg(100, 1.0, {5, 0, 0});
  ASSERT_TRUE(Apply("p", add).ok());
  server_->Shutdown(std::chrono::milliseconds(100));
  server_.reset();
  Start("", data.string());
  EXPECT_EQ(Ray("p", {0, 0, 0}, {30, 0, 0}, true).hits_size(), 4);
  fs::remove_all(data);
}

// A bad map file stops the start with an error naming the file; so do two
// files with one name.
TEST(MapsLoadTest, BadFileRefusesStart) {
  MapDir dir;
  dir.Write("broken.json", R"({"colliders": [{"id": 1, "shape": {"sphere": {"radius": -1}}}]})");
  server::ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.maps_dir = dir.path();
  Result<std::unique_ptr<server::HitboxServer>> s = server::HitboxServer::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr(dir.file("broken.json")));
  EXPECT_THAT(s.error().message, HasSubstr("radius"));

  MapDir twins;
  twins.Write("crate.json", R"({"colliders": []})");
  Result<std::shared_ptr<const server::MapLibrary>> lib = server::MapLibrary::Load(twins.path());
  ASSERT_FALSE(lib.ok());
  EXPECT_THAT(lib.error().message, HasSubstr("'crate'"));
  EXPECT_FALSE(server::MapLibrary::Load(dir.path() + "/missing").ok());
}

#if defined(__GLIBC__)
// MapLargeBlocks (hitboxd's start): after a big block is freed, a later one
// of 1 MiB or more is still mapped on its own, so its pages too go back to
// the system when freed. glibc would otherwise have raised its threshold to
// the freed block's size and served the next one from the heap.
TEST(MapsLoadTest, BlocksFromAMebibyteAreMappedAfterABigFree) {
  server::MapLargeBlocks();
  auto* big = static_cast<volatile char*>(std::malloc(std::size_t{8} << 20));
  ASSERT_NE(big, nullptr);
  big[0] = 1;
  std::free(const_cast<char*>(big));
  const std::size_t mapped = mallinfo2().hblks;
  auto* next = static_cast<volatile char*>(std::malloc(std::size_t{2} << 20));
  ASSERT_NE(next, nullptr);
  next[0] = 1;
  EXPECT_EQ(mallinfo2().hblks, mapped + 1);
  std::free(const_cast<char*>(next));
}
#endif

// The hitboxd binary refuses to start on a bad map file and names it.
TEST(MapsLoadTest, BinaryRefusesBadMap) {
  MapDir dir;
  dir.Write("broken.obj", "o wall\nv 0 0 0\nv 1 0 0\nf 1 2 9\n");
  testing::HitboxdProcess hitboxd({"--maps", dir.path()});
  EXPECT_FALSE(hitboxd.running()) << "hitboxd started anyway: " << hitboxd.log();
  EXPECT_NE(hitboxd.exit_code(), 0);
  EXPECT_THAT(hitboxd.log(), HasSubstr("broken.obj"));
}

// The first run's world (`hitbox.sh run`: hitboxd --demo --maps examples/maps):
// the demo session is on the checked-in arena map, which imports with every
// naming convention, and its own 300 colliders sit beside the map's.
TEST(DemoMapTest, DemoSessionIsOnTheArenaMap) {
  server::ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.service.threads = 1;
  o.maps_dir = std::string(HITBOX_SOURCE_DIR) + "/examples/maps";
  Result<std::unique_ptr<server::HitboxServer>> s = server::HitboxServer::Start(o);
  ASSERT_TRUE(s.ok()) << s.error().message;
  server::HitboxServer& srv = **s;
  const std::shared_ptr<const server::Map> arena = srv.service().options().maps->Find("arena");
  ASSERT_NE(arena, nullptr);
  for (ShapeKind kind : {ShapeKind::kSphere, ShapeKind::kBox, ShapeKind::kCapsule,
                         ShapeKind::kConvexHull, ShapeKind::kMesh}) {
    EXPECT_GT(arena->counts[static_cast<size_t>(kind)], 0u) << "kind " << static_cast<int>(kind);
  }
  EXPECT_GT(arena->triangles, 1000u);

  std::string token, summary;
  ASSERT_TRUE(server::CreateDemoSession(srv.service(), &token, &summary).ok());
  EXPECT_FALSE(token.empty());
  EXPECT_THAT(summary, HasSubstr("map 'arena'"));
  auto stub = v1::Hitbox::NewStub(srv.InProcessChannel());
  v1::GetSessionRequest get;
  get.set_session_id("demo");
  v1::SessionInfo info;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub->GetSession(&ctx, get, &info).ok());
  }
  EXPECT_EQ(info.map_id(), "arena");
  EXPECT_EQ(info.map_collider_count(), arena->set->size());
  EXPECT_EQ(info.collider_count(), 300u);
  // A ray straight down in an empty corner lands on the map's floor (y = 0).
  v1::QueryRequest req;
  req.set_session_id("demo");
  v1::RayQuery* r = req.add_queries()->mutable_raycast();
  wire::ToProto(Vec3(-47, 30, 47), r->mutable_origin());
  wire::ToProto(Vec3(0, -40, 0), r->mutable_translation());
  v1::QueryResponse resp;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub->Query(&ctx, req, &resp).ok());
  }
  ASSERT_EQ(resp.results(0).hits_size(), 1);
  EXPECT_LE(resp.results(0).hits(0).id(), arena->set->size());
  EXPECT_NEAR(resp.results(0).hits(0).point().y(), 0.0, 1e-9);
  srv.Shutdown(std::chrono::milliseconds(100));
}

}  // namespace
}  // namespace hitbox
