// Small glTF 2.0 levels for tests, built in memory and written with
// tinygltf's own writer (.gltf with an external .bin, or .glb), so fixtures
// need no binary files in the repository. Link TinyGLTF::TinyGLTF.
#pragma once

#include <tiny_gltf.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace hitbox::testing {

/// Vertices and triangles of a test mesh (float positions, as glTF stores them).
struct TestMesh {
  std::vector<std::array<float, 3>> vertices;
  std::vector<std::array<uint32_t, 3>> triangles;
};

/// The 8 corners of the box [lo, hi] and its 12 triangles.
inline TestMesh BoxMesh(std::array<float, 3> lo, std::array<float, 3> hi) {
  TestMesh m;
  for (int i = 0; i < 8; ++i) {
    m.vertices.push_back({(i & 1) ? hi[0] : lo[0], (i & 2) ? hi[1] : lo[1], (i & 4) ? hi[2] : lo[2]});
  }
  m.triangles = {{0, 1, 3}, {0, 3, 2}, {4, 6, 7}, {4, 7, 5}, {0, 4, 5}, {0, 5, 1},
                 {2, 3, 7}, {2, 7, 6}, {0, 2, 6}, {0, 6, 4}, {1, 5, 7}, {1, 7, 3}};
  return m;
}

/// A sphere (half_height 0) or a capsule along local Y of radius r: the two
/// poles plus 2k latitude rings of `segments` points, k per hemisphere, the
/// last ring of each on the equator (at y = +-half_height), so the mesh's
/// widest radius is exactly r. A sphere's two equator rings coincide.
inline TestMesh RoundMesh(float r, float half_height, int k = 4, int segments = 16) {
  TestMesh m;
  const double pi = 3.14159265358979323846;
  m.vertices.push_back({0, r + half_height, 0});
  const int rings = 2 * k;
  for (int i = 0; i < rings; ++i) {
    const bool top = i < k;
    const double lat = top ? (pi / 2) * (i + 1) / k : pi / 2 + (pi / 2) * (i - k) / k;  // from the top pole
    const double y = r * std::cos(lat) + (top ? half_height : -half_height);
    for (int j = 0; j < segments; ++j) {
      const double lon = 2 * pi * j / segments;
      m.vertices.push_back({static_cast<float>(r * std::sin(lat) * std::cos(lon)), static_cast<float>(y),
                            static_cast<float>(r * std::sin(lat) * std::sin(lon))});
    }
  }
  m.vertices.push_back({0, -r - half_height, 0});
  const uint32_t bottom = static_cast<uint32_t>(m.vertices.size() - 1);
  auto at = [&](int ring, int seg) { return static_cast<uint32_t>(1 + ring * segments + seg % segments); };
  for (int j = 0; j < segments; ++j) {
    m.triangles.push_back({0, at(0, j + 1), at(0, j)});
    m.triangles.push_back({bottom, at(rings - 1, j), at(rings - 1, j + 1)});
    for (int i = 0; i + 1 < rings; ++i) {
      m.triangles.push_back({at(i, j), at(i, j + 1), at(i + 1, j + 1)});
      m.triangles.push_back({at(i, j), at(i + 1, j + 1), at(i + 1, j)});
    }
  }
  return m;
}

/// Builds a tinygltf::Model one mesh and node at a time; all geometry goes
/// into buffer 0.
class GltfBuilder {
 public:
  GltfBuilder() {
    model_.asset.version = "2.0";
    model_.asset.generator = "hitbox tests";
    model_.buffers.emplace_back();
    model_.scenes.emplace_back();
    model_.defaultScene = 0;
  }

  /// Adds a mesh with one triangle primitive; returns its index.
  int AddMesh(const std::string& name, const TestMesh& mesh,
              const std::map<std::string, tinygltf::Value>& extras = {}) {
    std::vector<unsigned char>& data = model_.buffers[0].data;
    const size_t vertex_offset = data.size();
    for (const auto& v : mesh.vertices) Append(v.data(), sizeof(float) * 3);
    const size_t index_offset = data.size();
    for (const auto& t : mesh.triangles) Append(t.data(), sizeof(uint32_t) * 3);
    const int vertex_view = AddView(vertex_offset, index_offset - vertex_offset, TINYGLTF_TARGET_ARRAY_BUFFER);
    const int index_view = AddView(index_offset, data.size() - index_offset, TINYGLTF_TARGET_ELEMENT_ARRAY_BUFFER);

    tinygltf::Accessor pos;
    pos.bufferView = vertex_view;
    pos.componentType = TINYGLTF_COMPONENT_TYPE_FLOAT;
    pos.type = TINYGLTF_TYPE_VEC3;
    pos.count = mesh.vertices.size();
    pos.minValues = {1e30, 1e30, 1e30};
    pos.maxValues = {-1e30, -1e30, -1e30};
    for (const auto& v : mesh.vertices) {
      for (int k = 0; k < 3; ++k) {
        pos.minValues[k] = std::min<double>(pos.minValues[k], v[k]);
        pos.maxValues[k] = std::max<double>(pos.maxValues[k], v[k]);
      }
    }
    return AddPrimitiveMesh(name, pos, index_view, mesh.triangles.size(), extras);
  }

  /// Adds a mesh whose positions are integers of glTF component type
  /// `component_type` (KHR_mesh_quantization: bytes or shorts), normalized
  /// or not, each vertex padded to 4 bytes; returns its index.
  int AddQuantizedMesh(const std::string& name, int component_type, bool normalized,
                       const std::vector<std::array<int32_t, 3>>& positions,
                       const std::vector<std::array<uint32_t, 3>>& triangles) {
    std::vector<unsigned char>& data = model_.buffers[0].data;
    data.resize((data.size() + 3) / 4 * 4, 0);
    const size_t size = tinygltf::GetComponentSizeInBytes(static_cast<uint32_t>(component_type));
    const size_t stride = (3 * size + 3) / 4 * 4;
    const size_t vertex_offset = data.size();
    for (const auto& p : positions) {
      for (int32_t c : p) {
        for (size_t b = 0; b < size; ++b) {
          data.push_back(static_cast<unsigned char>((static_cast<uint32_t>(c) >> (8 * b)) & 255u));
        }
      }
      data.resize(data.size() + stride - 3 * size, 0);
    }
    const size_t index_offset = data.size();
    for (const auto& t : triangles) Append(t.data(), sizeof(uint32_t) * 3);
    const int vertex_view =
        AddView(vertex_offset, index_offset - vertex_offset, TINYGLTF_TARGET_ARRAY_BUFFER);
    model_.bufferViews.back().byteStride = stride;
    const int index_view =
        AddView(index_offset, data.size() - index_offset, TINYGLTF_TARGET_ELEMENT_ARRAY_BUFFER);
    tinygltf::Accessor pos;
    pos.bufferView = vertex_view;
    pos.componentType = component_type;
    pos.normalized = normalized;
    pos.type = TINYGLTF_TYPE_VEC3;
    pos.count = positions.size();
    if (std::find(model_.extensionsUsed.begin(), model_.extensionsUsed.end(),
                  "KHR_mesh_quantization") == model_.extensionsUsed.end()) {
      model_.extensionsUsed.push_back("KHR_mesh_quantization");
      model_.extensionsRequired.push_back("KHR_mesh_quantization");
    }
    return AddPrimitiveMesh(name, pos, index_view, triangles.size(), {});
  }

  /// Adds an accessor of float `values`, `type` (TINYGLTF_TYPE_VEC3, ...)
  /// elements of them; returns its index.
  int AddFloatAccessor(const std::vector<float>& values, int type) {
    return AddAccessor(values.data(), values.size(), sizeof(float),
                       TINYGLTF_COMPONENT_TYPE_FLOAT, type, false);
  }
  /// Adds an accessor of signed shorts `values` (normalized or not), `type`
  /// elements of them; returns its index.
  int AddShortAccessor(const std::vector<int16_t>& values, int type, bool normalized) {
    return AddAccessor(values.data(), values.size(), sizeof(int16_t),
                       TINYGLTF_COMPONENT_TYPE_SHORT, type, normalized);
  }

  /// Node placement: translation, rotation [x, y, z, w], scale (empty = default).
  struct Trs {
    std::vector<double> t;
    std::vector<double> r;
    std::vector<double> s;
  };

  /// Adds a node (a root unless `parent` >= 0); returns its index.
  int AddNode(const std::string& name, int mesh, const Trs& trs = {}, int parent = -1,
              const std::map<std::string, tinygltf::Value>& extras = {}) {
    tinygltf::Node n;
    n.name = name;
    n.mesh = mesh;
    n.translation = trs.t;
    n.rotation = trs.r;
    n.scale = trs.s;
    if (!extras.empty()) n.extras = tinygltf::Value(tinygltf::Value::Object(extras.begin(), extras.end()));
    model_.nodes.push_back(n);
    const int index = static_cast<int>(model_.nodes.size() - 1);
    if (parent >= 0) {
      model_.nodes[static_cast<size_t>(parent)].children.push_back(index);
    } else {
      model_.scenes[0].nodes.push_back(index);
    }
    return index;
  }

  tinygltf::Model& model() { return model_; }

  /// Writes `path`: .glb (binary, buffer inside) or .gltf (buffer in a .bin
  /// beside it, named after the file). Returns false on failure.
  bool Write(const std::string& path) {
    const bool binary = path.size() > 4 && path.compare(path.size() - 4, 4, ".glb") == 0;
    model_.buffers[0].uri.clear();
    if (!binary) {
      const size_t slash = path.find_last_of('/');
      const std::string base = path.substr(slash + 1);
      model_.buffers[0].uri = base.substr(0, base.size() - 5) + ".bin";
    }
    tinygltf::TinyGLTF writer;
    return writer.WriteGltfSceneToFile(&model_, path, /*embedImages=*/true, /*embedBuffers=*/binary,
                                       /*prettyPrint=*/true, /*writeBinary=*/binary);
  }

 private:
  /// An accessor of `n` components of `size` bytes at `values` (4-byte
  /// aligned in the buffer).
  int AddAccessor(const void* values, size_t n, size_t size, int component_type, int type,
                  bool normalized) {
    std::vector<unsigned char>& data = model_.buffers[0].data;
    data.resize((data.size() + 3) / 4 * 4, 0);
    const size_t offset = data.size();
    Append(values, n * size);
    tinygltf::Accessor a;
    a.bufferView = AddView(offset, data.size() - offset, 0);
    a.componentType = component_type;
    a.normalized = normalized;
    a.type = type;
    a.count = n / static_cast<size_t>(tinygltf::GetNumComponentsInType(type));
    model_.accessors.push_back(a);
    return static_cast<int>(model_.accessors.size() - 1);
  }
  /// A mesh of one triangle primitive: positions `pos`, `triangles` of
  /// unsigned int indices in `index_view`.
  int AddPrimitiveMesh(const std::string& name, const tinygltf::Accessor& pos, int index_view,
                       size_t triangles, const std::map<std::string, tinygltf::Value>& extras) {
    model_.accessors.push_back(pos);
    tinygltf::Accessor idx;
    idx.bufferView = index_view;
    idx.componentType = TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT;
    idx.type = TINYGLTF_TYPE_SCALAR;
    idx.count = triangles * 3;
    model_.accessors.push_back(idx);
    tinygltf::Primitive prim;
    prim.attributes["POSITION"] = static_cast<int>(model_.accessors.size() - 2);
    prim.indices = static_cast<int>(model_.accessors.size() - 1);
    prim.mode = TINYGLTF_MODE_TRIANGLES;
    tinygltf::Mesh m;
    m.name = name;
    m.primitives.push_back(prim);
    if (!extras.empty()) {
      m.extras = tinygltf::Value(tinygltf::Value::Object(extras.begin(), extras.end()));
    }
    model_.meshes.push_back(m);
    return static_cast<int>(model_.meshes.size() - 1);
  }
  void Append(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    model_.buffers[0].data.insert(model_.buffers[0].data.end(), b, b + n);
  }
  int AddView(size_t offset, size_t length, int target) {
    tinygltf::BufferView v;
    v.buffer = 0;
    v.byteOffset = offset;
    v.byteLength = length;
    v.target = target;
    model_.bufferViews.push_back(v);
    return static_cast<int>(model_.bufferViews.size() - 1);
  }

  tinygltf::Model model_;
};

}  // namespace hitbox::testing
