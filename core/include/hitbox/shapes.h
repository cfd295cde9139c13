// Convex shapes in their local frames (see ../shared/cases/FORMAT.md):
//   Sphere   centred on the origin.
//   Box      centred on the origin, half-extents along local X, Y, Z
//            (an AABB when its pose is unrotated, an OBB otherwise).
//   Capsule  the segment [0,-h,0]..[0,h,0] swept by a sphere of radius r.
//   Cylinder axis along local Y, flat caps at y = +-h, radius r.
#pragma once

#include <cstdint>
#include <string>

#include "hitbox/math.h"
#include "hitbox/status.h"

namespace hitbox {

/// The kind of a Shape. Values are stable (they appear in logs and benches).
enum class ShapeKind : uint8_t { kSphere = 0, kBox = 1, kCapsule = 2, kCylinder = 3 };
inline constexpr int kShapeKindCount = 4;

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

/// "sphere", "box", "capsule" or "cylinder".
const char* ShapeKindName(ShapeKind kind);

/// A sphere of `radius` metres (> 0) about the local origin.
struct Sphere {
  double radius = 0.0;
};
/// A box with `half_extents` metres (each > 0) along local X, Y, Z.
struct Box {
  Vec3 half_extents;
};
/// A capsule: segment of half-length `half_height` (>= 0) along local Y,
/// swept by a sphere of `radius` (> 0). Total height 2 * (half_height + radius).
struct Capsule {
  double radius = 0.0;
  double half_height = 0.0;
};
/// A cylinder of `radius` (> 0) with axis along local Y and flat caps at
/// y = +-half_height (half_height >= 0; 0 is a flat disc).
struct Cylinder {
  double radius = 0.0;
  double half_height = 0.0;
};

/// A validated convex shape: one of Sphere, Box, Capsule, Cylinder.
/// A small value type (40 bytes); construct through the Make functions, which
/// reject non-finite, zero or negative sizes with kInvalidArgument.
class Shape {
 public:
  /// A unit sphere. Prefer the Make functions.
  Shape() = default;

  [[nodiscard]] static Result<Shape> Make(const Sphere& s);
  [[nodiscard]] static Result<Shape> Make(const Box& b);
  [[nodiscard]] static Result<Shape> Make(const Capsule& c);
  [[nodiscard]] static Result<Shape> Make(const Cylinder& c);
  [[nodiscard]] static Result<Shape> MakeSphere(double radius) { return Make(Sphere{radius}); }
  [[nodiscard]] static Result<Shape> MakeBox(const Vec3& half_extents) {
    return Make(Box{half_extents});
  }
  [[nodiscard]] static Result<Shape> MakeCapsule(double radius, double half_height) {
    return Make(Capsule{radius, half_height});
  }
  [[nodiscard]] static Result<Shape> MakeCylinder(double radius, double half_height) {
    return Make(Cylinder{radius, half_height});
  }

  ShapeKind kind() const { return kind_; }
  /// Sphere, capsule, cylinder radius in metres (0 for a box).
  double radius() const { return radius_; }
  /// Capsule and cylinder half-height in metres (0 for sphere and box).
  double half_height() const { return half_height_; }
  /// Box half-extents in metres (zero for the other kinds).
  const Vec3& half_extents() const { return half_extents_; }

  Sphere AsSphere() const { return {radius_}; }
  Box AsBox() const { return {half_extents_}; }
  Capsule AsCapsule() const { return {radius_, half_height_}; }
  Cylinder AsCylinder() const { return {radius_, half_height_}; }

  /// Bounding box in the local frame.
  Aabb LocalBounds() const;
  /// Tight bounding box of the shape placed at `pose` (world frame).
  Aabb WorldBounds(const Pose& pose) const;
  /// Support point in the local frame: the point of the shape farthest along
  /// local direction `dir` (any non-zero length). Ties are broken
  /// deterministically.
  Vec3 Support(const Vec3& dir) const;
  /// Radius of the smallest sphere about the local origin holding the shape.
  double BoundingRadius() const;
  /// Human-readable form with full precision, e.g.
  /// "capsule{radius=0.5, half_height=1.25}", for error messages and test logs.
  std::string ToString() const;

  bool operator==(const Shape& o) const = default;

 private:
  ShapeKind kind_ = ShapeKind::kSphere;
  double radius_ = 1.0;
  double half_height_ = 0.0;
  Vec3 half_extents_;
};

/// Full-precision text of a vector / quaternion / pose, for logs and for
/// pasting failing random cases into regression tests.
std::string ToString(const Vec3& v);
std::string ToString(const Quat& q);
std::string ToString(const Pose& p);

}  // namespace hitbox
