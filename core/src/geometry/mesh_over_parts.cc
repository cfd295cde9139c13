// A merged mesh's hierarchy built over its parts' own leaves (MeshGroups):
// the merged mesh numbers its kept triangles part by part, each part's in
// its own order, so a part's leaf is a run of merged triangles too and the
// merged mesh needs no triangle records (nor vertices) of its own: it reads
// both from the parts. A 4-wide surface-area build takes the parts' tight
// leaves as its items, a loose one's triangles one by one, and the tight
// leaves of a part's bottom node together.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "geometry/mesh_parts.h"
#include "geometry/sah_split.h"
#include "geometry/triangle_mesh.h"
#include "geometry/triangle_mesh_staging.h"

namespace hitbox {
namespace {

/// A leaf (or a node's leaves) is tight when its box's surface area is at
/// most this many times the sum of its triangles' (its leaves') boxes': a
/// part that spreads over a level (one mesh a material) has leaves whose
/// triangles lie apart, and the merged walk must not enter their box.
constexpr double kTightArea = 1.5;

}  // namespace

Result<TriangleMesh> TriangleMesh::BuildOverParts(const internal::MeshParts* parts) {
  if (parts == nullptr || parts->size() == 0) {
    return Error{ErrorCode::kInvalidArgument, "parts: a merged mesh needs at least one part"};
  }
  if (uint64_t{parts->input_triangle_count()} > kMaxMeshTriangles ||
      uint64_t{parts->vertex_count()} > kMaxMeshVertices) {
    return Error{ErrorCode::kInvalidArgument,
                 "parts: " + std::to_string(parts->input_triangle_count()) + " triangles and " +
                     std::to_string(parts->vertex_count()) + " vertices, at most " +
                     std::to_string(kMaxMeshTriangles) + " and " +
                     std::to_string(kMaxMeshVertices)};
  }
  TriangleMesh mesh;
  Staging st;
  mesh.vertex_count_ = parts->vertex_count();
  mesh.triangle_count_ = parts->triangle_count();
  // The parts' vertices: a float form of 0-bit records (16 bytes of
  // padding) whose table is the parts'; their triangles: no records here.
  mesh.flt_ = FloatForm{};
  mesh.flt_.parts = parts;
  mesh.part_triangles_ = true;
  mesh.narrow_indices_ = false;
  st.fpacked.assign(16, 0);
  mesh.View(&st);

  // The items of the build, groups of leaves: a part's tight leaf, or the
  // tight leaves of a node of leaves only when they are tight together (one
  // run of triangles: a bottom node here too), or a loose leaf's triangles
  // one by one. Leaves are runs of merged kept triangles [first, first +
  // count) with their exact boxes.
  struct Leaf {
    uint32_t first, count;
    Aabb box;
  };
  struct Group {
    uint32_t begin, end;  // into leaves
  };
  std::vector<Leaf> leaves;
  std::vector<Group> groups;
  for (uint32_t p = 0; p < parts->size(); ++p) {
    const TriangleMesh& part = *parts->part(p);
    const uint32_t base = parts->triangle_base(p);
    part.ForEachLeafGroup([&](const uint32_t* words, uint32_t count) {
      const auto begin = static_cast<uint32_t>(leaves.size());
      bool run = true;
      double leaf_areas = 0.0;
      for (uint32_t i = 0; i < count; ++i) {
        const LeafRange r = LeafTriangles(words[i]);
        Aabb box, tri_box[8];  // a leaf word holds at most 8
        double tri_areas = 0.0;
        for (uint32_t k = r.first; k < r.end; ++k) {
          Vec3 v[3];
          part.TriangleVertices(k, v);
          tri_box[k - r.first] = Aabb().Union(v[0]).Union(v[1]).Union(v[2]);
          tri_areas += tri_box[k - r.first].SurfaceArea();
          box = box.Union(tri_box[k - r.first]);
        }
        mesh.bounds_ = mesh.bounds_.Union(box);
        if (r.end - r.first == 1 || box.SurfaceArea() <= kTightArea * tri_areas) {
          leaves.push_back({base + r.first, r.end - r.first, box});
          leaf_areas += box.SurfaceArea();
          continue;
        }
        // A loose leaf (triangles far apart): a leaf per triangle.
        run = false;
        for (uint32_t k = r.first; k < r.end; ++k) {
          leaves.push_back({base + k, 1, tri_box[k - r.first]});
        }
      }
      std::sort(leaves.begin() + begin, leaves.end(),
                [](const Leaf& x, const Leaf& y) { return x.first < y.first; });
      Aabb group_box;
      for (size_t i = begin; i < leaves.size(); ++i) {
        group_box = group_box.Union(leaves[i].box);
        if (i > begin) run &= leaves[i].first == leaves[i - 1].first + leaves[i - 1].count;
      }
      run &= group_box.SurfaceArea() <= kTightArea * leaf_areas;
      // Not one tight run: a group per leaf.
      for (uint32_t i = begin; i < leaves.size(); ++i) {
        if (run) {
          if (i == begin) groups.push_back({begin, static_cast<uint32_t>(leaves.size())});
        } else {
          groups.push_back({i, i + 1});
        }
      }
    });
  }
  mesh.SetBoxSteps();
  BuildBoxes boxes(groups.size(), mesh.bounds_.min, mesh.Steps());
  for (size_t g = 0; g < groups.size(); ++g) {
    Aabb box;
    for (uint32_t i = groups[g].begin; i < groups[g].end; ++i) box = box.Union(leaves[i].box);
    boxes.Set(g, box);
  }

  const auto leaf_word = [&](uint32_t i) {
    return kLeafBit | (leaves[i].first << 3) | (leaves[i].count - 1);
  };
  // A node over `count` leaves (a group of several, or single-leaf groups),
  // in merged order: one run of them makes a bottom node.
  const auto add_node = [&](const uint32_t* leaf, uint32_t count) {
    const auto index = static_cast<uint32_t>(st.nodes.size());
    Node& node = st.nodes.emplace_back();
    for (uint32_t i = 0; i < kMeshNodeWidth; ++i) {
      if (i < count) {
        mesh.SetChildBox(&node, i, leaves[leaf[i]].box);
        node.child[i] = leaf_word(leaf[i]);
        continue;
      }
      ClearChild(&node, i);
    }
    return index;
  };
  std::vector<uint32_t> order(groups.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  st.nodes.reserve(groups.size() / 2 + 2);
  // The subtree over groups order[begin, end): surface-area splits into up
  // to four children, the widest split first, while a balanced subtree
  // below still fits kMeshMaxDepth; then halves by count along the
  // centroids' longest axis. A child of one group is its leaf or a node of
  // its leaves.
  const auto build = [&](const auto& self, uint32_t begin, uint32_t end,
                         uint32_t depth) -> uint32_t {
    if (end - begin == 1) {
      const Group& g = groups[order[begin]];
      if (g.end - g.begin == 1) return leaf_word(g.begin);
      mesh.height_ = static_cast<uint8_t>(std::max<uint32_t>(mesh.height_, depth));
      uint32_t leaf[kMeshNodeWidth];
      for (uint32_t i = g.begin; i < g.end; ++i) leaf[i - g.begin] = i;
      return add_node(leaf, g.end - g.begin);
    }
    uint32_t levels = 2;  // a group's node below
    for (uint64_t span = kMeshNodeWidth; span < end - begin; span *= kMeshNodeWidth) ++levels;
    const bool balanced = depth + levels > kMeshMaxDepth;
    const auto area = [&](uint32_t b, uint32_t e) {
      Aabb box;
      for (uint32_t k = b; k < e; ++k) box = box.Union(boxes[order[k]]);
      return box.SurfaceArea();
    };
    uint32_t bounds[kMeshNodeWidth + 1] = {begin, end};
    uint32_t count = 1;
    while (count < kMeshNodeWidth) {
      // A part of more items than a node holds needs a node of its own
      // anyway: those are split first; then only a part whose items all
      // fit in the slots left (fewer, fuller nodes).
      bool big = false;
      for (uint32_t i = 0; i < count; ++i) big |= bounds[i + 1] - bounds[i] > kMeshNodeWidth;
      int widest = -1;
      double widest_area = -1.0;
      for (uint32_t i = 0; i < count; ++i) {
        const uint32_t n = bounds[i + 1] - bounds[i];
        const bool splittable = big ? n > kMeshNodeWidth : n > 1 && n - 1 <= kMeshNodeWidth - count;
        const double a = balanced ? static_cast<double>(n) : area(bounds[i], bounds[i + 1]);
        if (splittable && a > widest_area) {
          widest_area = a;
          widest = static_cast<int>(i);
        }
      }
      if (widest < 0) break;
      const uint32_t b = bounds[widest], e = bounds[widest + 1];
      uint32_t m;
      if (!balanced) {
        m = b + SahSplit(std::span<uint32_t>(order).subspan(b, e - b), boxes, 1);
      } else {
        Aabb centroids;
        for (uint32_t k = b; k < e; ++k) centroids = centroids.Union(boxes[order[k]].Center());
        const Vec3 ext = centroids.max - centroids.min;
        const int axis = (ext.x >= ext.y && ext.x >= ext.z) ? 0 : (ext.y >= ext.z ? 1 : 2);
        m = b + (e - b) / 2;
        std::nth_element(order.begin() + b, order.begin() + m, order.begin() + e,
                         [&](uint32_t x, uint32_t y) {
                           const double cx = boxes[x].min[axis] + boxes[x].max[axis];
                           const double cy = boxes[y].min[axis] + boxes[y].max[axis];
                           return cx != cy ? cx < cy : x < y;
                         });
      }
      for (uint32_t i = count + 1; i > static_cast<uint32_t>(widest) + 1; --i) {
        bounds[i] = bounds[i - 1];
      }
      bounds[widest + 1] = m;
      ++count;
    }
    mesh.height_ = static_cast<uint8_t>(std::max<uint32_t>(mesh.height_, depth));
    bool single_leaves = end - begin == count;
    for (uint32_t k = begin; k < end && single_leaves; ++k) {
      single_leaves = groups[order[k]].end - groups[order[k]].begin == 1;
    }
    if (single_leaves) {
      uint32_t leaf[kMeshNodeWidth];
      for (uint32_t k = begin; k < end; ++k) leaf[k - begin] = groups[order[k]].begin;
      std::sort(leaf, leaf + count,
                [&](uint32_t x, uint32_t y) { return leaves[x].first < leaves[y].first; });
      return add_node(leaf, count);
    }
    return mesh.AddNode(boxes, order, bounds, count, &st, [&](uint32_t i) {
      return self(self, bounds[i], bounds[i + 1], depth + 1);
    });
  };
  const uint32_t root = build(build, 0, static_cast<uint32_t>(order.size()), 1);
  if (root & kLeafBit) mesh.AddRootOverLeaf(root, &st);
  boxes.Free();
  mesh.Seal(&st);
  return mesh;
}

}  // namespace hitbox
