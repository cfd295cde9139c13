// Binned surface-area-heuristic split of a set of boxes (Wald, "On fast
// construction of SAH-based bounding volume hierarchies", 2007), for the
// mesh hierarchy: where boxes vary in size, as on real levels, it keeps a
// big floor triangle from swelling the boxes of the small ones beside it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hitbox/math/math.h"

namespace hitbox {

/// Reorders `items` (indices into `boxes`) into two non-empty runs, the
/// first [0, m) and the second [m, size), chosen to minimise
/// area(first) * leaves(first) + area(second) * leaves(second) (leaves: the
/// count over `leaf_size`, rounded up) over 16 bins of
/// the centroids along each axis, and returns m. Falls back to the median
/// along the centroids' longest axis when the centroids coincide or no box has area.
/// Deterministic: the same input gives the same order. Needs size >= 2.
uint32_t SahSplit(std::span<uint32_t> items, const std::vector<Aabb>& boxes, uint32_t leaf_size);

}  // namespace hitbox
