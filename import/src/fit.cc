#include "fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hitbox::import {
namespace {

Aabb BoundsOf(const std::vector<Vec3>& points) {
  Aabb b;
  for (const Vec3& p : points) b = b.Union(p);
  return b;
}

/// Error unless the points span at least kMinShapeSize along every axis.
Status CheckSolid(const Aabb& b, const char* what) {
  static const char* kAxis = "xyz";
  const Vec3 size = b.max - b.min;
  for (int a = 0; a < 3; ++a) {
    if (!(size[a] >= kMinShapeSize)) {
      return Invalid(std::string("its vertices span ") + FormatDouble(size[a], 9) +
                     " m along local " + kAxis[a] + ": a " + what + " needs volume");
    }
  }
  return Status::Ok();
}

}  // namespace

Quat QuatFromMatrix(const Mat33& m) {
  const double m00 = m.row[0][0], m11 = m.row[1][1], m22 = m.row[2][2];
  const double trace = m00 + m11 + m22;
  Quat q;
  if (trace > 0.0) {
    const double s = std::sqrt(trace + 1.0) * 2.0;
    q = {(m.row[2][1] - m.row[1][2]) / s, (m.row[0][2] - m.row[2][0]) / s,
         (m.row[1][0] - m.row[0][1]) / s, 0.25 * s};
  } else if (m00 > m11 && m00 > m22) {
    const double s = std::sqrt(1.0 + m00 - m11 - m22) * 2.0;
    q = {0.25 * s, (m.row[0][1] + m.row[1][0]) / s, (m.row[0][2] + m.row[2][0]) / s,
         (m.row[2][1] - m.row[1][2]) / s};
  } else if (m11 > m22) {
    const double s = std::sqrt(1.0 + m11 - m00 - m22) * 2.0;
    q = {(m.row[0][1] + m.row[1][0]) / s, 0.25 * s, (m.row[1][2] + m.row[2][1]) / s,
         (m.row[0][2] - m.row[2][0]) / s};
  } else {
    const double s = std::sqrt(1.0 + m22 - m00 - m11) * 2.0;
    q = {(m.row[0][2] + m.row[2][0]) / s, (m.row[1][2] + m.row[2][1]) / s, 0.25 * s,
         (m.row[1][0] - m.row[0][1]) / s};
  }
  return q.Normalized();
}

Result<SplitTransform> Split(const Affine& world) {
  Vec3 axis[3];
  double scale[3];
  for (int i = 0; i < 3; ++i) {
    axis[i] = world.linear.Column(i);
    scale[i] = axis[i].Length();
    if (!std::isfinite(scale[i]) || scale[i] < 1e-12) {
      return Invalid("its transform has scale " + FormatDouble(scale[i], 9) + " along local axis " +
                     std::to_string(i) + " (must be finite and >= 1e-12)");
    }
    axis[i] = axis[i] * (1.0 / scale[i]);
    // A rotation's columns are unit but for rounding (a float quaternion
    // made a matrix): no scale to bake, so float vertices stay floats.
    if (std::fabs(scale[i] - 1.0) <= kUnitScaleTolerance) scale[i] = 1.0;
  }
  if (!world.translation.IsFinite()) return Invalid("its transform has a non-finite translation");
  SplitTransform out;
  const double lo = std::min({scale[0], scale[1], scale[2]});
  const double hi = std::max({scale[0], scale[1], scale[2]});
  out.non_uniform = hi - lo > 1e-6 * hi;
  const bool orthogonal = std::fabs(Dot(axis[0], axis[1])) <= 1e-6 &&
                          std::fabs(Dot(axis[0], axis[2])) <= 1e-6 &&
                          std::fabs(Dot(axis[1], axis[2])) <= 1e-6;
  if (!orthogonal) {
    out.shear = true;
    out.non_uniform = true;
    out.bake = world.linear;
    out.pose = Pose(world.translation);
    return out;
  }
  if (Dot(axis[0], Cross(axis[1], axis[2])) < 0.0) {  // a mirror: keep a proper rotation
    axis[0] = -axis[0];
    scale[0] = -scale[0];
  }
  Mat33 rotation;
  for (int r = 0; r < 3; ++r) rotation.row[r] = {axis[0][r], axis[1][r], axis[2][r]};
  out.bake.row[0] = {scale[0], 0, 0};
  out.bake.row[1] = {0, scale[1], 0};
  out.bake.row[2] = {0, 0, scale[2]};
  out.pose = Pose(world.translation, QuatFromMatrix(rotation));
  return out;
}

std::vector<Vec3> Distinct(std::vector<Vec3> points) {
  auto less = [](const Vec3& a, const Vec3& b) {
    if (a.x != b.x) return a.x < b.x;
    if (a.y != b.y) return a.y < b.y;
    return a.z < b.z;
  };
  std::sort(points.begin(), points.end(), less);
  points.erase(std::unique(points.begin(), points.end(),
                           [](const Vec3& a, const Vec3& b) { return a.x == b.x && a.y == b.y && a.z == b.z; }),
               points.end());
  return points;
}

bool IsDegenerate(const Vec3& a, const Vec3& b, const Vec3& c) {
  const double longest = std::max({(b - a).LengthSq(), (c - b).LengthSq(), (a - c).LengthSq()});
  const double twice_area = Cross(b - a, c - a).Length();
  return !(twice_area > 1e-9 * longest);
}

Result<Fitted> FitBox(const std::vector<Vec3>& points) {
  const Aabb b = BoundsOf(points);
  if (Status s = CheckSolid(b, "box"); !s.ok()) return s.error();
  auto shape = Shape::MakeBox(b.Extents());
  if (!shape.ok()) return shape.error();
  return Fitted{*shape, Pose(b.Center())};
}

Result<Fitted> FitSphere(const std::vector<Vec3>& points) {
  if (points.empty()) return Invalid("no vertices to fit a sphere to");
  const Vec3 centre = BoundsOf(points).Center();
  double r2 = 0.0;
  for (const Vec3& p : points) r2 = std::max(r2, (p - centre).LengthSq());
  auto shape = Shape::MakeSphere(std::sqrt(r2));
  if (!shape.ok()) return shape.error();
  return Fitted{*shape, Pose(centre)};
}

Result<Fitted> FitCapsule(const std::vector<Vec3>& points) {
  const Aabb b = BoundsOf(points);
  if (Status s = CheckSolid(b, "capsule"); !s.ok()) return s.error();
  const Vec3 size = b.max - b.min;
  const int k = size.x >= size.y && size.x >= size.z ? 0 : (size.y >= size.z ? 1 : 2);
  const Vec3 centre = b.Center();
  double r2 = 0.0;
  for (const Vec3& p : points) {
    Vec3 d = p - centre;
    d[k] = 0.0;
    r2 = std::max(r2, d.LengthSq());
  }
  double half_height = 0.0;
  for (const Vec3& p : points) {
    Vec3 d = p - centre;
    const double along = std::fabs(d[k]);
    d[k] = 0.0;
    half_height = std::max(half_height, along - std::sqrt(std::max(0.0, r2 - d.LengthSq())));
  }
  auto shape = Shape::MakeCapsule(std::sqrt(r2), half_height);
  if (!shape.ok()) return shape.error();
  const Vec3 up{0, 1, 0};
  Vec3 axis{0, 0, 0};
  axis[k] = 1.0;
  return Fitted{*shape, Pose(centre, k == 1 ? Quat::Identity() : Quat::FromTo(up, axis))};
}

Result<Fitted> FitHull(const std::vector<Vec3>& points, size_t* reduced_from) {
  std::vector<Vec3> pts = Distinct(points);
  *reduced_from = 0;
  const size_t distinct = pts.size();
  // Vertices of the whole hull are vertices of the hull of any group holding
  // them, so replacing each group by its hull's vertices keeps the hull.
  while (pts.size() > static_cast<size_t>(kMaxHullPoints)) {
    std::vector<Vec3> next;
    for (size_t begin = 0; begin < pts.size(); begin += kMaxHullPoints) {
      const size_t end = std::min(pts.size(), begin + kMaxHullPoints);
      ConvexHull group{{pts.begin() + static_cast<std::ptrdiff_t>(begin),
                        pts.begin() + static_cast<std::ptrdiff_t>(end)}};
      auto h = group.points.size() >= static_cast<size_t>(kMinHullPoints)
                   ? Shape::Make(group)
                   : Result<Shape>(Invalid("too few"));
      const std::vector<Vec3>& keep = h.ok() ? h->hull()->vertices() : group.points;
      next.insert(next.end(), keep.begin(), keep.end());
    }
    if (next.size() >= pts.size()) {
      return Invalid("its hull keeps more than " + std::to_string(kMaxHullPoints) + " of its " +
                     std::to_string(distinct) + " distinct vertices (at most " +
                     std::to_string(kMaxHullPoints) + " allowed): simplify it");
    }
    // Interleave the groups' survivors so the next pass mixes them.
    std::sort(next.begin(), next.end(), [](const Vec3& a, const Vec3& b) {
      return a.y != b.y ? a.y < b.y : (a.z != b.z ? a.z < b.z : a.x < b.x);
    });
    pts = std::move(next);
    *reduced_from = distinct;
  }
  auto shape = Shape::Make(ConvexHull{pts});
  if (!shape.ok()) return shape.error();
  return Fitted{*shape, Pose::Identity()};
}

}  // namespace hitbox::import
