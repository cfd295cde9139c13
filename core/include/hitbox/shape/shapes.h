// Convex shapes in their local frames (see ../shared/cases/FORMAT.md):
//   Sphere   centred on the origin.
//   Box      centred on the origin, half-extents along local X, Y, Z
//            (an AABB when its pose is unrotated, an OBB otherwise).
//   Capsule  the segment [0,-h,0]..[0,h,0] swept by a sphere of radius r.
//   Cylinder axis along local Y, flat caps at y = +-h, radius r.
//   ConvexHull the solid convex hull of 4..256 points (shared immutable data).
//   TriangleMeshShape / HeightfieldShape: two-sided triangle SURFACES (no
//            inside), colliders only, never query shapes (shared immutable
//            data; see FORMAT.md "Surfaces").
//   Compound the union of 1..64 convex children, each placed by a pose in the
//            compound's local frame; a collider only (shared immutable data).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hitbox/limits.h"
#include "hitbox/math/math.h"
#include "hitbox/status.h"

namespace hitbox {

/// The kind of a Shape. Values are stable (they appear in logs and benches).
/// Pair dispatch (narrow phase, casts) indexes [kind][kind] tables of this size.
enum class ShapeKind : uint8_t {
  kSphere = 0,
  kBox = 1,
  kCapsule = 2,
  kCylinder = 3,
  kConvexHull = 4,
  kMesh = 5,
  kHeightfield = 6,
  kCompound = 7,
};
inline constexpr int kShapeKindCount = 8;
/// Kinds 0..kConvexKindCount-1 are the convex (solid) kinds: the only kinds a
/// query shape or a compound child may have. The others (surfaces and
/// compounds) are colliders only.
inline constexpr int kConvexKindCount = 5;
/// True for sphere, box, capsule, cylinder and convex hull.
inline constexpr bool IsConvexKind(ShapeKind k) {
  return static_cast<int>(k) < kConvexKindCount;
}
/// True for mesh and heightfield (two-sided surfaces, colliders only).
inline constexpr bool IsSurfaceKind(ShapeKind k) {
  return k == ShapeKind::kMesh || k == ShapeKind::kHeightfield;
}

/// "sphere", "box", "capsule", "cylinder", "convex_hull", "mesh", "heightfield"
/// or "compound".
const char* ShapeKindName(ShapeKind kind);

/// A sphere of `radius` metres (> 0) about the local origin.
struct Sphere {
  double radius = 0.0;
};
/// A box with `half_extents` metres (each > 0) along local X, Y, Z.
struct Box {
  Vec3 half_extents;
};
/// A capsule: segment of half-length `half_height` (>= 0) along local Y,
/// swept by a sphere of `radius` (> 0). Total height 2 * (half_height + radius).
struct Capsule {
  double radius = 0.0;
  double half_height = 0.0;
};
/// A cylinder of `radius` (> 0) with axis along local Y and flat caps at
/// y = +-half_height (half_height >= 0; 0 is a flat disc).
struct Cylinder {
  double radius = 0.0;
  double half_height = 0.0;
};

/// The solid convex hull of `points` (local frame, metres): 4..256 points,
/// each coordinate finite with |c| <= kMaxShapeSize, spanning a non-zero volume.
/// Points inside the hull are allowed (they are not kept as vertices).
struct ConvexHull {
  std::vector<Vec3> points;
};

/// A triangle mesh surface (local frame, metres): vertices and 3 vertex
/// indices per triangle. Zero-area triangles are dropped at build (their
/// indices are never reported); at least one triangle must remain.
struct TriangleMeshShape {
  std::vector<Vec3> vertices;
  std::vector<std::array<uint32_t, 3>> triangles;
};
/// A TriangleMeshShape whose coordinates are all float32 values, kept as
/// floats (x, y, z a vertex): half the bytes while a large mesh is read
/// (the scene-file reader makes these). It builds the mesh the
/// TriangleMeshShape of the same values builds.
struct FloatTriangleMeshShape {
  std::vector<float> vertices;
  std::vector<std::array<uint32_t, 3>> triangles;
};
/// A TriangleMeshShape whose coordinates are all short decimals, kept as
/// int32 q (x, y, z a vertex) read as DecimalValue(q, divisor), divisor
/// 10^k: half the bytes of doubles while a large mesh is read (the OBJ
/// importer makes these). It builds the mesh the TriangleMeshShape of the
/// same values builds.
struct DecimalTriangleMeshShape {
  std::vector<int32_t> vertices;
  double divisor = 1.0;
  std::vector<std::array<uint32_t, 3>> triangles;
};
/// A heightfield surface: rows x cols heights (row-major), local points
/// p(r, c) = [c * cell_size_x, heights[r * cols + c], r * cell_size_z].
struct HeightfieldShape {
  uint32_t rows = 0;
  uint32_t cols = 0;
  double cell_size_x = 0.0;
  double cell_size_z = 0.0;
  std::vector<double> heights;
};

/// Immutable built surface (TriangleMesh or Heightfield with its hierarchy),
/// shared by every Shape that copies it (defined in core/src/shape/surface_data.h).
class SurfaceData;
class Shape;
class TriangleMesh;  // core/src/geometry/triangle_mesh.h
namespace internal {
class MeshParts;
void SurfaceAddRef(const SurfaceData* s);
void SurfaceRelease(const SurfaceData* s);
/// The mesh of `parts` joined end to end (a merged mesh of MeshGroups'
/// members), which reads its vertices and triangles from the parts' meshes
/// (they and `parts` must outlive the shape): TriangleMesh::BuildOverParts.
Result<Shape> MakeMeshOverParts(const MeshParts* parts);
}  // namespace internal

/// A compound's children (defined after Shape) and its shared built data.
struct Compound;
class CompoundData;
namespace internal {
void CompoundAddRef(const CompoundData* c);
void CompoundRelease(const CompoundData* c);
}  // namespace internal

/// A face plane of a convex hull: points x of the hull satisfy
/// Dot(normal, x) <= offset. `normal` is unit length, pointing outwards.
struct HullPlane {
  Vec3 normal;
  double offset = 0.0;
};

/// Immutable data of a built convex hull (qhull), shared by every Shape that
/// copies it. Local frame, metres.
class ConvexHullData {
 public:
  /// The hull's vertices (a subset of the input points).
  const std::vector<Vec3>& vertices() const { return vertices_; }
  /// One outward plane per face (coplanar facets merged).
  const std::vector<HullPlane>& planes() const { return planes_; }
  /// Edges as pairs of indices into vertices().
  const std::vector<std::pair<uint16_t, uint16_t>>& edges() const { return edges_; }
  /// Indices into vertices() of each vertex's neighbours (hill climbing):
  /// neighbours of vertex i are adjacency_[adjacency_start_[i] .. adjacency_start_[i+1]).
  const std::vector<uint16_t>& adjacency() const { return adjacency_; }
  const std::vector<uint32_t>& adjacency_start() const { return adjacency_start_; }
  /// The points the hull was built from, as given (for ToString and the wire).
  const std::vector<Vec3>& input_points() const { return input_points_; }
  /// Local bounding box of the hull.
  const Aabb& bounds() const { return bounds_; }
  /// Mean of the vertices (a point inside the hull; the local origin need not
  /// be) and the radius of a ball about it holding the hull.
  const Vec3& center() const { return center_; }
  double center_radius() const { return center_radius_; }
  /// Radius of the smallest origin-centred ball holding the hull.
  double bounding_radius() const { return bounding_radius_; }
  /// Heap bytes of this data (vertices, planes, edges, adjacency, input points).
  size_t MemoryBytes() const;

  /// Vertex of the hull farthest along `dir` (local frame; any length).
  /// Up to 32 vertices a scan (ties: lowest index), beyond that hill climbing
  /// on the vertex graph; deterministic either way.
  Vec3 Support(const Vec3& dir) const;
  /// Most vertices Support scans (more: hill climbing).
  static constexpr size_t kScanVertices = 32;

 private:
  friend class Shape;
  friend struct ConvexHullBuilder;
  mutable std::atomic<uint32_t> refs_{0};
  std::vector<Vec3> vertices_;
  std::vector<HullPlane> planes_;
  std::vector<std::pair<uint16_t, uint16_t>> edges_;
  std::vector<uint16_t> adjacency_;
  std::vector<uint32_t> adjacency_start_;
  std::vector<Vec3> input_points_;
  /// The vertices for Support's scan (up to kScanVertices; else empty), as
  /// many at a time by coordinate as a step of the scan takes (four with
  /// AVX: x_i..x_i+3, y_i..y_i+3, z_i..z_i+3, ...; else two); padded to a
  /// multiple of four with NaN vertices, which no comparison selects.
  std::vector<double> scan_;
  Aabb bounds_;
  Vec3 center_;
  double center_radius_ = 0.0;
  double bounding_radius_ = 0.0;
};

/// A validated convex shape: one of Sphere, Box, Capsule, Cylinder, ConvexHull.
/// A small value type: primitives keep their parameters inline (no heap, no
/// reference count); a convex hull holds an intrusive reference to its
/// immutable ConvexHullData, built once and shared by copies (copying a hull
/// Shape costs one atomic increment; queries take Shapes by reference).
/// Construct through the Make functions, which reject non-finite, zero or
/// negative sizes and degenerate hulls with kInvalidArgument.
class Shape {
 public:
  /// A unit sphere. Prefer the Make functions.
  Shape() = default;

  [[nodiscard]] static Result<Shape> Make(const Sphere& s);
  [[nodiscard]] static Result<Shape> Make(const Box& b);
  [[nodiscard]] static Result<Shape> Make(const Capsule& c);
  [[nodiscard]] static Result<Shape> Make(const Cylinder& c);
  /// Builds the hull (qhull): kInvalidArgument for < 4 or > 256 points,
  /// non-finite or out-of-range coordinates, or coplanar / zero-volume points.
  [[nodiscard]] static Result<Shape> Make(const ConvexHull& h);
  /// Builds the mesh and its hierarchy once (kInvalidArgument naming e.g.
  /// `triangles[17][2]` for an out-of-range index, non-finite or out-of-range
  /// vertices, or no triangle of non-zero area).
  [[nodiscard]] static Result<Shape> Make(const TriangleMeshShape& m);
  /// The same from a mesh the caller gives up: its vertices are freed as
  /// soon as the build has stored them, its triangles once their records
  /// are written (a large map's load holds less).
  [[nodiscard]] static Result<Shape> Make(TriangleMeshShape&& m);
  /// The same from float vertices (given up likewise).
  [[nodiscard]] static Result<Shape> Make(FloatTriangleMeshShape&& m);
  /// The same from decimal vertices (given up likewise).
  [[nodiscard]] static Result<Shape> Make(DecimalTriangleMeshShape&& m);
  /// Builds the heightfield (rows, cols >= 2, cell sizes in [kMinShapeSize,
  /// kMaxShapeSize], rows * cols finite heights within kMaxCoordinate).
  [[nodiscard]] static Result<Shape> Make(const HeightfieldShape& h);
  /// Builds the compound's shared data (child bounds and hierarchy) once:
  /// kInvalidArgument naming e.g. `compound.children[5].rotation` for not 1..64
  /// children, a child that is not convex (mesh, heightfield, compound), a
  /// position that is not finite or beyond kMaxCoordinate, or a rotation whose
  /// norm is not within kQuatNormTolerance of 1 (kept normalized).
  [[nodiscard]] static Result<Shape> Make(const Compound& c);
  [[nodiscard]] static Result<Shape> MakeSphere(double radius) { return Make(Sphere{radius}); }
  [[nodiscard]] static Result<Shape> MakeBox(const Vec3& half_extents) {
    return Make(Box{half_extents});
  }
  [[nodiscard]] static Result<Shape> MakeCapsule(double radius, double half_height) {
    return Make(Capsule{radius, half_height});
  }
  [[nodiscard]] static Result<Shape> MakeCylinder(double radius, double half_height) {
    return Make(Cylinder{radius, half_height});
  }

  Shape(const Shape& o)
      : kind_(o.kind_), radius_(o.radius_), half_extents_(o.half_extents_) {
    CopyPayload(o);
  }
  Shape(Shape&& o) noexcept
      : kind_(o.kind_), radius_(o.radius_), half_extents_(o.half_extents_) {
    half_height_ = o.half_height_;
    if (HasData(o.kind_)) {
      hull_ = o.hull_;
      o.kind_ = ShapeKind::kSphere;  // the moved-from shape: a unit sphere
      o.radius_ = 1.0;
      o.half_height_ = 0.0;
    }
  }
  Shape& operator=(const Shape& o) {
    if (this != &o) {
      Shape copy(o);
      *this = std::move(copy);
    }
    return *this;
  }
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) {
      Release();
      kind_ = o.kind_;
      radius_ = o.radius_;
      half_extents_ = o.half_extents_;
      half_height_ = o.half_height_;
      if (HasData(o.kind_)) {
        hull_ = o.hull_;
        o.kind_ = ShapeKind::kSphere;
        o.radius_ = 1.0;
        o.half_height_ = 0.0;
      }
    }
    return *this;
  }
  ~Shape() { Release(); }

  ShapeKind kind() const { return kind_; }
  /// Sphere, capsule, cylinder radius in metres (0 for a box).
  double radius() const { return radius_; }
  /// Capsule and cylinder half-height in metres (0 for sphere, box and the
  /// kinds with shared data).
  double half_height() const { return HasData(kind_) ? 0.0 : half_height_; }
  /// Box half-extents in metres (zero for the other kinds).
  const Vec3& half_extents() const { return half_extents_; }

  Sphere AsSphere() const { return {radius_}; }
  Box AsBox() const { return {half_extents_}; }
  Capsule AsCapsule() const { return {radius_, half_height()}; }
  Cylinder AsCylinder() const { return {radius_, half_height()}; }
  /// The hull's shared data (null for the other kinds).
  const ConvexHullData* hull() const {
    return kind_ == ShapeKind::kConvexHull ? hull_ : nullptr;
  }
  /// The mesh as given (vertices and triangles, dropped ones included), for
  /// the wire and tools, rebuilt from the stored mesh (O(size)); empty unless
  /// a mesh.
  std::optional<TriangleMeshShape> mesh_input() const;
  /// Triangles of a mesh as given, dropped ones included (0 unless a mesh).
  uint32_t mesh_input_triangles() const;
  /// The heightfield as given; null unless a heightfield.
  const HeightfieldShape* heightfield_input() const;
  /// The surface's shared data (null unless a mesh or heightfield).
  const SurfaceData* surface() const { return IsSurfaceKind(kind_) ? surface_ : nullptr; }
  /// The compound's shared data (null unless a compound).
  const CompoundData* compound() const {
    return kind_ == ShapeKind::kCompound ? compound_ : nullptr;
  }
  /// Heap bytes owned by this shape's kind data (0 for primitives).
  size_t DataBytes() const;

  /// DataBytes() of the shape Make would build from an input, computed from
  /// the input alone (no hull, mesh or hierarchy is built), so that a server
  /// can price a change before building it. Meshes and heightfields: the
  /// storage their build chooses, the triangles a mesh keeps (0 when it would
  /// keep none); hulls: the most a hull of `points` points can hold (every
  /// point a vertex, triangular faces); compounds: their own data plus
  /// `children_bytes` (the children's predictions).
  static size_t PredictHullBytes(size_t points);
  static size_t PredictMeshBytes(std::span<const Vec3> vertices,
                                 std::span<const std::array<uint32_t, 3>> triangles);
  static size_t PredictHeightfieldBytes(uint32_t rows, uint32_t cols,
                                        std::span<const double> heights);
  static size_t PredictCompoundBytes(size_t children, size_t children_bytes);

  /// Bounding box in the local frame.
  Aabb LocalBounds() const;
  /// Tight bounding box of the shape placed at `pose` (world frame).
  Aabb WorldBounds(const Pose& pose) const;
  /// Support point in the local frame: the point of the shape farthest along
  /// local direction `dir` (any non-zero length). Ties are broken
  /// deterministically.
  Vec3 Support(const Vec3& dir) const;
  /// Radius of the smallest sphere about the local origin holding the shape.
  double BoundingRadius() const;
  /// Human-readable form with full precision, e.g.
  /// "capsule{radius=0.5, half_height=1.25}", for error messages and test logs.
  std::string ToString() const;

  /// Same kind and parameters (hulls: the same input points).
  bool operator==(const Shape& o) const;

 private:
  friend Result<Shape> internal::MakeMeshOverParts(const internal::MeshParts* parts);
  /// A mesh shape holding `built`, made from `input_triangles` triangles;
  /// a failed build's error named under "mesh.".
  static Result<Shape> OfMesh(Result<TriangleMesh> built, uint32_t input_triangles);
  /// Make of a mesh; `spent` (m itself, or null) gives up its vertices and
  /// triangles as the build goes (TriangleMesh::Build's spent arrays).
  static Result<Shape> MakeMesh(const TriangleMeshShape& m, TriangleMeshShape* spent);
  /// A capsule or cylinder (`name` in errors): radius and half height checked.
  static Result<Shape> MakeRound(ShapeKind kind, const char* name, double radius,
                                 double half_height);
  static constexpr bool HasData(ShapeKind k) {
    return static_cast<int>(k) >= static_cast<int>(ShapeKind::kConvexHull);
  }
  void CopyPayload(const Shape& o) {
    half_height_ = o.half_height_;
    if (kind_ == ShapeKind::kConvexHull) {
      hull_ = o.hull_;
      hull_->refs_.fetch_add(1, std::memory_order_relaxed);
    } else if (IsSurfaceKind(kind_)) [[unlikely]] {
      surface_ = o.surface_;
      internal::SurfaceAddRef(surface_);
    } else if (kind_ == ShapeKind::kCompound) [[unlikely]] {
      compound_ = o.compound_;
      internal::CompoundAddRef(compound_);
    }
  }
  void Release() {
    if (HasData(kind_)) {
      if (kind_ == ShapeKind::kConvexHull) {
        if (hull_->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete hull_;
      } else if (kind_ == ShapeKind::kCompound) {
        internal::CompoundRelease(compound_);
      } else {
        internal::SurfaceRelease(surface_);
      }
      kind_ = ShapeKind::kSphere;
      radius_ = 1.0;
      half_height_ = 0.0;
    }
  }

  ShapeKind kind_ = ShapeKind::kSphere;
  double radius_ = 1.0;
  /// Capsule / cylinder half height, or (convex hull) an intrusive reference
  /// to the shared hull data: a hull uses no inline size, so the handle
  /// costs no bytes (a Shape stays 48 bytes).
  union {
    double half_height_ = 0.0;
    const ConvexHullData* hull_;
    const SurfaceData* surface_;
    const CompoundData* compound_;
  };
  Vec3 half_extents_;
};

/// One child of a compound: a convex shape placed in the compound's frame.
struct CompoundChild {
  /// Sphere, box, capsule, cylinder or convex hull.
  Shape shape;
  /// Pose in the compound's local frame: child in world = compound pose * pose.
  Pose pose;
};

/// The union of 1..64 convex children moving as one collider (local frame,
/// metres). Hits on it name the child as sub_shape (its index here).
struct Compound {
  std::vector<CompoundChild> children;
};

/// Immutable data of a built compound, shared by every Shape that copies it:
/// the children (rotations normalized), their local bounds and, beyond
/// kLinearChildren children, a small bounding-box hierarchy over them.
class CompoundData {
 public:
  /// Up to this many children the candidates are found by a scan of their
  /// boxes; more get a hierarchy.
  static constexpr int kLinearChildren = 8;

  const std::vector<CompoundChild>& children() const { return children_; }
  /// Bounds of each child in the compound's local frame (tight, grown by 1e-9
  /// of their largest coordinate so rounding never drops a touching child).
  const std::vector<Aabb>& child_bounds() const { return child_bounds_; }
  /// Local bounds of the whole compound.
  const Aabb& bounds() const { return bounds_; }
  /// Radius of the smallest origin-centred ball holding every child's ball.
  double bounding_radius() const { return bounding_radius_; }
  /// Heap bytes of this data, the children's shared data (hulls) included.
  size_t MemoryBytes() const;

  /// Bit i set for each child i whose local bounds meet `box` (local frame)
  /// anywhere along its move by `v` (local frame; zero for an overlap, a
  /// zero-size box for a ray). Conservative: a cleared bit is a certain miss.
  uint64_t Candidates(const Aabb& box, const Vec3& v) const;

 private:
  friend class Shape;
  friend void internal::CompoundAddRef(const CompoundData* c);
  friend void internal::CompoundRelease(const CompoundData* c);
  /// A hierarchy node: an inner node's children are nodes_[left] and
  /// nodes_[left + 1]; a leaf holds order_[first .. first + count).
  struct Node {
    Aabb box;
    uint16_t left = 0;
    uint8_t first = 0;
    uint8_t count = 0;
  };
  void BuildHierarchy();
  mutable std::atomic<uint32_t> refs_{0};
  std::vector<CompoundChild> children_;
  std::vector<Aabb> child_bounds_;
  std::vector<Node> nodes_;
  std::vector<uint8_t> order_;
  Aabb bounds_;
  double bounding_radius_ = 0.0;
};

/// Full-precision text of a vector / quaternion / pose, for logs and for
/// pasting failing random cases into regression tests.
std::string ToString(const Vec3& v);
std::string ToString(const Quat& q);
std::string ToString(const Pose& p);

}  // namespace hitbox
