// GJK distance between two support-mapped convex sets (internal): Gilbert,
// Johnson, Keerthi 1988 with van den Bergen's bounds (2003, ch. 4) and the
// signed-volumes subalgorithm (Montanari et al., ACM TOG 2017; simplex.h).
// Rounded shapes are a core plus a margin, computed in A's frame; iteration
// stops when the bounds meet within max(kGjkRelativeTolerance * distance,
// kGjkAbsoluteTolerance * scale), and every loop has a fixed cap.
#pragma once

#include <cstdint>
#include <limits>

#include "hitbox/math/math.h"

namespace hitbox {
class ConvexHullData;  // hitbox/shape/shapes.h
}  // namespace hitbox

namespace hitbox::internal {

/// Relative tolerance on the GJK distance (gap between bounds / distance).
inline constexpr double kGjkRelativeTolerance = 1e-10;
/// Absolute tolerance of GJK, as a fraction of the pair's `scale` (see above).
inline constexpr double kGjkAbsoluteTolerance = 1e-13;
/// When rounding stalls GJK before its bounds meet (a sliver simplex next to
/// the origin) and the lower bound is negative, a pair whose upper bound is
/// within this fraction of `scale` counts as touching (cores overlapping).
inline constexpr double kGjkUncertainTolerance = 1e-9;

/// Support point along `dir` of the cylinder of radius `radius` around local
/// Y with caps at +-half_height (a rim point; {radius, +-h, 0} when `dir` is
/// along Y).
inline Vec3 CylinderSupport(double radius, double half_height, const Vec3& dir) {
  const double y = dir.y >= 0.0 ? half_height : -half_height;
  const double len_xz_sq = dir.x * dir.x + dir.z * dir.z;
  if (len_xz_sq > 0.0) {
    const double s = radius / std::sqrt(len_xz_sq);
    return {dir.x * s, y, dir.z * s};
  }
  return {radius, y, 0.0};
}

/// A convex set given by a support mapping: a core (point, segment, box or
/// cylinder) in its local frame, grown by a ball of radius `margin` (Minkowski sum).
struct ConvexCore {
  enum class Kind : uint8_t {
    kPoint,     ///< the local origin
    kSegment,   ///< [0,-half_height,0]..[0,half_height,0]
    kBox,       ///< half_extents along local X, Y, Z
    kCylinder,  ///< axis along local Y, caps at +-half_height, radius `radius`
    kHull,      ///< the vertices of a convex hull (`hull`, shared, not owned)
  };
  Kind kind = Kind::kPoint;
  /// Box half-extents in metres (box core only).
  Vec3 half_extents;
  /// Half-length in metres along local Y (segment and cylinder cores).
  double half_height = 0.0;
  /// Cylinder radius in metres (cylinder core only).
  double radius = 0.0;
  /// Rounding radius in metres added around the core (>= 0).
  double margin = 0.0;
  /// Hull data (hull core only); owned by the Shape, which outlives the core.
  const ConvexHullData* hull = nullptr;

  /// Support point of the core (margin excluded) along local direction `dir`
  /// (any length; a zero direction gives some point of the core).
  /// kWithHull = false compiles the primitives' switch alone (no call in it):
  /// the GJK loops are instantiated both ways and pick one per pair.
  template <bool kWithHull = true>
  Vec3 CoreSupport(const Vec3& dir) const {
    switch (kind) {
      case Kind::kPoint: return {};
      case Kind::kSegment: return {0.0, dir.y >= 0.0 ? half_height : -half_height, 0.0};
      case Kind::kBox:
        return {dir.x >= 0.0 ? half_extents.x : -half_extents.x,
                dir.y >= 0.0 ? half_extents.y : -half_extents.y,
                dir.z >= 0.0 ? half_extents.z : -half_extents.z};
      case Kind::kCylinder: return CylinderSupport(radius, half_height, dir);
      case Kind::kHull:
        if constexpr (kWithHull) return HullSupport(dir);
        return {};
    }
    return {};
  }
  /// Support point of the full set (core grown by the margin) along `dir`.
  Vec3 Support(const Vec3& dir) const {
    const Vec3 c = CoreSupport(dir);
    if (margin == 0.0) return c;
    const double len = dir.Length();
    return len > 0.0 ? c + dir * (margin / len) : c + Vec3{margin, 0.0, 0.0};
  }
  /// Hull core support: the hull's own, out of line (keeps the primitives'
  /// switch small); defined with the hull (shape/convex_hull.cc).
  Vec3 HullSupport(const Vec3& dir) const;
  /// Radius of the smallest origin-centred ball holding the core (margin excluded).
  double CoreBoundingRadius() const;
  bool is_hull() const { return kind == Kind::kHull; }
  /// A point inside the core: the local origin, or a hull's vertex centroid
  /// (a hull need not contain its local origin).
  Vec3 InteriorPoint() const { return kind == Kind::kHull ? HullCenter() : Vec3{}; }
  /// The hull's vertex centroid and bounding radius (shape/convex_hull.cc).
  Vec3 HullCenter() const;
  double HullBoundingRadius() const;
};

/// B's core expressed in A's frame: rotation matrix + translation of B's pose
/// relative to A, for fast support queries.
struct PlacedCore {
  const ConvexCore* core = nullptr;
  /// Rotation of B's local frame into A's frame.
  Mat33 rotation;
  /// B's origin in A's frame (metres).
  Vec3 position;

  PlacedCore(const ConvexCore& c, const Pose& b_in_a)
      : core(&c), rotation(b_in_a.rotation.ToMatrix()), position(b_in_a.position) {}
  /// Core support point in A's frame along A-frame direction `dir`.
  template <bool kWithHull = true>
  Vec3 CoreSupport(const Vec3& dir) const {
    return position + rotation * core->template CoreSupport<kWithHull>(rotation.TransposeMul(dir));
  }
  /// Full support (with margin) in A's frame along A-frame direction `dir`.
  Vec3 Support(const Vec3& dir) const {
    return position + rotation * core->Support(rotation.TransposeMul(dir));
  }
};

/// Outcome of GjkDistance.
enum class GjkState : uint8_t {
  kSeparated,    ///< the shapes (with margins) are apart: distance > 0
  kOverlapping,  ///< the shapes (with margins) share a point: distance == 0
  kFailed,       ///< iteration cap hit without convergence; fields hold the best estimate
};

/// Options of GjkDistance.
struct GjkSettings {
  /// Hard cap on GJK iterations.
  int max_iterations = 64;
  /// When true, stop as soon as overlap or separation (with margins) is
  /// certain instead of converging the distance; distance and points are then
  /// bounds, not exact. For Overlap() decisions.
  bool decide_only = false;
};

/// Result of GjkDistance. Points and directions are in A's local frame.
struct GjkResult {
  GjkState state = GjkState::kFailed;
  /// Distance between the shapes including margins, metres (0 when overlapping).
  double distance = 0.0;
  /// Distance between the cores (margins excluded), metres (0 when the cores overlap).
  double core_distance = 0.0;
  /// True when the cores themselves overlap (|v| within tolerance of 0): the
  /// normal is then undefined and a penetration solver (EPA) is needed.
  bool cores_overlap = false;
  /// Closest point on A (with margin) in A's frame; on the core when cores overlap.
  Vec3 point_a;
  /// Closest point on B (with margin) in A's frame; on the core when cores overlap.
  Vec3 point_b;
  /// Closest points on the cores, A's frame.
  Vec3 core_point_a;
  Vec3 core_point_b;
  /// Unit direction from A towards B (core_point_b - core_point_a normalised);
  /// valid when !cores_overlap. A separating axis when separated.
  Vec3 normal{0, 1, 0};
  /// GJK iterations used.
  int iterations = 0;
  /// The pair's length scale used for the absolute tolerance (metres).
  double scale = 0.0;
  /// Final simplex: support points w = a - b of the cores' Minkowski
  /// difference and their parents a (on A's core) and b (on B's core), A's
  /// frame. When the cores overlap it holds (to tolerance) the origin; EPA starts from it.
  int simplex_size = 0;
  Vec3 simplex_w[4];
  Vec3 simplex_a[4];
  Vec3 simplex_b[4];
};

/// GJK distance between core A (at the origin of its own frame) and core B
/// placed at `b_in_a` (B's pose relative to A: pose_a.RelativeTo(pose_b)),
/// margins included. All outputs are in A's frame.
GjkResult GjkDistance(const ConvexCore& a, const ConvexCore& b, const Pose& b_in_a,
                      const GjkSettings& settings = {});

}  // namespace hitbox::internal
