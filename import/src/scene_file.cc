#include "hitbox/import/scene_file.h"

#include <zlib.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <unordered_map>

#include "hitbox/format.h"
#include "node_vertices.h"

namespace hitbox::import {
namespace {

Error Invalid(std::string message) { return Error{ErrorCode::kInvalidArgument, std::move(message)}; }

// Mesh arrays read flat by SceneSax: the document keeps a placeholder
// (binary, subtype kPackedVertices or kPackedTriangles, holding the index
// here) where the array was.
// A mesh's vertices as read: float32 x, y, z while every coordinate so far
// is a float32 value (half the bytes), then doubles (NodeVertices::Push).
struct PackedArrays {
  std::vector<NodeVertices> vertices;
  std::vector<std::vector<std::array<uint32_t, 3>>> triangles;
};
constexpr std::uint8_t kPackedVertices = 1;
constexpr std::uint8_t kPackedTriangles = 2;

// The index a placeholder holds, or SIZE_MAX when `j` is not one of `subtype`.
size_t PackedIndex(const nlohmann::json& j, std::uint8_t subtype) {
  if (!j.is_binary() || !j.get_binary().has_subtype() || j.get_binary().subtype() != subtype ||
      j.get_binary().size() != sizeof(uint64_t)) {
    return SIZE_MAX;
  }
  uint64_t index;
  std::memcpy(&index, j.get_binary().data(), sizeof(index));
  return static_cast<size_t>(index);
}

Result<Collider> ParseColliderWith(const nlohmann::json& entry, size_t index,
                                   PackedArrays* packed);

// Builds the document as nlohmann's DOM parser does, except that the
// "vertices" and "triangles" arrays of a "mesh" object are read into
// PackedArrays (12 bytes a float32 vertex, else 24, and 12 a triangle,
// against ~90 for a [x, y, z] in the tree) while every element is a well-formed [x, y, z] of
// numbers or [a, b, c] of unsigned 32-bit integers. At the first element
// that is not, the elements read so far go back into the tree as arrays of
// the same values and the rest is read as usual, so ReadShape meets it
// (and names it) as in the tree. Each element of the document's "colliders"
// array is parsed into a Collider (its mesh built) as soon as it closes and
// then dropped from the tree, so the tree and the flat arrays hold one
// collider at a time (Streamed()); the first error is kept and reported
// only if the text is valid JSON, as the tree path would.
class SceneSax {
 public:
  using json = nlohmann::json;
  SceneSax(json* root, PackedArrays* packed) : root_(root), packed_(packed) {}

  bool null() { return Scalar(json(nullptr)); }
  bool boolean(bool v) { return Scalar(json(v)); }
  bool number_integer(json::number_integer_t v) { return Scalar(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return Scalar(json(v)); }
  bool number_float(json::number_float_t v, const std::string& /*text*/) {
    return Scalar(json(v));
  }
  bool string(std::string& v) { return Scalar(json(std::move(v))); }
  bool binary(json::binary_t& v) { return Scalar(json::binary(std::move(v))); }
  bool key(std::string& k) {
    if (skip_ > 1) return true;
    Unpack();
    key_ = k;
    // A member of the document other than "colliders" (a case file's
    // queries and answers) is checked as JSON but not kept.
    if (stack_.size() == 1 && k != "colliders") {
      skip_ = 1;
      return true;
    }
    skip_ = 0;
    if (stack_.size() == 1 && stack_.back().value->is_object()) {
      // "colliders" again: the last one counts, as in the tree.
      streamed_.clear();
      first_index_.clear();
      stream_error_.reset();
      entries_ = 0;
    }
    slot_ = &(*stack_.back().value)[k];
    return true;
  }
  bool start_object(size_t /*elements*/) {
    if (skip_ > 0) return Skip(+1);
    Unpack();
    Open(json::value_t::object);
    return true;
  }
  bool end_object() {
    if (skip_ > 1) return Skip(-1);
    skip_ = 0;
    Unpack();
    stack_.pop_back();
    Consume();
    return true;
  }
  bool start_array(size_t /*elements*/) {
    if (skip_ > 0) return Skip(+1);
    if (packing_ && !element_open_) {
      element_open_ = true;
      element_size_ = 0;
      return true;
    }
    Unpack();
    const bool mesh_array = !stack_.empty() && stack_.back().value->is_object() &&
                            stack_.back().key == "mesh" &&
                            (key_ == "vertices" || key_ == "triangles");
    Open(json::value_t::array);
    if (mesh_array) {
      packing_ = true;
      packing_triangles_ = key_ == "triangles";
      element_open_ = false;
      vertices_ = NodeVertices::Floats({});
      triangles_.clear();
    }
    return true;
  }
  bool end_array() {
    if (skip_ > 0) return Skip(-1);
    if (packing_) {
      if (element_open_ && element_size_ == 3) {
        if (packing_triangles_) {
          triangles_.push_back({static_cast<uint32_t>(element_[0].get<uint64_t>()),
                                static_cast<uint32_t>(element_[1].get<uint64_t>()),
                                static_cast<uint32_t>(element_[2].get<uint64_t>())});
        } else {
          vertices_.Push(
              {element_[0].get<double>(), element_[1].get<double>(), element_[2].get<double>()});
        }
        element_open_ = false;
        return true;
      }
      if (!element_open_) {
        // The whole array was well formed: the placeholder takes its place.
        packing_ = false;
        json* array = stack_.back().value;
        uint64_t index;
        if (packing_triangles_) {
          index = packed_->triangles.size();
          packed_->triangles.push_back(std::move(triangles_));
        } else {
          index = packed_->vertices.size();
          packed_->vertices.push_back(std::move(vertices_));
        }
        triangles_ = {};
        vertices_ = NodeVertices::Floats({});
        std::vector<std::uint8_t> bytes(sizeof(index));
        std::memcpy(bytes.data(), &index, sizeof(index));
        *array = json::binary(std::move(bytes),
                              packing_triangles_ ? kPackedTriangles : kPackedVertices);
        stack_.pop_back();
        Consume();
        return true;
      }
    }
    Unpack();
    stack_.pop_back();
    Consume();
    return true;
  }
  bool parse_error(size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) {
    error_ = e.what();
    return false;
  }
  const std::string& error() const { return error_; }
  /// True when the document's "colliders" is an array, whose elements were
  /// then parsed as they closed: the colliders, or the first error.
  bool Streamed() const {
    if (!root_->is_object()) return false;
    const auto it = root_->find("colliders");
    return it != root_->end() && it->is_array();
  }
  Result<std::vector<Collider>> TakeColliders() {
    if (stream_error_) return *stream_error_;
    return std::move(streamed_);
  }

 private:
  struct Open_ {
    json* value;
    std::string key;  // the key it is under in its parent object ("" otherwise)
  };
  // Places `v` where the next value goes; returns where it went.
  json* Place(json v) {
    if (stack_.empty()) {
      *root_ = std::move(v);
      return root_;
    }
    json* top = stack_.back().value;
    if (top->is_array()) {
      top->push_back(std::move(v));
      return &top->back();
    }
    *slot_ = std::move(v);
    return slot_;
  }
  void Open(json::value_t type) {
    const bool in_object = !stack_.empty() && stack_.back().value->is_object();
    json* at = Place(json(type));
    stack_.push_back({at, in_object ? key_ : std::string()});
  }
  bool Scalar(json v) {
    if (skip_ > 0) {
      if (skip_ == 1) skip_ = 0;  // the skipped member was this value
      return true;
    }
    if (packing_) {
      const bool fits = packing_triangles_
                            ? v.is_number_unsigned() && v.get<uint64_t>() <= 0xFFFFFFFFull
                            : v.is_number();
      if (element_open_ && element_size_ < 3 && fits) {
        element_[element_size_++] = std::move(v);
        return true;
      }
      Unpack();
    }
    Place(std::move(v));
    Consume();
    return true;
  }
  // After a value closes: an element of the root's "colliders" array is
  // parsed (after the first error, only dropped) and dropped from the tree.
  void Consume() {
    if (stack_.size() != 2 || stack_[0].value != root_ || !root_->is_object() ||
        stack_[1].key != "colliders" || !stack_[1].value->is_array() ||
        stack_[1].value->empty()) {
      return;
    }
    json& array = *stack_[1].value;
    const size_t index = entries_++;
    if (!stream_error_) {
      const json& entry = array.back();
      Result<Collider> c = ParseColliderWith(entry, index, packed_);
      if (!c.ok()) {
        stream_error_ = c.error();
      } else if (const auto [it, inserted] = first_index_.emplace(c->id, index); !inserted) {
        stream_error_ = Invalid("colliders[" + std::to_string(index) + "] (id " +
                                entry.at("id").dump() + "): duplicate id, first used by colliders[" +
                                std::to_string(it->second) + "]");
      } else {
        streamed_.push_back(std::move(*c));
      }
    }
    array.get_ref<json::array_t&>().pop_back();
    packed_->vertices.clear();
    packed_->triangles.clear();
  }
  // Leaves packing: the elements read so far go into the tree's array (and
  // the open element, with its values so far, onto the stack).
  void Unpack() {
    if (!packing_) return;
    packing_ = false;
    json* array = stack_.back().value;
    if (packing_triangles_) {
      for (const auto& t : triangles_) array->push_back(json::array({t[0], t[1], t[2]}));
    } else {
      for (size_t i = 0; i < vertices_.size(); ++i) {
        const Vec3 v = vertices_[i];
        array->push_back(json::array({v.x, v.y, v.z}));
      }
    }
    triangles_ = {};
    vertices_ = NodeVertices::Floats({});
    if (element_open_) {
      Open(json::value_t::array);
      for (size_t i = 0; i < element_size_; ++i) stack_.back().value->push_back(element_[i]);
    }
  }

  // Skipping a member of the document: 1 before its value, then 1 + the
  // depth of the containers open inside it.
  bool Skip(int step) {
    skip_ += step;
    if (skip_ == 1 && step < 0) skip_ = 0;  // its last container closed
    return true;
  }

  json* root_;
  PackedArrays* packed_;
  int skip_ = 0;
  std::vector<Open_> stack_;
  json* slot_ = nullptr;  // where an object's next value goes (after key())
  std::string key_;       // the last key read
  std::string error_;
  // Reading a mesh array flat: its elements so far, and the open element.
  bool packing_ = false;
  bool packing_triangles_ = false;
  bool element_open_ = false;
  size_t element_size_ = 0;
  json element_[3];
  NodeVertices vertices_ = NodeVertices::Floats({});
  std::vector<std::array<uint32_t, 3>> triangles_;
  // The colliders parsed so far (elements of "colliders" consumed), or the first error.
  size_t entries_ = 0;
  std::vector<Collider> streamed_;
  std::unordered_map<uint64_t, size_t> first_index_;
  std::optional<Error> stream_error_;
};

Result<std::string> ReadAll(const std::string& path) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  std::string data;
  if (gz) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (f == nullptr) return Invalid("cannot open " + path);
    char buf[1 << 16];
    int n = 0;
    while ((n = gzread(f, buf, sizeof(buf))) > 0) data.append(buf, static_cast<size_t>(n));
    int errnum = 0;
    const char* msg = gzerror(f, &errnum);
    const bool failed = n < 0 || (errnum != Z_OK && errnum != Z_STREAM_END);
    const std::string error = failed ? std::string(msg) : "";
    gzclose(f);
    if (failed) return Invalid(path + ": gzip error: " + error);
    return data;
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Invalid("cannot open " + path);
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) data.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Invalid("error reading " + path);
  return data;
}

// A JSON number as a finite double, or an error naming `field`.
Result<double> Number(const nlohmann::json& j, const std::string& field) {
  if (!j.is_number()) return Invalid(field + " must be a number, got " + j.dump());
  const double v = j.get<double>();
  if (!std::isfinite(v)) return Invalid(field + " must be finite");
  return v;
}

Result<Vec3> ReadVec3(const nlohmann::json& j, const std::string& field) {
  if (!j.is_array() || j.size() != 3) {
    return Invalid(field + " must be an array of 3 numbers [x, y, z], got " + j.dump());
  }
  double v[3];
  for (size_t i = 0; i < 3; ++i) {
    auto n = Number(j[i], field + "[" + std::to_string(i) + "]");
    if (!n.ok()) return n.error();
    v[i] = *n;
  }
  return Vec3{v[0], v[1], v[2]};
}

Result<Quat> ReadQuat(const nlohmann::json& j, const std::string& field) {
  if (!j.is_array() || j.size() != 4) {
    return Invalid(field + " must be an array of 4 numbers [x, y, z, w], got " + j.dump());
  }
  double v[4];
  for (size_t i = 0; i < 4; ++i) {
    auto n = Number(j[i], field + "[" + std::to_string(i) + "]");
    if (!n.ok()) return n.error();
    v[i] = *n;
  }
  const Quat q{v[0], v[1], v[2], v[3]};
  if (!q.IsNormalized(kQuatNormTolerance)) {
    return Invalid(field + ": quaternion norm " + FormatDouble(q.Length()) +
                   " is not 1 (tolerance 1e-6)");
  }
  return q.Normalized();
}

Result<Shape> ReadShape(const nlohmann::json& j, const std::string& field,
                        PackedArrays* packed = nullptr) {
  if (!j.is_object() || j.size() != 1) {
    return Invalid(field +
                   " must be an object with exactly one of sphere, box, capsule, cylinder, "
                   "convex_hull, mesh, heightfield, compound");
  }
  // Not a structured binding: clang before 16 cannot capture one in the lambda below.
  const auto item = *j.items().begin();
  const std::string& kind = item.key();
  const nlohmann::json& body = item.value();
  const std::string f = field + "." + kind;
  if (!body.is_object()) return Invalid(f + " must be an object");
  auto get = [&](const char* key) -> Result<double> {
    if (!body.contains(key)) return Invalid(f + "." + key + " is missing");
    return Number(body.at(key), f + "." + key);
  };
  Result<Shape> shape = Invalid("");
  if (kind == "sphere") {
    auto r = get("radius");
    if (!r.ok()) return r.error();
    shape = Shape::MakeSphere(*r);
  } else if (kind == "box") {
    if (!body.contains("half_extents")) return Invalid(f + ".half_extents is missing");
    auto h = ReadVec3(body.at("half_extents"), f + ".half_extents");
    if (!h.ok()) return h.error();
    shape = Shape::MakeBox(*h);
  } else if (kind == "capsule" || kind == "cylinder") {
    auto r = get("radius");
    if (!r.ok()) return r.error();
    auto h = get("half_height");
    if (!h.ok()) return h.error();
    shape = kind == "capsule" ? Shape::MakeCapsule(*r, *h) : Shape::MakeCylinder(*r, *h);
  } else if (kind == "convex_hull") {
    if (!body.contains("points")) return Invalid(f + ".points is missing");
    const nlohmann::json& pts = body.at("points");
    if (!pts.is_array()) return Invalid(f + ".points must be an array of [x, y, z]");
    ConvexHull hull;
    for (size_t i = 0; i < pts.size(); ++i) {
      auto p = ReadVec3(pts[i], f + ".points[" + std::to_string(i) + "]");
      if (!p.ok()) return p.error();
      hull.points.push_back(*p);
    }
    shape = Shape::Make(hull);
  } else if (kind == "mesh") {
    if (!body.contains("vertices")) return Invalid(f + ".vertices is missing");
    if (!body.contains("triangles")) return Invalid(f + ".triangles is missing");
    const nlohmann::json& vs = body.at("vertices");
    const nlohmann::json& ts = body.at("triangles");
    // Arrays SceneSax read flat are taken as they are (every element was well formed).
    const size_t vs_packed = packed != nullptr ? PackedIndex(vs, kPackedVertices) : SIZE_MAX;
    const size_t ts_packed = packed != nullptr ? PackedIndex(ts, kPackedTriangles) : SIZE_MAX;
    if (!vs.is_array() && vs_packed == SIZE_MAX) {
      return Invalid(f + ".vertices must be an array of [x, y, z]");
    }
    if (!ts.is_array() && ts_packed == SIZE_MAX) {
      return Invalid(f + ".triangles must be an array of [a, b, c]");
    }
    TriangleMeshShape mesh;
    if (ts_packed != SIZE_MAX) mesh.triangles = std::move(packed->triangles[ts_packed]);
    for (size_t i = 0; vs_packed == SIZE_MAX && i < vs.size(); ++i) {
      auto p = ReadVec3(vs[i], f + ".vertices[" + std::to_string(i) + "]");
      if (!p.ok()) return p.error();
      mesh.vertices.push_back(*p);
    }
    for (size_t i = 0; ts_packed == SIZE_MAX && i < ts.size(); ++i) {
      const std::string ti = f + ".triangles[" + std::to_string(i) + "]";
      if (!ts[i].is_array() || ts[i].size() != 3) return Invalid(ti + " must be [a, b, c]");
      std::array<uint32_t, 3> t{};
      for (int k = 0; k < 3; ++k) {
        const nlohmann::json& v = ts[i][k];
        if (!v.is_number_unsigned() || v.get<uint64_t>() > 0xFFFFFFFFull) {
          return Invalid(ti + "[" + std::to_string(k) + "] must be an unsigned 32-bit index");
        }
        t[k] = static_cast<uint32_t>(v.get<uint64_t>());
      }
      mesh.triangles.push_back(t);
    }
    // Read flat: float32 vertices stay floats through the build. Either way
    // the arrays are freed as the build goes.
    shape = vs_packed != SIZE_MAX ? packed->vertices[vs_packed].MakeMesh(std::move(mesh.triangles))
                                  : Shape::Make(std::move(mesh));
  } else if (kind == "heightfield") {
    HeightfieldShape h;
    for (const char* key : {"rows", "cols"}) {
      if (!body.contains(key) || !body.at(key).is_number_unsigned() ||
          body.at(key).get<uint64_t>() > 0xFFFFFFFFull) {
        return Invalid(f + "." + key + " must be an unsigned 32-bit integer");
      }
    }
    h.rows = static_cast<uint32_t>(body.at("rows").get<uint64_t>());
    h.cols = static_cast<uint32_t>(body.at("cols").get<uint64_t>());
    if (!body.contains("cell_size") || !body.at("cell_size").is_array() ||
        body.at("cell_size").size() != 2) {
      return Invalid(f + ".cell_size must be [dx, dz]");
    }
    auto dx = Number(body.at("cell_size")[0], f + ".cell_size[0]");
    if (!dx.ok()) return dx.error();
    auto dz = Number(body.at("cell_size")[1], f + ".cell_size[1]");
    if (!dz.ok()) return dz.error();
    h.cell_size_x = *dx;
    h.cell_size_z = *dz;
    if (!body.contains("heights") || !body.at("heights").is_array()) {
      return Invalid(f + ".heights must be an array of numbers");
    }
    const nlohmann::json& hs = body.at("heights");
    for (size_t i = 0; i < hs.size(); ++i) {
      auto v = Number(hs[i], f + ".heights[" + std::to_string(i) + "]");
      if (!v.ok()) return v.error();
      h.heights.push_back(*v);
    }
    shape = Shape::Make(h);
  } else if (kind == "compound") {
    if (!body.contains("children") || !body.at("children").is_array()) {
      return Invalid(f + ".children must be an array of {shape, position, rotation}");
    }
    const nlohmann::json& cs = body.at("children");
    Compound compound;
    for (size_t i = 0; i < cs.size(); ++i) {
      const std::string ci = f + ".children[" + std::to_string(i) + "]";
      if (!cs[i].is_object()) return Invalid(ci + " must be an object {shape, position, rotation}");
      for (const char* key : {"shape", "position", "rotation"}) {
        if (!cs[i].contains(key)) return Invalid(ci + "." + key + " is missing");
      }
      // Collider-only kinds are refused before reading them (no recursion).
      const nlohmann::json& cj = cs[i].at("shape");
      if (cj.is_object() && cj.size() == 1) {
        const std::string k = cj.begin().key();
        if (k == "mesh" || k == "heightfield" || k == "compound") {
          return Invalid(ci + ".shape: a " + k +
                         " cannot be a compound child (use sphere, box, capsule, cylinder or "
                         "convex_hull)");
        }
      }
      auto child = ReadShape(cj, ci + ".shape");
      if (!child.ok()) return child.error();
      auto p = ReadVec3(cs[i].at("position"), ci + ".position");
      if (!p.ok()) return p.error();
      auto q = ReadQuat(cs[i].at("rotation"), ci + ".rotation");
      if (!q.ok()) return q.error();
      compound.children.push_back({*child, Pose(*p, *q)});
    }
    shape = Shape::Make(compound);
  } else {
    return Invalid(field + ": unknown shape kind '" + kind +
                   "' (expected sphere, box, capsule, cylinder, convex_hull, mesh, "
                   "heightfield or compound)");
  }
  if (!shape.ok()) return Invalid(f + ": " + shape.error().message);
  return shape;
}

}  // namespace

Result<nlohmann::json> ReadJsonFile(const std::string& path) {
  auto text = ReadAll(path);
  if (!text.ok()) return text.error();
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    // Parse again with exceptions only to get the position of the error.
    try {
      const nlohmann::json again = nlohmann::json::parse(*text);
      (void)again;
    } catch (const nlohmann::json::exception& e) {
      // parse_error, and out_of_range for numbers beyond a double ("1e999").
      return Invalid(path + ": not valid JSON: " + e.what());
    }
    return Invalid(path + ": not valid JSON");
  }
  return doc;
}

std::string DescribeEntry(const nlohmann::json& entries, size_t index) {
  std::string s = "colliders[" + std::to_string(index) + "]";
  if (entries.is_array() && index < entries.size()) {
    const auto& e = entries[index];
    if (e.is_object() && e.contains("id")) s += " (id " + e.at("id").dump() + ")";
  }
  return s;
}

namespace {

Result<Collider> ParseColliderWith(const nlohmann::json& entry, size_t index,
                                   PackedArrays* packed) {
  const std::string where = "colliders[" + std::to_string(index) + "]";
  if (!entry.is_object()) return Invalid(where + " must be an object, got " + entry.dump());
  const std::string who =
      entry.contains("id") ? where + " (id " + entry.at("id").dump() + ")" : where;
  auto fail = [&](const Error& e) -> Error { return Invalid(who + ": " + e.message); };

  Collider c;
  if (!entry.contains("id")) return Invalid(where + ": id is missing");
  const auto& id = entry.at("id");
  if (!id.is_number_unsigned()) {
    return Invalid(who + ": id must be an unsigned 64-bit integer, got " + id.dump());
  }
  c.id = id.get<uint64_t>();
  if (!entry.contains("shape")) return Invalid(who + ": shape is missing");
  auto shape = ReadShape(entry.at("shape"), "shape", packed);
  if (!shape.ok()) return fail(shape.error());
  c.shape = *shape;
  if (entry.contains("layer")) {
    const auto& layer = entry.at("layer");
    if (!layer.is_number_unsigned() || layer.get<uint64_t>() > kMaxLayer) {
      return Invalid(who + ": layer must be an integer in [0, 31], got " + layer.dump());
    }
    c.layer = static_cast<uint32_t>(layer.get<uint64_t>());
  }
  if (entry.contains("position")) {
    auto p = ReadVec3(entry.at("position"), "position");
    if (!p.ok()) return fail(p.error());
    c.pose.position = *p;
  }
  if (entry.contains("rotation")) {
    auto q = ReadQuat(entry.at("rotation"), "rotation");
    if (!q.ok()) return fail(q.error());
    c.pose.rotation = *q;
  }
  if (entry.contains("user_data")) {
    const auto& u = entry.at("user_data");
    if (!u.is_number_unsigned()) {
      return Invalid(who + ": user_data must be an unsigned 64-bit integer, got " + u.dump());
    }
    c.user_data = u.get<uint64_t>();
  }
  return c;
}

Result<std::vector<Collider>> ParseSceneWith(const nlohmann::json& doc, PackedArrays* packed) {
  if (!doc.is_object() || !doc.contains("colliders")) {
    return Invalid("the document has no \"colliders\" array");
  }
  const auto& entries = doc.at("colliders");
  if (!entries.is_array()) return Invalid("\"colliders\" must be an array");
  std::vector<Collider> colliders;
  colliders.reserve(entries.size());
  std::unordered_map<uint64_t, size_t> first_index;
  first_index.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    auto c = ParseColliderWith(entries[i], i, packed);
    if (!c.ok()) return c.error();
    const auto [it, inserted] = first_index.emplace(c->id, i);
    if (!inserted) {
      return Invalid(DescribeEntry(entries, i) + ": duplicate id, first used by colliders[" +
                     std::to_string(it->second) + "]");
    }
    colliders.push_back(*c);
  }
  return colliders;
}

}  // namespace

Result<Collider> ParseCollider(const nlohmann::json& entry, size_t index) {
  return ParseColliderWith(entry, index, nullptr);
}

Result<std::vector<Collider>> ParseScene(const nlohmann::json& doc) {
  return ParseSceneWith(doc, nullptr);
}

Result<std::vector<Collider>> ReadSceneFile(const std::string& path) {
  nlohmann::json doc;
  PackedArrays packed;
  SceneSax sax(&doc, &packed);
  bool parsed;
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (gz) {
    auto text = ReadAll(path);
    if (!text.ok()) return text.error();
    parsed = nlohmann::json::sax_parse(*text, &sax);
  } else {
    // Straight from the file: the text is never held whole.
    std::ifstream in(path, std::ios::binary);
    if (!in) return Invalid("cannot open " + path);
    parsed = nlohmann::json::sax_parse(in, &sax);
    if (in.bad()) return Invalid("error reading " + path);
  }
  if (!parsed) {
    return Invalid(path + ": not valid JSON" + (sax.error().empty() ? "" : ": " + sax.error()));
  }
  if (sax.Streamed()) return sax.TakeColliders();
  return ParseSceneWith(doc, &packed);
}

Result<Shape> ParseShape(const nlohmann::json& j, const std::string& field) { return ReadShape(j, field); }
Result<Vec3> ParseVec3(const nlohmann::json& j, const std::string& field) { return ReadVec3(j, field); }
Result<Quat> ParseQuat(const nlohmann::json& j, const std::string& field) { return ReadQuat(j, field); }

}  // namespace hitbox::import
