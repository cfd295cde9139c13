// Binned surface-area-heuristic split of a set of boxes (Wald, "On fast
// construction of SAH-based bounding volume hierarchies", 2007), for the
// mesh hierarchy: where boxes vary in size, as on real levels, it keeps a
// big floor triangle from swelling the boxes of the small ones beside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hitbox/math/math.h"

namespace hitbox {

/// Triangle boxes for a hierarchy build, kept as float32 rounded outwards
/// (24 bytes a box where an Aabb takes 48; exact when the vertices are
/// float32, as imported levels' are). A box read back holds the one stored.
class BuildBoxes {
 public:
  explicit BuildBoxes(size_t count) : v_(6 * count) {}
  /// Stores `box` rounded outwards to float32.
  void Set(size_t i, const Aabb& box);
  Aabb operator[](size_t i) const {
    const float* f = v_.data() + 6 * i;
    return {{f[0], f[1], f[2]}, {f[3], f[4], f[5]}};
  }

 private:
  std::vector<float> v_;
};

/// Reorders `items` (indices into `boxes`) into two non-empty runs, the
/// first [0, m) and the second [m, size), chosen to minimise
/// area(first) * leaves(first) + area(second) * leaves(second) (leaves: the
/// count over `leaf_size`, rounded up) over 16 bins of
/// the centroids along each axis, and returns m. Falls back to the median
/// along the centroids' longest axis when the centroids coincide or no box has area.
/// Deterministic: the same input gives the same order. Needs size >= 2.
uint32_t SahSplit(std::span<uint32_t> items, const BuildBoxes& boxes, uint32_t leaf_size);

}  // namespace hitbox
