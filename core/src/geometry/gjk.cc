#include "geometry/gjk.h"

#include <algorithm>
#include <cmath>

namespace hitbox::internal {
namespace {

/// Closest point of a sub-simplex to the origin: barycentric weights per
/// simplex slot (0 for unused slots), the point itself and its squared length.
struct SubResult {
  double lambda[4] = {0.0, 0.0, 0.0, 0.0};
  Vec3 v;
  double vv = std::numeric_limits<double>::infinity();
};

// Signed-volumes subalgorithm, Montanari et al. 2017, section 3 (S1D, S2D,
// S3D). Each routine finds the closest point to the origin of the simplex
// spanned by the given slots of `w` and the smallest support set holding it.

SubResult S1D(const Vec3* w, int i, int j) {
  SubResult r;
  const Vec3 t = w[j] - w[i];
  const double tt = t.LengthSq();
  const double u = tt > 0.0 ? -Dot(w[i], t) / tt : 0.0;
  if (u <= 0.0) {
    r.lambda[i] = 1.0;
    r.v = w[i];
  } else if (u >= 1.0) {
    r.lambda[j] = 1.0;
    r.v = w[j];
  } else {
    r.lambda[i] = 1.0 - u;
    r.lambda[j] = u;
    r.v = w[i] * (1.0 - u) + w[j] * u;
  }
  r.vv = r.v.LengthSq();
  return r;
}

SubResult S2D(const Vec3* w, int i, int j, int k) {
  const Vec3 e1 = w[j] - w[i];
  const Vec3 e2 = w[k] - w[i];
  const Vec3 n = Cross(e1, e2);
  const double nn = n.LengthSq();
  // A sliver triangle: fall back to its edges.
  if (nn <= 1e-26 * e1.LengthSq() * e2.LengthSq() || nn == 0.0) {
    SubResult best = S1D(w, i, j);
    const SubResult r2 = S1D(w, j, k);
    if (r2.vv < best.vv) best = r2;
    const SubResult r3 = S1D(w, i, k);
    if (r3.vv < best.vv) best = r3;
    return best;
  }
  // Projection of the origin onto the triangle's plane.
  const Vec3 p0 = n * (Dot(w[i], n) / nn);
  // Signed areas in the coordinate plane where the triangle's projection is largest.
  const Vec3 an = n.Abs();
  const int ax = (an.x >= an.y && an.x >= an.z) ? 0 : (an.y >= an.z ? 1 : 2);
  const int ja = (ax + 1) % 3;
  const int ka = (ax + 2) % 3;
  auto area2 = [ja, ka](const Vec3& p, const Vec3& q, const Vec3& s) {
    return (q[ja] - p[ja]) * (s[ka] - p[ka]) - (q[ka] - p[ka]) * (s[ja] - p[ja]);
  };
  const double mu = n[ax];
  const double c[3] = {area2(p0, w[j], w[k]), area2(w[i], p0, w[k]), area2(w[i], w[j], p0)};
  if (c[0] * mu > 0.0 && c[1] * mu > 0.0 && c[2] * mu > 0.0) {
    SubResult r;
    r.lambda[i] = c[0] / mu;
    r.lambda[j] = c[1] / mu;
    r.lambda[k] = c[2] / mu;
    // For a well-shaped triangle, the projection itself rather than
    // sum(lambda * w): its direction is the triangle's normal, accurate even
    // when |v| is far below |w| (the weighted sum's direction is then
    // rounding noise). For a thin one the normal is the noisy part.
    const bool well_shaped = nn > 1e-8 * e1.LengthSq() * e2.LengthSq();
    r.v = well_shaped ? p0 : w[i] * r.lambda[i] + w[j] * r.lambda[j] + w[k] * r.lambda[k];
    r.vv = r.v.LengthSq();
    return r;
  }
  SubResult best;
  const int idx[3] = {i, j, k};
  for (int m = 0; m < 3; ++m) {
    if (c[m] * mu > 0.0) continue;
    const SubResult r = S1D(w, idx[(m + 1) % 3], idx[(m + 2) % 3]);
    if (r.vv < best.vv) best = r;
  }
  return best;
}

/// Returns the closest point of the tetrahedron; `inside` is set when the
/// origin lies strictly inside it.
SubResult S3D(const Vec3* w, bool* inside) {
  *inside = false;
  const Vec3 e1 = w[1] - w[0];
  const Vec3 e2 = w[2] - w[0];
  const Vec3 e3 = w[3] - w[0];
  const double vol = Dot(e1, Cross(e2, e3));
  const double c[4] = {Dot(w[1], Cross(w[2], w[3])), -Dot(w[0], Cross(e2, e3)),
                       -Dot(e1, Cross(w[0], e3)), -Dot(e1, Cross(e2, w[0]))};
  const double size = std::sqrt(e1.LengthSq() * e2.LengthSq() * e3.LengthSq());
  const bool flat = std::fabs(vol) <= 1e-13 * size || vol == 0.0;
  if (!flat && c[0] * vol > 0.0 && c[1] * vol > 0.0 && c[2] * vol > 0.0 && c[3] * vol > 0.0) {
    SubResult r;
    for (int m = 0; m < 4; ++m) r.lambda[m] = c[m] / vol;
    r.v = Vec3{};
    r.vv = 0.0;
    *inside = true;
    return r;
  }
  SubResult best;
  for (int m = 0; m < 4; ++m) {
    if (!flat && c[m] * vol > 0.0) continue;
    const SubResult r = S2D(w, (m + 1) % 4, (m + 2) % 4, (m + 3) % 4);
    if (r.vv < best.vv) best = r;
  }
  return best;
}

}  // namespace

ConvexCore ConvexCore::FromShape(const Shape& shape) {
  ConvexCore c;
  switch (shape.kind()) {
    case ShapeKind::kSphere:
      c.kind = Kind::kPoint;
      c.margin = shape.radius();
      break;
    case ShapeKind::kBox:
      c.kind = Kind::kBox;
      c.half_extents = shape.half_extents();
      break;
    case ShapeKind::kCapsule:
      c.kind = Kind::kSegment;
      c.half_height = shape.half_height();
      c.margin = shape.radius();
      break;
    case ShapeKind::kCylinder:
      c.kind = Kind::kCylinder;
      c.half_height = shape.half_height();
      c.radius = shape.radius();
      break;
    case ShapeKind::kConvexHull:
      c.kind = Kind::kHull;
      c.hull = shape.hull();
      break;
    case ShapeKind::kMesh:
    case ShapeKind::kHeightfield:
    case ShapeKind::kCompound:
      // Surfaces and compounds never reach GJK as a whole (the pair table
      // sends them to their triangles or children); a point keeps this total.
      c.kind = Kind::kPoint;
      break;
  }
  return c;
}

Vec3 ConvexCore::HullSupport(const Vec3& dir) const { return hull->Support(dir); }

double ConvexCore::CoreBoundingRadius() const {
  switch (kind) {
    case Kind::kPoint: return 0.0;
    case Kind::kSegment: return half_height;
    case Kind::kBox: return half_extents.Length();
    case Kind::kCylinder: return std::sqrt(radius * radius + half_height * half_height);
    case Kind::kHull: return hull->bounding_radius();
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
  // Restarts replace the simplex by the single point v (a point of A - B
  // with known parents), which drops the sliver that stalled the descent.
  constexpr int kMaxRestarts = 4;
  int restarts = 0;
  auto Restart = [&]() {
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
    SubResult r;
    bool inside = false;
    switch (n) {
      case 1:
        r.lambda[0] = 1.0;
        r.v = sw[0];
        r.vv = r.v.LengthSq();
        break;
      case 2: r = S1D(sw, 0, 1); break;
      case 3: r = S2D(sw, 0, 1, 2); break;
      default: r = S3D(sw, &inside); break;
    }
    // Keep only the vertices of the support set, and rebuild the points.
    int kept = 0;
    Vec3 na{}, nb{};
    for (int m = 0; m < n; ++m) {
      if (r.lambda[m] <= 0.0) continue;
      na += sa[m] * r.lambda[m];
      nb += sb[m] * r.lambda[m];
      sw[kept] = sw[m];
      sa[kept] = sa[m];
      sb[kept] = sb[m];
      ++kept;
    }
    n = kept;
    // The simplex only ever shrinks the distance once v comes from it.
    const bool progress = r.vv < vv || !v_from_simplex;
    v_from_simplex = true;
    if (progress || inside) {
      v = r.v;
      vv = r.vv;
      core_a = na;
      core_b = nb;
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

GjkResult GjkDistance(const Shape& a, const Pose& pose_a, const Shape& b, const Pose& pose_b,
                      const GjkSettings& settings) {
  GjkResult r = GjkDistance(ConvexCore::FromShape(a), ConvexCore::FromShape(b),
                            pose_a.RelativeTo(pose_b), settings);
  r.point_a = pose_a.TransformPoint(r.point_a);
  r.point_b = pose_a.TransformPoint(r.point_b);
  r.core_point_a = pose_a.TransformPoint(r.core_point_a);
  r.core_point_b = pose_a.TransformPoint(r.core_point_b);
  r.normal = pose_a.TransformDirection(r.normal);
  return r;
}

}  // namespace hitbox::internal
