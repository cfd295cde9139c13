// Double-precision math for Hitbox: vectors, unit quaternions, rigid poses,
// 3x3 rotation matrices and axis-aligned boxes. Everything is header-only and
// inlined: these types sit in every inner loop of the narrow and broad phase.
//
// Conventions: right-handed, metres; quaternions are [x, y, z, w] and unit
// length; a Pose maps local coordinates to world coordinates as
// world = position + rotation * local.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace hitbox {

/// A 3D vector or point, in metres unless stated otherwise.
struct Vec3 {
  double x = 0.0;
  double y = 0.0;
  double z = 0.0;

  constexpr Vec3() = default;
  constexpr Vec3(double x_in, double y_in, double z_in) : x(x_in), y(y_in), z(z_in) {}

  /// All three components set to `v`.
  static constexpr Vec3 Splat(double v) { return {v, v, v}; }
  static constexpr Vec3 Zero() { return {0.0, 0.0, 0.0}; }

  constexpr double operator[](int i) const { return i == 0 ? x : (i == 1 ? y : z); }
  constexpr double& operator[](int i) { return i == 0 ? x : (i == 1 ? y : z); }

  constexpr Vec3 operator-() const { return {-x, -y, -z}; }
  constexpr Vec3 operator+(const Vec3& o) const { return {x + o.x, y + o.y, z + o.z}; }
  constexpr Vec3 operator-(const Vec3& o) const { return {x - o.x, y - o.y, z - o.z}; }
  constexpr Vec3 operator*(double s) const { return {x * s, y * s, z * s}; }
  constexpr Vec3 operator/(double s) const { return {x / s, y / s, z / s}; }
  constexpr Vec3& operator+=(const Vec3& o) { x += o.x; y += o.y; z += o.z; return *this; }
  constexpr Vec3& operator-=(const Vec3& o) { x -= o.x; y -= o.y; z -= o.z; return *this; }
  constexpr Vec3& operator*=(double s) { x *= s; y *= s; z *= s; return *this; }
  constexpr bool operator==(const Vec3& o) const = default;

  /// Squared Euclidean length.
  constexpr double LengthSq() const { return x * x + y * y + z * z; }
  /// Euclidean length.
  double Length() const { return std::sqrt(LengthSq()); }
  /// This vector scaled to unit length; the zero vector stays zero. A tiny
  /// vector (length below 1e-150, whose squares would be denormal or zero) is
  /// scaled by its largest component first, so it still comes out unit.
  Vec3 Normalized() const {
    const double len = Length();
    if (len > 1e-150) return *this / len;
    const double m = std::max({std::fabs(x), std::fabs(y), std::fabs(z)});
    if (!(m > 0.0)) return Vec3{};
    const Vec3 s = *this / m;
    return s / s.Length();
  }
  /// True when every component is finite (not NaN, not infinite).
  bool IsFinite() const { return std::isfinite(x) && std::isfinite(y) && std::isfinite(z); }
  /// Component-wise absolute value.
  Vec3 Abs() const { return {std::fabs(x), std::fabs(y), std::fabs(z)}; }
  /// Largest component.
  constexpr double MaxComponent() const { return std::max(x, std::max(y, z)); }
};

constexpr Vec3 operator*(double s, const Vec3& v) { return v * s; }
constexpr double Dot(const Vec3& a, const Vec3& b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
constexpr Vec3 Cross(const Vec3& a, const Vec3& b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
/// Component-wise product.
constexpr Vec3 Mul(const Vec3& a, const Vec3& b) { return {a.x * b.x, a.y * b.y, a.z * b.z}; }
constexpr Vec3 Min(const Vec3& a, const Vec3& b) {
  return {std::min(a.x, b.x), std::min(a.y, b.y), std::min(a.z, b.z)};
}
constexpr Vec3 Max(const Vec3& a, const Vec3& b) {
  return {std::max(a.x, b.x), std::max(a.y, b.y), std::max(a.z, b.z)};
}
inline double Distance(const Vec3& a, const Vec3& b) { return (a - b).Length(); }

/// True when x is exactly a float32 value (finite). Read off the bits: GCC
/// 12 at -O2 can drop a double -> float -> double round trip.
inline bool IsExactFloat(double x) {
  if (x == 0.0) return true;
  const uint64_t b = std::bit_cast<uint64_t>(x);
  const int e = static_cast<int>((b >> 52) & 0x7ff) - 1023;
  if (e > 127 || e < -149) return false;  // beyond float's range (inf and NaN included)
  const int drop = 52 - std::min(23, e + 149);  // fraction bits a float cannot hold
  return (b & ((uint64_t{1} << drop) - 1)) == 0;
}

/// The q that stands for -0.0 in a decimal coordinate (no q / divisor is -0).
inline constexpr int32_t kDecimalNegativeZero = INT32_MIN;
/// A coordinate kept as a decimal: q / divisor (10^k), correctly rounded,
/// or -0.0 for kDecimalNegativeZero.
inline double DecimalValue(int32_t q, double divisor) {
  return q == kDecimalNegativeZero ? -0.0 : static_cast<double>(q) / divisor;
}

/// Some unit vector perpendicular to unit vector `n` (deterministic).
inline Vec3 AnyPerpendicular(const Vec3& n) {
  // Cross with the axis least aligned with n for numerical stability.
  const Vec3 a = n.Abs();
  const Vec3 axis = (a.x <= a.y && a.x <= a.z) ? Vec3{1, 0, 0}
                    : (a.y <= a.z)              ? Vec3{0, 1, 0}
                                                : Vec3{0, 0, 1};
  return Cross(n, axis).Normalized();
}

/// A row-major 3x3 matrix, used for rotations (columns are the rotated local axes).
struct Mat33 {
  Vec3 row[3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};

  static constexpr Mat33 Identity() { return {}; }
  constexpr Vec3 Column(int i) const { return {row[0][i], row[1][i], row[2][i]}; }
  /// Matrix * vector.
  constexpr Vec3 operator*(const Vec3& v) const {
    return {Dot(row[0], v), Dot(row[1], v), Dot(row[2], v)};
  }
  /// Transpose(matrix) * vector: the inverse rotation of `v`.
  constexpr Vec3 TransposeMul(const Vec3& v) const {
    return row[0] * v.x + row[1] * v.y + row[2] * v.z;
  }
  constexpr Mat33 Transposed() const {
    Mat33 t;
    for (int i = 0; i < 3; ++i) t.row[i] = Column(i);
    return t;
  }
  constexpr Mat33 operator*(const Mat33& o) const {
    Mat33 r;
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) r.row[i][j] = Dot(row[i], o.Column(j));
    }
    return r;
  }
  /// Element-wise absolute value.
  Mat33 Abs() const {
    Mat33 r;
    for (int i = 0; i < 3; ++i) r.row[i] = row[i].Abs();
    return r;
  }
};

/// A rotation as a unit quaternion [x, y, z, w]; identity is [0, 0, 0, 1].
struct Quat {
  double x = 0.0;
  double y = 0.0;
  double z = 0.0;
  double w = 1.0;

  constexpr Quat() = default;
  constexpr Quat(double x_in, double y_in, double z_in, double w_in)
      : x(x_in), y(y_in), z(z_in), w(w_in) {}

  static constexpr Quat Identity() { return {}; }
  /// Rotation by `angle` radians about unit vector `axis`.
  static Quat FromAxisAngle(const Vec3& axis, double angle) {
    const Vec3 n = axis.Normalized();
    const double s = std::sin(0.5 * angle);
    return {n.x * s, n.y * s, n.z * s, std::cos(0.5 * angle)};
  }
  /// The shortest rotation taking unit vector `from` onto unit vector `to`.
  static Quat FromTo(const Vec3& from, const Vec3& to) {
    const double d = Dot(from, to);
    if (d < -1.0 + 1e-15) {
      const Vec3 axis = AnyPerpendicular(from);
      return {axis.x, axis.y, axis.z, 0.0};
    }
    const Vec3 c = Cross(from, to);
    return Quat{c.x, c.y, c.z, 1.0 + d}.Normalized();
  }

  constexpr bool operator==(const Quat& o) const = default;
  constexpr double LengthSq() const { return x * x + y * y + z * z + w * w; }
  double Length() const { return std::sqrt(LengthSq()); }
  Quat Normalized() const {
    const double len = Length();
    return len > 0.0 ? Quat{x / len, y / len, z / len, w / len} : Quat{};
  }
  bool IsFinite() const {
    return std::isfinite(x) && std::isfinite(y) && std::isfinite(z) && std::isfinite(w);
  }
  /// True when |q| is within `tolerance` of 1.
  bool IsNormalized(double tolerance = 1e-6) const {
    return std::fabs(Length() - 1.0) <= tolerance;
  }
  /// Inverse of a unit quaternion.
  constexpr Quat Conjugate() const { return {-x, -y, -z, w}; }

  /// Hamilton product: (this * o) applies o first, then this.
  constexpr Quat operator*(const Quat& o) const {
    return {w * o.x + x * o.w + y * o.z - z * o.y,
            w * o.y - x * o.z + y * o.w + z * o.x,
            w * o.z + x * o.y - y * o.x + z * o.w,
            w * o.w - x * o.x - y * o.y - z * o.z};
  }

  /// Rotates vector `v` by this unit quaternion.
  constexpr Vec3 Rotate(const Vec3& v) const {
    // v' = v + 2w (u x v) + 2 u x (u x v), u = (x, y, z)
    const Vec3 u{x, y, z};
    const Vec3 t = Cross(u, v) * 2.0;
    return v + t * w + Cross(u, t);
  }
  /// Rotates vector `v` by the inverse of this unit quaternion.
  constexpr Vec3 InverseRotate(const Vec3& v) const { return Conjugate().Rotate(v); }

  /// The rotation matrix of this unit quaternion.
  constexpr Mat33 ToMatrix() const {
    const double xx = x * x, yy = y * y, zz = z * z;
    const double xy = x * y, xz = x * z, yz = y * z;
    const double wx = w * x, wy = w * y, wz = w * z;
    Mat33 m;
    m.row[0] = {1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)};
    m.row[1] = {2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)};
    m.row[2] = {2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy)};
    return m;
  }
};

/// A rigid transform: world = position + rotation * local.
struct Pose {
  Vec3 position;
  Quat rotation;

  constexpr Pose() = default;
  constexpr Pose(const Vec3& p, const Quat& q = Quat::Identity()) : position(p), rotation(q) {}

  static constexpr Pose Identity() { return {}; }

  /// Local point -> world point.
  constexpr Vec3 TransformPoint(const Vec3& p) const { return position + rotation.Rotate(p); }
  /// Local direction -> world direction (no translation).
  constexpr Vec3 TransformDirection(const Vec3& d) const { return rotation.Rotate(d); }
  /// World point -> local point.
  constexpr Vec3 InverseTransformPoint(const Vec3& p) const {
    return rotation.InverseRotate(p - position);
  }
  /// World direction -> local direction.
  constexpr Vec3 InverseTransformDirection(const Vec3& d) const {
    return rotation.InverseRotate(d);
  }
  /// The inverse transform (world -> local as a Pose).
  constexpr Pose Inverse() const {
    const Quat inv = rotation.Conjugate();
    return {inv.Rotate(-position), inv};
  }
  /// Composition: (this * o) applies o first, then this.
  constexpr Pose operator*(const Pose& o) const {
    return {TransformPoint(o.position), rotation * o.rotation};
  }
  /// Pose of `other` expressed in this pose's local frame: Inverse() * other.
  /// Computed without forming the inverse so that two poses 20 km from the
  /// origin give a relative pose as accurate as two poses near it.
  constexpr Pose RelativeTo(const Pose& other) const {
    const Quat inv = rotation.Conjugate();
    return {inv.Rotate(other.position - position), inv * other.rotation};
  }
  bool IsFinite() const { return position.IsFinite() && rotation.IsFinite(); }
};

/// An axis-aligned bounding box [min, max] in metres. An "empty" box has
/// min > max and is the identity for Union.
struct Aabb {
  Vec3 min = Vec3::Splat(std::numeric_limits<double>::infinity());
  Vec3 max = Vec3::Splat(-std::numeric_limits<double>::infinity());

  constexpr Aabb() = default;
  constexpr Aabb(const Vec3& mn, const Vec3& mx) : min(mn), max(mx) {}

  static constexpr Aabb Empty() { return {}; }
  static constexpr Aabb FromCenterExtents(const Vec3& c, const Vec3& e) { return {c - e, c + e}; }

  constexpr bool IsEmpty() const { return min.x > max.x || min.y > max.y || min.z > max.z; }
  constexpr Vec3 Center() const { return (min + max) * 0.5; }
  /// Half-size along each axis.
  constexpr Vec3 Extents() const { return (max - min) * 0.5; }
  /// Surface area (the cost measure of the tree's surface area heuristic).
  constexpr double SurfaceArea() const {
    const Vec3 d = max - min;
    return 2.0 * (d.x * d.y + d.y * d.z + d.z * d.x);
  }
  /// True when the boxes share at least one point (touching counts).
  constexpr bool Overlaps(const Aabb& o) const {
    return min.x <= o.max.x && o.min.x <= max.x && min.y <= o.max.y && o.min.y <= max.y &&
           min.z <= o.max.z && o.min.z <= max.z;
  }
  /// True when `o` lies inside this box (boundary included).
  constexpr bool Contains(const Aabb& o) const {
    return min.x <= o.min.x && min.y <= o.min.y && min.z <= o.min.z && o.max.x <= max.x &&
           o.max.y <= max.y && o.max.z <= max.z;
  }
  constexpr bool Contains(const Vec3& p) const {
    return min.x <= p.x && p.x <= max.x && min.y <= p.y && p.y <= max.y && min.z <= p.z &&
           p.z <= max.z;
  }
  /// This box grown by `margin` on every side.
  constexpr Aabb Expanded(double margin) const {
    return {min - Vec3::Splat(margin), max + Vec3::Splat(margin)};
  }
  constexpr Aabb Expanded(const Vec3& margin) const { return {min - margin, max + margin}; }
  /// The smallest box holding both.
  constexpr Aabb Union(const Aabb& o) const { return {Min(min, o.min), Max(max, o.max)}; }
  constexpr Aabb Union(const Vec3& p) const { return {Min(min, p), Max(max, p)}; }
  /// This box swept along `translation`.
  constexpr Aabb Swept(const Vec3& translation) const {
    return {min + Min(translation, Vec3{}), max + Max(translation, Vec3{})};
  }
};

}  // namespace hitbox
