// The 16-bit grid of a mesh hierarchy's boxes: per axis lo + q * step, q in
// [0, 65535], step a power of two (TriangleMesh::SetBoxSteps) so that q *
// step is exact and a grid value is one rounding, in the build and in the
// walks alike. Boxes go onto it rounded outwards.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace hitbox {

/// The grid value of q.
inline double GridValue(uint32_t q, double lo, double step) { return lo + q * step; }

/// The largest q whose grid value is at most v (`up` false), or the least
/// whose value is at least v (`up` true), within [0, 65535]: so a grid value
/// quantizes back to its own q.
inline uint16_t GridQuantize(double v, double lo, double step, bool up) {
  if (step == 0.0) return 0;
  double q = up ? std::ceil((v - lo) / step) : std::floor((v - lo) / step);
  q = std::clamp(q, 0.0, 65535.0);
  if (up) {
    while (q < 65535.0 && lo + q * step < v) q += 1.0;
    while (q > 0.0 && lo + (q - 1.0) * step >= v) q -= 1.0;
  } else {
    while (q > 0.0 && lo + q * step > v) q -= 1.0;
    while (q < 65535.0 && lo + (q + 1.0) * step <= v) q += 1.0;
  }
  return static_cast<uint16_t>(q);
}

}  // namespace hitbox
