#include "hitbox/shape/shapes.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>

#include "hitbox/format.h"
#include "geometry/mesh_parts.h"
#include "shape/convex_core.h"
#include "shape/surface_data.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hitbox {
namespace {

// A size in [kMinShapeSize, kMaxShapeSize] (false for NaN).
bool SizeInRange(double v) { return v >= kMinShapeSize && v <= kMaxShapeSize; }
// A half height: 0, or a size in range.
bool HalfHeightInRange(double v) { return v == 0.0 || SizeInRange(v); }

constexpr const char* kSizeRule = "finite and in [1e-7, 1e6] metres";
constexpr const char* kHalfHeightRule = "0 or finite and in [1e-7, 1e6] metres";

Error BadSize(const char* shape, const char* field, double v, const char* rule) {
  return {ErrorCode::kInvalidArgument,
          std::string(shape) + "." + field + " must be " + rule + ", got " + FormatDouble(v)};
}

Error BadChild(size_t i, const std::string& field, const std::string& what) {
  return {ErrorCode::kInvalidArgument,
          "compound.children[" + std::to_string(i) + "]." + field + what};
}

/// `box` grown by 1e-9 of its largest coordinate (plus 1e-300): a child
/// touched exactly is never dropped by the rounding of its bounds.
Aabb Grown(const Aabb& box) {
  double far = 0.0;
  for (int a = 0; a < 3; ++a) {
    far = std::max({far, std::fabs(box.min[a]), std::fabs(box.max[a])});
  }
  return box.Expanded(far * 1e-9 + 1e-300);
}

}  // namespace

const char* ShapeKindName(ShapeKind kind) {
  switch (kind) {
    case ShapeKind::kSphere: return "sphere";
    case ShapeKind::kBox: return "box";
    case ShapeKind::kCapsule: return "capsule";
    case ShapeKind::kCylinder: return "cylinder";
    case ShapeKind::kConvexHull: return "convex_hull";
    case ShapeKind::kMesh: return "mesh";
    case ShapeKind::kHeightfield: return "heightfield";
    case ShapeKind::kCompound: return "compound";
  }
  return "unknown";
}

Result<Shape> Shape::Make(const Sphere& s) {
  if (!SizeInRange(s.radius)) return BadSize("sphere", "radius", s.radius, kSizeRule);
  Shape shape;
  shape.kind_ = ShapeKind::kSphere;
  shape.radius_ = s.radius;
  return shape;
}

Result<Shape> Shape::Make(const Box& b) {
  static const char* kFields[3] = {"half_extents.x", "half_extents.y", "half_extents.z"};
  for (int i = 0; i < 3; ++i) {
    if (!SizeInRange(b.half_extents[i])) {
      return BadSize("box", kFields[i], b.half_extents[i], kSizeRule);
    }
  }
  Shape shape;
  shape.kind_ = ShapeKind::kBox;
  shape.radius_ = 0.0;
  shape.half_extents_ = b.half_extents;
  return shape;
}

Result<Shape> Shape::MakeRound(ShapeKind kind, const char* name, double radius,
                               double half_height) {
  if (!SizeInRange(radius)) return BadSize(name, "radius", radius, kSizeRule);
  if (!HalfHeightInRange(half_height)) {
    return BadSize(name, "half_height", half_height, kHalfHeightRule);
  }
  Shape shape;
  shape.kind_ = kind;
  shape.radius_ = radius;
  shape.half_height_ = half_height;
  return shape;
}

Result<Shape> Shape::Make(const Capsule& c) {
  return MakeRound(ShapeKind::kCapsule, "capsule", c.radius, c.half_height);
}

Result<Shape> Shape::Make(const Cylinder& c) {
  return MakeRound(ShapeKind::kCylinder, "cylinder", c.radius, c.half_height);
}

Aabb Shape::LocalBounds() const {
  switch (kind_) {
    case ShapeKind::kSphere: return Aabb::FromCenterExtents({}, Vec3::Splat(radius_));
    case ShapeKind::kBox: return Aabb::FromCenterExtents({}, half_extents_);
    case ShapeKind::kCapsule:
      return Aabb::FromCenterExtents({}, {radius_, half_height_ + radius_, radius_});
    case ShapeKind::kCylinder:
      return Aabb::FromCenterExtents({}, {radius_, half_height_, radius_});
    case ShapeKind::kConvexHull: return hull_->bounds();
    case ShapeKind::kMesh:
    case ShapeKind::kHeightfield: return surface_->bounds();
    case ShapeKind::kCompound: return compound_->bounds();
  }
  return {};
}

Aabb Shape::WorldBounds(const Pose& pose) const {
  switch (kind_) {
    case ShapeKind::kSphere:
      return Aabb::FromCenterExtents(pose.position, Vec3::Splat(radius_));
    case ShapeKind::kBox: {
      // Extent along world axis i = sum_j |R_ij| * e_j.
      const Mat33 r = pose.rotation.ToMatrix().Abs();
      return Aabb::FromCenterExtents(pose.position, r * half_extents_);
    }
    case ShapeKind::kCapsule: {
      const Vec3 axis = pose.rotation.Rotate({0, half_height_, 0}).Abs();
      return Aabb::FromCenterExtents(pose.position, axis + Vec3::Splat(radius_));
    }
    case ShapeKind::kCylinder: {
      // Disc of radius r with normal a: extent along axis i is r * sqrt(1 - a_i^2).
      const Vec3 a = pose.rotation.Rotate({0, 1, 0});
      const Vec3 disc{radius_ * std::sqrt(std::max(0.0, 1.0 - a.x * a.x)),
                      radius_ * std::sqrt(std::max(0.0, 1.0 - a.y * a.y)),
                      radius_ * std::sqrt(std::max(0.0, 1.0 - a.z * a.z))};
      return Aabb::FromCenterExtents(pose.position, (a * half_height_).Abs() + disc);
    }
    case ShapeKind::kConvexHull: {
      // Tight: the extreme vertices along each world axis (support along R^T e_i).
      const Mat33 r = pose.rotation.ToMatrix();
      Aabb box{Vec3::Splat(std::numeric_limits<double>::infinity()),
               Vec3::Splat(-std::numeric_limits<double>::infinity())};
#if defined(__SSE2__)
      // box = box.Union(r * v) over the vertices, x and y in the two lanes of
      // one vector and z in the low lane of another: the same products summed
      // in the same order as Dot(r.row[i], v), and std::min(m, p) /
      // std::max(m, p) as _mm_min_pd(p, m) / _mm_max_pd(p, m) (p < m ? p : m,
      // p > m ? p : m: the same choice, NaN and signed zeros included), so
      // the same box to the bit, two coordinates a product.
      const __m128d c0 = _mm_set_pd(r.row[1].x, r.row[0].x);
      const __m128d c1 = _mm_set_pd(r.row[1].y, r.row[0].y);
      const __m128d c2 = _mm_set_pd(r.row[1].z, r.row[0].z);
      const __m128d r20 = _mm_set_sd(r.row[2].x);
      const __m128d r21 = _mm_set_sd(r.row[2].y);
      const __m128d r22 = _mm_set_sd(r.row[2].z);
      __m128d lo_xy = _mm_set_pd(box.min.y, box.min.x), hi_xy = _mm_set_pd(box.max.y, box.max.x);
      __m128d lo_z = _mm_set_sd(box.min.z), hi_z = _mm_set_sd(box.max.z);
      for (const Vec3& v : hull_->vertices()) {
        const __m128d x = _mm_set1_pd(v.x), y = _mm_set1_pd(v.y), z = _mm_set1_pd(v.z);
        const __m128d p_xy =
            _mm_add_pd(_mm_add_pd(_mm_mul_pd(c0, x), _mm_mul_pd(c1, y)), _mm_mul_pd(c2, z));
        const __m128d p_z =
            _mm_add_sd(_mm_add_sd(_mm_mul_sd(r20, x), _mm_mul_sd(r21, y)), _mm_mul_sd(r22, z));
        lo_xy = _mm_min_pd(p_xy, lo_xy);
        hi_xy = _mm_max_pd(p_xy, hi_xy);
        lo_z = _mm_min_sd(p_z, lo_z);
        hi_z = _mm_max_sd(p_z, hi_z);
      }
      _mm_storel_pd(&box.min.x, lo_xy);
      _mm_storeh_pd(&box.min.y, lo_xy);
      _mm_storel_pd(&box.min.z, lo_z);
      _mm_storel_pd(&box.max.x, hi_xy);
      _mm_storeh_pd(&box.max.y, hi_xy);
      _mm_storel_pd(&box.max.z, hi_z);
#else
      for (const Vec3& v : hull_->vertices()) box = box.Union(r * v);
#endif
      return {box.min + pose.position, box.max + pose.position};
    }
    case ShapeKind::kMesh:
    case ShapeKind::kHeightfield: {
      // The world box of the local box (centre rotated, extents through |R|).
      const Aabb& b = surface_->bounds();
      const Mat33 r = pose.rotation.ToMatrix();
      const Vec3 c = (b.min + b.max) * 0.5, e = (b.max - b.min) * 0.5;
      return Aabb::FromCenterExtents(pose.position + r * c, r.Abs() * e);
    }
    case ShapeKind::kCompound: {
      // Tight: the union of the children's own world boxes.
      Aabb box;
      for (const CompoundChild& child : compound_->children()) {
        box = box.Union(child.shape.WorldBounds(pose * child.pose));
      }
      return box;
    }
  }
  return {};
}

Vec3 Shape::Support(const Vec3& d) const {
  switch (kind_) {
    case ShapeKind::kSphere:
    case ShapeKind::kBox:
    case ShapeKind::kCapsule:
    case ShapeKind::kCylinder:
    case ShapeKind::kConvexHull:
      // The one support map of the convex kinds: core plus margin (gjk.h).
      return internal::CoreOf(*this).Support(d);
    case ShapeKind::kMesh:
    case ShapeKind::kHeightfield: {
      // Surfaces are not convex: the support of their local bounding box.
      const Aabb& b = surface_->bounds();
      return {d.x >= 0 ? b.max.x : b.min.x, d.y >= 0 ? b.max.y : b.min.y,
              d.z >= 0 ? b.max.z : b.min.z};
    }
    case ShapeKind::kCompound: {
      // The support of the children's convex hull: the farthest child support
      // (ties: the lowest child).
      Vec3 best;
      double best_dot = -std::numeric_limits<double>::infinity();
      for (const CompoundChild& child : compound_->children()) {
        const Vec3 p = child.pose.TransformPoint(
            child.shape.Support(child.pose.InverseTransformDirection(d)));
        if (Dot(p, d) > best_dot) best_dot = Dot(p, d), best = p;
      }
      return best;
    }
  }
  return {};
}

double Shape::BoundingRadius() const {
  switch (kind_) {
    case ShapeKind::kSphere: return radius_;
    case ShapeKind::kBox: return half_extents_.Length();
    case ShapeKind::kCapsule: return radius_ + half_height_;
    case ShapeKind::kCylinder: return std::sqrt(radius_ * radius_ + half_height_ * half_height_);
    case ShapeKind::kConvexHull: return hull_->bounding_radius();
    case ShapeKind::kMesh:
    case ShapeKind::kHeightfield: return surface_->bounding_radius();
    case ShapeKind::kCompound: return compound_->bounding_radius();
  }
  return 0.0;
}

std::string Shape::ToString() const {
  switch (kind_) {
    case ShapeKind::kSphere:
      return "sphere{radius=" + FormatDouble(radius_) + "}";
    case ShapeKind::kBox: return "box{half_extents=" + hitbox::ToString(half_extents_) + "}";
    case ShapeKind::kCapsule:
      return "capsule{radius=" + FormatDouble(radius_) +
             ", half_height=" + FormatDouble(half_height_) + "}";
    case ShapeKind::kCylinder:
      return "cylinder{radius=" + FormatDouble(radius_) +
             ", half_height=" + FormatDouble(half_height_) + "}";
    case ShapeKind::kConvexHull: {
      std::string s = "convex_hull{points=[";
      const std::vector<Vec3>& pts = hull_->input_points();
      for (size_t i = 0; i < pts.size(); ++i) {
        if (i > 0) s += ", ";
        s += hitbox::ToString(pts[i]);
      }
      return s + "]}";
    }
    case ShapeKind::kMesh:
    case ShapeKind::kHeightfield: {
      const Aabb& b = surface_->bounds();
      return std::string(ShapeKindName(kind_)) + "{triangles=" +
             std::to_string(surface_->input_triangles()) + ", bounds=" + hitbox::ToString(b.min) +
             ".." + hitbox::ToString(b.max) + "}";
    }
    case ShapeKind::kCompound: {
      std::string s = "compound{children=[";
      const std::vector<CompoundChild>& children = compound_->children();
      for (size_t i = 0; i < children.size(); ++i) {
        if (i > 0) s += ", ";
        s += children[i].shape.ToString() + " at " + hitbox::ToString(children[i].pose);
      }
      return s + "]}";
    }
  }
  return "unknown";
}

bool Shape::operator==(const Shape& o) const {
  if (kind_ != o.kind_) return false;
  if (kind_ == ShapeKind::kConvexHull) {
    return hull_ == o.hull_ || hull_->input_points() == o.hull_->input_points();
  }
  // Surfaces: the same shared data (built once; copies compare equal).
  if (IsSurfaceKind(kind_)) return surface_ == o.surface_;
  // Compounds: the same children (shapes and poses) in the same order.
  if (kind_ == ShapeKind::kCompound) {
    if (compound_ == o.compound_) return true;
    const std::vector<CompoundChild>& x = compound_->children();
    const std::vector<CompoundChild>& y = o.compound_->children();
    return std::equal(x.begin(), x.end(), y.begin(), y.end(),
                      [](const CompoundChild& p, const CompoundChild& q) {
                        return p.shape == q.shape && p.pose.position == q.pose.position &&
                               p.pose.rotation == q.pose.rotation;
                      });
  }
  // (half_height_ is the active member for every primitive.)
  return radius_ == o.radius_ && half_height_ == o.half_height_ &&
         half_extents_ == o.half_extents_;
}

size_t Shape::DataBytes() const {
  if (kind_ == ShapeKind::kConvexHull) return hull_->MemoryBytes();
  if (IsSurfaceKind(kind_)) return surface_->MemoryBytes();
  if (kind_ == ShapeKind::kCompound) return compound_->MemoryBytes();
  return 0;
}

size_t Shape::PredictHullBytes(size_t points) {
  // ConvexHullBuilder at its largest: every point a vertex (pushed one by
  // one), 2n - 4 triangular faces (pushed one by one), their 3 * faces ring
  // edges (pushed, then made unique in place: the capacity stays), 3n - 6
  // edges twice in the adjacency, the input points, the scan block.
  const size_t n = points;
  const size_t faces = n >= 4 ? 2 * n - 4 : 0;
  const size_t edges = n >= 4 ? 3 * n - 6 : 0;
  const auto grown = [](size_t count) { return count == 0 ? 0 : std::bit_ceil(count); };
  size_t bytes = sizeof(ConvexHullData) + grown(n) * sizeof(Vec3) +
                 grown(faces) * sizeof(HullPlane) +
                 grown(3 * faces) * sizeof(std::pair<uint16_t, uint16_t>) +
                 2 * edges * sizeof(uint16_t) + (n + 1) * sizeof(uint32_t) + n * sizeof(Vec3);
  if (n <= ConvexHullData::kScanVertices) bytes += (n + 3) / 4 * 12 * sizeof(double);
  return bytes;
}

size_t Shape::PredictMeshBytes(std::span<const Vec3> vertices,
                               std::span<const std::array<uint32_t, 3>> triangles) {
  const size_t mesh = TriangleMesh::PredictMemoryBytes(vertices, triangles);
  if (mesh == 0) return 0;
  return sizeof(SurfaceData) + mesh;
}

size_t Shape::PredictHeightfieldBytes(uint32_t rows, uint32_t cols,
                                      std::span<const double> heights) {
  if (rows < 2 || cols < 2) return 0;
  // Heightfield::Build's storage: exact 32-bit decimals (4 bytes), else
  // exact floats (4), else doubles (8).
  size_t per_sample = 8;
  double d = 1.0;
  for (int k = 0; k <= 9 && per_sample == 8; ++k, d *= 10.0) {
    bool ok = true;
    for (size_t i = 0; i < heights.size() && ok; ++i) {
      const double q = std::nearbyint(heights[i] * d);
      ok = std::fabs(q) <= 2147483647.0 && q / d == heights[i];
    }
    if (ok) per_sample = 4;
  }
  if (per_sample == 8) {
    bool floats = true;
    for (size_t i = 0; i < heights.size() && floats; ++i) {
      floats = static_cast<double>(static_cast<float>(heights[i])) == heights[i];
    }
    if (floats) per_sample = 4;
  }
  size_t bytes = sizeof(SurfaceData) + SurfaceData::FieldBytes() +
                 heights.size() * (sizeof(double) + per_sample);
  // Its min/max hierarchy: level k holds ceil(cells / 2^k) blocks per axis,
  // a float min and max each, up to one block; the levels are pushed one by one.
  constexpr size_t kLevelBytes = 64;  // Heightfield::Level: three words and two vectors
  const uint64_t cells_x = cols - 1, cells_z = rows - 1;
  size_t levels = 0;
  for (uint64_t block = 2;; block *= 2) {
    const uint64_t nx = (cells_x + block - 1) / block, nz = (cells_z + block - 1) / block;
    bytes += static_cast<size_t>(nx * nz) * 2 * sizeof(float);
    ++levels;
    if (nx == 1 && nz == 1) break;
  }
  return bytes + std::bit_ceil(levels) * kLevelBytes;
}

size_t Shape::PredictCompoundBytes(size_t children, size_t children_bytes) {
  // CompoundData: children and their bounds reserved exactly; beyond
  // kLinearChildren a hierarchy of 2n reserved nodes and an n-byte order.
  size_t bytes = sizeof(CompoundData) + children * (sizeof(CompoundChild) + sizeof(Aabb)) +
                 children_bytes;
  if (children > static_cast<size_t>(CompoundData::kLinearChildren)) {
    bytes += 2 * children * sizeof(CompoundData::Node) + children;
  }
  return bytes;
}

Result<Shape> Shape::Make(const TriangleMeshShape& m) { return MakeMesh(m, nullptr); }

Result<Shape> Shape::Make(TriangleMeshShape&& m) { return MakeMesh(m, &m); }

Result<Shape> Shape::MakeMesh(const TriangleMeshShape& m, TriangleMeshShape* spent) {
  const auto input_triangles = static_cast<uint32_t>(m.triangles.size());  // spent by the build
  return OfMesh(
      TriangleMesh::Build(m.vertices, m.triangles, spent != nullptr ? &spent->vertices : nullptr,
                          spent != nullptr ? &spent->triangles : nullptr),
      input_triangles);
}

Result<Shape> Shape::Make(FloatTriangleMeshShape&& m) {
  const auto input_triangles = static_cast<uint32_t>(m.triangles.size());  // spent by the build
  return OfMesh(TriangleMesh::Build(mesh_vertices::VertexInput::Floats(m.vertices), m.triangles,
                                    nullptr, &m.triangles, &m.vertices),
                input_triangles);
}

Result<Shape> Shape::Make(DecimalTriangleMeshShape&& m) {
  const auto input_triangles = static_cast<uint32_t>(m.triangles.size());  // spent by the build
  return OfMesh(TriangleMesh::Build(mesh_vertices::VertexInput::Decimals(m.vertices, m.divisor),
                                    m.triangles, nullptr, &m.triangles, nullptr, &m.vertices),
                input_triangles);
}

Result<Shape> internal::MakeMeshOverParts(const MeshParts* parts) {
  return Shape::OfMesh(TriangleMesh::BuildOverParts(parts), parts->input_triangle_count());
}

Result<Shape> Shape::OfMesh(Result<TriangleMesh> built, uint32_t input_triangles) {
  if (!built.ok()) {
    return Error{ErrorCode::kInvalidArgument, "mesh." + built.error().message};
  }
  Shape shape;
  shape.kind_ = ShapeKind::kMesh;
  shape.radius_ = 0.0;
  shape.surface_ = new SurfaceData(std::move(*built), input_triangles);
  internal::SurfaceAddRef(shape.surface_);
  return shape;
}

Result<Shape> Shape::Make(const HeightfieldShape& h) {
  Result<Heightfield> built =
      Heightfield::Build(h.rows, h.cols, h.cell_size_x, h.cell_size_z, h.heights);
  if (!built.ok()) {
    return Error{ErrorCode::kInvalidArgument, "heightfield: " + built.error().message};
  }
  Shape shape;
  shape.kind_ = ShapeKind::kHeightfield;
  shape.radius_ = 0.0;
  shape.surface_ = new SurfaceData(std::move(*built), h);
  internal::SurfaceAddRef(shape.surface_);
  return shape;
}

Result<Shape> Shape::Make(const Compound& c) {
  static_assert(kMinCompoundChildren == 1 && kMaxCompoundChildren == 64 &&
                    kQuatNormTolerance == 1e-6 && kMaxShapeSize == 1e6,
                "update the messages below");
  const size_t n = c.children.size();
  if (n < static_cast<size_t>(kMinCompoundChildren) ||
      n > static_cast<size_t>(kMaxCompoundChildren)) {
    return Error{ErrorCode::kInvalidArgument,
                 "compound.children: needs 1 to 64 children, got " + std::to_string(n)};
  }
  auto data = std::make_unique<CompoundData>();
  data->children_.reserve(n);
  data->child_bounds_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const CompoundChild& child = c.children[i];
    const ShapeKind kind = child.shape.kind();
    if (!IsConvexKind(kind)) {
      return BadChild(i, "shape", std::string(": a ") + ShapeKindName(kind) +
                                      " cannot be a compound child (use sphere, box, capsule, "
                                      "cylinder or convex_hull)");
    }
    const Vec3& p = child.pose.position;
    for (int a = 0; a < 3; ++a) {
      if (!(std::fabs(p[a]) <= kMaxShapeSize)) {
        static const char* kAxis[3] = {"x", "y", "z"};
        return BadChild(i, std::string("position.") + kAxis[a],
                        " must be finite and in [-1e6, 1e6] metres, got " + FormatDouble(p[a]));
      }
    }
    const Quat& q = child.pose.rotation;
    if (!q.IsFinite() || !q.IsNormalized(kQuatNormTolerance)) {
      return BadChild(
          i, "rotation",
          ": quaternion norm " + FormatDouble(q.Length()) + " is not 1 (tolerance 1e-6)");
    }
    const Pose pose(p, q.Normalized());
    data->children_.push_back({child.shape, pose});
    data->child_bounds_.push_back(Grown(child.shape.WorldBounds(pose)));
    data->bounds_ = data->bounds_.Union(data->child_bounds_.back());
    data->bounding_radius_ = std::max(data->bounding_radius_,
                                      p.Length() + child.shape.BoundingRadius());
  }
  data->BuildHierarchy();
  Shape shape;
  shape.kind_ = ShapeKind::kCompound;
  shape.radius_ = 0.0;
  shape.compound_ = data.release();
  internal::CompoundAddRef(shape.compound_);
  return shape;
}

std::optional<TriangleMeshShape> Shape::mesh_input() const {
  if (kind_ != ShapeKind::kMesh) return std::nullopt;
  return surface_->mesh_input();
}
uint32_t Shape::mesh_input_triangles() const {
  return kind_ == ShapeKind::kMesh ? surface_->input_triangles() : 0;
}
const HeightfieldShape* Shape::heightfield_input() const {
  return kind_ == ShapeKind::kHeightfield ? &surface_->heightfield_input() : nullptr;
}

namespace internal {
void SurfaceAddRef(const SurfaceData* s) { s->refs_.fetch_add(1, std::memory_order_relaxed); }
void SurfaceRelease(const SurfaceData* s) {
  if (s->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
}
}  // namespace internal

std::string ToString(const Vec3& v) {
  // std::string("{"), not "{": avoids a false -Wrestrict warning (GCC PR 105651).
  return std::string("{") + FormatDouble(v.x) + ", " + FormatDouble(v.y) + ", " +
         FormatDouble(v.z) + "}";
}
std::string ToString(const Quat& q) {
  return std::string("{") + FormatDouble(q.x) + ", " + FormatDouble(q.y) + ", " +
         FormatDouble(q.z) + ", " + FormatDouble(q.w) + "}";
}
std::string ToString(const Pose& p) {
  return "Pose{" + ToString(p.position) + ", Quat" + ToString(p.rotation) + "}";
}

namespace internal {

ConvexCore CoreOf(const Shape& shape) {
  ConvexCore c;
  switch (shape.kind()) {
    case ShapeKind::kSphere:
      c.kind = ConvexCore::Kind::kPoint;
      c.margin = shape.radius();
      break;
    case ShapeKind::kBox:
      c.kind = ConvexCore::Kind::kBox;
      c.half_extents = shape.half_extents();
      break;
    case ShapeKind::kCapsule:
      c.kind = ConvexCore::Kind::kSegment;
      c.half_height = shape.half_height();
      c.margin = shape.radius();
      break;
    case ShapeKind::kCylinder:
      c.kind = ConvexCore::Kind::kCylinder;
      c.half_height = shape.half_height();
      c.radius = shape.radius();
      break;
    case ShapeKind::kConvexHull:
      c.kind = ConvexCore::Kind::kHull;
      c.hull = shape.hull();
      break;
    case ShapeKind::kMesh:
    case ShapeKind::kHeightfield:
    case ShapeKind::kCompound:
      // Surfaces and compounds never reach GJK as a whole (the pair table
      // sends them to their triangles or children); a point keeps this total.
      c.kind = ConvexCore::Kind::kPoint;
      break;
  }
  return c;
}

GjkResult GjkDistance(const Shape& a, const Pose& pose_a, const Shape& b, const Pose& pose_b,
                      const GjkSettings& settings) {
  GjkResult r = GjkDistance(CoreOf(a), CoreOf(b), pose_a.RelativeTo(pose_b), settings);
  r.point_a = pose_a.TransformPoint(r.point_a);
  r.point_b = pose_a.TransformPoint(r.point_b);
  r.core_point_a = pose_a.TransformPoint(r.core_point_a);
  r.core_point_b = pose_a.TransformPoint(r.core_point_b);
  r.normal = pose_a.TransformDirection(r.normal);
  return r;
}

}  // namespace internal

}  // namespace hitbox
static_assert(sizeof(hitbox::Shape) == 48, "Shape: kind, radius, half height or hull handle, half extents");
