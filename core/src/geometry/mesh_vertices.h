// How a triangle mesh stores its vertices losslessly (TriangleMesh::Build):
// per axis as integers q of q / divisor (10^k or 2^k) bit-packed in the bits
// their span needs, else as float32, else as doubles; and when a few
// vertices need far finer steps than the rest, those alone kept apart.
// Decimals written from float32s (an OBJ's "%.6f") may be stored as those
// floats in any of these forms and read back through their rounding.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <vector>

#include "hitbox/math/math.h"

namespace hitbox::mesh_vertices {

/// The vertices a mesh is built from: doubles, or float32 or decimal (int32
/// q of q / divisor) x, y, z triples (half the bytes while a large mesh
/// loads) widened as they are read.
class VertexInput {
 public:
  VertexInput() = default;
  VertexInput(std::span<const Vec3> d) : d_(d.data()), n_(d.size()) {}  // NOLINT: implicit
  VertexInput(const std::vector<Vec3>& d) : VertexInput(std::span<const Vec3>(d)) {}  // NOLINT
  /// Three floats a vertex.
  static VertexInput Floats(std::span<const float> xyz) {
    VertexInput v;
    v.f_ = xyz.data();
    v.n_ = xyz.size() / 3;
    return v;
  }
  /// Three decimals a vertex, each read as DecimalValue(q, divisor).
  static VertexInput Decimals(std::span<const int32_t> xyz, double divisor) {
    VertexInput v;
    v.q_ = xyz.data();
    v.divisor_ = divisor;
    v.n_ = xyz.size() / 3;
    return v;
  }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  Vec3 operator[](size_t i) const {
    if (f_ != nullptr) return {f_[3 * i], f_[3 * i + 1], f_[3 * i + 2]};
    if (q_ != nullptr) {
      return {DecimalValue(q_[3 * i], divisor_), DecimalValue(q_[3 * i + 1], divisor_),
              DecimalValue(q_[3 * i + 2], divisor_)};
    }
    return d_[i];
  }

  struct Iterator {
    using iterator_category = std::forward_iterator_tag;
    using value_type = Vec3;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Vec3;
    const VertexInput* in = nullptr;
    size_t i = 0;
    Vec3 operator*() const { return (*in)[i]; }
    Iterator& operator++() {
      ++i;
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      ++i;
      return old;
    }
    bool operator==(const Iterator& o) const { return i == o.i; }
  };
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, n_}; }

 private:
  const Vec3* d_ = nullptr;
  const float* f_ = nullptr;
  const int32_t* q_ = nullptr;
  double divisor_ = 1.0;
  size_t n_ = 0;
};

/// Per axis, a divisor d (10^k for k in 0..9, or 2^k) with every
/// coordinate v exactly q / d for an integer q, |q| <= 2^53, and the q of the
/// axis within 2^33 of each other; the one whose q span the fewest bits.
/// Vertices flagged in `fine` (when not empty) are left out. False when an
/// axis has none.
bool ChooseDivisors(VertexInput vertices, const std::vector<bool>& fine, double divisor[3]);

/// True when every coordinate of every vertex is exactly a float32 value.
bool AllExactFloats(VertexInput vertices);

/// 10^k for k in 0..9.
double PowerOfTen(int k);
/// The decimal of k places (divisor 10^k, k <= 9) that float32 f stands
/// for: f * 10^k (exact in double) rounded to the integer q, then q / 10^k
/// correctly rounded, so exactly the double the text of that decimal reads as.
inline double DecimalOfFloat(float f, double divisor) {
  return std::nearbyint(static_cast<double>(f) * divisor) / divisor;
}
/// The float32 with the fewest binary fraction bits whose DecimalOfFloat by
/// `divisor` is x to the bit (so a float on a coarse grid, written to k
/// places, comes back as itself), or NaN when none is.
float FloatOfDecimal(double x, double divisor);

/// How the packed vertices lie: per axis the divisor, the least q and the
/// bits of q - qmin, and how many vertices are kept apart.
struct PackedLayout {
  double divisor[3] = {1.0, 1.0, 1.0};
  int64_t qmin[3] = {0, 0, 0};
  uint8_t bits[3] = {0, 0, 0};
  uint32_t fine_count = 0;
};

/// The layout of `vertices` with those flagged in `fine` (when not empty)
/// kept apart: a fine vertex's record has x all ones (no packed x reaches
/// it) and its index among the fine ones in y, then z. False when the
/// packed vertices have no divisors or an axis would pass 33 bits.
bool LayoutPacked(VertexInput vertices, const std::vector<bool>& fine, PackedLayout* out);

/// Float32 vertices packed per axis: the 23 mantissa bits, then the index
/// (`bits`, 0 when one value occurs) of the float's sign and exponent (its
/// bits 23-31) among the values that occur on the axis (`codes`, sorted).
/// Lossless: codes[a][index] << 23 | mantissa are the float's bits.
struct FloatLayout {
  std::vector<uint32_t> codes[3];
  uint8_t bits[3] = {0, 0, 0};
  /// Bits of one vertex's record.
  uint32_t record_bits() const { return 69u + bits[0] + bits[1] + bits[2]; }
  /// Bytes of `n` records (then 16 bytes of padding) and of the codes.
  size_t Bytes(size_t n) const;
};
/// The layout of `vertices`, every coordinate exactly a float32.
FloatLayout LayoutFloats(VertexInput vertices);
/// True when the packed layout takes fewer bytes than plain float32 (12 a
/// vertex): the mesh then keeps its float vertices so.
bool PackFloats(const FloatLayout& layout, size_t n);

/// Bytes the vertices take stored with `fine` apart (as TriangleMesh does).
size_t VertexBytes(VertexInput vertices, const std::vector<bool>& fine);

/// Bytes the mesh stores `vertices` in, and in `fine` (one flag per vertex,
/// or empty) the vertices it keeps apart as float32 or doubles so that the
/// rest pack on a coarser grid: chosen when that takes fewer bytes.
size_t PlanVertices(VertexInput vertices, std::vector<bool>* fine);

/// How a mesh stores its vertices: PlanVertices' choice for them, or, when
/// every coordinate is a decimal of k places written from a float32 (k the
/// most any axis needs), the mesh has at most 65,536 vertices and that takes
/// fewer bytes, for those floats.
struct VertexPlan {
  size_t bytes = 0;
  /// PlanVertices' flags for the vertices stored (`floats` when not empty).
  std::vector<bool> fine;
  /// -1, or the places of the decimals: the mesh stores `floats` (three a
  /// vertex, FloatOfDecimal) and reads each through DecimalOfFloat.
  int places = -1;
  std::vector<float> floats;
};
VertexPlan PlanStorage(VertexInput vertices);

}  // namespace hitbox::mesh_vertices
