// Narrow phase: queries between two posed convex shapes, for every ordered
// pair of {sphere, box, capsule, cylinder}, plus raycasts against one shape.
//
// Conventions
// - "A" is the first shape, "B" the second; poses place them in the world.
// - Contact::normal is the unit direction to move B to separate it from A
//   (it points from A towards B).
// - CastResult::normal is the unit surface normal at impact, pointing from the
//   target (B) towards the moving shape (A).
// - Touching counts as overlapping.
#pragma once

#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"

namespace hitbox {

/// Penetration of two overlapping shapes.
struct Contact {
  /// Penetration depth in metres (>= 0; 0 when exactly touching).
  double depth = 0.0;
  /// Unit direction to move B by `depth` to separate it from A (from A towards B).
  Vec3 normal{0, 1, 0};
  /// Deepest point of A inside B (world frame).
  Vec3 point_a;
  /// Deepest point of B inside A (world frame); point_b - point_a = -depth * normal.
  Vec3 point_b;
};

/// Distance between two shapes.
struct DistanceResult {
  /// Separation in metres; 0 when the shapes overlap or touch.
  double distance = 0.0;
  /// Closest point on A (world frame); meaningful when distance > 0.
  Vec3 point_a;
  /// Closest point on B (world frame); meaningful when distance > 0.
  Vec3 point_b;
};

/// Outcome of a cast or raycast.
enum class CastState : uint8_t {
  kMiss,                ///< no contact within the translation
  kHit,                 ///< first contact at `fraction` in [0, 1]
  kStartedOverlapping,  ///< the shapes overlap at the start: fraction 0 with contact
  /// An iterative method (GJK ray cast, conservative advancement, Newton on
  /// the distance) reached its iteration cap before the time of impact
  /// converged. Not a miss: `fraction` is a lower bound of the time of impact
  /// (moving that far is safe) and `normal` the last separating direction.
  /// World queries report it as a hit at that fraction (a conservative stop).
  kFailed,
};

/// Tolerances and caps of the iterative solvers (GJK, EPA, conservative
/// advancement). Defaults meet: fraction error <= 1e-7 * max(1, |translation|).
struct CastSettings {
  /// Distance (m) at which conservative advancement stops and calls it a hit.
  double linear_tolerance = 1e-9;
  /// Iteration cap of each iterative loop (GJK ray cast, conservative
  /// advancement, Newton); reaching it gives CastState::kFailed.
  int max_iterations = 64;
  /// Upper bound on the fraction of interest, in [0, 1]: a cast whose time of
  /// impact is certainly later than this may stop early and report a miss
  /// (world sweeps pass their best fraction so far). Hits at or before it are
  /// reported exactly as with the default 1.
  double max_fraction = 1.0;
  /// Contact offset ("skin"), metres, >= 0: the penetration a cast tolerates.
  /// 0 (the default): every contact counts, as without the setting. s > 0:
  /// each piece of B (a convex shape, a mesh or heightfield triangle, a
  /// compound child) is judged at its first contact along the cast, at
  /// fraction t0 with penetration depth d0 (0 when it is first touched after
  /// the start) and unit normal n from the piece towards A. It is a hit
  /// (at t0, as with 0) only when d0 + (1 - t0) * max(0, -n . translation)
  /// >= s: the penetration it would reach if the contact went on as it
  /// started. Otherwise it is passed over: by convexity of the piece the
  /// shapes then penetrate it by less than s over the whole translation. So a
  /// shape resting on (or sunk less than s into) a floor sweeps along it
  /// without a hit at fraction 0, and still stops at fraction 0 when the
  /// translation goes into the floor by s or more. Negative or NaN: 0.
  double contact_offset = 0.0;
  /// A cast that starts overlapping (fraction 0) without its contact: depth
  /// 0, normal against the translation (+y without one), point at A's
  /// position. It skips the penetration solver (often EPA) where a caller
  /// needs only whether, where and what it hit. False: the contact.
  bool skip_started_contact = false;
};

/// Result of Cast() or Raycast().
struct CastResult {
  CastState state = CastState::kMiss;
  /// Fraction of the translation travelled at first contact, in [0, 1];
  /// hit point = start + fraction * translation. 0 when started overlapping,
  /// 1 on a miss.
  double fraction = 1.0;
  /// Unit normal at impact, from the target towards the moving shape. When
  /// started overlapping: the direction to move the moving shape by `depth`
  /// to separate (also from target towards mover).
  Vec3 normal{0, 1, 0};
  /// Contact point in the world frame at the moment of impact.
  Vec3 point;
  /// Penetration depth in metres when started overlapping (rays: 0), else 0.
  double depth = 0.0;
  /// The piece of B that was hit: the input triangle index for a mesh or
  /// heightfield, the child index for a compound (ties: the lowest), 0 for
  /// the convex kinds.
  uint32_t sub_shape = 0;

  /// A contact or a possible one: kHit, kStartedOverlapping, or kFailed (a
  /// cast that gave up at `fraction`, a lower bound of the time of impact).
  bool hit() const { return state != CastState::kMiss; }
  /// True when A started in contact with B (fraction 0, `depth` set).
  bool started_overlapping() const { return state == CastState::kStartedOverlapping; }
};

/// True when A and B share at least one point (touching counts).
/// Exact closed forms for every pair that has one, GJK for the rest.
bool Overlap(const Shape& a, const Pose& pose_a, const Shape& b, const Pose& pose_b);

/// Penetration contact of A and B; returns false (and leaves *contact
/// untouched) when they are separated. Moving B by depth * normal leaves the
/// shapes touching within 1e-6 m.
bool ComputeContact(const Shape& a, const Pose& pose_a, const Shape& b, const Pose& pose_b,
                    Contact* contact);

/// Separation distance and closest points (GJK); distance 0 when overlapping.
DistanceResult ComputeDistance(const Shape& a, const Pose& pose_a, const Shape& b,
                               const Pose& pose_b);

/// Sweeps A from pose_a by `translation` (no rotation) against B at pose_b.
/// Started-overlapping casts return kStartedOverlapping, fraction 0, and the
/// contact (unless settings.skip_started_contact). A zero translation is an
/// overlap test. With settings.contact_offset > 0, contacts shallower than
/// it that the translation does not drive deeper are no hit (CastSettings).
CastResult Cast(const Shape& a, const Pose& pose_a, const Vec3& translation, const Shape& b,
                const Pose& pose_b, const CastSettings& settings = {});

/// Ray from `origin` along `translation` against B. A ray starting inside B
/// hits at fraction 0 (kStartedOverlapping, normal opposite the ray or the
/// nearest face's, depth 0). A zero-length ray is a point-in-shape test.
/// Hits beyond `max_fraction` may be left out (surfaces and compounds prune
/// their walk there); those at or before it are the same either way.
CastResult Raycast(const Vec3& origin, const Vec3& translation, const Shape& b,
                   const Pose& pose_b, double max_fraction = 1.0);

}  // namespace hitbox
