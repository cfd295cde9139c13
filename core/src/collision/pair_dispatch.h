// The pair table: for every ordered pair of shape kinds, the narrow-phase
// entry points (overlap, contact, distance) and the cast method. Registered
// once per unordered pair in narrow_phase.cc (mirrored entries generated);
// completeness is a static_assert there and a test (tests/core/collision/dispatch_test.cc).
#pragma once

#include <array>

#include "collision/cast_internal.h"
#include "hitbox/collision/collide.h"
#include "hitbox/shape/shapes.h"

namespace hitbox::internal {

using OverlapFn = bool (*)(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb);
using ContactFn = bool (*)(const Shape& a, const Pose& pa, const Shape& b, const Pose& pb,
                           Contact* contact);
using DistanceFn = DistanceResult (*)(const Shape& a, const Pose& pa, const Shape& b,
                                      const Pose& pb);

/// One ordered pair (a, b): the functions answer with A and B in this order.
struct PairEntry {
  OverlapFn overlap = nullptr;
  ContactFn contact = nullptr;
  DistanceFn distance = nullptr;
  /// How Cast() sweeps A (this entry's `a`) against B.
  CastMethod cast = CastMethod::kConservative;
  /// The kinds this entry was registered for (checked against its slot).
  ShapeKind a = ShapeKind::kSphere;
  ShapeKind b = ShapeKind::kSphere;
  /// Set by registration (every entry point filled).
  bool registered = false;
};

using PairTable = std::array<std::array<PairEntry, kShapeKindCount>, kShapeKindCount>;

/// The whole table, constant-initialised (narrow_phase.cc).
extern const PairTable kPairTable;

/// Aborts with a clear message: a kind outside the table (a corrupt Shape).
[[noreturn]] void MissingPair(ShapeKind a, ShapeKind b);

/// The entry of the ordered pair (a, b).
inline const PairEntry& PairFor(ShapeKind a, ShapeKind b) {
  const unsigned ia = static_cast<unsigned>(a), ib = static_cast<unsigned>(b);
  if (ia >= static_cast<unsigned>(kShapeKindCount) || ib >= static_cast<unsigned>(kShapeKindCount))
      [[unlikely]] {
    MissingPair(a, b);
  }
  return kPairTable[ia][ib];
}

}  // namespace hitbox::internal
