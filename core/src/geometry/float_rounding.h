// Rounding a double to a neighbouring float, one way: the single-precision
// bounds of the broad phase (broad_phase/dynamic_tree.h) and the mesh ray
// walk's fraction bound (triangle_mesh.h) must contain what the double values
// they stand for contain, so they round outwards, never to nearest.
// Internal to hitbox_core.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

namespace hitbox {

/// The next float above f (f not NaN; +inf stays +inf): std::nextafter(f,
/// +inf) without the library call (per query and per tree update).
inline float NextFloatUp(float f) {
  if (f == std::numeric_limits<float>::infinity()) return f;
  if (f == 0.0f) return std::numeric_limits<float>::denorm_min();
  const auto bits = std::bit_cast<uint32_t>(f);
  return std::bit_cast<float>(f > 0.0f ? bits + 1 : bits - 1);
}
/// The next float below f (f not NaN; -inf stays -inf).
inline float NextFloatDown(float f) { return -NextFloatUp(-f); }

/// Largest float <= v (v finite or infinite).
inline float RoundDown(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) > v) f = NextFloatDown(f);
  return f;
}
/// Smallest float >= v.
inline float RoundUp(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) < v) f = NextFloatUp(f);
  return f;
}

}  // namespace hitbox
