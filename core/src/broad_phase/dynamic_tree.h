// Dynamic AABB tree: the broad phase of a ColliderSet, after Box2D v3
// (src/dynamic_tree.c) and Catto's GDC 2019 talk: pooled nodes by index with
// a free list, SAH insertion with rotations, fat leaves, a binned-SAH Build()
// (Wald 2007) in depth-first order; node boxes are floats rounded outward.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "geometry/float_rounding.h"
#include "hitbox/math/math.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hitbox {

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

/// A moved leaf's new fat box also reaches this many times its last move
/// ahead (Box2D's b2_aabbMultiplier), at most kFatAheadMax metres: a player
/// running at 6 m/s (0.1 m a 60 Hz tick) leaves its box once in seven or
/// eight ticks instead of every third, and a teleport grows it little.
inline constexpr double kFatAhead = 4.0;
inline constexpr double kFatAheadMax = 1.0;

/// The fat box of a leaf whose `box` just moved by `moved`: grown by
/// `margin` and swept kFatAhead times the move ahead (kFatAheadMax at most).
inline Aabb FatBoxAhead(const Aabb& box, double margin, const Vec3& moved) {
  Vec3 ahead = moved * kFatAhead;
  const double length = ahead.Length();
  if (length > kFatAheadMax) ahead = ahead * (kFatAheadMax / length);
  return box.Expanded(margin).Swept(ahead);
}

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

/// Allocator returning `kAlign`-byte aligned storage (node pairs share a cache line).
template <typename T, size_t kAlign>
struct AlignedAllocator {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = AlignedAllocator<U, kAlign>;
  };
  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U, kAlign>&) {}  // NOLINT: allocator rebind
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kAlign)));
  }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(kAlign)); }
  template <typename U>
  bool operator==(const AlignedAllocator<U, kAlign>&) const { return true; }
};

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
    version_ = NextVersion();
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
  /// Makes room for `leaves` leaves (2 * leaves nodes) without reallocation.
  void Reserve(size_t leaves);

  uint32_t root() const { return root_; }
  /// Changes with every change to the tree's leaves, boxes or structure.
  uint64_t version() const { return version_; }
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

  static uint64_t NextVersion();
  uint32_t AllocateNode();
  void FreeNode(uint32_t node);
  void InsertLeaf(uint32_t leaf);
  void RemoveLeaf(uint32_t leaf);
  uint32_t FindBestSibling(const TreeNode& box) const;
  void Refit(uint32_t node);
  void Rotate(uint32_t node);
  void Grow();

  std::vector<TreeNode, AlignedAllocator<TreeNode, 64>> nodes_;
  std::vector<NodeInfo> info_;
  uint32_t root_ = kNull;
  uint32_t free_list_ = kNull;
  uint32_t node_count_ = 0;
  uint32_t leaf_count_ = 0;
  uint64_t version_ = 0;
};

/// Storage for a traversal stack of `n` entries: inline for ordinary tree
/// heights, on the heap only for pathological ones.
template <typename T, size_t kInline = 256>
class TraversalBuffer {
 public:
  explicit TraversalBuffer(size_t n) {
    if (n > kInline) {
      heap_.resize(n);
      data_ = heap_.data();
    }
  }
  T* data() { return data_; }

 private:
  T inline_[kInline];
  T* data_ = inline_;
  std::vector<T> heap_;
};

/// Prefetch hook that does nothing (when the caller has no per-item data).
struct NoItemPrefetch {
  void operator()(uint32_t) const {}
};

/// Hints the cache to load what visiting `node` will read next: its children
/// (one line when they are a pair), or for a leaf the caller's item data.
/// Always inlined: gcc's IPA analyses (pure-const, modref) find a function
/// whose only statements are prefetches free of side effects and delete the
/// calls to it, which left the cursors' Step without any prefetch.
template <typename ItemPrefetch>
__attribute__((always_inline)) inline void PrefetchNext(const TreeNode* nodes, uint32_t node,
                                                        const ItemPrefetch& item_prefetch) {
  const TreeNode& n = nodes[node];
  if (!n.IsLeaf()) {
    __builtin_prefetch(&nodes[n.child1]);
    __builtin_prefetch(&nodes[n.child2]);
  } else {
    item_prefetch(n.Item());
  }
}

/// A query box prepared for overlap tests against nodes: with SSE2 its
/// corners as float vectors (lane 3 zero), so one test is two compares.
struct BoxSetup {
#if defined(__SSE2__)
  alignas(16) float min[4];
  alignas(16) float max[4];
#else
  FloatAabb box;
#endif

  BoxSetup() = default;
  explicit BoxSetup(const FloatAabb& b) {
#if defined(__SSE2__)
    for (int i = 0; i < 3; ++i) {
      min[i] = b.min[i];
      max[i] = b.max[i];
    }
    min[3] = max[3] = 0.0f;
#else
    box = b;
#endif
  }
};

/// True when node n's box overlaps b (touching counts): the same six
/// comparisons as on FloatAabb, with SSE2 in two vector compares.
inline bool BoxesOverlap(const TreeNode& n, const BoxSetup& b) {
#if defined(__SSE2__)
  // 16-byte loads of a node take the child word into lane 3, which the
  // mask below drops (it may hold NaN bits).
  const __m128 ok = _mm_and_ps(_mm_cmple_ps(_mm_loadu_ps(n.min), _mm_load_ps(b.max)),
                               _mm_cmple_ps(_mm_load_ps(b.min), _mm_loadu_ps(n.max)));
  return (_mm_movemask_ps(ok) & 7) == 7;
#else
  // Non-short-circuit & keeps this branch-free.
  const FloatAabb& x = b.box;
  return (n.min[0] <= x.max[0]) & (x.min[0] <= n.max[0]) & (n.min[1] <= x.max[1]) &
         (x.min[1] <= n.max[1]) & (n.min[2] <= x.max[2]) & (x.min[2] <= n.max[2]);
#endif
}

/// The one step of a box traversal that both QueryTree and BoxCursor take on
/// internal node `n`: of its children whose boxes overlap `box` and hold a
/// layer of `mask`, returns child 1, to be visited next, and pushes child 2
/// onto `stack` (*sp entries); returns a lone overlapping child, or kNull when
/// neither overlaps. Visiting the returned child next is what pushing it on
/// top and popping it at once did, without the store and reload. Children are
/// tested before they are pushed (the two children of a node usually share a
/// cache line). With kPrefetch, the entered children's next lines are
/// prefetched at once (the one-shot walk; a cursor prefetches when it moves
/// to a node instead).
template <bool kPrefetch, typename ItemPrefetch>
__attribute__((always_inline)) inline uint32_t OverlapChildren(
    const DynamicTree& tree, const TreeNode* nodes, const TreeNode& n, const BoxSetup& box,
    uint32_t mask, uint32_t* stack, size_t* sp, const ItemPrefetch& item_prefetch) {
  const uint32_t c1 = n.child1;
  const uint32_t c2 = n.child2;
  bool h1 = BoxesOverlap(nodes[c1], box);
  bool h2 = BoxesOverlap(nodes[c2], box);
  // Most queries take every layer: that path is laid out in line (gcc put
  // the full-mask case out of line, two jumps per node).
  if (__builtin_expect(mask != 0xFFFFFFFFu, 0)) {
    h1 = h1 && (tree.LayerMask(c1) & mask) != 0;
    h2 = h2 && (tree.LayerMask(c2) & mask) != 0;
  }
  if constexpr (kPrefetch) {
    // Start fetching the grandchildren (one line per child pair) while the
    // rest of the stack is worked on: traversal is bound by memory latency.
    if (h1) PrefetchNext(nodes, c1, item_prefetch);
    if (h2) PrefetchNext(nodes, c2, item_prefetch);
  }
  // A push only when both overlap (as in EnterChildren: cheaper than an
  // unconditional store and selects).
  if (h1 && h2) {
    stack[(*sp)++] = c2;
    return c1;
  }
  return h1 ? c1 : (h2 ? c2 : DynamicTree::kNull);
}

/// Calls fn(item, layer) for every leaf whose box overlaps `box` (touching
/// counts) and whose layer bit is in `mask`. item_prefetch(item) is called
/// when a leaf is entered, to prefetch its data.
template <typename Fn, typename ItemPrefetch = NoItemPrefetch>
inline void QueryTree(const DynamicTree& tree, const FloatAabb& query, uint32_t mask, Fn&& fn,
                      const ItemPrefetch& item_prefetch = {}) {
  const uint32_t root = tree.root();
  if (root == DynamicTree::kNull) return;
  const TreeNode* nodes = tree.nodes();
  const BoxSetup box(query);
  if (!BoxesOverlap(nodes[root], box)) return;
  // Depth-first: the stack never holds more than height + 1 entries, so it is
  // sized once and pushed without bounds checks (branch-free pushes).
  TraversalBuffer<uint32_t> buffer(tree.Height() + 2);
  uint32_t* stack = buffer.data();
  size_t sp = 0;
  // The node to visit next, else pop one.
  uint32_t next = root;
  for (;;) {
    if (next == DynamicTree::kNull) {
      if (sp == 0) return;
      next = stack[--sp];
    }
    const TreeNode& n = nodes[next];
    if (n.IsLeaf()) {
      if ((mask >> n.child2) & 1u) fn(n.Item(), n.child2);
      next = DynamicTree::kNull;
      continue;
    }
    next = OverlapChildren<true>(tree, nodes, n, box, mask, stack, &sp, item_prefetch);
  }
}

/// The max fraction of a segment traversal as SegmentSetup::Entry2 reads
/// it: FractionBound(max fraction), in all four lanes with SSE2 so that the
/// test takes it as a memory operand (a float was splat again per node).
struct EntryBound {
  alignas(16) float lanes[4];

  EntryBound() = default;
  explicit EntryBound(float bound) { Set(bound); }
  void Set(float bound) { lanes[0] = lanes[1] = lanes[2] = lanes[3] = bound; }
  float value() const { return lanes[0]; }
};

/// A segment (ray, or the centre of a swept box) prepared for slab tests
/// (Kay and Kajiya 1986; Ericson RTCD 5.3.3) against node boxes grown by
/// `extent`. With SSE2, in floats made conservative: planes rounded outward
/// and fractions scaled by 1 -+ 2^-20, so every node the exact test enters
/// is entered; without SSE2 the scalar loop in double.
struct SegmentSetup {
#if defined(__SSE2__)
  /// origin + extent rounded up / origin - extent rounded down (lane 3 zero):
  /// node min/max are compared to these.
  alignas(16) float lo[4];
  alignas(16) float hi[4];
  /// 1 / translation per axis (lane 3 zero); kHuge for a component too small
  /// to invert in float (|d| <= 1e-30), whose whole motion is then folded
  /// into lo / hi.
  alignas(16) float inv[4];

  static constexpr float kHuge = 1e35f;
  /// Relative slack on the entry and exit fractions (covers float rounding).
  static constexpr float kSlack = 1.0f / (1 << 20);
  /// Entry2's factors of the entry and exit fractions and the exits' floor
  /// (1 - kSlack, 1 + kSlack and 1e-30 in every lane), kept with the setup
  /// so that the test reads them as memory operands: gcc rebuilt each splat
  /// constant per node from a scalar, a load and a shuffle.
  alignas(16) float shrink4[4];
  alignas(16) float grow4[4];
  alignas(16) float floor4[4];
#else
  double lo[3];
  double hi[3];
  /// 1 / translation per axis; 0 for a zero (or below 1e-300) component.
  double inv[3];
#endif

  /// Entry2's bit for its second node.
  static constexpr unsigned kEntered2 = 4u;

  /// Unset (fields uninitialised); assign a constructed one before use.
  SegmentSetup() = default;
  SegmentSetup(const Vec3& origin, const Vec3& translation, const Vec3& extent) {
#if defined(__SSE2__)
    // Every component invertible (the usual case): the three axes at once.
    if (std::fabs(translation.x) > 1e-30 && std::fabs(translation.y) > 1e-30 &&
        std::fabs(translation.z) > 1e-30) {
      SetAllAxes(origin, translation, extent);
      SetFactors();
      return;
    }
#endif
    for (int i = 0; i < 3; ++i) {
      const double d = translation[i];
#if defined(__SSE2__)
      // node.min - extent - origin = node.min - lo; node.max + extent - origin
      // = node.max - hi. A component of at most 1e-30 (whose inverse could
      // leave the float range) is taken as zero, its motion added to both
      // planes, and the planes moved out by at least 1e-30 more (1e-30 or one
      // float step): a node plane on or outside the exact one is then at
      // least 1e-30 beyond lo / hi, so its fraction times kHuge is >= 1e5,
      // beyond any max_t, and the slab does not limit the interval.
      if (std::fabs(d) > 1e-30) {
        lo[i] = RoundUp(origin[i] + extent[i]);
        hi[i] = RoundDown(origin[i] - extent[i]);
        inv[i] = static_cast<float>(1.0 / d);
      } else {
        const double reach = std::fabs(d) + 1e-30;
        lo[i] = NextFloatUp(RoundUp(origin[i] + extent[i] + reach));
        hi[i] = NextFloatDown(RoundDown(origin[i] - extent[i] - reach));
        inv[i] = kHuge;
      }
#else
      // A component of at most 1e-300 is taken as zero (inv 0 marks it), its
      // motion added to both planes, and the slab decided by containment.
      // The planes move out by 2^-40 of the coordinates' size, far more
      // than the rounding of o +- e and of the differences below.
      const bool tiny = !(std::fabs(d) > 1e-300);
      const double pad = (tiny ? std::fabs(d) : 0.0) +
                         0x1p-40 * (std::fabs(origin[i]) + std::fabs(extent[i])) + 1e-300;
      lo[i] = origin[i] + extent[i] + pad;
      hi[i] = origin[i] - extent[i] - pad;
      inv[i] = tiny ? 0.0 : 1.0 / d;
#endif
    }
#if defined(__SSE2__)
    lo[3] = hi[3] = inv[3] = 0.0f;
    SetFactors();
#endif
  }

#if defined(__SSE2__)
  void SetFactors() {
    _mm_store_ps(shrink4, _mm_set1_ps(1.0f - kSlack));
    _mm_store_ps(grow4, _mm_set1_ps(1.0f + kSlack));
    _mm_store_ps(floor4, _mm_set1_ps(1e-30f));
  }

  /// RoundUp of each lane of (a, b) (lanes 0-1 of a, then of b) as float
  /// lanes 0..3: the nearest float, moved one step up (the bits plus one,
  /// minus one below zero) where it lies below the double. It is never -0
  /// below the double (v rounds to -0 only for v <= 0), and +0 steps to
  /// denorm_min: exactly RoundUp's values.
  static __m128 RoundUp4(__m128d a, __m128d b) {
    const __m128 f = _mm_movelh_ps(_mm_cvtpd_ps(a), _mm_cvtpd_ps(b));
    const __m128 below =
        _mm_shuffle_ps(_mm_castpd_ps(_mm_cmplt_pd(_mm_cvtps_pd(f), a)),
                       _mm_castpd_ps(_mm_cmplt_pd(_mm_cvtps_pd(_mm_movehl_ps(f, f)), b)),
                       _MM_SHUFFLE(2, 0, 2, 0));
    const __m128i bits = _mm_castps_si128(f);
    // bits + 1 + 2 * (-1 when negative): +1 above zero, -1 below.
    const __m128i next = _mm_add_epi32(
        _mm_add_epi32(bits, _mm_set1_epi32(1)), _mm_slli_epi32(_mm_srai_epi32(bits, 31), 1));
    return _mm_or_ps(_mm_and_ps(below, _mm_castsi128_ps(next)), _mm_andnot_ps(below, f));
  }

  /// The constructor's values when every |translation| component is above
  /// 1e-30: lo = RoundUp(origin + extent), hi = RoundDown(origin - extent) =
  /// -RoundUp(-(origin - extent)) (rounding to nearest is symmetric; negated
  /// by the sign bit, so zeros keep RoundDown's sign), inv = 1 / translation
  /// rounded to float, in two-lane double vectors (the same correctly rounded
  /// operations).
  void SetAllAxes(const Vec3& origin, const Vec3& translation, const Vec3& extent) {
    const __m128d o01 = _mm_set_pd(origin.y, origin.x);
    const __m128d o2 = _mm_set_sd(origin.z);
    const __m128d e01 = _mm_set_pd(extent.y, extent.x);
    const __m128d e2 = _mm_set_sd(extent.z);
    const __m128d one = _mm_set1_pd(1.0);
    // Lane 3 (from the zero upper half of the _sd vectors): RoundUp(0) = 0,
    // and 1 / 1 for inv, cleared below.
    _mm_store_ps(lo, RoundUp4(_mm_add_pd(o01, e01), _mm_add_sd(o2, e2)));
    const __m128d sign = _mm_set1_pd(-0.0);
    _mm_store_ps(hi, _mm_xor_ps(RoundUp4(_mm_xor_pd(_mm_sub_pd(o01, e01), sign),
                                         _mm_xor_pd(_mm_sub_sd(o2, e2), sign)),
                                _mm_set1_ps(-0.0f)));
    const __m128d d01 = _mm_set_pd(translation.y, translation.x);
    const __m128d d2 = _mm_set_pd(1.0, translation.z);
    _mm_store_ps(inv, _mm_movelh_ps(_mm_cvtpd_ps(_mm_div_pd(one, d01)),
                                    _mm_cvtpd_ps(_mm_div_pd(one, d2))));
    lo[3] = hi[3] = inv[3] = 0.0f;
  }
#endif

  /// Entry fraction of the segment into the node box grown by `extent`,
  /// clipped to [0, max_t]; false when it does not reach the box by max_t.
  bool Entry(const TreeNode& n, double max_t, double* t_enter) const {
    float t, unused;
    const bool in = (Entry2(n, n, EntryBound(RoundDown(max_t)), &t, &unused) & 1u) != 0;
    *t_enter = t;
    return in;
  }

  /// Entry() of two nodes at once (a node's two children) against the bound
  /// bound.value() = RoundDown(max_t): bit 0 of the result for n1 (entry
  /// fraction in *t1), bit kEntered2 for n2 (*t2; bit 2, the SSE2 mask's
  /// lane, so that no shift is spent on it). Each answer is exactly Entry()'s:
  /// an entry fraction is a float f, and f <= max_t exactly when f <=
  /// RoundDown(max_t) (the largest float <= max_t), so the bound is compared
  /// in float with the other lanes and no fraction is widened to double.
  __attribute__((always_inline)) unsigned Entry2(const TreeNode& n1, const TreeNode& n2,
                                                 const EntryBound& bound, float* t1,
                                                 float* t2) const {
#if defined(__SSE2__)
    // A node is {min[3], child1, max[3], child2}: 16-byte loads take the
    // child word into lane 3, whose value (any float, NaN included) the
    // reductions below never read.
    const __m128 vinv = _mm_load_ps(inv);
    const __m128 vlo = _mm_load_ps(lo);
    const __m128 vhi = _mm_load_ps(hi);
    const __m128 a1 = _mm_mul_ps(_mm_sub_ps(_mm_loadu_ps(n1.min), vlo), vinv);
    const __m128 b1 = _mm_mul_ps(_mm_sub_ps(_mm_loadu_ps(n1.max), vhi), vinv);
    const __m128 a2 = _mm_mul_ps(_mm_sub_ps(_mm_loadu_ps(n2.min), vlo), vinv);
    const __m128 b2 = _mm_mul_ps(_mm_sub_ps(_mm_loadu_ps(n2.max), vhi), vinv);
    const __m128 near1 = _mm_min_ps(a1, b1);
    const __m128 near2 = _mm_min_ps(a2, b2);
    const __m128 far1 = _mm_max_ps(a1, b1);
    const __m128 far2 = _mm_max_ps(a2, b2);
    // Max of the entries and min of the exits over lanes 0..2 of each node:
    // [x1, y1, x2, y2] against [z1, z1, z2, z2], then each pair of lanes
    // against its swap; node 1 ends in lanes 0-1, node 2 in lanes 2-3.
    __m128 near = _mm_max_ps(_mm_shuffle_ps(near1, near2, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm_shuffle_ps(near1, near2, _MM_SHUFFLE(2, 2, 2, 2)));
    __m128 far = _mm_min_ps(_mm_shuffle_ps(far1, far2, _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm_shuffle_ps(far1, far2, _MM_SHUFFLE(2, 2, 2, 2)));
    near = _mm_max_ps(near, _mm_shuffle_ps(near, near, _MM_SHUFFLE(2, 3, 0, 1)));
    far = _mm_min_ps(far, _mm_shuffle_ps(far, far, _MM_SHUFFLE(2, 3, 0, 1)));
    // Entries shrunk and clipped at 0, exits grown (see above; the exits also
    // gain 1e-30 for fractions too small for the relative bound to hold:
    // subnormal floats). (No lane 0..2 is NaN: inv is finite and nonzero and
    // lo / hi are finite, so neither 0 * inf nor inf - inf arises; infinite
    // node planes give infinite fractions of the right sign.)
    near = _mm_max_ps(_mm_mul_ps(near, _mm_load_ps(shrink4)), _mm_setzero_ps());
    far = _mm_add_ps(_mm_mul_ps(far, _mm_load_ps(grow4)), _mm_load_ps(floor4));
    // Entered (entry <= exit) and soon enough (entry <= the bound) in one
    // compare, entry <= min(exit, bound): lanes 0-1 for n1, 2-3 for n2 (each
    // pair holds equal values). A NaN bound is minps's result (its second
    // operand) and enters nothing, as two compares with it would.
    const __m128 ok = _mm_cmple_ps(near, _mm_min_ps(far, _mm_load_ps(bound.lanes)));
    const unsigned in = static_cast<unsigned>(_mm_movemask_ps(ok));
    *t1 = _mm_cvtss_f32(near);
    *t2 = _mm_cvtss_f32(_mm_movehl_ps(near, near));
    return in & 5u;
#else
    // The double test against a bound at or above max_t (conservative), its
    // fractions rounded down (so a pop never prunes what the test entered).
    const double up = NextFloatUp(bound.value());
    double d1, d2;
    const unsigned r = static_cast<unsigned>(EntryScalar(n1, up, &d1)) |
                       (static_cast<unsigned>(EntryScalar(n2, up, &d2)) * kEntered2);
    *t1 = RoundDown(d1);
    *t2 = RoundDown(d2);
    return r;
#endif
  }

#if !defined(__SSE2__)
 private:
  bool EntryScalar(const TreeNode& n, double max_t, double* t_enter) const {
    double t0 = 0.0;
    double t1 = max_t;
    for (int i = 0; i < 3; ++i) {
      if (inv[i] == 0.0) {
        if (static_cast<double>(n.min[i]) > lo[i] || static_cast<double>(n.max[i]) < hi[i]) {
          *t_enter = t0;
          return false;
        }
        continue;
      }
      const double a = (static_cast<double>(n.min[i]) - lo[i]) * inv[i];
      const double b = (static_cast<double>(n.max[i]) - hi[i]) * inv[i];
      const double near = a < b ? a : b;
      const double far = a > b ? a : b;
      t0 = near > t0 ? near : t0;
      t1 = far < t1 ? far : t1;
    }
    // Relative slack 2^-40 (rounding of the difference, 1/d and the product)
    // as in the SSE2 path, so grazing segments are not lost to rounding.
    t0 *= 1.0 - 0x1p-40;
    *t_enter = t0;
    return t0 <= t1 * (1.0 + 0x1p-40) + 1e-300;
  }
#endif
};

/// A node on a segment traversal's stack: the fraction where the segment
/// enters its box (a float, as the test computes it; 8 bytes an entry).
struct SegmentEntry {
  uint32_t node;
  float t;
};

/// The bound a segment traversal compares entry fractions with: a float
/// fraction f is <= max_fraction exactly when f <= RoundDown(max_fraction).
inline float FractionBound(double max_fraction) { return RoundDown(max_fraction); }

/// The one step of a segment traversal that both CastTree and SegmentCursor
/// take on internal node `n`: of its children that the segment enters by the
/// max fraction (bound = FractionBound(max fraction)) and that hold a layer
/// of `mask`, returns the nearer, to be visited next, and pushes the farther
/// onto `stack` (*sp entries); returns a lone entered child, or kNull when
/// none is entered. Visiting the returned child next is what pushing it on
/// top and popping it at once did (its fraction was just compared with the
/// bound), without the store and reload. kPrefetch as in
/// OverlapChildren.
template <bool kPrefetch, typename ItemPrefetch>
__attribute__((always_inline)) inline uint32_t EnterChildren(
    const DynamicTree& tree, const TreeNode* nodes, const SegmentSetup& seg, const TreeNode& n,
    uint32_t mask, const EntryBound& bound, SegmentEntry* stack, size_t* sp,
    const ItemPrefetch& item_prefetch) {
  const uint32_t c1 = n.child1;
  const uint32_t c2 = n.child2;
  float t1, t2;
  unsigned hits = seg.Entry2(nodes[c1], nodes[c2], bound, &t1, &t2);
  constexpr unsigned k1 = 1u, k2 = SegmentSetup::kEntered2;
  // Most queries take every layer: that path is laid out in line (gcc put
  // the full-mask case out of line, two jumps per node).
  if (__builtin_expect(mask != 0xFFFFFFFFu, 0)) {
    hits &= ((tree.LayerMask(c1) & mask) != 0 ? k1 : 0u) |
            ((tree.LayerMask(c2) & mask) != 0 ? k2 : 0u);
  }
  if constexpr (kPrefetch) {
    if ((hits & k1) != 0) PrefetchNext(nodes, c1, item_prefetch);
    if ((hits & k2) != 0) PrefetchNext(nodes, c2, item_prefetch);
  }
  // Decided on the two bits as they are: one child, the most common case,
  // in one compare each.
  if (hits == k1) return c1;
  if (hits == k2) return c2;
  if (hits == 0) return DynamicTree::kNull;
  // Both: the nearer first (child 1 on a tie). Only here does the order
  // matter, and most nodes enter one child or none.
  const bool swap = t2 < t1;
  stack[(*sp)++] = swap ? SegmentEntry{c1, t1} : SegmentEntry{c2, t2};
  return swap ? c2 : c1;
}

/// Walks the leaves whose grown box the segment reaches within the current
/// max fraction, nearer boxes first. fn(item, layer, max_fraction) returns the
/// new max fraction (return max_fraction unchanged to keep going; a smaller
/// value prunes everything entered after it; a negative value stops).
template <typename Fn, typename ItemPrefetch = NoItemPrefetch>
inline void CastTree(const DynamicTree& tree, const SegmentSetup& seg, uint32_t mask,
                     double max_fraction, Fn&& fn, const ItemPrefetch& item_prefetch = {}) {
  const uint32_t root = tree.root();
  if (root == DynamicTree::kNull) return;
  const TreeNode* nodes = tree.nodes();
  EntryBound bound(FractionBound(max_fraction));
  float t_root, unused;
  if ((seg.Entry2(nodes[root], nodes[root], bound, &t_root, &unused) & 1u) == 0) return;
  TraversalBuffer<SegmentEntry> buffer(tree.Height() + 2);
  SegmentEntry* stack = buffer.data();
  size_t sp = 0;
  // The node to visit next (entered within the bound), else pop one.
  uint32_t next = root;
  for (;;) {
    while (next == DynamicTree::kNull) {
      if (sp == 0) return;
      // Field by field (see SegmentCursor::Step: store-to-load forwarding).
      --sp;
      if (stack[sp].t <= bound.value()) next = stack[sp].node;
    }
    const TreeNode& n = nodes[next];
    next = DynamicTree::kNull;
    if (n.IsLeaf()) {
      if ((mask >> n.child2) & 1u) {
        max_fraction = fn(n.Item(), n.child2, max_fraction);
        if (max_fraction < 0.0) return;
        bound.Set(FractionBound(max_fraction));
      }
      continue;
    }
    next = EnterChildren<true>(tree, nodes, seg, n, mask, bound, stack, &sp, item_prefetch);
  }
}

// ---------------------------------------------------------------------------
// Interleaved traversal. One descent is a chain of dependent cache misses (a
// node's children are known only once the node is loaded), ~one per level,
// which leaves the core idle. The cursors below run the same traversals as
// QueryTree / CastTree one node per Step(): a step works on the node whose
// lines it prefetched in the previous step, then takes the next (the child
// that node returned, else a pop) and prefetches what that one will read.
// Stepping several cursors in turn keeps several misses in flight ("AMAC":
// Kocberber et al., "Asynchronous Memory Access Chaining", VLDB 2015). Each
// cursor visits the same nodes and calls its leaf function in the same order
// as the one-shot function, so answers are identical.

/// Stack of a cursor: inline for ordinary tree heights (no allocation per
/// query), on the heap only for pathological ones. Not movable once Reset.
template <typename T, size_t kInline = 64>
class CursorStack {
 public:
  CursorStack() = default;
  CursorStack(const CursorStack&) = delete;
  CursorStack& operator=(const CursorStack&) = delete;
  /// Makes room for `n` entries (contents undefined).
  void Reset(size_t n) {
    if (n > kInline) {
      if (heap_.size() < n) heap_.resize(n);
      data_ = heap_.data();
    } else {
      data_ = inline_;
    }
  }
  T& operator[](size_t i) { return data_[i]; }

 private:
  T inline_[kInline];
  T* data_ = inline_;
  std::vector<T> heap_;
};

/// QueryTree as a resumable traversal.
class BoxCursor {
 public:
  /// Starts a traversal of `tree` for leaves overlapping `box` on `mask`.
  void Begin(const DynamicTree& tree, const FloatAabb& box, uint32_t mask) {
    tree_ = &tree;
    box_ = BoxSetup(box);
    mask_ = mask;
    sp_ = 0;
    pending_ = DynamicTree::kNull;
    const uint32_t root = tree.root();
    if (root == DynamicTree::kNull || !BoxesOverlap(tree.node(root), box_)) return;
    stack_.Reset(static_cast<size_t>(tree.Height()) + 2);
    // The root is the first Step's node at once, as a pop would make it
    // (one step less a query; its item's prefetch, for a lone leaf, is left
    // out).
    pending_ = root;
    PrefetchNext(tree.nodes(), root, NoItemPrefetch{});
  }

  /// Does one node's work: fn(item, layer) for a leaf. Returns false when done.
  template <typename Fn, typename ItemPrefetch>
  bool Step(Fn&& fn, const ItemPrefetch& item_prefetch) {
    const TreeNode* nodes = tree_->nodes();
    if (pending_ != DynamicTree::kNull) {
      const TreeNode& n = nodes[pending_];
      pending_ = DynamicTree::kNull;
      if (n.IsLeaf()) {
        if ((mask_ >> n.child2) & 1u) fn(n.Item(), n.child2);
      } else {
        pending_ = OverlapChildren<false>(*tree_, nodes, n, box_, mask_, &stack_[0], &sp_,
                                          item_prefetch);
      }
    }
    if (pending_ == DynamicTree::kNull) {
      if (sp_ == 0) return false;
      pending_ = stack_[--sp_];
    }
    PrefetchNext(nodes, pending_, item_prefetch);
    return true;
  }

 private:
  const DynamicTree* tree_ = nullptr;
  BoxSetup box_;
  uint32_t mask_ = 0;
  CursorStack<uint32_t> stack_;
  size_t sp_ = 0;
  uint32_t pending_ = DynamicTree::kNull;
};

/// CastTree as a resumable traversal.
class SegmentCursor {
 public:
  /// Starts a traversal of `tree` along `seg` (kept by pointer) on `mask`.
  void Begin(const DynamicTree& tree, const SegmentSetup* seg, uint32_t mask,
             double max_fraction) {
    tree_ = &tree;
    nodes_ = tree.nodes();
    seg_ = seg;
    mask_ = mask;
    max_fraction_ = max_fraction;
    bound_.Set(FractionBound(max_fraction));
    sp_ = 0;
    pending_ = DynamicTree::kNull;
    const uint32_t root = tree.root();
    if (root == DynamicTree::kNull) return;
    float t_root, unused;
    if ((seg->Entry2(tree.node(root), tree.node(root), bound_, &t_root, &unused) & 1u) == 0) {
      return;
    }
    stack_.Reset(static_cast<size_t>(tree.Height()) + 2);
    // The root is the first Step's node at once, as a pop would make it
    // (one step less a query; its item's prefetch, for a lone leaf, is left
    // out).
    pending_ = root;
    PrefetchNext(nodes_, root, NoItemPrefetch{});
  }

  /// Does one node's work: for a leaf, max_fraction = fn(item, layer,
  /// max_fraction) (negative stops). Returns false when done.
  template <typename Fn, typename ItemPrefetch>
  bool Step(Fn&& fn, const ItemPrefetch& item_prefetch) {
    // The walk's state in locals, stored back once: the stack's stores may
    // alias the members (as far as gcc knows), which otherwise go through
    // memory around each of them.
    const TreeNode* nodes = nodes_;
    Entry* stack = &stack_[0];
    uint32_t next = pending_;
    size_t sp = sp_;
    // The pending node's fraction was checked against bound_ when it was
    // popped or entered, and only this cursor's own leaves change bound_.
    if (next != DynamicTree::kNull) {
      const TreeNode& n = nodes[next];
      next = DynamicTree::kNull;
      if (n.IsLeaf()) {
        if ((mask_ >> n.child2) & 1u) {
          max_fraction_ = fn(n.Item(), n.child2, max_fraction_);
          if (max_fraction_ < 0.0) {
            sp_ = 0;
            pending_ = DynamicTree::kNull;
            return false;
          }
          bound_.Set(FractionBound(max_fraction_));
        }
      } else {
        next = EnterChildren<false>(*tree_, nodes, *seg_, n, mask_, bound_, stack, &sp,
                                    item_prefetch);
      }
    }
    while (next == DynamicTree::kNull) {
      if (sp == 0) {
        sp_ = 0;
        pending_ = DynamicTree::kNull;
        return false;
      }
      // Field by field, each as it was pushed (store-to-load forwarding).
      --sp;
      if (stack[sp].t <= bound_.value()) next = stack[sp].node;
    }
    sp_ = sp;
    pending_ = next;
    PrefetchNext(nodes, next, item_prefetch);
    return true;
  }

 private:
  using Entry = SegmentEntry;
  const DynamicTree* tree_ = nullptr;
  /// tree_->nodes() (one load a step less).
  const TreeNode* nodes_ = nullptr;
  const SegmentSetup* seg_ = nullptr;
  uint32_t mask_ = 0;
  double max_fraction_ = 1.0;
  /// FractionBound(max_fraction_): what entry fractions are compared with.
  EntryBound bound_{1.0f};
  CursorStack<Entry> stack_;
  size_t sp_ = 0;
  /// Node to visit on the next Step (its lines prefetched), or kNull.
  uint32_t pending_ = DynamicTree::kNull;
};

}  // namespace hitbox
