// hitboxctl import / load of level files / view, end to end: a real hitboxd
// on a loopback port and the hitboxctl binary as a subprocess. Levels are the
// OBJ fixtures of tests/import/data and a .glb written here with tinygltf.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gltf_builder.h"
#include "hitbox/client.h"
#include "hitbox/import/level_import.h"
#include "hitbox/view/world_svg.h"
#include "hitbox/wire/convert.h"
#include "ctl_runner.h"
#include "svg_parse.h"

namespace hitbox::ctl_test {
namespace {

using nlohmann::json;
using hitbox::testing::BoxMesh;
using hitbox::testing::GltfBuilder;
using hitbox::testing::ParseXml;
using hitbox::testing::RoundMesh;
using hitbox::testing::XmlDocument;

// An imported mesh collider always fits on the wire.
static_assert(import::kDefaultMaxMeshTriangles == wire::kMaxWireMeshTriangles);

const std::string kData = std::string(HITBOX_SOURCE_DIR) + "/tests/import/data/";

class ImportViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.running()) << "hitboxd did not start:\n" << server_.log();
    ASSERT_FALSE(dir_.path().empty());
  }

  RunResult Ctl(const std::vector<std::string>& args) const { return ctl_.Run(args); }
  json CtlJson(const std::vector<std::string>& args) const { return ctl_.Json(args); }
  static std::string Describe(const std::vector<std::string>& args, const RunResult& r) {
    return CtlRunner::Describe(args, r);
  }
  std::string Path(const std::string& name) const { return dir_.file(name); }

  /// A small arena as .glb: a floor mesh, and under "props" (layer 1) a crate
  /// on layer 2 with user data, a ball, a pill and a rock: 5 colliders.
  std::string WriteArena() {
    GltfBuilder b;
    const int floor = b.AddMesh("floor", BoxMesh({-20, -1, -20}, {20, 0, 20}));
    const int cube = b.AddMesh("cube", BoxMesh({-1, -1, -1}, {1, 1, 1}));
    const int ball = b.AddMesh("ball", RoundMesh(1.0f, 0.0f));
    const int pill = b.AddMesh("pill", RoundMesh(0.5f, 1.0f));
    b.AddNode("floor", floor);
    const int props = b.AddNode("props", -1, {{0, 0, 0}, {}, {}}, -1, {{"hitbox_layer", tinygltf::Value(1)}});
    b.AddNode("UBX_crate", cube, {{5, 1, 5}, {}, {}}, props,
              {{"hitbox_layer", tinygltf::Value(2)}, {"hitbox_user_data", tinygltf::Value(42)}});
    b.AddNode("USP_ball", ball, {{-5, 1, 5}, {}, {}}, props);
    b.AddNode("UCP_pill", pill, {{-5, 1.5, -5}, {}, {}}, props);
    b.AddNode("UCX_rock", cube, {{5, 1, -5}, {}, {2, 1, 1}}, props);
    const std::string path = Path("arena.glb");
    EXPECT_TRUE(b.Write(path));
    return path;
  }

  HitboxdProcess server_;
  CtlRunner ctl_{server_.address()};
  testing::TempDir dir_{"ctl-import"};
};

// `import level.glb -o level.json` writes a scene file and a report; `load`
// takes the .glb itself or the JSON, and both give the same session.
TEST_F(ImportViewTest, ImportThenLoad) {
  const std::string glb = WriteArena();
  const std::string out = Path("arena.json");
  const RunResult human = Ctl({"import", glb, "-o", out});
  ASSERT_EQ(human.code, 0) << Describe({"import", glb}, human);
  EXPECT_NE(human.out.find("5 colliders from 5 nodes"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("wrote 5 colliders"), std::string::npos) << human.out;

  const json report = CtlJson({"import", glb, "-o", out});
  EXPECT_EQ(report.value("colliders", 0), 5);
  EXPECT_EQ(report.at("counts").value("mesh", 0), 1);
  EXPECT_EQ(report.at("counts").value("box", 0), 1);
  EXPECT_EQ(report.at("counts").value("sphere", 0), 1);
  EXPECT_EQ(report.at("counts").value("capsule", 0), 1);
  EXPECT_EQ(report.at("counts").value("convex_hull", 0), 1);
  EXPECT_EQ(report.value("triangles", 0), 12);
  EXPECT_EQ(report.at("bounds").at("min"), json({-20, -1, -20}));

  const json from_json = CtlJson({"load", "a", out, "--create"});
  EXPECT_EQ(from_json.value("loaded", 0), 5);
  const json from_glb = CtlJson({"load", "b", glb, "--create"});
  EXPECT_EQ(from_glb.value("loaded", 0), 5);
  EXPECT_EQ(from_glb.at("import").value("format", ""), "glb");

  Client client(server_.address());
  auto a = client.ListColliders("a");
  auto b = client.ListColliders("b");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->colliders.size(), b->colliders.size());
  for (size_t i = 0; i < a->colliders.size(); ++i) {
    const Collider& x = a->colliders[i];
    const Collider& y = b->colliders[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.layer, y.layer);
    EXPECT_EQ(x.user_data, y.user_data);
    EXPECT_EQ(x.shape.ToString(), y.shape.ToString());
    EXPECT_EQ(ToString(x.pose), ToString(y.pose));
  }
  EXPECT_EQ(a->colliders[1].layer, 2u);
  EXPECT_EQ(a->colliders[1].user_data, 42u);
  EXPECT_EQ(a->colliders[2].layer, 1u);  // inherited from "props"
}

// A bad level file is an error naming the object or line, and nothing is sent:
// --create makes no session, an existing session stays empty.
TEST_F(ImportViewTest, BadLevelSendsNothing) {
  const RunResult created = Ctl({"load", "bad", kData + "bad_face.obj", "--create"});
  EXPECT_EQ(created.code, 1);
  EXPECT_NE(created.err.find("object 'wall': face 0 uses vertex 9 of 3"), std::string::npos) << created.err;
  EXPECT_NE(Ctl({"sessions", "get", "bad"}).code, 0);  // never created

  ASSERT_EQ(Ctl({"sessions", "create", "empty"}).code, 0);
  const RunResult line = Ctl({"load", "empty", kData + "zero_index.obj"});
  EXPECT_EQ(line.code, 1);
  EXPECT_NE(line.err.find("line 7"), std::string::npos) << line.err;
  const json info = CtlJson({"sessions", "get", "empty"});
  EXPECT_EQ(info.value("collider_count", -1), 0) << info.dump();

  const RunResult import = Ctl({"import", kData + "bad_face.obj", "-o", Path("never.json")});
  EXPECT_EQ(import.code, 1);
  EXPECT_FALSE(std::filesystem::exists(Path("never.json")));
}

// Round trip through the server: the imported OBJ level answers 300 random
// rays and sweeps like the same level written by hand.
TEST_F(ImportViewTest, ImportedLevelAnswersLikeHandWrittenScene) {
  ASSERT_EQ(Ctl({"load", "obj", kData + "level.obj", "--create"}).code, 0);
  ASSERT_EQ(Ctl({"load", "hand", kData + "level_equivalent.json", "--create"}).code, 0);
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> u(-12.0, 12.0);
  std::uniform_real_distribution<double> h(0.1, 4.0);
  std::vector<Query> queries;
  for (int i = 0; i < 150; ++i) {
    const Vec3 from{u(rng), h(rng), u(rng)};
    const Vec3 move{u(rng), -h(rng), u(rng)};
    queries.push_back(RayQuery{from, move, {}, true});
    queries.push_back(CastQuery{*Shape::MakeSphere(0.4), Pose(from), move, {}, true});
  }
  Client client(server_.address());
  auto a = client.Query("obj", queries);
  auto b = client.Query("hand", queries);
  ASSERT_TRUE(a.ok() && b.ok());
  size_t hits = 0;
  for (size_t i = 0; i < queries.size(); ++i) {
    ASSERT_EQ(a->results[i].hits.size(), b->results[i].hits.size()) << "query " << i;
    for (size_t k = 0; k < a->results[i].hits.size(); ++k) {
      EXPECT_EQ(a->results[i].hits[k].id, b->results[i].hits[k].id);
      EXPECT_NEAR(a->results[i].hits[k].fraction, b->results[i].hits[k].fraction, 1e-9);
    }
    hits += a->results[i].hits.size();
  }
  EXPECT_GT(hits, 100u);  // many hits compared, not just misses
}

// A level with a 2^18-triangle terrain still loads: messages are kept to
// about 16 MiB, so the big mesh travels with at most one other collider.
TEST_F(ImportViewTest, LargeLevelLoadsInBoundedMessages) {
  hitbox::testing::TestMesh terrain;
  const uint32_t n = 362;  // 362 x 362 cells, 2 triangles each: 262,088 triangles
  for (uint32_t r = 0; r <= n; ++r) {
    for (uint32_t c = 0; c <= n; ++c) {
      terrain.vertices.push_back({static_cast<float>(c) * 0.5f, 0.3f * static_cast<float>((r * 7 + c * 3) % 5),
                                  static_cast<float>(r) * 0.5f});
    }
  }
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t c = 0; c < n; ++c) {
      const uint32_t a = r * (n + 1) + c;
      terrain.triangles.push_back({a, a + 1, a + n + 2});
      terrain.triangles.push_back({a, a + n + 2, a + n + 1});
    }
  }
  GltfBuilder b;
  b.AddNode("terrain", b.AddMesh("terrain", terrain));
  const int cube = b.AddMesh("cube", BoxMesh({-1, -1, -1}, {1, 1, 1}));
  for (int i = 0; i < 10; ++i) b.AddNode("UBX_" + std::to_string(i), cube, {{i * 5.0, 3, 5}, {}, {}});
  const std::string glb = Path("terrain.glb");
  ASSERT_TRUE(b.Write(glb));
  const json r = CtlJson({"load", "big", glb, "--create"});
  EXPECT_EQ(r.value("loaded", 0), 11);
  EXPECT_EQ(r.value("collider_count", 0), 11);
  EXPECT_EQ(r.value("batch_size", 0), 2);
  EXPECT_EQ(r.at("import").value("triangles", 0), 2 * 362 * 362);
  // The ray from above meets the terrain (id 1) between the crates.
  const json hit = CtlJson({"raycast", "big", "--origin", "2.6,10,90.1", "--translation", "0,-20,0"});
  ASSERT_EQ(hit.at("hits").size(), 1u) << hit.dump();
  EXPECT_EQ(hit.at("hits")[0].value("id", 0), 1);
}

// `view SESSION -o world.svg --side --queries FILE` draws the session read
// back from hitboxd, runs the queries there and marks their hits: a
// well-formed SVG with one group per collider and view, coloured by layer.
TEST_F(ImportViewTest, ViewDrawsSessionQueriesAndHits) {
  ASSERT_EQ(Ctl({"load", "arena", WriteArena(), "--create"}).code, 0);
  const std::string queries = Path("queries.json");
  std::ofstream(queries) << R"({"queries": [
    {"id": 1, "raycast": {"origin": [5, 10, 5], "translation": [0, -20, 0]}},
    {"id": 2, "sweep": {"shape": {"sphere": {"radius": 0.5}}, "position": [-15, 1, 5],
                        "rotation": [0, 0, 0, 1], "translation": [20, 0, 0]}},
    {"id": 3, "overlap": {"shape": {"box": {"half_extents": [1, 1, 1]}}, "position": [-5, 1, -5]}},
    {"id": 4, "raycast": {"origin": [30, 10, 30], "translation": [0, 1, 0]}}]})";
  const std::string svg = Path("world.svg");
  const json r = CtlJson({"view", "arena", "-o", svg, "--side", "--queries", queries});
  EXPECT_EQ(r.value("session_colliders", 0), 5);
  EXPECT_EQ(r.value("queries", 0), 4);
  const XmlDocument doc = ParseXml(ReadFile(svg));
  ASSERT_TRUE(doc.ok) << doc.error;
  for (uint64_t id = 1; id <= 5; ++id) {
    ASSERT_NE(doc.ById("collider-" + std::to_string(id)), nullptr) << id;
    ASSERT_NE(doc.ById("side-collider-" + std::to_string(id)), nullptr) << id;
  }
  EXPECT_EQ(doc.ById("collider-2")->Attr("fill"), view::LayerColor(2));  // the crate's extras layer
  EXPECT_EQ(doc.ById("collider-3")->Attr("fill"), view::LayerColor(1));  // inherited from "props"
  EXPECT_NE(doc.TitleOf(*doc.ById("collider-2")).find("user_data 42"), std::string::npos);
  // The ray from above hits the crate's top (id 2); the sweep along x meets the ball (id 3).
  ASSERT_NE(doc.ById("hit-1-2"), nullptr);
  ASSERT_NE(doc.ById("hit-2-3"), nullptr);
  ASSERT_NE(doc.ById("side-hit-1-2"), nullptr);
  // The box touches the floor (top at y = 0) and holds the pill.
  EXPECT_NE(doc.TitleOf(*doc.ById("query-3")).find("overlaps 1 4"), std::string::npos)
      << doc.TitleOf(*doc.ById("query-3"));
  EXPECT_NE(doc.TitleOf(*doc.ById("query-4")).find("no hit"), std::string::npos);
}

// --map NAME of a session on no map is an error; --map-file draws a level in grey.
TEST_F(ImportViewTest, ViewMapHooks) {
  ASSERT_EQ(Ctl({"sessions", "create", "s"}).code, 0);
  const RunResult map = Ctl({"view", "s", "-o", Path("m.svg"), "--map", "arena"});
  EXPECT_EQ(map.code, 1);
  EXPECT_NE(map.err.find("is on no map"), std::string::npos) << map.err;
  EXPECT_FALSE(std::filesystem::exists(Path("m.svg")));
  const std::string svg = Path("f.svg");
  ASSERT_EQ(Ctl({"view", "s", "-o", svg, "--map-file", kData + "level.obj"}).code, 0);
  const XmlDocument doc = ParseXml(ReadFile(svg));
  ASSERT_TRUE(doc.ok) << doc.error;
  for (uint64_t id = 1; id <= 4; ++id) {
    const auto* g = doc.ById("map-collider-" + std::to_string(id));
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->Attr("class"), "collider map");
    EXPECT_EQ(g->Attr("fill"), view::kMapColor);
  }
  EXPECT_EQ(Ctl({"view", "nope", "-o", Path("n.svg")}).code, 1);  // unknown session
}

// hitboxd --maps DIR: `maps list|get`, `sessions create ID --map NAME`
// (queries see map + own, map colliders read-only), `view --map NAME`
// drawing the map grey under the session.
TEST_F(ImportViewTest, SharedMaps) {
  WriteArena();
  std::filesystem::copy_file(kData + "level.obj", Path("level.obj"));
  HitboxdProcess maps_server({"--maps", dir_.path()});
  ASSERT_TRUE(maps_server.running()) << maps_server.log();
  const CtlRunner ctl(maps_server.address());
  const json list = ctl.Json({"maps", "list"});
  ASSERT_EQ(list["maps"].size(), 2u) << list.dump();
  EXPECT_EQ(list["maps"][0]["map_id"], "arena");
  EXPECT_EQ(list["maps"][0]["collider_count"], 5);
  EXPECT_EQ(list["maps"][0]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(list["maps"][1]["map_id"], "level");
  const RunResult table = ctl.Run({"maps", "list"});
  EXPECT_EQ(table.code, 0);
  EXPECT_NE(table.out.find("arena"), std::string::npos) << table.out;
  const json got = ctl.Json({"maps", "get", "arena"});
  EXPECT_EQ(got["colliders_by_kind"]["mesh"], 1);
  EXPECT_EQ(got["colliders_by_kind"]["box"], 1);
  EXPECT_EQ(ctl.Run({"maps", "get", "nope"}).code, 1);

  const json created = ctl.Json({"sessions", "create", "m", "--map", "arena"});
  EXPECT_EQ(created["map_id"], "arena");
  EXPECT_EQ(created["map_collider_count"], 5);
  EXPECT_NE(ctl.Run({"sessions", "get", "m"}).out.find("map              arena"), std::string::npos);
  // An own collider plus the map's: the ray from above hits the crate (map id 2).
  const std::string scene = Path("own.json");
  std::ofstream(scene) << R"({"colliders": [
    {"id": 100, "shape": {"sphere": {"radius": 1}}, "position": [0, 3, 0]}]})";
  ASSERT_EQ(ctl.Run({"load", "m", scene}).code, 0);
  const std::string queries = Path("q.json");
  std::ofstream(queries) << R"({"queries": [
    {"id": 1, "raycast": {"origin": [5, 10, 5], "translation": [0, -20, 0]}},
    {"id": 2, "raycast": {"origin": [0, 10, 0], "translation": [0, -20, 0]}}]})";
  const std::string svg = Path("m.svg");
  const json v = ctl.Json({"view", "m", "-o", svg, "--map", "arena", "--queries", queries});
  EXPECT_EQ(v.value("session_colliders", 0), 1) << v.dump();
  const XmlDocument doc = ParseXml(ReadFile(svg));
  ASSERT_TRUE(doc.ok) << doc.error;
  for (uint64_t id = 1; id <= 5; ++id) {
    const auto* g = doc.ById("map-collider-" + std::to_string(id));
    ASSERT_NE(g, nullptr) << id;
    EXPECT_EQ(g->Attr("fill"), view::kMapColor);
  }
  ASSERT_NE(doc.ById("collider-100"), nullptr);
  ASSERT_NE(doc.ById("hit-1-2"), nullptr);    // the map's crate
  ASSERT_NE(doc.ById("hit-2-100"), nullptr);  // the own sphere above the floor
  // The map's colliders are read-only; their ids are taken.
  const std::string moved = Path("clash.json");
  std::ofstream(moved) << R"({"colliders": [{"id": 2, "shape": {"sphere": {"radius": 1}}}]})";
  const RunResult clash = ctl.Run({"load", "m", moved});
  EXPECT_NE(clash.code, 0);
  EXPECT_NE(clash.err.find("map 'arena'"), std::string::npos) << clash.err;
  EXPECT_NE(ctl.Run({"sessions", "create", "x", "--map", "nope"}).code, 0);
}

}  // namespace
}  // namespace hitbox::ctl_test
