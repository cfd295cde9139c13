// Wavefront OBJ levels: the file's lines read for exact positions and
// LoadObj's syntax errors (obj_text.h), then its faces streamed through
// tinyobjloader's callbacks (obj_stream.h), each object a node built as
// soon as it ends.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "level_formats.h"
#include "node_builder.h"
#include "obj_stream.h"
#include "obj_text.h"

namespace hitbox::import {
namespace {

/// Makes each object a node, its vertices the file's that it uses, in the
/// file's order (a grid listed row by row stays so).
class ObjectBuilder {
 public:
  ObjectBuilder(const ImportOptions& options, Level* level, ObjText* text)
      : options_(options), builder_(options, level), text_(*text) {}

  /// Builds `shape`, whose triangles are consumed; errors name the object.
  Status Build(ObjShape* shape) {
    NodeGeometry node;
    node.world = RootTransform(options_);
    node.where = ObjShapeName(shape->index, shape->name);
    node.role = RoleOf(shape->name);
    node.layer = options_.layer;
    const size_t vertex_count = text_.positions.size();
    for (size_t f = 0; f < shape->triangles.size(); ++f) {
      for (size_t k = 0; k < 3; ++k) {
        const auto vi = static_cast<int>(shape->triangles[f][k]);
        if (vi < 0 || static_cast<size_t>(vi) >= vertex_count) {
          return Invalid(node.where + ": face " + std::to_string(f) + " uses vertex " +
                         std::to_string(vi + 1) + " of " + std::to_string(vertex_count));
        }
      }
    }
    node.triangles = std::move(shape->triangles);
    if (Status st = shape->last ? TakePositions(&node) : CopyPositions(&node); !st.ok()) return st;
    return builder_.AddNode(&node);
  }

 private:
  static constexpr uint32_t kUnused = UINT32_MAX;

  static Error NotFinite(const NodeGeometry& node, size_t vi) {
    return Invalid(node.where + ": vertex " + std::to_string(vi + 1) + " is not finite");
  }

  /// Whether file vertex `vi` is finite (a decimal one is).
  bool Finite(size_t vi) const {
    return text_.positions.form() == NodeVertices::Form::kDecimals ||
           text_.positions[vi].IsFinite();
  }

  /// Copies the vertices `node`'s triangles use, as the file's doubles or
  /// decimals, and renumbers them.
  Status CopyPositions(NodeGeometry* node) {
    if (slot_.empty()) slot_.assign(text_.positions.size(), kUnused);
    for (const Triangle& t : node->triangles) {
      for (uint32_t vi : t) {
        if (slot_[vi] == kUnused) {
          slot_[vi] = 0;
          used_.push_back(vi);
        }
      }
    }
    std::sort(used_.begin(), used_.end());
    node->vertices = text_.positions.Like(0);
    node->vertices.Reserve(used_.size());
    for (size_t n = 0; n < used_.size(); ++n) {
      const uint32_t vi = used_[n];
      if (!Finite(vi)) return NotFinite(*node, vi);
      slot_[vi] = static_cast<uint32_t>(n);
      node->vertices.Append(text_.positions, vi);
    }
    for (Triangle& t : node->triangles) t = {slot_[t[0]], slot_[t[1]], slot_[t[2]]};
    for (uint32_t vi : used_) slot_[vi] = kUnused;
    used_.clear();
    return Status::Ok();
  }

  /// For the last object: the file's positions become its vertices, the
  /// used ones moved down in place, with no copy beside them.
  Status TakePositions(NodeGeometry* node) {
    std::vector<uint32_t>().swap(slot_);
    std::vector<uint32_t>().swap(used_);
    const size_t count = text_.positions.size();
    std::vector<bool> used(count);
    for (const Triangle& t : node->triangles) {
      for (uint32_t vi : t) used[vi] = true;
    }
    size_t n = 0;
    for (size_t vi = 0; vi < used.size(); ++vi) {
      if (!used[vi]) continue;
      if (!Finite(vi)) return NotFinite(*node, vi);
      ++n;
    }
    if (n < count) {
      std::vector<uint32_t> slot(count);
      n = 0;
      for (size_t vi = 0; vi < used.size(); ++vi) {
        if (!used[vi]) continue;
        slot[vi] = static_cast<uint32_t>(n);
        text_.positions.CopyTo(vi, n, &text_.positions);
        ++n;
      }
      for (Triangle& t : node->triangles) t = {slot[t[0]], slot[t[1]], slot[t[2]]};
      text_.positions.Resize(n);
    }
    node->vertices = std::move(text_.positions);
    return Status::Ok();
  }

  const ImportOptions& options_;
  Builder builder_;
  ObjText& text_;
  // Scratch across objects: slot_[vi] is vertex vi's index in the object
  // being built (kUnused between objects), used_ its vertices.
  std::vector<uint32_t> slot_;
  std::vector<uint32_t> used_;
};

}  // namespace

Status ImportObj(const std::string& path, const ImportOptions& options, Level* level) {
  ObjText text;
  if (Status st = ReadObjText(path, &text); !st.ok()) return Invalid(path + ": " + st.message());
  ObjectBuilder objects(options, level, &text);
  // The first object's error: LoadObj's own (a bad quad later in the file)
  // comes before it, as when LoadObj read the whole file first.
  Status failed;
  const Status read = StreamObjShapes(path, &text, [&](ObjShape* shape) {
    if (failed.ok()) failed = objects.Build(shape);
  });
  if (!read.ok()) return Invalid(path + ": " + read.message());
  if (!failed.ok()) return Invalid(path + ": " + failed.message());
  return Status::Ok();
}

}  // namespace hitbox::import
