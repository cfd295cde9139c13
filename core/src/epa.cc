#include "epa.h"

#include <cmath>
#include <limits>

namespace hitbox::internal {
namespace {

constexpr int kMaxVertices = 160;
constexpr int kMaxFaces = 2 * kMaxVertices;  // a closed triangulated hull has 2V - 4 faces
constexpr int kMaxHorizon = kMaxVertices;

struct Face {
  int v[3];
  /// Unit outward normal (zero for a sliver face, which is never picked).
  Vec3 n;
  /// Signed distance of the face's plane from the origin along n.
  double dist;
};

/// A convex polytope inside A - B, grown one support point at a time.
class Polytope {
 public:
  Polytope(const ConvexCore& a, const PlacedCore& b, double scale)
      : a_(a), b_(b), scale_(scale) {}

  int AddVertex(const Vec3& dir) {
    if (nv_ >= kMaxVertices) return -1;
    a_pt_[nv_] = a_.Support(dir);
    b_pt_[nv_] = b_.Support(-dir);
    w_[nv_] = a_pt_[nv_] - b_pt_[nv_];
    return nv_++;
  }
  int AddVertex(const Vec3& w, const Vec3& pa, const Vec3& pb) {
    if (nv_ >= kMaxVertices) return -1;
    w_[nv_] = w;
    a_pt_[nv_] = pa;
    b_pt_[nv_] = pb;
    return nv_++;
  }
  int vertex_count() const { return nv_; }
  const Vec3& w(int i) const { return w_[i]; }

  /// Builds the start tetrahedron from vertices i0..i3, oriented outward.
  void MakeTetrahedron(int i0, int i1, int i2, int i3) {
    const Vec3 centroid = (w_[i0] + w_[i1] + w_[i2] + w_[i3]) * 0.25;
    const int faces[4][3] = {{i0, i1, i2}, {i0, i3, i1}, {i0, i2, i3}, {i1, i3, i2}};
    nf_ = 0;
    for (const auto& f : faces) {
      const Vec3 n = Cross(w_[f[1]] - w_[f[0]], w_[f[2]] - w_[f[0]]);
      if (Dot(n, w_[f[0]] - centroid) >= 0.0) {
        PushFace(f[0], f[1], f[2]);
      } else {
        PushFace(f[0], f[2], f[1]);
      }
    }
  }

  /// Adds vertex `vi` to the hull: removes the faces it sees, stitches the
  /// horizon to it. Returns false when it sees no face or a cap is hit.
  bool Expand(int vi) {
    const Vec3& p = w_[vi];
    const double eps = 1e-14 * scale_;
    bool visible[kMaxFaces];
    int visible_count = 0;
    for (int f = 0; f < nf_; ++f) {
      const Face& face = faces_[f];
      visible[f] = Dot(face.n, p - w_[face.v[0]]) > eps;
      visible_count += visible[f] ? 1 : 0;
    }
    if (visible_count == 0) return false;
    // Horizon: directed edges of visible faces whose reverse is on no visible face.
    int horizon[kMaxHorizon][2];
    int nh = 0;
    for (int f = 0; f < nf_; ++f) {
      if (!visible[f]) continue;
      for (int e = 0; e < 3; ++e) {
        const int i = faces_[f].v[e];
        const int j = faces_[f].v[(e + 1) % 3];
        bool shared = false;
        for (int g = 0; g < nf_ && !shared; ++g) {
          if (g == f || !visible[g]) continue;
          for (int k = 0; k < 3; ++k) {
            if (faces_[g].v[k] == j && faces_[g].v[(k + 1) % 3] == i) {
              shared = true;
              break;
            }
          }
        }
        if (!shared) {
          if (nh >= kMaxHorizon) return false;
          horizon[nh][0] = i;
          horizon[nh][1] = j;
          ++nh;
        }
      }
    }
    const int kept_faces = nf_ - visible_count;
    if (kept_faces + nh > kMaxFaces) return false;
    int out = 0;
    for (int f = 0; f < nf_; ++f) {
      if (!visible[f]) faces_[out++] = faces_[f];
    }
    nf_ = out;
    for (int h = 0; h < nh; ++h) PushFace(horizon[h][0], horizon[h][1], vi);
    return true;
  }

  /// Index of the non-sliver face closest to the origin, or -1.
  int ClosestFace() const {
    int best = -1;
    double best_dist = std::numeric_limits<double>::infinity();
    for (int f = 0; f < nf_; ++f) {
      if (faces_[f].dist < best_dist) {
        best_dist = faces_[f].dist;
        best = f;
      }
    }
    return best;
  }
  const Face& face(int f) const { return faces_[f]; }

  /// Point of A (barycentric on the face) matching the origin's projection onto face f.
  Vec3 WitnessA(int f) const {
    const Face& face = faces_[f];
    const Vec3 p = face.n * face.dist;
    const Vec3& w0 = w_[face.v[0]];
    const Vec3& w1 = w_[face.v[1]];
    const Vec3& w2 = w_[face.v[2]];
    double l0 = std::max(0.0, Dot(face.n, Cross(w1 - p, w2 - p)));
    double l1 = std::max(0.0, Dot(face.n, Cross(w2 - p, w0 - p)));
    double l2 = std::max(0.0, Dot(face.n, Cross(w0 - p, w1 - p)));
    const double sum = l0 + l1 + l2;
    if (sum <= 0.0) return a_pt_[face.v[0]];
    l0 /= sum;
    l1 /= sum;
    l2 /= sum;
    return a_pt_[face.v[0]] * l0 + a_pt_[face.v[1]] * l1 + a_pt_[face.v[2]] * l2;
  }

 private:
  void PushFace(int i, int j, int k) {
    Face& f = faces_[nf_++];
    f.v[0] = i;
    f.v[1] = j;
    f.v[2] = k;
    const Vec3 n = Cross(w_[j] - w_[i], w_[k] - w_[i]);
    const double len = n.Length();
    const double size = (w_[j] - w_[i]).Length() * (w_[k] - w_[i]).Length();
    if (len > 1e-14 * size && len > 0.0) {
      f.n = n / len;
      f.dist = Dot(f.n, w_[i]);
    } else {
      f.n = Vec3{};
      f.dist = std::numeric_limits<double>::infinity();
    }
  }

  const ConvexCore& a_;
  const PlacedCore& b_;
  double scale_;
  Vec3 w_[kMaxVertices];
  Vec3 a_pt_[kMaxVertices];
  Vec3 b_pt_[kMaxVertices];
  int nv_ = 0;
  Face faces_[kMaxFaces];
  int nf_ = 0;
};

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
  for (const Vec3& d : kDirs) poly.AddVertex(d);

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
    const Vec3 r = poly.w(i) - poly.w(i0);
    const double d = (r - axis * Dot(r, axis)).LengthSq();
    if (d > best) best = d, i2 = i;
  }
  if (i2 < 0) return out;
  const Vec3 plane_n = Cross(poly.w(i1) - poly.w(i0), poly.w(i2) - poly.w(i0)).Normalized();
  best = 0.0;
  for (int i = 1; i < nv; ++i) {
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
    const Face& face = poly.face(f);
    const int vi = poly.AddVertex(face.n);
    if (vi < 0) break;
    const double support = Dot(face.n, poly.w(vi));
    if (support < depth) {
      depth = support;
      normal = face.n;
      witness = poly.WitnessA(f);
    }
    if (support - face.dist <= tol) {
      out.state = EpaState::kConverged;
      break;
    }
    if (!poly.Expand(vi)) break;
    f = poly.ClosestFace();
  }
  out.iterations = it;
  if (!std::isfinite(depth)) {
    out.state = EpaState::kDegenerate;
    return out;
  }
  out.normal = normal;
  out.depth = std::max(0.0, depth);
  out.point_a = witness;
  out.point_b = out.point_a - out.normal * out.depth;
  return out;
}

}  // namespace hitbox::internal
