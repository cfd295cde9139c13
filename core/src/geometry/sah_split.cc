#include "geometry/sah_split.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace hitbox {

void BuildBoxes::Set(size_t i, const Aabb& box) {
  uint16_t* q = q_.data() + 6 * i;
  for (int a = 0; a < 3; ++a) {
    q[a] = GridQuantize(box.min[a], lo_[a], step_[a], false);
    q[3 + a] = GridQuantize(box.max[a], lo_[a], step_[a], true);
  }
}

void CoarseBuildBoxes::Set(size_t i, const Aabb& box) {
  uint8_t* c = c_.data() + 6 * i;
  for (int a = 0; a < 3; ++a) {
    c[a] = static_cast<uint8_t>(GridQuantize(box.min[a], lo_[a], step_[a], false) >> 8);
    c[3 + a] = static_cast<uint8_t>(GridQuantize(box.max[a], lo_[a], step_[a], true) >> 8);
  }
}

namespace {

constexpr int kBins = 16;

// Bin of centroid coordinate c in [lo, lo + ext] (ext > 0; any ext, denormal
// included: the ratio is taken first, and NaN goes to bin 0).
int BinOf(double c, double lo, double ext) {
  const double f = (c - lo) / ext * kBins;
  return f >= kBins - 1 ? kBins - 1 : (f > 0.0 ? static_cast<int>(f) : 0);
}

// Leaves that `n` items fill: the cost of a side counts whole leaves, so
// splits that leave leaves full are preferred (a hierarchy node per leaves).
double Leaves(uint32_t n, uint32_t leaf_size) {
  return static_cast<double>((n + leaf_size - 1) / leaf_size);
}

// Orders `items` so the first `cut` have the least centroids along `axis`.
template <typename Boxes>
uint32_t MedianSplit(std::span<uint32_t> items, const Boxes& boxes, int axis, uint32_t cut) {
  std::nth_element(items.begin(), items.begin() + cut, items.end(), [&](uint32_t x, uint32_t y) {
    const double cx = boxes[x].min[axis] + boxes[x].max[axis];
    const double cy = boxes[y].min[axis] + boxes[y].max[axis];
    return cx != cy ? cx < cy : x < y;
  });
  return cut;
}

}  // namespace

template <typename Boxes>
uint32_t SahSplit(std::span<uint32_t> items, const Boxes& boxes, uint32_t leaf_size) {
  const uint32_t n = static_cast<uint32_t>(items.size());
  Aabb centroids;
  for (uint32_t i : items) centroids = centroids.Union(boxes[i].Center());
  const Vec3 ext = centroids.max - centroids.min;

  double best_cost = std::numeric_limits<double>::infinity();
  int best_axis = -1, best_bin = 0;
  for (int a = 0; a < 3; ++a) {
    if (!(ext[a] > 0.0)) continue;
    auto bin_of = [&](uint32_t i) { return BinOf(boxes[i].Center()[a], centroids.min[a], ext[a]); };
    std::array<Aabb, kBins> bin_box{};
    std::array<uint32_t, kBins> bin_count{};
    for (uint32_t i : items) {
      const int b = bin_of(i);
      bin_box[b] = bin_box[b].Union(boxes[i]);
      ++bin_count[b];
    }
    // Right-hand areas and counts for the splits after bin b.
    std::array<double, kBins> right_area{};
    std::array<uint32_t, kBins> right_count{};
    Aabb acc;
    uint32_t cnt = 0;
    for (int b = kBins - 1; b > 0; --b) {
      acc = acc.Union(bin_box[b]);
      cnt += bin_count[b];
      right_area[b] = cnt == 0 ? 0.0 : acc.SurfaceArea();
      right_count[b] = cnt;
    }
    acc = Aabb();
    cnt = 0;
    for (int b = 0; b < kBins - 1; ++b) {
      acc = acc.Union(bin_box[b]);
      cnt += bin_count[b];
      if (cnt == 0 || right_count[b + 1] == 0) continue;
      const double cost = acc.SurfaceArea() * Leaves(cnt, leaf_size) +
                          right_area[b + 1] * Leaves(right_count[b + 1], leaf_size);
      if (cost < best_cost) {
        best_cost = cost;
        best_axis = a;
        best_bin = b;
      }
    }
  }
  if (best_axis < 0 || !(best_cost > 0.0)) {
    // Coincident centroids, or boxes without area (no cost to compare): the
    // median along the centroids' longest axis.
    const int axis = (ext.x >= ext.y && ext.x >= ext.z) ? 0 : (ext.y >= ext.z ? 1 : 2);
    const uint32_t half = std::max(1u, (n / 2 + leaf_size / 2) / leaf_size * leaf_size);
    return MedianSplit(items, boxes, axis, std::min(half, n - 1));
  }
  // The split's count rounded to whole leaves (both sides keep at least
  // one): the items ordered by centroid along the chosen axis, cut there.
  const int a = best_axis;
  const uint32_t m = static_cast<uint32_t>(
      std::partition(items.begin(), items.end(),
                     [&](uint32_t i) {
                       return BinOf(boxes[i].Center()[a], centroids.min[a], ext[a]) <= best_bin;
                     }) -
      items.begin());
  uint32_t cut = (m + leaf_size / 2) / leaf_size * leaf_size;
  if (cut == 0) cut = leaf_size;
  if (cut >= n) cut = (n - 1) / leaf_size * leaf_size;
  if (cut == 0 || cut == m) return cut == 0 ? m : cut;
  return MedianSplit(items, boxes, a, cut);
}

template uint32_t SahSplit(std::span<uint32_t>, const BuildBoxes&, uint32_t);
template uint32_t SahSplit(std::span<uint32_t>, const CoarseBuildBoxes&, uint32_t);

}  // namespace hitbox
