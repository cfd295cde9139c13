#include "broad_phase/dynamic_tree.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <utility>

namespace hitbox {
namespace {

TreeNode Union(const TreeNode& a, const TreeNode& b) {
  TreeNode r{};
  for (int i = 0; i < 3; ++i) {
    r.min[i] = std::min(a.min[i], b.min[i]);
    r.max[i] = std::max(a.max[i], b.max[i]);
  }
  return r;
}

// Surface area in double (floats of 20 km coordinates would lose the area's
// small differences).
double Area(const TreeNode& n) {
  const double dx = static_cast<double>(n.max[0]) - n.min[0];
  const double dy = static_cast<double>(n.max[1]) - n.min[1];
  const double dz = static_cast<double>(n.max[2]) - n.min[2];
  return 2.0 * (dx * dy + dy * dz + dz * dx);
}

double UnionArea(const TreeNode& a, const TreeNode& b) {
  const double dx = static_cast<double>(std::max(a.max[0], b.max[0])) - std::min(a.min[0], b.min[0]);
  const double dy = static_cast<double>(std::max(a.max[1], b.max[1])) - std::min(a.min[1], b.min[1]);
  const double dz = static_cast<double>(std::max(a.max[2], b.max[2])) - std::min(a.min[2], b.min[2]);
  return 2.0 * (dx * dy + dy * dz + dz * dx);
}

bool ContainsBox(const TreeNode& outer, const TreeNode& inner) {
  for (int i = 0; i < 3; ++i) {
    if (inner.min[i] < outer.min[i] || inner.max[i] > outer.max[i]) return false;
  }
  return true;
}

void SetBox(TreeNode* n, const FloatAabb& b) {
  for (int i = 0; i < 3; ++i) {
    n->min[i] = b.min[i];
    n->max[i] = b.max[i];
  }
}

// Bin of a centre at `offset` from the lowest centre, `scale` bins per metre:
// in [0, bins); NaN and out-of-range products (from centres at or near the
// float limits) land in the first or last bin instead of overflowing the cast.
inline int BinOf(double offset, double scale, int bins) {
  const double f = offset * scale;
  if (!(f > 0.0)) return 0;
  if (f >= bins) return bins - 1;
  return static_cast<int>(f);
}

// Centre of [lo, hi] that never overflows to infinity and is 0 (not NaN) for
// the whole line [-inf, +inf].
inline float CentreOf(float lo, float hi) {
  const float c = 0.5f * lo + 0.5f * hi;
  return c == c ? c : 0.0f;
}

}  // namespace

uint64_t DynamicTree::NextVersion() {
  // One counter for every tree: a tree moved into another's place never
  // takes a version a copy of the other was made at.
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

void DynamicTree::Grow() {
  const size_t old_cap = nodes_.size();
  // Grow by 1/16 (not 2x) to keep the bytes per collider bounded. The
  // collider set reserves ahead, so this is a fallback.
  const size_t new_cap = old_cap + old_cap / 16 + 64;
  nodes_.reserve(new_cap);
  info_.reserve(new_cap);
  nodes_.resize(new_cap);
  info_.resize(new_cap);
  // Thread the new nodes onto the free list, lowest index first.
  for (size_t i = new_cap; i-- > old_cap;) {
    nodes_[i].child1 = free_list_;
    info_[i] = {kNull, 0, 0};
    free_list_ = static_cast<uint32_t>(i);
  }
}

void DynamicTree::Reserve(size_t leaves) {
  const size_t want = 2 * leaves;
  if (want <= nodes_.size()) return;
  const size_t old_cap = nodes_.size();
  nodes_.reserve(want);
  info_.reserve(want);
  nodes_.resize(want);
  info_.resize(want);
  // Append the new nodes to the front of the free list, lowest index first.
  for (size_t i = want; i-- > old_cap;) {
    nodes_[i].child1 = free_list_;
    info_[i] = {kNull, 0, 0};
    free_list_ = static_cast<uint32_t>(i);
  }
}

uint32_t DynamicTree::AllocateNode() {
  if (free_list_ == kNull) Grow();
  const uint32_t i = free_list_;
  free_list_ = nodes_[i].child1;
  nodes_[i] = TreeNode{};
  info_[i] = {kNull, 0, 0};
  ++node_count_;
  return i;
}

void DynamicTree::FreeNode(uint32_t node) {
  nodes_[node].child1 = free_list_;
  nodes_[node].child2 = kNull;
  info_[node] = {kNull, 0, 0xFFFFFFFFu};  // height marks a free node for Validate
  free_list_ = node;
  --node_count_;
}

void DynamicTree::Clear() {
  version_ = NextVersion();
  const size_t cap = nodes_.size();
  free_list_ = kNull;
  for (size_t i = cap; i-- > 0;) {
    nodes_[i].child1 = free_list_;
    nodes_[i].child2 = kNull;
    info_[i] = {kNull, 0, 0xFFFFFFFFu};
    free_list_ = static_cast<uint32_t>(i);
  }
  root_ = kNull;
  node_count_ = 0;
  leaf_count_ = 0;
}

uint32_t DynamicTree::CreateLeaf(const Aabb& box, uint32_t item, uint32_t layer) {
  version_ = NextVersion();
  const uint32_t leaf = AllocateNode();
  SetBox(&nodes_[leaf], FloatAabb::Outward(box));
  nodes_[leaf].child1 = TreeNode::kLeafBit | item;
  nodes_[leaf].child2 = layer;
  info_[leaf] = {kNull, 1u << layer, 0};
  ++leaf_count_;
  InsertLeaf(leaf);
  return leaf;
}

void DynamicTree::DestroyLeaf(uint32_t leaf) {
  version_ = NextVersion();
  RemoveLeaf(leaf);
  FreeNode(leaf);
  --leaf_count_;
}

void DynamicTree::MoveLeaf(uint32_t leaf, const Aabb& box) {
  version_ = NextVersion();
  RemoveLeaf(leaf);
  SetBox(&nodes_[leaf], FloatAabb::Outward(box));
  InsertLeaf(leaf);
}

void DynamicTree::SetLeafLayer(uint32_t leaf, uint32_t layer) {
  version_ = NextVersion();
  nodes_[leaf].child2 = layer;
  info_[leaf].layers = 1u << layer;
  for (uint32_t i = info_[leaf].parent; i != kNull; i = info_[i].parent) {
    info_[i].layers = info_[nodes_[i].child1].layers | info_[nodes_[i].child2].layers;
  }
}

bool DynamicTree::LeafContains(uint32_t leaf, const Aabb& box) const {
  const TreeNode& n = nodes_[leaf];
  return n.min[0] <= box.min.x && n.min[1] <= box.min.y && n.min[2] <= box.min.z &&
         box.max.x <= n.max[0] && box.max.y <= n.max[1] && box.max.z <= n.max[2];
}

// Greedy descent with a lower bound on the cost of any node below, as in
// Box2D v3 b2FindBestSibling (Bittner et al. 2013, "Fast, Effective BVH
// Updates for Animated Scenes", branch and bound simplified to one path).
uint32_t DynamicTree::FindBestSibling(const TreeNode& d) const {
  const double area_d = Area(d);
  uint32_t index = root_;
  double direct_cost = UnionArea(nodes_[index], d);
  double inherited_cost = 0.0;
  uint32_t best = index;
  double best_cost = direct_cost;
  for (uint32_t guard = 0; guard <= node_count_ && !nodes_[index].IsLeaf(); ++guard) {
    const TreeNode& n = nodes_[index];
    const double cost = direct_cost + inherited_cost;
    if (cost < best_cost) {
      best_cost = cost;
      best = index;
    }
    inherited_cost += direct_cost - Area(n);

    const uint32_t c1 = n.child1;
    const uint32_t c2 = n.child2;
    const TreeNode& n1 = nodes_[c1];
    const TreeNode& n2 = nodes_[c2];
    const double direct1 = UnionArea(n1, d);
    const double direct2 = UnionArea(n2, d);
    double lower1 = std::numeric_limits<double>::infinity();
    double lower2 = std::numeric_limits<double>::infinity();
    if (n1.IsLeaf()) {
      const double c = direct1 + inherited_cost;
      if (c < best_cost) {
        best_cost = c;
        best = c1;
      }
    } else {
      lower1 = inherited_cost + direct1 + std::min(area_d - Area(n1), 0.0);
    }
    if (n2.IsLeaf()) {
      const double c = direct2 + inherited_cost;
      if (c < best_cost) {
        best_cost = c;
        best = c2;
      }
    } else {
      lower2 = inherited_cost + direct2 + std::min(area_d - Area(n2), 0.0);
    }
    if (best_cost <= lower1 && best_cost <= lower2) break;
    if (lower1 == lower2 && !n1.IsLeaf()) {
      // Tie (e.g. a point-like box): descend towards the nearer centre.
      double dist1 = 0.0, dist2 = 0.0;
      for (int i = 0; i < 3; ++i) {
        const double cd = static_cast<double>(d.min[i]) + d.max[i];
        const double e1 = static_cast<double>(n1.min[i]) + n1.max[i] - cd;
        const double e2 = static_cast<double>(n2.min[i]) + n2.max[i] - cd;
        dist1 += e1 * e1;
        dist2 += e2 * e2;
      }
      if (dist1 < dist2) {
        index = c1;
        direct_cost = direct1;
      } else {
        index = c2;
        direct_cost = direct2;
      }
    } else if (lower1 < lower2) {
      index = c1;
      direct_cost = direct1;
    } else {
      index = c2;
      direct_cost = direct2;
    }
  }
  return best;
}

void DynamicTree::Refit(uint32_t node) {
  TreeNode& n = nodes_[node];
  const TreeNode u = Union(nodes_[n.child1], nodes_[n.child2]);
  for (int i = 0; i < 3; ++i) {
    n.min[i] = u.min[i];
    n.max[i] = u.max[i];
  }
  info_[node].height = 1 + std::max(info_[n.child1].height, info_[n.child2].height);
  info_[node].layers = info_[n.child1].layers | info_[n.child2].layers;
}

// Tree rotations that lower the SAH cost, as in Box2D v3 b2RotateNodes:
// swap a child of `a` with a grandchild on the other side when that shrinks
// the area of the internal node that changes.
void DynamicTree::Rotate(uint32_t a) {
  if (info_[a].height < 2) return;
  TreeNode& na = nodes_[a];
  const uint32_t b = na.child1;
  const uint32_t c = na.child2;
  const bool b_leaf = nodes_[b].IsLeaf();
  const bool c_leaf = nodes_[c].IsLeaf();
  const double area_b = Area(nodes_[b]);
  const double area_c = Area(nodes_[c]);

  // The best swap so far: a's child slot `up_slot` (B or C) trades places
  // with grandchild slot `down_slot` of a's other child `other`.
  uint32_t* up_slot = nullptr;
  uint32_t* down_slot = nullptr;
  uint32_t other = kNull;
  double best_cost = area_b + area_c;  // cost of the two changeable nodes now
  // Swapping `x` (a child of a, area `area_x`) with grandchild slot `slot` of
  // `y` leaves y holding x and its other child `kept`.
  const auto consider = [&](uint32_t* x_slot, double area_x, uint32_t y, uint32_t* slot,
                            uint32_t kept) {
    const double cost = area_x + UnionArea(nodes_[*x_slot], nodes_[kept]);
    if (cost < best_cost) {
      best_cost = cost;
      up_slot = x_slot;
      down_slot = slot;
      other = y;
    }
  };
  if (!c_leaf) {
    TreeNode& nc = nodes_[c];
    consider(&na.child1, area_b, c, &nc.child1, nc.child2);  // B <-> F: C = (B, G)
    consider(&na.child1, area_b, c, &nc.child2, nc.child1);  // B <-> G: C = (F, B)
  }
  if (!b_leaf) {
    TreeNode& nb = nodes_[b];
    consider(&na.child2, area_c, b, &nb.child1, nb.child2);  // C <-> D: B = (C, E)
    consider(&na.child2, area_c, b, &nb.child2, nb.child1);  // C <-> E: B = (D, C)
  }
  if (up_slot == nullptr) return;
  const uint32_t down = *up_slot;  // B or C, moving down under `other`
  const uint32_t up = *down_slot;  // the grandchild, moving up under a
  *up_slot = up;
  info_[up].parent = a;
  *down_slot = down;
  info_[down].parent = other;
  Refit(other);
  Refit(a);
}

void DynamicTree::InsertLeaf(uint32_t leaf) {
  if (root_ == kNull) {
    root_ = leaf;
    info_[leaf].parent = kNull;
    return;
  }
  const uint32_t sibling = FindBestSibling(nodes_[leaf]);
  const uint32_t old_parent = info_[sibling].parent;
  const uint32_t new_parent = AllocateNode();  // may reallocate nodes_
  nodes_[new_parent].child1 = sibling;
  nodes_[new_parent].child2 = leaf;
  info_[new_parent].parent = old_parent;
  info_[sibling].parent = new_parent;
  info_[leaf].parent = new_parent;
  if (old_parent == kNull) {
    root_ = new_parent;
  } else if (nodes_[old_parent].child1 == sibling) {
    nodes_[old_parent].child1 = new_parent;
  } else {
    nodes_[old_parent].child2 = new_parent;
  }
  // Walk back up: refit boxes, heights, layer masks; rotate to keep SAH low.
  for (uint32_t i = new_parent, guard = 0; i != kNull && guard <= node_count_;
       i = info_[i].parent, ++guard) {
    Refit(i);
    Rotate(i);
  }
}

void DynamicTree::RemoveLeaf(uint32_t leaf) {
  if (leaf == root_) {
    root_ = kNull;
    return;
  }
  const uint32_t parent = info_[leaf].parent;
  const uint32_t grand = info_[parent].parent;
  const uint32_t sibling =
      nodes_[parent].child1 == leaf ? nodes_[parent].child2 : nodes_[parent].child1;
  if (grand == kNull) {
    root_ = sibling;
    info_[sibling].parent = kNull;
    FreeNode(parent);
    return;
  }
  if (nodes_[grand].child1 == parent) {
    nodes_[grand].child1 = sibling;
  } else {
    nodes_[grand].child2 = sibling;
  }
  info_[sibling].parent = grand;
  FreeNode(parent);
  for (uint32_t i = grand, guard = 0; i != kNull && guard <= node_count_;
       i = info_[i].parent, ++guard) {
    Refit(i);
  }
}

void DynamicTree::Build(std::span<const BuildItem> items, std::vector<uint32_t>* leaves) {
  version_ = NextVersion();
  Clear();
  if (items.empty()) return;
  // Root at 0; the two children of every internal node are allocated as a
  // pair (2k, 2k + 1) in one 64-byte line, pairs in depth-first order, so a
  // traversal step that tests both children touches one cache line. Slot 1
  // stays free.
  const size_t needed = 2 * items.size();
  if (nodes_.size() < needed) {
    nodes_.reserve(needed);
    info_.reserve(needed);
    nodes_.resize(needed);
    info_.resize(needed);
  }
  std::vector<bool> used(nodes_.size(), false);
  uint32_t next_pair = 2;

  struct Prim {
    FloatAabb box;
    float centre[3];
    uint32_t index;  // into items
  };
  std::vector<Prim> prims(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    Prim& p = prims[i];
    p.box = FloatAabb::Outward(items[i].box);
    for (int k = 0; k < 3; ++k) p.centre[k] = CentreOf(p.box.min[k], p.box.max[k]);
    p.index = static_cast<uint32_t>(i);
  }

  struct Task {
    uint32_t begin, end, node, parent;
  };
  std::vector<Task> tasks;
  tasks.push_back({0, static_cast<uint32_t>(prims.size()), 0, kNull});
  root_ = 0;
  constexpr int kBins = 16;
  struct Bin {
    TreeNode box;
    uint32_t count;
  };
  while (!tasks.empty()) {
    const Task t = tasks.back();
    tasks.pop_back();
    const uint32_t node = t.node;
    used[node] = true;
    ++node_count_;
    info_[node] = {t.parent, 0, 0};
    if (t.end - t.begin == 1) {
      const Prim& p = prims[t.begin];
      const BuildItem& it = items[p.index];
      SetBox(&nodes_[node], p.box);
      nodes_[node].child1 = TreeNode::kLeafBit | it.item;
      nodes_[node].child2 = it.layer;
      info_[node].layers = 1u << it.layer;
      info_[node].height = 0;
      ++leaf_count_;
      (*leaves)[it.item] = node;
      continue;
    }
    // Bounds of the boxes and of the centres.
    float cmin[3] = {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(),
                     std::numeric_limits<float>::infinity()};
    float cmax[3] = {-cmin[0], -cmin[1], -cmin[2]};
    FloatAabb bounds{{cmin[0], cmin[1], cmin[2]}, {cmax[0], cmax[1], cmax[2]}};
    for (uint32_t i = t.begin; i < t.end; ++i) {
      const Prim& p = prims[i];
      for (int k = 0; k < 3; ++k) {
        bounds.min[k] = std::min(bounds.min[k], p.box.min[k]);
        bounds.max[k] = std::max(bounds.max[k], p.box.max[k]);
        cmin[k] = std::min(cmin[k], p.centre[k]);
        cmax[k] = std::max(cmax[k], p.centre[k]);
      }
    }
    SetBox(&nodes_[node], bounds);

    // Binned SAH over the three axes.
    int best_axis = -1;
    int best_split = 0;
    double best_cost = std::numeric_limits<double>::infinity();
    for (int axis = 0; axis < 3; ++axis) {
      const double extent = static_cast<double>(cmax[axis]) - cmin[axis];
      if (!(extent > 0.0)) continue;
      Bin bins[kBins];
      for (Bin& b : bins) {
        b.count = 0;
        for (int k = 0; k < 3; ++k) {
          b.box.min[k] = std::numeric_limits<float>::infinity();
          b.box.max[k] = -std::numeric_limits<float>::infinity();
        }
      }
      const double scale = kBins / extent;
      for (uint32_t i = t.begin; i < t.end; ++i) {
        const Prim& p = prims[i];
        const int b = BinOf(p.centre[axis] - static_cast<double>(cmin[axis]), scale, kBins);
        bins[b].count++;
        for (int k = 0; k < 3; ++k) {
          bins[b].box.min[k] = std::min(bins[b].box.min[k], p.box.min[k]);
          bins[b].box.max[k] = std::max(bins[b].box.max[k], p.box.max[k]);
        }
      }
      // Sweep from the right to get suffix areas.
      double right_area[kBins];
      uint32_t right_count[kBins];
      TreeNode acc = bins[kBins - 1].box;
      uint32_t cnt = 0;
      for (int b = kBins - 1; b > 0; --b) {
        acc = Union(acc, bins[b].box);
        cnt += bins[b].count;
        right_area[b] = cnt ? Area(acc) : 0.0;
        right_count[b] = cnt;
      }
      acc = bins[0].box;
      cnt = 0;
      for (int b = 0; b < kBins - 1; ++b) {
        acc = Union(acc, bins[b].box);
        cnt += bins[b].count;
        if (cnt == 0 || right_count[b + 1] == 0) continue;
        const double cost = Area(acc) * cnt + right_area[b + 1] * right_count[b + 1];
        if (cost < best_cost) {
          best_cost = cost;
          best_axis = axis;
          best_split = b + 1;
        }
      }
    }
    uint32_t mid;
    if (best_axis >= 0) {
      const double extent = static_cast<double>(cmax[best_axis]) - cmin[best_axis];
      const double scale = kBins / extent;
      Prim* first = prims.data() + t.begin;
      Prim* last = prims.data() + t.end;
      Prim* m = std::partition(first, last, [&](const Prim& p) {
        return BinOf(p.centre[best_axis] - static_cast<double>(cmin[best_axis]), scale, kBins) <
               best_split;
      });
      mid = static_cast<uint32_t>(m - prims.data());
    } else {
      mid = t.begin;
    }
    if (mid == t.begin || mid == t.end) {
      // No useful SAH split (coincident centres): median on the longest axis.
      int axis = 0;
      for (int k = 1; k < 3; ++k) {
        if (cmax[k] - cmin[k] > cmax[axis] - cmin[axis]) axis = k;
      }
      mid = t.begin + (t.end - t.begin) / 2;
      std::nth_element(prims.begin() + t.begin, prims.begin() + mid, prims.begin() + t.end,
                       [axis](const Prim& a, const Prim& b) {
                         if (a.centre[axis] != b.centre[axis]) return a.centre[axis] < b.centre[axis];
                         return a.index < b.index;
                       });
    }
    const uint32_t c1 = next_pair;
    next_pair += 2;
    nodes_[node].child1 = c1;
    nodes_[node].child2 = c1 + 1;
    // The first child is popped next (depth-first), so push it last.
    tasks.push_back({mid, t.end, c1 + 1, node});
    tasks.push_back({t.begin, mid, c1, node});
  }
  // Free list: every unused slot, lowest index first.
  free_list_ = kNull;
  for (size_t i = nodes_.size(); i-- > 0;) {
    if (used[i]) continue;
    nodes_[i].child1 = free_list_;
    nodes_[i].child2 = kNull;
    info_[i] = {kNull, 0, 0xFFFFFFFFu};
    free_list_ = static_cast<uint32_t>(i);
  }
  // Children come after their parents: heights and layer masks bottom-up.
  for (size_t i = nodes_.size(); i-- > 0;) {
    if (!used[i]) continue;
    TreeNode& n = nodes_[i];
    if (n.IsLeaf()) continue;
    info_[i].height = 1 + std::max(info_[n.child1].height, info_[n.child2].height);
    info_[i].layers = info_[n.child1].layers | info_[n.child2].layers;
  }
}

double DynamicTree::AreaRatio() const {
  if (root_ == kNull) return 0.0;
  const double root_area = Area(nodes_[root_]);
  if (!(root_area > 0.0)) return 0.0;
  double total = 0.0;
  std::vector<uint32_t> stack{root_};
  while (!stack.empty()) {
    const uint32_t i = stack.back();
    stack.pop_back();
    const TreeNode& n = nodes_[i];
    if (n.IsLeaf()) continue;
    if (i != root_) total += Area(n);
    stack.push_back(n.child1);
    stack.push_back(n.child2);
  }
  return total / root_area;
}

std::string DynamicTree::Validate() const {
  char buf[200];
  auto fail = [&](const char* what, uint32_t node) {
    std::snprintf(buf, sizeof(buf), "node %u: %s", node, what);
    return std::string(buf);
  };
  if (nodes_.size() != info_.size()) return "node and info arrays differ in size";
  uint32_t reached = 0;
  uint32_t leaves = 0;
  if (root_ != kNull) {
    if (root_ >= nodes_.size()) return fail("root out of range", root_);
    if (info_[root_].parent != kNull) return fail("root has a parent", root_);
    std::vector<uint32_t> stack{root_};
    while (!stack.empty()) {
      const uint32_t i = stack.back();
      stack.pop_back();
      if (++reached > node_count_) return fail("more nodes reachable than allocated (cycle?)", i);
      const TreeNode& n = nodes_[i];
      if (n.IsLeaf()) {
        ++leaves;
        if (info_[i].height != 0) return fail("leaf height is not 0", i);
        if (n.child2 > 31) return fail("leaf layer > 31", i);
        if (info_[i].layers != (1u << n.child2)) return fail("leaf layer mask wrong", i);
        for (int k = 0; k < 3; ++k) {
          if (!(n.min[k] <= n.max[k])) return fail("leaf box inverted", i);
        }
        continue;
      }
      const uint32_t c[2] = {n.child1, n.child2};
      for (uint32_t ch : c) {
        if (ch >= nodes_.size()) return fail("child out of range", i);
        if (info_[ch].parent != i) return fail("child's parent link is wrong", ch);
        if (!ContainsBox(n, nodes_[ch])) return fail("box does not contain its child's box", i);
        stack.push_back(ch);
      }
      if (info_[i].height != 1 + std::max(info_[c[0]].height, info_[c[1]].height)) {
        return fail("height is not 1 + max(child heights)", i);
      }
      if (info_[i].layers != (info_[c[0]].layers | info_[c[1]].layers)) {
        return fail("layer mask is not the union of the children's", i);
      }
    }
  }
  if (reached != node_count_) return "allocated node count differs from reachable nodes";
  if (leaves != leaf_count_) return "leaf count differs from reachable leaves";
  uint32_t free_count = 0;
  for (uint32_t i = free_list_; i != kNull; i = nodes_[i].child1) {
    if (i >= nodes_.size()) return fail("free list out of range", i);
    if (++free_count > nodes_.size()) return "free list has a cycle";
  }
  if (free_count + node_count_ != nodes_.size()) return "free + allocated != capacity";
  return "";
}

}  // namespace hitbox
