#include "geometry/gjk_raycast.h"

#include <algorithm>
#include <cmath>

#include "geometry/ray_primitives.h"

namespace hitbox::internal {
namespace {

// A simplex vertex: a point c = pb - pa of C = B - A, with its parent pb on B
// (for the contact point).
struct Vertex {
  Vec3 c;
  Vec3 pb;  // support point of B's core (B frame)
};

// Closest point to the origin of the simplex y[0..n) (y_i = c_i - x), as
// barycentric weights; the simplex is reduced to the vertices with a positive
// weight. Closest point on a triangle: Ericson, RTCD 5.1.5; on a tetrahedron:
// RTCD 5.1.6 (faces the origin lies outside of). Returns true when the
// origin lies inside the tetrahedron (x inside C).
bool ClosestOnSegment(const Vec3& a, const Vec3& b, double w[2]) {
  const Vec3 ab = b - a;
  const double den = ab.LengthSq();
  const double t = den > 0.0 ? std::clamp(-Dot(a, ab) / den, 0.0, 1.0) : 0.0;
  w[0] = 1.0 - t;
  w[1] = t;
  return false;
}

void ClosestOnTriangle(const Vec3& a, const Vec3& b, const Vec3& c, double w[3]) {
  const Vec3 ab = b - a, ac = c - a, ap = -a;
  const double d1 = Dot(ab, ap), d2 = Dot(ac, ap);
  w[0] = w[1] = w[2] = 0.0;
  if (d1 <= 0.0 && d2 <= 0.0) {
    w[0] = 1.0;
    return;
  }
  const Vec3 bp = -b;
  const double d3 = Dot(ab, bp), d4 = Dot(ac, bp);
  if (d3 >= 0.0 && d4 <= d3) {
    w[1] = 1.0;
    return;
  }
  const double vc = d1 * d4 - d3 * d2;
  if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0) {
    const double t = d1 / (d1 - d3);
    w[0] = 1.0 - t;
    w[1] = t;
    return;
  }
  const Vec3 cp = -c;
  const double d5 = Dot(ab, cp), d6 = Dot(ac, cp);
  if (d6 >= 0.0 && d5 <= d6) {
    w[2] = 1.0;
    return;
  }
  const double vb = d5 * d2 - d1 * d6;
  if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0) {
    const double t = d2 / (d2 - d6);
    w[0] = 1.0 - t;
    w[2] = t;
    return;
  }
  const double va = d3 * d6 - d5 * d4;
  if (va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0) {
    const double t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    w[1] = 1.0 - t;
    w[2] = t;
    return;
  }
  const double den = va + vb + vc;
  if (!(den > 0.0)) {  // degenerate (collinear): best of the edges
    double best = std::numeric_limits<double>::infinity();
    const Vec3* p[3] = {&a, &b, &c};
    for (int e = 0; e < 3; ++e) {
      double we[2];
      const int i = e, j = (e + 1) % 3;
      ClosestOnSegment(*p[i], *p[j], we);
      const double d = (*p[i] * we[0] + *p[j] * we[1]).LengthSq();
      if (d < best) {
        best = d;
        w[0] = w[1] = w[2] = 0.0;
        w[i] = we[0];
        w[j] = we[1];
      }
    }
    return;
  }
  w[1] = vb / den;
  w[2] = vc / den;
  w[0] = 1.0 - w[1] - w[2];
}

// True when the origin and `d` lie strictly on opposite sides of plane abc.
bool OriginOutsidePlane(const Vec3& a, const Vec3& b, const Vec3& c, const Vec3& d) {
  const Vec3 n = Cross(b - a, c - a);
  const double sp = Dot(-a, n);
  const double sd = Dot(d - a, n);
  return sp * sd < 0.0;
}

bool ClosestOnTetrahedron(const Vec3* y, double w[4]) {
  static constexpr int kFaces[4][4] = {{1, 3, 2, 0}, {0, 2, 3, 1}, {0, 3, 1, 2}, {0, 1, 2, 3}};
  // A flat tetrahedron (e.g. four support points on one box face) holds
  // nothing: take the best of its faces.
  const Vec3 e1 = y[1] - y[0], e2 = y[2] - y[0], e3 = y[3] - y[0];
  const double vol = Dot(e1, Cross(e2, e3));
  const bool flat =
      std::fabs(vol) <= 1e-12 * std::sqrt(e1.LengthSq() * e2.LengthSq() * e3.LengthSq());
  bool inside = true;
  double best = std::numeric_limits<double>::infinity();
  double wt[4] = {0, 0, 0, 0};
  // (All four faces: skipping the old one, as exact GJK allows, misjudges
  // "inside" when rounding on a sliver triangle left its closest point off.)
  for (int fi = 0; fi < 4; ++fi) {
    const int* f = kFaces[fi];
    if (!flat && !OriginOutsidePlane(y[f[0]], y[f[1]], y[f[2]], y[f[3]])) continue;
    inside = false;
    double wf[3];
    ClosestOnTriangle(y[f[0]], y[f[1]], y[f[2]], wf);
    const double d = (y[f[0]] * wf[0] + y[f[1]] * wf[1] + y[f[2]] * wf[2]).LengthSq();
    if (d < best) {
      best = d;
      wt[0] = wt[1] = wt[2] = wt[3] = 0.0;
      wt[f[0]] = wf[0];
      wt[f[1]] = wf[1];
      wt[f[2]] = wf[2];
    }
  }
  if (inside) return true;
  for (int i = 0; i < 4; ++i) w[i] = wt[i];
  return false;
}

// Barycentric weights of the origin in the non-flat tetrahedron y[0..4)
// that holds it (signed volumes, Ericson RTCD 3.4); rounding is clamped away
// so the weights stay a convex combination.
void BarycentricOfOrigin(const Vec3* y, double w[4]) {
  auto volume = [](const Vec3& a, const Vec3& b, const Vec3& c, const Vec3& d) {
    return Dot(b - a, Cross(c - a, d - a));
  };
  const Vec3 o;
  const double total = volume(y[0], y[1], y[2], y[3]);
  w[0] = volume(o, y[1], y[2], y[3]) / total;
  w[1] = volume(y[0], o, y[2], y[3]) / total;
  w[2] = volume(y[0], y[1], o, y[3]) / total;
  w[3] = volume(y[0], y[1], y[2], o) / total;
  double sum = 0.0;
  for (int i = 0; i < 4; ++i) {
    w[i] = std::max(w[i], 0.0);
    sum += w[i];
  }
  for (int i = 0; i < 4; ++i) w[i] = sum > 0.0 ? w[i] / sum : 0.25;
}

}  // namespace

namespace {

template <bool kHull>
GjkRaycastResult GjkRaycastImpl(const ConvexCore& a, const Pose& a_in_b, const Vec3& v,
                                const ConvexCore& b, double lambda_start,
                                const Vec3& normal_start, double tolerance, int max_iterations,
                                double lambda_max) {
  GjkRaycastResult out;
  const PlacedCore placed_a(a, a_in_b);  // A's core in B's frame at its start pose
  const double margin = a.margin + b.margin;
  const double tol = std::max(tolerance, 0.0);
  double lambda = lambda_start;
  bool advanced = lambda_start > 0.0;
  Vec3 x = v * lambda;
  Vertex simplex[4];
  double w[4] = {1, 0, 0, 0};
  int n = 0;
  // Initial direction: from C's interior point (B's origin - A's origin) to x.
  // With a known lower bound, its contact normal is a better first guess.
  // (A hull need not contain its local origin: its vertex centroid instead.)
  Vec3 c_interior = -a_in_b.position;
  if constexpr (kHull) c_interior = b.InteriorPoint() - placed_a.position - placed_a.rotation * a.InteriorPoint();
  Vec3 dir = advanced ? normal_start * (x - c_interior).Length() : x - c_interior;
  Vec3 normal = advanced ? normal_start : UnitOr(dir, -v);
  int it = 0;
  bool converged = false;
  double dist = dir.Length();
  bool dist_from_simplex = false;  // the first direction is not a simplex point
  constexpr int kMaxRestarts = 1;
  // Stop when the remaining gap moves the fraction by at most
  // 1e-7 * clamp(|v|, 1, 4) (the closing speed along the normal converts gap
  // to fraction; the cap keeps any two answers within 1e-6), with the gap at
  // most 1e-6 m; a stall is accepted on the same terms. `tolerance` is the floor.
  const double frac_tol = 1e-7 * std::clamp(v.Length(), 1.0, 4.0);
  auto accept_gap = [&]() {
    const double closing = std::max(0.0, -Dot(normal, v));
    return std::max(tol, std::min(1e-6, frac_tol * closing));
  };
  auto stall_gap = accept_gap;
  int restarts = 0;
  Vec3 y[4];  // simplex points relative to x (set for the first n each iteration)
  while (it < max_iterations) {
    if (dist <= margin + accept_gap()) {
      converged = true;
      break;
    }
    ++it;
    const Vec3 nd = dir / dist;
    // Support of C = B - A along nd: farthest of B, nearest of A.
    Vertex s;
    s.pb = b.template CoreSupport<kHull>(nd);
    s.c = s.pb - placed_a.template CoreSupport<kHull>(-nd);
    // Plane through c + margin * nd with normal nd bounds C + R.
    const double plane = Dot(nd, s.c) + margin;
    const double xn = Dot(nd, x);
    bool advanced_now = false;
    if (xn > plane) {
      const double vn = Dot(nd, v);
      if (vn >= 0.0) return out;  // moving away from (or along) the plane: miss
      const double next = plane / vn;  // lambda with lambda * (nd . v) = plane
      if (!(next <= lambda_max)) return out;  // later than wanted (or never)
      if (next > lambda) {
        lambda = next;
        x = v * lambda;
      }
      advanced = advanced_now = true;
      normal = nd;
      // The simplex points stay points of C; only their offsets to x change.
    }
    // Skip a support point already in the simplex (no progress possible).
    bool duplicate = false;
    for (int i = 0; i < n; ++i) duplicate |= (simplex[i].c - s.c).LengthSq() <= 1e-30;
    if (duplicate && !advanced_now) {
      converged = true;  // GJK's usual stop: no new support point at this x
      break;
    }
    if (!duplicate) simplex[n++] = s;
    for (int i = 0; i < n; ++i) y[i] = simplex[i].c - x;
    bool inside = false;
    switch (n) {
      case 1: w[0] = 1.0; break;
      case 2: ClosestOnSegment(y[0], y[1], w); break;
      case 3: ClosestOnTriangle(y[0], y[1], y[2], w); break;
      default: inside = ClosestOnTetrahedron(y, w); break;
    }
    if (inside) {
      // x lies inside C: in contact at lambda. x's barycentric weights in
      // the tetrahedron give the contact point (its B parents), as for a
      // closest point on a face.
      converged = true;
      dist = 0.0;
      BarycentricOfOrigin(y, w);
      break;
    }
    // Keep the vertices with a positive weight, compacted in place (kept <= i).
    int kept = 0;
    Vec3 closest;
    for (int i = 0; i < n; ++i) {
      if (w[i] <= 0.0) continue;
      closest += y[i] * w[i];
      if (kept != i) {
        w[kept] = w[i];
        simplex[kept] = simplex[i];
      }
      ++kept;
    }
    n = kept;
    const double new_dist = closest.Length();
    const bool stalled = !advanced_now && dist_from_simplex && !(new_dist < dist);
    dist_from_simplex = true;
    dir = -closest;
    dist = new_dist;
    if (stalled) {
      // No progress: rounding on a sliver simplex (points bunched on a curved
      // rim). Restart the simplex from the current direction a few times.
      // A point on a curved boundary (x at the time of impact) makes GJK
      // converge linearly; once it stalls within stall_gap() it is a contact.
      if (dist > margin + stall_gap() && restarts < kMaxRestarts) {
        ++restarts;
        n = 0;
        dist_from_simplex = false;
        continue;
      }
      converged = true;
      break;
    }
  }
  if (dist > margin + (converged ? stall_gap() : accept_gap())) {
    // Out of iterations or stalled while apart: lambda is still a lower bound.
    out.state = GjkRaycastResult::State::kFailed;
    out.lambda = lambda;
    out.normal = normal;
    out.iterations = it;
    return out;
  }
  (void)converged;
  // Contact point on B: the simplex's B parents, pushed out by B's margin.
  Vec3 on_b;
  if (n == 0) {
    on_b = b.template CoreSupport<kHull>(-normal);
  } else {
    for (int i = 0; i < n; ++i) on_b += simplex[i].pb * w[i];
  }
  out.iterations = it;
  out.lambda = lambda;
  out.point = on_b + normal * b.margin;
  if (!advanced) {
    out.state = GjkRaycastResult::State::kStartedOverlapping;
    out.normal = dist > 0.0 ? dir / dist : UnitOr(-c_interior, -v);
    return out;
  }
  out.state = GjkRaycastResult::State::kHit;
  out.normal = normal;
  return out;
}

}  // namespace

GjkRaycastResult GjkRaycast(const ConvexCore& a, const Pose& a_in_b, const Vec3& v,
                            const ConvexCore& b, double lambda_start, const Vec3& normal_start,
                            double tolerance, int max_iterations, double lambda_max) {
  if (a.is_hull() || b.is_hull()) {
    return GjkRaycastImpl<true>(a, a_in_b, v, b, lambda_start, normal_start, tolerance,
                                max_iterations, lambda_max);
  }
  return GjkRaycastImpl<false>(a, a_in_b, v, b, lambda_start, normal_start, tolerance,
                               max_iterations, lambda_max);
}

}  // namespace hitbox::internal
