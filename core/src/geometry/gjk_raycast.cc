#include "geometry/gjk_raycast.h"

#include <algorithm>
#include <cmath>

#include "geometry/ray_primitives.h"
#include "geometry/simplex.h"

namespace hitbox::internal {
namespace {

// A simplex vertex: a point c = pb - pa of C = B - A, with its parent pb on B
// (for the contact point).
struct Vertex {
  Vec3 c;
  Vec3 pb;  // support point of B's core (B frame)
};

template <bool kHull>
GjkRaycastResult GjkRaycastImpl(const ConvexCore& a, const Pose& a_in_b, const Vec3& v_in,
                                const ConvexCore& b, double lambda_start,
                                const Vec3& normal_start, double tolerance, int max_iterations,
                                double lambda_max) {
  const Vec3 v = v_in;
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
  Vec3 y[4];  // simplex points relative to x (y[i] = simplex[i].c - x, i < n)
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
    bool x_moved = false;
    if (xn > plane) {
      const double vn = Dot(nd, v);
      if (vn >= 0.0) return out;  // moving away from (or along) the plane: miss
      const double next = plane / vn;  // lambda with lambda * (nd . v) = plane
      if (!(next <= lambda_max)) return out;  // later than wanted (or never)
      if (next > lambda) {
        lambda = next;
        x = v * lambda;
        x_moved = true;
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
    if (!duplicate) {
      simplex[n] = s;
      y[n] = s.c - x;
      ++n;
    }
    // The older points' offsets stand unless x moved.
    if (x_moved) {
      for (int i = 0; i < n; ++i) y[i] = simplex[i].c - x;
    }
    // Closest point of the simplex to x (simplex.h).
    const SimplexClosest r = ClosestToOrigin(y, n);
    if (r.inside) {
      // x lies inside C: in contact at lambda. x's barycentric weights in
      // the tetrahedron give the contact point (its B parents), as for a
      // closest point on a face.
      converged = true;
      dist = 0.0;
      for (int i = 0; i < 4; ++i) w[i] = r.weight[i];
      break;
    }
    // Keep the vertices of the closest point's support set, in place.
    CopyWeights(r, w);
    for (int k = 0; k < r.count; ++k) {
      if (r.index[k] != k) {
        simplex[k] = simplex[r.index[k]];
        y[k] = y[r.index[k]];
      }
    }
    n = r.count;
    const double new_dist = std::sqrt(r.vv);
    const bool stalled = !advanced_now && dist_from_simplex && !(new_dist < dist);
    dist_from_simplex = true;
    dir = -r.v;
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
