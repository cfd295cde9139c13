#include "geometry/heightfield.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "geometry/bvh_ray.h"
#include "geometry/float_rounding.h"
#include "geometry/triangle_queries.h"
#include "hitbox/format.h"
#include "hitbox/limits.h"

namespace hitbox {
namespace {

}  // namespace

Result<Heightfield> Heightfield::Build(uint32_t rows, uint32_t cols, double dx, double dz,
                                       std::span<const double> heights) {
  if (rows < 2 || cols < 2) {
    return Error{ErrorCode::kInvalidArgument, "rows, cols: need at least 2 each (got " +
                                                  std::to_string(rows) + " x " +
                                                  std::to_string(cols) + ")"};
  }
  if (static_cast<uint64_t>(rows) * cols > kMaxHeightfieldSamples) {
    return Error{ErrorCode::kInvalidArgument, "rows, cols: " + std::to_string(rows) + " x " +
                                                  std::to_string(cols) + " samples, at most " +
                                                  std::to_string(kMaxHeightfieldSamples)};
  }
  // Like every size: a denormal cell (5e-316) gave NaN raycast fractions.
  static_assert(kMinShapeSize == 1e-7 && kMaxShapeSize == 1e6, "update the messages below");
  if (!(dx >= kMinShapeSize && dx <= kMaxShapeSize)) {
    return Error{ErrorCode::kInvalidArgument,
                 "cell_size[0]: must be in [1e-7, 1e6], got " + FormatDouble(dx, 17)};
  }
  if (!(dz >= kMinShapeSize && dz <= kMaxShapeSize)) {
    return Error{ErrorCode::kInvalidArgument,
                 "cell_size[1]: must be in [1e-7, 1e6], got " + FormatDouble(dz, 17)};
  }
  const size_t n = static_cast<size_t>(rows) * cols;
  if (heights.size() != n) {
    return Error{ErrorCode::kInvalidArgument, "heights: " + std::to_string(heights.size()) +
                                                  " values, expected rows * cols = " +
                                                  std::to_string(n)};
  }
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(heights[i]) || !InCoordinateRange(heights[i])) {
      return Error{ErrorCode::kInvalidArgument, "heights[" + std::to_string(i) + "]: " +
                                                    FormatDouble(heights[i], 17) +
                                                    " is not finite or out of range (|h| <= " +
                                                    FormatDouble(kMaxCoordinate, 17) + ")"};
    }
  }
  Heightfield hf;
  hf.rows_ = rows;
  hf.cols_ = cols;
  hf.dx_ = dx;
  hf.dz_ = dz;
  hf.cos_active_ = std::cos(kActiveEdgeAngle);
  // Storage: exact 32-bit decimals, else exact floats, else doubles.
  int digits = -1;
  double d = 1.0;
  for (int k = 0; k <= 9 && digits < 0; ++k, d *= 10.0) {
    bool ok = true;
    for (size_t i = 0; i < n && ok; ++i) {
      const double q = std::nearbyint(heights[i] * d);
      ok = std::fabs(q) <= 2147483647.0 && q / d == heights[i];
    }
    if (ok) digits = k;
  }
  if (digits >= 0) {
    const double dd = std::pow(10.0, digits);
    hf.storage_ = Storage::kDecimal;
    hf.divisor_ = dd;
    hf.qheights_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      hf.qheights_[i] = static_cast<int32_t>(std::nearbyint(heights[i] * dd));
    }
  } else {
    bool floats = true;
    for (size_t i = 0; i < n && floats; ++i) {
      floats = static_cast<double>(static_cast<float>(heights[i])) == heights[i];
    }
    if (floats) {
      hf.storage_ = Storage::kFloat;
      hf.fheights_.resize(n);
      for (size_t i = 0; i < n; ++i) hf.fheights_[i] = static_cast<float>(heights[i]);
    } else {
      hf.storage_ = Storage::kDouble;
      hf.dheights_.assign(heights.begin(), heights.end());
    }
  }
  // Min/max hierarchy: level 1 from the samples, each next level from the last.
  uint32_t cells_x = cols - 1, cells_z = rows - 1;
  uint32_t block = 2;
  for (;;) {
    Level lv;
    lv.block_cells = block;
    lv.nx = (cells_x + block - 1) / block;
    lv.nz = (cells_z + block - 1) / block;
    lv.min.resize(static_cast<size_t>(lv.nx) * lv.nz);
    lv.max.resize(lv.min.size());
    for (uint32_t bz = 0; bz < lv.nz; ++bz) {
      for (uint32_t bx = 0; bx < lv.nx; ++bx) {
        float lo = std::numeric_limits<float>::infinity();
        float hi = -lo;
        if (hf.levels_.empty()) {
          for (uint32_t r = bz * 2; r <= std::min(bz * 2 + 2, rows - 1); ++r) {
            for (uint32_t c = bx * 2; c <= std::min(bx * 2 + 2, cols - 1); ++c) {
              lo = std::min(lo, RoundDown(hf.Height(r, c)));
              hi = std::max(hi, RoundUp(hf.Height(r, c)));
            }
          }
        } else {
          const Level& prev = hf.levels_.back();
          for (uint32_t j = bz * 2; j < std::min(bz * 2 + 2, prev.nz); ++j) {
            for (uint32_t i = bx * 2; i < std::min(bx * 2 + 2, prev.nx); ++i) {
              lo = std::min(lo, prev.min[static_cast<size_t>(j) * prev.nx + i]);
              hi = std::max(hi, prev.max[static_cast<size_t>(j) * prev.nx + i]);
            }
          }
        }
        lv.min[static_cast<size_t>(bz) * lv.nx + bx] = lo;
        lv.max[static_cast<size_t>(bz) * lv.nx + bx] = hi;
      }
    }
    const bool top = lv.nx == 1 && lv.nz == 1;
    hf.levels_.push_back(std::move(lv));
    if (top) break;
    block *= 2;
  }
  const Level& top = hf.levels_.back();
  hf.bounds_ = Aabb{Vec3{0.0, static_cast<double>(top.min[0]), 0.0},
                    Vec3{static_cast<double>(cols - 1) * dx, static_cast<double>(top.max[0]),
                         static_cast<double>(rows - 1) * dz}};
  return hf;
}

size_t Heightfield::HierarchyBytes() const {
  size_t bytes = 0;
  for (const Level& lv : levels_) bytes += (lv.min.capacity() + lv.max.capacity()) * sizeof(float);
  return bytes;
}

size_t Heightfield::MemoryBytes() const {
  return qheights_.capacity() * sizeof(int32_t) + fheights_.capacity() * sizeof(float) +
         dheights_.capacity() * sizeof(double) + HierarchyBytes() +
         levels_.capacity() * sizeof(Level);
}

void Heightfield::CellRange(uint32_t r, uint32_t c, double* lo, double* hi) const {
  const double a = Height(r, c), b = Height(r, c + 1), e = Height(r + 1, c),
               f = Height(r + 1, c + 1);
  *lo = std::min(std::min(a, b), std::min(e, f));
  *hi = std::max(std::max(a, b), std::max(e, f));
}

Aabb Heightfield::BlockBox(int level, uint32_t bx, uint32_t bz) const {
  const uint32_t cells = level == 0 ? 1 : levels_[static_cast<size_t>(level - 1)].block_cells;
  double lo, hi, x0, x1, z0, z1;
  BlockHeights(level, bx, bz, &lo, &hi);
  BlockSpan(bx, cells, cols_, dx_, &x0, &x1);
  BlockSpan(bz, cells, rows_, dz_, &z0, &z1);
  return {Vec3{x0, lo, z0}, Vec3{x1, hi, z1}};
}

void Heightfield::TriangleVertices(uint32_t t, Vec3 out[3]) const {
  const uint32_t cell = t / 2;
  const uint32_t r = cell / (cols_ - 1), c = cell % (cols_ - 1);
  out[0] = Point(r, c);
  if ((t & 1u) == 0) {
    out[1] = Point(r + 1, c);
    out[2] = Point(r + 1, c + 1);
  } else {
    out[1] = Point(r + 1, c + 1);
    out[2] = Point(r, c + 1);
  }
}

EdgeFlags Heightfield::ActiveEdges(uint32_t t) const {
  const uint32_t cell = t / 2;
  const uint32_t r = cell / (cols_ - 1), c = cell % (cols_ - 1);
  const uint32_t w = cols_ - 1;
  // Neighbour across each edge (UINT32_MAX: boundary). Windings are
  // consistent across the grid, so no normal needs flipping.
  uint32_t nb[3];
  if ((t & 1u) == 0) {
    nb[0] = c > 0 ? 2 * (r * w + c - 1) + 1 : UINT32_MAX;             // x = c
    nb[1] = r + 2 < rows_ ? 2 * ((r + 1) * w + c) + 1 : UINT32_MAX;   // z = r + 1
    nb[2] = t + 1;                                                     // diagonal
  } else {
    nb[0] = t - 1;                                                     // diagonal
    nb[1] = c + 2 < cols_ ? 2 * (r * w + c + 1) : UINT32_MAX;         // x = c + 1
    nb[2] = r > 0 ? 2 * ((r - 1) * w + c) : UINT32_MAX;               // z = r
  }
  Vec3 v[3];
  TriangleVertices(t, v);
  const Vec3 n1 = TriangleNormal(v[0], v[1], v[2]);
  EdgeFlags flags = 0;
  for (int e = 0; e < 3; ++e) {
    bool active = true;
    if (nb[e] != UINT32_MAX) {
      Vec3 u[3];
      TriangleVertices(nb[e], u);
      active = Dot(n1, TriangleNormal(u[0], u[1], u[2])) < cos_active_;
    }
    if (active) flags = static_cast<EdgeFlags>(flags | (1u << e));
  }
  return flags;
}

Result<TriangleMesh> Heightfield::ToMesh() const {
  std::vector<Vec3> vertices;
  vertices.reserve(static_cast<size_t>(rows_) * cols_);
  for (uint32_t r = 0; r < rows_; ++r) {
    for (uint32_t c = 0; c < cols_; ++c) vertices.push_back(Point(r, c));
  }
  std::vector<TriangleMesh::Indices> tris;
  tris.reserve(triangle_count());
  for (uint32_t r = 0; r + 1 < rows_; ++r) {
    for (uint32_t c = 0; c + 1 < cols_; ++c) {
      const uint32_t a = r * cols_ + c, b = (r + 1) * cols_ + c, d = (r + 1) * cols_ + c + 1,
                     e = r * cols_ + c + 1;
      tris.push_back({a, b, d});
      tris.push_back({a, d, e});
    }
  }
  return TriangleMesh::Build(vertices, tris);
}

bool Heightfield::RaycastClosest(const Vec3& origin, const Vec3& translation,
                                 MeshRayHit* hit, double max_fraction) const {
  if (translation.LengthSq() == 0.0) return false;
  // As TriangleMesh::RaycastClosest: one walk per largest axis of the ray.
  const WatertightRay ray(origin, translation);
  switch (ray.kz) {
    case 0: return RaycastClosestAxes<0>(origin, translation, ray, hit, max_fraction);
    case 1: return RaycastClosestAxes<1>(origin, translation, ray, hit, max_fraction);
    default: return RaycastClosestAxes<2>(origin, translation, ray, hit, max_fraction);
  }
}

template <int kZ>
bool Heightfield::RaycastClosestAxes(const Vec3& origin, const Vec3& translation,
                                     const WatertightRay& ray, MeshRayHit* hit,
                                     double max_fraction) const {
  const BvhRay bray(origin, translation);
  ShearedVertexCache cache;
  double best = std::min(1.0, max_fraction);
  uint32_t best_t = UINT32_MAX;
  struct Entry {
    int level;
    uint32_t bx, bz;
    double t;
  };
  // A block pushes at most four children for the one it pops, one level
  // down: at most 3 entries a level plus the root. Levels halve the longer
  // side, so there are fewer than log2(kMaxHeightfieldSamples). A fixed
  // array: no allocation per ray.
  constexpr int kMaxLevels = 26;
  static_assert(kMaxHeightfieldSamples <= (1ull << kMaxLevels));
  Entry stack[3 * kMaxLevels + 4];
  int top = 0;
  const int top_level = static_cast<int>(levels_.size());
  double t0;
  if (!bray.Enter(BlockBox(top_level, 0, 0), best, &t0)) return false;
  stack[top++] = {top_level, 0, 0, t0};
  while (top > 0) {
    const Entry e = stack[--top];
    if (e.t > best) continue;
    if (e.level == 0) {
      // The cell's samples (r, c), (r + 1, c), (r + 1, c + 1), (r, c + 1),
      // sheared once per ray (TriangleVertices' points, so the same values).
      const uint32_t r = e.bz, c = e.bx, s00 = r * cols_ + c, s10 = s00 + cols_;
      const auto sample = [&](uint32_t sr, uint32_t sc) {
        return [&, sr, sc](uint32_t) { return ShearVertexAxes<kZ>(ray, Point(sr, sc)); };
      };
      const ShearedVertex p00 = cache.Get(s00, sample(r, c)),
                          p10 = cache.Get(s10, sample(r + 1, c)),
                          p11 = cache.Get(s10 + 1, sample(r + 1, c + 1)),
                          p01 = cache.Get(s00 + 1, sample(r, c + 1));
      const uint32_t t = 2 * (e.bz * (cols_ - 1) + e.bx);
      for (uint32_t k = t; k < t + 2; ++k) {
        // As TriangleMesh::RaycastClosest: the fraction over the whole ray,
        // never clamped to the best so far (the answer does not depend on
        // the order of the visits).
        TriangleRayHit h;
        const bool hit_k = k == t ? RayTriangleSheared(p00, p10, p11, 1.0, &h)
                                  : RayTriangleSheared(p00, p11, p01, 1.0, &h);
        if (!hit_k || h.t > best) continue;
        if (h.t < best || best_t == UINT32_MAX || k < best_t) {
          best = h.t;
          best_t = k;
        }
      }
      continue;
    }
    // Children: up to 4 blocks of the level below, pushed far to near.
    const int cl = e.level - 1;
    const uint32_t nx = cl == 0 ? cols_ - 1 : levels_[static_cast<size_t>(cl - 1)].nx;
    const uint32_t nz = cl == 0 ? rows_ - 1 : levels_[static_cast<size_t>(cl - 1)].nz;
    // Each child's test is bray.Enter(BlockBox(cl, bx, bz), best) with the
    // slabs of its column (x) and row (z) computed once for the two children
    // that share them; the same operations in the same order, so the same
    // results (Enter's early exit does not change them: lo only grows, hi
    // only shrinks).
    const uint32_t cells = cl == 0 ? 1 : levels_[static_cast<size_t>(cl - 1)].block_cells;
    // (A column or row past the grid gets a range too, never used.)
    double x_in[2], x_out[2], z_in[2], z_out[2];
    bool x_met[2], z_met[2];
    for (uint32_t i = 0; i < 2; ++i) {
      double lo, hi;
      BlockSpan(e.bx * 2 + i, cells, cols_, dx_, &lo, &hi);
      x_met[i] = bray.Slab(0, lo, hi, &x_in[i], &x_out[i]);
      BlockSpan(e.bz * 2 + i, cells, rows_, dz_, &lo, &hi);
      z_met[i] = bray.Slab(2, lo, hi, &z_in[i], &z_out[i]);
    }
    Entry kids[4];
    int nk = 0;
    for (uint32_t j = 0; j < 2; ++j) {
      for (uint32_t i = 0; i < 2; ++i) {
        const uint32_t bx = e.bx * 2 + i, bz = e.bz * 2 + j;
        if (bx >= nx || bz >= nz) continue;
        double y_lo, y_hi, y_in, y_out;
        BlockHeights(cl, bx, bz, &y_lo, &y_hi);
        if (!x_met[i] || !z_met[j] || !bray.Slab(1, y_lo, y_hi, &y_in, &y_out)) continue;
        double lo = std::max(0.0, x_in[i]), hi = std::min(best, x_out[i]);
        lo = std::max(lo, y_in);
        hi = std::min(hi, y_out);
        lo = std::max(lo, z_in[j]);
        hi = std::min(hi, z_out[j]);
        if (lo <= hi) kids[nk++] = {cl, bx, bz, lo};
      }
    }
    // Far to near (insertion sort of at most 4), so the nearest is popped first.
    for (int i = 1; i < nk; ++i) {
      for (int j = i; j > 0 && kids[j - 1].t < kids[j].t; --j) std::swap(kids[j - 1], kids[j]);
    }
    for (int i = 0; i < nk; ++i) stack[top++] = kids[i];
  }
  if (best_t == UINT32_MAX) return false;
  if (hit != nullptr) {
    Vec3 v[3];
    TriangleVertices(best_t, v);
    const Vec3 nrm = FacingNormal(v[0], v[1], v[2], translation);
    hit->fraction = best;
    hit->normal = nrm;
    hit->triangle = best_t;
  }
  return true;
}

}  // namespace hitbox
