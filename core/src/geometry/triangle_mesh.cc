#include "geometry/triangle_mesh.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "geometry/box_grid.h"
#include "geometry/bvh_ray.h"
#include "geometry/mesh_parts.h"
#include "geometry/mesh_vertices.h"
#include "geometry/sah_split.h"
#include "geometry/triangle_mesh_staging.h"
#include "geometry/triangle_queries.h"
#include "hitbox/format.h"
#include "hitbox/limits.h"

namespace hitbox {
namespace {

/// Bits to hold 0..count-1 (at least 1, at most 32).
uint8_t BitsFor(uint64_t count) {
  return count <= 2 ? 1 : static_cast<uint8_t>(std::min<uint64_t>(32, std::bit_width(count - 1)));
}

/// How a mesh keeps its triangles' original indices: as they are (`base`
/// empty, `bits` of an index), or as residuals of base[i0 >> shift] + (i0
/// mod 2^shift) * slope / 2^16 (i0 the first vertex index), `bits` each.
struct OriginalPlan {
  uint32_t slope = 0;
  std::vector<uint32_t> base;
  uint8_t bits = 1;
  /// The record field of kept triangle (i0, original).
  uint32_t Field(uint32_t i0, uint32_t original) const {
    if (base.empty()) return original;
    return original - base[i0 >> kMeshOriginalShift] - Local(i0);
  }
  uint32_t Local(uint32_t i0) const {
    return static_cast<uint32_t>((uint64_t{i0 & ((1u << kMeshOriginalShift) - 1)} * slope) >> 16);
  }
};

/// The prediction of original indices for the kept triangles for_each(f)
/// lists as f(i0, original): a base per block of 2^kMeshOriginalShift
/// vertices, the least over the block, so residuals are unsigned. It pays
/// when the triangles come roughly in the order of their first vertex (a
/// grid's rows, many exporters' fans); PlanRecords weighs it.
template <typename ForEach>
OriginalPlan PredictOriginals(size_t vertices, size_t input_triangles, ForEach&& for_each) {
  OriginalPlan plan;
  // Triangles per vertex (16.16), capped so that a block's span stays in 32 bits.
  plan.slope = static_cast<uint32_t>(
      std::min<uint64_t>((uint64_t{input_triangles} << 16) / vertices, uint64_t{1} << 24));
  std::vector<int64_t> least(((vertices - 1) >> kMeshOriginalShift) + 1,
                             std::numeric_limits<int64_t>::max());
  for_each([&](uint32_t i0, uint32_t original) {
    int64_t& m = least[i0 >> kMeshOriginalShift];
    m = std::min(m, int64_t{original} - int64_t{plan.Local(i0)});
  });
  plan.base.resize(least.size());
  for (size_t j = 0; j < least.size(); ++j) {
    plan.base[j] = least[j] == std::numeric_limits<int64_t>::max()
                       ? 0u
                       : static_cast<uint32_t>(static_cast<uint64_t>(least[j]));
  }
  return plan;
}

/// Bits of the signed difference field that holds both index differences
/// of `tri`, its most negative value kept for the escape: at `vbits` the
/// differences are taken modulo 2^vbits; vbits + 1 when even that cannot
/// hold them (the escape's own value).
uint32_t DiffBits(const TriangleMesh::Indices& tri, uint32_t vbits) {
  uint32_t need = 1;
  for (int c = 1; c < 3; ++c) {
    const int64_t d = static_cast<int64_t>(tri[c]) - static_cast<int64_t>(tri[0]);
    const uint64_t mag = static_cast<uint64_t>(d < 0 ? -d : d);
    uint32_t b = mag == 0 ? 1u : static_cast<uint32_t>(std::bit_width(mag)) + 1u;
    if (b > vbits) {
      const uint64_t mod = static_cast<uint64_t>(d) & ((uint64_t{1} << vbits) - 1);
      b = mod == uint64_t{1} << (vbits - 1) ? vbits + 1 : vbits;
    }
    need = std::max(need, b);
  }
  return need;
}

/// The triangle records' layout: the original indices (`originals`), the
/// bits of the index differences, and how many triangles escape it (their
/// differences or original field too wide: kept apart in full, so that a
/// few far-apart triangles do not widen every record).
struct RecordPlan {
  OriginalPlan originals;
  uint32_t vbits = 1;
  uint32_t dbits = 1;
  uint64_t escaped = 0;
  bool Escapes(const TriangleMesh::Indices& tri, uint32_t original) const {
    return DiffBits(tri, vbits) > dbits ||
           BitsFor(uint64_t{originals.Field(tri[0], original)} + 1) > originals.bits;
  }
  uint64_t RecordBits() const { return vbits + 2 * dbits + 3 + originals.bits; }
};

}  // namespace

uint32_t TriangleMesh::EscapeBitsFor(uint64_t kept, uint32_t vbits, uint64_t input_triangles) {
  return BitsFor(kept) + 2 * vbits + BitsFor(input_triangles);
}

namespace {

/// The cheapest RecordPlan, bits of the records, the bases and the escaped
/// triangles together, for the kept triangles for_each(f) lists as
/// f(indices, original).
template <typename ForEach>
RecordPlan PlanRecords(size_t vertices, size_t input_triangles, uint64_t kept,
                       ForEach&& for_each) {
  RecordPlan plan;
  plan.vbits = BitsFor(vertices);
  OriginalPlan predicted = PredictOriginals(vertices, input_triangles, [&](auto&& f) {
    for_each([&](const TriangleMesh::Indices& tri, uint32_t original) { f(tri[0], original); });
  });
  // Triangles by (difference bits, field bits), as they are and predicted.
  constexpr int kD = 34, kO = 33;
  std::vector<uint64_t> count(2 * kD * kO, 0);
  for_each([&](const TriangleMesh::Indices& tri, uint32_t original) {
    const uint32_t d = DiffBits(tri, plan.vbits);
    ++count[(0 * kD + d) * kO + BitsFor(uint64_t{original} + 1)];
    ++count[(1 * kD + d) * kO + BitsFor(uint64_t{predicted.Field(tri[0], original)} + 1)];
  });
  // Prefix sums: count[m][d][o] = triangles with at most d and o bits.
  for (int m = 0; m < 2; ++m) {
    for (int d = 0; d < kD; ++d) {
      for (int o = 0; o < kO; ++o) {
        uint64_t& c = count[(m * kD + d) * kO + o];
        if (d > 0) c += count[(m * kD + d - 1) * kO + o];
        if (o > 0) c += count[(m * kD + d) * kO + o - 1];
        if (d > 0 && o > 0) c -= count[(m * kD + d - 1) * kO + o - 1];
      }
    }
  }
  // The cheapest layout, and the cheapest without escapes: escapes slow
  // every decode of the mesh (an out-of-line path), so they are taken only
  // when they save at least kEscapeGainBits a triangle.
  constexpr uint64_t kEscapeGainBits = 4;
  uint64_t best = std::numeric_limits<uint64_t>::max(), best_whole = best;
  int best_m = 0, whole_m = 0;
  uint32_t best_d = plan.vbits, best_o = 32, whole_d = plan.vbits, whole_o = 32;
  const uint32_t raw_bits = BitsFor(input_triangles);
  const uint64_t escape_bits = TriangleMesh::EscapeBitsFor(kept, plan.vbits, input_triangles);
  for (int m = 0; m < 2; ++m) {
    const uint64_t bases = m == 0 ? 0 : 32 * predicted.base.size();
    for (uint32_t d = 1; d <= plan.vbits; ++d) {
      for (uint32_t o = 1; o <= (m == 0 ? raw_bits : 32u); ++o) {
        const uint64_t fit = count[(m * kD + d) * kO + o];
        const uint64_t cost =
            kept * (plan.vbits + 2 * d + 3 + o) + escape_bits * (kept - fit) + bases;
        if (cost < best) {
          best = cost;
          best_m = m;
          best_d = d;
          best_o = o;
        }
        if (fit == kept && cost < best_whole) {
          best_whole = cost;
          whole_m = m;
          whole_d = d;
          whole_o = o;
        }
      }
    }
  }
  if (best + kEscapeGainBits * kept > best_whole) {
    best_m = whole_m;
    best_d = whole_d;
    best_o = whole_o;
  }
  if (best_m == 1) plan.originals = std::move(predicted);
  plan.originals.base.shrink_to_fit();
  plan.originals.bits = static_cast<uint8_t>(best_o);
  plan.dbits = best_d;
  plan.escaped = kept - count[(best_m * kD + best_d) * kO + best_o];
  return plan;
}

}  // namespace

Result<TriangleMesh> TriangleMesh::Build(mesh_vertices::VertexInput vertices,
                                         std::span<const Indices> triangles,
                                         std::vector<Vec3>* spent_vertices,
                                         std::vector<Indices>* spent_triangles,
                                         std::vector<float>* spent_floats,
                                         std::vector<int32_t>* spent_decimals) {
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
  Staging st;
  mesh.vertex_count_ = static_cast<uint32_t>(vertices.size());
  {
    mesh_vertices::VertexPlan plan = mesh_vertices::PlanStorage(vertices);
    if (plan.places >= 0) {
      // Stored as the floats the decimals were written from (no doubles).
      mesh.decimal_places_ = static_cast<uint8_t>(plan.places + 1) & 15u;
      mesh.PackVertices(mesh_vertices::VertexInput::Floats(plan.floats), plan.fine, &st);
    } else {
      mesh.PackVertices(vertices, plan.fine, &st);
    }
    mesh.View(&st);
  }
  // From here on the stored vertices are read (Vertex), not the input's.
  const size_t vertex_count = vertices.size();
  if (spent_vertices != nullptr || spent_floats != nullptr || spent_decimals != nullptr) {
    if (spent_vertices != nullptr) std::vector<Vec3>().swap(*spent_vertices);
    if (spent_floats != nullptr) std::vector<float>().swap(*spent_floats);
    if (spent_decimals != nullptr) std::vector<int32_t>().swap(*spent_decimals);
    vertices = {};
  }

  const size_t input_count = triangles.size();
  // Keep triangles of non-zero area (computed on the stored vertices). Kept
  // triangle t is the input's original[t], read there (not copied);
  // `original` stays empty while none is dropped (then it is input t).
  std::vector<uint32_t> original;
  const auto original_of = [&](size_t t) {
    return original.empty() ? static_cast<uint32_t>(t) : original[t];
  };
  const auto kept = [&](size_t t) -> const Indices& { return triangles[original_of(t)]; };
  size_t n = 0;
  for (size_t t = 0; t < triangles.size(); ++t) {
    const Indices& tri = triangles[t];
    const Vec3 a = mesh.Vertex(tri[0]), b = mesh.Vertex(tri[1]), c = mesh.Vertex(tri[2]);
    if (Cross(b - a, c - a).LengthSq() == 0.0) {
      if (st.dropped.empty()) {
        original.reserve(triangles.size() - 1);
        for (uint32_t k = 0; k < t; ++k) original.push_back(k);
      }
      st.dropped.emplace_back(static_cast<uint32_t>(t), tri);
      continue;
    }
    if (!st.dropped.empty()) original.push_back(static_cast<uint32_t>(t));
    ++n;
    mesh.bounds_ = mesh.bounds_.Union(a).Union(b).Union(c);  // of the kept triangles
  }
  st.dropped.shrink_to_fit();
  if (n == 0) {
    return Error{ErrorCode::kInvalidArgument,
                 "triangles: all " + std::to_string(triangles.size()) + " triangles have zero area"};
  }

  // The records, staged in the kept triangles' input order (escape entries
  // keyed by that position) with their edge flags clear: the input's
  // triangles are freed before the edges are grouped (which reads them
  // from the records), and the hierarchy's order then permutes the records
  // into the block.
  mesh.triangle_count_ = static_cast<uint32_t>(n);
  const RecordPlan plan = PlanRecords(vertex_count, input_count, n, [&](auto&& f) {
    for (size_t j = 0; j < n; ++j) f(kept(j), original_of(j));
  });
  mesh.vbits_ = static_cast<uint8_t>(plan.vbits);
  mesh.obits_ = plan.originals.bits;
  mesh.oslope_ = plan.originals.slope;
  mesh.vmask_ = static_cast<uint32_t>((uint64_t{1} << mesh.vbits_) - 1);
  mesh.dbits_ = static_cast<uint8_t>(plan.dbits);
  mesh.dmask_ = static_cast<uint32_t>((uint64_t{1} << mesh.dbits_) - 1);
  mesh.escape_count_ = static_cast<uint32_t>(plan.escaped);
  mesh.wide_ = mesh.record_bits() + 7 > 64;
  mesh.narrow_indices_ = mesh.index_bits() <= 57 && mesh.escape_count_ == 0;
  st.obase = plan.originals.base;  // copied: Field reads the plan's (one base per 64 vertices)
  mesh.dropped_count_ = static_cast<uint32_t>(st.dropped.size());  // EscapeBits counts them
  st.records.assign(mesh.RecordBytes() + mesh.EscapeBytes(), 0);
  mesh.packed_.ptr = st.records.data();
  uint32_t escapes = 0;
  for (size_t j = 0; j < n; ++j) {
    const uint32_t t = original_of(j);
    const Indices& tri = kept(j);
    if (plan.Escapes(tri, t)) {
      mesh.SetEscape(escapes++, static_cast<uint32_t>(j), tri[1], tri[2], t);
      mesh.SetRecord(static_cast<uint32_t>(j), tri[0], mesh.EscapeCode(), 0, 0, 0);
      continue;
    }
    mesh.SetRecord(static_cast<uint32_t>(j), tri[0], (tri[1] - tri[0]) & mesh.dmask_,
                   (tri[2] - tri[0]) & mesh.dmask_, 0, plan.originals.Field(tri[0], t));
  }
  if (spent_triangles != nullptr) {
    triangles = {};
    std::vector<Indices>().swap(*spent_triangles);
  }
  mesh.StageActiveEdges();

  // Hierarchy over triangle boxes (read from the staged records); the
  // triangles are then stored in leaf order. Boxes on the hierarchy's grid
  // over the bounds (12 bytes a triangle), by input index. The hierarchy
  // orders the kept triangles' input indices (`original` becomes the order:
  // the same ties, it increases).
  mesh.SetBoxSteps();
  const auto box_at = [&](uint32_t j) {
    Vec3 v[3];
    mesh.TriangleVertices(j, v);
    return Aabb().Union(v[0]).Union(v[1]).Union(v[2]);
  };
  std::vector<uint32_t> order = std::move(original);
  if (order.empty()) {
    order.resize(n);
    std::iota(order.begin(), order.end(), 0u);
  }
  st.leaf_splits_left = static_cast<uint32_t>(n / kLeafSplitShare);
  if (n >= kMeshCoarseRootTriangles) {
    CoarseBuildBoxes coarse(input_count, mesh.bounds_.min, mesh.Steps());
    for (size_t j = 0; j < n; ++j) coarse.Set(order[j], box_at(static_cast<uint32_t>(j)));
    const auto box_of = [&](uint32_t t) { return box_at(StagedPosition(st.dropped, t)); };
    mesh.BuildCoarseRoot(&order, &coarse, box_of, &st);
  } else {
    BuildBoxes boxes(input_count, mesh.bounds_.min, mesh.Steps());
    for (size_t j = 0; j < n; ++j) boxes.Set(order[j], box_at(static_cast<uint32_t>(j)));
    mesh.BuildHierarchy(&order, boxes, &st);
  }
  mesh.RecordsInLeafOrder(&order, &st);
  mesh.Seal(&st);
  return mesh;
}

void TriangleMesh::PackVertices(mesh_vertices::VertexInput vertices,
                                const std::vector<bool>& fine, Staging* st) {
  mesh_vertices::PackedLayout layout;
  if (!mesh_vertices::LayoutPacked(vertices, fine, &layout)) {
    if (mesh_vertices::AllExactFloats(vertices)) {
      mesh_vertices::FloatLayout floats = mesh_vertices::LayoutFloats(vertices);
      if (mesh_vertices::PackFloats(floats, vertices.size())) {
        PackFloatVertices(vertices, floats, st);
        return;
      }
      st->fvertices.reserve(3 * vertices.size());
      for (const Vec3& v : vertices) {
        for (int a = 0; a < 3; ++a) st->fvertices.push_back(static_cast<float>(v[a]));
      }
    } else {
      st->dvertices.assign(vertices.begin(), vertices.end());
    }
    return;
  }
  vrecord_bits_ = 0;
  for (int a = 0; a < 3; ++a) {
    vertex_divisor_[a] = layout.divisor[a];
    qmin_[a] = layout.qmin[a];
    vaxis_bits_[a] = layout.bits[a];
    vaxis_mask_[a] = (uint64_t{1} << layout.bits[a]) - 1;
    vaxis_off_[a] = static_cast<uint8_t>(vrecord_bits_);
    vrecord_bits_ += layout.bits[a];
  }
  xy_one_load_ = vaxis_bits_[0] + vaxis_bits_[1] <= 57;
  st->vpacked.assign((static_cast<uint64_t>(vertices.size()) * vrecord_bits_ + 7) / 8 + 16, 0);
  std::vector<Vec3> apart;
  for (size_t i = 0; i < vertices.size(); ++i) {
    uint64_t field[3];
    if (!fine.empty() && fine[i]) {
      const uint64_t index = apart.size();
      apart.push_back(vertices[i]);
      field[0] = vaxis_mask_[0];
      field[1] = index & vaxis_mask_[1];
      field[2] = index >> vaxis_bits_[1];
    } else {
      for (int a = 0; a < 3; ++a) {
        field[a] = static_cast<uint64_t>(std::llrint(vertices[i][a] * vertex_divisor_[a]) - qmin_[a]);
      }
    }
    PackedRecord r = field[2];
    r = (r << vaxis_bits_[1]) | field[1];
    r = (r << vaxis_bits_[0]) | field[0];
    StoreBits(st->vpacked.data(), static_cast<uint64_t>(i) * vrecord_bits_, vrecord_bits_, r);
  }
  if (apart.empty()) return;
  fine_count_ = static_cast<uint32_t>(apart.size());
  fine_mark_ = vaxis_mask_[0];
  if (mesh_vertices::AllExactFloats(apart)) {
    st->fvertices.reserve(3 * apart.size());
    for (const Vec3& v : apart) {
      for (int a = 0; a < 3; ++a) st->fvertices.push_back(static_cast<float>(v[a]));
    }
  } else {
    st->dvertices = std::move(apart);
  }
}

Vec3 TriangleMesh::DecimalVertex(uint32_t i) const {
  const double divisor = mesh_vertices::PowerOfTen(decimal_places_ - 1);
  const Vec3 stored = StoredVertex(i);  // float32s, exactly
  return {mesh_vertices::DecimalOfFloat(static_cast<float>(stored.x), divisor),
          mesh_vertices::DecimalOfFloat(static_cast<float>(stored.y), divisor),
          mesh_vertices::DecimalOfFloat(static_cast<float>(stored.z), divisor)};
}

void TriangleMesh::DecimalTriangleVertices(uint32_t k, Vec3 out[3]) const {
  uint32_t idx[3];
  TriangleIndices(k, idx);
  for (int c = 0; c < 3; ++c) out[c] = DecimalVertex(idx[c]);
}

void TriangleMesh::DecimalIndexedVertices(const uint32_t idx[3], Vec3 out[3],
                                          VertexCache* cache) const {
  for (int c = 0; c < 3; ++c) {
    const uint32_t slot = VertexCache::Slot(idx[c]);
    if (cache->key_[slot] != idx[c]) {
      cache->value_[slot] = DecimalVertex(idx[c]);
      cache->key_[slot] = idx[c];
    }
    out[c] = cache->value_[slot];
  }
}

Vec3 TriangleMesh::PackedFloatVertex(uint32_t i) const {
  if (flt_.record_bits == 0) {
    uint32_t local;
    return flt_.parts->Locate(i, &local)->Vertex(local);
  }
  const uint64_t base = static_cast<uint64_t>(i) * flt_.record_bits;
  Vec3 out;
  for (int a = 0; a < 3; ++a) {
    const uint64_t raw = Load64(fpacked_.data(), base + flt_.axis_off[a]);
    const uint32_t code = static_cast<uint32_t>(raw >> 23) & ((1u << flt_.code_bits[a]) - 1);
    const uint32_t bits =
        flt_.codes[flt_.code_base[a] + code] | (static_cast<uint32_t>(raw) & 0x7fffffu);
    out[a] = static_cast<double>(std::bit_cast<float>(bits));
  }
  return out;
}

void TriangleMesh::PackFloatVertices(mesh_vertices::VertexInput vertices,
                                     const mesh_vertices::FloatLayout& layout, Staging* st) {
  flt_ = FloatForm{};
  for (int a = 0; a < 3; ++a) {
    flt_.code_base[a] = static_cast<uint16_t>(st->fcodes.size());
    st->fcodes.insert(st->fcodes.end(), layout.codes[a].begin(), layout.codes[a].end());
    flt_.code_bits[a] = layout.bits[a];
    flt_.axis_off[a] = flt_.record_bits;
    flt_.record_bits = static_cast<uint8_t>(flt_.record_bits + 23u + layout.bits[a]);
  }
  flt_.code_count = static_cast<uint16_t>(st->fcodes.size());
  const uint32_t bits_each = flt_.record_bits;
  st->fpacked.assign((static_cast<uint64_t>(vertices.size()) * bits_each + 7) / 8 + 16, 0);
  for (size_t i = 0; i < vertices.size(); ++i) {
    PackedRecord r = 0;
    for (int a = 2; a >= 0; --a) {
      const uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(vertices[i][a]));
      const auto& codes = layout.codes[a];
      const uint32_t index = static_cast<uint32_t>(
          std::lower_bound(codes.begin(), codes.end(), bits & ~0x7fffffu) - codes.begin());
      r = (r << (23u + layout.bits[a])) | (PackedRecord{index} << 23) | (bits & 0x7fffffu);
    }
    StoreBits(st->fpacked.data(), static_cast<uint64_t>(i) * bits_each, bits_each, r);
  }
}

void TriangleMesh::SetBoxSteps() {
  // The least power of two step with min + 65535 * step >= max: q * step is
  // then exact, so a decoded bound min + q * step is one rounding, fused or
  // not, in GridQuantize here and in the traversals alike.
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
    // Kept as its top 16 bits: a step below 2^-1026 (an extent under 1e-304)
    // is raised to it, which still spans the extent.
    if (s > 0.0 && s < 0x1p-1026) s = 0x1p-1026;
    step_bits_[a] = static_cast<uint16_t>(std::bit_cast<uint64_t>(s) >> 48);
  }
}

void TriangleMesh::ClearChild(Node* node, uint32_t i) {
  for (int a = 0; a < 3; ++a) {
    node->min[a][i] = 65535;
    node->max[a][i] = 0;
  }
  node->child[i] = kEmpty;
}

void TriangleMesh::AddRootOverLeaf(uint32_t word, Staging* st) const {
  Node node;
  for (uint32_t i = 1; i < kMeshNodeWidth; ++i) ClearChild(&node, i);
  SetChildBox(&node, 0, bounds_);
  node.child[0] = word;
  st->nodes.push_back(node);
}

void TriangleMesh::SetChildBox(Node* node, uint32_t i, const Aabb& box) const {
  for (int a = 0; a < 3; ++a) {
    node->min[a][i] = GridQuantize(box.min[a], bounds_.min[a], Step(a), false);
    node->max[a][i] = GridQuantize(box.max[a], bounds_.min[a], Step(a), true);
  }
}

void TriangleMesh::BuildHierarchy(std::vector<uint32_t>* order, const BuildBoxes& boxes,
                                  Staging* st) {
  st->nodes.clear();
  // Room for every node at once (an upper estimate): doubling would hold two
  // copies beside the boxes, the build's peak.
  st->nodes.reserve(order->size() / 8 + 2);
  const uint32_t root = BuildNode(order, boxes, 0, static_cast<uint32_t>(order->size()), 1, st);
  // Too few triangles for a split: a root node with the one leaf.
  if (root & kLeafBit) AddRootOverLeaf(root, st);
}

template <typename BoxOf>
void TriangleMesh::BuildCoarseRoot(std::vector<uint32_t>* order, CoarseBuildBoxes* coarse,
                                   const BoxOf& box_of, Staging* st) {
  const auto n = static_cast<uint32_t>(order->size());
  st->nodes.clear();
  st->nodes.reserve(n / 8 + 2);  // as BuildHierarchy
  uint32_t bounds[kMeshNodeWidth + 1] = {0, n};
  uint32_t parts = 1;
  BuildSplits(order, *coarse, 0, n, 1, bounds, &parts);
  coarse->Free();
  Aabb all;
  AddNodeOnOwnBoxes(order, bounds, parts, 1, box_of, st, &all);  // the root, node 0
}

template <typename BoxOf>
uint32_t TriangleMesh::BuildOnOwnBoxes(std::vector<uint32_t>* order, uint32_t begin, uint32_t end,
                                       uint32_t depth, const BoxOf& box_of, Staging* st,
                                       Aabb* box) {
  std::vector<uint32_t>& ord = *order;
  // The triangles renamed 0.. in input order (the builds' ties compare
  // these names: the same order), their boxes by name.
  std::vector<uint32_t> ids(ord.begin() + begin, ord.begin() + end);
  std::sort(ids.begin(), ids.end());
  for (uint32_t k = begin; k < end; ++k) {
    ord[k] = static_cast<uint32_t>(std::lower_bound(ids.begin(), ids.end(), ord[k]) - ids.begin());
  }
  const auto restore = [&] {
    for (uint32_t k = begin; k < end; ++k) ord[k] = ids[ord[k]];
  };
  if (end - begin < kMeshCoarseRootTriangles / 4) {
    BuildBoxes boxes(ids.size(), bounds_.min, Steps());
    *box = Aabb();
    for (size_t l = 0; l < ids.size(); ++l) {
      boxes.Set(l, box_of(ids[l]));
      *box = box->Union(boxes[l]);
    }
    const uint32_t word = BuildNode(order, boxes, begin, end, depth, st);
    restore();
    return word;
  }
  // Large: its splits on coarse boxes, each child on boxes of its own.
  uint32_t bounds[kMeshNodeWidth + 1] = {begin, end};
  uint32_t parts = 1;
  {
    CoarseBuildBoxes coarse(ids.size(), bounds_.min, Steps());
    for (size_t l = 0; l < ids.size(); ++l) coarse.Set(l, box_of(ids[l]));
    BuildSplits(order, coarse, begin, end, depth, bounds, &parts);
  }
  restore();
  std::vector<uint32_t>().swap(ids);
  return AddNodeOnOwnBoxes(order, bounds, parts, depth, box_of, st, box);
}

template <typename BoxOf>
uint32_t TriangleMesh::AddNodeOnOwnBoxes(std::vector<uint32_t>* order, const uint32_t* bounds,
                                         uint32_t parts, uint32_t depth, const BoxOf& box_of,
                                         Staging* st, Aabb* box) {
  height_ = std::max<uint8_t>(height_, static_cast<uint8_t>(depth));
  const auto self = static_cast<uint32_t>(st->nodes.size());
  st->nodes.emplace_back();
  *box = Aabb();
  for (uint32_t i = 0; i < kMeshNodeWidth; ++i) {
    if (i >= parts) {
      ClearChild(&st->nodes[self], i);
      continue;
    }
    Aabb child;
    const uint32_t word =
        BuildOnOwnBoxes(order, bounds[i], bounds[i + 1], depth + 1, box_of, st, &child);
    SetChildBox(&st->nodes[self], i, child);  // st->nodes may have grown: index again
    st->nodes[self].child[i] = BottomWord(self, i, word, st);
    *box = box->Union(child);
  }
  return self;
}

void TriangleMesh::RecordsInLeafOrder(std::vector<uint32_t>* order, Staging* st) {
  // Record k is to be the staged one of input triangle order[k].
  const std::vector<uint32_t>& ord = *order;
  const auto source = [&](size_t k) { return StagedPosition(st->dropped, ord[k]); };
  const uint32_t n = triangle_count_, bits = record_bits();
  uint8_t* const records = st->records.data();
  // The escape entries keyed anew by k (gathered while keyed by position).
  std::vector<std::pair<uint32_t, Escape>> escaped;  // (k, its entry), k increasing
  escaped.reserve(escape_count_);
  if (escape_count_ != 0) {
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t j = source(k);
      if (EscapedRecord(Record(j))) escaped.emplace_back(k, EscapeOf(j));
    }
  }
  // The records moved in place along the cycles of k <- source(k).
  std::vector<bool> moved(n, false);
  for (uint32_t s = 0; s < n; ++s) {
    if (moved[s]) continue;
    const PackedRecord first = Record(s);
    for (uint32_t k = s;;) {
      moved[k] = true;
      const uint32_t from = source(k);
      const PackedRecord r = from == s ? first : Record(from);
      StoreBits(records, uint64_t{k} * bits, bits, r);
      if (from == s) break;
      k = from;
    }
  }
  std::vector<uint32_t>().swap(*order);  // freed before the block is made
  std::memset(records + RecordBytes(), 0, EscapeBytes());
  for (size_t e = 0; e < escaped.size(); ++e) {
    const Escape& x = escaped[e].second;
    SetEscape(static_cast<uint32_t>(e), escaped[e].first, x.i1, x.i2, x.original);
  }
}

uint32_t TriangleMesh::BottomWord(uint32_t parent, uint32_t slot, uint32_t word,
                                  Staging* st) const {
  // The node just appended (a node of leaves appends none after it), under
  // a parent BottomNode::info can name.
  if ((word & (kLeafBit | kBottomBit)) != 0 || word + 1 != st->nodes.size() ||
      parent >= kMaxBottomParents) {
    return word;
  }
  // Leaves only, in one run of triangles, the used children first.
  const Node& c = st->nodes[word];
  const uint32_t* child = c.child;
  bool ok = child[0] != kEmpty && (child[0] & kLeafBit) != 0 &&
            LeafTriangles(child[0]).first < (1u << 28);
  for (uint32_t k = 1; k < kMeshNodeWidth && ok; ++k) {
    ok = (child[k] & kLeafBit) != 0 &&
         (child[k] == kEmpty || (child[k - 1] != kEmpty &&
                                 LeafTriangles(child[k]).first == LeafTriangles(child[k - 1]).end));
  }
  if (!ok) return word;
  // The child boxes within this node's box in its parent, rounded outwards.
  const Node& node = st->nodes[parent];
  BottomNode b;
  for (int a = 0; a < 3; ++a) {
    const uint32_t base = node.min[a][slot];
    const uint32_t shift = BottomShift(node.max[a][slot] - base);
    for (uint32_t k = 0; k < kMeshNodeWidth; ++k) {
      const bool used = child[k] != kEmpty;
      b.min[a][k] = used ? static_cast<uint8_t>((c.min[a][k] - base) >> shift) : 255;
      b.max[a][k] = used ? static_cast<uint8_t>((c.max[a][k] - base) >> shift) : 0;
    }
  }
  uint64_t info = LeafTriangles(child[0]).first;
  for (uint32_t k = 0; k < kMeshNodeWidth; ++k) {
    const uint64_t count = child[k] == kEmpty ? 0 : (child[k] & 7u) + 1;
    info |= count << (28 + 3 * k);
  }
  b.info = info | static_cast<uint64_t>(slot) << 40 | static_cast<uint64_t>(parent) << 42;
  st->nodes.pop_back();
  st->bottom.push_back(b);
  return kBottomBit | static_cast<uint32_t>(st->bottom.size() - 1);
}

void TriangleMesh::BottomNodeAt(uint32_t index, Node* out) const {
  const BottomNode& b = bottom_[index];
  const Node& parent = nodes_[b.info >> 42];
  const uint32_t slot = static_cast<uint32_t>(b.info >> 40) & 3u;
  // The 24 bytes of boxes widen to three registers of 8 lanes: (min x, min
  // y), (min z, max x), (max y, max z), the layout of Node::min and
  // Node::max; each lane gets its axis's base, top and scale 2^shift.
  const __m128i bytes_lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&b.min[0][0]));
  const __m128i bytes_hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(&b.max[1][0]));
  const __m128i zero = _mm_setzero_si128();
  const __m128i q[3] = {_mm_unpacklo_epi8(bytes_lo, zero), _mm_unpackhi_epi8(bytes_lo, zero),
                        _mm_unpacklo_epi8(bytes_hi, zero)};
  // Max lanes (the upper half of register 1, all of register 2) add 2^shift - 1.
  const __m128i max_lanes[3] = {zero, _mm_set_epi16(-1, -1, -1, -1, 0, 0, 0, 0),
                                _mm_set1_epi16(-1)};
  __m128i* dst = reinterpret_cast<__m128i*>(&out->min[0][0]);
#ifdef __SSE4_1__
  // Lanes 0-2: x, y, z of the parent's child `slot` (bytes picked by pshufb).
  const auto pick = [slot](const uint16_t (*rows)[kMeshNodeWidth]) {
    const __m128i xy = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&rows[0][0]));
    const __m128i z = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(&rows[2][0]));
    const char x0 = static_cast<char>(2 * slot), y0 = static_cast<char>(8 + 2 * slot);
    const __m128i from_xy = _mm_setr_epi8(x0, static_cast<char>(x0 + 1), y0,
                                          static_cast<char>(y0 + 1), -1, -1, -1, -1, -1, -1, -1,
                                          -1, -1, -1, -1, -1);
    const __m128i from_z = _mm_setr_epi8(-1, -1, -1, -1, x0, static_cast<char>(x0 + 1), -1, -1,
                                         -1, -1, -1, -1, -1, -1, -1, -1);
    return _mm_or_si128(_mm_shuffle_epi8(xy, from_xy), _mm_shuffle_epi8(z, from_z));
  };
  const __m128i base = pick(parent.min), top = pick(parent.max);
  // 2^shift = max(1, 2^(floor(log2(range)) - 7)), read off range as a float.
  const __m128 range = _mm_cvtepi32_ps(_mm_cvtepu16_epi32(_mm_sub_epi16(top, base)));
  const __m128 pow2 = _mm_and_ps(range, _mm_castsi128_ps(_mm_set1_epi32(0x7f800000)));
  const __m128 scale = _mm_max_ps(_mm_mul_ps(pow2, _mm_set1_ps(1.0f / 128.0f)), _mm_set1_ps(1.0f));
  const __m128i mul = _mm_packus_epi32(_mm_cvttps_epi32(scale), zero);
  // Lane pairs per register: axes (x, y), (z, x), (y, z), four lanes each.
  const __m128i pairs[3] = {_mm_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3),
                            _mm_setr_epi8(4, 5, 4, 5, 4, 5, 4, 5, 0, 1, 0, 1, 0, 1, 0, 1),
                            _mm_setr_epi8(2, 3, 2, 3, 2, 3, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5)};
  const __m128i one = _mm_set1_epi16(1);
  for (int r = 0; r < 3; ++r) {
    const __m128i m = _mm_shuffle_epi8(mul, pairs[r]);
    const __m128i extra = _mm_and_si128(max_lanes[r], _mm_sub_epi16(m, one));
    const __m128i v = _mm_adds_epu16(_mm_shuffle_epi8(base, pairs[r]),
                                     _mm_add_epi16(_mm_mullo_epi16(q[r], m), extra));
    _mm_store_si128(dst + r, _mm_min_epu16(v, _mm_shuffle_epi8(top, pairs[r])));
  }
#else
  int16_t base[3], top[3], mul[3];
  for (int a = 0; a < 3; ++a) {
    base[a] = static_cast<int16_t>(parent.min[a][slot]);
    top[a] = static_cast<int16_t>(parent.max[a][slot]);
    mul[a] = static_cast<int16_t>(1u << BottomShift(parent.max[a][slot] - parent.min[a][slot]));
  }
  const auto pair = [](const int16_t* v, int lo, int hi) {
    return _mm_set_epi16(v[hi], v[hi], v[hi], v[hi], v[lo], v[lo], v[lo], v[lo]);
  };
  const int axes[3][2] = {{0, 1}, {2, 0}, {1, 2}};
  for (int r = 0; r < 3; ++r) {
    const __m128i m = pair(mul, axes[r][0], axes[r][1]);
    const __m128i one = _mm_set1_epi16(1);
    const __m128i extra = _mm_and_si128(max_lanes[r], _mm_sub_epi16(m, one));
    const __m128i v = _mm_adds_epu16(pair(base, axes[r][0], axes[r][1]),
                                     _mm_add_epi16(_mm_mullo_epi16(q[r], m), extra));
    const __m128i t = pair(top, axes[r][0], axes[r][1]);
    _mm_store_si128(dst + r, _mm_sub_epi16(v, _mm_subs_epu16(v, t)));  // min(v, t), unsigned
  }
#endif
  uint32_t first = static_cast<uint32_t>(b.info) & ((1u << 28) - 1);
  for (uint32_t k = 0; k < kMeshNodeWidth; ++k) {
    const uint32_t count = static_cast<uint32_t>(b.info >> (28 + 3 * k)) & 7u;
    out->child[k] = count == 0 ? kEmpty : kLeafBit | first << 3 | (count - 1);
    first += count;
  }
}

size_t TriangleMesh::PartOf(std::span<const uint32_t> part_first, uint32_t triangle) {
  return static_cast<size_t>(
      std::upper_bound(part_first.begin(), part_first.end(), triangle) - part_first.begin());
}

bool TriangleMesh::LeavesWithinParts(std::span<const uint32_t> part_first) const {
  bool within = true;
  ForEachLeafGroup([&](const uint32_t* words, uint32_t count) {
    for (uint32_t i = 0; i < count; ++i) {
      const LeafRange leaf = LeafTriangles(words[i]);
      const size_t part = PartOf(part_first, OriginalIndex(leaf.first));
      for (uint32_t k = leaf.first + 1; k < leaf.end; ++k) {
        within &= PartOf(part_first, OriginalIndex(k)) == part;
      }
    }
  });
  return within;
}

template <typename Boxes>
void TriangleMesh::BuildSplits(std::vector<uint32_t>* order, const Boxes& boxes, uint32_t begin,
                               uint32_t end, uint32_t depth, uint32_t bounds[kMeshNodeWidth + 1],
                               uint32_t* parts_out) {
  const uint32_t count = end - begin;
  std::vector<uint32_t>& ord = *order;
  uint32_t parts = 1;
  // Node levels of a balanced subtree over `count` triangles.
  const uint32_t leaves = (count + kMeshLeafSize - 1) / kMeshLeafSize;
  uint32_t per_child = 1, levels = 1;
  while (per_child * kMeshNodeWidth < leaves) {
    per_child *= kMeshNodeWidth;
    ++levels;
  }
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
  *parts_out = parts;
}

bool TriangleMesh::SplitLeaf(std::vector<uint32_t>* order, const BuildBoxes& boxes,
                             uint32_t begin, uint32_t end, Staging* st,
                             uint32_t bounds[kMeshNodeWidth + 1], uint32_t* parts) {
  // A node visit counted as this many triangle tests.
  constexpr double kNodeCost = 3.0;
  const uint32_t count = end - begin;
  if (count < kMeshLeafSize || st->leaf_splits_left == 0) return false;
  const std::vector<uint32_t>& ord = *order;
  const auto area = [&](uint32_t b, uint32_t e) {
    Aabb box;
    for (uint32_t k = b; k < e; ++k) box = box.Union(boxes[ord[k]]);
    return box.SurfaceArea();
  };
  const double whole = area(begin, end);
  const uint32_t m = begin + SahSplit(std::span<uint32_t>(*order).subspan(begin, count), boxes, 1);
  const double split = kNodeCost * whole + area(begin, m) * (m - begin) + area(m, end) * (end - m);
  if (!(split < whole * count)) return false;
  --st->leaf_splits_left;
  bounds[0] = begin;
  bounds[1] = m;
  bounds[2] = end;
  *parts = 2;
  return true;
}

uint32_t TriangleMesh::BuildNode(std::vector<uint32_t>* order, const BuildBoxes& boxes,
                                 uint32_t begin, uint32_t end, uint32_t depth,
                                 Staging* st) {
  const uint32_t count = end - begin;
  std::vector<uint32_t>& ord = *order;
  uint32_t bounds[kMeshNodeWidth + 1];
  uint32_t parts = 1;
  bounds[0] = begin;
  bounds[1] = end;
  if (count <= kMeshLeafSize) {
    // A leaf, unless a node still fits (kMeshMaxDepth levels) and its
    // triangles come from several parts or are better apart.
    if (depth > kMeshMaxDepth || !SplitLeaf(order, boxes, begin, end, st, bounds, &parts)) {
      return kLeafBit | (begin << 3) | (count - 1);
    }
  } else {
    BuildSplits(order, boxes, begin, end, depth, bounds, &parts);
  }
  height_ = static_cast<uint8_t>(std::max<uint32_t>(height_, depth));
  return AddNode(boxes, ord, bounds, parts, st, [&](uint32_t i) {
    return BuildNode(order, boxes, bounds[i], bounds[i + 1], depth + 1, st);
  });
}

void TriangleMesh::QueryRange(const Aabb& box, int32_t qlo[3], int32_t qhi[3]) const {
  for (int a = 0; a < 3; ++a) {
    const double lo = bounds_.min[a], s = Step(a);
    if (s == 0.0) {  // flat axis: every child box is [lo, lo], inside box's range
      qlo[a] = 0;
      qhi[a] = 65535;
      continue;
    }
    // Least grid value at or above box.min, greatest at or below box.max.
    qlo[a] = GridQuantize(box.min[a], lo, s, true);
    qhi[a] = GridQuantize(box.max[a], lo, s, false);
  }
}

void TriangleMesh::SetRecord(uint32_t k, uint32_t i0, uint32_t d1, uint32_t d2, EdgeFlags flags,
                             uint32_t original) {
  PackedRecord r = original;
  r = (r << 3) | flags;
  r = (r << dbits_) | d2;
  r = (r << dbits_) | d1;
  r = (r << vbits_) | i0;
  StoreBits(packed_.data(), static_cast<uint64_t>(k) * record_bits(), record_bits(), r);
}

void TriangleMesh::SetEscape(uint32_t j, uint32_t k, uint32_t i1, uint32_t i2,
                             uint32_t original) {
  const uint32_t kbits = BitsFor(triangle_count_);
  PackedRecord r = original;
  r = (r << vbits_) | i2;
  r = (r << vbits_) | i1;
  r = (r << kbits) | k;
  StoreBits(packed_.data() + RecordBytes(), uint64_t{j} * EscapeBits(), EscapeBits(), r);
}

void TriangleMesh::TriangleIndicesFromRecord(uint32_t k, uint32_t idx[3]) const {
  if (part_triangles_) {
    uint32_t local;
    const uint32_t p = flt_.parts->LocateTriangle(k, &local);
    flt_.parts->part(p)->TriangleIndices(local, idx);
    const uint32_t base = flt_.parts->vertex_base(p);
    for (int c = 0; c < 3; ++c) idx[c] += base;
    return;
  }
  const PackedRecord r = Record(k);
  const uint32_t i0 = static_cast<uint32_t>(r) & vmask_;
  const uint32_t d1 = static_cast<uint32_t>(r >> vbits_) & dmask_;
  const uint32_t d2 = static_cast<uint32_t>(r >> (vbits_ + dbits_)) & dmask_;
  idx[0] = i0;
  if (d1 == EscapeCode() && escape_count_ != 0) {
    const Escape e = EscapeOf(k);
    idx[1] = e.i1;
    idx[2] = e.i2;
    return;
  }
  idx[1] = Offset(i0, d1);
  idx[2] = Offset(i0, d2);
}

uint32_t TriangleMesh::OriginalIndexOutOfLine(uint32_t k) const {
  if (part_triangles_) {
    uint32_t local;
    const uint32_t p = flt_.parts->LocateTriangle(k, &local);
    return flt_.parts->part(p)->OriginalIndex(local) + flt_.parts->input_base(p);
  }
  const PackedRecord r = Record(k);
  if (EscapedRecord(r)) return EscapeOf(k).original;
  return OriginalOfRecord(r);
}

void TriangleMesh::PartLeafIndices(uint32_t first, uint32_t count, uint32_t (*idx)[3]) const {
  uint32_t local;
  const uint32_t p = flt_.parts->LocateTriangle(first, &local);
  const TriangleMesh& part = *flt_.parts->part(p);
  const uint32_t base = flt_.parts->vertex_base(p);
  for (uint32_t i = 0; i < count; ++i) {
    part.TriangleIndices(local + i, idx[i]);
    for (int c = 0; c < 3; ++c) idx[i][c] += base;
  }
}

EdgeFlags TriangleMesh::PartActiveEdges(uint32_t k) const {
  uint32_t local;
  const uint32_t p = flt_.parts->LocateTriangle(k, &local);
  return flt_.parts->part(p)->ActiveEdges(local);
}

TriangleMesh::Escape TriangleMesh::EscapeOf(uint32_t k) const {
  const uint32_t bits = EscapeBits(), kbits = BitsFor(triangle_count_);
  const uint8_t* at = packed_.data() + RecordBytes();
  const auto entry = [&](uint32_t j) {
    const uint64_t bit = uint64_t{j} * bits;
    PackedRecord x;
    std::memcpy(&x, at + (bit >> 3), sizeof(x));
    return x >> (bit & 7);
  };
  const PackedRecord kmask = (PackedRecord{1} << kbits) - 1;
  uint32_t lo = 0, hi = escape_count_;  // the first entry with key >= k in [lo, hi]
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (static_cast<uint32_t>(entry(mid) & kmask) < k) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == escape_count_ || static_cast<uint32_t>(entry(lo) & kmask) != k) {
    std::abort();  // a record marked escaped has its entry
  }
  const PackedRecord r = entry(lo) >> kbits;
  const PackedRecord vmask = (PackedRecord{1} << vbits_) - 1;
  const PackedRecord omask = (PackedRecord{1} << BitsFor(triangle_count_ + dropped_count_)) - 1;
  return {static_cast<uint32_t>(r & vmask), static_cast<uint32_t>((r >> vbits_) & vmask),
          static_cast<uint32_t>((r >> (2 * vbits_)) & omask)};
}

TriangleMesh::RaySetup TriangleMesh::SetupRay(const Vec3& origin, const Vec3& dir) const {
  // Float distances widened by a per-axis slack that bounds their rounding,
  // so no box the exact ray meets is dropped (docs/architecture.md, "Mesh
  // storage"); flat axes keep the boxes holding the origin (+-2^100 scale).
  constexpr double kHuge = 0x1p100;
  RaySetup r;
  r.miss = false;
#ifdef __AVX__
  // The three axes at once, the same arithmetic as the loop below, when the
  // ray moves along every axis and no distance leaves the float range.
  {
    const __m256d d = _mm256_setr_pd(dir.x, dir.y, dir.z, 1.0);
    const __m256d zero = _mm256_setzero_pd();
    if (_mm256_movemask_pd(_mm256_cmp_pd(d, zero, _CMP_EQ_OQ)) == 0) {
      const __m256d sign = _mm256_set1_pd(-0.0);
      const __m256d lo = _mm256_setr_pd(bounds_.min.x, bounds_.min.y, bounds_.min.z, 0.0);
      const __m256d o = _mm256_setr_pd(origin.x, origin.y, origin.z, 0.0);
#ifdef __AVX2__
      // Step(0..2) and 0.0: the three 16-bit tops widened and shifted at once.
      uint64_t tops = 0;
      std::memcpy(&tops, step_bits_, sizeof(step_bits_));
      const __m128i top16 = _mm_cvtsi64_si128(static_cast<int64_t>(tops));
      const __m256d s = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_cvtepu16_epi64(top16), 48));
#else
      const __m256d s = _mm256_setr_pd(Step(0), Step(1), Step(2), 0.0);
#endif
      const __m256d span = _mm256_set1_pd(65535.0);
      const __m256d inv = _mm256_div_pd(_mm256_set1_pd(1.0), d);
      const __m256d t_lo = _mm256_mul_pd(_mm256_sub_pd(lo, o), inv);
      const __m256d scale = _mm256_mul_pd(s, inv);
      const __m256d reach = _mm256_add_pd(_mm256_andnot_pd(sign, t_lo),
                                          _mm256_mul_pd(span, _mm256_andnot_pd(sign, scale)));
      const __m256d in_range = _mm256_cmp_pd(reach, _mm256_set1_pd(kHuge), _CMP_LE_OQ);
      if (_mm256_movemask_pd(in_range) == 0xF) {
        const __m256d coord =
            _mm256_max_pd(_mm256_andnot_pd(sign, lo),
                          _mm256_andnot_pd(sign, _mm256_add_pd(lo, _mm256_mul_pd(span, s))));
        const __m256d axis_slack = _mm256_add_pd(
            _mm256_mul_pd(_mm256_set1_pd(0x1p-21), reach),
            _mm256_mul_pd(_mm256_mul_pd(_mm256_set1_pd(0x1p-50), coord),
                          _mm256_andnot_pd(sign, inv)));
        alignas(32) double sl[4];
        _mm256_store_pd(sl, axis_slack);
        const double slack = std::max(std::max(std::max(0.0, sl[0]), sl[1]), sl[2]);
        const __m128 t_f = _mm256_cvtpd_ps(t_lo);
        const __m128 s_f = _mm256_cvtpd_ps(scale);
        const int negative = _mm256_movemask_pd(_mm256_cmp_pd(inv, zero, _CMP_LT_OQ));
        r.near[0] = r.far[0] = _mm_shuffle_ps(t_f, t_f, 0x00);
        r.near[1] = r.far[1] = _mm_shuffle_ps(t_f, t_f, 0x55);
        r.near[2] = r.far[2] = _mm_shuffle_ps(t_f, t_f, 0xAA);
        r.scale[0] = _mm_shuffle_ps(s_f, s_f, 0x00);
        r.scale[1] = _mm_shuffle_ps(s_f, s_f, 0x55);
        r.scale[2] = _mm_shuffle_ps(s_f, s_f, 0xAA);
        for (uint32_t a = 0; a < 3; ++a) {
          const uint32_t flip = static_cast<uint32_t>(negative >> a) & 1u;
          r.near_off[a] = a * kMeshNodeWidth + flip * 3 * kMeshNodeWidth;
          r.far_off[a] = a * kMeshNodeWidth + (flip ^ 1u) * 3 * kMeshNodeWidth;
        }
        r.slack = _mm_set1_ps(static_cast<float>((slack + 0x1p-21) * (1.0 + 0x1p-20)));
        return r;
      }
    }
  }
#endif
  double slack = 0.0;
  bool ranged = false;
  int32_t qlo[3], qhi[3];
  for (uint32_t a = 0; a < 3; ++a) {
    const double lo = bounds_.min[a], s = Step(a);
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
  if (part_triangles_) {
    // The parts' inputs end to end, their indices offset.
    vertices->clear();
    triangles->clear();
    std::vector<Vec3> part_vertices;
    std::vector<Indices> part_triangles;
    for (uint32_t p = 0; p < flt_.parts->size(); ++p) {
      flt_.parts->part(p)->Input(&part_vertices, &part_triangles);
      const auto base = static_cast<uint32_t>(vertices->size());
      vertices->insert(vertices->end(), part_vertices.begin(), part_vertices.end());
      for (const Indices& t : part_triangles) {
        triangles->push_back({t[0] + base, t[1] + base, t[2] + base});
      }
    }
    return;
  }
  vertices->resize(vertex_count_);
  for (uint32_t i = 0; i < vertex_count_; ++i) (*vertices)[i] = Vertex(i);
  triangles->resize(size_t{triangle_count_} + dropped_count_);
  for (uint32_t k = 0; k < triangle_count_; ++k) {
    uint32_t idx[3];
    TriangleIndices(k, idx);
    (*triangles)[OriginalIndex(k)] = {idx[0], idx[1], idx[2]};
  }
  const std::pair<uint32_t, Indices>* dropped = Dropped();
  for (uint32_t i = 0; i < dropped_count_; ++i) (*triangles)[dropped[i].first] = dropped[i].second;
}

TriangleMesh::StorageBytes TriangleMesh::Storage() const {
  StorageBytes out;
  out.hierarchy = size_t{node_count_} * sizeof(Node) + size_t{bottom_count_} * sizeof(BottomNode);
  out.triangles = size_t{dropped_count_} * sizeof(std::pair<uint32_t, Indices>) +
                  size_t{original_base_count()} * sizeof(uint32_t) + RecordBytes() + EscapeBytes();
  // Vertices apart from the packed ones, or all of them.
  const size_t plain = vpacked_.empty() ? vertex_count_ : fine_count_;
  if (!dvertices_.empty()) out.vertices += plain * sizeof(Vec3);
  if (!fvertices_.empty()) out.vertices += 3 * plain * sizeof(float);
  if (!vpacked_.empty()) {
    out.vertices += (static_cast<uint64_t>(vertex_count_) * vrecord_bits_ + 7) / 8 + 16;
  }
  if (!fpacked_.empty()) {
    out.vertices += (static_cast<uint64_t>(vertex_count_) * flt_.record_bits + 7) / 8 + 16 +
                    size_t{flt_.code_count} * sizeof(uint32_t);
  }
  const size_t arrays = out.hierarchy + out.triangles + out.vertices;
  out.fixed = (arrays + 7) / 8 * 8 - arrays + sizeof(TriangleMesh);
  return out;
}

size_t TriangleMesh::ArrayBytes() const {
  const StorageBytes s = Storage();
  return s.hierarchy + s.triangles + s.vertices;
}

size_t TriangleMesh::MemoryBytes() const { return HeaderOffset() + sizeof(TriangleMesh); }

size_t TriangleMesh::FixedBytes() { return sizeof(TriangleMesh); }

TriangleMesh::TriangleMesh(TriangleMesh&& other) noexcept {
  std::memcpy(static_cast<void*>(this), &other, sizeof(TriangleMesh));
  other.owns_block_ = false;
}

TriangleMesh& TriangleMesh::operator=(TriangleMesh&& other) noexcept {
  if (this != &other) {
    if (owns_block_) BlockFree(reinterpret_cast<std::byte*>(nodes_.data()));
    std::memcpy(static_cast<void*>(this), &other, sizeof(TriangleMesh));
    other.owns_block_ = false;
  }
  return *this;
}

TriangleMesh::~TriangleMesh() {
  if (owns_block_) BlockFree(reinterpret_cast<std::byte*>(nodes_.data()));
}

const std::pair<uint32_t, TriangleMesh::Indices>* TriangleMesh::Dropped() const {
  const size_t plain = vpacked_.empty() ? vertex_count_ : fine_count_;
  const size_t at = size_t{node_count_} * sizeof(Node) + size_t{bottom_count_} * sizeof(BottomNode) +
                    (dvertices_.empty() ? 0 : plain * sizeof(Vec3));
  return reinterpret_cast<const std::pair<uint32_t, Indices>*>(
      reinterpret_cast<const std::byte*>(nodes_.data()) + at);
}

const TriangleMesh* TriangleMesh::Settle(TriangleMesh&& mesh) {
  // The settled copy does not own its block: DestroySettled frees the block
  // it lies in.
  std::byte* block = reinterpret_cast<std::byte*>(mesh.nodes_.data());
  TriangleMesh* settled = new (block + mesh.HeaderOffset()) TriangleMesh(std::move(mesh));
  settled->owns_block_ = false;
  return settled;
}

void TriangleMesh::DestroySettled(const TriangleMesh* mesh) {
  std::byte* block = const_cast<std::byte*>(reinterpret_cast<const std::byte*>(mesh)) -
                     mesh->HeaderOffset();
  mesh->~TriangleMesh();
  BlockFree(block);
}

void TriangleMesh::View(Staging* st) {
  const auto view = [](auto& vec) -> decltype(vec.data()) {
    return vec.empty() ? nullptr : vec.data();
  };
  nodes_.ptr = view(st->nodes);
  bottom_.ptr = view(st->bottom);
  dvertices_.ptr = view(st->dvertices);
  obase_.ptr = view(st->obase);
  // (else qmin_ is in use, or the parts' table)
  if (!st->fpacked.empty() && flt_.record_bits != 0) flt_.codes = view(st->fcodes);
  fpacked_.ptr = view(st->fpacked);
  fvertices_.ptr = view(st->fvertices);
  vpacked_.ptr = view(st->vpacked);
}

void TriangleMesh::Seal(Staging* st) {
  // Sizes in the block's order; each is a multiple of the next one's
  // alignment (64, 32, 24, 16, 4, 4, 4, 1, 1, 1 bytes), so the arrays sit back
  // to back, then the room for the mesh object (8-byte aligned).
  static_assert(sizeof(Node) % alignof(BottomNode) == 0 && sizeof(BottomNode) % alignof(Vec3) == 0 &&
                sizeof(Vec3) % alignof(std::pair<uint32_t, Indices>) == 0 &&
                sizeof(std::pair<uint32_t, Indices>) % alignof(uint32_t) == 0 &&
                sizeof(uint32_t) % alignof(float) == 0);
  // The counts first: the escape entries' width counts the dropped
  // triangles (EscapeBits), as SetEscape's writes will.
  node_count_ = static_cast<uint32_t>(st->nodes.size());
  bottom_count_ = static_cast<uint32_t>(st->bottom.size());
  dropped_count_ = static_cast<uint32_t>(st->dropped.size());
  const size_t bytes[10] = {st->nodes.size() * sizeof(Node),
                            st->bottom.size() * sizeof(BottomNode),
                            st->dvertices.size() * sizeof(Vec3),
                            st->dropped.size() * sizeof(st->dropped[0]),
                            st->obase.size() * sizeof(uint32_t),
                            st->fcodes.size() * sizeof(uint32_t),
                            st->fvertices.size() * sizeof(float),
                            RecordBytes() + EscapeBytes(),
                            st->vpacked.size(),
                            st->fpacked.size()};
  size_t arrays = 0;
  for (size_t b : bytes) arrays += b;
  std::byte* at = static_cast<std::byte*>(::operator new(
      (arrays + 7) / 8 * 8 + sizeof(TriangleMesh), std::align_val_t{alignof(Node)}));
  owns_block_ = true;
  const auto place = [&](auto* vec, auto* stored, size_t size) {
    using T = std::remove_reference_t<decltype((*vec)[0])>;
    if (size != 0) std::memcpy(at, vec->data(), size);
    stored->ptr = vec->empty() ? nullptr : reinterpret_cast<T*>(at);
    at += size;
    std::remove_pointer_t<decltype(vec)>().swap(*vec);  // freed as soon as copied
  };
  place(&st->nodes, &nodes_, bytes[0]);
  place(&st->bottom, &bottom_, bytes[1]);
  place(&st->dvertices, &dvertices_, bytes[2]);
  if (bytes[3] != 0) std::memcpy(at, st->dropped.data(), bytes[3]);
  at += bytes[3];
  std::vector<std::pair<uint32_t, Indices>>().swap(st->dropped);
  place(&st->obase, &obase_, bytes[4]);
  if (!st->fpacked.empty() && flt_.record_bits != 0) {
    Stored<uint32_t> codes;
    place(&st->fcodes, &codes, bytes[5]);
    flt_.codes = codes.ptr;
  } else {
    at += bytes[5];  // none (qmin_ is in use)
  }
  place(&st->fvertices, &fvertices_, bytes[6]);
  // The staged records (Build's, in leaf order), or none (a mesh over parts).
  if (st->records.empty()) {
    packed_.ptr = reinterpret_cast<uint8_t*>(at);
    at += bytes[7];
  } else {
    place(&st->records, &packed_, bytes[7]);
  }
  place(&st->vpacked, &vpacked_, bytes[8]);
  place(&st->fpacked, &fpacked_, bytes[9]);
  // ArrayBytes() reckons the same sizes from the counts (Settle places the
  // object by it): a mismatch would put the object outside its block.
  if (ArrayBytes() != arrays) std::abort();
}

bool TriangleMesh::RaycastClosest(const Vec3& origin, const Vec3& translation,
                                  MeshRayHit* hit, double max_fraction) const {
  if (nodes_.empty() || translation.LengthSq() == 0.0) return false;
  // The root's children first: most rays that reach a mesh's box in a level
  // miss them, and then need no triangle setup.
  const RaySetup setup = SetupRay(origin, translation);
  if (setup.miss) return false;
  const double limit = std::min(1.0, max_fraction);
  RayRoot root;
  if (!EnterRayRoot(setup, limit, &root)) return false;
  // One walk per largest axis of the ray: its vertices are sheared with
  // the axes known at compile time (ShearVertexAxes, the same values).
  const WatertightRay ray(origin, translation);
  switch (ray.kz) {
    case 0: return RaycastClosestAxes<0>(translation, ray, setup, root, hit, limit);
    case 1: return RaycastClosestAxes<1>(translation, ray, setup, root, hit, limit);
    default: return RaycastClosestAxes<2>(translation, ray, setup, root, hit, limit);
  }
}

template <int kZ>
bool TriangleMesh::RaycastClosestAxes(const Vec3& translation, const WatertightRay& ray,
                                      const RaySetup& setup, const RayRoot& root,
                                      MeshRayHit* hit, double limit) const {
  ShearedVertexCache cache;
  // Both lambdas inlined (as the compiler chose before the mesh object
  // shrank; called, they cost the ray batches 4% more instructions).
  const auto shear = [&](uint32_t i) __attribute__((always_inline)) {
    return ShearVertexAxes<kZ>(ray, Vertex(i));
  };
  double best = limit;
  uint32_t best_k = UINT32_MAX;
  uint32_t best_orig = UINT32_MAX;
  const auto test = [&](uint32_t k, const ShearedVertex v[3]) __attribute__((always_inline)) {
    // The hit's fraction over the whole ray, never clamped to the best so
    // far (the test with t_max = best passes a hit a rounding beyond it and
    // clamps it to a tie): the answer then does not depend on the order of
    // the visits, and equals brute force over every triangle.
    TriangleRayHit h;
    if (!RayTriangleSheared(v[0], v[1], v[2], 1.0, &h) || h.t > best) return;
    const uint32_t orig = OriginalIndex(k);
    if (h.t < best || best_k == UINT32_MAX || orig < best_orig) {
      best = h.t;
      best_k = k;
      best_orig = orig;
    }
  };
  VisitRayFromRoot(setup, root, &best, [&](uint32_t first, uint32_t end)
                                           __attribute__((always_inline)) {
    // A leaf's triangles sheared, their sign tests four at once; those it
    // cannot reject take the whole test.
    // A merged mesh's leaf decoded at once (its part found once).
    uint32_t leaf_idx[8][3];  // a leaf word holds at most 8
    if (part_triangles_) [[unlikely]] PartLeafIndices(first, end - first, leaf_idx);
    for (uint32_t base = first; base < end; base += 4) {
      const uint32_t count = std::min(end - base, 4u);
      ShearedVertex v[4][3];
      ShearedTriangles4 lanes;
      for (uint32_t i = 0; i < 4; ++i) {
        if (i < count) {
          uint32_t own[3];
          const uint32_t* idx = leaf_idx[base - first + i];
          if (!part_triangles_) {
            TriangleIndices(base + i, own);
            idx = own;
          }
          for (int j = 0; j < 3; ++j) v[i][j] = cache.Get(idx[j], shear);
          lanes.Set(i, v[i][0], v[i][1], v[i][2]);
        } else {
          lanes.Set(i, v[0][0], v[0][1], v[0][2]);  // a copy of the first: same answer
        }
      }
      const uint32_t pass = RayTrianglesPassSigns(lanes) & ((1u << count) - 1);
      for (uint32_t m = pass; m != 0; m &= m - 1) {
        const uint32_t i = static_cast<uint32_t>(__builtin_ctz(m));
        test(base + i, v[i]);
      }
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

size_t TriangleMesh::PredictMemoryBytes(mesh_vertices::VertexInput vertices,
                                        std::span<const Indices> triangles) {
  if (vertices.empty() || triangles.empty()) return 0;
  size_t bytes = 0;
  // Vertices: as Build stores them (PlanStorage).
  bytes += mesh_vertices::PlanStorage(vertices).bytes;
  // Kept triangles (non-zero area on the input vertices, which decode
  // exactly from either storage).
  std::vector<uint32_t> kept_list;
  for (size_t t = 0; t < triangles.size(); ++t) {
    const Indices& tri = triangles[t];
    if (tri[0] >= vertices.size() || tri[1] >= vertices.size() || tri[2] >= vertices.size()) {
      continue;
    }
    const Vec3 a = vertices[tri[0]], b = vertices[tri[1]], c = vertices[tri[2]];
    if (Cross(b - a, c - a).LengthSq() == 0.0) continue;
    kept_list.push_back(static_cast<uint32_t>(t));
  }
  const uint64_t kept = kept_list.size();
  if (kept == 0) return 0;
  // Packed triangle records, the bases of predicted original indices and
  // the escaped triangles (the plan does not depend on the records' order).
  const RecordPlan plan =
      PlanRecords(vertices.size(), triangles.size(), kept, [&](auto&& f) {
        for (uint32_t t : kept_list) f(triangles[t], t);
      });
  std::vector<uint32_t>().swap(kept_list);
  bytes += plan.originals.base.size() * sizeof(uint32_t);
  bytes += (kept * plan.RecordBits() + 7) / 8 + 16;
  if (plan.escaped != 0) {
    bytes += (plan.escaped * EscapeBitsFor(kept, plan.vbits, triangles.size()) + 7) / 8 + 16;
  }
  // Hierarchy nodes: a balanced tree's counts (full subtrees of `chunk`
  // triangles; bottom nodes hold only leaves), and a fifth more, as the
  // surface area heuristic's trees measure (1.15 to 1.25 times); a lone leaf
  // gets a root node of its own.
  struct Counts {
    uint64_t inner = 0, bottom = 0;
  };
  auto nodes = [](auto&& self, uint64_t count, bool root) -> Counts {
    if (count <= kMeshLeafSize) return {};
    if (!root && count <= kMeshLeafSize * kMeshNodeWidth) return {0, 1};
    const uint64_t leaves = (count + kMeshLeafSize - 1) / kMeshLeafSize;
    uint64_t per_child = 1;
    while (per_child * kMeshNodeWidth < leaves) per_child *= kMeshNodeWidth;
    const uint64_t chunk = per_child * kMeshLeafSize;
    const uint64_t parts = (count + chunk - 1) / chunk;
    const Counts full = self(self, chunk, false);
    const Counts last = self(self, count - (parts - 1) * chunk, false);
    return {1 + (parts - 1) * full.inner + last.inner, (parts - 1) * full.bottom + last.bottom};
  };
  const Counts balanced = nodes(nodes, kept, true);
  bytes += std::max<uint64_t>(1, balanced.inner + balanced.inner / 5) * sizeof(Node) +
           (balanced.bottom + balanced.bottom / 5) * sizeof(BottomNode);
  // Dropped triangles are kept aside for Input().
  bytes += (triangles.size() - kept) * sizeof(std::pair<uint32_t, Indices>);
  return (bytes + 7) / 8 * 8 + sizeof(TriangleMesh);
}

}  // namespace hitbox
