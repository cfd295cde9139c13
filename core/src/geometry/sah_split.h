// Binned surface-area-heuristic split of a set of boxes (Wald, "On fast
// construction of SAH-based bounding volume hierarchies", 2007), for the
// mesh hierarchy: where boxes vary in size, as on real levels, it keeps a
// big floor triangle from swelling the boxes of the small ones beside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "geometry/box_grid.h"
#include "hitbox/math/math.h"

namespace hitbox {

/// Triangle boxes for a hierarchy build, kept on the hierarchy's own 16-bit
/// grid (box_grid.h; origin `lo`, per axis `step`) rounded outwards: 12
/// bytes a box where an Aabb takes 48, and nothing a node box, quantized on
/// the same grid, could keep. A box read back holds the one stored.
class BuildBoxes {
 public:
  BuildBoxes(size_t count, const Vec3& lo, const Vec3& step)
      : q_(6 * count), lo_(lo), step_(step) {}
  /// Stores `box` (within the grid's span) rounded outwards onto the grid.
  void Set(size_t i, const Aabb& box);
  Aabb operator[](size_t i) const {
    const uint16_t* q = q_.data() + 6 * i;
    return {{GridValue(q[0], lo_.x, step_.x), GridValue(q[1], lo_.y, step_.y),
             GridValue(q[2], lo_.z, step_.z)},
            {GridValue(q[3], lo_.x, step_.x), GridValue(q[4], lo_.y, step_.y),
             GridValue(q[5], lo_.z, step_.z)}};
  }
  /// Frees the boxes.
  void Free() { std::vector<uint16_t>().swap(q_); }

 private:
  std::vector<uint16_t> q_;
  Vec3 lo_, step_;
};

/// BuildBoxes with only the top 8 bits of each grid value (6 bytes a box;
/// a box read back holds the stored one): enough to choose the first
/// splits of a huge mesh.
class CoarseBuildBoxes {
 public:
  CoarseBuildBoxes(size_t count, const Vec3& lo, const Vec3& step)
      : c_(6 * count), lo_(lo), step_(step) {}
  void Set(size_t i, const Aabb& box);
  Aabb operator[](size_t i) const {
    // The least grid value of the min's 256 and the greatest of the max's.
    const uint8_t* c = c_.data() + 6 * i;
    return {{GridValue(uint32_t{c[0]} << 8, lo_.x, step_.x),
             GridValue(uint32_t{c[1]} << 8, lo_.y, step_.y),
             GridValue(uint32_t{c[2]} << 8, lo_.z, step_.z)},
            {GridValue(uint32_t{c[3]} << 8 | 255u, lo_.x, step_.x),
             GridValue(uint32_t{c[4]} << 8 | 255u, lo_.y, step_.y),
             GridValue(uint32_t{c[5]} << 8 | 255u, lo_.z, step_.z)}};
  }
  void Free() { std::vector<uint8_t>().swap(c_); }

 private:
  std::vector<uint8_t> c_;
  Vec3 lo_, step_;
};

/// Reorders `items` (indices into `boxes`) into two non-empty runs, the
/// first [0, m) and the second [m, size), chosen to minimise
/// area(first) * leaves(first) + area(second) * leaves(second) (leaves: the
/// count over `leaf_size`, rounded up) over 16 bins of
/// the centroids along each axis, and returns m. Falls back to the median
/// along the centroids' longest axis when the centroids coincide or no box has area.
/// Deterministic: the same input gives the same order. Needs size >= 2.
/// (Boxes: BuildBoxes or CoarseBuildBoxes.)
template <typename Boxes>
uint32_t SahSplit(std::span<uint32_t> items, const Boxes& boxes, uint32_t leaf_size);

}  // namespace hitbox
