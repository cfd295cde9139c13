// Bit-for-bit equality of doubles, points and poses: keys of caches that
// must hand back exactly what the same input would compute (-0.0 and 0.0
// differ, a NaN equals itself).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "hitbox/math/math.h"

namespace hitbox {

inline bool SameBits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

inline bool SameBits(const Vec3& a, const Vec3& b) {
  static_assert(sizeof(Vec3) == 3 * sizeof(double));  // no padding: bytes are the values
  return std::memcmp(&a, &b, sizeof(Vec3)) == 0;
}

inline bool SameBits(const Pose& a, const Pose& b) {
  static_assert(sizeof(Pose) == 7 * sizeof(double));
  return std::memcmp(&a, &b, sizeof(Pose)) == 0;
}

}  // namespace hitbox
