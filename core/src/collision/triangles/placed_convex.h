// A query convex placed in a surface's local frame, callable as a core support
// function, with the closed-form cores (ball, capsule, box, cylinder) the
// triangle routines take directly.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "collision/triangles/box_triangle_sweep.h"
#include "collision/triangles/cylinder_triangle.h"
#include "collision/triangles/triangle_polytope_sat.h"
#include "geometry/gjk.h"
#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"

namespace hitbox {

/// A ConvexCore placed in a surface's local frame (its pose relative to the
/// surface: surface_pose.RelativeTo(shape_pose)); callable as a core support.
class PlacedConvex {
 public:
  PlacedConvex(const internal::ConvexCore& core, const Pose& pose_in_surface)
      : placed_(core, pose_in_surface), margin_(core.margin) {
    using Kind = internal::ConvexCore::Kind;
    if (core.kind == Kind::kPoint || core.kind == Kind::kSegment || core.kind == Kind::kBox) {
      // The supports along +-each axis in closed form: the core's half-extents
      // (a segment's along Y, none for a point) times |row a| of the rotation,
      // summed in CoreSupport's order, so the same bounds to the bit.
      const Vec3 he = core.kind == Kind::kBox       ? core.half_extents
                      : core.kind == Kind::kSegment ? Vec3{0.0, core.half_height, 0.0}
                                                    : Vec3{};
      for (int a = 0; a < 3; ++a) {
        const Vec3& r = placed_.rotation.row[a];
        const double reach = std::fabs(r.x) * he.x + std::fabs(r.y) * he.y + std::fabs(r.z) * he.z;
        bounds_.max[a] = placed_.position[a] + reach + margin_;
        bounds_.min[a] = placed_.position[a] - reach - margin_;
      }
    } else if (core.kind == Kind::kHull &&
               core.hull->vertices().size() <= ConvexHullData::kScanVertices) {
      // One pass over the vertices for all six supports: the support along
      // +-e_a (rotated back: +-row a, exactly) is the vertex of the largest
      // (least) product with row a, Support's very products, so the bounds
      // are CoreSupport's to the bit (its coordinate a is the position's
      // plus that product, whichever vertex ties).
      const std::vector<Vec3>& vs = core.hull->vertices();
      double hi[3], lo[3];
      for (int a = 0; a < 3; ++a) hi[a] = lo[a] = Dot(vs[0], placed_.rotation.row[a]);
      for (size_t i = 1; i < vs.size(); ++i) {
        for (int a = 0; a < 3; ++a) {
          const double d = Dot(vs[i], placed_.rotation.row[a]);
          hi[a] = std::max(hi[a], d);
          lo[a] = std::min(lo[a], d);
        }
      }
      for (int a = 0; a < 3; ++a) {
        bounds_.max[a] = placed_.position[a] + hi[a] + margin_;
        bounds_.min[a] = placed_.position[a] + lo[a] - margin_;
      }
    } else {
      for (int a = 0; a < 3; ++a) {
        Vec3 d;
        d[a] = 1.0;
        bounds_.max[a] = placed_.CoreSupport(d)[a] + margin_;
        d[a] = -1.0;
        bounds_.min[a] = placed_.CoreSupport(d)[a] - margin_;
      }
    }
    scale_ = core.CoreBoundingRadius() + margin_ + pose_in_surface.position.Length();
    if (core.kind == Kind::kPoint || core.kind == Kind::kSegment) {
      const Vec3 half = core.kind == Kind::kSegment
                            ? placed_.rotation * Vec3{0.0, core.half_height, 0.0}
                            : Vec3{};
      segment_[0] = pose_in_surface.position - half;
      segment_[1] = pose_in_surface.position + half;
      rounded_ = core.kind == Kind::kPoint ? Rounded::kBall : Rounded::kCapsule;
    } else if (core.kind == Kind::kBox) {
      is_box_ = true;
      box_.center = pose_in_surface.position;
      for (int k = 0; k < 3; ++k) box_.axis[k] = placed_.rotation.Column(k);
      box_.half = core.half_extents;
    }
  }
  /// Core support point along `dir`, surface frame.
  Vec3 operator()(const Vec3& dir) const { return placed_.CoreSupport(dir); }
  double margin() const { return margin_; }
  /// Bounds including the margin, surface frame.
  const Aabb& bounds() const { return bounds_; }
  /// Length scale for GJK tolerances (metres).
  double scale() const { return scale_; }
  /// The core as a polytope in the surface frame (point, segment or box), for
  /// TrianglePolytopePenetration; false for a cylinder or a hull.
  bool PolytopeCore(TrianglePolytopeCore* out) const {
    const internal::ConvexCore& c = *placed_.core;
    out->center = placed_.position;
    switch (c.kind) {
      case internal::ConvexCore::Kind::kPoint: out->axes = 0; return true;
      case internal::ConvexCore::Kind::kSegment:
        out->axes = 1;
        out->axis[0] = placed_.rotation.Column(1);
        out->half[0] = c.half_height;
        return true;
      case internal::ConvexCore::Kind::kBox:
        out->axes = 3;
        for (int k = 0; k < 3; ++k) {
          out->axis[k] = placed_.rotation.Column(k);
          out->half[k] = c.half_extents[k];
        }
        return true;
      default: return false;
    }
  }
  /// A box core in the surface frame, for SweepBoxSat; null for the others.
  const OrientedBox* oriented_box() const { return is_box_ ? &box_ : nullptr; }
  /// True for a cylinder core without margin, which cylinder() gives in the
  /// surface frame for CylinderTriangleSweep (made when asked: a member
  /// would be set up with every query's PlacedConvex).
  bool is_cylinder() const {
    return placed_.core->kind == internal::ConvexCore::Kind::kCylinder && margin_ == 0.0;
  }
  PlacedCylinder cylinder() const {
    return {placed_.position, placed_.rotation, placed_.core->radius, placed_.core->half_height};
  }
  /// Which closed form fits: a ball (point core) or a capsule (segment core)
  /// around segment(), radius margin(); kNone for other cores.
  enum class Rounded : uint8_t { kNone, kBall, kCapsule };
  Rounded rounded() const { return rounded_; }
  /// The core's segment, surface frame (both ends the centre for a ball).
  const Vec3* segment() const { return segment_; }
  /// A segment inside the core, surface frame, for TriangleInnerOverlap: a
  /// capsule's or a cylinder's axis; the centre at both ends of a ball, a
  /// box or (its interior point) a hull.
  void InnerSegment(Vec3 out[2]) const {
    const internal::ConvexCore& c = *placed_.core;
    using Kind = internal::ConvexCore::Kind;
    const bool axis = c.kind == Kind::kSegment || c.kind == Kind::kCylinder;
    const Vec3 half = axis ? placed_.rotation * Vec3{0.0, c.half_height, 0.0} : Vec3{};
    const Vec3 mid = placed_.position + placed_.rotation * c.InteriorPoint();
    out[0] = mid - half;
    out[1] = mid + half;
  }

 private:
  internal::PlacedCore placed_;
  double margin_;
  Aabb bounds_;
  double scale_;
  Rounded rounded_ = Rounded::kNone;
  Vec3 segment_[2];
  bool is_box_ = false;
  OrientedBox box_;
};

/// Penetration of the convex into triangle `tri` when GJK found their cores
/// overlapping (`g.cores_overlap`): exact and closed-form by SAT for polytope
/// cores (sphere, capsule, box: TrianglePolytopePenetration), EPA from GJK's
/// tetrahedron for the others (cylinder, convex hull). Every triangle contact
/// with overlapping cores (surface contacts, the contact offset of sweeps
/// started inside) goes through here.

}  // namespace hitbox
