// Character movement as a query: the settings and the result of a move
// (collide-and-slide with stepping, slope limit and ground snapping). The
// query itself (MoveQuery) sits with the other queries in collider_set.h;
// ColliderSet::Move runs it.
//
// The algorithm (character.cc) follows the classic collide-and-slide of
// Fauerby ("Improved Collision detection and Response", 2003) and the
// plane-clipping of Quake's PM_SlideMove, with a separate step-up / side /
// step-down pass as game character controllers do.
#pragma once

#include <cstdint>
#include <vector>

#include "hitbox/math/math.h"

namespace hitbox {

/// Limits of MoveSettings (the wire and ColliderSet::ValidateQuery check them).
inline constexpr int kMaxMoveIterations = 64;
/// Largest skin width, step height and ground-snap distance accepted (m).
inline constexpr double kMaxMoveDistanceSetting = 1e3;

/// How a move behaves. The defaults suit a human-sized capsule in metres.
struct MoveSettings {
  /// World up direction (unit; normalized on use). Default +Y.
  Vec3 up{0, 1, 0};
  /// Gap in metres the shape keeps from what it touches, in (0, 1e3]; the
  /// final shape overlaps nothing by more than this. Default 0.01.
  double skin_width = 0.01;
  /// Most sweeps of one slide pass, in [1, 64]; a pass that needs more stops
  /// where it got to (blocked). Default 8.
  int max_iterations = 8;
  /// Steepest walkable ground, degrees from horizontal in [0, 90): steeper
  /// surfaces are walls (never climbed by walking). Default 45.
  double max_slope_degrees = 45.0;
  /// Tallest step climbed, metres in [0, 1e3]; 0: no stepping. Default 0.3.
  double step_height = 0.3;
  /// Walkable ground within this many metres below the end of a move that
  /// does not go up pulls the shape down onto it (walking down stairs and
  /// slopes), in [0, 1e3]; 0: no snapping. Default 0.1.
  double ground_snap_distance = 0.1;
};

/// One surface the shape touched during a move.
struct MoveContact {
  /// Collider id.
  uint64_t id = 0;
  /// The piece of the collider: triangle index for meshes and heightfields, else 0.
  uint32_t sub_shape = 0;
  /// Unit surface normal at the contact, from the collider towards the shape
  /// (a mesh's face normal on internal edges).
  Vec3 normal{0, 1, 0};
  /// World contact point.
  Vec3 point;
};

/// The answer to a move.
struct MoveResult {
  /// Where the shape's pose ends (world, metres); its rotation is unchanged.
  Vec3 position;
  /// position - start position (metres). Never longer than the desired
  /// displacement / cos(max_slope_degrees) (motion along walkable ground
  /// keeps its horizontal length) plus step_height + ground_snap_distance,
  /// plus the lift out of walkable ground that rose into the shape since its
  /// last move (a platform the game raised).
  Vec3 displacement;
  /// Every surface hit on the way, in order of contact (the same collider
  /// may appear more than once).
  std::vector<MoveContact> contacts;
  /// True when the shape ends standing on walkable ground.
  bool on_ground = false;
  /// The ground collider's id and sub-shape when on_ground.
  uint64_t ground_id = 0;
  uint32_t ground_sub_shape = 0;
  /// The ground's unit normal when on_ground (else zero).
  Vec3 ground_normal;
  /// True when the move climbed a step (the step-up pass was used).
  bool stepped = false;
  /// True when the motion along the ground (the desired displacement less
  /// its part along `up`) was cut by more than 1e-6 m: a wall or corner took
  /// part of it away, or the iteration cap was hit. Gravity held by walkable
  /// ground does not count.
  bool blocked = false;
};

}  // namespace hitbox
