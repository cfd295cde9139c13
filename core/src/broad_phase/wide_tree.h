// An 8-wide read-only copy of a DynamicTree for batches of queries: each node
// holds up to eight of the binary tree's boxes (its nodes three or more
// levels down), laid out per axis so that one AVX test (two SSE ones without
// AVX) takes all eight. The boxes
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
#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace hitbox {

class WideTree {
 public:
  static constexpr uint32_t kWidth = 8;
  static constexpr uint32_t kLeafBit = TreeNode::kLeafBit;
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;

  /// Four cache lines: the children's boxes [axis][child], their words and
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
  static_assert(sizeof(Node) == 256);

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

/// Prefetches what visiting `word` reads: an inner node's four lines, or a
/// leaf's item data.
template <typename ItemPrefetch>
__attribute__((always_inline)) inline void PrefetchWide(const WideTree::Node* nodes,
                                                        uint32_t word,
                                                        const ItemPrefetch& item_prefetch) {
  if (word & WideTree::kLeafBit) {
    item_prefetch(word & ~WideTree::kLeafBit);
  } else {
    const char* line = reinterpret_cast<const char*>(&nodes[word]);
    for (int k = 0; k < 4; ++k) __builtin_prefetch(line + 64 * k);
  }
}

/// One SIMD step over a node's lanes: eight floats with AVX2, else four
/// (two steps a node); the same operations lane by lane either way.
struct WideStep {
#if defined(__AVX2__)
  using F = __m256;
  using I = __m256i;
  static constexpr uint32_t kLanes = 8;
  static F Load(const float* p) { return _mm256_load_ps(p); }
  static F Splat(const float* p) { return _mm256_broadcast_ss(p); }
  static F Zero() { return _mm256_setzero_ps(); }
  static F Sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F Mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F Add(F a, F b) { return _mm256_add_ps(a, b); }
  static F Min(F a, F b) { return _mm256_min_ps(a, b); }
  static F Max(F a, F b) { return _mm256_max_ps(a, b); }
  static F And(F a, F b) { return _mm256_and_ps(a, b); }
  static F Le(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
  static void Store(float* p, F a) { _mm256_storeu_ps(p, a); }
  static uint32_t Mask(F a) { return static_cast<uint32_t>(_mm256_movemask_ps(a)); }
  /// Lanes whose word at p shares a bit with `bits`.
  static uint32_t Shares(const uint32_t* p, uint32_t bits) {
    const I held = _mm256_and_si256(_mm256_load_si256(reinterpret_cast<const I*>(p)),
                                    _mm256_set1_epi32(static_cast<int>(bits)));
    const I none = _mm256_cmpeq_epi32(held, _mm256_setzero_si256());
    return ~Mask(_mm256_castsi256_ps(none)) & 0xFFu;
  }
#else
  using F = __m128;
  using I = __m128i;
  static constexpr uint32_t kLanes = 4;
  static F Load(const float* p) { return _mm_load_ps(p); }
  static F Splat(const float* p) { return _mm_set1_ps(*p); }
  static F Zero() { return _mm_setzero_ps(); }
  static F Sub(F a, F b) { return _mm_sub_ps(a, b); }
  static F Mul(F a, F b) { return _mm_mul_ps(a, b); }
  static F Add(F a, F b) { return _mm_add_ps(a, b); }
  static F Min(F a, F b) { return _mm_min_ps(a, b); }
  static F Max(F a, F b) { return _mm_max_ps(a, b); }
  static F And(F a, F b) { return _mm_and_ps(a, b); }
  static F Le(F a, F b) { return _mm_cmple_ps(a, b); }
  static void Store(float* p, F a) { _mm_storeu_ps(p, a); }
  static uint32_t Mask(F a) { return static_cast<uint32_t>(_mm_movemask_ps(a)); }
  static uint32_t Shares(const uint32_t* p, uint32_t bits) {
    const I held = _mm_and_si128(_mm_load_si128(reinterpret_cast<const I*>(p)),
                                 _mm_set1_epi32(static_cast<int>(bits)));
    const I none = _mm_cmpeq_epi32(held, _mm_setzero_si128());
    return ~Mask(_mm_castsi128_ps(none)) & 15u;
  }
#endif
};
static_assert(WideTree::kWidth % WideStep::kLanes == 0);

/// Lanes of `n` whose child holds a layer of `mask`.
__attribute__((always_inline)) inline uint32_t WideLayerLanes(const WideTree::Node& n,
                                                             uint32_t mask) {
  uint32_t lanes = 0;
  for (uint32_t h = 0; h < WideTree::kWidth; h += WideStep::kLanes) {
    lanes |= WideStep::Shares(n.layers + h, mask) << h;
  }
  return lanes;
}

/// Lanes of `n` whose box overlaps the query box (BoxesOverlap per lane).
__attribute__((always_inline)) inline uint32_t WideOverlapLanes(const WideTree::Node& n,
                                                               const BoxSetup& b) {
  using S = WideStep;
  uint32_t lanes = 0;
  for (uint32_t h = 0; h < WideTree::kWidth; h += S::kLanes) {
    S::F ok = S::Le(S::Zero(), S::Zero());  // all ones
    for (int a = 0; a < 3; ++a) {
      ok = S::And(ok, S::And(S::Le(S::Load(n.min[a] + h), S::Splat(&b.max[a])),
                             S::Le(S::Splat(&b.min[a]), S::Load(n.max[a] + h))));
    }
    lanes |= S::Mask(ok) << h;
  }
  return lanes;
}

/// Lanes of `n` whose box the segment enters by the bound, with the entry
/// fractions in t: SegmentSetup::Entry2's arithmetic, one child per lane.
__attribute__((always_inline)) inline uint32_t WideEnterLanes(const WideTree::Node& n,
                                                             const SegmentSetup& s,
                                                             const EntryBound& bound,
                                                             float t[WideTree::kWidth]) {
  using S = WideStep;
  uint32_t lanes = 0;
  for (uint32_t h = 0; h < WideTree::kWidth; h += S::kLanes) {
    S::F near = S::Zero(), far = S::Zero();
    for (int a = 0; a < 3; ++a) {
      const S::F inv = S::Splat(&s.inv[a]);
      const S::F ta = S::Mul(S::Sub(S::Load(n.min[a] + h), S::Splat(&s.lo[a])), inv);
      const S::F tb = S::Mul(S::Sub(S::Load(n.max[a] + h), S::Splat(&s.hi[a])), inv);
      const S::F axis_near = S::Min(ta, tb), axis_far = S::Max(ta, tb);
      near = a == 0 ? axis_near : S::Max(near, axis_near);
      far = a == 0 ? axis_far : S::Min(far, axis_far);
    }
    near = S::Max(S::Mul(near, S::Splat(s.shrink4)), S::Zero());
    far = S::Add(S::Mul(far, S::Splat(s.grow4)), S::Splat(s.floor4));
    S::Store(t + h, near);
    lanes |= S::Mask(S::Le(near, S::Min(far, S::Splat(bound.lanes)))) << h;
  }
  return lanes;
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
    // A node stacks all but one of its children.
    stack_.Reset((WideTree::kWidth - 1) * static_cast<size_t>(tree.depth()) + WideTree::kWidth);
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
    alignas(32) float t[WideTree::kWidth];
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
