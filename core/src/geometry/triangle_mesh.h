// A triangle mesh collider: a two-sided triangle SURFACE (not a solid, see
// ../shared/cases/FORMAT.md) with a compact bounding-volume hierarchy built
// once, queried in the mesh's local frame (callers transform queries into it).
//
// Storage (TriangleMesh::MemoryBytes reports it):
//   - vertices: when every coordinate is a decimal with at most 9 fraction
//     digits within +-2147 m of the origin at that resolution (q / 10^k with
//     q a 32-bit integer, checked exactly at build), as the integers q minus
//     the mesh's least q on that axis, bit-packed in just the bits the
//     mesh's extent needs (x, y, z of 26, 24, 26 bits for a 60 m by 10 m
//     level at micrometres: 9.5 bytes); otherwise as doubles (24 bytes).
//     Decoding q / 10^k (a correctly rounded division) gives back exactly the
//     input coordinate.
//   - triangles in hierarchy leaf order, bit-packed records of
//     3 * ceil(log2(vertices)) + 3 + ceil(log2(triangles)) bits: three vertex
//     indices, the active-edge flags and the original triangle index (for
//     `sub_shape`); 6 bytes for a mesh of 2,000 vertices and 4,000 triangles,
//     at most 15 bytes.
//   - hierarchy nodes: 16-bit quantized boxes relative to the mesh bounds,
//     rounded outwards (conservative), plus one 32-bit word: 16 bytes a node,
//     about one node per two triangles (leaves hold up to kMeshLeafSize).
//
// Active edges (Jolt Physics, MeshShape / ActiveEdges.h): an edge is active
// when it is a boundary edge, is shared by more than two triangles, or its two
// faces (oriented consistently across the edge) meet at an angle above
// kActiveEdgeAngle. A sweep whose contact lies on an inactive edge (or on a
// vertex both of whose edges in that triangle are inactive) reports the face
// normal, so sliding on a flat tessellated floor never reports an internal
// edge's normal.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "geometry/triangle.h"
#include "hitbox/math/math.h"
#include "hitbox/status.h"

namespace hitbox {

/// Faces meeting at an edge at more than this angle (radians, ~5 degrees)
/// make the edge active.
inline constexpr double kActiveEdgeAngle = 0.0872664626;
/// Most triangles in a hierarchy leaf. 8 would halve the nodes (4 bytes a
/// triangle less) but cost big_level +25% instructions on rays and +13% on
/// overlaps (callgrind, RunBatch), so 4.
inline constexpr uint32_t kMeshLeafSize = 4;
/// Largest number of triangles in a mesh (indices keep 3 flag bits).
inline constexpr uint32_t kMaxMeshTriangles = 1u << 28;
/// Largest number of vertices in a mesh.
inline constexpr uint32_t kMaxMeshVertices = 1u << 29;

/// Closest or any hit of a ray on a mesh or heightfield, local frame.
struct MeshRayHit {
  /// Fraction of the translation in [0, 1]; hit point = origin + fraction * translation.
  double fraction = 0.0;
  /// Unit normal of the hit triangle, facing the ray origin (two-sided surface).
  Vec3 normal{0, 1, 0};
  /// Index of the triangle in the input (`sub_shape`).
  uint32_t triangle = 0;
};

/// One triangle touched by an overlap query, with its contact where asked.
struct MeshContact {
  /// Index of the triangle in the input (`sub_shape`).
  uint32_t triangle = 0;
  /// Penetration depth in metres (>= 0): moving the query by depth * normal
  /// separates it from this triangle.
  double depth = 0.0;
  /// Unit direction from the triangle towards the query (push-out direction).
  Vec3 normal{0, 1, 0};
  /// Deepest point of the query (local frame of the mesh).
  Vec3 point_on_query;
  /// Matching point on the triangle (local frame of the mesh).
  Vec3 point_on_mesh;
};

/// Outcome of a sweep against a mesh or heightfield.
struct MeshSweepHit {
  enum class State : uint8_t { kMiss, kHit, kStartedInside };
  State state = State::kMiss;
  /// Fraction of the translation in [0, 1] at first contact (0 when started inside).
  double fraction = 1.0;
  /// Unit contact normal from the triangle towards the moving shape (never
  /// along the motion unless the fraction is 0); the face normal when the
  /// contact lies on an inactive edge or vertex.
  Vec3 normal{0, 1, 0};
  /// Contact point on the triangle (local frame).
  Vec3 point;
  /// Index of the triangle in the input (`sub_shape`).
  uint32_t triangle = 0;
  /// True when the conservative advancement hit its iteration cap on this
  /// triangle: `fraction` is then a lower bound of the time of impact, not a
  /// proven contact (generic convex sweeps only).
  bool capped = false;
};

/// 128-bit unsigned (a GCC/Clang extension) for packed triangle records.
__extension__ typedef unsigned __int128 PackedRecord;

/// Per-triangle flags: bit i set = edge i (0: v0-v1, 1: v1-v2, 2: v2-v0) is active.
using EdgeFlags = uint8_t;

/// A validated, immutable triangle mesh with its hierarchy. Build once, share
/// between colliders; all queries are const and thread-safe.
class TriangleMesh {
 public:
  using Indices = std::array<uint32_t, 3>;

  /// Builds a mesh: validates indices (`triangles[17][2]: vertex index 900
  /// out of range (300 vertices)`), coordinates (finite, |x| <= kMaxCoordinate),
  /// an empty mesh; drops zero-area triangles (dropped_triangles() counts
  /// them); fails when no triangle is left.
  [[nodiscard]] static Result<TriangleMesh> Build(std::span<const Vec3> vertices,
                                                  std::span<const Indices> triangles);

  /// Triangles kept (input count minus dropped).
  uint32_t triangle_count() const { return triangle_count_; }
  /// Zero-area triangles dropped at build.
  uint32_t dropped_triangles() const { return dropped_; }
  uint32_t vertex_count() const { return vertex_count_; }
  /// Local-frame bounds of all kept triangles.
  const Aabb& bounds() const { return bounds_; }
  /// Bytes held by vertices, triangles, flags and hierarchy (excluding this object).
  size_t MemoryBytes() const;
  /// True when vertices are stored as 32-bit decimal integers (else doubles).
  bool quantized_vertices() const { return !vpacked_.empty(); }
  /// Number of hierarchy nodes.
  size_t node_count() const { return nodes_.size(); }

  /// Vertices of kept triangle `k` (hierarchy order, 0..triangle_count()-1).
  void TriangleVertices(uint32_t k, Vec3 out[3]) const;
  /// Original input index of kept triangle `k`.
  uint32_t OriginalIndex(uint32_t k) const {
    return static_cast<uint32_t>(Record(k) >> (3 * vbits_ + 3)) & omask_;
  }
  /// Active-edge flags of kept triangle `k`.
  EdgeFlags ActiveEdges(uint32_t k) const {
    return static_cast<EdgeFlags>(static_cast<uint32_t>(Record(k) >> (3 * vbits_)) & 7u);
  }
  /// Bits of one packed triangle record.
  uint32_t record_bits() const { return 3 * vbits_ + 3 + obits_; }

  /// Closest hit of the ray origin + t * translation, t in [0, 1], on any
  /// triangle (watertight, two-sided). False when nothing is hit.
  bool RaycastClosest(const Vec3& origin, const Vec3& translation, MeshRayHit* hit) const;
  /// Every triangle the ray hits, in no particular order (one entry per triangle).
  void RaycastAll(const Vec3& origin, const Vec3& translation,
                  std::vector<MeshRayHit>* hits) const;

  /// Triangles touched by the solid sphere (touching counts). With
  /// `contacts`, one MeshContact per touched triangle; otherwise stops at the
  /// first when `first_only`. Returns true when any triangle is touched.
  bool OverlapSphere(const Vec3& center, double radius, bool first_only,
                     std::vector<MeshContact>* contacts) const;
  /// Same for the capsule around segment [p0, p1] with `radius`.
  bool OverlapCapsule(const Vec3& p0, const Vec3& p1, double radius, bool first_only,
                      std::vector<MeshContact>* contacts) const;

  /// First contact of a sphere moving from `center` by `translation`.
  MeshSweepHit SweepSphere(const Vec3& center, double radius, const Vec3& translation) const;

  /// Calls visit(k) for every kept triangle whose box overlaps `box`; visit
  /// returns false to stop. Returns false when stopped.
  template <typename Visit>
  bool VisitOverlapping(const Aabb& box, Visit&& visit) const;

  /// Calls visit(k) for every kept triangle in a hierarchy leaf whose box,
  /// grown by `grow`, the path reaches for t in [0, *max_t], nearer leaves
  /// first; *max_t is read again before every node (visit may lower it, which
  /// prunes what lies beyond). visit returns false to stop. (The swept box
  /// and translation are for Heightfield's version; the path decides here.)
  template <typename Path, typename Visit>
  bool VisitSwept(const Aabb& swept_box, const Vec3& translation, const Path& path,
                  const Vec3& grow, const double* max_t, Visit&& visit) const;

 private:
  struct Node {
    /// Quantized box (16 bits per coordinate, relative to bounds_).
    uint16_t min[3];
    uint16_t max[3];
    /// Leaf: kLeafBit | first << 3 | (count - 1); internal: index of the
    /// second child (the first child follows this node).
    uint32_t data;
  };
  static constexpr uint32_t kLeafBit = 1u << 31;
  static constexpr uint32_t kIndexMask = 0x7fffffffu;

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
  void SetRecord(uint32_t k, const Indices& tri, EdgeFlags flags, uint32_t original);

  /// Bits [bit, bit + 121) of a packed byte array (16 bytes of padding).
  static PackedRecord LoadBits(const std::vector<uint8_t>& bytes, uint64_t bit) {
    PackedRecord x;
    std::memcpy(&x, bytes.data() + (bit >> 3), sizeof(x));
    return x >> (bit & 7);
  }
  Vec3 Vertex(uint32_t i) const {
    if (!vpacked_.empty()) {
      const PackedRecord r = LoadBits(vpacked_, static_cast<uint64_t>(i) * vrecord_bits_);
      const uint64_t lo = static_cast<uint64_t>(r);
      const int64_t qx = static_cast<int64_t>(lo & vaxis_mask_[0]) + qmin_[0];
      const int64_t qy = static_cast<int64_t>((lo >> vaxis_bits_[0]) & vaxis_mask_[1]) + qmin_[1];
      const int64_t qz =
          static_cast<int64_t>(static_cast<uint64_t>(r >> (vaxis_bits_[0] + vaxis_bits_[1])) &
                               vaxis_mask_[2]) +
          qmin_[2];
      return {static_cast<double>(qx) / vertex_divisor_,
              static_cast<double>(qy) / vertex_divisor_,
              static_cast<double>(qz) / vertex_divisor_};
    }
    return dvertices_[i];
  }
  Aabb NodeBox(const Node& n) const {
    return {Vec3{bounds_.min.x + n.min[0] * step_.x, bounds_.min.y + n.min[1] * step_.y,
                 bounds_.min.z + n.min[2] * step_.z},
            Vec3{bounds_.min.x + n.max[0] * step_.x, bounds_.min.y + n.max[1] * step_.y,
                 bounds_.min.z + n.max[2] * step_.z}};
  }
  void BuildHierarchy(std::vector<uint32_t>* order, const std::vector<Aabb>& boxes);

  // Decimal vertices: per axis q - qmin_ in vaxis_bits_ bits, x, y, z packed
  // into vrecord_bits_ per vertex (then 16 bytes of padding).
  std::vector<uint8_t> vpacked_;
  int64_t qmin_[3] = {0, 0, 0};
  uint8_t vaxis_bits_[3] = {0, 0, 0};
  uint64_t vaxis_mask_[3] = {0, 0, 0};
  uint32_t vrecord_bits_ = 0;
  std::vector<Vec3> dvertices_;
  double vertex_divisor_ = 1.0;  // 10^k: q / 10^k is exactly the input coordinate
  uint32_t vertex_count_ = 0;
  std::vector<uint8_t> packed_;  // triangle records (record_bits() each), then 16 bytes of padding
  uint32_t triangle_count_ = 0;
  uint8_t vbits_ = 1;       // bits of a vertex index
  uint8_t obits_ = 1;       // bits of an original triangle index
  bool wide_ = false;       // record_bits() + 7 > 64: 128-bit loads
  uint32_t vmask_ = 1;      // (1 << vbits_) - 1
  uint32_t omask_ = 1;      // (1 << obits_) - 1
  std::vector<Node> nodes_;
  Aabb bounds_;
  Vec3 step_;
  uint32_t dropped_ = 0;
};

template <typename Visit>
bool TriangleMesh::VisitOverlapping(const Aabb& box, Visit&& visit) const {
  if (nodes_.empty() || !box.Overlaps(bounds_)) return true;
  uint32_t stack[64];
  int top = 0;
  stack[top++] = 0;
  while (top > 0) {
    const uint32_t ni = stack[--top];
    const Node& n = nodes_[ni];
    if (!NodeBox(n).Overlaps(box)) continue;
    if (n.data & kLeafBit) {
      const uint32_t first = (n.data & kIndexMask) >> 3;
      const uint32_t count = (n.data & 7u) + 1;
      for (uint32_t k = first; k < first + count; ++k) {
        if (!visit(k)) return false;
      }
    } else {
      stack[top++] = n.data;
      stack[top++] = ni + 1;
    }
  }
  return true;
}

template <typename Path, typename Visit>
bool TriangleMesh::VisitSwept(const Aabb& /*swept_box*/, const Vec3& /*translation*/,
                              const Path& path, const Vec3& grow, const double* max_t,
                              Visit&& visit) const {
  if (nodes_.empty()) return true;
  // NodeBox with the growth folded into the offsets (no extra work per node;
  // with grow = 0 exactly NodeBox).
  const Vec3 lo = bounds_.min - grow, hi = bounds_.min + grow;
  auto grown_box = [&](const Node& n) {
    return Aabb{
        Vec3{lo.x + n.min[0] * step_.x, lo.y + n.min[1] * step_.y, lo.z + n.min[2] * step_.z},
        Vec3{hi.x + n.max[0] * step_.x, hi.y + n.max[1] * step_.y, hi.z + n.max[2] * step_.z}};
  };
  struct Entry {
    uint32_t node;
    double t;
  };
  Entry stack[64];
  int top = 0;
  double t0;
  if (!path.Enter(grown_box(nodes_[0]), *max_t, &t0)) return true;
  stack[top++] = {0, t0};
  while (top > 0) {
    const Entry e = stack[--top];
    if (e.t > *max_t) continue;
    const Node& nd = nodes_[e.node];
    if (nd.data & kLeafBit) {
      const uint32_t first = (nd.data & kIndexMask) >> 3;
      const uint32_t count = (nd.data & 7u) + 1;
      for (uint32_t k = first; k < first + count; ++k) {
        if (!visit(k)) return false;
      }
      continue;
    }
    // Both children entered: the farther is pushed first (visited last).
    const uint32_t c0 = e.node + 1, c1 = nd.data;
    double ta = 0.0, tb = 0.0;
    const bool ha = path.Enter(grown_box(nodes_[c0]), *max_t, &ta);
    const bool hb = path.Enter(grown_box(nodes_[c1]), *max_t, &tb);
    if (ha && hb) {
      if (ta <= tb) {
        stack[top++] = {c1, tb};
        stack[top++] = {c0, ta};
      } else {
        stack[top++] = {c0, ta};
        stack[top++] = {c1, tb};
      }
    } else if (ha) {
      stack[top++] = {c0, ta};
    } else if (hb) {
      stack[top++] = {c1, tb};
    }
  }
  return true;
}

}  // namespace hitbox
