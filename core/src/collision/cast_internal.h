// Internals of Cast() and Raycast(), exposed to the tests (cross-checking the
// closed forms against the conservative-advancement path) and benchmarks.
//
// Everything here works in the local frame of the target B: the moving shape
// A is placed by `a_in_b` (= pose_b.RelativeTo(pose_a)) and moves by `v`
// (B-frame translation). Casts answer with CastResult in B's frame: normals
// from B towards A, depth 0 (a start inside gives a fallback separation
// direction; CastWithoutContact moves the result to the world frame).
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "hitbox/collision/collide.h"
#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"
#include "geometry/ray_primitives.h"

namespace hitbox {
struct GatheredTriangle;  // collision/triangles/surface_sweep.h
struct MergedSweep;       // collision/triangles/sweep_ties.h
}  // namespace hitbox

namespace hitbox::internal {

/// Ray against `shape` (local frame) grown by a ball of radius `rho` >= 0.
RayOutcome RayInflated(const Vec3& o, const Vec3& d, const Shape& shape, double rho,
                       RayEntry* out);

/// Ray against a convex hull (local frame): the ray clipped against every
/// face half-space, closed form. Normals are the face planes' outward normals.
RayOutcome RayConvexHull(const Vec3& o, const Vec3& d, const ConvexHullData& hull,
                         RayEntry* out);

/// Which method Cast() uses for the ordered pair (a, b).
enum class CastMethod : uint8_t {
  kSphereRay,        ///< sphere A: ray against B grown by A's radius (closed form)
  kRayFromSphereB,   ///< sphere B: ray from B's centre against A grown by B's radius
  kCapsuleCapsule,   ///< segment sweep: 4 end-point capsule rays + parallelogram face
  kBoxBox,           ///< separating-axis test over 15 axes with entry/exit times
  kCapsuleBox,       ///< capsule and box either way: Newton on the exact segment-box distance
  kConservative,     ///< GJK ray cast (van den Bergen 2004) on cores with margins
  // Convex A against a mesh / heightfield B: per-triangle sweeps by A's
  // triangle routine (TriangleRoutine), picked here once.
  kSurfaceBall,      ///< sphere A: the ball-triangle closed form
  kSurfaceCapsule,   ///< capsule A: the capsule-triangle closed form
  kSurfaceBox,       ///< box A: the box-triangle SAT sweep, else the GJK cast
  kSurfaceCylinder,  ///< cylinder A: the GJK cast with the cylinder's closed form
  kSurfaceHull,      ///< convex hull A: the GJK cast
  kCompound,         ///< convex A against a compound B: per-child casts, the first wins
  kUnsupported,      ///< a surface or compound moving (never query shapes): a miss
};
/// True for the kSurface* methods (a convex against a mesh or heightfield).
constexpr bool IsSurfaceMethod(CastMethod m) {
  return m >= CastMethod::kSurfaceBall && m <= CastMethod::kSurfaceHull;
}
/// Convex A (B frame) against surface B with the triangle routine of
/// kMethod, one of the kSurface* methods: SurfaceSweepConvex
/// (surface_pairs.cc), the contact offset applied per triangle; with
/// `merged`, B is a group's merged mesh answered per member.
template <CastMethod kMethod>
CastResult CastSurface(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                       double contact_offset = 0.0, MergedSweep* merged = nullptr);
/// Lowest input triangle of surface `b` that convex `a` overlaps, or
/// UINT32_MAX when none (surface_pairs.cc).
uint32_t SurfaceOverlapLowest(const Shape& a, const Pose& pose_a, const Shape& b,
                              const Pose& pose_b);
/// SurfaceOverlapLowest for each member of merged mesh `merged` (a mesh
/// group's, members' input triangles from first[m]) that convex `a`
/// touches: appends (m, its lowest touched triangle in m's own input), as
/// that member's own mesh answers (surface_pairs.cc).
void SurfaceOverlapMembers(const Shape& a, const Pose& pose_a, const Shape& merged,
                           const Pose& pose_b, std::span<const uint32_t> first,
                           std::vector<std::pair<uint32_t, uint32_t>>* out);
/// Convex A (B frame) against compound B: CastLocal per candidate child in
/// that child's frame; the first hit (ties: lowest child) with sub_shape =
/// its child index (compound_pairs.cc).
CastResult CastCompound(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                        const CastSettings& settings);
/// Lowest child index of compound `b` that convex `a` overlaps, or UINT32_MAX
/// when none (compound_pairs.cc).
uint32_t CompoundOverlapLowest(const Shape& a, const Pose& pose_a, const Shape& b,
                               const Pose& pose_b);
/// Ray `o` + t `d` (t in [0, 1], B's local frame) against compound B: the
/// first child crossed (ties: lowest), sub_shape = its index; the result's
/// normal and point are in B's local frame (compound_pairs.cc).
CastResult RaycastCompound(const Vec3& o, const Vec3& d, const Shape& b, double max_fraction);
/// Raycast for a ray and pose known to be finite (a collider set checks
/// them once per query and once per change).
CastResult RaycastFinite(const Vec3& origin, const Vec3& translation, const Shape& b,
                         const Pose& pose_b, double max_fraction);
/// The lowest piece of a surface or compound collider `b` that convex `a`
/// overlaps (triangle or child index), or UINT32_MAX when none.
inline uint32_t OverlapLowestPiece(const Shape& a, const Pose& pose_a, const Shape& b,
                                   const Pose& pose_b) {
  return b.kind() == ShapeKind::kCompound ? CompoundOverlapLowest(a, pose_a, b, pose_b)
                                          : SurfaceOverlapLowest(a, pose_a, b, pose_b);
}
CastMethod MethodFor(ShapeKind a, ShapeKind b);

/// CastSettings::max_iterations of the casts that world queries (ColliderSet
/// sweeps and moves) run; default CastSettings{}.max_iterations. Tests lower
/// it to force CastState::kFailed through a world query.
int WorldCastIterations();
/// Sets WorldCastIterations() (tests only; values < 1 restore the default).
void SetWorldCastIterationsForTesting(int iterations);

/// CastSettings::max_fraction clamped for use: values in [0, 1] as given,
/// anything else (NaN, negative, > 1) as 1 (no bound).
inline double FractionBound(const CastSettings& settings) {
  const double m = settings.max_fraction;
  return (m >= 0.0 && m < 1.0) ? m : 1.0;
}

/// CastSettings::contact_offset for use: positive values as given, else 0.
inline double SkinOf(const CastSettings& settings) {
  return settings.contact_offset > 0.0 ? settings.contact_offset : 0.0;
}

/// The contact offset's rule (CastSettings::contact_offset) for one piece
/// first met at fraction t with penetration `depth` and unit `normal` (from
/// the piece towards A), A moving by v: true when it is a hit.
bool SkinKeeps(double depth, double t, const Vec3& normal, const Vec3& v, double skin);

/// `lc` (the exact cast of convex A against convex B, B frame) when the
/// contact offset `skin` > 0 keeps it, else a miss (cast_skin.cc).
CastResult ApplyContactOffset(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                              const CastResult& lc, double skin);

/// True when the bounding spheres of A (moving by v) and B never meet in
/// [0, t_max], t_max in [0, 1] (a conservative early-out: false does not imply
/// contact).
bool BoundingSpheresMiss(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                         double t_max = 1.0);
/// BoundingSpheresMiss for A's centre at `o` moving by v and the two radii
/// summed into r (GatheredCast keeps the sum).
inline bool CentreMissesSphere(const Vec3& o, const Vec3& v, double r, double t_max) {
  // Ray from A's centre against B's bounding sphere grown by A's (Ericson 5.5.7).
  const double c = o.LengthSq() - r * r;
  if (c <= 0.0) return false;
  const double bb = Dot(o, v);
  if (bb >= 0.0) return true;
  const double vv = v.LengthSq();
  // No real root (closest approach beyond r), or the entry root beyond t_max:
  // f(t) = vv t^2 + 2 bb t + c still positive and decreasing at t = t_max.
  if (bb * bb - vv * c < 0.0) return true;
  return c + t_max * (2.0 * bb + vv * t_max) > 0.0 && bb + vv * t_max < 0.0;
}

/// Closed-form or iterative cast in B's frame, chosen by MethodFor().
CastResult CastLocal(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                     const CastSettings& settings);

/// Generic cast for any pair: Newton iteration on the convex distance
/// d(t) = dist(A + t v, B) from GJK (van den Bergen 2004's conservative
/// advancement along the ray; monotone from the left because d is convex).
CastResult CastConservative(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                            const CastSettings& settings);

/// CastBoxCylinderAxes's answer: a miss, the time of impact (exact, its
/// contact point in both shapes), or a lower bound of it to start from.
struct AxisCast {
  enum class State : uint8_t { kMiss, kHit, kLowerBound };
  State state = State::kMiss;
  /// kHit: the cast's answer (B frame).
  CastResult hit;
  /// kLowerBound: the time of impact is at least t (0: no bound) ...
  double t = 0.0;
  /// ... where this plane normal (B frame, from B towards A) separates them.
  Vec3 normal{0, 1, 0};
};
/// Box against cylinder, either one moving (box_cylinder_cast.cc): the
/// separating axes' entry and exit times; a lower bound past t_max is a miss.
AxisCast CastBoxCylinderAxes(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                             double t_max);
/// Cylinder against cylinder (cylinder_cylinder_cast.cc): as CastBoxCylinderAxes
/// over the two axes and their cross product.
AxisCast CastCylinderCylinderAxes(const Shape& a, const Pose& a_in_b, const Vec3& v,
                                  const Shape& b, double t_max);
/// Capsule against cylinder, either one moving (capsule_cylinder_cast.cc):
/// as CastBoxCylinderAxes over the cylinder's axis and its cross product
/// with the capsule's, then the capsule's end balls cast in closed form.
AxisCast CastCapsuleCylinderAxes(const Shape& a, const Pose& a_in_b, const Vec3& v,
                                 const Shape& b, double t_max);

CastResult CastCapsuleCapsule(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b);
/// Capsule [a0, a1] radius ra moving by v against capsule [b0, b1] radius rb
/// (all in one frame): the closed-form segment sweep behind CastCapsuleCapsule.
CastResult CastSegmentSegment(const Vec3& a0, const Vec3& a1, double ra, const Vec3& v,
                              const Vec3& b0, const Vec3& b1, double rb);
CastResult CastBoxBox(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b);
/// Capsule against box or box against capsule (the caller picks the order).
CastResult CastCapsuleBox(const Shape& a, const Pose& a_in_b, const Vec3& v, const Shape& b,
                          const CastSettings& settings);

/// True when a cast of `a` against a merged mesh can go through CastMerged
/// (a convex query shape: a kSurface* method).
bool MergedCastable(const Shape& a);
/// CastWithoutContact of A against `merged`, a group's merged mesh
/// (MeshGroups), each member answering as its own mesh (MergedSweep): the
/// winning member's answer, sub_shape its merged input index, `sweep->member`
/// its member. For MergedCastable shapes.
CastResult CastMerged(const Shape& a, const Pose& pose_a, const Vec3& translation,
                      const Shape& merged, const Pose& pose_b, double contact_offset,
                      MergedSweep* sweep);

/// Cast() without its last step: a kStartedOverlapping result has depth 0
/// and the cast's own separation normal and point (world frame).
/// AddStartedContact then makes it exactly Cast()'s answer, so a world sweep
/// can leave the contact to the one pair that wins (collider_set_jobs.h).
CastResult CastWithoutContact(const Shape& a, const Pose& pose_a, const Vec3& translation,
                              const Shape& b, const Pose& pose_b, const CastSettings& settings);
/// Gives a kStartedOverlapping result of CastWithoutContact (same shapes and
/// poses) the penetration contact of Cast(): normal (from B towards A),
/// depth and point by ComputeContact; unchanged when that finds no overlap
/// (touching within rounding: depth 0).
void AddStartedContact(const Shape& a, const Pose& pose_a, const Shape& b, const Pose& pose_b,
                       CastResult* result);
/// Cast()'s last step for CastWithoutContact's `result`: when it started
/// overlapping, its contact (AddStartedContact), or with `skip`
/// (CastSettings::skip_started_contact) depth 0, the normal against
/// `translation` (+y for none) and the point at pose_a's position.
void FinishStartedCast(const Shape& a, const Pose& pose_a, const Vec3& translation, const Shape& b,
                       const Pose& pose_b, bool skip, CastResult* result);

/// `n` with any component along `translation` removed when t > 0, so an
/// impact normal never points along the motion (rounding at grazing contacts).
inline Vec3 FixImpactNormal(const Vec3& n, const Vec3& translation, double t) {
  if (!(t > 0.0)) return n;
  const double dn = Dot(n, translation);
  if (dn <= 0.0) return n;
  const Vec3 m = n - translation * (dn / translation.LengthSq());
  return UnitOr(m, -translation);
}

/// A cast in B's frame (lc; B turned by `rb`, pose_b's rotation as a matrix)
/// in the world, as CastWithoutContact answers it: a kStartedOverlapping
/// result keeps the cast's own separation normal and point, depth 0, until
/// AddStartedContact replaces them by the contact.
inline CastResult InWorld(const CastResult& lc, const Mat33& rb, const Pose& pose_b,
                          const Vec3& translation) {
  CastResult result;
  switch (lc.state) {
    case CastState::kMiss: return result;
    case CastState::kHit:
    case CastState::kFailed:  // gave up: lc.fraction is a lower bound of the time of impact
      result.state = lc.state;
      result.fraction = lc.fraction;
      result.normal = FixImpactNormal(rb * lc.normal, translation, lc.fraction);
      result.point = pose_b.position + rb * lc.point;
      result.sub_shape = lc.sub_shape;
      return result;
    case CastState::kStartedOverlapping:
      // The cast's own separation direction and point, depth 0, until
      // AddStartedContact replaces them by the contact.
      result.state = CastState::kStartedOverlapping;
      result.fraction = 0.0;
      result.sub_shape = lc.sub_shape;
      result.normal = rb * lc.normal;
      result.depth = 0.0;
      result.point = pose_b.position + rb * lc.point;
      return result;
  }
  return result;
}

}  // namespace hitbox::internal
