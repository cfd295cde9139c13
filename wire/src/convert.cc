#include "hitbox/wire/convert.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <utility>

#include "hitbox/format.h"

namespace hitbox::wire {
namespace {

// A field path built lazily: a chain of stack frames, turned into text only
// when an error is reported ("changes[3].add.shape.box.half_extents.y").
class Path {
 public:
  explicit Path(std::string_view root) : root_(root) {}
  Path(const Path* parent, const char* name) : parent_(parent), name_(name) {}
  Path(const Path* parent, int index) : parent_(parent), index_(index) {}

  std::string ToString() const {
    std::string s;
    Append(&s);
    return s;
  }

 private:
  void Append(std::string* s) const {
    if (parent_ == nullptr) {
      s->append(root_);
      return;
    }
    parent_->Append(s);
    if (name_ != nullptr) {
      if (!s->empty()) s->push_back('.');
      s->append(name_);
    } else {
      s->push_back('[');
      s->append(std::to_string(index_));
      s->push_back(']');
    }
  }

  const Path* parent_ = nullptr;
  std::string_view root_;
  const char* name_ = nullptr;
  int index_ = -1;
};

Error Invalid(const Path& path, std::string_view what) {
  std::string msg = path.ToString();
  msg.append(what);
  return Error{ErrorCode::kInvalidArgument, std::move(msg)};
}

// "<path> must be finite, got nan"
Status CheckFinite(double v, const Path& path) {
  if (std::isfinite(v)) return Status::Ok();
  return Invalid(path, " must be finite, got " + FormatDouble(v));
}

// "<path> must be finite and within +-1e9 metres, got 1e+308"
Status CheckCoordinate(double v, const Path& path) {
  static_assert(kMaxCoordinate == 1e9, "update the message below");
  if (!std::isfinite(v)) return Invalid(path, " must be finite, got " + FormatDouble(v));
  if (InCoordinateRange(v)) return Status::Ok();
  return Invalid(path, " must be within +-1e9 metres, got " + FormatDouble(v));
}

// "<path> must be in [1e-7, 1e6] metres, got -1": a radius or half extent.
Status CheckSize(double v, const Path& path) {
  static_assert(kMinShapeSize == 1e-7 && kMaxShapeSize == 1e6, "update the message below");
  if (v >= kMinShapeSize && v <= kMaxShapeSize) return Status::Ok();
  return Invalid(path, " must be finite and in [1e-7, 1e6] metres, got " + FormatDouble(v));
}

// "<path> must be 0 or in [1e-7, 1e6] metres, got 5e-324": a half height.
Status CheckHalfHeight(double v, const Path& path) {
  if (v == 0.0 || (v >= kMinShapeSize && v <= kMaxShapeSize)) return Status::Ok();
  return Invalid(path, " must be 0 or finite and in [1e-7, 1e6] metres, got " + FormatDouble(v));
}

// "<path>.x must be finite and in [-1e6, 1e6] metres, got 2e+06": a point of
// a shape's own geometry in its local frame (hull points, compound children).
Result<Vec3> LocalPoint(const v1::Vec3& v, const Path& path) {
  static_assert(kMaxShapeSize == 1e6, "update the message below");
  const double c[3] = {v.x(), v.y(), v.z()};
  const char* axis[3] = {"x", "y", "z"};
  for (int k = 0; k < 3; ++k) {
    if (!(std::fabs(c[k]) <= kMaxShapeSize)) {
      return Invalid(Path(&path, axis[k]),
                     " must be finite and in [-1e6, 1e6] metres, got " + FormatDouble(c[k]));
    }
  }
  return Vec3{c[0], c[1], c[2]};
}

Result<Vec3> Vec(const v1::Vec3& v, const Path& path) {
  if (Status s = CheckCoordinate(v.x(), Path(&path, "x")); !s.ok()) return s;
  if (Status s = CheckCoordinate(v.y(), Path(&path, "y")); !s.ok()) return s;
  if (Status s = CheckCoordinate(v.z(), Path(&path, "z")); !s.ok()) return s;
  return Vec3{v.x(), v.y(), v.z()};
}

Result<Quat> Rot(const v1::Quat& q, const Path& path) {
  if (Status s = CheckFinite(q.x(), Path(&path, "x")); !s.ok()) return s;
  if (Status s = CheckFinite(q.y(), Path(&path, "y")); !s.ok()) return s;
  if (Status s = CheckFinite(q.z(), Path(&path, "z")); !s.ok()) return s;
  if (Status s = CheckFinite(q.w(), Path(&path, "w")); !s.ok()) return s;
  const Quat r{q.x(), q.y(), q.z(), q.w()};
  const double norm = r.Length();
  static_assert(kQuatNormTolerance == 1e-6, "update the message below");
  if (!r.IsNormalized(kQuatNormTolerance)) {
    return Invalid(path, ": quaternion norm " + FormatDouble(norm) + " is not 1 (tolerance 1e-6)");
  }
  return r.Normalized();
}

Result<Pose> PoseOf(const v1::Pose& p, const Path& path) {
  Pose pose;
  if (p.has_position()) {
    Result<Vec3> v = Vec(p.position(), Path(&path, "position"));
    if (!v.ok()) return v.error();
    pose.position = *v;
  }
  if (p.has_rotation()) {
    Result<Quat> q = Rot(p.rotation(), Path(&path, "rotation"));
    if (!q.ok()) return q.error();
    pose.rotation = *q;
  }
  return pose;
}

Result<Shape> ShapeOf(const v1::Shape& s, const Path& path, ChangeCost* price);

// A shape build error "<prefix><rest>" from core restated under `path` as
// "<path><sep><rest>"; a built shape as it is.
Result<Shape> UnderPath(Result<Shape> r, const Path& path, std::string_view prefix,
                        std::string_view sep) {
  if (r.ok()) return r;
  std::string msg = r.error().message;
  if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
  return Invalid(path, std::string(sep) + msg);
}

// `price` (may be null): check the shape without building it, adding what
// its build will cost to *price, and return a placeholder (a unit sphere).
Result<Shape> RequiredShape(bool has, const v1::Shape& s, const Path& parent,
                            ChangeCost* price = nullptr) {
  const Path path(&parent, "shape");
  if (!has) return Invalid(path, " is required");
  return ShapeOf(s, path, price);
}

Result<Shape> CompoundOf(const v1::Compound& c, const Path& p, ChangeCost* price);

// The triangles of a mesh message as index triples, in place (the packed
// repeated field holds 3 * triangles uint32 contiguously).
std::span<const std::array<uint32_t, 3>> MeshTriangles(const v1::TriangleMesh& m) {
  static_assert(sizeof(std::array<uint32_t, 3>) == 3 * sizeof(uint32_t));
  return {reinterpret_cast<const std::array<uint32_t, 3>*>(m.indices().data()),
          static_cast<size_t>(m.indices_size() / 3)};
}

Result<Shape> ShapeOf(const v1::Shape& s, const Path& path, ChangeCost* price) {
  switch (s.kind_case()) {
    case v1::Shape::kSphere: {
      const Path p(&path, "sphere");
      if (Status st = CheckSize(s.sphere().radius(), Path(&p, "radius")); !st.ok()) return st;
      return Shape::MakeSphere(s.sphere().radius());
    }
    case v1::Shape::kBox: {
      const Path p(&path, "box");
      const Path he(&p, "half_extents");
      const v1::Vec3& e = s.box().half_extents();
      if (!s.box().has_half_extents()) return Invalid(he, " is required");
      if (Status st = CheckSize(e.x(), Path(&he, "x")); !st.ok()) return st;
      if (Status st = CheckSize(e.y(), Path(&he, "y")); !st.ok()) return st;
      if (Status st = CheckSize(e.z(), Path(&he, "z")); !st.ok()) return st;
      return Shape::MakeBox({e.x(), e.y(), e.z()});
    }
    case v1::Shape::kCapsule: {
      const Path p(&path, "capsule");
      if (Status st = CheckSize(s.capsule().radius(), Path(&p, "radius")); !st.ok()) return st;
      if (Status st = CheckHalfHeight(s.capsule().half_height(), Path(&p, "half_height"));
          !st.ok()) {
        return st;
      }
      return Shape::MakeCapsule(s.capsule().radius(), s.capsule().half_height());
    }
    case v1::Shape::kCylinder: {
      const Path p(&path, "cylinder");
      if (Status st = CheckSize(s.cylinder().radius(), Path(&p, "radius")); !st.ok()) {
        return st;
      }
      if (Status st = CheckHalfHeight(s.cylinder().half_height(), Path(&p, "half_height"));
          !st.ok()) {
        return st;
      }
      return Shape::MakeCylinder(s.cylinder().radius(), s.cylinder().half_height());
    }
    case v1::Shape::kConvexHull: {
      const Path p(&path, "convex_hull");
      const Path pts(&p, "points");
      const auto& in = s.convex_hull().points();
      static_assert(kMinHullPoints == 4 && kMaxHullPoints == 256, "update the messages below");
      if (in.size() < kMinHullPoints) {
        return Invalid(pts, " needs at least 4 points, got " + std::to_string(in.size()));
      }
      if (in.size() > kMaxHullPoints) {
        return Invalid(pts, " holds at most 256 points, got " + std::to_string(in.size()));
      }
      if (price != nullptr) {
        for (int i = 0; i < in.size(); ++i) {
          Result<Vec3> point = LocalPoint(in.Get(i), Path(&pts, i));
          if (!point.ok()) return point.error();
        }
        const uint64_t n = static_cast<uint64_t>(in.size());
        price->shape_bytes += Shape::PredictHullBytes(n);
        price->build_work += n;
        price->hull_points = std::max(price->hull_points, n);
        return Shape();
      }
      ConvexHull hull;
      hull.points.reserve(in.size());
      for (int i = 0; i < in.size(); ++i) {
        Result<Vec3> point = LocalPoint(in.Get(i), Path(&pts, i));
        if (!point.ok()) return point.error();
        hull.points.push_back(*point);
      }
      // "convex_hull: the points are coplanar (zero volume)" -> under this path.
      return UnderPath(Shape::Make(hull), p, "convex_hull: ", ": ");
    }
    case v1::Shape::kMesh: {
      const Path p(&path, "mesh");
      const v1::TriangleMesh& m = s.mesh();
      if (m.indices_size() % 3 != 0) {
        return Invalid(Path(&p, "indices"), " must hold 3 indices per triangle, got " +
                                                std::to_string(m.indices_size()));
      }
      const int tris = m.indices_size() / 3;
      if (tris == 0) return Invalid(Path(&p, "indices"), " must hold at least one triangle");
      if (static_cast<uint64_t>(tris) > kMaxWireMeshTriangles) {
        return Invalid(Path(&p, "indices"), " holds at most " +
                                                std::to_string(kMaxWireMeshTriangles) +
                                                " triangles, got " + std::to_string(tris));
      }
      TriangleMeshShape mesh;
      mesh.vertices.reserve(m.vertices_size());
      const Path verts(&p, "vertices");
      for (int i = 0; i < m.vertices_size(); ++i) {
        Result<Vec3> v = Vec(m.vertices(i), Path(&verts, i));
        if (!v.ok()) return v.error();
        mesh.vertices.push_back(*v);
      }
      const uint32_t nv = static_cast<uint32_t>(m.vertices_size());
      // Checked in place (pricing copies nothing); copied only for a build.
      for (int i = 0; i < m.indices_size(); ++i) {
        const uint32_t v = m.indices(i);
        if (v >= nv) {
          const Path indices(&p, "indices");
          return Invalid(Path(&indices, i),
                         " (triangles[" + std::to_string(i / 3) + "][" + std::to_string(i % 3) +
                             "]): vertex index " + std::to_string(v) + " out of range (" +
                             std::to_string(nv) + " vertices)");
        }
      }
      if (price == nullptr) {
        const auto in = MeshTriangles(m);
        mesh.triangles.assign(in.begin(), in.end());
      }
      if (price != nullptr) {
        const size_t bytes = Shape::PredictMeshBytes(mesh.vertices, MeshTriangles(m));
        if (bytes == 0) {  // Build would fail the same way, after its scan
          return Invalid(p, ".triangles: all " + std::to_string(tris) +
                                " triangles have zero area");
        }
        price->shape_bytes += bytes;
        price->build_work += static_cast<uint64_t>(tris);
        price->mesh_triangles = static_cast<uint64_t>(tris);
        return Shape();
      }
      // "mesh.triangles: ..." -> under this path.
      return UnderPath(Shape::Make(std::move(mesh)), p, "mesh.", ".");
    }
    case v1::Shape::kHeightfield: {
      const Path p(&path, "heightfield");
      const v1::Heightfield& h = s.heightfield();
      if (h.rows() < 2) return Invalid(Path(&p, "rows"), " must be >= 2, got " + std::to_string(h.rows()));
      if (h.cols() < 2) return Invalid(Path(&p, "cols"), " must be >= 2, got " + std::to_string(h.cols()));
      const uint64_t samples = static_cast<uint64_t>(h.rows()) * h.cols();
      if (samples > kMaxWireHeightfieldSamples) {
        return Invalid(p, ": rows * cols must be at most " +
                              std::to_string(kMaxWireHeightfieldSamples) + " samples, got " +
                              std::to_string(samples));
      }
      if (static_cast<uint64_t>(h.heights_size()) != samples) {
        return Invalid(Path(&p, "heights"), " must hold rows * cols = " + std::to_string(samples) +
                                                " heights, got " + std::to_string(h.heights_size()));
      }
      if (Status st = CheckSize(h.cell_size_x(), Path(&p, "cell_size_x")); !st.ok()) return st;
      if (Status st = CheckSize(h.cell_size_z(), Path(&p, "cell_size_z")); !st.ok()) return st;
      const Path hp(&p, "heights");
      for (int i = 0; i < h.heights_size(); ++i) {
        if (Status st = CheckCoordinate(h.heights(i), Path(&hp, i)); !st.ok()) return st;
      }
      if (price != nullptr) {
        price->shape_bytes += Shape::PredictHeightfieldBytes(
            h.rows(), h.cols(), std::span<const double>(h.heights().data(), h.heights().size()));
        price->build_work += samples / kSamplesPerWorkUnit;
        price->heightfield_samples = samples;
        return Shape();
      }
      HeightfieldShape field;
      field.rows = h.rows();
      field.cols = h.cols();
      field.cell_size_x = h.cell_size_x();
      field.cell_size_z = h.cell_size_z();
      field.heights.assign(h.heights().begin(), h.heights().end());
      Result<Shape> r = Shape::Make(field);
      if (!r.ok()) return Invalid(p, ": " + r.error().message);
      return r;
    }
    case v1::Shape::kCompound: return CompoundOf(s.compound(), Path(&path, "compound"), price);
    case v1::Shape::KIND_NOT_SET:
      break;
  }
  return Invalid(path,
                 ": no shape kind set (expected one of sphere, box, capsule, cylinder, "
                 "convex_hull, mesh, heightfield, compound)");
}

// The name of a collider-only kind (mesh, heightfield, compound), or nullptr
// for a convex kind or none.
const char* ColliderOnlyKind(const v1::Shape& s) {
  switch (s.kind_case()) {
    case v1::Shape::kMesh: return "mesh";
    case v1::Shape::kHeightfield: return "heightfield";
    case v1::Shape::kCompound: return "compound";
    default: return nullptr;
  }
}

Result<Shape> CompoundOf(const v1::Compound& c, const Path& p, ChangeCost* price) {
  const Path children(&p, "children");
  static_assert(kMinCompoundChildren == 1 && kMaxCompoundChildren == 64,
                "update the messages below");
  if (c.children_size() < kMinCompoundChildren) {
    return Invalid(children, " needs at least 1 child, got 0");
  }
  if (c.children_size() > kMaxCompoundChildren) {
    return Invalid(children,
                   " holds at most 64 children, got " + std::to_string(c.children_size()));
  }
  ChangeCost child_costs;  // the children's costs (pricing only)
  Compound compound;
  compound.children.resize(c.children_size());
  for (int i = 0; i < c.children_size(); ++i) {
    const Path ci(&children, i);
    const v1::CompoundChild& in = c.children(i);
    CompoundChild& out = compound.children[i];
    // Collider-only kinds are refused before anything is built.
    if (const char* kind = ColliderOnlyKind(in.shape()); kind != nullptr) {
      const Path sp(&ci, "shape");
      return Invalid(Path(&sp, kind), std::string(": a ") + kind +
                                          " cannot be a compound child (use sphere, box, "
                                          "capsule, cylinder or convex_hull)");
    }
    Result<Shape> shape = RequiredShape(in.has_shape(), in.shape(), ci, price ? &child_costs : nullptr);
    if (!shape.ok()) return shape.error();
    out.shape = std::move(*shape);
    if (in.has_position()) {
      Result<Vec3> v = LocalPoint(in.position(), Path(&ci, "position"));
      if (!v.ok()) return v.error();
      out.pose.position = *v;
    }
    if (in.has_rotation()) {
      Result<Quat> q = Rot(in.rotation(), Path(&ci, "rotation"));
      if (!q.ok()) return q.error();
      out.pose.rotation = *q;
    }
  }
  if (price != nullptr) {
    const uint64_t n = static_cast<uint64_t>(c.children_size());
    price->shape_bytes += Shape::PredictCompoundBytes(n, child_costs.shape_bytes);
    price->build_work += n + child_costs.build_work;
    price->hull_points = std::max(price->hull_points, child_costs.hull_points);
    return Shape();
  }
  // (Make's checks were all made above, with paths; any other would land here.)
  return UnderPath(Shape::Make(compound), p, "compound.", ".");
}


Result<Collider> ColliderOf(const v1::Collider& c, const Path& path, ChangeCost* price) {
  Collider out;
  out.id = c.id();
  Result<Shape> shape = RequiredShape(c.has_shape(), c.shape(), path, price);
  if (!shape.ok()) return shape.error();
  out.shape = *shape;
  if (c.has_pose()) {
    Result<Pose> pose = PoseOf(c.pose(), Path(&path, "pose"));
    if (!pose.ok()) return pose.error();
    out.pose = *pose;
  }
  if (c.layer() > kMaxLayer) {
    return Invalid(Path(&path, "layer"), " must be in [0, 31], got " + std::to_string(c.layer()));
  }
  out.layer = c.layer();
  out.user_data = c.user_data();
  return out;
}

// A watch: a query shape (a convex hull priced, not built, with `price`),
// an optional pose and attachment, a mask and at most kMaxIgnoreIds ids.
Result<Watch> WatchOf(const v1::Watch& in, const Path& p, ChangeCost* price) {
  Watch out;
  out.id = in.id();
  if (const char* kind = ColliderOnlyKind(in.shape()); kind != nullptr) {
    const Path sp(&p, "shape");
    return Invalid(Path(&sp, kind), std::string(": a ") + kind +
                                        " is a collider-only shape, not a watch shape (use "
                                        "sphere, box, capsule, cylinder or convex_hull)");
  }
  Result<Shape> shape = RequiredShape(in.has_shape(), in.shape(), p, price);
  if (!shape.ok()) return shape.error();
  out.shape = std::move(*shape);
  if (in.has_pose()) {
    Result<Pose> pose = PoseOf(in.pose(), Path(&p, "pose"));
    if (!pose.ok()) return pose.error();
    out.pose = *pose;
  }
  if (in.has_attach_to()) out.attach_to = in.attach_to();
  if (in.has_mask()) out.mask = in.mask();
  if (in.ignore_ids_size() > kMaxIgnoreIds) {
    return Invalid(Path(&p, "ignore_ids"), ": " + std::to_string(in.ignore_ids_size()) +
                                               " ids, at most " + std::to_string(kMaxIgnoreIds) +
                                               " allowed");
  }
  out.ignore.assign(in.ignore_ids().begin(), in.ignore_ids().end());
  return out;
}

// `price` (may be null): check without building (RequiredShape).
Result<ColliderChange> ChangeOf(const v1::ColliderChange& c, const Path& path,
                                ChangeCost* price = nullptr) {
  switch (c.change_case()) {
    case v1::ColliderChange::kAdd: {
      Result<Collider> col = ColliderOf(c.add(), Path(&path, "add"), price);
      if (!col.ok()) return col.error();
      return ColliderChange::Add(*col);
    }
    case v1::ColliderChange::kReplace: {
      Result<Collider> col = ColliderOf(c.replace(), Path(&path, "replace"), price);
      if (!col.ok()) return col.error();
      return ColliderChange::Replace(*col);
    }
    case v1::ColliderChange::kMove: {
      const Path p(&path, "move");
      if (!c.move().has_pose()) return Invalid(Path(&p, "pose"), " is required");
      Result<Pose> pose = PoseOf(c.move().pose(), Path(&p, "pose"));
      if (!pose.ok()) return pose.error();
      return ColliderChange::Move(c.move().id(), *pose);
    }
    case v1::ColliderChange::kRemove:
      return ColliderChange::Remove(c.remove());
    case v1::ColliderChange::kAddWatch: {
      Result<Watch> w = WatchOf(c.add_watch(), Path(&path, "add_watch"), price);
      if (!w.ok()) return w.error();
      return ColliderChange::AddWatch(std::move(*w));
    }
    case v1::ColliderChange::kRemoveWatch:
      return ColliderChange::RemoveWatch(c.remove_watch());
    case v1::ColliderChange::CHANGE_NOT_SET:
      break;
  }
  return Invalid(path, ": no change set (expected one of add, replace, move, remove, "
                       "add_watch, remove_watch)");
}

// `ignore`: a vector whose capacity is reused for the ignore ids (a batch
// converted again into the same queries allocates nothing for them).
Result<QueryFilter> FilterOf(const v1::QueryFilter& f, const Path& path,
                             std::vector<uint64_t>&& ignore = {}) {
  QueryFilter out;
  out.ignore = std::move(ignore);
  if (f.has_mask()) out.mask = f.mask();
  if (f.ignore_ids_size() > kMaxIgnoreIds) {
    return Invalid(Path(&path, "ignore_ids"), ": " + std::to_string(f.ignore_ids_size()) +
                                                  " ids, at most " +
                                                  std::to_string(kMaxIgnoreIds) + " allowed");
  }
  out.ignore.assign(f.ignore_ids().begin(), f.ignore_ids().end());
  out.max_hits = f.max_hits();
  return out;
}

// The required shape and optional pose (absent: identity) of an overlap or
// cast query message.
// With `from_collider` (Query.shape_from_collider set) both must be left
// out: the server fills them in from the collider.
template <typename QueryMessage>
Status PlacedShapeOf(const QueryMessage& in, const Path& p, bool from_collider, Shape* shape,
                     Pose* pose) {
  if (from_collider) {
    const char* given = in.has_shape() ? "shape" : in.has_pose() ? "pose" : nullptr;
    if (given == nullptr) return Status::Ok();
    return Invalid(Path(&p, given),
                   ": must be left out when shape_from_collider is set (the collider's shape "
                   "and pose are used)");
  }
  // Surfaces and compounds are colliders only: refused before anything is built.
  if (const char* kind = ColliderOnlyKind(in.shape()); kind != nullptr) {
    const Path sp(&p, "shape");
    return Invalid(Path(&sp, kind), std::string(": a ") + kind +
                                        " is a collider-only shape, not a query shape (use "
                                        "sphere, box, capsule, cylinder or convex_hull)");
  }
  Result<Shape> s = RequiredShape(in.has_shape(), in.shape(), p);
  if (!s.ok()) return s.error();
  *shape = *s;
  if (in.has_pose()) {
    Result<Pose> placed = PoseOf(in.pose(), Path(&p, "pose"));
    if (!placed.ok()) return placed.error();
    *pose = *placed;
  }
  return Status::Ok();
}

// "<path>: must be in [lo, hi] <unit>, got v" for an optional setting.
Status CheckSetting(double v, double lo, bool lo_open, double hi, bool hi_open, const char* unit,
                    const Path& path) {
  if (std::isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi)) {
    return Status::Ok();
  }
  return Invalid(path, std::string(": must be in ") + (lo_open ? "(" : "[") + FormatDouble(lo) +
                           ", " + FormatDouble(hi) + (hi_open ? ")" : "]") + unit + ", got " +
                           FormatDouble(v));
}

Result<MoveSettings> MoveSettingsOf(const v1::MoveSettings& in, const Path& p) {
  MoveSettings out;
  if (in.has_up()) {
    const Path up(&p, "up");
    Result<Vec3> v = Vec(in.up(), up);
    if (!v.ok()) return v.error();
    if (!(v->Length() >= 1e-6)) return Invalid(up, ": the up direction must not be zero");
    out.up = v->Normalized();
  }
  // An optional distance in metres: (0, 1e3] (or [0, 1e3] when zero_ok).
  const auto distance = [&](bool has, double v, bool zero_ok, const char* name, double* out_v) {
    if (!has) return Status::Ok();
    *out_v = v;
    return CheckSetting(v, 0, !zero_ok, kMaxMoveDistanceSetting, false, " metres",
                        Path(&p, name));
  };
  if (Status s = distance(in.has_skin_width(), in.skin_width(), false, "skin_width",
                          &out.skin_width);
      !s.ok()) {
    return s;
  }
  if (in.has_max_iterations()) {
    if (in.max_iterations() < 1 || in.max_iterations() > kMaxMoveIterations) {
      return Invalid(Path(&p, "max_iterations"),
                     ": must be in [1, " + std::to_string(kMaxMoveIterations) + "], got " +
                         std::to_string(in.max_iterations()));
    }
    out.max_iterations = static_cast<int>(in.max_iterations());
  }
  if (in.has_max_slope_degrees()) {
    out.max_slope_degrees = in.max_slope_degrees();
    if (Status s = CheckSetting(out.max_slope_degrees, 0, false, 90, true, " degrees",
                                Path(&p, "max_slope_degrees"));
        !s.ok()) {
      return s;
    }
  }
  if (Status s = distance(in.has_step_height(), in.step_height(), true, "step_height",
                          &out.step_height);
      !s.ok()) {
    return s;
  }
  if (Status s = distance(in.has_ground_snap_distance(), in.ground_snap_distance(), true,
                          "ground_snap_distance", &out.ground_snap_distance);
      !s.ok()) {
    return s;
  }
  return out;
}

Result<Query> MoveOf(const v1::MoveQuery& in, const Path& p, bool from_collider,
                     std::vector<uint64_t>&& ignore) {
  MoveQuery out;
  if (Status s = PlacedShapeOf(in, p, from_collider, &out.shape, &out.pose); !s.ok()) {
    return s.error();
  }
  Result<Vec3> d = Vec(in.displacement(), Path(&p, "displacement"));
  if (!d.ok()) return d.error();
  out.displacement = *d;
  Result<QueryFilter> filter = FilterOf(in.filter(), Path(&p, "filter"), std::move(ignore));
  if (!filter.ok()) return filter.error();
  out.filter = std::move(*filter);
  Result<MoveSettings> settings = MoveSettingsOf(in.settings(), Path(&p, "settings"));
  if (!settings.ok()) return settings.error();
  out.settings = *settings;
  if (in.has_apply_to_id()) out.apply_to_id = in.apply_to_id();
  return Query(std::move(out));
}

Result<Query> QueryKindOf(const v1::Query& q, const Path& path, std::vector<uint64_t>&& ignore) {
  const bool from_collider = q.has_shape_from_collider();
  switch (q.kind_case()) {
    case v1::Query::kOverlap: {
      const Path p(&path, "overlap");
      const v1::OverlapQuery& in = q.overlap();
      OverlapQuery out;
      if (Status s = PlacedShapeOf(in, p, from_collider, &out.shape, &out.pose); !s.ok()) {
        return s.error();
      }
      Result<QueryFilter> filter = FilterOf(in.filter(), Path(&p, "filter"), std::move(ignore));
      if (!filter.ok()) return filter.error();
      out.filter = std::move(*filter);
      out.want_contact = in.want_contact();
      return Query(std::move(out));
    }
    case v1::Query::kCast: {
      const Path p(&path, "cast");
      const v1::CastQuery& in = q.cast();
      CastQuery out;
      if (Status s = PlacedShapeOf(in, p, from_collider, &out.shape, &out.pose); !s.ok()) {
        return s.error();
      }
      Result<Vec3> t = Vec(in.translation(), Path(&p, "translation"));
      if (!t.ok()) return t.error();
      out.translation = *t;
      Result<QueryFilter> filter = FilterOf(in.filter(), Path(&p, "filter"), std::move(ignore));
      if (!filter.ok()) return filter.error();
      out.filter = std::move(*filter);
      out.all_hits = in.all_hits();
      if (Status s = CheckSetting(in.contact_offset(), 0, false, kMaxContactOffset, false,
                                  " metres", Path(&p, "contact_offset"));
          !s.ok()) {
        return s.error();
      }
      out.contact_offset = in.contact_offset();
      out.skip_started_contact = in.skip_started_contact();
      return Query(std::move(out));
    }
    case v1::Query::kRaycast: {
      if (from_collider) {
        return Invalid(Path(&path, "shape_from_collider"),
                       ": a raycast has no shape (use it on overlap, cast or move queries)");
      }
      const Path p(&path, "raycast");
      const v1::RayQuery& in = q.raycast();
      RayQuery out;
      Result<Vec3> o = Vec(in.origin(), Path(&p, "origin"));
      if (!o.ok()) return o.error();
      out.origin = *o;
      Result<Vec3> t = Vec(in.translation(), Path(&p, "translation"));
      if (!t.ok()) return t.error();
      out.translation = *t;
      Result<QueryFilter> filter = FilterOf(in.filter(), Path(&p, "filter"), std::move(ignore));
      if (!filter.ok()) return filter.error();
      out.filter = std::move(*filter);
      out.all_hits = in.all_hits();
      return Query(std::move(out));
    }
    case v1::Query::kMove:
      return MoveOf(q.move(), Path(&path, "move"), from_collider, std::move(ignore));
    case v1::Query::KIND_NOT_SET:
      break;
  }
  return Invalid(path, ": no query kind set (expected one of overlap, cast, raycast, move)");
}

// A query with its optional at_tick (a finite tick >= 0; whether the session
// still holds it is checked when it runs).
Result<Query> QueryOf(const v1::Query& q, const Path& path, std::vector<uint64_t>&& ignore = {}) {
  Result<Query> out = QueryKindOf(q, path, std::move(ignore));
  if (!out.ok()) return out;
  if (q.tag() != 0) std::visit([&q](auto& x) { x.tag = q.tag(); }, *out);
  if (!q.has_at_tick()) return out;
  const double t = q.at_tick();
  if (!(std::isfinite(t) && t >= 0.0)) {
    return Invalid(Path(&path, "at_tick"), " must be a finite tick >= 0, got " + FormatDouble(t));
  }
  std::visit([t](auto& x) { x.at_tick = t; }, *out);
  return out;
}

Vec3 V(const v1::Vec3& v) { return {v.x(), v.y(), v.z()}; }

}  // namespace

// ---------------------------------------------------------------------------

grpc::StatusCode ToGrpcCode(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorCode::kNotFound: return grpc::StatusCode::NOT_FOUND;
    case ErrorCode::kAlreadyExists: return grpc::StatusCode::ALREADY_EXISTS;
    case ErrorCode::kResourceExhausted: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case ErrorCode::kFailedPrecondition: return grpc::StatusCode::FAILED_PRECONDITION;
    case ErrorCode::kDeadlineExceeded: return grpc::StatusCode::DEADLINE_EXCEEDED;
    case ErrorCode::kCancelled: return grpc::StatusCode::CANCELLED;
    case ErrorCode::kOutOfRange: return grpc::StatusCode::OUT_OF_RANGE;
    case ErrorCode::kUnavailable: return grpc::StatusCode::UNAVAILABLE;
    case ErrorCode::kInternal: return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::INTERNAL;
}

ErrorCode FromGrpcCode(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT: return ErrorCode::kInvalidArgument;
    case grpc::StatusCode::NOT_FOUND: return ErrorCode::kNotFound;
    case grpc::StatusCode::ALREADY_EXISTS: return ErrorCode::kAlreadyExists;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return ErrorCode::kResourceExhausted;
    case grpc::StatusCode::FAILED_PRECONDITION: return ErrorCode::kFailedPrecondition;
    case grpc::StatusCode::DEADLINE_EXCEEDED: return ErrorCode::kDeadlineExceeded;
    case grpc::StatusCode::CANCELLED: return ErrorCode::kCancelled;
    case grpc::StatusCode::OUT_OF_RANGE: return ErrorCode::kOutOfRange;
    case grpc::StatusCode::UNAVAILABLE: return ErrorCode::kUnavailable;
    default: return ErrorCode::kInternal;
  }
}

const char* GrpcCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    default: return "UNKNOWN";
  }
}

grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(ToGrpcCode(status.code()), status.message());
}

Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return Status::Ok();
  const ErrorCode code = FromGrpcCode(status.error_code());
  if (code == ErrorCode::kInternal && status.error_code() != grpc::StatusCode::INTERNAL) {
    return Status(code, std::string(GrpcCodeName(status.error_code())) + ": " +
                            status.error_message());
  }
  return Status(code, status.error_message());
}

Status ValidateSessionId(std::string_view id, std::string_view field) {
  auto bad = [&](const std::string& what) {
    return Status(ErrorCode::kInvalidArgument, std::string(field) + what);
  };
  if (id.empty()) return bad(" is required (1..128 characters of [A-Za-z0-9._:-])");
  if (id.size() > kMaxSessionIdLength) {
    return bad(" is " + std::to_string(id.size()) + " characters long, at most 128 allowed");
  }
  if (id == "." || id == "..") {
    return bad(": '" + std::string(id) + "' is not allowed (it names a directory in paths and URLs)");
  }
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) {
      return bad(": character " + std::to_string(i) + " (byte " +
                 std::to_string(static_cast<unsigned char>(c)) +
                 ") is not one of [A-Za-z0-9._:-]");
    }
  }
  return Status::Ok();
}

Result<Vec3> FromProto(const v1::Vec3& v, std::string_view field) { return Vec(v, Path(field)); }
Result<Quat> FromProto(const v1::Quat& q, std::string_view field) { return Rot(q, Path(field)); }
Result<Pose> FromProto(const v1::Pose& p, std::string_view field) {
  return PoseOf(p, Path(field));
}
Result<Shape> FromProto(const v1::Shape& s, std::string_view field) {
  return ShapeOf(s, Path(field), nullptr);
}
Result<Collider> FromProto(const v1::Collider& c, std::string_view field) {
  return ColliderOf(c, Path(field), nullptr);
}
Result<ColliderChange> FromProto(const v1::ColliderChange& c, std::string_view field) {
  return ChangeOf(c, Path(field));
}
Result<QueryFilter> FromProto(const v1::QueryFilter& f, std::string_view field) {
  return FilterOf(f, Path(field));
}
Result<Query> FromProto(const v1::Query& q, std::string_view field) {
  return QueryOf(q, Path(field));
}

Status FromProto(const Repeated<v1::ColliderChange>& changes, std::vector<ColliderChange>* out,
                 std::string_view field, const std::function<Status(int)>& before_build) {
  const Path root(field);
  out->clear();
  out->reserve(changes.size());
  for (int i = 0; i < changes.size(); ++i) {
    const v1::ColliderChange& in = changes.Get(i);
    if (before_build && NeedsBuild(in)) {
      if (Status st = before_build(i); !st.ok()) return st;
    }
    Result<ColliderChange> c = ChangeOf(in, Path(&root, i));
    if (!c.ok()) return c.error();
    out->push_back(std::move(*c));
  }
  return Status::Ok();
}

bool NeedsBuild(const v1::ColliderChange& change) {
  if (change.has_add_watch()) return change.add_watch().shape().has_convex_hull();
  const v1::Collider* c = change.has_add()       ? &change.add()
                          : change.has_replace() ? &change.replace()
                                                 : nullptr;
  if (c == nullptr) return false;
  switch (c->shape().kind_case()) {
    case v1::Shape::kConvexHull:
    case v1::Shape::kMesh:
    case v1::Shape::kHeightfield:
    case v1::Shape::kCompound: return true;
    default: return false;
  }
}

bool NeedsBuild(const Repeated<v1::ColliderChange>& changes) {
  for (const v1::ColliderChange& c : changes) {
    if (NeedsBuild(c)) return true;
  }
  return false;
}

Status CheckChanges(const Repeated<v1::ColliderChange>& changes,
                    std::vector<ColliderChange>* skeletons, std::vector<ChangeCost>* costs,
                    std::string_view field) {
  const Path root(field);
  skeletons->clear();
  skeletons->reserve(changes.size());
  costs->assign(static_cast<size_t>(changes.size()), ChangeCost{});
  for (int i = 0; i < changes.size(); ++i) {
    Result<ColliderChange> c = ChangeOf(changes.Get(i), Path(&root, i), &(*costs)[i]);
    if (!c.ok()) return c.error();
    skeletons->push_back(std::move(*c));
  }
  return Status::Ok();
}

namespace {

// The fast path of a query list: the common queries converted in place with
// plain checks, no Result, Status or Path built. Each Fast* function accepts
// exactly what its general counterpart above accepts and produces the same
// value; on anything else (a failed check, a convex hull) it returns
// false and the general path converts the query again, so errors and their
// messages come from one place.

bool FastCoordinate(double v) { return std::isfinite(v) && InCoordinateRange(v); }

// A position or direction, as Vec.
bool FastVec(const v1::Vec3& v, Vec3* out) {
  const double x = v.x(), y = v.y(), z = v.z();
  if (!(FastCoordinate(x) && FastCoordinate(y) && FastCoordinate(z))) return false;
  *out = Vec3{x, y, z};
  return true;
}

// A pose, as PoseOf.
bool FastPose(const v1::Pose& p, Pose* out) {
  if (p.has_position() && !FastVec(p.position(), &out->position)) return false;
  if (p.has_rotation()) {
    const v1::Quat& q = p.rotation();
    const Quat r{q.x(), q.y(), q.z(), q.w()};
    if (!(std::isfinite(r.x) && std::isfinite(r.y) && std::isfinite(r.z) && std::isfinite(r.w)) ||
        !r.IsNormalized(kQuatNormTolerance)) {
      return false;
    }
    out->rotation = r.Normalized();
  }
  return true;
}

bool FastSize(double v) { return v >= kMinShapeSize && v <= kMaxShapeSize; }
bool FastHalfHeight(double v) { return v == 0.0 || FastSize(v); }

// A primitive shape, as ShapeOf; false for a convex hull or a collider-only kind.
bool FastShape(const v1::Shape& s, Shape* out) {
  const auto place = [out](Result<Shape> made) {
    if (!made.ok()) return false;
    *out = std::move(*made);
    return true;
  };
  switch (s.kind_case()) {
    case v1::Shape::kSphere:
      return FastSize(s.sphere().radius()) && place(Shape::MakeSphere(s.sphere().radius()));
    case v1::Shape::kBox: {
      if (!s.box().has_half_extents()) return false;
      const v1::Vec3& e = s.box().half_extents();
      return FastSize(e.x()) && FastSize(e.y()) && FastSize(e.z()) &&
             place(Shape::MakeBox({e.x(), e.y(), e.z()}));
    }
    case v1::Shape::kCapsule:
      return FastSize(s.capsule().radius()) && FastHalfHeight(s.capsule().half_height()) &&
             place(Shape::MakeCapsule(s.capsule().radius(), s.capsule().half_height()));
    case v1::Shape::kCylinder:
      return FastSize(s.cylinder().radius()) && FastHalfHeight(s.cylinder().half_height()) &&
             place(Shape::MakeCylinder(s.cylinder().radius(), s.cylinder().half_height()));
    default:
      return false;
  }
}

// A query's shape and pose, as PlacedShapeOf.
template <typename QueryMessage>
bool FastPlacedShape(const QueryMessage& in, bool from_collider, Shape* shape, Pose* pose) {
  if (from_collider) return !in.has_shape() && !in.has_pose();
  if (!in.has_shape() || !FastShape(in.shape(), shape)) return false;
  return !in.has_pose() || FastPose(in.pose(), pose);
}

// A filter, as FilterOf; `out` comes with the ignore ids' reused capacity.
bool FastFilter(const v1::QueryFilter& f, QueryFilter* out) {
  if (f.has_mask()) out->mask = f.mask();
  if (f.ignore_ids_size() > kMaxIgnoreIds) return false;
  out->ignore.assign(f.ignore_ids().begin(), f.ignore_ids().end());
  out->max_hits = f.max_hits();
  return true;
}

// A setting in its range, as CheckSetting.
bool FastSetting(double v, double lo, bool lo_open, double hi, bool hi_open) {
  return std::isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
}

// A move's settings, as MoveSettingsOf.
bool FastMoveSettings(const v1::MoveSettings& in, MoveSettings* out) {
  if (in.has_up()) {
    Vec3 v;
    if (!FastVec(in.up(), &v) || !(v.Length() >= 1e-6)) return false;
    out->up = v.Normalized();
  }
  if (in.has_skin_width()) {
    out->skin_width = in.skin_width();
    if (!FastSetting(out->skin_width, 0, true, kMaxMoveDistanceSetting, false)) return false;
  }
  if (in.has_max_iterations()) {
    if (in.max_iterations() < 1 || in.max_iterations() > kMaxMoveIterations) return false;
    out->max_iterations = static_cast<int>(in.max_iterations());
  }
  if (in.has_max_slope_degrees()) {
    out->max_slope_degrees = in.max_slope_degrees();
    if (!FastSetting(out->max_slope_degrees, 0, false, 90, true)) return false;
  }
  if (in.has_step_height()) {
    out->step_height = in.step_height();
    if (!FastSetting(out->step_height, 0, false, kMaxMoveDistanceSetting, false)) return false;
  }
  if (in.has_ground_snap_distance()) {
    out->ground_snap_distance = in.ground_snap_distance();
    if (!FastSetting(out->ground_snap_distance, 0, false, kMaxMoveDistanceSetting, false)) {
      return false;
    }
  }
  return true;
}

// The ignore ids of the query held in `slot` before, emptied: their
// capacity is reused for the query converted into it.
std::vector<uint64_t> TakeIgnoreIds(Query& slot) {
  std::vector<uint64_t> ignore =
      std::move(std::visit([](auto& x) -> QueryFilter& { return x.filter; }, slot).ignore);
  ignore.clear();
  return ignore;
}

// A query, as QueryOf, into *slot.
bool FastQuery(const v1::Query& q, Query* slot) {
  const bool from_collider = q.has_shape_from_collider();
  if (q.has_at_tick() && !(std::isfinite(q.at_tick()) && q.at_tick() >= 0.0)) return false;
  std::vector<uint64_t> ignore = TakeIgnoreIds(*slot);
  const auto finish = [&](auto&& x) {
    x.tag = q.tag();
    if (q.has_at_tick()) x.at_tick = q.at_tick();
    *slot = std::move(x);
    return true;
  };
  switch (q.kind_case()) {
    case v1::Query::kOverlap: {
      const v1::OverlapQuery& in = q.overlap();
      OverlapQuery out;
      out.filter.ignore = std::move(ignore);
      if (!FastPlacedShape(in, from_collider, &out.shape, &out.pose) ||
          !FastFilter(in.filter(), &out.filter)) {
        return false;
      }
      out.want_contact = in.want_contact();
      return finish(std::move(out));
    }
    case v1::Query::kCast: {
      const v1::CastQuery& in = q.cast();
      CastQuery out;
      out.filter.ignore = std::move(ignore);
      const double offset = in.contact_offset();
      if (!FastPlacedShape(in, from_collider, &out.shape, &out.pose) ||
          !FastVec(in.translation(), &out.translation) ||
          !FastFilter(in.filter(), &out.filter) ||
          !(std::isfinite(offset) && offset >= 0 && offset <= kMaxContactOffset)) {
        return false;
      }
      out.all_hits = in.all_hits();
      out.contact_offset = offset;
      out.skip_started_contact = in.skip_started_contact();
      return finish(std::move(out));
    }
    case v1::Query::kRaycast: {
      if (from_collider) return false;
      const v1::RayQuery& in = q.raycast();
      RayQuery out;
      out.filter.ignore = std::move(ignore);
      if (!FastVec(in.origin(), &out.origin) || !FastVec(in.translation(), &out.translation) ||
          !FastFilter(in.filter(), &out.filter)) {
        return false;
      }
      out.all_hits = in.all_hits();
      return finish(std::move(out));
    }
    case v1::Query::kMove: {
      const v1::MoveQuery& in = q.move();
      MoveQuery out;
      out.filter.ignore = std::move(ignore);
      if (!FastPlacedShape(in, from_collider, &out.shape, &out.pose) ||
          !FastVec(in.displacement(), &out.displacement) ||
          !FastFilter(in.filter(), &out.filter) ||
          !FastMoveSettings(in.settings(), &out.settings)) {
        return false;
      }
      if (in.has_apply_to_id()) out.apply_to_id = in.apply_to_id();
      return finish(std::move(out));
    }
    default:
      return false;
  }
}

}  // namespace

Status FromProto(const Repeated<v1::Query>& queries, std::vector<Query>* out,
                 std::string_view field) {
  const Path root(field);
  const size_t n = static_cast<size_t>(queries.size());
  out->resize(n);
  for (size_t i = 0; i < n; ++i) {
    const v1::Query& in = queries.Get(static_cast<int>(i));
    Query& slot = (*out)[i];
    if (FastQuery(in, &slot)) continue;
    // The general path: convex hulls, and every error.
    Result<Query> q = QueryOf(in, Path(&root, static_cast<int>(i)), TakeIgnoreIds(slot));
    if (!q.ok()) {
      out->clear();
      return q.error();
    }
    slot = std::move(*q);
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------

Vec3 ResultFromProto(const v1::Vec3& v) { return V(v); }

Aabb ResultFromProto(const v1::Aabb& b) { return Aabb(V(b.min()), V(b.max())); }

OverlapHit ResultFromProto(const v1::OverlapHit& h) {
  OverlapHit out;
  out.id = h.id();
  out.user_data = h.user_data();
  out.sub_shape = h.sub_shape();
  if (h.has_contact()) {
    Contact c;
    c.depth = h.contact().depth();
    c.normal = V(h.contact().normal());
    c.point_a = V(h.contact().point_a());
    c.point_b = V(h.contact().point_b());
    out.contact = c;
  }
  return out;
}

CastHit ResultFromProto(const v1::CastHit& h) {
  CastHit out;
  // The wire has no kFailed: a pair that gave up arrives as a hit.
  out.state = h.started_overlapping() ? CastState::kStartedOverlapping : CastState::kHit;
  out.fraction = h.fraction();
  out.normal = V(h.normal());
  out.point = V(h.point());
  out.depth = h.depth();
  out.sub_shape = h.sub_shape();
  out.id = h.id();
  out.user_data = h.user_data();
  return out;
}

MoveResult ResultFromProto(const v1::MoveResult& r) {
  MoveResult out;
  ResultFromProto(r, &out);
  return out;
}

void ResultFromProto(const v1::MoveResult& r, MoveResult* out) {
  out->position = V(r.position());
  out->displacement = V(r.displacement());
  out->contacts.clear();
  out->contacts.reserve(r.contacts_size());
  for (const v1::MoveContact& c : r.contacts()) {
    out->contacts.push_back(MoveContact{c.id(), c.sub_shape(), V(c.normal()), V(c.point())});
  }
  out->on_ground = r.on_ground();
  out->ground_id = r.ground_id();
  out->ground_sub_shape = r.ground_sub_shape();
  out->ground_normal = V(r.ground_normal());
  out->stepped = r.stepped();
  out->blocked = r.blocked();
}

QueryResult ResultFromProto(const v1::QueryResult& r) {
  QueryResult out;
  ResultFromProto(r, &out);
  return out;
}

void ResultFromProto(const v1::QueryResult& r, QueryResult* out) {
  out->tag = r.tag();
  out->truncated = r.truncated();
  if (r.has_move()) {
    ResultFromProto(r.move(), out->move ? &*out->move : &out->move.emplace());
  } else {
    out->move.reset();
  }
  out->overlaps.clear();
  out->overlaps.reserve(r.overlaps_size());
  for (const v1::OverlapHit& h : r.overlaps()) out->overlaps.push_back(ResultFromProto(h));
  out->hits.clear();
  out->hits.reserve(r.hits_size());
  for (const v1::CastHit& h : r.hits()) out->hits.push_back(ResultFromProto(h));
}

// ---------------------------------------------------------------------------

void ToProto(const Vec3& v, v1::Vec3* out) {
  out->set_x(v.x);
  out->set_y(v.y);
  out->set_z(v.z);
}

void ToProto(const Quat& q, v1::Quat* out) {
  out->set_x(q.x);
  out->set_y(q.y);
  out->set_z(q.z);
  out->set_w(q.w);
}

void ToProto(const Pose& p, v1::Pose* out) {
  ToProto(p.position, out->mutable_position());
  ToProto(p.rotation, out->mutable_rotation());
}

void ToProto(const Aabb& b, v1::Aabb* out) {
  ToProto(b.min, out->mutable_min());
  ToProto(b.max, out->mutable_max());
}

void ToProto(const Shape& s, v1::Shape* out) {
  switch (s.kind()) {
    case ShapeKind::kSphere:
      out->mutable_sphere()->set_radius(s.radius());
      break;
    case ShapeKind::kBox:
      ToProto(s.half_extents(), out->mutable_box()->mutable_half_extents());
      break;
    case ShapeKind::kCapsule:
      out->mutable_capsule()->set_radius(s.radius());
      out->mutable_capsule()->set_half_height(s.half_height());
      break;
    case ShapeKind::kCylinder:
      out->mutable_cylinder()->set_radius(s.radius());
      out->mutable_cylinder()->set_half_height(s.half_height());
      break;
    case ShapeKind::kConvexHull: {
      auto* points = out->mutable_convex_hull()->mutable_points();
      points->Reserve(static_cast<int>(s.hull()->input_points().size()));
      for (const Vec3& p : s.hull()->input_points()) ToProto(p, points->Add());
      break;
    }
    case ShapeKind::kMesh: {
      const TriangleMeshShape m = *s.mesh_input();
      auto* mesh = out->mutable_mesh();
      mesh->mutable_vertices()->Reserve(static_cast<int>(m.vertices.size()));
      for (const Vec3& v : m.vertices) ToProto(v, mesh->add_vertices());
      mesh->mutable_indices()->Reserve(static_cast<int>(3 * m.triangles.size()));
      for (const auto& t : m.triangles) {
        for (uint32_t i : t) mesh->add_indices(i);
      }
      break;
    }
    case ShapeKind::kHeightfield: {
      const HeightfieldShape& h = *s.heightfield_input();
      auto* f = out->mutable_heightfield();
      f->set_rows(h.rows);
      f->set_cols(h.cols);
      f->set_cell_size_x(h.cell_size_x);
      f->set_cell_size_z(h.cell_size_z);
      f->mutable_heights()->Assign(h.heights.begin(), h.heights.end());
      break;
    }
    case ShapeKind::kCompound: {
      auto* children = out->mutable_compound()->mutable_children();
      children->Reserve(static_cast<int>(s.compound()->children().size()));
      for (const CompoundChild& child : s.compound()->children()) {
        v1::CompoundChild* c = children->Add();
        ToProto(child.shape, c->mutable_shape());
        ToProto(child.pose.position, c->mutable_position());
        ToProto(child.pose.rotation, c->mutable_rotation());
      }
      break;
    }
  }
}

void ToProto(const Collider& c, v1::Collider* out) {
  out->set_id(c.id);
  ToProto(c.shape, out->mutable_shape());
  ToProto(c.pose, out->mutable_pose());
  out->set_layer(c.layer);
  out->set_user_data(c.user_data);
}

void ToProto(const ColliderChange& c, v1::ColliderChange* out) {
  switch (c.kind) {
    case ColliderChange::Kind::kAdd:
      ToProto(c.collider, out->mutable_add());
      break;
    case ColliderChange::Kind::kReplace:
      ToProto(c.collider, out->mutable_replace());
      break;
    case ColliderChange::Kind::kMove:
      out->mutable_move()->set_id(c.collider.id);
      ToProto(c.collider.pose, out->mutable_move()->mutable_pose());
      break;
    case ColliderChange::Kind::kRemove:
      out->set_remove(c.collider.id);
      break;
    case ColliderChange::Kind::kAddWatch:
      ToProto(*c.watch, out->mutable_add_watch());
      break;
    case ColliderChange::Kind::kRemoveWatch:
      out->set_remove_watch(c.collider.id);
      break;
  }
}

void ToProto(const Watch& w, v1::Watch* out) {
  out->set_id(w.id);
  ToProto(w.shape, out->mutable_shape());
  ToProto(w.pose, out->mutable_pose());
  if (w.attach_to) out->set_attach_to(*w.attach_to);
  out->set_mask(w.mask);
  out->mutable_ignore_ids()->Assign(w.ignore.begin(), w.ignore.end());
}

void ToProto(const WatchEvent& e, v1::WatchEvent* out) {
  out->set_watch_id(e.watch_id);
  out->set_collider_id(e.collider_id);
  out->set_kind(e.kind == WatchEvent::Kind::kEnter ? v1::WatchEvent::ENTER : v1::WatchEvent::EXIT);
  out->set_sub_shape(e.sub_shape);
  out->set_tick(e.tick);
}

WatchEvent ResultFromProto(const v1::WatchEvent& e) {
  WatchEvent out;
  out.watch_id = e.watch_id();
  out.collider_id = e.collider_id();
  out.kind = e.kind() == v1::WatchEvent::EXIT ? WatchEvent::Kind::kExit : WatchEvent::Kind::kEnter;
  out.sub_shape = e.sub_shape();
  out.tick = e.tick();
  return out;
}

Result<Watch> FromProto(const v1::Watch& w, std::string_view field) {
  return WatchOf(w, Path(field), nullptr);
}

void ToProto(const QueryFilter& f, v1::QueryFilter* out) {
  out->set_mask(f.mask);
  out->mutable_ignore_ids()->Assign(f.ignore.begin(), f.ignore.end());
  out->set_max_hits(f.max_hits);
}

namespace {

// A query message's filter, left out when it is the default (every layer, no
// ignored ids, max_hits 0), which is what a missing filter reads as
// (FilterOf): most queries of a tick send none.
template <typename QueryMessage>
void FilterToProto(const QueryFilter& f, QueryMessage* p) {
  if (f.mask == QueryFilter{}.mask && f.ignore.empty() && f.max_hits == 0) {
    p->clear_filter();
  } else {
    ToProto(f, p->mutable_filter());
  }
}

}  // namespace

void ToProto(const Query& q, v1::Query* out, bool shape_and_pose) {
  if (const auto* o = std::get_if<OverlapQuery>(&q)) {
    v1::OverlapQuery* p = out->mutable_overlap();
    if (shape_and_pose) {
      ToProto(o->shape, p->mutable_shape());
      ToProto(o->pose, p->mutable_pose());
    }
    FilterToProto(o->filter, p);
    p->set_want_contact(o->want_contact);
  } else if (const auto* c = std::get_if<CastQuery>(&q)) {
    v1::CastQuery* p = out->mutable_cast();
    if (shape_and_pose) {
      ToProto(c->shape, p->mutable_shape());
      ToProto(c->pose, p->mutable_pose());
    }
    ToProto(c->translation, p->mutable_translation());
    FilterToProto(c->filter, p);
    p->set_all_hits(c->all_hits);
    p->set_contact_offset(c->contact_offset);
    p->set_skip_started_contact(c->skip_started_contact);
  } else if (const auto* r = std::get_if<RayQuery>(&q)) {
    v1::RayQuery* p = out->mutable_raycast();
    ToProto(r->origin, p->mutable_origin());
    ToProto(r->translation, p->mutable_translation());
    FilterToProto(r->filter, p);
    p->set_all_hits(r->all_hits);
  } else if (const auto* m = std::get_if<MoveQuery>(&q)) {
    v1::MoveQuery* p = out->mutable_move();
    if (shape_and_pose) {
      ToProto(m->shape, p->mutable_shape());
      ToProto(m->pose, p->mutable_pose());
    }
    ToProto(m->displacement, p->mutable_displacement());
    FilterToProto(m->filter, p);
    ToProto(m->settings, p->mutable_settings());
    if (m->apply_to_id) p->set_apply_to_id(*m->apply_to_id);
  }
  const std::optional<double>& at =
      std::visit([](const auto& x) -> const std::optional<double>& { return x.at_tick; }, q);
  if (at) out->set_at_tick(*at);
  out->set_tag(std::visit([](const auto& x) { return x.tag; }, q));
}

void ToProto(const MoveSettings& s, v1::MoveSettings* out) {
  ToProto(s.up, out->mutable_up());
  out->set_skin_width(s.skin_width);
  out->set_max_iterations(static_cast<uint32_t>(s.max_iterations));
  out->set_max_slope_degrees(s.max_slope_degrees);
  out->set_step_height(s.step_height);
  out->set_ground_snap_distance(s.ground_snap_distance);
}

void ToProto(const MoveResult& r, v1::MoveResult* out) {
  ToProto(r.position, out->mutable_position());
  ToProto(r.displacement, out->mutable_displacement());
  out->mutable_contacts()->Reserve(static_cast<int>(r.contacts.size()));
  for (const MoveContact& c : r.contacts) {
    v1::MoveContact* pc = out->add_contacts();
    pc->set_id(c.id);
    pc->set_sub_shape(c.sub_shape);
    ToProto(c.normal, pc->mutable_normal());
    ToProto(c.point, pc->mutable_point());
  }
  out->set_on_ground(r.on_ground);
  out->set_ground_id(r.ground_id);
  out->set_ground_sub_shape(r.ground_sub_shape);
  if (r.on_ground) ToProto(r.ground_normal, out->mutable_ground_normal());
  out->set_stepped(r.stepped);
  out->set_blocked(r.blocked);
}

void ToProto(const Contact& c, v1::Contact* out) {
  out->set_depth(c.depth);
  ToProto(c.normal, out->mutable_normal());
  ToProto(c.point_a, out->mutable_point_a());
  ToProto(c.point_b, out->mutable_point_b());
}

void ToProto(const OverlapHit& h, v1::OverlapHit* out) {
  out->set_id(h.id);
  out->set_user_data(h.user_data);
  out->set_sub_shape(h.sub_shape);
  if (h.contact) ToProto(*h.contact, out->mutable_contact());
}

void ToProto(const CastHit& h, v1::CastHit* out) {
  out->set_id(h.id);
  out->set_user_data(h.user_data);
  out->set_fraction(h.fraction);
  ToProto(h.normal, out->mutable_normal());
  ToProto(h.point, out->mutable_point());
  out->set_started_overlapping(h.started_overlapping());
  out->set_depth(h.depth);
  out->set_sub_shape(h.sub_shape);
}

void ToProto(const QueryResult& r, uint64_t tag, v1::QueryResult* out) {
  out->set_tag(tag);
  out->set_truncated(r.truncated);
  // Most results of a tick hold one hit or none: no Reserve call for none.
  if (!r.overlaps.empty()) {
    out->mutable_overlaps()->Reserve(static_cast<int>(r.overlaps.size()));
    for (const OverlapHit& h : r.overlaps) ToProto(h, out->add_overlaps());
  }
  if (!r.hits.empty()) {
    out->mutable_hits()->Reserve(static_cast<int>(r.hits.size()));
    for (const CastHit& h : r.hits) ToProto(h, out->add_hits());
  }
  if (r.move) ToProto(*r.move, out->mutable_move());
}

}  // namespace hitbox::wire
