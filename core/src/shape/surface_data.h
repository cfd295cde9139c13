// The shared immutable data behind a mesh or heightfield Shape: the built
// surface (TriangleMesh or Heightfield with its hierarchy), reference counted
// by the Shapes that hold it (intrusive, like ConvexHullData).
#pragma once

#include <atomic>
#include <cstdint>
#include <variant>

#include "geometry/heightfield.h"
#include "geometry/triangle_mesh.h"
#include "hitbox/shape/shapes.h"

namespace hitbox {

class SurfaceData {
  struct MeshPart {
    TriangleMesh mesh;
    uint32_t input_triangles;
  };
  struct FieldPart {
    Heightfield field;
    HeightfieldShape input;
  };

 public:
  SurfaceData(TriangleMesh mesh, uint32_t input_triangles)
      : data_(MeshPart{std::move(mesh), input_triangles}) {}
  SurfaceData(Heightfield field, HeightfieldShape input)
      : data_(FieldPart{std::move(field), std::move(input)}) {}

  /// Calls f(surface) with the TriangleMesh or the Heightfield.
  template <typename F>
  decltype(auto) Visit(F&& f) const {
    if (const MeshPart* m = std::get_if<MeshPart>(&data_)) return f(m->mesh);
    return f(std::get<FieldPart>(data_).field);
  }

  /// The mesh as given, rebuilt from the stored mesh (Shape::mesh_input()).
  TriangleMeshShape mesh_input() const {
    TriangleMeshShape in;
    mesh()->Input(&in.vertices, &in.triangles);
    return in;
  }
  const HeightfieldShape& heightfield_input() const { return std::get<FieldPart>(data_).input; }

  const TriangleMesh* mesh() const {
    const MeshPart* m = std::get_if<MeshPart>(&data_);
    return m != nullptr ? &m->mesh : nullptr;
  }
  const Heightfield* heightfield() const {
    const FieldPart* f = std::get_if<FieldPart>(&data_);
    return f != nullptr ? &f->field : nullptr;
  }
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
    const MeshPart* m = std::get_if<MeshPart>(&data_);
    return m != nullptr ? m->input_triangles : heightfield()->triangle_count();
  }
  size_t MemoryBytes() const {
    const FieldPart* f = std::get_if<FieldPart>(&data_);
    return sizeof(*this) + Visit([](const auto& surface) { return surface.MemoryBytes(); }) +
           (f != nullptr ? f->input.heights.capacity() * sizeof(double) : 0);
  }

 private:
  friend void internal::SurfaceAddRef(const SurfaceData* s);
  friend void internal::SurfaceRelease(const SurfaceData* s);
  mutable std::atomic<uint32_t> refs_{0};
  // A mesh or a heightfield, never both: one takes the other's room.
  std::variant<MeshPart, FieldPart> data_;
};

}  // namespace hitbox
