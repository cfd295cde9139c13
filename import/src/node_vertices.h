// A level node's vertex positions in the narrowest exact form its file
// gives: float32 x, y, z triples (glTF; a scene file's mesh while every
// value is a float32), int32 decimals over one power of ten (an OBJ of short
// decimals), else doubles. Read by index as doubles, copied and resized in
// their own form, and handed to the mesh build without widening (half the
// bytes of doubles while a large level loads). Internal to hitbox_import.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"

namespace hitbox::import {

using Triangle = std::array<uint32_t, 3>;

class NodeVertices {
 public:
  enum class Form : uint8_t { kDoubles, kFloats, kDecimals };

  NodeVertices() = default;
  explicit NodeVertices(std::vector<Vec3> doubles) : doubles_(std::move(doubles)) {}
  /// x, y, z a vertex.
  static NodeVertices Floats(std::vector<float> xyz) {
    NodeVertices v;
    v.form_ = Form::kFloats;
    v.floats_ = std::move(xyz);
    return v;
  }
  /// x, y, z a vertex, each DecimalValue(q, divisor).
  static NodeVertices Decimals(std::vector<int32_t> q, double divisor) {
    NodeVertices v;
    v.form_ = Form::kDecimals;
    v.decimals_ = std::move(q);
    v.divisor_ = divisor;
    return v;
  }

  Form form() const { return form_; }
  /// The decimals' divisor (1 for the other forms).
  double divisor() const { return divisor_; }
  size_t size() const {
    switch (form_) {
      case Form::kFloats: return floats_.size() / 3;
      case Form::kDecimals: return decimals_.size() / 3;
      case Form::kDoubles: break;
    }
    return doubles_.size();
  }
  bool empty() const { return size() == 0; }
  /// Coordinate `axis` of vertex `i`, exact.
  double Coordinate(size_t i, int axis) const {
    const size_t at = 3 * i + static_cast<size_t>(axis);
    switch (form_) {
      case Form::kFloats: return floats_[at];
      case Form::kDecimals: return DecimalValue(decimals_[at], divisor_);
      case Form::kDoubles: break;
    }
    return doubles_[i][axis];
  }
  Vec3 operator[](size_t i) const {
    if (form_ == Form::kDoubles) return doubles_[i];
    return {Coordinate(i, 0), Coordinate(i, 1), Coordinate(i, 2)};
  }
  /// The doubles (the kDoubles form; what Bake leaves unless it keeps a
  /// narrow form).
  const std::vector<Vec3>& doubles() const { return doubles_; }

  /// `n` vertices of this form (and divisor), all zero.
  NodeVertices Like(size_t n) const {
    NodeVertices v;
    v.form_ = form_;
    v.divisor_ = divisor_;
    v.Resize(n);
    return v;
  }
  /// Vertex `from` into slot `to` of `out`, which has this form (and may be
  /// this array).
  void CopyTo(size_t from, size_t to, NodeVertices* out) const {
    switch (form_) {
      case Form::kFloats: std::copy_n(&floats_[3 * from], 3, &out->floats_[3 * to]); return;
      case Form::kDecimals: std::copy_n(&decimals_[3 * from], 3, &out->decimals_[3 * to]); return;
      case Form::kDoubles: out->doubles_[to] = doubles_[from]; return;
    }
  }
  /// Appends vertex `from` of `source`, which has this form.
  void Append(const NodeVertices& source, size_t from) {
    switch (form_) {
      case Form::kFloats:
        floats_.insert(floats_.end(), &source.floats_[3 * from], &source.floats_[3 * from + 3]);
        return;
      case Form::kDecimals:
        decimals_.insert(decimals_.end(), &source.decimals_[3 * from],
                         &source.decimals_[3 * from + 3]);
        return;
      case Form::kDoubles: doubles_.push_back(source.doubles_[from]); return;
    }
  }
  /// Appends float32 x, y, z triples: to a float form, or an empty array
  /// (which becomes one), as they are, the first ones without a copy; to
  /// another form, each as Push takes it.
  void AppendFloats(std::vector<float>&& xyz) {
    if (empty() && form_ != Form::kFloats) *this = Floats({});
    if (form_ != Form::kFloats) {
      for (size_t i = 0; i + 2 < xyz.size(); i += 3) Push({xyz[i], xyz[i + 1], xyz[i + 2]});
    } else if (floats_.empty()) {
      floats_ = std::move(xyz);
    } else {
      floats_.insert(floats_.end(), xyz.begin(), xyz.end());
    }
  }
  /// Appends `v`: on a float form (Floats({})), as float32 while every
  /// coordinate so far is a float32 value, then every vertex as doubles (a
  /// decimal form is widened first too).
  void Push(const Vec3& v) {
    if (form_ == Form::kFloats && IsExactFloat(v.x) && IsExactFloat(v.y) && IsExactFloat(v.z)) {
      floats_.insert(floats_.end(),
                     {static_cast<float>(v.x), static_cast<float>(v.y), static_cast<float>(v.z)});
      return;
    }
    if (form_ != Form::kDoubles) Widen(nullptr, size() + 1);
    doubles_.push_back(v);
  }
  void Reserve(size_t n) {
    switch (form_) {
      case Form::kFloats: floats_.reserve(3 * n); return;
      case Form::kDecimals: decimals_.reserve(3 * n); return;
      case Form::kDoubles: doubles_.reserve(n); return;
    }
  }
  /// Keeps the first `n` vertices (or adds zero ones).
  void Resize(size_t n) {
    switch (form_) {
      case Form::kFloats: floats_.resize(3 * n); return;
      case Form::kDecimals: decimals_.resize(3 * n); return;
      case Form::kDoubles: doubles_.resize(n); return;
    }
  }
  /// Frees the arrays (the form stays).
  void Release() {
    std::vector<Vec3>().swap(doubles_);
    std::vector<float>().swap(floats_);
    std::vector<int32_t>().swap(decimals_);
  }

  /// Applies `bake` to every vertex: in place as floats when every result
  /// is a float32 value and `keep_narrow`, as decimals when `bake` is the
  /// identity and `keep_narrow`, else widened to doubles.
  void Bake(const Mat33& bake, bool keep_narrow) {
    switch (form_) {
      case Form::kDoubles:
        for (Vec3& v : doubles_) v = bake * v;
        return;
      case Form::kDecimals:
        if (keep_narrow && IsIdentity(bake)) {
          // The identity keeps a coordinate but for a zero's sign: the
          // product's sign is stored, as doubles would hold it.
          for (size_t i = 0; i < size(); ++i) {
            const Vec3 b = bake * (*this)[i];
            for (int a = 0; a < 3; ++a) {
              if (b[a] == 0.0) decimals_[3 * i + a] = std::signbit(b[a]) ? kDecimalNegativeZero : 0;
            }
          }
          return;
        }
        break;
      case Form::kFloats: {
        const auto exact = [&] {
          for (size_t i = 0; i < size(); ++i) {
            const Vec3 b = bake * (*this)[i];
            if (!IsExactFloat(b.x) || !IsExactFloat(b.y) || !IsExactFloat(b.z)) return false;
          }
          return true;
        };
        if (keep_narrow && exact()) {
          for (size_t i = 0; i < size(); ++i) {
            const Vec3 b = bake * (*this)[i];
            for (int a = 0; a < 3; ++a) floats_[3 * i + a] = static_cast<float>(b[a]);
          }
          return;
        }
        break;
      }
    }
    Widen(&bake, size());
  }

  /// The mesh of these vertices and `triangles` (both consumed: the build
  /// frees them as it goes).
  Result<Shape> MakeMesh(std::vector<Triangle> triangles) {
    switch (form_) {
      case Form::kFloats:
        return Shape::Make(FloatTriangleMeshShape{std::move(floats_), std::move(triangles)});
      case Form::kDecimals:
        return Shape::Make(
            DecimalTriangleMeshShape{std::move(decimals_), divisor_, std::move(triangles)});
      case Form::kDoubles: break;
    }
    return Shape::Make(TriangleMeshShape{std::move(doubles_), std::move(triangles)});
  }

 private:
  static bool IsIdentity(const Mat33& m) {
    const Mat33 one = Mat33::Identity();
    return m.row[0] == one.row[0] && m.row[1] == one.row[1] && m.row[2] == one.row[2];
  }
  /// Replaces the floats or decimals by their doubles, baked by `bake`
  /// when given (room for `capacity` vertices).
  void Widen(const Mat33* bake, size_t capacity) {
    std::vector<Vec3> wide;
    wide.reserve(capacity);
    for (size_t i = 0; i < size(); ++i) {
      wide.push_back(bake != nullptr ? *bake * (*this)[i] : (*this)[i]);
    }
    Release();
    doubles_ = std::move(wide);
    form_ = Form::kDoubles;
    divisor_ = 1.0;
  }

  Form form_ = Form::kDoubles;
  std::vector<Vec3> doubles_;
  std::vector<float> floats_;
  std::vector<int32_t> decimals_;
  double divisor_ = 1.0;
};

}  // namespace hitbox::import
