// Watches: standing overlap queries of a collider set (trigger volumes and
// areas of interest). After every applied batch a watch's inside set is what
// the same OverlapQuery would answer then; the batch's events are the
// difference from the batch before (ColliderSet::watch_events()).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hitbox/math/math.h"
#include "hitbox/shape/shapes.h"

namespace hitbox {

/// Most ids of one watch's ignore list (as a query's, over the wire).
inline constexpr size_t kMaxWatchIgnore = 256;

/// A standing overlap query: a convex shape at a fixed world pose, or
/// attached to a collider with a pose in that collider's frame.
struct Watch {
  /// Caller-chosen id, unique among the set's watches (its own id space).
  uint64_t id = 0;
  /// The query shape: sphere, box, capsule, cylinder or convex hull.
  Shape shape;
  /// Fixed watch: the world pose. Attached: the pose in the collider's frame
  /// (world pose = collider pose * this, rotation normalized).
  Pose pose;
  /// The collider it moves with (own or a shared map's), which never counts
  /// as inside; unset: fixed. Removing that collider removes the watch.
  std::optional<uint64_t> attach_to;
  /// Bit i set: colliders on layer i may be inside. Default: every layer.
  uint32_t mask = 0xFFFFFFFFu;
  /// Ids never inside (at most kMaxWatchIgnore).
  std::vector<uint64_t> ignore;
};

/// One collider inside a watch.
struct WatchMember {
  uint64_t id = 0;
  /// As OverlapHit::sub_shape: the lowest triangle or compound child touched
  /// (0 for the convex kinds).
  uint32_t sub_shape = 0;
};

/// A watch as a set holds it: its definition, where it is, what is inside.
struct WatchState {
  Watch watch;
  /// The world pose its overlap query runs at (attached: follows the collider).
  Pose world_pose;
  /// The colliders inside, sorted by id.
  std::vector<WatchMember> inside;
};

/// A collider entering or leaving a watch in one batch.
struct WatchEvent {
  enum class Kind : uint8_t {
    kEnter,  ///< inside now, not before the batch (a new watch: everything inside)
    kExit,   ///< inside before the batch, not now (also: collider or watch removed)
  };
  uint64_t watch_id = 0;
  uint64_t collider_id = 0;
  Kind kind = Kind::kEnter;
  /// kEnter: the piece touched now; kExit: the piece recorded last.
  uint32_t sub_shape = 0;
  /// The batch's tick (its own, else the set's newest; 0 before any tick).
  uint64_t tick = 0;

  bool operator==(const WatchEvent&) const = default;
};

/// What the last batch's watch update did (tests, benchmarks, budgets).
struct WatchWork {
  /// Watches whose whole overlap query ran (added, or moved with their collider).
  uint64_t full_queries = 0;
  /// Single (watch, collider) pair tests of colliders that changed.
  uint64_t pair_tests = 0;
  /// Tree nodes and pair tests of the full queries (RunBatch's QueryWork).
  uint64_t query_nodes = 0;
  uint64_t query_pair_tests = 0;
  /// (watch, changed collider) candidates the watch tree gave (each costs a
  /// pair test or a filter check), plus the triangles and children tested.
  uint64_t candidates = 0;
  /// Bytes the update adds to the set: new watches, inside-set members,
  /// undo records and events (logical sizes, before vector slack).
  uint64_t growth_bytes = 0;
};

/// Bounds on one batch's watch update (ColliderSet::SetWatchBudget): past
/// either, the batch is refused with kResourceExhausted and the set is left
/// exactly as before it. A server sets them from its per-message budgets and
/// its memory reservation; 0 / UINT64_MAX: no bound.
struct WatchBudget {
  /// Tree nodes the full queries (new and attached watches) may visit.
  uint64_t max_nodes = 0;
  /// Pair tests of the full queries plus candidates of changed colliders.
  uint64_t max_pair_tests = 0;
  /// Bytes the update may add (WatchWork::growth_bytes).
  uint64_t max_growth_bytes = UINT64_MAX;
  /// Named in a refusal after the numbers: which limits set the bounds.
  std::string work_limits;
  std::string memory_limit;
  /// Past this time the update stops and the batch is refused with
  /// kDeadlineExceeded (undone whole, as on any refusal); max(): none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// The clock the deadline is read on; empty: steady_clock. Tests inject one.
  std::function<std::chrono::steady_clock::time_point()> now;
  /// Polled with the deadline; true refuses the batch with kCancelled.
  std::function<bool()> cancelled;
};

}  // namespace hitbox
