// Dynamic AABB tree: the broad phase of a ColliderSet.
//
// Design after Box2D v3 (src/dynamic_tree.c, Erin Catto) and Catto's GDC 2019
// talk "Dynamic Bounding Volume Hierarchies"; our own code:
// - pooled nodes addressed by 32-bit index, with a free list;
// - insertion picks the sibling by the surface area heuristic (greedy
//   branch-and-bound descent) and applies tree rotations on the way up;
// - leaves hold conservative ("fat") boxes so that small moves do not touch
//   the tree;
// - Build() makes a tree top-down with a binned SAH (Wald, "On fast
//   Construction of SAH-based Bounding Volume Hierarchies", 2007), nodes in
//   depth-first order for cache-friendly traversal.
//
// Node boxes are floats rounded outward from the double input, which halves
// the node size; they stay conservative (contain the double box), and the
// exact narrow phase decides every hit.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "hitbox/math.h"

namespace hitbox {

/// Largest float <= v (v finite or infinite).
inline float RoundDown(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) > v) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
  return f;
}
/// Smallest float >= v.
inline float RoundUp(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) < v) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

/// An axis-aligned box in single precision (world frame, metres).
struct FloatAabb {
  float min[3] = {0, 0, 0};
  float max[3] = {0, 0, 0};

  /// The smallest float box holding `b` (rounded outward).
  static FloatAabb Outward(const Aabb& b) {
    return {{RoundDown(b.min.x), RoundDown(b.min.y), RoundDown(b.min.z)},
            {RoundUp(b.max.x), RoundUp(b.max.y), RoundUp(b.max.z)}};
  }
  Aabb ToDouble() const { return {{min[0], min[1], min[2]}, {max[0], max[1], max[2]}}; }
};

/// One node of the tree: 32 bytes, two per cache line. The fields read during
/// traversal only; parent, height and layers live in a separate array.
struct TreeNode {
  float min[3];
  /// Internal: first child node. Leaf: kLeafBit | item index. Free: next free node.
  uint32_t child1;
  float max[3];
  /// Internal: second child node. Leaf: layer of the item (0..31).
  uint32_t child2;

  bool IsLeaf() const { return (child1 & kLeafBit) != 0; }
  uint32_t Item() const { return child1 & ~kLeafBit; }

  static constexpr uint32_t kLeafBit = 0x80000000u;
};
static_assert(sizeof(TreeNode) == 32);

/// Dynamic bounding volume hierarchy over items (dense indices < 2^31).
class DynamicTree {
 public:
  static constexpr uint32_t kNull = 0xFFFFFFFFu;
  /// Largest number of items (item indices use 31 bits).
  static constexpr uint32_t kMaxItems = 0x7FFFFFFFu;

  /// One item of a bulk build.
  struct BuildItem {
    Aabb box;
    uint32_t item = 0;
    uint32_t layer = 0;
  };

  DynamicTree() = default;

  /// Adds a leaf for `item` with box `box` (rounded outward); returns its node.
  uint32_t CreateLeaf(const Aabb& box, uint32_t item, uint32_t layer);
  /// Removes a leaf created by CreateLeaf or Build.
  void DestroyLeaf(uint32_t leaf);
  /// Gives a leaf a new box (remove and reinsert).
  void MoveLeaf(uint32_t leaf, const Aabb& box);
  /// Changes the item index a leaf points to (after a swap-remove).
  void SetLeafItem(uint32_t leaf, uint32_t item) {
    nodes_[leaf].child1 = TreeNode::kLeafBit | item;
  }
  /// Changes the layer of a leaf and updates the layer masks above it.
  void SetLeafLayer(uint32_t leaf, uint32_t layer);
  /// True when the leaf's box contains `box`.
  bool LeafContains(uint32_t leaf, const Aabb& box) const;
  /// Box of a node (exactly the stored float box).
  Aabb NodeBox(uint32_t node) const {
    const TreeNode& n = nodes_[node];
    return {{n.min[0], n.min[1], n.min[2]}, {n.max[0], n.max[1], n.max[2]}};
  }

  /// Replaces the whole tree with one built top-down over `items`; writes the
  /// leaf node of items[i] to (*leaves)[items[i].item].
  void Build(std::span<const BuildItem> items, std::vector<uint32_t>* leaves);
  /// Removes every node and frees nothing (capacity kept).
  void Clear();
  /// Makes room for `leaves` leaves (2 * leaves - 1 nodes) without reallocation.
  void Reserve(size_t leaves);

  uint32_t root() const { return root_; }
  const TreeNode* nodes() const { return nodes_.data(); }
  const TreeNode& node(uint32_t i) const { return nodes_[i]; }
  /// OR of (1 << layer) over the leaves below `node`.
  uint32_t LayerMask(uint32_t node) const { return info_[node].layers; }
  uint32_t parent(uint32_t node) const { return info_[node].parent; }
  /// Height of the tree (a single leaf has height 0; empty tree 0).
  int Height() const { return root_ == kNull ? 0 : info_[root_].height; }
  uint32_t LeafCount() const { return leaf_count_; }
  uint32_t NodeCount() const { return node_count_; }
  /// Sum of internal node areas / root area (SAH quality; lower is better).
  double AreaRatio() const;
  /// Heap bytes held by the node pool.
  size_t MemoryBytes() const {
    return nodes_.capacity() * sizeof(TreeNode) + info_.capacity() * sizeof(NodeInfo);
  }

  /// Checks the structure: parents, children, heights, layer masks, that every
  /// box holds its children's boxes, free list and counts. Returns "" when
  /// valid, else a description of the first problem.
  std::string Validate() const;

 private:
  struct NodeInfo {
    uint32_t parent;
    /// OR of (1 << layer) of the leaves below.
    uint32_t layers;
    /// 0 for leaves.
    uint32_t height;
  };

  uint32_t AllocateNode();
  void FreeNode(uint32_t node);
  void InsertLeaf(uint32_t leaf);
  void RemoveLeaf(uint32_t leaf);
  uint32_t FindBestSibling(const TreeNode& box) const;
  void Refit(uint32_t node);
  void Rotate(uint32_t node);
  void Grow();

  std::vector<TreeNode> nodes_;
  std::vector<NodeInfo> info_;
  uint32_t root_ = kNull;
  uint32_t free_list_ = kNull;
  uint32_t node_count_ = 0;
  uint32_t leaf_count_ = 0;
};

/// A stack of node indices for traversal: a fixed inline array, spilling to
/// the heap only for pathological tree heights.
template <typename T, size_t kInline = 128>
class TraversalStack {
 public:
  void Push(const T& v) {
    if (size_ < kInline) {
      inline_[size_++] = v;
    } else {
      overflow_.push_back(v);
      ++size_;
    }
  }
  T Pop() {
    --size_;
    if (size_ < kInline) return inline_[size_];
    T v = overflow_.back();
    overflow_.pop_back();
    return v;
  }
  bool Empty() const { return size_ == 0; }

 private:
  T inline_[kInline];
  size_t size_ = 0;
  std::vector<T> overflow_;
};

/// Calls fn(item, layer) for every leaf whose box overlaps `box` (touching
/// counts) and whose layer bit is in `mask`.
template <typename Fn>
inline void QueryTree(const DynamicTree& tree, const FloatAabb& box, uint32_t mask, Fn&& fn) {
  if (tree.root() == DynamicTree::kNull) return;
  const TreeNode* nodes = tree.nodes();
  const bool all_layers = mask == 0xFFFFFFFFu;
  TraversalStack<uint32_t> stack;
  stack.Push(tree.root());
  while (!stack.Empty()) {
    const uint32_t i = stack.Pop();
    const TreeNode& n = nodes[i];
    if (n.min[0] > box.max[0] || n.max[0] < box.min[0] || n.min[1] > box.max[1] ||
        n.max[1] < box.min[1] || n.min[2] > box.max[2] || n.max[2] < box.min[2]) {
      continue;
    }
    if (n.IsLeaf()) {
      if ((mask >> n.child2) & 1u) fn(n.Item(), n.child2);
      continue;
    }
    if (!all_layers && (tree.LayerMask(i) & mask) == 0) continue;
    stack.Push(n.child2);
    stack.Push(n.child1);
  }
}

/// A segment (ray or the centre of a swept box) prepared for slab tests
/// against node boxes grown by `extent` (the Minkowski sum with a box).
struct SegmentSetup {
  Vec3 origin;
  Vec3 translation;
  /// Half-extents added to every node box (zero for rays).
  Vec3 extent;
  Vec3 inv;
  bool parallel[3];

  SegmentSetup(const Vec3& o, const Vec3& d, const Vec3& e) : origin(o), translation(d), extent(e) {
    for (int i = 0; i < 3; ++i) {
      parallel[i] = d[i] == 0.0;
      inv[i] = parallel[i] ? 0.0 : 1.0 / d[i];
    }
  }

  /// Entry fraction of the segment into node box grown by `extent`, clipped
  /// to [0, max_t]; returns false when it does not reach the box by max_t.
  /// Slab test: Kay and Kajiya 1986; Ericson, RTCD 5.3.3.
  bool Entry(const TreeNode& n, double max_t, double* t_enter) const {
    double t0 = 0.0;
    double t1 = max_t;
    for (int i = 0; i < 3; ++i) {
      const double lo = static_cast<double>(n.min[i]) - extent[i] - origin[i];
      const double hi = static_cast<double>(n.max[i]) + extent[i] - origin[i];
      if (parallel[i]) {
        if (lo > 0.0 || hi < 0.0) return false;
        continue;
      }
      double a = lo * inv[i];
      double b = hi * inv[i];
      if (a > b) std::swap(a, b);
      t0 = std::max(t0, a);
      t1 = std::min(t1, b);
      if (t0 > t1) return false;
    }
    *t_enter = t0;
    return true;
  }
};

/// Walks the leaves whose grown box the segment reaches within the current
/// max fraction, nearer boxes first. fn(item, layer, max_fraction) returns the
/// new max fraction (return max_fraction unchanged to keep going; a smaller
/// value prunes everything entered after it; a negative value stops).
template <typename Fn>
inline void CastTree(const DynamicTree& tree, const SegmentSetup& seg, uint32_t mask,
                     double max_fraction, Fn&& fn) {
  if (tree.root() == DynamicTree::kNull) return;
  const TreeNode* nodes = tree.nodes();
  const bool all_layers = mask == 0xFFFFFFFFu;
  struct Entry {
    uint32_t node;
    double t;
  };
  double t_root;
  if (!seg.Entry(nodes[tree.root()], max_fraction, &t_root)) return;
  TraversalStack<Entry> stack;
  stack.Push({tree.root(), t_root});
  while (!stack.Empty()) {
    const Entry e = stack.Pop();
    if (e.t > max_fraction) continue;
    const TreeNode& n = nodes[e.node];
    if (n.IsLeaf()) {
      if ((mask >> n.child2) & 1u) {
        max_fraction = fn(n.Item(), n.child2, max_fraction);
        if (max_fraction < 0.0) return;
      }
      continue;
    }
    const uint32_t c1 = n.child1;
    const uint32_t c2 = n.child2;
    double ta, tb;
    bool ha = seg.Entry(nodes[c1], max_fraction, &ta);
    bool hb = seg.Entry(nodes[c2], max_fraction, &tb);
    if (!all_layers) {
      ha = ha && (tree.LayerMask(c1) & mask) != 0;
      hb = hb && (tree.LayerMask(c2) & mask) != 0;
    }
    if (ha && hb) {
      // Push the farther first so the nearer is visited first.
      if (ta <= tb) {
        stack.Push({c2, tb});
        stack.Push({c1, ta});
      } else {
        stack.Push({c1, ta});
        stack.Push({c2, tb});
      }
    } else if (ha) {
      stack.Push({c1, ta});
    } else if (hb) {
      stack.Push({c2, tb});
    }
  }
}

}  // namespace hitbox
