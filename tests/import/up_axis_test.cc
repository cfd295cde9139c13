// Level import of files that are not Y-up metres (ImportOptions::up and
// ::scale, the NAME.import.json settings), the warning on bounds implausible
// for metres, and the errors for files whose content does not fit their
// extension.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gltf_builder.h"
#include "hitbox/import/level_import.h"
#include "temp_dir.h"
#include "test_util.h"

namespace hitbox::import {
namespace {

using hitbox::testing::BoxMesh;
using hitbox::testing::GltfBuilder;
using hitbox::testing::VecNear;

std::string Temp(const std::string& name) {
  static const hitbox::testing::TempDir dir("import-up");
  return dir.file(name);
}

std::string WriteText(const std::string& name, const std::string& text) {
  const std::string path = Temp(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The world positions of every mesh vertex of a level.
std::vector<Vec3> WorldVertices(const Level& level) {
  std::vector<Vec3> out;
  for (const Collider& c : level.colliders) {
    const std::optional<TriangleMeshShape> mesh = c.shape.mesh_input();
    if (!mesh) continue;
    for (const Vec3& v : mesh->vertices) out.push_back(c.pose.TransformPoint(v));
  }
  return out;
}

bool HasVertex(const std::vector<Vec3>& vs, const Vec3& p) {
  return std::any_of(vs.begin(), vs.end(), [&](const Vec3& v) { return VecNear(v, p, 1e-9); });
}

// A Z-up level in inches comes out Y-up in metres: (x, y, z) -> 0.0254 (x, z, -y).
TEST(LevelImportUp, ZUpInchesBecomeYUpMetres) {
  const std::string obj = WriteText("zup.obj",
                                    "o floor\nv 0 0 0\nv 100 0 0\nv 0 100 0\nv 0 0 50\n"
                                    "f 1 2 3\nf 1 2 4\n");
  ImportOptions options;
  options.up = UpAxis::kZ;
  options.scale = 0.0254;
  auto level = ImportLevel(obj, options);
  ASSERT_TRUE(level.ok()) << level.error().message;
  const std::vector<Vec3> vs = WorldVertices(*level);
  EXPECT_TRUE(HasVertex(vs, {2.54, 0, 0}));
  EXPECT_TRUE(HasVertex(vs, {0, 0, -2.54}));  // file +y (north) is world -z
  EXPECT_TRUE(HasVertex(vs, {0, 1.27, 0}));   // file up (+z) is world up (+y)
  EXPECT_TRUE(VecNear(level->report.bounds.min, {0, 0, -2.54}, 1e-9));
  EXPECT_TRUE(VecNear(level->report.bounds.max, {2.54, 1.27, 0}, 1e-9));
  EXPECT_EQ(level->report.up, UpAxis::kZ);
  EXPECT_NE(level->report.ToString().find("imported with up z, scale 0.0254"), std::string::npos)
      << level->report.ToString();

  // The defaults keep the file's coordinates (Y-up metres).
  auto plain = ImportLevel(obj);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(HasVertex(WorldVertices(*plain), {0, 0, 50}));
}

// Every up axis takes its own direction to +Y, by a rotation (lengths and
// handedness kept).
TEST(LevelImportUp, EveryAxisTurnsItsDirectionUp) {
  const std::vector<std::pair<UpAxis, Vec3>> axes = {
      {UpAxis::kY, {0, 1, 0}},  {UpAxis::kZ, {0, 0, 1}},  {UpAxis::kMinusZ, {0, 0, -1}},
      {UpAxis::kX, {1, 0, 0}},  {UpAxis::kMinusX, {-1, 0, 0}}, {UpAxis::kMinusY, {0, -1, 0}}};
  for (const auto& [up, dir] : axes) {
    EXPECT_TRUE(VecNear(UpAxisRotation(up).Rotate(dir), {0, 1, 0}, 1e-12)) << UpAxisName(up);
    auto parsed = ParseUpAxis(UpAxisName(up));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, up);
    // A triangle with one corner 10 units along the file's up axis.
    const Vec3 a = dir * 10.0;
    const Vec3 b = std::abs(dir.x) > 0.5 ? Vec3{0, 3, 0} : Vec3{3, 0, 0};
    char text[256];
    std::snprintf(text, sizeof(text), "o t\nv 0 0 0\nv %g %g %g\nv %g %g %g\nf 1 2 3\n", a.x, a.y,
                  a.z, b.x, b.y, b.z);
    ImportOptions options;
    options.up = up;
    auto level = ImportLevel(WriteText(std::string("axis_") + UpAxisName(up) + ".obj", text), options);
    ASSERT_TRUE(level.ok()) << level.error().message;
    EXPECT_TRUE(HasVertex(WorldVertices(*level), {0, 10, 0})) << UpAxisName(up);
  }
  EXPECT_TRUE(ParseUpAxis("+Z").ok());
  EXPECT_FALSE(ParseUpAxis("up").ok());
}

// glTF: the rotation lands in the poses (a box stays a box), the scale in the
// sizes; without options glTF's own Y-up metres are kept.
TEST(LevelImportUp, GltfNodesAreTurnedAndScaled) {
  GltfBuilder b;
  b.AddNode("UBX_crate", b.AddMesh("cube", BoxMesh({-1, -1, -1}, {1, 1, 1})), {{0, 0, 5}, {}, {}});
  const std::string path = Temp("zup.glb");
  ASSERT_TRUE(b.Write(path));
  ImportOptions options;
  options.up = UpAxis::kZ;
  options.scale = 0.5;
  auto level = ImportLevel(path, options);
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 1u);
  EXPECT_EQ(level->colliders[0].shape.kind(), ShapeKind::kBox);
  EXPECT_TRUE(VecNear(level->colliders[0].shape.half_extents(), {0.5, 0.5, 0.5}, 1e-9));
  EXPECT_TRUE(VecNear(level->colliders[0].pose.position, {0, 2.5, 0}, 1e-9));
  auto plain = ImportLevel(path);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(VecNear(plain->colliders[0].pose.position, {0, 0, 5}, 1e-9));
  options.scale = 0.0;
  EXPECT_FALSE(ImportLevel(path, options).ok());
}

// A level spanning kilometres (a file in inches read as metres) gets a
// warning that names the extent; scaled to metres it gets none.
TEST(LevelImportUp, ImplausibleBoundsWarn) {
  const std::string obj =
      WriteText("inches.obj", "o ground\nv 0 0 0\nv 232000 0 0\nv 0 0 232000\nf 1 2 3\n");
  auto level = ImportLevel(obj);
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->report.warnings.size(), 1u);
  EXPECT_NE(level->report.warnings[0].find("spans 232 km"), std::string::npos)
      << level->report.warnings[0];
  EXPECT_NE(level->report.ToString().find("warning: "), std::string::npos);
  ImportOptions inches;
  inches.scale = 0.0254;
  auto scaled = ImportLevel(obj, inches);
  ASSERT_TRUE(scaled.ok());
  EXPECT_TRUE(scaled->report.warnings.empty());
}

// NAME.import.json beside a level holds its up axis and scale; a bad one
// names the file and the member.
TEST(LevelImportUp, SettingsFile) {
  const std::string level = WriteText("map.obj", "o a\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
  EXPECT_EQ(ImportSettingsPath(level), Temp("map.import.json"));
  EXPECT_TRUE(IsImportSettingsFile(Temp("map.import.json")));
  EXPECT_FALSE(IsImportSettingsFile(level));
  auto none = ReadImportSettings(level);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->up, UpAxis::kY);
  WriteText("map.import.json", R"({"up": "z", "scale": 0.0254})");
  auto read = ReadImportSettings(level);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->up, UpAxis::kZ);
  EXPECT_EQ(read->scale, 0.0254);
  WriteText("map.import.json", R"({"up": "sideways"})");
  auto bad = ReadImportSettings(level);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("map.import.json: \"up\""), std::string::npos)
      << bad.error().message;
  WriteText("map.import.json", R"({"units": "inch"})");
  auto unknown = ReadImportSettings(level);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("\"units\" is not a setting"), std::string::npos)
      << unknown.error().message;
  WriteText("map.import.json", "up: z");
  EXPECT_FALSE(ReadImportSettings(level).ok());
}

// A file whose bytes do not fit its extension: the error names the file,
// what was expected and what the file looks like (not tinygltf's "Invalid magic.").
TEST(LevelImportUp, WrongFileTypesSaySo) {
  const std::string obj_text = "o a\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n";
  const std::string glb = WriteText("really_obj.glb", obj_text);
  auto r = ImportLevel(glb);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, glb + ": not a binary glTF (GLB, starting with 'glTF'): the file is text");

  GltfBuilder b;
  b.AddNode("wall", b.AddMesh("wall", BoxMesh({-1, -1, -1}, {1, 1, 1})));
  const std::string real_glb = Temp("real.glb");
  ASSERT_TRUE(b.Write(real_glb));
  const std::string gltf = Temp("really_glb.gltf");
  std::filesystem::copy_file(real_glb, gltf);
  auto g = ImportLevel(gltf);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("the file is a binary glTF (GLB) (rename it .glb)"),
            std::string::npos)
      << g.error().message;

  auto json_glb = ImportLevel(WriteText("json.glb", "{\"asset\": {\"version\": \"2.0\"}}"));
  ASSERT_FALSE(json_glb.ok());
  EXPECT_NE(json_glb.error().message.find("rename it .gltf"), std::string::npos);

  auto png = ImportLevel(WriteText("image.obj", std::string("\x89PNG\r\n\x1a\n\0\0\0", 11)));
  ASSERT_FALSE(png.ok());
  EXPECT_NE(png.error().message.find("image.obj: not a Wavefront OBJ text file: the file is a PNG image"),
            std::string::npos)
      << png.error().message;
  auto empty = ImportLevel(WriteText("empty.glb", ""));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("the file is empty"), std::string::npos);
}

}  // namespace
}  // namespace hitbox::import
