// Box against cylinder (either moving): separating axes with entry and exit
// times (as CastBoxBox, Ericson RTCD 5.5.8) over the box's three face
// normals, the cylinder's axis and the three box edges crossed with that
// axis. The latest entry is a lower bound of the time of impact, an empty
// overlap of the intervals a miss. The winning axis names a contact (box
// face against the cylinder's support point, cap against the box's support
// point, box edge against the side): when that point lies in both shapes at
// the entry time, the entry is the time of impact (the upper bound meets the
// lower). Then the box's corners against the cylinder (rays) and its edges
// against the rims (a trigonometric equation): such a
// contact is the time of impact when the plane through it separates the
// two. Otherwise the GJK ray cast starts from the axes' bound.
#include <cmath>
#include <limits>

#include "collision/cast_internal.h"
#include "collision/swept_axes.h"
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
  SweptAxes axes;  // won: 0..2 box face j, 3 cylinder axis, 4..6 box edge j x axis
  // Axis l (any length): the box's projection moves from s0 at rate sv;
  // the shapes' projections overlap while |s| <= the sum of their radii.
  auto axis = [&](const Vec3& l, int id) {
    const double rsum = e.x * std::fabs(Dot(l, u[0])) + e.y * std::fabs(Dot(l, u[1])) +
                        e.z * std::fabs(Dot(l, u[2])) + h * std::fabs(l.y) +
                        r * std::sqrt(l.x * l.x + l.z * l.z);
    axes.Add(l, id, rsum, Dot(l, c), Dot(l, w));
  };
  for (int j = 0; j < 3; ++j) axis(u[j], j);
  axis({0, 1, 0}, 3);
  for (int j = 0; j < 3 && !axes.miss; ++j) {
    const Vec3 l{-u[j].z, 0.0, u[j].x};  // u[j] x Y
    if (l.LengthSq() > 1e-18) axis(l, 4 + j);
  }
  if (!axes.Bound(t_max, &out)) return out;
  const double t = out.t;
  const Vec3 n = out.normal;  // from the cylinder towards the box
  out.normal = box_moves ? n : -(rm * n);
  // The winning axis's contact point, then whether it lies in both shapes.
  const Vec3 ct = c + w * t;
  Vec3 p;
  if (axes.won < 3) {
    p = CylinderSupport(r, h, n);
  } else {
    // The box's support point along -n (its corner towards the cylinder),
    // or for an edge axis the point of that edge nearest the cylinder's axis.
    const int free_axis = axes.won - 4;
    p = ct;
    for (int k = 0; k < 3; ++k) {
      if (k != free_axis) p += u[k] * (Dot(u[k], n) > 0.0 ? -e[k] : e[k]);
    }
    if (axes.won > 3) {
      const Vec3& d = u[free_axis];
      const double dd = d.x * d.x + d.z * d.z;
      p += d * (-(p.x * d.x + p.z * d.z) / dd);
    }
  }
  const double tol =
      1e-10 * (1.0 + c.Length() + w.Length() + r + h + e.x + e.y + e.z);
  auto answer = [&](double t_hit, const Vec3& n_hit, const Vec3& p_hit) {
    return AxisHit(out, box_moves, rm, a_in_b, v, t_hit, n_hit, p_hit);
  };
  auto tight = [&](const Vec3& n_hit) { return Certified(n_hit, w, tol); };
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
  // A candidate (time, unit normal from the cylinder, point on both) is the
  // time of impact when the plane through the point separates the two: the
  // box's nearest point along the normal and the cylinder's farthest lie on it.
  auto separates = [&](double tc, const Vec3& nc, const Vec3& pc) {
    const double plane = Dot(pc, nc);
    const Vec3 cc = c + w * tc;
    const double box_low =
        Dot(cc, nc) - (e.x * std::fabs(Dot(u[0], nc)) + e.y * std::fabs(Dot(u[1], nc)) +
                       e.z * std::fabs(Dot(u[2], nc)));
    return box_low >= plane - tol && Dot(CylinderSupport(r, h, nc), nc) <= plane + tol;
  };
  if (best.t >= t && best.t <= 1.0 && tight(best.normal) &&
      separates(best.t, best.normal, best_p)) {
    if (best.t > t_max) return AxisCast{};  // the time of impact, later than asked for
    return answer(best.t, best.normal, best_p);
  }
  // An edge of the box against a rim: each of the twelve edges against both
  // rims (the earliest that passes the plane test wins). The rim point
  // C(th) meets the moving edge line q + s d + tau w where
  // (C(th) - q) . (d x w) = 0, one equation A cos th + B sin th = K.
  double best_t = kInf;
  Vec3 best_n, best_pt;
  for (int edge = 0; edge < 12; ++edge) {
    const int j = edge >> 2;
    const int k1 = (j + 1) % 3, k2 = (j + 2) % 3;
    const Vec3& d = u[j];
    const Vec3 q = c + u[k1] * (edge & 1 ? e[k1] : -e[k1]) + u[k2] * (edge & 2 ? e[k2] : -e[k2]);
    const Vec3 m = Cross(d, w);
    const double mm = m.LengthSq();
    if (!(mm > 0.0)) continue;
    for (const double y0 : {-h, h}) {
      const double aa = r * m.x, bb = r * m.z, kk = Dot(m, q) - m.y * y0;
      const double rr = std::sqrt(aa * aa + bb * bb);
      if (!(rr > 0.0) || std::fabs(kk) > rr) continue;
      const double phi = std::atan2(bb, aa), dphi = std::acos(kk / rr);
      for (const double th : {phi - dphi, phi + dphi}) {
        const Vec3 pc{r * std::cos(th), y0, r * std::sin(th)};
        const Vec3 g = pc - q;
        // g = s d + tau w (d unit): the normal equations' solution.
        const double dw = Dot(d, w), gd = Dot(g, d), gw = Dot(g, w);
        const double s_edge = (gd * w.LengthSq() - gw * dw) / mm;
        const double tau = (gw - gd * dw) / mm;
        if (!(tau >= t && tau < best_t && std::fabs(s_edge) <= e[j] + tol)) continue;
        Vec3 nc = Cross(d, Vec3{-std::sin(th), 0.0, std::cos(th)});
        const double nl = nc.Length();
        if (!(nl > 0.0)) continue;
        nc = nc / nl;
        if (Dot(nc, w) > 0.0) nc = -nc;  // the box closes in along it
        if (!tight(nc) || !separates(tau, nc, pc)) continue;
        best_t = tau;
        best_n = nc;
        best_pt = pc;
      }
    }
  }
  if (best_t <= 1.0) {
    if (best_t > t_max) return AxisCast{};  // the time of impact, later than asked for
    return answer(best_t, best_n, best_pt);
  }
  return out;
}

}  // namespace hitbox::internal
