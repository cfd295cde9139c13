// WideTree: a binary node's subtree collapsed into up to four children,
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

WideTree::WideTree(const DynamicTree& tree) : version_(tree.version()) {
  const uint32_t root = tree.root();
  if (root == DynamicTree::kNull) return;
  const TreeNode* bin = tree.nodes();
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
  work.push_back({root, 0, 1});
  while (!work.empty()) {
    const Pending p = work.back();
    work.pop_back();
    depth_ = std::max(depth_, p.depth);
    // The node's children: the binary node itself when it is a leaf (a tree
    // of one leaf), else its two children, the largest inner one opened
    // until there are four.
    uint32_t kids[kWidth];
    uint32_t count = 0;
    if (bin[p.binary].IsLeaf()) {
      kids[count++] = p.binary;
    } else {
      kids[count++] = bin[p.binary].child1;
      kids[count++] = bin[p.binary].child2;
      while (count < kWidth) {
        int open = -1;
        float best = -1.0f;
        for (uint32_t i = 0; i < count; ++i) {
          if (bin[kids[i]].IsLeaf()) continue;
          const float area = HalfArea(bin[kids[i]]);
          if (open < 0 || area > best) {
            open = static_cast<int>(i);
            best = area;
          }
        }
        if (open < 0) break;
        const TreeNode& n = bin[kids[open]];
        kids[open] = n.child1;
        kids[count++] = n.child2;
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
      const TreeNode& n = bin[kids[i]];
      for (int a = 0; a < 3; ++a) {
        out.min[a][i] = n.min[a];
        out.max[a][i] = n.max[a];
      }
      out.layers[i] = tree.LayerMask(kids[i]);
      if (n.IsLeaf()) {
        out.child[i] = n.child1;  // kLeafBit | item
      } else {
        out.child[i] = static_cast<uint32_t>(nodes_.size());
        nodes_.emplace_back();
        work.push_back({kids[i], out.child[i], p.depth + 1});
      }
    }
    nodes_[p.wide] = out;
  }
}

}  // namespace hitbox

#endif  // __SSE2__
