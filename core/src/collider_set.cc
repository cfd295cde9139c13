// ColliderSet: dense collider arrays with swap-remove, a compact id index, a
// dynamic AABB tree, and the world queries that run on them.
#include "hitbox/collider_set.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "cast_internal.h"
#include "character_internal.h"
#include "dynamic_tree.h"
#include "history.h"
#include "id_index.h"

namespace hitbox {
namespace {

/// Leaf boxes are the tight world bounds grown by this much (metres), so
/// that the tree never culls a pair the narrow phase (whose tolerances are
/// ~1e-9 m) would call touching. Also the slack of the bounding-sphere checks.
constexpr double kBoxSlack = 1e-4;
/// Extra margin of "fat" leaf boxes for colliders added or moved one by one:
/// moves that stay inside the fat box do not touch the tree.
constexpr double kFatMargin = 0.1;
/// Batches with at least this many queries use the thread pool.
constexpr size_t kParallelBatchMin = 64;
/// Queries per ParallelFor task (enough for each kind to fill the
/// interleaved traversals of RunRange).
constexpr size_t kParallelChunk = 32;

// Shortest text that reads back to the same double, e.g. "1.2", "1e-6".
std::string Num(double v) {
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  // "1e-06" -> "1e-6"
  const size_t e = s.find('e');
  if (e != std::string::npos) {
    size_t digits = e + 1;
    if (digits < s.size() && (s[digits] == '-' || s[digits] == '+')) ++digits;
    while (digits + 1 < s.size() && s[digits] == '0') s.erase(digits, 1);
    if (s[e + 1] == '+') s.erase(e + 1, 1);
  }
  return s;
}

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
    return Invalid(field, "outside +-" + Num(kMaxCoordinate) + " metres " + ToString(v));
  }
  return Status::Ok();
}

Status CheckRotation(const Quat& q, const std::string& field) {
  if (!q.IsFinite()) return Invalid(field, "not finite " + ToString(q));
  const double n = q.Length();
  if (!(std::fabs(n - 1.0) <= kQuatNormTolerance)) {
    return Invalid(field, "quaternion norm " + Num(n) + " is not 1 (tolerance " +
                              Num(kQuatNormTolerance) + ")");
  }
  return Status::Ok();
}

Status CheckPose(const Pose& p, const std::string& field) {
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

Pose Normalized(const Pose& p) { return {p.position, p.rotation.Normalized()}; }

// Tight world box plus slack: what the tree must contain for a collider.
Aabb SlackBounds(const Shape& s, const Pose& p) {
  return s.WorldBounds(p).Expanded(kBoxSlack);
}

// Entry fraction of a sphere of radius r centred at `from` moving by `d`
// into a sphere of radius `rb` at `b`: a lower bound on the first contact of
// any shapes inside them (Ericson, RTCD 5.3.2, intersecting a ray with a
// sphere). Returns false when they never meet within [0, max_t].
inline bool SphereSweepEntry(const Vec3& from, const Vec3& d, double r, const Vec3& b,
                             double max_t, double* t) {
  const Vec3 m = from - b;
  const double c = Dot(m, m) - r * r;
  if (c <= 0.0) {
    *t = 0.0;
    return true;
  }
  const double bq = Dot(m, d);
  if (bq >= 0.0) return false;  // outside and moving away (or not moving)
  const double a = Dot(d, d);
  const double disc = bq * bq - a * c;
  if (disc < 0.0) return false;
  const double t0 = (-bq - std::sqrt(disc)) / a;
  if (t0 > max_t) return false;
  *t = t0;
  return true;
}

bool HitLess(const CastHit& a, const CastHit& b) {
  if (a.fraction != b.fraction) return a.fraction < b.fraction;
  return a.id < b.id;
}

CastHit MakeHit(const Collider& c, const CastResult& r) {
  CastHit h;
  h.id = c.id;
  h.user_data = c.user_data;
  h.fraction = r.fraction;
  h.normal = r.normal;
  h.point = r.point;
  h.started_overlapping = r.state == CastState::kStartedOverlapping;
  h.depth = r.depth;
  h.sub_shape = r.sub_shape;
  return h;
}

// Capacity after growing past `cap`: by 1/16 (not 2x), which keeps the bytes
// per collider within budget (<= 256 including tree and index) at the cost of
// ~16 copies per collider over a long run of single adds.
size_t GrownCapacity(size_t cap) { return cap + cap / 16 + 64; }

}  // namespace

bool QueryFilter::Accepts(uint64_t id, uint32_t layer) const {
  if (layer > kMaxLayer || ((mask >> layer) & 1u) == 0) return false;
  for (uint64_t x : ignore) {
    if (x == id) return false;
  }
  return true;
}

struct PairCounter;

struct ColliderSet::Impl {
  /// The base set's (a shared map's) body, for the queries that must see it
  /// from inside (moves); the others merge the two answers (static_world.cc).
  const Impl* base = nullptr;
  std::vector<Collider> colliders;
  /// Tree leaf of colliders[i].
  std::vector<uint32_t> leaf_of;
  /// Bounding radius of colliders[i] (about its position), rounded up.
  std::vector<float> radius;
  DynamicTree tree;
  IdIndex index;
  uint64_t revision = 0;
  /// Heap bytes of the colliders' kind data (hull vertices, planes, ...),
  /// counted per collider (a hull shared by copies is counted by each).
  size_t shape_data_bytes = 0;
  /// Poses of the recent ticks (rewound queries).
  internal::History history;
  /// 1 when colliders[i] is tracked by the history: rewound queries take it
  /// from there, not from here.
  std::vector<uint8_t> tracked;

  /// Refreshes tracked[] of `id` (if it is in the set).
  void SyncTracked(uint64_t id) {
    const uint32_t i = IndexOf(id);
    if (i != IdIndex::kEmpty) tracked[i] = history.IsTracked(id) ? 1 : 0;
  }
  void BeginBatch(std::optional<uint64_t> tick) {
    std::vector<uint64_t> untracked;
    history.BeginBatch(tick, revision, &untracked);
    for (uint64_t id : untracked) SyncTracked(id);
  }

  auto KeyOf() const {
    return [this](uint32_t i) { return colliders[i].id; };
  }
  uint32_t IndexOf(uint64_t id) const { return index.Find(id, KeyOf()); }

  void Add(const Collider& c) {
    const uint32_t i = static_cast<uint32_t>(colliders.size());
    if (colliders.size() == colliders.capacity()) {
      const size_t cap = GrownCapacity(colliders.capacity());
      colliders.reserve(cap);
      leaf_of.reserve(cap);
      radius.reserve(cap);
      tracked.reserve(cap);
      tree.Reserve(cap);
    }
    colliders.push_back(c);
    tracked.push_back(0);
    shape_data_bytes += c.shape.DataBytes();
    radius.push_back(RoundUp(c.shape.BoundingRadius()));
    colliders.back().pose = Normalized(c.pose);
    index.Insert(c.id, i, KeyOf());
    const Collider& s = colliders.back();
    leaf_of.push_back(tree.CreateLeaf(SlackBounds(s.shape, s.pose).Expanded(kFatMargin), i, s.layer));
  }

  void Replace(uint32_t i, const Collider& c) {
    Collider& s = colliders[i];
    shape_data_bytes -= s.shape.DataBytes();
    shape_data_bytes += c.shape.DataBytes();
    s = c;
    s.pose = Normalized(c.pose);
    radius[i] = RoundUp(s.shape.BoundingRadius());
    if (tree.node(leaf_of[i]).child2 != s.layer) tree.SetLeafLayer(leaf_of[i], s.layer);
    tree.MoveLeaf(leaf_of[i], SlackBounds(s.shape, s.pose).Expanded(kFatMargin));
  }

  void Move(uint32_t i, const Pose& pose) {
    Collider& s = colliders[i];
    s.pose = Normalized(pose);
    const Aabb box = SlackBounds(s.shape, s.pose);
    if (!tree.LeafContains(leaf_of[i], box)) tree.MoveLeaf(leaf_of[i], box.Expanded(kFatMargin));
  }

  void Remove(uint32_t i) {
    tree.DestroyLeaf(leaf_of[i]);
    index.Erase(colliders[i].id, KeyOf());
    shape_data_bytes -= colliders[i].shape.DataBytes();
    const uint32_t last = static_cast<uint32_t>(colliders.size() - 1);
    if (i != last) {
      colliders[i] = colliders[last];
      leaf_of[i] = leaf_of[last];
      radius[i] = radius[last];
      tracked[i] = tracked[last];
      tree.SetLeafItem(leaf_of[i], i);
      index.Update(colliders[i].id, i, KeyOf());
    }
    colliders.pop_back();
    leaf_of.pop_back();
    radius.pop_back();
    tracked.pop_back();
  }

  void RebuildTree() {
    std::vector<DynamicTree::BuildItem> items(colliders.size());
    for (size_t i = 0; i < colliders.size(); ++i) {
      const Collider& c = colliders[i];
      items[i] = {SlackBounds(c.shape, c.pose), static_cast<uint32_t>(i), c.layer};
    }
    leaf_of.resize(colliders.size());
    tree.Build(items, &leaf_of);
  }

  /// Starts loading what a leaf test reads (the collider, 2-3 lines, and its radius).
  void PrefetchCollider(uint32_t item) const {
    const char* c = reinterpret_cast<const char*>(&colliders[item]);
    __builtin_prefetch(c);
    __builtin_prefetch(c + 64);
    __builtin_prefetch(c + sizeof(Collider) - 1);
    __builtin_prefetch(&radius[item]);
  }

  void Overlap(const OverlapQuery& q, std::vector<OverlapHit>* hits) const;
  void Cast(const CastQuery& q, std::vector<CastHit>* hits) const;
  void Raycast(const RayQuery& q, std::vector<CastHit>* hits) const;
  struct BatchControl;
  /// Answers queries[begin, end) into results[begin, end), interleaving the
  /// traversals of queries of the same kind. With a control (may be null),
  /// charges the work to it and returns false as soon as it says stop.
  bool RunRange(std::span<const Query> queries, std::span<QueryResult> results, size_t begin,
                size_t end, BatchControl* control) const;
  /// RunRange with (kBudgeted) or without a control: without one, the
  /// traversal loops carry no accounting at all.
  void RunChunks(std::span<const Query> queries, std::span<QueryResult> results, size_t n,
                 ThreadPool* pool, BatchControl* control) const;
  template <bool kBudgeted>
  bool RunRangeImpl(std::span<const Query> queries, std::span<QueryResult> results, size_t begin,
                    size_t end, BatchControl* control) const;

  struct OverlapJob;
  struct HitCollector;
  struct CastJob;
  struct RayJob;
  class MoveSweeper;
  /// Runs a move; with a control, charges its work and returns false once it
  /// says stop.
  bool Move(const MoveQuery& q, MoveResult* result, BatchControl* control) const;
  /// Answers a query with at_tick (nothing when the tick is not available):
  /// the set's untracked colliders through its tree, then the history's
  /// colliders whose window box the query reaches, placed at the tick.
  template <typename J, typename Q, typename Hits>
  void RunRewound(const Q& q, Hits* hits, PairCounter* pairs, bool skip_leaving = false) const;
  template <typename Q, typename J, typename Cursor, bool kBudgeted, typename BeginFn,
            typename StepFn>
  bool Interleave(std::span<const Query> queries, std::span<QueryResult> results,
                  size_t first, size_t last, BatchControl* control, const BeginFn& begin,
                  const StepFn& step) const;
};

ColliderSet::ColliderSet() : impl_(std::make_unique<Impl>()) {}
ColliderSet::~ColliderSet() = default;
ColliderSet::ColliderSet(ColliderSet&&) noexcept = default;
ColliderSet& ColliderSet::operator=(ColliderSet&&) noexcept = default;

Status ColliderSet::Apply(std::span<const ColliderChange> changes, std::optional<uint64_t> tick) {
  Impl& m = *impl_;
  if (tick) {
    if (Status s = m.history.CheckTick(*tick, "tick"); !s.ok()) return s;
  }
  if (m.colliders.size() + changes.size() > DynamicTree::kMaxItems / 2) {
    return Status(ErrorCode::kResourceExhausted, "changes: too many colliders");
  }
  if (Status s = CheckBaseIds(changes); !s.ok()) return s;
  // Pass 1: validate in order against the set plus the batch's own effect.
  std::unordered_map<uint64_t, bool> exists_after;  // ids touched by the batch
  auto exists = [&](uint64_t id) {
    auto it = exists_after.find(id);
    if (it != exists_after.end()) return it->second;
    return m.IndexOf(id) != IdIndex::kEmpty;
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    const ColliderChange& ch = changes[i];
    // Checked first under an empty name (the short sub-field names stay in
    // std::string's inline buffer): "changes[i]" is built only for an error.
    auto field = [i] { return "changes[" + std::to_string(i) + "]"; };
    const uint64_t id = ch.collider.id;
    switch (ch.kind) {
      case ColliderChange::Kind::kAdd:
        if (!CheckCollider(ch.collider, "").ok()) return CheckCollider(ch.collider, field());
        if (exists(id)) {
          return Status(ErrorCode::kAlreadyExists,
                        field() + ".id: collider " + std::to_string(id) + " already exists");
        }
        exists_after[id] = true;
        break;
      case ColliderChange::Kind::kReplace:
        if (!CheckCollider(ch.collider, "").ok()) return CheckCollider(ch.collider, field());
        if (!exists(id)) {
          return Status(ErrorCode::kNotFound,
                        field() + ".id: collider " + std::to_string(id) + " not found");
        }
        break;
      case ColliderChange::Kind::kMove:
        if (!CheckPose(ch.collider.pose, ".pose").ok()) {
          return CheckPose(ch.collider.pose, field() + ".pose");
        }
        if (!exists(id)) {
          return Status(ErrorCode::kNotFound,
                        field() + ".id: collider " + std::to_string(id) + " not found");
        }
        break;
      case ColliderChange::Kind::kRemove:
        if (!exists(id)) {
          return Status(ErrorCode::kNotFound,
                        field() + ".id: collider " + std::to_string(id) + " not found");
        }
        exists_after[id] = false;
        break;
      default:
        return Invalid(field() + ".kind", "unknown change kind");
    }
  }
  // Pass 2: apply; every step is known to succeed. The history records each
  // change (the pose before a first move, a removed collider) as it goes.
  m.BeginBatch(tick);
  for (const ColliderChange& ch : changes) {
    const uint64_t id = ch.collider.id;
    switch (ch.kind) {
      case ColliderChange::Kind::kAdd:
        m.Add(ch.collider);
        m.history.OnAdd(m.colliders.back());
        break;
      case ColliderChange::Kind::kReplace: {
        const uint32_t i = m.IndexOf(id);
        m.history.OnRemove(m.colliders[i]);
        m.Replace(i, ch.collider);
        m.history.OnAdd(m.colliders[i]);
        break;
      }
      case ColliderChange::Kind::kMove: {
        const uint32_t i = m.IndexOf(id);
        const Pose before = m.colliders[i].pose;
        m.Move(i, ch.collider.pose);
        m.history.OnMove(m.colliders[i], before);
        break;
      }
      case ColliderChange::Kind::kRemove: {
        const uint32_t i = m.IndexOf(id);
        m.history.OnRemove(m.colliders[i]);
        m.Remove(i);
        break;
      }
    }
    m.SyncTracked(id);
  }
  ++m.revision;
  return Status::Ok();
}

Status ColliderSet::AddBulk(std::span<const Collider> colliders, std::optional<uint64_t> tick) {
  Impl& m = *impl_;
  if (tick) {
    if (Status s = m.history.CheckTick(*tick, "tick"); !s.ok()) return s;
  }
  if (m.colliders.size() + colliders.size() > DynamicTree::kMaxItems / 2) {
    return Status(ErrorCode::kResourceExhausted, "colliders: too many colliders");
  }
  if (Status s = CheckBaseIds(colliders); !s.ok()) return s;
  for (size_t i = 0; i < colliders.size(); ++i) {
    const std::string field = "colliders[" + std::to_string(i) + "]";
    if (Status s = CheckCollider(colliders[i], field); !s.ok()) return s;
    if (m.IndexOf(colliders[i].id) != IdIndex::kEmpty) {
      return Status(ErrorCode::kAlreadyExists,
                    field + ".id: collider " + std::to_string(colliders[i].id) + " already exists");
    }
  }
  // Duplicates within the batch: report the earliest entry repeating an id.
  {
    std::vector<std::pair<uint64_t, size_t>> ids(colliders.size());
    for (size_t i = 0; i < colliders.size(); ++i) ids[i] = {colliders[i].id, i};
    std::sort(ids.begin(), ids.end());
    size_t worst = colliders.size();
    for (size_t i = 1; i < ids.size(); ++i) {
      if (ids[i].first == ids[i - 1].first) worst = std::min(worst, ids[i].second);
    }
    if (worst < colliders.size()) {
      return Status(ErrorCode::kAlreadyExists,
                    "colliders[" + std::to_string(worst) + "].id: collider " +
                        std::to_string(colliders[worst].id) + " repeats an earlier entry");
    }
  }
  const size_t total = m.colliders.size() + colliders.size();
  const size_t first_new = m.colliders.size();
  m.BeginBatch(tick);
  if (colliders.size() >= m.colliders.size()) {
    // Large load: append everything and rebuild the tree top-down.
    m.colliders.reserve(total);
    m.leaf_of.reserve(total);
    m.radius.reserve(total);
    m.index.Reserve(total, m.KeyOf());
    for (const Collider& c : colliders) {
      const uint32_t i = static_cast<uint32_t>(m.colliders.size());
      m.colliders.push_back(c);
      m.shape_data_bytes += c.shape.DataBytes();
      m.colliders.back().pose = Normalized(c.pose);
      m.radius.push_back(RoundUp(c.shape.BoundingRadius()));
      m.index.Insert(c.id, i, m.KeyOf());
    }
    m.tracked.resize(total, 0);
    m.RebuildTree();
  } else {
    for (const Collider& c : colliders) m.Add(c);
  }
  for (size_t i = first_new; i < total; ++i) {
    m.history.OnAdd(m.colliders[i]);
    if (m.history.IsTracked(m.colliders[i].id)) m.tracked[i] = 1;
  }
  ++m.revision;
  return Status::Ok();
}

uint64_t ColliderSet::revision() const { return impl_->revision; }
void ColliderSet::RestoreRevision(uint64_t revision) {
  Impl& m = *impl_;
  std::vector<uint64_t> touched;
  m.history.UndoTo(revision, &touched);
  for (uint64_t id : touched) m.SyncTracked(id);
  m.revision = revision;
}

void ColliderSet::SetHistoryTicks(uint32_t ticks) { impl_->history.set_window(ticks); }
uint32_t ColliderSet::history_ticks() const { return impl_->history.window(); }

Status ColliderSet::CheckTick(uint64_t tick, const std::string& field) const {
  return impl_->history.CheckTick(tick, field);
}

std::optional<TickRange> ColliderSet::Ticks() const {
  if (!impl_->history.has_ticks()) return std::nullopt;
  return impl_->history.Range();
}

ColliderSet::HistoryStats ColliderSet::GetHistoryStats() const {
  const internal::History& h = impl_->history;
  return {h.TrackCount(), h.SampleCount(), h.MemoryBytes()};
}

namespace {
const std::optional<double>& AtTickOf(const Query& q) {
  return std::visit([](const auto& x) -> const std::optional<double>& { return x.at_tick; }, q);
}
}  // namespace

Status ColliderSet::CheckQueryTicks(std::span<const Query> queries,
                                    const std::string& field) const {
  for (size_t i = 0; i < queries.size(); ++i) {
    const std::optional<double>& t = AtTickOf(queries[i]);
    if (!t) continue;
    const std::string at = field + "[" + std::to_string(i) + "].at_tick";
    if (Status s = impl_->history.CheckAt(*t, at); !s.ok()) return s;
  }
  return Status::Ok();
}
size_t ColliderSet::size() const { return impl_->colliders.size(); }

const Collider* ColliderSet::Find(uint64_t id) const {
  const Collider* c = FindOwn(id);
  return c == nullptr && base_ != nullptr ? base_->FindOwn(id) : c;
}

const Collider* ColliderSet::FindOwn(uint64_t id) const {
  const uint32_t i = impl_->IndexOf(id);
  return i == IdIndex::kEmpty ? nullptr : &impl_->colliders[i];
}

Aabb ColliderSet::Bounds() const {
  Aabb b;
  for (const Collider& c : impl_->colliders) b = b.Union(c.shape.WorldBounds(c.pose));
  return b;
}

void ColliderSet::ForEach(const std::function<void(const Collider&)>& fn) const {
  for (const Collider& c : impl_->colliders) fn(c);
}

size_t ColliderSet::MemoryBytes() const {
  const Impl& m = *impl_;
  return m.colliders.capacity() * sizeof(Collider) + m.leaf_of.capacity() * sizeof(uint32_t) +
         m.radius.capacity() * sizeof(float) +
         m.tracked.capacity() + m.tree.MemoryBytes() + m.index.MemoryBytes() +
         m.shape_data_bytes + m.history.MemoryBytes();
}

std::string ColliderSet::TreeValidate() const {
  const Impl& m = *impl_;
  std::string err = m.tree.Validate();
  if (!err.empty()) return err;
  if (m.tree.LeafCount() != m.colliders.size()) return "leaf count differs from collider count";
  for (size_t i = 0; i < m.colliders.size(); ++i) {
    const Collider& c = m.colliders[i];
    const TreeNode& n = m.tree.node(m.leaf_of[i]);
    if (!n.IsLeaf() || n.Item() != i) return "leaf_of[" + std::to_string(i) + "] is wrong";
    if (n.child2 != c.layer) return "leaf layer of collider " + std::to_string(c.id) + " is stale";
    if (!m.tree.LeafContains(m.leaf_of[i], c.shape.WorldBounds(c.pose))) {
      return "leaf box of collider " + std::to_string(c.id) + " does not contain it";
    }
    if (m.IndexOf(c.id) != i) return "id index of collider " + std::to_string(c.id) + " is wrong";
  }
  if (m.index.size() != m.colliders.size()) return "id index size differs from collider count";
  return "";
}

void ColliderSet::RebuildTree() { impl_->RebuildTree(); }

ColliderSet::TreeStats ColliderSet::GetTreeStats() const {
  const Impl& m = *impl_;
  TreeStats s;
  s.height = m.tree.Height();
  s.nodes = m.tree.NodeCount();
  s.area_ratio = m.tree.AreaRatio();
  return s;
}

// ---------------------------------------------------------------------------
// Queries
//
// Each query kind is a job: set up from the query, fed the candidate leaves
// of a tree traversal (Leaf), then finished (sorting, contacts). Run() drives
// one job with QueryTree / CastTree; RunBatch() steps up to kInterleave jobs
// of one kind in turn with the cursors of dynamic_tree.h so their cache
// misses overlap. Both feed each job the same leaves in the same order.

/// Traversals stepped in turn by RunBatch (enough to cover a memory latency).
constexpr size_t kInterleave = 8;

/// Narrow-phase pair tests of a job, counted for budgets (jobs of one
/// RunRange share one counter).
struct PairCounter {
  uint64_t count = 0;
};

/// Item bit of the history's colliders placed for a rewound query (the set
/// holds fewer than 2^31 colliders).
constexpr uint32_t kPlacedItem = 0x80000000u;

/// Orders overlap hits by id: the heap of the max_hits lowest ids keeps the
/// highest on top.
inline bool IdLess(const OverlapHit& a, const OverlapHit& b) { return a.id < b.id; }

struct ColliderSet::Impl::OverlapJob {
  const ColliderSet::Impl* m = nullptr;
  const OverlapQuery* q = nullptr;
  std::vector<OverlapHit>* hits = nullptr;
  PairCounter* pairs = nullptr;
  Pose pose;
  FloatAabb box;
  double r_q = 0.0;
  uint32_t cap = 0;
  bool has_ignore = false;
  /// Rewound queries: the set's colliders to pass over (tracked[]), and the
  /// history's colliders placed at the tick (items with kPlacedItem).
  const uint8_t* skip = nullptr;
  const internal::PlacedColliders* placed = nullptr;

  void Start(const ColliderSet::Impl& set, const OverlapQuery& query,
             std::vector<OverlapHit>* out) {
    m = &set;
    q = &query;
    hits = out;
    hits->clear();
    cap = q->filter.max_hits;
    pose = Normalized(q->pose);
    box = FloatAabb::Outward(q->shape.WorldBounds(pose).Expanded(kBoxSlack));
    r_q = q->shape.BoundingRadius() + kBoxSlack;
    has_ignore = !q->filter.ignore.empty();
  }
  void Leaf(uint32_t item) {
    if (skip != nullptr && skip[item] != 0) return;
    LeafOf(m->colliders[item], m->radius[item], item);
  }
  void LeafOf(const Collider& c, float radius, uint32_t item) {
    if (has_ignore && std::find(q->filter.ignore.begin(), q->filter.ignore.end(), c.id) !=
                          q->filter.ignore.end()) {
      return;
    }
    // With max_hits, keep only the lowest ids found so far (a max-heap by
    // id): a higher id than the heap's top cannot make the cut.
    const bool full = cap != 0 && hits->size() == cap;
    if (full && c.id > hits->front().id) return;
    const double r = r_q + radius;
    if ((c.pose.position - pose.position).LengthSq() > r * r) return;
    ++pairs->count;
    uint32_t sub_shape = 0;
    if (!IsConvexKind(c.shape.kind())) [[unlikely]] {
      // One hit per surface or compound collider: the lowest input triangle
      // or child touched.
      sub_shape = internal::OverlapLowestPiece(q->shape, pose, c.shape, c.pose);
      if (sub_shape == UINT32_MAX) return;
    } else if (!hitbox::Overlap(q->shape, pose, c.shape, c.pose)) {
      return;
    }
    OverlapHit h;
    h.id = c.id;
    h.sub_shape = sub_shape;
    h.user_data = item;  // index for now; replaced in Finish
    if (cap == 0) {
      hits->push_back(h);
      return;
    }
    if (full) {
      std::pop_heap(hits->begin(), hits->end(), IdLess);
      hits->back() = h;
    } else {
      hits->push_back(h);
    }
    std::push_heap(hits->begin(), hits->end(), IdLess);
  }
  void Finish() {
    std::sort(hits->begin(), hits->end(), IdLess);
    if (q->want_contact) pairs->count += hits->size();
    for (OverlapHit& h : *hits) {
      const auto item = static_cast<uint32_t>(h.user_data);
      const Collider& c = (item & kPlacedItem) != 0 ? placed->colliders[item & ~kPlacedItem]
                                                    : m->colliders[item];
      h.user_data = c.user_data;
      if (q->want_contact) {
        Contact contact;
        if (!ComputeContact(q->shape, pose, c.shape, c.pose, &contact)) {
          // Touching within the narrow phase's tolerance: zero depth.
          contact = Contact{};
          contact.depth = 0.0;
          const Vec3 d = c.pose.position - pose.position;
          contact.normal = d.LengthSq() > 0.0 ? d.Normalized() : Vec3{0, 1, 0};
          contact.point_a = contact.point_b = 0.5 * (pose.position + c.pose.position);
        }
        h.contact = contact;
      }
    }
  }
};

/// State shared by sweeps and rays: the closest hit so far, or all hits.
struct ColliderSet::Impl::HitCollector {
  std::vector<CastHit>* hits = nullptr;
  const QueryFilter* filter = nullptr;
  bool all = false;
  bool have_best = false;
  /// All-hits mode with max_hits: `hits` is a max-heap (by HitLess) of at
  /// most cap hits, the worst on top.
  uint32_t cap = 0;
  CastHit best;

  void Start(std::vector<CastHit>* out, const QueryFilter& f, bool all_hits) {
    hits = out;
    hits->clear();
    filter = &f;
    all = all_hits;
    cap = all_hits ? f.max_hits : 0;
    have_best = false;
  }
  /// The hit a new one must beat (HitLess) to be kept, or nullptr when any
  /// hit is kept: the best in closest-hit mode, the heap's worst when full.
  const CastHit* ToBeat() const {
    if (!all) return have_best ? &best : nullptr;
    return cap != 0 && hits->size() == cap ? &hits->front() : nullptr;
  }
  bool Ignored(uint64_t id) const {
    return !filter->ignore.empty() &&
           std::find(filter->ignore.begin(), filter->ignore.end(), id) != filter->ignore.end();
  }
  /// Largest fraction at which a hit on collider `id` could still be kept,
  /// given the traversal's max fraction `max_t` (at most the fraction of the
  /// hit to beat, once there is one); -1 when it cannot be kept. A hit ties
  /// with the one to beat at equal fraction and then wins only with a lower id.
  double WinningBound(uint64_t id, double max_t) const {
    const CastHit* rival = ToBeat();
    if (rival == nullptr || id < rival->id || max_t < rival->fraction) return max_t;
    if (rival->fraction <= 0.0) return -1.0;
    return std::nextafter(rival->fraction, 0.0);
  }
  /// Records a hit; returns the new max fraction of the traversal.
  double Add(const Collider& c, const CastResult& r, double max_t) {
    CastHit h = MakeHit(c, r);
    if (all) {
      if (cap == 0) {
        hits->push_back(h);
        return max_t;
      }
      if (hits->size() == cap) {
        if (!HitLess(h, hits->front())) return max_t;
        std::pop_heap(hits->begin(), hits->end(), HitLess);
        hits->back() = h;
      } else {
        hits->push_back(h);
      }
      std::push_heap(hits->begin(), hits->end(), HitLess);
      // Once full, nothing entered later than the worst kept hit can be kept.
      return hits->size() == cap ? std::min(max_t, hits->front().fraction) : max_t;
    }
    if (!have_best || HitLess(h, best)) {
      best = h;
      have_best = true;
      return std::min(max_t, h.fraction);
    }
    return max_t;
  }
  void Finish() {
    if (all) {
      std::sort(hits->begin(), hits->end(), HitLess);
    } else if (have_best) {
      hits->push_back(best);
    }
  }
};

struct ColliderSet::Impl::CastJob {
  const ColliderSet::Impl* m = nullptr;
  const CastQuery* q = nullptr;
  PairCounter* pairs = nullptr;
  Pose pose;
  SegmentSetup seg;
  double r_q = 0.0;
  HitCollector out;
  /// Moves: skip a pair that starts touching while the motion leaves it or
  /// runs along it (within rounding: a motion just projected on the pair's
  /// own plane must not be stopped by it again).
  bool skip_leaving = false;
  const uint8_t* skip = nullptr;  ///< as OverlapJob::skip

  void Start(const ColliderSet::Impl& set, const CastQuery& query, std::vector<CastHit>* hits) {
    m = &set;
    q = &query;
    out.Start(hits, q->filter, q->all_hits);
    pose = Normalized(q->pose);
    const Aabb box = q->shape.WorldBounds(pose);
    seg = SegmentSetup(box.Center(), q->translation, box.Extents() + Vec3::Splat(kBoxSlack));
    r_q = q->shape.BoundingRadius() + kBoxSlack;
  }
  double Leaf(uint32_t item, double max_t) {
    if (skip != nullptr && skip[item] != 0) return max_t;
    return LeafOf(m->colliders[item], m->radius[item], max_t);
  }
  double LeafOf(const Collider& c, float radius, double max_t) {
    if (out.Ignored(c.id)) return max_t;
    double t;
    if (!SphereSweepEntry(pose.position, q->translation, r_q + radius, c.pose.position,
                          max_t, &t)) {
      return max_t;
    }
    // The pair may stop as soon as it is known to come later than the hit to
    // beat (the best so far, or the worst of a full all-hits heap), or to tie
    // with it at a higher id (which also skips the contact solver for a
    // second started-overlapping pair).
    CastSettings settings;
    settings.max_iterations = internal::WorldCastIterations();
    const double bound = out.WinningBound(c.id, max_t);
    if (bound < 0.0) return max_t;
    settings.max_fraction = bound;
    ++pairs->count;
    const CastResult r = hitbox::Cast(q->shape, pose, q->translation, c.shape, c.pose, settings);
    // A cast that gave up (kFailed) is a hit at its fraction, a lower bound of
    // the time of impact: the query stops there rather than pass through.
    if (!r.hit()) return max_t;
    if (skip_leaving && r.state == CastState::kStartedOverlapping &&
        Dot(r.normal, q->translation) >= -1e-9 * q->translation.Length()) {
      return max_t;
    }
    return out.Add(c, r, max_t);
  }
  void Finish() { out.Finish(); }
};

struct ColliderSet::Impl::RayJob {
  const ColliderSet::Impl* m = nullptr;
  const RayQuery* q = nullptr;
  PairCounter* pairs = nullptr;
  SegmentSetup seg;
  HitCollector out;
  const uint8_t* skip = nullptr;  ///< as OverlapJob::skip

  void Start(const ColliderSet::Impl& set, const RayQuery& query, std::vector<CastHit>* hits) {
    m = &set;
    q = &query;
    out.Start(hits, q->filter, q->all_hits);
    seg = SegmentSetup(q->origin, q->translation, Vec3::Splat(kBoxSlack));
  }
  double Leaf(uint32_t item, double max_t) {
    if (skip != nullptr && skip[item] != 0) return max_t;
    return LeafOf(m->colliders[item], m->radius[item], max_t);
  }
  double LeafOf(const Collider& c, float radius, double max_t) {
    if (out.Ignored(c.id)) return max_t;
    double t;
    if (out.WinningBound(c.id, max_t) < 0.0) return max_t;
    if (!SphereSweepEntry(q->origin, q->translation, radius + kBoxSlack,
                          c.pose.position, max_t, &t)) {
      return max_t;
    }
    ++pairs->count;
    const CastResult r = hitbox::Raycast(q->origin, q->translation, c.shape, c.pose);
    if (!r.hit()) return max_t;
    return out.Add(c, r, max_t);
  }
  void Finish() { out.Finish(); }
};

template <typename J, typename Q, typename Hits>
void ColliderSet::Impl::RunRewound(const Q& q, Hits* hits, PairCounter* pairs,
                                   bool skip_leaving) const {
  J job;
  job.pairs = pairs;
  if constexpr (std::is_same_v<J, CastJob>) job.skip_leaving = skip_leaving;
  job.Start(*this, q, hits);
  const double t = *q.at_tick;
  if (!history.InRange(t)) {
    hits->clear();
    return;
  }
  thread_local internal::PlacedColliders placed;
  placed.colliders.clear();
  placed.radius.clear();
  job.skip = tracked.data();
  const auto prefetch = [this](uint32_t item) { PrefetchCollider(item); };
  if constexpr (std::is_same_v<Q, OverlapQuery>) {
    QueryTree(tree, job.box, q.filter.mask, [&](uint32_t item, uint32_t) { job.Leaf(item); },
              prefetch);
    history.PlaceInBox(t, job.box, q.filter.mask, {job.pose.position, Vec3{}, job.r_q}, &placed);
    for (size_t i = 0; i < placed.colliders.size(); ++i) {
      job.LeafOf(placed.colliders[i], placed.radius[i], kPlacedItem | static_cast<uint32_t>(i));
    }
    job.placed = &placed;
  } else {
    // The set's tree first (most hits end on static colliders, which then
    // shorten the history's walk), then the history's boxes, nearer first.
    double max_t = 1.0;
    CastTree(tree, job.seg, q.filter.mask, 1.0,
             [&](uint32_t item, uint32_t, double mt) { return max_t = job.Leaf(item, mt); },
             prefetch);
    internal::History::Reach reach;
    if constexpr (std::is_same_v<Q, CastQuery>) {
      reach = {job.pose.position, q.translation, job.r_q};
    } else {
      reach = {q.origin, q.translation, kBoxSlack};
    }
    history.PlaceAlong(t, job.seg, q.filter.mask, max_t, reach, &placed,
                       [&](const Collider& c, float radius, double mt) {
                         return job.LeafOf(c, radius, mt);
                       });
  }
  job.Finish();
}

void ColliderSet::Impl::Overlap(const OverlapQuery& q, std::vector<OverlapHit>* hits) const {
  OverlapJob job;
  PairCounter pairs;
  if (q.at_tick) {
    RunRewound<OverlapJob>(q, hits, &pairs);
    return;
  }
  job.pairs = &pairs;
  job.Start(*this, q, hits);
  const auto prefetch = [this](uint32_t item) { PrefetchCollider(item); };
  QueryTree(tree, job.box, q.filter.mask, [&](uint32_t item, uint32_t) { job.Leaf(item); },
            prefetch);
  job.Finish();
}

void ColliderSet::Impl::Cast(const CastQuery& q, std::vector<CastHit>* hits) const {
  CastJob job;
  PairCounter pairs;
  if (q.at_tick) {
    RunRewound<CastJob>(q, hits, &pairs);
    return;
  }
  job.pairs = &pairs;
  job.Start(*this, q, hits);
  const auto prefetch = [this](uint32_t item) { PrefetchCollider(item); };
  CastTree(tree, job.seg, q.filter.mask, 1.0,
           [&](uint32_t item, uint32_t, double max_t) { return job.Leaf(item, max_t); },
           prefetch);
  job.Finish();
}

void ColliderSet::Impl::Raycast(const RayQuery& q, std::vector<CastHit>* hits) const {
  RayJob job;
  PairCounter pairs;
  if (q.at_tick) {
    RunRewound<RayJob>(q, hits, &pairs);
    return;
  }
  job.pairs = &pairs;
  job.Start(*this, q, hits);
  const auto prefetch = [this](uint32_t item) { PrefetchCollider(item); };
  CastTree(tree, job.seg, q.filter.mask, 1.0,
           [&](uint32_t item, uint32_t, double max_t) { return job.Leaf(item, max_t); },
           prefetch);
  job.Finish();
}

/// Work between two checks of a batch's budget, deadline and cancellation:
/// tree steps (a few microseconds of work).
constexpr uint64_t kCheckEvery = 1024;

/// The shared state of one budgeted batch: work so far (all threads), and
/// why it stopped, if it did.
struct ColliderSet::Impl::BatchControl {
  const QueryBudget* budget = nullptr;
  std::atomic<uint64_t> nodes{0};
  std::atomic<uint64_t> pair_tests{0};
  /// 0 while running; else 1 + the ErrorCode that stopped it.
  std::atomic<int> stop{0};

  bool Stopped() const { return stop.load(std::memory_order_relaxed) != 0; }
  void Stop(ErrorCode code) {
    int expected = 0;
    stop.compare_exchange_strong(expected, 1 + static_cast<int>(code));
  }
  /// Adds work done by one thread; false when the batch must stop.
  bool Charge(uint64_t n, uint64_t p) {
    const uint64_t total_nodes = nodes.fetch_add(n, std::memory_order_relaxed) + n;
    const uint64_t total_pairs = pair_tests.fetch_add(p, std::memory_order_relaxed) + p;
    if (Stopped()) return false;
    if ((budget->max_nodes != 0 && total_nodes > budget->max_nodes) ||
        (budget->max_pair_tests != 0 && total_pairs > budget->max_pair_tests)) {
      Stop(ErrorCode::kResourceExhausted);
      return false;
    }
    return Poll();
  }
  /// Checks the deadline and the cancellation only.
  bool Poll() {
    if (budget->deadline != std::chrono::steady_clock::time_point::max() &&
        std::chrono::steady_clock::now() >= budget->deadline) {
      Stop(ErrorCode::kDeadlineExceeded);
      return false;
    }
    if (budget->cancelled && budget->cancelled()) {
      Stop(ErrorCode::kCancelled);
      return false;
    }
    return !Stopped();
  }
};

// The world of a move: the set's closest-hit sweeps of the move's shape,
// with the move's filter (plus its own collider), counting the work.
class ColliderSet::Impl::MoveSweeper final : public internal::MoveWorld {
 public:
  MoveSweeper(const Impl& set, const MoveQuery& q, BatchControl* control)
      : set_(set), control_(control) {
    cast_.shape = q.shape;
    cast_.pose = q.pose;
    cast_.filter = q.filter;
    cast_.filter.max_hits = 0;
    cast_.at_tick = q.at_tick;
    if (q.apply_to_id) cast_.filter.ignore.push_back(*q.apply_to_id);
  }

  bool Sweep(const Vec3& from, const Vec3& translation, CastHit* hit) override {
    if (stopped_) return false;
    cast_.pose.position = from;
    cast_.translation = translation;
    if (cast_.at_tick) {  // the world at a past tick: history's placed colliders too
      set_.RunRewound<CastJob>(cast_, &hits_, &pairs_, /*skip_leaving=*/true);
      ++steps_;  // charged one node, as rewound queries in a batch
    } else {
      SweepIn(set_, &hits_);
    }
    if (set_.base != nullptr) {  // a shared map: static, swept as it is
      SweepIn(*set_.base, &base_hits_);
      if (!base_hits_.empty() && (hits_.empty() || HitLess(base_hits_[0], hits_[0]))) {
        hits_.swap(base_hits_);
      }
    }
    return Found(hit);
  }

  /// The first hit of the current sweep against `impl`'s tree, into `hits`.
  void SweepIn(const Impl& impl, std::vector<CastHit>* hits) {
    CastJob job;
    job.pairs = &pairs_;
    job.skip_leaving = true;
    job.Start(impl, cast_, hits);
    SegmentCursor cursor;
    cursor.Begin(impl.tree, &job.seg, cast_.filter.mask, 1.0);
    const auto prefetch = [&impl](uint32_t item) { impl.PrefetchCollider(item); };
    while (cursor.Step(
        [&](uint32_t item, uint32_t, double max_t) { return job.Leaf(item, max_t); }, prefetch)) {
      ++steps_;
    }
    ++steps_;
    job.Finish();
  }

  /// Charges the work when due; the first hit of the last sweep, if any.
  bool Found(CastHit* hit) {
    if (control_ != nullptr && steps_ >= kCheckEvery && !Charge()) return false;
    if (hits_.empty()) return false;
    *hit = hits_.front();  // user_data set by MakeHit (a rewound hit may be gone now)
    return true;
  }

  /// Charges the work not yet charged; false when the batch must stop.
  bool Charge() {
    if (control_ == nullptr) return true;
    stopped_ = !control_->Charge(steps_, pairs_.count - charged_pairs_);
    steps_ = 0;
    charged_pairs_ = pairs_.count;
    return !stopped_;
  }

 private:
  const Impl& set_;
  BatchControl* control_;
  CastQuery cast_;
  std::vector<CastHit> hits_;
  std::vector<CastHit> base_hits_;
  PairCounter pairs_;
  uint64_t steps_ = 0;
  uint64_t charged_pairs_ = 0;
  bool stopped_ = false;
};

bool ColliderSet::Impl::Move(const MoveQuery& q, MoveResult* result,
                             BatchControl* control) const {
  MoveSweeper world(*this, q, control);
  internal::RunMove(q, world, result);
  return world.Charge();
}

// Runs the queries of kind Q among queries[first, last) with up to
// kInterleave jobs (J) stepped in turn; begin(job, cursor) starts a cursor.
// Returns false when `control` (used only when kBudgeted) stopped it.
template <typename Q, typename J, typename Cursor, bool kBudgeted, typename BeginFn,
          typename StepFn>
bool ColliderSet::Impl::Interleave(std::span<const Query> queries,
                                   std::span<QueryResult> results, size_t first, size_t last,
                                   BatchControl* control, const BeginFn& begin,
                                   const StepFn& step) const {
  const Impl& m = *this;
  J jobs[kInterleave];
  Cursor cursors[kInterleave];
  bool live[kInterleave] = {};
  PairCounter pairs;
  uint64_t steps = 0;
  uint64_t charged_pairs = 0;
  size_t next = first;
  size_t active = 0;
  auto start = [&](size_t s) {
    while (next < last) {
      const size_t i = next++;
      const Q* qp = std::get_if<Q>(&queries[i]);
      if (qp == nullptr || qp->at_tick) continue;  // another kind or rewound: own pass
      const Q& q = *qp;
      jobs[s].pairs = &pairs;
      if constexpr (std::is_same_v<Q, OverlapQuery>) {
        jobs[s].Start(m, q, &results[i].overlaps);
      } else {
        jobs[s].Start(m, q, &results[i].hits);
      }
      begin(jobs[s], cursors[s]);
      live[s] = true;
      return true;
    }
    live[s] = false;
    return false;
  };
  const auto charge = [&] {
    const bool go = control->Charge(steps, pairs.count - charged_pairs);
    steps = 0;
    charged_pairs = pairs.count;
    return go;
  };
  for (size_t s = 0; s < kInterleave; ++s) active += start(s);
  while (active > 0) {
    // Every live slot steps once per round: count the round, not each step.
    if constexpr (kBudgeted) steps += active;
    for (size_t s = 0; s < kInterleave; ++s) {
      if (!live[s]) continue;
      if (step(jobs[s], cursors[s])) continue;
      jobs[s].Finish();
      if (!start(s)) --active;
    }
    if constexpr (kBudgeted) {
      if (steps >= kCheckEvery && !charge()) return false;
    }
  }
  if constexpr (kBudgeted) return charge();
  return true;
}

bool ColliderSet::Impl::RunRange(std::span<const Query> queries, std::span<QueryResult> results,
                                 size_t begin, size_t end, BatchControl* control) const {
  return control != nullptr ? RunRangeImpl<true>(queries, results, begin, end, control)
                            : RunRangeImpl<false>(queries, results, begin, end, nullptr);
}

template <bool kBudgeted>
bool ColliderSet::Impl::RunRangeImpl(std::span<const Query> queries,
                                     std::span<QueryResult> results, size_t begin, size_t end,
                                     BatchControl* control) const {
  for (size_t i = begin; i < end; ++i) {
    results[i].overlaps.clear();
    results[i].hits.clear();
    results[i].move.reset();
  }
  const auto prefetch = [this](uint32_t item) { PrefetchCollider(item); };
  if (kBudgeted && !control->Poll()) return false;
  const bool ok = Interleave<OverlapQuery, OverlapJob, BoxCursor, kBudgeted>(
      queries, results, begin, end, control,
      [this](OverlapJob& job, BoxCursor& cur) { cur.Begin(tree, job.box, job.q->filter.mask); },
      [&](OverlapJob& job, BoxCursor& cur) {
        return cur.Step([&](uint32_t item, uint32_t) { job.Leaf(item); }, prefetch);
      });
  if (!ok) return false;
  const bool ok2 = Interleave<CastQuery, CastJob, SegmentCursor, kBudgeted>(
      queries, results, begin, end, control,
      [this](CastJob& job, SegmentCursor& cur) {
        cur.Begin(tree, &job.seg, job.q->filter.mask, 1.0);
      },
      [&](CastJob& job, SegmentCursor& cur) {
        return cur.Step(
            [&](uint32_t item, uint32_t, double max_t) { return job.Leaf(item, max_t); },
            prefetch);
      });
  if (!ok2) return false;
  const bool ok3 = Interleave<RayQuery, RayJob, SegmentCursor, kBudgeted>(
      queries, results, begin, end, control,
      [this](RayJob& job, SegmentCursor& cur) {
        cur.Begin(tree, &job.seg, job.q->filter.mask, 1.0);
      },
      [&](RayJob& job, SegmentCursor& cur) {
        return cur.Step(
            [&](uint32_t item, uint32_t, double max_t) { return job.Leaf(item, max_t); },
            prefetch);
      });
  if (!ok3) return false;
  // Moves: a chain of dependent sweeps each, run one after another.
  for (size_t i = begin; i < end; ++i) {
    const auto* mq = std::get_if<MoveQuery>(&queries[i]);
    if (mq == nullptr) continue;
    if (!Move(*mq, &results[i].move.emplace(), control)) return false;
  }
  // Rewound queries, one at a time (they are charged one node each).
  PairCounter pairs;
  for (size_t i = begin; i < end; ++i) {
    const Query& q = queries[i];
    if (const auto* o = std::get_if<OverlapQuery>(&q); o != nullptr && o->at_tick) {
      RunRewound<OverlapJob>(*o, &results[i].overlaps, &pairs);
    } else if (const auto* c = std::get_if<CastQuery>(&q); c != nullptr && c->at_tick) {
      RunRewound<CastJob>(*c, &results[i].hits, &pairs);
    } else if (const auto* r = std::get_if<RayQuery>(&q); r != nullptr && r->at_tick) {
      RunRewound<RayJob>(*r, &results[i].hits, &pairs);
    } else {
      continue;
    }
    if constexpr (kBudgeted) {
      if (!control->Charge(1, pairs.count)) return false;
      pairs.count = 0;
    }
  }
  return true;
}

void ColliderSet::Overlap(const OverlapQuery& q, std::vector<OverlapHit>* hits) const {
  if (base_ != nullptr) {
    QueryResult r;
    RunOneLayered(q, &r);
    *hits = std::move(r.overlaps);
    return;
  }
  impl_->Overlap(q, hits);
}
void ColliderSet::Cast(const CastQuery& q, std::vector<CastHit>* hits) const {
  if (base_ != nullptr) {
    QueryResult r;
    RunOneLayered(q, &r);
    *hits = std::move(r.hits);
    return;
  }
  impl_->Cast(q, hits);
}
void ColliderSet::Raycast(const RayQuery& q, std::vector<CastHit>* hits) const {
  if (base_ != nullptr) {
    QueryResult r;
    RunOneLayered(q, &r);
    *hits = std::move(r.hits);
    return;
  }
  impl_->Raycast(q, hits);
}

void ColliderSet::LinkBase() { impl_->base = base_ != nullptr ? base_->impl_.get() : nullptr; }

void ColliderSet::Move(const MoveQuery& q, MoveResult* result) const {
  impl_->Move(q, result, nullptr);
}

void ColliderSet::Run(const Query& q, QueryResult* result) const {
  if (base_ != nullptr) return RunOneLayered(q, result);
  result->overlaps.clear();
  result->hits.clear();
  result->move.reset();
  if (const auto* m = std::get_if<MoveQuery>(&q)) {
    impl_->Move(*m, &result->move.emplace(), nullptr);
    return;
  }
  if (const auto* o = std::get_if<OverlapQuery>(&q)) {
    impl_->Overlap(*o, &result->overlaps);
  } else if (const auto* c = std::get_if<CastQuery>(&q)) {
    impl_->Cast(*c, &result->hits);
  } else if (const auto* r = std::get_if<RayQuery>(&q)) {
    impl_->Raycast(*r, &result->hits);
  }
}

// Answers the first n queries, on the calling thread or in chunks on `pool`
// when the batch is large enough; with a control, chunks not yet started
// are skipped once it stopped.
void ColliderSet::Impl::RunChunks(std::span<const Query> queries, std::span<QueryResult> results,
                                  size_t n, ThreadPool* pool, BatchControl* control) const {
  if (pool == nullptr || pool->size() <= 1 || n < kParallelBatchMin) {
    RunRange(queries, results, 0, n, control);
    return;
  }
  const size_t chunks = (n + kParallelChunk - 1) / kParallelChunk;
  pool->ParallelFor(chunks, [&](size_t chunk) {
    if (control != nullptr && control->Stopped()) return;
    const size_t end = std::min(n, (chunk + 1) * kParallelChunk);
    RunRange(queries, results, chunk * kParallelChunk, end, control);
  });
}

void ColliderSet::RunBatch(std::span<const Query> queries, std::span<QueryResult> results,
                           ThreadPool* pool) const {
  if (base_ != nullptr) {
    (void)RunBatchLayered(queries, results, pool, nullptr, nullptr);
    return;
  }
  impl_->RunChunks(queries, results, std::min(queries.size(), results.size()), pool, nullptr);
}

Status ColliderSet::RunBatch(std::span<const Query> queries, std::span<QueryResult> results,
                             ThreadPool* pool, const QueryBudget& budget, QueryWork* work) const {
  if (base_ != nullptr) return RunBatchLayered(queries, results, pool, &budget, work);
  return RunBatchOwn(queries, results, pool, &budget, work);
}

Status ColliderSet::RunBatchOwn(std::span<const Query> queries, std::span<QueryResult> results,
                                ThreadPool* pool, const QueryBudget* budget_or_null,
                                QueryWork* work) const {
  const size_t n = std::min(queries.size(), results.size());
  if (Status s = CheckQueryTicks(queries.first(n)); !s.ok()) {
    for (size_t i = 0; i < n; ++i) {
      results[i].overlaps.clear();
      results[i].hits.clear();
    }
    return s;
  }
  if (budget_or_null == nullptr) {
    impl_->RunChunks(queries, results, n, pool, nullptr);
    return Status::Ok();
  }
  const QueryBudget& budget = *budget_or_null;
  Impl::BatchControl control;
  control.budget = &budget;
  impl_->RunChunks(queries, results, n, pool, &control);
  if (work != nullptr) {
    work->nodes = control.nodes.load();
    work->pair_tests = control.pair_tests.load();
  }
  const int stop = control.stop.load();
  if (stop == 0) return Status::Ok();
  for (size_t i = 0; i < n; ++i) {
    // Release the memory too: a stopped batch may have been a huge one.
    std::vector<OverlapHit>().swap(results[i].overlaps);
    std::vector<CastHit>().swap(results[i].hits);
    results[i].move.reset();
  }
  const auto code = static_cast<ErrorCode>(stop - 1);
  switch (code) {
    case ErrorCode::kDeadlineExceeded:
      return Status(code, "queries: the deadline passed after " + std::to_string(control.nodes) +
                              " tree nodes and " + std::to_string(control.pair_tests) +
                              " pair tests");
    case ErrorCode::kCancelled: return Status(code, "queries: cancelled");
    default:
      return Status(code, "queries: the batch needs more than its budget of " +
                              std::to_string(budget.max_nodes) + " tree nodes and " +
                              std::to_string(budget.max_pair_tests) +
                              " pair tests (0: unlimited); it had used " +
                              std::to_string(control.nodes) + " and " +
                              std::to_string(control.pair_tests));
  }
}

static Status ValidateMoveSettings(const MoveSettings& s, const std::string& field) {
  if (Status st = CheckVec(s.up, field + ".up"); !st.ok()) return st;
  if (s.up.Length() < 1e-6) return Invalid(field + ".up", "must not be zero");
  const auto distance = [&](double v, const char* name, bool zero_ok) {
    if (std::isfinite(v) && (zero_ok ? v >= 0.0 : v > 0.0) && v <= kMaxMoveDistanceSetting) {
      return Status::Ok();
    }
    return Invalid(field + "." + name, std::string("must be ") + (zero_ok ? ">= 0" : "> 0") +
                                           " and <= " + Num(kMaxMoveDistanceSetting) +
                                           " m, got " + Num(v));
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
    return Invalid(field + ".max_slope_degrees", "must be in [0, 90), got " +
                                                     Num(s.max_slope_degrees));
  }
  return Status::Ok();
}

Status ColliderSet::ValidateQuery(const Query& q, const std::string& field) {
  if (const std::optional<double>& t = AtTickOf(q); t && !(std::isfinite(*t) && *t >= 0.0)) {
    return Invalid(field + ".at_tick", "must be a finite tick >= 0, got " + Num(*t));
  }
  if (const auto* o = std::get_if<OverlapQuery>(&q)) {
    if (Status s = CheckQueryShape(o->shape, field + ".shape"); !s.ok()) return s;
    return CheckPose(o->pose, field + ".pose");
  }
  if (const auto* c = std::get_if<CastQuery>(&q)) {
    if (Status s = CheckQueryShape(c->shape, field + ".shape"); !s.ok()) return s;
    if (Status s = CheckPose(c->pose, field + ".pose"); !s.ok()) return s;
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

}  // namespace hitbox
