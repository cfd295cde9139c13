// The vertices of a mesh merged from other meshes (its parts: MeshGroups),
// read from the parts' own storage instead of being stored a second time.
// Part k's vertices are the merged vertices [base[k], base[k + 1]), in the
// part's own order, so a merged vertex decodes to exactly the part's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hitbox {
class TriangleMesh;
}

namespace hitbox::internal {

class MeshPartVertices {
 public:
  /// The parts in merged order; they must outlive every mesh built on this.
  explicit MeshPartVertices(std::vector<const TriangleMesh*> parts);

  uint32_t vertex_count() const { return base_.back(); }
  /// The part holding merged vertex i, and i's index there in *local.
  const TriangleMesh* Locate(uint32_t i, uint32_t* local) const {
    // The block's first part, then on past the parts that end before i (a
    // block holds several only where parts are smaller than a block).
    uint32_t p = part_at_[i >> kBlockShift];
    while (i >= base_[p + 1]) ++p;
    *local = i - base_[p];
    return parts_[p];
  }
  /// This table's own bytes (the parts' are theirs).
  size_t MemoryBytes() const;

 private:
  /// Merged vertices per entry of part_at_.
  static constexpr int kBlockShift = 6;
  std::vector<const TriangleMesh*> parts_;
  /// First merged vertex of each part, then the total.
  std::vector<uint32_t> base_;
  /// Per block of 2^kBlockShift merged vertices, the part of its first.
  std::vector<uint32_t> part_at_;
};

}  // namespace hitbox::internal
