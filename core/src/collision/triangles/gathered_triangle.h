// A mesh triangle gathered once for several sweeps near it (a character
// move's: SurfaceSweepGathered, internal::CastGathered).
#pragma once

#include <array>
#include <cstdint>

#include "hitbox/math/math.h"

namespace hitbox {

/// A mesh triangle: its vertices in the mesh's frame, unit normal
/// (TriangleNormal), input index and active edges (TriangleMesh::OriginalIndex,
/// ActiveEdges).
struct GatheredTriangle {
  std::array<Vec3, 3> v;
  Vec3 n;
  uint32_t original = 0;
  uint8_t active = 0;
};

}  // namespace hitbox
