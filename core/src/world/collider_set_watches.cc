// The incremental update of a ColliderSet's watches after a batch, and
// their checks and accessors.
//
// After a batch, a watch's inside set can only have changed if the watch
// moved (it is new, or its collider moved) or a collider the batch changed
// (added, moved, replaced, removed) was near it before or after. So:
//   1. watches attached to colliders the batch removed go with them;
//   2. watches that are new or whose collider changed rerun their whole
//      overlap query (ColliderSet::Overlap) and diff it with their set;
//   3. every other watch whose tree box meets a changed collider's box,
//      before or after the batch, tests that one pair with the overlap
//      query's own pair test (OverlapPiece).
// The work grows with what changed and the events, not with the number of
// watches or colliders. Every step leaves an undo record (RestoreRevision).
#include <algorithm>
#include <span>
#include <variant>

#include "collision/work_meter.h"
#include "world/collider_set_internal.h"
#include "world/overlap_pair.h"

namespace hitbox {
namespace {

using internal::WatchSet;
using UndoOp = WatchSet::UndoOp;

uint64_t EventTick(const internal::History& history, std::optional<uint64_t> tick) {
  if (tick) return *tick;
  return history.has_ticks() ? history.Range().newest : 0;
}

WatchEvent Event(uint64_t watch, uint64_t collider, WatchEvent::Kind kind, uint32_t sub,
                 uint64_t tick) {
  return {watch, collider, kind, sub, tick};
}

// Whether a watch's filter lets collider c be inside (as the overlap query's
// tree mask and ignore list do; its own collider never is).
bool Admits(const Watch& w, const Collider& c) {
  if (((w.mask >> c.layer) & 1u) == 0) return false;
  if (w.attach_to && *w.attach_to == c.id) return false;
  return std::find(w.ignore.begin(), w.ignore.end(), c.id) == w.ignore.end();
}

Status CheckWatch(const Watch& w, const std::string& field) {
  if (Status s = CheckQueryShape(w.shape, field + ".shape"); !s.ok()) return s;
  if (Status s = CheckPose(w.pose, field + ".pose"); !s.ok()) return s;
  if (w.ignore.size() > kMaxWatchIgnore) {
    return Invalid(field + ".ignore_ids", std::to_string(w.ignore.size()) + " ids, at most " +
                                               std::to_string(kMaxWatchIgnore));
  }
  return Status::Ok();
}

/// Bytes of a watch's index, attachment and tree entries, besides its state.
constexpr uint64_t kWatchEntryBytes = 160;

// The refusals of a bounded watch update (WatchBudget).
Status OverWork(const WatchBudget& b, const WatchWork& w) {
  return Status(ErrorCode::kResourceExhausted,
                "changes: updating the watches after this batch takes more than its budget of " +
                    std::to_string(b.max_nodes) + " tree nodes and " +
                    std::to_string(b.max_pair_tests) + " pair tests" +
                    (b.work_limits.empty() ? "" : " (" + b.work_limits + ")") + ": " +
                    std::to_string(w.full_queries) +
                    " watches rerun their query (new, or attached to colliders the batch "
                    "changes) and " +
                    std::to_string(w.candidates) +
                    " (watch, changed collider) pairs were met before it stopped; the batch was "
                    "not applied: change fewer colliders that carry watches or lie near many, "
                    "per batch, or use fewer or smaller watches");
}

Status OverMemory(const WatchBudget& b, const WatchWork& w) {
  return Status(ErrorCode::kResourceExhausted,
                "changes: the watches would grow by at least " + std::to_string(w.growth_bytes) +
                    " bytes after this batch (new watches, inside sets, events and undo "
                    "records), more than the " +
                    std::to_string(b.max_growth_bytes) + " bytes it may take" +
                    (b.memory_limit.empty() ? "" : " (" + b.memory_limit + ")") +
                    "; the batch was not applied: split it, or use fewer or smaller watches");
}

// The refusal of an update stopped by the call's deadline or cancellation
// (WatchBudget), or Ok while it may go on.
Status StopOf(const WatchBudget& b) {
  if (b.cancelled && b.cancelled()) {
    return Status(ErrorCode::kCancelled,
                  "changes: the call was cancelled while the watches were updated; the batch "
                  "was not applied");
  }
  if (b.deadline != std::chrono::steady_clock::time_point::max() &&
      (b.now ? b.now() : std::chrono::steady_clock::now()) >= b.deadline) {
    return Status(ErrorCode::kDeadlineExceeded,
                  "changes: the deadline passed while the watches were updated; the batch was "
                  "not applied");
  }
  return Status::Ok();
}

// Counts the triangles and compound children a pair test goes through
// against the pair budget, and polls the deadline and cancellation when
// asked; stops the test once the budget is spent or the call must stop.
class PairMeter final : public internal::WorkMeter {
 public:
  PairMeter(uint64_t* count, const WatchBudget& budget) : count_(count), budget_(budget) {}
  bool Charge(uint64_t tests, bool poll) override {
    *count_ += tests;
    over_ = over_ || (budget_.max_pair_tests != 0 && *count_ > budget_.max_pair_tests);
    if (poll && stop_.ok()) stop_ = StopOf(budget_);
    return !over_ && stop_.ok();
  }
  bool over() const { return over_; }
  /// Why the call must stop (deadline, cancellation), or Ok.
  const Status& stop() const { return stop_; }
  /// Polls now, as Charge(0, true) would.
  const Status& Poll() {
    if (stop_.ok()) stop_ = StopOf(budget_);
    return stop_;
  }

 private:
  uint64_t* count_;
  const WatchBudget& budget_;
  bool over_ = false;
  Status stop_;
};

// Candidates tested between two polls of the deadline and cancellation.
constexpr uint64_t kWatchPollEvery = 256;

}  // namespace

Status ColliderSet::CheckWatchChange(const ColliderChange& c, size_t i,
                                     const std::function<bool(uint64_t)>& collider_exists,
                                     std::unordered_map<uint64_t, bool>* watches,
                                     int64_t* count) const {
  const auto at = [i] { return "changes[" + std::to_string(i) + "]"; };
  const uint64_t id = c.collider.id;
  const auto touched = watches->find(id);
  const bool exists =
      touched != watches->end() ? touched->second : impl_->watches.IndexOf(id) != UINT32_MAX;
  if (c.kind == ColliderChange::Kind::kRemoveWatch) {
    if (!exists) {
      return Status(ErrorCode::kNotFound,
                    at() + ".remove_watch: watch " + std::to_string(id) + " not found");
    }
    (*watches)[id] = false;
    --*count;
    return Status::Ok();
  }
  if (c.watch == nullptr) return Invalid(at() + ".add_watch", "no watch given");
  if (c.watch->id != id) return Invalid(at() + ".add_watch.id", "differs from the change's id");
  if (Status s = CheckWatch(*c.watch, at() + ".add_watch"); !s.ok()) return s;
  if (exists) {
    return Status(ErrorCode::kAlreadyExists,
                  at() + ".add_watch.id: watch " + std::to_string(id) + " already exists");
  }
  if (touched != watches->end()) {
    return Invalid(at() + ".add_watch.id", "watch " + std::to_string(id) +
                                               " is removed earlier in this batch; add it "
                                               "again in a later one");
  }
  if (c.watch->attach_to && !collider_exists(*c.watch->attach_to)) {
    return Status(ErrorCode::kNotFound, at() + ".add_watch.attach_to: collider " +
                                            std::to_string(*c.watch->attach_to) + " not found");
  }
  (*watches)[id] = true;
  ++*count;
  return Status::Ok();
}

void ColliderSet::AddWatchNow(const Watch& w) {
  Impl& m = *impl_;
  WatchState state;
  state.watch = w;
  state.world_pose = Normalized(w.pose);  // FinishWatchBatch places an attached one
  m.watches.work.growth_bytes += sizeof(WatchState) + kWatchEntryBytes + w.shape.DataBytes() +
                                 w.ignore.size() * sizeof(uint64_t) + sizeof(UndoOp);
  m.watches.Insert(std::move(state));
  UndoOp op;
  op.kind = UndoOp::kAdded;
  op.watch = w.id;
  m.watches.ops().push_back(std::move(op));
}

void ColliderSet::RemoveWatchNow(uint64_t id, std::optional<uint64_t> tick) {
  Impl& m = *impl_;
  const uint64_t at = EventTick(m.history, tick);
  UndoOp op;
  op.kind = UndoOp::kRemoved;
  op.watch = id;
  op.state = m.watches.Erase(id);
  for (const WatchMember& x : op.state.inside) {
    m.watches.AddEvent(Event(id, x.id, WatchEvent::Kind::kExit, x.sub_shape, at));
  }
  m.watches.work.growth_bytes += sizeof(UndoOp) + op.state.inside.size() * sizeof(WatchEvent);
  m.watches.ops().push_back(std::move(op));
}

Status ColliderSet::FinishWatchBatch(std::optional<uint64_t> tick) {
  Impl& m = *impl_;
  WatchSet& w = m.watches;
  if (!w.recording()) {
    w.EndBatch();
    return Status::Ok();
  }
  const WatchBudget& budget = w.budget;
  // A refusal ends the batch's buffers; Apply then undoes it (UndoOpenBatch).
  const auto refuse = [&](Status st) {
    w.EndBatch();
    w.ReleaseScratch();
    return st;
  };
  const auto over_memory = [&] { return w.work.growth_bytes > budget.max_growth_bytes; };
  const uint64_t at = EventTick(m.history, tick);
  std::vector<WatchSet::Touched>& touched = w.TouchedOnce();
  // 1. Watches attached to colliders that are gone.
  std::vector<uint64_t> ids;
  for (const WatchSet::Touched& t : touched) {
    if (m.IndexOf(t.id) == IdIndex::kEmpty) w.AttachedTo(t.id, &ids);
  }
  for (uint64_t id : ids) RemoveWatchNow(id, tick);
  if (over_memory()) return refuse(OverMemory(budget, w.work));
  // 2. Watches that are new or moved with their collider rerun their query.
  ids.clear();
  for (const UndoOp& op : w.ops()) {
    if (op.kind == UndoOp::kAdded && w.IndexOf(op.watch) != UINT32_MAX) ids.push_back(op.watch);
  }
  for (const WatchSet::Touched& t : touched) {
    if (m.IndexOf(t.id) != IdIndex::kEmpty) w.AttachedTo(t.id, &ids);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<uint8_t> rerun(w.size(), 0);
  // The queries run as one batch (interleaved tree walks), then each answer
  // is diffed with the watch's set. Each refresh's undo record takes the old
  // set at once, so a refusal from here on can put it back.
  std::vector<Query>& queries = w.queries;
  std::vector<QueryResult>& results = w.results;
  queries.resize(ids.size());
  results.resize(ids.size());
  const size_t first_op = w.ops().size();
  for (size_t k = 0; k < ids.size(); ++k) {
    const uint32_t i = w.IndexOf(ids[k]);
    rerun[i] = 1;
    WatchState& s = w.at(i);
    UndoOp op;
    op.kind = UndoOp::kRefreshed;
    op.watch = ids[k];
    op.state.world_pose = s.world_pose;
    op.state.inside = std::move(s.inside);
    s.inside.clear();
    w.ops().push_back(std::move(op));
    const Pose pose = s.watch.attach_to
                          ? Normalized(Find(*s.watch.attach_to)->pose * s.watch.pose)
                          : Normalized(s.watch.pose);
    w.SetPose(i, pose);
    if (!std::holds_alternative<OverlapQuery>(queries[k])) queries[k] = OverlapQuery();
    OverlapQuery& q = std::get<OverlapQuery>(queries[k]);
    q.shape = s.watch.shape;
    q.pose = pose;
    q.filter.mask = s.watch.mask;
    q.filter.ignore.assign(s.watch.ignore.begin(), s.watch.ignore.end());
    if (s.watch.attach_to) q.filter.ignore.push_back(*s.watch.attach_to);
  }
  w.work.full_queries += ids.size();
  // The kept buffers hold no shape (a hull's data) past the batch.
  const auto drop_shapes = [&] {
    for (Query& q : queries) std::get<OverlapQuery>(q).shape = Shape();
  };
  if (!w.bounded()) {
    RunBatch(std::span<const Query>(queries), std::span<QueryResult>(results));
  } else if (!ids.empty()) {
    QueryBudget qb;
    qb.max_nodes = budget.max_nodes;
    qb.max_pair_tests = budget.max_pair_tests;
    qb.deadline = budget.deadline;
    qb.now = budget.now;
    qb.cancelled = budget.cancelled;
    QueryWork qw;
    const Status st = RunBatch(std::span<const Query>(queries), std::span<QueryResult>(results),
                               nullptr, qb, &qw);
    w.work.query_nodes += qw.nodes;
    w.work.query_pair_tests += qw.pair_tests;
    if (!st.ok()) {
      drop_shapes();
      if (st.code() == ErrorCode::kDeadlineExceeded || st.code() == ErrorCode::kCancelled) {
        const Status stop = StopOf(budget);
        return refuse(stop.ok() ? st : stop);
      }
      return refuse(OverWork(budget, w.work));
    }
  }
  drop_shapes();
  for (size_t k = 0; k < ids.size(); ++k) {
    w.work.growth_bytes += sizeof(UndoOp) + results[k].overlaps.size() * sizeof(WatchMember);
  }
  if (over_memory()) return refuse(OverMemory(budget, w.work));
  for (size_t k = 0; k < ids.size(); ++k) {
    const uint64_t id = ids[k];
    WatchState& s = w.at(w.IndexOf(id));
    const std::vector<OverlapHit>& now = results[k].overlaps;
    // Both sorted by id: a merge gives the differences.
    const std::vector<WatchMember>& was = w.ops()[first_op + k].state.inside;
    size_t a = 0, b = 0;
    while (a < was.size() || b < now.size()) {
      if (b == now.size() || (a < was.size() && was[a].id < now[b].id)) {
        w.AddEvent(Event(id, was[a].id, WatchEvent::Kind::kExit, was[a].sub_shape, at));
        ++a;
      } else if (a == was.size() || now[b].id < was[a].id) {
        w.AddEvent(Event(id, now[b].id, WatchEvent::Kind::kEnter, now[b].sub_shape, at));
        ++b;
      } else {
        ++a;
        ++b;
      }
    }
    std::vector<WatchMember> inside;
    inside.reserve(now.size());
    for (const OverlapHit& h : now) inside.push_back({h.id, h.sub_shape});
    s.inside = std::move(inside);
  }
  w.work.growth_bytes += w.events().size() * sizeof(WatchEvent);
  if (over_memory()) return refuse(OverMemory(budget, w.work));
  // 3. Changed colliders against the other watches near them. Each candidate
  // counts as a pair test (and its triangles or children, if any) before
  // it is tested.
  const uint64_t pair_max = budget.max_pair_tests;
  uint64_t pairs = w.work.query_pair_tests;
  PairMeter meter(&pairs, budget);
  const internal::ScopedWorkMeter scoped(w.bounded() ? &meter : nullptr);
  uint64_t since_poll = kWatchPollEvery - 1;  // the first candidate polls
  std::vector<uint32_t> near;
  for (const WatchSet::Touched& t : touched) {
    const uint32_t ci = m.IndexOf(t.id);
    const Collider* c = ci == IdIndex::kEmpty ? nullptr : &m.colliders[ci];
    if (!t.existed && c == nullptr) continue;  // added and removed in the batch
    Aabb box;
    if (t.existed) box = t.before;
    if (c != nullptr) {
      const Aabb after = SlackBounds(c->shape, c->pose);
      box = t.existed ? box.Union(after) : after;
    }
    near.clear();
    w.Query(box, [&](uint32_t i) {
      if (rerun[i] == 0) near.push_back(i);
    });
    w.work.candidates += near.size();
    pairs += near.size();
    if (pair_max != 0 && pairs > pair_max) return refuse(OverWork(budget, w.work));
    for (uint32_t i : near) {
      if (w.stoppable() && ++since_poll >= kWatchPollEvery) {
        since_poll = 0;
        if (!meter.Poll().ok()) return refuse(meter.stop());
      }
      WatchState& s = w.at(i);
      uint32_t sub = internal::kNoOverlap;
      if (c != nullptr && Admits(s.watch, *c)) {
        bool tested = false;
        sub = internal::OverlapPiece(s.watch.shape, Normalized(s.world_pose),
                                     s.watch.shape.BoundingRadius() + kBoxSlack, *c,
                                     m.radius[ci], &tested);
        w.work.pair_tests += tested;
        if (!meter.stop().ok()) return refuse(meter.stop());
        if (meter.over()) return refuse(OverWork(budget, w.work));
      }
      std::vector<WatchMember>& in = s.inside;
      auto it = std::lower_bound(in.begin(), in.end(), t.id,
                                 [](const WatchMember& x, uint64_t id) { return x.id < id; });
      const bool was = it != in.end() && it->id == t.id;
      const bool inside = sub != internal::kNoOverlap;
      if (!was && !inside) continue;
      if (was && inside && it->sub_shape == sub) continue;
      w.pair_ops().push_back({s.watch.id, t.id, was ? it->sub_shape : 0, was});
      w.work.growth_bytes += sizeof(WatchSet::PairUndo);
      if (was && inside) {
        it->sub_shape = sub;  // still inside, touching another piece: no event
      } else if (inside) {
        in.insert(it, {t.id, sub});
        w.AddEvent(Event(s.watch.id, t.id, WatchEvent::Kind::kEnter, sub, at));
        w.work.growth_bytes += sizeof(WatchMember) + sizeof(WatchEvent);
      } else {
        w.AddEvent(Event(s.watch.id, t.id, WatchEvent::Kind::kExit, it->sub_shape, at));
        w.work.growth_bytes += sizeof(WatchEvent);
        in.erase(it);
      }
      if (over_memory()) return refuse(OverMemory(budget, w.work));
    }
  }
  w.work.candidates = pairs - w.work.query_pair_tests;
  w.EndBatch();
  return Status::Ok();
}

const std::vector<WatchEvent>& ColliderSet::watch_events() const {
  return impl_->watches.events();
}
bool ColliderSet::watch_events_truncated() const { return impl_->watches.truncated(); }
void ColliderSet::SetMaxWatchEvents(uint64_t max) { impl_->watches.max_events = max; }
uint64_t ColliderSet::max_watch_events() const { return impl_->watches.max_events; }
size_t ColliderSet::watch_count() const { return impl_->watches.size(); }
WatchWork ColliderSet::last_watch_work() const { return impl_->watches.work; }
void ColliderSet::SetWatchBudget(const WatchBudget& budget) { impl_->watches.budget = budget; }
const WatchBudget& ColliderSet::watch_budget() const { return impl_->watches.budget; }

const WatchState* ColliderSet::FindWatch(uint64_t id) const {
  const uint32_t i = impl_->watches.IndexOf(id);
  return i == UINT32_MAX ? nullptr : &impl_->watches.at(i);
}

void ColliderSet::ForEachWatch(const std::function<void(const WatchState&)>& fn) const {
  const std::vector<WatchState>& all = impl_->watches.states();
  std::vector<const WatchState*> sorted;
  sorted.reserve(all.size());
  for (const WatchState& s : all) sorted.push_back(&s);
  std::sort(sorted.begin(), sorted.end(), [](const WatchState* a, const WatchState* b) {
    return a->watch.id < b->watch.id;
  });
  for (const WatchState* s : sorted) fn(*s);
}

std::string ColliderSet::WatchValidate() const {
  const Impl& m = *impl_;
  if (std::string e = m.watches.Validate(); !e.empty()) return e;
  for (const WatchState& s : m.watches.states()) {
    if (s.watch.attach_to && Find(*s.watch.attach_to) == nullptr) {
      return "watch " + std::to_string(s.watch.id) + " is attached to a missing collider";
    }
  }
  return "";
}

}  // namespace hitbox
