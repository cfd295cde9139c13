// A triangle mesh collider: a two-sided triangle SURFACE (not a solid, see
// ../shared/cases/FORMAT.md) with a compact bounding-volume hierarchy built
// once, queried in the mesh's local frame (callers transform queries into it).
//
// Storage: one allocation per mesh holding bit-packed vertices and triangle
// records and a 4-wide quantized hierarchy, decoded exactly; the layout and
// the active-edge rule are in docs/architecture.md ("Mesh storage").
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <new>

#include <immintrin.h>
#include <span>
#include <utility>
#include <vector>

#include "geometry/float_rounding.h"
#include "geometry/mesh_vertices.h"
#include "geometry/triangle.h"
#include "hitbox/math/math.h"
#include "hitbox/status.h"

namespace hitbox {

/// Faces meeting at an edge at more than this angle (radians, ~5 degrees)
/// make the edge active.
inline constexpr double kActiveEdgeAngle = 0.0872664626;
/// Most triangles in a hierarchy leaf (at most 7: a bottom node keeps each
/// child's count in 3 bits, 0 for none).
inline constexpr uint32_t kMeshLeafSize = 4;
/// Children of a hierarchy node.
inline constexpr uint32_t kMeshNodeWidth = 4;
/// Deepest node level of a mesh hierarchy (root 1): the builder splits by
/// surface area only while a balanced subtree below would still fit (a
/// balanced tree of kMaxMeshTriangles is 14 levels).
inline constexpr uint32_t kMeshMaxDepth = 24;
/// Largest number of triangles in a mesh (indices keep 3 flag bits).
inline constexpr uint32_t kMaxMeshTriangles = 1u << 28;
/// Meshes of this many triangles and more choose their root's splits on
/// coarse boxes (TriangleMesh::BuildCoarseRoot).
inline constexpr uint32_t kMeshCoarseRootTriangles = 1u << 18;
/// Largest number of vertices in a mesh.
inline constexpr uint32_t kMaxMeshVertices = 1u << 29;
/// A mesh whose triangles come roughly in the order of their first vertex
/// keeps one base original index per 2^kMeshOriginalShift vertices.
inline constexpr uint32_t kMeshOriginalShift = 6;

/// Closest or any hit of a ray on a mesh or heightfield, local frame.
struct MeshRayHit {
  /// Fraction of the translation in [0, 1]; hit point = origin + fraction * translation.
  double fraction = 0.0;
  /// Unit normal of the hit triangle, facing the ray origin (two-sided surface).
  Vec3 normal{0, 1, 0};
  /// Index of the triangle in the input (`sub_shape`).
  uint32_t triangle = 0;
};

/// Vertices of one surface (mesh or heightfield) sheared into one ray's
/// frame (ShearVertex), cached by vertex index (direct-mapped, multiplicative
/// hash): neighbouring triangles of a leaf or cell and of nearby ones share
/// most of their vertices, so most are decoded and sheared once per ray. The
/// cached values are those ShearVertex gives, to the bit.
class ShearedVertexCache {
 public:
  ShearedVertexCache() { std::fill(std::begin(key_), std::end(key_), kNoVertex); }

  /// Sheared vertex `i`, made by make(i) when not cached.
  template <typename Make>
  __attribute__((always_inline)) ShearedVertex Get(uint32_t i, Make&& make) {
    const uint32_t slot = (i * 0x9E3779B1u) >> (32 - kSlotBits);
    if (key_[slot] != i) {
      key_[slot] = i;
      value_[slot] = make(i);
    }
    return value_[slot];
  }

 private:
  static constexpr int kSlotBits = 5;
  static constexpr uint32_t kNoVertex = 0xffffffffu;  // above any vertex index
  uint32_t key_[1u << kSlotBits];
  ShearedVertex value_[1u << kSlotBits];
};

class BuildBoxes;  // geometry/sah_split.h
class CoarseBuildBoxes;
namespace internal {
class MeshParts;  // geometry/mesh_parts.h
}

/// 128-bit unsigned (a GCC/Clang extension) for packed triangle records.
__extension__ typedef unsigned __int128 PackedRecord;

/// Per-triangle flags: bit i set = edge i (0: v0-v1, 1: v1-v2, 2: v2-v0) is active.
using EdgeFlags = uint8_t;

/// Scratch kept by a thread between queries (a sweep's heap and entered
/// triangles) holds at most this many entries' capacity once a query ends:
/// one sweep across most of a large mesh (up to 2^20 triangles in a
/// session) must not keep tens of megabytes for the thread's lifetime.
inline constexpr size_t kMeshScratchKept = 4096;

/// Frees `v`'s storage when the scope ends, if it grew past kMeshScratchKept.
template <typename T>
struct ScratchRelease {
  std::vector<T>* v;
  ~ScratchRelease() {
    if (v->capacity() > kMeshScratchKept) std::vector<T>().swap(*v);
  }
};

/// A validated, immutable triangle mesh with its hierarchy. Build once, share
/// between colliders; all queries are const and thread-safe.
class TriangleMesh {
 public:
  using Indices = std::array<uint32_t, 3>;

  /// Move-only: a built mesh owns its block until Settle moves it there.
  TriangleMesh(TriangleMesh&& other) noexcept;
  TriangleMesh& operator=(TriangleMesh&& other) noexcept;
  TriangleMesh(const TriangleMesh&) = delete;
  TriangleMesh& operator=(const TriangleMesh&) = delete;
  ~TriangleMesh();

  /// Builds a mesh: validates indices (`triangles[17][2]: vertex index 900
  /// out of range (300 vertices)`), coordinates (finite, |x| <= kMaxCoordinate),
  /// an empty mesh; drops zero-area triangles (dropped_triangles() counts
  /// them); fails when no triangle is left. `spent_vertices`, when given,
  /// holds `vertices` and is the caller's to give up: it is freed as soon as
  /// the vertices are stored, before the build's larger arrays are made;
  /// `spent_triangles` likewise holds `triangles`, freed once the records
  /// are written, before the mesh's block is made.
  /// `spent_floats` and `spent_decimals` are `spent_vertices` for vertices
  /// given as floats or decimals.
  [[nodiscard]] static Result<TriangleMesh> Build(mesh_vertices::VertexInput vertices,
                                                  std::span<const Indices> triangles,
                                                  std::vector<Vec3>* spent_vertices = nullptr,
                                                  std::vector<Indices>* spent_triangles = nullptr,
                                                  std::vector<float>* spent_floats = nullptr,
                                                  std::vector<int32_t>* spent_decimals = nullptr);
  /// Builds the mesh of `parts` joined end to end (a merged mesh: its input
  /// is the parts' inputs in order, vertex and triangle indices offset by
  /// the parts before): a hierarchy over the parts' own leaves, its vertices
  /// and triangle records read from the parts' meshes (none stored twice).
  /// mesh_over_parts.cc.
  [[nodiscard]] static Result<TriangleMesh> BuildOverParts(const internal::MeshParts* parts);

  /// True when every leaf holds triangles of one part of the input only
  /// (parts starting at input triangles `part_first`, increasing, from 0).
  bool LeavesWithinParts(std::span<const uint32_t> part_first) const;

  /// Moves a built mesh into the room its block keeps at its end: the
  /// mesh and all its arrays are then one allocation (the shapes' shared
  /// data holds meshes so). Free it with DestroySettled.
  static const TriangleMesh* Settle(TriangleMesh&& mesh);
  static void DestroySettled(const TriangleMesh* mesh);
  /// Bytes of the room for the mesh object at the end of its block (part of
  /// MemoryBytes()).
  static size_t FixedBytes();

  /// Triangles kept (input count minus dropped).
  uint32_t triangle_count() const { return triangle_count_; }
  /// Zero-area triangles dropped at build.
  uint32_t dropped_triangles() const { return dropped_count_; }
  /// Triangles whose record escapes to an entry of its own (EscapeOf), and
  /// the bytes of those entries (then 16 bytes of padding; none without).
  uint32_t escaped_triangles() const { return escape_count_; }
  size_t EscapeBytes() const {
    return escape_count_ == 0 ? 0 : (uint64_t{escape_count_} * EscapeBits() + 7) / 8 + 16;
  }
  /// The mesh as it was given to Build (every vertex, every triangle in input
  /// order, the dropped ones included), rebuilt from the stored form: the same
  /// values to the bit, so the input need not be kept beside the mesh.
  void Input(std::vector<Vec3>* vertices, std::vector<Indices>* triangles) const;
  uint32_t vertex_count() const { return vertex_count_; }
  /// Local-frame bounds of all kept triangles.
  const Aabb& bounds() const { return bounds_; }
  /// Bytes of the mesh's block: vertices, triangles, flags and hierarchy,
  /// and the room for this object at its end (used once settled).
  size_t MemoryBytes() const;
  /// MemoryBytes() by what the bytes hold.
  struct StorageBytes {
    size_t hierarchy = 0;  ///< inner and bottom nodes
    size_t triangles = 0;  ///< triangle records, escapes, original-index bases, dropped ones
    size_t vertices = 0;   ///< packed and plain vertices, float codes
    size_t fixed = 0;      ///< this object and the block's padding before it
  };
  StorageBytes Storage() const;
  /// Bits of an escape entry of a mesh of `kept` triangles (of
  /// `input_triangles`) with `vbits`-bit vertex indices.
  static uint32_t EscapeBitsFor(uint64_t kept, uint32_t vbits, uint64_t input_triangles);
  /// About MemoryBytes() of the mesh Build(vertices, triangles) would make,
  /// from an O(n) scan of the input (the storage Build chooses, the triangles
  /// it keeps, an estimate of its hierarchy's nodes), building nothing.
  /// Indices out of range count as dropped triangles (Build refuses them); 0
  /// when Build would keep no triangle. Kept in step with Build's storage.
  static size_t PredictMemoryBytes(mesh_vertices::VertexInput vertices,
                                   std::span<const Indices> triangles);
  /// True when vertices are stored as integers q of q / 10^k or q / 2^k.
  bool quantized_vertices() const { return !vpacked_.empty(); }
  /// True when vertices are stored as float32 (exact; not quantized).
  bool float_vertices() const {
    return (!fvertices_.empty() || !fpacked_.empty()) && vpacked_.empty();
  }
  /// Bits of a float vertex's packed record (mesh_vertices::FloatLayout), 0
  /// when float vertices are plain (12 bytes) or not floats.
  uint32_t float_record_bits() const { return fpacked_.empty() ? 0 : flt_.record_bits; }
  /// Sign-and-exponent codes the packed float vertices refer to (4 bytes each).
  uint32_t float_code_count() const { return fpacked_.empty() ? 0 : flt_.code_count; }
  /// Vertices kept apart from the packed ones (as float32 or doubles).
  uint32_t fine_vertex_count() const { return fine_count_; }
  /// The places of the decimals that the vertices are, stored as the
  /// float32s they were written from (mesh_vertices::PlanStorage); -1 when
  /// they are stored as themselves.
  int decimal_places() const { return static_cast<int>(decimal_places_) - 1; }
  /// True when the vertices are read from the parts' meshes
  /// (BuildOverParts), none stored here.
  bool part_vertices() const { return !fpacked_.empty() && flt_.record_bits == 0; }
  /// True when the triangle records are the parts' too (BuildOverParts).
  bool part_triangles() const { return part_triangles_; }
  /// Number of hierarchy nodes (bottom nodes included).
  size_t node_count() const { return size_t{node_count_} + bottom_count_; }
  /// Number of hierarchy nodes kept in the 32-byte bottom form.
  size_t bottom_node_count() const { return bottom_count_; }
  /// Node levels of the hierarchy (1: the root alone), at most kMeshMaxDepth.
  uint32_t height() const { return height_; }

  /// Vertices of kept triangle `k` (hierarchy order, 0..triangle_count()-1).
  inline void TriangleVertices(uint32_t k, Vec3 out[3]) const;
  /// Decoded vertices by vertex index (direct-mapped, multiplicative hash),
  /// for one query's TriangleVertices: the triangles of a leaf and of its
  /// neighbours share most of their vertices (about six triangles meet at a
  /// vertex), so most are decoded once per query. The values are those
  /// TriangleVertices gives, to the bit.
  class VertexCache {
   public:
    VertexCache() { std::fill(std::begin(key_), std::end(key_), kNoVertex); }

   private:
    /// The slot vertex i takes.
    static uint32_t Slot(uint32_t i) { return (i * 0x9E3779B1u) >> (32 - kSlotBits); }
    friend class TriangleMesh;
    static constexpr int kSlotBits = 4;
    static constexpr uint32_t kNoVertex = 0xffffffffu;  // above any vertex index
    uint32_t key_[1u << kSlotBits];
    Vec3 value_[1u << kSlotBits];
  };
  /// TriangleVertices(k, out), decimal vertices taken from `cache` when there
  /// (and kept there when decoded).
  inline void TriangleVertices(uint32_t k, Vec3 out[3], VertexCache* cache) const;
  /// The same from the triangle's vertex indices (TriangleIndices).
  inline void IndexedVertices(const uint32_t idx[3], Vec3 out[3], VertexCache* cache) const;
  /// Vertex indices of kept triangle `k` (into the input vertices).
  inline void TriangleIndices(uint32_t k, uint32_t idx[3]) const;
  /// TriangleIndices of the `count` triangles of one leaf from `first` (a
  /// merged mesh finds their part once).
  __attribute__((always_inline)) void LeafIndices(uint32_t first, uint32_t count,
                                                  uint32_t (*idx)[3]) const {
    if (part_triangles_) [[unlikely]] {
      PartLeafIndices(first, count, idx);
      return;
    }
    for (uint32_t i = 0; i < count; ++i) TriangleIndices(first + i, idx[i]);
  }
  /// Original input index of kept triangle `k`.
  uint32_t OriginalIndex(uint32_t k) const {
    if (!narrow_indices_) [[unlikely]] return OriginalIndexOutOfLine(k);
    return OriginalOfRecord(Record(k));
  }
  /// The original index a record that does not escape holds.
  uint32_t OriginalOfRecord(PackedRecord r) const {
    const uint32_t omask = static_cast<uint32_t>((uint64_t{1} << obits_) - 1);
    const uint32_t stored = static_cast<uint32_t>(r >> (index_bits() + 3)) & omask;
    if (obase_.empty()) return stored;
    // Predicted from the first vertex index (uint32 arithmetic wraps: exact).
    const uint32_t i0 = static_cast<uint32_t>(r) & vmask_;
    return stored + obase_[i0 >> kMeshOriginalShift] +
           static_cast<uint32_t>((uint64_t{i0 & kOriginalLocal} * oslope_) >> 16);
  }
  /// Bases of original indices predicted from the first vertex index (one
  /// per 2^kMeshOriginalShift vertices; 0 when the records hold the indices
  /// themselves). docs/architecture.md, "Mesh storage".
  uint32_t original_base_count() const {
    return obase_.empty() ? 0 : ((vertex_count_ - 1) >> kMeshOriginalShift) + 1;
  }
  /// Active-edge flags of kept triangle `k`.
  EdgeFlags ActiveEdges(uint32_t k) const {
    if (part_triangles_) [[unlikely]] return PartActiveEdges(k);
    return static_cast<EdgeFlags>(static_cast<uint32_t>(Record(k) >> index_bits()) & 7u);
  }
  /// Bits of one packed triangle record.
  uint32_t record_bits() const { return index_bits() + 3 + obits_; }

  /// Closest hit of the ray origin + t * translation, t in [0, 1], on any
  /// triangle (watertight, two-sided). False when nothing is hit.
  /// Hits beyond `max_fraction` are left out (the walk is pruned there).
  bool RaycastClosest(const Vec3& origin, const Vec3& translation, MeshRayHit* hit,
                      double max_fraction = 1.0) const;
  /// Calls visit(k) for every kept triangle in a hierarchy leaf whose box
  /// overlaps `box`; visit returns false to stop. Returns false when stopped.
  template <typename Visit>
  bool VisitOverlapping(const Aabb& box, Visit&& visit) const;
  /// The same a leaf at a time: visit_leaf(first, end) for its triangles.
  template <typename VisitLeaf>
  bool VisitOverlappingLeaves(const Aabb& box, VisitLeaf&& visit_leaf) const;

  /// Calls visit(k) for every kept triangle in a hierarchy leaf whose box,
  /// grown by `grow`, the path reaches for t in [0, *max_t], nearer leaves
  /// first; *max_t is read again before every node (visit may lower it, which
  /// prunes what lies beyond). visit returns false to stop. (The swept box
  /// and translation are for Heightfield's version; the path decides here.)
  template <typename Path, typename Visit>
  bool VisitSwept(const Aabb& swept_box, const Vec3& translation, const Path& path,
                  const Vec3& grow, const double* max_t, Visit&& visit) const;

  /// As VisitSwept, but closest first down to the triangles: for each
  /// triangle k of an entered leaf, enter(k, idx, &t, &stop) (idx: its
  /// vertex indices, TriangleIndices) says whether the caller's own test
  /// lets it through, t a lower bound of its first contact;
  /// visit(k, i) is then called in increasing t (at equal t, waiting
  /// triangles before nodes, the lower k first) while t <= *max_t, so a sweep
  /// meets its earliest triangles first and *max_t shrinks soonest. i counts
  /// the triangles entered before k (from 0): the caller may keep what enter
  /// computed for k at index i of a list. enter sets stop, or visit returns
  /// false, to end the walk (then false is returned).
  template <typename Path, typename Enter, typename Visit>
  bool VisitSweptClosestFirst(const Path& path, const Vec3& grow, const double* max_t,
                              Enter&& enter, Visit&& visit) const;

  /// Calls visit(k) for every kept triangle in a hierarchy leaf whose box the
  /// ray origin + t * dir reaches for t in [0, *max_t], nearer leaves first;
  /// *max_t is read again after every leaf (visit may lower it, which prunes
  /// what lies beyond). visit returns false to stop. Returns false when
  /// stopped. The rays' walk: VisitSwept's with no growth, the node test in
  /// single precision (RayChildren), four children in one SSE register.
  template <typename Visit>
  bool VisitRay(const Vec3& origin, const Vec3& dir, const double* max_t, Visit&& visit) const;

 private:
  /// The arrays while Build makes them, copied into one block at the end.
  struct Staging;
  /// A 4-wide hierarchy node (64 bytes, one cache line).
  struct alignas(64) Node {
    /// Quantized child boxes, [axis][child] (16 bits, relative to bounds_).
    uint16_t min[3][kMeshNodeWidth];
    uint16_t max[3][kMeshNodeWidth];
    /// Per child: kLeafBit | first << 3 | (count - 1) for a leaf of
    /// triangles first..first+count-1, the index of an inner node, or kEmpty.
    uint32_t child[kMeshNodeWidth];
  };
  static_assert(sizeof(Node) == 64);
  /// A node whose children are all leaves (32 bytes). Per axis a, child i's
  /// box is base + (min[a][i] << s) .. base + ((max[a][i] + 1) << s) - 1,
  /// clipped to the box, where base..top is the node's own box in its
  /// parent (16-bit) and s the least shift that brings top - base under 256.
  struct alignas(32) BottomNode {
    uint8_t min[3][kMeshNodeWidth];
    uint8_t max[3][kMeshNodeWidth];
    /// First triangle (bits 0-27), triangles per child (3 bits each from
    /// bit 28; 0: no child), the slot in the parent (bits 40-41) and the
    /// parent's index in nodes_ (from bit 42).
    uint64_t info;
  };
  static_assert(sizeof(BottomNode) == 32);
  static_assert(kMeshLeafSize <= 7, "BottomNode::info keeps a leaf's count in 3 bits");
  static constexpr uint32_t kLeafBit = 1u << 31;
  /// A child word with kBottomBit (and not kLeafBit) names bottom_[word & kNodeMask].
  static constexpr uint32_t kBottomBit = 1u << 30;
  static constexpr uint32_t kNodeMask = kBottomBit - 1;
  static constexpr uint32_t kEmpty = 0xffffffffu;
  /// Parents of bottom nodes must have indices below this (BottomNode::info).
  static constexpr uint64_t kMaxBottomParents = uint64_t{1} << 22;
  /// The least shift s with range >> s <= 255.
  static uint32_t BottomShift(uint32_t range) {
    const uint32_t width = 32u - static_cast<uint32_t>(__builtin_clz(range | 1u));
    return width > 8 ? width - 8 : 0;
  }
  /// The node an inner child word names: nodes_[word], or the bottom node
  /// decoded into `scratch` (its boxes wider or equal, never narrower).
  __attribute__((always_inline)) const Node& NodeAt(uint32_t word, Node* scratch) const {
    if ((word & kBottomBit) == 0) return nodes_[word];
    BottomNodeAt(word & kNodeMask, scratch);
    return *scratch;
  }
  void BottomNodeAt(uint32_t index, Node* out) const;
  /// The subtree over (*order)[begin, end) built on boxes of its own
  /// triangles (box_of(input index)): exact ones below a quarter of
  /// kMeshCoarseRootTriangles, else its splits chosen on coarse ones and
  /// each child built so in turn. Returns its child word; *box the union of
  /// its triangles' exact boxes.
  template <typename BoxOf>
  uint32_t BuildOnOwnBoxes(std::vector<uint32_t>* order, uint32_t begin, uint32_t end,
                           uint32_t depth, const BoxOf& box_of, Staging* st, Aabb* box);
  /// A node at `depth` whose child i, over (*order)[bounds[i], bounds[i +
  /// 1]) for i < parts, is built by BuildOnOwnBoxes; *box the union of the
  /// children's. Returns the node's index.
  template <typename BoxOf>
  uint32_t AddNodeOnOwnBoxes(std::vector<uint32_t>* order, const uint32_t* bounds, uint32_t parts,
                             uint32_t depth, const BoxOf& box_of, Staging* st, Aabb* box);
  /// Puts the staged records (st->records, by kept position) in leaf
  /// order: record k the one of input triangle (*order)[k], escape entries
  /// keyed anew; frees `order`.
  void RecordsInLeafOrder(std::vector<uint32_t>* order, Staging* st);
  /// The word for child `slot` of node `parent` (its box set), `word` as
  /// built: a bottom_ node in its stead (the node popped) when the node
  /// holds only leaves in one run of triangles, else `word`.
  uint32_t BottomWord(uint32_t parent, uint32_t slot, uint32_t word, Staging* st) const;
  /// The triangles [first, end) of a leaf's child word (kLeafBit set).
  struct LeafRange {
    uint32_t first, end;
  };
  static LeafRange LeafTriangles(uint32_t word) {
    const uint32_t first = (word & ~kLeafBit) >> 3;
    return {first, first + (word & 7u) + 1};
  }
  /// A node pushes at most 3 more entries than it pops: 3 per level.
  static constexpr int kStackSize = 3 * kMeshMaxDepth + 4;
  static constexpr uint32_t kIndexMask = 0x7fffffffu;
  static constexpr uint32_t kOriginalLocal = (1u << kMeshOriginalShift) - 1;

  /// The packed record of triangle k, from bit 0 (unaligned little-endian
  /// load of the bytes holding it; packed_ has 16 bytes of padding).
  PackedRecord Record(uint32_t k) const {
    const uint64_t bit = static_cast<uint64_t>(k) * record_bits();
    const uint8_t* p = packed_.data() + (bit >> 3);
    if (wide_) {
      PackedRecord x;
      std::memcpy(&x, p, sizeof(x));
      return x >> (bit & 7);
    }
    uint64_t x;
    std::memcpy(&x, p, sizeof(x));
    return x >> (bit & 7);
  }
  /// Writes triangle k's record into packed_ (zero there before): its first
  /// vertex index, the two difference fields, flags and original field.
  void SetRecord(uint32_t k, uint32_t i0, uint32_t d1, uint32_t d2, EdgeFlags flags,
                 uint32_t original);
  /// A triangle whose index differences or original field do not fit the
  /// record's widths: its first difference field holds EscapeCode(), and
  /// an escape entry the rest (bit-packed after the records, sorted by k:
  /// k, the second and third vertex index, the original index).
  struct Escape {
    uint32_t i1, i2;
    uint32_t original;
  };
  /// The difference field's most negative value, which no kept difference
  /// takes: it marks an escaped record.
  uint32_t EscapeCode() const { return 1u << (dbits_ - 1); }
  /// Whether record `r` (Record's) is escaped: its first difference field
  /// holds EscapeCode().
  bool EscapedRecord(PackedRecord r) const {
    return escape_count_ != 0 && (static_cast<uint32_t>(r >> vbits_) & dmask_) == EscapeCode();
  }
  /// Bits of an escape entry (k, two vertex indices, an input triangle index).
  uint32_t EscapeBits() const {
    return EscapeBitsFor(triangle_count_, vbits_, triangle_count_ + dropped_count_);
  }
  /// Bytes of the triangle records (then 16 bytes of padding); the escape
  /// entries follow them.
  size_t RecordBytes() const {
    if (part_triangles_) return 0;
    return (static_cast<uint64_t>(triangle_count_) * record_bits() + 7) / 8 + 16;
  }
  /// Writes escape entry `j` (zero there before).
  void SetEscape(uint32_t j, uint32_t k, uint32_t i1, uint32_t i2, uint32_t original);
  /// The escape of triangle k (whose record holds EscapeCode()).
  Escape EscapeOf(uint32_t k) const;
  /// TriangleIndices and OriginalIndex of a mesh with escapes, with
  /// indices beyond one 64-bit load or with its parts' triangles (kept out
  /// of the walks' inlined code), and ActiveEdges of the last.
  void TriangleIndicesFromRecord(uint32_t k, uint32_t idx[3]) const;
  uint32_t OriginalIndexOutOfLine(uint32_t k) const;
  EdgeFlags PartActiveEdges(uint32_t k) const;
  void PartLeafIndices(uint32_t first, uint32_t count, uint32_t (*idx)[3]) const;
  /// Asks for the vertices of a leaf's triangles (their indices `idx`,
  /// `count` of them) before they are decoded one triangle after the other,
  /// so their loads overlap (used by the closest-first sweep walk, where
  /// memory latency dominates).
  __attribute__((always_inline)) void PrefetchVertices(const uint32_t (*idx)[3],
                                                       uint32_t count) const {
    for (uint32_t k = 0; k < count; ++k) {
      for (uint32_t i : idx[k]) {
        if (vpacked_.empty()) {
          if (!fpacked_.empty()) {
            __builtin_prefetch(fpacked_.data() + ((static_cast<uint64_t>(i) * flt_.record_bits) >> 3));
          } else if (dvertices_.empty()) {
            __builtin_prefetch(fvertices_.data() + 3 * static_cast<size_t>(i));
          } else {
            __builtin_prefetch(dvertices_.data() + i);
          }
        } else {
          __builtin_prefetch(vpacked_.data() + ((static_cast<uint64_t>(i) * vrecord_bits_) >> 3));
        }
      }
    }
  }
  /// Asks for the memory of child word `word` ahead of its turn: an inner
  /// node's line, or a leaf's first triangle record. On a large level a
  /// walk's loads mostly miss the cache (big_level: a third of the sweep
  /// walk's time waited on node, record and vertex loads); asked for as the
  /// children are entered, they overlap instead of waiting one by one.
  __attribute__((always_inline)) void Prefetch(uint32_t word) const {
    if (word & kLeafBit) {
      const uint64_t bit = static_cast<uint64_t>(LeafTriangles(word).first) * record_bits();
      __builtin_prefetch(packed_.data() + (bit >> 3));
    } else if (word & kBottomBit) {
      __builtin_prefetch(bottom_.data() + (word & kNodeMask));
    } else {
      __builtin_prefetch(nodes_.data() + word);
    }
  }
  /// The quantization step of axis a (a power of two, or 0): exactly the
  /// double the build chose, from the top 16 bits of its representation.
  double Step(int a) const { return std::bit_cast<double>(uint64_t{step_bits_[a]} << 48); }
  Vec3 Steps() const { return {Step(0), Step(1), Step(2)}; }
  /// Bits of the vertex indices in a record (first index + two differences).
  uint32_t index_bits() const { return vbits_ + 2u * dbits_; }
  /// Vertex index from the first index and a dbits_-bit difference.
  uint32_t Offset(uint32_t first, uint32_t diff) const {
    const uint32_t shift = 32u - dbits_;
    const int32_t d = static_cast<int32_t>(diff << shift) >> shift;
    return (first + static_cast<uint32_t>(d)) & vmask_;
  }

  /// The 64 bits of `bytes` from bit `bit` on (unaligned little-endian load;
  /// the arrays have 16 bytes of padding): the low 57 are bits [bit, bit + 57).
  static uint64_t Load64(const uint8_t* bytes, uint64_t bit) {
    uint64_t x;
    std::memcpy(&x, bytes + (bit >> 3), sizeof(x));
    return x >> (bit & 7);
  }
  /// Packed vertex i as its integers q (one 64-bit load per axis, an axis
  /// has at most 33 bits, or one for x and y together when they fit), true;
  /// false for a fine vertex, with its index among the fine ones in *fine.
  __attribute__((always_inline)) bool VertexQ(uint32_t i, int64_t q[3], uint32_t* fine) const {
    const uint64_t base = static_cast<uint64_t>(i) * vrecord_bits_;
    const uint64_t x = Load64(vpacked_.data(), base);
    const uint64_t y = xy_one_load_ ? x >> vaxis_off_[1]
                                    : Load64(vpacked_.data(), base + vaxis_off_[1]);
    const uint64_t z = Load64(vpacked_.data(), base + vaxis_off_[2]);
    if ((x & vaxis_mask_[0]) == fine_mark_) [[unlikely]] {
      *fine = static_cast<uint32_t>((y & vaxis_mask_[1]) | (z & vaxis_mask_[2]) << vaxis_bits_[1]);
      return false;
    }
    q[0] = static_cast<int64_t>(x & vaxis_mask_[0]) + qmin_[0];
    q[1] = static_cast<int64_t>(y & vaxis_mask_[1]) + qmin_[1];
    q[2] = static_cast<int64_t>(z & vaxis_mask_[2]) + qmin_[2];
    return true;
  }
  /// Fine vertex `at` (VertexQ), widened (exact).
  Vec3 FineVertex(uint32_t at) const {
    return fvertices_.empty() ? dvertices_[at] : FloatVertex(at);
  }
  /// Decimal vertex i as q / 10^k, correctly rounded: exactly the input
  /// coordinates (`div` holds 10^k in both lanes; x and y share one division).
  __attribute__((always_inline)) void DecodeVertex(uint32_t i, __m128d div, Vec3* out) const {
    int64_t q[3];
    uint32_t fine;
    if (!VertexQ(i, q, &fine)) [[unlikely]] {
      *out = FineVertex(fine);
      return;
    }
    const __m128d xy =
        _mm_div_pd(_mm_set_pd(static_cast<double>(q[1]), static_cast<double>(q[0])), div);
    _mm_storel_pd(&out->x, xy);
    _mm_storeh_pd(&out->y, xy);
    out->z = static_cast<double>(q[2]) / vertex_divisor_[2];
  }
  /// Vertex i as stored: the input's, or the float32s of its decimals.
  __attribute__((always_inline)) Vec3 StoredVertex(uint32_t i) const {
    if (!vpacked_.empty()) {
      int64_t q[3];
      uint32_t fine;
      if (!VertexQ(i, q, &fine)) return FineVertex(fine);
      return {static_cast<double>(q[0]) / vertex_divisor_[0],
              static_cast<double>(q[1]) / vertex_divisor_[1],
              static_cast<double>(q[2]) / vertex_divisor_[2]};
    }
    if (dvertices_.empty()) return FloatVertex(i);
    return dvertices_[i];
  }
  __attribute__((always_inline)) Vec3 Vertex(uint32_t i) const {
    if (decimal_places_ != 0) [[unlikely]] {
      return DecimalVertex(i);
    }
    return StoredVertex(i);
  }
  /// Vertex i of a mesh stored as the float32s of its decimals
  /// (decimal_places_), and TriangleVertices and IndexedVertices there. Out
  /// of line: the inlined decoders grow by a test and a call only.
  __attribute__((noinline)) Vec3 DecimalVertex(uint32_t i) const;
  __attribute__((noinline)) void DecimalTriangleVertices(uint32_t k, Vec3 out[3]) const;
  __attribute__((noinline)) void DecimalIndexedVertices(const uint32_t idx[3], Vec3 out[3],
                                                        VertexCache* cache) const;
  /// Packed float vertex i (fpacked_), widened (exact), or the parts' vertex
  /// i (part_vertices()). Out of line: the inlined decoders of the other
  /// forms stay as small as before.
  __attribute__((noinline)) Vec3 PackedFloatVertex(uint32_t i) const;
  /// Float vertex i, widened (exact).
  __attribute__((always_inline)) Vec3 FloatVertex(uint32_t i) const {
    if (!fpacked_.empty()) [[unlikely]] return PackedFloatVertex(i);
    const float* f = fvertices_.data() + 3 * static_cast<size_t>(i);
    return {static_cast<double>(f[0]), static_cast<double>(f[1]), static_cast<double>(f[2])};
  }
#ifdef __AVX__
  using Lanes = __m256d;  // one value per child
  static Lanes Splat(double v) { return _mm256_set1_pd(v); }
#else
  using Lanes = __m128d;  // a pair of children (EnterChildren uses two)
  static Lanes Splat(double v) { return _mm_set1_pd(v); }
#endif
  /// A path prepared for EnterChildren, its constants broadcast once per
  /// path: per axis, the entry and exit distances of a child box are near +
  /// q_near * scale and far + q_far * scale, q_near / q_far its quantized
  /// min or max (by the sign of the direction; offsets into Node::min).
  struct PathSetup {
    Lanes near[3], far[3], scale[3];
    uint32_t near_off[3], far_off[3];
    /// Axes the path does not move along: boxes must contain origin there
    /// (near / far are then the min / max bounds lo / hi, scale step_).
    bool zero[3];
    Lanes origin[3];
    /// Absolute widening of the distances (rounding of near / far).
    Lanes slack;
  };
  /// Prepares `path` (a BvhRay) against child boxes min = lo + q * step_,
  /// max = hi + q * step_ per axis.
  template <typename Path>
  PathSetup SetupPath(const Path& path, const Vec3& lo, const Vec3& hi) const;
  /// Bit mask of the children of `n` whose boxes the prepared path enters
  /// for some t in [0, t_max], with a lower bound of that t per child in
  /// `t_enter` (the conservative slab test of bvh_ray.h, four boxes at once).
  static uint32_t EnterChildren(const Node& n, const PathSetup& p, double t_max,
                                double t_enter[kMeshNodeWidth]);
  /// A ray prepared for RayChildren (SetupRay), in float: per axis, a child
  /// box's entry and exit distances are near + q_near * scale and far +
  /// q_far * scale, q_near / q_far its quantized min or max (by the sign of
  /// the direction; offsets into Node::min), each within `slack` of the
  /// exact distance of the decoded box.
  struct RaySetup {
    __m128 near[3], far[3], scale[3];
    __m128 slack;
    uint32_t near_off[3], far_off[3];
    /// The ray cannot meet any child box (it runs beside a flat mesh).
    bool miss;
  };
  RaySetup SetupRay(const Vec3& origin, const Vec3& dir) const;
  /// The children of the root a prepared ray enters, with their entry t.
  struct RayRoot {
    uint32_t mask;
    float t[kMeshNodeWidth];
  };
  /// Tests the root's children against the ray for t in [0, max_t]; false
  /// when it enters none (the ray misses every triangle).
  bool EnterRayRoot(const RaySetup& setup, double max_t, RayRoot* root) const;
  /// VisitRay's walk below a root already entered, a leaf at a time:
  /// visit_leaf(first, end) for its triangles [first, end).
  template <typename VisitLeaf>
  __attribute__((always_inline)) inline bool VisitRayFromRoot(const RaySetup& setup,
                                                              const RayRoot& root,
                                                              const double* max_t,
                                                              VisitLeaf&& visit_leaf) const;
  /// RaycastClosest for a ray whose largest axis is kZ (ray.kz == kZ), hits
  /// up to `limit` (min(1, max_fraction)). Out of line, the walk and its
  /// visit inlined into it: left to GCC, a change of the object's layout
  /// had it call them (+3.8% instructions on level_inyard's rays).
  template <int kZ>
  __attribute__((noinline)) bool RaycastClosestAxes(const Vec3& translation,
                                                    const WatertightRay& ray,
                                                    const RaySetup& setup, const RayRoot& root,
                                                    MeshRayHit* hit, double limit) const;
  /// Bit mask of the children of `n` whose boxes the prepared ray may enter
  /// for some t in [0, t_max] (a superset of those it enters), with a lower
  /// bound of that t per child in `t_enter`.
  static uint32_t RayChildren(const Node& n, const RaySetup& r, float t_max,
                              float t_enter[kMeshNodeWidth]);
  /// Pushes the children of `n` in `mask`, as {child, entry t} stack
  /// entries, onto `top` farthest first, so the nearest is popped next: an
  /// insertion sort straight on top of the stack (no temporary copied).
  /// Returns how many were pushed.
  template <typename Entry, typename T>
  static int PushNearestLast(const Node& n, uint32_t mask, const T* t, Entry* top) {
    int count = 0;
    for (; mask != 0; mask &= mask - 1) {
      const int i = __builtin_ctz(mask);
      const Entry x{n.child[i], t[i]};
      int j = count++;
      while (j > 0 && top[j - 1].t < x.t) {
        top[j] = top[j - 1];
        --j;
      }
      top[j] = x;
    }
    return count;
  }
  /// Bit mask of the children of `n` whose quantized boxes meet the query
  /// range [qlo, qhi] (QueryRange) on every axis.
  static uint32_t OverlapChildren(const Node& n, const int32_t qlo[3], const int32_t qhi[3]);
  /// The quantized range of `box` (which overlaps bounds_): a child box
  /// overlaps `box` exactly when its quantized box meets [qlo, qhi].
  void QueryRange(const Aabb& box, int32_t qlo[3], int32_t qhi[3]) const;
  /// The children of a node over order[begin, end) (more triangles than a
  /// leaf holds): order reordered, child i over [bounds[i], bounds[i + 1]),
  /// *parts of them.
  template <typename Boxes>
  static void BuildSplits(std::vector<uint32_t>* order, const Boxes& boxes, uint32_t begin,
                          uint32_t end, uint32_t depth, uint32_t bounds[kMeshNodeWidth + 1],
                          uint32_t* parts);
  /// The part (index into part_first, plus one) of input triangle `triangle`.
  static size_t PartOf(std::span<const uint32_t> part_first, uint32_t triangle);
  /// Whether leaf order[begin, end) is better as two leaves under a node of
  /// their own (surface area heuristic): then order reordered and
  /// bounds[0..2], *parts = 2 the two, one of st's leaf splits taken.
  static bool SplitLeaf(std::vector<uint32_t>* order, const BuildBoxes& boxes, uint32_t begin,
                        uint32_t end, Staging* st, uint32_t bounds[kMeshNodeWidth + 1],
                        uint32_t* parts);
  /// BuildHierarchy for a huge mesh: the root's splits chosen on `coarse`
  /// boxes (freed then), each child's subtree built on boxes of its own
  /// triangles (BuildOnOwnBoxes): at most the boxes of one child at once
  /// instead of 12 bytes for every triangle.
  template <typename BoxOf>
  void BuildCoarseRoot(std::vector<uint32_t>* order, CoarseBuildBoxes* coarse, const BoxOf& box_of,
                       Staging* st);
  /// At most one SplitLeaf node per this many triangles (about a byte a
  /// triangle at most).
  static constexpr uint32_t kLeafSplitShare = 48;
  /// Builds the subtree over order[begin, end) and returns its child word.
  /// `depth`: the node's level, 1 at the root.
  uint32_t BuildNode(std::vector<uint32_t>* order, const BuildBoxes& boxes,
                     uint32_t begin, uint32_t end, uint32_t depth, Staging* st);
  /// The hierarchy over order's triangles (the box steps set: SetBoxSteps).
  void BuildHierarchy(std::vector<uint32_t>* order, const BuildBoxes& boxes,
                      Staging* st);
  /// Sets the quantization steps of the hierarchy's boxes from bounds_.
  void SetBoxSteps();
  /// Child i's box in `node`, quantized outwards.
  void SetChildBox(Node* node, uint32_t i, const Aabb& box) const;
  /// Slot i of `node` left empty.
  static void ClearChild(Node* node, uint32_t i);
  /// Appends a node whose child i < `parts` boxes items order[bounds[i],
  /// bounds[i + 1]) of `boxes` and is the word child_word(i) returns (which
  /// may append nodes itself); returns the node's index.
  template <typename ChildWord>
  uint32_t AddNode(const BuildBoxes& boxes, const std::vector<uint32_t>& order,
                   const uint32_t* bounds, uint32_t parts, Staging* st,
                   ChildWord&& child_word) const;
  /// The root node over the one leaf `word` (a mesh too small to split).
  void AddRootOverLeaf(uint32_t word, Staging* st) const;
  /// Calls fn(words, count) for the leaves of each node whose children are
  /// all leaves (in slot order), and fn(&word, 1) for each leaf beside an
  /// inner node: every leaf once, grouped as the hierarchy groups them.
  template <typename Fn>
  void ForEachLeafGroup(Fn&& fn) const;
  /// Stores `vertices`: vpacked_ when ChooseDivisors finds divisors, else
  /// fvertices_ or dvertices_; with `fine` flags (PlanVertices), the flagged
  /// ones apart and the rest packed.
  void PackVertices(mesh_vertices::VertexInput vertices, const std::vector<bool>& fine,
                    Staging* st);
  /// Sets the active-edge flags of the staged records (written with none):
  /// an edge is active unless exactly two triangles share it and their
  /// planes meet within kActiveEdgeAngle (mesh_active_edges.cc).
  void StageActiveEdges();
  /// Stores every vertex (all float32) in fpacked_ by `layout`.
  void PackFloatVertices(mesh_vertices::VertexInput vertices,
                         const mesh_vertices::FloatLayout& layout, Staging* st);

  /// An array of the mesh's one block (block_) at `data()`, null when empty
  /// (its length follows from the counts below). Queries read it like the
  /// std::vector it was built in.
  template <typename T>
  struct Stored {
    T* ptr = nullptr;
    T* data() const { return ptr; }
    bool empty() const { return ptr == nullptr; }
    T& operator[](size_t i) const { return ptr[i]; }
  };
  /// Points the stored arrays at `st`'s vectors (while building).
  void View(Staging* st);
  /// Copies `st`'s vectors into one block, frees them and points the stored
  /// arrays into the block (the staged records among them; without any, a
  /// mesh over parts, their room is empty).
  void Seal(Staging* st);
  /// Bytes of the arrays, and where the room for the mesh object starts
  /// behind them (8-byte aligned).
  size_t ArrayBytes() const;
  size_t HeaderOffset() const { return (ArrayBytes() + 7) / 8 * 8; }
  /// Frees a block (aligned for Node).
  static void BlockFree(std::byte* p) { ::operator delete(p, std::align_val_t{alignof(Node)}); }
  /// The zero-area triangles kept for Input(), input index and vertex
  /// indices (in the block after dvertices_: found from the counts, as
  /// only Input() reads them).
  const std::pair<uint32_t, Indices>* Dropped() const;
  TriangleMesh() = default;

  // One allocation holds every array below, nodes_ first (64-byte aligned:
  // the block starts there), then bottom_, dvertices_, the dropped triangles
  // (Dropped()), obase_, flt_.codes, fvertices_, packed_ (then the escapes),
  // vpacked_, fpacked_ (each array's size is a multiple of the next one's
  // alignment, so no padding), then room for this object (Settle).
  // Decimal vertices: per axis q - qmin_ in vaxis_bits_ bits, x, y, z packed
  // into vrecord_bits_ per vertex (then 16 bytes of padding).
  Stored<uint8_t> vpacked_;
  /// The layout of packed float vertices (fpacked_): per axis 23 mantissa
  /// bits and code_bits of an index into the axis's sign-and-exponent codes,
  /// codes[code_base[axis] + index].
  /// record_bits 0: the vertices are the parts' (part_vertices()), `parts`.
  struct FloatForm {
    union {
      uint32_t* codes;  // in the block (trivial: a union member)
      const internal::MeshParts* parts;
    };
    uint16_t code_base[3];
    uint16_t code_count;
    uint8_t record_bits;
    uint8_t code_bits[3];
    uint8_t axis_off[3];
  };
  // A mesh's vertices are decimal (vpacked_: qmin_), packed floats
  // (fpacked_: flt_) or neither, so the two share their bytes.
  union {
    int64_t qmin_[3] = {0, 0, 0};
    FloatForm flt_;
  };
  uint64_t vaxis_mask_[3] = {0, 0, 0};
  // Vertices that are not all q / divisor but all exactly float32: x, y, z
  // as floats; otherwise as doubles. Beside vpacked_: the fine vertices.
  Stored<float> fvertices_;
  Stored<Vec3> dvertices_;
  // Or, when smaller, every float vertex packed (mesh_vertices::FloatLayout)
  // by flt_.
  Stored<uint8_t> fpacked_;
  // The x of a fine vertex's packed record (all ones), or a value no x has.
  uint64_t fine_mark_ = ~uint64_t{0};
  // Per axis 10^k or 2^k: q / divisor is exactly the input coordinate.
  double vertex_divisor_[3] = {1.0, 1.0, 1.0};
  Stored<uint8_t> packed_;  // triangle records (record_bits() each), then 16 bytes of padding
  Stored<Node> nodes_;
  Stored<BottomNode> bottom_;
  Aabb bounds_;
  /// With predicted originals: per block of 2^kMeshOriginalShift vertices,
  /// the base that OriginalIndex adds to the record's residual and to
  /// (i0 mod 2^kMeshOriginalShift) * oslope_ / 2^16.
  Stored<uint32_t> obase_;
  uint32_t oslope_ = 0;  // input triangles per vertex, 16.16 fixed point (capped)
  uint32_t vrecord_bits_ = 0;  // bits of a decimal vertex record
  uint32_t fine_count_ = 0;
  uint32_t node_count_ = 0;     // nodes_ (64-byte nodes)
  uint32_t bottom_count_ = 0;   // bottom_
  uint32_t dropped_count_ = 0;  // dropped_
  uint32_t vertex_count_ = 0;
  uint32_t triangle_count_ = 0;
  uint32_t dmask_ = 1;      // (1 << dbits_) - 1
  uint32_t vmask_ = 1;      // (1 << vbits_) - 1
  uint32_t escape_count_ = 0;  // escape entries after the records (EscapeOf)
  // Per axis the top 16 bits of the quantization step (a power of two of at
  // least 2^-1026, or 0: all its bits are there): Step(a). 6 bytes, not 24.
  uint16_t step_bits_[3] = {0, 0, 0};
  uint8_t vaxis_bits_[3] = {0, 0, 0};
  uint8_t vaxis_off_[3] = {0, 0, 0};  // bit of each axis within a vertex record
  uint8_t vbits_ = 1;       // bits of a vertex index
  uint8_t obits_ = 1;       // bits of an original triangle index (or of its residual)
  uint8_t dbits_ = 1;       // bits of a vertex index difference (<= vbits_)
  bool xy_one_load_ = false;           // x and y bits within 57: one load for both
  bool wide_ = false;       // record_bits() + 7 > 64: 128-bit loads
  // index_bits() <= 57 and no escapes: the indices in one 64-bit load, and
  // no record to look for among the escapes (the other path does).
  bool narrow_indices_ = false;
  uint8_t height_ = 1;     // node levels (at most kMeshMaxDepth)
  // The block (at nodes_) is this object's to free: built and not settled.
  bool owns_block_ : 1 = false;
  // The triangles are the parts' (flt_.parts, BuildOverParts): no records.
  bool part_triangles_ : 1 = false;
  // 1 + k when the vertices are stored as the float32s their decimals of k
  // places were written from (read through mesh_vertices::DecimalOfFloat),
  // else 0.
  uint8_t decimal_places_ : 4 = 0;
};

template <typename Fn>
void TriangleMesh::ForEachLeafGroup(Fn&& fn) const {
  if (nodes_.empty()) return;
  std::vector<uint32_t> stack{0};
  while (!stack.empty()) {
    Node scratch;
    const Node& n = NodeAt(stack.back(), &scratch);
    stack.pop_back();
    uint32_t leaves[kMeshNodeWidth];
    uint32_t count = 0;
    bool all_leaves = true;
    for (uint32_t child : n.child) {
      if (child == kEmpty) continue;
      if (child & kLeafBit) {
        leaves[count++] = child;
      } else {
        all_leaves = false;
        stack.push_back(child);
      }
    }
    if (all_leaves) {
      fn(leaves, count);
    } else {
      for (uint32_t i = 0; i < count; ++i) fn(&leaves[i], 1);
    }
  }
}

template <typename Path>
TriangleMesh::PathSetup TriangleMesh::SetupPath(const Path& path, const Vec3& lo,
                                                const Vec3& hi) const {
  PathSetup p;
  double slack = 0.0;
  for (uint32_t a = 0; a < 3; ++a) {
    p.zero[a] = path.zero[a];
    p.origin[a] = Splat(path.origin[a]);
    const double inv = path.inv[a];
    if (p.zero[a]) {
      p.near[a] = Splat(lo[a]);
      p.far[a] = Splat(hi[a]);
      p.scale[a] = Splat(Step(static_cast<int>(a)));
      p.near_off[a] = a * kMeshNodeWidth;
      p.far_off[a] = 3 * kMeshNodeWidth + a * kMeshNodeWidth;
      continue;
    }
    // Distance of a bound lo + q * step_: (lo - o) * inv + q * (step_ * inv),
    // off by a few ulps of |t| + |(lo - o) * inv| (q * step_ is exact): the
    // second part is the slack, the first the relative widening.
    const double t_lo = (lo[a] - path.origin[a]) * inv;
    const double t_hi = (hi[a] - path.origin[a]) * inv;
    p.scale[a] = Splat(Step(static_cast<int>(a)) * inv);
    const bool flip = inv < 0.0;
    p.near[a] = Splat(flip ? t_hi : t_lo);
    p.far[a] = Splat(flip ? t_lo : t_hi);
    p.near_off[a] = (flip ? 3 * kMeshNodeWidth : 0) + a * kMeshNodeWidth;
    p.far_off[a] = (flip ? 0 : 3 * kMeshNodeWidth) + a * kMeshNodeWidth;
    slack = std::max(slack, std::max(std::fabs(t_lo), std::fabs(t_hi)) * 1e-12);
  }
  p.slack = Splat(slack);
  return p;
}

namespace mesh_simd {

/// The four 16-bit values at `q` as 32-bit integers.
__attribute__((always_inline)) inline __m128i LoadU16x4(const uint16_t* q) {
  return _mm_unpacklo_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q)),
                            _mm_setzero_si128());
}

/// Bit i set when child i is not kEmpty.
__attribute__((always_inline)) inline uint32_t UsedChildren(const uint32_t* child) {
  const __m128i words = _mm_loadu_si128(reinterpret_cast<const __m128i*>(child));
  const __m128i empty = _mm_cmpeq_epi32(words, _mm_set1_epi32(-1));
  return static_cast<uint32_t>(~_mm_movemask_ps(_mm_castsi128_ps(empty))) & 15u;
}

}  // namespace mesh_simd

__attribute__((always_inline)) inline uint32_t TriangleMesh::EnterChildren(
    const Node& n, const PathSetup& p, double t_max, double t_enter[kMeshNodeWidth]) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const uint16_t* q = &n.min[0][0];
  // Widening each axis's slab distances (bvh_ray.h) commutes with max / min
  // (x -/+ (|x| * 1e-12 + slack) is increasing), so the results are widened
  // once. Four lanes: one AVX register, or two SSE2 pairs (lo: children 0-1).
#ifdef __AVX__
  __m256d enter = _mm256_set1_pd(-kInf), exit = _mm256_set1_pd(kInf);
  __m256d inside = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
  for (uint32_t a = 0; a < 3; ++a) {
    const __m256d dn = _mm256_cvtepi32_pd(mesh_simd::LoadU16x4(q + p.near_off[a]));
    const __m256d df = _mm256_cvtepi32_pd(mesh_simd::LoadU16x4(q + p.far_off[a]));
    const __m256d near = _mm256_add_pd(p.near[a], _mm256_mul_pd(dn, p.scale[a]));
    const __m256d far = _mm256_add_pd(p.far[a], _mm256_mul_pd(df, p.scale[a]));
    if (p.zero[a]) {
      // Not moving along a: the boxes must hold the origin. Here near / far
      // are the min / max bounds: the very bounds of the build (q * step_ is
      // exact, one rounding).
      inside = _mm256_and_pd(inside, _mm256_and_pd(_mm256_cmp_pd(near, p.origin[a], _CMP_LE_OQ),
                                                   _mm256_cmp_pd(far, p.origin[a], _CMP_GE_OQ)));
      continue;
    }
    enter = _mm256_max_pd(enter, near);
    exit = _mm256_min_pd(exit, far);
  }
  const __m256d sign = _mm256_set1_pd(-0.0), eps = _mm256_set1_pd(1e-12);
  const __m256d slack = p.slack;
  enter = _mm256_sub_pd(enter, _mm256_add_pd(_mm256_mul_pd(_mm256_andnot_pd(sign, enter), eps), slack));
  exit = _mm256_add_pd(exit, _mm256_add_pd(_mm256_mul_pd(_mm256_andnot_pd(sign, exit), eps), slack));
  enter = _mm256_max_pd(enter, _mm256_setzero_pd());
  exit = _mm256_min_pd(exit, _mm256_set1_pd(t_max));
  _mm256_storeu_pd(t_enter, enter);
  const __m256d hit = _mm256_and_pd(inside, _mm256_cmp_pd(enter, exit, _CMP_LE_OQ));
  const uint32_t mask = static_cast<uint32_t>(_mm256_movemask_pd(hit));
#else
  __m128d enter[2], exit[2], inside[2];
  for (int h = 0; h < 2; ++h) {
    enter[h] = _mm_set1_pd(-kInf);
    exit[h] = _mm_set1_pd(kInf);
    inside[h] = _mm_castsi128_pd(_mm_set1_epi32(-1));
  }
  for (uint32_t a = 0; a < 3; ++a) {
    const __m128i qn = mesh_simd::LoadU16x4(q + p.near_off[a]);
    const __m128i qf = mesh_simd::LoadU16x4(q + p.far_off[a]);
    const __m128d dn[2] = {_mm_cvtepi32_pd(qn), _mm_cvtepi32_pd(_mm_shuffle_epi32(qn, 0xee))};
    const __m128d df[2] = {_mm_cvtepi32_pd(qf), _mm_cvtepi32_pd(_mm_shuffle_epi32(qf, 0xee))};
    for (int h = 0; h < 2; ++h) {
      const __m128d near = _mm_add_pd(p.near[a], _mm_mul_pd(dn[h], p.scale[a]));
      const __m128d far = _mm_add_pd(p.far[a], _mm_mul_pd(df[h], p.scale[a]));
      if (p.zero[a]) {  // as above: the boxes must hold the origin
        inside[h] = _mm_and_pd(inside[h], _mm_and_pd(_mm_cmple_pd(near, p.origin[a]),
                                                     _mm_cmpge_pd(far, p.origin[a])));
        continue;
      }
      enter[h] = _mm_max_pd(enter[h], near);
      exit[h] = _mm_min_pd(exit[h], far);
    }
  }
  const __m128d sign = _mm_set1_pd(-0.0), eps = _mm_set1_pd(1e-12);
  const __m128d slack = p.slack, limit = _mm_set1_pd(t_max);
  uint32_t mask = 0;
  for (int h = 0; h < 2; ++h) {
    __m128d e = _mm_sub_pd(enter[h], _mm_add_pd(_mm_mul_pd(_mm_andnot_pd(sign, enter[h]), eps), slack));
    __m128d x = _mm_add_pd(exit[h], _mm_add_pd(_mm_mul_pd(_mm_andnot_pd(sign, exit[h]), eps), slack));
    e = _mm_max_pd(e, _mm_setzero_pd());
    x = _mm_min_pd(x, limit);
    _mm_storeu_pd(t_enter + 2 * h, e);
    mask |= static_cast<uint32_t>(_mm_movemask_pd(_mm_and_pd(inside[h], _mm_cmple_pd(e, x))))
            << (2 * h);
  }
#endif
  return mask & mesh_simd::UsedChildren(n.child);
}

__attribute__((always_inline)) inline uint32_t TriangleMesh::RayChildren(
    const Node& n, const RaySetup& r, float t_max, float t_enter[kMeshNodeWidth]) {
  // The slab test of the four children at once (no fused multiply-add: the
  // build has none, and SetupRay's error bound counts each rounding).
  const uint16_t* q = &n.min[0][0];
  __m128 enter = _mm_setzero_ps(), exit = _mm_setzero_ps();
  for (uint32_t a = 0; a < 3; ++a) {
    const __m128 qn = _mm_cvtepi32_ps(mesh_simd::LoadU16x4(q + r.near_off[a]));
    const __m128 qf = _mm_cvtepi32_ps(mesh_simd::LoadU16x4(q + r.far_off[a]));
    const __m128 near = _mm_add_ps(r.near[a], _mm_mul_ps(qn, r.scale[a]));
    const __m128 far = _mm_add_ps(r.far[a], _mm_mul_ps(qf, r.scale[a]));
    enter = a == 0 ? near : _mm_max_ps(enter, near);
    exit = a == 0 ? far : _mm_min_ps(exit, far);
  }
  enter = _mm_max_ps(_mm_sub_ps(enter, r.slack), _mm_setzero_ps());
  exit = _mm_min_ps(_mm_add_ps(exit, r.slack), _mm_set1_ps(t_max));
  _mm_storeu_ps(t_enter, enter);
  const uint32_t mask = static_cast<uint32_t>(_mm_movemask_ps(_mm_cmple_ps(enter, exit)));
  return mask & mesh_simd::UsedChildren(n.child);
}

__attribute__((always_inline)) inline uint32_t TriangleMesh::OverlapChildren(
    const Node& n, const int32_t qlo[3], const int32_t qhi[3]) {
  // Apart on an axis: child min > qhi or child max < qlo (32-bit compares).
  __m128i apart = _mm_setzero_si128();
  for (int a = 0; a < 3; ++a) {
    const __m128i cmin = mesh_simd::LoadU16x4(n.min[a]);
    const __m128i cmax = mesh_simd::LoadU16x4(n.max[a]);
    apart = _mm_or_si128(apart, _mm_or_si128(_mm_cmpgt_epi32(cmin, _mm_set1_epi32(qhi[a])),
                                             _mm_cmpgt_epi32(_mm_set1_epi32(qlo[a]), cmax)));
  }
  const uint32_t meet = ~static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(apart))) & 15u;
  return meet & mesh_simd::UsedChildren(n.child);
}

inline void TriangleMesh::TriangleIndices(uint32_t k, uint32_t idx[3]) const {
  if (!narrow_indices_) [[unlikely]] {
    TriangleIndicesFromRecord(k, idx);
    return;
  }
  const uint64_t lo = Load64(packed_.data(), static_cast<uint64_t>(k) * record_bits());
  const uint32_t i0 = static_cast<uint32_t>(lo) & vmask_;
  const uint32_t d1 = static_cast<uint32_t>(lo >> vbits_) & dmask_;
  const uint32_t d2 = static_cast<uint32_t>(lo >> (vbits_ + dbits_)) & dmask_;
  idx[0] = i0;
  idx[1] = Offset(i0, d1);
  idx[2] = Offset(i0, d2);
}

inline void TriangleMesh::TriangleVertices(uint32_t k, Vec3 out[3]) const {
  if (decimal_places_ != 0) [[unlikely]] {
    DecimalTriangleVertices(k, out);
    return;
  }
  uint32_t idx[3];
  TriangleIndices(k, idx);
  if (vpacked_.empty()) {
    if (dvertices_.empty()) {
      for (int c = 0; c < 3; ++c) out[c] = FloatVertex(idx[c]);
    } else {
      for (int c = 0; c < 3; ++c) out[c] = dvertices_[idx[c]];
    }
    return;
  }
  const __m128d div = _mm_set_pd(vertex_divisor_[1], vertex_divisor_[0]);
  for (int c = 0; c < 3; ++c) DecodeVertex(idx[c], div, &out[c]);
}

inline void TriangleMesh::TriangleVertices(uint32_t k, Vec3 out[3], VertexCache* cache) const {
  uint32_t idx[3];
  TriangleIndices(k, idx);
  IndexedVertices(idx, out, cache);
}

inline void TriangleMesh::IndexedVertices(const uint32_t idx[3], Vec3 out[3],
                                          VertexCache* cache) const {
  if (decimal_places_ != 0) [[unlikely]] {
    DecimalIndexedVertices(idx, out, cache);
    return;
  }
  if (vpacked_.empty()) {
    if (dvertices_.empty()) {
      for (int c = 0; c < 3; ++c) out[c] = FloatVertex(idx[c]);
    } else {
      for (int c = 0; c < 3; ++c) out[c] = dvertices_[idx[c]];
    }
    return;
  }
  const __m128d div = _mm_set_pd(vertex_divisor_[1], vertex_divisor_[0]);
  for (int c = 0; c < 3; ++c) {
    const uint32_t slot = VertexCache::Slot(idx[c]);
    if (cache->key_[slot] != idx[c]) {
      DecodeVertex(idx[c], div, &cache->value_[slot]);
      cache->key_[slot] = idx[c];
    }
    out[c] = cache->value_[slot];
  }
}

template <typename Visit>
bool TriangleMesh::VisitOverlapping(const Aabb& box, Visit&& visit) const {
  return VisitOverlappingLeaves(box, [&](uint32_t first, uint32_t end) {
    for (uint32_t k = first; k < end; ++k) {
      if (!visit(k)) return false;
    }
    return true;
  });
}

template <typename VisitLeaf>
bool TriangleMesh::VisitOverlappingLeaves(const Aabb& box, VisitLeaf&& visit_leaf) const {
  if (nodes_.empty() || !box.Overlaps(bounds_)) return true;
  int32_t qlo[3], qhi[3];
  QueryRange(box, qlo, qhi);
  uint32_t stack[kStackSize];
  int top = 0;
  stack[top++] = 0;
  while (top > 0) {
    const uint32_t word = stack[--top];
    if (word & kLeafBit) {
      const LeafRange leaf = LeafTriangles(word);
      if (!visit_leaf(leaf.first, leaf.end)) return false;
      continue;
    }
    Node scratch;
    const Node& n = NodeAt(word, &scratch);
    // Children pushed last to first: visited in stored order.
    for (uint32_t mask = OverlapChildren(n, qlo, qhi); mask != 0;) {
      const int i = 31 - __builtin_clz(mask);
      Prefetch(n.child[i]);
      stack[top++] = n.child[i];
      mask &= ~(1u << i);
    }
  }
  return true;
}

template <typename Path, typename Visit>
bool TriangleMesh::VisitSwept(const Aabb& /*swept_box*/, const Vec3& /*translation*/,
                              const Path& path, const Vec3& grow, const double* max_t,
                              Visit&& visit) const {
  if (nodes_.empty()) return true;
  // Child boxes with the growth folded into the offsets (no extra work per
  // node; with grow = 0 exactly the quantized boxes).
  const PathSetup setup = SetupPath(path, bounds_.min - grow, bounds_.min + grow);
  struct Entry {
    uint32_t word;
    double t;
  };
  Entry stack[kStackSize];
  int top = 0;
  stack[top++] = {0, 0.0};
  while (top > 0) {
    const Entry e = stack[--top];
    if (e.t > *max_t) continue;
    if (e.word & kLeafBit) {
      const LeafRange leaf = LeafTriangles(e.word);
      for (uint32_t k = leaf.first; k < leaf.end; ++k) {
        if (!visit(k)) return false;
      }
      continue;
    }
    Node scratch;
    const Node& n = NodeAt(e.word, &scratch);
    double t[kMeshNodeWidth];
    top += PushNearestLast(n, EnterChildren(n, setup, *max_t, t), t, stack + top);
  }
  return true;
}

template <typename Path, typename Enter, typename Visit>
bool TriangleMesh::VisitSweptClosestFirst(const Path& path, const Vec3& grow, const double* max_t,
                                          Enter&& enter, Visit&& visit) const {
  if (nodes_.empty()) return true;
  const PathSetup setup = SetupPath(path, bounds_.min - grow, bounds_.min + grow);
  // One queue of nodes and entered triangles on their entry fraction
  // (best-first search): a node is opened, and a triangle visited, only once
  // nothing left can come before it. `key` is tri << 32 | word: tri a
  // triangle, or kEmpty for the node or leaf `word` (for a triangle, word is
  // its entry count), so at equal t waiting triangles come first, the lower
  // first. No two entries are equal, so the order is that of the keys
  // whatever holds them: a sweep's queue stays short (big_level: ~2 entries
  // left when it ends), so it is kept sorted, earliest last (an entry is
  // pushed by a short insertion and popped off the back; the earliest child
  // of a node, taken next, costs one comparison), and becomes a binary heap
  // only past kSortedEntries (a sweep entering thousands of triangles at
  // once must not insert in linear time).
  struct Entry {
    double t;
    uint64_t key;
  };
  const auto later = [](const Entry& a, const Entry& b) {
    return a.t > b.t || (a.t == b.t && a.key > b.key);
  };
  constexpr uint32_t kSortedEntries = 32;
  Entry sorted[kSortedEntries];  // earliest last
  uint32_t count = 0;
  static thread_local std::vector<Entry> heap;  // the entries past kSortedEntries
  heap.clear();
  const ScratchRelease<Entry> release{&heap};
  bool in_heap = false;
  const auto push = [&](const Entry& x) __attribute__((always_inline)) {
    if (!in_heap) {
      if (count < kSortedEntries) {
        uint32_t j = count++;
        for (; j > 0 && later(x, sorted[j - 1]); --j) sorted[j] = sorted[j - 1];
        sorted[j] = x;
        return;
      }
      // Earliest first: a heap under `later`.
      heap.assign(std::make_reverse_iterator(sorted + count), std::make_reverse_iterator(sorted));
      in_heap = true;
    }
    heap.push_back(x);
    std::push_heap(heap.begin(), heap.end(), later);
  };
  constexpr uint64_t kNode = static_cast<uint64_t>(kEmpty) << 32;
  uint32_t entered = 0;
  Entry e{0.0, kNode};
  for (;;) {
    if (e.t > *max_t) return true;  // everything left enters later still
    const uint32_t tri = static_cast<uint32_t>(e.key >> 32);
    const uint32_t word = static_cast<uint32_t>(e.key);
    if (tri != kEmpty) {
      if (!visit(tri, word)) return false;
    } else if (word & kLeafBit) {
      const LeafRange leaf = LeafTriangles(word);
      // Each triangle's indices decoded once, for the prefetch and for enter.
      uint32_t idx[8][3];  // a leaf word holds at most 8 (count - 1 in 3 bits)
      const uint32_t in_leaf = leaf.end - leaf.first;
      LeafIndices(leaf.first, in_leaf, idx);
      PrefetchVertices(idx, in_leaf);
      for (uint32_t k = leaf.first; k < leaf.end; ++k) {
        double t;
        bool stop = false;
        if (enter(k, idx[k - leaf.first], &t, &stop)) {
          push({std::max(t, e.t), static_cast<uint64_t>(k) << 32 | entered++});
        }
        if (stop) return false;
      }
    } else {
      Node scratch;
      const Node& n = NodeAt(word, &scratch);
      double t[kMeshNodeWidth];
      for (uint32_t mask = EnterChildren(n, setup, *max_t, t); mask != 0; mask &= mask - 1) {
        const int i = __builtin_ctz(mask);
        Prefetch(n.child[i]);
        push({t[i], kNode | n.child[i]});
      }
    }
    if (!in_heap) {
      if (count == 0) return true;
      e = sorted[--count];
      continue;
    }
    if (heap.empty()) return true;
    std::pop_heap(heap.begin(), heap.end(), later);
    e = heap.back();
    heap.pop_back();
  }
}

template <typename Visit>
bool TriangleMesh::VisitRay(const Vec3& origin, const Vec3& dir, const double* max_t,
                            Visit&& visit) const {
  if (nodes_.empty()) return true;
  const RaySetup setup = SetupRay(origin, dir);
  if (setup.miss) return true;
  RayRoot root;
  if (!EnterRayRoot(setup, *max_t, &root)) return true;
  return VisitRayFromRoot(setup, root, max_t, [&](uint32_t first, uint32_t end) {
    for (uint32_t k = first; k < end; ++k) {
      if (!visit(k)) return false;
    }
    return true;
  });
}

inline bool TriangleMesh::EnterRayRoot(const RaySetup& setup, double max_t, RayRoot* root) const {
  // A float f is > max_t exactly when f > RoundDown(max_t), the largest float
  // <= max_t (so RayChildren's float test keeps every child the double one keeps).
  root->mask = RayChildren(nodes_[0], setup, RoundDown(max_t), root->t);
  return root->mask != 0;
}

template <typename VisitLeaf>
bool TriangleMesh::VisitRayFromRoot(const RaySetup& setup, const RayRoot& root,
                                    const double* max_t, VisitLeaf&& visit_leaf) const {
  float bound = RoundDown(*max_t);
  struct Entry {
    uint32_t word;
    float t;
  };
  Entry stack[kStackSize];
  int top = 0;
  const Node& n0 = nodes_[0];
  for (uint32_t m = root.mask; m != 0; m &= m - 1) Prefetch(n0.child[__builtin_ctz(m)]);
  top += PushNearestLast(n0, root.mask, root.t, stack + top);
  while (top > 0) {
    const Entry e = stack[--top];
    if (e.t > bound) continue;
    if (e.word & kLeafBit) {
      const LeafRange leaf = LeafTriangles(e.word);
      if (!visit_leaf(leaf.first, leaf.end)) return false;
      bound = RoundDown(*max_t);
      continue;
    }
    Node scratch;
    const Node& n = NodeAt(e.word, &scratch);
    float t[kMeshNodeWidth];
    uint32_t mask = RayChildren(n, setup, bound, t);
    for (uint32_t m = mask; m != 0; m &= m - 1) Prefetch(n.child[__builtin_ctz(m)]);
    if ((mask & (mask - 1)) == 0) {  // none or one: nothing to order
      if (mask != 0) stack[top++] = {n.child[__builtin_ctz(mask)], t[__builtin_ctz(mask)]};
      continue;
    }
    top += PushNearestLast(n, mask, t, stack + top);
  }
  return true;
}

}  // namespace hitbox
