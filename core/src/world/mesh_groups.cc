#include "world/mesh_groups.h"

#include <algorithm>
#include <bit>
#include <tuple>

#include "geometry/triangle_mesh.h"
#include "shape/surface_data.h"

namespace hitbox::internal {
namespace {

// A pose's exact bits, for grouping colliders whose local frames are the same.
std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t> PoseBits(
    const Pose& p) {
  return {std::bit_cast<uint64_t>(p.position.x), std::bit_cast<uint64_t>(p.position.y),
          std::bit_cast<uint64_t>(p.position.z), std::bit_cast<uint64_t>(p.rotation.x),
          std::bit_cast<uint64_t>(p.rotation.y), std::bit_cast<uint64_t>(p.rotation.z),
          std::bit_cast<uint64_t>(p.rotation.w)};
}

}  // namespace

std::vector<MeshGroups::Mesh> MeshGroups::MeshesOf(const std::vector<Collider>& colliders) {
  std::vector<Mesh> out;
  for (uint32_t i = 0; i < colliders.size(); ++i) {
    if (colliders[i].shape.kind() == ShapeKind::kMesh) out.push_back({i, colliders[i]});
  }
  return out;
}

MeshGroups::MeshGroups(const std::vector<Mesh>& in, uint64_t version) : version_(version) {
  // Positions in `in`, sorted by (pose, layer, id).
  std::vector<uint32_t> meshes(in.size());
  for (uint32_t i = 0; i < in.size(); ++i) meshes[i] = i;
  const auto key = [&](uint32_t i) {
    const Collider& c = in[i].collider;
    return std::tuple(PoseBits(c.pose), c.layer, c.id);
  };
  std::sort(meshes.begin(), meshes.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  const auto same_frame = [&](uint32_t a, uint32_t b) {
    return PoseBits(in[a].collider.pose) == PoseBits(in[b].collider.pose) &&
           in[a].collider.layer == in[b].collider.layer;
  };
  uint32_t set_size = 0;
  for (const Mesh& m : in) set_size = std::max(set_size, m.item + 1);
  for (size_t begin = 0; begin < meshes.size();) {
    // Members of one frame up to the merged mesh's limits; the rest of the
    // frame's meshes start another group.
    size_t end = begin;
    uint64_t triangles = 0, vertices = 0;
    while (end < meshes.size() && same_frame(meshes[begin], meshes[end])) {
      const TriangleMesh* m = in[meshes[end]].collider.shape.surface()->mesh();
      const uint64_t t = uint64_t{m->triangle_count()} + m->dropped_triangles();
      if (end > begin && (triangles + t > kMaxMeshTriangles ||
                          vertices + m->vertex_count() > kMaxMeshVertices)) {
        break;
      }
      triangles += t;
      vertices += m->vertex_count();
      ++end;
    }
    if (end - begin < 2) {
      begin = end;
      continue;
    }
    Group g;
    g.pose = in[meshes[begin]].collider.pose;
    g.layer = in[meshes[begin]].collider.layer;
    std::vector<const TriangleMesh*> parts;
    for (size_t k = begin; k < end; ++k) {
      const Shape& member = in[meshes[k]].collider.shape;
      g.members.push_back(member);
      parts.push_back(member.surface()->mesh());
      g.item.push_back(in[meshes[k]].item);
    }
    g.parts = std::make_unique<const internal::MeshParts>(std::move(parts));
    for (uint32_t p = 0; p < g.parts->size(); ++p) g.first.push_back(g.parts->input_base(p));
    Result<Shape> shape = internal::MakeMeshOverParts(g.parts.get());
    if (shape.ok()) {
      g.merged = std::move(*shape);
      triangles_ += g.parts->input_triangle_count();
      if (grouped_.size() < set_size) grouped_.resize(set_size, 0);
      for (uint32_t item : g.item) grouped_[item] = 1;
      groups_.push_back(std::move(g));
    }
    begin = end;
  }
}

uint32_t MeshGroups::Member(const Group& g, uint32_t triangle, uint32_t* local) const {
  const size_t k =
      static_cast<size_t>(std::upper_bound(g.first.begin(), g.first.end(), triangle) - g.first.begin()) - 1;
  *local = triangle - g.first[k];
  return g.item[k];
}

size_t MeshGroups::MemoryBytes() const {
  size_t bytes = sizeof(*this) + grouped_.capacity() + groups_.capacity() * sizeof(Group);
  for (const Group& g : groups_) {
    bytes += g.merged.DataBytes() + (g.item.capacity() + g.first.capacity()) * sizeof(uint32_t) +
             g.members.capacity() * sizeof(Shape) + g.parts->MemoryBytes();
  }
  return bytes;
}

}  // namespace hitbox::internal
