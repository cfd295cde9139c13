#include "geometry/epa.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "geometry/simplex.h"

namespace hitbox::internal {
namespace {

constexpr int kMaxVertices = 128;
constexpr int kMaxFaces = 2 * kMaxVertices;  // a closed triangulated hull has 2V - 4 faces
constexpr int kMaxHorizon = 64;

/// A plain 3-vector without default initialisation, so that the polytope's
/// arrays cost nothing to set up.
struct RawVec {
  double x, y, z;
};
inline RawVec Raw(const Vec3& v) { return {v.x, v.y, v.z}; }
inline Vec3 Cooked(const RawVec& v) { return {v.x, v.y, v.z}; }

struct Face {
  /// Vertex indices, counter-clockwise seen from outside.
  int v[3];
  /// adj[e]: the face across edge v[e] -> v[e+1].
  int adj[3];
  /// Unit outward normal (zero for a sliver face, which is never picked).
  RawVec n;
  /// Signed distance of the face's plane from the origin along n (+inf for slivers).
  double dist;
  bool alive;
};

/// A convex polytope inside A - B, grown one support point at a time.
/// Faces keep their neighbours, so adding a point costs time proportional
/// to the faces it sees, not to the hull size.
class Polytope {
 public:
  Polytope(const ConvexCore& a, const PlacedCore& b, double scale)
      : a_(a), b_(b), scale_(scale) {}

  int AddVertex(const Vec3& dir) {
    const Vec3 pa = a_.Support(dir);
    const Vec3 pb = b_.Support(-dir);
    return AddVertex(pa - pb, pa, pb);
  }
  int AddVertex(const Vec3& w, const Vec3& pa, const Vec3& pb) {
    if (nv_ >= kMaxVertices) return -1;
    w_[nv_] = Raw(w);
    a_pt_[nv_] = Raw(pa);
    b_pt_[nv_] = Raw(pb);
    return nv_++;
  }
  int vertex_count() const { return nv_; }
  Vec3 w(int i) const { return Cooked(w_[i]); }

  /// Builds the start tetrahedron from vertices i0..i3, oriented outward.
  void MakeTetrahedron(int i0, int i1, int i2, int i3) {
    const Vec3 centroid = (w(i0) + w(i1) + w(i2) + w(i3)) * 0.25;
    const int faces[4][3] = {{i0, i1, i2}, {i0, i3, i1}, {i0, i2, i3}, {i1, i3, i2}};
    nf_ = 0;
    free_count_ = 0;
    for (const auto& f : faces) {
      const Vec3 n = Cross(w(f[1]) - w(f[0]), w(f[2]) - w(f[0]));
      if (Dot(n, w(f[0]) - centroid) >= 0.0) {
        NewFace(f[0], f[1], f[2]);
      } else {
        NewFace(f[0], f[2], f[1]);
      }
    }
    // Neighbours: the face holding the reversed edge.
    for (int f = 0; f < 4; ++f) {
      for (int e = 0; e < 3; ++e) {
        const int i = faces_[f].v[e];
        const int j = faces_[f].v[(e + 1) % 3];
        for (int g = 0; g < 4; ++g) {
          const int k = EdgeIndex(g, j, i);
          if (g != f && k >= 0) faces_[f].adj[e] = g;
        }
      }
    }
  }

  /// Adds vertex `vi` to the hull: removes the faces it sees, stitches the
  /// horizon to it. The visible region is grown from `seed_hint` (a face
  /// known to see the point) or else the face that sees it best, across shared edges only, so it is connected, and the horizon
  /// must be one closed loop; otherwise the hull is left unchanged. Returns
  /// false when the point sees no face, the horizon is broken or a cap is hit.
  bool Expand(int vi, int seed_hint = -1) {
    const Vec3 p = w(vi);
    const double eps = 1e-14 * scale_;
    ++stamp_;
    int seed = -1;
    if (seed_hint >= 0 && faces_[seed_hint].alive && Height(seed_hint, p) > eps) {
      seed = seed_hint;
    } else {
      double best = eps;
      for (int f = 0; f < nf_; ++f) {
        if (!faces_[f].alive) continue;
        const double h = Height(f, p);
        if (h > best) best = h, seed = f;
      }
    }
    if (seed < 0) return false;
    // Flood the visible region across shared edges.
    int visible[kMaxFaces];
    int nvis = 0;
    visible[nvis++] = seed;
    mark_[seed] = stamp_;
    for (int k = 0; k < nvis; ++k) {
      const Face& face = faces_[visible[k]];
      for (int e = 0; e < 3; ++e) {
        const int g = face.adj[e];
        if (mark_[g] != stamp_ && Height(g, p) > eps) {
          mark_[g] = stamp_;
          visible[nvis++] = g;
        }
      }
    }
    // Horizon edges (i -> j on a visible face, outer face across it).
    int hi[kMaxHorizon], hj[kMaxHorizon], outer[kMaxHorizon];
    int nh = 0;
    for (int k = 0; k < nvis; ++k) {
      const Face& face = faces_[visible[k]];
      for (int e = 0; e < 3; ++e) {
        if (mark_[face.adj[e]] == stamp_) continue;
        if (nh >= kMaxHorizon) return false;
        hi[nh] = face.v[e];
        hj[nh] = face.v[(e + 1) % 3];
        outer[nh] = face.adj[e];
        ++nh;
      }
    }
    // Order the edges into one closed loop: edge k+1 starts where edge k ends.
    for (int k = 0; k + 1 < nh; ++k) {
      int next = -1;
      for (int m = k + 1; m < nh; ++m) {
        if (hi[m] == hj[k]) {
          if (next >= 0) return false;  // two edges leave one vertex: not a simple loop
          next = m;
        }
      }
      if (next < 0) return false;
      std::swap(hi[k + 1], hi[next]);
      std::swap(hj[k + 1], hj[next]);
      std::swap(outer[k + 1], outer[next]);
    }
    if (nh < 3 || hj[nh - 1] != hi[0]) return false;
    if (ActiveFaces() - nvis + nh > kMaxFaces || free_count_ + (kMaxFaces - nf_) < nh) return false;

    for (int k = 0; k < nvis; ++k) Release(visible[k]);
    int created[kMaxHorizon];
    for (int k = 0; k < nh; ++k) {
      created[k] = NewFace(hi[k], hj[k], vi);
      Face& o = faces_[outer[k]];
      o.adj[EdgeIndex(outer[k], hj[k], hi[k])] = created[k];
      faces_[created[k]].adj[0] = outer[k];
    }
    for (int k = 0; k < nh; ++k) {
      faces_[created[k]].adj[1] = created[(k + 1) % nh];
      faces_[created[k]].adj[2] = created[(k + nh - 1) % nh];
    }
    return true;
  }

  /// Index of the non-sliver face closest to the origin, or -1.
  int ClosestFace() const {
    int best = -1;
    double best_dist = std::numeric_limits<double>::infinity();
    for (int f = 0; f < nf_; ++f) {
      if (faces_[f].alive && faces_[f].dist < best_dist) {
        best_dist = faces_[f].dist;
        best = f;
      }
    }
    return best;
  }
  Vec3 normal(int f) const { return Cooked(faces_[f].n); }
  int face_slots() const { return nf_; }
  bool alive(int f) const { return faces_[f].alive; }
  double dist(int f) const { return faces_[f].dist; }

  /// Point of A (barycentric on the face) matching the origin's projection onto face f.
  Vec3 WitnessA(int f) const {
    const Face& face = faces_[f];
    const Vec3 n = Cooked(face.n);
    const Vec3 p = n * face.dist;
    const Vec3 w0 = w(face.v[0]);
    const Vec3 w1 = w(face.v[1]);
    const Vec3 w2 = w(face.v[2]);
    double l0 = std::max(0.0, Dot(n, Cross(w1 - p, w2 - p)));
    double l1 = std::max(0.0, Dot(n, Cross(w2 - p, w0 - p)));
    double l2 = std::max(0.0, Dot(n, Cross(w0 - p, w1 - p)));
    const double sum = l0 + l1 + l2;
    if (sum <= 0.0) return Cooked(a_pt_[face.v[0]]);
    l0 /= sum;
    l1 /= sum;
    l2 /= sum;
    return Cooked(a_pt_[face.v[0]]) * l0 + Cooked(a_pt_[face.v[1]]) * l1 +
           Cooked(a_pt_[face.v[2]]) * l2;
  }

 private:
  double Height(int f, const Vec3& p) const {
    const Face& face = faces_[f];
    return Dot(Cooked(face.n), p - w(face.v[0]));
  }
  /// Position (0..2) of edge i -> j in face f, or -1.
  int EdgeIndex(int f, int i, int j) const {
    const int* v = faces_[f].v;
    for (int e = 0; e < 3; ++e) {
      if (v[e] == i && v[(e + 1) % 3] == j) return e;
    }
    return -1;
  }
  int ActiveFaces() const { return nf_ - free_count_; }
  void Release(int f) {
    faces_[f].alive = false;
    free_[free_count_++] = f;
  }

  int NewFace(int i, int j, int k) {
    const int slot = free_count_ > 0 ? free_[--free_count_] : nf_++;
    Face& f = faces_[slot];
    f.v[0] = i;
    f.v[1] = j;
    f.v[2] = k;
    f.adj[0] = f.adj[1] = f.adj[2] = slot;
    f.alive = true;
    mark_[slot] = 0;
    const Vec3 e1 = w(j) - w(i);
    const Vec3 e2 = w(k) - w(i);
    const Vec3 n = Cross(e1, e2);
    const double len = n.Length();
    if (len > 1e-14 * e1.Length() * e2.Length() && len > 0.0) {
      f.n = Raw(n / len);
      f.dist = Dot(n / len, w(i));
    } else {
      f.n = RawVec{0.0, 0.0, 0.0};
      f.dist = std::numeric_limits<double>::infinity();
    }
    return slot;
  }

  const ConvexCore& a_;
  const PlacedCore& b_;
  double scale_;
  RawVec w_[kMaxVertices];
  RawVec a_pt_[kMaxVertices];
  RawVec b_pt_[kMaxVertices];
  int nv_ = 0;
  Face faces_[kMaxFaces];
  int nf_ = 0;  // slots in use (alive or free)
  int free_[kMaxFaces];
  int free_count_ = 0;
  int mark_[kMaxFaces];
  int stamp_ = 0;
};

/// A GJK tetrahedron at most this flat (simplex.h's measure) does not
/// start EPA: too flat to expand reliably, the axis supports are added.
constexpr double kEpaStartFlatVolume = 1e-9;

/// True when GJK ended on a tetrahedron with the origin strictly inside.
bool GjkTetrahedronHoldsOrigin(const GjkResult& g) {
  return g.simplex_size == 4 && TetrahedronHoldsOrigin(g.simplex_w, kEpaStartFlatVolume);
}

/// h(n) = max over A - B of w.n for unit n (A's frame).
double SupportValue(const ConvexCore& a, const PlacedCore& b, const Vec3& n) {
  return Dot(n, a.Support(n) - b.Support(-n));
}

/// Minimises h(n) over unit n near n0 with Nelder-Mead (Nelder, Mead,
/// "A simplex method for function minimization", 1965) on n0's tangent
/// plane: derivative-free, so it copes with the kinks of h at faces and
/// edges. `gap` (upper minus lower depth bound) sets the start step. Fixed cap.
Vec3 RefineNormal(const ConvexCore& a, const PlacedCore& b, const Vec3& n0, double h0, double gap,
                  double scale) {
  constexpr int kMaxEvaluations = 240;
  const Vec3 t1 = AnyPerpendicular(n0);
  const Vec3 t2 = Cross(n0, t1);
  auto dir = [&](double u, double v) { return (n0 + t1 * u + t2 * v).Normalized(); };
  const double step =
      std::clamp(2.0 * std::sqrt(gap / std::max(h0, 1e-9 * scale)), 1e-7, 0.3);
  double x[3][2] = {{0.0, 0.0}, {step, 0.0}, {0.0, step}};
  double fx[3] = {h0, SupportValue(a, b, dir(step, 0.0)), SupportValue(a, b, dir(0.0, step))};
  int evals = 2;
  while (evals < kMaxEvaluations) {
    // Order: 0 best, 2 worst.
    int order[3] = {0, 1, 2};
    std::sort(order, order + 3, [&](int i, int j) { return fx[i] < fx[j]; });
    double xs[3][2];
    double fs[3];
    for (int k = 0; k < 3; ++k) {
      xs[k][0] = x[order[k]][0];
      xs[k][1] = x[order[k]][1];
      fs[k] = fx[order[k]];
    }
    for (int k = 0; k < 3; ++k) {
      x[k][0] = xs[k][0];
      x[k][1] = xs[k][1];
      fx[k] = fs[k];
    }
    const double size = std::max(std::fabs(x[1][0] - x[0][0]) + std::fabs(x[1][1] - x[0][1]),
                                 std::fabs(x[2][0] - x[0][0]) + std::fabs(x[2][1] - x[0][1]));
    if (size < 1e-12) break;
    const double c[2] = {0.5 * (x[0][0] + x[1][0]), 0.5 * (x[0][1] + x[1][1])};
    auto at = [&](double t, double* p) {
      p[0] = c[0] + t * (x[2][0] - c[0]);
      p[1] = c[1] + t * (x[2][1] - c[1]);
      ++evals;
      return SupportValue(a, b, dir(p[0], p[1]));
    };
    double xr[2];
    const double fr = at(-1.0, xr);
    if (fr < fx[0]) {
      double xe[2];
      const double fe = at(-2.0, xe);
      const bool take_e = fe < fr;
      x[2][0] = take_e ? xe[0] : xr[0];
      x[2][1] = take_e ? xe[1] : xr[1];
      fx[2] = take_e ? fe : fr;
    } else if (fr < fx[1]) {
      x[2][0] = xr[0];
      x[2][1] = xr[1];
      fx[2] = fr;
    } else {
      double xc[2];
      const double fc = at(0.5, xc);
      if (fc < fx[2]) {
        x[2][0] = xc[0];
        x[2][1] = xc[1];
        fx[2] = fc;
      } else {
        for (int k = 1; k < 3; ++k) {
          x[k][0] = 0.5 * (x[0][0] + x[k][0]);
          x[k][1] = 0.5 * (x[0][1] + x[k][1]);
          fx[k] = SupportValue(a, b, dir(x[k][0], x[k][1]));
          ++evals;
        }
      }
    }
  }
  int best = 0;
  for (int k = 1; k < 3; ++k) {
    if (fx[k] < fx[best]) best = k;
  }
  return dir(x[best][0], x[best][1]);
}

}  // namespace

EpaResult Epa(const ConvexCore& a, const ConvexCore& b, const Pose& b_in_a, const GjkResult& gjk) {
  const PlacedCore pb(b, b_in_a);
  const double scale = std::max(gjk.scale, 1e-300);
  Polytope poly(a, pb, scale);
  EpaResult out;

  // Candidate start points: the GJK simplex (holds the origin) plus supports
  // along the axes and diagonals of A's frame.
  for (int i = 0; i < gjk.simplex_size; ++i) {
    poly.AddVertex(gjk.simplex_w[i], gjk.simplex_a[i], gjk.simplex_b[i]);
  }
  static const Vec3 kDirs[14] = {{1, 0, 0},  {-1, 0, 0},  {0, 1, 0},   {0, -1, 0},  {0, 0, 1},
                                 {0, 0, -1}, {1, 1, 1},   {1, 1, -1},  {1, -1, 1},  {1, -1, -1},
                                 {-1, 1, 1}, {-1, 1, -1}, {-1, -1, 1}, {-1, -1, -1}};
  // A full GJK tetrahedron already holds the origin; otherwise add the
  // axis and diagonal supports so the start hull is full-dimensional.
  if (!GjkTetrahedronHoldsOrigin(gjk)) {
    for (const Vec3& d : kDirs) poly.AddVertex(d);
  }

  // Start tetrahedron: spread-out vertices (farthest point, line, plane).
  const int nv = poly.vertex_count();
  int i0 = 0, i1 = -1, i2 = -1, i3 = -1;
  double best = 0.0;
  for (int i = 1; i < nv; ++i) {
    const double d = (poly.w(i) - poly.w(i0)).LengthSq();
    if (d > best) best = d, i1 = i;
  }
  if (i1 < 0) return out;
  const Vec3 axis = (poly.w(i1) - poly.w(i0)).Normalized();
  best = 0.0;
  for (int i = 1; i < nv; ++i) {
    if (i == i1) continue;
    const Vec3 r = poly.w(i) - poly.w(i0);
    const double d = (r - axis * Dot(r, axis)).LengthSq();
    if (d > best) best = d, i2 = i;
  }
  if (i2 < 0) return out;
  const Vec3 plane_n = Cross(poly.w(i1) - poly.w(i0), poly.w(i2) - poly.w(i0)).Normalized();
  best = 0.0;
  for (int i = 1; i < nv; ++i) {
    if (i == i1 || i == i2) continue;
    const double d = std::fabs(Dot(poly.w(i) - poly.w(i0), plane_n));
    if (d > best) best = d, i3 = i;
  }
  if (i3 < 0 || best <= 1e-12 * scale) {
    // A flat difference: the origin is on its boundary, depth 0.
    out.normal = plane_n.LengthSq() > 0.0 ? plane_n : Vec3{0, 1, 0};
    if (Dot(out.normal, b_in_a.position) < 0.0) out.normal = -out.normal;
    return out;
  }
  poly.MakeTetrahedron(i0, i1, i2, i3);
  for (int i = 1; i < nv; ++i) {
    if (i != i1 && i != i2 && i != i3) poly.Expand(i);
  }

  const double tol = kEpaTolerance * scale;
  out.state = EpaState::kCapped;
  int f = poly.ClosestFace();
  // Keep the direction with the smallest support value seen: an upper bound
  // on the depth that is exact along its own normal.
  double depth = std::numeric_limits<double>::infinity();
  Vec3 normal{0, 1, 0};
  Vec3 witness;
  int it = 0;
  for (; it < kEpaMaxIterations && f >= 0; ++it) {
    const Vec3 face_n = poly.normal(f);
    const double face_dist = poly.dist(f);
    const int vi = poly.AddVertex(face_n);
    if (vi < 0) break;
    const double support = Dot(face_n, poly.w(vi));
    if (support < depth) {
      depth = support;
      normal = face_n;
      witness = poly.WitnessA(f);
    }
    if (support - face_dist <= tol) {
      out.state = EpaState::kConverged;
      break;
    }
    if (!poly.Expand(vi, f)) break;
    f = poly.ClosestFace();
  }
  out.iterations = it;
  if (!std::isfinite(depth)) {
    out.state = EpaState::kDegenerate;
    return out;
  }
  if (out.state == EpaState::kCapped) {
    // Either the polytope could not resolve a curved, nearly flat optimum
    // (e.g. a point near the axis of a cylinder), or rounding broke the hull
    // (near-coincident support points of a touching pair). Every direction's
    // support value is a valid upper bound, so take the best of the hull's
    // face normals and the GJK simplex's plane normals, then polish it.
    for (int k = 0; k < poly.face_slots(); ++k) {
      if (!poly.alive(k)) continue;
      const Vec3 n = poly.normal(k);
      if (n.LengthSq() == 0.0) continue;
      const double h = SupportValue(a, pb, n);
      if (h < depth) depth = h, normal = n, witness = a.Support(n);
    }
    for (int i = 0; i < gjk.simplex_size; ++i) {
      for (int j = i + 1; j < gjk.simplex_size; ++j) {
        for (int k = j + 1; k < gjk.simplex_size; ++k) {
          const Vec3 n = Cross(gjk.simplex_w[j] - gjk.simplex_w[i], gjk.simplex_w[k] - gjk.simplex_w[i])
                             .Normalized();
          if (n.LengthSq() == 0.0) continue;
          for (const Vec3& m : {n, -n}) {
            const double h = SupportValue(a, pb, m);
            if (h < depth) depth = h, normal = m, witness = a.Support(m);
          }
        }
      }
    }
    const double lower = f >= 0 ? poly.dist(f) : 0.0;
    const Vec3 refined = RefineNormal(a, pb, normal, depth, std::max(0.0, depth - lower), scale);
    const double refined_depth = SupportValue(a, pb, refined);
    if (refined_depth < depth) {
      normal = refined;
      depth = refined_depth;
      witness = a.Support(normal);
    }
  }
  out.normal = normal;
  out.depth = std::max(0.0, depth);
  out.point_a = witness;
  out.point_b = out.point_a - out.normal * out.depth;
  return out;
}

}  // namespace hitbox::internal
