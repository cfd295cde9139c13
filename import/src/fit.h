// Building colliders from a node's vertices: splitting a node's world
// transform into pose and baked scale, and fitting boxes, spheres, capsules
// and hulls to points in the node's local frame (internal to hitbox_import).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hitbox/format.h"
#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"
#include "hitbox/status.h"

namespace hitbox::import {

/// A kInvalidArgument error with `message`.
inline Error Invalid(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message)};
}
/// An affine transform: world = linear * local + translation.
struct Affine {
  Mat33 linear;
  Vec3 translation;

  /// (this * o) applies o first, then this.
  Affine operator*(const Affine& o) const {
    return {linear * o.linear, linear * o.translation + translation};
  }
  Vec3 Apply(const Vec3& p) const { return linear * p + translation; }
};

/// A world transform split into a rigid pose and what is baked into vertices:
/// world point = pose.TransformPoint(bake * local point).
struct SplitTransform {
  Pose pose;
  /// Applied to local vertices before fitting: a diagonal (signed) scale, or
  /// the whole linear part when it shears (then pose has no rotation).
  Mat33 bake;
  /// The scale factors are not all equal (in absolute value).
  bool non_uniform = false;
  /// The linear part is not a rotation times an axis scale.
  bool shear = false;
};

/// Scale factors within this of 1 are taken as 1 (a rotation's rounding).
inline constexpr double kUnitScaleTolerance = 1e-12;

/// Splits `world`; kInvalidArgument when a scale factor is below 1e-12 or
/// anything is non-finite.
[[nodiscard]] Result<SplitTransform> Split(const Affine& world);

/// The rotation of a proper orthonormal matrix (Shepperd's method: the
/// largest of w, x, y, z is found first for accuracy).
Quat QuatFromMatrix(const Mat33& m);

/// A shape and where it sits in the node's (baked) local frame.
struct Fitted {
  Shape shape;
  Pose offset;
};

/// The box of the points' bounds (axes of the local frame). Error when the
/// points span less than kMinShapeSize along an axis.
[[nodiscard]] Result<Fitted> FitBox(const std::vector<Vec3>& points);
/// Centre of the points' bounds, radius to the farthest point.
[[nodiscard]] Result<Fitted> FitSphere(const std::vector<Vec3>& points);
/// Axis along the longest side of the points' bounds, through its centre;
/// the radius is the largest distance from the axis and the half height the
/// smallest that holds every point in the end caps.
[[nodiscard]] Result<Fitted> FitCapsule(const std::vector<Vec3>& points);

/// The hull of the points; more than kMaxHullPoints distinct points are first
/// reduced to the hull's vertices (qhull, through core, on groups of at most
/// kMaxHullPoints points, until one hull holds them all). `reduced_from` is
/// set to the distinct point count when a reduction happened, else 0.
[[nodiscard]] Result<Fitted> FitHull(const std::vector<Vec3>& points, size_t* reduced_from);

/// The distinct points of `points`, sorted.
std::vector<Vec3> Distinct(std::vector<Vec3> points);

/// True for a triangle to drop: a repeated vertex, or |(b - a) x (c - a)|
/// (twice its area) at most 1e-9 of its longest edge squared (collinear
/// within rounding).
bool IsDegenerate(const Vec3& a, const Vec3& b, const Vec3& c);

}  // namespace hitbox::import
