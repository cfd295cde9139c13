// Fuzz target: construction of the shapes with shared data (convex hulls,
// triangle meshes, heightfields, compounds) through core `Shape::Make` and
// through the wire (`v1::Shape` -> `wire::FromProto`), then queries against
// what was accepted.
//
// Input (decoded front to back with ByteReader, fuzz_util.h): a kind byte
// (% 4: hull, mesh, heightfield, compound), the shape, then up to 6 queries.
// Points come from a small program (new point with extreme doubles, small
// grid point, duplicate, collinear, coplanar, near-duplicate, on a sphere) so
// degenerate inputs are common; mesh indices may be out of range; heightfield
// sizes may be huge (refused before anything is allocated).
//
// Checks, beyond "no crash, no sanitizer report":
// - core and wire agree on acceptance; refusals are kInvalidArgument with a
//   message (the wire's names the field path); accepted shapes are equal and
//   round-trip core -> proto -> core.
// - an accepted hull holds its input points (every face plane, the local
//   bounds), its vertices are input points, Support is a vertex and maximal
//   over the input points; a hull whose points span a clear volume is
//   accepted (when the count and range allow).
// - raycasts, overlaps, contacts, distances and sweeps of a small convex
//   shape against accepted shapes give finite outputs, fractions in [0, 1],
//   sub_shape in range; mesh and heightfield raycasts agree with a brute force
//   over every triangle, and hull raycasts with clipping by the hull's planes,
//   wherever the answer is robust (no grazing, margins well above rounding).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "hitbox/collision/collide.h"
#include "hitbox/shape/shapes.h"
#include "hitbox/v1/hitbox.pb.h"
#include "hitbox/wire/convert.h"

namespace hitbox::fuzz {
namespace {

bool Trace() {
  static const bool on = std::getenv("HITBOX_FUZZ_TRACE") != nullptr;
  return on;
}

// Largest |component|, 0 for none.
double MaxAbs(const Vec3& v) { return std::max({std::fabs(v.x), std::fabs(v.y), std::fabs(v.z)}); }

// A point from a small program over the points read so far (`prev`): extreme
// doubles, grid points of `scale`, duplicates, collinear and coplanar points,
// near-duplicates and points on a sphere.
Vec3 ReadPoint(ByteReader& in, const std::vector<Vec3>& prev, double scale) {
  uint8_t op = in.U8() % 8;
  if (prev.empty() && op >= 3 && op <= 6) op = 2;
  auto pick = [&]() -> const Vec3& { return prev[in.U8() % prev.size()]; };
  auto small = [&]() { return static_cast<int8_t>(in.U8()); };
  switch (op) {
    case 0:
    case 1: return in.ReadVec3();
    case 2: {
      const double x = small(), y = small(), z = small();
      return Vec3{x, y, z} * scale;
    }
    case 3: return pick();
    case 4: {  // on the line through two earlier points
      const Vec3 a = pick(), b = pick();
      return a + (b - a) * (small() / 16.0);
    }
    case 5: {  // in the plane of three earlier points
      const Vec3 a = pick(), b = pick(), c = pick();
      const double s = small() / 16.0, t = small() / 16.0;
      return a + (b - a) * s + (c - a) * t;
    }
    case 6: {  // an earlier point moved by a few ulps of the scale
      const Vec3 a = pick();
      const double x = small(), y = small(), z = small();
      return a + Vec3{x, y, z} * (scale * 1e-15);
    }
    default: {  // on a sphere of radius `scale`
      const double x = small(), y = small(), z = small();
      const Vec3 d{x, y, z + 0.5};
      return d.Normalized() * scale;
    }
  }
}

double ReadScale(ByteReader& in) {
  const double s = in.Double();
  return std::isfinite(s) && s != 0.0 ? std::fabs(s) : 1.0;
}

void CheckRefusal(const Error& e, const char* what) {
  HITBOX_FUZZ_CHECK(e.code == ErrorCode::kInvalidArgument, "%s refused with code %d: %s", what,
                    static_cast<int>(e.code), e.message.c_str());
  HITBOX_FUZZ_CHECK(!e.message.empty(), "%s refused without a message", what);
}

// --- Decoding -------------------------------------------------------------

struct Input {
  ShapeKind kind = ShapeKind::kConvexHull;
  ConvexHull hull;
  TriangleMeshShape mesh;
  HeightfieldShape field;
  Compound compound;
  v1::Shape proto;  // the same shape as the wire sends it
  bool wire_refuses = false;  // the proto has a flaw core's form cannot have
};

void HullToProto(const std::vector<Vec3>& points, v1::ConvexHull* out) {
  for (const Vec3& p : points) wire::ToProto(p, out->add_points());
}

std::vector<Vec3> ReadHullPoints(ByteReader& in, size_t n) {
  const double scale = ReadScale(in);
  std::vector<Vec3> pts;
  pts.reserve(n);
  for (size_t i = 0; i < n; ++i) pts.push_back(ReadPoint(in, pts, scale));
  return pts;
}

void ReadHull(ByteReader& in, Input* x) {
  size_t n = in.U8();
  if (n == 255) n += in.U8() % 16;  // up to 270: past the limit of 256
  x->hull.points = ReadHullPoints(in, n);
  HullToProto(x->hull.points, x->proto.mutable_convex_hull());
}

// A mesh: explicit vertices and indices, or (mode & 1) a grid of quads with
// heights from a few values and random diagonals.
void ReadMesh(ByteReader& in, Input* x) {
  TriangleMeshShape& m = x->mesh;
  const uint8_t mode = in.U8();
  const double scale = ReadScale(in);
  if (mode & 1) {
    const uint32_t gx = in.U8() % 48 + 1, gz = in.U8() % 48 + 1;
    std::array<double, 4> h{};
    for (double& v : h) v = in.Double();
    for (uint32_t i = 0; i <= gx; ++i) {
      for (uint32_t j = 0; j <= gz; ++j) {
        m.vertices.push_back({i * scale, h[(i * 7 + j * 3) % 4], j * scale});
      }
    }
    const uint8_t flips = in.U8();
    for (uint32_t i = 0; i < gx; ++i) {
      for (uint32_t j = 0; j < gz; ++j) {
        const uint32_t a = i * (gz + 1) + j, b = a + 1, c = a + gz + 1, d = c + 1;
        if (((i + j) * 31 + flips) & 4) {
          m.triangles.push_back({a, b, d});
          m.triangles.push_back({a, d, c});
        } else {
          m.triangles.push_back({a, b, c});
          m.triangles.push_back({b, d, c});
        }
      }
    }
  } else {
    const size_t nv = in.U8() % 96;
    for (size_t i = 0; i < nv; ++i) m.vertices.push_back(ReadPoint(in, m.vertices, scale));
    const size_t nt = in.U8() % 128;
    for (size_t t = 0; t < nt; ++t) {
      std::array<uint32_t, 3> tri{};
      for (uint32_t& v : tri) {
        const uint8_t b = in.U8();
        v = b >= 0xF8 ? in.U32() : static_cast<uint32_t>(nv == 0 ? b : b % nv);
      }
      m.triangles.push_back(tri);
    }
  }
  v1::TriangleMesh* p = x->proto.mutable_mesh();
  for (const Vec3& v : m.vertices) wire::ToProto(v, p->add_vertices());
  for (const auto& t : m.triangles) {
    for (uint32_t i : t) p->add_indices(i);
  }
  // (mode & 2): one stray index, so indices.size() is not a multiple of 3 on
  // the wire (core has no such form: it only sees the wire's refusal).
  if (mode & 2) {
    p->add_indices(0);
    x->wire_refuses = true;
  }
}

// A heightfield: rows, cols in 0..32 (or, mode & 1, raw 32-bit sizes with at
// most 4096 heights), cell sizes, heights from up to 8 values.
void ReadHeightfield(ByteReader& in, Input* x) {
  HeightfieldShape& h = x->field;
  const uint8_t mode = in.U8();
  if (mode & 1) {
    h.rows = in.U32();
    h.cols = in.U32();
  } else {
    h.rows = in.U8() % 33;
    h.cols = in.U8() % 33;
  }
  h.cell_size_x = in.Double();
  h.cell_size_z = in.Double();
  std::array<double, 8> vals{};
  const size_t k = in.U8() % 8 + 1;
  for (size_t i = 0; i < k; ++i) vals[i] = in.Double();
  const uint64_t samples = static_cast<uint64_t>(h.rows) * h.cols;
  size_t n = static_cast<size_t>(std::min<uint64_t>(samples, 4096));
  if (mode & 2) n = (n + in.U8() % 3) % 4097;  // a wrong count, sometimes
  h.heights.resize(n);
  for (double& v : h.heights) v = vals[in.U8() % k];
  v1::Heightfield* p = x->proto.mutable_heightfield();
  p->set_rows(h.rows);
  p->set_cols(h.cols);
  p->set_cell_size_x(h.cell_size_x);
  p->set_cell_size_z(h.cell_size_z);
  for (double v : h.heights) p->add_heights(v);
}

// A compound of 0..69 children: primitives, small hulls and (refused) meshes,
// at decoded poses (raw quaternions included).
void ReadCompound(ByteReader& in, Input* x) {
  const size_t n = in.U8() % 70;
  v1::Compound* p = x->proto.mutable_compound();
  for (size_t i = 0; i < n; ++i) {
    const uint8_t sel = in.U8() % 8;
    CompoundChild child;
    v1::CompoundChild* pc = p->add_children();
    bool have_shape = true;
    if (sel == 7) {  // a small hull
      const std::vector<Vec3> pts = ReadHullPoints(in, 4 + in.U8() % 12);
      HullToProto(pts, pc->mutable_shape()->mutable_convex_hull());
      Result<Shape> s = Shape::Make(ConvexHull{pts});
      if (s.ok()) {
        child.shape = *s;
      } else {
        have_shape = false;  // the wire must refuse it too
      }
    } else if (sel == 6) {  // a one-triangle mesh: never a child
      const Vec3 a = in.ReadVec3();
      TriangleMeshShape m{{a, a + Vec3{1, 0, 0}, a + Vec3{0, 0, 1}}, {{0, 1, 2}}};
      Result<Shape> s = Shape::Make(m);
      if (s.ok()) {
        child.shape = *s;
        wire::ToProto(child.shape, pc->mutable_shape());
      } else {
        have_shape = false;
        pc->mutable_shape()->mutable_mesh();  // an empty mesh: refused
      }
    } else {
      bool valid = false;
      child.shape = in.ReadShape(&valid);
      wire::ToProto(child.shape, pc->mutable_shape());
    }
    child.pose.position = in.ReadVec3();
    child.pose.rotation = in.ReadQuat();
    wire::ToProto(child.pose.position, pc->mutable_position());
    wire::ToProto(child.pose.rotation, pc->mutable_rotation());
    if (have_shape) {
      x->compound.children.push_back(std::move(child));
    } else {
      x->compound.children.clear();  // core gets no compound: wire must refuse
      x->compound.children.resize(static_cast<size_t>(kMaxCompoundChildren) + 1);
    }
  }
}

Result<Shape> MakeCore(const Input& x) {
  switch (x.kind) {
    case ShapeKind::kConvexHull: return Shape::Make(x.hull);
    case ShapeKind::kMesh: return Shape::Make(x.mesh);
    case ShapeKind::kHeightfield: return Shape::Make(x.field);
    default: return Shape::Make(x.compound);
  }
}

// --- Core and wire agree ----------------------------------------------------

bool SameMesh(const TriangleMeshShape& a, const TriangleMeshShape& b) {
  return a.vertices == b.vertices && a.triangles == b.triangles;
}
bool SameField(const HeightfieldShape& a, const HeightfieldShape& b) {
  return a.rows == b.rows && a.cols == b.cols && a.cell_size_x == b.cell_size_x &&
         a.cell_size_z == b.cell_size_z && a.heights == b.heights;
}
// Compounds: equal children; rotations within rounding (the wire normalizes
// before core normalizes again).
bool SameShape(const Shape& a, const Shape& b) {
  if (a.kind() != b.kind()) return false;
  if (a.kind() == ShapeKind::kMesh) return SameMesh(*a.mesh_input(), *b.mesh_input());
  if (a.kind() == ShapeKind::kHeightfield) {
    return SameField(*a.heightfield_input(), *b.heightfield_input());
  }
  if (a.kind() != ShapeKind::kCompound) return a == b;
  const auto& x = a.compound()->children();
  const auto& y = b.compound()->children();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i].shape == y[i].shape) || !(x[i].pose.position == y[i].pose.position)) return false;
    const Quat& p = x[i].pose.rotation;
    const Quat& q = y[i].pose.rotation;
    if (std::fabs(p.x - q.x) + std::fabs(p.y - q.y) + std::fabs(p.z - q.z) +
            std::fabs(p.w - q.w) > 1e-14) {
      return false;
    }
  }
  return true;
}

void CheckWire(const Input& x, const Result<Shape>& core) {
  Result<Shape> w = wire::FromProto(x.proto, "shape");
  if (x.wire_refuses) {
    HITBOX_FUZZ_CHECK(!w.ok(), "wire accepted a mesh of %d indices", x.proto.mesh().indices_size());
    CheckRefusal(w.error(), "wire");
    return;
  }
  if (!w.ok()) {
    CheckRefusal(w.error(), "wire");
    HITBOX_FUZZ_CHECK(w.error().message.rfind("shape", 0) == 0,
                      "wire refusal does not name the field: %s", w.error().message.c_str());
    HITBOX_FUZZ_CHECK(!core.ok(), "wire refused what core accepts: %s",
                      w.error().message.c_str());
    return;
  }
  HITBOX_FUZZ_CHECK(core.ok(), "wire accepted what core refuses: %s",
                    core.error().message.c_str());
  HITBOX_FUZZ_CHECK(SameShape(*w, *core), "wire and core built different %s shapes",
                    ShapeKindName(core->kind()));
  v1::Shape again;
  wire::ToProto(*core, &again);
  Result<Shape> back = wire::FromProto(again, "shape");
  HITBOX_FUZZ_CHECK(back.ok(), "ToProto of an accepted %s is refused: %s",
                    ShapeKindName(core->kind()), back.error().message.c_str());
  HITBOX_FUZZ_CHECK(SameShape(*back, *core), "%s does not round-trip through the wire",
                    ShapeKindName(core->kind()));
}

// --- Hulls --------------------------------------------------------------------

// Distance of the fourth point of a greedy extreme tetrahedron from the plane
// of the first three, over `scale`: a relative measure of the points' volume
// (0 for coplanar points; clearly positive points span a solid).
double RelativeThickness(const std::vector<Vec3>& pts, double scale) {
  if (pts.size() < 4 || scale == 0.0) return 0.0;
  const Vec3 a = pts[0];
  size_t ib = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    if ((pts[i] - a).LengthSq() > (pts[ib] - a).LengthSq()) ib = i;
  }
  const Vec3 ab = pts[ib] - a;
  if (ab.LengthSq() == 0.0) return 0.0;
  size_t ic = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (Cross(ab, pts[i] - a).LengthSq() > Cross(ab, pts[ic] - a).LengthSq()) ic = i;
  }
  const Vec3 n = Cross(ab, pts[ic] - a);
  if (n.LengthSq() == 0.0) return 0.0;
  const Vec3 u = n.Normalized();
  double d = 0.0;
  for (const Vec3& p : pts) d = std::max(d, std::fabs(Dot(u, p - a)));
  // The triangle's own size matters too: a needle triangle's normal is noisy.
  return std::min(d, std::sqrt(n.Length())) / scale;
}

void CheckHull(const Input& x, const Result<Shape>& built) {
  const std::vector<Vec3>& pts = x.hull.points;
  bool in_range = pts.size() >= static_cast<size_t>(kMinHullPoints) &&
                  pts.size() <= static_cast<size_t>(kMaxHullPoints);
  double scale = 0.0;
  for (const Vec3& p : pts) {
    in_range = in_range && p.IsFinite() && MaxAbs(p) <= kMaxShapeSize;
    if (p.IsFinite()) scale = std::max(scale, MaxAbs(p));
  }
  if (!built.ok()) {
    CheckRefusal(built.error(), "hull");
    if (in_range && scale >= 1e-3) {
      const double thick = RelativeThickness(pts, scale);
      HITBOX_FUZZ_CHECK(thick < 1e-6, "hull of %zu points (scale %g, thickness %g) refused: %s",
                        pts.size(), scale, thick, built.error().message.c_str());
    }
    return;
  }
  HITBOX_FUZZ_CHECK(in_range, "hull of %zu points out of range accepted", pts.size());
  const ConvexHullData& h = *built->hull();
  const double tol = 1e-9 * scale + 1e-300;
  HITBOX_FUZZ_CHECK(h.vertices().size() >= 4 && h.planes().size() >= 4,
                    "hull with %zu vertices, %zu planes", h.vertices().size(), h.planes().size());
  for (const Vec3& v : h.vertices()) {
    HITBOX_FUZZ_CHECK(std::find(pts.begin(), pts.end(), v) != pts.end(),
                      "hull vertex %s is not an input point", ToString(v).c_str());
  }
  const Aabb b = built->LocalBounds();
  for (const HullPlane& pl : h.planes()) {
    HITBOX_FUZZ_CHECK(pl.normal.IsFinite() && std::fabs(pl.normal.Length() - 1.0) < 1e-9 &&
                          std::isfinite(pl.offset),
                      "hull plane normal %s offset %g", ToString(pl.normal).c_str(), pl.offset);
  }
  for (size_t i = 0; i < pts.size(); ++i) {
    const Vec3& p = pts[i];
    for (const HullPlane& pl : h.planes()) {
      // qhull merges nearly coplanar facets: a point may stand out by its
      // rounding tolerance, a few ulps of the scale.
      const double out = Dot(pl.normal, p) - pl.offset;
      HITBOX_FUZZ_CHECK(out <= 1e-9 * scale,
                        "input point %zu %s is %g outside a hull plane (scale %g)", i,
                        ToString(p).c_str(), out, scale);
    }
    HITBOX_FUZZ_CHECK(p.x >= b.min.x - tol && p.y >= b.min.y - tol && p.z >= b.min.z - tol &&
                          p.x <= b.max.x + tol && p.y <= b.max.y + tol && p.z <= b.max.z + tol,
                      "input point %zu outside the hull's bounds", i);
    HITBOX_FUZZ_CHECK(p.Length() <= built->BoundingRadius() * (1 + 1e-12) + tol,
                      "input point %zu beyond the bounding radius", i);
  }
  // Support along the axes, the diagonals and the input points' directions.
  std::vector<Vec3> dirs;
  for (int i = 0; i < 27; ++i) {
    const Vec3 d{i % 3 - 1.0, (i / 3) % 3 - 1.0, i / 9 - 1.0};
    if (d.LengthSq() > 0) dirs.push_back(d);
  }
  for (size_t i = 0; i < pts.size() && i < 32; ++i) {
    if (pts[i].LengthSq() > 0) dirs.push_back(pts[i]);
  }
  for (const Vec3& d : dirs) {
    const Vec3 s = h.Support(d);
    HITBOX_FUZZ_CHECK(std::find(h.vertices().begin(), h.vertices().end(), s) != h.vertices().end(),
                      "Support(%s) = %s is not a vertex", ToString(d).c_str(), ToString(s).c_str());
    HITBOX_FUZZ_CHECK(built->Support(d) == s, "Shape::Support and the hull's differ");
    const Vec3 u = d.Normalized();
    const double best = Dot(u, s);
    for (const Vec3& p : pts) {
      HITBOX_FUZZ_CHECK(Dot(u, p) <= best + 1e-9 * scale,
                        "Support(%s) = %s, but input point %s is farther by %g (%zu vertices)",
                        ToString(d).c_str(), ToString(s).c_str(), ToString(p).c_str(),
                        Dot(u, p) - best, h.vertices().size());
    }
  }
}

// --- Brute-force references -----------------------------------------------------

struct Expect {
  bool any_uncertain = false;  // a triangle or plane whose answer is not robust
  bool robust_hit = false;
  double robust_t = 2.0;       // earliest robust hit
  double lower_t = 2.0;        // earliest possible hit of any kind
  double tol = 1e-6;           // on the fraction
};

// Ray (o + t d, t in [0, 1]) against triangle abc, all in one frame: robust
// when the ray is not grazing, the hit point is well inside or outside the
// triangle and t is well inside or outside [0, 1].
void RayTriangle(const Vec3& o, const Vec3& d, const Vec3& a, const Vec3& b, const Vec3& c,
                 Expect* e) {
  const Vec3 e1 = b - a, e2 = c - a;
  const Vec3 n = Cross(e1, e2);
  const double nn = n.Length();
  if (nn == 0.0) return;  // dropped by core
  const double size = std::max({e1.Length(), e2.Length(), (c - b).Length()});
  const double scale = std::max({MaxAbs(o), MaxAbs(a), MaxAbs(b), MaxAbs(c), MaxAbs(o + d)});
  const double dl = d.Length();
  const double denom = Dot(d, n);
  // Both ends of the ray clearly on one side of the plane: a certain miss.
  const double d0 = Dot(o - a, n) / nn, d1 = Dot(o + d - a, n) / nn;
  const double m = 1e-8 * scale;
  if ((d0 > m && d1 > m) || (d0 < -m && d1 < -m)) return;
  // Conditioning: rounding of coordinates near `scale` must stay far below
  // the triangle's size and the ray's length, the triangle no sliver.
  const bool well_shaped = nn >= 1e-3 * size * size && size >= 1e-6 * scale && dl >= 1e-4 * scale;
  if (!well_shaped || std::fabs(denom) < 1e-3 * dl * nn) {
    // Grazing or badly conditioned: anything may happen, a hit may be early.
    e->any_uncertain = true;
    e->lower_t = 0.0;
    return;
  }
  const double t = Dot(a - o, n) / denom;
  const Vec3 p = o + d * t;
  // Barycentric weights from signed areas.
  const double w0 = Dot(Cross(c - b, p - b), n) / (nn * nn);
  const double w1 = Dot(Cross(a - c, p - c), n) / (nn * nn);
  const double w2 = 1.0 - w0 - w1;
  const double wmin = std::min({w0, w1, w2});
  const double tm = 1e-6;  // margins, far above the rounding allowed above
  const double wm = 1e-6;
  const bool inside = wmin >= wm, outside = wmin <= -wm;
  const bool t_in = t >= tm && t <= 1.0 - tm, t_out = t < -tm || t > 1.0 + tm;
  if (inside && t_in) {
    e->robust_hit = true;
    e->robust_t = std::min(e->robust_t, t);
    e->lower_t = std::min(e->lower_t, t);
  } else if (!(outside || t_out)) {
    e->any_uncertain = true;
    e->lower_t = std::min(e->lower_t, std::max(0.0, t));
  }
}

// Every triangle of a mesh or heightfield as it was given (indices in range,
// zero-area ones skipped by RayTriangle as core drops them).
template <typename F>
void ForEachTriangle(const Shape& s, F&& f) {
  if (s.kind() == ShapeKind::kMesh) {
    const TriangleMeshShape m = *s.mesh_input();
    for (const auto& t : m.triangles) f(m.vertices[t[0]], m.vertices[t[1]], m.vertices[t[2]]);
    return;
  }
  const HeightfieldShape& h = *s.heightfield_input();
  auto p = [&](uint32_t r, uint32_t c) {
    return Vec3{c * h.cell_size_x, h.heights[static_cast<size_t>(r) * h.cols + c], r * h.cell_size_z};
  };
  for (uint32_t r = 0; r + 1 < h.rows; ++r) {
    for (uint32_t c = 0; c + 1 < h.cols; ++c) {
      f(p(r, c), p(r + 1, c), p(r + 1, c + 1));
      f(p(r, c), p(r + 1, c + 1), p(r, c + 1));
    }
  }
}

size_t SubShapeCount(const Shape& s) {
  switch (s.kind()) {
    case ShapeKind::kMesh: return s.mesh_input_triangles();
    case ShapeKind::kHeightfield: {
      const HeightfieldShape& h = *s.heightfield_input();
      return 2 * static_cast<size_t>(h.rows - 1) * (h.cols - 1);
    }
    case ShapeKind::kCompound: return s.compound()->children().size();
    default: return 1;
  }
}

// Ray against the hull's planes (slabs, one per face plane), with margins
// `m` in length (GJK stops within 1e-9 m, rounding at ~1e-16 of the scale).
Expect RayHull(const Vec3& o, const Vec3& d, const ConvexHullData& h) {
  Expect e;
  const double scale = std::max({MaxAbs(o), MaxAbs(o + d), h.bounding_radius()});
  const double dl = d.Length();
  const double m = 1e-7 * scale + 1e-7;
  if (dl <= 1e3 * m) {  // short ray: no robust answer
    e.any_uncertain = true;
    e.lower_t = 0.0;
    return e;
  }
  const double tm = 1e3 * m / dl;  // the margin in t (|den| >= 1e-3 dl below)
  double t0 = 0.0, t1 = 1.0, max_dist = -INFINITY;
  bool uncertain = false;
  for (const HullPlane& pl : h.planes()) {
    const double dist = Dot(pl.normal, o) - pl.offset;  // > 0: outside
    const double den = Dot(pl.normal, d);
    max_dist = std::max(max_dist, dist);
    if (std::fabs(den) < 1e-3 * dl) {  // nearly parallel to this face:
      const double end = dist + den;   // its distance at t = 1
      if (dist > m && end > m) return e;  // outside its half-space all along: a miss
      if (!(dist < -m && end < -m)) uncertain = true;
      continue;
    }
    const double t = -dist / den;
    if (den < 0) {
      t0 = std::max(t0, t);
    } else {
      t1 = std::min(t1, t);
    }
  }
  if (std::fabs(max_dist) <= m) uncertain = true;  // the origin on the surface
  if (t0 > t1 + tm || t0 > 1.0 + tm) {
    if (!uncertain) return e;  // a certain miss
  }
  e.any_uncertain = true;
  e.lower_t = std::max(0.0, t0 - tm);
  e.tol = tm + 1e-6;
  if (!uncertain && t0 < t1 - tm && t0 < 1.0 - tm && (max_dist < -m || t0 > tm)) {
    e.any_uncertain = false;
    e.robust_hit = true;
    e.robust_t = t0;
  }
  return e;
}

// --- Queries ----------------------------------------------------------------

void CheckCastResult(const CastResult& r, const Shape& target, const char* what) {
  HITBOX_FUZZ_CHECK(std::isfinite(r.fraction) && r.fraction >= 0.0 && r.fraction <= 1.0,
                    "%s: fraction %.17g", what, r.fraction);
  HITBOX_FUZZ_CHECK(Finite(r.normal) && Finite(r.point) && Finite(r.depth) && r.depth >= 0.0,
                    "%s: normal %s point %s depth %g", what, ToString(r.normal).c_str(),
                    ToString(r.point).c_str(), r.depth);
  if (r.hit()) {
    HITBOX_FUZZ_CHECK(std::fabs(r.normal.Length() - 1.0) < 1e-6, "%s: normal %s not unit", what,
                      ToString(r.normal).c_str());
    HITBOX_FUZZ_CHECK(r.sub_shape < SubShapeCount(target), "%s: sub_shape %u of %zu", what,
                      r.sub_shape, SubShapeCount(target));
  }
  if (r.state == CastState::kStartedOverlapping) {
    HITBOX_FUZZ_CHECK(r.fraction == 0.0, "%s: started overlapping at %g", what, r.fraction);
  }
  if (r.state == CastState::kMiss) HITBOX_FUZZ_CHECK(r.fraction == 1.0, "%s: miss at %g", what, r.fraction);
}

void CheckAgainst(const Expect& e, const CastResult& r, const char* what) {
  const double tol = e.tol;
  if (e.robust_hit) {
    HITBOX_FUZZ_CHECK(r.hit(), "%s: missed, brute force hits at %.17g", what, e.robust_t);
    HITBOX_FUZZ_CHECK(r.fraction <= e.robust_t + tol,
                      "%s: hit at %.17g, brute force earlier at %.17g", what, r.fraction,
                      e.robust_t);
  }
  if (r.hit()) {
    HITBOX_FUZZ_CHECK(e.robust_hit || e.any_uncertain,
                      "%s: hit at %.17g (sub_shape %u), brute force misses everything", what,
                      r.fraction, r.sub_shape);
    HITBOX_FUZZ_CHECK(r.fraction >= e.lower_t - tol,
                      "%s: hit at %.17g, brute force finds nothing before %.17g", what,
                      r.fraction, e.lower_t);
  }
}

// Penetration deeper than `tol` of the probe at `at` (a pose of it) into the target.
bool Penetrates(const Shape& probe, const Pose& at, const Shape& target, const Pose& pose,
                double tol, double* depth) {
  Contact c;
  if (!ComputeContact(probe, at, target, pose, &c)) return false;
  *depth = c.depth;
  return c.depth > tol;
}

// A sweep agrees with contacts where they are clear: a miss leaves the probe
// clear of the target at both ends, a hit after the start means it was clear
// at the start, and just before the reported fraction it is clear too (a late
// hit would tunnel). "Clear" allows a penetration of 1e-6 of the scale.
void CheckSweepAgainstContacts(const Shape& probe, const Pose& ppose, const Vec3& move,
                               const Shape& target, const Pose& pose, const CastResult& r) {
  const double scale = std::max({MaxAbs(ppose.position), MaxAbs(pose.position), MaxAbs(move),
                                 probe.BoundingRadius(), target.BoundingRadius(), 1.0});
  const double tol = 1e-6 * scale;
  double depth = 0.0;
  if (r.state == CastState::kStartedOverlapping) return;
  HITBOX_FUZZ_CHECK(!Penetrates(probe, ppose, target, pose, tol, &depth),
                    "sweep: %s at the start (penetration %g), but state %d at %.17g",
                    ShapeKindName(target.kind()), depth, static_cast<int>(r.state), r.fraction);
  if (r.state == CastState::kMiss) {
    const Pose end(ppose.position + move, ppose.rotation);
    HITBOX_FUZZ_CHECK(!Penetrates(probe, end, target, pose, tol, &depth),
                      "sweep: missed the %s, but penetrates it by %g at the end",
                      ShapeKindName(target.kind()), depth);
    return;
  }
  const double back = 1e-3;  // a little before the hit (in fraction)
  if (r.fraction > back) {
    const Pose before(ppose.position + move * (r.fraction - back), ppose.rotation);
    HITBOX_FUZZ_CHECK(!Penetrates(probe, before, target, pose, tol, &depth),
                      "sweep: hit the %s at %.17g, but penetrates it by %g at %.17g",
                      ShapeKindName(target.kind()), r.fraction, depth, r.fraction - back);
  }
}

void RunQueries(ByteReader& in, const Shape& target) {
  const size_t nq = in.U8() % 7;
  for (size_t q = 0; q < nq && !in.empty(); ++q) {
    const uint8_t kind = in.U8() % 3;
    Pose pose = in.ReadPose();
    if (!pose.rotation.IsFinite() || !pose.rotation.IsNormalized(1e-9)) pose.rotation = Quat::Identity();
    if (!InCoordinateRange(pose.position)) continue;
    if (kind == 0) {  // raycast
      Vec3 origin = in.ReadVec3();
      Vec3 dir = in.ReadVec3();
      if (in.Bool() && target.kind() != ShapeKind::kCompound) {
        // Aim at the local bounds' centre, moved by up to half their size.
        const Aabb b = target.LocalBounds();
        const double ox = static_cast<int8_t>(in.U8()) / 256.0;
        const double oz = static_cast<int8_t>(in.U8()) / 256.0;
        const Vec3 aim = pose.TransformPoint(b.Center() + Mul(Vec3{ox, 0.0, oz}, b.max - b.min));
        dir = (aim - origin) * 2.0;
      }
      if (!InCoordinateRange(origin) || !InCoordinateRange(dir)) continue;
      const CastResult r = Raycast(origin, dir, target, pose);
      if (Trace()) {
        std::fprintf(stderr, "ray %s + %s vs %s at %s: state %d fraction %.17g sub %u\n",
                     ToString(origin).c_str(), ToString(dir).c_str(), ShapeKindName(target.kind()),
                     ToString(pose).c_str(), static_cast<int>(r.state), r.fraction, r.sub_shape);
      }
      CheckCastResult(r, target, "raycast");
      const Vec3 lo = pose.InverseTransformPoint(origin);
      const Vec3 ld = pose.InverseTransformDirection(dir);
      if (IsSurfaceKind(target.kind())) {
        Expect e;
        ForEachTriangle(target, [&](const Vec3& a, const Vec3& b, const Vec3& c) {
          RayTriangle(lo, ld, a, b, c, &e);
        });
        CheckAgainst(e, r, "mesh raycast");
      } else if (target.kind() == ShapeKind::kConvexHull) {
        CheckAgainst(RayHull(lo, ld, *target.hull()), r, "hull raycast");
      }
      continue;
    }
    // A small convex shape (the unit sphere when the decoded sizes are refused).
    // (Query shapes are convex: a surface or compound becomes the sphere.)
    bool valid = false;
    Shape probe = in.ReadShape(&valid);
    if (!IsConvexKind(probe.kind())) probe = Shape();
    Pose ppose = in.ReadPose();
    if (!ppose.rotation.IsFinite() || !ppose.rotation.IsNormalized(1e-9)) ppose.rotation = Quat::Identity();
    if (!InCoordinateRange(ppose.position)) continue;
    if (kind == 1) {  // overlap, contact, distance
      const bool hit = Overlap(probe, ppose, target, pose);
      Contact c;
      if (ComputeContact(probe, ppose, target, pose, &c)) {
        HITBOX_FUZZ_CHECK(Finite(c.depth) && c.depth >= 0.0 && Finite(c.normal) &&
                              Finite(c.point_a) && Finite(c.point_b),
                          "contact: depth %g normal %s", c.depth, ToString(c.normal).c_str());
      }
      (void)hit;
      if (!IsSurfaceKind(target.kind()) && target.kind() != ShapeKind::kCompound) {
        const DistanceResult d = ComputeDistance(probe, ppose, target, pose);
        HITBOX_FUZZ_CHECK(Finite(d.distance) && d.distance >= 0.0 && Finite(d.point_a) &&
                              Finite(d.point_b),
                          "distance %g", d.distance);
      }
      continue;
    }
    const Vec3 move = in.ReadVec3();  // sweep
    if (!InCoordinateRange(move)) continue;
    const CastResult r = Cast(probe, ppose, move, target, pose);
    if (Trace()) {
      std::fprintf(stderr, "sweep %s at %s by %s: state %d fraction %.17g sub %u\n",
                   probe.ToString().c_str(), ToString(ppose).c_str(), ToString(move).c_str(),
                   static_cast<int>(r.state), r.fraction, r.sub_shape);
    }
    CheckCastResult(r, target, "sweep");
    CheckSweepAgainstContacts(probe, ppose, move, target, pose, r);
  }
}

}  // namespace
}  // namespace hitbox::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hitbox;
  using namespace hitbox::fuzz;
  ByteReader in(data, size);
  Input x;
  switch (in.U8() % 4) {
    case 0: x.kind = ShapeKind::kConvexHull; ReadHull(in, &x); break;
    case 1: x.kind = ShapeKind::kMesh; ReadMesh(in, &x); break;
    case 2: x.kind = ShapeKind::kHeightfield; ReadHeightfield(in, &x); break;
    default: x.kind = ShapeKind::kCompound; ReadCompound(in, &x); break;
  }
  const Result<Shape> built = MakeCore(x);
  if (Trace()) {
    std::fprintf(stderr, "%s: %s\n", ShapeKindName(x.kind),
                 built.ok() ? built->ToString().substr(0, 300).c_str() : built.error().message.c_str());
  }
  CheckWire(x, built);
  if (x.kind == ShapeKind::kConvexHull) {
    CheckHull(x, built);
  } else if (!built.ok()) {
    CheckRefusal(built.error(), ShapeKindName(x.kind));
  }
  if (!built.ok()) return 0;
  const Aabb b = built->LocalBounds();
  HITBOX_FUZZ_CHECK(Finite(b.min) && Finite(b.max) && !b.IsEmpty(), "%s bounds %s..%s",
                    ShapeKindName(x.kind), ToString(b.min).c_str(), ToString(b.max).c_str());
  HITBOX_FUZZ_CHECK(std::isfinite(built->BoundingRadius()), "bounding radius %g",
                    built->BoundingRadius());
  RunQueries(in, *built);
  return 0;
}
