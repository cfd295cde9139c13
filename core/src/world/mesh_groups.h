// Mesh groups: the set's mesh colliders that share one pose and one layer,
// merged into one mesh per group for batches of closest-hit rays and
// sweeps. A level is tens of meshes whose boxes overlap most queries; one
// walk of the merged hierarchy replaces a walk of each of them, with its
// setup made once. The merged mesh's input is the members' inputs in the
// order of their collider ids, with their own vertices (no edge is shared
// across members), so a ray's closest hit and tie rule are the members'
// own, and a sweep answers per member (MergedSweep). It is a hierarchy over
// the members' own leaves, whose triangles and vertices it reads from the
// members' meshes (MeshParts, TriangleMesh::BuildOverParts), which the
// group holds: the triangles are not stored twice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "geometry/mesh_parts.h"

#include "hitbox/shape/shapes.h"
#include "hitbox/world/collider_set.h"

namespace hitbox::internal {

class MeshGroups {
 public:
  /// One merged mesh: its members' colliders share `pose` and `layer`.
  struct Group {
    Shape merged;
    Pose pose;
    uint32_t layer = 0;
    /// Members by collider id: colliders[item], whose input triangles are
    /// the merged input's [first, next member's first).
    std::vector<uint32_t> item;
    std::vector<uint32_t> first;
    /// The members' shapes, whose meshes hold the merged mesh's vertices
    /// and triangles (`parts`: not stored twice).
    std::vector<Shape> members;
    std::unique_ptr<const internal::MeshParts> parts;
  };

  /// A mesh collider of the set and its item (its index in the set).
  struct Mesh {
    uint32_t item;
    Collider collider;
  };
  /// The mesh colliders of `colliders`, with their items: what a build
  /// needs (a copy of them for one on another thread).
  static std::vector<Mesh> MeshesOf(const std::vector<Collider>& colliders);

  /// Groups `meshes` (poses normalized as the set keeps them) that share a
  /// pose and layer with at least one other, up to kMaxMeshTriangles a
  /// group. `version` names the set's meshes as they are
  /// (Impl::mesh_version).
  MeshGroups(const std::vector<Mesh>& meshes, uint64_t version);

  uint64_t version() const { return version_; }
  const std::vector<Group>& groups() const { return groups_; }
  /// True when colliders[item] is a member of a group.
  bool Grouped(uint32_t item) const { return item < grouped_.size() && grouped_[item] != 0; }
  /// The member of `g` that holds merged input triangle `triangle`, and that
  /// triangle's index in the member's own input.
  uint32_t Member(const Group& g, uint32_t triangle, uint32_t* local) const;
  /// Triangles in all merged meshes.
  uint64_t triangle_count() const { return triangles_; }
  size_t MemoryBytes() const;

 private:
  std::vector<Group> groups_;
  /// 1 per item of a member, 0 otherwise (may be shorter than the set).
  std::vector<uint8_t> grouped_;
  uint64_t version_ = 0;
  uint64_t triangles_ = 0;
};

}  // namespace hitbox::internal
