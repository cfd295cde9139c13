// glTF buffers read from their files (import/src/gltf_buffers.h): a .glb's
// BIN chunk and a .gltf's .bin, read a window at a time, give the meshes
// tinygltf's own copy of the bytes gives; broken containers and short
// buffers are errors naming the part.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "geometry/triangle_mesh.h"
#include "gltf_buffers.h"
#include "gltf_builder.h"
#include "hitbox/import/level_import.h"
#include "shape/surface_data.h"
#include "temp_dir.h"

namespace hitbox::import {
namespace {

using hitbox::testing::BoxMesh;
using hitbox::testing::GltfBuilder;
using hitbox::testing::TestMesh;

std::string Temp(const std::string& name) {
  static const hitbox::testing::TempDir dir("gltf-buffers");
  return dir.file(name);
}

std::vector<unsigned char> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteBytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

void PutU32(std::vector<unsigned char>* bytes, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*bytes)[at + i] = static_cast<unsigned char>(v >> (8 * i));
}

uint32_t GetU32(const std::vector<unsigned char>& bytes, size_t at) {
  uint32_t v;
  std::memcpy(&v, bytes.data() + at, sizeof(v));
  return v;
}

// A wavy grid of n x n cells: its positions and indices span several of the
// reader's 64 KiB windows.
TestMesh Grid(int n) {
  TestMesh m;
  for (int r = 0; r <= n; ++r) {
    for (int c = 0; c <= n; ++c) {
      const float x = static_cast<float>(c), z = static_cast<float>(r);
      m.vertices.push_back({0.37f * x, 0.5f * std::sin(0.3f * x) * std::cos(0.2f * z), 0.41f * z});
    }
  }
  const auto at = [&](int r, int c) { return static_cast<uint32_t>(r * (n + 1) + c); };
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) {
      m.triangles.push_back({at(r, c), at(r + 1, c), at(r + 1, c + 1)});
      m.triangles.push_back({at(r, c), at(r + 1, c + 1), at(r, c + 1)});
    }
  }
  return m;
}

// A fan of `spokes` triangles around vertex 0, its indices 0, 1, 2, ...: as
// a TRIANGLE_FAN primitive every triangle returns to index 0.
TestMesh FanIndices(int spokes) {
  TestMesh m;
  m.vertices.push_back({0, 0, 0});
  for (int i = 0; i <= spokes; ++i) {
    const float a = 6.0f * static_cast<float>(i) / static_cast<float>(spokes);
    m.vertices.push_back({std::cos(a), 0.01f * static_cast<float>(i % 7), std::sin(a)});
  }
  while (m.vertices.size() % 3 != 0) m.vertices.push_back({2, 0, 2});
  for (uint32_t i = 0; i < m.vertices.size(); i += 3) m.triangles.push_back({i, i + 1, i + 2});
  return m;
}

// Every collider's pose and mesh (vertices, original indices, flags), in order.
std::vector<double> Digest(const Level& level) {
  std::vector<double> out;
  for (const Collider& c : level.colliders) {
    out.insert(out.end(), {c.pose.position.x, c.pose.position.y, c.pose.position.z});
    const SurfaceData* s = c.shape.surface();
    if (s == nullptr || s->mesh() == nullptr) continue;
    const TriangleMesh& m = *s->mesh();
    for (uint32_t k = 0; k < m.triangle_count(); ++k) {
      Vec3 v[3];
      m.TriangleVertices(k, v);
      for (const Vec3& p : v) out.insert(out.end(), {p.x, p.y, p.z});
      out.push_back(m.OriginalIndex(k));
      out.push_back(static_cast<double>(m.ActiveEdges(k)));
    }
  }
  return out;
}

// A level of a large grid, a fan drawn as TRIANGLE_FAN and a box, with an
// image whose bytes lie in the same buffer (left unread).
GltfBuilder LargeLevel() {
  GltfBuilder b;
  b.AddNode("terrain", b.AddMesh("terrain", Grid(110)));
  const int fan = b.AddMesh("fan", FanIndices(30000));
  b.model().meshes[static_cast<size_t>(fan)].primitives[0].mode = TINYGLTF_MODE_TRIANGLE_FAN;
  b.AddNode("fan", fan, {{40, 0, 0}, {}, {}});
  b.AddNode("crate", b.AddMesh("crate", BoxMesh({-1, -1, -1}, {1, 1, 1})), {{0, 5, 0}, {}, {}});
  std::vector<unsigned char>& data = b.model().buffers[0].data;
  tinygltf::BufferView view;
  view.buffer = 0;
  view.byteOffset = data.size();
  view.byteLength = 64;
  data.insert(data.end(), 64, 0x5a);
  b.model().bufferViews.push_back(view);
  tinygltf::Image image;
  image.bufferView = static_cast<int>(b.model().bufferViews.size() - 1);
  image.mimeType = "image/png";
  b.model().images.push_back(image);
  return b;
}

TEST(GltfBuffers, FileBuffersGiveTheMeshesOfAnEmbeddedCopy) {
  GltfBuilder b = LargeLevel();
  const std::string glb = Temp("large.glb"), gltf = Temp("large.gltf");
  ASSERT_TRUE(b.Write(glb));
  ASSERT_TRUE(b.Write(gltf));  // large.bin beside it
  // The same bytes as a data URI: tinygltf decodes and holds them.
  const std::string embedded = Temp("embedded.gltf");
  b.model().buffers[0].uri.clear();
  tinygltf::TinyGLTF writer;
  ASSERT_TRUE(
      writer.WriteGltfSceneToFile(&b.model(), embedded, true, /*embedBuffers=*/true, false, false));

  auto from_glb = ImportLevel(glb);
  ASSERT_TRUE(from_glb.ok()) << from_glb.error().message;
  auto from_gltf = ImportLevel(gltf);
  ASSERT_TRUE(from_gltf.ok()) << from_gltf.error().message;
  auto from_memory = ImportLevel(embedded);
  ASSERT_TRUE(from_memory.ok()) << from_memory.error().message;
  ASSERT_EQ(from_memory->colliders.size(), 3u);
  EXPECT_EQ(from_memory->report.triangles, 2u * 110 * 110 + 30001 + 12);  // the fan: 30003 indices
  const std::vector<double> want = Digest(*from_memory);
  EXPECT_EQ(Digest(*from_glb), want);
  EXPECT_EQ(Digest(*from_gltf), want);
}

// The uri of a .bin is percent-decoded ("%20" a space), relative to the
// document; a .bin shorter than its byteLength, or missing, is an error.
TEST(GltfBuffers, ExternalBinsAreFoundAndChecked) {
  GltfBuilder b;
  b.AddNode("wall", b.AddMesh("wall", BoxMesh({-1, -1, -1}, {1, 1, 1})));
  const std::string path = Temp("spaced.gltf");
  ASSERT_TRUE(b.Write(path));
  std::filesystem::rename(Temp("spaced.bin"), Temp("a b.bin"));
  std::string text;
  {
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t at = text.find("spaced.bin");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 10, "a%20b.bin");
  std::ofstream(path) << text;
  auto level = ImportLevel(path);
  ASSERT_TRUE(level.ok()) << level.error().message;
  EXPECT_EQ(level->report.triangles, 12u);

  std::vector<unsigned char> bin = ReadBytes(Temp("a b.bin"));
  bin.resize(bin.size() - 4);
  WriteBytes(Temp("a b.bin"), bin);
  auto short_bin = ImportLevel(path);
  ASSERT_FALSE(short_bin.ok());
  EXPECT_NE(
      short_bin.error().message.find("buffer 0: 'a b.bin' has " + std::to_string(bin.size()) +
                                     " bytes, byteLength says " + std::to_string(bin.size() + 4)),
      std::string::npos)
      << short_bin.error().message;

  std::filesystem::remove(Temp("a b.bin"));
  auto missing = ImportLevel(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("buffer 0: file 'a b.bin' not found"), std::string::npos)
      << missing.error().message;
}

// GLB containers whose header or chunks disagree with the file.
TEST(GltfBuffers, BrokenGlbContainersAreErrors) {
  GltfBuilder b;
  b.AddNode("wall", b.AddMesh("wall", BoxMesh({-1, -1, -1}, {1, 1, 1})));
  const std::string path = Temp("box.glb");
  ASSERT_TRUE(b.Write(path));
  const std::vector<unsigned char> good = ReadBytes(path);
  const size_t bin_header = 20 + GetU32(good, 12);
  ASSERT_EQ(GetU32(good, bin_header + 4), 0x004E4942u);  // "BIN\0"
  const auto import_error = [&](const std::vector<unsigned char>& bytes) {
    const std::string broken = Temp("broken.glb");
    WriteBytes(broken, bytes);
    auto level = ImportLevel(broken);
    EXPECT_FALSE(level.ok());
    return level.ok() ? std::string() : level.error().message;
  };

  std::vector<unsigned char> bytes = good;
  bytes.resize(bytes.size() - 8);
  EXPECT_NE(import_error(bytes).find("the GLB header gives " + std::to_string(good.size()) +
                                     " bytes, the file has " + std::to_string(bytes.size())),
            std::string::npos);

  bytes = good;
  PutU32(&bytes, bin_header, GetU32(good, bin_header) + 4);
  EXPECT_NE(
      import_error(bytes).find("the BIN chunk (" + std::to_string(GetU32(good, bin_header) + 4) +
                               " bytes) runs past"),
      std::string::npos);

  // A BIN chunk 4 bytes short of the buffer's byteLength.
  bytes = good;
  bytes.resize(bytes.size() - 4);
  PutU32(&bytes, 8, static_cast<uint32_t>(bytes.size()));
  PutU32(&bytes, bin_header, GetU32(good, bin_header) - 4);
  EXPECT_NE(import_error(bytes).find("buffer 0: byteLength"), std::string::npos);

  // No BIN chunk at all.
  bytes.assign(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(bin_header));
  PutU32(&bytes, 8, static_cast<uint32_t>(bytes.size()));
  EXPECT_NE(import_error(bytes).find("buffer 0 has no uri and the file has no BIN chunk"),
            std::string::npos);

  bytes = good;
  PutU32(&bytes, 4, 1);
  EXPECT_NE(import_error(bytes).find("GLB version 1, only 2 is read"), std::string::npos);
}

// A bufferView whose byteStride is less than its accessor's elements (they
// would overlap; glTF forbids it) is an error naming both, whether the
// bytes are read from the file or held in memory (the fuzzer's find: the
// file's read window was sized by the stride).
TEST(GltfBuffers, StrideShorterThanAnElementIsAnError) {
  for (const char* name : {"short_stride.glb", "short_stride.gltf"}) {
    GltfBuilder b;
    b.AddNode("wall", b.AddMesh("wall", BoxMesh({-1, -1, -1}, {1, 1, 1})));
    const int positions = b.model().meshes[0].primitives[0].attributes.at("POSITION");
    const int view = b.model().accessors[static_cast<size_t>(positions)].bufferView;
    b.model().bufferViews[static_cast<size_t>(view)].byteStride = 4;  // 12-byte elements
    const std::string path = Temp(name);
    ASSERT_TRUE(b.Write(path));
    auto level = ImportLevel(path);
    ASSERT_FALSE(level.ok()) << name;
    EXPECT_NE(level.error().message.find("byte stride 4 is less than its 12-byte elements"),
              std::string::npos)
        << level.error().message;
  }
}

// Elements read a window at a time, in any order, match the file's bytes;
// a read past what the file holds sets failed().
TEST(ElementReader, WindowsMatchTheFile) {
  const std::string path = Temp("elements.bin");
  const size_t stride = 20, element = 12, count = 9000;  // 180 kB: several windows
  std::vector<unsigned char> bytes(8 + stride * count);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 7 + i / 251);
  WriteBytes(path, bytes);
  const BufferFile file{path, 8, bytes.size() - 8};
  ElementReader reader(file, 0, stride, element, count);
  const size_t order[] = {0, 1, 3276, 3277, 8999, 0, 4500, 8998, 12};
  for (size_t i : order) {
    ASSERT_EQ(std::memcmp(reader.At(i), bytes.data() + 8 + i * stride, element), 0) << i;
  }
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(std::memcmp(reader.At(i), bytes.data() + 8 + i * stride, element), 0) << i;
  }
  EXPECT_FALSE(reader.failed());

  ElementReader memory(bytes.data() + 8, stride, element, count);
  EXPECT_EQ(memory.At(77), bytes.data() + 8 + 77 * stride);

  std::filesystem::resize_file(path, 8 + stride * 100);
  ElementReader cut(file, 0, stride, element, count);
  cut.At(0);
  EXPECT_TRUE(cut.failed());
}

}  // namespace
}  // namespace hitbox::import
