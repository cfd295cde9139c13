// The first contact of a translating cylinder with a triangle in closed form
// (internal to hitbox_core): the shortcut of the GJK cast (SweepConvexTriangle)
// for cylinder cores, whose curved side and rims GJK approaches only
// linearly (big_level: a median of 12 cast iterations per cylinder hit
// against 4 for a hull).
//
// The first contact of two convex solids is a touch of a pair of boundary
// features; in the cylinder's frame (axis Y, radius r, caps at +-h, the
// triangle moving by w = -R^T v) each pair's touch time solves a linear or
// quadratic equation: a triangle vertex against the side (ray against an
// infinite cylinder) or a cap (plane, then radius), an edge against the side
// (the distance between the edge's line and the axis is linear in t), an
// edge against a rim circle (the edge's line meets the cap plane at a point
// linear in t, at distance r from the cap's centre) and the face against the
// cylinder's support point along its normal.
//
// Each candidate in range is a real touch of the two solids, so the earliest
// is the first contact, and it is accepted only when it proves itself: at
// its t*, the plane through the contact point X with the contact normal n
// separates the two (the triangle's other vertices strictly behind it, the
// cylinder's support along -n not behind it beyond rounding) while they
// close at a speed s. Then for every t < t* the cylinder is at least
// (t* - t) s - tol in front of that plane, so no contact comes before
// t* - tol / s: t* is the first contact up to rounding. A degenerate first
// contact (a cap parallel to the face, an edge along the axis, a vertex on
// a rim, a graze, two feature pairs at once) has no candidate in range or
// fails the proof, and the GJK cast decides.
//
// The answers differ from the cast's only by its rounding (tests/core/
// geometry/cylinder_triangle_test.cc): t by the cast's stalled gaps (up to
// kSweepStallGap of closing travel), the normal where the cast's weights
// round off a vertex or edge into the face (its active-edge rule then gives
// the face normal; ~0.6% of the test's hits) or its direction stalls off a
// rim or side (~0.15%), and far from the origin, where the cast's ~1e-9 m
// closest-point vector carries the coordinates' rounding (its normals off by
// up to ~1e-2 at 20 km); the closed form works relative to the centre.
#pragma once

#include <cstdint>

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
/// and the cylinder's (its box and the octagon of the diagonals around its
/// circle), in its frame, apart on some axis at every t by more than
/// the loosest contact the GJK cast declares (kSweepStallGap), plus slack
/// (kSweepSatSlack) and rounding; so the cast cannot report a contact.
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
                           double t_max, uint8_t active, const Vec3& face,
                           TriangleCastHit* out);

}  // namespace hitbox
