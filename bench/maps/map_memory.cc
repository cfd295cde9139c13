// hitbox-map-memory FILE: loads FILE the way `hitboxd --maps DIR` loads each
// map (big blocks mapped on their own, MapLargeBlocks, as hitboxd has them;
// LoadMapFile, then malloc_trim as MapLibrary::Load does) and prints, as
// one JSON line, the process's resident memory before, at its peak during the
// load and after it (steady), the set's accounted bytes, and
// peak_over_steady = (peak - before) / (steady - before): the load's peak
// against the memory the loaded map keeps (issue 29: at most 1.5).
//
// hitbox-map-memory FILE --merged: then runs ray batches across the map (a
// fixed seed) until its set has merged the meshes that share a frame
// (MeshGroups, as hitboxd's query batches make them), and adds the set's
// bytes per triangle with the merged meshes and the merge's own peak:
// merge_peak_over_steady = (peak during the merge - steady) / (steady -
// before), the resident peak reset (clear_refs) after the load.
//
// mesh_bytes splits the meshes' bytes (each mesh once, however many
// colliders share it) into hierarchy, triangles, vertices and fixed (the
// mesh objects and their blocks' padding; TriangleMesh::Storage).
//
// hitbox-map-memory --write-mesh TRIANGLES OUT.json writes a scene of one
// wavy terrain mesh of about TRIANGLES triangles whose vertices are float32
// values written in full (17 significant digits), as imported levels have.
#include <malloc.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "geometry/triangle_mesh.h"
#include "maps.h"
#include "shape/surface_data.h"
#include "memory_budget.h"

namespace {

// A field of /proc/self/status ("VmRSS", "VmHWM") in bytes, 0 if missing.
uint64_t StatusBytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t len = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, len, field) == 0 && line.size() > len && line[len] == ':') {
      return std::strtoull(line.c_str() + len + 1, nullptr, 10) * 1024;
    }
  }
  return 0;
}

int WriteMesh(long triangles, const char* out_path) {
  const long side = std::lround(std::sqrt(static_cast<double>(triangles) / 2.0));
  std::FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", out_path);
    return 2;
  }
  std::fprintf(f, "{\"colliders\": [{\"id\": 1, \"shape\": {\"mesh\": {\"vertices\": [");
  for (long r = 0; r <= side; ++r) {
    for (long c = 0; c <= side; ++c) {
      const double dr = static_cast<double>(r), dc = static_cast<double>(c);
      // float32 coordinates off any short decimal or binary grid.
      const float x = static_cast<float>(dc * 0.731 + 0.1 * std::sin(0.7 * dr));
      const float z = static_cast<float>(dr * 0.731 + 0.1 * std::cos(0.9 * dc));
      const float y = static_cast<float>(0.8 * std::sin(0.37 * x) * std::cos(0.23 * z));
      // Each float32 written as its exact double (17 digits), as hitboxctl
      // import writes a glTF level's vertices.
      std::fprintf(f, "%s[%.17g, %.17g, %.17g]", r == 0 && c == 0 ? "" : ", ",
                   static_cast<double>(x), static_cast<double>(y), static_cast<double>(z));
    }
  }
  std::fprintf(f, "], \"triangles\": [");
  const long n = side + 1;
  for (long r = 0; r < side; ++r) {
    for (long c = 0; c < side; ++c) {
      const long v = r * n + c;
      std::fprintf(f, "%s[%ld, %ld, %ld], [%ld, %ld, %ld]", r == 0 && c == 0 ? "" : ", ", v,
                   v + n, v + 1, v + 1, v + n, v + n + 1);
    }
  }
  std::fprintf(f, "]}}}]}\n");
  return std::fclose(f) == 0 ? 0 : 2;
}

// Resets the process's resident peak (VmHWM) to its present RSS.
bool ResetPeak() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

// Batches of `rays` random rays across `bounds` (fixed seed) until `set`
// holds merged meshes, at most `batches` of them; the merged triangles.
uint64_t MergeByRays(const hitbox::ColliderSet& set, const hitbox::Aabb& bounds, int batches,
                     size_t rays) {
  std::mt19937_64 rng(29);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const auto point = [&] {
    hitbox::Vec3 p;
    for (int a = 0; a < 3; ++a) p[a] = bounds.min[a] + u(rng) * (bounds.max[a] - bounds.min[a]);
    return p;
  };
  std::vector<hitbox::Query> qs;
  for (size_t i = 0; i < rays; ++i) {
    hitbox::RayQuery q;
    q.origin = point();
    q.translation = point() - q.origin;
    qs.push_back(q);
  }
  std::vector<hitbox::QueryResult> results(qs.size());
  for (int b = 0; b < batches; ++b) {
    set.RunBatch(qs, results, nullptr);
    set.WaitForCaches();  // a merge begun on its own thread ends here
    const uint64_t merged = set.GetTreeStats().merged_triangles;
    if (merged != 0) return merged;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--write-mesh") == 0) {
    return WriteMesh(std::atol(argv[2]), argv[3]);
  }
  const bool merged = argc == 3 && std::strcmp(argv[2], "--merged") == 0;
  if (argc != 2 && !merged) {
    std::fprintf(stderr,
                 "usage: hitbox-map-memory FILE [--merged]\n"
                 "       hitbox-map-memory --write-mesh TRIANGLES OUT.json\n");
    return 2;
  }
  hitbox::server::MapLargeBlocks();
  malloc_trim(0);
  const uint64_t before = StatusBytes("VmRSS");
  auto map = hitbox::server::LoadMapFile(argv[1]);
  if (!map.ok()) {
    std::fprintf(stderr, "%s\n", map.error().message.c_str());
    return 1;
  }
  malloc_trim(0);
  const uint64_t peak = StatusBytes("VmHWM");
  const uint64_t steady = StatusBytes("VmRSS");
  const double kept = static_cast<double>(steady > before ? steady - before : 1);
  const uint64_t accounted = (*map)->memory_bytes();  // read once: it takes the set's lock
  const uint64_t triangles = (*map)->triangles;
  std::printf(
      "{\"file\": \"%s\", \"triangles\": %llu, \"accounted_bytes\": %llu, "
      "\"bytes_per_triangle\": %.2f, \"rss_before\": %llu, \"rss_peak\": %llu, "
      "\"rss_steady\": %llu, \"peak_over_steady\": %.2f, \"peak_over_accounted\": %.2f",
      argv[1], static_cast<unsigned long long>(triangles),
      static_cast<unsigned long long>(accounted),
      triangles != 0 ? static_cast<double>(accounted) / static_cast<double>(triangles) : 0.0,
      static_cast<unsigned long long>(before), static_cast<unsigned long long>(peak),
      static_cast<unsigned long long>(steady), static_cast<double>(peak - before) / kept,
      static_cast<double>(peak - before) / static_cast<double>(accounted));
  // Each mesh once: the merged ones are not colliders, so --merged leaves
  // these as they were.
  hitbox::TriangleMesh::StorageBytes mesh_bytes;
  std::unordered_set<const hitbox::TriangleMesh*> seen;
  (*map)->set->ForEach([&](const hitbox::Collider& c) {
    if (c.shape.kind() != hitbox::ShapeKind::kMesh) return;
    const hitbox::TriangleMesh* mesh = c.shape.surface()->mesh();
    if (!seen.insert(mesh).second) return;
    const hitbox::TriangleMesh::StorageBytes s = mesh->Storage();
    mesh_bytes.hierarchy += s.hierarchy;
    mesh_bytes.triangles += s.triangles;
    mesh_bytes.vertices += s.vertices;
    mesh_bytes.fixed += s.fixed;
  });
  std::printf(
      ", \"meshes\": %zu, \"mesh_bytes\": {\"hierarchy\": %zu, \"triangles\": %zu, "
      "\"vertices\": %zu, \"fixed\": %zu}",
      seen.size(), mesh_bytes.hierarchy, mesh_bytes.triangles, mesh_bytes.vertices,
      mesh_bytes.fixed);
  if (merged) {
    if (!ResetPeak()) {
      std::fprintf(stderr, "cannot reset the resident peak (/proc/self/clear_refs)\n");
      return 1;
    }
    const uint64_t start = StatusBytes("VmRSS");
    const uint64_t merged_triangles = MergeByRays(*(*map)->set, (*map)->bounds, 200, 1000);
    const uint64_t merge_peak = StatusBytes("VmHWM");
    const uint64_t with_merged = (*map)->memory_bytes();
    std::printf(
        ", \"merged_triangles\": %llu, \"merged_accounted_bytes\": %llu, "
        "\"merged_bytes_per_triangle\": %.2f, \"merge_peak_over_steady\": %.2f",
        static_cast<unsigned long long>(merged_triangles),
        static_cast<unsigned long long>(with_merged),
        triangles != 0 ? static_cast<double>(with_merged) / static_cast<double>(triangles) : 0.0,
        static_cast<double>(merge_peak > start ? merge_peak - start : 0) / kept);
  }
  std::printf("}\n");
  return 0;
}
