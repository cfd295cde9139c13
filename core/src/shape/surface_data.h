// The shared immutable data behind a mesh or heightfield Shape: the built
// surface (TriangleMesh or Heightfield with its hierarchy), reference counted
// by the Shapes that hold it (intrusive, like ConvexHullData).
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>

#include "geometry/heightfield.h"
#include "geometry/triangle_mesh.h"
#include "hitbox/shape/shapes.h"

namespace hitbox {

class SurfaceData {
 public:
  /// A mesh, settled into the end of its own block (TriangleMesh::Settle):
  /// with this record, a mesh shape's data is two allocations, whatever the
  /// mesh's size.
  SurfaceData(TriangleMesh mesh, uint32_t input_triangles)
      : input_triangles_(input_triangles), mesh_(TriangleMesh::Settle(std::move(mesh))) {}
  SurfaceData(Heightfield field, HeightfieldShape input)
      : field_(std::make_unique<FieldPart>(FieldPart{std::move(field), std::move(input)})) {}
  ~SurfaceData() {
    if (mesh_ != nullptr) TriangleMesh::DestroySettled(mesh_);
  }
  SurfaceData(const SurfaceData&) = delete;
  SurfaceData& operator=(const SurfaceData&) = delete;

  /// Calls f(surface) with the TriangleMesh or the Heightfield.
  template <typename F>
  decltype(auto) Visit(F&& f) const {
    if (mesh_ != nullptr) return f(*mesh_);
    return f(field_->field);
  }

  /// The mesh as given, rebuilt from the stored mesh (Shape::mesh_input()).
  TriangleMeshShape mesh_input() const {
    TriangleMeshShape in;
    mesh()->Input(&in.vertices, &in.triangles);
    return in;
  }
  const HeightfieldShape& heightfield_input() const { return field_->input; }

  const TriangleMesh* mesh() const { return mesh_; }
  const Heightfield* heightfield() const { return field_ != nullptr ? &field_->field : nullptr; }
  /// Local bounds of the surface.
  const Aabb& bounds() const {
    return Visit([](const auto& surface) -> const Aabb& { return surface.bounds(); });
  }
  /// Radius of the smallest origin-centred ball holding the bounds' corners.
  double bounding_radius() const {
    const Aabb& b = bounds();
    Vec3 far;
    for (int a = 0; a < 3; ++a) far[a] = std::max(std::fabs(b.min[a]), std::fabs(b.max[a]));
    return far.Length();
  }
  /// Triangles as given (a mesh's input count, dropped ones included).
  uint32_t input_triangles() const {
    return mesh_ != nullptr ? input_triangles_ : field_->field.triangle_count();
  }
  /// This record, and the mesh's block (its fixed part included) or the
  /// heightfield with its input.
  size_t MemoryBytes() const {
    if (mesh_ != nullptr) return sizeof(*this) + mesh_->MemoryBytes();
    return sizeof(*this) + FieldBytes() + field_->field.MemoryBytes() +
           field_->input.heights.capacity() * sizeof(double);
  }
  /// Bytes of a heightfield's fixed part (beside this record).
  static constexpr size_t FieldBytes() { return sizeof(FieldPart); }

 private:
  struct FieldPart {
    Heightfield field;
    HeightfieldShape input;
  };
  friend void internal::SurfaceAddRef(const SurfaceData* s);
  friend void internal::SurfaceRelease(const SurfaceData* s);
  mutable std::atomic<uint32_t> refs_{0};
  uint32_t input_triangles_ = 0;
  // A mesh or a heightfield, never both.
  const TriangleMesh* mesh_ = nullptr;
  std::unique_ptr<FieldPart> field_;
};

}  // namespace hitbox
