#include "geometry/mesh_part_vertices.h"

#include "geometry/triangle_mesh.h"

namespace hitbox::internal {

MeshPartVertices::MeshPartVertices(std::vector<const TriangleMesh*> parts)
    : parts_(std::move(parts)) {
  base_.reserve(parts_.size() + 1);
  base_.push_back(0);
  for (const TriangleMesh* m : parts_) base_.push_back(base_.back() + m->vertex_count());
  const uint32_t total = base_.back();
  part_at_.resize(((uint64_t{total} + (1u << kBlockShift) - 1) >> kBlockShift));
  uint32_t p = 0;
  for (size_t b = 0; b < part_at_.size(); ++b) {
    const uint64_t first = uint64_t{b} << kBlockShift;
    while (first >= base_[p + 1]) ++p;
    part_at_[b] = p;
  }
}

size_t MeshPartVertices::MemoryBytes() const {
  return sizeof(*this) + parts_.capacity() * sizeof(parts_[0]) +
         (base_.capacity() + part_at_.capacity()) * sizeof(uint32_t);
}

}  // namespace hitbox::internal
