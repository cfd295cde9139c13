#include "hitbox/wire/packed.h"

#include <array>
#include <charconv>
#include <cmath>
#include <string>

#include "hitbox/format.h"
#include "hitbox/limits.h"

namespace hitbox::wire {
namespace {

using google::protobuf::RepeatedField;

Status Invalid(const std::string& message) {
  return Status(ErrorCode::kInvalidArgument, message);
}

// "packed.casts.translation: 3 values for 2 casts (3 each)" unless the column
// holds `each` values per item, or is empty and `empty_ok`.
template <typename T>
Status CheckLength(const RepeatedField<T>& column, const char* name, size_t items, size_t each,
                   const char* what, bool empty_ok = false) {
  const size_t have = static_cast<size_t>(column.size());
  if (have == items * each || (empty_ok && have == 0)) return Status::Ok();
  std::string msg = std::string("packed.") + name + ": " + std::to_string(have) + " values for " +
                    std::to_string(items) + " " + what;
  if (each != 1) msg += " (" + std::to_string(each) + " each)";
  if (empty_ok) msg += " (or none)";
  return Invalid(msg);
}

// Three coordinates from column[3 * k], checked as the message form checks a Vec3.
bool ReadVec(const RepeatedField<double>& column, size_t k, Vec3* out) {
  const double* d = column.data() + 3 * k;
  if (!(std::isfinite(d[0]) && std::isfinite(d[1]) && std::isfinite(d[2]) &&
        InCoordinateRange(d[0]) && InCoordinateRange(d[1]) && InCoordinateRange(d[2]))) {
    return false;
  }
  *out = Vec3{d[0], d[1], d[2]};
  return true;
}

// The error for a bad vector at column[3 * k ..].
Status BadVec(const RepeatedField<double>& column, const char* name, size_t k) {
  static_assert(kMaxCoordinate == 1e9, "update the message below");
  for (size_t c = 0; c < 3; ++c) {
    const double v = column.Get(static_cast<int>(3 * k + c));
    const std::string at = std::string("packed.") + name + "[" + std::to_string(3 * k + c) + "]";
    if (!std::isfinite(v)) return Invalid(at + " must be finite, got " + FormatDouble(v));
    if (!InCoordinateRange(v)) {
      return Invalid(at + " must be within +-1e9 metres, got " + FormatDouble(v));
    }
  }
  return Invalid(std::string("packed.") + name + ": bad vector");
}

const char* KindName(uint32_t kind) {
  switch (kind) {
    case v1::PACKED_RAY: return "ray";
    case v1::PACKED_CAST: return "cast";
    case v1::PACKED_OVERLAP: return "overlap";
    case v1::PACKED_MOVE: return "move";
    default: return "message";
  }
}

bool Shaped(uint32_t kind) {
  return kind == v1::PACKED_CAST || kind == v1::PACKED_OVERLAP || kind == v1::PACKED_MOVE;
}

// The flag bits a packed query of `kind` may carry.
uint32_t AllowedFlags(uint32_t kind) {
  switch (kind) {
    case v1::PACKED_RAY: return kPackedAllHits;
    case v1::PACKED_CAST:
      return kPackedAllHits | kPackedFromCollider | kPackedRotated | kPackedSkipStartedContact;
    case v1::PACKED_OVERLAP: return kPackedWantContact | kPackedFromCollider | kPackedRotated;
    case v1::PACKED_MOVE: return kPackedFromCollider | kPackedRotated | kPackedApplyTo;
    default: return 0;
  }
}

// The ignore ids held by `slot`, emptied: their capacity is reused.
std::vector<uint64_t> TakeIgnore(Query& slot) {
  std::vector<uint64_t> ignore =
      std::move(std::visit([](auto& x) -> QueryFilter& { return x.filter; }, slot).ignore);
  ignore.clear();
  return ignore;
}

// Counts of a PackedQueries, by kind and by flag.
struct Counts {
  size_t packed = 0, shaped = 0, rays = 0, casts = 0, overlaps = 0, moves = 0, messages = 0;
  size_t from = 0, rotated = 0, applies = 0, ignore_ids = 0;
};

Status CountAndCheck(const v1::PackedQueries& p, Counts* c) {
  const auto& kinds = p.kinds();
  for (int i = 0; i < kinds.size(); ++i) {
    switch (kinds.Get(i)) {
      case v1::PACKED_MESSAGE: ++c->messages; continue;
      case v1::PACKED_RAY: ++c->rays; break;
      case v1::PACKED_CAST: ++c->casts; break;
      case v1::PACKED_OVERLAP: ++c->overlaps; break;
      case v1::PACKED_MOVE: ++c->moves; break;
      default:
        return Invalid("packed.kinds[" + std::to_string(i) + "]: unknown kind " +
                       std::to_string(kinds.Get(i)) +
                       " (expected 1 message, 2 ray, 3 cast, 4 overlap or 5 move)");
    }
    ++c->packed;
  }
  c->shaped = c->casts + c->overlaps + c->moves;
  if (Status s = CheckLength(p.flags(), "flags", c->packed, 1, "packed queries", true); !s.ok()) {
    return s;
  }
  if (Status s = CheckLength(p.tags(), "tags", c->packed, 1, "packed queries", true); !s.ok()) {
    return s;
  }
  if (Status s = CheckLength(p.masks(), "masks", c->packed, 1, "packed queries", true); !s.ok()) {
    return s;
  }
  if (Status s = CheckLength(p.max_hits(), "max_hits", c->packed, 1, "packed queries", true);
      !s.ok()) {
    return s;
  }
  if (Status s =
          CheckLength(p.ignore_counts(), "ignore_counts", c->packed, 1, "packed queries", true);
      !s.ok()) {
    return s;
  }
  // Flags by kind, in query order.
  size_t j = 0;
  for (int i = 0; i < kinds.size(); ++i) {
    const uint32_t kind = kinds.Get(i);
    if (kind == v1::PACKED_MESSAGE) continue;
    const size_t k = j++;
    const uint32_t f = p.flags().empty() ? 0 : p.flags().Get(static_cast<int>(k));
    if ((f & ~AllowedFlags(kind)) != 0) {
      return Invalid("packed.flags[" + std::to_string(k) + "]: flags " + std::to_string(f) +
                     " on a " + KindName(kind) + " (query " + std::to_string(i) +
                     "); it may have " + std::to_string(AllowedFlags(kind)));
    }
    if ((f & kPackedFromCollider) != 0) {
      if ((f & kPackedRotated) != 0) {
        return Invalid("packed.flags[" + std::to_string(k) +
                       "]: a query whose shape comes from a collider has no rotation of its own");
      }
      ++c->from;
    }
    if ((f & kPackedRotated) != 0) ++c->rotated;
    if ((f & kPackedApplyTo) != 0) ++c->applies;
    if (!p.ignore_counts().empty()) {
      const uint32_t n = p.ignore_counts().Get(static_cast<int>(k));
      if (n > static_cast<uint32_t>(kMaxIgnoreIds)) {
        return Invalid("packed.ignore_counts[" + std::to_string(k) + "]: " + std::to_string(n) +
                       " ignore ids, at most " + std::to_string(kMaxIgnoreIds));
      }
      c->ignore_ids += n;
    }
  }
  if (Status s = CheckLength(p.ignore_ids(), "ignore_ids", c->ignore_ids, 1,
                             "ignored ids (the sum of ignore_counts)");
      !s.ok()) {
    return s;
  }
  const size_t own = c->shaped - c->from;
  if (Status s = CheckLength(p.shape_index(), "shape_index", own, 1,
                             "shaped queries without a collider's shape");
      !s.ok()) {
    return s;
  }
  if (Status s = CheckLength(p.position(), "position", own, 3,
                             "shaped queries without a collider's shape");
      !s.ok()) {
    return s;
  }
  if (Status s = CheckLength(p.rotation(), "rotation", c->rotated, 4, "rotated queries");
      !s.ok()) {
    return s;
  }
  if (Status s = CheckLength(p.from_collider(), "from_collider", c->from, 1,
                             "queries with a collider's shape");
      !s.ok()) {
    return s;
  }
  if (Status s = CheckLength(p.rays().origin(), "rays.origin", c->rays, 3, "rays"); !s.ok()) {
    return s;
  }
  if (Status s = CheckLength(p.rays().translation(), "rays.translation", c->rays, 3, "rays");
      !s.ok()) {
    return s;
  }
  if (Status s = CheckLength(p.casts().translation(), "casts.translation", c->casts, 3, "casts");
      !s.ok()) {
    return s;
  }
  if (Status s = CheckLength(p.casts().contact_offset(), "casts.contact_offset", c->casts, 1,
                             "casts", true);
      !s.ok()) {
    return s;
  }
  if (Status s =
          CheckLength(p.moves().displacement(), "moves.displacement", c->moves, 3, "moves");
      !s.ok()) {
    return s;
  }
  if (Status s = CheckLength(p.moves().apply_to_id(), "moves.apply_to_id", c->applies, 1,
                             "moves with apply_to_id");
      !s.ok()) {
    return s;
  }
  return Status::Ok();
}

// The shapes table, each a query shape, into `shapes` (its buffer reused);
// `field` is a kept buffer for the field's name.
Status TableShapes(const v1::PackedQueries& p, std::vector<Shape>* shapes, std::string* name) {
  shapes->clear();
  shapes->reserve(static_cast<size_t>(p.shapes_size()));
  for (int k = 0; k < p.shapes_size(); ++k) {
    const v1::Shape& s = p.shapes(k);
    std::string& field = *name;
    field.assign("packed.shapes[");
    char digits[16];
    field.append(digits, std::to_chars(digits, digits + sizeof digits, k).ptr);
    field.push_back(']');
    if (s.has_mesh() || s.has_heightfield() || s.has_compound()) {
      return Invalid(field +
                     ": a collider-only shape (mesh, heightfield or compound), not a query "
                     "shape (use sphere, box, capsule, cylinder or convex_hull)");
    }
    Result<Shape> made = FromProto(s, field);
    if (!made.ok()) return made.error();
    shapes->push_back(std::move(*made));
  }
  return Status::Ok();
}

}  // namespace

void ShapesFromMessages(const Repeated<v1::Query>& messages, std::vector<ShapeFrom>* from) {
  from->clear();
  for (int i = 0; i < messages.size(); ++i) {
    const v1::Query& q = messages.Get(i);
    if (q.has_shape_from_collider()) {
      from->emplace_back(static_cast<size_t>(i), q.shape_from_collider());
    }
  }
}

Status FromPacked(const v1::PackedQueries& p, const Repeated<v1::Query>& messages,
                  std::vector<Query>* out, std::vector<ShapeFrom>* from, PackedScratch* scratch) {
  from->clear();
  Counts c;
  if (Status s = CountAndCheck(p, &c); !s.ok()) {
    out->clear();
    return s;
  }
  if (c.messages != static_cast<size_t>(messages.size())) {
    out->clear();
    return Invalid("packed.kinds: " + std::to_string(c.messages) +
                   " PACKED_MESSAGE entries for " + std::to_string(messages.size()) +
                   " queries (TickRequest.queries)");
  }
  std::vector<Shape>& shapes = scratch->shapes;
  if (Status s = TableShapes(p, &shapes, &scratch->field); !s.ok()) {
    out->clear();
    return s;
  }
  const size_t n = static_cast<size_t>(p.kinds_size());
  out->resize(n);
  const auto fail = [out](Status s) {
    out->clear();
    return s;
  };
  size_t k = 0, msg = 0, shaped_own = 0, rotated = 0, from_k = 0, ignore_at = 0;
  size_t ray = 0, cast = 0, move = 0, apply = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t kind = p.kinds(static_cast<int>(i));
    Query& slot = (*out)[i];
    if (kind == v1::PACKED_MESSAGE) {
      const v1::Query& m = messages.Get(static_cast<int>(msg));
      // Named by its index in the tick, as the message form names it.
      Result<Query> q = FromProto(m, "queries[" + std::to_string(i) + "]");
      if (!q.ok()) return fail(q.error());
      slot = std::move(*q);
      if (m.has_shape_from_collider()) from->emplace_back(i, m.shape_from_collider());
      ++msg;
      continue;
    }
    const int pk = static_cast<int>(k++);
    const uint32_t f = p.flags().empty() ? 0 : p.flags(pk);
    QueryFilter filter;
    filter.ignore = TakeIgnore(slot);
    if (!p.masks().empty()) filter.mask = p.masks(pk);
    if (!p.max_hits().empty()) filter.max_hits = p.max_hits(pk);
    if (!p.ignore_counts().empty()) {
      const uint32_t cnt = p.ignore_counts(pk);
      const uint64_t* ids = p.ignore_ids().data() + ignore_at;
      filter.ignore.assign(ids, ids + cnt);
      ignore_at += cnt;
    }
    const uint64_t tag = p.tags().empty() ? 0 : p.tags(pk);
    // The shape and pose of a shaped query.
    Shape shape;
    Pose pose;
    if (Shaped(kind)) {
      if ((f & kPackedFromCollider) != 0) {
        from->emplace_back(i, p.from_collider(static_cast<int>(from_k++)));
      } else {
        const size_t s = shaped_own++;
        const uint32_t index = p.shape_index(static_cast<int>(s));
        if (index >= shapes.size()) {
          return fail(Invalid("packed.shape_index[" + std::to_string(s) + "]: " +
                              std::to_string(index) + " is past the " +
                              std::to_string(shapes.size()) + " shapes"));
        }
        shape = shapes[index];
        if (!ReadVec(p.position(), s, &pose.position)) return fail(BadVec(p.position(), "position", s));
        if ((f & kPackedRotated) != 0) {
          const size_t r = rotated++;
          const double* d = p.rotation().data() + 4 * r;
          const Quat q{d[0], d[1], d[2], d[3]};
          // Named only when refused: a tick of valid queries makes no string.
          const auto at = [r] { return "packed.rotation[" + std::to_string(4 * r) + "..]"; };
          if (!(std::isfinite(q.x) && std::isfinite(q.y) && std::isfinite(q.z) &&
                std::isfinite(q.w))) {
            return fail(Invalid(at() + " must be finite"));
          }
          static_assert(kQuatNormTolerance == 1e-6, "update the message below");
          if (!q.IsNormalized(kQuatNormTolerance)) {
            return fail(Invalid(at() + ": quaternion norm " + FormatDouble(q.Length()) +
                                " is not 1 (tolerance 1e-6)"));
          }
          pose.rotation = q.Normalized();
        }
      }
    }
    switch (kind) {
      case v1::PACKED_RAY: {
        RayQuery q;
        const size_t r = ray++;
        if (!ReadVec(p.rays().origin(), r, &q.origin)) {
          return fail(BadVec(p.rays().origin(), "rays.origin", r));
        }
        if (!ReadVec(p.rays().translation(), r, &q.translation)) {
          return fail(BadVec(p.rays().translation(), "rays.translation", r));
        }
        q.filter = std::move(filter);
        q.all_hits = (f & kPackedAllHits) != 0;
        q.tag = tag;
        slot = std::move(q);
        break;
      }
      case v1::PACKED_CAST: {
        CastQuery q;
        const size_t r = cast++;
        if (!ReadVec(p.casts().translation(), r, &q.translation)) {
          return fail(BadVec(p.casts().translation(), "casts.translation", r));
        }
        if (!p.casts().contact_offset().empty()) {
          const double o = p.casts().contact_offset(static_cast<int>(r));
          if (!(std::isfinite(o) && o >= 0 && o <= kMaxContactOffset)) {
            static_assert(kMaxContactOffset == 1e3, "update the message below");
            return fail(Invalid("packed.casts.contact_offset[" + std::to_string(r) +
                                "]: must be finite and in [0, 1000] metres, got " +
                                FormatDouble(o)));
          }
          q.contact_offset = o;
        }
        q.shape = std::move(shape);
        q.pose = pose;
        q.filter = std::move(filter);
        q.all_hits = (f & kPackedAllHits) != 0;
        q.skip_started_contact = (f & kPackedSkipStartedContact) != 0;
        q.tag = tag;
        slot = std::move(q);
        break;
      }
      case v1::PACKED_OVERLAP: {
        OverlapQuery q;
        q.shape = std::move(shape);
        q.pose = pose;
        q.filter = std::move(filter);
        q.want_contact = (f & kPackedWantContact) != 0;
        q.tag = tag;
        slot = std::move(q);
        break;
      }
      default: {  // PACKED_MOVE
        MoveQuery q;
        const size_t r = move++;
        if (!ReadVec(p.moves().displacement(), r, &q.displacement)) {
          return fail(BadVec(p.moves().displacement(), "moves.displacement", r));
        }
        if ((f & kPackedApplyTo) != 0) q.apply_to_id = p.moves().apply_to_id(static_cast<int>(apply++));
        q.shape = std::move(shape);
        q.pose = pose;
        q.filter = std::move(filter);
        q.tag = tag;
        slot = std::move(q);
        break;
      }
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Client side: queries into columns.

namespace {

// Equal primitive shapes (the table shares them); hulls are never merged.
bool SamePrimitive(const Shape& a, const Shape& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ShapeKind::kSphere: return a.radius() == b.radius();
    case ShapeKind::kBox: return a.half_extents() == b.half_extents();
    case ShapeKind::kCapsule:
    case ShapeKind::kCylinder:
      return a.radius() == b.radius() && a.half_height() == b.half_height();
    default: return false;
  }
}

bool DefaultSettings(const MoveSettings& s) {
  const MoveSettings d;
  return s.up == d.up && s.skin_width == d.skin_width && s.max_iterations == d.max_iterations &&
         s.max_slope_degrees == d.max_slope_degrees && s.step_height == d.step_height &&
         s.ground_snap_distance == d.ground_snap_distance;
}

void PutVec(const Vec3& v, RepeatedField<double>* out) {
  out->Add(v.x);
  out->Add(v.y);
  out->Add(v.z);
}

}  // namespace

void ToPacked(std::span<const Query> queries, std::span<const std::optional<uint64_t>> from,
              v1::PackedQueries* out, Repeated<v1::Query>* messages) {
  const int n = static_cast<int>(queries.size());
  out->mutable_kinds()->Reserve(n);
  out->mutable_flags()->Reserve(n);
  out->mutable_tags()->Reserve(n);
  out->mutable_masks()->Reserve(n);
  out->mutable_max_hits()->Reserve(n);
  out->mutable_ignore_counts()->Reserve(n);
  bool any_flag = false, any_tag = false, any_mask = false, any_max = false, any_ignore = false;
  // The newest (up to) 8 entries of the shapes table, which a shape is
  // looked up in: entry t at recent[t % 8]; no heap allocation.
  std::array<const Shape*, 8> recent{};
  size_t table_size = 0;
  for (size_t i = 0; i < queries.size(); ++i) {
    const Query& q = queries[i];
    const std::optional<uint64_t> id = from.empty() ? std::nullopt : from[i];
    const bool packable = std::visit(
        [&id](const auto& x) {
          if (x.at_tick) return false;
          // A ray naming a collider is refused by the server: sent as is.
          if constexpr (std::is_same_v<std::decay_t<decltype(x)>, RayQuery>) return !id;
          if constexpr (std::is_same_v<std::decay_t<decltype(x)>, MoveQuery>) {
            return DefaultSettings(x.settings);
          }
          return true;
        },
        q);
    if (!packable) {
      out->add_kinds(v1::PACKED_MESSAGE);
      v1::Query* m = messages->Add();
      ToProto(q, m, /*shape_and_pose=*/!id);
      if (id) m->set_shape_from_collider(*id);
      continue;
    }
    uint32_t flags = 0;
    const QueryFilter& filter = std::visit([](const auto& x) -> const QueryFilter& { return x.filter; }, q);
    const uint64_t tag = std::visit([](const auto& x) { return x.tag; }, q);
    // Shape and pose of a shaped query.
    const auto place = [&](const Shape& shape, const Pose& pose) {
      if (id) {
        flags |= kPackedFromCollider;
        out->add_from_collider(*id);
        return;
      }
      int index = -1;
      for (size_t t = table_size; t-- > 0 && table_size - t <= recent.size();) {
        if (SamePrimitive(*recent[t % recent.size()], shape)) {
          index = static_cast<int>(t);
          break;
        }
      }
      if (index < 0) {
        index = static_cast<int>(table_size);
        recent[table_size++ % recent.size()] = &shape;
        ToProto(shape, out->add_shapes());
      }
      out->add_shape_index(static_cast<uint32_t>(index));
      PutVec(pose.position, out->mutable_position());
      if (!(pose.rotation == Quat::Identity())) {
        flags |= kPackedRotated;
        out->add_rotation(pose.rotation.x);
        out->add_rotation(pose.rotation.y);
        out->add_rotation(pose.rotation.z);
        out->add_rotation(pose.rotation.w);
      }
    };
    if (const auto* r = std::get_if<RayQuery>(&q)) {
      out->add_kinds(v1::PACKED_RAY);
      PutVec(r->origin, out->mutable_rays()->mutable_origin());
      PutVec(r->translation, out->mutable_rays()->mutable_translation());
      if (r->all_hits) flags |= kPackedAllHits;
    } else if (const auto* c = std::get_if<CastQuery>(&q)) {
      out->add_kinds(v1::PACKED_CAST);
      place(c->shape, c->pose);
      PutVec(c->translation, out->mutable_casts()->mutable_translation());
      if (c->contact_offset != 0.0 || !out->casts().contact_offset().empty()) {
        // Zero offsets of the casts before this one, then this one's.
        const int casts_before = out->casts().translation_size() / 3 - 1;
        while (out->casts().contact_offset_size() < casts_before) {
          out->mutable_casts()->add_contact_offset(0.0);
        }
        out->mutable_casts()->add_contact_offset(c->contact_offset);
      }
      if (c->all_hits) flags |= kPackedAllHits;
      if (c->skip_started_contact) flags |= kPackedSkipStartedContact;
    } else if (const auto* o = std::get_if<OverlapQuery>(&q)) {
      out->add_kinds(v1::PACKED_OVERLAP);
      place(o->shape, o->pose);
      if (o->want_contact) flags |= kPackedWantContact;
    } else {
      const MoveQuery& m = std::get<MoveQuery>(q);
      out->add_kinds(v1::PACKED_MOVE);
      place(m.shape, m.pose);
      PutVec(m.displacement, out->mutable_moves()->mutable_displacement());
      if (m.apply_to_id) {
        flags |= kPackedApplyTo;
        out->mutable_moves()->add_apply_to_id(*m.apply_to_id);
      }
    }
    out->add_flags(flags);
    out->add_tags(tag);
    out->add_masks(filter.mask);
    out->add_max_hits(filter.max_hits);
    out->add_ignore_counts(static_cast<uint32_t>(filter.ignore.size()));
    for (uint64_t x : filter.ignore) out->add_ignore_ids(x);
    any_flag |= flags != 0;
    any_tag |= tag != 0;
    any_mask |= filter.mask != 0xFFFFFFFFu;
    any_max |= filter.max_hits != 0;
    any_ignore |= !filter.ignore.empty();
  }
  // Columns of defaults only are left empty.
  if (!any_flag) out->clear_flags();
  if (!any_tag) out->clear_tags();
  if (!any_mask) out->clear_masks();
  if (!any_max) out->clear_max_hits();
  if (!any_ignore) out->clear_ignore_counts();
  // A trailing run of zero contact offsets is padded so the column has one per cast.
  if (!out->casts().contact_offset().empty()) {
    while (out->casts().contact_offset_size() < out->casts().translation_size() / 3) {
      out->mutable_casts()->add_contact_offset(0.0);
    }
  }
}

// ---------------------------------------------------------------------------
// Server side: answers into columns.

namespace {

double* Grow(RepeatedField<double>* f, int n) { return f->AddNAlreadyReserved(n); }

void Put3(const Vec3& v, double* d) {
  d[0] = v.x;
  d[1] = v.y;
  d[2] = v.z;
}

uint32_t KindOf(const Query& q) {
  switch (q.index()) {
    case 0: return v1::PACKED_OVERLAP;
    case 1: return v1::PACKED_CAST;
    case 2: return v1::PACKED_RAY;
    default: return v1::PACKED_MOVE;
  }
}

}  // namespace

void ToPacked(std::span<const Query> queries, std::span<const QueryResult> results,
              v1::PackedResults* out) {
  const int n = static_cast<int>(results.size());
  size_t hits = 0, casts = 0, overlaps = 0, overlap_queries = 0, contacts = 0, moves = 0,
         move_contacts = 0;
  bool any_tag = false, any_truncated = false;
  for (size_t i = 0; i < results.size(); ++i) {
    const QueryResult& r = results[i];
    const uint32_t kind = KindOf(queries[i]);
    if (kind == v1::PACKED_RAY || kind == v1::PACKED_CAST) {
      ++casts;
      hits += r.hits.size();
    } else if (kind == v1::PACKED_OVERLAP) {
      ++overlap_queries;
      overlaps += r.overlaps.size();
      for (const OverlapHit& h : r.overlaps) contacts += h.contact ? 1 : 0;
    } else {
      ++moves;
      if (r.move) move_contacts += r.move->contacts.size();
    }
    any_tag |= std::visit([](const auto& x) { return x.tag; }, queries[i]) != 0;
    any_truncated |= r.truncated;
  }
  out->mutable_kinds()->Reserve(n);
  if (any_tag) out->mutable_tags()->Reserve(n);
  if (any_truncated) out->mutable_flags()->Reserve(n);
  v1::PackedHits* ph = out->mutable_hits();
  const int h = static_cast<int>(hits);
  ph->mutable_counts()->Reserve(static_cast<int>(casts));
  ph->mutable_id()->Reserve(h);
  ph->mutable_user_data()->Reserve(h);
  ph->mutable_fraction()->Reserve(h);
  ph->mutable_depth()->Reserve(h);
  ph->mutable_sub_shape()->Reserve(h);
  ph->mutable_normal()->Reserve(3 * h);
  ph->mutable_point()->Reserve(3 * h);
  ph->mutable_flags()->Reserve(h);
  v1::PackedOverlaps* po = out->mutable_overlaps();
  const int o = static_cast<int>(overlaps), oc = static_cast<int>(contacts);
  po->mutable_counts()->Reserve(static_cast<int>(overlap_queries));
  po->mutable_id()->Reserve(o);
  po->mutable_user_data()->Reserve(o);
  po->mutable_sub_shape()->Reserve(o);
  po->mutable_flags()->Reserve(o);
  po->mutable_contact_depth()->Reserve(oc);
  po->mutable_contact_normal()->Reserve(3 * oc);
  po->mutable_contact_point_a()->Reserve(3 * oc);
  po->mutable_contact_point_b()->Reserve(3 * oc);
  v1::PackedMoveResults* pm = out->mutable_moves();
  const int m = static_cast<int>(moves), mc = static_cast<int>(move_contacts);
  pm->mutable_position()->Reserve(3 * m);
  pm->mutable_displacement()->Reserve(3 * m);
  pm->mutable_ground_normal()->Reserve(3 * m);
  pm->mutable_ground_id()->Reserve(m);
  pm->mutable_ground_sub_shape()->Reserve(m);
  pm->mutable_flags()->Reserve(m);
  pm->mutable_contact_counts()->Reserve(m);
  pm->mutable_contact_id()->Reserve(mc);
  pm->mutable_contact_sub_shape()->Reserve(mc);
  pm->mutable_contact_normal()->Reserve(3 * mc);
  pm->mutable_contact_point()->Reserve(3 * mc);
  for (size_t i = 0; i < results.size(); ++i) {
    const QueryResult& r = results[i];
    const uint32_t kind = KindOf(queries[i]);
    out->add_kinds(kind);
    if (any_tag) out->add_tags(std::visit([](const auto& x) { return x.tag; }, queries[i]));
    if (any_truncated) out->add_flags(r.truncated ? 1u : 0u);
    if (kind == v1::PACKED_RAY || kind == v1::PACKED_CAST) {
      ph->add_counts(static_cast<uint32_t>(r.hits.size()));
      for (const CastHit& x : r.hits) {
        ph->add_id(x.id);
        ph->add_user_data(x.user_data);
        ph->add_fraction(x.fraction);
        ph->add_depth(x.depth);
        ph->add_sub_shape(x.sub_shape);
        Put3(x.normal, Grow(ph->mutable_normal(), 3));
        Put3(x.point, Grow(ph->mutable_point(), 3));
        ph->add_flags(x.started_overlapping() ? 1u : 0u);
      }
    } else if (kind == v1::PACKED_OVERLAP) {
      po->add_counts(static_cast<uint32_t>(r.overlaps.size()));
      for (const OverlapHit& x : r.overlaps) {
        po->add_id(x.id);
        po->add_user_data(x.user_data);
        po->add_sub_shape(x.sub_shape);
        po->add_flags(x.contact ? 1u : 0u);
        if (x.contact) {
          po->add_contact_depth(x.contact->depth);
          Put3(x.contact->normal, Grow(po->mutable_contact_normal(), 3));
          Put3(x.contact->point_a, Grow(po->mutable_contact_point_a(), 3));
          Put3(x.contact->point_b, Grow(po->mutable_contact_point_b(), 3));
        }
      }
    } else {
      const MoveResult empty;
      const MoveResult& x = r.move ? *r.move : empty;
      Put3(x.position, Grow(pm->mutable_position(), 3));
      Put3(x.displacement, Grow(pm->mutable_displacement(), 3));
      // As the message form: the ground normal only when on ground.
      Put3(x.on_ground ? x.ground_normal : Vec3{}, Grow(pm->mutable_ground_normal(), 3));
      pm->add_ground_id(x.ground_id);
      pm->add_ground_sub_shape(x.ground_sub_shape);
      pm->add_flags((x.on_ground ? 1u : 0u) | (x.stepped ? 2u : 0u) | (x.blocked ? 4u : 0u));
      pm->add_contact_counts(static_cast<uint32_t>(x.contacts.size()));
      for (const MoveContact& c : x.contacts) {
        pm->add_contact_id(c.id);
        pm->add_contact_sub_shape(c.sub_shape);
        Put3(c.normal, Grow(pm->mutable_contact_normal(), 3));
        Put3(c.point, Grow(pm->mutable_contact_point(), 3));
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Client side: columns into answers.

namespace {

Status Malformed(const std::string& what) {
  return Status(ErrorCode::kInternal, "the server's packed answer: " + what);
}

template <typename T>
Status Need(const RepeatedField<T>& column, const char* name, size_t items, size_t each) {
  if (static_cast<size_t>(column.size()) == items * each) return Status::Ok();
  return Malformed(std::string(name) + " has " + std::to_string(column.size()) + " values for " +
                   std::to_string(items) + " entries (" + std::to_string(each) + " each)");
}

Vec3 Get3(const RepeatedField<double>& f, size_t k) {
  const double* d = f.data() + 3 * k;
  return Vec3{d[0], d[1], d[2]};
}

// The sum of a counts column.
size_t Sum(const RepeatedField<uint32_t>& counts) {
  size_t total = 0;
  for (uint32_t c : counts) total += c;
  return total;
}

}  // namespace

Status FromPacked(const v1::PackedResults& in, size_t expected, std::vector<QueryResult>* out) {
  const size_t n = static_cast<size_t>(in.kinds_size());
  if (n != expected) {
    return Malformed(std::to_string(n) + " results for " + std::to_string(expected) + " queries");
  }
  size_t casts = 0, overlap_queries = 0, moves = 0;
  for (uint32_t k : in.kinds()) {
    if (k == v1::PACKED_RAY || k == v1::PACKED_CAST) {
      ++casts;
    } else if (k == v1::PACKED_OVERLAP) {
      ++overlap_queries;
    } else if (k == v1::PACKED_MOVE) {
      ++moves;
    } else {
      return Malformed("unknown result kind " + std::to_string(k));
    }
  }
  if (!in.tags().empty()) {
    if (Status s = Need(in.tags(), "tags", n, 1); !s.ok()) return s;
  }
  if (!in.flags().empty()) {
    if (Status s = Need(in.flags(), "flags", n, 1); !s.ok()) return s;
  }
  const v1::PackedHits& ph = in.hits();
  if (Status s = Need(ph.counts(), "hits.counts", casts, 1); !s.ok()) return s;
  const size_t hits = Sum(ph.counts());
  for (Status s : {Need(ph.id(), "hits.id", hits, 1), Need(ph.user_data(), "hits.user_data", hits, 1),
                   Need(ph.fraction(), "hits.fraction", hits, 1),
                   Need(ph.depth(), "hits.depth", hits, 1),
                   Need(ph.sub_shape(), "hits.sub_shape", hits, 1),
                   Need(ph.normal(), "hits.normal", hits, 3),
                   Need(ph.point(), "hits.point", hits, 3),
                   Need(ph.flags(), "hits.flags", hits, 1)}) {
    if (!s.ok()) return s;
  }
  const v1::PackedOverlaps& po = in.overlaps();
  if (Status s = Need(po.counts(), "overlaps.counts", overlap_queries, 1); !s.ok()) return s;
  const size_t overlaps = Sum(po.counts());
  size_t contacts = 0;
  for (Status s : {Need(po.id(), "overlaps.id", overlaps, 1),
                   Need(po.user_data(), "overlaps.user_data", overlaps, 1),
                   Need(po.sub_shape(), "overlaps.sub_shape", overlaps, 1),
                   Need(po.flags(), "overlaps.flags", overlaps, 1)}) {
    if (!s.ok()) return s;
  }
  for (uint32_t f : po.flags()) contacts += (f & 1u) != 0 ? 1 : 0;
  for (Status s : {Need(po.contact_depth(), "overlaps.contact_depth", contacts, 1),
                   Need(po.contact_normal(), "overlaps.contact_normal", contacts, 3),
                   Need(po.contact_point_a(), "overlaps.contact_point_a", contacts, 3),
                   Need(po.contact_point_b(), "overlaps.contact_point_b", contacts, 3)}) {
    if (!s.ok()) return s;
  }
  const v1::PackedMoveResults& pm = in.moves();
  if (Status s = Need(pm.contact_counts(), "moves.contact_counts", moves, 1); !s.ok()) return s;
  const size_t move_contacts = Sum(pm.contact_counts());
  for (Status s : {Need(pm.position(), "moves.position", moves, 3),
                   Need(pm.displacement(), "moves.displacement", moves, 3),
                   Need(pm.ground_normal(), "moves.ground_normal", moves, 3),
                   Need(pm.ground_id(), "moves.ground_id", moves, 1),
                   Need(pm.ground_sub_shape(), "moves.ground_sub_shape", moves, 1),
                   Need(pm.flags(), "moves.flags", moves, 1),
                   Need(pm.contact_id(), "moves.contact_id", move_contacts, 1),
                   Need(pm.contact_sub_shape(), "moves.contact_sub_shape", move_contacts, 1),
                   Need(pm.contact_normal(), "moves.contact_normal", move_contacts, 3),
                   Need(pm.contact_point(), "moves.contact_point", move_contacts, 3)}) {
    if (!s.ok()) return s;
  }
  out->resize(n);
  size_t ci = 0, hi = 0, oi = 0, ok = 0, cc = 0, mi = 0, mk = 0;
  for (size_t i = 0; i < n; ++i) {
    QueryResult& r = (*out)[i];
    const uint32_t kind = in.kinds(static_cast<int>(i));
    r.tag = in.tags().empty() ? 0 : in.tags(static_cast<int>(i));
    r.truncated = !in.flags().empty() && (in.flags(static_cast<int>(i)) & 1u) != 0;
    r.hits.clear();
    r.overlaps.clear();
    if (kind != v1::PACKED_MOVE) r.move.reset();
    if (kind == v1::PACKED_RAY || kind == v1::PACKED_CAST) {
      const uint32_t count = ph.counts(static_cast<int>(ci++));
      r.hits.reserve(count);
      for (uint32_t k = 0; k < count; ++k, ++hi) {
        const int x = static_cast<int>(hi);
        CastHit& h = r.hits.emplace_back();
        h.state = (ph.flags(x) & 1u) != 0 ? CastState::kStartedOverlapping : CastState::kHit;
        h.fraction = ph.fraction(x);
        h.normal = Get3(ph.normal(), hi);
        h.point = Get3(ph.point(), hi);
        h.depth = ph.depth(x);
        h.sub_shape = ph.sub_shape(x);
        h.id = ph.id(x);
        h.user_data = ph.user_data(x);
      }
    } else if (kind == v1::PACKED_OVERLAP) {
      const uint32_t count = po.counts(static_cast<int>(oi++));
      r.overlaps.reserve(count);
      for (uint32_t k = 0; k < count; ++k, ++ok) {
        const int x = static_cast<int>(ok);
        OverlapHit& h = r.overlaps.emplace_back();
        h.id = po.id(x);
        h.user_data = po.user_data(x);
        h.sub_shape = po.sub_shape(x);
        if ((po.flags(x) & 1u) != 0) {
          Contact c;
          c.depth = po.contact_depth(static_cast<int>(cc));
          c.normal = Get3(po.contact_normal(), cc);
          c.point_a = Get3(po.contact_point_a(), cc);
          c.point_b = Get3(po.contact_point_b(), cc);
          ++cc;
          h.contact = c;
        }
      }
    } else {
      MoveResult& m = r.move ? *r.move : r.move.emplace();
      const size_t k = mi++;
      const int x = static_cast<int>(k);
      m.position = Get3(pm.position(), k);
      m.displacement = Get3(pm.displacement(), k);
      m.ground_normal = Get3(pm.ground_normal(), k);
      m.ground_id = pm.ground_id(x);
      m.ground_sub_shape = pm.ground_sub_shape(x);
      const uint32_t f = pm.flags(x);
      m.on_ground = (f & 1u) != 0;
      m.stepped = (f & 2u) != 0;
      m.blocked = (f & 4u) != 0;
      const uint32_t count = pm.contact_counts(x);
      m.contacts.clear();
      m.contacts.reserve(count);
      for (uint32_t c = 0; c < count; ++c, ++mk) {
        m.contacts.push_back(MoveContact{pm.contact_id(static_cast<int>(mk)),
                                         pm.contact_sub_shape(static_cast<int>(mk)),
                                         Get3(pm.contact_normal(), mk),
                                         Get3(pm.contact_point(), mk)});
      }
    }
  }
  return Status::Ok();
}

}  // namespace hitbox::wire
