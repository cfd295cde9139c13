// Active edges of a mesh being built: which triangle edges a contact may
// push against (Jolt's MeshShape keeps the same flags). Read from the
// staged records, so the caller's triangles are gone by now.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "geometry/triangle_mesh.h"
#include "geometry/triangle_mesh_staging.h"
#include "geometry/triangle_queries.h"

namespace hitbox {

void TriangleMesh::StageActiveEdges() {
  const uint32_t n = triangle_count_;
  const auto lower_of = [](const uint32_t idx[3], uint32_t slot) {
    return std::min(idx[slot], idx[(slot + 1) % 3]);
  };
  const auto higher_of = [](const uint32_t idx[3], uint32_t slot) {
    return std::max(idx[slot], idx[(slot + 1) % 3]);
  };
  // start[v]: the first of the directed edges (3k + slot) whose lower vertex
  // is v, were they all counting-sorted by it.
  std::vector<uint32_t> start(size_t{vertex_count_} + 1, 0);
  for (uint32_t k = 0; k < n; ++k) {
    uint32_t idx[3];
    TriangleIndices(k, idx);
    for (uint32_t s = 0; s < 3; ++s) ++start[lower_of(idx, s) + 1];
  }
  for (size_t v = 1; v < start.size(); ++v) start[v] += start[v - 1];

  std::vector<uint8_t> active(n, 0);
  const double cos_threshold = std::cos(kActiveEdgeAngle);
  const auto normal_of = [&](const uint32_t idx[3]) {
    return TriangleNormal(Vertex(idx[0]), Vertex(idx[1]), Vertex(idx[2]));
  };
  // The edges a run of lower vertices at a time, about n of them (4 bytes
  // each) held at once; a bucket's edges sorted by (higher vertex, edge).
  const uint32_t budget = std::max<uint32_t>(n, 1u << 16);
  std::vector<uint32_t> runs = {0};  // the runs' first vertices, then vertex_count_
  uint32_t most = 0;
  while (runs.back() < vertex_count_) {
    const uint32_t v_begin = runs.back();
    uint32_t v_end = v_begin + 1;
    while (v_end < vertex_count_ && start[v_end + 1] - start[v_begin] <= budget) ++v_end;
    most = std::max(most, start[v_end] - start[v_begin]);
    runs.push_back(v_end);
  }
  std::vector<uint32_t> edges(most);  // once: a vector grown by resize doubles
  std::vector<std::pair<uint32_t, uint32_t>> bucket;  // (higher vertex, edge)
  for (size_t r = 0; r + 1 < runs.size(); ++r) {
    const uint32_t v_begin = runs[r], v_end = runs[r + 1];
    const uint32_t first = start[v_begin];
    for (uint32_t k = 0; k < n; ++k) {
      uint32_t idx[3];
      TriangleIndices(k, idx);
      for (uint32_t s = 0; s < 3; ++s) {
        const uint32_t lo = lower_of(idx, s);
        if (lo >= v_begin && lo < v_end) edges[start[lo]++ - first] = 3 * k + s;
      }
    }
    // start[v] now holds where bucket v + 1 began.
    uint32_t begin = first;
    for (uint32_t v = v_begin; v < v_end; begin = start[v], ++v) {
      bucket.clear();
      for (uint32_t i = begin; i < start[v]; ++i) {
        const uint32_t e = edges[i - first];
        uint32_t idx[3];
        TriangleIndices(e / 3, idx);
        bucket.emplace_back(higher_of(idx, e % 3), e);
      }
      std::sort(bucket.begin(), bucket.end());
      for (size_t i = 0; i < bucket.size();) {
        size_t j = i + 1;
        while (j < bucket.size() && bucket[j].first == bucket[i].first) ++j;
        bool is_active = true;
        if (j - i == 2) {
          const uint32_t e1 = bucket[i].second, e2 = bucket[i + 1].second;
          uint32_t a[3], b[3];
          TriangleIndices(e1 / 3, a);
          TriangleIndices(e2 / 3, b);
          const Vec3 n1 = normal_of(a);
          Vec3 n2 = normal_of(b);
          // Consistent orientation: a shared edge runs in opposite directions.
          if (a[e1 % 3] == b[e2 % 3]) n2 = -n2;
          is_active = Dot(n1, n2) < cos_threshold;
        }
        if (is_active) {
          for (size_t m = i; m < j; ++m) {
            const uint32_t e = bucket[m].second;
            active[e / 3] |= static_cast<uint8_t>(1u << (e % 3));
          }
        }
        i = j;
      }
    }
  }
  for (uint32_t k = 0; k < n; ++k) {
    if (active[k] != 0) {
      StoreBits(packed_.data(), uint64_t{k} * record_bits() + index_bits(), 3, active[k]);
    }
  }
}

}  // namespace hitbox
