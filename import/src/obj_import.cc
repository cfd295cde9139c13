// Wavefront OBJ levels: tinyobjloader reads the file, the "v" lines are
// read again exactly (obj_positions.h), and each object is a node.
#include <tiny_obj_loader.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>

#include "level_formats.h"
#include "node_builder.h"
#include "obj_positions.h"

namespace hitbox::import {
namespace {

/// The double nearest the decimal that tinyobjloader read as `x`, for a
/// file whose "v" lines ReadObjPositions could not match to its vertices:
/// its parser can land an ulp or two off, so a file's "2.123456" came back
/// as no q / 10^k. The q / 10^k (k <= 9) within 2 ulps of x, the fewest
/// digits first, is the correctly rounded value of such text.
double NearestShortDecimal(double x) {
  if (!std::isfinite(x) || x == 0.0) return x;
  const double ulp = std::nextafter(std::fabs(x), INFINITY) - std::fabs(x);
  double scale = 1.0;
  for (int k = 0; k <= 9; ++k, scale *= 10.0) {
    const double q = std::nearbyint(x * scale);
    if (std::fabs(q) > 0x1p53) break;
    const double decimal = q / scale;
    if (std::fabs(decimal - x) <= 2.0 * ulp) return decimal;
  }
  return x;
}

}  // namespace

Status ImportObj(const std::string& path, const ImportOptions& options, Level* level) {
  // The arrays are ours (LoadObj, as ObjReader calls it): each object's
  // are freed once it is built.
  tinyobj::attrib_t attrib;
  std::vector<tinyobj::shape_t> shapes;
  std::vector<tinyobj::material_t> materials;
  std::string warn;
  std::string err;
  const size_t slash = path.find_last_of("/\\");
  const std::string mtl_dir = slash == std::string::npos ? "" : path.substr(0, slash);
  if (!tinyobj::LoadObj(&attrib, &shapes, &materials, &warn, &err, path.c_str(), mtl_dir.c_str(),
                        /*triangulate=*/true, /*default_vcols_fallback=*/false)) {
    while (!err.empty() && std::isspace(static_cast<unsigned char>(err.back()))) err.pop_back();
    return Invalid(path + ": " + (err.empty() ? "not a Wavefront OBJ file" : err));
  }
  std::vector<tinyobj::real_t>& v = attrib.vertices;
  std::vector<tinyobj::real_t>().swap(attrib.colors);
  const size_t vertex_count = v.size() / 3;
  // tinyobjloader drops a polygon (4+ corners) with an index past the
  // vertices and only warns: that is a broken file, not a smaller level.
  if (warn.find("invalid vertex index") != std::string::npos) {
    return Invalid(path + ": a polygon uses a vertex index beyond the " +
                   std::to_string(vertex_count) +
                   " vertices (tinyobjloader: face with invalid vertex index)");
  }
  // Each coordinate as the double nearest its text.
  if (!ReadObjPositions(path, &v)) {
    for (tinyobj::real_t& x : v) x = NearestShortDecimal(x);
  }
  Builder builder(options, level);
  // An object's vertices keep the file's order (a grid listed row by row
  // stays so): slot[vi] is vertex vi's index in the object being built.
  constexpr uint32_t kUnused = UINT32_MAX;
  std::vector<uint32_t> slot(vertex_count, kUnused);
  std::vector<uint32_t> used;
  for (size_t s = 0; s < shapes.size(); ++s) {
    tinyobj::mesh_t& mesh = shapes[s].mesh;
    NodeGeometry node;
    node.world = RootTransform(options);
    node.where =
        shapes[s].name.empty() ? "object #" + std::to_string(s) : "object '" + shapes[s].name + "'";
    node.role = RoleOf(shapes[s].name);
    node.layer = options.layer;
    for (size_t f = 0; f < mesh.num_face_vertices.size(); ++f) {
      const size_t n = mesh.num_face_vertices[f];
      if (n != 3) {
        return Invalid(path + ": " + node.where + ": face " + std::to_string(f) + " has " +
                       std::to_string(n) + " vertices after triangulation");
      }
      for (size_t k = 0; k < 3; ++k) {
        const int vi = mesh.indices[3 * f + k].vertex_index;
        if (vi < 0 || static_cast<size_t>(vi) >= vertex_count) {
          return Invalid(path + ": " + node.where + ": face " + std::to_string(f) +
                         " uses vertex " + std::to_string(vi + 1) + " of " +
                         std::to_string(vertex_count));
        }
        if (slot[static_cast<size_t>(vi)] == kUnused) {
          slot[static_cast<size_t>(vi)] = 0;
          used.push_back(static_cast<uint32_t>(vi));
        }
      }
    }
    std::sort(used.begin(), used.end());
    node.vertices.reserve(used.size());
    for (uint32_t vi : used) {
      slot[vi] = static_cast<uint32_t>(node.vertices.size());
      const Vec3 p{v[3 * size_t{vi}], v[3 * size_t{vi} + 1], v[3 * size_t{vi} + 2]};
      if (!p.IsFinite()) {
        return Invalid(path + ": " + node.where + ": vertex " + std::to_string(vi + 1) +
                       " is not finite");
      }
      node.vertices.push_back(p);
    }
    node.triangles.reserve(mesh.num_face_vertices.size());
    for (size_t f = 0; f < mesh.num_face_vertices.size(); ++f) {
      Triangle t{};
      for (size_t k = 0; k < 3; ++k) {
        t[k] = slot[static_cast<size_t>(mesh.indices[3 * f + k].vertex_index)];
      }
      node.triangles.push_back(t);
    }
    for (uint32_t vi : used) slot[vi] = kUnused;
    used.clear();
    mesh = tinyobj::mesh_t();  // this object's faces are not needed any more
    if (node.triangles.empty()) continue;
    if (Status st = builder.AddNode(&node); !st.ok()) return Invalid(path + ": " + st.message());
  }
  return Status::Ok();
}

}  // namespace hitbox::import
