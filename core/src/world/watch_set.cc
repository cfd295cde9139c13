// WatchSet storage, its tree and undo logs (watch_set.h).
#include "world/watch_set.h"

#include "world/collider_set_internal.h"

namespace hitbox::internal {
namespace {
/// Undo logs kept: a batch and the inverse batch that takes it back.
constexpr size_t kJournals = 4;
}  // namespace

Aabb WatchSet::BoxOf(const WatchState& s, bool fat) {
  const Aabb box = SlackBounds(s.watch.shape, s.world_pose);
  // An attached watch's margin grows with its size: a large area of interest
  // then leaves the tree alone for several steps of its player, while the
  // colliders its box takes in besides are culled by the bounding spheres.
  return fat ? box.Expanded(kWatchFatMargin + 0.1 * s.watch.shape.BoundingRadius()) : box;
}

void WatchSet::Insert(WatchState state) {
  const auto i = static_cast<uint32_t>(states_.size());
  const bool attached = state.watch.attach_to.has_value();
  index_[state.watch.id] = i;
  if (attached) attached_.emplace(*state.watch.attach_to, state.watch.id);
  leaf_of_.push_back(tree_.CreateLeaf(BoxOf(state, attached), i, 0));
  states_.push_back(std::move(state));
}

WatchState WatchSet::Erase(uint64_t id) {
  const uint32_t i = index_.at(id);
  WatchState out = std::move(states_[i]);
  if (out.watch.attach_to) {
    auto [b, e] = attached_.equal_range(*out.watch.attach_to);
    for (auto it = b; it != e; ++it) {
      if (it->second == id) {
        attached_.erase(it);
        break;
      }
    }
  }
  tree_.DestroyLeaf(leaf_of_[i]);
  index_.erase(id);
  const auto last = static_cast<uint32_t>(states_.size() - 1);
  if (i != last) {
    states_[i] = std::move(states_[last]);
    leaf_of_[i] = leaf_of_[last];
    tree_.SetLeafItem(leaf_of_[i], i);
    index_[states_[i].watch.id] = i;
  }
  states_.pop_back();
  leaf_of_.pop_back();
  return out;
}

void WatchSet::SetPose(uint32_t i, const Pose& world_pose) {
  WatchState& s = states_[i];
  s.world_pose = world_pose;
  const Aabb box = BoxOf(s, false);
  if (!tree_.LeafContains(leaf_of_[i], box)) {
    tree_.MoveLeaf(leaf_of_[i], BoxOf(s, s.watch.attach_to.has_value()));
  }
}

void WatchSet::AttachedTo(uint64_t id, std::vector<uint64_t>* out) const {
  auto [b, e] = attached_.equal_range(id);
  for (auto it = b; it != e; ++it) out->push_back(it->second);
}

size_t WatchSet::MemoryBytes() const {
  size_t bytes = states_.capacity() * sizeof(WatchState) + leaf_of_.capacity() * sizeof(uint32_t) +
                 tree_.MemoryBytes() + index_.size() * 32 + attached_.size() * 40 +
                 touched_.capacity() * sizeof(Touched) + events_.capacity() * sizeof(WatchEvent);
  for (const WatchState& s : states_) {
    bytes += s.inside.capacity() * sizeof(WatchMember) + s.watch.ignore.capacity() * 8 +
             s.watch.shape.DataBytes();
  }
  for (const Journal& j : journals_) {
    bytes += j.ops.capacity() * sizeof(UndoOp) + j.pairs.capacity() * sizeof(PairUndo);
    for (const UndoOp& op : j.ops) bytes += op.state.inside.capacity() * sizeof(WatchMember);
  }
  return bytes;
}

std::string WatchSet::Validate() const {
  if (std::string e = tree_.Validate(); !e.empty()) return e;
  if (tree_.LeafCount() != states_.size()) return "watch tree leaf count differs";
  if (index_.size() != states_.size()) return "watch index size differs";
  size_t attached = 0;
  for (size_t i = 0; i < states_.size(); ++i) {
    const WatchState& s = states_[i];
    const std::string name = "watch " + std::to_string(s.watch.id);
    if (IndexOf(s.watch.id) != i) return name + ": index is wrong";
    if (tree_.node(leaf_of_[i]).Item() != i) return name + ": leaf item is wrong";
    if (!tree_.LeafContains(leaf_of_[i], SlackBounds(s.watch.shape, s.world_pose))) {
      return name + ": leaf box does not contain it";
    }
    for (size_t k = 1; k < s.inside.size(); ++k) {
      if (s.inside[k - 1].id >= s.inside[k].id) return name + ": inside set not sorted";
    }
    if (s.watch.attach_to) {
      ++attached;
      bool found = false;
      auto [b, e] = attached_.equal_range(*s.watch.attach_to);
      for (auto it = b; it != e; ++it) found = found || it->second == s.watch.id;
      if (!found) return name + ": attachment not indexed";
    }
  }
  if (attached != attached_.size()) return "attachment index size differs";
  return "";
}

void WatchSet::BeginBatch(uint64_t revision_before, bool watch_changes) {
  touched_.clear();
  events_.clear();
  truncated_ = false;
  work = WatchWork{};
  recording_ = watch_changes || !states_.empty();
  if (journals_.size() == kJournals) journals_.pop_front();
  journals_.push_back({revision_before, {}, {}});
}

std::vector<WatchSet::Touched>& WatchSet::TouchedOnce() {
  // Stable: the first entry of an id holds its state before the batch.
  std::stable_sort(touched_.begin(), touched_.end(),
                   [](const Touched& a, const Touched& b) { return a.id < b.id; });
  touched_.erase(std::unique(touched_.begin(), touched_.end(),
                             [](const Touched& a, const Touched& b) { return a.id == b.id; }),
                 touched_.end());
  return touched_;
}

void WatchSet::EndBatch() {
  std::sort(events_.begin(), events_.end(), [](const WatchEvent& a, const WatchEvent& b) {
    return a.watch_id != b.watch_id ? a.watch_id < b.watch_id : a.collider_id < b.collider_id;
  });
  if (max_events != 0 && events_.size() > max_events) {
    events_.resize(max_events);
    truncated_ = true;
  }
  recording_ = false;
  // A big batch's buffers are not kept.
  if (touched_.capacity() > 4096) {
    std::vector<Touched>().swap(touched_);
  } else {
    touched_.clear();
  }
  if (queries.capacity() > 4096) {
    std::vector<hitbox::Query>().swap(queries);
    std::vector<QueryResult>().swap(results);
  }
}

void WatchSet::UndoTo(uint64_t revision) {
  while (!journals_.empty() && journals_.back().revision_before >= revision) {
    std::vector<PairUndo>& pairs = journals_.back().pairs;
    for (auto op = pairs.rbegin(); op != pairs.rend(); ++op) {
      std::vector<WatchMember>& in = states_[IndexOf(op->watch)].inside;
      auto it = std::lower_bound(in.begin(), in.end(), op->collider,
                                 [](const WatchMember& m, uint64_t id) { return m.id < id; });
      const bool there = it != in.end() && it->id == op->collider;
      if (op->was_inside) {
        if (there) {
          it->sub_shape = op->sub_shape;
        } else {
          in.insert(it, {op->collider, op->sub_shape});
        }
      } else if (there) {
        in.erase(it);
      }
    }
    std::vector<UndoOp>& ops = journals_.back().ops;
    for (auto op = ops.rbegin(); op != ops.rend(); ++op) {
      switch (op->kind) {
        case UndoOp::kAdded: Erase(op->watch); break;
        case UndoOp::kRemoved: Insert(std::move(op->state)); break;
        case UndoOp::kRefreshed: {
          const uint32_t i = IndexOf(op->watch);
          SetPose(i, op->state.world_pose);
          states_[i].inside = std::move(op->state.inside);
          break;
        }
      }
    }
    journals_.pop_back();
  }
  events_.clear();
  truncated_ = false;
}

}  // namespace hitbox::internal
