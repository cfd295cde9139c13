// Level import (import/): glTF written by tinygltf in the test (.gltf with
// an external .bin, and .glb) and OBJ fixtures in data/. Each case shows one
// rule of level_import.h: hierarchy transforms, baked scale, the UCX_/UBX_/
// USP_/UCP_ names, extras, dropped triangles, limits and errors.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <optional>
#include <random>
#include <set>
#include <string>

#include "gltf_builder.h"
#include "hitbox/import/level_import.h"
#include "hitbox/world/collider_set.h"
#include "node_builder.h"
#include "obj_text.h"
#include "temp_dir.h"
#include "test_util.h"

namespace hitbox::import {
namespace {

using hitbox::testing::BoxMesh;
using hitbox::testing::GltfBuilder;
using hitbox::testing::PoseNear;
using hitbox::testing::RoundMesh;
using hitbox::testing::TestMesh;
using hitbox::testing::VecNear;

const std::string kData = std::string(HITBOX_SOURCE_DIR) + "/tests/import/data/";

// A path in a directory removed when the test program exits.
std::string Temp(const std::string& name) {
  static const hitbox::testing::TempDir dir("import");
  return dir.file(name);
}

/// Writes the builder's model to a temp file and imports it.
Result<Level> WriteAndImport(GltfBuilder& b, const std::string& name, const ImportOptions& options = {}) {
  const std::string path = Temp(name);
  if (!b.Write(path)) return Error{ErrorCode::kInternal, "tinygltf could not write " + path};
  return ImportLevel(path, options);
}

size_t Count(const Level& level, ShapeKind kind) { return level.report.counts[static_cast<size_t>(kind)]; }

bool HasNote(const Level& level, const std::string& text) {
  for (const std::string& n : level.report.notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

/// The input of the level's one collider, a mesh (fatal failures otherwise:
/// call it under ASSERT_NO_FATAL_FAILURE).
void OnlyMesh(const Level& level, TriangleMeshShape* out) {
  ASSERT_EQ(level.colliders.size(), 1u);
  const std::optional<TriangleMeshShape> in = level.colliders[0].shape.mesh_input();
  ASSERT_TRUE(in.has_value());
  *out = *in;
}

Quat YawDegrees(double deg) { return Quat::FromAxisAngle({0, 1, 0}, deg * std::numbers::pi / 180.0); }
std::vector<double> Q(const Quat& q) { return {q.x, q.y, q.z, q.w}; }

// A box under a translated, rotated parent lands where parent * child puts it,
// in both the .gltf (+ .bin) and the .glb form.
TEST(LevelImport, HierarchyTransformsAreApplied) {
  for (const char* name : {"hier.gltf", "hier.glb"}) {
    GltfBuilder b;
    const int cube = b.AddMesh("cube", BoxMesh({-1, -1, -1}, {1, 1, 1}));
    const int parent = b.AddNode("group", -1, {{10, 0, 0}, Q(YawDegrees(90)), {}});
    b.AddNode("UBX_crate", cube, {{0, 0, 5}, {}, {}}, parent);
    auto level = WriteAndImport(b, name);
    ASSERT_TRUE(level.ok()) << level.error().message;
    ASSERT_EQ(level->colliders.size(), 1u);
    const Collider& c = level->colliders[0];
    EXPECT_EQ(c.shape.kind(), ShapeKind::kBox);
    EXPECT_TRUE(VecNear(c.shape.half_extents(), {1, 1, 1}, 1e-6));
    // Yaw 90 degrees takes local +Z to world +X: (0, 0, 5) -> (5, 0, 0), plus (10, 0, 0).
    EXPECT_TRUE(VecNear(c.pose.position, {15, 0, 0}, 1e-6)) << name;
    EXPECT_TRUE(PoseNear(c.pose, Pose({15, 0, 0}, YawDegrees(90)), 1e-6)) << name;
    EXPECT_EQ(level->sources[0], "node 1 'UBX_crate'");
    EXPECT_EQ(level->report.format, std::string(name).ends_with(".glb") ? LevelFormat::kGlb : LevelFormat::kGltf);
  }
}

// Scale is baked into mesh vertices; the pose keeps only rotation and translation.
TEST(LevelImport, ScaleIsBakedIntoMeshVertices) {
  GltfBuilder b;
  const int cube = b.AddMesh("cube", BoxMesh({-1, -1, -1}, {1, 1, 1}));
  b.AddNode("wall", cube, {{0, 1, 0}, {}, {2, 1, 3}});
  auto level = WriteAndImport(b, "scaled.glb");
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 1u);
  const Collider& c = level->colliders[0];
  ASSERT_EQ(c.shape.kind(), ShapeKind::kMesh);
  const Aabb local = c.shape.LocalBounds();
  EXPECT_TRUE(VecNear(local.min, {-2, -1, -3}, 1e-6));
  EXPECT_TRUE(VecNear(local.max, {2, 1, 3}, 1e-6));
  EXPECT_TRUE(PoseNear(c.pose, Pose({0, 1, 0}), 1e-12));
  EXPECT_EQ(level->report.triangles, 12u);
  EXPECT_TRUE(VecNear(level->report.bounds.min, {-2, 0, -3}, 1e-6));
}

// A scale that keeps every float32 vertex a float32 value (a mirror, powers
// of two) bakes them as floats; one that does not (0.1, 1/3) bakes them as
// doubles: either way each mesh vertex is the file's float times the scale,
// exactly.
TEST(LevelImport, ScaledFloatVerticesAreBakedExactly) {
  TestMesh m;
  for (int i = 0; i < 4; ++i) {
    const float f = static_cast<float>(i);
    m.vertices.push_back({0.3f + f, 0.7f * f, 1.1f});
    m.vertices.push_back({0.3f + f, 0.7f * f + 0.9f, 2.3f});
  }
  for (uint32_t i = 0; i + 3 < 8; i += 2) {
    m.triangles.push_back({i, i + 2, i + 1});
    m.triangles.push_back({i + 1, i + 2, i + 3});
  }
  const std::vector<std::array<double, 3>> scales = {
      {-1.0, 2.0, 0.5}, {0.1, 1.0, 1.0 / 3.0}, {1.0, 1.0, 0.1}};
  // The strip placed by one node with `transform`: its vertices are the
  // file's scaled by `scale`, exactly.
  const auto expect_baked = [&](const GltfBuilder::Trs& transform,
                                const std::array<double, 3>& scale, const std::string& what) {
    GltfBuilder b;
    b.AddNode("strip", b.AddMesh("strip", m), transform);
    auto level = WriteAndImport(b, "baked_floats.glb");
    ASSERT_TRUE(level.ok()) << level.error().message;
    TriangleMeshShape in;
    ASSERT_NO_FATAL_FAILURE(OnlyMesh(*level, &in));
    ASSERT_EQ(in.vertices.size(), m.vertices.size());
    for (size_t i = 0; i < m.vertices.size(); ++i) {
      const std::array<float, 3>& v = m.vertices[i];
      const Vec3 baked{scale[0] * v[0], scale[1] * v[1], scale[2] * v[2]};
      EXPECT_EQ(in.vertices[i], baked) << what << ", vertex " << i;
    }
  };
  for (const std::array<double, 3>& scale : scales) {
    expect_baked({{}, {}, {scale[0], scale[1], scale[2]}}, scale,
                 "scale " + std::to_string(scale[0]) + " " + std::to_string(scale[1]) + " " +
                     std::to_string(scale[2]));
  }
  // A rotation bakes nothing, though its matrix's columns are unit only to
  // within rounding (a float quaternion): the vertices are the file's.
  const double h = static_cast<float>(std::sqrt(0.5));
  expect_baked({{}, {0, h, 0, h}, {}}, {1.0, 1.0, 1.0}, "rotated");
}

// Quantized positions (KHR_mesh_quantization): shorts and bytes, normalized
// as glTF maps them (-128 and -32768 to -1) or taken as they are, each
// vertex padded to 4 bytes, under the node's scale, in .glb and .gltf.
TEST(LevelImport, QuantizedPositionsAreRead) {
  struct Case {
    int type;
    bool normalized;
    std::vector<std::array<int32_t, 3>> positions;
    std::array<double, 3> scale;
  };
  const std::vector<Case> cases = {
      {TINYGLTF_COMPONENT_TYPE_SHORT, true,
       {{-32768, 0, 0}, {32767, 0, 0}, {0, 0, 1000}, {0, -1000, 7}}, {2.0, 0.5, 2.0}},
      {TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT, true,
       {{0, 0, 0}, {65535, 0, 0}, {0, 0, 1000}, {0, 1000, 7}}, {1.0, 1.0, 1.0}},
      {TINYGLTF_COMPONENT_TYPE_BYTE, true, {{-128, 0, 0}, {127, 0, 0}, {0, 0, 100}, {0, -100, 7}},
       {1.0, 1.0, 1.0}},
      {TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE, false,
       {{0, 0, 0}, {200, 0, 0}, {0, 0, 200}, {0, 255, 7}}, {0.1, 0.1, 0.1}},
  };
  const auto dequantize = [](int type, bool normalized, int32_t c) {
    const auto f = static_cast<float>(c);
    if (!normalized) return f;
    switch (type) {
      case TINYGLTF_COMPONENT_TYPE_SHORT: return std::max(f / 32767.0f, -1.0f);
      case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT: return f / 65535.0f;
      case TINYGLTF_COMPONENT_TYPE_BYTE: return std::max(f / 127.0f, -1.0f);
      default: return f / 255.0f;
    }
  };
  for (const Case& c : cases) {
    for (const char* name : {"quantized.glb", "quantized.gltf"}) {
      GltfBuilder b;
      const int mesh = b.AddQuantizedMesh("floor", c.type, c.normalized, c.positions,
                                          {{0, 1, 2}, {0, 3, 1}});
      b.AddNode("floor", mesh, {{}, {}, {c.scale[0], c.scale[1], c.scale[2]}});
      auto level = WriteAndImport(b, name);
      ASSERT_TRUE(level.ok()) << level.error().message;
      TriangleMeshShape in;
      ASSERT_NO_FATAL_FAILURE(OnlyMesh(*level, &in));
      ASSERT_EQ(in.vertices.size(), c.positions.size());
      for (size_t i = 0; i < c.positions.size(); ++i) {
        Vec3 want;
        for (int a = 0; a < 3; ++a) {
          want[a] = c.scale[a] * dequantize(c.type, c.normalized, c.positions[i][a]);
        }
        EXPECT_EQ(in.vertices[i], want) << name << " type " << c.type << " vertex " << i;
      }
    }
  }
}

// Compressed geometry a file requires is an error naming the extension.
TEST(LevelImport, CompressedGeometryIsNamed) {
  for (const char* ext : {"KHR_draco_mesh_compression", "EXT_meshopt_compression"}) {
    GltfBuilder b;
    b.AddNode("wall", b.AddMesh("wall", BoxMesh({0, 0, 0}, {4, 3, 0.5f})));
    b.model().extensionsUsed.push_back(ext);
    b.model().extensionsRequired.push_back(ext);
    auto level = WriteAndImport(b, "compressed.glb");
    ASSERT_FALSE(level.ok());
    EXPECT_NE(level.error().message.find(std::string("requires ") + ext), std::string::npos)
        << level.error().message;
  }
}

// A node drawn per instance (EXT_mesh_gpu_instancing) makes a collider an
// instance, at the node's transform times the instance's; instances of one
// scale share their mesh. Counts that differ between attributes are an
// error naming the extension.
TEST(LevelImport, InstancedNodesPlaceTheirMeshPerInstance) {
  GltfBuilder b;
  const int tree = b.AddMesh("tree", BoxMesh({-1, 0, -1}, {1, 3, 1}));
  b.AddNode("trees", tree, {{0, 0, 100}, {}, {}});
  const float h = static_cast<float>(std::sqrt(0.5));
  const int t = b.AddFloatAccessor({0, 0, 0, 10, 0, 0, 20, 0, 0}, TINYGLTF_TYPE_VEC3);
  const int r = b.AddFloatAccessor({0, 0, 0, 1, 0, h, 0, h, 0, 0, 0, 1}, TINYGLTF_TYPE_VEC4);
  const int s = b.AddFloatAccessor({1, 1, 1, 1, 1, 1, 2, 2, 2}, TINYGLTF_TYPE_VEC3);
  const auto instancing = [&](int scale) {
    tinygltf::Value::Object attributes{{"TRANSLATION", tinygltf::Value(t)},
                                       {"ROTATION", tinygltf::Value(r)},
                                       {"SCALE", tinygltf::Value(scale)}};
    return tinygltf::Value(
        tinygltf::Value::Object{{"attributes", tinygltf::Value(std::move(attributes))}});
  };
  b.model().nodes[0].extensions["EXT_mesh_gpu_instancing"] = instancing(s);
  b.model().extensionsUsed.push_back("EXT_mesh_gpu_instancing");
  auto level = WriteAndImport(b, "instanced.glb");
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 3u);
  EXPECT_TRUE(PoseNear(level->colliders[0].pose, Pose({0, 0, 100}), 1e-12));
  EXPECT_TRUE(PoseNear(level->colliders[1].pose, Pose({10, 0, 100}, YawDegrees(90)), 1e-6));
  EXPECT_TRUE(PoseNear(level->colliders[2].pose, Pose({20, 0, 100}), 1e-12));
  EXPECT_EQ(level->colliders[0].shape.surface(), level->colliders[1].shape.surface());
  EXPECT_NE(level->colliders[0].shape.surface(), level->colliders[2].shape.surface());
  EXPECT_TRUE(VecNear(level->colliders[2].shape.LocalBounds().max, {2, 6, 2}, 1e-12));
  EXPECT_EQ(level->sources[2], "node 0 'trees' instance 2");
  EXPECT_EQ(level->report.triangles, 36u);

  // Rotations as normalized shorts (glTF allows them): the same poses.
  const int16_t k = static_cast<int16_t>(std::lround(std::sqrt(0.5) * 32767.0));
  const int short_r = b.AddShortAccessor({0, 0, 0, 32767, 0, k, 0, k, 0, 0, 0, 32767},
                                         TINYGLTF_TYPE_VEC4, /*normalized=*/true);
  tinygltf::Value::Object attributes{{"TRANSLATION", tinygltf::Value(t)},
                                     {"ROTATION", tinygltf::Value(short_r)}};
  b.model().nodes[0].extensions["EXT_mesh_gpu_instancing"] =
      tinygltf::Value(tinygltf::Value::Object{{"attributes", tinygltf::Value(attributes)}});
  auto shorts = WriteAndImport(b, "instanced_shorts.glb");
  ASSERT_TRUE(shorts.ok()) << shorts.error().message;
  ASSERT_EQ(shorts->colliders.size(), 3u);
  EXPECT_TRUE(PoseNear(shorts->colliders[1].pose, Pose({10, 0, 100}, YawDegrees(90)), 1e-4));

  const int short_scale = b.AddFloatAccessor({1, 1, 1, 1, 1, 1}, TINYGLTF_TYPE_VEC3);
  b.model().nodes[0].extensions["EXT_mesh_gpu_instancing"] = instancing(short_scale);
  auto bad = WriteAndImport(b, "instanced_bad.glb");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("node 0 'trees': EXT_mesh_gpu_instancing: SCALE has 2 "
                                     "instances where another attribute has 3"),
            std::string::npos)
      << bad.error().message;
}

// A node placed beyond the coordinate range a set takes (+-1e9 m) is an
// error naming it, not a collider the set would refuse: a mesh, a second
// placement of a mesh (its shapes shared), a fitted primitive.
TEST(LevelImport, NodesBeyondTheCoordinateRangeAreNamed) {
  const auto import_error = [](bool again, const char* name, const GltfBuilder::Trs& far) {
    GltfBuilder b;
    const int cube = b.AddMesh("cube", BoxMesh({-1, -1, -1}, {1, 1, 1}));
    if (again) b.AddNode("near", cube);
    b.AddNode(name, cube, far);
    auto level = WriteAndImport(b, "far.glb");
    EXPECT_FALSE(level.ok()) << name;
    return level.ok() ? std::string() : level.error().message;
  };
  EXPECT_NE(import_error(false, "wall", {{0, 0, -1.5e9}, {}, {}})
                .find("node 0 'wall': placed at (0, 0, -1.5e+09), beyond +-1e9 metres"),
            std::string::npos);
  EXPECT_NE(import_error(true, "again", {{2e30, 0, 0}, {}, {}}).find("node 1 'again': placed at ("),
            std::string::npos);
  EXPECT_NE(import_error(false, "UBX_crate", {{0, 1e10, 0}, {}, {}})
                .find("node 0 'UBX_crate': placed at ("),
            std::string::npos);
}

// A box under non-uniform scale along its own axes stays a box; a sphere and a
// capsule become hulls (an ellipsoid is no sphere), and the report says so.
TEST(LevelImport, NonUniformScaleOnPrimitives) {
  GltfBuilder b;
  const int cube = b.AddMesh("cube", BoxMesh({-1, -1, -1}, {1, 1, 1}));
  const int ball = b.AddMesh("ball", RoundMesh(1.0f, 0.0f));
  const int pill = b.AddMesh("pill", RoundMesh(0.5f, 1.0f));
  b.AddNode("UBX_stretched", cube, {{}, {}, {2, 1, 3}});
  b.AddNode("USP_egg", ball, {{10, 0, 0}, {}, {1, 2, 1}});
  b.AddNode("UCP_fat", pill, {{20, 0, 0}, {}, {2, 1, 1}});
  b.AddNode("USP_round", ball, {{30, 0, 0}, {}, {2, 2, 2}});
  auto level = WriteAndImport(b, "nonuniform.glb");
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 4u);
  EXPECT_EQ(level->colliders[0].shape.kind(), ShapeKind::kBox);
  EXPECT_TRUE(VecNear(level->colliders[0].shape.half_extents(), {2, 1, 3}, 1e-6));
  EXPECT_EQ(level->colliders[1].shape.kind(), ShapeKind::kConvexHull);
  EXPECT_NEAR(level->colliders[1].shape.WorldBounds(level->colliders[1].pose).max.y, 2.0, 1e-6);
  EXPECT_EQ(level->colliders[2].shape.kind(), ShapeKind::kConvexHull);
  EXPECT_EQ(level->colliders[3].shape.kind(), ShapeKind::kSphere);  // uniform scale: still a sphere
  EXPECT_NEAR(level->colliders[3].shape.radius(), 2.0, 1e-6);
  EXPECT_TRUE(HasNote(*level, "node 1 'USP_egg': a sphere under non-uniform scale"));
  EXPECT_TRUE(HasNote(*level, "node 2 'UCP_fat': a capsule under non-uniform scale"));
  EXPECT_EQ(Count(*level, ShapeKind::kConvexHull), 2u);
}

// Non-uniform scale above a rotated child shears: a box there becomes a hull.
TEST(LevelImport, ShearMakesABoxAHull) {
  GltfBuilder b;
  const int cube = b.AddMesh("cube", BoxMesh({-1, -1, -1}, {1, 1, 1}));
  const int parent = b.AddNode("squash", -1, {{}, {}, {2, 1, 1}});
  b.AddNode("UBX_tilted", cube, {{}, Q(YawDegrees(45)), {}}, parent);
  auto level = WriteAndImport(b, "shear.glb");
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 1u);
  EXPECT_EQ(level->colliders[0].shape.kind(), ShapeKind::kConvexHull);
  EXPECT_TRUE(HasNote(*level, "'UBX_tilted': a box under a shearing transform"));
  // The hull's corners are the sheared cube's: x reaches 2 * (cos 45 + sin 45).
  const Aabb wb = level->colliders[0].shape.WorldBounds(level->colliders[0].pose);
  EXPECT_NEAR(wb.max.x, 2.0 * std::sqrt(2.0), 1e-5);
}

// Each Unreal name makes its shape, fitted in the node's local frame and then
// placed: a capsule along local X (longest side) is rotated to lie along it.
TEST(LevelImport, UnrealCollisionNames) {
  GltfBuilder b;
  const int cube = b.AddMesh("cube", BoxMesh({0, 0, 0}, {2, 4, 6}));
  const int ball = b.AddMesh("ball", RoundMesh(1.5f, 0.0f));
  TestMesh pill_x = RoundMesh(0.5f, 1.0f);
  for (auto& v : pill_x.vertices) v = {v[1], v[0], v[2]};  // capsule along local X
  const int pill = b.AddMesh("pill", pill_x);
  const int hull = b.AddMesh("UCX_rock", RoundMesh(1.0f, 0.0f, 3, 8));  // the mesh's name counts too
  b.AddNode("UBX_crate", cube, {{1, 0, 0}, Q(YawDegrees(30)), {}});
  b.AddNode("USP_ball", ball, {{0, 5, 0}, {}, {}});
  b.AddNode("UCP_pill", pill, {{0, 0, 9}, {}, {}});
  b.AddNode("rock", hull, {});
  b.AddNode("floor", cube, {});
  auto level = WriteAndImport(b, "names.gltf");
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 5u);
  const auto& c = level->colliders;
  // Box: half extents (1, 2, 3), centre (1, 2, 3) in the node frame, then placed.
  EXPECT_EQ(c[0].shape.kind(), ShapeKind::kBox);
  EXPECT_TRUE(VecNear(c[0].shape.half_extents(), {1, 2, 3}, 1e-6));
  EXPECT_TRUE(VecNear(c[0].pose.position, Vec3{1, 0, 0} + YawDegrees(30).Rotate({1, 2, 3}), 1e-6));
  EXPECT_TRUE(PoseNear(c[0].pose, Pose(c[0].pose.position, YawDegrees(30)), 1e-6));
  EXPECT_EQ(c[1].shape.kind(), ShapeKind::kSphere);
  EXPECT_NEAR(c[1].shape.radius(), 1.5, 1e-6);
  EXPECT_TRUE(VecNear(c[1].pose.position, {0, 5, 0}, 1e-6));
  ASSERT_EQ(c[2].shape.kind(), ShapeKind::kCapsule);
  EXPECT_NEAR(c[2].shape.radius(), 0.5, 1e-6);
  EXPECT_NEAR(c[2].shape.half_height(), 1.0, 1e-5);
  EXPECT_TRUE(VecNear(c[2].pose.TransformDirection({0, 1, 0}).Abs(), {1, 0, 0}, 1e-9));
  EXPECT_TRUE(VecNear(c[2].pose.position, {0, 0, 9}, 1e-6));
  EXPECT_EQ(c[3].shape.kind(), ShapeKind::kConvexHull);
  EXPECT_EQ(c[3].shape.hull()->vertices().size(), 2u + 6u * 8u - 8u);  // the equator rings coincide
  EXPECT_EQ(c[4].shape.kind(), ShapeKind::kMesh);
  EXPECT_EQ(Count(*level, ShapeKind::kBox), 1u);
  EXPECT_EQ(Count(*level, ShapeKind::kSphere), 1u);
  EXPECT_EQ(Count(*level, ShapeKind::kCapsule), 1u);
  EXPECT_EQ(Count(*level, ShapeKind::kConvexHull), 1u);
  EXPECT_EQ(Count(*level, ShapeKind::kMesh), 1u);
  // Ids follow file order from first_id.
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i].id, i + 1);
}

// Every vertex of a fitted sphere / capsule / box lies inside the fitted shape.
TEST(LevelImport, FittedPrimitivesHoldTheirVertices) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  TestMesh blob;
  for (int i = 0; i < 60; ++i) blob.vertices.push_back({u(rng), 0.5f * u(rng), 0.25f * u(rng)});
  blob.triangles = {{0, 1, 2}};
  GltfBuilder b;
  const int mesh = b.AddMesh("blob", blob);
  b.AddNode("UBX_a", mesh, {{1, 2, 3}, Q(YawDegrees(20)), {}});
  b.AddNode("USP_b", mesh, {{1, 2, 3}, Q(YawDegrees(20)), {}});
  b.AddNode("UCP_c", mesh, {{1, 2, 3}, Q(YawDegrees(20)), {}});
  auto level = WriteAndImport(b, "blob.glb");
  ASSERT_TRUE(level.ok()) << level.error().message;
  const Pose node({1, 2, 3}, YawDegrees(20));
  for (const Collider& c : level->colliders) {
    for (const auto& v : blob.vertices) {
      const Vec3 world = node.TransformPoint({v[0], v[1], v[2]});
      const Vec3 local = c.pose.InverseTransformPoint(world);
      // Inside: the support along the point's direction reaches at least as far.
      const Vec3 dir = local.LengthSq() > 0 ? local : Vec3{1, 0, 0};
      EXPECT_GE(Dot(c.shape.Support(dir), dir.Normalized()) + 1e-6, Dot(local, dir.Normalized()))
          << ShapeKindName(c.shape.kind());
    }
  }
}

// Layer and user data come from extras: node, else mesh, else nearest ancestor.
TEST(LevelImport, ExtrasSetLayerAndUserData) {
  GltfBuilder b;
  const int cube = b.AddMesh("cube", BoxMesh({-1, -1, -1}, {1, 1, 1}));
  const int tagged = b.AddMesh("tagged", BoxMesh({-1, -1, -1}, {1, 1, 1}),
                               {{"hitbox_layer", tinygltf::Value(7)}});
  const int group = b.AddNode("walls", -1, {}, -1,
                              {{"hitbox_layer", tinygltf::Value(3)}, {"hitbox_user_data", tinygltf::Value(42)}});
  b.AddNode("UBX_a", cube, {}, group);
  b.AddNode("UBX_b", cube, {}, group, {{"hitbox_layer", tinygltf::Value(5)}});
  b.AddNode("UBX_c", tagged, {}, group);
  b.AddNode("UBX_d", cube, {}, -1,
            {{"hitbox_user_data", tinygltf::Value(std::string("18446744073709551615"))}});
  ImportOptions options;
  options.layer = 2;
  options.first_id = 100;
  auto level = WriteAndImport(b, "extras.glb", options);
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 4u);
  const auto& c = level->colliders;
  EXPECT_EQ(c[0].layer, 3u);
  EXPECT_EQ(c[0].user_data, 42u);
  EXPECT_EQ(c[1].layer, 5u);
  EXPECT_EQ(c[1].user_data, 42u);
  EXPECT_EQ(c[2].layer, 7u);  // the mesh's extras before the parent's
  EXPECT_EQ(c[3].layer, 2u);  // nothing set: ImportOptions::layer
  EXPECT_EQ(c[3].user_data, 18446744073709551615ull);
  EXPECT_EQ(c[0].id, 100u);
  EXPECT_EQ(c[3].id, 103u);
}

// A layer out of range is an error naming the node.
TEST(LevelImport, BadExtrasNameTheNode) {
  GltfBuilder b;
  const int cube = b.AddMesh("cube", BoxMesh({-1, -1, -1}, {1, 1, 1}));
  b.AddNode("ok", cube);
  b.AddNode("UBX_bad", cube, {}, -1, {{"hitbox_layer", tinygltf::Value(40)}});
  auto level = WriteAndImport(b, "badextras.glb");
  ASSERT_FALSE(level.ok());
  EXPECT_EQ(level.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(level.error().message.find("node 1 'UBX_bad'"), std::string::npos) << level.error().message;
  EXPECT_NE(level.error().message.find("hitbox_layer must be at most 31"), std::string::npos)
      << level.error().message;
}

// Zero-area triangles (a repeated vertex, collinear points) are dropped and counted.
TEST(LevelImport, DegenerateTrianglesAreDropped) {
  TestMesh m;
  m.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 0, 1}, {2, 0, 0}, {1, 0, 1}};
  m.triangles = {{0, 1, 2}, {1, 4, 2}, {0, 1, 3}, {2, 2, 4}};
  GltfBuilder b;
  b.AddNode("ground", b.AddMesh("ground", m));
  auto level = WriteAndImport(b, "degenerate.gltf");
  ASSERT_TRUE(level.ok()) << level.error().message;
  EXPECT_EQ(level->report.triangles, 2u);
  EXPECT_EQ(level->report.dropped_triangles, 2u);
  ASSERT_EQ(level->colliders.size(), 1u);
  EXPECT_EQ(level->colliders[0].shape.mesh_input()->triangles.size(), 2u);
}

// A mesh above the triangle limit is split into several colliders, said in the report.
TEST(LevelImport, LargeMeshesAreSplit) {
  GltfBuilder b;
  b.AddNode("big", b.AddMesh("big", BoxMesh({-1, -1, -1}, {1, 1, 1})));
  ImportOptions options;
  options.max_mesh_triangles = 5;
  auto level = WriteAndImport(b, "split.glb", options);
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 3u);
  EXPECT_EQ(level->colliders[0].shape.mesh_input()->triangles.size(), 5u);
  EXPECT_EQ(level->colliders[2].shape.mesh_input()->triangles.size(), 2u);
  EXPECT_EQ(level->report.triangles, 12u);
  EXPECT_TRUE(HasNote(*level, "12 triangles split into 3 mesh colliders of at most 5"));
  EXPECT_EQ(kDefaultMaxMeshTriangles, 1ull << 20);
}

// Split pieces of a scaled mesh with zero-area triangles among the rest: in
// order, each piece holds the next kept triangles with their baked vertices
// exactly, its vertices those it uses in the node's order and no others.
TEST(LevelImport, SplitPiecesKeepBakedTrianglesInOrder) {
  TestMesh m;
  for (int i = 0; i < 6; ++i) {
    m.vertices.push_back({1.0f + 0.25f * static_cast<float>(i), 0.5f, 0.25f});
    m.vertices.push_back({1.0f + 0.25f * static_cast<float>(i), 1.0f, 1.0f});
  }
  std::vector<std::array<uint32_t, 3>> expected;
  for (uint32_t i = 0; i + 3 < 12; i += 2) {
    m.triangles.push_back({i, i + 2, i + 1});
    expected.push_back({i, i + 2, i + 1});
    m.triangles.push_back({i, i, i + 3});  // zero area: dropped
    m.triangles.push_back({i + 1, i + 2, i + 3});
    expected.push_back({i + 1, i + 2, i + 3});
  }
  GltfBuilder b;
  b.AddNode("strip", b.AddMesh("strip", m), {{0, 1, 0}, {}, {2, 1, 3}});
  ImportOptions options;
  options.max_mesh_triangles = 3;
  auto level = WriteAndImport(b, "split_dropped.glb", options);
  ASSERT_TRUE(level.ok()) << level.error().message;
  EXPECT_EQ(level->report.dropped_triangles, 5u);
  ASSERT_EQ(level->colliders.size(), 4u);
  size_t next = 0;
  for (const Collider& c : level->colliders) {
    const auto in = c.shape.mesh_input();
    ASSERT_TRUE(in.has_value());
    // The node's vertices this piece uses, in the node's order: index j of
    // the piece is the j-th of them.
    std::set<uint32_t> used;
    for (size_t t = next; t < next + in->triangles.size() && t < expected.size(); ++t) {
      used.insert(expected[t].begin(), expected[t].end());
    }
    const std::vector<uint32_t> rank(used.begin(), used.end());
    ASSERT_EQ(in->vertices.size(), rank.size());
    for (const auto& t : in->triangles) {
      ASSERT_LT(next, expected.size());
      for (int k = 0; k < 3; ++k) {
        ASSERT_LT(t[k], rank.size());
        EXPECT_EQ(rank[t[k]], expected[next][k]) << "triangle " << next << " corner " << k;
        const std::array<float, 3>& v = m.vertices[expected[next][k]];
        const Vec3 baked{2.0 * v[0], 1.0 * v[1], 3.0 * v[2]};
        EXPECT_EQ(in->vertices[t[k]], baked) << "triangle " << next << " corner " << k;
      }
      ++next;
    }
  }
  EXPECT_EQ(next, expected.size());
}

// A mesh whose vertices are all used keeps the file's vertex order, so it is
// stored as compactly as the same arrays given directly: a grid listed row by
// row predicts its triangles from their first vertex (renumbering the
// vertices by first use interleaved the first rows and took 10 more bits a
// triangle on a 1M-triangle grid).
TEST(LevelImport, MeshesKeepTheFileVertexOrder) {
  constexpr uint32_t kSide = 48;
  TestMesh m;
  for (uint32_t r = 0; r <= kSide; ++r) {
    for (uint32_t c = 0; c <= kSide; ++c) {
      const float x = static_cast<float>(c) * 0.731f + 0.1f * std::sin(0.7f * static_cast<float>(r));
      const float z = static_cast<float>(r) * 0.731f + 0.1f * std::cos(0.9f * static_cast<float>(c));
      m.vertices.push_back({x, 0.8f * std::sin(0.37f * x) * std::cos(0.23f * z), z});
    }
  }
  for (uint32_t r = 0; r < kSide; ++r) {
    for (uint32_t c = 0; c < kSide; ++c) {
      const uint32_t v = r * (kSide + 1) + c;
      m.triangles.push_back({v, v + kSide + 1, v + 1});
      m.triangles.push_back({v + 1, v + kSide + 1, v + kSide + 2});
    }
  }
  GltfBuilder b;
  b.AddNode("terrain", b.AddMesh("terrain", m));
  auto level = WriteAndImport(b, "grid.glb");
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 1u);
  // The same arrays made into a mesh directly take the same bytes.
  TriangleMeshShape direct;
  for (const std::array<float, 3>& v : m.vertices) direct.vertices.push_back({v[0], v[1], v[2]});
  direct.triangles = m.triangles;
  auto shape = Shape::Make(direct);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  ColliderSet imported, made;
  ASSERT_TRUE(imported.AddBulk(level->colliders).ok());
  std::vector<Collider> direct_colliders = level->colliders;
  direct_colliders[0].shape = *shape;
  ASSERT_TRUE(made.AddBulk(direct_colliders).ok());
  EXPECT_EQ(imported.MemoryBytes(), made.MemoryBytes());
  const auto in = level->colliders[0].shape.mesh_input();
  ASSERT_TRUE(in.has_value());
  ASSERT_EQ(in->vertices.size(), m.vertices.size());
  for (size_t i = 0; i < m.vertices.size(); ++i) {
    const std::array<float, 3>& v = m.vertices[i];
    ASSERT_EQ(in->vertices[i], Vec3(v[0], v[1], v[2])) << "vertex " << i;
  }
  ASSERT_EQ(in->triangles.size(), m.triangles.size());
  for (size_t t = 0; t < m.triangles.size(); ++t) {
    ASSERT_EQ(in->triangles[t], m.triangles[t]) << "triangle " << t;
  }
}

// Nodes placing one mesh under the same baked scale share the shapes the
// first made (one built mesh, split pieces and notes alike); another scale
// makes its own. The report counts every node's triangles and notes.
TEST(LevelImport, AMeshPlacedAgainSharesItsShapes) {
  GltfBuilder b;
  const int wall = b.AddMesh("wall", BoxMesh({0, 0, 0}, {4, 3, 0.5f}));
  b.AddNode("wall_a", wall, {{0, 0, 0}, {}, {}});
  b.AddNode("wall_b", wall, {{10, 0, 0}, Q(YawDegrees(90)), {}});
  b.AddNode("wall_tall", wall, {{20, 0, 0}, {}, {1, 2, 1}});
  b.AddNode("wall_c", wall, {{30, 0, 0}, {}, {}});
  ImportOptions options;
  options.max_mesh_triangles = 8;  // two pieces a wall
  auto level = WriteAndImport(b, "shared.glb", options);
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 8u);
  const auto surface = [&](size_t i) { return level->colliders[i].shape.surface(); };
  for (size_t piece = 0; piece < 2; ++piece) {
    EXPECT_EQ(surface(2 + piece), surface(piece));  // wall_b
    EXPECT_NE(surface(4 + piece), surface(piece));  // wall_tall: scaled
    EXPECT_EQ(surface(6 + piece), surface(piece));  // wall_c
  }
  EXPECT_NE(surface(0), surface(1));
  EXPECT_TRUE(PoseNear(level->colliders[3].pose, Pose({10, 0, 0}, YawDegrees(90)), 1e-12));
  EXPECT_EQ(level->sources[7], "node 3 'wall_c'");
  EXPECT_EQ(level->report.nodes, 4u);
  EXPECT_EQ(level->report.triangles, 48u);
  EXPECT_TRUE(HasNote(*level, "node 1 'wall_b': 12 triangles split into 2 mesh colliders"));
  EXPECT_TRUE(HasNote(*level, "node 3 'wall_c': 12 triangles split into 2 mesh colliders"));
  // The tall wall's vertices are the scaled ones, the others' the file's.
  EXPECT_TRUE(VecNear(level->colliders[4].shape.LocalBounds().max, {4, 6, 0.5}, 1e-12) ||
                  VecNear(level->colliders[5].shape.LocalBounds().max, {4, 6, 0.5}, 1e-12));
}

// The file's buffers are released once no node left reads them, so a mesh
// placed by several nodes still has its data for the last of them.
TEST(LevelImport, AMeshPlacedTwiceKeepsItsBufferForBoth) {
  GltfBuilder b;
  const int wall = b.AddMesh("wall", BoxMesh({0, 0, 0}, {4, 3, 0.5f}));
  b.AddNode("wall_a", wall, {{0, 0, 0}, {}, {}});
  b.AddNode("wall_b", wall, {{10, 0, 0}, {}, {}});
  b.AddNode("crate", b.AddMesh("crate", BoxMesh({0, 0, 0}, {1, 1, 1})));
  auto level = WriteAndImport(b, "placed_twice.glb");
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 3u);
  for (const Collider& c : level->colliders) {
    EXPECT_EQ(c.shape.mesh_input()->triangles.size(), 12u);
  }
  EXPECT_TRUE(VecNear(level->colliders[1].pose.position, {10, 0, 0}, 0.0));
}

// A UCX_ with more than 256 points is reduced to its hull's vertices; one whose
// hull itself has more than 256 vertices is an error naming the node.
TEST(LevelImport, LargeHullsAreReducedOrRefused) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.9f, 0.9f);
  TestMesh cloud = BoxMesh({-1, -1, -1}, {1, 1, 1});
  for (int i = 0; i < 600; ++i) cloud.vertices.push_back({u(rng), u(rng), u(rng)});
  TestMesh ball = RoundMesh(1.0f, 0.0f, 12, 24);  // 2 + 24 * 23 distinct points, all on the hull
  GltfBuilder b;
  b.AddNode("UCX_cloud", b.AddMesh("cloud", cloud));
  auto level = WriteAndImport(b, "cloud.glb");
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders[0].shape.kind(), ShapeKind::kConvexHull);
  EXPECT_EQ(level->colliders[0].shape.hull()->vertices().size(), 8u);
  EXPECT_TRUE(HasNote(*level, "'UCX_cloud': 608 distinct vertices reduced to the hull's 8 vertices"));

  GltfBuilder round;
  round.AddNode("UCX_ball", round.AddMesh("ball", ball));
  auto refused = WriteAndImport(round, "ball.glb");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("node 0 'UCX_ball'"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("at most 256"), std::string::npos) << refused.error().message;
}

// Points and lines cannot collide: skipped, and a node left without triangles
// makes no collider (said in the report).
TEST(LevelImport, PointsAndLinesAreSkipped) {
  GltfBuilder b;
  const int marker = b.AddMesh("marker", BoxMesh({-1, -1, -1}, {1, 1, 1}));
  b.model().meshes[static_cast<size_t>(marker)].primitives[0].mode = TINYGLTF_MODE_POINTS;
  b.AddNode("UBX_spawn", marker);
  b.AddNode("wall", b.AddMesh("wall", BoxMesh({-1, -1, -1}, {1, 1, 1})));
  auto level = WriteAndImport(b, "points.glb");
  ASSERT_TRUE(level.ok()) << level.error().message;
  EXPECT_EQ(level->colliders.size(), 1u);
  EXPECT_TRUE(HasNote(*level, "node 0 'UBX_spawn': mesh 0 primitive 0 draws points or lines, skipped"));
  EXPECT_TRUE(HasNote(*level, "node 0 'UBX_spawn': no triangles, no collider made"));
}

// A flat UBX_ cannot be a box: the error names the node and the axis.
TEST(LevelImport, FlatPrimitiveIsAnError) {
  GltfBuilder b;
  b.AddNode("UBX_sheet", b.AddMesh("sheet", BoxMesh({-1, 0, -1}, {1, 0, 1})));
  auto level = WriteAndImport(b, "flat.glb");
  ASSERT_FALSE(level.ok());
  EXPECT_NE(level.error().message.find("node 0 'UBX_sheet': cannot make a box"), std::string::npos)
      << level.error().message;
  EXPECT_NE(level.error().message.find("along local y"), std::string::npos) << level.error().message;
}

// An index beyond the vertices names the node and the primitive.
TEST(LevelImport, IndexOutOfRangeNamesTheNode) {
  TestMesh m = BoxMesh({-1, -1, -1}, {1, 1, 1});
  m.triangles[3][1] = 99;
  GltfBuilder b;
  b.AddNode("wall", b.AddMesh("wall", m));
  auto level = WriteAndImport(b, "badindex.gltf");
  ASSERT_FALSE(level.ok());
  EXPECT_NE(level.error().message.find("node 0 'wall'"), std::string::npos) << level.error().message;
  EXPECT_NE(level.error().message.find("is 99, beyond its 8 vertices"), std::string::npos)
      << level.error().message;
}

// Files tinygltf cannot read: a truncated .glb, broken JSON, a missing .bin.
TEST(LevelImport, MalformedGltfFilesAreErrors) {
  GltfBuilder b;
  b.AddNode("wall", b.AddMesh("wall", BoxMesh({-1, -1, -1}, {1, 1, 1})));
  const std::string glb = Temp("truncated.glb");
  ASSERT_TRUE(b.Write(glb));
  std::filesystem::resize_file(glb, std::filesystem::file_size(glb) / 2);
  auto truncated = ImportLevel(glb);
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(truncated.error().message.rfind(glb + ": ", 0), 0u) << truncated.error().message;

  const std::string broken = Temp("broken.gltf");
  std::ofstream(broken) << "{\"asset\": {\"version\": \"2.0\"}, \"nodes\": [";
  auto bad_json = ImportLevel(broken);
  ASSERT_FALSE(bad_json.ok());
  EXPECT_EQ(bad_json.error().message.rfind(broken + ": ", 0), 0u) << bad_json.error().message;

  const std::string gltf = Temp("nobin.gltf");
  ASSERT_TRUE(b.Write(gltf));
  std::filesystem::remove(Temp("nobin.bin"));
  auto no_bin = ImportLevel(gltf);
  ASSERT_FALSE(no_bin.ok());

  auto missing = ImportLevel(Temp("does_not_exist.glb"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_FALSE(ImportLevel(kData + "level_equivalent.json").ok());  // not a level file
}

// The OBJ fixture: one collider per object, degenerate faces dropped, quads triangulated.
TEST(LevelImport, ObjObjectsAndNames) {
  auto level = ImportLevel(kData + "level.obj");
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 4u);
  const auto& c = level->colliders;
  EXPECT_EQ(level->report.format, LevelFormat::kObj);
  EXPECT_EQ(c[0].shape.kind(), ShapeKind::kMesh);
  EXPECT_EQ(level->report.triangles, 2u);
  EXPECT_EQ(level->report.dropped_triangles, 2u);
  EXPECT_EQ(c[1].shape.kind(), ShapeKind::kBox);
  EXPECT_TRUE(VecNear(c[1].pose.position, {3, 1, 3}, 1e-9));
  EXPECT_EQ(c[2].shape.kind(), ShapeKind::kSphere);
  EXPECT_NEAR(c[2].shape.radius(), 1.0, 1e-12);
  EXPECT_EQ(c[3].shape.kind(), ShapeKind::kConvexHull);
  EXPECT_EQ(level->sources[1], "object 'UBX_crate'");
  EXPECT_TRUE(VecNear(level->report.bounds.min, {-10, 0, -10}, 1e-9));
  EXPECT_TRUE(VecNear(level->report.bounds.max, {10, 2, 10}, 1e-9));
  const std::string text = level->report.ToString();
  EXPECT_NE(text.find("4 colliders from 4 objects"), std::string::npos) << text;
  EXPECT_NE(text.find("2 degenerate dropped"), std::string::npos) << text;
}

// OBJ errors: a syntax error names the line (tinyobjloader's message), a face
// beyond the vertices names the object.
TEST(LevelImport, MalformedObjNamesLineOrObject) {
  auto zero = ImportLevel(kData + "zero_index.obj");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("line 7"), std::string::npos) << zero.error().message;
  auto quad = ImportLevel(kData + "bad_quad.obj");  // tinyobjloader would drop it and only warn
  ASSERT_FALSE(quad.ok());
  EXPECT_NE(quad.error().message.find(
                "object 'wall': face 'f 1 2 3 9' uses vertex 9, beyond the 4 vertices"),
            std::string::npos)
      << quad.error().message;
  auto face = ImportLevel(kData + "bad_face.obj");
  ASSERT_FALSE(face.ok());
  EXPECT_NE(face.error().message.find("object 'wall': face 0 uses vertex 9 of 3"), std::string::npos)
      << face.error().message;
}

// OBJ coordinates written as decimals come in as the doubles nearest the
// text (as strtod reads it), so a level's mesh packs them as q / 10^k: fewer
// bytes than doubles, every vertex exact.
TEST(LevelImport, ObjDecimalsAreReadExactlyAndPacked) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> micro(-5'000'000, 5'000'000);
  std::string text = "o terrain\n";
  std::vector<std::string> coords;
  const int n = 60;
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) {
      char buf[96];
      std::snprintf(buf, sizeof(buf), "%.6f %d.%06d %.6f", c * 0.5, micro(rng) / 1'000'000,
                    std::abs(micro(rng)) % 1'000'000, r * 0.5);
      coords.emplace_back(buf);
      text += "v " + coords.back() + "\n";
    }
  }
  for (int r = 0; r + 1 < n; ++r) {
    for (int c = 0; c + 1 < n; ++c) {
      const int a = r * n + c + 1;
      text += "f " + std::to_string(a) + " " + std::to_string(a + n) + " " + std::to_string(a + 1) +
              "\nf " + std::to_string(a + 1) + " " + std::to_string(a + n) + " " +
              std::to_string(a + n + 1) + "\n";
    }
  }
  const std::string path = Temp("decimals.obj");
  std::ofstream(path, std::ios::binary) << text;
  auto level = ImportLevel(path);
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 1u);
  const Shape& shape = level->colliders[0].shape;
  const std::optional<TriangleMeshShape> mesh = shape.mesh_input();
  ASSERT_TRUE(mesh.has_value());
  ASSERT_EQ(mesh->vertices.size(), coords.size());
  std::set<std::array<double, 3>> want;  // each vertex as strtod reads its text
  for (const std::string& line : coords) {
    std::array<double, 3> v{};
    const char* at = line.c_str();
    for (double& w : v) {
      char* end = nullptr;
      w = std::strtod(at, &end);
      at = end;
    }
    want.insert(v);
  }
  for (const Vec3& v : mesh->vertices) {
    EXPECT_EQ(want.count({v.x, v.y, v.z}), 1u) << v.x << " " << v.y << " " << v.z;
  }
  const double per =
      static_cast<double>(shape.DataBytes()) / static_cast<double>(mesh->triangles.size());
  std::printf("decimal OBJ terrain: %.2f bytes/triangle\n", per);
  EXPECT_LT(per, 20.0);  // as doubles: over 24
}

// The real level (../shared/levels/ctf_inyard.glb) written as an OBJ the way
// Blender writes one (each mesh an object, "v %.6f %.6f %.6f"): its meshes
// read back as the decimals of the text, and take no more bytes
// than the .glb's floats (they are stored as the floats the decimals were
// written from; as the decimals themselves they took 16% more).
TEST(LevelImport, RealLevelAsASixPlaceObjTakesTheBytesOfItsGlb) {
  const std::string glb = std::string(HITBOX_SOURCE_DIR) + "/../shared/levels/ctf_inyard.glb";
  auto level = ImportLevel(glb);
  ASSERT_TRUE(level.ok()) << glb << ": " << level.error().message;
  std::string text;
  std::vector<Vec3> written;  // each vertex as the text reads
  size_t glb_bytes = 0, base = 1, meshes = 0;
  for (const Collider& c : level->colliders) {
    const std::optional<TriangleMeshShape> mesh = c.shape.mesh_input();
    if (!mesh.has_value()) continue;
    ++meshes;
    glb_bytes += c.shape.DataBytes();
    text += "o mesh" + std::to_string(meshes) + "\n";
    for (const Vec3& v : mesh->vertices) {
      char line[128];
      std::snprintf(line, sizeof(line), "v %.6f %.6f %.6f\n", v.x, v.y, v.z);
      text += line;
      char* end = nullptr;
      const double x = std::strtod(line + 2, &end);
      const double y = std::strtod(end, &end);
      written.push_back({x, y, std::strtod(end, &end)});
    }
    for (const auto& t : mesh->triangles) {
      text += "f " + std::to_string(t[0] + base) + " " + std::to_string(t[1] + base) + " " +
              std::to_string(t[2] + base) + "\n";
    }
    base += mesh->vertices.size();
  }
  ASSERT_GT(meshes, 40u);
  const std::string path = Temp("ctf_inyard.obj");
  std::ofstream(path, std::ios::binary) << text;
  auto obj = ImportLevel(path);
  ASSERT_TRUE(obj.ok()) << obj.error().message;
  size_t obj_bytes = 0, at = 0, obj_meshes = 0;
  for (const Collider& c : obj->colliders) {
    const std::optional<TriangleMeshShape> mesh = c.shape.mesh_input();
    ASSERT_TRUE(mesh.has_value());
    ++obj_meshes;
    obj_bytes += c.shape.DataBytes();
    for (const Vec3& v : mesh->vertices) {
      ASSERT_LT(at, written.size());
      // Equal values (a packed mesh keeps -0 as +0, as it always has).
      ASSERT_TRUE(v.x == written[at].x && v.y == written[at].y && v.z == written[at].z)
          << "vertex " << at << ": " << v.x << " " << v.y << " " << v.z << " against "
          << written[at].x << " " << written[at].y << " " << written[at].z;
      ++at;
    }
  }
  EXPECT_EQ(obj_meshes, meshes);
  EXPECT_EQ(at, written.size());
  std::printf("ctf_inyard: .glb meshes %zu bytes, as a \"%%.6f\" OBJ %zu\n", glb_bytes, obj_bytes);
  EXPECT_LE(obj_bytes, glb_bytes);
}

// Every OBJ coordinate is the double nearest its text, however many digits
// it has (tinyobjloader's own parser lands a few ulps off for some: the
// importer reads the "v" lines again), in any of OBJ's line endings, with
// a leading '+', and with lines across the reader's 64 KiB windows (a
// "\r\n" split between two of them).
TEST(LevelImport, ObjCoordinatesAreTheDoublesNearestTheirText) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> value(-3000.0, 3000.0);
  for (const char* eol : {"\n", "\r\n", "\r"}) {
    std::string text = std::string("o rough") + eol;
    std::vector<std::string> coords;
    const int n = 1500;
    for (int i = 0; i < n; ++i) {
      char buf[160];
      const double x = std::fabs(value(rng));  // written with a '+' now and then
      std::snprintf(buf, sizeof(buf), "%s%.17g %.17g %.17g", i % 7 == 0 ? "+" : "", x, value(rng),
                    value(rng));
      coords.emplace_back(buf);
      text += "v " + coords.back() + eol;
    }
    for (int i = 0; i + 2 < n; i += 3) {
      text += "f " + std::to_string(i + 1) + " " + std::to_string(i + 2) + " " +
              std::to_string(i + 3) + eol;
    }
    if (std::string(eol) == "\r\n") {
      // A comment line first, sized to put a "\r" last in the first window.
      constexpr size_t kWindow = size_t{1} << 16;
      const size_t r = text.rfind('\r', kWindow - 4);
      text = "#" + std::string(kWindow - 1 - r - 3, 'x') + eol + text;
      ASSERT_EQ(text.substr(kWindow - 1, 2), "\r\n");
    }
    ASSERT_GT(text.size(), size_t{1} << 16);
    const std::string path = Temp("rough.obj");
    std::ofstream(path, std::ios::binary) << text;
    auto level = ImportLevel(path);
    ASSERT_TRUE(level.ok()) << level.error().message;
    TriangleMeshShape mesh;
    ASSERT_NO_FATAL_FAILURE(OnlyMesh(*level, &mesh));
    ASSERT_EQ(mesh.vertices.size(), coords.size());
    for (size_t i = 0; i < coords.size(); ++i) {
      const char* at = coords[i].c_str();
      Vec3 want;
      for (int a = 0; a < 3; ++a) {
        char* end = nullptr;
        want[a] = std::strtod(at, &end);
        at = end;
      }
      ASSERT_EQ(mesh.vertices[i], want) << "vertex " << i << " '" << coords[i] << "'";
    }
  }
}

// An OBJ object's vertices keep the file's order, whatever order its faces
// first use them in (first use interleaved a grid's rows).
TEST(LevelImport, ObjObjectsKeepTheFileVertexOrder) {
  const std::string path = Temp("order.obj");
  std::ofstream(path, std::ios::binary) << "v 0 0 0\nv 1 0 0\nv 0 0 1\nv 1 0 1\nv 5 5 5\n"
                                           "o quad\nf 4 2 3\nf 3 2 1\n"
                                           "o far\nf 5 1 4\n";
  auto level = ImportLevel(path);
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 2u);
  const auto quad = level->colliders[0].shape.mesh_input();
  ASSERT_TRUE(quad.has_value());
  const std::vector<Vec3> quad_vertices = {{0, 0, 0}, {1, 0, 0}, {0, 0, 1}, {1, 0, 1}};
  EXPECT_EQ(quad->vertices, quad_vertices);
  const std::vector<std::array<uint32_t, 3>> quad_triangles = {{3, 1, 2}, {2, 1, 0}};
  EXPECT_EQ(quad->triangles, quad_triangles);
  const auto far = level->colliders[1].shape.mesh_input();
  ASSERT_TRUE(far.has_value());
  const std::vector<Vec3> far_vertices = {{0, 0, 0}, {1, 0, 1}, {5, 5, 5}};
  EXPECT_EQ(far->vertices, far_vertices);
  const std::vector<std::array<uint32_t, 3>> far_triangles = {{2, 0, 1}};
  EXPECT_EQ(far->triangles, far_triangles);
}

/// Writes `text` as an OBJ file and imports it.
Result<Level> ImportObjText(const std::string& name, const std::string& text) {
  const std::string path = Temp(name);
  std::ofstream(path, std::ios::binary) << text;
  return ImportLevel(path);
}

/// Success when `level` failed with a message that contains `text`.
::testing::AssertionResult FailsWith(const Result<Level>& level, const std::string& text) {
  if (level.ok()) return ::testing::AssertionFailure() << "imported";
  if (level.error().message.find(text) == std::string::npos) {
    return ::testing::AssertionFailure() << level.error().message;
  }
  return ::testing::AssertionSuccess();
}

using Triangles = std::vector<std::array<uint32_t, 3>>;

/// Collider `i`'s mesh triangles (none when it is not a mesh).
Triangles MeshTriangles(const Level& level, size_t i) {
  const std::optional<TriangleMeshShape> mesh = level.colliders.at(i).shape.mesh_input();
  return mesh.has_value() ? mesh->triangles : Triangles{};
}

// A quad splits along its shorter diagonal (0-2 or 1-3), along 1-3 on a tie,
// as tinyobjloader's LoadObj split it.
TEST(LevelImport, ObjQuadsSplitAlongTheShorterDiagonal) {
  auto level = ImportObjText("quads.obj",
                             "o short02\nv 0 0 0\nv 3 0 0\nv 1 0 1\nv 0 0 1\nf 1 2 3 4\n"
                             "o short13\nv 0 0 0\nv 1 0 0\nv 3 0 2\nv 0 0 1\nf 5 6 7 8\n"
                             "o tie\nv 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\nf 9 10 11 12\n");
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 3u);
  EXPECT_EQ(MeshTriangles(*level, 0), (Triangles{{0, 1, 2}, {0, 2, 3}}));
  EXPECT_EQ(MeshTriangles(*level, 1), (Triangles{{0, 1, 3}, {1, 2, 3}}));
  EXPECT_EQ(MeshTriangles(*level, 2), (Triangles{{0, 1, 3}, {1, 2, 3}}));
}

// A square whose diagonals differ only in their last bits splits by the
// exact coordinates, the values its vertices keep: 0-2 is 2 ulps shorter
// here. tinyobjloader's own reading of the text (x a ulp off in 4 corners,
// z in one) makes 1-3 the shorter, so LoadObj split it the other way.
TEST(LevelImport, ObjQuadsSplitByTheExactCoordinates) {
  auto level = ImportObjText("rounding.obj",
                             "o square\nv 2.405197 0 2.071919\nv -0.835220 0 1.896468\n"
                             "v -0.659769 0 -1.343949\nv 2.580648 0 -1.168498\nf 1 2 3 4\n");
  ASSERT_TRUE(level.ok()) << level.error().message;
  TriangleMeshShape mesh;
  ASSERT_NO_FATAL_FAILURE(OnlyMesh(*level, &mesh));
  EXPECT_EQ(mesh.triangles, (Triangles{{0, 1, 2}, {0, 2, 3}}));
  const Vec3 v0 = mesh.vertices[0], v1 = mesh.vertices[1], v2 = mesh.vertices[2],
             v3 = mesh.vertices[3];
  const double d02 = (v2 - v0).LengthSq(), d13 = (v3 - v1).LengthSq();
  EXPECT_LT(d02, d13);
  EXPECT_LT(d13 - d02, 1e-14);  // a near-tie: a few ulps of 21
}

// Polygons of 5+ corners are cut by LoadObj's ear clipping, in its plane
// (x-z, x-y here) and order: the concave corner's ear comes first.
TEST(LevelImport, ObjPolygonsAreEarClippedAsBefore) {
  auto level = ImportObjText("polygons.obj",
                             "o pentagon\nv 0 0 0\nv 4 0 0\nv 4 0 4\nv 2 0 1\nv 0 0 4\n"
                             "f 1 2 3 4 5\n"
                             "o hexagon\nv 0 0 0\nv 4 0 0\nv 4 4 0\nv 2 1 0\nv 0 4 0\nv -2 2 0\n"
                             "f 6 7 8 9 10 11\n");
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 2u);
  EXPECT_EQ(MeshTriangles(*level, 0), (Triangles{{1, 2, 3}, {3, 4, 0}, {0, 1, 3}}));
  EXPECT_EQ(MeshTriangles(*level, 1), (Triangles{{1, 2, 3}, {3, 4, 5}, {3, 5, 0}, {0, 1, 3}}));
}

// Negative indices count back from the vertices read so far (-1: the last).
TEST(LevelImport, ObjNegativeIndicesAreRelative) {
  auto level = ImportObjText("relative.obj",
                             "o a\nv 0 0 0\nv 1 0 0\nv 0 0 1\nf -3 -2 -1\n"
                             "o b\nv 5 0 0\nv 6 0 0\nv 5 0 1\nv 6 0 1\nf -4 -3 -1 -2\nf 1 -1 -2\n");
  ASSERT_TRUE(level.ok()) << level.error().message;
  ASSERT_EQ(level->colliders.size(), 2u);
  EXPECT_EQ(MeshTriangles(*level, 0), (Triangles{{0, 1, 2}}));
  // b uses file vertices 1, 4, 5, 6, 7: the quad 4 5 7 6, then 1 7 6.
  EXPECT_EQ(MeshTriangles(*level, 1), (Triangles{{1, 2, 3}, {2, 4, 3}, {0, 4, 3}}));
}

// Objects are LoadObj's shapes: faces before any "o" make one, "o" and "g"
// lines start one, and an unnamed one is named by its index among them,
// which counts an object of "l" lines alone (kept at an "o", not at a "g").
TEST(LevelImport, ObjObjectsAndGroupsSplitAsBefore) {
  auto level = ImportObjText("split.obj",
                             "v 0 0 0\nv 1 0 0\nv 0 0 1\nv 1 0 1\nf 1 2 3\n"
                             "o lines_only\nl 1 2\n"
                             "o \nf 2 4 3\n"
                             "g left wall\nf 1 2 4\n"
                             "g solo\nl 1 3\n"
                             "g \nf 1 3 4\n");
  ASSERT_TRUE(level.ok()) << level.error().message;
  const std::vector<std::string> sources = {"object #0", "object #2", "object 'left wall'",
                                            "object #4"};
  EXPECT_EQ(level->sources, sources);
}

// A face using a vertex that is not there is an error naming the object,
// the face and the vertex; a quad may use a vertex read later in its
// object, as LoadObj allowed, and a vertex of a later object's is an error
// that comes before an earlier object's own error, as it did.
TEST(LevelImport, ObjFacesOutOfRangeAreErrors) {
  auto forward =
      ImportObjText("forward.obj", "o fwd\nv 0 0 0\nv 1 0 0\nf 1 2 3 4\nv 1 0 1\nv 0 0 1\n");
  ASSERT_TRUE(forward.ok()) << forward.error().message;
  EXPECT_EQ(MeshTriangles(*forward, 0), (Triangles{{0, 1, 3}, {1, 2, 3}}));

  auto late = ImportObjText("late.obj",
                            "o UBX_flat\nv 0 0 0\nv 1 0 0\nv 1 0 1\nf 1 2 3\n"
                            "o early\nf 1 2 3 4\no late\nv 0 0 1\nf 1 2 4\n");
  EXPECT_TRUE(FailsWith(late,
                        "object 'early': face 'f 1 2 3 4' uses vertex 4, beyond the 3 "
                        "vertices read by the object's end"));

  auto before = ImportObjText("before.obj", "o neg\nv 0 0 0\nv 1 0 0\nv 1 0 1\nf -9 1 2 3\n");
  EXPECT_TRUE(
      FailsWith(before, "object 'neg': face 'f -5 1 2 3' uses vertex -5, before the first"));

  auto triangle = ImportObjText("triangle.obj", "v 0 0 0\nv 1 0 0\nv 0 0 1\nf 1 2 3\nf 3 -4 1\n");
  EXPECT_TRUE(FailsWith(triangle, "object #0: face 1 uses vertex 0 of 3"));
}

// Where a token is not a number whole, tinyobjloader's reading of it
// stands ("1.5f" is 1.5, a missing one 0), also for a vertex an earlier
// object uses before its line (1e400: infinite, an error there).
TEST(LevelImport, ObjRoughTokensReadAsTinyobjloaderReadsThem) {
  auto level =
      ImportObjText("rough_tokens.obj", "o rough\nv 1.5f 0 0\nv 0 0 2.5x\nv 0 3\nf 1 2 3\n");
  ASSERT_TRUE(level.ok()) << level.error().message;
  TriangleMeshShape mesh;
  ASSERT_NO_FATAL_FAILURE(OnlyMesh(*level, &mesh));
  EXPECT_EQ(mesh.vertices, (std::vector<Vec3>{{1.5, 0, 0}, {0, 0, 2.5}, {0, 3, 0}}));

  auto infinite = ImportObjText(
      "infinite.obj", "o early\nf 1 2 3\no late\nv 0 0 0\nv 1 1e400 0\nv 0 0 1\nf 1 2 3\n");
  EXPECT_TRUE(FailsWith(infinite, "object 'early': vertex 2 is not finite"));
}

/// An OBJ of one triangle fan over "v" lines `coords` (each "x y z").
std::string FanObj(const std::vector<std::string>& coords) {
  std::string text = "o fan\n";
  for (const std::string& c : coords) text += "v " + c + "\n";
  for (size_t i = 2; i < coords.size(); ++i) {
    text += "f 1 " + std::to_string(i) + " " + std::to_string(i + 1) + "\n";
  }
  return text;
}

/// Each line's x, y, z as strtod reads them.
std::vector<Vec3> Strtod(const std::vector<std::string>& coords) {
  std::vector<Vec3> out;
  for (const std::string& line : coords) {
    Vec3 v;
    const char* at = line.c_str();
    for (int a = 0; a < 3; ++a) {
      char* end = nullptr;
      v[a] = std::strtod(at, &end);
      at = end;
    }
    out.push_back(v);
  }
  return out;
}

/// Reads `coords` as an OBJ file's text and imports it: fatal failures
/// unless every position read is bit for bit strtod's (a zero's sign too),
/// kept as decimals over `divisor` or (0) as doubles, and the level's mesh
/// holds those values.
void ExpectObjPositions(const std::string& name, const std::vector<std::string>& coords,
                        double divisor) {
  const std::string path = Temp(name);
  std::ofstream(path, std::ios::binary) << FanObj(coords);
  ObjText text;
  ASSERT_TRUE(ReadObjText(path, &text).ok());
  EXPECT_EQ(text.positions.form() == NodeVertices::Form::kDecimals, divisor != 0.0);
  if (divisor != 0.0) {
    EXPECT_EQ(text.positions.divisor(), divisor);
  }
  const std::vector<Vec3> want = Strtod(coords);
  ASSERT_EQ(text.positions.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    for (int a = 0; a < 3; ++a) {
      ASSERT_EQ(std::bit_cast<uint64_t>(text.positions.Coordinate(i, a)),
                std::bit_cast<uint64_t>(want[i][a]))
          << "'" << coords[i] << "' axis " << a << ": " << text.positions.Coordinate(i, a);
    }
  }
  auto level = ImportLevel(path);
  ASSERT_TRUE(level.ok()) << level.error().message;
  TriangleMeshShape mesh;
  ASSERT_NO_FATAL_FAILURE(OnlyMesh(*level, &mesh));
  EXPECT_EQ(mesh.vertices, want);
}

// When every coordinate is a short decimal whose q fits an int32 over the
// file's one divisor 10^K (K its most digits after the point), the OBJ's
// positions are kept so, each exactly the double strtod reads: signs, "-0",
// "+", digit counts from 0 to K, and q at the int32 limit (2^31 - 1).
TEST(LevelImport, ObjShortDecimalsAreKeptAsInt32sExactly) {
  const std::vector<std::string> coords = {
      "0.000000 0 0",       "1.5 -0.000000 0.123456", "-12 3.141593 +2.25",
      "2147.483647 -1 0.1", "-2147.483647 7 -0.5",    "0.000001 -0.000001 100",
      "-0.000000 -1.5 -2",  "-0 -0.0 -3.000000",      "333.333333 -0.3 0.7"};
  ASSERT_NO_FATAL_FAILURE(ExpectObjPositions("decimal_edges.obj", coords, 1e6));
  // Fewer digits: the divisor is the file's own, 10^K.
  ASSERT_NO_FATAL_FAILURE(ExpectObjPositions(
      "decimal_k2.obj", {"0 0 0", "1.25 0 -7.5", "0 21474836.47 1", "-3 2 1.1"}, 100.0));
  // A coordinate of fewer digits is scaled to K: 2147.48364 is q 2147483640.
  ASSERT_NO_FATAL_FAILURE(ExpectObjPositions(
      "decimal_scaled.obj", {"0 0 0", "2147.48364 0 0.000001", "0 1 0", "-2147.48364 0 1"}, 1e6));
}

// One coordinate that is not a short decimal, or whose q over the file's
// divisor passes the int32 range (its own digits fitting), keeps the whole
// file's positions as doubles, strtod's values still.
TEST(LevelImport, ObjCoordinatesThatDoNotFitStayDoubles) {
  const std::vector<std::vector<std::string>> files = {
      {"0 0 0", "3000.123456 0 0", "0 1 0", "0 0 1"},        // q 3000123456
      {"0 0 0", "2147.483648 0 0", "0 1 0", "0 0 1"},        // q 2^31
      {"0 0 0", "-2147.483648 0 0", "0 1 0", "0 0 1"},       // q -2^31
      {"0 0 0", "3000.5 0 0", "0 1 0.000001", "0 0 1"},      // 3000.5 at K = 6
      {"0 0 0", "2147.48365 0 0", "0 1 0.000001", "0 0 1"},  // 2147483650 at K = 6
      {"0 0 0", "1e-3 0 0", "0 1 0", "0 0 1"},               // an exponent
      {"0 0 0", "0.0000000001 0 1", "0 1 0", "0 0 1"},       // 10 digits
      {"0 0 0", "1.5 0 0", "0 1 0", "0 0 1.5f"},             // not a number whole
      {"0 0 0", "1. 0 0", "0 1 0", "0 0 1"},                 // no digit after the point
  };
  for (size_t f = 0; f < files.size(); ++f) {
    SCOPED_TRACE(files[f][1] + " / " + files[f][3]);
    ASSERT_NO_FATAL_FAILURE(ExpectObjPositions("doubles.obj", files[f], 0.0));
  }
}

// NodeVertices keeps each form's values exactly: a scene file's vertices
// pushed as float32 until one is not, then every one as doubles (a -0 and a
// float's every bit kept), as are pushes onto decimals and floats appended
// to doubles; copies, appends and resizes in their own form;
// the mesh made of each form is the mesh of its doubles.
TEST(LevelImport, NodeVerticesKeepEveryFormExactly) {
  const auto bits = [](double x) { return std::bit_cast<uint64_t>(x); };
  const std::vector<Vec3> pushed = {{-0.0, 0.1f, 1e-30f}, {3.0, -0.0, 0.5}, {0.1, 2.0, -7.0}};
  NodeVertices read = NodeVertices::Floats({});
  for (size_t i = 0; i < pushed.size(); ++i) {
    read.Push(pushed[i]);
    EXPECT_EQ(read.form() == NodeVertices::Form::kFloats, i < 2) << "after vertex " << i;
  }
  ASSERT_EQ(read.size(), pushed.size());
  for (size_t i = 0; i < pushed.size(); ++i) {
    for (int a = 0; a < 3; ++a) {
      EXPECT_EQ(bits(read[i][a]), bits(pushed[i][a])) << "vertex " << i << " axis " << a;
    }
  }
  // Pushed onto decimals, or floats appended to doubles: all doubles, exact.
  NodeVertices decimal = NodeVertices::Decimals({kDecimalNegativeZero, 1500, -2}, 1000.0);
  decimal.Push({0.1, 2.0, -7.0});
  NodeVertices onto_doubles(std::vector<Vec3>{{0.1, 2.0, -7.0}});
  onto_doubles.AppendFloats({-0.0f, 0.1f, 3.0f});
  ASSERT_EQ(decimal.form(), NodeVertices::Form::kDoubles);
  ASSERT_EQ(onto_doubles.form(), NodeVertices::Form::kDoubles);
  ASSERT_EQ(decimal.size(), 2u);
  ASSERT_EQ(onto_doubles.size(), 2u);
  const Vec3 decimal_want[2] = {{-0.0, 1.5, -0.002}, {0.1, 2.0, -7.0}};
  const Vec3 onto_doubles_want[2] = {{0.1, 2.0, -7.0}, {-0.0, 0.1f, 3.0}};
  for (size_t i = 0; i < 2; ++i) {
    for (int a = 0; a < 3; ++a) {
      EXPECT_EQ(bits(decimal[i][a]), bits(decimal_want[i][a])) << i << " " << a;
      EXPECT_EQ(bits(onto_doubles[i][a]), bits(onto_doubles_want[i][a])) << i << " " << a;
    }
  }
  const NodeVertices forms[] = {
      NodeVertices::Floats({1.5f, -0.0f, 2.25f, 0.1f, 3, 4, 5, 6, 7}),
      NodeVertices::Decimals({1500, kDecimalNegativeZero, -2, 1, 2, 3, 4, 5, 6}, 1000.0),
      NodeVertices(std::vector<Vec3>{{0.1, -0.0, 3}, {1, 2, 3}, {4, 5, 6}})};
  for (const NodeVertices& from : forms) {
    SCOPED_TRACE(static_cast<int>(from.form()));
    // Vertices 2, 0 in that order, by copy and by append; then vertex 1 over slot 0.
    NodeVertices copied = from.Like(2);
    from.CopyTo(2, 0, &copied);
    from.CopyTo(0, 1, &copied);
    NodeVertices appended = from.Like(0);
    appended.Append(from, 2);
    appended.Append(from, 0);
    ASSERT_EQ(copied.form(), from.form());
    ASSERT_EQ(copied.divisor(), from.divisor());
    ASSERT_EQ(copied.size(), 2u);
    ASSERT_EQ(appended.size(), 2u);
    for (int a = 0; a < 3; ++a) {
      EXPECT_EQ(bits(copied[0][a]), bits(from[2][a]));
      EXPECT_EQ(bits(copied[1][a]), bits(from[0][a]));
      EXPECT_EQ(bits(appended[0][a]), bits(from[2][a]));
      EXPECT_EQ(bits(appended[1][a]), bits(from[0][a]));
      EXPECT_EQ(bits(from.Coordinate(0, a)), bits(from[0][a]));
    }
    NodeVertices in_place = from;
    in_place.CopyTo(1, 0, &in_place);
    in_place.Resize(1);
    ASSERT_EQ(in_place.size(), 1u);
    for (int a = 0; a < 3; ++a) EXPECT_EQ(bits(in_place[0][a]), bits(from[1][a]));
    // The mesh of each form is the mesh of its doubles, to the bit.
    NodeVertices made = from;
    auto mesh = made.MakeMesh({{0, 1, 2}});
    ASSERT_TRUE(mesh.ok()) << mesh.error().message;
    std::vector<Vec3> doubles;
    for (size_t i = 0; i < from.size(); ++i) doubles.push_back(from[i]);
    auto wide = Shape::Make(TriangleMeshShape{doubles, {{0, 1, 2}}});
    ASSERT_TRUE(wide.ok());
    const std::optional<TriangleMeshShape> input = mesh->mesh_input();
    const std::optional<TriangleMeshShape> want = wide->mesh_input();
    ASSERT_TRUE(input.has_value() && want.has_value());
    ASSERT_EQ(input->vertices.size(), want->vertices.size());
    for (size_t i = 0; i < want->vertices.size(); ++i) {
      for (int a = 0; a < 3; ++a) {
        EXPECT_EQ(bits(input->vertices[i][a]), bits(want->vertices[i][a])) << i << " " << a;
      }
    }
  }
}

// A mesh node's decimals are kept through the bake when it is the identity
// (the OBJ's by default), with each zero's sign as the doubles' product
// gives it (-0 stays -0 only where the row's other terms are -0 too), and
// widened to the baked doubles under any other bake or for a fitted shape.
TEST(LevelImport, DecimalNodesBakeAsTheirDoubles) {
  // (-0, 1.5, -0.002), (-0, -0.007, -0.001), (0, -0, -0) over 1000.
  const std::vector<int32_t> q = {
      kDecimalNegativeZero, 1500, -2, kDecimalNegativeZero, -7, -1, 0, kDecimalNegativeZero,
      kDecimalNegativeZero};
  Mat33 scaled;
  scaled.row[1] = {0, 2, 0};
  for (const bool keep : {true, false}) {
    for (const Mat33& bake : {Mat33::Identity(), scaled}) {
      NodeVertices node = NodeVertices::Decimals(q, 1000.0);
      std::vector<Vec3> want;
      for (size_t i = 0; i < q.size(); i += 3) {
        want.push_back(bake * Vec3{DecimalValue(q[i], 1000.0), DecimalValue(q[i + 1], 1000.0),
                                   DecimalValue(q[i + 2], 1000.0)});
      }
      node.Bake(bake, keep);
      const bool kept = keep && bake.row[1].y == 1.0;
      EXPECT_EQ(node.form() == NodeVertices::Form::kDecimals, kept);
      EXPECT_EQ(node.doubles().empty(), kept);
      ASSERT_EQ(node.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        for (int a = 0; a < 3; ++a) {
          EXPECT_EQ(std::bit_cast<uint64_t>(node[i][a]), std::bit_cast<uint64_t>(want[i][a]))
              << "vertex " << i << " axis " << a << " keep " << keep;
        }
      }
    }
  }
}

// LoadObj's syntax errors, which its callback parser does not report, are
// errors still, with tinyobjloader's message and line number.
TEST(LevelImport, ObjSyntaxErrorsNameTheLine) {
  auto texcoord = ImportObjText("vt0.obj", "v 0 0 0\r\n\r\nv 1 0 0\r\nf 1/1 2/0 1/1\r\n");
  EXPECT_TRUE(
      FailsWith(texcoord, "Failed parse `f' line(e.g. zero value for face index. line 4.)"));
  auto line = ImportObjText("l0.obj", "v 0 0 0\nl 1 0\n");
  EXPECT_TRUE(FailsWith(line, "`l' line(e.g. zero value for vertex index. line 2.)"));
  auto weights = ImportObjText("vw.obj", "v 0 0 0\nvw 1 -1 0.5\n");
  EXPECT_TRUE(FailsWith(weights, "joint_id is negative. line 2.)"));
}

// Round trip: the imported OBJ level answers rays, sweeps and overlaps exactly
// as the same level written by hand (data/level_equivalent.json, built here).
TEST(LevelImport, ImportedLevelAnswersLikeTheHandWrittenScene) {
  auto level = ImportLevel(kData + "level.obj");
  ASSERT_TRUE(level.ok()) << level.error().message;
  std::vector<Collider> hand(4);
  TriangleMeshShape floor{{{-10, 0, -10}, {10, 0, -10}, {10, 0, 10}, {-10, 0, 10}}, {{0, 1, 2}, {0, 2, 3}}};
  hand[0] = {1, *Shape::Make(floor), Pose(), 0, 0};
  hand[1] = {2, *Shape::MakeBox({1, 1, 1}), Pose({3, 1, 3}), 0, 0};
  hand[2] = {3, *Shape::MakeSphere(1), Pose({-4, 1, -4}), 0, 0};
  hand[3] = {4, *Shape::Make(ConvexHull{{{5, 0, -5}, {7, 0, -5}, {5, 0, -3}, {5, 2, -5}}}), Pose(), 0, 0};
  ColliderSet imported;
  ColliderSet written;
  ASSERT_TRUE(imported.AddBulk(level->colliders).ok());
  ASSERT_TRUE(written.AddBulk(hand).ok());

  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-12.0, 12.0);
  std::uniform_real_distribution<double> h(0.1, 4.0);
  const Shape probe = *Shape::MakeCapsule(0.3, 0.4);
  size_t hits = 0;
  for (int i = 0; i < 2000; ++i) {
    const Vec3 from{u(rng), h(rng), u(rng)};
    const Vec3 move{u(rng), -h(rng), u(rng)};
    std::vector<Query> qs = {RayQuery{from, move, {}, true}, CastQuery{probe, Pose(from), move, {}, true},
                             OverlapQuery{probe, Pose(from), {}, false}};
    for (const Query& q : qs) {
      QueryResult a;
      QueryResult b;
      imported.Run(q, &a);
      written.Run(q, &b);
      ASSERT_EQ(a.hits.size(), b.hits.size()) << "case " << i;
      for (size_t k = 0; k < a.hits.size(); ++k) {
        EXPECT_EQ(a.hits[k].id, b.hits[k].id);
        EXPECT_NEAR(a.hits[k].fraction, b.hits[k].fraction, 1e-9);
      }
      ASSERT_EQ(a.overlaps.size(), b.overlaps.size()) << "case " << i;
      for (size_t k = 0; k < a.overlaps.size(); ++k) EXPECT_EQ(a.overlaps[k].id, b.overlaps[k].id);
      hits += a.hits.size() + a.overlaps.size();
    }
  }
  EXPECT_GT(hits, 1000u);  // the comparison saw many hits, not just misses
}

}  // namespace
}  // namespace hitbox::import
