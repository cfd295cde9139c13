#include "geometry/mesh_vertices.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <utility>

namespace hitbox::mesh_vertices {
namespace {

/// The least k in 0..9 with every coordinate on axis `a` of the vertices
/// take(i) keeps exactly q / 10^k for an integer q (|q| <= 2^53), and the
/// least and greatest such q (*lo, *hi); -1 when none.
template <typename Take>
int LeastPlaces(VertexInput vertices, int a, const Take& take, double* lo, double* hi) {
  for (int k = 0; k <= 9; ++k) {
    const double d = PowerOfTen(k);
    bool ok = true, first = true;
    for (size_t i = 0; i < vertices.size() && ok; ++i) {
      if (!take(i)) continue;
      const double q = std::nearbyint(vertices[i][a] * d);
      ok = std::fabs(q) <= 0x1p53 && q / d == vertices[i][a];
      *lo = first ? q : std::min(*lo, q);
      *hi = first ? q : std::max(*hi, q);
      first = false;
    }
    if (ok) return k;
  }
  return -1;
}

}  // namespace

double PowerOfTen(int k) {
  static constexpr double kPowers[10] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
  return kPowers[k];
}

bool ChooseDivisors(VertexInput vertices, const std::vector<bool>& fine, double divisor[3]) {
  const auto packed = [&](size_t i) { return fine.empty() || !fine[i]; };
  for (int a = 0; a < 3; ++a) {
    int best_bits = 64;
    // Decimal: the least k in 0..9 that makes every coordinate an integer.
    double q_lo = 0.0, q_hi = 0.0;
    const int places = LeastPlaces(vertices, a, packed, &q_lo, &q_hi);
    if (places >= 0) {
      const int bits = static_cast<int>(std::ceil(std::log2(q_hi - q_lo + 1.0)));
      if (bits <= 33) {
        best_bits = bits;
        divisor[a] = PowerOfTen(places);
      }
    }
    // Binary: 2^k for the most fraction bits any coordinate has.
    int k = 0;
    for (size_t i = 0; i < vertices.size(); ++i) {
      const double x = vertices[i][a];
      if (!packed(i) || x == 0.0) continue;
      int e = 0;
      const double m = std::frexp(x, &e);  // x = m 2^e, m 53 bits
      const uint64_t mant = static_cast<uint64_t>(std::fabs(std::ldexp(m, 53)));
      k = std::max(k, 53 - std::countr_zero(mant) - e);
    }
    if (k <= 1000) {
      const double d2 = std::ldexp(1.0, k);
      double lo = 0.0, hi = 0.0;
      bool ok = std::isfinite(d2), first = true;
      for (size_t i = 0; i < vertices.size() && ok; ++i) {
        if (!packed(i)) continue;
        const double q = vertices[i][a] * d2;
        ok = std::fabs(q) <= 0x1p53;
        lo = first ? q : std::min(lo, q);
        hi = first ? q : std::max(hi, q);
        first = false;
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

bool LayoutPacked(VertexInput vertices, const std::vector<bool>& fine, PackedLayout* out) {
  // The fine vertices are skipped where they lie, not copied apart.
  const auto packed = [&](size_t i) { return fine.empty() || !fine[i]; };
  if (!fine.empty()) {
    out->fine_count = static_cast<uint32_t>(
        std::count_if(fine.begin(), fine.end(), [](uint8_t f) { return f != 0; }));
  }
  if (out->fine_count == vertices.size() || !ChooseDivisors(vertices, fine, out->divisor)) {
    return false;
  }
  int64_t qmax[3];
  bool first = true;
  for (size_t i = 0; i < vertices.size(); ++i) {
    if (!packed(i)) continue;
    for (int a = 0; a < 3; ++a) {
      const int64_t q = std::llrint(vertices[i][a] * out->divisor[a]);
      out->qmin[a] = first ? q : std::min(out->qmin[a], q);
      qmax[a] = first ? q : std::max(qmax[a], q);
    }
    first = false;
  }
  for (int a = 0; a < 3; ++a) {
    uint64_t range = static_cast<uint64_t>(qmax[a] - out->qmin[a]);
    if (a == 0 && out->fine_count > 0) ++range;  // all ones is left free
    uint8_t b = 0;
    while (b < 34 && (range >> b) != 0) ++b;
    if (b > 33) return false;
    out->bits[a] = b;
  }
  if (out->fine_count > 0) {
    uint8_t index_bits = 1;
    while ((uint64_t{1} << index_bits) < out->fine_count) ++index_bits;
    if (out->bits[1] + out->bits[2] < index_bits) {
      out->bits[2] = static_cast<uint8_t>(index_bits - out->bits[1]);
      if (out->bits[2] > 33) return false;
    }
  }
  return true;
}

size_t VertexBytes(VertexInput vertices, const std::vector<bool>& fine) {
  PackedLayout layout;
  if (LayoutPacked(vertices, fine, &layout)) {
    const uint64_t record = layout.bits[0] + layout.bits[1] + layout.bits[2];
    bool fine_float = true;
    for (size_t i = 0; i < fine.size(); ++i) {
      const Vec3& v = vertices[i];
      if (fine[i]) fine_float = fine_float && IsExactFloat(v.x) && IsExactFloat(v.y) && IsExactFloat(v.z);
    }
    return (static_cast<uint64_t>(vertices.size()) * record + 7) / 8 + 16 +
           layout.fine_count * (fine_float ? 3 * sizeof(float) : sizeof(Vec3));
  }
  if (!AllExactFloats(vertices)) return vertices.size() * sizeof(Vec3);
  const FloatLayout floats = LayoutFloats(vertices);
  return PackFloats(floats, vertices.size()) ? floats.Bytes(vertices.size())
                                             : vertices.size() * 3 * sizeof(float);
}

size_t FloatLayout::Bytes(size_t n) const {
  return (static_cast<uint64_t>(n) * record_bits() + 7) / 8 + 16 +
         (codes[0].size() + codes[1].size() + codes[2].size()) * sizeof(uint32_t);
}

FloatLayout LayoutFloats(VertexInput vertices) {
  FloatLayout layout;
  for (int a = 0; a < 3; ++a) {
    bool seen[512] = {};
    for (const Vec3& v : vertices) {
      seen[std::bit_cast<uint32_t>(static_cast<float>(v[a])) >> 23] = true;
    }
    for (uint32_t c = 0; c < 512; ++c) {
      if (seen[c]) layout.codes[a].push_back(c << 23);
    }
    uint8_t bits = 0;
    while ((size_t{1} << bits) < layout.codes[a].size()) ++bits;
    layout.bits[a] = bits;
  }
  return layout;
}

bool PackFloats(const FloatLayout& layout, size_t n) {
  return layout.Bytes(n) < n * 3 * sizeof(float);
}

namespace {

/// Binary fraction bits of x (x * 2^bits is an integer), at most 63.
int FractionBits(double x) {
  if (x == 0.0) return 0;
  int e = 0;
  const double m = std::frexp(x, &e);
  const uint64_t mant = static_cast<uint64_t>(std::fabs(std::ldexp(m, 53)));
  return std::clamp(53 - std::countr_zero(mant) - e, 0, 63);
}

}  // namespace

bool AllExactFloats(VertexInput vertices) {
  return std::all_of(vertices.begin(), vertices.end(), [](const Vec3& v) {
    return IsExactFloat(v.x) && IsExactFloat(v.y) && IsExactFloat(v.z);
  });
}

float FloatOfDecimal(double x, double divisor) {
  // The nearest multiple of 2^-j for j = 0, 1, ...: the first that is a
  // float read back as x has the fewest fraction bits. A float within x's
  // rounding has at most 24 significant bits, so j stops there.
  if (!std::isfinite(x)) return std::numeric_limits<float>::quiet_NaN();
  int e = 0;
  std::frexp(x, &e);
  double scale = 1.0, step = 1.0;  // 2^j, 2^-j
  for (int j = 0; j <= 25 - e; ++j, scale *= 2.0, step *= 0.5) {
    const double g = std::nearbyint(x * scale) * step;
    if (!IsExactFloat(g)) continue;
    const float f = static_cast<float>(g);
    if (std::bit_cast<uint64_t>(DecimalOfFloat(f, divisor)) == std::bit_cast<uint64_t>(x)) {
      return f;
    }
  }
  return std::numeric_limits<float>::quiet_NaN();
}

// The split is found on the vertices' binary fraction bits per axis (one
// threshold an axis, lowered greedily while the estimate falls), then priced
// exactly.
size_t PlanVertices(VertexInput vertices, std::vector<bool>* fine) {
  fine->clear();
  const size_t uniform = VertexBytes(vertices, *fine);
  const size_t n = vertices.size();
  if (n < 64) return uniform;
  // Vertices counted by their fraction bits (x, y, z), with the extents: a
  // count a distinct key, not a key a vertex (few keys in a real mesh).
  const auto key_of = [&](size_t i) {
    uint32_t key = 0;
    for (int a = 0; a < 3; ++a) {
      key |= static_cast<uint32_t>(FractionBits(vertices[i][a])) << (8 * a);
    }
    return key;
  };
  double lo[3], hi[3];
  for (int a = 0; a < 3; ++a) lo[a] = hi[a] = vertices[0][a];
  std::unordered_map<uint32_t, uint32_t> counts;
  for (size_t i = 0; i < n; ++i) {
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min(lo[a], vertices[i][a]);
      hi[a] = std::max(hi[a], vertices[i][a]);
    }
    ++counts[key_of(i)];
  }
  std::vector<std::pair<uint32_t, uint32_t>> groups(counts.begin(), counts.end());  // key, count
  std::unordered_map<uint32_t, uint32_t>().swap(counts);
  std::sort(groups.begin(), groups.end());
  const bool all_float = AllExactFloats(vertices);
  const double fine_bits = all_float ? 96.0 : 192.0;
  // Estimated bits with thresholds t: packed vertices span the full extents.
  const auto estimate = [&](const int t[3]) {
    double packed_bits = 0.0;
    for (int a = 0; a < 3; ++a) {
      const double bits = std::ceil(std::log2(std::ldexp(hi[a] - lo[a], t[a]) + 1.0));
      if (!(bits <= 33.0)) return std::numeric_limits<double>::infinity();
      packed_bits += bits;
    }
    double packed = 0.0;
    for (const auto& [key, count] : groups) {
      bool in = true;
      for (int a = 0; a < 3; ++a) in = in && static_cast<int>((key >> (8 * a)) & 255u) <= t[a];
      if (in) packed += count;
    }
    return static_cast<double>(n) * packed_bits + (static_cast<double>(n) - packed) * fine_bits;
  };
  int t[3] = {0, 0, 0};
  for (const auto& [key, count] : groups) {
    for (int a = 0; a < 3; ++a) t[a] = std::max(t[a], static_cast<int>((key >> (8 * a)) & 255u));
  }
  double best = estimate(t);
  for (int round = 0; round < 64; ++round) {
    int best_axis = -1, best_t = 0;
    for (int a = 0; a < 3; ++a) {
      for (int v = 0; v < t[a]; ++v) {
        int u[3] = {t[0], t[1], t[2]};
        u[a] = v;
        const double e = estimate(u);
        if (e < best) {
          best = e;
          best_axis = a;
          best_t = v;
        }
      }
    }
    if (best_axis < 0) break;
    t[best_axis] = best_t;
  }
  if (!(best < 8.0 * static_cast<double>(uniform))) return uniform;
  // Price the split exactly.
  std::vector<bool> flags(n, false);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t key = key_of(i);
    for (int a = 0; a < 3; ++a) {
      if (static_cast<int>((key >> (8 * a)) & 255u) > t[a]) flags[i] = true;
    }
  }
  const size_t fine_count = static_cast<size_t>(std::count(flags.begin(), flags.end(), true));
  PackedLayout layout;
  if (fine_count == 0 || fine_count == n || !LayoutPacked(vertices, flags, &layout)) return uniform;
  const size_t split = VertexBytes(vertices, flags);
  if (split >= uniform) return uniform;
  fine->swap(flags);
  return split;
}

namespace {

/// Every coordinate as FloatOfDecimal by 10^places into *floats (three a
/// vertex); false when one has none.
bool FloatsOfDecimals(VertexInput vertices, int places, std::vector<float>* floats) {
  const double divisor = PowerOfTen(places);
  floats->resize(3 * vertices.size());
  for (size_t i = 0; i < vertices.size(); ++i) {
    const Vec3 v = vertices[i];
    for (int a = 0; a < 3; ++a) {
      (*floats)[3 * i + a] = FloatOfDecimal(v[a], divisor);
      if (std::isnan((*floats)[3 * i + a])) return false;
    }
  }
  return true;
}

/// Most vertices of a mesh whose decimals may be stored as floats: making
/// the floats costs a second copy of the vertices while the mesh loads, a
/// small part of a level's peak below this, and a mesh above it has enough
/// triangles a vertex that its decimals pack small enough as they are.
constexpr size_t kMaxDecimalFloatVertices = size_t{1} << 16;

}  // namespace

VertexPlan PlanStorage(VertexInput vertices) {
  VertexPlan plan;
  plan.bytes = PlanVertices(vertices, &plan.fine);
  if (vertices.empty() || vertices.size() > kMaxDecimalFloatVertices || AllExactFloats(vertices)) {
    return plan;
  }
  // The most places an axis needs; every coordinate then read back at them.
  const auto all = [](size_t) { return true; };
  int places = 0;
  for (int a = 0; a < 3; ++a) {
    double lo = 0.0, hi = 0.0;
    const int k = LeastPlaces(vertices, a, all, &lo, &hi);
    if (k < 0) return plan;
    places = std::max(places, k);
  }
  std::vector<float> floats;
  if (!FloatsOfDecimals(vertices, places, &floats)) return plan;
  std::vector<bool> fine;
  const size_t bytes = PlanVertices(VertexInput::Floats(floats), &fine);
  if (bytes < plan.bytes) {
    plan.bytes = bytes;
    plan.fine.swap(fine);
    plan.places = places;
    plan.floats.swap(floats);
  }
  return plan;
}

}  // namespace hitbox::mesh_vertices
