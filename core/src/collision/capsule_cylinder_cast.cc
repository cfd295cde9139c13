// Capsule against cylinder (either moving): separating axes with entry and
// exit times (as CastBoxBox, Ericson RTCD 5.5.8) over the cylinder's axis
// and the capsule's axis crossed with it. The latest entry is a lower bound
// of the time of impact, an empty overlap of the intervals a miss. The
// winning axis names a contact (the cylinder's cap against the capsule's
// end, or side against side at the closest points of the axis lines); when
// that point lies in both shapes at the entry time, the entry is the time of
// impact. Otherwise each end ball's centre is cast against the cylinder
// grown by the capsule's radius (closed form, ray_primitives.h): the earlier
// hit is the time of impact when the plane there separates the two (that
// end is the capsule's nearest point along it). Anything else (the capsule's
// side against a rim) goes to the GJK ray cast, from the bound.
#include <algorithm>
#include <cmath>
#include <limits>

#include "collision/cast_internal.h"
#include "collision/swept_axes.h"
#include "geometry/gjk.h"
#include "geometry/ray_primitives.h"

namespace hitbox::internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

AxisCast CastCapsuleCylinderAxes(const Shape& a, const Pose& a_in_b, const Vec3& v,
                                 const Shape& b, double t_max) {
  // Everything in the cylinder's frame: the capsule's axis k through c,
  // moving by w.
  const bool capsule_moves = a.kind() == ShapeKind::kCapsule;
  const Shape& cap = capsule_moves ? a : b;
  const Shape& cyl = capsule_moves ? b : a;
  const Mat33 rm = a_in_b.rotation.ToMatrix();
  Vec3 c, w, k;
  if (capsule_moves) {
    c = a_in_b.position;
    w = v;
    k = rm.Column(1);
  } else {
    c = rm.TransposeMul(-a_in_b.position);
    w = rm.TransposeMul(-v);
    k = rm.row[1];
  }
  const double rc = cap.radius(), hc = cap.half_height();
  const double r = cyl.radius(), h = cyl.half_height();
  AxisCast out;
  SweptAxes axes;  // won: 0 the cylinder's axis, 1 the capsule's axis crossed with it
  // Axis l (any length): the capsule's projection moves from s0 at rate sv;
  // the projections overlap while |s| <= the sum of the radii along l.
  auto axis = [&](const Vec3& l, int id) {
    const double ll = l.LengthSq();
    const double rsum =
        CylinderReach(l, ll, r, h) + hc * std::fabs(Dot(l, k)) + rc * std::sqrt(ll);
    axes.Add(l, id, rsum, Dot(l, c), Dot(l, w));
  };
  axis({0, 1, 0}, 0);
  const Vec3 cross{-k.z, 0.0, k.x};  // k x Y
  if (cross.LengthSq() > 1e-18 && !axes.miss) axis(cross, 1);
  if (!axes.Bound(t_max, &out)) return out;
  const double t = out.t;
  const Vec3 n = out.normal;  // from the cylinder towards the capsule
  out.normal = capsule_moves ? n : -(rm * n);
  const double tol = 1e-10 * (1.0 + c.Length() + w.Length() + r + h + rc + hc);
  auto answer = [&](double t_hit, const Vec3& n_hit, const Vec3& p_hit) {
    return AxisHit(out, capsule_moves, rm, a_in_b, v, t_hit, n_hit, p_hit);
  };
  auto tight = [&](const Vec3& n_hit) { return Certified(n_hit, w, tol); };
  // The winning axis's contact point, on the cylinder's surface.
  const Vec3 ct = c + w * t;
  if (axes.won == 0) {
    // The capsule's end towards the cap, its ball's nearest point.
    const Vec3 p = ct + k * (Dot(k, n) > 0.0 ? -hc : hc) - n * rc;
    if (tight(n) && InCylinder(p, r, h, tol)) return answer(t, n, p);
  } else {
    // Side against side: the closest points of the two axis lines, s along
    // the cylinder's axis (Y) and u along the capsule's (k; |k x Y|^2 > 1e-18).
    double s, u;
    AxisLinesClosest(ct, k, &s, &u);
    if (tight(n) && std::fabs(s) <= h + tol && std::fabs(u) <= hc + tol) {
      return answer(t, n, Vec3{0.0, s, 0.0} + n * r);
    }
  }
  // Each end ball against the cylinder: its centre's ray against the
  // cylinder grown by rc.
  RayEntry best;
  best.t = kInf;
  Vec3 best_centre;
  for (const double side : {-hc, hc}) {
    const Vec3 q = c + k * side;
    RayEntry hit;
    if (RayRoundedCylinder(q, w, r, h, rc, &hit) == RayOutcome::kHit && hit.t < best.t) {
      best = hit;
      best_centre = q + w * hit.t;
    }
  }
  if (!(best.t >= t && best.t <= 1.0) || !tight(best.normal)) return out;
  const Vec3& nv = best.normal;
  const Vec3 p = best_centre - nv * rc;
  const double plane = Dot(p, nv);
  // The capsule's lowest point along nv (its segment's lower end, less rc)
  // and the cylinder's highest, both on the plane.
  const Vec3 cv = c + w * best.t;
  const double cap_low = Dot(cv, nv) - hc * std::fabs(Dot(k, nv)) - rc;
  if (cap_low >= plane - tol && Dot(CylinderSupport(r, h, nv), nv) <= plane + tol) {
    if (best.t > t_max) return AxisCast{};  // the time of impact, later than asked for
    return answer(best.t, nv, p);
  }
  return out;
}

}  // namespace hitbox::internal
