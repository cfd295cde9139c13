// hitboxctl's level tooling end to end (issue 31): `import --up --scale` and
// the NAME.import.json that hitboxd --maps reads, the warning on implausible
// bounds, wrong file types, and `view --up` / `--max-triangles` (a picture
// of any size says what it drew coarsely). The SVG is parsed with expat.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctl_runner.h"
#include "gltf_builder.h"
#include "hitbox/math/math.h"
#include "hitbox/view/world_svg.h"
#include "svg_parse.h"
#include "temp_dir.h"

namespace hitbox::ctl_test {
namespace {

using nlohmann::json;
using hitbox::testing::BoxMesh;
using hitbox::testing::GltfBuilder;
using hitbox::testing::ParseXml;
using hitbox::testing::XmlDocument;

// A Z-up level in inches: a 100 x 100 floor at z = 0 and a 50-inch post
// top at z = 50 above (10, 10).
constexpr const char* kZUpInches =
    "o floor\nv 0 0 0\nv 100 0 0\nv 100 100 0\nv 0 100 0\nf 1 2 3 4\n"
    "o post\nv 10 10 0\nv 11 10 0\nv 10 10 50\nf 5 6 7\n";

class LevelToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.running()) << "hitboxd did not start:\n" << server_.log();
  }
  RunResult Ctl(const std::vector<std::string>& args) const { return ctl_.Run(args); }
  json CtlJson(const std::vector<std::string>& args) const { return ctl_.Json(args); }
  std::string Write(const std::string& name, const std::string& text) { return dir_.Write(name, text); }

  HitboxdProcess server_;
  CtlRunner ctl_{server_.address()};
  testing::TempDir dir_{"ctl-level"};
};

// Every mesh vertex of a scene file in world coordinates: position + the
// rotation quaternion [x, y, z, w] applied to the vertex.
std::vector<std::vector<double>> SceneVertices(const json& scene) {
  std::vector<std::vector<double>> out;
  for (const json& c : scene.at("colliders")) {
    const json& r = c.at("rotation");
    const json& pos = c.at("position");
    const Quat q{r[0].get<double>(), r[1].get<double>(), r[2].get<double>(), r[3].get<double>()};
    for (const json& v : c.at("shape").at("mesh").at("vertices")) {
      const Vec3 w = Vec3{pos[0].get<double>(), pos[1].get<double>(), pos[2].get<double>()} +
                     q.Rotate({v[0].get<double>(), v[1].get<double>(), v[2].get<double>()});
      out.push_back({w.x, w.y, w.z});
    }
  }
  return out;
}

bool Has(const std::vector<std::vector<double>>& vs, std::vector<double> p) {
  return std::any_of(vs.begin(), vs.end(), [&](const auto& v) {
    return std::abs(v[0] - p[0]) < 1e-9 && std::abs(v[1] - p[1]) < 1e-9 && std::abs(v[2] - p[2]) < 1e-9;
  });
}

// `import --up z --scale 0.0254` turns a Z-up level in inches into Y-up
// metres: file (x, y, z) -> 0.0254 (x, z, -y), checked on the written scene.
TEST_F(LevelToolsTest, ImportUpAndScale) {
  const std::string obj = Write("zup.obj", kZUpInches);
  const std::string out = dir_.file("zup.json");
  const json report = CtlJson({"import", obj, "-o", out, "--up", "z", "--scale", "0.0254"});
  EXPECT_EQ(report.at("up"), "z");
  EXPECT_EQ(report.at("scale"), 0.0254);
  EXPECT_GT(report.at("seconds").get<double>(), 0.0);
  EXPECT_NEAR(report.at("bounds").at("max")[1].get<double>(), 1.27, 1e-9);  // the post's top
  EXPECT_NEAR(report.at("bounds").at("min")[2].get<double>(), -2.54, 1e-9);
  std::ifstream f(out);
  const json scene = json::parse(f);
  const auto vs = SceneVertices(scene);
  EXPECT_TRUE(Has(vs, {2.54, 0, 0}));
  EXPECT_TRUE(Has(vs, {2.54, 0, -2.54}));
  EXPECT_TRUE(Has(vs, {0.254, 1.27, -0.254}));  // the post's top, up is +y
  // The defaults keep the file's coordinates.
  const std::string plain_out = dir_.file("plain.json");
  ASSERT_EQ(Ctl({"import", obj, "-o", plain_out}).code, 0);
  std::ifstream g(plain_out);
  EXPECT_TRUE(Has(SceneVertices(json::parse(g)), {10, 10, 50}));
  // Bad values are usage errors.
  EXPECT_EQ(Ctl({"import", obj, "--up", "sideways"}).code, 2);
  EXPECT_EQ(Ctl({"import", obj, "--scale", "0"}).code, 2);
}

// A level read as metres that spans kilometres warns on stderr and in the
// report (text and JSON); scaled, it does not.
TEST_F(LevelToolsTest, ImplausibleBoundsWarn) {
  const std::string obj =
      Write("big.obj", "o ground\nv 0 0 0\nv 232000 0 0\nv 0 0 232000\nf 1 2 3\n");
  const RunResult r = Ctl({"import", obj});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: the level spans 232 km"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("warning: the level spans 232 km"), std::string::npos) << r.out;
  const json j = CtlJson({"import", obj, "--quiet"});
  ASSERT_EQ(j.at("warnings").size(), 1u) << j.dump();
  const json scaled = CtlJson({"import", obj, "--scale", "0.0254"});
  EXPECT_TRUE(scaled.at("warnings").empty());
}

// Wrong file types name the file, what it should be and what it is; a
// missing output folder names the path; nothing half-written.
TEST_F(LevelToolsTest, WrongFileTypes) {
  const std::string glb = Write("level.glb", kZUpInches);
  const RunResult r = Ctl({"import", glb, "-o", dir_.file("x.json")});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(glb + ": not a binary glTF (GLB, starting with 'glTF'): the file is text"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("Invalid magic"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.file("x.json")));
  const std::string scene = Write("scene.json", R"({"colliders": []})");
  const RunResult json_import = Ctl({"import", scene});
  EXPECT_EQ(json_import.code, 1);
  EXPECT_NE(json_import.err.find("not a level file"), std::string::npos) << json_import.err;
  const std::string obj = Write("ok.obj", kZUpInches);
  const RunResult no_dir = Ctl({"import", obj, "-o", dir_.file("no/such/dir/out.json")});
  EXPECT_EQ(no_dir.code, 1);
  EXPECT_NE(no_dir.err.find("no/such/dir/out.json: No such file or directory"), std::string::npos)
      << no_dir.err;
}

// hitboxd --maps reads NAME.import.json beside a level (and does not take it
// for a map); `import` reads it too unless flags override it.
TEST_F(LevelToolsTest, MapsReadImportSettings) {
  const std::filesystem::path maps = dir_.file("maps");
  std::filesystem::create_directories(maps);
  std::ofstream(maps / "zup.obj") << kZUpInches;
  std::ofstream(maps / "zup.import.json") << R"({"up": "z", "scale": 0.0254})";
  std::ofstream(maps / "plain.obj") << kZUpInches;
  HitboxdProcess server({"--maps", maps.string()});
  ASSERT_TRUE(server.running()) << server.log();
  const CtlRunner ctl(server.address());
  const json list = ctl.Json({"maps", "list"});
  ASSERT_EQ(list.at("maps").size(), 2u) << list.dump();
  const json zup = ctl.Json({"maps", "get", "zup"});
  EXPECT_NEAR(zup.at("bounds").at("max")[1].get<double>(), 1.27, 1e-6) << zup.dump();
  EXPECT_NEAR(zup.at("bounds").at("min")[2].get<double>(), -2.54, 1e-6) << zup.dump();
  const json plain = ctl.Json({"maps", "get", "plain"});
  EXPECT_NEAR(plain.at("bounds").at("max")[2].get<double>(), 50, 1e-6) << plain.dump();

  const json report = CtlJson({"import", (maps / "zup.obj").string()});
  EXPECT_EQ(report.at("up"), "z");
  const json overridden = CtlJson({"import", (maps / "zup.obj").string(), "--up", "y", "--scale", "1"});
  EXPECT_EQ(overridden.at("up"), "y");

  // A bad settings file stops the server with a message naming it.
  std::ofstream(maps / "zup.import.json") << R"({"up": "q"})";
  HitboxdProcess bad({"--maps", maps.string()});
  EXPECT_FALSE(bad.running());
  EXPECT_NE(bad.log().find("zup.import.json: \"up\""), std::string::npos) << bad.log();
}

// A Z-up level drawn with `view --up z`: the top view looks down z (the post
// seen end-on sits inside the floor), and the caption names the world's axes.
TEST_F(LevelToolsTest, ViewUp) {
  const std::string obj = Write("zup.obj", kZUpInches);
  ASSERT_EQ(Ctl({"load", "z", obj, "--create"}).code, 0);
  const std::string svg = dir_.file("z.svg");
  ASSERT_EQ(Ctl({"view", "z", "-o", svg, "--up", "z", "--side"}).code, 0);
  const XmlDocument doc = ParseXml(ReadFile(svg));
  ASSERT_TRUE(doc.ok) << doc.error;
  std::string captions;
  for (const auto* t : doc.All("text")) captions += t->text + "\n";
  EXPECT_NE(captions.find("top view (from +z: x to the right, -y down)"), std::string::npos) << captions;
  EXPECT_NE(captions.find("side view (from -y: x to the right, z up)"), std::string::npos) << captions;
  // Top view frame: 100 x 100 units -> square; unturned it would be 100 x 50.
  const auto frames = doc.All("rect");
  const auto* frame = *std::find_if(frames.begin(), frames.end(), [](const auto* e) { return e->Attr("class") == "frame"; });
  EXPECT_NEAR(std::stod(frame->Attr("width")) / std::stod(frame->Attr("height")), 1.0, 0.01);
  EXPECT_EQ(Ctl({"view", "z", "-o", svg, "--up", "w"}).code, 2);
}

// A picture over the triangle budget is never silently grey: the surfaces
// beyond it are drawn as the cells they cover and a <text id="coarse-note">
// says how many, with how many triangles; --max-triangles raises the budget.
TEST_F(LevelToolsTest, ViewOverBudgetSaysSo) {
  GltfBuilder b;
  // Two floors of 2 x 200 x 200 triangles side by side.
  for (int k = 0; k < 2; ++k) {
    testing::TestMesh grid;
    const int n = 200;
    for (int j = 0; j <= n; ++j) {
      for (int i = 0; i <= n; ++i) {
        grid.vertices.push_back({static_cast<float>(k * 110 + i * 0.5), 0.0f, static_cast<float>(j * 0.5)});
      }
    }
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < n; ++i) {
        const uint32_t a = static_cast<uint32_t>(j * (n + 1) + i);
        grid.triangles.push_back({a, a + 1, a + n + 2});
        grid.triangles.push_back({a, a + n + 2, a + n + 1});
      }
    }
    b.AddNode("floor" + std::to_string(k), b.AddMesh("floor" + std::to_string(k), grid));
  }
  const std::string glb = dir_.file("floors.glb");
  ASSERT_TRUE(b.Write(glb));
  ASSERT_EQ(Ctl({"load", "f", glb, "--create"}).code, 0);
  const std::string svg = dir_.file("f.svg");
  const RunResult r = Ctl({"view", "f", "-o", svg, "--max-triangles", "100000"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("1 surfaces (80000 triangles) over the budget"), std::string::npos) << r.err;
  XmlDocument doc = ParseXml(ReadFile(svg));
  ASSERT_TRUE(doc.ok) << doc.error;
  const auto* note = doc.ById("coarse-note");
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->text.find("1 surface (80000 triangles) over the budget of 100000"), std::string::npos)
      << note->text;
  // The coarse floor is its footprint: cells covering its 100 x 100 m square,
  // not a bounds rectangle of the default grey.
  const auto paths = doc.All("path");
  const auto coverage = std::count_if(paths.begin(), paths.end(), [](const auto* p) { return p->Attr("class") == "coverage"; });
  EXPECT_EQ(coverage, 1);

  const json all = CtlJson({"view", "f", "-o", svg, "--max-triangles", "200000"});
  EXPECT_EQ(all.at("coarse_surfaces"), 0u);
  EXPECT_EQ(all.at("triangles_drawn"), 160000u);
  doc = ParseXml(ReadFile(svg));
  EXPECT_EQ(doc.ById("coarse-note"), nullptr);
}

}  // namespace
}  // namespace hitbox::ctl_test
