// A heightfield collider: rows x cols heights on a regular grid, the same
// two-sided surface as its ToMesh() (triangle order: ../shared/cases/FORMAT.md),
// 4 bytes a sample when a scaled integer or float is exact, with a min/max
// hierarchy for front-to-back rays and per-cell culls for overlaps and sweeps.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "geometry/triangle_mesh.h"
#include "hitbox/math/math.h"
#include "hitbox/status.h"

namespace hitbox {

/// Largest number of samples in a heightfield.
inline constexpr uint64_t kMaxHeightfieldSamples = 1ull << 26;

/// A validated, immutable heightfield with its min/max hierarchy.
class Heightfield {
 public:
  /// Validates rows, cols >= 2, dx, dz > 0 and finite, heights.size() ==
  /// rows * cols, every height finite and within kMaxCoordinate.
  [[nodiscard]] static Result<Heightfield> Build(uint32_t rows, uint32_t cols, double dx, double dz,
                                                 std::span<const double> heights);

  uint32_t rows() const { return rows_; }
  uint32_t cols() const { return cols_; }
  /// 2 * (rows - 1) * (cols - 1).
  uint32_t triangle_count() const { return 2 * (rows_ - 1) * (cols_ - 1); }
  /// Height of sample (r, c) as stored (decoded), metres.
  double Height(uint32_t r, uint32_t c) const {
    const size_t i = static_cast<size_t>(r) * cols_ + c;
    switch (storage_) {
      case Storage::kDecimal: return qheights_[i] / divisor_;
      case Storage::kFloat: return static_cast<double>(fheights_[i]);
      case Storage::kDouble: break;
    }
    return dheights_[i];
  }
  /// Local point p(r, c).
  Vec3 Point(uint32_t r, uint32_t c) const {
    return {static_cast<double>(c) * dx_, Height(r, c), static_cast<double>(r) * dz_};
  }
  const Aabb& bounds() const { return bounds_; }
  /// Bytes per sample of the height storage (4 or 8).
  int bytes_per_sample() const { return storage_ == Storage::kDouble ? 8 : 4; }
  /// Bytes held by samples and hierarchy (excluding this object).
  size_t MemoryBytes() const;
  /// Bytes of the min/max hierarchy alone.
  size_t HierarchyBytes() const;

  /// Vertices of triangle `t` (FORMAT.md numbering).
  void TriangleVertices(uint32_t t, Vec3 out[3]) const;
  /// Input index of triangle `t`: the same (no reordering); for generic surface queries.
  uint32_t OriginalIndex(uint32_t t) const { return t; }
  /// Active-edge flags of triangle `t` (same rule as TriangleMesh).
  EdgeFlags ActiveEdges(uint32_t t) const;
  /// The equivalent triangle mesh (same vertices and triangle numbering).
  [[nodiscard]] Result<TriangleMesh> ToMesh() const;

  /// Same contract as TriangleMesh::RaycastClosest.
  /// Hits beyond `max_fraction` are left out (the walk is pruned there).
  bool RaycastClosest(const Vec3& origin, const Vec3& translation, MeshRayHit* hit,
                      double max_fraction = 1.0) const;

  /// Calls visit(t) for both triangles of every cell whose box (x, z range and
  /// height range) overlaps `box`; visit returns false to stop.
  template <typename Visit>
  bool VisitOverlapping(const Aabb& box, Visit&& visit) const;

  /// Calls visit(t) for both triangles of every cell overlapping `box` whose
  /// box, grown by `grow`, the path reaches for t in [0, *max_t]; rows and
  /// columns are walked in the direction of `translation` (nearer cells
  /// first, roughly), and *max_t is read again before every cell.
  template <typename Path, typename Visit>
  bool VisitSwept(const Aabb& box, const Vec3& translation, const Path& path, const Vec3& grow,
                  const double* max_t, Visit&& visit) const;

 private:
  enum class Storage : uint8_t { kDecimal, kFloat, kDouble };
  struct Level {
    uint32_t block_cells;  // cells per block side (2^level)
    uint32_t nx, nz;       // blocks along x (columns) and z (rows)
    std::vector<float> min, max;
  };
  /// RaycastClosest for a ray whose largest axis is kZ (ray.kz == kZ).
  template <int kZ>
  bool RaycastClosestAxes(const Vec3& origin, const Vec3& translation, const WatertightRay& ray,
                          MeshRayHit* hit, double max_fraction) const;
  /// Box of block (bx, bz) at `level` (level 0: one cell, from the samples).
  Aabb BlockBox(int level, uint32_t bx, uint32_t bz) const;
  /// Height range of block (bx, bz) at `level` (BlockBox's y range).
  void BlockHeights(int level, uint32_t bx, uint32_t bz, double* lo, double* hi) const {
    if (level == 0) {
      CellRange(bz, bx, lo, hi);
      return;
    }
    const Level& lv = levels_[static_cast<size_t>(level - 1)];
    *lo = lv.min[static_cast<size_t>(bz) * lv.nx + bx];
    *hi = lv.max[static_cast<size_t>(bz) * lv.nx + bx];
  }
  /// Grid lines of block b of `cells` cells along an axis of `samples`
  /// samples spaced `step` (BlockBox's x or z range).
  static void BlockSpan(uint32_t b, uint32_t cells, uint32_t samples, double step, double* lo,
                        double* hi) {
    *lo = static_cast<double>(b * cells) * step;
    *hi = static_cast<double>(std::min((b + 1) * cells, samples - 1)) * step;
  }
  void CellRange(uint32_t r, uint32_t c, double* lo, double* hi) const;
  /// Rows r0..r1 and columns c0..c1 of the cells touching the box's x, z
  /// range (a box edge on a grid line touches both); the box overlaps bounds_.
  void BoxCells(const Aabb& box, uint32_t* r0, uint32_t* r1, uint32_t* c0, uint32_t* c1) const {
    const double cx0 = std::floor(box.min.x / dx_), cx1 = std::floor(box.max.x / dx_);
    const double cz0 = std::floor(box.min.z / dz_), cz1 = std::floor(box.max.z / dz_);
    const double last_c = static_cast<double>(cols_ - 2), last_r = static_cast<double>(rows_ - 2);
    *c0 = static_cast<uint32_t>(std::clamp(cx0 - 1.0, 0.0, last_c));
    *c1 = static_cast<uint32_t>(std::clamp(cx1, 0.0, last_c));
    *r0 = static_cast<uint32_t>(std::clamp(cz0 - 1.0, 0.0, last_r));
    *r1 = static_cast<uint32_t>(std::clamp(cz1, 0.0, last_r));
  }

  uint32_t rows_ = 0, cols_ = 0;
  double dx_ = 1.0, dz_ = 1.0;
  Storage storage_ = Storage::kDouble;
  double divisor_ = 1.0;  // 10^k: q / 10^k is exactly the input height
  std::vector<int32_t> qheights_;
  std::vector<float> fheights_;
  std::vector<double> dheights_;
  std::vector<Level> levels_;  // levels_[0] is level 1 (2x2-cell blocks); last is one block
  Aabb bounds_;
  double cos_active_ = 1.0;
};

template <typename Visit>
bool Heightfield::VisitOverlapping(const Aabb& box, Visit&& visit) const {
  if (!box.Overlaps(bounds_)) return true;
  uint32_t r0, r1, c0, c1;
  BoxCells(box, &r0, &r1, &c0, &c1);
  for (uint32_t r = r0; r <= r1; ++r) {
    for (uint32_t c = c0; c <= c1; ++c) {
      if (!BlockBox(0, c, r).Overlaps(box)) continue;
      const uint32_t t = 2 * (r * (cols_ - 1) + c);
      if (!visit(t) || !visit(t + 1)) return false;
    }
  }
  return true;
}

template <typename Path, typename Visit>
bool Heightfield::VisitSwept(const Aabb& box, const Vec3& translation, const Path& path,
                             const Vec3& grow, const double* max_t, Visit&& visit) const {
  if (!box.Overlaps(bounds_)) return true;
  uint32_t r0, r1, c0, c1;
  BoxCells(box, &r0, &r1, &c0, &c1);
  const bool rows_down = translation.z < 0.0, cols_down = translation.x < 0.0;
  for (uint32_t i = r0; i <= r1; ++i) {
    const uint32_t r = rows_down ? r1 - (i - r0) : i;
    for (uint32_t j = c0; j <= c1; ++j) {
      const uint32_t c = cols_down ? c1 - (j - c0) : j;
      const Aabb cell = BlockBox(0, c, r);
      if (!cell.Overlaps(box)) continue;
      double t_enter;
      if (!path.Enter(cell.Expanded(grow), *max_t, &t_enter)) continue;
      const uint32_t t = 2 * (r * (cols_ - 1) + c);
      if (!visit(t) || !visit(t + 1)) return false;
    }
  }
  return true;
}

}  // namespace hitbox
