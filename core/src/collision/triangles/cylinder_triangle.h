// The first contact of a translating cylinder with a triangle in closed form:
// the GJK cast's shortcut for cylinder cores, whose curved side and rims GJK
// approaches only linearly. Each pair of boundary features touches at the
// root of a linear or quadratic equation; the earliest is kept only when the
// plane of its contact separates the two while they close (so nothing
// touches before it), else the GJK cast decides.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "collision/triangles/triangle_gjk_cast.h"
#include "hitbox/math/math.h"

namespace hitbox {

/// A cylinder core in a surface's frame: centre, the rotation of its local
/// frame (local Y the axis), radius and half-height (metres).
struct PlacedCylinder {
  Vec3 center;
  Mat33 rotation;
  double radius = 0.0;
  double half_height = 0.0;
};

/// An upper bound on the penetration depth of cylinder `cyl` and triangle
/// `tri` (surface frame): the least overlap of their extents along the
/// cylinder's axis and along the axis x each edge (horizontal in the
/// cylinder's frame: where the side meets an edge); negative when they are
/// apart along one. (The directions from the axis to each vertex, tried
/// too, pruned no more on big_level and cost more than they saved.)
/// `move`, when given: a translation of the cylinder by that overlap along
/// the axis it was found on, which leaves the two touching or apart. The
/// depth, the shortest separating move, is at most the overlap along any
/// direction.
inline double CylinderTriangleOverlap(const Vec3 tri[3], const PlacedCylinder& cyl,
                                      Vec3* move = nullptr) {
  Vec3 p[3];
  for (int i = 0; i < 3; ++i) p[i] = cyl.rotation.TransposeMul(tri[i] - cyl.center);
  // The least overlap so far, along unit u (cylinder frame): the cylinder
  // spans [-ext, ext] there, the triangle [lo, hi]; `down`: moving the
  // cylinder along -u separates them by the overlap (else along +u).
  double overlap = std::numeric_limits<double>::infinity();
  Vec3 u;
  bool down = false;
  auto take = [&](const Vec3& axis, double lo, double hi, double ext) {
    if (ext - lo < overlap) {
      overlap = ext - lo;
      u = axis;
      down = true;
    }
    if (hi + ext < overlap) {
      overlap = hi + ext;
      u = axis;
      down = false;
    }
  };
  take(Vec3{0, 1, 0}, std::min(p[0].y, std::min(p[1].y, p[2].y)),
       std::max(p[0].y, std::max(p[1].y, p[2].y)), cyl.half_height);
  for (int j = 0; j < 3; ++j) {
    const Vec3& a = p[j];
    const Vec3& b = p[(j + 1) % 3];
    const Vec3& c = p[(j + 2) % 3];
    const double ex = b.x - a.x, ez = b.z - a.z;
    const double len = std::sqrt(ex * ex + ez * ez);
    if (!(len > 1e-150)) continue;  // an edge along the axis: no direction
    // Along m = (-ez, 0, ex) / len: the edge projects to one value, the
    // third vertex to another.
    const double on_edge = (ex * a.z - ez * a.x) / len;
    const double third = (ex * c.z - ez * c.x) / len;
    take(Vec3{-ez / len, 0.0, ex / len}, std::min(on_edge, third), std::max(on_edge, third),
         cyl.radius);
  }
  if (move != nullptr) *move = cyl.rotation * (u * (down ? -overlap : overlap));
  return overlap;
}

/// Least sine of the angle between features for the closed form: an edge
/// against the axis (side) or the cap plane (rim), the face against the axis
/// or the cap, the contact normal against the rim's normal cone's edges.
/// Flatter pairs touch along a segment or patch, or with an ill-conditioned
/// point; the GJK cast decides those.
inline constexpr double kCylinderTriangleSine = 1e-3;
/// Least margin (metres, times max(1, the pair's local size)) by which a
/// contact must lie inside its features (an edge's ends, the side's caps, a
/// cap's rim, the face's edges) and the triangle's other vertices behind
/// the contact plane: nearer, another feature pair touches within the GJK
/// cast's contact gaps (kSweepStallGap) and the cast's answer is its own.
inline constexpr double kCylinderTriangleDistinct = 1e-6;

/// True when triangle `tri` and cylinder `cyl` translating by `v` (surface
/// frame) are certainly apart for t in [0, t_max]: the triangle's extents
/// and the cylinder's (its box, the octagon of the diagonals around its
/// circle, and along the axis x each edge), in its frame, apart on some axis
/// at every t by more than the loosest contact the GJK cast declares
/// (kSweepStallGap), plus slack (kSweepSatSlack) and rounding; so the cast
/// cannot report a contact.
bool CylinderTriangleApart(const Vec3 tri[3], const PlacedCylinder& cyl, const Vec3& v,
                           double t_max);

/// The GJK cast's answer for cylinder `cyl` translating by `v` (surface
/// frame) for t in [0, t_max] against triangle `tri` (unit normal `face`),
/// proven in closed form (see above): true with `*out` a hit, or a miss
/// when the proven contact comes after t_max; false when no candidate
/// proves itself (the cast decides). The answer follows the cast's
/// conventions: t half a kSweepGap of approach before the touch (where the
/// cast stops), the contact point on the triangle, and its normal rule
/// (triangle_convex_detail::CastNormal: the face normal on the face or an
/// inactive edge or vertex).
bool CylinderTriangleSweep(const Vec3 tri[3], const PlacedCylinder& cyl, const Vec3& v,
                           double t_max, uint8_t active, const Vec3& face, CastResult* out);

}  // namespace hitbox
