#include "geometry/triangle_mesh.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <utility>

#include "geometry/bvh_ray.h"
#include "geometry/sah_split.h"
#include "geometry/triangle_queries.h"
#include "hitbox/format.h"
#include "hitbox/shape/limits.h"

namespace hitbox {
namespace {

/// Per axis, a divisor d (10^k for k in 0..9, or 2^k) with every
/// coordinate v exactly q / d for an integer q, |q| <= 2^53, and the q of the
/// axis within 2^33 of each other; the one whose q span the fewest bits.
/// False when an axis has none (the vertices are then kept as doubles).
bool ChooseDivisors(std::span<const Vec3> vertices, double divisor[3]) {
  for (int a = 0; a < 3; ++a) {
    int best_bits = 64;
    // Decimal: the least k in 0..9 that makes every coordinate an integer.
    double d = 1.0;
    for (int k = 0; k <= 9; ++k, d *= 10.0) {
      bool ok = true;
      double lo = 0.0, hi = 0.0;
      for (size_t i = 0; i < vertices.size() && ok; ++i) {
        const double q = std::nearbyint(vertices[i][a] * d);
        ok = std::fabs(q) <= 0x1p53 && q / d == vertices[i][a];
        lo = i == 0 ? q : std::min(lo, q);
        hi = i == 0 ? q : std::max(hi, q);
      }
      if (!ok) continue;
      const int bits = static_cast<int>(std::ceil(std::log2(hi - lo + 1.0)));
      if (bits <= 33) {
        best_bits = bits;
        divisor[a] = d;
      }
      break;
    }
    // Binary: 2^k for the most fraction bits any coordinate has.
    int k = 0;
    for (const Vec3& v : vertices) {
      const double x = v[a];
      if (x == 0.0) continue;
      int e = 0;
      const double m = std::frexp(x, &e);  // x = m 2^e, m 53 bits
      const uint64_t mant = static_cast<uint64_t>(std::fabs(std::ldexp(m, 53)));
      k = std::max(k, 53 - std::countr_zero(mant) - e);
    }
    if (k <= 1000) {
      const double d2 = std::ldexp(1.0, k);
      double lo = 0.0, hi = 0.0;
      bool ok = std::isfinite(d2);
      for (size_t i = 0; i < vertices.size() && ok; ++i) {
        const double q = vertices[i][a] * d2;
        ok = std::fabs(q) <= 0x1p53;
        lo = i == 0 ? q : std::min(lo, q);
        hi = i == 0 ? q : std::max(hi, q);
      }
      if (ok) {
        const int bits = static_cast<int>(std::ceil(std::log2(hi - lo + 1.0)));
        if (bits <= 33 && bits < best_bits) {
          best_bits = bits;
          divisor[a] = d2;
        }
      }
    }
    if (best_bits > 33) return false;
  }
  return true;
}

/// True when x is exactly a float32 value: read off its bits (GCC 12 at -O3
/// was seen to fold a double -> float -> double round trip in vector code).
bool IsExactFloat(double x) {
  if (x == 0.0) return true;
  const uint64_t b = std::bit_cast<uint64_t>(x);
  const int e = static_cast<int>((b >> 52) & 0x7ff) - 1023;
  if (e > 127 || e < -149) return false;  // beyond float's range (inf and NaN included)
  const int drop = 52 - std::min(23, e + 149);  // fraction bits a float cannot hold
  return (b & ((uint64_t{1} << drop) - 1)) == 0;
}

/// Quantizes coordinate `v` in [lo, lo + 65535 * step] to 16 bits, rounded
/// down (`up` false) or up so that the decoded value bounds v conservatively.
uint16_t Quantize(double v, double lo, double step, bool up) {
  if (step == 0.0) return 0;
  double q = up ? std::ceil((v - lo) / step) : std::floor((v - lo) / step);
  q = std::clamp(q, 0.0, 65535.0);
  if (up) {
    while (q < 65535.0 && lo + q * step < v) q += 1.0;
  } else {
    while (q > 0.0 && lo + q * step > v) q -= 1.0;
  }
  return static_cast<uint16_t>(q);
}

/// Sets bits [bit, bit + count) of `bytes` (zero there) to the low bits of r.
void StoreBits(std::vector<uint8_t>* bytes, uint64_t bit, uint32_t count, PackedRecord r) {
  for (uint32_t i = 0; i < count; ++i) {
    if ((r >> i) & 1u) (*bytes)[(bit + i) >> 3] |= static_cast<uint8_t>(1u << ((bit + i) & 7));
  }
}

}  // namespace

Result<TriangleMesh> TriangleMesh::Build(std::span<const Vec3> vertices,
                                         std::span<const Indices> triangles) {
  if (vertices.empty()) return Error{ErrorCode::kInvalidArgument, "vertices: mesh has no vertices"};
  if (triangles.empty()) {
    return Error{ErrorCode::kInvalidArgument, "triangles: mesh has no triangles"};
  }
  if (vertices.size() > kMaxMeshVertices) {
    return Error{ErrorCode::kInvalidArgument, "vertices: " + std::to_string(vertices.size()) +
                                                  " vertices, at most " +
                                                  std::to_string(kMaxMeshVertices)};
  }
  if (triangles.size() > kMaxMeshTriangles) {
    return Error{ErrorCode::kInvalidArgument, "triangles: " + std::to_string(triangles.size()) +
                                                  " triangles, at most " +
                                                  std::to_string(kMaxMeshTriangles)};
  }
  static const char* const kAxis[3] = {"x", "y", "z"};
  for (size_t i = 0; i < vertices.size(); ++i) {
    for (int a = 0; a < 3; ++a) {
      const double x = vertices[i][a];
      if (!std::isfinite(x)) {
        return Error{ErrorCode::kInvalidArgument,
                     "vertices[" + std::to_string(i) + "][" + std::to_string(a) + "]: " + kAxis[a] +
                         " is not finite (" + FormatDouble(x, 17) + ")"};
      }
      if (!InCoordinateRange(x)) {
        return Error{ErrorCode::kInvalidArgument,
                     "vertices[" + std::to_string(i) + "][" + std::to_string(a) + "]: " + kAxis[a] +
                         " = " + FormatDouble(x, 17) + " out of range (|x| <= " +
                         FormatDouble(kMaxCoordinate, 17) + ")"};
      }
    }
  }
  for (size_t t = 0; t < triangles.size(); ++t) {
    for (int c = 0; c < 3; ++c) {
      if (triangles[t][c] >= vertices.size()) {
        return Error{ErrorCode::kInvalidArgument,
                     "triangles[" + std::to_string(t) + "][" + std::to_string(c) +
                         "]: vertex index " + std::to_string(triangles[t][c]) +
                         " out of range (" + std::to_string(vertices.size()) + " vertices)"};
      }
    }
  }

  TriangleMesh mesh;
  mesh.vertex_count_ = static_cast<uint32_t>(vertices.size());
  if (ChooseDivisors(vertices, mesh.vertex_divisor_)) {
    const double* d = mesh.vertex_divisor_;
    std::vector<std::array<int64_t, 3>> q(vertices.size());
    int64_t qmax[3];
    for (int a = 0; a < 3; ++a) mesh.qmin_[a] = qmax[a] = std::llrint(vertices[0][a] * d[a]);
    for (size_t i = 0; i < vertices.size(); ++i) {
      for (int a = 0; a < 3; ++a) {
        q[i][a] = std::llrint(vertices[i][a] * d[a]);
        mesh.qmin_[a] = std::min(mesh.qmin_[a], q[i][a]);
        qmax[a] = std::max(qmax[a], q[i][a]);
      }
    }
    mesh.vrecord_bits_ = 0;
    for (int a = 0; a < 3; ++a) {
      const uint64_t range = static_cast<uint64_t>(qmax[a] - mesh.qmin_[a]);
      uint8_t b = 0;
      while (b < 33 && (range >> b) != 0) ++b;
      mesh.vaxis_bits_[a] = b;
      mesh.vaxis_mask_[a] = (uint64_t{1} << b) - 1;
      mesh.vaxis_off_[a] = mesh.vrecord_bits_;
      mesh.vrecord_bits_ += b;
    }
    mesh.xy_one_load_ = mesh.vaxis_bits_[0] + mesh.vaxis_bits_[1] <= 57;
    mesh.vpacked_.assign((static_cast<uint64_t>(vertices.size()) * mesh.vrecord_bits_ + 7) / 8 + 16,
                         0);
    for (size_t i = 0; i < vertices.size(); ++i) {
      PackedRecord r = static_cast<uint64_t>(q[i][2] - mesh.qmin_[2]);
      r = (r << mesh.vaxis_bits_[1]) | static_cast<uint64_t>(q[i][1] - mesh.qmin_[1]);
      r = (r << mesh.vaxis_bits_[0]) | static_cast<uint64_t>(q[i][0] - mesh.qmin_[0]);
      StoreBits(&mesh.vpacked_, static_cast<uint64_t>(i) * mesh.vrecord_bits_,
                mesh.vrecord_bits_, r);
    }
  } else if (std::all_of(vertices.begin(), vertices.end(), [](const Vec3& v) {
               return IsExactFloat(v.x) && IsExactFloat(v.y) && IsExactFloat(v.z);
             })) {
    mesh.fvertices_.reserve(3 * vertices.size());
    for (const Vec3& v : vertices) {
      for (int a = 0; a < 3; ++a) mesh.fvertices_.push_back(static_cast<float>(v[a]));
    }
  } else {
    mesh.dvertices_.assign(vertices.begin(), vertices.end());
  }

  // Keep triangles of non-zero area (computed on the stored vertices).
  std::vector<Indices> kept;
  std::vector<uint32_t> original;
  kept.reserve(triangles.size());
  original.reserve(triangles.size());
  for (size_t t = 0; t < triangles.size(); ++t) {
    const Indices& tri = triangles[t];
    const Vec3 a = mesh.Vertex(tri[0]), b = mesh.Vertex(tri[1]), c = mesh.Vertex(tri[2]);
    if (Cross(b - a, c - a).LengthSq() == 0.0) {
      mesh.dropped_.emplace_back(static_cast<uint32_t>(t), tri);
      continue;
    }
    kept.push_back(tri);
    original.push_back(static_cast<uint32_t>(t));
  }
  mesh.dropped_.shrink_to_fit();
  mesh.input_triangles_ = static_cast<uint32_t>(triangles.size());
  if (kept.empty()) {
    return Error{ErrorCode::kInvalidArgument,
                 "triangles: all " + std::to_string(triangles.size()) + " triangles have zero area"};
  }
  const size_t n = kept.size();

  // Active edges: group the 3n directed edges by their undirected key.
  struct EdgeRef {
    uint64_t key;
    uint32_t tri;
    uint32_t slot;
  };
  std::vector<EdgeRef> edges;
  edges.reserve(3 * n);
  for (uint32_t t = 0; t < n; ++t) {
    for (uint32_t s = 0; s < 3; ++s) {
      const uint64_t p = kept[t][s], q = kept[t][(s + 1) % 3];
      edges.push_back({(std::min(p, q) << 32) | std::max(p, q), t, s});
    }
  }
  std::sort(edges.begin(), edges.end(), [](const EdgeRef& x, const EdgeRef& y) {
    return x.key != y.key ? x.key < y.key : x.tri < y.tri;
  });
  std::vector<uint8_t> active(n, 0);
  const double cos_threshold = std::cos(kActiveEdgeAngle);
  auto normal_of = [&](uint32_t t) {
    return TriangleNormal(mesh.Vertex(kept[t][0]), mesh.Vertex(kept[t][1]),
                          mesh.Vertex(kept[t][2]));
  };
  for (size_t i = 0; i < edges.size();) {
    size_t j = i;
    while (j < edges.size() && edges[j].key == edges[i].key) ++j;
    bool is_active = true;
    if (j - i == 2) {
      const EdgeRef& e1 = edges[i];
      const EdgeRef& e2 = edges[i + 1];
      Vec3 n1 = normal_of(e1.tri);
      Vec3 n2 = normal_of(e2.tri);
      // Consistent orientation: a shared edge runs in opposite directions.
      if (kept[e1.tri][e1.slot] == kept[e2.tri][e2.slot]) n2 = -n2;
      is_active = Dot(n1, n2) < cos_threshold;
    }
    if (is_active) {
      for (size_t k = i; k < j; ++k) active[edges[k].tri] |= static_cast<uint8_t>(1u << edges[k].slot);
    }
    i = j;
  }

  // Hierarchy over triangle boxes; triangles are then stored in leaf order.
  std::vector<Aabb> boxes(n);
  for (size_t t = 0; t < n; ++t) {
    boxes[t] = Aabb().Union(mesh.Vertex(kept[t][0])).Union(mesh.Vertex(kept[t][1]))
                   .Union(mesh.Vertex(kept[t][2]));
    mesh.bounds_ = mesh.bounds_.Union(boxes[t]);
  }
  std::vector<uint32_t> order(n);
  for (uint32_t t = 0; t < n; ++t) order[t] = t;
  mesh.BuildHierarchy(&order, boxes);
  auto bits_for = [](uint64_t count) {  // bits to hold 0..count-1 (at least 1)
    uint8_t b = 1;
    while (b < 32 && (uint64_t{1} << b) < count) ++b;
    return b;
  };
  mesh.triangle_count_ = static_cast<uint32_t>(n);
  mesh.vbits_ = bits_for(vertices.size());
  mesh.obits_ = bits_for(triangles.size());
  mesh.vmask_ = static_cast<uint32_t>((uint64_t{1} << mesh.vbits_) - 1);
  mesh.omask_ = static_cast<uint32_t>((uint64_t{1} << mesh.obits_) - 1);
  // Signed differences of the second and third index from the first: the
  // bits for the largest, or the index width (differences modulo 2^vbits_).
  int64_t widest = 0;
  for (const Indices& tri : kept) {
    for (int c = 1; c < 3; ++c) {
      const int64_t d = static_cast<int64_t>(tri[c]) - static_cast<int64_t>(tri[0]);
      widest = std::max(widest, d < 0 ? -d - 1 : d);  // two's complement magnitude
    }
  }
  mesh.dbits_ = 1;
  while (mesh.dbits_ < mesh.vbits_ && (widest >> (mesh.dbits_ - 1)) != 0) ++mesh.dbits_;
  mesh.dmask_ = static_cast<uint32_t>((uint64_t{1} << mesh.dbits_) - 1);
  mesh.wide_ = mesh.record_bits() + 7 > 64;
  mesh.narrow_indices_ = mesh.index_bits() <= 57;
  mesh.packed_.assign((static_cast<uint64_t>(n) * mesh.record_bits() + 7) / 8 + 16, 0);
  for (size_t k = 0; k < n; ++k) {
    const uint32_t t = order[k];
    mesh.SetRecord(static_cast<uint32_t>(k), kept[t], active[t], original[t]);
  }
  return mesh;
}

void TriangleMesh::BuildHierarchy(std::vector<uint32_t>* order, const std::vector<Aabb>& boxes) {
  // The least power of two step with min + 65535 * step >= max: q * step is
  // then exact, so a decoded bound min + q * step is one rounding, fused or
  // not, in Quantize here and in the traversals alike.
  for (int a = 0; a < 3; ++a) {
    const double extent = bounds_.max[a] - bounds_.min[a];
    double s = 0.0;
    if (extent > 0.0) {
      int e = 0;
      std::frexp(extent / 65535.0, &e);
      s = std::ldexp(1.0, e - 1);
      while (s > std::numeric_limits<double>::denorm_min() &&
             bounds_.min[a] + 65535.0 * (s * 0.5) >= bounds_.max[a]) {
        s *= 0.5;
      }
      while (bounds_.min[a] + 65535.0 * s < bounds_.max[a]) s *= 2.0;
    }
    step_[a] = s;
  }
  nodes_.clear();
  nodes_.reserve(order->size() / (kMeshLeafSize * (kMeshNodeWidth - 1)) + 2);
  const uint32_t root = BuildNode(order, boxes, 0, static_cast<uint32_t>(order->size()), 1);
  if (root & kLeafBit) {
    // Too few triangles for a split: a root node with the one leaf.
    Node node;
    for (int a = 0; a < 3; ++a) {
      for (uint32_t i = 0; i < kMeshNodeWidth; ++i) {
        node.min[a][i] = 65535;
        node.max[a][i] = 0;
      }
      node.min[a][0] = Quantize(bounds_.min[a], bounds_.min[a], step_[a], false);
      node.max[a][0] = Quantize(bounds_.max[a], bounds_.min[a], step_[a], true);
    }
    for (uint32_t i = 0; i < kMeshNodeWidth; ++i) node.child[i] = kEmpty;
    node.child[0] = root;
    nodes_.push_back(node);
  }
  nodes_.shrink_to_fit();
}

uint32_t TriangleMesh::BuildNode(std::vector<uint32_t>* order, const std::vector<Aabb>& boxes,
                                 uint32_t begin, uint32_t end, uint32_t depth) {
  const uint32_t count = end - begin;
  if (count <= kMeshLeafSize) return kLeafBit | (begin << 3) | (count - 1);
  height_ = std::max(height_, depth);
  std::vector<uint32_t>& ord = *order;
  // Node levels of a balanced subtree over `count` triangles.
  const uint32_t leaves = (count + kMeshLeafSize - 1) / kMeshLeafSize;
  uint32_t per_child = 1, levels = 1;
  while (per_child * kMeshNodeWidth < leaves) {
    per_child *= kMeshNodeWidth;
    ++levels;
  }
  uint32_t bounds[kMeshNodeWidth + 1];
  uint32_t parts = 1;
  bounds[0] = begin;
  bounds[1] = end;
  if (depth + 1 + levels <= kMeshMaxDepth) {
    // Surface area heuristic: split the widest range that needs a node of its
    // own in two, until there are four; else one whose leaves all fit in the
    // slots left (fewer, fuller nodes). Any child can still be built balanced
    // within kMeshMaxDepth.
    const auto splittable = [&](uint32_t n, bool big) {
      const uint32_t leaves_of = (n + kMeshLeafSize - 1) / kMeshLeafSize;
      return big ? n > kMeshLeafSize * kMeshNodeWidth
                 : n > kMeshLeafSize && leaves_of - 1 <= kMeshNodeWidth - parts;
    };
    while (parts < kMeshNodeWidth) {
      int widest = -1;
      double widest_area = -1.0;
      bool big = false;
      for (uint32_t i = 0; i < parts; ++i) big |= splittable(bounds[i + 1] - bounds[i], true);
      for (uint32_t i = 0; i < parts; ++i) {
        if (!splittable(bounds[i + 1] - bounds[i], big)) continue;
        Aabb box;
        for (uint32_t k = bounds[i]; k < bounds[i + 1]; ++k) box = box.Union(boxes[ord[k]]);
        if (box.SurfaceArea() > widest_area) {
          widest_area = box.SurfaceArea();
          widest = static_cast<int>(i);
        }
      }
      if (widest < 0) break;
      const uint32_t b = bounds[widest], e = bounds[widest + 1];
      // Cut at whole bottom nodes (four full leaves) where both sides can
      // hold two, else at whole leaves: fewer, fuller nodes.
      const uint32_t granule = e - b > 2 * kMeshLeafSize * kMeshNodeWidth
                                   ? kMeshLeafSize * kMeshNodeWidth
                                   : kMeshLeafSize;
      const uint32_t m = b + SahSplit(std::span<uint32_t>(ord).subspan(b, e - b), boxes, granule);
      for (uint32_t i = parts + 1; i > static_cast<uint32_t>(widest) + 1; --i) bounds[i] = bounds[i - 1];
      bounds[widest + 1] = m;
      ++parts;
    }
  } else {
    // Balanced: children are full subtrees of `chunk` triangles (the least
    // power of four leaves that makes at most four children; the last holds
    // the rest), cut by median splits, half the chunks to each side.
    auto split = [&](uint32_t b, uint32_t e, uint32_t mid) {
      Aabb centroids;
      for (uint32_t k = b; k < e; ++k) centroids = centroids.Union(boxes[ord[k]].Center());
      const Vec3 ext = centroids.max - centroids.min;
      const int axis = (ext.x >= ext.y && ext.x >= ext.z) ? 0 : (ext.y >= ext.z ? 1 : 2);
      std::nth_element(ord.begin() + b, ord.begin() + mid, ord.begin() + e,
                       [&](uint32_t x, uint32_t y) {
                         const double cx = boxes[x].min[axis] + boxes[x].max[axis];
                         const double cy = boxes[y].min[axis] + boxes[y].max[axis];
                         return cx != cy ? cx < cy : x < y;
                       });
      return mid;
    };
    const uint32_t chunk = per_child * kMeshLeafSize;
    parts = (count + chunk - 1) / chunk;
    bounds[parts] = end;
    auto partition = [&](auto&& self_fn, uint32_t first_part, uint32_t part_count) -> void {
      if (part_count <= 1) return;
      const uint32_t left = (part_count + 1) / 2;
      bounds[first_part + left] = split(bounds[first_part], bounds[first_part + part_count],
                                        begin + (first_part + left) * chunk);
      self_fn(self_fn, first_part, left);
      self_fn(self_fn, first_part + left, part_count - left);
    };
    partition(partition, 0, parts);
  }
  const uint32_t self = static_cast<uint32_t>(nodes_.size());
  nodes_.emplace_back();
  for (uint32_t i = 0; i < kMeshNodeWidth; ++i) {
    Node& node = nodes_[self];
    if (i >= parts) {
      for (int a = 0; a < 3; ++a) {
        node.min[a][i] = 65535;
        node.max[a][i] = 0;
      }
      node.child[i] = kEmpty;
      continue;
    }
    Aabb box;
    for (uint32_t k = bounds[i]; k < bounds[i + 1]; ++k) box = box.Union(boxes[ord[k]]);
    for (int a = 0; a < 3; ++a) {
      node.min[a][i] = Quantize(box.min[a], bounds_.min[a], step_[a], false);
      node.max[a][i] = Quantize(box.max[a], bounds_.min[a], step_[a], true);
    }
    const uint32_t word = BuildNode(order, boxes, bounds[i], bounds[i + 1], depth + 1);
    nodes_[self].child[i] = word;  // nodes_ may have grown: index again
  }
  return self;
}

void TriangleMesh::QueryRange(const Aabb& box, int32_t qlo[3], int32_t qhi[3]) const {
  for (int a = 0; a < 3; ++a) {
    const double lo = bounds_.min[a], s = step_[a];
    if (s == 0.0) {  // flat axis: every child box is [lo, lo], inside box's range
      qlo[a] = 0;
      qhi[a] = 65535;
      continue;
    }
    auto decode = [&](int32_t q) { return lo + static_cast<double>(q) * s; };
    // Least q with decode(q) >= box.min, greatest with decode(q) <= box.max
    // (decode is non-decreasing); the estimates are off by a step at most.
    int32_t q = static_cast<int32_t>(std::clamp(std::ceil((box.min[a] - lo) / s), 0.0, 65535.0));
    while (q > 0 && decode(q - 1) >= box.min[a]) --q;
    while (q < 65535 && decode(q) < box.min[a]) ++q;
    qlo[a] = q;
    q = static_cast<int32_t>(std::clamp(std::floor((box.max[a] - lo) / s), 0.0, 65535.0));
    while (q < 65535 && decode(q + 1) <= box.max[a]) ++q;
    while (q > 0 && decode(q) > box.max[a]) --q;
    qhi[a] = q;
  }
}

void TriangleMesh::SetRecord(uint32_t k, const Indices& tri, EdgeFlags flags,
                             uint32_t original) {
  PackedRecord r = original;
  r = (r << 3) | flags;
  for (int c = 2; c >= 1; --c) r = (r << dbits_) | ((tri[c] - tri[0]) & dmask_);
  r = (r << vbits_) | tri[0];
  StoreBits(&packed_, static_cast<uint64_t>(k) * record_bits(), record_bits(), r);
}

TriangleMesh::RaySetup TriangleMesh::SetupRay(const Vec3& origin, const Vec3& dir) const {
  // The exact distance of a decoded bound b = lo + q * step (one rounding,
  // |error| <= 2^-53 |b|) on an axis the ray moves along is
  // (b - o) / d = t_lo + q * S, t_lo = (lo - o) / d and S = step / d. In
  // float, near = fl(fl(t_lo) + fl(q * fl(S))) adds at most four roundings
  // of 2^-24 relative to terms bounded by reach = |t_lo| + 65535 |S| (the
  // doubles t_lo and S are a few 2^-53 off): |near - exact| < 2^-22 reach +
  // 2^-52 max|b| / |d|, which the per-axis slack below bounds with room to
  // spare. Widening every axis's distances by the largest slack commutes
  // with the max / min of the slab test, so RayChildren widens once; the
  // extra 2^-21 absorbs the rounding of that widening for |t| <= 2 (larger
  // entries fail t_max <= 1 anyway). The widened test keeps every box the
  // exact ray meets, and its entry stays a lower bound (Ize, "Robust BVH Ray
  // Traversal", JCGT 2(2), 2013, for the same argument in its own terms).
  //
  // An axis the ray does not move along keeps the boxes that hold the origin
  // there: QueryRange gives [qlo, qhi], the quantized bounds that decode to
  // >= o and <= o (exactly for o in the bounds, conservatively outside), and
  // near = (q_min - qhi - 0.5) * 2^100, far = (q_max - qlo + 0.5) * 2^100,
  // both exact in float: at most -2^99 or at least 2^99 so that the box
  // is dropped exactly when it does not hold o. An axis whose distances
  // would leave the float range (a direction component ~2^-100 of the
  // distances) is not tested at all (near -2^101, far 2^101).
  constexpr double kHuge = 0x1p100;
  RaySetup r;
  r.miss = false;
  double slack = 0.0;
  bool ranged = false;
  int32_t qlo[3], qhi[3];
  for (uint32_t a = 0; a < 3; ++a) {
    const double lo = bounds_.min[a], s = step_[a];
    const double o = origin[a], d = dir[a];
    r.near_off[a] = a * kMeshNodeWidth;
    r.far_off[a] = 3 * kMeshNodeWidth + a * kMeshNodeWidth;
    if (d == 0.0) {
      // A flat axis decodes to lo: only a ray at lo meets a box.
      if (s == 0.0 && o != lo) {
        r.miss = true;
        return r;
      }
      if (!ranged) {
        QueryRange(Aabb{origin, origin}, qlo, qhi);
        ranged = true;
      }
      r.near[a] = _mm_set1_ps(static_cast<float>(-(qhi[a] + 0.5) * kHuge));
      r.far[a] = _mm_set1_ps(static_cast<float>(-(qlo[a] - 0.5) * kHuge));
      r.scale[a] = _mm_set1_ps(static_cast<float>(kHuge));
      continue;
    }
    const double inv = 1.0 / d;
    const double t_lo = (lo - o) * inv;
    const double scale = s * inv;
    const double reach = std::fabs(t_lo) + 65535.0 * std::fabs(scale);
    if (!(reach <= kHuge)) {
      r.near[a] = _mm_set1_ps(static_cast<float>(-2.0 * kHuge));
      r.far[a] = _mm_set1_ps(static_cast<float>(2.0 * kHuge));
      r.scale[a] = _mm_setzero_ps();
      continue;
    }
    if (inv < 0.0) std::swap(r.near_off[a], r.far_off[a]);
    r.near[a] = r.far[a] = _mm_set1_ps(static_cast<float>(t_lo));
    r.scale[a] = _mm_set1_ps(static_cast<float>(scale));
    const double coord = std::max(std::fabs(lo), std::fabs(lo + 65535.0 * s));
    slack = std::max(slack, 0x1p-21 * reach + 0x1p-50 * coord * std::fabs(inv));
  }
  r.slack = _mm_set1_ps(static_cast<float>((slack + 0x1p-21) * (1.0 + 0x1p-20)));
  return r;
}

void TriangleMesh::Input(std::vector<Vec3>* vertices, std::vector<Indices>* triangles) const {
  vertices->resize(vertex_count_);
  for (uint32_t i = 0; i < vertex_count_; ++i) (*vertices)[i] = Vertex(i);
  triangles->resize(input_triangles_);
  for (uint32_t k = 0; k < triangle_count_; ++k) {
    uint32_t idx[3];
    TriangleIndices(k, idx);
    (*triangles)[OriginalIndex(k)] = {idx[0], idx[1], idx[2]};
  }
  for (const auto& [t, tri] : dropped_) (*triangles)[t] = tri;
}

size_t TriangleMesh::MemoryBytes() const {
  return dropped_.capacity() * sizeof(dropped_[0]) + vpacked_.capacity() +
         fvertices_.capacity() * sizeof(float) +
         dvertices_.capacity() * sizeof(Vec3) + packed_.capacity() +
         nodes_.capacity() * sizeof(Node);
}

bool TriangleMesh::RaycastClosest(const Vec3& origin, const Vec3& translation,
                                  MeshRayHit* hit, double max_fraction) const {
  if (translation.LengthSq() == 0.0) return false;
  // One walk per largest axis of the ray: its vertices are sheared with
  // the axes known at compile time (ShearVertexAxes, the same values).
  const WatertightRay ray(origin, translation);
  switch (ray.kz) {
    case 0: return RaycastClosestAxes<0>(origin, translation, ray, hit, max_fraction);
    case 1: return RaycastClosestAxes<1>(origin, translation, ray, hit, max_fraction);
    default: return RaycastClosestAxes<2>(origin, translation, ray, hit, max_fraction);
  }
}

template <int kZ>
bool TriangleMesh::RaycastClosestAxes(const Vec3& origin, const Vec3& translation,
                                      const WatertightRay& ray, MeshRayHit* hit,
                                      double max_fraction) const {
  ShearedVertexCache cache;
  const auto shear = [&](uint32_t i) { return ShearVertexAxes<kZ>(ray, Vertex(i)); };
  double best = std::min(1.0, max_fraction);
  uint32_t best_k = UINT32_MAX;
  uint32_t best_orig = UINT32_MAX;
  VisitRay(origin, translation, &best, [&](uint32_t k) {
    uint32_t idx[3];
    TriangleIndices(k, idx);
    const ShearedVertex a = cache.Get(idx[0], shear);
    const ShearedVertex b = cache.Get(idx[1], shear);
    const ShearedVertex c = cache.Get(idx[2], shear);
    // The hit's fraction over the whole ray, never clamped to the best so
    // far (the test with t_max = best passes a hit a rounding beyond it and
    // clamps it to a tie): the answer then does not depend on the order of
    // the visits, and equals brute force over every triangle.
    TriangleRayHit h;
    if (!RayTriangleSheared(a, b, c, 1.0, &h) || h.t > best) return true;
    const uint32_t orig = OriginalIndex(k);
    if (h.t < best || best_k == UINT32_MAX || orig < best_orig) {
      best = h.t;
      best_k = k;
      best_orig = orig;
    }
    return true;
  });
  if (best_k == UINT32_MAX) return false;
  if (hit != nullptr) {
    Vec3 v[3];
    TriangleVertices(best_k, v);
    const Vec3 nrm = FacingNormal(v[0], v[1], v[2], translation);
    hit->fraction = best;
    hit->normal = nrm;
    hit->triangle = best_orig;
  }
  return true;
}

// ---------------------------------------------------------------------------
// PredictMemoryBytes: what MemoryBytes() will say after Build, without
// building (the server prices a change batch with it before any build). It
// mirrors Build's storage choices step by step; keep the two in step.

size_t TriangleMesh::PredictMemoryBytes(std::span<const Vec3> vertices,
                                        std::span<const Indices> triangles) {
  if (vertices.empty() || triangles.empty()) return 0;
  size_t bytes = 0;
  // Vertices: bit-packed integers (Build's vpacked_), else floats, else doubles.
  double divisor[3];
  if (ChooseDivisors(vertices, divisor)) {
    int64_t qmin[3], qmax[3];
    for (int a = 0; a < 3; ++a) qmin[a] = qmax[a] = std::llrint(vertices[0][a] * divisor[a]);
    for (const Vec3& v : vertices) {
      for (int a = 0; a < 3; ++a) {
        const int64_t q = std::llrint(v[a] * divisor[a]);
        qmin[a] = std::min(qmin[a], q);
        qmax[a] = std::max(qmax[a], q);
      }
    }
    uint64_t record = 0;
    for (int a = 0; a < 3; ++a) {
      const uint64_t range = static_cast<uint64_t>(qmax[a] - qmin[a]);
      uint32_t b = 0;
      while (b < 33 && (range >> b) != 0) ++b;
      record += b;
    }
    bytes += (static_cast<uint64_t>(vertices.size()) * record + 7) / 8 + 16;
  } else if (std::all_of(vertices.begin(), vertices.end(), [](const Vec3& v) {
               return IsExactFloat(v.x) && IsExactFloat(v.y) && IsExactFloat(v.z);
             })) {
    bytes += 3 * vertices.size() * sizeof(float);
  } else {
    bytes += vertices.size() * sizeof(Vec3);
  }
  // Kept triangles (non-zero area on the input vertices, which decode
  // exactly from either storage) and the widest index difference among them.
  uint64_t kept = 0;
  int64_t widest = 0;
  for (const Indices& tri : triangles) {
    if (tri[0] >= vertices.size() || tri[1] >= vertices.size() || tri[2] >= vertices.size()) {
      continue;
    }
    const Vec3 a = vertices[tri[0]], b = vertices[tri[1]], c = vertices[tri[2]];
    if (Cross(b - a, c - a).LengthSq() == 0.0) continue;
    ++kept;
    for (int k = 1; k < 3; ++k) {
      const int64_t diff = static_cast<int64_t>(tri[k]) - static_cast<int64_t>(tri[0]);
      widest = std::max(widest, diff < 0 ? -diff - 1 : diff);
    }
  }
  if (kept == 0) return 0;
  // Packed triangle records.
  auto bits_for = [](uint64_t count) {
    uint32_t b = 1;
    while (b < 32 && (uint64_t{1} << b) < count) ++b;
    return b;
  };
  const uint32_t vbits = bits_for(vertices.size());
  const uint32_t obits = bits_for(triangles.size());
  uint32_t dbits = 1;
  while (dbits < vbits && (widest >> (dbits - 1)) != 0) ++dbits;
  const uint64_t record_bits = vbits + 2u * dbits + 3u + obits;
  bytes += (kept * record_bits + 7) / 8 + 16;
  // Hierarchy nodes: a balanced tree's count (full subtrees of `chunk`
  // triangles), and a fifth more, as the surface area heuristic's trees
  // measure (1.15 to 1.25 times); a lone leaf gets a root node of its own.
  auto nodes = [](auto&& self, uint64_t count) -> uint64_t {
    if (count <= kMeshLeafSize) return 0;
    const uint64_t leaves = (count + kMeshLeafSize - 1) / kMeshLeafSize;
    uint64_t per_child = 1;
    while (per_child * kMeshNodeWidth < leaves) per_child *= kMeshNodeWidth;
    const uint64_t chunk = per_child * kMeshLeafSize;
    const uint64_t parts = (count + chunk - 1) / chunk;
    return 1 + (parts - 1) * self(self, chunk) + self(self, count - (parts - 1) * chunk);
  };
  const uint64_t balanced = nodes(nodes, kept);
  bytes += std::max<uint64_t>(1, balanced + balanced / 5) * sizeof(Node);
  // Dropped triangles are kept aside for Input().
  bytes += (triangles.size() - kept) * sizeof(std::pair<uint32_t, Indices>);
  return bytes;
}

}  // namespace hitbox
