// The parts of a mesh merged from other meshes (MeshGroups' members): their
// vertices and kept triangles, read from the parts' own storage instead of
// being stored a second time. Part p's vertices are the merged vertices
// [vertex_base(p), vertex_base(p + 1)) and its kept triangles the merged
// triangles [triangle_base(p), triangle_base(p + 1)), each in the part's own
// order, so a merged vertex or triangle decodes to exactly the part's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hitbox {
class TriangleMesh;
}

namespace hitbox::internal {

class MeshParts {
 public:
  /// The parts in merged order; they must outlive every mesh built on this.
  explicit MeshParts(std::vector<const TriangleMesh*> parts);

  size_t size() const { return parts_.size(); }
  const TriangleMesh* part(uint32_t p) const { return parts_[p]; }
  uint32_t vertex_count() const { return vbase_.back(); }
  /// Kept triangles of all parts.
  uint32_t triangle_count() const { return tbase_.back(); }
  /// Input triangles of all parts (their dropped ones too).
  uint32_t input_triangle_count() const { return ibase_.back(); }
  uint32_t vertex_base(uint32_t p) const { return vbase_[p]; }
  uint32_t triangle_base(uint32_t p) const { return tbase_[p]; }
  /// The merged input index of part p's first input triangle.
  uint32_t input_base(uint32_t p) const { return ibase_[p]; }
  /// The part holding merged vertex i, and i's index there in *local.
  const TriangleMesh* Locate(uint32_t i, uint32_t* local) const {
    const uint32_t p = Find(vbase_, vpart_at_, i);
    *local = i - vbase_[p];
    return parts_[p];
  }
  /// The part holding merged kept triangle k, and k's index there in *local.
  uint32_t LocateTriangle(uint32_t k, uint32_t* local) const {
    const uint32_t p = Find(tbase_, tpart_at_, k);
    *local = k - tbase_[p];
    return p;
  }
  /// This table's own bytes (the parts' are theirs).
  size_t MemoryBytes() const;

 private:
  /// Merged vertices (or triangles) per entry of a part_at table.
  static constexpr int kBlockShift = 6;
  /// Per block of 2^kBlockShift entries, the part of its first.
  static std::vector<uint32_t> PartAt(const std::vector<uint32_t>& base);
  /// The block's first part, then on past the parts that end before i (a
  /// block holds several only where parts are smaller than a block).
  static uint32_t Find(const std::vector<uint32_t>& base, const std::vector<uint32_t>& part_at,
                       uint32_t i) {
    uint32_t p = part_at[i >> kBlockShift];
    while (i >= base[p + 1]) ++p;
    return p;
  }
  std::vector<const TriangleMesh*> parts_;
  /// First merged vertex, kept triangle and input triangle of each part,
  /// then the totals.
  std::vector<uint32_t> vbase_, tbase_, ibase_;
  std::vector<uint32_t> vpart_at_, tpart_at_;
};

}  // namespace hitbox::internal
