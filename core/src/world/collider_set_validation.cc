// ColliderSet validation: shapes, poses, colliders and queries, and the batch
// policy of a server (CheckBatch), each error naming its field.
#include "world/collider_set_internal.h"

#include "hitbox/format.h"

namespace hitbox {

Status Invalid(const std::string& field, const std::string& what) {
  return Status(ErrorCode::kInvalidArgument, field + ": " + what);
}

// Re-validates a shape's parameters (a Shape is valid by construction, but
// may have been copied from memory a caller filled in).
Status CheckShape(const Shape& s, const std::string& field) {
  Result<Shape> r = Shape::MakeSphere(1.0);
  switch (s.kind()) {
    case ShapeKind::kSphere: r = Shape::Make(s.AsSphere()); break;
    case ShapeKind::kBox: r = Shape::Make(s.AsBox()); break;
    case ShapeKind::kCapsule: r = Shape::Make(s.AsCapsule()); break;
    case ShapeKind::kCylinder: r = Shape::Make(s.AsCylinder()); break;
    case ShapeKind::kConvexHull:
      // Built and checked once by Shape::Make (immutable shared data).
      if (s.hull() == nullptr) return Invalid(field, "convex_hull without data");
      return Status::Ok();
    case ShapeKind::kMesh:
    case ShapeKind::kHeightfield:
      if (s.surface() == nullptr) return Invalid(field, "surface without data");
      return Status::Ok();
    case ShapeKind::kCompound:
      // Children checked once by Shape::Make (immutable shared data).
      if (s.compound() == nullptr) return Invalid(field, "compound without data");
      return Status::Ok();
    default: return Invalid(field, "unknown shape kind");
  }
  if (!r.ok()) return Invalid(field, r.error().message);
  return Status::Ok();
}

// A query shape: a valid shape of a convex kind (mesh and heightfield are
// two-sided surfaces, compounds unions of children: colliders only).
Status CheckQueryShape(const Shape& s, const std::string& field) {
  if (!IsConvexKind(s.kind())) {
    return Invalid(field, std::string(ShapeKindName(s.kind())) +
                              " is a collider-only shape, not a query shape (use sphere, box, "
                              "capsule, cylinder or convex_hull)");
  }
  return CheckShape(s, field);
}

Status CheckVec(const Vec3& v, const std::string& field) {
  if (!v.IsFinite()) return Invalid(field, "not finite " + ToString(v));
  if (!InCoordinateRange(v)) {
    return Invalid(field, "outside +-" + FormatDouble(kMaxCoordinate) + " metres " + ToString(v));
  }
  return Status::Ok();
}

Status CheckRotation(const Quat& q, const std::string& field) {
  if (!q.IsFinite()) return Invalid(field, "not finite " + ToString(q));
  const double n = q.Length();
  if (!q.IsNormalized(kQuatNormTolerance)) {  // the one rule (Quat::IsNormalized)
    return Invalid(field, "quaternion norm " + FormatDouble(n) + " is not 1 (tolerance 1e-6)");
  }
  return Status::Ok();
}

bool ValidPose(const Pose& p) {
  return p.position.IsFinite() && InCoordinateRange(p.position) && p.rotation.IsFinite() &&
         p.rotation.IsNormalized(kQuatNormTolerance);
}

Status CheckPose(const Pose& p, const std::string& field) {
  // A valid pose (nearly every one: each move's) without making the fields' names.
  if (ValidPose(p)) return Status::Ok();
  if (Status s = CheckVec(p.position, field + ".position"); !s.ok()) return s;
  return CheckRotation(p.rotation, field + ".rotation");
}

Status CheckCollider(const Collider& c, const std::string& field) {
  if (Status s = CheckShape(c.shape, field + ".shape"); !s.ok()) return s;
  if (Status s = CheckPose(c.pose, field + ".pose"); !s.ok()) return s;
  if (c.layer > kMaxLayer) {
    return Invalid(field + ".layer", std::to_string(c.layer) + " is > " + std::to_string(kMaxLayer));
  }
  return Status::Ok();
}

Status ValidateMoveSettings(const MoveSettings& s, const std::string& field) {
  if (Status st = CheckVec(s.up, field + ".up"); !st.ok()) return st;
  if (s.up.Length() < 1e-6) return Invalid(field + ".up", "must not be zero");
  const auto distance = [&](double v, const char* name, bool zero_ok) {
    if (std::isfinite(v) && (zero_ok ? v >= 0.0 : v > 0.0) && v <= kMaxMoveDistanceSetting) {
      return Status::Ok();
    }
    return Invalid(field + "." + name, std::string("must be ") + (zero_ok ? ">= 0" : "> 0") +
                                           " and <= " + FormatDouble(kMaxMoveDistanceSetting) +
                                           " m, got " + FormatDouble(v));
  };
  if (Status st = distance(s.skin_width, "skin_width", false); !st.ok()) return st;
  if (Status st = distance(s.step_height, "step_height", true); !st.ok()) return st;
  if (Status st = distance(s.ground_snap_distance, "ground_snap_distance", true); !st.ok()) {
    return st;
  }
  if (s.max_iterations < 1 || s.max_iterations > kMaxMoveIterations) {
    return Invalid(field + ".max_iterations", "must be in [1, " +
                                                  std::to_string(kMaxMoveIterations) + "], got " +
                                                  std::to_string(s.max_iterations));
  }
  if (!(s.max_slope_degrees >= 0.0 && s.max_slope_degrees < 90.0)) {
    return Invalid(field + ".max_slope_degrees",
                   "must be in [0, 90), got " + FormatDouble(s.max_slope_degrees));
  }
  return Status::Ok();
}

Status ColliderSet::ValidateQuery(const Query& q, const std::string& field) {
  if (const std::optional<double>& t = AtTickOf(q); t && !(std::isfinite(*t) && *t >= 0.0)) {
    return Invalid(field + ".at_tick", "must be a finite tick >= 0, got " + FormatDouble(*t));
  }
  if (const auto* o = std::get_if<OverlapQuery>(&q)) {
    if (Status s = CheckQueryShape(o->shape, field + ".shape"); !s.ok()) return s;
    return CheckPose(o->pose, field + ".pose");
  }
  if (const auto* c = std::get_if<CastQuery>(&q)) {
    if (Status s = CheckQueryShape(c->shape, field + ".shape"); !s.ok()) return s;
    if (Status s = CheckPose(c->pose, field + ".pose"); !s.ok()) return s;
    if (!(c->contact_offset >= 0.0 && c->contact_offset <= kMaxContactOffset)) {
      return Invalid(field + ".contact_offset",
                     "must be finite, >= 0 and <= " + FormatDouble(kMaxContactOffset) +
                         " metres, got " + FormatDouble(c->contact_offset));
    }
    return CheckVec(c->translation, field + ".translation");
  }
  if (const auto* r = std::get_if<RayQuery>(&q)) {
    if (Status s = CheckVec(r->origin, field + ".origin"); !s.ok()) return s;
    return CheckVec(r->translation, field + ".translation");
  }
  if (const auto* m = std::get_if<MoveQuery>(&q)) {
    if (Status s = CheckQueryShape(m->shape, field + ".shape"); !s.ok()) return s;
    if (Status s = CheckPose(m->pose, field + ".pose"); !s.ok()) return s;
    if (Status s = CheckVec(m->displacement, field + ".displacement"); !s.ok()) return s;
    return ValidateMoveSettings(m->settings, field + ".settings");
  }
  return Invalid(field, "empty query");
}

namespace {

// The entry's geometry against the limits: RESOURCE_EXHAUSTED naming
// changes[index].<change>.shape and the limit.
Status CheckGeometryLimits(const Shape& shape, const BatchLimits& l, size_t index,
                           const char* change) {
  const auto over = [&](const char* what, uint64_t n, uint64_t max, const char* limit) {
    return Status(ErrorCode::kResourceExhausted,
                  "changes[" + std::to_string(index) + "]." + change + ".shape: " + what +
                      " has " + std::to_string(n) + ", at most " + std::to_string(max) +
                      " (limits." + limit + ")");
  };
  if (const uint32_t n = shape.mesh_input_triangles(); n > l.max_mesh_triangles) {
    return over("the mesh", n, l.max_mesh_triangles, "max_mesh_triangles");
  }
  if (const HeightfieldShape* h = shape.heightfield_input(); h != nullptr) {
    const uint64_t samples = uint64_t{h->rows} * h->cols;
    if (samples > l.max_heightfield_samples) {
      return over("the heightfield", samples, l.max_heightfield_samples,
                  "max_heightfield_samples");
    }
  }
  const auto hull_points = [&](const Shape& s) -> size_t {
    return s.hull() != nullptr ? s.hull()->input_points().size() : 0;
  };
  size_t points = hull_points(shape);
  if (const CompoundData* c = shape.compound(); c != nullptr) {
    for (const CompoundChild& child : c->children()) {
      points = std::max(points, hull_points(child.shape));
    }
  }
  if (points > l.max_hull_points) {
    return over("a convex hull", points, l.max_hull_points, "max_hull_points");
  }
  return Status::Ok();
}

}  // namespace

Status ColliderSet::CheckBatch(std::span<const ColliderChange> changes,
                               std::optional<uint64_t> tick,
                               std::optional<uint64_t> expected_revision,
                               const BatchLimits& limits, BatchPlan* plan) const {
  const ColliderSet& set = *this;
  *plan = BatchPlan{};
  plan->colliders_after = set.size();
  plan->watches_after = set.watch_count();
  if (expected_revision && *expected_revision != set.revision()) {
    return Status(ErrorCode::kFailedPrecondition,
                  "expected_revision: the session is at revision " +
                      std::to_string(set.revision()) + ", not " +
                      std::to_string(*expected_revision));
  }
  if (changes.empty()) return Status::Ok();
  if (tick) {
    if (Status st = set.CheckTick(*tick); !st.ok()) return st;
  }
  // A map's colliders are read-only (the error names the map).
  if (Status st = set.CheckBaseIds(changes); !st.ok()) return st;
  // Replay the batch over the set's ids so the error names the entry, and count.
  std::unordered_map<uint64_t, bool> overlay;  // id -> exists after the entries so far
  auto exists = [&](uint64_t id) {
    const auto it = overlay.find(id);
    return it != overlay.end() ? it->second : set.Find(id) != nullptr;
  };
  bool all_adds = true;
  int64_t count = static_cast<int64_t>(set.size());
  std::unordered_map<uint64_t, bool> watch_overlay;  // watch id -> exists after
  int64_t watch_count = static_cast<int64_t>(set.watch_count());

  for (size_t i = 0; i < changes.size(); ++i) {
    const ColliderChange& c = changes[i];
    const uint64_t id = c.collider.id;
    // The entry's name, built only for an error (valid batches allocate none).
    const auto at = [i] { return "changes[" + std::to_string(i) + "]"; };
    switch (c.kind) {
      case ColliderChange::Kind::kAdd:
        if (exists(id)) {
          return Status(ErrorCode::kAlreadyExists,
                        at() + ".add.id: collider " + std::to_string(id) + " already exists");
        }
        if (Status st = CheckGeometryLimits(c.collider.shape, limits, i, "add"); !st.ok()) {
          return st;
        }
        overlay[id] = true;
        ++count;
        break;
      case ColliderChange::Kind::kReplace:
      case ColliderChange::Kind::kMove:
        all_adds = false;
        if (!exists(id)) {
          return Status(ErrorCode::kNotFound,
                        at() + (c.kind == ColliderChange::Kind::kMove ? ".move.id" : ".replace.id") +
                            ": collider " + std::to_string(id) + " not found");
        }
        if (c.kind == ColliderChange::Kind::kReplace) {
          if (Status st = CheckGeometryLimits(c.collider.shape, limits, i, "replace"); !st.ok()) {
            return st;
          }
        }
        break;
      case ColliderChange::Kind::kRemove:
        all_adds = false;
        if (!exists(id)) {
          return Status(ErrorCode::kNotFound,
                        at() + ".remove: collider " + std::to_string(id) + " not found");
        }
        overlay[id] = false;
        --count;
        break;
      case ColliderChange::Kind::kAddWatch:
      case ColliderChange::Kind::kRemoveWatch:
        all_adds = false;
        if (Status st = CheckWatchChange(c, i, exists, &watch_overlay, &watch_count);
            !st.ok()) {
          return st;
        }
        break;
    }
  }
  if (static_cast<uint64_t>(watch_count) > limits.max_watches) {
    return Status(ErrorCode::kResourceExhausted,
                  "changes: the session would hold " + std::to_string(watch_count) +
                      " watches, at most " + std::to_string(limits.max_watches) +
                      " allowed (limits.max_watches)");
  }
  plan->watches_after = static_cast<uint64_t>(watch_count);
  if (static_cast<uint64_t>(count) > limits.max_colliders) {
    return Status(ErrorCode::kResourceExhausted,
                  "changes: the session would hold " + std::to_string(count) +
                      " colliders, at most " + std::to_string(limits.max_colliders) +
                      " allowed (limits.max_colliders)");
  }
  plan->colliders_after = static_cast<uint64_t>(count);
  plan->all_adds = all_adds;
  return Status::Ok();
}

}  // namespace hitbox
