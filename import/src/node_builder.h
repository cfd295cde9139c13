// Turning one glTF node's or OBJ object's geometry into colliders, by its
// name (level_import.h): NodeGeometry is what a node holds once read, and
// Builder adds its colliders and what the report says of them. Internal to
// hitbox_import (gltf_import.cc, obj_import.cc).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fit.h"
#include "hitbox/import/level_import.h"
#include "hitbox/limits.h"
#include "node_vertices.h"

namespace hitbox::import {

/// What a node is made into, from its name.
enum class Role : uint8_t { kMesh, kHull, kBox, kSphere, kCapsule };

inline Role RoleOf(const std::string& name) {
  if (name.rfind("UCX_", 0) == 0) return Role::kHull;
  if (name.rfind("UBX_", 0) == 0) return Role::kBox;
  if (name.rfind("USP_", 0) == 0) return Role::kSphere;
  if (name.rfind("UCP_", 0) == 0) return Role::kCapsule;
  return Role::kMesh;
}

inline const char* RoleShapeName(Role role) {
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
  /// Local vertices, in the file's narrowest exact form (node_vertices.h).
  NodeVertices vertices;
  std::vector<Triangle> triangles;

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
    node.vertices.Bake(split->bake, /*keep_narrow=*/node.role == Role::kMesh);
    if (node.role == Role::kMesh) return AddMesh(&node, *split);
    const std::vector<Vec3>& baked = node.vertices.doubles();

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
    return Add(node, fitted->shape, split->pose * fitted->offset);
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
    for (const Shape& shape : made.shapes) {
      if (Status s = Add(node, shape, split->pose); !s.ok()) return s;
    }
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
      if (IsDegenerate(node.vertices[t[0]], node.vertices[t[1]], node.vertices[t[2]])) {
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
    for (size_t p = 0; p < pieces; ++p) {
      const size_t begin = p * max;
      const size_t end = std::min(kept.size(), begin + static_cast<size_t>(max));
      // The piece's index of each node vertex: its used vertices keep the
      // node's order (a flat table: 4 bytes a vertex, where a hash map took
      // ~10 times that).
      constexpr uint32_t kUnused = UINT32_MAX;
      std::vector<uint32_t> remap(node.vertices.size(), kUnused);
      for (size_t t = begin; t < end; ++t) {
        for (int k = 0; k < 3; ++k) remap[kept[t][k]] = 0;
      }
      uint32_t used = 0;
      for (uint32_t& at : remap) {
        if (at != kUnused) at = used++;
      }
      // The piece: triangles, and its vertices in the node's form.
      std::vector<Triangle> triangles;
      NodeVertices vertices;
      if (pieces == 1) {
        // The node's arrays become the mesh's, renumbered in place (a used
        // vertex's index never grows): no copy beside them. The build frees
        // them as it goes.
        for (Triangle& t : kept) t = {remap[t[0]], remap[t[1]], remap[t[2]]};
        for (size_t v = 0; v < remap.size(); ++v) {
          if (remap[v] != kUnused) node.vertices.CopyTo(v, remap[v], &node.vertices);
        }
        node.vertices.Resize(used);
        vertices = std::move(node.vertices);
        triangles = std::move(node.triangles);
      } else {
        triangles.reserve(end - begin);
        for (size_t t = begin; t < end; ++t) {
          triangles.push_back({remap[kept[t][0]], remap[kept[t][1]], remap[kept[t][2]]});
        }
        // Vertices in the node's order, the array sized exactly.
        vertices = node.vertices.Like(used);
        for (size_t v = 0; v < remap.size(); ++v) {
          if (remap[v] != kUnused) node.vertices.CopyTo(v, remap[v], &vertices);
        }
      }
      std::vector<uint32_t>().swap(remap);
      if (p + 1 == pieces) {  // the node's arrays are not needed any more
        node.vertices.Release();
        std::vector<Triangle>().swap(node.triangles);
      }
      const size_t count = triangles.size();
      auto shape = vertices.MakeMesh(std::move(triangles));
      if (!shape.ok()) return Invalid(node.where + ": " + shape.error().message);
      level_->report.triangles += count;
      if (Status s = Add(node, *shape, split.pose); !s.ok()) return s;
    }
    return Status::Ok();
  }

  // Every collider the level gets; a node placed beyond the coordinate range
  // a set takes (kMaxCoordinate) is an error naming it.
  Status Add(const NodeGeometry& node, const Shape& shape, const Pose& pose) {
    static_assert(kMaxCoordinate == 1e9, "update the message below");
    if (!InCoordinateRange(pose.position)) {
      return Invalid(node.where + ": placed at (" + FormatDouble(pose.position.x) + ", " +
                     FormatDouble(pose.position.y) + ", " + FormatDouble(pose.position.z) +
                     "), beyond +-1e9 metres");
    }
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
    return Status::Ok();
  }

  void Note(std::string note) { level_->report.notes.push_back(std::move(note)); }

  const ImportOptions& options_;
  Level* level_;
};

// The transform above every root: the file's up axis to +Y, then the scale.
inline Affine RootTransform(const ImportOptions& options) {
  Affine t;
  const Mat33 r = UpAxisRotation(options.up).ToMatrix();
  for (int i = 0; i < 3; ++i) t.linear.row[i] = r.row[i] * options.scale;
  return t;
}

}  // namespace hitbox::import
