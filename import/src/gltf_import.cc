// glTF 2.0 levels (.gltf with its buffers, .glb): tinygltf parses the
// document, buffers in files are read as nodes need them (gltf_buffers.h),
// and the node hierarchy is walked parents first into NodeGeometry.
#include <tiny_gltf.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include "gltf_buffers.h"
#include "level_formats.h"
#include "node_builder.h"

namespace hitbox::import {
namespace {

std::string DescribeNode(const tinygltf::Model& model, int index) {
  std::string s = "node " + std::to_string(index);
  const std::string& name = model.nodes[static_cast<size_t>(index)].name;
  if (!name.empty()) s += " '" + name + "'";
  return s;
}

/// Keeps the image bytes undecoded: collision needs no textures.
bool SkipImage(tinygltf::Image*, const int, std::string*, std::string*, int, int,
               const unsigned char*, int, void*) {
  return true;
}

/// Reads an integer-valued extras entry in [0, max].
Result<uint64_t> ExtrasInteger(const tinygltf::Value& v, const std::string& field, uint64_t max) {
  uint64_t out = 0;
  if (v.IsInt()) {
    if (v.GetNumberAsInt() < 0) return Invalid(field + " must not be negative");
    out = static_cast<uint64_t>(v.GetNumberAsInt());
  } else if (v.IsNumber()) {
    const double d = v.GetNumberAsDouble();
    if (!(d >= 0.0 && d <= 9007199254740992.0 && std::floor(d) == d)) {
      return Invalid(field + " must be an integer in [0, 2^53] (a decimal string above), got " +
                     FormatDouble(d, 9));
    }
    out = static_cast<uint64_t>(d);
  } else if (v.IsString()) {
    const std::string& s = v.Get<std::string>();
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) {
      return Invalid(field + " must be an unsigned decimal integer, got \"" + s + "\"");
    }
  } else {
    return Invalid(field + " must be an integer");
  }
  if (out > max)
    return Invalid(field + " must be at most " + std::to_string(max) + ", got " +
                   std::to_string(out));
  return out;
}

/// Layer and user data of the extras in `sources` (first that has a key wins).
Status ReadExtras(std::initializer_list<const tinygltf::Value*> sources, uint32_t* layer,
                  uint64_t* user_data) {
  bool have_layer = false;
  bool have_user_data = false;
  for (const tinygltf::Value* extras : sources) {
    if (extras == nullptr || !extras->IsObject()) continue;
    if (!have_layer && extras->Has("hitbox_layer")) {
      auto l = ExtrasInteger(extras->Get("hitbox_layer"), "extras.hitbox_layer", kMaxLayer);
      if (!l.ok()) return l.error();
      *layer = static_cast<uint32_t>(*l);
      have_layer = true;
    }
    if (!have_user_data && extras->Has("hitbox_user_data")) {
      auto u = ExtrasInteger(extras->Get("hitbox_user_data"), "extras.hitbox_user_data",
                             std::numeric_limits<uint64_t>::max());
      if (!u.ok()) return u.error();
      *user_data = *u;
      have_user_data = true;
    }
  }
  return Status::Ok();
}

/// The elements of an accessor, checked against its buffer (read from
/// tinygltf's copy, or from the file), and their component type.
struct AccessorView {
  ElementReader elements;
  int component_type = 0;
};

Result<AccessorView> ViewAccessor(const tinygltf::Model& model,
                                  const std::vector<BufferFile>& files, int accessor_index,
                                  const std::string& field, int want_type) {
  if (accessor_index < 0 || static_cast<size_t>(accessor_index) >= model.accessors.size()) {
    return Invalid(field + ": accessor " + std::to_string(accessor_index) + " does not exist");
  }
  const tinygltf::Accessor& a = model.accessors[static_cast<size_t>(accessor_index)];
  const std::string where = field + " (accessor " + std::to_string(accessor_index) + ")";
  if (a.sparse.isSparse) return Invalid(where + ": sparse accessors are not supported");
  if (a.type != want_type)
    return Invalid(where + ": unexpected element type " + std::to_string(a.type));
  if (a.bufferView < 0 || static_cast<size_t>(a.bufferView) >= model.bufferViews.size()) {
    return Invalid(where + ": has no valid bufferView");
  }
  const tinygltf::BufferView& view = model.bufferViews[static_cast<size_t>(a.bufferView)];
  if (view.buffer < 0 || static_cast<size_t>(view.buffer) >= model.buffers.size()) {
    return Invalid(where + ": its bufferView names no valid buffer");
  }
  const size_t b = static_cast<size_t>(view.buffer);
  const BufferFile* file = b < files.size() && !files[b].path.empty() ? &files[b] : nullptr;
  const std::vector<unsigned char>& data = model.buffers[b].data;
  const uint64_t size = file != nullptr ? file->length : data.size();
  const int stride = a.ByteStride(view);
  const int component = tinygltf::GetComponentSizeInBytes(static_cast<uint32_t>(a.componentType));
  const int components = tinygltf::GetNumComponentsInType(static_cast<uint32_t>(a.type));
  if (stride <= 0 || component <= 0 || components <= 0) {
    return Invalid(where + ": invalid component type or byte stride");
  }
  const uint64_t element = static_cast<uint64_t>(component) * static_cast<uint64_t>(components);
  // glTF requires a stride that holds an element (elements do not overlap).
  if (static_cast<uint64_t>(stride) < element) {
    return Invalid(where + ": byte stride " + std::to_string(stride) + " is less than its " +
                   std::to_string(element) + "-byte elements");
  }
  const uint64_t start = static_cast<uint64_t>(view.byteOffset) + a.byteOffset;
  const uint64_t needed =
      a.count == 0 ? 0 : static_cast<uint64_t>(stride) * (a.count - 1) + element;
  if (a.byteOffset + needed > view.byteLength || start + needed > size) {
    return Invalid(where + ": " + std::to_string(a.count) +
                   " elements run past the end of buffer " + std::to_string(view.buffer) + " (" +
                   std::to_string(size) + " bytes)");
  }
  const auto step = static_cast<size_t>(stride);
  return AccessorView{file != nullptr ? ElementReader(*file, start, step, element, a.count)
                                      : ElementReader(data.data() + start, step, element, a.count),
                      a.componentType};
}

Error Unreadable(const std::string& field, int accessor) {
  return Invalid(field + " (accessor " + std::to_string(accessor) +
                 "): its bytes could not be read from the file");
}

/// One component of glTF component type `type` at `p` as a float: a
/// float as it is; an integer (KHR_mesh_quantization positions, instance
/// rotations) as its value, or, normalized, as glTF maps it to [-1, 1] or
/// [0, 1] (the float quotient, correctly rounded).
float FloatComponent(const unsigned char* p, int type, bool normalized) {
  switch (type) {
    case TINYGLTF_COMPONENT_TYPE_BYTE: {
      const auto c = static_cast<float>(static_cast<int8_t>(*p));
      return normalized ? std::max(c / 127.0f, -1.0f) : c;
    }
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE: {
      const auto c = static_cast<float>(*p);
      return normalized ? c / 255.0f : c;
    }
    case TINYGLTF_COMPONENT_TYPE_SHORT: {
      int16_t v;
      std::memcpy(&v, p, sizeof(v));
      const auto c = static_cast<float>(v);
      return normalized ? std::max(c / 32767.0f, -1.0f) : c;
    }
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT: {
      uint16_t v;
      std::memcpy(&v, p, sizeof(v));
      const auto c = static_cast<float>(v);
      return normalized ? c / 65535.0f : c;
    }
    default: {
      float f;
      std::memcpy(&f, p, sizeof(f));
      return f;
    }
  }
}

/// The positions of an accessor, x, y, z a vertex, as floats: the file's,
/// or its quantized integers' (KHR_mesh_quantization: bytes or shorts,
/// normalized or not; the node's transform scales them).
Result<std::vector<float>> ReadPositions(const tinygltf::Model& model,
                                         const std::vector<BufferFile>& files, int accessor,
                                         const std::string& field) {
  auto view = ViewAccessor(model, files, accessor, field, TINYGLTF_TYPE_VEC3);
  if (!view.ok()) return view.error();
  const int type = view->component_type;
  if (type != TINYGLTF_COMPONENT_TYPE_FLOAT && type != TINYGLTF_COMPONENT_TYPE_BYTE &&
      type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE && type != TINYGLTF_COMPONENT_TYPE_SHORT &&
      type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT) {
    return Invalid(field + " (accessor " + std::to_string(accessor) +
                   "): positions must be floats, or bytes or shorts (KHR_mesh_quantization)");
  }
  const bool normalized = model.accessors[static_cast<size_t>(accessor)].normalized;
  const size_t size =
      static_cast<size_t>(tinygltf::GetComponentSizeInBytes(static_cast<uint32_t>(type)));
  ElementReader& reader = view->elements;
  std::vector<float> out(3 * reader.count());
  for (size_t i = 0; i < reader.count(); ++i) {
    const unsigned char* element = reader.At(i);
    if (reader.failed()) return Unreadable(field, accessor);
    float* f = &out[3 * i];
    for (size_t a = 0; a < 3; ++a) f[a] = FloatComponent(element + a * size, type, normalized);
    if (!std::isfinite(f[0]) || !std::isfinite(f[1]) || !std::isfinite(f[2])) {
      return Invalid(field + " (accessor " + std::to_string(accessor) + "): vertex " +
                     std::to_string(i) + " is not finite");
    }
  }
  return out;
}

/// An index accessor read where the file holds it (no copy of it beside
/// the triangles made from it): index i as an unsigned 32-bit value; the
/// first kept apart (a fan returns to it).
struct IndexView {
  AccessorView indices;
  uint32_t first = 0;

  uint32_t Decode(const unsigned char* p) const {
    switch (indices.component_type) {
      case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE: return *p;
      case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT: {
        uint16_t v;
        std::memcpy(&v, p, sizeof(v));
        return v;
      }
      default: {
        uint32_t v;
        std::memcpy(&v, p, sizeof(v));
        return v;
      }
    }
  }
  uint32_t operator[](size_t i) { return i == 0 ? first : Decode(indices.elements.At(i)); }
  size_t count() const { return indices.elements.count(); }
  bool failed() const { return indices.elements.failed(); }
};

Result<IndexView> ViewIndices(const tinygltf::Model& model, const std::vector<BufferFile>& files,
                              int accessor, const std::string& field) {
  auto view = ViewAccessor(model, files, accessor, field, TINYGLTF_TYPE_SCALAR);
  if (!view.ok()) return view.error();
  const int type = view->component_type;
  if (type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE &&
      type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT &&
      type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT) {
    return Invalid(field + " (accessor " + std::to_string(accessor) +
                   "): indices must be unsigned bytes, shorts or ints");
  }
  IndexView out{std::move(*view), 0};
  if (out.count() > 0) out.first = out.Decode(out.indices.elements.At(0));
  if (out.failed()) return Unreadable(field, accessor);
  return out;
}

/// The buffers the primitives of mesh `mesh_index` read (positions and
/// indices), each once; invalid references are left to ReadMesh to report.
std::vector<size_t> MeshBuffers(const tinygltf::Model& model, int mesh_index) {
  std::vector<size_t> out;
  const auto add = [&](int accessor) {
    if (accessor < 0 || static_cast<size_t>(accessor) >= model.accessors.size()) return;
    const int view = model.accessors[static_cast<size_t>(accessor)].bufferView;
    if (view < 0 || static_cast<size_t>(view) >= model.bufferViews.size()) return;
    const int buffer = model.bufferViews[static_cast<size_t>(view)].buffer;
    if (buffer < 0 || static_cast<size_t>(buffer) >= model.buffers.size()) return;
    const size_t b = static_cast<size_t>(buffer);
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  };
  if (mesh_index < 0 || static_cast<size_t>(mesh_index) >= model.meshes.size()) return out;
  for (const tinygltf::Primitive& prim : model.meshes[static_cast<size_t>(mesh_index)].primitives) {
    const auto pos = prim.attributes.find("POSITION");
    if (pos != prim.attributes.end()) add(pos->second);
    add(prim.indices);
  }
  return out;
}

/// Appends the triangles of every triangle primitive of `mesh` to `node`.
Status ReadMesh(const tinygltf::Model& model, const std::vector<BufferFile>& files, int mesh_index,
                NodeGeometry* node, std::vector<std::string>* notes) {
  const tinygltf::Mesh& mesh = model.meshes[static_cast<size_t>(mesh_index)];
  for (size_t p = 0; p < mesh.primitives.size(); ++p) {
    const tinygltf::Primitive& prim = mesh.primitives[p];
    const std::string field =
        "mesh " + std::to_string(mesh_index) + " primitive " + std::to_string(p);
    const int mode = prim.mode < 0 ? TINYGLTF_MODE_TRIANGLES : prim.mode;
    if (mode != TINYGLTF_MODE_TRIANGLES && mode != TINYGLTF_MODE_TRIANGLE_STRIP &&
        mode != TINYGLTF_MODE_TRIANGLE_FAN) {
      notes->push_back(node->where + ": " + field + " draws points or lines, skipped");
      continue;
    }
    const auto pos = prim.attributes.find("POSITION");
    if (pos == prim.attributes.end()) return Invalid(field + " has no POSITION attribute");
    auto vertices = ReadPositions(model, files, pos->second, field + " POSITION");
    if (!vertices.ok()) return vertices.error();
    const size_t count = vertices->size() / 3;
    // Indices read where the file holds them; none: 0, 1, 2, ...
    std::optional<IndexView> view;
    if (prim.indices >= 0) {
      auto read = ViewIndices(model, files, prim.indices, field + " indices");
      if (!read.ok()) return read.error();
      view.emplace(std::move(*read));
    }
    const auto index = [&](size_t i) { return view ? (*view)[i] : static_cast<uint32_t>(i); };
    const uint32_t n = static_cast<uint32_t>(view ? view->count() : count);
    const auto unread = [&] { return view && view->failed(); };
    for (uint32_t i = 0; i < n; ++i) {
      if (index(i) >= count) {
        return Invalid(field + ": index " + std::to_string(i) + " is " + std::to_string(index(i)) +
                       ", beyond its " + std::to_string(count) + " vertices");
      }
    }
    if (unread()) return Unreadable(field + " indices", prim.indices);
    const uint32_t base = static_cast<uint32_t>(node->vertices.size());
    node->vertices.AppendFloats(std::move(*vertices));  // the first primitive's: no copy
    std::vector<float>().swap(*vertices);
    auto add = [&](uint32_t a, uint32_t b, uint32_t c) {
      node->triangles.push_back({base + index(a), base + index(b), base + index(c)});
    };
    const uint32_t adds = mode == TINYGLTF_MODE_TRIANGLES ? n / 3 : (n > 2 ? n - 2 : 0);
    node->triangles.reserve(node->triangles.size() + adds);  // exactly, for one primitive
    if (mode == TINYGLTF_MODE_TRIANGLES) {
      if (n % 3 != 0)
        return Invalid(field + ": " + std::to_string(n) + " indices is not a multiple of 3");
      for (uint32_t i = 0; i + 2 < n; i += 3) add(i, i + 1, i + 2);
    } else if (mode == TINYGLTF_MODE_TRIANGLE_STRIP) {
      for (uint32_t i = 0; i + 2 < n; ++i) add(i, i + 1, i + 2);
    } else {
      for (uint32_t i = 1; i + 1 < n; ++i) add(0, i, i + 1);
    }
    if (unread()) return Unreadable(field + " indices", prim.indices);
  }
  return Status::Ok();
}

Result<Affine> LocalTransform(const tinygltf::Node& node) {
  Affine t;
  if (node.matrix.size() == 16) {  // column-major
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) t.linear.row[r][c] = node.matrix[static_cast<size_t>(c * 4 + r)];
    }
    t.translation = {node.matrix[12], node.matrix[13], node.matrix[14]};
    return t;
  }
  if (node.translation.size() == 3)
    t.translation = {node.translation[0], node.translation[1], node.translation[2]};
  Quat q;
  if (node.rotation.size() == 4) {
    q = {node.rotation[0], node.rotation[1], node.rotation[2], node.rotation[3]};
    if (!q.IsFinite() || q.Length() < 1e-12)
      return Invalid("rotation is not a rotation quaternion");
    q = q.Normalized();
  }
  Vec3 s{1, 1, 1};
  if (node.scale.size() == 3) s = {node.scale[0], node.scale[1], node.scale[2]};
  const Mat33 r = q.ToMatrix();
  for (int i = 0; i < 3; ++i)
    t.linear.row[i] = {r.row[i][0] * s.x, r.row[i][1] * s.y, r.row[i][2] * s.z};
  return t;
}

/// The instance transforms of EXT_mesh_gpu_instancing `ext` (its
/// TRANSLATION, ROTATION and SCALE accessors, floats, one element an
/// instance; any may be absent, not all).
Result<std::vector<Affine>> ReadInstances(const tinygltf::Model& model,
                                          const std::vector<BufferFile>& files,
                                          const tinygltf::Value& ext) {
  if (!ext.IsObject() || !ext.Has("attributes") || !ext.Get("attributes").IsObject()) {
    return Invalid("no attributes");
  }
  const tinygltf::Value& attributes = ext.Get("attributes");
  struct Attribute {
    const char* name;
    int type;
    std::optional<AccessorView> view;
  };
  Attribute list[3] = {{"TRANSLATION", TINYGLTF_TYPE_VEC3, std::nullopt},
                       {"ROTATION", TINYGLTF_TYPE_VEC4, std::nullopt},
                       {"SCALE", TINYGLTF_TYPE_VEC3, std::nullopt}};
  std::optional<size_t> count;
  for (Attribute& at : list) {
    if (!attributes.Has(at.name)) continue;
    const tinygltf::Value& index = attributes.Get(at.name);
    if (!index.IsInt()) return Invalid(std::string(at.name) + " must be an accessor index");
    auto view = ViewAccessor(model, files, index.GetNumberAsInt(), at.name, at.type);
    if (!view.ok()) return view.error();
    // ROTATION may also be normalized signed bytes or shorts.
    const int component = view->component_type;
    const bool normalized = model.accessors[static_cast<size_t>(index.GetNumberAsInt())].normalized;
    const bool normalized_ok =
        at.type == TINYGLTF_TYPE_VEC4 && normalized &&
        (component == TINYGLTF_COMPONENT_TYPE_BYTE || component == TINYGLTF_COMPONENT_TYPE_SHORT);
    if (component != TINYGLTF_COMPONENT_TYPE_FLOAT && !normalized_ok) {
      return Invalid(std::string(at.name) + (at.type == TINYGLTF_TYPE_VEC4
                                                 ? " must be floats, or normalized bytes or shorts"
                                                 : " must be floats"));
    }
    if (count && *count != view->elements.count()) {
      return Invalid(std::string(at.name) + " has " + std::to_string(view->elements.count()) +
                     " instances where another attribute has " + std::to_string(*count));
    }
    count = view->elements.count();
    at.view.emplace(std::move(*view));
  }
  if (!count) return Invalid("none of TRANSLATION, ROTATION or SCALE");
  if (*count > kMaxNodeInstances) {
    return Invalid(std::to_string(*count) + " instances, at most " +
                   std::to_string(kMaxNodeInstances) + " a node");
  }
  std::vector<Affine> out(*count);
  for (size_t i = 0; i < *count; ++i) {
    float f[3][4] = {{0, 0, 0, 0}, {0, 0, 0, 1}, {1, 1, 1, 0}};
    for (int a = 0; a < 3; ++a) {
      if (!list[a].view) continue;
      ElementReader& reader = list[a].view->elements;
      const unsigned char* element = reader.At(i);
      if (reader.failed()) return Invalid(std::string(list[a].name) + ": unreadable");
      const int component = list[a].view->component_type;
      const size_t size =
          static_cast<size_t>(tinygltf::GetComponentSizeInBytes(static_cast<uint32_t>(component)));
      const int n = list[a].type == TINYGLTF_TYPE_VEC4 ? 4 : 3;
      for (int c = 0; c < n; ++c) {
        f[a][c] = FloatComponent(element + static_cast<size_t>(c) * size, component, true);
      }
    }
    Quat q{f[1][0], f[1][1], f[1][2], f[1][3]};
    const Vec3 t{f[0][0], f[0][1], f[0][2]}, scale{f[2][0], f[2][1], f[2][2]};
    if (!q.IsFinite() || q.Length() < 1e-12 || !t.IsFinite() || !scale.IsFinite()) {
      return Invalid("instance " + std::to_string(i) + " is not a finite transform");
    }
    const Mat33 r = q.Normalized().ToMatrix();
    for (int row = 0; row < 3; ++row) {
      out[i].linear.row[row] = {r.row[row][0] * scale.x, r.row[row][1] * scale.y,
                                r.row[row][2] * scale.z};
    }
    out[i].translation = t;
  }
  return out;
}

/// A glTF mesh and the scale its node bakes into it (exactly): nodes with
/// equal keys make the same shapes.
using MadeKey = std::pair<int, std::array<double, 9>>;
MadeKey MakeKey(int mesh, const Mat33& bake) {
  std::array<double, 9> m{};
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) m[static_cast<size_t>(3 * r + c)] = bake.row[r][c];
  }
  return {mesh, m};
}

}  // namespace

Status ImportGltf(const std::string& path, bool binary, const ImportOptions& options,
                  Level* level) {
  tinygltf::TinyGLTF loader;
  loader.SetImageLoader(&SkipImage, nullptr);
  tinygltf::Model model;
  std::string err;
  std::string warn;
  // The document only: buffers in files are read from them as nodes need
  // their accessors (gltf_buffers.h).
  auto doc = ReadGltfDocument(path, binary);
  if (!doc.ok()) return Invalid(path + ": " + doc.error().message);
  if (doc->json.size() > std::numeric_limits<uint32_t>::max()) {
    return Invalid(path + ": the JSON document is over 4 GiB");
  }
  const bool ok =
      loader.LoadASCIIFromString(&model, &err, &warn, doc->json.data(),
                                 static_cast<unsigned int>(doc->json.size()), doc->base_dir);
  std::string().swap(doc->json);
  if (!ok) {
    while (!err.empty() && std::isspace(static_cast<unsigned char>(err.back()))) err.pop_back();
    return Invalid(path + ": " + (err.empty() ? "not a glTF 2.0 file" : err));
  }
  // Compressed buffers the file requires are an error, not a level with
  // pieces missing (the importer reads no compressed geometry).
  for (const std::string& ext : model.extensionsRequired) {
    if (ext == "KHR_draco_mesh_compression" || ext == "EXT_meshopt_compression") {
      return Invalid(path + ": requires " + ext +
                     " (compressed geometry), which Hitbox does not read; export the level "
                     "without compression");
    }
  }
  // Roots: the scene's nodes, or every node no other node lists as a child.
  std::vector<int> roots;
  if (!model.scenes.empty()) {
    const size_t scene = model.defaultScene >= 0 ? static_cast<size_t>(model.defaultScene) : 0;
    if (scene >= model.scenes.size())
      return Invalid(path + ": scene " + std::to_string(scene) + " does not exist");
    roots = model.scenes[scene].nodes;
  } else {
    std::vector<bool> child(model.nodes.size(), false);
    for (const auto& n : model.nodes) {
      for (int c : n.children) {
        if (c >= 0 && static_cast<size_t>(c) < child.size()) child[static_cast<size_t>(c)] = true;
      }
    }
    for (size_t i = 0; i < model.nodes.size(); ++i) {
      if (!child[i]) roots.push_back(static_cast<int>(i));
    }
  }
  // How many nodes still to read each buffer: one tinygltf holds (a data
  // URI) read by none of the nodes left is released before the node's
  // colliders are built (buffers in files are read as nodes need them).
  std::vector<uint32_t> readers(model.buffers.size(), 0);
  for (const tinygltf::Node& n : model.nodes) {
    for (size_t b : MeshBuffers(model, n.mesh)) ++readers[b];
  }
  Builder builder(options, level);
  std::map<MadeKey, Builder::Made> made_meshes;
  std::vector<bool> seen(model.nodes.size(), false);
  struct Inherited {
    Affine world;
    uint32_t layer;
    uint64_t user_data;
  };
  std::function<Status(int, const Inherited&, const std::string&)> visit =
      [&](int index, const Inherited& parent, const std::string& parent_where) -> Status {
    if (index < 0 || static_cast<size_t>(index) >= model.nodes.size()) {
      return Invalid(path + ": " + parent_where + " lists node " + std::to_string(index) +
                     ", which does not exist");
    }
    const std::string where = DescribeNode(model, index);
    if (seen[static_cast<size_t>(index)]) {
      return Invalid(path + ": " + where +
                     " appears twice in the node hierarchy (a cycle, or two parents)");
    }
    seen[static_cast<size_t>(index)] = true;
    const tinygltf::Node& node = model.nodes[static_cast<size_t>(index)];
    auto local = LocalTransform(node);
    if (!local.ok()) return Invalid(path + ": " + where + ": " + local.error().message);
    Inherited here{parent.world * *local, parent.layer, parent.user_data};
    if (Status s = ReadExtras({&node.extras}, &here.layer, &here.user_data); !s.ok()) {
      return Invalid(path + ": " + where + ": " + s.message());
    }
    if (node.mesh >= 0) {
      if (static_cast<size_t>(node.mesh) >= model.meshes.size()) {
        return Invalid(path + ": " + where + ": mesh " + std::to_string(node.mesh) +
                       " does not exist");
      }
      const tinygltf::Mesh& mesh = model.meshes[static_cast<size_t>(node.mesh)];
      // Where the mesh is placed: the node, or each of its instances
      // (EXT_mesh_gpu_instancing), read before the node's buffers may go.
      std::vector<Affine> worlds = {here.world};
      const auto instancing = node.extensions.find("EXT_mesh_gpu_instancing");
      if (instancing != node.extensions.end()) {
        auto instances = ReadInstances(model, doc->buffers, instancing->second);
        if (!instances.ok()) {
          return Invalid(path + ": " + where +
                         ": EXT_mesh_gpu_instancing: " + instances.error().message);
        }
        worlds.clear();
        for (const Affine& instance : *instances) worlds.push_back(here.world * instance);
      }
      uint32_t layer = parent.layer;
      uint64_t user_data = parent.user_data;
      if (Status s = ReadExtras({&node.extras, &mesh.extras}, &layer, &user_data); !s.ok()) {
        return Invalid(path + ": " + where + " (mesh " + std::to_string(node.mesh) +
                       "): " + s.message());
      }
      for (size_t i = 0; i < worlds.size(); ++i) {
        NodeGeometry geometry;
        geometry.where =
            instancing == node.extensions.end() ? where : where + " instance " + std::to_string(i);
        geometry.role = RoleOf(node.name) != Role::kMesh ? RoleOf(node.name) : RoleOf(mesh.name);
        geometry.world = worlds[i];
        geometry.layer = layer;
        geometry.user_data = user_data;
        // A mesh placed again under the same baked scale shares the shapes
        // its first placement made (neither read nor built again).
        std::optional<MadeKey> key;
        if (geometry.role == Role::kMesh) {
          if (auto split = Split(geometry.world); split.ok()) key = MakeKey(node.mesh, split->bake);
        }
        const auto made = key ? made_meshes.find(*key) : made_meshes.end();
        const Builder::Mark mark = builder.Now();
        if (made != made_meshes.end()) {
          if (Status s = builder.AddMade(geometry, made->second); !s.ok()) {
            return Invalid(path + ": " + s.message());
          }
          continue;
        }
        if (Status s = ReadMesh(model, doc->buffers, node.mesh, &geometry, &level->report.notes);
            !s.ok()) {
          return Invalid(path + ": " + geometry.where + ": " + s.message());
        }
        if (geometry.vertices.empty()) {
          level->report.notes.push_back(geometry.where + ": no triangles, no collider made");
        } else if (Status s = builder.AddNode(&geometry); !s.ok()) {
          return Invalid(path + ": " + s.message());
        } else if (key) {
          made_meshes.emplace(*key, builder.Since(mark, geometry.where));
        }
      }
      for (size_t b : MeshBuffers(model, node.mesh)) {
        if (--readers[b] == 0) std::vector<unsigned char>().swap(model.buffers[b].data);
      }
    }
    for (int child : node.children) {
      if (Status s = visit(child, here, where); !s.ok()) return s;
    }
    return Status::Ok();
  };
  const Inherited top{RootTransform(options), options.layer, 0};
  for (int root : roots) {
    if (Status s = visit(root, top, "the scene"); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace hitbox::import
