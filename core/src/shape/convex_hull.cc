// Convex hull construction: Shape::Make(const ConvexHull&) and ConvexHullData.
//
// The hull is built by qhull (Barber, Dobkin, Huhdanpaa, "The Quickhull
// algorithm for convex hulls", ACM TOMS 22(4), 1996), reentrant libqhull_r,
// with its default 3-d precision handling (coplanar facets merged, 'C-0').
// Input is checked first so every rejection has a clear message: point count,
// finite in-range coordinates, and a non-zero volume (the largest tetrahedron
// spanned by extreme points must have a height above 1e-9 of the diameter).
// Face offsets are then recomputed as the maximum of Dot(normal, vertex) over
// the hull's vertices, so every vertex lies inside every face plane exactly.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>

#include "geometry/gjk.h"
#include "hitbox/format.h"
#include "hitbox/shape/shapes.h"

#if defined(__AVX__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

extern "C" {
#include <libqhull_r/qhull_ra.h>
}

namespace hitbox {
namespace {

// Vertices a step of Support's scan takes: one AVX or SSE2 register.
#if defined(__AVX__)
constexpr size_t kScanLanes = 4;
#else
constexpr size_t kScanLanes = 2;
#endif

Error Bad(const std::string& what) {
  return {ErrorCode::kInvalidArgument, "convex_hull: " + what};
}

/// Height (relative to the diameter) below which the points count as coplanar.
constexpr double kFlatTolerance = 1e-9;

/// Owns one qhull run; frees it on every path.
class Qhull {
 public:
  Qhull() {
    err_ = open_memstream(&err_text_, &err_size_);
    qh_zero(&qh_, err_);
  }
  ~Qhull() {
    int curlong = 0, totlong = 0;
    qh_freeqhull(&qh_, !qh_ALL);
    qh_memfreeshort(&qh_, &curlong, &totlong);
    if (err_ != nullptr) std::fclose(err_);
    std::free(err_text_);
  }
  Qhull(const Qhull&) = delete;
  Qhull& operator=(const Qhull&) = delete;

  qhT* qh() { return &qh_; }
  std::string ErrorText() {
    if (err_ != nullptr) std::fflush(err_);
    std::string s = err_text_ != nullptr ? std::string(err_text_, err_size_) : std::string();
    const size_t nl = s.find('\n');
    return nl == std::string::npos ? s : s.substr(0, nl);
  }

 private:
  qhT qh_;
  FILE* err_ = nullptr;
  char* err_text_ = nullptr;
  size_t err_size_ = 0;
};

}  // namespace

/// Builds ConvexHullData (friend of the class).
struct ConvexHullBuilder {
  static Result<const ConvexHullData*> Build(const ConvexHull& h);
};

Result<const ConvexHullData*> ConvexHullBuilder::Build(const ConvexHull& h) {
  const std::vector<Vec3>& pts = h.points;
  const int n = static_cast<int>(pts.size());
  if (pts.size() < static_cast<size_t>(kMinHullPoints)) {
    return Bad("needs at least 4 points, got " + std::to_string(pts.size()));
  }
  if (pts.size() > static_cast<size_t>(kMaxHullPoints)) {
    return Bad("at most 256 points, got " + std::to_string(pts.size()));
  }
  static const char* kAxis[3] = {"x", "y", "z"};
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) {
      const double c = pts[i][k];
      if (!std::isfinite(c)) {
        return Bad("points[" + std::to_string(i) + "]." + kAxis[k] + " is not finite (" +
                   FormatDouble(c) + ")");
      }
      if (!(std::fabs(c) <= kMaxShapeSize)) {
        return Bad("points[" + std::to_string(i) + "]." + kAxis[k] +
                   " must be in [-1e6, 1e6] metres, got " + FormatDouble(c));
      }
    }
  }
  // Non-zero volume: extreme points p0, p1 (farthest from p0), p2 (farthest
  // from the line), p3 (farthest from the plane).
  int i0 = 0;
  for (int i = 1; i < n; ++i) {
    if (pts[i].x < pts[i0].x) i0 = i;
  }
  int i1 = i0;
  double d1 = 0.0;
  for (int i = 0; i < n; ++i) {
    const double d = (pts[i] - pts[i0]).LengthSq();
    if (d > d1) d1 = d, i1 = i;
  }
  if (d1 == 0.0) return Bad("the points are degenerate: all points coincide");
  const double diameter = std::sqrt(d1);
  const Vec3 axis = (pts[i1] - pts[i0]) / diameter;
  int i2 = i0;
  double d2 = 0.0;
  for (int i = 0; i < n; ++i) {
    const Vec3 r = pts[i] - pts[i0];
    const double d = (r - axis * Dot(r, axis)).Length();
    if (d > d2) d2 = d, i2 = i;
  }
  if (!(d2 > kFlatTolerance * diameter)) {
    return Bad("the points are degenerate (collinear, zero volume)");
  }
  const Vec3 normal = Cross(pts[i1] - pts[i0], pts[i2] - pts[i0]);
  const Vec3 unit = normal / normal.Length();
  double d3 = 0.0;
  for (int i = 0; i < n; ++i) d3 = std::max(d3, std::fabs(Dot(pts[i] - pts[i0], unit)));
  if (!(d3 > kFlatTolerance * diameter)) {
    return Bad("the points are coplanar (zero volume)");
  }

  std::vector<coordT> coords(static_cast<size_t>(n) * 3);
  for (int i = 0; i < n; ++i) {
    coords[3 * i] = pts[i].x;
    coords[3 * i + 1] = pts[i].y;
    coords[3 * i + 2] = pts[i].z;
  }
  Qhull q;
  qhT* qh = q.qh();
  char flags[] = "qhull Pp";
  const int code = qh_new_qhull(qh, 3, n, coords.data(), False, flags, nullptr, nullptr);
  if (code != 0) {
    return Bad("the points are degenerate (qhull: " + q.ErrorText() + ")");
  }

  auto data = std::make_unique<ConvexHullData>();
  data->input_points_ = pts;
  // Vertices, indexed compactly.
  std::vector<int> index_of(n, -1);
  vertexT* vertex;
  FORALLvertices {
    const int id = qh_pointid(qh, vertex->point);
    if (id < 0 || id >= n || index_of[id] >= 0) continue;
    index_of[id] = static_cast<int>(data->vertices_.size());
    data->vertices_.push_back(pts[id]);
  }
  // Planes and edges (vertex order around each facet).
  std::vector<std::pair<uint16_t, uint16_t>> edges;
  facetT* facet;
  FORALLfacets {
    const Vec3 fn{facet->normal[0], facet->normal[1], facet->normal[2]};
    const double len = fn.Length();
    if (!(len > 0.0)) continue;
    HullPlane plane;
    plane.normal = fn / len;
    setT* ordered = qh_facet3vertex(qh, facet);
    std::vector<uint16_t> ring;
    vertexT** vertexp;
    FOREACHvertex_(ordered) {
      const int id = qh_pointid(qh, vertex->point);
      if (id >= 0 && id < n && index_of[id] >= 0) ring.push_back(static_cast<uint16_t>(index_of[id]));
    }
    (void)vertexp;
    qh_settempfree(qh, &ordered);
    for (size_t k = 0; k < ring.size(); ++k) {
      uint16_t a = ring[k], b = ring[(k + 1) % ring.size()];
      if (a > b) std::swap(a, b);
      if (a != b) edges.emplace_back(a, b);
    }
    data->planes_.push_back(plane);
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  data->edges_ = std::move(edges);
  // Offsets: the largest Dot(normal, vertex), so every vertex is inside.
  for (HullPlane& p : data->planes_) {
    double off = -std::numeric_limits<double>::infinity();
    for (const Vec3& v : data->vertices_) off = std::max(off, Dot(p.normal, v));
    p.offset = off;
  }
  // Vertex adjacency (from the edges) for hill-climbing support.
  const size_t nv = data->vertices_.size();
  std::vector<uint32_t> degree(nv + 1, 0);
  for (const auto& e : data->edges_) ++degree[e.first], ++degree[e.second];
  data->adjacency_start_.assign(nv + 1, 0);
  for (size_t i = 0; i < nv; ++i) data->adjacency_start_[i + 1] = data->adjacency_start_[i] + degree[i];
  data->adjacency_.assign(data->adjacency_start_[nv], 0);
  std::vector<uint32_t> fill(data->adjacency_start_.begin(), data->adjacency_start_.end() - 1);
  for (const auto& e : data->edges_) {
    data->adjacency_[fill[e.first]++] = e.second;
    data->adjacency_[fill[e.second]++] = e.first;
  }
  // Bounds.
  Aabb b{data->vertices_[0], data->vertices_[0]};
  double r0 = 0.0;
  for (const Vec3& v : data->vertices_) {
    b = b.Union(v);
    r0 = std::max(r0, v.LengthSq());
  }
  data->bounds_ = b;
  if (nv <= ConvexHullData::kScanVertices) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    data->scan_.assign((nv + 3) / 4 * 12, nan);
    for (size_t i = 0; i < nv; ++i) {
      double* block = &data->scan_[i / kScanLanes * 3 * kScanLanes + i % kScanLanes];
      block[0] = data->vertices_[i].x;
      block[kScanLanes] = data->vertices_[i].y;
      block[2 * kScanLanes] = data->vertices_[i].z;
    }
  }
  Vec3 sum{};
  for (const Vec3& v : data->vertices_) sum += v;
  data->center_ = sum / static_cast<double>(data->vertices_.size());
  double rc = 0.0;
  for (const Vec3& v : data->vertices_) rc = std::max(rc, (v - data->center_).LengthSq());
  data->center_radius_ = std::sqrt(rc);
  data->bounding_radius_ = std::sqrt(r0);
  if (data->vertices_.size() < 4 || data->planes_.size() < 4) {
    return Bad("the points are degenerate (zero volume)");
  }
  return data.release();
}

size_t ConvexHullData::MemoryBytes() const {
  return sizeof(ConvexHullData) + vertices_.capacity() * sizeof(Vec3) +
         planes_.capacity() * sizeof(HullPlane) +
         edges_.capacity() * sizeof(std::pair<uint16_t, uint16_t>) +
         adjacency_.capacity() * sizeof(uint16_t) + adjacency_start_.capacity() * sizeof(uint32_t) +
         input_points_.capacity() * sizeof(Vec3) + scan_.capacity() * sizeof(double);
}

Vec3 ConvexHullData::Support(const Vec3& dir) const {
  const size_t nv = vertices_.size();
  if (nv <= kScanVertices) {
#if defined(__SSE2__)
    // kScanLanes vertices at a time: lane k scans vertices k, k + kScanLanes,
    // ..., keeping the first of its largest products (maxpd keeps the old
    // value unless the new one is strictly greater, so never NaN; the index
    // as a double rises with the vertices, so a max keeps the latest strict
    // increase). Then the largest lane, ties the lower index. The products
    // are Dot's (x, y, z in its order), so the vertex is the one-at-a-time
    // scan's: the first of the largest, vertex 0 when its own product is NaN
    // (nothing compares greater than it).
    double b[kScanLanes], bi[kScanLanes];
    const double* p = scan_.data();
#if defined(__AVX__)
    const __m256d dx = _mm256_set1_pd(dir.x), dy = _mm256_set1_pd(dir.y);
    const __m256d dz = _mm256_set1_pd(dir.z);
    __m256d best = _mm256_set1_pd(-std::numeric_limits<double>::infinity());
    __m256d best_i = _mm256_setzero_pd();
    __m256d i = _mm256_set_pd(3.0, 2.0, 1.0, 0.0);
    const __m256d four = _mm256_set1_pd(4.0);
    for (size_t k = 0; k < nv; k += 4, p += 12) {
      const __m256d xy = _mm256_add_pd(_mm256_mul_pd(_mm256_loadu_pd(p), dx),
                                       _mm256_mul_pd(_mm256_loadu_pd(p + 4), dy));
      const __m256d d = _mm256_add_pd(xy, _mm256_mul_pd(_mm256_loadu_pd(p + 8), dz));
      best_i = _mm256_max_pd(best_i, _mm256_and_pd(_mm256_cmp_pd(d, best, _CMP_GT_OQ), i));
      best = _mm256_max_pd(d, best);
      i = _mm256_add_pd(i, four);
    }
    _mm256_storeu_pd(b, best);
    _mm256_storeu_pd(bi, best_i);
#else
    const __m128d dx = _mm_set1_pd(dir.x), dy = _mm_set1_pd(dir.y), dz = _mm_set1_pd(dir.z);
    __m128d best = _mm_set1_pd(-std::numeric_limits<double>::infinity());
    __m128d best_i = _mm_setzero_pd();
    __m128d i = _mm_set_pd(1.0, 0.0);
    const __m128d two = _mm_set1_pd(2.0);
    auto pair = [&](const double* q) {
      const __m128d d = _mm_add_pd(
          _mm_add_pd(_mm_mul_pd(_mm_loadu_pd(q), dx), _mm_mul_pd(_mm_loadu_pd(q + 2), dy)),
          _mm_mul_pd(_mm_loadu_pd(q + 4), dz));
      best_i = _mm_max_pd(best_i, _mm_and_pd(_mm_cmpgt_pd(d, best), i));
      best = _mm_max_pd(d, best);
      i = _mm_add_pd(i, two);
    };
    for (size_t k = 0; k < nv; k += 4, p += 12) {
      pair(p);
      pair(p + 6);
    }
    _mm_storeu_pd(b, best);
    _mm_storeu_pd(bi, best_i);
#endif
    const double d0 = Dot(vertices_[0], dir);
    if (!(d0 == d0)) return vertices_[0];
    size_t lane = 0;
    for (size_t l = 1; l < kScanLanes; ++l) {
      if (b[l] > b[lane] || (b[l] == b[lane] && bi[l] < bi[lane])) lane = l;
    }
    return vertices_[static_cast<size_t>(bi[lane])];
#else
    size_t best = 0;
    double best_dot = Dot(vertices_[0], dir);
    for (size_t i = 1; i < nv; ++i) {
      const double d = Dot(vertices_[i], dir);
      if (d > best_dot) best_dot = d, best = i;
    }
    return vertices_[best];
#endif
  }
  // Hill climbing on the vertex graph: a linear function's local maximum on a
  // convex polytope's vertices is global. Strict increases only, so it ends.
  uint32_t cur = 0;
  double cur_dot = Dot(vertices_[0], dir);
  for (size_t guard = 0; guard < nv; ++guard) {
    bool moved = false;
    for (uint32_t k = adjacency_start_[cur]; k < adjacency_start_[cur + 1]; ++k) {
      const uint32_t j = adjacency_[k];
      const double d = Dot(vertices_[j], dir);
      if (d > cur_dot) cur_dot = d, cur = j, moved = true;
    }
    if (!moved) break;
  }
  return vertices_[cur];
}

Result<Shape> Shape::Make(const ConvexHull& h) {
  Result<const ConvexHullData*> built = ConvexHullBuilder::Build(h);
  if (!built.ok()) return built.error();
  Shape shape;
  shape.kind_ = ShapeKind::kConvexHull;
  shape.radius_ = 0.0;
  shape.hull_ = *built;  // (the union's active member from here)
  shape.hull_->refs_.fetch_add(1, std::memory_order_relaxed);
  return shape;
}

// ConvexCore's hull reads (geometry/gjk.h), here with the hull's support,
// which the compiler may then inline into the GJK's hull calls.
Vec3 internal::ConvexCore::HullSupport(const Vec3& dir) const { return hull->Support(dir); }
Vec3 internal::ConvexCore::HullCenter() const { return hull->center(); }
double internal::ConvexCore::HullBoundingRadius() const { return hull->bounding_radius(); }

}  // namespace hitbox
