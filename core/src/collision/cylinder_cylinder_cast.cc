// Cylinder against cylinder: separating axes with entry and exit times (as
// CastBoxBox, Ericson RTCD 5.5.8) over the two axes and their cross
// product. The latest entry is a lower bound of the time of impact, an empty
// overlap of the intervals a miss. The winning axis names a contact (one
// cylinder's cap against the other's support point, or side against side at
// the closest points of the two axis lines): when that point lies in both
// cylinders at the entry time, the entry is the time of impact (the upper
// bound meets the lower); otherwise the GJK ray cast starts from it (rims
// against rims or sides have no fixed axis).
#include <cmath>

#include "collision/cast_internal.h"
#include "collision/swept_axes.h"
#include "geometry/gjk.h"

namespace hitbox::internal {

AxisCast CastCylinderCylinderAxes(const Shape& a, const Pose& a_in_b, const Vec3& v,
                                  const Shape& b, double t_max) {
  // B's frame: B about Y at the origin; A's axis k through c, moving by v.
  const Mat33 rm = a_in_b.rotation.ToMatrix();
  const Vec3 c = a_in_b.position;
  const Vec3 k = rm.Column(1);
  const double ra = a.radius(), ha = a.half_height();
  const double rb = b.radius(), hb = b.half_height();
  AxisCast out;
  SweptAxes axes;  // won: 0 B's axis, 1 A's axis, 2 their cross product
  // Axis l (any length): A's projection moves from s0 at rate sv; the
  // projections overlap while |s| <= the sum of the two radii along l.
  auto axis = [&](const Vec3& l, int id) {
    const double ll = l.LengthSq();
    const double lk = Dot(l, k);
    const double rsum = CylinderReach(l, ll, rb, hb) + ha * std::fabs(lk) +
                        ra * std::sqrt(std::max(ll - lk * lk, 0.0));
    axes.Add(l, id, rsum, Dot(l, c), Dot(l, v));
  };
  axis({0, 1, 0}, 0);
  axis(k, 1);
  const Vec3 cross{-k.z, 0.0, k.x};  // k x Y
  const bool skew = cross.LengthSq() > 1e-18;
  if (skew && !axes.miss) axis(cross, 2);
  if (!axes.Bound(t_max, &out)) return out;
  const double t = out.t;
  const Vec3 n = out.normal;  // from B towards A
  const Vec3 ct = c + v * t;  // A's centre at t
  // The winning axis's contact point, on B's surface.
  Vec3 p;
  if (axes.won == 0) {
    // B's cap against A's support point towards it.
    p = ct + rm * CylinderSupport(ra, ha, rm.TransposeMul(-n));
  } else if (axes.won == 1) {
    // A's cap against B's support point towards it.
    p = CylinderSupport(rb, hb, n);
  } else {
    // Side against side: the closest points of the two axis lines, s along
    // B's axis (Y) and u along A's (k; |Y x k|^2 > 1e-18 here).
    double s, u;
    AxisLinesClosest(ct, k, &s, &u);
    if (!(std::fabs(s) <= hb && std::fabs(u) <= ha)) return out;
    p = Vec3{0.0, s, 0.0} + n * rb;
  }
  const double tol = 1e-10 * (1.0 + c.Length() + v.Length() + ra + ha + rb + hb);
  if (!Certified(n, v, tol)) return out;
  if (!InCylinder(p, rb, hb, tol) || !InCylinder(rm.TransposeMul(p - ct), ra, ha, tol)) {
    return out;
  }
  return AxisHit(out, true, rm, a_in_b, v, t, n, p);
}

}  // namespace hitbox::internal
