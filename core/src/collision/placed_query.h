// The query convex placed in a surface's frame, reused across the surfaces
// one query meets at the same relative pose (a level's meshes share a pose).
#pragma once

#include "collision/triangles/placed_convex.h"
#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"

namespace hitbox::internal {

/// `a` placed at `a_in_surface` (a PlacedConvex of CoreOf(a)), valid until
/// the next PlaceQuery on this thread. Inside a ScopedPlacementReuse, the
/// same core at the same pose (to the bit) gets the last placement again.
const PlacedConvex& PlaceQuery(const Shape& a, const Pose& a_in_surface);

/// Lets PlaceQuery reuse placements on this thread while in scope: a batch,
/// whose query shapes (and their hulls, compared by address) outlive it.
class ScopedPlacementReuse {
 public:
  ScopedPlacementReuse();
  ~ScopedPlacementReuse();
  ScopedPlacementReuse(const ScopedPlacementReuse&) = delete;
  ScopedPlacementReuse& operator=(const ScopedPlacementReuse&) = delete;
};

}  // namespace hitbox::internal
