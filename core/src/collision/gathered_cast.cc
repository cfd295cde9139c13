// GatheredCast: Cast()'s steps for a ball or capsule against a mesh (cast.cc:
// PlaceInB, BoundingSpheresMiss, PlacedConvex, the closed-form triangle
// sweeps under SweepTies, InWorld) with the placement that depends on the
// rotations alone done once, and a capsule's cheap misses per triangle
// (ClearOfPlane, SegmentBeyondAnEdge) taken from the triangle's gathered
// terms, so the same operations on the same operands.
#include "collision/gathered_cast.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "collision/cast_internal.h"
#include "collision/triangles/ball_triangle_sweep.h"
#include "collision/triangles/sweep_ties.h"
#include "collision/triangles/triangle_gjk.h"
#include "collision/work_meter.h"
#include "geometry/triangle_queries.h"
#include "shape/convex_core.h"

namespace hitbox::internal {
namespace {

// The lane helpers below are file-local and inlined: no ABI to keep where
// vectors of four doubles are passed without AVX.
#pragma GCC diagnostic ignored "-Wpsabi"

/// Four doubles, added and multiplied lane by lane (GCC's vector
/// extension: AVX where built for it, SSE2 pairs else), each lane's
/// operations those of the scalar code it stands for.
using Lanes = double __attribute__((vector_size(32)));
using LaneMask = int64_t __attribute__((vector_size(32)));

Lanes Load(const std::array<double, 4>& a) {
  Lanes out;
  std::memcpy(&out, a.data(), sizeof out);
  return out;
}
Lanes Splat(double x) { return Lanes{x, x, x, x}; }
/// (m ? x : y) lane by lane.
Lanes Select(const LaneMask& m, const Lanes& x, const Lanes& y) {
  return reinterpret_cast<Lanes>((reinterpret_cast<LaneMask>(x) & m) |
                                 (reinterpret_cast<LaneMask>(y) & ~m));
}
/// std::min(a, b) and std::max(a, b) lane by lane: (b < a ? b : a), (a < b ? b : a).
Lanes LaneMin(const Lanes& a, const Lanes& b) {
  return Select(reinterpret_cast<LaneMask>(b < a), b, a);
}
Lanes LaneMax(const Lanes& a, const Lanes& b) {
  return Select(reinterpret_cast<LaneMask>(a < b), b, a);
}

/// Heights of the capsule's ends p0, p1 over g's four planes (its edges'
/// and, lane 3, its face's: Dot(p - origin, normal)), and how far the motion
/// v goes along each normal, Dot(v, normal).
struct PlaneHeights {
  Lanes d0, d1, dv;
};
[[gnu::always_inline]] inline PlaneHeights HeightsOver(const GatheredTriangle& g, const Vec3& p0,
                                                       const Vec3& p1, const Vec3& v) {
  const Lanes ox = Load(g.origin_x), oy = Load(g.origin_y), oz = Load(g.origin_z);
  const Lanes mx = Load(g.normal_x), my = Load(g.normal_y), mz = Load(g.normal_z);
  PlaneHeights h;
  h.d0 = (Splat(p0.x) - ox) * mx + (Splat(p0.y) - oy) * my + (Splat(p0.z) - oz) * mz;
  h.d1 = (Splat(p1.x) - ox) * mx + (Splat(p1.y) - oy) * my + (Splat(p1.z) - oz) * mz;
  h.dv = Splat(v.x) * mx + Splat(v.y) * my + Splat(v.z) * mz;
  return h;
}

/// The capsule (segment [p0, p1] at heights `h` over g's planes, radius r)
/// moving by v up to t_max certainly misses triangle g: ClearOfPlane or
/// SegmentBeyondAnEdge (ball_triangle_sweep.h), the same operations on g's
/// gathered terms, `ends` the ends' largest absolute coordinate and `speed`
/// v's. SweepCapsuleTriangleN returns a miss there without sweeping.
[[gnu::always_inline]] inline bool CapsuleMisses(const PlaneHeights& h, double r, const Vec3& v,
                                                 double t_max, double ends, double speed,
                                                 const GatheredTriangle& g) {
  const double h0 = h.d0[3], h1 = h.d1[3];
  const double h_lo = std::min(h0, h1), h_hi = std::max(h0, h1);
  if (ClearOfPlane(h_lo, h_hi, r, v, g.n, t_max)) return true;
  const double coords = g.extent + ends + speed * t_max;
  const double rr = r + 1e-9 * (r + coords);
  const Lanes dv = h.dv * Splat(t_max);
  const double over = HeightsApart(h_lo, h_hi, dv[3], g.below, g.above);
  const double room = rr * rr - over * over;
  // The three edges at once.
  const Lanes zero = Splat(0.0), w = Load(g.far_offset);
  const Lanes lo = LaneMin(h.d0, h.d1) + LaneMin(zero, dv);
  const Lanes hi = LaneMax(h.d0, h.d1) + LaneMax(zero, dv);
  const Lanes gap = LaneMax(lo - LaneMax(zero, w), LaneMin(zero, w) - hi);
  const LaneMask beyond = reinterpret_cast<LaneMask>(gap > zero) &
                          reinterpret_cast<LaneMask>(gap * gap > Splat(room) * Load(g.normal_sq));
  return (beyond[0] | beyond[1] | beyond[2]) != 0;
}

}  // namespace

bool GatheredCast::Prepare(const Shape& a, const Quat& rotation_a, const Shape& b,
                           const Pose& pose_b) {
  if ((a.kind() != ShapeKind::kSphere && a.kind() != ShapeKind::kCapsule) ||
      b.kind() != ShapeKind::kMesh) {
    return false;
  }
  // B's matrix and A's rotation in B as PlaceInB works them out, to the
  // bit: the build has no fused multiply-add (CMakeLists.txt), so the same
  // expressions round the same in both files whatever the rotations.
  const bool ball = a.kind() == ShapeKind::kSphere;
  a_ = &a;
  b_ = &b;
  rotation_a_ = rotation_a;
  pose_b_ = pose_b;
  ball_ = ball;
  finite_ = Pose(Vec3{}, rotation_a).IsFinite() && pose_b.IsFinite();
  rb_ = pose_b.rotation.ToMatrix();
  // PlaceInB leaves a ball's rotation the identity; PlacedConvex's segment
  // and bounds of the core at the rotation in B.
  const Mat33 in_b =
      ball_ ? Quat().ToMatrix() : (pose_b.rotation.Conjugate() * rotation_a).ToMatrix();
  const ConvexCore core = CoreOf(a);
  margin_ = core.margin;
  const Vec3 he = ball_ ? Vec3{} : Vec3{0.0, core.half_height, 0.0};
  for (int k = 0; k < 3; ++k) {
    const Vec3& r = in_b.row[k];
    reach_[k] = std::fabs(r.x) * he.x + std::fabs(r.y) * he.y + std::fabs(r.z) * he.z;
  }
  half_ = ball_ ? Vec3{} : in_b * Vec3{0.0, core.half_height, 0.0};
  bounding_ = (a.BoundingRadius() + b.BoundingRadius()) * (1.0 + 1e-12);
  return true;
}

bool GatheredCast::Cast(const Vec3& from, const Vec3& translation, double t_max,
                        const GatheredTriangle* const* tris, size_t count, const Aabb& region,
                        CastResult* out) const {
  if (!finite_ || !from.IsFinite() || !translation.IsFinite()) {
    *out = CastResult{};
    return true;
  }
  // PlaceInB.
  const Vec3 p = rb_.TransposeMul(from - pose_b_.position);
  const Vec3 v = rb_.TransposeMul(translation);
  CastResult lc;
  if (!CentreMissesSphere(p, v, bounding_, t_max)) {
    // The placed convex (PlacedConvex): its segment and bounds.
    const Vec3 seg[2] = {p - half_, p + half_};
    Aabb bounds;
    for (int k = 0; k < 3; ++k) {
      bounds.max[k] = p[k] + reach_[k] + margin_;
      bounds.min[k] = p[k] - reach_[k] - margin_;
    }
    // Every triangle the mesh walk could sweep meets the swept bounds, which
    // must lie in the gathered region.
    const Aabb swept = bounds.Swept(v).Expanded(kSweepGap);
    if (!region.Contains(swept)) return false;
    // The mesh walk's triangles are those its centre path enters, grown by
    // the bounds' extents and kSweepGap: here those whose boxes meet the
    // swept bounds, all of those and a few more beside the path, which the
    // sweep finds missed. SweepTies makes the order of no account.
    const double len = v.Length();
    SweepTies ties(len > 0.0 ? kSweepGap / len : 0.0, {});
    WorkTally tally;
    const double r = margin_;
    const double ends = std::max(seg[0].Abs().MaxComponent(), seg[1].Abs().MaxComponent());
    const double speed = v.Abs().MaxComponent();
    for (size_t i = 0; i < count; ++i) {
      if (!tally.Count()) return false;  // the batch stops: the walk stops too
      const GatheredTriangle& g = *tris[i];
      if (ties.PassedOver(g.original) || !swept.Overlaps(g.box)) continue;
      CastResult s;
      if (ball_) {
        s = SweepSphereTriangleAt(seg[0], Dot(seg[0] - g.v[0], g.n), r, v, ties.limit(), g.v[0],
                                  g.v[1], g.v[2], g.n, g.active);
      } else {
        // SweepCapsuleTriangleN past its cheap misses.
        const PlaneHeights h = HeightsOver(g, seg[0], seg[1], v);
        if (CapsuleMisses(h, r, v, ties.limit(), ends, speed, g)) continue;
        s = SweepCapsuleTriangleAt(seg[0], seg[1], h.d0[3], h.d1[3], r, v, ties.limit(), g.v[0],
                                   g.v[1], g.v[2], g.n, g.active);
      }
      if (!s.hit()) continue;
      if (s.state == CastState::kFailed) return false;
      ties.Add(g.original, s);
    }
    lc = ties.Result();
  }
  // InWorld, then Cast()'s contact for a pair that starts overlapping.
  *out = InWorld(lc, rb_, pose_b_, translation);
  if (out->state == CastState::kStartedOverlapping) {
    AddStartedContact(*a_, Pose(from, rotation_a_), *b_, pose_b_, out);
  }
  return true;
}

}  // namespace hitbox::internal
