// The closed-form cylinder-triangle sweep (cylinder_triangle.h), out of line
// so that it does not weigh on the other shapes' paths in SweepTriangle.
#include "collision/triangles/cylinder_triangle.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "collision/triangles/box_triangle_sweep.h"
#include "geometry/gjk.h"

namespace hitbox {

namespace {

/// The entering root of a t^2 + 2 b t + c = 0 (a > 0), without cancellation;
/// false when there is no real root.
bool EnteringRoot(double a, double b, double c, double* t) {
  const double d = b * b - a * c;
  if (!(a > 0.0) || !(d >= 0.0)) return false;
  const double sq = std::sqrt(d);
  if (b < 0.0) {
    const double q = sq - b;  // > 0
    *t = c / q;
  } else {
    *t = -(b + sq) / a;
  }
  return true;
}

}  // namespace

bool CylinderTriangleApart(const Vec3 tri[3], const PlacedCylinder& cyl, const Vec3& v,
                           double t_max) {
  // The triangle's extents along X, Y, Z and the diagonals X + Z, X - Z of
  // the cylinder's frame (an octagon around its circle, whose extent along
  // a diagonal (1, 0, +-1) is r sqrt(2)).
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double lo[5] = {kInf, kInf, kInf, kInf, kInf}, hi[5] = {-kInf, -kInf, -kInf, -kInf, -kInf};
  Vec3 q[3];  // the vertices in the cylinder's frame
  for (int i = 0; i < 3; ++i) {
    const Vec3 p = q[i] = cyl.rotation.TransposeMul(tri[i] - cyl.center);
    const double x[5] = {p.x, p.y, p.z, p.x + p.z, p.x - p.z};
    for (int a = 0; a < 5; ++a) {
      lo[a] = std::min(lo[a], x[a]);
      hi[a] = std::max(hi[a], x[a]);
    }
  }
  const Vec3 w3 = cyl.rotation.TransposeMul(v) * -1.0;
  // (NaN or infinite motion: not apart, the cast decides.)
  if (!(w3.LengthSq() < kInf)) return false;
  const double w[5] = {w3.x, w3.y, w3.z, w3.x + w3.z, w3.x - w3.z};
  double size = 0.0;
  for (int a = 0; a < 3; ++a) size = std::max(size, std::max(std::fabs(lo[a]), std::fabs(hi[a])));
  const double slack = kSweepStallGap + kSweepSatSlack + 1e-12 * (size + w3.Length() * t_max);
  const double r = cyl.radius + slack;
  const double ext[5] = {r, cyl.half_height + slack, r, r * std::sqrt(2.0), r * std::sqrt(2.0)};
  // The times the triangle's extents [lo, hi] on an axis, moving at w, meet
  // the cylinder's [-ext, ext] narrow [enter, exit]; true once that is empty.
  double enter = 0.0, exit = t_max;
  const auto apart = [&](double lo_a, double hi_a, double ext_a, double w_a) {
    if (w_a > 0.0) {
      enter = std::max(enter, (-ext_a - hi_a) / w_a);
      exit = std::min(exit, (ext_a - lo_a) / w_a);
    } else if (w_a < 0.0) {
      enter = std::max(enter, (ext_a - lo_a) / w_a);
      exit = std::min(exit, (-ext_a - hi_a) / w_a);
    } else if (lo_a > ext_a || hi_a < -ext_a) {
      return true;
    }
    return enter > exit;
  };
  for (int a = 0; a < 5; ++a) {
    if (apart(lo[a], hi[a], ext[a], w[a])) return true;
  }
  // The axis x each edge (horizontal: the side against the edge), where
  // the cylinder spans r |m| about its centre and the edge's two vertices
  // project alike.
  for (int i = 0; i < 3; ++i) {
    const Vec3 e = q[(i + 1) % 3] - q[i];
    const double mx = e.z, mz = -e.x;  // Cross((0, 1, 0), e)
    const double mm = mx * mx + mz * mz;
    if (!(mm > 0.0)) continue;
    const double on_edge = q[i].x * mx + q[i].z * mz;
    const double other = q[(i + 2) % 3].x * mx + q[(i + 2) % 3].z * mz;
    if (apart(std::min(on_edge, other), std::max(on_edge, other), r * std::sqrt(mm),
              w3.x * mx + w3.z * mz)) {
      return true;
    }
  }
  return false;
}

bool CylinderTriangleSweep(const Vec3 tri[3], const PlacedCylinder& cyl, const Vec3& v,
                           double t_max, uint8_t active, const Vec3& face, CastResult* out) {
  const double r = cyl.radius, h = cyl.half_height;
  // The cylinder's frame: the triangle relative to the centre, its motion.
  Vec3 p[3];
  for (int i = 0; i < 3; ++i) p[i] = cyl.rotation.TransposeMul(tri[i] - cyl.center);
  const Vec3 w = cyl.rotation.TransposeMul(v) * -1.0;
  const double ww = w.LengthSq();
  if (!(ww > 0.0) || !(r > 0.0) || !(h >= 0.0) || !(Dot(face, face) > 0.5)) return false;
  const double speed = std::sqrt(ww);
  const Vec3 e[3] = {p[1] - p[0], p[2] - p[1], p[0] - p[2]};
  double size = std::max(r, h);
  for (int i = 0; i < 3; ++i) size = std::max(size, p[i].Abs().MaxComponent());
  const double distinct = kCylinderTriangleDistinct * std::max(1.0, size);
  const double sine = kCylinderTriangleSine;

  // The earliest touch among the feature pairs (each a real touch of the
  // two solids, so none comes before the first contact): its time and
  // pair; the contact itself is worked out and proven for it alone.
  enum Pair : uint8_t { kNone, kVertexSide, kVertexCap, kEdgeSide, kEdgeRim, kFace };
  Pair pair = kNone;
  int feature = 0;     // the vertex or edge (from vertex j to j + 1)
  double cap = 0.0;    // +-h
  double along = 0.0;  // along the edge
  double best_t = std::numeric_limits<double>::infinity();
  auto keep = [&](double t, Pair kind, int j, double c, double s) {
    if (t > 0.0 && t < best_t) {
      best_t = t;
      pair = kind;
      feature = j;
      cap = c;
      along = s;
    }
  };
  const double inner = r - distinct;  // a cap's contacts inside this radius
  const double h_in = h - distinct;   // the side's within +-this

  for (int i = 0; i < 3; ++i) {
    // Vertex against the side: |p_xz + w_xz t| = r, entering.
    double t;
    if (EnteringRoot(w.x * w.x + w.z * w.z, p[i].x * w.x + p[i].z * w.z,
                     p[i].x * p[i].x + p[i].z * p[i].z - r * r, &t) &&
        std::fabs(p[i].y + w.y * t) < h_in) {
      keep(t, kVertexSide, i, 0.0, 0.0);
    }
    // Vertex against a cap, from outside the slab.
    const double c = p[i].y > 0.0 ? h : -h;
    if ((p[i].y - c) * c > 0.0 && w.y * c < 0.0 && inner > 0.0) {
      t = (c - p[i].y) / w.y;
      const double x = p[i].x + w.x * t, z = p[i].z + w.z * t;
      if (x * x + z * z < inner * inner) keep(t, kVertexCap, i, c, 0.0);
    }
  }

  for (int j = 0; j < 3; ++j) {
    const Vec3& ej = e[j];
    const double len = ej.Length();
    const double exz_sq = ej.x * ej.x + ej.z * ej.z;
    // Edge against the side: the distance of the edge's line from the axis,
    // |(p_j + w t) . m| / |m| with m = e x Y, reaches r (from the side it
    // starts on); the closest points then within the edge and the caps.
    if (exz_sq > sine * sine * len * len) {
      const double exz = std::sqrt(exz_sq);
      const double alpha = ej.x * p[j].z - ej.z * p[j].x;  // p_j . m, m = (-e_z, 0, e_x)
      const double beta = ej.x * w.z - ej.z * w.x;
      const double t = ((alpha >= 0.0 ? r : -r) * exz - alpha) / beta;
      if (t > 0.0 && t < best_t) {
        const Vec3 a = p[j] + w * t;
        const double s = -(a.x * ej.x + a.z * ej.z) / exz_sq;
        if (s * len > distinct && (1.0 - s) * len > distinct &&
            std::fabs(a.y + ej.y * s) < h_in) {
          keep(t, kEdgeSide, j, 0.0, s);
        }
      }
    }
    // Edge against a rim: the edge's line meets the cap plane at
    // q(t) = q0 + q1 t (xz), which reaches the rim |q| = r entering; a touch
    // (not a crossing into the solid) when the edge leans away from the
    // cylinder on both faces of the rim: (q . e) and (c e_y) of opposite signs.
    if (std::fabs(ej.y) > sine * len) {
      for (const double c : {h, -h}) {
        const double f = (c - p[j].y) / ej.y;
        const double q0x = p[j].x + ej.x * f, q0z = p[j].z + ej.z * f;
        const double g = w.y / ej.y;
        const double q1x = w.x - ej.x * g, q1z = w.z - ej.z * g;
        double t;
        if (!EnteringRoot(q1x * q1x + q1z * q1z, q0x * q1x + q0z * q1z,
                          q0x * q0x + q0z * q0z - r * r, &t) ||
            !(t > 0.0 && t < best_t)) {
          continue;
        }
        const double s = f - g * t;  // along the edge
        if (!(s * len > distinct && (1.0 - s) * len > distinct)) continue;
        const double qx = q0x + q1x * t, qz = q0z + q1z * t;
        if ((qx * ej.x + qz * ej.z) * (c * ej.y) < 0.0) keep(t, kEdgeRim, j, c, s);
      }
    }
  }

  // The face against the cylinder's support point along its normal.
  Vec3 face_n = cyl.rotation.TransposeMul(face);
  if (Dot(p[0], face_n) > 0.0) face_n = face_n * -1.0;  // towards the cylinder's centre
  double face_l[3] = {0, 0, 0};
  {
    const Vec3& n = face_n;
    const double nxz = std::sqrt(n.x * n.x + n.z * n.z);
    const double closing = Dot(w, n);
    if (nxz > sine && std::fabs(n.y) > sine && closing > 0.0) {
      const Vec3 x = internal::CylinderSupport(r, h, n * -1.0);
      const double t = Dot(x - p[0], n) / closing;
      if (t > 0.0 && t < best_t) {
        // Its weights in the triangle at t, each at least `distinct` of
        // height from its edge: vertex i's weight times twice the area over
        // the length of the opposite edge (i + 1).
        const Vec3 q = x - w * t - p[0];
        const Vec3 nn = Cross(e[0], e[2] * -1.0);
        const double nn2 = nn.LengthSq();
        face_l[1] = Dot(Cross(q, e[2] * -1.0), nn) / nn2;
        face_l[2] = Dot(Cross(e[0], q), nn) / nn2;
        face_l[0] = 1.0 - face_l[1] - face_l[2];
        const double area2 = std::sqrt(nn2);
        if (face_l[0] * area2 > distinct * e[1].Length() &&
            face_l[1] * area2 > distinct * e[2].Length() &&
            face_l[2] * area2 > distinct * e[0].Length()) {
          keep(t, kFace, 0, 0.0, 0.0);
        }
      }
    }
  }
  if (pair == kNone) return false;

  // The contact at best_t: point X (cylinder frame), normal n (triangle
  // towards cylinder), the triangle's feature (bit i: vertex i) and weights.
  const double t_star = best_t;
  Vec3 x, n;
  unsigned mask = 0;
  double l[3] = {0, 0, 0};
  const int j = feature, k = (feature + 1) % 3;
  switch (pair) {
    case kVertexSide:
    case kVertexCap: {
      x = p[j] + w * t_star;
      if (pair == kVertexSide) {
        const double rx = std::sqrt(x.x * x.x + x.z * x.z);
        n = Vec3{-x.x / rx, 0.0, -x.z / rx};
      } else {
        x.y = cap;
        n = Vec3{0.0, cap > 0.0 ? -1.0 : 1.0, 0.0};
      }
      mask = 1u << j;
      l[j] = 1.0;
      break;
    }
    case kEdgeSide:
    case kEdgeRim: {
      x = p[j] + w * t_star + e[j] * along;
      const double rx = std::sqrt(x.x * x.x + x.z * x.z);
      const Vec3 u{x.x / rx, 0.0, x.z / rx};
      if (pair == kEdgeSide) {
        n = u * -1.0;
      } else {
        x.y = cap;
        // Across the edge and the rim's tangent, into the cylinder; strictly
        // inside the rim's cone of normals (u, sign(cap) Y), else the touch
        // is nearly of the side or the cap: an ill-conditioned normal.
        n = Cross(e[j], Vec3{u.z, 0.0, -u.x});
        n = n / n.Length();
        if (Dot(n, x) > 0.0) n = n * -1.0;
        if (!(-Dot(n, u) > sine) || !(-n.y * (cap > 0.0 ? 1.0 : -1.0) > sine)) return false;
      }
      mask = (1u << j) | (1u << k);
      l[j] = 1.0 - along;
      l[k] = along;
      break;
    }
    case kFace: {
      n = face_n;
      x = internal::CylinderSupport(r, h, n * -1.0);
      mask = 7u;
      for (int i = 0; i < 3; ++i) l[i] = face_l[i];
      break;
    }
    case kNone: return false;
  }

  // The proof: closing, the triangle's other vertices strictly behind the
  // plane through X (its feature's on it), the cylinder's support along -n
  // not behind it, each up to the rounding of the touch.
  const double s = Dot(w, n);  // closing speed
  if (!(s > sine * speed)) return false;
  {
    const Vec3 at = w * t_star;
    const double tol = 1e-12 * (size + at.Abs().MaxComponent());
    for (int i = 0; i < 3; ++i) {
      const double d = Dot(p[i] + at - x, n);
      if ((mask >> i) & 1u) {
        if (!(std::fabs(d) <= tol)) return false;
      } else if (!(d < -distinct)) {
        return false;
      }
    }
    const Vec3 sup = internal::CylinderSupport(r, h, n * -1.0);
    if (!(Dot(sup - x, n) >= -tol)) return false;
  }
  // Apart at t = 0 by more than the loosest contact the cast declares
  // (kSweepStallGap, when stalled in rounding): otherwise the cast may
  // report a start inside (t = 0), which the caller answers differently.
  if (!(t_star * s > 2.0 * kSweepStallGap)) return false;
  const double t = t_star - 0.5 * kSweepGap / s;
  *out = CastResult{};
  if (t > t_max) return true;  // a proven miss
  const Vec3 nrm = cyl.rotation * n;
  if (pair != kFace) {
    const bool inactive = !triangle_convex_detail::OnActiveEdge(l, active);
    // On an inactive edge or vertex the cast reports the face normal unless
    // that points along the motion; then its own direction where its
    // weights come out on the edge or vertex, but the face normal turned
    // against the motion where they round into the face: its rounding
    // decides, so the cast does. So it does for a normal in the face's
    // plane, whose side of the face is rounding, and for a motion in it.
    const double side = Dot(face, nrm);
    if (inactive && (!(std::fabs(side) > 1e-6) ||
                     !(Dot(face, v) * (side > 0.0 ? 1.0 : -1.0) < -1e-9 * speed))) {
      *out = CastResult{};
      return false;
    }
  }
  out->state = CastState::kHit;
  out->fraction = t;
  out->point = tri[0] * l[0] + tri[1] * l[1] + tri[2] * l[2];
  out->normal = triangle_convex_detail::CastNormal(face, nrm, l, active, v);
  return true;
}

}  // namespace hitbox
