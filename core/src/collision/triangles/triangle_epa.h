// Penetration of a convex into a triangle by the Expanding Polytope Algorithm
// (van den Bergen 2001) on the Minkowski difference core - triangle.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "collision/triangles/triangle_gjk.h"
#include "geometry/triangle_queries.h"
#include "hitbox/math/math.h"

namespace hitbox {

/// Penetration of a convex (core + margin) into a triangle, mesh frame.
struct TriangleConvexPenetration {
  /// False when no contact could be computed (no enclosing tetrahedron, or a
  /// degenerate triangle for TrianglePolytopePenetration).
  bool valid = false;
  /// 0: EPA converged (or capped on its best face), or the closed form.
  /// Otherwise EPA broke down (2 flat start tetrahedron, 3 degenerate new
  /// face or horizon overflow, 4 no face left, 5 origin outside the polytope
  /// after rounding on slivers of a curved core) and the answer is the best
  /// of the polytope's face normals, the triangle's normals n and the inner
  /// axis (TriangleConvexEpa) by the exact support h(n) of the Minkowski
  /// difference: still a separating move (depth, normal), perhaps longer
  /// than the shortest. 1 no tetrahedron: not valid, unless the core has an
  /// inner axis (then the fallback's answer).
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

/// Whether TriangleConvexEpa takes the inner axis of a core on triangle
/// `tri`: not a sliver (WideFace). On slivers a curved core's EPA
/// stalls and its answer, the best of its own normals, stays as it was: the
/// deepest of those has been the move that separates a huge cylinder from
/// a sliver grid (HugeCylindersAroundSliversSeparate), where the inner
/// axis's shorter move for one triangle does not clear the others.
inline bool EpaTakesInnerAxis(const Vec3 tri[3]) {
  const Vec3 ab = tri[1] - tri[0], ac = tri[2] - tri[0], bc = tri[2] - tri[1];
  return WideFace(ab, ac, bc, Cross(ab, ac).LengthSq());
}

/// Start polytope of TriangleConvexEpa (see there).
enum class TriangleEpaStart : uint8_t { kPrismOrTetrahedron, kPrismOnly, kTetrahedronOnly };

/// Caps of TriangleConvexEpa: polytope vertices, face slots and iterations.
/// Each iteration scans the face slots a few times, so these bound the cost
/// of one call whatever the input (slivers of a curved core included).
inline constexpr int kTriangleEpaMaxVertices = 64;
inline constexpr int kTriangleEpaMaxFaces = 256;
inline constexpr int kTriangleEpaMaxIterations = 32;
/// A start tetrahedron whose volume (times 6) is below this fraction of the
/// product of its edge lengths from vertex 0, or below kTriangleEpaFlatVolume
/// * scale^3, is flat: EPA cannot expand it reliably and the fallback answers.
inline constexpr double kTriangleEpaFlatSine = 1e-9;
inline constexpr double kTriangleEpaFlatVolume = 1e-15;

/// EPA (van den Bergen 2001; as epa.h) on the Minkowski difference core -
/// triangle, until the support gap is below 1e-9 * scale; a flat start, a
/// breakdown or the caps end in the fallback, the best of the polytope's
/// and the triangle's normals by the exact support. `start`: the prism
/// along the triangle's normal when it holds the origin, else GJK's
/// tetrahedron `g` (or only one of them); `stop_below`: stop, not valid
/// (failure 6), once the depth is certainly below it; `prism_supports`: the
/// core's supports along -n and +n when the caller has them.
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
  int made = -1;  // the slot make_face wrote last
  auto make_face = [&](int a, int b, int c) {
    if (nfree == 0 && nf >= kMaxFaces) return false;
    const Vec3 n = Cross(verts[b].w - verts[a].w, verts[c].w - verts[a].w);
    const double len = n.Length();
    if (!(len > 0.0)) return false;
    made = nfree > 0 ? free_slots[--nfree] : nf++;
    Face& f = faces[made];
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
  // The inner axis (from the nearest point of the core's inner segment to the
  // triangle), visited before every face normal: worked out only when read
  // (stop_below, the fallback), as most calls converge without either. It
  // then comes first among the visited normals: the least h so far stands
  // only if strictly less than its own, as had it been visited first.
  bool inner_done = false, inner_axis = false;
  auto visit_inner = [&] {
    if (inner_done) return;
    inner_done = true;
    if constexpr (requires(const CoreSupport& c, Vec3* seg) { c.InnerSegment(seg); }) {
      if (!EpaTakesInnerAxis(tri)) return;
      Vec3 inner[2];
      core_support.InnerSegment(inner);
      Vec3 p = inner[0], q;
      const double d2 =
          inner[0] == inner[1]
              ? PointTriangleDistanceSq(p, tri[0], tri[1], tri[2], &q)
              : SegmentTriangleDistanceSq(inner[0], inner[1], tri[0], tri[1], tri[2], &p, &q);
      if (d2 > 0.0) {
        const Vec3 u = (q - p) / std::sqrt(d2);
        double l[3];
        const double h = Dot(core_support(u) - tri_support(-u, l), u);
        if (!(visited_h < h)) {
          visited_h = h;
          visited_n = u;
        }
        inner_axis = true;
      }
    }
  };
  auto fallback = [&](int reason) {
    visit_inner();
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
  if (!prism && start == TriangleEpaStart::kPrismOnly) {
    out.failure = 1;
    return out;
  }
  // The inner axis now when stop_below can read it (below and each
  // iteration); otherwise only the fallback does.
  if (stop_below > -std::numeric_limits<double>::infinity()) visit_inner();
  if (std::max(visited_h, 0.0) + margin + tol < stop_below) {
    out.failure = 6;
    return out;
  }
  if (!prism && g.tetrahedron != 4) {
    visit_inner();
    if (inner_axis) return fallback(1);
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
  // NearestFace's answer for the next iteration, found while the faces are
  // updated (the least (distance, slot) of the faces kept and made, which
  // is its first strictly least in slot order); -1: scan (the first
  // iteration, or a NaN distance, which the lexicographic order would not
  // place as the scan does).
  int next_best = -1;
  for (int it = 0; it < kTriangleEpaMaxIterations && !stopped; ++it) {
    best = next_best >= 0 ? next_best : NearestFace();
    next_best = -1;
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
    int kept = -1;  // the nearest face kept, as NearestFace would scan them
    double kept_d = 0.0;
    bool ordered = true;  // no NaN distance among them
    for (int i = 0; i < nf; ++i) {
      if (!faces[i].alive) continue;
      // Visible with a margin: near-coplanar slivers on curved cores must not
      // flip the polytope inside out.
      if (Dot(faces[i].n, w_new - faces[i].w0) <= tol) {
        const double d = faces[i].d;
        ordered = ordered && d == d;
        if (kept < 0 || d < kept_d) {
          kept = i;
          kept_d = d;
        }
        continue;
      }
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
      const double d = faces[made].d;
      ordered = ordered && d == d;
      if (kept < 0 || d < kept_d || (d == kept_d && made < kept)) {
        kept = made;
        kept_d = d;
      }
    }
    if (ordered) next_best = kept;
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
  // (Converged: the support along f.n is the last one taken, verts[nv].)
  double lh[3];
  const double h = converged ? Dot(verts[nv].w, f.n)
                             : Dot(core_support(f.n) - tri_support(-f.n, lh), f.n);
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

}  // namespace hitbox
