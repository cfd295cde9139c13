// Scene files (import/src/scene_file.cc): ReadSceneFile, the streaming reader
// hitboxd's maps use, against the document-tree path (ReadJsonFile, then
// ParseScene) it replaces there: the same colliders to the bit, and the same
// error, for well-formed and for broken mesh arrays.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "hitbox/import/scene_file.h"
#include "temp_dir.h"

namespace hitbox::import {
namespace {

std::string Temp(const std::string& name) {
  static const hitbox::testing::TempDir dir("scene-file");
  return dir.file(name);
}

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = Temp(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The document-tree path.
Result<std::vector<Collider>> ReadByTree(const std::string& path) {
  auto doc = ReadJsonFile(path);
  if (!doc.ok()) return doc.error();
  return ParseScene(*doc);
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

// Both paths agree on `path`: the same error, or the same colliders (ids,
// poses, layers, user data, kinds, bytes and a mesh's input to the bit).
void ExpectSameScene(const std::string& path) {
  SCOPED_TRACE(path);
  const Result<std::vector<Collider>> tree = ReadByTree(path);
  const Result<std::vector<Collider>> streamed = ReadSceneFile(path);
  ASSERT_EQ(tree.ok(), streamed.ok()) << (tree.ok() ? streamed.error().message
                                                    : tree.error().message);
  if (!tree.ok()) {
    EXPECT_EQ(tree.error().message, streamed.error().message);
    return;
  }
  ASSERT_EQ(tree->size(), streamed->size());
  for (size_t i = 0; i < tree->size(); ++i) {
    const Collider& a = (*tree)[i];
    const Collider& b = (*streamed)[i];
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.layer, b.layer);
    EXPECT_EQ(a.user_data, b.user_data);
    EXPECT_EQ(a.shape.kind(), b.shape.kind());
    EXPECT_EQ(a.shape.DataBytes(), b.shape.DataBytes());
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(SameBits(a.pose.position[k], b.pose.position[k]));
    const auto ma = a.shape.mesh_input(), mb = b.shape.mesh_input();
    ASSERT_EQ(ma.has_value(), mb.has_value());
    if (!ma) continue;
    ASSERT_EQ(ma->vertices.size(), mb->vertices.size());
    ASSERT_EQ(ma->triangles, mb->triangles);
    for (size_t v = 0; v < ma->vertices.size(); ++v) {
      for (int k = 0; k < 3; ++k) {
        ASSERT_TRUE(SameBits(ma->vertices[v][k], mb->vertices[v][k])) << "vertex " << v;
      }
    }
  }
}

// A scene with two meshes of full-precision float32 vertices (and integers
// among them), a box and a heightfield.
std::string MixedScene() {
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> u(-50.0f, 50.0f);
  std::string s = "{\"colliders\": [";
  for (int m = 0; m < 2; ++m) {
    s += "{\"id\": " + std::to_string(m + 1) + ", \"layer\": 3, \"user_data\": 9, " +
         "\"position\": [1.5, 0, -2], \"shape\": {\"mesh\": {\"vertices\": [";
    const int side = 12;
    for (int r = 0; r <= side; ++r) {
      for (int c = 0; c <= side; ++c) {
        char buf[96];
        std::snprintf(buf, sizeof(buf), "%s[%d, %.9g, %.9g]", r + c ? ", " : "", c, u(rng),
                      static_cast<float>(r) + 0.1f * u(rng));
        s += buf;
      }
    }
    s += "], \"triangles\": [";
    for (int r = 0; r < side; ++r) {
      for (int c = 0; c < side; ++c) {
        const int v = r * (side + 1) + c;
        s += (r + c ? ", [" : "[") + std::to_string(v) + ", " + std::to_string(v + side + 1) +
             ", " + std::to_string(v + 1) + "]";
      }
    }
    s += "]}}}, ";
  }
  s += "{\"id\": 7, \"shape\": {\"box\": {\"half_extents\": [1, 2, 3]}}}, "
       "{\"id\": 8, \"shape\": {\"heightfield\": {\"rows\": 2, \"cols\": 2, "
       "\"cell_size\": [1, 1], \"heights\": [0, 0.5, 1, 0.25]}}}]}";
  return s;
}

// A well-formed scene reads to the same colliders, to the bit.
TEST(SceneFileTest, StreamedSceneIsTheTreeScene) {
  ExpectSameScene(Write("mixed.json", MixedScene()));
}

// Mesh vertices are kept as floats while every coordinate read is a
// float32 value, then as doubles from the first that is not (0.1 among
// them, late in the array); triangles listed before the vertices too.
TEST(SceneFileTest, FloatThenWideVerticesGiveTheTreeScene) {
  std::string s = "{\"colliders\": [";
  for (int m = 0; m < 3; ++m) {
    std::string vertices = "\"vertices\": [", triangles = "\"triangles\": [";
    const int side = 20;
    for (int r = 0; r <= side; ++r) {
      for (int c = 0; c <= side; ++c) {
        char buf[96];
        const bool wide = m == 1 && r == side - 2;  // one row of decimals
        std::snprintf(buf, sizeof(buf), "%s[%d, %.9g, %d]", r + c ? ", " : "", c,
                      wide ? 0.1 * (c + 1) : static_cast<double>(0.37f * static_cast<float>(c + r)),
                      r);
        vertices += buf;
      }
    }
    for (int r = 0; r < side; ++r) {
      for (int c = 0; c < side; ++c) {
        const int v = r * (side + 1) + c;
        triangles += (r + c ? ", [" : "[") + std::to_string(v) + ", " +
                     std::to_string(v + side + 1) + ", " + std::to_string(v + 1) + "]";
      }
    }
    vertices += "]";
    triangles += "]";
    s += (m ? ", " : "") + std::string("{\"id\": ") + std::to_string(m + 1) +
         ", \"shape\": {\"mesh\": {" +
         (m == 2 ? triangles + ", " + vertices : vertices + ", " + triangles) + "}}}";
  }
  s += "]}";
  ExpectSameScene(Write("float_then_wide.json", s));
}

// A mesh whose arrays hold something other than [x, y, z] numbers or
// [a, b, c] unsigned 32-bit indices gets the tree path's error, naming the
// same element, wherever the bad element is.
TEST(SceneFileTest, BrokenMeshArraysGiveTheTreeErrors) {
  const std::string good_v = "[0, 0, 0], [1, 0, 0], [0, 1, 0]";
  const std::string good_t = "[0, 1, 2], [0, 2, 1]";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {good_v + ", [1, 2]", good_t},
      {good_v + ", [1, 2, 3, 4]", good_t},
      {good_v + ", [1, \"y\", 3]", good_t},
      {good_v + ", [1, [2], 3]", good_t},
      {good_v + ", [1, {\"a\": 2}, 3]", good_t},
      {good_v + ", 5", good_t},
      {good_v + ", {\"x\": 1}", good_t},
      {good_v + ", [1, null, 3]", good_t},
      {"[1, 2, 3, 4], " + good_v, good_t},
      {good_v, good_t + ", [0, -1, 2]"},
      {good_v, good_t + ", [0, 1.0, 2]"},
      {good_v, good_t + ", [0, 1, 4294967296]"},
      {good_v, good_t + ", [0, 1, 7]"},
      {good_v, good_t + ", [0, 1]"},
      {good_v, good_t + ", [[0], 1, 2]"},
      {good_v, good_t + ", true"},
      {good_v, "[0, 1, 2], [0, 1, 2, 3], [0, 2, 1]"},
      {"", good_t},
      {good_v, ""},
      {"[0, 0, 0], [1, 0, 0], [2, 0, 0]", "[0, 1, 2]"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string doc = "{\"colliders\": [{\"id\": 4, \"shape\": {\"mesh\": {\"vertices\": [" +
                            cases[i].first + "], \"triangles\": [" + cases[i].second + "]}}}]}";
    ExpectSameScene(Write("broken" + std::to_string(i) + ".json", doc));
  }
  // Not arrays at all, a key given twice, and vertices in a key order other
  // than the usual.
  ExpectSameScene(Write("object.json",
                        "{\"colliders\": [{\"id\": 4, \"shape\": {\"mesh\": {\"vertices\": {}, "
                        "\"triangles\": [[0, 1, 2]]}}}]}"));
  ExpectSameScene(Write("twice.json",
                        "{\"colliders\": [{\"id\": 4, \"shape\": {\"mesh\": {\"triangles\": "
                        "[[0, 1, 2]], \"vertices\": [[5, 5, 5]], \"vertices\": [[0, 0, 0], "
                        "[1, 0, 0], [0, 1, 0]]}}}]}"));
  // A mesh as a compound child is refused by name, packed or not.
  ExpectSameScene(Write("child.json",
                        "{\"colliders\": [{\"id\": 4, \"shape\": {\"compound\": {\"children\": "
                        "[{\"shape\": {\"mesh\": {\"vertices\": [[0, 0, 0]], \"triangles\": "
                        "[[0, 0, 0]]}}, \"position\": [0, 0, 0], \"rotation\": [0, 0, 0, 1]}]}}}]}"));
}

// Colliders are parsed as their elements close: a duplicate id, an element
// that is not an object, a bad collider before a JSON error further on, and
// "colliders" given twice (the last counts) read as in the tree.
TEST(SceneFileTest, CollidersParsedAsReadGiveTheTreeScene) {
  const std::string box = "\"shape\": {\"box\": {\"half_extents\": [1, 2, 3]}}";
  ExpectSameScene(Write("dup.json", "{\"colliders\": [{\"id\": 4, " + box + "}, {\"id\": 5, " +
                                        box + "}, {\"id\": 4, " + box + "}]}"));
  ExpectSameScene(Write("scalar.json", "{\"colliders\": [{\"id\": 4, " + box + "}, 7, [1]]}"));
  ExpectSameScene(Write("late.json", "{\"colliders\": [{\"id\": 4}, {\"id\": 5, " + box + "}]"));
  ExpectSameScene(Write("again.json", "{\"colliders\": [{\"id\": 4}], \"queries\": [1], "
                                          "\"colliders\": [{\"id\": 6, " + box + "}]}"));
  ExpectSameScene(Write("object.json", "{\"colliders\": {\"id\": 6, " + box + "}}"));
  ExpectSameScene(Write("nested.json", "{\"x\": {\"colliders\": [{\"id\": 4}]}, "
                                           "\"colliders\": [{\"id\": 6, " + box + "}]}"));
}

// Text that is not JSON gets the tree path's message (position included);
// a missing file names the file.
TEST(SceneFileTest, BadTextGivesTheTreeErrors) {
  ExpectSameScene(Write("cut.json", "{\"colliders\": [{\"id\": 4, \"shape\": {\"mesh\": "
                                    "{\"vertices\": [[0, 0, 0], [1, 0"));
  ExpectSameScene(Write("huge.json", "{\"colliders\": [{\"id\": 4, \"shape\": {\"mesh\": "
                                     "{\"vertices\": [[0, 0, 85E888]], \"triangles\": []}}}]}"));
  ExpectSameScene(Write("trailing.json", "{\"colliders\": []} x"));
  ExpectSameScene(Temp("missing.json"));
}

}  // namespace
}  // namespace hitbox::import
