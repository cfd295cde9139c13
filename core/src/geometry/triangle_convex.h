// A triangle against any support-mapped convex shape (internal to
// hitbox_core): GJK distance, overlap and a translational sweep by
// conservative advancement, generic over the convex's support function so that
// boxes, cylinders, capsules (a segment core plus a margin) and convex hulls
// all go through the same code.
//
// GJK: Gilbert, Johnson, Keerthi (1988) with van den Bergen's termination
// (2003, ch. 4: |v|^2 - v.w <= eps |v|^2); the simplex's closest point to the
// origin by simplex.h (Voronoi regions for triangles, Ericson, "Real-Time
// Collision Detection" 5.1.5; signed volumes for tetrahedra, Montanari et al.
// 2017), the one solver of GJK distance, the GJK ray cast and EPA's start
// test too. The convex is a core grown by a ball of radius `margin`;
// GJK runs on the core and the margin is subtracted, so a sphere or capsule
// is exact.
//
// Sweep: conservative advancement along the separating normal (Mirtich 1996;
// for pure translation each step t += distance / closing speed never passes
// the time of impact), stopped within kSweepGap metres of contact.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "geometry/sat.h"
#include "geometry/simplex.h"
#include "geometry/triangle.h"
#include "hitbox/math/math.h"

namespace hitbox {

/// Contact gap at which a sweep stops (metres): the fraction is at most
/// kSweepGap / closing speed before the exact time of impact.
inline constexpr double kSweepGap = 1e-9;
/// Upper bound of the remaining gap (metres) accepted as contact when GJK
/// stalls in rounding with its lower bound already within kSweepGap.
inline constexpr double kSweepStallGap = 1e-7;
/// Iteration caps.
inline constexpr int kTriangleGjkMaxIterations = 64;
inline constexpr int kTriangleSweepMaxIterations = 128;

/// Closest points of a triangle and a convex core (+ margin), mesh frame.
struct TriangleConvexDistance {
  /// Distance including the margin (an upper bound: GJK's |v| minus the
  /// margin; <= 0 when they touch or overlap, only the sign meaningful then).
  double distance = 0.0;
  /// A lower bound of the same distance (van den Bergen's v.w / |v| minus the
  /// margin): > 0 means certainly apart. On a curved core (cylinder) GJK may
  /// stall before the bounds meet; overlap decisions and sweeps use this bound.
  double distance_lower = 0.0;
  /// The unit axis of that lower bound (triangle towards convex): every point
  /// of the core minus the triangle lies at least distance_lower + margin along it.
  Vec3 lower_axis{0, 1, 0};
  /// True when the cores themselves overlap (distance then -margin, normal undefined).
  bool cores_overlap = false;
  /// Unit direction from the triangle towards the convex (valid when !cores_overlap).
  Vec3 normal{0, 1, 0};
  /// Closest point on the triangle, and its barycentric weights (a, b, c).
  Vec3 point_on_triangle;
  double bary[3] = {1, 0, 0};
  /// Closest point on the convex (core point moved by the margin towards the triangle).
  Vec3 point_on_convex;
  int iterations = 0;
  /// When the cores overlap with the origin enclosed by a GJK tetrahedron:
  /// its points (core point minus triangle point), core points and triangle
  /// barycentric weights, the start polytope of EPA. 0 otherwise.
  int tetrahedron = 0;
  Vec3 tet_w[4], tet_p[4];
  double tet_l[4][3];
};

namespace triangle_convex_detail {

struct SimplexPoint {
  Vec3 w;       // support of (convex core - triangle)
  Vec3 p;       // point of the convex core
  double l[3];  // barycentric weights of the triangle point
};

/// The closest point to the origin of the simplex s[0..n) (simplex.h).
inline internal::SimplexClosest Closest(const SimplexPoint* s, int n) {
  return internal::ClosestToOriginOf([s](int i) -> const Vec3& { return s[i].w; }, n);
}

/// Closest in the form of the cast (SweepConvexTriangle): the origin's
/// projection on any triangle but a sliver (kProjectionUnlessSliver).
inline internal::SimplexClosest CastClosest(const SimplexPoint* s, int n) {
  return internal::ClosestToOriginOf<internal::ClosestPointForm::kProjectionUnlessSliver>(
      [s](int i) -> const Vec3& { return s[i].w; }, n);
}

/// Reduces s to the points `r` kept, in place, with their weights in `lam`.
inline void Keep(const internal::SimplexClosest& r, SimplexPoint* s, int* n, double* lam) {
  internal::CopyWeights(r, lam);
  for (int k = 0; k < r.count; ++k) {
    if (r.index[k] != k) s[k] = s[r.index[k]];
  }
  *n = r.count;
}

}  // namespace triangle_convex_detail

/// GJK distance between triangle `tri` and a convex given by
/// `core_support(dir)` (a point of the core farthest along dir, mesh frame)
/// grown by `margin`. `scale`: length scale of the pair for tolerances.
template <typename CoreSupport>
TriangleConvexDistance TriangleConvexGjk(const Vec3 tri[3], const CoreSupport& core_support,
                                         double margin, double scale) {
  using triangle_convex_detail::SimplexPoint;
  TriangleConvexDistance out;
  // The vertices as locals, not reloaded after each out-of-line call (as in
  // SweepConvexTriangle).
  const Vec3 tri0 = tri[0], tri1 = tri[1], tri2 = tri[2];
  auto tri_support = [&](const Vec3& d, double l[3]) {
    const double x0 = Dot(tri0, d), x1 = Dot(tri1, d), x2 = Dot(tri2, d);
    const int i = (x0 >= x1 && x0 >= x2) ? 0 : (x1 >= x2 ? 1 : 2);
    l[0] = l[1] = l[2] = 0.0;
    l[i] = 1.0;
    return i == 0 ? tri0 : (i == 1 ? tri1 : tri2);
  };
  SimplexPoint s[4];
  int n = 0;
  double lam[4] = {1, 0, 0, 0};
  // Start from the centroid direction.
  Vec3 dir = (tri[0] + tri[1] + tri[2]) * (1.0 / 3.0) - core_support(Vec3{1, 0, 0});
  if (dir.LengthSq() == 0.0) dir = {1, 0, 0};
  {
    SimplexPoint p;
    p.p = core_support(dir * -1.0);
    p.w = p.p - tri_support(dir, p.l);
    s[n++] = p;
  }
  Vec3 v = s[0].w;
  const double eps_abs = 1e-13 * scale;
  bool overlap = false;
  double lower = -std::numeric_limits<double>::infinity();
  int it = 0;
  for (; it < kTriangleGjkMaxIterations; ++it) {
    const double vv = v.LengthSq();
    if (vv <= eps_abs * eps_abs) { overlap = true; break; }
    SimplexPoint p;
    p.p = core_support(-v);
    p.w = p.p - tri_support(v, p.l);
    // Upper bound |v|, lower bound v.w / |v|.
    const double lb = Dot(v, p.w) / std::sqrt(vv);
    if (lb > lower) {
      lower = lb;
      out.lower_axis = v / std::sqrt(vv);
    }
    if (vv - Dot(v, p.w) <= 1e-12 * vv + eps_abs * eps_abs) break;
    bool dup = false;
    for (int i = 0; i < n; ++i) dup = dup || s[i].w == p.w;
    if (dup) break;
    // The new point goes after the simplex of v, which stands (s[0..n), lam)
    // unless the step makes progress.
    s[n] = p;
    const internal::SimplexClosest r = triangle_convex_detail::Closest(s, n + 1);
    if (r.inside) {
      // The tetrahedron holds the origin, unless rounding on a flat one says
      // so while the lower bound already proves separation (v stands).
      if (lower > eps_abs) break;
      overlap = true;
      out.tetrahedron = 4;
      n = 4;
      for (int k = 0; k < 4; ++k) {
        lam[k] = r.weight[k];  // the origin's weights: the core points meet
        out.tet_w[k] = s[k].w;
        out.tet_p[k] = s[k].p;
        for (int j = 0; j < 3; ++j) out.tet_l[k][j] = s[k].l[j];
      }
      break;
    }
    // No progress (rounding): v and its simplex stand.
    if (r.vv >= vv) break;
    triangle_convex_detail::Keep(r, s, &n, lam);
    v = r.v;
  }
  out.iterations = it;
  // Recover the closest points from the simplex weights.
  Vec3 on_core;
  double l[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    on_core += s[i].p * lam[i];
    for (int k = 0; k < 3; ++k) l[k] += s[i].l[k] * lam[i];
  }
  out.bary[0] = l[0]; out.bary[1] = l[1]; out.bary[2] = l[2];
  out.point_on_triangle = tri[0] * l[0] + tri[1] * l[1] + tri[2] * l[2];
  const double dist = overlap ? 0.0 : v.Length();
  if (overlap || dist <= eps_abs) {
    out.cores_overlap = true;
    out.distance = -margin;
    out.distance_lower = -margin;
    out.point_on_convex = on_core;
    return out;
  }
  out.normal = v / dist;
  out.distance = dist - margin;
  out.distance_lower = std::min(std::max(lower, 0.0), dist) - margin;
  out.point_on_convex = on_core - out.normal * margin;
  return out;
}

/// Penetration of a convex (core + margin) into a triangle, mesh frame.
struct TriangleConvexPenetration {
  /// False when no contact could be computed (no enclosing tetrahedron, or a
  /// degenerate triangle for TrianglePolytopePenetration).
  bool valid = false;
  /// 0: EPA converged (or capped on its best face), or the closed form.
  /// Otherwise EPA broke down (2 flat start tetrahedron, 3 degenerate new
  /// face or horizon overflow, 4 no face left, 5 origin outside the polytope
  /// after rounding on slivers of a curved core) and the answer is the best
  /// of the polytope's face normals and the triangle's normals n by the
  /// exact support h(n) of the Minkowski difference: still a separating move
  /// (depth, normal), perhaps longer than the shortest. 1 no tetrahedron: not valid.
  /// 6 (not valid): stopped once shallower than TriangleConvexEpa's `stop_below`.
  int failure = 0;
  /// Depth in metres: moving the convex by depth * normal separates it.
  double depth = 0.0;
  /// Unit push-out direction from the triangle towards the convex.
  Vec3 normal{0, 1, 0};
  /// Deepest point of the convex, and the matching point of the triangle.
  Vec3 point_on_convex;
  Vec3 point_on_triangle;
};

/// Start polytope of TriangleConvexEpa (see there).
enum class TriangleEpaStart : uint8_t { kPrismOrTetrahedron, kPrismOnly, kTetrahedronOnly };

/// Caps of TriangleConvexEpa: polytope vertices, face slots and iterations.
/// Each iteration scans the face slots a few times, so these bound the cost
/// of one call whatever the input: ~0.1M instructions a triangle for a
/// cylinder on the slivers of the slow fuzz input (1.25M with the caps of
/// 160 vertices, 1024 faces and 150 iterations, up to ~3M a call).
inline constexpr int kTriangleEpaMaxVertices = 64;
inline constexpr int kTriangleEpaMaxFaces = 256;
inline constexpr int kTriangleEpaMaxIterations = 32;
/// A start tetrahedron whose volume (times 6) is below this fraction of the
/// product of its edge lengths from vertex 0, or below kTriangleEpaFlatVolume
/// * scale^3, is flat: EPA cannot expand it reliably and the fallback answers.
inline constexpr double kTriangleEpaFlatSine = 1e-9;
inline constexpr double kTriangleEpaFlatVolume = 1e-15;

/// Expanding Polytope Algorithm (van den Bergen 2001; as epa.h) on the
/// Minkowski difference core - triangle, started from GJK's enclosing
/// tetrahedron `g` (g.tetrahedron == 4). Each step pushes the face nearest
/// the origin out to the support point along its normal, re-stitching the
/// horizon, until the support gap is below 1e-9 * scale. Face slots of
/// removed faces are reused. A flat start tetrahedron, a breakdown or the
/// caps (kTriangleEpaMax*) end in the fallback: the best of the polytope's
/// face normals and the triangle's two normals by the exact support.
///
/// `start` picks the start polytope: the prism between the difference's
/// faces along the triangle's normal when it holds the origin, else GJK's
/// tetrahedron (kPrismOrTetrahedron); the prism alone (kPrismOnly, `g`
/// unused: not valid, failure 1, when it does not hold the origin; when it
/// does, the cores certainly overlap, with the origin more than 1e-9 * scale
/// inside every face of it); the tetrahedron alone (kTetrahedronOnly, after
/// a kPrismOnly call that was not valid).
///
/// `stop_below`: a caller that only wants the depth when it reaches this
/// (SurfaceDeepestContactConvex: the deepest contact so far, less its
/// slack) has EPA stop, not valid (failure 6), as soon as the support along
/// a face normal, an upper bound on the depth, plus the tolerance is below
/// it: the converged depth is within the tolerance of the least such bound.
///
/// `prism_supports`: a caller that has the core's supports along -n and +n
/// (n the triangle's unit normal, Cross(tri[1] - tri[0], tri[2] - tri[0]) /
/// its length, as computed here) passes them, for the prism, in that order.
template <typename CoreSupport>
TriangleConvexPenetration TriangleConvexEpa(
    const Vec3 tri[3], const CoreSupport& core_support, double margin, double scale,
    const TriangleConvexDistance& g,
    TriangleEpaStart start = TriangleEpaStart::kPrismOrTetrahedron,
    double stop_below = -std::numeric_limits<double>::infinity(),
    const Vec3* prism_supports = nullptr) {
  TriangleConvexPenetration out;
  struct Vert {
    Vec3 w, p;
    double l[3];
  };
  struct Face {
    int v[3];
    bool alive;
    Vec3 n;
    double d;
    Vec3 w0;  // verts[v[0]].w, read by the visibility test without the indirection
  };
  constexpr int kMaxVerts = kTriangleEpaMaxVertices;
  constexpr int kMaxFaces = kTriangleEpaMaxFaces;
  // Left uninitialised (no zeroing of ~1150 doubles a call): every slot is
  // written before it is read (nv and nf count the written ones).
  union Verts {
    Verts() {}
    Vert at[kMaxVerts];
  } vert_store;
  union Faces {
    Faces() {}
    Face at[kMaxFaces];
  } face_store;
  Vert* const verts = vert_store.at;
  Face* const faces = face_store.at;
  int free_slots[kMaxFaces];
  int nv = 0, nf = 0, nfree = 0;
  auto make_face = [&](int a, int b, int c) {
    if (nfree == 0 && nf >= kMaxFaces) return false;
    const Vec3 n = Cross(verts[b].w - verts[a].w, verts[c].w - verts[a].w);
    const double len = n.Length();
    if (!(len > 0.0)) return false;
    Face& f = faces[nfree > 0 ? free_slots[--nfree] : nf++];
    f.v[0] = a; f.v[1] = b; f.v[2] = c;
    f.n = n / len;
    f.d = Dot(f.n, verts[a].w);
    f.w0 = verts[a].w;
    f.alive = true;
    return true;
  };
  auto tri_support = [&](const Vec3& d, double l[3]) {
    const double x0 = Dot(tri[0], d), x1 = Dot(tri[1], d), x2 = Dot(tri[2], d);
    const int i = (x0 >= x1 && x0 >= x2) ? 0 : (x1 >= x2 ? 1 : 2);
    l[0] = l[1] = l[2] = 0.0;
    l[i] = 1.0;
    return tri[i];
  };
  const double tol = 1e-9 * scale;
  // Breakdown: for any unit n, moving the convex by h(n) along -n separates
  // it (h the support of core - triangle); take the best of the alive face
  // normals and the triangle's normals (the answer for a flat difference).
  // The face normal whose support was the least so far (an upper bound on
  // the depth), for the fallback and stop_below.
  double visited_h = std::numeric_limits<double>::infinity();
  Vec3 visited_n;
  auto fallback = [&](int reason) {
    out.failure = reason;
    double best_h = std::numeric_limits<double>::infinity();
    Vec3 best_n;
    auto consider = [&](const Vec3& n) {
      double l[3];
      const double h = Dot(core_support(n) - tri_support(-n, l), n);
      if (h < best_h) { best_h = h; best_n = n; }
    };
    for (int i = 0; i < nf; ++i) {
      if (faces[i].alive) consider(faces[i].n);
    }
    if (visited_h < std::numeric_limits<double>::infinity()) consider(visited_n);
    const Vec3 face = Cross(tri[1] - tri[0], tri[2] - tri[0]);
    if (face.LengthSq() > 0.0) {
      consider(face.Normalized());
      consider(-face.Normalized());
    }
    if (!(best_h < std::numeric_limits<double>::infinity())) return out;
    double l[3];
    out.valid = true;
    out.depth = std::max(best_h, 0.0) + margin;
    out.normal = -best_n;
    out.point_on_convex = core_support(best_n) + best_n * margin;
    out.point_on_triangle = tri_support(-best_n, l);
    return out;
  };
  // Start from the prism between the difference's two faces along the
  // triangle's normal +-n: core support along -n minus the triangle (vertices
  // 0..2, outward normal -n) and along +n minus it (3..5, outward +n), joined
  // by three parallelograms. It lies in the difference, and when it holds the
  // origin, more than tol inside each face (the core's extreme points along
  // +-n lie on both sides of the triangle over its interior: a face contact,
  // typically), the cores certainly overlap and its caps are exact
  // faces of the difference, so a face contact converges at once. Otherwise,
  // or should it be flat, GJK's tetrahedron.
  const bool prism = [&] {
    if (start == TriangleEpaStart::kTetrahedronOnly) return false;
    const Vec3 cross = Cross(tri[1] - tri[0], tri[2] - tri[0]);
    const double len = cross.Length();
    if (!(len > 0.0)) return false;
    const Vec3 n = cross / len;
    const Vec3 lo = prism_supports != nullptr ? prism_supports[0] : core_support(-n);
    const Vec3 hi = prism_supports != nullptr ? prism_supports[1] : core_support(n);
    if (!(Dot(hi - lo, n) > tol)) return false;
    for (int k = 0; k < 6; ++k) {
      Vert& x = verts[k];
      x.p = k < 3 ? lo : hi;
      x.w = x.p - tri[k % 3];
      x.l[0] = x.l[1] = x.l[2] = 0.0;
      x.l[k % 3] = 1.0;
    }
    nv = 6;
    Vec3 centre;
    for (int k = 0; k < 6; ++k) centre += verts[k].w * (1.0 / 6.0);
    const int pf[8][3] = {{0, 1, 2}, {3, 4, 5}, {0, 1, 4}, {0, 4, 3},
                          {1, 2, 5}, {1, 5, 4}, {2, 0, 3}, {2, 3, 5}};
    // The side faces first, unnormalised and not made: one with the origin
    // outside it beyond the rounding of its distance (1e-12 of |n|_1 |w|_1,
    // against a few 1e-16 for the loop's n / len and its dot) fails below
    // for certain, so the prism does not hold the origin (the usual answer
    // off a triangle's edges, where the caps pass).
    for (int k = 2; k < 8; ++k) {
      const Vec3& wa = verts[pf[k][0]].w;
      Vec3 fn = Cross(verts[pf[k][1]].w - wa, verts[pf[k][2]].w - wa);
      if (Dot(fn, centre - wa) > 0.0) fn = -fn;  // outwards, as the loop orients it
      const double size = (std::fabs(fn.x) + std::fabs(fn.y) + std::fabs(fn.z)) *
                          (std::fabs(wa.x) + std::fabs(wa.y) + std::fabs(wa.z));
      if (Dot(fn, wa) < -1e-12 * size) {
        nv = 0;
        return false;
      }
    }
    for (const auto& f : pf) {
      int a = f[0], b = f[1], c = f[2];
      const Vec3 fn = Cross(verts[b].w - verts[a].w, verts[c].w - verts[a].w);
      if (Dot(fn, centre - verts[a].w) > 0.0) std::swap(b, c);
      if (!make_face(a, b, c) || !(faces[nf - 1].d > tol)) {
        nv = nf = nfree = 0;  // not holding the origin (or degenerate): GJK's tetrahedron
        return false;
      }
    }
    return true;
  }();
  if (!prism && (start == TriangleEpaStart::kPrismOnly || g.tetrahedron != 4)) {
    out.failure = 1;
    return out;
  }
  for (int k = 0; k < 4 && !prism; ++k) {
    verts[nv].w = g.tet_w[k];
    verts[nv].p = g.tet_p[k];
    for (int j = 0; j < 3; ++j) verts[nv].l[j] = g.tet_l[k][j];
    ++nv;
  }
  // A flat start tetrahedron (a sliver triangle against a point-like part of
  // the core): its faces' normals are rounding; the fallback decides.
  if (!prism) {
    const Vec3 e1 = g.tet_w[1] - g.tet_w[0], e2 = g.tet_w[2] - g.tet_w[0],
               e3 = g.tet_w[3] - g.tet_w[0];
    const double vol6 = std::fabs(Dot(e1, Cross(e2, e3)));
    const double edges = std::sqrt(e1.LengthSq() * e2.LengthSq() * e3.LengthSq());
    if (!(vol6 > kTriangleEpaFlatSine * edges) ||
        !(vol6 > kTriangleEpaFlatVolume * scale * scale * scale)) {
      return fallback(2);
    }
  }
  // Tetrahedron faces, oriented outwards (away from the opposite vertex).
  const int tf[4][4] = {{0, 1, 2, 3}, {0, 3, 1, 2}, {0, 2, 3, 1}, {1, 3, 2, 0}};
  for (const auto& f : tf) {
    if (prism) break;
    int a = f[0], b = f[1], c = f[2];
    const Vec3 n = Cross(verts[b].w - verts[a].w, verts[c].w - verts[a].w);
    if (Dot(n, verts[f[3]].w - verts[a].w) > 0.0) std::swap(b, c);
    if (!make_face(a, b, c)) return fallback(2);
  }
  // The alive face nearest the origin: the first alive one, replaced by any
  // later one strictly nearer (ties: the lowest slot); -1 when none.
  const auto NearestFace = [&] {
    int nearest = -1;
    double nearest_d = 0.0;
    for (int i = 0; i < nf; ++i) {
      if (!faces[i].alive) continue;
      const double d = faces[i].d;
      if (nearest < 0 || d < nearest_d) {
        nearest = i;
        nearest_d = d;
      }
    }
    return nearest;
  };
  int best = -1;
  bool stopped = false;    // left the loop on a break (best is then alive)
  bool converged = false;  // support gap within the tolerance
  for (int it = 0; it < kTriangleEpaMaxIterations && !stopped; ++it) {
    best = NearestFace();
    if (best < 0) return fallback(4);
    const Face& f = faces[best];
    // Capped: the best face so far (a new point adds at most a few faces
    // per horizon edge; keep room for a horizon of 64 edges).
    if (nv >= kMaxVerts || nfree + (kMaxFaces - nf) < 64) { stopped = true; break; }
    Vert& nvx = verts[nv];
    nvx.p = core_support(f.n);
    nvx.w = nvx.p - tri_support(-f.n, nvx.l);
    const double gap = Dot(nvx.w, f.n) - f.d;
    if (Dot(nvx.w, f.n) < visited_h) {
      visited_h = Dot(nvx.w, f.n);
      visited_n = f.n;
    }
    // Every answer from here is at most max(visited_h, 0) + margin, + tol
    // when converged (the face distance is a lower bound on the depth).
    if (std::max(visited_h, 0.0) + margin + tol < stop_below) {
      out.failure = 6;
      return out;
    }
    if (gap <= tol) { stopped = converged = true; break; }
    // A support point already in the polytope (curved cores repeat rim
    // points): no progress is possible along this face.
    bool repeated = false;
    const double same2 = 1e-12 * scale * scale;
    const Vec3 w_new = nvx.w;
    for (int i = 0; i < nv && !repeated; ++i) {
      repeated = (verts[i].w - w_new).LengthSq() <= same2;
    }
    if (repeated) { stopped = true; break; }
    const int wi = nv++;
    // Remove the faces that see the new point; keep their horizon edges.
    // Horizon edges (a, b) as a << 8 | b (vertices < 256): one compare finds
    // the reverse of an edge already listed.
    static_assert(kMaxVerts <= 256);
    int edges[64];
    int ne = 0;
    bool overflow = false;
    for (int i = 0; i < nf; ++i) {
      // Visible with a margin: near-coplanar slivers on curved cores must not
      // flip the polytope inside out.
      if (!faces[i].alive || Dot(faces[i].n, w_new - faces[i].w0) <= tol) continue;
      faces[i].alive = false;
      free_slots[nfree++] = i;
      const int fv[4] = {faces[i].v[0], faces[i].v[1], faces[i].v[2], faces[i].v[0]};
      for (int e = 0; e < 3; ++e) {
        const int a = fv[e], b = fv[e + 1];
        const int reverse = b << 8 | a;
        bool shared = false;
        for (int k = 0; k < ne; ++k) {
          if (edges[k] == reverse) {
            edges[k] = edges[ne - 1];
            --ne;
            shared = true;
            break;
          }
        }
        if (!shared) {
          if (ne < 64) {
            edges[ne++] = a << 8 | b;
          } else {
            overflow = true;
          }
        }
      }
    }
    if (overflow) return fallback(3);
    for (int k = 0; k < ne; ++k) {
      if (!make_face(edges[k] >> 8, edges[k] & 255, wi)) return fallback(3);
    }
  }
  if (!stopped) {
    // Iteration cap: the best face of the polytope as it is now.
    best = NearestFace();
  }
  if (best < 0) return fallback(4);
  const Face& f = faces[best];
  if (f.d < -tol) return fallback(5);  // origin not enclosed
  // Barycentric weights of the origin's projection n * d on the face.
  const Vec3 a = verts[f.v[0]].w, b = verts[f.v[1]].w, c = verts[f.v[2]].w;
  const Vec3 q = f.n * f.d;
  const Vec3 v0 = b - a, v1 = c - a, v2 = q - a;
  const double d00 = Dot(v0, v0), d01 = Dot(v0, v1), d11 = Dot(v1, v1);
  const double d20 = Dot(v2, v0), d21 = Dot(v2, v1);
  const double den = d00 * d11 - d01 * d01;
  double wb = 0.0, wc = 0.0;
  if (den != 0.0) {
    wb = (d11 * d20 - d01 * d21) / den;
    wc = (d00 * d21 - d01 * d20) / den;
  }
  const double wa = 1.0 - wb - wc;
  const double w3[3] = {wa, wb, wc};
  Vec3 core_point, tri_point;
  for (int k = 0; k < 3; ++k) {
    const Vert& vx = verts[f.v[k]];
    core_point += vx.p * w3[k];
    tri_point += (tri[0] * vx.l[0] + tri[1] * vx.l[1] + tri[2] * vx.l[2]) * w3[k];
  }
  // Depth = the exact support h(n) along the final normal (>= the face
  // distance, by at most the stopping gap when converged): moving the convex
  // by it along -n always leaves the two touching or apart, as in epa.h.
  double lh[3];
  const double h = Dot(core_support(f.n) - tri_support(-f.n, lh), f.n);
  if (!converged) {
    // Capped or stalled (a curved core converges slowly): a face normal of
    // the polytope or of the triangle may already do better.
    const TriangleConvexPenetration alt = fallback(0);
    if (alt.valid && alt.depth < std::max(std::max(h, f.d), 0.0) + margin) return alt;
    out = TriangleConvexPenetration{};
  }
  out.valid = true;
  out.depth = std::max(std::max(h, f.d), 0.0) + margin;
  out.normal = -f.n;
  out.point_on_convex = core_point + f.n * margin;
  out.point_on_triangle = tri_point;
  return out;
}

/// A polytope core in the mesh frame: the points centre + sum of s_k *
/// half[k] * axis[k] for s_k in [-1, 1] and k < axes. A point has no axis, a
/// segment (capsule core) one, a box three (unit, orthogonal).
struct TrianglePolytopeCore {
  Vec3 center;
  Vec3 axis[3];
  double half[3] = {0, 0, 0};
  int axes = 0;

  /// Half-width of the core's projection onto unit `n`.
  double Radius(const Vec3& n) const {
    double r = 0.0;
    for (int k = 0; k < axes; ++k) r += half[k] * std::fabs(Dot(n, axis[k]));
    return r;
  }
  /// Support point along `dir`.
  Vec3 Support(const Vec3& dir) const {
    Vec3 p = center;
    for (int k = 0; k < axes; ++k) p += axis[k] * (Dot(dir, axis[k]) >= 0.0 ? half[k] : -half[k]);
    return p;
  }
};

/// Exact penetration of a polytope core grown by `margin` (sphere: a point,
/// capsule: a segment, box) into triangle `tri`, by the separating axis test
/// (sat.h) over the face normals of their Minkowski difference: the
/// triangle's normal, the core's face normals (a box's axes) and the crosses
/// of the core's edges with the triangle's edges (parallel pairs skipped). A
/// flat difference (a point core, or a segment in the triangle's plane) is
/// decided by the triangle's normal alone. No iteration; 4 (point), 7
/// (segment) or 16 (box) axes. Meant for cores GJK found overlapping; for
/// apart cores the depth is negative (not a contact). Not valid for a
/// degenerate (zero-normal) triangle.
inline TriangleConvexPenetration TrianglePolytopePenetration(const Vec3 tri[3],
                                                             const TrianglePolytopeCore& core,
                                                             double margin) {
  TriangleConvexPenetration out;
  const Vec3 e[3] = {tri[1] - tri[0], tri[2] - tri[1], tri[0] - tri[2]};
  Vec3 face;
  if (!internal::SatCrossAxis(e[0], tri[2] - tri[0], &face)) return out;
  // A is the triangle, B the core: the normal moves the core away.
  internal::SatMinimum sat;
  auto axis = [&](const Vec3& n) {
    const double t0 = Dot(tri[0], n), t1 = Dot(tri[1], n), t2 = Dot(tri[2], n);
    const double c = Dot(core.center, n), r = core.Radius(n);
    sat.Axis(n, std::min(t0, std::min(t1, t2)), std::max(t0, std::max(t1, t2)), c - r, c + r);
  };
  axis(face);
  for (int k = 0; k < core.axes; ++k) {
    if (core.axes == 3) axis(core.axis[k]);  // a box's face normals
    for (const Vec3& edge : e) {
      Vec3 n;
      if (internal::SatCrossAxis(core.axis[k], edge, &n)) axis(n);
    }
  }
  out.valid = true;
  out.depth = std::max(sat.depth + margin, 0.0);
  out.normal = sat.normal;
  // The core's deepest point against the normal, grown by the margin; the
  // triangle's point follows from point_on_convex + depth * normal.
  out.point_on_convex = core.Support(-sat.normal) - sat.normal * margin;
  out.point_on_triangle = out.point_on_convex + sat.normal * out.depth;
  return out;
}

/// Result of a convex sweep against one triangle.
struct TriangleConvexSweep {
  bool hit = false;
  bool started_inside = false;
  /// Fraction in [0, t_max].
  double t = 1.0;
  /// Unit normal from the triangle towards the moving convex.
  Vec3 normal{0, 1, 0};
  /// Contact point on the triangle.
  Vec3 point;
  /// True when the sweep gave up (iteration cap, or no advance possible): t
  /// is then a lower bound, `point` the closest point on the triangle to the
  /// convex at t.
  bool capped = false;
};

/// A box core in a mesh's frame, for SweepBoxSat: centre, unit orthogonal
/// axes and half-extents along them (metres).
struct OrientedBox {
  Vec3 center;
  Vec3 axis[3];
  Vec3 half;
};

/// Slack (metres) of SweepBoxSat's cull beyond the contact gaps of
/// SweepConvexTriangle: a pair it calls apart is farther than
/// kSweepStallGap (the loosest contact the GJK cast declares) plus this
/// plus rounding (1e-12 * scale) along some axis at every fraction.
inline constexpr double kSweepSatSlack = 1e-7;
/// Least travel or depth (metres) by which SweepBoxSat's latest axis entry
/// must follow the next latest (and precede the earliest exit), or the
/// start overlap must reach on every axis, for a closed-form answer; closer
/// ones are contacts of degenerate feature pairs (a vertex on an edge,
/// parallel faces), grazes or touches, left to the GJK cast.
inline constexpr double kSweepSatDistinct = 1e-7;

/// Least sine of the angle between a box face or edge and the triangle
/// feature it touches (face, edge) for SweepBoxSat's closed form: a flatter
/// pair touches along a segment or patch, where the GJK cast's contact point
/// and normal are decided by its rounding; those are left to it.
inline constexpr double kSweepSatSine = 1e-3;

/// Outcome of SweepBoxSat for one triangle.
struct SweepSatResult {
  enum class State : uint8_t {
    kApart,      ///< certainly no contact for t in [0, t_max]: a miss
    kHit,        ///< `hit` is the GJK cast's answer in closed form
    kUndecided,  ///< the GJK cast (SweepConvexTriangle) decides
  };
  State state = State::kUndecided;
  TriangleConvexSweep hit;
};

/// Separating axes of a moving box and a triangle (Ericson, RTCD 5.5.8;
/// Eberly, "Dynamic Collision Detection using Oriented Bounding Boxes"), in
/// the box's frame (Akenine-Moller's box-triangle axes): `box` grown by
/// `margin`, translating by `v` for t in [0, t_max]. On each axis (the
/// triangle's normal, the box's three axes, the crosses of each with the
/// triangle's edges: the complete set; near-parallel crosses skipped) the
/// projections overlap for t in one interval; the pair touches at the t
/// the latest entry and the earliest exit leave, if any.
///
/// kApart: apart on some axis at every t even with every interval grown by
/// kSweepStallGap + kSweepSatSlack + 1e-12 * scale, so the GJK cast cannot
/// report a contact (a cull that never drops a pair it would hit).
/// kHit, with the intervals grown by half a kSweepGap as the GJK cast stops:
/// - overlapping at t = 0 by more than kSweepSatDistinct on every axis: the
///   cast's started-inside answer (t = 0, the face normal against the
///   motion; the point the triangle's nearest to the box's centre: the
///   caller's contact replaces both);
/// - one axis entering last, at or before t_max, by more than
///   kSweepSatDistinct of travel after the others and the start and before
///   the earliest exit (the overlap's own, even past t_max: the answer does
///   not depend on t_max beyond the hit or miss): one generic
///   feature pair (the triangle's face and a box vertex, a box face and a
///   triangle vertex, a box edge and a triangle edge), answered as the cast
///   converges: that axis as the normal (facing the box), the contact point
///   on the triangle, and the cast's active-edge rule for a vertex or edge.
/// Anything else (within kSweepSatDistinct of touching at the start,
/// grazing, ties, a vertex or edge contact whose normal lies in the face's
/// plane, a degenerate triangle) is kUndecided.
inline SweepSatResult SweepBoxSat(const Vec3 tri[3], const OrientedBox& box, double margin,
                                  const Vec3& v, double t_max, double scale, uint8_t active) {
  SweepSatResult out;
  // Box frame: the triangle relative to the centre, the motion.
  Vec3 p[3];
  for (int i = 0; i < 3; ++i) {
    const Vec3 d = tri[i] - box.center;
    p[i] = {Dot(d, box.axis[0]), Dot(d, box.axis[1]), Dot(d, box.axis[2])};
  }
  const Vec3 lv{Dot(v, box.axis[0]), Dot(v, box.axis[1]), Dot(v, box.axis[2])};
  const Vec3& h = box.half;
  const double gap = margin + 0.5 * kSweepGap;
  const double pad = kSweepStallGap + kSweepSatSlack + 1e-12 * scale;
  double lo = 0.0, hi = t_max;      // fractions not proven apart (grown by pad)
  // Latest entry, earliest exit (grown by gap; the exit not cut at t_max).
  double lo_x = 0.0, hi_x = std::numeric_limits<double>::infinity();
  double next = 0.0;                // the entry before lo_x (0: the start)
  bool exact_apart = false;         // apart on a static axis within the pad
  bool deep = true;  // overlapping at t = 0 by more than kSweepSatDistinct on every axis
  bool clear = false;  // apart at t = 0 by more than kSweepSatDistinct on some axis
  int entry = -1;    // axis of lo_x (-1: none after the start)
  Vec3 entry_n;      // its unit normal (box frame), triangle towards the box
  // Axis n of length len > 0 (box frame; the box at the origin), with the
  // triangle's projections p0, p1, p2 on it, the box's radius rb and the
  // motion's projection d: true when the pair is proven apart. Entry and
  // exit fractions do not depend on len.
  auto axis = [&](const Vec3& n, double len, int id, double p0, double p1, double p2, double rb,
                  double d) __attribute__((always_inline)) {
    const double r = rb + gap * len;
    // Overlap at t: below <= d t <= above.
    const double below = std::min(p0, std::min(p1, p2)) - r;
    const double above = std::max(p0, std::max(p1, p2)) + r;
    const double distinct = kSweepSatDistinct * len;
    deep = deep && below < -distinct && above > distinct;
    clear = clear || below > distinct || above < -distinct;
    if (d != 0.0) {
      const double inv = 1.0 / d;
      const double enter = (d > 0.0 ? below : above) * inv;
      const double leave = (d > 0.0 ? above : below) * inv;
      const double slack = pad * len * std::fabs(inv);
      lo = std::max(lo, enter - slack);
      hi = std::min(hi, leave + slack);
      if (enter > lo_x) {
        next = lo_x;
        lo_x = enter;
        entry = id;
        entry_n = n * ((d > 0.0 ? -1.0 : 1.0) / len);
      } else {
        next = std::max(next, enter);
      }
      hi_x = std::min(hi_x, leave);
    } else {
      const double pad_n = pad * len;
      if (below > pad_n || above < -pad_n) return true;
      exact_apart = exact_apart || below > 0.0 || above < 0.0;
    }
    return !(lo <= hi);
  };
  auto apart = [&] {
    out.state = SweepSatResult::State::kApart;
    return out;
  };
  const Vec3 e[3] = {p[1] - p[0], p[2] - p[1], p[0] - p[2]};
  const Vec3 nf = Cross(e[0], p[2] - p[0]);
  const double nf_sq = nf.LengthSq();
  const bool has_face = nf_sq > 0.0;
  if (has_face && axis(nf, std::sqrt(nf_sq), 0, Dot(p[0], nf), Dot(p[1], nf), Dot(p[2], nf),
                      std::fabs(nf.x) * h.x + std::fabs(nf.y) * h.y + std::fabs(nf.z) * h.z,
                      Dot(lv, nf))) {
    return apart();
  }
  // The box's axes and the crosses with them have zero coordinates: their
  // dot products skip those terms (the same sums: x + 0 is x).
  if (axis({1, 0, 0}, 1.0, 1, p[0].x, p[1].x, p[2].x, h.x, lv.x) ||
      axis({0, 1, 0}, 1.0, 2, p[0].y, p[1].y, p[2].y, h.y, lv.y) ||
      axis({0, 0, 1}, 1.0, 3, p[0].z, p[1].z, p[2].z, h.z, lv.z)) {
    return apart();
  }
  // Cross of box axis k and triangle edge j: n[k] is 0, i and l the others.
  auto cross = [&](const Vec3& n, double min_sq, int id, double Vec3::*i, double Vec3::*l)
                   __attribute__((always_inline)) {
    auto dot = [&](const Vec3& x) { return x.*i * n.*i + x.*l * n.*l; };
    const double len_sq = dot(n);
    return len_sq > min_sq &&
           axis(n, std::sqrt(len_sq), id, dot(p[0]), dot(p[1]), dot(p[2]),
                std::fabs(n.*i) * h.*i + std::fabs(n.*l) * h.*l, dot(lv));
  };
  for (int j = 0; j < 3; ++j) {
    const Vec3& ej = e[j];
    const double min_sq = 1e-20 * ej.LengthSq();  // near-parallel below this
    if (cross({0.0, -ej.z, ej.y}, min_sq, 4 + j, &Vec3::y, &Vec3::z) ||
        cross({ej.z, 0.0, -ej.x}, min_sq, 7 + j, &Vec3::x, &Vec3::z) ||
        cross({-ej.y, ej.x, 0.0}, min_sq, 10 + j, &Vec3::x, &Vec3::y)) {
      return apart();
    }
  }
  if (!has_face) return out;
  auto face = [&] { return Cross(tri[1] - tri[0], tri[2] - tri[0]).Normalized(); };
  auto to_mesh = [&](const Vec3& n) {
    return box.axis[0] * n.x + box.axis[1] * n.y + box.axis[2] * n.z;
  };
  if (deep) {
    const Vec3 f = face();
    out.state = SweepSatResult::State::kHit;
    out.hit.hit = true;
    out.hit.started_inside = true;
    out.hit.t = 0.0;
    out.hit.normal = f * (Dot(f, v) > 0.0 ? -1.0 : 1.0);
    out.hit.point = ClosestPointOnTriangle(box.center, tri[0], tri[1], tri[2]);
    return out;
  }
  // A closed-form hit: one generic feature pair entering last.
  const double len = v.Length();
  if (exact_apart || !clear || entry < 0 || !(lo_x <= hi_x) || !(lo_x <= t_max) ||
      !((hi_x - lo_x) * len > kSweepSatDistinct) || !((lo_x - next) * len > kSweepSatDistinct)) {
    return out;
  }
  const double t = lo_x;
  const Vec3 at = lv * t;  // the box's centre at t, box frame
  const double tiny = 1e-9 * scale;
  // The box's vertex towards the triangle (farthest along -entry_n), with
  // the coordinate along axis `free` (3: none) left at the centre; false
  // when a box face or edge lies across the normal (no single vertex).
  Vec3 q = at;
  auto towards = [&](int free) {
    for (int k = 0; k < 3; ++k) {
      if (k == free) continue;
      if (!(std::fabs(entry_n[k]) > kSweepSatSine)) return false;
      q[k] += entry_n[k] > 0.0 ? -h[k] : h[k];
    }
    return true;
  };
  Vec3 point;
  bool use_face = false;  // a vertex or edge of the triangle with no active edge through it
  if (entry == 0) {
    // A box vertex on the face: strictly inside the triangle.
    if (!towards(3)) return out;
    q -= entry_n * margin;
    double w[3];  // w[j]: weight of vertex j + 2, times |nf|^2
    for (int j = 0; j < 3; ++j) {
      w[j] = Dot(Cross(e[j], q - p[j]), nf);
      if (!(w[j] > 1e-9 * nf_sq)) return out;
    }
    const double sum = w[0] + w[1] + w[2];
    point = tri[0] * (w[1] / sum) + tri[1] * (w[2] / sum) + tri[2] * (w[0] / sum);
  } else if (entry <= 3) {
    // A box face on a triangle vertex: the one nearest the box along the
    // normal, strictly inside the face.
    const int k = entry - 1;
    const double ht[3] = {Dot(p[0], entry_n), Dot(p[1], entry_n), Dot(p[2], entry_n)};
    const int i = (ht[0] >= ht[1] && ht[0] >= ht[2]) ? 0 : (ht[1] >= ht[2] ? 1 : 2);
    for (int j = 1; j < 3; ++j) {
      // Each edge from vertex i must leave the box's face by a clear angle.
      const int o = (i + j) % 3;
      if (!(ht[i] - ht[o] > kSweepSatSine * (p[i] - p[o]).Length())) return out;
    }
    for (int j = 0; j < 3; ++j) {
      if (j != k && !(std::fabs(p[i][j] - at[j]) < h[j] - tiny)) return out;
    }
    point = tri[i];
    // Edges i (i to i+1) and i+2 (i+2 to i) hold the vertex.
    use_face = !((active >> i) & 1u) && !((active >> ((i + 2) % 3)) & 1u);
  } else {
    // A box edge along axis k on triangle edge j (vertex j to j+1): the
    // closest points of the two lines (Ericson, RTCD 5.1.8) strictly inside both.
    const int k = (entry - 4) / 3, j = (entry - 4) % 3;
    if (!towards(k)) return out;
    const Vec3 rr = q - p[j];
    const double b = e[j][k], c = rr[k], ee = Dot(e[j], e[j]), f = Dot(e[j], rr);
    const double den = ee - b * b;  // |e|^2 sin^2 of the edges' angle
    if (!(den > kSweepSatSine * kSweepSatSine * ee)) return out;  // a contact segment
    const double s = (f - b * c) / den;       // along the triangle's edge, in [0, 1]
    const double u = (b * f - c * ee) / den;  // along the box's edge, in [-h, h]
    const double el = std::sqrt(ee);
    if (!(s * el > tiny && (1.0 - s) * el > tiny && std::fabs(u) < h[k] - tiny)) return out;
    point = tri[j] + (tri[(j + 1) % 3] - tri[j]) * s;
    use_face = !((active >> j) & 1u);
  }
  Vec3 normal = to_mesh(entry_n);
  if (entry == 0 || use_face) {
    // The face normal on the face; on an inactive edge or vertex when it
    // does not point along the motion (SweepConvexTriangle).
    const Vec3 f = face();
    const double side = Dot(f, normal);
    // A normal in the face's plane leaves the face's side to rounding.
    if (entry != 0 && !(std::fabs(side) > 1e-6)) return out;
    const Vec3 fn = f * (side >= 0.0 ? 1.0 : -1.0);
    if (entry == 0 || Dot(fn, v) <= 0.0) normal = fn;
  }
  out.state = SweepSatResult::State::kHit;
  out.hit.hit = true;
  out.hit.t = t;
  out.hit.normal = normal;
  out.hit.point = point;
  return out;
}

namespace triangle_convex_detail {

/// Whether the triangle's point of weights `l` lies on an edge whose flag is
/// set in `active` (edge e runs from vertex e to e + 1 and holds the point
/// when the opposite weight is 0; a vertex lies on its two edges).
inline bool OnActiveEdge(const double l[3], uint8_t active) {
  for (int e = 0; e < 3; ++e) {
    if (l[(e + 2) % 3] <= 0.0 && ((active >> e) & 1u)) return true;
  }
  return false;
}

/// The normal the cast (SweepConvexTriangle) reports for a contact at the
/// triangle's point of weights `l` with direction `nrm` (unit, triangle
/// towards the convex), for triangle unit normal `face`, active-edge flags
/// `active` and motion `v`: the face normal inside the face; on an inactive
/// edge or vertex the face normal too (Jolt's active edges) when it does not
/// point along the motion; never a normal along the motion.
inline Vec3 CastNormal(const Vec3& face, Vec3 nrm, const double l[3], uint8_t active,
                       const Vec3& v) {
  const bool on_face = l[0] > 0.0 && l[1] > 0.0 && l[2] > 0.0;
  if (on_face) {
    // Closest point inside the face: the direction is the face normal
    // exactly (GJK's |v| of ~1e-9 carries only its rounding).
    nrm = face * (Dot(face, nrm) >= 0.0 ? 1.0 : -1.0);
  } else if (!OnActiveEdge(l, active)) {
    // An inactive edge or vertex: the face normal, unless along the motion.
    const Vec3 fn = face * (Dot(face, nrm) >= 0.0 ? 1.0 : -1.0);
    if (Dot(fn, v) <= 0.0) nrm = fn;
  }
  // A direction from a simplex stalled within kSweepStallGap may be off;
  // never report one along the motion: the face normal facing it instead.
  if (Dot(nrm, v) > 0.0) nrm = face * (Dot(face, v) > 0.0 ? -1.0 : 1.0);
  return nrm;
}

/// Conservative advancement (the fallback of SweepConvexTriangle): from
/// `t_start` (a fraction the convex is known not to have reached the
/// triangle before), a full GJK at each step and t += distance / closing
/// speed (Mirtich 1996), stopped within kSweepGap of contact. Given up (no
/// advance possible, or out of iterations): capped, at t, with the closest
/// point on the triangle of a GJK at t.
template <typename CoreSupport>
TriangleConvexSweep AdvanceConvexTriangle(const Vec3 tri[3], const CoreSupport& core_support,
                                          double margin, const Vec3& v, double t_start,
                                          double t_max, double scale, uint8_t active,
                                          const Vec3& face) {
  TriangleConvexSweep out;
  double t = t_start;
  int i = 0;
  for (; i < kTriangleSweepMaxIterations; ++i) {
    const Vec3 shift = v * t;
    auto moved = [&](const Vec3& d) { return core_support(d) + shift; };
    const TriangleConvexDistance g = TriangleConvexGjk(tri, moved, margin, scale);
    // Contact: within the gap; or GJK stalled (rounding) with its lower bound
    // already within the gap and its upper bound within kSweepStallGap, where
    // no further advance is possible.
    if (g.distance <= kSweepGap ||
        (g.distance_lower <= 0.5 * kSweepGap && g.distance <= kSweepStallGap)) {
      out.hit = true;
      out.t = t;
      out.started_inside = t == 0.0;
      out.point = g.point_on_triangle;
      Vec3 n = g.cores_overlap ? face * (Dot(face, v) > 0.0 ? -1.0 : 1.0) : g.normal;
      // Inactive edge or vertex: the face normal (Jolt's active edges).
      const bool on_face = g.bary[0] > 0.0 && g.bary[1] > 0.0 && g.bary[2] > 0.0;
      if (on_face && !g.cores_overlap) {
        // Closest point inside the face: the direction is the face normal
        // exactly (GJK's |v| of ~1e-9 carries only its rounding).
        n = face * (Dot(face, n) >= 0.0 ? 1.0 : -1.0);
      } else if (!g.cores_overlap) {
        bool use_face = true;
        for (int e = 0; e < 3; ++e) {
          // Edge e (vertex e to e+1) holds the point when the opposite weight is 0.
          if (g.bary[(e + 2) % 3] <= 0.0 && ((active >> e) & 1u)) use_face = false;
        }
        if (use_face) {
          const Vec3 fn = face * (Dot(face, n) >= 0.0 ? 1.0 : -1.0);
          if (Dot(fn, v) <= 0.0) n = fn;
        }
      }
      out.normal = n;
      return out;
    }
    // Given up below (a break): this GJK at t gives the contact point.
    out.point = g.point_on_triangle;
    if (g.cores_overlap) break;  // cannot happen with distance > gap
    const double closing = -Dot(v, g.lower_axis);
    // The plane at the lower bound separates: never crossed when not closing.
    if (closing <= 0.0 && g.distance_lower > 0.0) return TriangleConvexSweep{};
    if (closing <= 0.0) break;
    const double dt = (g.distance_lower - 0.5 * kSweepGap) / closing;
    // No advance possible: the next step would repeat this one exactly
    // (the same GJK at the same t) until the cap, with the same answer.
    if (!(dt > 0.0)) break;
    t += dt;
    if (t > t_max) return TriangleConvexSweep{};
  }
  if (i == kTriangleSweepMaxIterations) {
    // Out of iterations after an advance (t <= t_max): the point of a GJK
    // at t, where the convex is reported (a rare path: one more GJK).
    const Vec3 shift = v * t;
    auto moved = [&](const Vec3& d) { return core_support(d) + shift; };
    out.point = TriangleConvexGjk(tri, moved, margin, scale).point_on_triangle;
  }
  // Capped: report the lower bound as the contact.
  out.hit = true;
  out.capped = true;
  out.t = std::min(t, t_max);
  out.normal = face * (Dot(face, v) > 0.0 ? -1.0 : 1.0);
  return out;
}


}  // namespace triangle_convex_detail

/// The cast alone (SweepConvexTriangle's default shortcut).
struct NoCastShortcut {};

/// First contact of the convex (core_support at its start position, grown by
/// `margin`) translating by `v` for t in [0, t_max] with triangle `tri`.
/// `active`: active-edge flags; a contact on an inactive edge or vertex
/// reports the face normal (when it does not point along the motion).
/// `shortcut(face, &out)`, tried once when the cast has first advanced
/// (face: the triangle's unit normal): true when it proved `out` the cast's
/// answer in closed form (CylinderTriangleSweep), false to go on.
///
/// GJK ray cast (van den Bergen, "Ray Casting against General Convex Objects
/// with Application to Continuous Collision Detection", 2004; as Jolt's
/// GJKClosestPoint::CastShape): one GJK simplex of the Minkowski difference
/// core - triangle, kept relative to the moving point -v t, so each advance
/// t += (lower bound - margin) / closing speed along the latest support
/// plane (conservative: never past the time of impact, stopped half a
/// kSweepGap short) reuses the simplex instead of restarting GJK. A hit is
/// declared once GJK has converged at t (so the normal is GJK's converged
/// axis) with the distance within kSweepGap of the margin.
///
/// The simplex's closest point is the origin's projection on any triangle
/// but a sliver, with weights by triple products (simplex.h,
/// kProjectionUnlessSliver): near contact |v| is ~1e-9 m against points
/// metres long, where the weighted sum's direction (and a thin triangle's
/// Lagrange weights) are rounding noise, ~1e-7 rad at ~200 m from the
/// origin: the lower bounds then scattered by ~1e-6 m, and casts stalled
/// into restarts and conservative advancement, some to its cap, a lower
/// bound only (big_level: 82 of 3163 casts to the fallback, now none).
template <typename CoreSupport, typename Shortcut = NoCastShortcut>
TriangleConvexSweep SweepConvexTriangle(const Vec3 tri[3], const CoreSupport& core_support,
                                        double margin, const Vec3& v_in, double t_max,
                                        double scale, uint8_t active,
                                        const Shortcut& shortcut = {}) {
  using triangle_convex_detail::SimplexPoint;
  // The motion and the triangle's vertices as locals: read through the
  // references, GCC reloads them after every out-of-line call of the loop
  // (the simplex solver, a hull's support) and stores copies of them to the
  // stack again each iteration (~45 instructions an iteration).
  const Vec3 v = v_in;
  TriangleConvexSweep out;
  const Vec3 face = Cross(tri[1] - tri[0], tri[2] - tri[0]).Normalized();
  // The triangle's plane first (two support calls): the convex must reach
  // the plane to touch the triangle, so wholly on one side and not reaching
  // it within t_max is a miss. The lower of the two support points starts
  // the simplex.
  SimplexPoint first;
  first.l[0] = 1.0;
  first.l[1] = first.l[2] = 0.0;
  // Wholly on one side, the cast starts where the convex comes within half
  // the gap of the plane (the advance its first support plane would give).
  double t_plane = 0.0;
  {
    const double d = Dot(face, tri[0]);
    // Height of the convex's lowest point above the plane, and depth of its
    // highest point below it (one of them positive when wholly on one side;
    // the highest point is not needed above the plane).
    const Vec3 low = core_support(-face);
    const double lowest_above = Dot(face, low) - margin - d;
    const bool above = lowest_above > kSweepGap;
    const Vec3 high = above ? low : core_support(face);
    const double highest_below = above ? 0.0 : d - Dot(face, high) - margin;
    const double dv = Dot(face, v);
    const double side = above ? lowest_above : highest_below;
    const double closing = above ? -dv : dv;
    if (side > kSweepGap) {
      if (!(closing > 0.0)) return out;
      t_plane = (side - 0.5 * kSweepGap) / closing;
      if (t_plane > t_max) return out;
    }
    first.p = above || !(highest_below > kSweepGap) ? low : high;
    first.w = first.p + v * t_plane - tri[0];
  }
  const Vec3 tri0 = tri[0], tri1 = tri[1], tri2 = tri[2];  // (see v above)
  auto tri_support = [&](const Vec3& d, double l[3]) {
    const double x0 = Dot(tri0, d), x1 = Dot(tri1, d), x2 = Dot(tri2, d);
    const int i = (x0 >= x1 && x0 >= x2) ? 0 : (x1 >= x2 ? 1 : 2);
    l[0] = l[1] = l[2] = 0.0;
    l[i] = 1.0;
    return i == 0 ? tri0 : (i == 1 ? tri1 : tri2);
  };
  auto tri_point = [&](const double l[3]) {
    return tri0 * l[0] + tri1 * l[1] + tri2 * l[2];
  };
  // Simplex points w = core point + v t - triangle point (relative to the
  // moving point); p: the core point at t = 0, l: triangle weights.
  SimplexPoint s[4];
  s[0] = first;
  int n = 1;
  double lam[4] = {1, 0, 0, 0};
  Vec3 dir = s[0].w;  // closest point of the simplex to the origin
  double t = t_plane;
  const double eps_abs = 1e-13 * scale;
  double prev_vv = std::numeric_limits<double>::infinity();
  bool overlap = false;
  bool contact = false;
  bool restarted = false;
  SimplexPoint last = s[0];  // the latest support point
  auto restart = [&] {
    restarted = true;
    s[0] = last;
    n = 1;
    lam[0] = 1.0;
    dir = s[0].w;
    prev_vv = std::numeric_limits<double>::infinity();
  };
  // Stalled in rounding after a restart, with no support plane beyond
  // half the gap (the caller's condition): contact when the distance is
  // within kSweepStallGap (the normal is then checked against the motion).
  double vlen = 0.0;
  auto stalled = [&] { return vlen - margin <= kSweepStallGap; };
  bool tried = false;  // the shortcut, once
  for (int it = 0; it < 2 * kTriangleSweepMaxIterations; ++it) {
    if constexpr (!std::is_same_v<Shortcut, NoCastShortcut>) {
      // Once the cast has advanced (apart at t = 0, closing): a pair it has
      // not advanced is mostly one starting inside or touching, which the
      // shortcut does not answer (cylinder.json sweeps: 27.13M instructions
      // so, 27.69M trying after 3 iterations whatever t).
      if (!tried && t > 0.0) {
        tried = true;
        TriangleConvexSweep closed;
        if (shortcut(face, &closed)) return closed;
      }
    }
    const double vv = dir.LengthSq();
    if (vv <= eps_abs * eps_abs) {
      overlap = true;
      break;
    }
    vlen = std::sqrt(vv);
    SimplexPoint p;
    p.p = core_support(-dir);
    p.w = p.p + v * t - tri_support(dir, p.l);
    const double vw = Dot(dir, p.w);
    const double lower = vw / vlen;
    // The same core point and triangle vertex as a simplex point: nothing new.
    bool dup = false;
    for (int i = 0; i < n; ++i) {
      dup = dup || (s[i].p == p.p && s[i].l[0] == p.l[0] && s[i].l[1] == p.l[1]);
    }
    // The support plane separates by more than the margin: advance to it,
    // unless the step is below t's rounding (converged onto the plane: the
    // same step again would loop to the cap) or its distance below the
    // convergence test's tolerance (|v|^2 - v.w <= 1e-12 |v|^2 + eps^2, over
    // |v|): such a step only restarts the descent, ~1e-15 m at a time.
    bool advance = lower - margin > 0.5 * kSweepGap;
    double dt = 0.0;
    if (advance) {
      const double closing = -Dot(v, dir) / vlen;
      if (!(closing > 0.0)) return out;
      const double step = lower - margin - 0.5 * kSweepGap;
      dt = step / closing;
      advance = t + dt != t && step * vlen > 1e-12 * vv + eps_abs * eps_abs;
    }
    if (advance) {
      t += dt;
      if (t > t_max) return out;
      // Simplex points recomputed at the new t (not shifted: no drift).
      const Vec3 at = v * t;
      for (int i = 0; i < n; ++i) s[i].w = s[i].p + at - tri_point(s[i].l);
      p.w = p.p + at - tri_point(p.l);
      prev_vv = std::numeric_limits<double>::infinity();
      restarted = false;
    } else {
      if (vv - vw <= 1e-12 * vv + eps_abs * eps_abs) {
        // Converged at t without a separating plane beyond the gap: contact
        // when the distance is within kSweepStallGap (rounding keeps some
        // pairs a little above kSweepGap); otherwise the fallback below.
        contact = vlen - margin <= kSweepStallGap;
        break;
      }
      if (dup) {
        // The support point is already in the simplex (converged up to
        // rounding): contact within kSweepGap, else one restart below.
        if (vlen - margin <= kSweepGap) {
          contact = true;
          break;
        }
        if (restarted) {
          contact = stalled();
          break;
        }
        restart();
        continue;
      }
    }
    last = p;
    // The new point goes after the simplex of `dir`, which stands (s[0..n),
    // lam) unless the step makes progress: a step without progress after a
    // restart ends the cast at `dir`, whose triangle point is the contact
    // point (not that of the step's rejected simplex, up to the convex's
    // size away).
    if (!dup) s[n] = p;
    const internal::SimplexClosest r =
        triangle_convex_detail::CastClosest(s, dup ? n : n + 1);
    if (r.inside) {
      overlap = true;  // the tetrahedron holds the moving point
      n = 4;
      for (int k = 0; k < 4; ++k) lam[k] = r.weight[k];
      break;
    }
    if (r.vv >= prev_vv) {
      // No progress (rounding, typically a flat simplex near a face-face
      // contact): GJK again from the latest support point, once per advance
      // (as Jolt's CastShape), then the fallback below; within kSweepGap
      // already, contact (as for a repeated support point above).
      if (restarted || vlen - margin <= kSweepGap) {
        contact = stalled();
        break;
      }
      restart();
      continue;
    }
    triangle_convex_detail::Keep(r, s, &n, lam);
    prev_vv = r.vv;
    dir = r.v;
  }
  if ((!contact && !overlap) || (overlap && t > 0.0)) {
    // Stalled in rounding farther than kSweepStallGap (a flat simplex near a
    // face-face contact), capped, or a tetrahedron holding the moving point
    // after an advance (which kept it apart, so also rounding): conservative
    // advancement from t, a proven lower bound, decides.
    return triangle_convex_detail::AdvanceConvexTriangle(tri, core_support, margin, v, t, t_max,
                                                         scale, active, face);
  }
  out.hit = true;
  out.t = t;
  out.started_inside = t == 0.0;
  double l[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) l[k] += s[i].l[k] * lam[i];
  }
  out.point = tri[0] * l[0] + tri[1] * l[1] + tri[2] * l[2];
  if (overlap) {
    out.normal = face * (Dot(face, v) > 0.0 ? -1.0 : 1.0);
    return out;
  }
  out.normal = triangle_convex_detail::CastNormal(face, dir.Normalized(), l, active, v);
  return out;
}

}  // namespace hitbox
