// Box against cylinder (either moving): separating axes with entry and exit
// times (as CastBoxBox, Ericson RTCD 5.5.8) over the box's three face
// normals, the cylinder's axis and the three box edges crossed with that
// axis. The latest entry is a lower bound of the time of impact, an empty
// overlap of the intervals a miss. The winning axis names a contact (box
// face against the cylinder's support point, cap against the box's support
// point, box edge against the side): when that point lies in both shapes at
// the entry time, the entry is the time of impact (the upper bound meets the
// lower); otherwise the GJK ray cast starts from it.
#include <cmath>
#include <limits>

#include "collision/cast_internal.h"
#include "geometry/gjk.h"
#include "geometry/ray_primitives.h"

namespace hitbox::internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// True when p lies in the box (centre c, unit axes u, half-extents e) grown by tol.
bool InBox(const Vec3& p, const Vec3& c, const Vec3* u, const Vec3& e, double tol) {
  const Vec3 d = p - c;
  for (int k = 0; k < 3; ++k) {
    if (!(std::fabs(Dot(d, u[k])) <= e[k] + tol)) return false;
  }
  return true;
}

// True when p lies in the cylinder (radius r about local Y, caps at +-h) grown by tol.
bool InCylinder(const Vec3& p, double r, double h, double tol) {
  return std::fabs(p.y) <= h + tol && p.x * p.x + p.z * p.z <= (r + tol) * (r + tol);
}

}  // namespace

AxisCast CastBoxCylinderAxes(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                             double t_max) {
  // Everything in the cylinder's frame, the box moving by w.
  const bool box_moves = a.kind() == ShapeKind::kBox;
  const Shape& box = box_moves ? a : b;
  const Shape& cyl = box_moves ? b : a;
  const Mat33 rm = a_in_b.rotation.ToMatrix();
  Vec3 c, w, u[3];
  if (box_moves) {
    c = a_in_b.position;
    w = v;
    for (int j = 0; j < 3; ++j) u[j] = rm.Column(j);
  } else {
    c = rm.TransposeMul(-a_in_b.position);
    w = rm.TransposeMul(-v);
    for (int j = 0; j < 3; ++j) u[j] = rm.row[j];
  }
  const Vec3 e = box.half_extents();
  const double r = cyl.radius(), h = cyl.half_height();
  AxisCast out;
  double t_enter = -kInf, t_exit = kInf;
  Vec3 n_enter;
  int won = -1;  // 0..2 box face j, 3 cylinder axis, 4..6 box edge j x axis
  bool separated = false, miss = false;
  // Axis l (any length): the box's projection moves from s0 at rate sv;
  // the shapes' projections overlap while |s| <= the sum of their radii.
  auto axis = [&](const Vec3& l, int id) {
    const double rsum = e.x * std::fabs(Dot(l, u[0])) + e.y * std::fabs(Dot(l, u[1])) +
                        e.z * std::fabs(Dot(l, u[2])) + h * std::fabs(l.y) +
                        r * std::sqrt(l.x * l.x + l.z * l.z);
    const double s0 = Dot(l, c);
    const double sv = Dot(l, w);
    if (std::fabs(s0) <= rsum) {
      if (sv != 0.0) t_exit = std::min(t_exit, ((sv > 0.0 ? rsum : -rsum) - s0) / sv);
      return;
    }
    separated = true;
    const double sgn = s0 > 0.0 ? 1.0 : -1.0;
    const double approach = -sgn * sv;
    if (approach <= 0.0) {
      miss = true;
      return;
    }
    const double te = (std::fabs(s0) - rsum) / approach;
    t_exit = std::min(t_exit, (std::fabs(s0) + rsum) / approach);
    if (te > t_enter) {
      t_enter = te;
      n_enter = l * sgn;
      won = id;
    }
  };
  for (int j = 0; j < 3; ++j) axis(u[j], j);
  axis({0, 1, 0}, 3);
  for (int j = 0; j < 3 && !miss; ++j) {
    const Vec3 l{-u[j].z, 0.0, u[j].x};  // u[j] x Y
    if (l.LengthSq() > 1e-18) axis(l, 4 + j);
  }
  if (miss) return out;
  if (!separated) {
    out.state = AxisCast::State::kLowerBound;  // no axis apart at the start: no bound
    return out;
  }
  // Exit before entry (beyond rounding): no common time.
  if (t_enter > t_exit + 1e-9 || t_enter > t_max) return out;
  const double t = t_enter;
  const Vec3 n = n_enter / n_enter.Length();  // from the cylinder towards the box
  out.state = AxisCast::State::kLowerBound;
  out.t = t;
  out.normal = box_moves ? n : -(rm * n);
  // The winning axis's contact point, then whether it lies in both shapes.
  const Vec3 ct = c + w * t;
  Vec3 p;
  if (won < 3) {
    p = CylinderSupport(r, h, n);
  } else {
    // The box's support point along -n (its corner towards the cylinder),
    // or for an edge axis the point of that edge nearest the cylinder's axis.
    const int free_axis = won - 4;
    p = ct;
    for (int k = 0; k < 3; ++k) {
      if (k != free_axis) p += u[k] * (Dot(u[k], n) > 0.0 ? -e[k] : e[k]);
    }
    if (won > 3) {
      const Vec3& d = u[free_axis];
      const double dd = d.x * d.x + d.z * d.z;
      p += d * (-(p.x * d.x + p.z * d.z) / dd);
    }
  }
  const double tol =
      1e-10 * (1.0 + c.Length() + w.Length() + r + h + e.x + e.y + e.z);
  auto answer = [&](double t_hit, const Vec3& n_hit, const Vec3& p_hit) {
    out.state = AxisCast::State::kHit;
    out.hit.state = CastState::kHit;
    out.hit.fraction = t_hit;
    out.hit.normal = box_moves ? n_hit : -(rm * n_hit);
    out.hit.point = box_moves ? p_hit : a_in_b.TransformPoint(p_hit) + v * t_hit;
    return out;
  };
  // A point within tol of both shapes bounds the time of impact by
  // t + 2 tol / closing: certified when that is within 1e-8 of the fraction
  // (a tenth of the GJK ray cast's margin or less).
  auto tight = [&](const Vec3& n_hit) {
    const double closing = -Dot(n_hit, w);
    return closing > 0.0 && 2.0 * tol <= 1e-8 * closing;
  };
  if (tight(n) && InBox(p, ct, u, e, tol) && InCylinder(p, r, h, tol)) return answer(t, n, p);
  // A corner of the box against the cylinder (the ray of the corner, closed
  // form): the time of impact when the cylinder's tangent plane there
  // separates the two (the corner is the box's nearest point along it). The
  // earliest corner hit is the only one that can pass.
  RayEntry best;
  best.t = kInf;
  Vec3 best_p;
  for (int k = 0; k < 8; ++k) {
    Vec3 q = c;
    for (int j = 0; j < 3; ++j) q += u[j] * ((k >> j) & 1 ? e[j] : -e[j]);
    RayEntry hit;
    if (RayCylinder(q, w, r, h, &hit) == RayOutcome::kHit && hit.t < best.t) {
      best = hit;
      best_p = q + w * hit.t;
    }
  }
  if (!(best.t >= t && best.t <= 1.0) || !tight(best.normal)) return out;
  const Vec3& nv = best.normal;
  const double plane = Dot(best_p, nv);
  const Vec3 cv = c + w * best.t;
  const double box_low =
      Dot(cv, nv) - (e.x * std::fabs(Dot(u[0], nv)) + e.y * std::fabs(Dot(u[1], nv)) +
                     e.z * std::fabs(Dot(u[2], nv)));
  if (box_low >= plane - tol && Dot(CylinderSupport(r, h, nv), nv) <= plane + tol) {
    if (best.t > t_max) return AxisCast{};  // the time of impact, later than asked for
    return answer(best.t, nv, best_p);
  }
  return out;
}

}  // namespace hitbox::internal
