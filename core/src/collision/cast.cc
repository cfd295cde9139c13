// Cast(): sweeps of one shape against another in B's local frame, by the
// method the pair table (pair_dispatch.h) names: closed forms for spheres,
// capsule-capsule, box-box (15 axes with overlap intervals, Ericson RTCD
// 5.5.8) and capsule-box (Newton on the segment-box distance);
// CastConservative (cast_conservative.cc) for the rest.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "collision/cast_internal.h"
#include "geometry/closest_points.h"
#include "collision/pair_dispatch.h"
#include "collision/swept_axes.h"
#include "collision/triangles/start_near.h"
#include "hitbox/collision/collide.h"
#include "geometry/ray_primitives.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hitbox {
namespace internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

CastResult Started(const Vec3& fallback_normal, const Vec3& point) {
  CastResult r;
  r.state = CastState::kStartedOverlapping;
  r.fraction = 0.0;
  r.normal = fallback_normal;
  r.point = point;
  return r;
}

// Sphere A (radius ra, centre at a_in_b.position) against B grown by ra.
CastResult CastSphereRay(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b) {
  const double ra = a.radius();
  const Vec3 o = a_in_b.position;
  RayEntry e;
  switch (RayInflated(o, v, b, ra, &e)) {
    case RayOutcome::kMiss: return {};
    case RayOutcome::kInside: return Started(e.normal, o - e.normal * ra);
    case RayOutcome::kHit: break;
  }
  CastResult r;
  r.state = CastState::kHit;
  r.fraction = e.t;
  r.normal = e.normal;
  r.point = o + v * e.t - e.normal * ra;
  return r;
}

// Sphere B (radius rb at the origin): in A's frame B moves by -v against A grown by rb.
CastResult CastRayFromSphereB(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b) {
  const double rb = b.radius();
  const Vec3 o = a_in_b.InverseTransformPoint(Vec3{});
  const Vec3 d = a_in_b.InverseTransformDirection(-v);
  RayEntry e;
  const RayOutcome out = RayInflated(o, d, a, rb, &e);
  if (out == RayOutcome::kMiss) return {};
  const Vec3 n = -a_in_b.TransformDirection(e.normal);
  if (out == RayOutcome::kInside) return Started(n, n * rb);
  CastResult r;
  r.state = CastState::kHit;
  r.fraction = e.t;
  r.normal = n;
  r.point = n * rb;
  return r;
}

}  // namespace

CastResult CastCapsuleCapsule(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b) {
  const double ha = a.half_height(), hb = b.half_height();
  return CastSegmentSegment(a_in_b.TransformPoint({0, -ha, 0}), a_in_b.TransformPoint({0, ha, 0}),
                            a.radius(), v, {0, -hb, 0}, {0, hb, 0}, b.radius());
}

CastResult CastSegmentSegment(const Vec3& a0, const Vec3& a1, double ra, const Vec3& v,
                              const Vec3& b0, const Vec3& b1, double rb) {
  const double rsum = ra + rb;
  const ClosestPair start = ClosestSegmentSegment(a0, a1, b0, b1);
  if (start.distance_sq <= rsum * rsum) {
    const Vec3 n = UnitOr(start.p - start.q, AnyPerpendicular(UnitOr(a1 - a0, {0, 1, 0})));
    return Started(n, start.q + n * std::min(rb, std::sqrt(start.distance_sq) * 0.5));
  }
  double best = kInf;
  Vec3 normal;
  bool face_hit = false;
  // The face first: a hit there is where the ray crosses a boundary plane of
  // the convex sum from outside, hence its entry point.
  // Face of the parallelogram {b - a}: offset planes at distance rsum.
  const Vec3 ea = a1 - a0, eb = b1 - b0;
  const Vec3 cr = Cross(eb, ea);
  const double cr2 = cr.LengthSq();
  if (cr2 > 1e-20 * ea.LengthSq() * eb.LengthSq() && cr2 > 0.0) {
    const Vec3 nf = cr / std::sqrt(cr2);
    const Vec3 m0 = b0 - a0;  // a vertex of the parallelogram
    const double d0 = -Dot(m0, nf);  // signed offset of the ray origin (0) from its plane
    const double dv = Dot(v, nf);
    if (std::fabs(d0) > rsum && d0 * dv < 0.0) {
      const double tf = (std::fabs(d0) - rsum) / std::fabs(dv);
      if (tf <= 1.0) {
        // In-plane coordinates of the hit: x - m0 = u * eb - w * ea + h * nf.
        const Vec3 x = v * tf - m0;
        const Vec3 g2 = -ea;
        const double g11 = eb.LengthSq(), g12 = Dot(eb, g2), g22 = g2.LengthSq();
        const double r1 = Dot(x, eb), r2 = Dot(x, g2);
        const double det = g11 * g22 - g12 * g12;
        if (det > 0.0) {
          const double uu = (r1 * g22 - r2 * g12) / det;
          const double ww = (r2 * g11 - r1 * g12) / det;
          if (uu >= 0.0 && uu <= 1.0 && ww >= 0.0 && ww <= 1.0) {
            best = tf;
            normal = d0 > 0.0 ? nf : -nf;
            face_hit = true;
          }
        }
      }
    }
  }
  // Otherwise the entry is on one of the four edge capsules.
  RayEntry e;
  if (!face_hit) {
    // End points of A moving by v against capsule B grown by ra.
    for (const Vec3& p : {a0, a1}) {
      if (RaySegmentCapsule(p, v, b0, b1, rsum, &e) != RayOutcome::kMiss && e.t < best) {
        best = e.t;
        normal = e.normal;
      }
    }
    // End points of B moving by -v against capsule A grown by rb.
    for (const Vec3& p : {b0, b1}) {
      if (RaySegmentCapsule(p, -v, a0, a1, rsum, &e) != RayOutcome::kMiss && e.t < best) {
        best = e.t;
        normal = -e.normal;
      }
    }
  }
  if (!(best <= 1.0)) return {};
  CastResult r;
  r.state = CastState::kHit;
  r.fraction = best;
  r.normal = normal;
  r.point = ClosestSegmentSegment(a0 + v * best, a1 + v * best, b0, b1).q + normal * rb;
  return r;
}

namespace {

// Support feature of a box (centre c, unit axes ax[3], half-extents e) along
// `dir`: its centroid, and how many axes are free (0 vertex, 1 edge, 2 face).
int BoxFeature(const Vec3& c, const Vec3* ax, const Vec3& e, const Vec3& dir, Vec3* centroid,
               int* free_axis) {
  int free_count = 0;
  Vec3 p = c;
  for (int j = 0; j < 3; ++j) {
    const double k = Dot(ax[j], dir);
    if (std::fabs(k) < 1e-9) {
      ++free_count;
      *free_axis = j;
    } else {
      p += ax[j] * (k > 0.0 ? e[j] : -e[j]);
    }
  }
  *centroid = p;
  return free_count;
}

// Projection of `p` (B frame) into box A (centre c, axes ax, half-extents e).
Vec3 ClampToBox(const Vec3& p, const Vec3& c, const Vec3* ax, const Vec3& e) {
  Vec3 q = c;
  const Vec3 rel = p - c;
  for (int j = 0; j < 3; ++j) q += ax[j] * std::clamp(Dot(rel, ax[j]), -e[j], e[j]);
  return q;
}

}  // namespace

CastResult CastBoxBox(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b) {
  const Vec3 ea = a.half_extents(), eb = b.half_extents();
  const Mat33 rm = a_in_b.rotation.ToMatrix();
  const Vec3 ax[3] = {rm.Column(0), rm.Column(1), rm.Column(2)};
  const Vec3 bx[3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  const Vec3 c = a_in_b.position;
  // One separating axis L: A's projection moves from s0 at rate sv, overlap
  // with B's while |s| <= rA + rB; face axes keep ties (cleaner normals for
  // face and edge contacts).
  SweptAxes axes;
  auto axis = [&](const Vec3& l, bool is_face) {
    if (!is_face && l.LengthSq() < 1e-18) return;  // parallel edges: face axes cover it
    const double rsum = ea.x * std::fabs(Dot(l, ax[0])) + ea.y * std::fabs(Dot(l, ax[1])) +
                        ea.z * std::fabs(Dot(l, ax[2])) + eb.x * std::fabs(l.x) +
                        eb.y * std::fabs(l.y) + eb.z * std::fabs(l.z);
    axes.Add(l, 0, rsum, Dot(l, c), Dot(l, v), is_face ? 0.0 : 1e-12);
  };
  for (int i = 0; i < 3; ++i) {
    Vec3 l;
    l[i] = 1.0;
    axis(l, true);
  }
  for (int j = 0; j < 3; ++j) axis(ax[j], true);
  for (int i = 0; i < 3 && !axes.miss; ++i) {
    Vec3 bi;
    bi[i] = 1.0;
    for (int j = 0; j < 3; ++j) axis(Cross(bi, ax[j]), false);
  }
  if (!axes.separated) {
    // Overlapping at the start: fallback normal = the face axis of least overlap.
    Vec3 n{0, 1, 0};
    double best = kInf;
    for (int i = 0; i < 3; ++i) {
      Vec3 l;
      l[i] = 1.0;
      const double rsum = ea.x * std::fabs(ax[0][i]) + ea.y * std::fabs(ax[1][i]) +
                          ea.z * std::fabs(ax[2][i]) + eb[i];
      const double depth = rsum - std::fabs(c[i]);
      if (depth < best) {
        best = depth;
        n = l * (c[i] >= 0.0 ? 1.0 : -1.0);
      }
    }
    return Started(n, ClampToBox(c, Vec3{}, bx, eb));
  }
  if (axes.miss || axes.t_enter > axes.t_exit || axes.t_enter > 1.0) return {};
  const Vec3 normal = axes.normal / axes.normal.Length();
  CastResult r;
  r.state = CastState::kHit;
  r.fraction = std::max(axes.t_enter, 0.0);
  r.normal = normal;
  // Contact point: the more specific support feature, clamped into both boxes.
  const Vec3 ca = c + v * r.fraction;
  Vec3 fa, fb;
  int free_a = 0, free_b = 0;
  const int na = BoxFeature(ca, ax, ea, -normal, &fa, &free_a);
  const int nb = BoxFeature(Vec3{}, bx, eb, normal, &fb, &free_b);
  if (na == 1 && nb == 1) {
    // Edge against edge.
    const Vec3 da = ax[free_a] * ea[free_a], db = bx[free_b] * eb[free_b];
    const ClosestPair cp = ClosestSegmentSegment(fa - da, fa + da, fb - db, fb + db);
    r.point = (cp.p + cp.q) * 0.5;
  } else if (na <= nb) {
    const Vec3 p = ClampToBox(fa, Vec3{}, bx, eb);
    r.point = ClampToBox(p, ca, ax, ea);
  } else {
    const Vec3 p = ClampToBox(fb, ca, ax, ea);
    r.point = ClampToBox(p, Vec3{}, bx, eb);
  }
  return r;
}

namespace {

// Segment [p0, p1] grown by r, moving by v, against the box [-e, e] (all in
// the box frame). d(t) = dist(segment + t v, box) - r is convex in t and
// exact in closed form (ClosestSegmentBox, a piecewise quadratic), so Newton's
// step t += d / (-n . v), n the unit direction from the box to the segment, is
// monotone from the left (never passes the time of impact), quadratic at a
// transversal contact. `normal` is from the box towards the segment.
struct SegmentBoxSweep {
  CastState state = CastState::kMiss;
  double t = 1.0;
  Vec3 normal{0, 1, 0};
  Vec3 on_box;  // contact point on the box
};

SegmentBoxSweep SweepSegmentBox(const Vec3& p0, const Vec3& p1, double r, const Vec3& v,
                                const Vec3& e, double t_start, const CastSettings& settings) {
  SegmentBoxSweep out;
  const double tol = std::max(settings.linear_tolerance, 0.0);
  const double t_max = FractionBound(settings);
  double t = t_start;
  ClosestPair cp = ClosestSegmentBox(p0 + v * t, p1 + v * t, e);
  double dist = std::sqrt(cp.distance_sq);
  if (t == 0.0 && dist <= r + tol) {
    out.state = CastState::kStartedOverlapping;
    out.t = 0.0;
    out.normal = UnitOr(cp.p - cp.q, UnitOr((p0 + p1) * 0.5, -v));
    out.on_box = cp.q;
    return out;
  }
  for (int it = 0; it < std::max(settings.max_iterations, 1); ++it) {
    const Vec3 n = UnitOr(cp.p - cp.q, -v);
    const double closing = -Dot(n, v);
    const double gap = dist - r;
    if (gap <= tol) {
      // One last Newton step (still a lower bound) for a fraction at machine precision.
      if (gap > 0.0 && closing > 0.0) t = std::min(1.0, t + gap / closing);
      out.state = CastState::kHit;
      out.t = t;
      out.normal = n;
      out.on_box = cp.q;
      return out;
    }
    if (closing <= 0.0) return out;  // not approaching: d is non-decreasing from here
    const double next = t + gap / closing;
    // Past the bound: the time of impact (>= next) is later than asked for.
    if (!(next <= t_max)) return out;
    if (next <= t) return out;  // no progress in floating point while apart
    t = next;
    cp = ClosestSegmentBox(p0 + v * t, p1 + v * t, e);
    dist = std::sqrt(cp.distance_sq);
  }
  // Iteration cap (a tangent approach converging too slowly): not a miss; t
  // is a lower bound of the time of impact.
  const Vec3 n = UnitOr(cp.p - cp.q, -v);
  out.state = CastState::kFailed;
  out.t = t;
  out.normal = n;
  out.on_box = cp.q;
  return out;
}

}  // namespace

CastResult CastCapsuleBox(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                          const CastSettings& settings) {
  CastResult r;
  if (a.kind() == ShapeKind::kCapsule) {
    // Capsule A moving in the frame of box B.
    const double h = a.half_height();
    const SegmentBoxSweep s =
        SweepSegmentBox(a_in_b.TransformPoint({0, -h, 0}), a_in_b.TransformPoint({0, h, 0}),
                        a.radius(), v, b.half_extents(), 0.0, settings);
    r.state = s.state;
    r.fraction = s.t;
    r.normal = s.normal;
    r.point = s.on_box;
    return r;
  }
  // Box A moving against capsule B: in A's frame the capsule moves by -v.
  const double h = b.half_height();
  const SegmentBoxSweep s = SweepSegmentBox(
      a_in_b.InverseTransformPoint({0, -h, 0}), a_in_b.InverseTransformPoint({0, h, 0}),
      b.radius(), a_in_b.InverseTransformDirection(-v), a.half_extents(), 0.0, settings);
  r.state = s.state;
  r.fraction = s.t;
  // Normal from A's box towards B's capsule, in B's frame, reversed.
  r.normal = -a_in_b.TransformDirection(s.normal);
  // The box point touching the capsule, with A moved to the moment of impact.
  r.point = a_in_b.TransformPoint(s.on_box) + v * s.t;
  return r;
}

CastMethod MethodFor(ShapeKind a, ShapeKind b) { return PairFor(a, b).cast; }

namespace {
std::atomic<int> world_cast_iterations{CastSettings{}.max_iterations};
}  // namespace

int WorldCastIterations() { return world_cast_iterations.load(std::memory_order_relaxed); }

void SetWorldCastIterationsForTesting(int iterations) {
  world_cast_iterations.store(iterations >= 1 ? iterations : CastSettings{}.max_iterations,
                              std::memory_order_relaxed);
}

bool BoundingSpheresMiss(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                         double t_max) {
  return CentreMissesSphere(a_in_b.position, v,
                            (a.BoundingRadius() + b.BoundingRadius()) * (1.0 + 1e-12), t_max);
}

namespace {

// A kSurface* method's cast: the one switch where the method names the
// triangle routine (anything else: a miss).
CastResult CastSurfaceBy(CastMethod method, const Shape& a, const Pose& a_in_b, const Vec3& v,
                         const Shape& b, double skin, MergedSweep* merged) {
  switch (method) {
    case CastMethod::kSurfaceBall:
      return CastSurface<CastMethod::kSurfaceBall>(a, a_in_b, v, b, skin, merged);
    case CastMethod::kSurfaceCapsule:
      return CastSurface<CastMethod::kSurfaceCapsule>(a, a_in_b, v, b, skin, merged);
    case CastMethod::kSurfaceBox:
      return CastSurface<CastMethod::kSurfaceBox>(a, a_in_b, v, b, skin, merged);
    case CastMethod::kSurfaceCylinder:
      return CastSurface<CastMethod::kSurfaceCylinder>(a, a_in_b, v, b, skin, merged);
    case CastMethod::kSurfaceHull:
      return CastSurface<CastMethod::kSurfaceHull>(a, a_in_b, v, b, skin, merged);
    default: return CastResult{};
  }
}

}  // namespace

CastResult CastLocal(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                     const CastSettings& settings) {
  const CastMethod method = MethodFor(a.kind(), b.kind());
  // The contact offset of a convex pair: the exact cast, then its rule
  // (surfaces and compounds apply it per triangle or child).
  if (settings.contact_offset > 0.0 && !IsSurfaceMethod(method) &&
      method != CastMethod::kCompound) {
    CastSettings exact = settings;
    exact.contact_offset = 0.0;
    return ApplyContactOffset(a, a_in_b, v, b, CastLocal(a, a_in_b, v, b, exact),
                              settings.contact_offset);
  }
  // Bounding spheres first for the costlier methods: most far misses end here.
  if (method != CastMethod::kSphereRay && method != CastMethod::kRayFromSphereB &&
      BoundingSpheresMiss(a, a_in_b, v, b, FractionBound(settings))) {
    return {};
  }
  switch (method) {
    case CastMethod::kSphereRay: return CastSphereRay(a, a_in_b, v, b);
    case CastMethod::kRayFromSphereB: return CastRayFromSphereB(a, a_in_b, v, b);
    case CastMethod::kCapsuleCapsule: return CastCapsuleCapsule(a, a_in_b, v, b);
    case CastMethod::kBoxBox: return CastBoxBox(a, a_in_b, v, b);
    case CastMethod::kCapsuleBox: return CastCapsuleBox(a, a_in_b, v, b, settings);
    case CastMethod::kConservative: return CastConservative(a, a_in_b, v, b, settings);
    case CastMethod::kSurfaceBall:
    case CastMethod::kSurfaceCapsule:
    case CastMethod::kSurfaceBox:
    case CastMethod::kSurfaceCylinder:
    case CastMethod::kSurfaceHull:
      return CastSurfaceBy(method, a, a_in_b, v, b, SkinOf(settings), nullptr);
    case CastMethod::kCompound: return CastCompound(a, a_in_b, v, b, settings);
    case CastMethod::kUnsupported: return {};
  }
  return {};
}

}  // namespace internal

namespace internal {

namespace {

// Pose::IsFinite of both poses and Vec3::IsFinite of the translation at
// once: x - x is 0 for a finite x and NaN for an infinite or NaN one, so the
// sum of the 17 differences is 0 exactly when all are finite (one add each
// in place of a compare and a branch).
bool AllFinite(const Pose& a, const Pose& b, const Vec3& v) {
#if defined(__SSE2__)
  const auto zero_if_finite = [](double x, double y) {
    const __m128d p = _mm_set_pd(y, x);
    return _mm_sub_pd(p, p);
  };
  const __m128d s =
      _mm_add_pd(_mm_add_pd(_mm_add_pd(zero_if_finite(a.position.x, a.position.y),
                                       zero_if_finite(a.position.z, v.z)),
                            _mm_add_pd(zero_if_finite(a.rotation.x, a.rotation.y),
                                       zero_if_finite(a.rotation.z, a.rotation.w))),
                 _mm_add_pd(_mm_add_pd(_mm_add_pd(zero_if_finite(b.position.x, b.position.y),
                                                  zero_if_finite(b.position.z, v.x)),
                                       _mm_add_pd(zero_if_finite(b.rotation.x, b.rotation.y),
                                                  zero_if_finite(b.rotation.z, b.rotation.w))),
                            zero_if_finite(v.y, 0.0)));
  return _mm_movemask_pd(_mm_cmpeq_pd(_mm_add_sd(s, _mm_unpackhi_pd(s, s)), _mm_setzero_pd())) &
         1;
#else
  return a.IsFinite() && b.IsFinite() && v.IsFinite();
#endif
}

}  // namespace

namespace {

// A in B's frame (as Pose::RelativeTo: positions subtracted first), with
// B's rotation as a matrix for the four rotations here and in InWorld.
struct InFrameOfB {
  Mat33 rb;
  Pose a_in_b;
  Vec3 v;
};
InFrameOfB PlaceInB(const Shape& a, const Pose& pose_a, const Vec3& translation,
                    const Pose& pose_b) {
  InFrameOfB f;
  f.rb = pose_b.rotation.ToMatrix();
  f.a_in_b.position = f.rb.TransposeMul(pose_a.position - pose_b.position);
  if (a.kind() != ShapeKind::kSphere) {
    f.a_in_b.rotation = pose_b.rotation.Conjugate() * pose_a.rotation;
  }
  f.v = f.rb.TransposeMul(translation);
  return f;
}

}  // namespace

CastResult CastWithoutContact(const Shape& a, const Pose& pose_a, const Vec3& translation,
                              const Shape& b, const Pose& pose_b, const CastSettings& settings) {
  if (!AllFinite(pose_a, pose_b, translation)) return CastResult{};
  const InFrameOfB f = PlaceInB(a, pose_a, translation, pose_b);
  return InWorld(CastLocal(a, f.a_in_b, f.v, b, settings), f.rb, pose_b, translation);
}

bool MergedCastable(const Shape& a) {
  return IsSurfaceMethod(MethodFor(a.kind(), ShapeKind::kMesh));
}

CastResult CastMerged(const Shape& a, const Pose& pose_a, const Vec3& translation,
                      const Shape& merged, const Pose& pose_b, double contact_offset,
                      MergedSweep* sweep) {
  if (!AllFinite(pose_a, pose_b, translation)) return CastResult{};
  const InFrameOfB f = PlaceInB(a, pose_a, translation, pose_b);
  const double skin = contact_offset > 0.0 ? contact_offset : 0.0;
  const CastResult lc =
      CastSurfaceBy(MethodFor(a.kind(), merged.kind()), a, f.a_in_b, f.v, merged, skin, sweep);
  return InWorld(lc, f.rb, pose_b, translation);
}

void AddStartedContact(const Shape& a, const Pose& pose_a, const Shape& b, const Pose& pose_b,
                       CastResult* result) {
  Contact contact;
  if (!ComputeContact(a, pose_a, b, pose_b, &contact)) {
    return;  // touching within rounding (or no contact solver answer): depth 0 as it is
  }
  // Contact::normal moves B away from A; the cast normal moves A away from B.
  result->normal = -contact.normal;
  result->depth = contact.depth;
  result->point = (contact.point_a + contact.point_b) * 0.5;
}

void FinishStartedCast(const Shape& a, const Pose& pose_a, const Vec3& translation, const Shape& b,
                       const Pose& pose_b, bool skip, CastResult* result) {
  if (result->state != CastState::kStartedOverlapping) return;
  if (!skip) {
    AddStartedContact(a, pose_a, b, pose_b, result);
    return;
  }
  const double len = translation.Length();
  result->normal = len > 0.0 ? translation * (-1.0 / len) : Vec3{0, 1, 0};
  result->depth = 0.0;
  result->point = pose_a.position;
}

}  // namespace internal

CastResult Cast(const Shape& a, const Pose& pose_a, const Vec3& translation, const Shape& b,
                const Pose& pose_b, const CastSettings& settings) {
  // The contact of a sweep started inside a mesh takes the sweep's near triangles.
  const ScopedStartNear start_near;
  CastResult result = internal::CastWithoutContact(a, pose_a, translation, b, pose_b, settings);
  internal::FinishStartedCast(a, pose_a, translation, b, pose_b, settings.skip_started_contact,
                              &result);
  return result;
}

}  // namespace hitbox
