// The watches of a ColliderSet: their storage (dense states, an id index,
// the colliders they are attached to), their own dynamic AABB tree (boxes of
// the watches' shapes at their world poses), the per-batch record of changed
// colliders, the events, and an undo log of recent batches (RestoreRevision).
// The batch algorithm that uses them is in collider_set_watches.cc.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "broad_phase/dynamic_tree.h"
#include "hitbox/world/collider_set.h"
#include "hitbox/world/watch.h"

namespace hitbox::internal {

class WatchSet {
 public:
  /// A collider a batch changed: its slack box before the batch, if it existed.
  struct Touched {
    uint64_t id = 0;
    Aabb before;
    bool existed = false;
  };

  /// One step of a batch's watch update on a whole watch, with what undoes it.
  struct UndoOp {
    enum Kind : uint8_t {
      kAdded,      ///< watch `watch` was added: erase it
      kRemoved,    ///< `state` was removed: insert it back
      kRefreshed,  ///< watch `watch` moved / reran: `state` holds its old pose and inside set
    };
    Kind kind = kAdded;
    uint64_t watch = 0;
    WatchState state;
  };
  /// One (watch, collider) pair a batch changed: it was inside with
  /// `sub_shape`, or it was not. Pair steps come after every UndoOp of a batch.
  struct PairUndo {
    uint64_t watch = 0;
    uint64_t collider = 0;
    uint32_t sub_shape = 0;
    bool was_inside = false;
  };

  size_t size() const { return states_.size(); }
  bool empty() const { return states_.empty(); }
  const std::vector<WatchState>& states() const { return states_; }

  /// Dense index of watch `id`, or UINT32_MAX.
  uint32_t IndexOf(uint64_t id) const {
    const auto it = index_.find(id);
    return it == index_.end() ? UINT32_MAX : it->second;
  }
  WatchState& at(uint32_t i) { return states_[i]; }
  const WatchState& at(uint32_t i) const { return states_[i]; }

  /// Adds a watch at its state's world pose (the id must be unused).
  void Insert(WatchState state);
  /// Removes watch `id` (it must exist) and returns its state.
  WatchState Erase(uint64_t id);
  /// Moves watch i to `world_pose` (its tree box follows).
  void SetPose(uint32_t i, const Pose& world_pose);
  /// Watch ids attached to collider `id`, appended to `out`.
  void AttachedTo(uint64_t id, std::vector<uint64_t>* out) const;
  /// True when some watch is attached to collider `id`.
  bool HasAttached(uint64_t id) const { return attached_.count(id) != 0; }

  /// Calls fn(i) for every watch i whose tree box overlaps `box`.
  template <typename Fn>
  void Query(const Aabb& box, Fn&& fn) const {
    QueryTree(tree_, FloatAabb::Outward(box), 0xFFFFFFFFu,
              [&](uint32_t item, uint32_t) { fn(item); });
  }

  /// Heap bytes of the watches, their tree, index, inside sets and undo logs.
  size_t MemoryBytes() const;
  /// Checks tree, index, attachments and sorted inside sets; "" when valid.
  std::string Validate() const;

  // ---- one batch ----
  /// Starts a batch applied on top of `revision_before`; `watch_changes`:
  /// the batch adds or removes watches. Colliders are recorded (Touch) only
  /// when the batch can change any watch.
  void BeginBatch(uint64_t revision_before, bool watch_changes);
  /// True while the batch must record the colliders it changes.
  bool recording() const { return recording_; }
  /// Records collider `id` changed; `before` its slack box if it existed.
  void Touch(uint64_t id, const Aabb* before) {
    touched_.push_back({id, before != nullptr ? *before : Aabb{}, before != nullptr});
  }
  /// The colliders touched, first touch per id (the state before the batch).
  std::vector<Touched>& TouchedOnce();
  /// The open batch's undo log.
  std::vector<UndoOp>& ops() { return journals_.back().ops; }
  std::vector<PairUndo>& pair_ops() { return journals_.back().pairs; }
  /// Buffers of the reruns, kept from batch to batch.
  std::vector<hitbox::Query> queries;
  std::vector<QueryResult> results;
  /// Records an event of the open batch.
  void AddEvent(const WatchEvent& e) { events_.push_back(e); }
  /// Ends the batch: sorts the events, keeps the first max_events.
  void EndBatch();
  /// Forgets the last batch's events (an empty batch has none).
  void ClearEvents() {
    events_.clear();
    truncated_ = false;
  }
  /// Frees the batch buffers (a refused batch's: they are not kept for it).
  void ReleaseScratch() {
    std::vector<Touched>().swap(touched_);
    std::vector<WatchEvent>().swap(events_);
    std::vector<hitbox::Query>().swap(queries);
    std::vector<QueryResult>().swap(results);
  }
  /// Drops the undo logs (the batches so far can no longer be undone).
  void ForgetUndo() {
    journals_.clear();
    ClearEvents();
  }
  /// Undoes every batch applied on top of a revision >= `revision`.
  void UndoTo(uint64_t revision);

  const std::vector<WatchEvent>& events() const { return events_; }
  bool truncated() const { return truncated_; }
  uint64_t max_events = 0;
  WatchWork work;
  WatchBudget budget;
  /// True when the budget bounds a batch's update (a refusal is possible).
  bool bounded() const {
    return budget.max_nodes != 0 || budget.max_pair_tests != 0 ||
           budget.max_growth_bytes != UINT64_MAX || stoppable();
  }
  /// The update has a deadline or a cancellation to poll.
  bool stoppable() const {
    return budget.deadline != std::chrono::steady_clock::time_point::max() ||
           static_cast<bool>(budget.cancelled);
  }

 private:
  // The tree box of a watch at `pose`: its shape's slack bounds, grown by the
  // fat margin for attached watches (moves inside it leave the tree alone).
  static Aabb BoxOf(const WatchState& s, bool fat);

  std::vector<WatchState> states_;
  std::vector<uint32_t> leaf_of_;
  std::unordered_map<uint64_t, uint32_t> index_;
  /// Collider id -> watch ids attached to it.
  std::unordered_multimap<uint64_t, uint64_t> attached_;
  DynamicTree tree_;

  struct Journal {
    uint64_t revision_before = 0;
    std::vector<UndoOp> ops;
    std::vector<PairUndo> pairs;
  };
  /// Undo logs of the last batches (RestoreRevision undoes at most two).
  std::deque<Journal> journals_;
  std::vector<Touched> touched_;
  std::vector<WatchEvent> events_;
  bool truncated_ = false;
  bool recording_ = false;
};

}  // namespace hitbox::internal
