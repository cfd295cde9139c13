// ColliderSet storage: construction, validated atomic change batches (Apply,
// AddBulk), the history's ticks, and the accessors (collider_set_internal.h
// holds the Impl).
#include <limits>
#include <unordered_set>

#include "hitbox/format.h"
#include "world/collider_set_internal.h"

namespace hitbox {

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
  // A watch may attach to a map's collider too.
  auto exists_any = [&](uint64_t id) {
    return exists(id) || (base_ != nullptr && base_->FindOwn(id) != nullptr);
  };
  std::unordered_map<uint64_t, bool> watches_after;  // watch ids touched by the batch
  int64_t watch_count = static_cast<int64_t>(m.watches.size());
  bool has_watch_changes = false;
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
        if (!ValidPose(ch.collider.pose)) return CheckPose(ch.collider.pose, field() + ".pose");
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
      case ColliderChange::Kind::kAddWatch:
      case ColliderChange::Kind::kRemoveWatch:
        if (Status s = CheckWatchChange(ch, i, exists_any, &watches_after, &watch_count); !s.ok()) {
          return s;
        }
        has_watch_changes = true;
        break;
      default:
        return Invalid(field() + ".kind", "unknown change kind");
    }
  }
  // Pass 2: apply; every step is known to succeed. The history records each
  // change (the pose before a first move, a removed collider) as it goes.
  m.BeginBatch(tick);
  m.watches.BeginBatch(m.revision, has_watch_changes);
  // A bounded watch update may refuse the batch after its changes: keep what
  // they replace (copies share shape data) so it can be put back.
  std::vector<std::pair<uint64_t, std::optional<Collider>>> kept;
  const bool keep_before = m.watches.recording() && m.watches.bounded();
  for (const ColliderChange& ch : changes) {
    const uint64_t id = ch.collider.id;
    if (keep_before && !ch.IsWatchChange()) {
      const uint32_t i = m.IndexOf(id);
      kept.emplace_back(id, i == IdIndex::kEmpty ? std::nullopt
                                                 : std::optional<Collider>(m.colliders[i]));
    }
    switch (ch.kind) {
      case ColliderChange::Kind::kAdd:
        m.Add(ch.collider);
        m.history.OnAdd(m.colliders.back());
        if (m.watches.recording()) m.watches.Touch(id, nullptr);
        break;
      case ColliderChange::Kind::kReplace: {
        const uint32_t i = m.IndexOf(id);
        m.TouchWatches(i);
        m.history.OnRemove(m.colliders[i]);
        m.Replace(i, ch.collider);
        m.history.OnAdd(m.colliders[i]);
        break;
      }
      case ColliderChange::Kind::kMove: {
        const uint32_t i = m.IndexOf(id);
        const Pose before = m.PoseOf(i);
        m.TouchWatches(i);
        m.Move(i, ch.collider.pose);
        m.history.OnMove(m.colliders[i], before);
        break;
      }
      case ColliderChange::Kind::kRemove: {
        const uint32_t i = m.IndexOf(id);
        m.TouchWatches(i);
        m.history.OnRemove(m.colliders[i]);
        m.Remove(i);
        break;
      }
      case ColliderChange::Kind::kAddWatch:
        AddWatchNow(*ch.watch);
        continue;
      case ColliderChange::Kind::kRemoveWatch:
        RemoveWatchNow(id, tick);
        continue;
    }
    m.SyncTracked(id);
  }
  if (Status s = FinishWatchBatch(tick); !s.ok()) {
    UndoOpenBatch(kept);
    return s;
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
  m.watches.BeginBatch(m.revision, false);
  if (m.watches.recording()) {
    for (const Collider& c : colliders) m.watches.Touch(c.id, nullptr);
  }
  if (colliders.size() >= m.colliders.size()) {
    // Large load: append everything and rebuild the tree top-down.
    m.colliders.reserve(total);
    m.leaf_of.reserve(total);
    m.radius.reserve(total);
    m.index.Reserve(total, m.KeyOf());
    for (const Collider& c : colliders) {
      const uint32_t i = static_cast<uint32_t>(m.colliders.size());
      m.TouchMeshes(c.shape);
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
  if (Status s = FinishWatchBatch(tick); !s.ok()) {
    std::vector<std::pair<uint64_t, std::optional<Collider>>> before;
    before.reserve(colliders.size());
    for (const Collider& c : colliders) before.emplace_back(c.id, std::nullopt);
    UndoOpenBatch(before);
    return s;
  }
  ++m.revision;
  return Status::Ok();
}

void ColliderSet::UndoOpenBatch(
    const std::vector<std::pair<uint64_t, std::optional<Collider>>>& before) {
  Impl& m = *impl_;
  std::unordered_set<uint64_t> seen;
  for (const auto& [id, old] : before) {
    if (!seen.insert(id).second) continue;  // the first entry is the state before
    const uint32_t i = m.IndexOf(id);
    if (old && i != IdIndex::kEmpty) {
      m.Replace(i, *old);
      m.colliders[i].pose = old->pose;  // exactly as stored (Replace normalizes again)
    } else if (old) {
      m.Add(*old);
      m.colliders.back().pose = old->pose;
    } else if (i != IdIndex::kEmpty) {
      m.Remove(i);
    }
    m.SyncTracked(id);
  }
  // The open batch's history and watch journals (revision_before == revision).
  RestoreRevision(m.revision);
}

Status ColliderSet::ApplyBatch(std::span<const ColliderChange> changes,
                               std::optional<uint64_t> tick, const BatchPlan& plan) {
  if (changes.empty()) {
    impl_->watches.ClearEvents();  // none from an earlier batch
    return Status::Ok();
  }
  if (plan.all_adds) {
    std::vector<Collider> adds;
    adds.reserve(changes.size());
    for (const ColliderChange& c : changes) adds.push_back(c.collider);
    return AddBulk(adds, tick);
  }
  return Apply(changes, tick);
}

uint64_t ColliderSet::revision() const { return impl_->revision; }
void ColliderSet::RestoreRevision(uint64_t revision) {
  Impl& m = *impl_;
  std::vector<uint64_t> touched;
  m.history.UndoTo(revision, &touched);
  for (uint64_t id : touched) m.SyncTracked(id);
  m.watches.UndoTo(revision);
  m.revision = revision;
}

void ColliderSet::SetLoadedRevision(uint64_t revision) {
  impl_->watches.ForgetUndo();
  impl_->revision = revision;
}

void ColliderSet::Drop() {
  auto fresh = std::make_unique<Impl>();
  fresh->history.set_window(impl_->history.window());
  fresh->watches.max_events = impl_->watches.max_events;
  impl_.swap(fresh);  // the old contents are freed when `fresh` goes
  if (base_ != nullptr) LinkBase();
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

Status ColliderSet::ForEachAtTick(double t,
                                  const std::function<void(const Collider&)>& fn) const {
  const Impl& m = *impl_;
  if (!m.history.has_ticks() || !m.history.InRange(t)) {
    std::string range = "no tick yet";
    if (m.history.has_ticks()) {
      const TickRange r = m.history.Range();
      range = "ticks " + std::to_string(r.oldest) + ".." + std::to_string(r.newest);
    }
    return Error{ErrorCode::kOutOfRange,
                 "tick " + FormatDouble(t) + " is outside the history (" + range + ")"};
  }
  // Untracked colliders did not change inside the window: as they are now.
  for (size_t i = 0; i < m.colliders.size(); ++i) {
    if (m.tracked[i] == 0) fn(m.colliders[i]);
  }
  // Tracked ones from the history, placed at t; the box and reach take all.
  constexpr float kAll = std::numeric_limits<float>::max();
  const FloatAabb everywhere{{-kAll, -kAll, -kAll}, {kAll, kAll, kAll}};
  internal::PlacedColliders placed;
  m.history.PlaceInBox(t, everywhere, 0xFFFFFFFFu,
                       {Vec3{}, Vec3{}, std::numeric_limits<double>::infinity()}, &placed);
  for (const Collider& c : placed.colliders) fn(c);
  return Status::Ok();
}

size_t ColliderSet::MemoryBytes() const {
  const Impl& m = *impl_;
  size_t wide_bytes = 0;
  {
    std::lock_guard<std::mutex> lock(m.wide_mu);
    if (m.wide_copy != nullptr) wide_bytes = m.wide_copy->MemoryBytes();
    if (m.wide_rest != nullptr) wide_bytes += m.wide_rest->MemoryBytes();
    if (m.mesh_groups != nullptr) wide_bytes += m.mesh_groups->MemoryBytes();
  }
  return wide_bytes + m.colliders.capacity() * sizeof(Collider) +
         m.leaf_of.capacity() * sizeof(uint32_t) + m.radius.capacity() * sizeof(float) +
         m.tracked.capacity() + m.tree.MemoryBytes() + m.index.MemoryBytes() +
         m.shape_data_bytes + m.history.MemoryBytes() + m.watches.MemoryBytes();
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

void ColliderSet::SetBackgroundCaches(bool background) {
  std::lock_guard<std::mutex> lock(impl_->wide_mu);
  impl_->background_caches = background;
}

void ColliderSet::WaitForCaches() const {
  std::lock_guard<std::mutex> lock(impl_->wide_mu);
  // The build takes no lock: joined here, adopted by the next batch.
  if (impl_->groups_build != nullptr && impl_->groups_build->thread.joinable()) {
    impl_->groups_build->thread.join();
  }
}

void ColliderSet::SetCacheReserve(std::function<bool(uint64_t from, uint64_t to)> reserve) {
  std::lock_guard<std::mutex> lock(impl_->wide_mu);
  impl_->cache_reserve = std::move(reserve);
}

ColliderSet::TreeStats ColliderSet::GetTreeStats() const {
  const Impl& m = *impl_;
  TreeStats s;
  s.height = m.tree.Height();
  s.nodes = m.tree.NodeCount();
  s.area_ratio = m.tree.AreaRatio();
  std::lock_guard<std::mutex> lock(m.wide_mu);
  if (m.WideIsCurrent()) {
    s.wide_nodes = m.wide_copy->node_count();
    if (m.wide_rest != nullptr && m.rest_version == m.tree.version() &&
        m.rest_groups == m.mesh_groups && m.mesh_groups->version() == m.mesh_version) {
      s.rest_nodes = m.wide_rest->node_count();
    }
  }
  if (m.mesh_groups != nullptr && m.mesh_groups->version() == m.mesh_version) {
    s.merged_triangles = m.mesh_groups->triangle_count();
  }
  return s;
}

}  // namespace hitbox
