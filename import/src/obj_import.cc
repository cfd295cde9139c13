// Wavefront OBJ levels: the file's lines read for exact positions and
// LoadObj's syntax errors (obj_text.h), then its faces streamed through
// tinyobjloader's callbacks (obj_stream.h), each object a node built as
// soon as it ends.
#include <algorithm>
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
  ObjectBuilder(const ImportOptions& options, Level* level, std::vector<Vec3>* positions)
      : options_(options), builder_(options, level), positions_(*positions) {}

  /// Builds `shape`, whose triangles are consumed; errors name the object.
  Status Build(ObjShape* shape) {
    NodeGeometry node;
    node.world = RootTransform(options_);
    node.where = ObjShapeName(shape->index, shape->name);
    node.role = RoleOf(shape->name);
    node.layer = options_.layer;
    const size_t vertex_count = positions_.size();
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

  /// Copies the vertices `node`'s triangles use and renumbers them.
  Status CopyPositions(NodeGeometry* node) {
    if (slot_.empty()) slot_.assign(positions_.size(), kUnused);
    for (const Triangle& t : node->triangles) {
      for (uint32_t vi : t) {
        if (slot_[vi] == kUnused) {
          slot_[vi] = 0;
          used_.push_back(vi);
        }
      }
    }
    std::sort(used_.begin(), used_.end());
    node->vertices.reserve(used_.size());
    for (uint32_t vi : used_) {
      if (!positions_[vi].IsFinite()) return NotFinite(*node, vi);
      slot_[vi] = static_cast<uint32_t>(node->vertices.size());
      node->vertices.push_back(positions_[vi]);
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
    std::vector<bool> used(positions_.size());
    for (const Triangle& t : node->triangles) {
      for (uint32_t vi : t) used[vi] = true;
    }
    size_t n = 0;
    for (size_t vi = 0; vi < used.size(); ++vi) {
      if (!used[vi]) continue;
      if (!positions_[vi].IsFinite()) return NotFinite(*node, vi);
      ++n;
    }
    if (n < positions_.size()) {
      std::vector<uint32_t> slot(positions_.size());
      n = 0;
      for (size_t vi = 0; vi < used.size(); ++vi) {
        if (!used[vi]) continue;
        slot[vi] = static_cast<uint32_t>(n);
        positions_[n++] = positions_[vi];
      }
      for (Triangle& t : node->triangles) t = {slot[t[0]], slot[t[1]], slot[t[2]]};
      positions_.resize(n);
    }
    node->vertices = std::move(positions_);
    return Status::Ok();
  }

  const ImportOptions& options_;
  Builder builder_;
  std::vector<Vec3>& positions_;
  // Scratch across objects: slot_[vi] is vertex vi's index in the object
  // being built (kUnused between objects), used_ its vertices.
  std::vector<uint32_t> slot_;
  std::vector<uint32_t> used_;
};

}  // namespace

Status ImportObj(const std::string& path, const ImportOptions& options, Level* level) {
  ObjText text;
  if (Status st = ReadObjText(path, &text); !st.ok()) return Invalid(path + ": " + st.message());
  ObjectBuilder objects(options, level, &text.positions);
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
