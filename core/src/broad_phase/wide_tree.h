// A 4-wide read-only copy of a DynamicTree for batches of queries: each node
// holds up to four of the binary tree's boxes (its nodes two or three levels
// down), laid out per axis so that one SSE test takes all four. The boxes
// are the binary tree's own and each test is the binary one's lane by lane,
// so a traversal reaches exactly the leaves the binary traversal reaches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "broad_phase/dynamic_tree.h"

#if defined(__SSE2__)
#include <emmintrin.h>

namespace hitbox {

class WideTree {
 public:
  static constexpr uint32_t kWidth = 4;
  static constexpr uint32_t kLeafBit = TreeNode::kLeafBit;
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;

  /// Two cache lines: the children's boxes [axis][child], their words and
  /// layer masks.
  struct alignas(64) Node {
    float min[3][kWidth];
    float max[3][kWidth];
    /// kLeafBit | item, an inner node's index, or kEmpty.
    uint32_t child[kWidth];
    /// OR of (1 << layer) over the leaves below the child (a leaf: its own
    /// bit); 0 for an empty child, so that no mask takes it.
    uint32_t layers[kWidth];
  };
  static_assert(sizeof(Node) == 128);

  /// The copy of `tree` as it is now (tree.version()).
  explicit WideTree(const DynamicTree& tree);
  /// The copy without the leaves of the items i with drop[i] != 0 (items
  /// past drop's end are kept): boxes and layer masks refit over the leaves
  /// kept, each leaf with its own box, so a traversal reaches the kept
  /// leaves the whole copy's would. Made in one pass over the tree.
  WideTree(const DynamicTree& tree, std::span<const uint8_t> drop);

  /// The version of the tree this copy was made from.
  uint64_t version() const { return version_; }
  bool empty() const { return nodes_.empty(); }
  const Node* nodes() const { return nodes_.data(); }
  size_t node_count() const { return nodes_.size(); }
  /// Most inner nodes on a path from the root (the root counts).
  uint32_t depth() const { return depth_; }
  size_t MemoryBytes() const { return nodes_.capacity() * sizeof(Node); }

 private:
  std::vector<Node, AlignedAllocator<Node, 64>> nodes_;
  uint64_t version_ = 0;
  uint32_t depth_ = 0;
};

/// A node entry of a wide traversal's stack: a child word, its entry
/// fraction, and for a leaf its layer.
struct WideEntry {
  uint32_t word;
  float t;
  uint32_t layer;
};

/// Prefetches what visiting `word` reads: an inner node's two lines, or a
/// leaf's item data.
template <typename ItemPrefetch>
__attribute__((always_inline)) inline void PrefetchWide(const WideTree::Node* nodes,
                                                        uint32_t word,
                                                        const ItemPrefetch& item_prefetch) {
  if (word & WideTree::kLeafBit) {
    item_prefetch(word & ~WideTree::kLeafBit);
  } else {
    __builtin_prefetch(&nodes[word]);
    __builtin_prefetch(reinterpret_cast<const char*>(&nodes[word]) + 64);
  }
}

/// Lanes of `n` whose child holds a layer of `mask`.
inline uint32_t WideLayerLanes(const WideTree::Node& n, uint32_t mask) {
  const __m128i layers = _mm_load_si128(reinterpret_cast<const __m128i*>(n.layers));
  const __m128i held = _mm_and_si128(layers, _mm_set1_epi32(static_cast<int>(mask)));
  const __m128i none = _mm_cmpeq_epi32(held, _mm_setzero_si128());
  return ~static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(none))) & 15u;
}

/// Lanes of `n` whose box overlaps the query box (BoxesOverlap per lane).
inline uint32_t WideOverlapLanes(const WideTree::Node& n, const BoxSetup& b) {
  __m128 ok = _mm_castsi128_ps(_mm_set1_epi32(-1));
  for (int a = 0; a < 3; ++a) {
    ok = _mm_and_ps(ok, _mm_and_ps(_mm_cmple_ps(_mm_load_ps(n.min[a]), _mm_set1_ps(b.max[a])),
                                   _mm_cmple_ps(_mm_set1_ps(b.min[a]), _mm_load_ps(n.max[a]))));
  }
  return static_cast<uint32_t>(_mm_movemask_ps(ok));
}

/// Lanes of `n` whose box the segment enters by the bound, with the entry
/// fractions in t: SegmentSetup::Entry2's arithmetic, one child per lane.
inline uint32_t WideEnterLanes(const WideTree::Node& n, const SegmentSetup& s,
                               const EntryBound& bound, float t[WideTree::kWidth]) {
  __m128 near = _mm_setzero_ps(), far = _mm_setzero_ps();
  for (int a = 0; a < 3; ++a) {
    const __m128 inv = _mm_set1_ps(s.inv[a]);
    const __m128 lo = _mm_sub_ps(_mm_load_ps(n.min[a]), _mm_set1_ps(s.lo[a]));
    const __m128 hi = _mm_sub_ps(_mm_load_ps(n.max[a]), _mm_set1_ps(s.hi[a]));
    const __m128 ta = _mm_mul_ps(lo, inv);
    const __m128 tb = _mm_mul_ps(hi, inv);
    const __m128 axis_near = _mm_min_ps(ta, tb);
    const __m128 axis_far = _mm_max_ps(ta, tb);
    near = a == 0 ? axis_near : _mm_max_ps(near, axis_near);
    far = a == 0 ? axis_far : _mm_min_ps(far, axis_far);
  }
  near = _mm_max_ps(_mm_mul_ps(near, _mm_load_ps(s.shrink4)), _mm_setzero_ps());
  far = _mm_add_ps(_mm_mul_ps(far, _mm_load_ps(s.grow4)), _mm_load_ps(s.floor4));
  _mm_storeu_ps(t, near);
  const __m128 ok = _mm_cmple_ps(near, _mm_min_ps(far, _mm_load_ps(bound.lanes)));
  return static_cast<uint32_t>(_mm_movemask_ps(ok));
}

/// What both wide cursors keep and do: the nodes, the layer mask, the stack
/// and the entry the next Step visits.
class WideWalk {
 protected:
  /// Starts at the root (an empty tree has nothing to visit).
  void Start(const WideTree& tree, uint32_t mask) {
    nodes_ = tree.nodes();
    mask_ = mask;
    sp_ = 0;
    pending_ = {WideTree::kEmpty, 0.0f, 0};
    if (tree.empty()) return;
    stack_.Reset(3 * static_cast<size_t>(tree.depth()) + 4);
    pending_.word = 0;
    PrefetchWide(nodes_, 0, NoItemPrefetch{});
  }

  /// Child i of n as a stack entry with entry fraction t (a leaf's layer is
  /// the one bit of its mask).
  static WideEntry LaneEntry(const WideTree::Node& n, int i, float t) {
    return {n.child[i], t, static_cast<uint32_t>(__builtin_ctz(n.layers[i] | 0x80000000u))};
  }

  /// Ends a step: visits `next` on the next Step, else the first entry popped
  /// off the stack's sp entries that `keep` accepts, and prefetches it.
  /// Returns false when none is left.
  template <typename Keep, typename ItemPrefetch>
  __attribute__((always_inline)) bool Advance(WideEntry next, size_t sp, const Keep& keep,
                                              const ItemPrefetch& item_prefetch) {
    while (next.word == WideTree::kEmpty) {
      if (sp == 0) {
        sp_ = 0;
        return false;
      }
      --sp;
      if (keep(stack_[sp])) next = stack_[sp];
    }
    sp_ = sp;
    pending_ = next;
    PrefetchWide(nodes_, next.word, item_prefetch);
    return true;
  }

  /// Takes the entry to visit now (kEmpty word when none).
  WideEntry TakePending() {
    const WideEntry next = pending_;
    pending_.word = WideTree::kEmpty;
    return next;
  }

  const WideTree::Node* nodes_ = nullptr;
  uint32_t mask_ = 0;
  CursorStack<WideEntry> stack_;
  size_t sp_ = 0;
  WideEntry pending_{WideTree::kEmpty, 0.0f, 0};
};

/// QueryTree over a wide copy, as a resumable traversal (BoxCursor's
/// interface): the same leaves, in another order.
class WideBoxCursor : WideWalk {
 public:
  void Begin(const WideTree& tree, const FloatAabb& box, uint32_t mask) {
    box_ = BoxSetup(box);
    Start(tree, mask);
  }

  /// Does one node's work: fn(item, layer) for a leaf. Returns false when done.
  template <typename Fn, typename ItemPrefetch>
  bool Step(Fn&& fn, const ItemPrefetch& item_prefetch) {
    WideEntry* stack = &stack_[0];
    size_t sp = sp_;
    WideEntry next = TakePending();
    if (next.word == WideTree::kEmpty) {
      // Nothing to visit (an empty tree): Advance finds the stack empty.
    } else if (next.word & WideTree::kLeafBit) {
      fn(next.word & ~WideTree::kLeafBit, next.layer);
      next.word = WideTree::kEmpty;
    } else {
      const WideTree::Node& n = nodes_[next.word];
      next.word = WideTree::kEmpty;
      // The first child overlapped is visited next, the others stacked.
      for (uint32_t lanes = WideOverlapLanes(n, box_) & WideLayerLanes(n, mask_); lanes != 0;
           lanes &= lanes - 1) {
        const WideEntry e = LaneEntry(n, __builtin_ctz(lanes), 0.0f);
        if (next.word == WideTree::kEmpty) {
          next = e;
        } else {
          stack[sp++] = e;
        }
      }
    }
    return Advance(next, sp, [](const WideEntry&) { return true; }, item_prefetch);
  }

 private:
  BoxSetup box_;
};

/// CastTree over a wide copy, as a resumable traversal (SegmentCursor's
/// interface): the same leaves, nearer boxes first.
class WideSegmentCursor : WideWalk {
 public:
  void Begin(const WideTree& tree, const SegmentSetup* seg, uint32_t mask, double max_fraction) {
    seg_ = seg;
    max_fraction_ = max_fraction;
    bound_.Set(FractionBound(max_fraction));
    Start(tree, mask);
  }

  /// Does one node's work: for a leaf, max_fraction = fn(item, layer,
  /// max_fraction) (negative stops). Returns false when done.
  template <typename Fn, typename ItemPrefetch>
  bool Step(Fn&& fn, const ItemPrefetch& item_prefetch) {
    size_t sp = sp_;
    WideEntry next = TakePending();
    if (next.word == WideTree::kEmpty) {
      // Nothing to visit (an empty tree): Advance finds the stack empty.
    } else if (next.word & WideTree::kLeafBit) {
      max_fraction_ = fn(next.word & ~WideTree::kLeafBit, next.layer, max_fraction_);
      if (max_fraction_ < 0.0) {
        sp_ = 0;
        return false;
      }
      bound_.Set(FractionBound(max_fraction_));
      next.word = WideTree::kEmpty;
    } else {
      next = Enter(nodes_[next.word], &stack_[0], &sp);
    }
    // Entries stacked before the bound fell may now lie beyond it.
    return Advance(
        next, sp, [this](const WideEntry& e) { return e.t <= bound_.value(); }, item_prefetch);
  }

 private:
  // The entered children of n: returns the nearest (kEmpty word when none)
  // and pushes the others farthest first, so that the nearer pop first.
  __attribute__((always_inline)) WideEntry Enter(const WideTree::Node& n, WideEntry* stack,
                                                 size_t* sp) const {
    alignas(16) float t[WideTree::kWidth];
    uint32_t lanes = WideEnterLanes(n, *seg_, bound_, t) & WideLayerLanes(n, mask_);
    if (lanes == 0) return {WideTree::kEmpty, 0.0f, 0};
    if ((lanes & (lanes - 1)) == 0) {
      const int i = __builtin_ctz(lanes);
      return LaneEntry(n, i, t[i]);
    }
    // Insertion sort on top of the stack, farthest at the bottom (on a tie
    // the earlier lane pops first, as the binary walk takes child 1).
    WideEntry* top = stack + *sp;
    int count = 0;
    for (; lanes != 0; lanes &= lanes - 1) {
      const int i = __builtin_ctz(lanes);
      const WideEntry x = LaneEntry(n, i, t[i]);
      int j = count++;
      while (j > 0 && top[j - 1].t <= x.t) {
        top[j] = top[j - 1];
        --j;
      }
      top[j] = x;
    }
    *sp += static_cast<size_t>(count - 1);
    return top[count - 1];
  }

  const SegmentSetup* seg_ = nullptr;
  double max_fraction_ = 1.0;
  EntryBound bound_{1.0f};
};

}  // namespace hitbox

#endif  // __SSE2__
