// The shared data of a compound Shape (built by Shape::Make, shapes.cc): the
// children's candidate search over their local bounds, by a scan or, beyond
// CompoundData::kLinearChildren children, a small bounding-box hierarchy.
// The queries against a compound are in compound_pairs.cc.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "hitbox/shape/shapes.h"

namespace hitbox {
namespace {

/// True when `node` meets the box of centre `c` and half-size `e` moved by
/// `v` over [0, 1]: the segment c + t v against `node` grown by `e` (slab
/// test; Ericson, RTCD 5.3.3).
bool SweptBoxMeets(const Aabb& node, const Vec3& c, const Vec3& e, const Vec3& v) {
  double t0 = 0.0, t1 = 1.0;
  for (int a = 0; a < 3; ++a) {
    const double lo = node.min[a] - e[a], hi = node.max[a] + e[a];
    if (v[a] == 0.0) {
      if (c[a] < lo || c[a] > hi) return false;
      continue;
    }
    const double inv = 1.0 / v[a];
    double ta = (lo - c[a]) * inv, tb = (hi - c[a]) * inv;
    if (ta > tb) std::swap(ta, tb);
    t0 = std::max(t0, ta);
    t1 = std::min(t1, tb);
    if (t0 > t1) return false;
  }
  return true;
}

}  // namespace

void CompoundData::BuildHierarchy() {
  const int n = static_cast<int>(children_.size());
  if (n <= kLinearChildren) return;
  order_.resize(n);
  for (int i = 0; i < n; ++i) order_[i] = static_cast<uint8_t>(i);
  // Top-down median split on the longest axis of the children's centres;
  // leaves of at most 2 children. (Indices, not references: nodes_ grows.)
  nodes_.reserve(2 * n);
  nodes_.push_back({});
  struct Range {
    uint16_t node;
    uint8_t first, count;
  };
  Range stack[2 * kMaxCompoundChildren];
  int top = 0;
  stack[top++] = {0, 0, static_cast<uint8_t>(n)};
  while (top > 0) {
    const Range r = stack[--top];
    Aabb box, centres;
    for (int k = r.first; k < r.first + r.count; ++k) {
      box = box.Union(child_bounds_[order_[k]]);
      centres = centres.Union(child_bounds_[order_[k]].Center());
    }
    nodes_[r.node].box = box;
    if (r.count <= 2) {
      nodes_[r.node].first = r.first;
      nodes_[r.node].count = r.count;
      continue;
    }
    const Vec3 size = centres.max - centres.min;
    const int axis = size.x >= size.y && size.x >= size.z ? 0 : (size.y >= size.z ? 1 : 2);
    const uint8_t half = r.count / 2;
    std::nth_element(order_.begin() + r.first, order_.begin() + r.first + half,
                     order_.begin() + r.first + r.count, [&](uint8_t x, uint8_t y) {
                       return child_bounds_[x].Center()[axis] < child_bounds_[y].Center()[axis];
                     });
    const uint16_t left = static_cast<uint16_t>(nodes_.size());
    nodes_[r.node].left = left;
    nodes_.push_back({});
    nodes_.push_back({});
    stack[top++] = {left, r.first, half};
    stack[top++] = {static_cast<uint16_t>(left + 1), static_cast<uint8_t>(r.first + half),
                    static_cast<uint8_t>(r.count - half)};
  }
}

uint64_t CompoundData::Candidates(const Aabb& box, const Vec3& v) const {
  const Vec3 c = box.Center(), e = box.Extents();
  uint64_t mask = 0;
  if (nodes_.empty()) {
    for (size_t i = 0; i < child_bounds_.size(); ++i) {
      if (SweptBoxMeets(child_bounds_[i], c, e, v)) mask |= uint64_t{1} << i;
    }
    return mask;
  }
  uint16_t stack[2 * kMaxCompoundChildren];
  int top = 0;
  stack[top++] = 0;
  while (top > 0) {
    const Node& node = nodes_[stack[--top]];
    if (!SweptBoxMeets(node.box, c, e, v)) continue;
    if (node.count == 0) {
      stack[top++] = node.left;
      stack[top++] = static_cast<uint16_t>(node.left + 1);
      continue;
    }
    for (int k = node.first; k < node.first + node.count; ++k) {
      const uint8_t i = order_[k];
      if (node.count == 1 || SweptBoxMeets(child_bounds_[i], c, e, v)) mask |= uint64_t{1} << i;
    }
  }
  return mask;
}

size_t CompoundData::MemoryBytes() const {
  size_t bytes = sizeof(*this) + children_.capacity() * sizeof(CompoundChild) +
                 child_bounds_.capacity() * sizeof(Aabb) + nodes_.capacity() * sizeof(Node) +
                 order_.capacity();
  for (const CompoundChild& child : children_) bytes += child.shape.DataBytes();
  return bytes;
}

namespace internal {
void CompoundAddRef(const CompoundData* c) { c->refs_.fetch_add(1, std::memory_order_relaxed); }
void CompoundRelease(const CompoundData* c) {
  if (c->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete c;
}
}  // namespace internal

}  // namespace hitbox
