#include "geometry/gjk.h"

#include <algorithm>
#include <cmath>

#include "geometry/simplex.h"

namespace hitbox::internal {

double ConvexCore::CoreBoundingRadius() const {
  switch (kind) {
    case Kind::kPoint: return 0.0;
    case Kind::kSegment: return half_height;
    case Kind::kBox: return half_extents.Length();
    case Kind::kCylinder: return std::sqrt(radius * radius + half_height * half_height);
    case Kind::kHull:
      return HullBoundingRadius();
  }
  return 0.0;
}

namespace {

template <bool kHull>
GjkResult GjkDistanceImpl(const ConvexCore& a, const ConvexCore& b, const Pose& b_in_a,
                          const GjkSettings& settings) {
  const PlacedCore pb(b, b_in_a);
  GjkResult out;
  out.scale = a.CoreBoundingRadius() + b.CoreBoundingRadius() + b_in_a.position.Length() +
              a.margin + b.margin;
  const double abs_tol = kGjkAbsoluteTolerance * out.scale;
  const double margins = a.margin + b.margin;
  const double touch = margins + abs_tol;  // overlap iff core distance <= touch

  // Simplex: support points w = a - b of the Minkowski difference and their
  // parents on each core.
  // Kept directly in the result (no extra zeroing or copying).
  Vec3* const sw = out.simplex_w;
  Vec3* const sa = out.simplex_a;
  Vec3* const sb = out.simplex_b;
  int n = 0;

  // Start from the centres: both cores contain their local origin, so
  // 0 - position is a point of the difference.
  Vec3 v = -b_in_a.position;
  Vec3 core_a{};
  Vec3 core_b = b_in_a.position;
  if constexpr (kHull) {
    // A hull need not contain its local origin: start from interior points.
    core_a = a.InteriorPoint();
    core_b = b_in_a.position + pb.rotation * b.InteriorPoint();
    v = core_a - core_b;
  }
  double vv = v.LengthSq();
  bool cores_overlap = vv <= abs_tol * abs_tol;
  bool converged = cores_overlap;
  bool decided = false;
  bool v_from_simplex = false;  // the start point is not a simplex point
  bool stalled = false;         // stopped by rounding, not by the bounds
  // v's points on each core, core_a and core_b, are the weights `lam` of
  // v's simplex applied to its parents: summed only when needed (a restart,
  // a step without progress, the end), not after every step.
  double lam[4];
  bool core_pending = false;  // core_a / core_b not yet summed for v
  auto SumCorePoints = [&](int count) {
    Vec3 na{}, nb{};
    for (int k = 0; k < count; ++k) {
      na += sa[k] * lam[k];
      nb += sb[k] * lam[k];
    }
    core_a = na;
    core_b = nb;
    core_pending = false;
  };
  // Restarts replace the simplex by the single point v (a point of A - B
  // with known parents), which drops the sliver that stalled the descent.
  constexpr int kMaxRestarts = 4;
  int restarts = 0;
  auto Restart = [&]() {
    if (core_pending) SumCorePoints(n);
    sw[0] = v;
    sa[0] = core_a;
    sb[0] = core_b;
    n = 1;
    ++restarts;
  };
  double last_gap = 0.0;        // |v|^2 - v.w of the last support point
  int it = 0;
  while (!converged && !decided && it < settings.max_iterations) {
    ++it;
    const Vec3 pa = a.template CoreSupport<kHull>(-v);
    const Vec3 pbs = pb.template CoreSupport<kHull>(v);
    const Vec3 w = pa - pbs;
    const double vw = Dot(v, w);
    const double vlen = std::sqrt(vv);
    if (settings.decide_only) {
      // Lower bound vw/|v| above the touching threshold: separated for sure.
      if (vw > touch * vlen) {
        decided = true;
        break;
      }
      // Upper bound |v| below it: overlapping for sure.
      if (vlen <= touch) {
        decided = true;
        cores_overlap = vlen <= abs_tol;
        break;
      }
    }
    // Converged: gap between upper bound |v| and lower bound vw/|v| is small.
    if (vv - vw <= std::max(kGjkRelativeTolerance * vv, abs_tol * vlen)) {
      converged = true;
      break;
    }
    last_gap = vv - vw;
    bool duplicate = false;
    for (int m = 0; m < n; ++m) duplicate |= (sw[m] == w);
    if (duplicate) {
      if (restarts < kMaxRestarts) {
        Restart();
        continue;
      }
      converged = true;
      stalled = true;
      break;
    }
    sw[n] = w;
    sa[n] = pa;
    sb[n] = pbs;
    ++n;
    // Closest point of the simplex (simplex.h); keep only the vertices of
    // its support set.
    const SimplexClosest r = ClosestToOrigin<ClosestPointForm::kProjection>(sw, n);
    const bool inside = r.inside;
    // The simplex only ever shrinks the distance once v comes from it.
    const bool progress = r.vv < vv || !v_from_simplex;
    v_from_simplex = true;
    // Without progress v stands: its core points come from its simplex
    // (all but the new point) before that is reduced.
    if (!(progress || inside) && core_pending) SumCorePoints(n - 1);
    CopyWeights(r, lam);
    for (int k = 0; k < r.count; ++k) {
      const int m = r.index[k];
      if (m != k) {
        sw[k] = sw[m];
        sa[k] = sa[m];
        sb[k] = sb[m];
      }
    }
    n = r.count;
    if (progress || inside) {
      v = r.v;
      vv = r.vv;
      core_pending = true;
    }
    if (inside || vv <= abs_tol * abs_tol) {
      cores_overlap = true;
      converged = true;
      break;
    }
    if (!progress) {
      // Rounding stalled the descent (a sliver simplex): restart from the
      // best point alone a few times, then accept v as good as it gets.
      if (restarts < kMaxRestarts) {
        Restart();
        continue;
      }
      converged = true;
      stalled = true;
      break;
    }
  }

  // A stall with the bounds still apart and v within kGjkUncertainTolerance
  // of the origin: rounding cannot tell touching from a shallow overlap, so
  // it counts as touching (cores overlap, depth ~0).
  const double uncertain = kGjkUncertainTolerance * out.scale;
  if (stalled && !cores_overlap && vv - last_gap <= touch * std::sqrt(vv) &&
      vv <= uncertain * uncertain) {
    cores_overlap = true;
  }
  if (core_pending) SumCorePoints(n);
  out.iterations = it;
  out.simplex_size = n;
  out.core_point_a = core_a;
  out.core_point_b = core_b;
  out.cores_overlap = cores_overlap;
  if (cores_overlap) {
    out.state = GjkState::kOverlapping;
    out.core_distance = 0.0;
    out.distance = 0.0;
    out.point_a = core_a;
    out.point_b = core_b;
    return out;
  }
  const double len = std::sqrt(vv);
  out.core_distance = len;
  out.normal = v * (-1.0 / len);
  out.point_a = core_a + out.normal * a.margin;
  out.point_b = core_b - out.normal * b.margin;
  if (len <= touch) {
    out.state = GjkState::kOverlapping;
    out.distance = 0.0;
  } else {
    out.state = (converged || decided) ? GjkState::kSeparated : GjkState::kFailed;
    out.distance = len - margins;
  }
  return out;
}

}  // namespace

GjkResult GjkDistance(const ConvexCore& a, const ConvexCore& b, const Pose& b_in_a,
                      const GjkSettings& settings) {
  if (a.is_hull() || b.is_hull()) return GjkDistanceImpl<true>(a, b, b_in_a, settings);
  return GjkDistanceImpl<false>(a, b, b_in_a, settings);
}

}  // namespace hitbox::internal
