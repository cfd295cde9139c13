// Accepted ranges of shape sizes, coordinates and counts, checked where
// shapes are made and where the wire's values come in.
#pragma once

#include "hitbox/math/math.h"

namespace hitbox {

/// Accepted ranges of every size and coordinate, chosen so that no answer can
/// overflow or lose all precision: squared distances, cross products and
/// support points of anything in range stay far below 1e300, and the
/// smallest size still has ~1e9 representable steps across it near the origin.
/// Smallest radius, half extent or non-zero half height, metres.
inline constexpr double kMinShapeSize = 1e-7;
/// Largest radius, half extent or half height, metres.
inline constexpr double kMaxShapeSize = 1e6;
/// Largest |component| of a position, ray origin or translation, metres.
inline constexpr double kMaxCoordinate = 1e9;

/// True when v is finite and |v| <= kMaxCoordinate.
inline bool InCoordinateRange(double v) { return v >= -kMaxCoordinate && v <= kMaxCoordinate; }
inline bool InCoordinateRange(const Vec3& v) {
  return InCoordinateRange(v.x) && InCoordinateRange(v.y) && InCoordinateRange(v.z);
}

/// Tolerance on |q| - 1 for quaternions accepted from callers (poses, and the
/// child poses of a compound).
inline constexpr double kQuatNormTolerance = 1e-6;

/// Fewest and most points accepted for a convex hull.
inline constexpr int kMinHullPoints = 4;
inline constexpr int kMaxHullPoints = 256;

/// Fewest and most children of a compound.
inline constexpr int kMinCompoundChildren = 1;
inline constexpr int kMaxCompoundChildren = 64;

}  // namespace hitbox
