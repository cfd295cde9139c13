// Level import: tinygltf / tinyobjloader read the file; this walks nodes
// (glTF, parents first) or objects (OBJ) into NodeGeometry, and AddNode turns
// each into colliders by its name (see level_import.h).
#include "hitbox/import/level_import.h"

#include <tiny_gltf.h>
#include <tiny_obj_loader.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "fit.h"
#include "gltf_buffers.h"
#include "obj_positions.h"

namespace hitbox::import {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

using Triangle = std::array<uint32_t, 3>;

/// What a node is made into, from its name.
enum class Role : uint8_t { kMesh, kHull, kBox, kSphere, kCapsule };

Role RoleOf(const std::string& name) {
  if (name.rfind("UCX_", 0) == 0) return Role::kHull;
  if (name.rfind("UBX_", 0) == 0) return Role::kBox;
  if (name.rfind("USP_", 0) == 0) return Role::kSphere;
  if (name.rfind("UCP_", 0) == 0) return Role::kCapsule;
  return Role::kMesh;
}

const char* RoleShapeName(Role role) {
  switch (role) {
    case Role::kHull: return "convex_hull";
    case Role::kBox: return "box";
    case Role::kSphere: return "sphere";
    case Role::kCapsule: return "capsule";
    case Role::kMesh: break;
  }
  return "mesh";
}

/// One node's (or OBJ object's) geometry in its local frame, and its settings.
struct NodeGeometry {
  /// "node 3 'UBX_crate'" or "object 'wall'": named in errors and notes.
  std::string where;
  Role role = Role::kMesh;
  /// Local vertices as doubles (OBJ, or glTF positions once widened).
  std::vector<Vec3> vertices;
  /// glTF positions, x, y, z a vertex, while `vertices` is empty: a mesh
  /// keeps them as float32 through its build when its baked scale leaves
  /// them exact (half the bytes of doubles while a large level loads).
  std::vector<float> floats;
  std::vector<Triangle> triangles;

  size_t VertexCount() const { return floats.empty() ? vertices.size() : floats.size() / 3; }
  Vec3 Vertex(size_t i) const {
    if (floats.empty()) return vertices[i];
    return {floats[3 * i], floats[3 * i + 1], floats[3 * i + 2]};
  }
  /// Copies vertex `from` to slot `to` of `out` (doubles) or `out_xyz`
  /// (floats), whichever this node holds; either may be this node's own.
  void CopyVertex(size_t from, size_t to, std::vector<Vec3>* out,
                  std::vector<float>* out_xyz) const {
    if (floats.empty()) {
      (*out)[to] = vertices[from];
    } else {
      std::copy_n(&floats[3 * from], 3, &(*out_xyz)[3 * to]);
    }
  }
  /// Applies `bake` to every vertex: in place as floats when every result
  /// is a float32 value and `keep_floats`, else widened to doubles.
  void Bake(const Mat33& bake, bool keep_floats) {
    if (floats.empty()) {
      for (Vec3& v : vertices) v = bake * v;
      return;
    }
    const auto exact = [&] {
      for (size_t i = 0; i < VertexCount(); ++i) {
        const Vec3 b = bake * Vertex(i);
        if (!IsExactFloat(b.x) || !IsExactFloat(b.y) || !IsExactFloat(b.z)) return false;
      }
      return true;
    };
    if (keep_floats && exact()) {
      for (size_t i = 0; i < floats.size(); i += 3) {
        const Vec3 b = bake * Vertex(i / 3);
        floats[i] = static_cast<float>(b.x);
        floats[i + 1] = static_cast<float>(b.y);
        floats[i + 2] = static_cast<float>(b.z);
      }
      return;
    }
    vertices.resize(VertexCount());
    for (size_t i = 0; i < vertices.size(); ++i) vertices[i] = bake * Vertex(i);
    std::vector<float>().swap(floats);
  }

  Affine world;
  uint32_t layer = 0;
  uint64_t user_data = 0;
};

/// Collects colliders and the report while nodes are added.
class Builder {
 public:
  Builder(const ImportOptions& options, Level* level) : options_(options), level_(level) {}

  /// Turns `node` into colliders; consumes its vertices and triangles (baked
  /// and filtered in place, freed before the last mesh build: no copies of
  /// them are held beside the build).
  Status AddNode(NodeGeometry* in) {
    NodeGeometry& node = *in;
    ++level_->report.nodes;
    auto split = Split(node.world);
    if (!split.ok()) return Invalid(node.where + ": " + split.error().message);
    node.Bake(split->bake, /*keep_floats=*/node.role == Role::kMesh);
    if (node.role == Role::kMesh) return AddMesh(&node, *split);
    const std::vector<Vec3>& baked = node.vertices;

    Role role = node.role;
    const bool ellipsoid = split->non_uniform && (role == Role::kSphere || role == Role::kCapsule);
    if (ellipsoid || (split->shear && role == Role::kBox)) {
      Note(node.where + ": a " + RoleShapeName(role) + " under " +
           (split->shear ? "a shearing transform" : "non-uniform scale") +
           ", made a convex_hull of its vertices instead");
      role = Role::kHull;
    }
    Result<Fitted> fitted = Invalid("");
    size_t reduced_from = 0;
    switch (role) {
      case Role::kBox: fitted = FitBox(baked); break;
      case Role::kSphere: fitted = FitSphere(baked); break;
      case Role::kCapsule: fitted = FitCapsule(baked); break;
      default: fitted = FitHull(baked, &reduced_from); break;
    }
    if (!fitted.ok()) {
      return Invalid(node.where + ": cannot make a " + RoleShapeName(role) + ": " +
                     fitted.error().message);
    }
    if (reduced_from > 0) {
      Note(node.where + ": " + std::to_string(reduced_from) +
           " distinct vertices reduced to the hull's " +
           std::to_string(fitted->shape.hull()->vertices().size()) + " vertices");
    }
    Add(node, fitted->shape, split->pose * fitted->offset);
    return Status::Ok();
  }

  /// What a mesh node became: its colliders' shapes and what it added to
  /// the report (notes after the node's name), for nodes placing the same
  /// mesh under the same baked scale, which share the shapes.
  struct Made {
    std::vector<Shape> shapes;
    uint64_t triangles = 0;
    uint64_t dropped = 0;
    std::vector<std::string> notes;
  };
  /// The report's and colliders' counts now, to record what follows.
  struct Mark {
    size_t colliders, notes;
    uint64_t triangles, dropped;
  };
  Mark Now() const {
    return {level_->colliders.size(), level_->report.notes.size(), level_->report.triangles,
            level_->report.dropped_triangles};
  }
  /// What was added since `mark` for the node named `where`.
  Made Since(const Mark& mark, const std::string& where) const {
    Made made;
    for (size_t i = mark.colliders; i < level_->colliders.size(); ++i) {
      made.shapes.push_back(level_->colliders[i].shape);
    }
    for (size_t i = mark.notes; i < level_->report.notes.size(); ++i) {
      made.notes.push_back(level_->report.notes[i].substr(where.size()));
    }
    made.triangles = level_->report.triangles - mark.triangles;
    made.dropped = level_->report.dropped_triangles - mark.dropped;
    return made;
  }
  /// `node` (its geometry not read) placing what another node made.
  Status AddMade(const NodeGeometry& node, const Made& made) {
    ++level_->report.nodes;
    auto split = Split(node.world);
    if (!split.ok()) return Invalid(node.where + ": " + split.error().message);
    level_->report.triangles += made.triangles;
    level_->report.dropped_triangles += made.dropped;
    for (const std::string& note : made.notes) Note(node.where + note);
    for (const Shape& shape : made.shapes) Add(node, shape, split->pose);
    return Status::Ok();
  }

 private:
  Status AddMesh(NodeGeometry* in, const SplitTransform& split) {
    NodeGeometry& node = *in;
    // The triangles of non-zero area, kept in place.
    std::vector<Triangle>& kept = node.triangles;
    const size_t given = kept.size();
    size_t n = 0;
    for (const Triangle& t : kept) {
      if (IsDegenerate(node.Vertex(t[0]), node.Vertex(t[1]), node.Vertex(t[2]))) {
        ++level_->report.dropped_triangles;
      } else {
        kept[n++] = t;
      }
    }
    kept.resize(n);
    if (kept.empty()) {
      Note(node.where + ": no triangle of non-zero area (" + std::to_string(given) +
           " given), no collider made");
      return Status::Ok();
    }
    const uint64_t max = std::max<uint64_t>(1, options_.max_mesh_triangles);
    const size_t pieces = static_cast<size_t>((kept.size() + max - 1) / max);
    if (pieces > 1) {
      Note(node.where + ": " + std::to_string(kept.size()) + " triangles split into " +
           std::to_string(pieces) + " mesh colliders of at most " + std::to_string(max));
    }
    const bool floats = !node.floats.empty();
    for (size_t p = 0; p < pieces; ++p) {
      const size_t begin = p * max;
      const size_t end = std::min(kept.size(), begin + static_cast<size_t>(max));
      // The piece's index of each node vertex: its used vertices keep the
      // node's order (a flat table: 4 bytes a vertex, where a hash map took
      // ~10 times that).
      constexpr uint32_t kUnused = UINT32_MAX;
      std::vector<uint32_t> remap(node.VertexCount(), kUnused);
      for (size_t t = begin; t < end; ++t) {
        for (int k = 0; k < 3; ++k) remap[kept[t][k]] = 0;
      }
      uint32_t used = 0;
      for (uint32_t& at : remap) {
        if (at != kUnused) at = used++;
      }
      // The piece: triangles, and its vertices as doubles or as floats.
      std::vector<Triangle> triangles;
      std::vector<Vec3> vertices;
      std::vector<float> xyz;
      if (pieces == 1) {
        // The node's arrays become the mesh's, renumbered in place (a used
        // vertex's index never grows): no copy beside them. The build frees
        // them as it goes.
        for (Triangle& t : kept) t = {remap[t[0]], remap[t[1]], remap[t[2]]};
        for (size_t v = 0; v < remap.size(); ++v) {
          if (remap[v] != kUnused) node.CopyVertex(v, remap[v], &node.vertices, &node.floats);
        }
        node.vertices.resize(floats ? 0 : used);
        node.floats.resize(floats ? 3 * size_t{used} : 0);
        vertices = std::move(node.vertices);
        xyz = std::move(node.floats);
        triangles = std::move(node.triangles);
      } else {
        triangles.reserve(end - begin);
        for (size_t t = begin; t < end; ++t) {
          triangles.push_back({remap[kept[t][0]], remap[kept[t][1]], remap[kept[t][2]]});
        }
        // Vertices in the node's order, the array sized exactly.
        vertices.resize(floats ? 0 : used);
        xyz.resize(floats ? 3 * size_t{used} : 0);
        for (size_t v = 0; v < remap.size(); ++v) {
          if (remap[v] != kUnused) node.CopyVertex(v, remap[v], &vertices, &xyz);
        }
      }
      std::vector<uint32_t>().swap(remap);
      if (p + 1 == pieces) {  // the node's arrays are not needed any more
        std::vector<Vec3>().swap(node.vertices);
        std::vector<float>().swap(node.floats);
        std::vector<Triangle>().swap(node.triangles);
      }
      const size_t count = triangles.size();
      // The piece's arrays are freed as the build goes.
      auto shape =
          floats ? Shape::Make(FloatTriangleMeshShape{std::move(xyz), std::move(triangles)})
                 : Shape::Make(TriangleMeshShape{std::move(vertices), std::move(triangles)});
      if (!shape.ok()) return Invalid(node.where + ": " + shape.error().message);
      level_->report.triangles += count;
      Add(node, *shape, split.pose);
    }
    return Status::Ok();
  }

  void Add(const NodeGeometry& node, const Shape& shape, const Pose& pose) {
    Collider c;
    c.id = options_.first_id + level_->colliders.size();
    c.shape = shape;
    c.pose = Pose(pose.position, pose.rotation.Normalized());
    c.layer = node.layer;
    c.user_data = node.user_data;
    level_->report.counts[static_cast<size_t>(shape.kind())] += 1;
    level_->report.bounds = level_->report.bounds.Union(shape.WorldBounds(c.pose));
    level_->colliders.push_back(std::move(c));
    level_->sources.push_back(node.where);
  }

  void Note(std::string note) { level_->report.notes.push_back(std::move(note)); }

  const ImportOptions& options_;
  Level* level_;
};

// What the first bytes of a file say it is, for a file whose content does not
// fit its extension: "a binary glTF (GLB)", "JSON", "a PNG image", ...
std::string SniffContent(const std::string& head) {
  auto starts = [&](const char* magic, size_t n) { return head.size() >= n && head.compare(0, n, magic, n) == 0; };
  if (starts("glTF", 4)) return "a binary glTF (GLB)";
  if (starts("\x89PNG", 4)) return "a PNG image";
  if (starts("\xff\xd8\xff", 3)) return "a JPEG image";
  if (starts("PK\x03\x04", 4)) return "a ZIP archive";
  if (starts("\x1f\x8b", 2)) return "gzip-compressed data";
  if (starts("Kaydara FBX Binary", 18)) return "a binary FBX file";
  if (starts("\x7f" "ELF", 4)) return "an executable";
  if (head.empty()) return "empty";
  size_t i = 0;
  if (starts("\xef\xbb\xbf", 3)) i = 3;  // UTF-8 byte order mark
  while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
  if (i < head.size() && (head[i] == '{' || head[i] == '[')) return "JSON";
  if (head.compare(i, 5, "<?xml") == 0 || head.compare(i, 1, "<") == 0) return "XML or HTML";
  for (size_t k = i; k < head.size(); ++k) {
    const unsigned char c = static_cast<unsigned char>(head[k]);
    if (c < 9 || (c > 13 && c < 32)) return "binary data";
  }
  return "text";
}

// A file whose first bytes do not fit its extension gets an error that says
// what it looks like, before tinygltf or tinyobjloader (whose messages, like
// GLB's "Invalid magic.", do not name the problem).
Status CheckContent(const std::string& path, LevelFormat format) {
  std::ifstream in(path, std::ios::binary);
  std::string head(256, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  const std::string is = SniffContent(head);
  const char* expected = format == LevelFormat::kGlb    ? "a binary glTF (GLB, starting with 'glTF')"
                         : format == LevelFormat::kGltf ? "a glTF 2.0 JSON document"
                                                        : "a Wavefront OBJ text file";
  bool fits = false;
  switch (format) {
    case LevelFormat::kGlb: fits = is == "a binary glTF (GLB)"; break;
    case LevelFormat::kGltf: fits = is == "JSON"; break;
    case LevelFormat::kObj: fits = is == "text"; break;
  }
  if (fits) return Status::Ok();
  std::string hint;
  if (is == "a binary glTF (GLB)") hint = " (rename it .glb)";
  if (is == "JSON" && format == LevelFormat::kGlb) hint = " (a .gltf? rename it .gltf)";
  return Invalid(path + ": not " + expected + ": the file is " + is + hint);
}

// The transform above every root: the file's up axis to +Y, then the scale.
Affine RootTransform(const ImportOptions& options) {
  Affine t;
  const Mat33 r = UpAxisRotation(options.up).ToMatrix();
  for (int i = 0; i < 3; ++i) t.linear.row[i] = r.row[i] * options.scale;
  return t;
}

// --- glTF -------------------------------------------------------------------

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
  if (out > max) return Invalid(field + " must be at most " + std::to_string(max) + ", got " + std::to_string(out));
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
  if (a.type != want_type) return Invalid(where + ": unexpected element type " + std::to_string(a.type));
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
  const uint64_t start = static_cast<uint64_t>(view.byteOffset) + a.byteOffset;
  const uint64_t needed = a.count == 0 ? 0 : static_cast<uint64_t>(stride) * (a.count - 1) + element;
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

/// One position component of glTF component type `type` at `p` as a
/// float: a float as it is; an integer (KHR_mesh_quantization) as its
/// value, or, normalized, as glTF maps it to [-1, 1] or [0, 1] (the float
/// quotient, correctly rounded).
float PositionComponent(const unsigned char* p, int type, bool normalized) {
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
    for (size_t a = 0; a < 3; ++a) f[a] = PositionComponent(element + a * size, type, normalized);
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
    const std::string field = "mesh " + std::to_string(mesh_index) + " primitive " + std::to_string(p);
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
    const uint32_t base = static_cast<uint32_t>(node->VertexCount());
    if (node->floats.empty()) {
      node->floats = std::move(*vertices);  // the first primitive's: no copy
    } else {
      node->floats.insert(node->floats.end(), vertices->begin(), vertices->end());
    }
    std::vector<float>().swap(*vertices);
    auto add = [&](uint32_t a, uint32_t b, uint32_t c) {
      node->triangles.push_back({base + index(a), base + index(b), base + index(c)});
    };
    const uint32_t adds = mode == TINYGLTF_MODE_TRIANGLES ? n / 3 : (n > 2 ? n - 2 : 0);
    node->triangles.reserve(node->triangles.size() + adds);  // exactly, for one primitive
    if (mode == TINYGLTF_MODE_TRIANGLES) {
      if (n % 3 != 0) return Invalid(field + ": " + std::to_string(n) + " indices is not a multiple of 3");
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
  if (node.translation.size() == 3) t.translation = {node.translation[0], node.translation[1], node.translation[2]};
  Quat q;
  if (node.rotation.size() == 4) {
    q = {node.rotation[0], node.rotation[1], node.rotation[2], node.rotation[3]};
    if (!q.IsFinite() || q.Length() < 1e-12) return Invalid("rotation is not a rotation quaternion");
    q = q.Normalized();
  }
  Vec3 s{1, 1, 1};
  if (node.scale.size() == 3) s = {node.scale[0], node.scale[1], node.scale[2]};
  const Mat33 r = q.ToMatrix();
  for (int i = 0; i < 3; ++i) t.linear.row[i] = {r.row[i][0] * s.x, r.row[i][1] * s.y, r.row[i][2] * s.z};
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
    if (view->component_type != TINYGLTF_COMPONENT_TYPE_FLOAT) {
      return Invalid(std::string(at.name) + " must be floats");
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
      std::memcpy(f[a], element, (list[a].type == TINYGLTF_TYPE_VEC4 ? 4 : 3) * sizeof(float));
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

Status ImportGltf(const std::string& path, bool binary, const ImportOptions& options, Level* level) {
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
  // Geometry this importer cannot read is an error, not a level with
  // pieces missing: compressed buffers the file requires, instanced nodes.
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
    if (scene >= model.scenes.size()) return Invalid(path + ": scene " + std::to_string(scene) + " does not exist");
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
      return Invalid(path + ": " + where + " appears twice in the node hierarchy (a cycle, or two parents)");
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
        return Invalid(path + ": " + where + ": mesh " + std::to_string(node.mesh) + " does not exist");
      }
      const tinygltf::Mesh& mesh = model.meshes[static_cast<size_t>(node.mesh)];
      // Where the mesh is placed: the node, or each of its instances
      // (EXT_mesh_gpu_instancing), read before the node's buffers may go.
      std::vector<Affine> worlds = {here.world};
      const auto instancing = node.extensions.find("EXT_mesh_gpu_instancing");
      if (instancing != node.extensions.end()) {
        auto instances = ReadInstances(model, doc->buffers, instancing->second);
        if (!instances.ok()) {
          return Invalid(path + ": " + where + ": EXT_mesh_gpu_instancing: " +
                         instances.error().message);
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
        if (geometry.floats.empty()) {
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

// --- OBJ ----------------------------------------------------------------------

/// The double nearest the decimal that tinyobjloader read as `x`, for a
/// file whose "v" lines ReadObjPositions could not match to its vertices:
/// its parser can land an ulp or two off, so a file's "2.123456" came back
/// as no q / 10^k. The q / 10^k (k <= 9) within 2 ulps of x, the fewest
/// digits first, is the correctly rounded value of such text.
double NearestShortDecimal(double x) {
  if (!std::isfinite(x) || x == 0.0) return x;
  const double ulp = std::nextafter(std::fabs(x), INFINITY) - std::fabs(x);
  double scale = 1.0;
  for (int k = 0; k <= 9; ++k, scale *= 10.0) {
    const double q = std::nearbyint(x * scale);
    if (std::fabs(q) > 0x1p53) break;
    const double decimal = q / scale;
    if (std::fabs(decimal - x) <= 2.0 * ulp) return decimal;
  }
  return x;
}

Status ImportObj(const std::string& path, const ImportOptions& options, Level* level) {
  // The arrays are ours (LoadObj, as ObjReader calls it): each object's
  // are freed once it is built.
  tinyobj::attrib_t attrib;
  std::vector<tinyobj::shape_t> shapes;
  std::vector<tinyobj::material_t> materials;
  std::string warn;
  std::string err;
  const size_t slash = path.find_last_of("/\\");
  const std::string mtl_dir = slash == std::string::npos ? "" : path.substr(0, slash);
  if (!tinyobj::LoadObj(&attrib, &shapes, &materials, &warn, &err, path.c_str(), mtl_dir.c_str(),
                        /*triangulate=*/true, /*default_vcols_fallback=*/false)) {
    while (!err.empty() && std::isspace(static_cast<unsigned char>(err.back()))) err.pop_back();
    return Invalid(path + ": " + (err.empty() ? "not a Wavefront OBJ file" : err));
  }
  std::vector<tinyobj::real_t>& v = attrib.vertices;
  std::vector<tinyobj::real_t>().swap(attrib.colors);
  const size_t vertex_count = v.size() / 3;
  // tinyobjloader drops a polygon (4+ corners) with an index past the
  // vertices and only warns: that is a broken file, not a smaller level.
  if (warn.find("invalid vertex index") != std::string::npos) {
    return Invalid(path + ": a polygon uses a vertex index beyond the " + std::to_string(vertex_count) +
                   " vertices (tinyobjloader: face with invalid vertex index)");
  }
  // Each coordinate as the double nearest its text.
  if (!ReadObjPositions(path, &v)) {
    for (tinyobj::real_t& x : v) x = NearestShortDecimal(x);
  }
  Builder builder(options, level);
  // An object's vertices keep the file's order (a grid listed row by row
  // stays so): slot[vi] is vertex vi's index in the object being built.
  constexpr uint32_t kUnused = UINT32_MAX;
  std::vector<uint32_t> slot(vertex_count, kUnused);
  std::vector<uint32_t> used;
  for (size_t s = 0; s < shapes.size(); ++s) {
    tinyobj::mesh_t& mesh = shapes[s].mesh;
    NodeGeometry node;
    node.world = RootTransform(options);
    node.where =
        shapes[s].name.empty() ? "object #" + std::to_string(s) : "object '" + shapes[s].name + "'";
    node.role = RoleOf(shapes[s].name);
    node.layer = options.layer;
    for (size_t f = 0; f < mesh.num_face_vertices.size(); ++f) {
      const size_t n = mesh.num_face_vertices[f];
      if (n != 3) {
        return Invalid(path + ": " + node.where + ": face " + std::to_string(f) + " has " +
                       std::to_string(n) + " vertices after triangulation");
      }
      for (size_t k = 0; k < 3; ++k) {
        const int vi = mesh.indices[3 * f + k].vertex_index;
        if (vi < 0 || static_cast<size_t>(vi) >= vertex_count) {
          return Invalid(path + ": " + node.where + ": face " + std::to_string(f) + " uses vertex " +
                         std::to_string(vi + 1) + " of " + std::to_string(vertex_count));
        }
        if (slot[static_cast<size_t>(vi)] == kUnused) {
          slot[static_cast<size_t>(vi)] = 0;
          used.push_back(static_cast<uint32_t>(vi));
        }
      }
    }
    std::sort(used.begin(), used.end());
    node.vertices.reserve(used.size());
    for (uint32_t vi : used) {
      slot[vi] = static_cast<uint32_t>(node.vertices.size());
      const Vec3 p{v[3 * size_t{vi}], v[3 * size_t{vi} + 1], v[3 * size_t{vi} + 2]};
      if (!p.IsFinite()) {
        return Invalid(path + ": " + node.where + ": vertex " + std::to_string(vi + 1) +
                       " is not finite");
      }
      node.vertices.push_back(p);
    }
    node.triangles.reserve(mesh.num_face_vertices.size());
    for (size_t f = 0; f < mesh.num_face_vertices.size(); ++f) {
      Triangle t{};
      for (size_t k = 0; k < 3; ++k) {
        t[k] = slot[static_cast<size_t>(mesh.indices[3 * f + k].vertex_index)];
      }
      node.triangles.push_back(t);
    }
    for (uint32_t vi : used) slot[vi] = kUnused;
    used.clear();
    mesh = tinyobj::mesh_t();  // this object's faces are not needed any more
    if (node.triangles.empty()) continue;
    if (Status st = builder.AddNode(&node); !st.ok()) return Invalid(path + ": " + st.message());
  }
  return Status::Ok();
}

}  // namespace

const char* LevelFormatName(LevelFormat format) {
  switch (format) {
    case LevelFormat::kGltf: return "gltf";
    case LevelFormat::kGlb: return "glb";
    case LevelFormat::kObj: return "obj";
  }
  return "unknown";
}

bool IsLevelFile(const std::string& path) {
  const std::string p = Lower(path);
  return EndsWith(p, ".gltf") || EndsWith(p, ".glb") || EndsWith(p, ".obj");
}

uint64_t ImportReport::colliders() const {
  uint64_t n = 0;
  for (uint64_t c : counts) n += c;
  return n;
}

std::string ImportReport::ToString() const {
  std::string s = file + " (" + LevelFormatName(format) + "): " + std::to_string(colliders()) +
                  " colliders from " + std::to_string(nodes) +
                  (format == LevelFormat::kObj ? " objects" : " nodes") + " in " +
                  FormatDouble(seconds * 1e3, 9) + " ms\n ";
  const char* sep = " ";
  for (int k = 0; k < kShapeKindCount; ++k) {
    if (counts[static_cast<size_t>(k)] == 0) continue;
    s += std::string(sep) + ShapeKindName(static_cast<ShapeKind>(k)) + " " +
         std::to_string(counts[static_cast<size_t>(k)]);
    sep = ", ";
  }
  s += "\n  triangles " + std::to_string(triangles) + " (" + std::to_string(dropped_triangles) +
       " degenerate dropped)\n";
  if (!bounds.IsEmpty()) {
    s += "  bounds [" + FormatDouble(bounds.min.x, 9) + ", " + FormatDouble(bounds.min.y, 9) +
         ", " + FormatDouble(bounds.min.z, 9) + "] .. [" + FormatDouble(bounds.max.x, 9) + ", " +
         FormatDouble(bounds.max.y, 9) + ", " + FormatDouble(bounds.max.z, 9) + "]\n";
  }
  if (up != UpAxis::kY || scale != 1.0) {
    s += std::string("  imported with up ") + UpAxisName(up) + ", scale " + FormatDouble(scale, 9) + "\n";
  }
  for (const std::string& w : warnings) s += "  warning: " + w + "\n";
  for (const std::string& n : notes) s += "  note: " + n + "\n";
  return s;
}

const char* UpAxisName(UpAxis up) {
  switch (up) {
    case UpAxis::kY: return "y";
    case UpAxis::kZ: return "z";
    case UpAxis::kMinusZ: return "-z";
    case UpAxis::kX: return "x";
    case UpAxis::kMinusX: return "-x";
    case UpAxis::kMinusY: return "-y";
  }
  return "y";
}

Result<UpAxis> ParseUpAxis(const std::string& text) {
  std::string t = Lower(text);
  if (!t.empty() && t[0] == '+') t.erase(0, 1);
  for (UpAxis up : {UpAxis::kY, UpAxis::kZ, UpAxis::kMinusZ, UpAxis::kX, UpAxis::kMinusX,
                    UpAxis::kMinusY}) {
    if (t == UpAxisName(up)) return up;
  }
  return Invalid("up axis '" + text + "' is not one of y, z, -z, x, -x, -y");
}

Quat UpAxisRotation(UpAxis up) {
  const double h = std::sqrt(0.5);
  switch (up) {
    case UpAxis::kY: return {0, 0, 0, 1};
    case UpAxis::kZ: return {-h, 0, 0, h};      // -90 degrees about x: +z -> +y
    case UpAxis::kMinusZ: return {h, 0, 0, h};  // +90 degrees about x: -z -> +y
    case UpAxis::kX: return {0, 0, h, h};       // +90 degrees about z: +x -> +y
    case UpAxis::kMinusX: return {0, 0, -h, h}; // -90 degrees about z: -x -> +y
    case UpAxis::kMinusY: return {1, 0, 0, 0};  // 180 degrees about x
  }
  return {0, 0, 0, 1};
}

std::string ImportSettingsPath(const std::string& level_path) {
  const size_t slash = level_path.find_last_of('/');
  const size_t dot = level_path.find_last_of('.');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  return (has_ext ? level_path.substr(0, dot) : level_path) + ".import.json";
}

bool IsImportSettingsFile(const std::string& path) { return EndsWith(Lower(path), ".import.json"); }

Result<ImportOptions> ReadImportSettings(const std::string& level_path, ImportOptions base) {
  const std::string path = ImportSettingsPath(level_path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return base;
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Invalid(path + ": not a JSON object like {\"up\": \"z\", \"scale\": 0.0254}");
  }
  for (const auto& [key, value] : doc.items()) {
    const std::string where = path + ": \"" + key + "\"";
    if (key == "up") {
      if (!value.is_string()) return Invalid(where + " must be a string (y, z, -z, x, -x, -y)");
      auto up = ParseUpAxis(value.get<std::string>());
      if (!up.ok()) return Invalid(where + ": " + up.error().message);
      base.up = *up;
    } else if (key == "scale") {
      if (!value.is_number()) return Invalid(where + " must be a number (metres per file unit)");
      base.scale = value.get<double>();
    } else {
      return Invalid(where + " is not a setting (up, scale)");
    }
  }
  return base;
}

Result<Level> ImportLevel(const std::string& path, const ImportOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (options.layer > kMaxLayer) return Invalid("layer must be in [0, 31]");
  if (!(options.scale >= 1.0 / kMaxImportScale && options.scale <= kMaxImportScale)) {
    return Invalid(path + ": scale " + FormatDouble(options.scale, 9) + " is outside [1e-6, 1e6]");
  }
  const std::string lower = Lower(path);
  if (!std::ifstream(path, std::ios::binary).good()) {
    return Error{ErrorCode::kNotFound, "cannot open " + path};
  }
  Level level;
  level.report.file = path;
  Status status;
  if (EndsWith(lower, ".glb")) {
    level.report.format = LevelFormat::kGlb;
  } else if (EndsWith(lower, ".gltf")) {
    level.report.format = LevelFormat::kGltf;
  } else if (EndsWith(lower, ".obj")) {
    level.report.format = LevelFormat::kObj;
  } else {
    return Invalid(path + ": not a level file (expected .gltf, .glb or .obj)");
  }
  if (Status s = CheckContent(path, level.report.format); !s.ok()) return s.error();
  switch (level.report.format) {
    case LevelFormat::kGlb: status = ImportGltf(path, /*binary=*/true, options, &level); break;
    case LevelFormat::kGltf: status = ImportGltf(path, /*binary=*/false, options, &level); break;
    case LevelFormat::kObj: status = ImportObj(path, options, &level); break;
  }
  if (!status.ok()) return status.error();
  if (level.colliders.empty()) return Invalid(path + ": no collision geometry (no node with triangles)");
  level.report.up = options.up;
  level.report.scale = options.scale;
  const Vec3 size = level.report.bounds.max - level.report.bounds.min;
  const double extent = std::max({size.x, size.y, size.z});
  if (extent > kImplausibleExtent) {
    level.report.warnings.push_back(
        "the level spans " + FormatDouble(extent / 1000.0, 9) + " km (over " +
        FormatDouble(kImplausibleExtent / 1000.0, 9) +
        " km): implausible for metres; is the file in other units (--scale 0.01 for centimetres, "
        "0.0254 for inches)?");
  }
  level.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return level;
}

}  // namespace hitbox::import
