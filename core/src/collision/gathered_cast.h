// A move's ball or capsule swept against a mesh's gathered triangles, with
// what its rotation and the mesh's pose fix placed once for all the move's
// sweeps: Cast()'s answers, to the bit, for less work per sweep.
#pragma once

#include <cstddef>

#include "collision/triangles/gathered_triangle.h"
#include "hitbox/collision/collide.h"
#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"

namespace hitbox::internal {

/// One move's sweeps of its ball or capsule against one mesh collider's
/// gathered triangles (collider_set_queries.cc: MoveSweeper).
class GatheredCast {
 public:
  /// Readies sweeps of `a` at rotation `rotation_a` (unit) against the mesh
  /// `b` at `pose_b`; false (and no sweep to ask) unless `a` is a ball or a
  /// capsule and `b` a mesh. Both shapes must outlive the sweeps.
  bool Prepare(const Shape& a, const Quat& rotation_a, const Shape& b, const Pose& pose_b);

  /// Cast(a, Pose(from, rotation_a), translation, b, pose_b, settings) into
  /// *out, the same to the bit, for settings without a contact offset whose
  /// FractionBound is `t_max`, over tris[0, count): every triangle of the
  /// mesh whose box meets `region` (mesh frame), gathered beforehand. False
  /// (nothing else to use) when the sweep leaves the region, a triangle's
  /// cast gives up or the batch stops: the caller runs Cast() itself.
  bool Cast(const Vec3& from, const Vec3& translation, double t_max,
            const GatheredTriangle* const* tris, size_t count, const Aabb& region,
            CastResult* out) const;

 private:
  const Shape* a_ = nullptr;
  const Shape* b_ = nullptr;
  Quat rotation_a_;
  Pose pose_b_;
  /// B's rotation as a matrix (PlaceInB's).
  Mat33 rb_;
  bool ball_ = false;
  /// Both rotations and B's position finite (the rest of AllFinite per sweep).
  bool finite_ = false;
  /// The core's rounding radius (PlacedConvex::margin).
  double margin_ = 0.0;
  /// The capsule's half axis in B's frame (zero for a ball) and its reach
  /// along each of B's axes: PlacedConvex's segment and bounds less the centre.
  Vec3 half_;
  Vec3 reach_;
  /// The bounding spheres' radii summed as BoundingSpheresMiss sums them.
  double bounding_ = 0.0;
};

}  // namespace hitbox::internal
