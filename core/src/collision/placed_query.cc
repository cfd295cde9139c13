// PlaceQuery: one placement per thread, kept while a scope allows reuse.
#include "collision/placed_query.h"

#include <bit>
#include <cstdint>
#include <optional>

#include "geometry/same_bits.h"
#include "shape/convex_core.h"

namespace hitbox::internal {
namespace {

struct Placement {
  ConvexCore core;
  Pose pose;
  std::optional<PlacedConvex> placed;  // of `core` at `pose`
};

// Direct-mapped by a hash of the key: a batch steps several queries in turn
// (kInterleave), each meeting its surfaces at its own pose.
constexpr int kSlotBits = 4;

struct Placements {
  int scopes = 0;
  Placement slot[1 << kSlotBits];
};

thread_local Placements placements;

// The position picks the slot (the rest of the key rarely differs between
// queries in flight); the whole key is compared.
uint32_t SlotOf(const Pose& pose) {
  const uint64_t h = (std::bit_cast<uint64_t>(pose.position.x) ^
                      std::bit_cast<uint64_t>(pose.position.y) * 0x9E3779B97F4A7C15ull ^
                      std::bit_cast<uint64_t>(pose.position.z)) *
                     0xC2B2AE3D27D4EB4Full;
  return static_cast<uint32_t>(h >> (64 - kSlotBits));
}

bool SameCore(const ConvexCore& a, const ConvexCore& b) {
  return a.kind == b.kind && a.hull == b.hull && SameBits(a.half_extents, b.half_extents) &&
         SameBits(a.half_height, b.half_height) && SameBits(a.radius, b.radius) &&
         SameBits(a.margin, b.margin);
}

}  // namespace

const PlacedConvex& PlaceQuery(const Shape& a, const Pose& a_in_surface) {
  Placements& all = placements;
  const ConvexCore core = CoreOf(a);
  Placement& p = all.slot[all.scopes > 0 ? SlotOf(a_in_surface) : 0];
  if (all.scopes > 0 && p.placed.has_value() && SameBits(a_in_surface, p.pose) &&
      SameCore(core, p.core)) {
    return *p.placed;
  }
  p.core = core;
  p.pose = a_in_surface;
  p.placed.emplace(p.core, p.pose);
  return *p.placed;
}

ScopedPlacementReuse::ScopedPlacementReuse() { ++placements.scopes; }

ScopedPlacementReuse::~ScopedPlacementReuse() {
  // Past the scope a hull's address may be reused by another hull.
  if (--placements.scopes == 0) {
    for (Placement& p : placements.slot) p.placed.reset();
  }
}

}  // namespace hitbox::internal
