#include "geometry/mesh_parts.h"

#include "geometry/triangle_mesh.h"

namespace hitbox::internal {

MeshParts::MeshParts(std::vector<const TriangleMesh*> parts) : parts_(std::move(parts)) {
  for (std::vector<uint32_t>* base : {&vbase_, &tbase_, &ibase_}) {
    base->reserve(parts_.size() + 1);
    base->push_back(0);
  }
  for (const TriangleMesh* m : parts_) {
    vbase_.push_back(vbase_.back() + m->vertex_count());
    tbase_.push_back(tbase_.back() + m->triangle_count());
    ibase_.push_back(ibase_.back() + m->triangle_count() + m->dropped_triangles());
  }
  vpart_at_ = PartAt(vbase_);
  tpart_at_ = PartAt(tbase_);
}

std::vector<uint32_t> MeshParts::PartAt(const std::vector<uint32_t>& base) {
  std::vector<uint32_t> part_at((uint64_t{base.back()} + (1u << kBlockShift) - 1) >> kBlockShift);
  uint32_t p = 0;
  for (size_t b = 0; b < part_at.size(); ++b) {
    const uint64_t first = uint64_t{b} << kBlockShift;
    while (first >= base[p + 1]) ++p;
    part_at[b] = p;
  }
  return part_at;
}

size_t MeshParts::MemoryBytes() const {
  return sizeof(*this) + parts_.capacity() * sizeof(parts_[0]) +
         (vbase_.capacity() + tbase_.capacity() + ibase_.capacity() + vpart_at_.capacity() +
          tpart_at_.capacity()) *
             sizeof(uint32_t);
}

}  // namespace hitbox::internal
