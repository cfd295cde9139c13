// WideTree: a binary node's subtree collapsed into up to eight children,
// opening the child with the largest box first (as in Wald et al., "Getting
// rid of packets", 2008, for 4-wide BVHs built from binary ones).
#include "broad_phase/wide_tree.h"

#if defined(__SSE2__)

#include <algorithm>
#include <limits>
#include <utility>

namespace hitbox {
namespace {

float HalfArea(const TreeNode& n) {
  const float x = n.max[0] - n.min[0], y = n.max[1] - n.min[1], z = n.max[2] - n.min[2];
  return x * y + y * z + z * x;
}

}  // namespace

WideTree::WideTree(const DynamicTree& tree) : WideTree(tree, {}) {}

WideTree::WideTree(const DynamicTree& tree, std::span<const uint8_t> drop)
    : version_(tree.version()) {
  const uint32_t root = tree.root();
  if (root == DynamicTree::kNull) return;
  const TreeNode* bin = tree.nodes();
  // With items to drop: each node's box and layers over the leaves it keeps
  // (refit children first: reverse pre-order); layers 0 when it keeps none.
  std::vector<TreeNode> fit;
  std::vector<uint32_t> fit_layers;
  const bool pruned = !drop.empty();
  if (pruned) {
    std::vector<uint32_t> order;
    std::vector<uint32_t> stack = {root};
    uint32_t top = 0;
    while (!stack.empty()) {
      const uint32_t n = stack.back();
      stack.pop_back();
      order.push_back(n);
      top = std::max(top, n);
      if (!bin[n].IsLeaf()) {
        stack.push_back(bin[n].child1);
        stack.push_back(bin[n].child2);
      }
    }
    fit.resize(top + 1);
    fit_layers.assign(top + 1, 0);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const uint32_t n = *it;
      fit[n] = bin[n];
      if (bin[n].IsLeaf()) {
        const uint32_t item = bin[n].Item();
        if (item >= drop.size() || drop[item] == 0) fit_layers[n] = tree.LayerMask(n);
        continue;
      }
      const uint32_t c[2] = {bin[n].child1, bin[n].child2};
      bool any = false;
      for (const uint32_t k : c) {
        if (fit_layers[k] == 0) continue;
        for (int a = 0; a < 3; ++a) {
          fit[n].min[a] = any ? std::min(fit[n].min[a], fit[k].min[a]) : fit[k].min[a];
          fit[n].max[a] = any ? std::max(fit[n].max[a], fit[k].max[a]) : fit[k].max[a];
        }
        fit_layers[n] |= fit_layers[k];
        any = true;
      }
    }
    if (fit_layers[root] == 0) return;  // nothing kept
  }
  const TreeNode* box = pruned ? fit.data() : bin;
  const auto layers_of = [&](uint32_t n) { return pruned ? fit_layers[n] : tree.LayerMask(n); };
  const auto kept = [&](uint32_t n) { return !pruned || fit_layers[n] != 0; };
  // An inner node keeping one child stands for that child.
  const auto skip_single = [&](uint32_t n) {
    while (pruned && !bin[n].IsLeaf() && kept(bin[n].child1) != kept(bin[n].child2)) {
      n = kept(bin[n].child1) ? bin[n].child1 : bin[n].child2;
    }
    return n;
  };
  nodes_.reserve(tree.NodeCount() / 2 + 1);
  // Work list: (binary node whose subtree a wide node holds, that wide
  // node's index, its depth).
  struct Pending {
    uint32_t binary;
    uint32_t wide;
    uint32_t depth;
  };
  std::vector<Pending> work;
  nodes_.emplace_back();
  work.push_back({skip_single(root), 0, 1});
  while (!work.empty()) {
    const Pending p = work.back();
    work.pop_back();
    depth_ = std::max(depth_, p.depth);
    // The node's children: the binary node itself when it is a leaf (a tree
    // of one leaf), else its two children, the largest inner one opened
    // until there are kWidth.
    uint32_t kids[kWidth];
    uint32_t count = 0;
    if (bin[p.binary].IsLeaf()) {
      kids[count++] = p.binary;
    } else {
      kids[count++] = skip_single(bin[p.binary].child1);
      kids[count++] = skip_single(bin[p.binary].child2);
      while (count < kWidth) {
        int open = -1;
        float best = -1.0f;
        for (uint32_t i = 0; i < count; ++i) {
          if (bin[kids[i]].IsLeaf()) continue;
          const float area = HalfArea(box[kids[i]]);
          if (open < 0 || area > best) {
            open = static_cast<int>(i);
            best = area;
          }
        }
        if (open < 0) break;
        const TreeNode& n = bin[kids[open]];
        kids[open] = skip_single(n.child1);
        kids[count++] = skip_single(n.child2);
      }
    }
    Node out;
    for (uint32_t i = 0; i < kWidth; ++i) {
      if (i >= count) {
        for (int a = 0; a < 3; ++a) {
          out.min[a][i] = std::numeric_limits<float>::infinity();
          out.max[a][i] = -std::numeric_limits<float>::infinity();
        }
        out.child[i] = kEmpty;
        out.layers[i] = 0;
        continue;
      }
      const TreeNode& n = box[kids[i]];
      for (int a = 0; a < 3; ++a) {
        out.min[a][i] = n.min[a];
        out.max[a][i] = n.max[a];
      }
      out.layers[i] = layers_of(kids[i]);
      if (bin[kids[i]].IsLeaf()) {
        out.child[i] = bin[kids[i]].child1;  // kLeafBit | item
      } else {
        out.child[i] = static_cast<uint32_t>(nodes_.size());
        nodes_.emplace_back();
        work.push_back({kids[i], out.child[i], p.depth + 1});
      }
    }
    nodes_[p.wide] = out;
  }
  // The reservation holds the most nodes any tree can need; keep what this
  // one uses.
  nodes_.shrink_to_fit();
}

}  // namespace hitbox

#endif  // __SSE2__
