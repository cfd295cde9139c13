// The shared immutable data behind a mesh or heightfield Shape: the built
// surface (TriangleMesh or Heightfield with its hierarchy), reference counted
// by the Shapes that hold it (intrusive, like ConvexHullData).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "geometry/heightfield.h"
#include "geometry/triangle_mesh.h"
#include "hitbox/shape/shapes.h"

namespace hitbox {

class SurfaceData {
 public:
  SurfaceData(TriangleMesh mesh, uint32_t input_triangles)
      : mesh_(std::move(mesh)), input_triangles_(input_triangles) {}
  SurfaceData(Heightfield field, HeightfieldShape input)
      : field_(std::move(field)), field_input_(std::move(input)) {}

  /// The mesh as given, rebuilt from the stored mesh (Shape::mesh_input()).
  TriangleMeshShape mesh_input() const {
    TriangleMeshShape in;
    mesh_->Input(&in.vertices, &in.triangles);
    return in;
  }
  const HeightfieldShape& heightfield_input() const { return field_input_; }

  const TriangleMesh* mesh() const { return mesh_ ? &*mesh_ : nullptr; }
  const Heightfield* heightfield() const { return field_ ? &*field_ : nullptr; }
  /// Local bounds of the surface.
  const Aabb& bounds() const { return mesh_ ? mesh_->bounds() : field_->bounds(); }
  /// Radius of the smallest origin-centred ball holding the bounds' corners.
  double bounding_radius() const {
    const Aabb& b = bounds();
    Vec3 far;
    for (int a = 0; a < 3; ++a) far[a] = std::max(std::fabs(b.min[a]), std::fabs(b.max[a]));
    return far.Length();
  }
  /// Triangles as given (a mesh's input count, dropped ones included).
  uint32_t input_triangles() const {
    return mesh_ ? input_triangles_ : field_->triangle_count();
  }
  size_t MemoryBytes() const {
    return sizeof(*this) + (mesh_ ? mesh_->MemoryBytes() : field_->MemoryBytes()) +
           field_input_.heights.capacity() * sizeof(double);
  }

  /// Calls f(surface) with the TriangleMesh or the Heightfield.
  template <typename F>
  decltype(auto) Visit(F&& f) const {
    if (mesh_) return f(*mesh_);
    return f(*field_);
  }

 private:
  friend void internal::SurfaceAddRef(const SurfaceData* s);
  friend void internal::SurfaceRelease(const SurfaceData* s);
  mutable std::atomic<uint32_t> refs_{0};
  std::optional<TriangleMesh> mesh_;
  std::optional<Heightfield> field_;
  HeightfieldShape field_input_;
  uint32_t input_triangles_ = 0;
};

}  // namespace hitbox
